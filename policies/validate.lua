-- SPDX-License-Identifier: Apache-2.0
--- policies/validate.lua: validation of a FlinkCluster (flinkoperator.k8s.io/v1beta1).
--
-- Hook: check({cluster=<defaulted>, raw=<as given>, old=<previous defaulted, {} on create>,
--               admission=<true from the admission webhook>})
--   -> {errors = {{path=, message=}, ...}, warnings = {{path=, message=}, ...}}
-- The rules are those of shared/reference/flinkcluster-api.md ("Validation"), with its
-- **ours** decisions: names that keep every generated name and label value within 63
-- characters, and no crash on unset optional fields or values of the wrong type; and, at
-- admission only, the original operator's rules for the user-control annotation.
-- Paths use the API's JSON field names, `[i]` (from 0, as Kubernetes' field paths) for list
-- items and `[key]` for map keys that are not plain identifiers. Messages are short and
-- lowercase. Unknown fields of the FlinkCluster's own structure are warnings; embedded
-- Kubernetes types (volumes, containers, resources, securityContext, tolerations, ...) are
-- checked only for their JSON type, except the quantities in `resources`.
local profile = require("fc.profile")
local quantity = require("fc.quantity")
local util = require("fc.util")
local values = require("lib.values")
local user_control = require("lib.control")
local flinkversion = require("lib.flinkversion")
local flinkconf = require("lib.flinkconf")
local flinkremoved = require("lib.flinkremoved")
local upgrade = require("lib.upgrade")

local validate = {}
--- The hook contract this policy is written for (fc.contract; another version is refused).
validate.contract = "hooks.flinkoperator.k8s.io/v1"

local is_null, is_integer, is_object, is_list = values.is_null, values.is_integer,
  values.is_object, values.is_list

validate.API_VERSION = "flinkoperator.k8s.io/v1beta1"
validate.KIND = "FlinkCluster"
--- Fields of spec.taskManager that only mode Native reads.
validate.NATIVE_FIELDS = { "resourceProfile", "maxPerTaskManager", "maxFailedAttempts",
  "registrationTimeoutSeconds", "slots" }
--- Kubernetes' limit for DNS labels and label values (apimachinery util/validation).
validate.MAX_LABEL = 63
--- A StatefulSet's pods carry `controller-revision-hash: <statefulset>-<hash>` with a hash of
-- up to 10 characters, never truncated (kubernetes/kubernetes issue 64023): a StatefulSet name
-- over 52 characters gives pods that cannot be created. The longest StatefulSet name is
-- "<name>-taskmanager", so a name is at most 52 - 12 = 40 characters (this also keeps every
-- other generated name, "<name>-job-submitter" the longest, within 63). The original operator
-- let longer names through to pods that never start.
validate.MAX_STATEFULSET_NAME = 52
validate.MAX_NAME = validate.MAX_STATEFULSET_NAME - #"-taskmanager"

--------------------------------------------------------------------------------------------
-- The schema: deploy/crd.yaml's, generated into fc.crd at build time (docs/admission.md, "one schema").
-- Types, enums, limits, lengths and required fields are checked by walking it, so a new field
-- is described once, in the CRD. The rules below are the ones the OpenAPI part of a schema
-- cannot express; those the CRD states as CEL rules (x-kubernetes-validations) are also here,
-- because render runs with no API server (tests/admission_spec.lua checks that both agree).

--- The FlinkCluster's openAPIV3Schema (fc.crd), as a table.
validate.SCHEMA = require("fc.crd").schema

--------------------------------------------------------------------------------------------
-- Helpers

local sorted_keys = util.sorted_keys

-- path + key: ".key" for identifiers, "[key]" for anything else ("taskmanager.numberOf...").
local function key_path(path, key)
  key = tostring(key)
  if key:match("^[%a_][%w_]*$") then
    if path == "" then return key end
    return path .. "." .. key
  end
  return path .. "[" .. key .. "]"
end

local function index_path(path, i)
  return string.format("%s[%d]", path, i - 1)
end

local function one_of(v, list)
  for _, x in ipairs(list) do
    if v == x then return true end
  end
  return false
end

local function show(q)
  if math.type(q) == "float" and q == math.floor(q) then q = math.tointeger(q) end
  return tostring(q)
end

--- validate.dns1035_label(s) -> bool: a Service name (apimachinery util/validation
-- IsDNS1035Label): at most 63 of [a-z0-9-], starting with a letter, ending alphanumeric.
function validate.dns1035_label(s)
  return type(s) == "string" and #s <= 63 and s:match("^[a-z][-a-z0-9]*$") ~= nil
    and s:match("[a-z0-9]$") ~= nil
end

--- validate.dns1123_label(s) -> bool: a namespace name (IsDNS1123Label): at most 63 of
-- [a-z0-9-], starting and ending alphanumeric.
function validate.dns1123_label(s)
  return type(s) == "string" and #s <= 63 and s:match("^[a-z0-9][-a-z0-9]*$") ~= nil
    and s:match("[a-z0-9]$") ~= nil
end

--- validate.port_name(s) -> bool: a container port name (IsValidPortName, IANA_SVC_NAME):
-- 1-15 of [a-z0-9-], at least one letter, no leading, trailing or double '-'.
function validate.port_name(s)
  return type(s) == "string" and #s >= 1 and #s <= 15 and s:match("^[-a-z0-9]+$") ~= nil
    and s:match("[a-z]") ~= nil and s:sub(1, 1) ~= "-" and s:sub(-1) ~= "-"
    and not s:find("--", 1, true)
end

--------------------------------------------------------------------------------------------
-- Type walk (on the defaulted cluster) and unknown-field walk (on the raw one).

local INT32_MIN, INT32_MAX = -2147483648, 2147483647
local TYPE_MESSAGES = {
  string = "must be a string", integer = "must be an integer", boolean = "must be a boolean",
  number = "must be a number", object = "must be an object", array = "must be a list",
}

-- Every int-or-string node of this API is a Kubernetes quantity (memoryOffHeapMin and the
-- values of resources.limits/requests); the CRD checks it with a pattern, we parse it.
local function check_quantity(v, path, add)
  if not (is_integer(v) or type(v) == "string") then return add(path, "must be an integer or a string") end
  local ok, reason = quantity.valid(v)
  if not ok then
    add(path, "invalid quantity: " .. reason)
    return
  end
  local b = quantity.bytes(v)
  if b ~= nil and b < 0 then add(path, "must not be negative") end
end

local function has_type(v, t)
  if t == "string" then return type(v) == "string" end
  if t == "integer" then return is_integer(v) end
  if t == "number" then return type(v) == "number" end
  if t == "boolean" then return type(v) == "boolean" end
  if t == "object" then return is_object(v) end
  if t == "array" then return is_list(v) end
  return true
end

-- The limits of a scalar node `s` (enum, minimum/maximum, minLength/maxLength), with the
-- messages of validate.lua: "must be one of A, B", "must be between 1 and 9", "must be 1",
-- "must be >= 0", "is required" (an empty string where at least one character is needed).
local function check_limits(v, s, path, add)
  if s.enum and not one_of(v, s.enum) then
    local shown = {}
    for i, e in ipairs(s.enum) do shown[i] = tostring(e) end
    return add(path, "must be one of " .. table.concat(shown, ", "))
  end
  if type(v) == "number" then
    if s.format == "int32" and (v < INT32_MIN or v > INT32_MAX) then
      return add(path, "must be a 32-bit integer")   -- the API's int32 fields (Go types)
    end
    local lo, hi = s.minimum, s.maximum
    if (lo and v < lo) or (hi and v > hi) then
      if lo and hi and lo == hi then return add(path, "must be " .. show(lo)) end
      if lo and hi then return add(path, string.format("must be between %s and %s", show(lo), show(hi))) end
      if lo then return add(path, "must be >= " .. show(lo)) end
      return add(path, "must be <= " .. show(hi))
    end
  elseif type(v) == "string" then
    if s.minLength and utf8.len(v) and utf8.len(v) < s.minLength then
      if v == "" then return add(path, "is required") end
      return add(path, string.format("must be at least %d characters", s.minLength))
    end
    if s.maxLength and (utf8.len(v) or #v) > s.maxLength then
      return add(path, string.format("must be at most %d characters", s.maxLength))
    end
  end
end

-- Checks `v` against the schema node `s` (types, limits, required fields), at any depth.
-- The status is the controller's (written through /status): only its JSON type is checked.
local function check_types(v, s, path, add)
  if is_null(v) then return end
  if s["x-kubernetes-int-or-string"] then return check_quantity(v, path, add) end
  if s.type and not has_type(v, s.type) then return add(path, TYPE_MESSAGES[s.type]) end
  if s.type ~= "object" and s.type ~= "array" then return check_limits(v, s, path, add) end
  if path == "status" then return end
  if s.type == "array" then
    if s.maxItems and #v > s.maxItems then add(path, string.format("must have at most %d items", s.maxItems)) end
    if type(s.items) == "table" then
      for i, item in ipairs(v) do check_types(item, s.items, index_path(path, i), add) end
    end
    return
  end
  for _, r in ipairs(s.required or {}) do
    if is_null(v[r]) then add(key_path(path, r), "is required") end
  end
  if s.properties then
    for _, k in ipairs(sorted_keys(s.properties)) do
      check_types(v[k], s.properties[k], key_path(path, k), add)
    end
  elseif type(s.additionalProperties) == "table" then
    for _, k in ipairs(sorted_keys(v)) do
      check_types(v[k], s.additionalProperties, key_path(path, k), add)
    end
  end
end

-- Warns about the keys of `v` the schema node `s` does not describe (the API server would
-- prune them); objects that keep unknown fields (embedded Kubernetes types, status) are left.
local function check_unknown(v, s, path, warn)
  if type(s) ~= "table" or is_null(v) then return end
  if s.type == "object" and s.properties and is_object(v) then
    for _, k in ipairs(sorted_keys(v)) do
      local child = s.properties[k]
      if child == nil then
        if not s["x-kubernetes-preserve-unknown-fields"] then
          local hint = util.closest_key(k, s.properties)
          warn(key_path(path, k), hint and string.format('unknown field (did you mean "%s"?)', hint)
            or "unknown field")
        end
      else
        check_unknown(v[k], child, key_path(path, k), warn)
      end
    end
  elseif s.type == "array" and is_list(v) then
    for i, item in ipairs(v) do check_unknown(item, s.items, index_path(path, i), warn) end
  end
end

--------------------------------------------------------------------------------------------
-- Rules

local function obj(v)
  if is_object(v) then return v end
  return nil
end

local function check_metadata(cluster, add)
  local api, kind = cluster.apiVersion, cluster.kind
  if is_null(api) then add("apiVersion", "is required")
  elseif type(api) == "string" and api ~= validate.API_VERSION then
    add("apiVersion", "must be " .. validate.API_VERSION)
  end
  if is_null(kind) then add("kind", "is required")
  elseif type(kind) == "string" and kind ~= validate.KIND then add("kind", "must be " .. validate.KIND) end

  local meta = cluster.metadata
  if not is_object(meta) then
    if is_null(meta) then add("metadata.name", "is required") end
    return
  end
  -- The namespace may be absent from a manifest (kubectl and the API server take it from
  -- the request, and admission always sees it); when given it must be a namespace name.
  local ns = meta.namespace
  if not is_null(ns) then
    if type(ns) ~= "string" then add("metadata.namespace", "must be a string")
    elseif ns ~= "" and not validate.dns1123_label(ns) then
      add("metadata.namespace", "must be a DNS-1123 label (lowercase letters, digits and '-')")
    end
  end
  local name = meta.name
  if is_null(name) or name == "" then return add("metadata.name", "is required") end
  if type(name) ~= "string" then return add("metadata.name", "must be a string") end
  -- Service names are DNS-1035 labels (apimachinery ValidateServiceName): the JobManager
  -- Service is `<name>-jobmanager`, so the name must be one too (length checked below).
  if not (name:match("^[a-z][-a-z0-9]*$") and name:match("[a-z0-9]$")) then
    return add("metadata.name", "must be a DNS-1035 label: lowercase letters, digits and '-', "
      .. "starting with a letter and ending with a letter or digit")
  end
  if #name > validate.MAX_NAME then
    return add("metadata.name", string.format('must be at most %d characters so that the pods\' '
      .. 'controller-revision-hash label "<name>-taskmanager-<hash>" fits in %d', validate.MAX_NAME,
      validate.MAX_LABEL))
  end
end

-- Ports of a component (their ranges are the CRD's): the named Flink `ports` (in `order`) and
-- the `extraPorts`, no number or name twice (the later one is reported, naming the earlier
-- path; the CRD's CEL rule "port numbers/names must be unique"); extra port names are
-- Kubernetes port names (IsValidPortName: the CRD's pattern plus its CEL rule).
local function check_ports(c, path, order, add)
  local by_number, by_name = {}, {}
  local function record(p, name, at, name_at)
    if is_integer(p) then
      local key = math.tointeger(p)
      if by_number[key] then
        add(at, string.format("duplicate port %d, also used by %s", key, by_number[key]))
      else
        by_number[key] = at
      end
    end
    if type(name) == "string" and name ~= "" then
      if by_name[name] then
        add(name_at, string.format('duplicate port name "%s", also used by %s', name, by_name[name]))
      else
        by_name[name] = name_at
      end
    end
  end
  local ports = obj(c.ports)
  if ports then
    for _, name in ipairs(order) do
      local at = path .. ".ports." .. name
      record(ports[name], name, at, at)
    end
  end
  local extra = c.extraPorts
  if is_list(extra) then
    for i, ep in ipairs(extra) do
      local at = index_path(path .. ".extraPorts", i)
      if is_object(ep) then
        if type(ep.name) == "string" and ep.name ~= "" and not validate.port_name(ep.name) then
          add(at .. ".name", "must be a port name: at most 15 lowercase letters, digits and '-'")
        end
        record(ep.containerPort, ep.name, at .. ".containerPort", at .. ".name")
      end -- an item that is not an object: check_types reports it
    end
  end
end

-- memoryOffHeapMin <= resources.limits.memory (bytes; a webhook rule: as CEL its cost is too high).
-- Equal (or a 100 % memoryOffHeapRatio) is accepted, as by the original operator, with a
-- warning: no heap is left to size, so for images before Flink 1.10 (the heap.size model,
-- lib/flinkconf.lua) no heap key is written and Flink's default applies.
local function check_memory(c, path, add, warn)
  local min = quantity.bytes(c.memoryOffHeapMin)
  local limit_q = values.get(c, "resources", "limits", "memory")
  local limit = limit_q ~= nil and quantity.bytes(limit_q) or nil
  if min and limit and min >= 0 and limit >= 0 and min > limit then
    add(path .. ".memoryOffHeapMin", string.format("must be <= resources.limits.memory (%s > %s)",
      show(c.memoryOffHeapMin), show(limit_q)))
    return
  end
  local ratio = c.memoryOffHeapRatio
  if min and limit and limit >= 0 and is_integer(ratio) and ratio >= 0 and ratio <= 100
    and limit - math.max(limit * math.tointeger(ratio) // 100, min) < 1024 * 1024 then
    warn(path .. ".memoryOffHeapMin", "off-heap memory leaves no heap of resources.limits.memory: "
      .. "images before Flink 1.10 get no heap size (Flink's default applies)")
  end
end

-- The job's create rule (the CRD's CEL rule with optionalOldSelf).
local function check_job(job, creating, add)
  if creating and job.cancelRequested == true then
    add("spec.job.cancelRequested", "must not be true at creation")
  end
end

-- The upgrade mode's needs (lib.upgrade; the CRD's CEL rules on spec say the same): savepoint
-- needs savepointsDir; last-state needs an HA storage directory; more than one JobManager
-- needs the HA services, which only last-state turns on; rollback.enabled needs savepointsDir
-- (a rollback restores the savepoint the upgrade took).
local function check_upgrade(spec, add)
  local job = obj(spec.job)
  local mode = job and job.upgradeMode
  if mode == upgrade.SAVEPOINT and not values.is_text(job.savepointsDir) then
    add("spec.job.savepointsDir", "is required with upgradeMode savepoint")
  end
  if job and values.get(job, "rollback", "enabled") == true and not values.is_text(job.savepointsDir) then
    add("spec.job.savepointsDir", "is required with rollback.enabled (a rollback restores the upgrade's savepoint)")
  end
  if mode == upgrade.LAST_STATE and not values.is_text(values.get(job, "highAvailability", "storageDir"))
      and not values.is_text(values.get(spec, "flinkProperties", upgrade.STORAGE_KEY)) then
    add("spec.job.highAvailability.storageDir", "is required with upgradeMode last-state (or flinkProperties "
      .. upgrade.STORAGE_KEY .. ")")
  end
  local replicas = values.get(spec, "jobManager", "replicas")
  if type(replicas) == "number" and replicas > 1 and mode ~= upgrade.LAST_STATE then
    add("spec.jobManager.replicas",
      "more than 1 JobManager needs Flink's HA services (spec.job.upgradeMode last-state)")
  end
end

-- Mode Native: the slot demand (spec.taskManager.slots for a session cluster; a job cluster's
-- is spec.job.parallelism) and resource shapes fc.profile can read; extended resources must
-- come out whole per pod (Kubernetes takes no fractional extended resources). Types, the mode's
-- enum and the minimums are the schema's (deploy/crd.yaml).
local function check_native(tm, is_job, add, warn)
  if is_job and not is_null(tm.slots) then
    add("spec.taskManager.slots", "only for a session cluster: a job cluster's demand is spec.job.parallelism")
  elseif not is_job and is_null(tm.slots) then
    add("spec.taskManager.slots", "is required with mode Native for a session cluster")
  end
  if not is_null(tm.replicas) then
    warn("spec.taskManager.replicas", "ignored with mode Native: the slot demand sets the pods")
  end
  -- only shapes whose parts have the right JSON types (the type walk reports the others)
  for _, k in ipairs({ "resourceProfile", "maxPerTaskManager" }) do
    local shape = tm[k]
    if not is_null(shape) and (not is_object(shape) or not quantity.valid(shape.cpu or 0)
        or not quantity.valid(shape.memory or 0)) then
      return
    end
  end
  local p, errors = profile.of(tm)
  for _, e in ipairs(errors or {}) do
    -- the type walk already reports malformed and negative quantities
    if not (e.message:find("^invalid quantity") or e.message == "must not be negative") then
      add(e.path, e.message)
    end
  end
  if not p then return end
  for name, a in pairs(p.profile.extended) do
    local total = a * p.slots
    if math.abs(total - math.floor(total + 0.5)) > 1e-9 then
      add("spec.taskManager.resourceProfile.extendedResources[" .. name .. "]",
        string.format("%s per slot x %d slots per TaskManager is not a whole number", show(a), p.slots))
    end
  end
end

-- spec.flinkVersion and the flinkProperties the version no longer knows (lib.flinkversion,
-- lib.flinkremoved): an unreadable version is an error; a version that contradicts the image
-- tag, each flinkProperties key Flink 2 removed (left out of config.yaml) and each the
-- controller sets from the spec (lib.flinkconf.FIXED, left out), a warning.
local function check_flink_version(spec, add, warn)
  local given = spec.flinkVersion
  if type(given) == "string" and flinkversion.parse(given) == nil then
    add("spec.flinkVersion", "must be <major>.<minor>[.<patch>] (\"1.20\") or v<major>_<minor> (\"v1_20\"), got \""
      .. given .. "\"")
    return
  end
  local version = flinkversion.of(spec)
  local image = obj(spec.image)
  local tagged = image and flinkversion.of_image(image.name)
  if type(given) == "string" and tagged and (tagged.major ~= version.major or tagged.minor ~= version.minor) then
    warn("spec.flinkVersion", string.format("%s differs from the image tag's %s (spec.image.name); the "
      .. "configuration follows spec.flinkVersion", flinkversion.string(version), flinkversion.string(tagged)))
  end
  local props = obj(spec.flinkProperties)
  if not props then return end
  for _, key in ipairs(util.sorted_keys(props)) do
    if flinkconf.FIXED[key] then
      warn(key_path("spec.flinkProperties", key), "set by the controller from " .. flinkconf.FIXED[key]
        .. "; this entry is not written")
    end
  end
  for _, key in ipairs(flinkconf.removed_keys(props, version)) do
    local _, instead = flinkremoved.removed(key)
    warn(key_path("spec.flinkProperties", key), string.format("Flink %s no longer knows this option "
      .. "(removed in 2.0); it is not written to %s%s", flinkversion.string(version), flinkconf.YAML_FILE,
      instead and ("; use " .. instead) or ""))
  end
end

-- The rules of the spec the OpenAPI schema cannot state (the CRD states them as CEL rules).
local function check_spec(spec, creating, add, warn)
  for _, c in ipairs({ { "jobManager", { "rpc", "blob", "query", "ui" } },
                       { "taskManager", { "data", "rpc", "query" } } }) do
    local comp = obj(spec[c[1]])
    if comp then
      check_ports(comp, "spec." .. c[1], c[2], add)
      check_memory(comp, "spec." .. c[1], add, warn)
    end
  end

  local tm = obj(spec.taskManager)
  if tm and tm.mode == "Native" then
    check_native(tm, obj(spec.job) ~= nil, add, warn)
  elseif tm then
    -- the CRD's CEL rule says the same: replicas is required in mode StatefulSet only
    if is_null(tm.replicas) then add("spec.taskManager.replicas", "is required") end
    for _, k in ipairs(validate.NATIVE_FIELDS) do
      if not is_null(tm[k]) then warn("spec.taskManager." .. k, "used only with mode Native: ignored") end
    end
  end

  local job = obj(spec.job)
  if job then check_job(job, creating, add) end
  check_upgrade(spec, add)
  -- GCP: mountPath is the directory the key Secret is mounted at (the original operator refuses
  -- a mountPath ending with keyFile; the CRD's CEL rule too)
  local sa = values.get(spec, "gcpConfig", "serviceAccount")
  if is_object(sa) and type(sa.mountPath) == "string" and type(sa.keyFile) == "string" and sa.keyFile ~= ""
    and sa.mountPath:sub(-#sa.keyFile) == sa.keyFile then
    add("spec.gcpConfig.serviceAccount.mountPath",
      "must be the directory the Secret is mounted at, not end with keyFile")
  end
  -- flink-conf.yaml is read line by line and split at the first ": " (Flink's configuration
  -- docs; lib/flinkconf.lua writes it): a key or value that would break that is refused here.
  local props = obj(spec.flinkProperties)
  if props then
    for _, k in ipairs(sorted_keys(props)) do
      local at = key_path("spec.flinkProperties", (k:gsub("%c", function(c)
        return string.format("\\x%02X", c:byte())
      end)))
      if k == "" or k:find("[\r\n]") or k:find(": ", 1, true) then
        add(at, "must be a flink-conf.yaml key: not empty, without a line break or ': '")
      elseif type(props[k]) == "string" and props[k]:find("[\r\n]") then
        add(at, "must not contain a line break (flink-conf.yaml holds one option per line)")
      end
    end
  end
  check_flink_version(spec, add, warn)
end

-- Update rules: `spec` and `old_spec` are objects (the old one defaulted), `old` the old
-- FlinkCluster (for its status).
local function check_update(spec, old_spec, old, add)
  local job, old_job = obj(spec.job), obj(old_spec.job)
  if (job == nil) ~= (old_job == nil) then
    if job then
      add("spec.job", "cannot be added: a session cluster cannot become a job cluster")
    else
      add("spec.job", "cannot be removed: a job cluster cannot become a session cluster")
    end
    return
  end
  if not job then return end
  if values.is_text(old_job.savepointsDir) and not values.is_text(job.savepointsDir) then
    add("spec.job.savepointsDir", "cannot be removed")
  end
  local gen, old_gen = job.savepointGeneration, old_job.savepointGeneration
  if is_null(gen) then gen = 0 end
  if not is_integer(old_gen) then old_gen = 0 end
  if is_integer(gen) and gen ~= old_gen then
    local status_gen = values.get(old, "status", "components", "job", "savepointGeneration")
    if not is_integer(status_gen) then status_gen = 0 end
    if gen ~= status_gen + 1 then
      add("spec.job.savepointGeneration", string.format(
        "may only change to status + 1 (%d)", math.tointeger(status_gen + 1)))
    end
  end
  -- The original forbids true -> false; ours allows it with a new fromSavepoint (to resume
  -- a cancelled job from a savepoint).
  if old_job.cancelRequested == true and job.cancelRequested ~= true then
    local from, old_from = job.fromSavepoint, old_job.fromSavepoint
    if not (values.is_text(from) and from ~= old_from) then
      add("spec.job.cancelRequested", "cannot change from true to false without a new spec.job.fromSavepoint")
    end
  end
end

-- The user-control annotation, when an admission request sets or changes it (the original
-- operator's webhook rules): savepoint or job-cancel, of a job cluster, savepoint only with a
-- savepointsDir, not while another control is Progressing, not once the job has ended.
-- Admission only: the controller itself reports a bad value in status.control (job.lua) and
-- removes the annotation, so one that got in while the webhook was down never holds the spec.
local ENDED = { Succeeded = true, Failed = true, Cancelled = true }
local function check_user_control(cluster, old, add)
  local value = user_control.requested(cluster)
  if value == nil or value == user_control.requested(old) then return end
  local at = key_path("metadata.annotations", user_control.ANNOTATION)
  if value ~= user_control.SAVEPOINT and value ~= user_control.JOB_CANCEL then
    return add(at, string.format('must be "%s" or "%s"', user_control.SAVEPOINT, user_control.JOB_CANCEL))
  end
  local job = values.get(cluster, "spec", "job")
  if not is_object(job) then return add(at, value .. " needs a job cluster (spec.job)") end
  if value == user_control.SAVEPOINT and not values.is_text(job.savepointsDir) then
    return add(at, "savepoint needs spec.job.savepointsDir")
  end
  local progressing = values.get(old, "status", "control")
  if is_object(progressing) and progressing.state == "Progressing" then
    return add(at, string.format('user control "%s" is still in progress', tostring(progressing.name)))
  end
  local state = values.get(old, "status", "components", "job", "state")
  if ENDED[state] then add(at, string.format("the job has ended (%s)", state)) end
end

--- validate.check(input) -> {errors = {{path, message}...}, warnings = {{path, message}...}}
-- `input.cluster`: the FlinkCluster after defaults.apply (types and values checked);
-- `input.raw`: the FlinkCluster as given (unknown fields are warned about from it);
-- `input.old`: the previous, defaulted FlinkCluster on update, {} (or nil) on create;
-- `input.admission`: true when the admission webhook asks (the user-control annotation rules).
-- Never raises on malformed input: every problem becomes an error entry.
function validate.check(input)
  local errors, warnings = {}, {}
  local function add(path, message) errors[#errors + 1] = { path = path, message = message } end
  local function warn(path, message) warnings[#warnings + 1] = { path = path, message = message } end
  input = obj(input) or {}
  local cluster = input.cluster
  local raw = input.raw
  if is_null(raw) then raw = cluster end
  local old = obj(input.old) or {}

  if not is_object(cluster) then
    add("", "must be an object")
    return { errors = errors, warnings = warnings }
  end
  check_unknown(raw, validate.SCHEMA, "", warn)
  check_metadata(cluster, add)
  if input.admission == true then check_user_control(cluster, old, add) end
  check_types(cluster, validate.SCHEMA, "", add)
  if is_object(cluster.spec) then
    local old_spec = obj(old.spec)
    check_spec(cluster.spec, old_spec == nil, add, warn)
    if old_spec then check_update(cluster.spec, old_spec, old, add) end
  end
  return { errors = errors, warnings = warnings }
end

return validate
