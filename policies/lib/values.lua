-- SPDX-License-Identifier: Apache-2.0
--- lib.values: type tests for values decoded from YAML or JSON, shared by defaults.lua and
-- validate.lua. Decoders differ: lua-cjson turns every number into a float (`1` -> 1.0) and
-- `null` into a light userdata; lyaml turns `null`/`~` into a table whose metatable has
-- `_type = "LYAML null"`. These helpers accept all of them. Pure; safe in the policy sandbox.
local values = {}

--- True for an absent value or an explicit null from either decoder: "unset".
function values.is_null(v)
  if v == nil or type(v) == "userdata" then return true end
  if type(v) == "table" then
    local mt = getmetatable(v)
    return type(mt) == "table" and mt._type == "LYAML null"
  end
  return false
end

--- True for an integer value: a Lua integer, or a float with no fraction (JSON decoders
-- give 1.0 for 1). Kubernetes' int32 fields read the JSON number the same way.
function values.is_integer(v)
  if math.type(v) == "integer" then return true end
  return math.type(v) == "float" and v == math.floor(v) and v > -2 ^ 63 and v < 2 ^ 63
end

--- True for a table used as a list: empty (YAML `[]` and `{}` decode alike) or a sequence
-- 1..n with no other keys.
function values.is_list(v)
  if type(v) ~= "table" or values.is_null(v) then return false end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  return n == #v
end

--- True for a table used as an object: string keys only (an empty table counts).
function values.is_object(v)
  if type(v) ~= "table" or values.is_null(v) then return false end
  for k in pairs(v) do
    if type(k) ~= "string" then return false end
  end
  return true
end

--- `t[k1][k2]...`, or nil as soon as a step is not an object or the value is null.
function values.get(t, ...)
  local v = t
  for i = 1, select("#", ...) do
    if not values.is_object(v) then return nil end
    v = v[select(i, ...)]
  end
  if values.is_null(v) then return nil end
  return v
end

--- A copy of `v` without explicit nulls (YAML `~`/`null`, JSON null from either decoder) at
-- any depth: a field set to null means unset, so `ingress: null` must not create an Ingress.
-- Non-table values come back as they are.
function values.without_nulls(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do
    if not values.is_null(x) then out[k] = values.without_nulls(x) end
  end
  return out
end

--- True when `s` is a non-empty string.
function values.is_text(s)
  return type(s) == "string" and s ~= ""
end

return values
