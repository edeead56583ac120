-- SPDX-License-Identifier: Apache-2.0
--- fc.shape: output shape checks of the policy hooks that both fc.render and fc.reconcile call
-- (defaults.apply, validate.check, cluster.desired), so that a policy output is judged the same
-- way by `flink-controller render` and by the controller. Each check returns nil when the shape
-- is right, else "<what is wrong>" (the caller prefixes "<policy>.lua: <hook>: "). List
-- positions in messages count from 0, like the field paths validate.lua writes.
local shape = {}

shape.API_VERSION = "flinkoperator.k8s.io/v1beta1"
shape.KIND = "FlinkCluster"

--- True for a table used as a list: empty, or a sequence 1..n with no other keys.
function shape.is_list(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  return n == #v
end

-- Items of a validate result list (`field` is "errors" or "warnings"): error string or nil.
local function check_findings(list, field)
  if list == nil then return nil end
  if not shape.is_list(list) then return field .. " must be a list" end
  for i, f in ipairs(list) do
    if type(f) ~= "table" or type(f.path) ~= "string" or type(f.message) ~= "string" then
      return string.format("%s[%d] must be {path=<string>, message=<string>}", field, i - 1)
    end
  end
  return nil
end

--- defaults.apply -> a FlinkCluster of our group/version with metadata.name and a spec table.
function shape.defaults(c)
  if type(c) ~= "table" then return "must return a table, got " .. type(c) end
  if c.apiVersion ~= shape.API_VERSION or c.kind ~= shape.KIND then
    return "must return a " .. shape.KIND .. " of " .. shape.API_VERSION
  end
  if type(c.metadata) ~= "table" or type(c.metadata.name) ~= "string" then
    return "must return metadata.name as a string"
  end
  if type(c.spec) ~= "table" then return "must return spec as a table" end
  return nil
end

--- validate.check -> {errors=, warnings=}, each absent or a list of {path=<string>, message=<string>}.
function shape.validate(r)
  if type(r) ~= "table" then return "must return a table, got " .. type(r) end
  return check_findings(r.errors, "errors") or check_findings(r.warnings, "warnings")
end

--- cluster.desired -> {objects=<absent or a list of objects with apiVersion, kind and
-- metadata.name strings>}. (The reconciler also requires `objects` to be present: an absent
-- list there would delete every child.)
function shape.cluster(r)
  if type(r) ~= "table" then return "must return a table, got " .. type(r) end
  if r.objects == nil then return nil end
  if not shape.is_list(r.objects) then return "objects must be a list" end
  for i, o in ipairs(r.objects) do
    if type(o) ~= "table" or type(o.apiVersion) ~= "string" or type(o.kind) ~= "string"
      or type(o.metadata) ~= "table" or type(o.metadata.name) ~= "string" then
      return string.format("objects[%d] must have apiVersion, kind and metadata.name strings", i - 1)
    end
  end
  return nil
end

return shape
