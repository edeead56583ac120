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
-- not compared (the server assigns one).
function diff.immutable_change(desired, observed)
  if observed == nil then return false end
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
