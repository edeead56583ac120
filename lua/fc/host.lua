--- fc.host, pure-Lua fallback (docs/contracts.md, "fc.host").
--
-- In the binary `fc.host` is the C module of core/lhost.c (preloaded, so it wins over this
-- file). Under busted this file stands in with the same API so that framework code can be
-- tested without the binary: policies run in a plain environment holding the same allowlist
-- (strict globals, restricted require, inputs and results copied as plain data), but with
-- plain pcall: NO time budget and NO memory cap. `sandboxed` is false here, true in C.
local util = require("fc.util")

local host = { sandboxed = false }

local BASE = {
  "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "rawequal", "rawget", "rawlen",
  "rawset", "select", "getmetatable", "tonumber", "tostring", "type", "_VERSION",
}
local MODULES = { ["fc.util"] = true, ["fc.quantity"] = true, ["fc.slots"] = true, ["fc.profile"] = true,
  ["fc.yaml"] = true, ["fc.crd"] = true }
-- Framework modules that run as trusted code (the C host preloads them): loaded by the real
-- require, not inside the policy's environment.
local TRUSTED = { ["fc.yaml"] = true }

local state = { policy_dir = nil, policies = {}, timeout_ms = 200, memory_mib = 64 }

local function default_policy_dir()
  local home = os.getenv("FLINK_CONTROLLER_HOME") or os.getenv("FC_ROOT") or "."
  return home .. "/policies"
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("a")
  f:close()
  return text
end

-- Plain-data copy: string/number keys; boolean/number/string/table values; no metatables.
local function copy(v, path, depth)
  local t = type(v)
  if t == "nil" or t == "boolean" or t == "number" or t == "string" then return v end
  if t ~= "table" then error((path ~= "" and path or "value") .. ": " .. t .. " value is not allowed", 0) end
  if depth > 100 then error((path ~= "" and path or "value") .. ": nested deeper than 100 levels (a cycle?)", 0) end
  local out = {}
  for k, x in next, v do
    local kt = type(k)
    local p
    if kt == "string" then
      p = path == "" and k or path .. "." .. k
    elseif kt == "number" then
      p = path .. "[" .. tostring(k) .. "]"
    else
      error((path ~= "" and path or "value") .. ": " .. kt .. " key is not allowed", 0)
    end
    out[k] = copy(x, p, depth + 1)
  end
  return out
end

local function new_env(label)
  local env = {}
  for _, name in ipairs(BASE) do env[name] = _G[name] end
  env.setmetatable = function(t, mt)
    if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
      error("setmetatable: __gc metamethods are not allowed in policies", 2)
    end
    return setmetatable(t, mt)
  end
  env.print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    io.stderr:write("policy " .. label .. ": " .. table.concat(parts, "\t") .. "\n")
  end
  env.string = util.merge(string)
  env.string.dump = nil
  env.table = util.merge(table)
  env.math = util.merge(math)
  env.utf8 = util.merge(utf8)
  env.os = { time = os.time, date = os.date, clock = os.clock, difftime = os.difftime }
  local loaded = {}
  env.require = function(name)
    if type(name) ~= "string" then error("require: module name must be a string", 2) end
    if loaded[name] ~= nil then return loaded[name] end
    local path, chunkname
    if MODULES[name] then
      local found = not TRUSTED[name] and package.searchpath(name, package.path)
      if not found then
        local ok, mod = pcall(require, name) -- a C module (fc.slots from build/lib)
        if not ok then error("require: " .. tostring(mod), 2) end
        loaded[name] = util.merge(mod)
        return loaded[name]
      end
      path, chunkname = found, "@" .. name:gsub("%.", "/") .. ".lua"
    elseif name:match("^lib%.[%w_]+$") then
      path = (state.policy_dir or default_policy_dir()) .. "/lib/" .. name:sub(5) .. ".lua"
      chunkname = "@lib/" .. name:sub(5) .. ".lua"
    else
      error("require: module '" .. name .. "' is not available to policies " ..
        "(allowed: fc.util, fc.quantity, fc.slots, fc.profile, fc.yaml, fc.crd, lib.<name>)", 2)
    end
    local text, err = read_file(path)
    if not text then error("require: cannot open " .. tostring(err), 2) end
    local chunk, lerr = load(text, chunkname, "t", env)
    if not chunk then error(lerr, 0) end
    local mod = chunk(name)
    if mod == nil then mod = true end
    loaded[name] = mod
    return mod
  end
  return setmetatable(env, {
    __index = function(_, k)
      error("undefined global '" .. tostring(k) .. "' (not available to policies)", 2)
    end,
    __newindex = function(_, k)
      error("assignment to global '" .. tostring(k) .. "': policies cannot write globals", 2)
    end,
    __metatable = false,
  })
end

-- Message handler: a string keeps its position, anything else gets the one of the innermost
-- Lua frame; error objects that are not strings are described, never converted.
local function msgh(e)
  if type(e) == "string" or type(e) == "number" then
    e = tostring(e)
    if e:match("^[^:]+:%d+: ") then return e end
  else
    e = "(error object is a " .. type(e) .. " value)"
  end
  for level = 2, 200 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.currentline and info.currentline > 0 then
      return info.short_src .. ":" .. info.currentline .. ": " .. e
    end
  end
  return e
end

--- configure{policy_dir=DIR, timeout_ms=N, memory_mib=N}: a new policy_dir drops loaded
-- policies. The budgets are recorded but not enforced here.
function host.configure(opts)
  assert(type(opts) == "table", "configure: options table expected")
  if opts.policy_dir ~= nil then
    state.policy_dir = opts.policy_dir
    state.policies = {}
  end
  if opts.timeout_ms ~= nil then state.timeout_ms = opts.timeout_ms end
  if opts.memory_mib ~= nil then state.memory_mib = opts.memory_mib end
end

--- info() -> {policy_dir=, timeout_ms=, memory_mib=} (the C module adds used/peak bytes).
function host.info()
  return { policy_dir = state.policy_dir or default_policy_dir(), timeout_ms = state.timeout_ms,
    memory_mib = state.memory_mib }
end

--- load_policy(name) -> policy table | nil, "<name>.lua: <message>" (cached, failures too).
function host.load_policy(name)
  local cached = state.policies[name]
  if type(cached) == "table" then return cached end
  if type(cached) == "string" then return nil, cached end
  if type(name) ~= "string" or not name:match("^[%w_%-]+$") or #name > 64 then
    return nil, "fc.host: invalid policy name '" .. tostring(name) .. "'"
  end
  local file = name .. ".lua"
  local text, err = read_file((state.policy_dir or default_policy_dir()) .. "/" .. file)
  if not text then return nil, file .. ": cannot open " .. tostring(err) end
  local chunk, lerr = load(text, "@" .. file, "t", new_env(name))
  local ok, mod
  if chunk then
    ok, mod = xpcall(chunk, msgh)
  else
    ok, mod = false, lerr
  end
  if ok and type(mod) ~= "table" then
    ok, mod = false, file .. ": must return a table of hooks, got " .. type(mod)
  end
  state.policies[name] = mod
  if not ok then return nil, mod end
  return mod
end

--- call(policy, hook, input) -> true, result | false, "<file>:<line>: <message>"
function host.call(policy, hook, input)
  local mod, err = host.load_policy(policy)
  if not mod then return false, err end
  local fn = rawget(mod, hook)
  if type(fn) ~= "function" then
    return false, policy .. ".lua: hook '" .. tostring(hook) .. "' is not a function"
  end
  local ok, res = xpcall(fn, msgh, copy(input, "", 0))
  if not ok then return false, res end
  local cok, out = pcall(copy, res, "", 0)
  if not cok then
    local info = debug.getinfo(fn, "S")
    return false, info.short_src .. ":" .. info.linedefined .. ": " .. hook .. " returned a bad result: " .. out
  end
  return true, out
end

--- run_chunk(name, text, input) -> true, result | false, err: a text chunk in a fresh
-- environment with `...` = a copy of input.
function host.run_chunk(name, text, input)
  local chunk, err = load(text, "@" .. name, "t", new_env(name))
  if not chunk then return false, err end
  local ok, res = xpcall(chunk, msgh, copy(input, "", 0))
  if not ok then return false, res end
  local cok, out = pcall(copy, res, "", 0)
  if not cok then return false, name .. ":1: bad result: " .. out end
  return true, out
end

return host
