-- SPDX-License-Identifier: Apache-2.0
--- lib.flinkconf: Flink's configuration file for a FlinkCluster: which file and form the
-- cluster's Flink version reads, the memory keys computed from the container limits, the
-- options Flink 2 no longer knows, and the rendering. Pure functions; used by
-- policies/cluster.lua and validate.lua.
local profile = require("fc.profile")
local quantity = require("fc.quantity")
local yaml = require("fc.yaml")
local names = require("lib.names")
local flinkversion = require("lib.flinkversion")
local flinkremoved = require("lib.flinkremoved")
local upgrade = require("lib.upgrade")

local flinkconf = {}

local MIB = 1024 * 1024

--- The two configuration files. Flink before 1.19 reads only the legacy flink-conf.yaml
-- ("key: value" lines, not YAML). Flink 1.19 and 1.20 read config.yaml, standard YAML
-- (FLIP-366), when it is there and the legacy file otherwise; Flink 2.0 reads only
-- config.yaml (Flink docs, "Configuration": "Flink Configuration File" and "Migrate from
-- flink-conf.yaml to config.yaml").
flinkconf.LEGACY_FILE = "flink-conf.yaml"
flinkconf.YAML_FILE = "config.yaml"

--- Bytes (integer) of a Kubernetes memory quantity (string such as "1Gi", "600M", or a
-- number of bytes). Raises "<what>: <reason>" when it is not a quantity.
local function bytes_of(q, what)
  local n, reason = quantity.bytes(q)
  if n == nil then error(what .. ": " .. tostring(reason) .. ": " .. tostring(q), 0) end
  return n
end

--- Memory split of a container limit, the original operator's rule with exact units.
-- Inputs: `limit` and `offheap_min` in bytes (integers), `ratio` in percent (0..100).
--   off-heap = max(floor(limit * ratio / 100), offheap_min)        [bytes]
--   heap     = limit - off-heap                                     [bytes]
--   heap_mib = floor(heap / 2^20), process_mib = floor(limit / 2^20)
-- The original computed heap in decimal megabytes but wrote Flink's "m" suffix, which Flink
-- reads as MiB ("Memory size" docs: m = mebibytes), overstating the heap by about 4.9%.
-- Example: limit 1Gi, ratio 25, min 600M: off-heap = max(268435456, 600000000) = 600000000,
-- heap = 473741824 bytes = 451.79 MiB -> heap_mib 451.
-- Less than 1 MiB of heap left but not negative (memoryOffHeapMin equal to the limit, or a
-- 100 % ratio): heap_mib is nil, so no heap key is written and Flink's own default applies, as
-- the original operator does (validate.lua warns). Errors "<field>: ..." for a negative heap (a
-- limit below memoryOffHeapMin, which validate.lua rejects). `field` names the limit in the
-- message (default "memory limit").
-- Only versions that get the heap key need this split: for the new memory model Flink divides
-- the process size itself, so a small limit is not an error there.
-- Returns {offheap=, heap=, heap_mib=, process_mib=}.
function flinkconf.memory_plan(limit, ratio, offheap_min, field)
  limit, offheap_min = math.floor(limit), math.floor(offheap_min)
  local offheap = math.max(limit * math.floor(ratio) // 100, offheap_min)
  local heap = limit - offheap
  if heap >= 0 and heap < MIB then
    return { offheap = offheap, heap = heap, process_mib = quantity.to_mib(limit) }
  end
  if heap < MIB then
    error(string.format("%s: %d bytes leave %d bytes of heap after %d bytes of off-heap; raise the limit "
      .. "or lower memoryOffHeapMin/memoryOffHeapRatio", field or "memory limit", limit, heap, offheap), 0)
  end
  return { offheap = offheap, heap = heap, heap_mib = quantity.to_mib(heap), process_mib = quantity.to_mib(limit) }
end

-- First Flink version whose new memory model applies, per component:
--   TaskManager: 1.10 (FLIP-49; Flink 1.10 release notes, "New memory model for TaskManagers"):
--     taskmanager.memory.process.size replaces taskmanager.heap.size.
--   JobManager: 1.11 (FLIP-116; Flink 1.11 release notes, "New JobManager memory model"):
--     jobmanager.memory.process.size replaces jobmanager.heap.size. Flink 1.10 has no
--     jobmanager.memory.* options, so a 1.10 JobManager still gets jobmanager.heap.size.
local NEW_MODEL = { jobmanager = { 1, 11 }, taskmanager = { 1, 10 } }

--- True when `props` (flinkProperties) already sets a memory option of `component`
-- ("jobmanager"|"taskmanager"): any `<component>.memory.*` or `<component>.heap.*` key. The
-- user then owns that component's memory and we write none of ours (mixing the models makes
-- Flink reject or silently reinterpret the configuration).
function flinkconf.user_sets_memory(props, component)
  for key in pairs(props or {}) do
    if key:find(component .. ".memory.", 1, true) == 1 or key:find(component .. ".heap.", 1, true) == 1 then
      return true
    end
  end
  return false
end

--- Memory options for one component. `spec` is the component's spec (jobManager or
-- taskManager, defaulted: memoryOffHeapRatio percent, memoryOffHeapMin quantity), `component`
-- "jobmanager"|"taskmanager", `version` the cluster's Flink version (lib.flinkversion; nil =
-- unknown, counted as new), `props` the flinkProperties.
-- Returns {} when resources.limits.memory is unset or the user sets the memory keys; else one
-- pair: `<component>.memory.process.size = "<limit MiB>m"` for the new model (1.10/1.11 up to
-- 2.x), or `<component>.heap.size = "<heap MiB>m"` for older versions (see memory_plan).
function flinkconf.memory_properties(spec, component, version, props)
  local limits = (spec.resources or {}).limits or {}
  if limits.memory == nil or flinkconf.user_sets_memory(props, component) then return {} end
  local field = component == "jobmanager" and "spec.jobManager" or "spec.taskManager"
  local limit = bytes_of(limits.memory, field .. ".resources.limits.memory")
  local since = NEW_MODEL[component]
  if flinkversion.at_least(version, since[1], since[2]) then
    -- process size = the whole container limit, floored to MiB
    return { [component .. ".memory.process.size"] = quantity.flink_mib(limit) }
  end
  local plan = flinkconf.memory_plan(limit, spec.memoryOffHeapRatio or 25,
    bytes_of(spec.memoryOffHeapMin or "600M", field .. ".memoryOffHeapMin"),
    field .. ".resources.limits.memory (" .. tostring(limits.memory) .. ")")
  if plan.heap_mib == nil then return {} end   -- no heap left to size: Flink's default
  return { [component .. ".heap.size"] = quantity.flink_mib(plan.heap) }
end

--- The taskManager spec whose resources.limits.memory sizes the TaskManager process: as given
-- in mode StatefulSet; in mode Native the pod's memory, slots x resourceProfile.memory (every
-- Native pod of a cluster has the same size; no limit when the profile's memory is unknown).
function flinkconf.taskmanager_memory_spec(tm)
  if tm.mode ~= "Native" then return tm end
  local p = profile.of(tm)
  local mib = p and p.profile.memory_mib or 0
  local limits = mib > 0 and { memory = string.format("%dMi", mib * p.slots) } or nil
  local out = {}
  for k, v in pairs(tm) do out[k] = v end
  out.resources = { limits = limits }
  return out
end

--- flinkProperties values are strings in the API; YAML may hand us numbers or booleans.
local function as_string(v)
  if math.type(v) == "float" and v == math.floor(v) then v = math.tointeger(v) end
  return tostring(v)
end

--- removed_keys(props, version) -> sorted list of the keys of `props` Flink 2 no longer knows
-- (lib.flinkremoved), for a version known to be 2.0 or newer; {} otherwise. An unknown
-- version keeps every key: it may be a 1.x that still reads them.
function flinkconf.removed_keys(props, version)
  local out = {}
  if not flinkversion.known_at_least(version, 2, 0) then return out end
  for key in pairs(props or {}) do
    if flinkremoved.removed(key) then out[#out + 1] = key end
  end
  table.sort(out)
  return out
end

--- The options the JobManager's address and ports in the spec decide, {key = the spec field
-- they come from}: a flinkProperties entry of one of these is left out (the original operator's
-- rule), because the Service, the probes and the submitter use the spec's values, so another
-- value in the file would make Flink listen where nothing connects. validate.lua warns.
flinkconf.FIXED = {
  ["jobmanager.rpc.address"] = "metadata.name",
  ["jobmanager.rpc.port"] = "spec.jobManager.ports.rpc",
  ["blob.server.port"] = "spec.jobManager.ports.blob",
  ["query.server.port"] = "spec.jobManager.ports.query",
  ["rest.port"] = "spec.jobManager.ports.ui",
}

--- flinkconf.ha_properties(cluster) -> {key = string}: Flink's Kubernetes HA options of the
-- (defaulted) FlinkCluster, {} when HA is off (lib.upgrade.ha_enabled: upgradeMode last-state).
-- The HA type is `high-availability.type: kubernetes` from Flink 1.17 on (and for an unknown
-- version: 1.20 and 2.x read it), before that `high-availability: <the factory class>`; the
-- storage directory comes from spec.job.highAvailability.storageDir (a flinkProperties entry
-- of the same key overrides it, as any option); kubernetes.cluster-id is the cluster's name
-- (unique in its namespace: Flink's HA ConfigMaps are <name>-cluster-config-map and
-- <name>-<job id>-config-map, labelled app=<name>, type=flink-native-kubernetes).
function flinkconf.ha_properties(cluster)
  local spec = cluster.spec
  if not upgrade.ha_enabled(spec) then return {} end
  local md = cluster.metadata or {}
  local props = {
    ["kubernetes.cluster-id"] = md.name,
    ["kubernetes.namespace"] = md.namespace or "default",
    -- with HA the JobManager's RPC listens on this option (default 0: a random port), not on
    -- jobmanager.rpc.port: the Service, the probes and the TaskManagers use the spec's rpc port
    ["high-availability.jobmanager.port"] = spec.jobManager.ports.rpc,
  }
  local version = flinkversion.of(spec)
  if flinkversion.at_least(version, 1, 17) then
    props["high-availability.type"] = "kubernetes"
  else
    props["high-availability"] = "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory"
  end
  local dir = (spec.job.highAvailability or {}).storageDir
  if type(dir) == "string" and dir ~= "" then props[upgrade.STORAGE_KEY] = dir end
  return props
end

--- All options of the (defaulted) FlinkCluster `cluster`, a {key = string} map: the fixed
-- addresses and ports, the memory options, the HA options of upgradeMode last-state
-- (flinkconf.ha_properties), then spec.flinkProperties, which override any of
-- ours but those of flinkconf.FIXED. For Flink 2 (a known version >= 2.0) an option Flink 2
-- no longer knows is left out, the user's too (validate.lua warns about each);
-- `query.server.port`, which the original operator wrote, is not a Flink option in any version
-- (queryable state reads queryable-state.server.ports, formerly query.server.ports: the 1.20
-- and 2.3 jars) and is left out for Flink 2 as well.
function flinkconf.properties(cluster)
  local spec = cluster.spec
  local jm, tm = spec.jobManager, spec.taskManager
  local version = flinkversion.of(spec)
  local user = {}
  for k, v in pairs(spec.flinkProperties or {}) do user[k] = v end
  for _, k in ipairs(flinkconf.removed_keys(user, version)) do user[k] = nil end
  for k in pairs(flinkconf.FIXED) do user[k] = nil end
  local props = {
    ["jobmanager.rpc.address"] = names.jobmanager(cluster.metadata.name),
    ["jobmanager.rpc.port"] = jm.ports.rpc,
    ["blob.server.port"] = jm.ports.blob,
    ["rest.port"] = jm.ports.ui,
    ["taskmanager.rpc.port"] = tm.ports.rpc,
    -- the TaskManager's `data` containerPort only means something if Flink listens there
    ["taskmanager.data.port"] = tm.ports.data,
  }
  if not flinkversion.known_at_least(version, 2, 0) then props["query.server.port"] = jm.ports.query end
  for _, c in ipairs({ { jm, "jobmanager" }, { flinkconf.taskmanager_memory_spec(tm), "taskmanager" } }) do
    for k, v in pairs(flinkconf.memory_properties(c[1], c[2], version, user)) do props[k] = v end
  end
  -- Flink's Kubernetes HA services for upgradeMode last-state (lib.upgrade)
  for k, v in pairs(flinkconf.ha_properties(cluster)) do props[k] = v end
  for k, v in pairs(user) do props[k] = v end
  for k, v in pairs(props) do props[k] = as_string(v) end
  return props
end

--- Legacy flink-conf.yaml text: one `key: value` line per option, sorted by key, "\n"-terminated.
-- Flink reads this file line by line, splitting at the first ": " (Flink configuration docs,
-- "flink-conf.yaml"), so a key or value with a line break, or a key with ": ", would inject
-- other options: that raises an error naming the key.
function flinkconf.render_legacy(props)
  local keys = {}
  for k in pairs(props) do keys[#keys + 1] = k end
  table.sort(keys)
  local lines = {}
  for _, k in ipairs(keys) do
    local v = props[k]
    if k == "" or k:find("[\r\n]") or k:find(": ", 1, true) or v:find("[\r\n]") then
      error("spec.flinkProperties: option " .. string.format("%q", k)
        .. " cannot be written to flink-conf.yaml (empty key, a line break, or ': ' in the key)", 0)
    end
    lines[#lines + 1] = k .. ": " .. v .. "\n"
  end
  return table.concat(lines)
end

--- config.yaml text: standard YAML, one flat `key: value` entry per option (Flink accepts
-- flat and nested keys), sorted by key; values are YAML strings, quoted by the emitter where
-- they would read back as another type ("6123", "true") or break the syntax. Flink converts a
-- string to the option's type as it does for every other source of configuration. Written by
-- fc.yaml (libyaml), which Flink's parser (snakeyaml-engine) reads back exactly.
function flinkconf.render_yaml(props)
  return yaml.encode_map(props)
end

--- flinkconf.files(cluster) -> {file name = text}: the configuration file(s) of the
-- (defaulted) FlinkCluster for its Flink version (lib.flinkversion.of):
--   known, < 1.19   flink-conf.yaml
--   known, >= 1.19  config.yaml
--   unknown         both, with the same options: each Flink reads the one it knows, and 1.19
--                   and 1.20 prefer config.yaml; nothing is left out for Flink 2 then.
function flinkconf.files(cluster)
  local version = flinkversion.of(cluster.spec)
  local props = flinkconf.properties(cluster)
  local files = {}
  if version == nil or not flinkversion.at_least(version, 1, 19) then
    files[flinkconf.LEGACY_FILE] = flinkconf.render_legacy(props)
  end
  if flinkversion.at_least(version, 1, 19) then
    files[flinkconf.YAML_FILE] = flinkconf.render_yaml(props)
  end
  return files
end

return flinkconf
