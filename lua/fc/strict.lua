-- SPDX-License-Identifier: Apache-2.0
--- fc.strict: the unknown fields of a FlinkCluster, as the API server's strict field validation
-- finds them (`kubectl apply --validate=strict`, the default since kubectl 1.25: the request
-- carries fieldValidation=Strict and the server answers 400 `strict decoding error: unknown
-- field "spec.jobManager.replica"`). Used by `render` (fc.render), which refuses them by default.
--
-- Rules, those of the apiextensions-apiserver's pruning (the fields it would drop are the ones
-- strict validation reports), read off the CRD's schema (fc.crd, generated from deploy/crd.yaml):
-- - a field not in `properties` of an object node is unknown (every field of an object node
--   with neither), unless the node has x-kubernetes-preserve-unknown-fields (embedded Kubernetes
--   types: env, volumes, affinity...; all of status) or is a map (`additionalProperties`:
--   flinkProperties, resources' limits);
-- - list items are checked against `items`;
-- - `metadata` of the object is an ObjectMeta: its top-level fields are those of
--   k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta (the server decodes it as such).
-- Pure; no policy is involved (the CRD decides, whatever the policies say).
local util = require("fc.util")

local strict = {}

--- The fields of ObjectMeta (apimachinery meta/v1 types.go, json names).
strict.OBJECT_META = {
  name = true, generateName = true, namespace = true, selfLink = true, uid = true,
  resourceVersion = true, generation = true, creationTimestamp = true, deletionTimestamp = true,
  deletionGracePeriodSeconds = true, labels = true, annotations = true, ownerReferences = true,
  finalizers = true, managedFields = true,
}

local function is_list(v)
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  return n == #v
end

local sorted_keys = util.sorted_keys

local function key_path(path, key)
  key = tostring(key)
  if key:match("^[%a_][%w_]*$") then return path == "" and key or path .. "." .. key end
  return path .. "[" .. key .. "]"
end

local function walk(v, s, path, out)
  if type(s) ~= "table" or type(v) ~= "table" then return end
  if s.type == "array" then
    if is_list(v) and type(s.items) == "table" then
      for i, item in ipairs(v) do walk(item, s.items, string.format("%s[%d]", path, i - 1), out) end
    end
    return
  end
  if s.type ~= "object" or is_list(v) and next(v) ~= nil then return end
  local known = s.properties
  if path == "metadata" and known == nil then known = strict.OBJECT_META end
  if known == nil then
    if type(s.additionalProperties) == "table" then
      for _, k in ipairs(sorted_keys(v)) do walk(v[k], s.additionalProperties, key_path(path, k), out) end
      return
    end
    if s.additionalProperties == true or s["x-kubernetes-preserve-unknown-fields"] then return end
    known = {} -- an object without fields: the API server prunes every key
  end
  for _, k in ipairs(sorted_keys(v)) do
    local child = known[k]
    if child == nil then
      if not s["x-kubernetes-preserve-unknown-fields"] then
        out[#out + 1] = { path = key_path(path, k), hint = util.closest_key(tostring(k), known) }
      end
    elseif type(child) == "table" then
      walk(v[k], child, key_path(path, k), out)
    end
  end
end

--- strict.unknown_fields(doc[, schema]) -> {{path=, hint=<a known field's name or nil>}...}, in
-- document order of the paths (keys sorted at each level). `doc`: a decoded FlinkCluster (fc.codec);
-- `schema`: an openAPIV3Schema node (default: the FlinkCluster CRD's, fc.crd). Paths are field
-- paths as the API server writes them (`spec.jobManager.ports.rpc`, `spec.volumes[0].x`,
-- `spec.podLabels[app.kubernetes.io/name]`, as policies/validate.lua writes them). Never raises.
function strict.unknown_fields(doc, schema)
  local out = {}
  walk(doc, schema or require("fc.crd").schema, "", out)
  return out
end

--- strict.message(u) -> "unknown field" or 'unknown field (did you mean "replicas"?)' for an
-- entry of strict.unknown_fields.
function strict.message(u)
  if u.hint then return string.format('unknown field (did you mean "%s"?)', u.hint) end
  return "unknown field"
end

return strict
