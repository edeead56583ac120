-- SPDX-License-Identifier: Apache-2.0
-- Specs of deploy/argocd/flinkoperator.k8s.io/FlinkCluster/health.lua, the Argo CD health check
-- (Argo CD's resource_customizations layout: health_test.yaml lists testdata/*.yaml inputs with the
-- health status and message expected). Every case runs in plain Lua 5.4 without Argo CD, in an
-- environment of what Argo CD's Lua VM opens for a health script without useOpenLibs (the base
-- functions, table, a safe os; no string, no math), and again with every number a float (Argo CD
-- hands the object over decoded from JSON: gopher-lua numbers are float64). The script may write
-- no global.
local lyaml = require("lyaml")

local ROOT = os.getenv("FC_ROOT") or "."
local DIR = ROOT .. "/deploy/argocd/flinkoperator.k8s.io/FlinkCluster"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function floats(v)
  if type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = floats(x) end
    return out
  end
  if math.type(v) == "integer" then return v + 0.0 end
  return v
end

-- health(obj) -> hs, as Argo CD runs the script: its text as a function body, `obj` a global
local SCRIPT = read(DIR .. "/health.lua")
local function health(obj)
  local env = { obj = obj, ipairs = ipairs, pairs = pairs, next = next, type = type, tostring = tostring,
    tonumber = tonumber, select = select, error = error, pcall = pcall, assert = assert, table = table,
    os = { time = os.time, date = os.date, clock = os.clock } }
  setmetatable(env, { __newindex = function(_, k) error("health.lua writes the global " .. tostring(k), 2) end })
  local fn = assert(load(SCRIPT, "=health.lua", "t", env))
  return fn()
end

local function listed_files()
  local out = {}
  local p = assert(io.popen('ls "' .. DIR .. '/testdata"'))
  for name in p:lines() do out[#out + 1] = "testdata/" .. name end
  p:close()
  table.sort(out)
  return out
end

describe("deploy/argocd FlinkCluster health.lua", function()
  local cases = lyaml.load(read(DIR .. "/health_test.yaml")).tests

  it("health_test.yaml lists every file of testdata/, each once", function()
    local paths = {}
    for _, c in ipairs(cases) do paths[#paths + 1] = c.inputPath end
    table.sort(paths)
    assert.same(listed_files(), paths)
  end)

  it("covers each status a FlinkCluster can have in Argo CD", function()
    local seen = {}
    for _, c in ipairs(cases) do seen[c.healthStatus.status] = (seen[c.healthStatus.status] or 0) + 1 end
    assert.same({ Healthy = 5, Progressing = 7, Degraded = 6, Suspended = 2 }, seen)
  end)

  for _, c in ipairs(cases) do
    it(c.inputPath .. " -> " .. c.healthStatus.status, function()
      local obj = lyaml.load(read(DIR .. "/" .. c.inputPath))
      local hs = health(obj)
      assert.same({ status = c.healthStatus.status, message = c.healthStatus.message }, hs)
      assert.same(hs, health(floats(obj)))
    end)
  end

  it("reads conditions in kstatus's order: Stalled before Reconciling before Ready", function()
    local function obj(conds)
      local list = {}
      for _, t in ipairs(conds) do
        list[#list + 1] = { type = t[1], status = t[2], reason = t[1], message = t[1] .. " " .. t[2] }
      end
      return { metadata = { generation = 1 },
        status = { state = "Running", observedGeneration = 1, conditions = list } }
    end
    assert.same({ status = "Degraded", message = "Stalled True" },
      health(obj({ { "Ready", "True" }, { "Reconciling", "True" }, { "Stalled", "True" } })))
    assert.same({ status = "Progressing", message = "Reconciling True" },
      health(obj({ { "Ready", "True" }, { "Reconciling", "True" }, { "Stalled", "False" } })))
    assert.same({ status = "Healthy", message = "Ready True" },
      health(obj({ { "Ready", "True" }, { "Reconciling", "False" }, { "Stalled", "False" } })))
    assert.same({ status = "Progressing", message = "Ready False" },
      health(obj({ { "Ready", "False" }, { "Reconciling", "False" }, { "Stalled", "False" } })))
  end)

  it("is Lua 5.1 (Argo CD's gopher-lua): no integer division, goto, bit operators or utf8", function()
    local code = SCRIPT:gsub("%-%-[^\n]*", "")
    assert.is_nil(code:find("//", 1, true))
    assert.is_nil(code:find("goto", 1, true))
    assert.is_nil(code:find("utf8", 1, true))
    assert.is_nil(code:find("[^~=<>]~[^=]"))
    assert.is_nil(code:find("<<", 1, true))
    assert.is_nil(code:find(">>", 1, true))
  end)
end)
