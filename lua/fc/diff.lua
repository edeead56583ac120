-- SPDX-License-Identifier: Apache-2.0
--- fc.diff: does a desired object differ from the observed one, as far as our fields go?
--
-- Server-side apply only sends the fields we own, so the observed object is a superset of what
-- we set: the API server fills defaults (e.g. `protocol: TCP`, `terminationMessagePath`,
-- `clusterIP`), other controllers add labels, and the server adds metadata. The comparison
-- walks the desired object only:
-- - a map matches when every key we set matches the observed value; extra observed keys are
--   ignored (server-filled defaults);
-- - a list matches when it has the same length and each item matches pairwise (lists in the
--   objects we write are atomic or keyed in order, and the server keeps our order);
-- - metadata fields the server owns (resourceVersion, uid, managedFields, creationTimestamp,
--   generation, selfLink, deletionTimestamp) and `status` are never compared;
-- - an empty map or list, false, 0 or "" we set matches an absent observed field (Go's
--   `omitempty` drops zero values when the server encodes the object);
-- - quantities under `resources` compare by value ("1024Mi" matches "1Gi", "0.5" matches
--   "500m"), since the API server canonicalises them (apimachinery resource.Quantity);
-- - a number matches the same number (1 and 1.0 from different decoders are equal).
local has_quantity, quantity = pcall(require, "fc.quantity")
local revision = require("fc.revision")

local diff = {}

local SERVER_METADATA = {
  resourceVersion = true, uid = true, managedFields = true, creationTimestamp = true,
  generation = true, selfLink = true, deletionTimestamp = true, deletionGracePeriodSeconds = true,
}

local function is_empty_table(v)
  return type(v) == "table" and next(v) == nil
end

local function same_quantity(a, b)
  if not has_quantity then return false end
  local ma = quantity.millicores(a)
  local mb = quantity.millicores(b)
  return ma ~= nil and ma == mb
end

-- first_difference(desired, observed, path, in_resources) -> nil | "path"
local function first_difference(d, o, path, in_resources)
  if type(d) == "table" then
    if o == nil then
      if is_empty_table(d) then return nil end
      return path
    end
    if type(o) ~= "table" then return path end
    if #d > 0 then
      if #d ~= #o then return path end
      for i = 1, #d do
        local p = first_difference(d[i], o[i], path .. "[" .. (i - 1) .. "]", in_resources)
        if p then return p end
      end
      return nil
    end
    for k, v in pairs(d) do
      local skip = (path == "metadata" and SERVER_METADATA[k]) or (path == "" and k == "status")
      if not skip then
        local child = path == "" and tostring(k) or (path .. "." .. tostring(k))
        local p = first_difference(v, o[k], child, in_resources or k == "resources")
        if p then return p end
      end
    end
    return nil
  end
  if d == o then return nil end
  if o == nil and (d == false or d == 0 or d == "") then return nil end
  if type(d) == "number" and type(o) == "number" and d == o then return nil end
  if in_resources and (type(d) == "string" or type(d) == "number")
      and (type(o) == "string" or type(o) == "number") and same_quantity(d, o) then
    return nil
  end
  return path
end

--- diff.differs(desired, observed) -> false | "<path of the first difference>"
-- `desired` is the object we would apply, `observed` the object from the cache (nil when
-- absent: then the result is "" — the whole object differs). Paths use JSON field names and
-- `[i]` for list items, e.g. "spec.replicas" or "spec.template.spec.containers[0].image".
function diff.differs(desired, observed)
  if observed == nil then return "" end
  return first_difference(desired, observed, "", false) or false
end

--- The annotation on every child we apply: the hash of the object as we last applied it (our
-- intent), so that a later intent that differs in any way, a field removed included, is seen
-- without a live diff (which only walks the fields still desired).
diff.APPLIED_HASH = "flinkoperator.k8s.io/applied-hash"
--- The annotation on children with a pod template (spec.template): the hash of that template as
-- applied, so that a change of the pods (recreateOnUpdate) is told apart from a scale.
diff.TEMPLATE_HASH = "flinkoperator.k8s.io/template-hash"

local function hash(v)
  return string.format("%08x", revision.fnv1a32(revision.canonical(v)))
end

local function annotation(obj, key)
  local ann = type(obj) == "table" and type(obj.metadata) == "table" and obj.metadata.annotations
  return type(ann) == "table" and ann[key] or nil
end

--- diff.stamp(obj) -> obj, changed in place: metadata.annotations gets APPLIED_HASH = FNV-1a 32
-- (8 hex digits, fc.revision) of the canonical JSON of `obj` as given (an APPLIED_HASH or
-- TEMPLATE_HASH already there is left out of it), and, when obj.spec.template is a table,
-- TEMPLATE_HASH = the same hash of that template. The same object always gets the same hashes
-- (keys sorted; 1.0 and 1 alike), whatever the order its tables were built in.
function diff.stamp(obj)
  obj.metadata = obj.metadata or {}
  local ann = obj.metadata.annotations or {}
  ann[diff.APPLIED_HASH], ann[diff.TEMPLATE_HASH] = nil, nil
  if next(ann) == nil then obj.metadata.annotations = nil end
  local template = type(obj.spec) == "table" and type(obj.spec.template) == "table" and obj.spec.template
  local whole = hash(obj)
  ann[diff.APPLIED_HASH] = whole
  if template then ann[diff.TEMPLATE_HASH] = hash(template) end
  obj.metadata.annotations = ann
  return obj
end

--- diff.needs_apply(desired, observed) -> false | "absent" | "intent" | "<path of drift>"
-- `desired` stamped by diff.stamp, `observed` from the cache or nil. "absent": no object yet;
-- "intent": what we want differs from what we last applied (observed APPLIED_HASH differs or is
-- missing: a field added, changed or removed); else the path of the first field we set that
-- someone changed (diff.differs: drift in our fields). false: nothing to write.
function diff.needs_apply(desired, observed)
  if observed == nil then return "absent" end
  if annotation(observed, diff.APPLIED_HASH) ~= annotation(desired, diff.APPLIED_HASH) then return "intent" end
  return diff.differs(desired, observed)
end

--- diff.template_changed(desired, observed) -> bool: both stamped objects have a pod template
-- and its TEMPLATE_HASH differs (the pods would be replaced; a replicas change alone is not).
function diff.template_changed(desired, observed)
  local want = annotation(desired, diff.TEMPLATE_HASH)
  return want ~= nil and observed ~= nil and annotation(observed, diff.TEMPLATE_HASH) ~= want
end

--- Fields Kubernetes refuses to change in place, per kind (apps/v1 StatefulSet validation
-- ValidateStatefulSetUpdate: only replicas, template, updateStrategy, minReadySeconds,
-- persistentVolumeClaimRetentionPolicy and ordinals may change; core/v1 Service: clusterIP is
-- immutable once set, so a switch to or from `clusterIP: None` (Headless) needs a new Service).
diff.IMMUTABLE = {
  StatefulSet = { { "spec", "selector" }, { "spec", "serviceName" }, { "spec", "volumeClaimTemplates" },
    { "spec", "podManagementPolicy" } },
  Service = { { "spec", "clusterIP" } },
}

local function get(t, path)
  for _, k in ipairs(path) do
    if type(t) ~= "table" then return nil end
    t = t[k]
  end
  return t
end

--- diff.immutable_change(desired, observed) -> false | "<path>": the first field of
-- diff.IMMUTABLE[desired.kind] that we set and that differs from the observed object, i.e. the
-- object must be deleted and created again instead of applied. A `clusterIP` we do not set is
-- not compared (the server assigns one), except that a headless Service (observed `clusterIP:
-- None`) we no longer want headless is one: the API server keeps the old clusterIP when an
-- update leaves it out (Service REST strategy, patchAllocatedValues), so it would stay headless.
function diff.immutable_change(desired, observed)
  if observed == nil then return false end
  if desired.kind == "Service" and get(observed, { "spec", "clusterIP" }) == "None"
      and get(desired, { "spec", "clusterIP" }) ~= "None" then
    return "spec.clusterIP"
  end
  for _, path in ipairs(diff.IMMUTABLE[desired.kind] or {}) do
    local d = get(desired, path)
    if d ~= nil then
      local p = first_difference(d, get(observed, path), table.concat(path, "."), false)
      if p then return p end
    end
  end
  return false
end

return diff
