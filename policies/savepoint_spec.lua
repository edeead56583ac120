-- Specs of policies/savepoint.lua: the fixtures in policies/testdata/savepoint/<case>/ (input.yaml holds
-- `hook` and its `input`; expected.yaml is matched against the output: every key given must be
-- equal, lists must have the same length, `{}` means "empty or absent", `~` means "absent"),
-- run on the policy loaded inside a sandbox like the host's, plus unit tests of the rules.
local lyaml = require("lyaml")
local lfs = require("lfs")

local ROOT = os.getenv("FC_ROOT") or "."
local CASES = ROOT .. "/policies/testdata/savepoint"

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
    if next(exp) == nil then
      if got ~= nil and (type(got) ~= "table" or next(got) ~= nil) then return path .. ": expected empty" end
      return nil
    end
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

describe("policies/savepoint.lua", function()
  local savepoint = sandboxed("savepoint")
  local clock = require("lib.clock")

  describe("fixtures", function()
    local all = cases()
    it("has the cases", function()
      assert.is_true(#all >= 10)
    end)
    for _, case in ipairs(all) do
      it(case, function()
        local input = read_yaml(CASES .. "/" .. case .. "/input.yaml")
        local expected = read_yaml(CASES .. "/" .. case .. "/expected.yaml")
        local out = savepoint[input.hook](input.input)
        assert.is_nil(mismatch(expected, out, ""))
      end)
    end
  end)

  local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"
  local function input(spec_job, status, now, triggers, update)
    spec_job.jarFile = "/j.jar"
    return {
      cluster = { metadata = { name = "wc" }, spec = { job = spec_job }, status = status or {} },
      job = status and status.job or { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 },
      start_time = 1000, flink = { savepoint_triggers = triggers or {} },
      update = { pending = update or false }, now = now,
    }
  end

  it("triggers every autoSavepointSeconds exactly, counted from each trigger", function()
    -- simulate 1000 s of a job started at t=1000 with savepoints that take 7 s each
    local spec = { savepointsDir = "/sp", autoSavepointSeconds = 300 }
    local st = { job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 } }
    local triggers, times, n = {}, {}, 0
    for now = 1000, 2000 do
      local out = savepoint.decide(input(spec, st, now, triggers))
      for _, a in ipairs(out.flink) do
        if a.method == "POST" then
          times[#times + 1] = now
          n = n + 1
          triggers[ID] = { request_id = string.format("%032x", n), time = now }
        end
      end
      if out.savepoint.state == "InProgress" and out.savepoint.triggerID
          and now - clock.parse(out.savepoint.triggerTime) >= 7 then
        triggers[ID] = { request_id = out.savepoint.triggerID, status = "COMPLETED", location = "/sp/s" .. n,
          time = now }
      end
      st = { savepoint = out.savepoint, job = out.job }
    end
    assert.same({ 1300, 1600, 1900 }, times)
    assert.equal("/sp/s3", st.job.savepointLocation)
  end)

  it("takes an update savepoint before a scheduled one that is due at the same time", function()
    local out = savepoint.decide(input({ savepointsDir = "/sp", autoSavepointSeconds = 10 }, nil, 5000, {}, true))
    assert.equal("update", out.savepoint.triggerReason)
    assert.equal("pending", out.outcome.update)
    assert.equal(1, #out.flink)
  end)

  it("ignores a recorded answer older than the trigger (the previous savepoint's)", function()
    local st = {
      savepoint = { jobID = ID, triggerTime = "1970-01-01T00:16:40Z", requestTime = "1970-01-01T00:16:40Z",
        triggerReason = "scheduled", state = "InProgress" },
      job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0,
        lastSavepointTriggerID = "00000000000000000000000000000001" },
    }
    local old_answer = { [ID] = { request_id = "00000000000000000000000000000001", status = "COMPLETED",
      location = "/sp/old", time = 990 } }
    local out = savepoint.decide(input({ savepointsDir = "/sp" }, st, 1002, old_answer))
    assert.equal("InProgress", out.savepoint.state)
    assert.is_nil(out.savepoint.triggerID)
    assert.same({}, out.flink)
    assert.equal(5, out.requeue_after)
  end)

  it("gives up waiting for the trigger's answer after TRIGGER_TIMEOUT", function()
    local st = {
      savepoint = { jobID = ID, triggerTime = "1970-01-01T00:16:40Z", triggerReason = "scheduled",
        state = "InProgress" },
      job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 },
    }
    local out = savepoint.decide(input({ savepointsDir = "/sp" }, st, 1000 + savepoint.TRIGGER_TIMEOUT))
    assert.equal("TriggerFailed", out.savepoint.state)
  end)

  it("takes nothing while the job is not running", function()
    local st = { job = { name = "wc-job-submitter", state = "Pending", restartCount = 0 } }
    local out = savepoint.decide(input({ savepointsDir = "/sp", autoSavepointSeconds = 1, savepointGeneration = 1 },
      st, 9999))
    assert.same({}, out.flink)
    assert.same({}, out.outcome)
  end)

  it("skips the update savepoint when takeSavepointOnUpgrade is false", function()
    local out = savepoint.decide(input({ savepointsDir = "/sp", takeSavepointOnUpgrade = false }, nil, 5000, {}, true))
    assert.equal("skipped", out.outcome.update)
    assert.same({}, out.flink)
  end)
end)
