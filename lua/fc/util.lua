-- SPDX-License-Identifier: Apache-2.0
--- fc.util: small table helpers shared by the framework and the policies.
-- Pure functions; safe inside the policy sandbox.
local util = {}

--- Deep copy of a value. Tables are copied recursively (metatables are
-- kept by reference, so array markers survive); other values are returned
-- as they are. Cycles are not supported (Kubernetes objects have none).
function util.deepcopy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = util.deepcopy(x) end
  return setmetatable(out, getmetatable(v))
end

--- Keys of table `t`, sorted: strings by byte order, numbers before strings.
function util.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta == "number" end
    return a < b
  end)
  return keys
end

--- True when `t` is a non-empty sequence 1..n with no other keys.
function util.is_array(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n > 0 and n == #t
end

--- Structural equality of two values (tables compared key by key).
function util.equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do
    if not util.equal(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

--- Shallow merge: a new table with the pairs of each argument in turn
-- (later ones win). nil arguments are skipped.
function util.merge(...)
  local out = {}
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if t then
      for k, v in pairs(t) do out[k] = v end
    end
  end
  return out
end

--- `t` when it is a non-empty table, else nil: policies use it so that an
-- empty list is omitted instead of being encoded as `{}`.
function util.nonempty(t)
  if type(t) == "table" and next(t) ~= nil then return t end
  return nil
end

-- Levenshtein distance of two short strings.
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

--- util.closest_key(key, fields) -> the key of the table `fields` closest to the string `key`
-- (a field name for "did you mean"): the same letters but case, or at most 2 edits away
-- (Levenshtein; the nearest, then the first by name), or nil.
function util.closest_key(key, fields)
  local best, best_d
  for _, k in ipairs(util.sorted_keys(fields)) do
    local d = k:lower() == key:lower() and 0 or distance(key, k)
    if d <= 2 and (best_d == nil or d < best_d) then best, best_d = k, d end
  end
  return best
end

return util
