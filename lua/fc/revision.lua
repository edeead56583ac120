-- SPDX-License-Identifier: Apache-2.0
--- fc.revision: the spec history of a FlinkCluster as ControllerRevisions.
--
-- The revision of a cluster is a hash of its spec minus the control fields (fields that ask
-- the controller for an action but do not change what runs: savepointGeneration,
-- cancelRequested, autoSavepointSeconds, takeSavepointOnUpgrade, revisionHistoryLimit).
-- Encoding: canonical JSON, i.e. objects with their keys sorted by byte order, no whitespace,
-- scalars encoded by lua-cjson (integers as integers); an empty table is the empty object `{}`.
-- Hash: FNV-1a 32-bit (offset basis 2166136261, prime 16777619) over those bytes, written as
-- 8 lowercase hex digits. Name: `<cluster name>-<hash>` (the original operator also named
-- revisions `<name>-<hash>`; the hash function is ours).
local cjson = require("cjson")
local util = require("fc.util")

local revision = {}

--- Control fields, as paths into `spec`: changing only these does not make a new revision.
revision.CONTROL_FIELDS = {
  { "job", "savepointGeneration" },
  { "job", "cancelRequested" },
  { "job", "autoSavepointSeconds" },
  { "job", "takeSavepointOnUpgrade" },
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

--- revision.strip(spec) -> a deep copy of `spec` without the control fields.
function revision.strip(spec)
  local out = util.deepcopy(spec or {})
  for _, path in ipairs(revision.CONTROL_FIELDS) do
    local t = out
    for i = 1, #path - 1 do
      t = type(t) == "table" and t[path[i]] or nil
    end
    if type(t) == "table" then t[path[#path]] = nil end
  end
  return out
end

--- revision.hash(spec) -> "xxxxxxxx": 8 hex digits, FNV-1a 32 of canonical(strip(spec)).
function revision.hash(spec)
  return string.format("%08x", revision.fnv1a32(revision.canonical(revision.strip(spec))))
end

--- revision.name(cluster) -> "<metadata.name>-<hash of spec>".
function revision.name(cluster)
  return cluster.metadata.name .. "-" .. revision.hash(cluster.spec)
end

--- revision.object(cluster, number) -> ControllerRevision (apps/v1) for the cluster's spec:
-- `data` = the stripped spec, `revision` = number (an integer >= 1, one more than the highest
-- observed), labels `app: flink`, `cluster: <n>`, controller ownerReference to the cluster with
-- blockOwnerDeletion false, like the policies' children (lib.names.owner_reference): true would
-- need update permission on flinkclusters/finalizers under the OwnerReferencesPermissionEnforcement
-- admission plugin, which deploy/rbac.yaml does not grant, so the apply would be refused.
function revision.object(cluster, number)
  local md = cluster.metadata
  local owner = {
    apiVersion = cluster.apiVersion or "flinkoperator.k8s.io/v1beta1",
    kind = cluster.kind or "FlinkCluster",
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
      labels = { app = "flink", cluster = md.name },
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
