-- SPDX-License-Identifier: Apache-2.0
--- fc.revision: the spec history of a FlinkCluster as ControllerRevisions.
--
-- The revision of a cluster is a hash of its spec as the user wrote it (the FlinkCluster as
-- observed, not defaults.apply's output: a default added to policies/defaults.lua changes no
-- revision) minus the control fields (fields that ask the controller for an action but do not
-- change what runs: savepointGeneration, cancelRequested, autoSavepointSeconds,
-- autoCheckpointSeconds, takeSavepointOnUpgrade, savepointRetention, rollback,
-- revisionHistoryLimit).
-- Encoding: canonical JSON, i.e. objects with their keys sorted by byte order, no whitespace,
-- scalars encoded by lua-cjson (integers as integers); an empty table is the empty object `{}`.
-- Hash: FNV-1a 32-bit (offset basis 2166136261, prime 16777619) over those bytes, written as
-- 8 lowercase hex digits. Name: `<cluster name>-<hash>` (the original operator also named
-- revisions `<name>-<hash>`; the hash function is ours).
--
-- Whether a spec changed is decided by meaning, not by name (`revision.comparable`): two
-- specs, each with today's defaults applied, compare equal when they differ only in control
-- fields, in zero values present on one side and absent on the other (Go's `omitempty`), in
-- the notation of a quantity ("1024Mi" and "1Gi"), or in key order. Revisions read here:
--   - ours: `data` = the stripped spec (before 0.3, the defaulted one; compared the same way);
--   - the original operator's (its controllers/flinkcluster_util.go newRevision,
--     controllers/history): name `<cluster>-<hash>` (FNV-32 of the data, SafeEncodeString'd,
--     also in the label `flinkoperator.k8s.io/hash`), `data` = `{"spec": {...,
--     "$patch": "replace"}}` without spec.job's cleanupPolicy, restartPolicy, cancelRequested
--     and savepointGeneration, and the FlinkCluster's status names it `<name>-<revision number>`.
local cjson = require("cjson")
local names = require("fc.names")
local util = require("fc.util")
local has_quantity, quantity = pcall(require, "fc.quantity")

local revision = {}

--- Control fields, as paths into `spec`: changing only these does not make a new revision.
revision.CONTROL_FIELDS = {
  { "job", "savepointGeneration" },
  { "job", "cancelRequested" },
  { "job", "autoSavepointSeconds" },
  { "job", "autoCheckpointSeconds" },
  { "job", "takeSavepointOnUpgrade" },
  { "job", "savepointRetention" },
  { "job", "rollback" },
  { "revisionHistoryLimit" },
}

local function encode(v, out)
  local t = type(v)
  if t == "table" then
    if util.is_array(v) then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        encode(v[i], out)
      end
      out[#out + 1] = "]"
    else
      out[#out + 1] = "{"
      local first = true
      for _, k in ipairs(util.sorted_keys(v)) do
        if not first then out[#out + 1] = "," end
        first = false
        out[#out + 1] = cjson.encode(tostring(k))
        out[#out + 1] = ":"
        encode(v[k], out)
      end
      out[#out + 1] = "}"
    end
  elseif t == "number" then
    if math.type(v) == "integer" then
      out[#out + 1] = string.format("%d", v)
    elseif v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then
      -- 1.0 from a YAML/JSON decoder is the same value as 1: encode it the same way.
      out[#out + 1] = string.format("%d", math.tointeger(v))
    else
      out[#out + 1] = string.format("%.17g", v)
    end
  elseif t == "string" or t == "boolean" then
    out[#out + 1] = cjson.encode(v)
  elseif v == cjson.null then
    out[#out + 1] = "null"
  else
    error("revision.canonical: cannot encode a " .. t)
  end
end

--- revision.canonical(v) -> string: canonical JSON of a plain value (see the header).
-- Errors on functions, userdata other than cjson.null, and threads.
function revision.canonical(v)
  local out = {}
  encode(v, out)
  return table.concat(out)
end

--- revision.fnv1a32(s) -> integer in [0, 2^32): FNV-1a 32 over the bytes of `s`.
function revision.fnv1a32(s)
  local h = 2166136261
  for i = 1, #s do
    h = h ~ s:byte(i)
    h = (h * 16777619) & 0xffffffff
  end
  return h
end

-- A deep copy of `spec` without the fields at `paths` (lists of keys into it).
local function without(spec, paths)
  local out = util.deepcopy(spec or {})
  for _, path in ipairs(paths) do
    local t = out
    for i = 1, #path - 1 do
      t = type(t) == "table" and t[path[i]] or nil
    end
    if type(t) == "table" then t[path[#path]] = nil end
  end
  return out
end

--- revision.strip(spec) -> a deep copy of `spec` without the control fields.
function revision.strip(spec)
  return without(spec, revision.CONTROL_FIELDS)
end

--- revision.hash(spec) -> "xxxxxxxx": 8 hex digits, FNV-1a 32 of canonical(strip(spec)).
function revision.hash(spec)
  return string.format("%08x", revision.fnv1a32(revision.canonical(revision.strip(spec))))
end

--- revision.name(cluster) -> "<metadata.name>-<hash of spec>"; `cluster` as observed (the
-- user's spec: no defaults applied, so that a new default changes no name).
function revision.name(cluster)
  return cluster.metadata.name .. "-" .. revision.hash(cluster.spec)
end

--- Fields of spec.job the original operator leaves out of its revisions' data (newRevision:
-- "not related to rendering job resource"); with such a revision they are compared nowhere.
revision.ORIGINAL_IGNORED = {
  { "job", "cleanupPolicy" },
  { "job", "restartPolicy" },
  { "job", "cancelRequested" },
  { "job", "savepointGeneration" },
}

--- Labels holding a revision's data hash: the original operator's, and the one Kubernetes' own
-- controllers use (apps/v1 ControllerRevision, controller.kubernetes.io/hash).
revision.HASH_LABELS = { "flinkoperator.k8s.io/hash", "controller.kubernetes.io/hash" }

--- revision.is_original(rev) -> bool: the ControllerRevision `rev` was written by the original
-- operator: its `data` is `{"spec": {...}}` (ours is the spec itself, which has no `spec` field).
function revision.is_original(rev)
  local data = type(rev) == "table" and rev.data
  return type(data) == "table" and type(data.spec) == "table" and data.image == nil
    and data.taskManager == nil and data.jobManager == nil
end

--- revision.spec_of(rev) -> spec (a copy) | nil, original (bool): the spec a ControllerRevision
-- records, ours or the original operator's (without its "$patch" directive); nil when its data
-- is not an object.
function revision.spec_of(rev)
  if type(rev) ~= "table" or type(rev.data) ~= "table" then return nil, false end
  if revision.is_original(rev) then
    local spec = util.deepcopy(rev.data.spec)
    spec["$patch"] = nil
    return spec, true
  end
  return util.deepcopy(rev.data), false
end

--- revision.find(revisions, name) -> object name, obj | nil: the observed ControllerRevision
-- (`{name=obj}`) that a status' currentRevision/nextRevision `name` designates: the object of
-- that name (ours), else, for the original operator's `<object name>-<revision number>`, the
-- object named without the suffix whose `.revision` is that number (or, when no object has
-- that name, the one whose hash label is the name's last part before the number).
function revision.find(revisions, name)
  if type(name) ~= "string" or type(revisions) ~= "table" then return nil end
  if revisions[name] then return name, revisions[name] end
  local base, num = name:match("^(.+)%-(%d+)$")
  if not base then return nil end
  num = tonumber(num)
  local obj = revisions[base]
  if obj then
    if tonumber(obj.revision) == num then return base, obj end
    return nil
  end
  local hash = base:match("%-([^-]+)$")
  for _, n in ipairs(util.sorted_keys(revisions)) do
    local o = revisions[n]
    local labels = type(o.metadata) == "table" and o.metadata.labels or {}
    for _, l in ipairs(revision.HASH_LABELS) do
      if hash and labels[l] == hash and tonumber(o.revision) == num then return n, o end
    end
  end
  return nil
end

-- Quantity fields: values of a resource list (`limits`, `requests`, `capacity`), and these keys.
local QUANTITY_PARENTS = { limits = true, requests = true, capacity = true }
local QUANTITY_KEYS = { memoryOffHeapMin = true, sizeLimit = true }

-- `v` normalized for comparison (see revision.comparable); nil for a zero value.
local function normalize(v, key, parent)
  local t = type(v)
  if t == "table" then
    if util.is_array(v) then
      local out = {}
      for i = 1, #v do
        local x = normalize(v[i], nil, nil)
        if x == nil then x = {} end -- positions matter in a list
        out[i] = x
      end
      return out
    end
    local out, any = {}, false
    for k, x in pairs(v) do
      if k ~= "$patch" then
        local n = normalize(x, k, key)
        if n ~= nil then out[k] = n; any = true end
      end
    end
    return any and out or nil
  elseif v == false or v == "" or v == 0 or v == cjson.null then
    return nil
  elseif (t == "string" or t == "number") and has_quantity
      and (QUANTITY_KEYS[key] or QUANTITY_PARENTS[parent]) then
    local m = quantity.millicores(v)
    if m then return "quantity:" .. tostring(m) end
  end
  return v
end

-- `v` without the values Go's encoding/json writes for a field left unset that has no
-- `omitempty` or is a struct: "" strings, empty objects and lists, and a zero quantity in a
-- QUANTITY_KEYS field (resource.Quantity is a struct: an unset memoryOffHeapMin is "0"); nil
-- when nothing is left. List items keep their places.
local function go_unset(v, key)
  if type(v) == "table" then
    local arr = util.is_array(v)
    local out, any = {}, false
    for k, x in pairs(v) do
      local n = go_unset(x, not arr and k or nil)
      if n == nil and arr then n = {} end
      if n ~= nil then out[k] = n; any = true end
    end
    return any and out or nil
  elseif v == "" or v == cjson.null then
    return nil
  elseif QUANTITY_KEYS[key] and has_quantity and quantity.millicores(v) == 0 then
    return nil
  end
  return v
end

--- revision.without_unset(spec) -> a copy of `spec` without what Go's JSON encoding writes for
-- unset fields (go_unset above), for a spec compared with the original operator's revision,
-- whose data the Go structs encoded, before defaults are applied to it ("accessScope": "" is
-- unset there, and defaults.apply fills only absent fields).
function revision.without_unset(spec)
  return go_unset(spec, nil) or {}
end

--- revision.comparable(spec [, original]) -> string: the canonical JSON of `spec` (give it
-- defaulted: defaults.apply's output) as compared for meaning: without the control fields (and,
-- `original` true, the fields the original operator's revisions leave out), without zero
-- values (false, 0, "", null, empty objects and lists: a field Go's `omitempty` drops is the
-- same as an absent one), with quantities as their value in milli-units ("1024Mi" = "1Gi",
-- "0.5" = "500m"), and without a "$patch" key. Two specs whose strings are equal run the same.
function revision.comparable(spec, original)
  local s = without(revision.strip(spec), original and revision.ORIGINAL_IGNORED or {})
  return revision.canonical(normalize(s, nil, nil) or {})
end

--- revision.object(cluster, number) -> ControllerRevision (apps/v1) for the cluster's spec:
-- `cluster` as observed (the user's spec, not defaulted); `data` = its stripped spec,
-- `revision` = number (an integer >= 1, one more than the highest observed), labels
-- fc.names.cluster_labels (`app: flink`, `cluster: <n>`), controller ownerReference to the cluster with
-- blockOwnerDeletion false, like the policies' children (lib.names.owner_reference): true would
-- need update permission on flinkclusters/finalizers under the OwnerReferencesPermissionEnforcement
-- admission plugin, which deploy/rbac.yaml does not grant, so the apply would be refused.
function revision.object(cluster, number)
  local md = cluster.metadata
  local owner = {
    apiVersion = cluster.apiVersion or names.OWNER_API_VERSION,
    kind = cluster.kind or names.OWNER_KIND,
    name = md.name,
    uid = md.uid,
    controller = true,
    blockOwnerDeletion = false,
  }
  return {
    apiVersion = "apps/v1",
    kind = "ControllerRevision",
    metadata = {
      name = revision.name(cluster),
      namespace = md.namespace,
      labels = names.cluster_labels(md.name),
      ownerReferences = { owner },
    },
    data = revision.strip(cluster.spec),
    revision = number,
  }
end

--- revision.next_number(revisions) -> integer: 1 + the highest `.revision` among the observed
-- ControllerRevisions (`{name=obj}`), 1 when there are none.
function revision.next_number(revisions)
  local max = 0
  for _, obj in pairs(revisions or {}) do
    local n = tonumber(obj.revision) or 0
    if n > max then max = math.tointeger(n) or max end
  end
  return max + 1
end

--- revision.first(revisions) -> name or nil: the observed ControllerRevision (`{name=obj}`) with
-- the lowest `.revision` (ties: the lower name), nil when there are none. With no
-- status.currentRevision recorded (every pass since the create was cut short before its status
-- write, e.g. a SIGKILL), it is the revision the first of those passes applied, before any
-- submitter Job (fc.reconcile's apply order), so a submitter they left is of that revision.
function revision.first(revisions)
  local best, best_n
  for name, obj in pairs(revisions or {}) do
    local n = tonumber(obj.revision) or 0
    if best == nil or n < best_n or (n == best_n and name < best) then best, best_n = name, n end
  end
  return best
end

--- revision.prune(revisions, limit, keep) -> {name,...}: names of the observed revisions to
-- delete so that at most `limit` remain (oldest `.revision` first), never one named in
-- `keep` (a set `{name=true}`: the current and next revisions). Sorted by revision number.
function revision.prune(revisions, limit, keep)
  local list = {}
  for name, obj in pairs(revisions or {}) do
    list[#list + 1] = { name = name, n = tonumber(obj.revision) or 0 }
  end
  table.sort(list, function(a, b)
    if a.n ~= b.n then return a.n < b.n end
    return a.name < b.name
  end)
  local out = {}
  local excess = #list - math.max(limit or 10, 0)
  for _, r in ipairs(list) do
    if excess <= 0 then break end
    if not (keep and keep[r.name]) then
      out[#out + 1] = r.name
      excess = excess - 1
    end
  end
  return out
end

return revision
