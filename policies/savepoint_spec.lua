-- Specs of policies/savepoint.lua: the fixtures in policies/testdata/savepoint/<case>/ (every case directory;
-- input.yaml holds `hook` and its `input`; expected.yaml is matched against the output as
-- support.fixtures' `mismatch` says: every key given must be equal, lists must have the same
-- length, `{}` means "empty or absent", `~` means "absent"; FC_UPDATE_FIXTURES=1 rewrites it),
-- run on the policy loaded inside a sandbox like the host's, plus unit tests of the rules.
local fx = require("support.fixtures")

describe("policies/savepoint.lua", function()
  local savepoint = fx.sandboxed("savepoint")
  local clock = require("lib.clock")

  describe("fixtures", function()
    local all = fx.cases("savepoint")
    it("has the cases", function()
      fx.assert_cases(all, {
        "auto-initial-due", "auto-not-yet-due", "auto-scheduled-exact", "cancel-no-savepoints-dir", "cancel-stop",
        "completed-failure", "completed-location", "control-new-savepoint-same-second", "generation-request",
        "stop-created-job-failed", "stop-failed-fallback", "trigger-error", "trigger-request-id",
        "update-stops-despite-recent-savepoint",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("savepoint", savepoint, case))
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
