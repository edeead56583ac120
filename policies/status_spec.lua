-- Specs of policies/status.lua: the fixtures in policies/testdata/status/<case>/ (input.yaml
-- holds `hook` and its `input`; expected.yaml is matched against the output: every key given
-- must be equal, lists must have the same length, `~` means "absent"), run on the policy
-- loaded inside a sandbox like the host's, plus unit tests of the rules.
local lyaml = require("lyaml")
local lfs = require("lfs")

local ROOT = os.getenv("FC_ROOT") or "."
local CASES = ROOT .. "/policies/testdata/status"

local function read_yaml(path)
  local f = assert(io.open(path, "r"))
  local text = f:read("a")
  f:close()
  return lyaml.load(text)
end

-- The policy loaded with only the sandbox's allowlist (docs/contracts.md): a global read or
-- write, or a require outside fc.util, fc.quantity and lib.*, raises.
local function sandboxed(name)
  local env = {}
  for _, k in ipairs({ "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "rawequal",
    "rawget", "rawlen", "rawset", "select", "setmetatable", "getmetatable", "tonumber", "tostring",
    "type", "_VERSION" }) do
    env[k] = _G[k]
  end
  env.string, env.table, env.math, env.utf8 = string, table, math, utf8
  env.os = { time = os.time, date = os.date, clock = os.clock, difftime = os.difftime }
  local function load_file(path) return assert(loadfile(path, "t", env))() end
  local loaded = {}
  env.require = function(m)
    if m == "fc.util" or m == "fc.quantity" then return require(m) end
    local lib = assert(m:match("^lib%.([%w_]+)$"), "require not allowed in the sandbox: " .. m)
    loaded[m] = loaded[m] or load_file(ROOT .. "/policies/lib/" .. lib .. ".lua")
    return loaded[m]
  end
  setmetatable(env, {
    __index = function(_, k) error("global read in the sandbox: " .. tostring(k), 2) end,
    __newindex = function(_, k) error("global write in the sandbox: " .. tostring(k), 2) end,
  })
  return load_file(ROOT .. "/policies/" .. name .. ".lua")
end

-- nil when `got` matches `exp` (see the header), else "<path>: <what differs>".
local function mismatch(exp, got, path)
  if exp == lyaml.null then
    if got ~= nil then return path .. ": expected absent, got " .. tostring(got) end
    return nil
  end
  if type(exp) == "table" then
    if type(got) ~= "table" then return path .. ": expected a table, got " .. tostring(got) end
    if #exp > 0 and #exp ~= #got then return path .. ": " .. #got .. " items, expected " .. #exp end
    for k, v in pairs(exp) do
      local m = mismatch(v, got[k], path .. (type(k) == "number" and ("[" .. (k - 1) .. "]") or ("." .. k)))
      if m then return m end
    end
    return nil
  end
  if exp ~= got then return path .. ": expected " .. tostring(exp) .. ", got " .. tostring(got) end
  return nil
end

local function cases()
  local dirs = {}
  for entry in lfs.dir(CASES) do
    if entry:sub(1, 1) ~= "." and lfs.attributes(CASES .. "/" .. entry, "mode") == "directory" then
      dirs[#dirs + 1] = entry
    end
  end
  table.sort(dirs)
  return dirs
end

describe("policies/status.lua", function()
  local status = sandboxed("status")

  describe("fixtures", function()
    local all = cases()
    it("has the cases", function()
      assert.is_true(#all >= 11)
    end)
    for _, case in ipairs(all) do
      it(case, function()
        local input = read_yaml(CASES .. "/" .. case .. "/input.yaml")
        local expected = read_yaml(CASES .. "/" .. case .. "/expected.yaml")
        local out = status[input.hook](input.input)
        assert.is_nil(mismatch(expected, out, ""))
      end)
    end
  end)

  describe("statefulset_state", function()
    local function sts(replicas, ready, gen, seen, cur, upd)
      return { metadata = { generation = gen }, spec = { replicas = replicas },
        status = { readyReplicas = ready, observedGeneration = seen, currentRevision = cur, updateRevision = upd } }
    end
    it("is Ready when readyReplicas == replicas and observedGeneration is current", function()
      assert.equal("Ready", status.statefulset_state(sts(2, 2, 4, 4)))
    end)
    it("is NotReady with fewer ready replicas, readyReplicas omitted meaning 0", function()
      assert.equal("NotReady", status.statefulset_state(sts(2, 1, 1, 1)))
      assert.equal("NotReady", status.statefulset_state(sts(1, nil, 1, 1)))
    end)
    it("defaults replicas to 1", function()
      assert.equal("Ready", status.statefulset_state(sts(nil, 1, 1, 1)))
    end)
    it("is Updating while the controller lags the generation or rolls out a revision", function()
      assert.equal("Updating", status.statefulset_state(sts(1, 1, 5, 4)))
      assert.equal("Updating", status.statefulset_state(sts(1, 1, 5, 5, "a-1", "a-2")))
    end)
    it("is NotReady before the StatefulSet controller has seen it at all", function()
      assert.equal("NotReady", status.statefulset_state(sts(1, nil, 1, nil)))
    end)
  end)

  describe("service_state", function()
    it("is Ready for a ClusterIP Service once it exists", function()
      assert.equal("Ready", status.service_state({ spec = { type = "ClusterIP" } }))
    end)
    it("waits for a LoadBalancer ingress address", function()
      assert.equal("NotReady", status.service_state({ spec = { type = "LoadBalancer" },
        status = { loadBalancer = {} } }))
      assert.equal("Ready", status.service_state({ spec = { type = "LoadBalancer" },
        status = { loadBalancer = { ingress = { { hostname = "lb.example.com" } } } } }))
    end)
  end)

  describe("compute", function()
    local function comps(tm)
      return {
        configMap = { name = "c-configmap", state = "Ready" },
        jobManagerStatefulSet = { name = "c-jobmanager", state = "Ready" },
        jobManagerService = { name = "c-jobmanager", state = "Ready" },
        taskManagerStatefulSet = { name = "c-taskmanager", state = tm },
      }
    end
    local function input(old_state, tm)
      return { cluster = { metadata = { name = "c" }, spec = {}, status = { state = old_state } },
        components = comps(tm), cleanup = "", updating = false, revision = { current = "c-1", next = "c-1" }, now = 5 }
    end
    it("stays Creating until the first time all are Ready", function()
      assert.equal("Creating", status.compute(input(nil, "NotReady")).state)
      assert.equal("Creating", status.compute(input("Creating", "NotReady")).state)
      assert.equal("Running", status.compute(input("Creating", "Ready")).state)
    end)
    it("goes Reconciling -> Running when the component recovers", function()
      assert.equal("Reconciling", status.compute(input("Running", "NotReady")).state)
      assert.equal("Running", status.compute(input("Reconciling", "Ready")).state)
    end)
    it("shows a StatefulSet rollout as Updating once the cluster has run, not while Creating", function()
      assert.equal("Updating", status.compute(input("Running", "Updating")).state)
      assert.equal("Creating", status.compute(input("Creating", "Updating")).state)
    end)
    it("puts the job into components and passes savepoint and control through", function()
      local i = input("Running", "Ready")
      i.job = { name = "c-job-submitter", state = "Running", id = "ab" }
      i.savepoint = { state = "Succeeded" }
      i.control = { name = "savepoint", state = "Succeeded" }
      local out = status.compute(i)
      assert.equal("ab", out.components.job.id)
      assert.equal("Succeeded", out.savepoint.state)
      assert.equal("savepoint", out.control.name)
      assert.equal("JobRunning", out.conditions[2].type)
      assert.equal("True", out.conditions[2].status)
    end)
  end)
end)
