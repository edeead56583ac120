-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/savepoint.lua (when to take a savepoint; the retention): the fixtures in
-- policies/testdata/savepoint/<case>/ (every case directory; input.yaml holds `hook` and its
-- `input`; expected.yaml is matched against the output as support.fixtures' `mismatch` says:
-- every key given must be equal, lists must have the same length, `{}` means "empty or
-- absent", `~` means "absent"; FC_UPDATE_FIXTURES=1 rewrites it), run on the policy in the
-- production sandbox (support.fixtures), plus unit tests of the rules. The trigger protocol
-- around it (fc.savepoints) has its own specs: tests/savepoints_spec.lua.
local fx = require("support.fixtures")

describe("policies/savepoint.lua", function()
  local savepoint = fx.sandboxed("savepoint")
  local clock = require("lib.clock")
  local settings = require("settings")

  describe("fixtures", function()
    local all = fx.cases("savepoint")
    it("has the cases", function()
      fx.assert_cases(all, {
        "auto-initial-due", "auto-not-yet-due", "auto-scheduled-exact", "cancel-no-savepoints-dir", "cancel-stop",
        "control-acknowledged-none", "control-annotation-set-again", "control-new-savepoint-same-second",
        "disposal-retry-due", "disposal-retry-waits", "generation-request",
        "retention-age", "retention-count", "retention-failed-dropped", "retention-none-keeps", "retention-protected",
        "retention-waits-no-jobmanager", "stop-failed-fallback",
        "update-last-state-job-changed", "update-last-state-none", "update-stops-despite-recent-savepoint",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("savepoint", savepoint, case))
      end)
    end
  end)

  local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"
  -- savepoint.decide's input: `sp` is the savepoint as the framework followed it this pass (also
  -- the observed status.savepoint unless `status.savepoint` says otherwise)
  local function input(spec_job, status, now, update, sp)
    spec_job.jarFile = "/j.jar"
    status = status or {}
    return {
      cluster = { metadata = { name = "wc" }, spec = { job = spec_job }, status = status },
      job = status.job or { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 },
      savepoint = sp or status.savepoint or { state = "NotTriggered" },
      start_time = 1000, flink = {}, update = { pending = update or false }, now = now,
    }
  end

  it("takes an update savepoint, a stop, before a scheduled one that is due at the same time", function()
    local out = savepoint.decide(input({ savepointsDir = "/sp", autoSavepointSeconds = 10 }, nil, 5000, true))
    assert.same({ reason = "update", stop = true }, out.take)
    assert.same({ update = "pending" }, out.outcome)
    assert.same({}, out.intents)
  end)

  it("takes no scheduled savepoint while one is in flight, and none before it is due", function()
    local busy = { state = "InProgress", jobID = ID, triggerID = "000003e8000000000000000000000000",
      triggerReason = "user requested", triggerTime = "1970-01-01T00:16:40Z", requestTime = "1970-01-01T00:16:40Z" }
    local out = savepoint.decide(input({ savepointsDir = "/sp", autoSavepointSeconds = 300 }, nil, 1300, false, busy))
    assert.is_nil(out.take)
    -- due at 1000 (the job's start) + 300 = 1300
    local early = savepoint.decide(input({ savepointsDir = "/sp", autoSavepointSeconds = 300 }, nil, 1290))
    assert.is_nil(early.take)
    assert.equal(10, early.requeue_after)
    assert.same({ reason = "scheduled initial", stop = false },
      savepoint.decide(input({ savepointsDir = "/sp", autoSavepointSeconds = 300 }, nil, 1300)).take)
  end)

  it("retries a failed update savepoint after settings.SAVEPOINT_RETRY_SECONDS", function()
    assert.equal(30, settings.SAVEPOINT_RETRY_SECONDS)
    local failed = { state = "Failed", jobID = ID, triggerID = "000007d0000000000000000000000000",
      triggerReason = "update", triggerTime = clock.format(2000), requestTime = clock.format(2000),
      message = "Checkpoint expired" }
    local st = { savepoint = failed }
    local waiting = savepoint.decide(input({ savepointsDir = "/sp" }, st, 2010, true))
    assert.same({ update = "failed" }, waiting.outcome)
    assert.is_nil(waiting.take)
    assert.equal(20, waiting.requeue_after)
    local again = savepoint.decide(input({ savepointsDir = "/sp" }, st, 2030, true))
    assert.same({ update = "pending" }, again.outcome)
    assert.same({ reason = "update", stop = true }, again.take)
  end)

  it("records the job's latest completed checkpoint from Flink's answer in job.latestCheckpoint", function()
    local inp = input({}, nil, 2000)
    inp.flink.health = { [ID] = { checkpoints = { completed = 3, latest_ack = 1999000,
      latest = { id = 3, path = "file:/ck/" .. ID .. "/chk-3", timestamp = 1999000 } } } }
    local out = savepoint.decide(inp)
    assert.same({ jobID = ID, id = 3, path = "file:/ck/" .. ID .. "/chk-3", timestamp = clock.format(1999) },
      out.job.latestCheckpoint)
    -- the next pass without an answer keeps it
    local again = input({}, { job = out.job }, 2005)
    assert.same(out.job.latestCheckpoint, savepoint.decide(again).job.latestCheckpoint)
  end)

  it("takes nothing while the job is not running", function()
    local st = { job = { name = "wc-job-submitter", state = "Pending", restartCount = 0 } }
    local out = savepoint.decide(input({ savepointsDir = "/sp", autoSavepointSeconds = 1, savepointGeneration = 1 },
      st, 9999))
    assert.is_nil(out.take)
    assert.same({}, out.intents)
    assert.same({}, out.outcome)
  end)

  it("skips the update savepoint when takeSavepointOnUpgrade is false", function()
    local out = savepoint.decide(input({ savepointsDir = "/sp", takeSavepointOnUpgrade = false }, nil, 5000, true))
    assert.equal("skipped", out.outcome.update)
    assert.is_nil(out.take)
  end)
end)
