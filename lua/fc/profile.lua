-- SPDX-License-Identifier: Apache-2.0
--- fc.profile: a Native TaskManager's resources, from the API's quantities to fc.slots' shape
-- and back to a pod's container resources and Flink's external-resource options.
--
-- The API (spec.taskManager, mode Native) describes what one slot needs (`resourceProfile`)
-- and the most one TaskManager pod may take (`maxPerTaskManager`), each
--   {cpu = <quantity>, memory = <quantity>, extendedResources = {<resource name> = <quantity>}}
-- fc.slots works in cores (number), MiB (integer) and plain amounts:
--   {cpu_cores = 1.5, memory_mib = 2048, extended = {["nvidia.com/gpu"] = 1}}
-- Pure functions, safe in the policy sandbox (validate uses them, and so does the framework).
local quantity = require("fc.quantity")
local slots = require("fc.slots")

local profile = {}

local MIB = 1048576

--- Kubernetes: an extended resource is a fully-qualified name outside *.kubernetes.io
-- ("Extended resources" in the Kubernetes docs; apimachinery IsQualifiedName with a prefix).
local function extended_name_ok(name)
  if type(name) ~= "string" or #name > 253 then return false end
  local prefix, rest = name:match("^([a-z0-9][-a-z0-9.]*[a-z0-9])/([%w][-%w_.]*)$")
  if not prefix or #rest > 63 or not rest:match("[%w]$") then return false end
  return not (prefix == "kubernetes.io" or prefix:sub(-14) == ".kubernetes.io")
end

-- A quantity's value in thousandths (exact), or nil, reason.
local function milli(q)
  if q == nil then return 0 end
  return quantity.millicores(q)
end

--- profile.convert(shape, path, round) -> resources, errors
-- `shape`: the API's {cpu, memory, extendedResources} (nil = all unknown); `path`: its field
-- path for messages ("spec.taskManager.resourceProfile"); `round`: "up" (a request: memory in
-- MiB rounded up, so a pod never asks for less) or "down" (a maximum). Returns fc.slots'
-- resource table and a list of {path, message} (empty when fine); a field in error is left out.
function profile.convert(shape, path, round)
  local res, errors = { extended = {} }, {}
  local function bad(at, msg) errors[#errors + 1] = { path = at, message = msg } end
  if type(shape) ~= "table" then return res, errors end
  local m, why = milli(shape.cpu)
  if not m then
    bad(path .. ".cpu", "invalid quantity: " .. why)
  elseif m < 0 then
    bad(path .. ".cpu", "must not be negative")
  else
    res.cpu_cores = m / 1000
  end
  if shape.memory ~= nil then
    local b, reason = quantity.bytes(shape.memory)
    if not b then
      bad(path .. ".memory", "invalid quantity: " .. reason)
    elseif b < 0 then
      bad(path .. ".memory", "must not be negative")
    else
      res.memory_mib = round == "up" and (b + MIB - 1) // MIB or b // MIB
    end
  end
  local ext = shape.extendedResources
  if ext ~= nil and type(ext) ~= "table" then
    bad(path .. ".extendedResources", "must be an object")
  elseif ext then
    local n = 0
    local names = {}
    for k in pairs(ext) do names[#names + 1] = k end
    table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(names) do
      local at = path .. ".extendedResources[" .. tostring(k) .. "]"
      local a, r = milli(ext[k])
      n = n + 1
      if not extended_name_ok(k) then
        bad(at, "must be an extended resource name such as nvidia.com/gpu (domain/name, not *.kubernetes.io)")
      elseif not a then
        bad(at, "invalid quantity: " .. r)
      elseif a < 0 then
        bad(at, "must not be negative")
      elseif a > 0 then
        res.extended[k] = a / 1000
      end
    end
    if n > 16 then bad(path .. ".extendedResources", "at most 16 extended resources") end
  end
  return res, errors
end

--- profile.of(tm) -> {profile = <resources>, max = <resources>, slots = n} | nil, errors
-- `tm`: the defaulted spec.taskManager of a Native cluster. slots = fc.slots.per_taskmanager:
-- 1 when cpu or memory of the profile is unknown (0) or over its maximum, else the smallest
-- ratio over cpu, memory and the extended resources the maximums name.
function profile.of(tm)
  local p, e1 = profile.convert(tm.resourceProfile, "spec.taskManager.resourceProfile", "up")
  local m, e2 = profile.convert(tm.maxPerTaskManager, "spec.taskManager.maxPerTaskManager", "down")
  for _, e in ipairs(e2) do e1[#e1 + 1] = e end
  if #e1 > 0 then return nil, e1 end
  return { profile = p, max = m, slots = slots.per_taskmanager(p, m) }
end

--- profile.container_resources(res, n) -> {limits = {...}, requests = {...}} | nil
-- What a TaskManager with `n` slots of profile `res` asks for: n x cpu, n x memory and n x
-- each extended resource, as quantities (requests = limits: a Guaranteed pod when cpu and
-- memory are known). Kubernetes takes extended resources in limits (requests, when given,
-- must equal them) and only as whole numbers: an amount n x a that is not whole is rounded up.
-- nil when the profile names nothing.
function profile.container_resources(res, n)
  local limits = {}
  if (res.cpu_cores or 0) > 0 then
    limits.cpu = quantity.format_millicores(math.ceil(res.cpu_cores * 1000 * n - 1e-6))
  end
  if (res.memory_mib or 0) > 0 then limits.memory = quantity.format_bytes(res.memory_mib * n * MIB) end
  for name, a in pairs(res.extended or {}) do
    if name:lower() ~= slots.FLOATING_MEMORY then
      limits[name] = string.format("%d", math.ceil(a * n - 1e-9))
    end
  end
  if next(limits) == nil then return nil end
  local requests = {}
  for k, v in pairs(limits) do requests[k] = v end
  return { limits = limits, requests = requests }
end

--- profile.flink_external(res, n) -> {{key, value}, ...}
-- Flink's external-resource options for the extended resources of a TaskManager with `n`
-- slots (Flink docs, "External Resource Framework"): `external-resources` = the short names
-- joined by ";", and per name `external-resource.<short>.amount` and
-- `external-resource.<short>.kubernetes.config-key` = the Kubernetes resource name. The short
-- name is the part after "/" with characters other than [A-Za-z0-9_] as "_" ("nvidia.com/gpu"
-- -> "gpu"); a clash gets the full name that way ("amd.com/gpu" -> "amd_com_gpu").
function profile.flink_external(res, n)
  local names = {}
  for name in pairs(res.extended or {}) do
    if name:lower() ~= slots.FLOATING_MEMORY then names[#names + 1] = name end
  end
  table.sort(names)
  local short, seen = {}, {}
  for _, name in ipairs(names) do
    local s = (name:match("/(.*)$") or name):gsub("[^%w_]", "_")
    seen[s] = (seen[s] or 0) + 1
    short[name] = s
  end
  local out, list = {}, {}
  for _, name in ipairs(names) do
    local s = short[name]
    if seen[s] > 1 then s = name:gsub("[^%w_]", "_") end
    list[#list + 1] = s
    out[#out + 1] = { "external-resource." .. s .. ".amount",
      string.format("%d", math.ceil(res.extended[name] * n - 1e-9)) }
    out[#out + 1] = { "external-resource." .. s .. ".kubernetes.config-key", name }
  end
  if #list > 0 then table.insert(out, 1, { "external-resources", table.concat(list, ";") }) end
  return out
end

return profile
