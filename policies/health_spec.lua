-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/health.lua: the fixtures in policies/testdata/health/<case>/ (input.yaml:
-- `hook` and its `input`; expected.yaml matched as support.fixtures' `mismatch` says), run on the
-- policy in the production sandbox, plus unit tests of the checkpoint window (a tunable that is
-- off by default, set here on the plain module) and of the durations.
local fx = require("support.fixtures")

describe("policies/health.lua", function()
  local sandboxed = fx.sandboxed("health")
  local health = require("health")
  local settings = require("settings")
  local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"

  describe("fixtures", function()
    local all = fx.cases("health")
    it("has the cases", function()
      fx.assert_cases(all, {
        "decide-restarts-before-window", "decide-restarts-first-seen-old-job", "decide-restarts-over-threshold",
        "decide-restarts-since-start", "decide-restarts-unknown",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("health", sandboxed, case))
      end)
    end
  end)

  it("reads durations in s, m, h, d and refuses others", function()
    assert.same({ 30, 300, 7200, 86400, 12 },
      { health.seconds("30s"), health.seconds("5m"), health.seconds("2h"), health.seconds("1d"), health.seconds(12) })
    assert.is_nil(health.seconds(nil))
    assert.has_error(function() health.seconds("5 minutes") end, "health: bad duration 5 minutes (e.g. 30s, 5m, 1h)")
  end)

  describe("with settings.HEALTH_CHECKPOINT_PROGRESS_WINDOW = 10m", function()
    local saved
    before_each(function()
      saved = settings.HEALTH_CHECKPOINT_PROGRESS_WINDOW
      settings.HEALTH_CHECKPOINT_PROGRESS_WINDOW = "10m"
    end)
    after_each(function() settings.HEALTH_CHECKPOINT_PROGRESS_WINDOW = saved end)
    local function ctx(enabled, progress)
      return { job = { id = ID, state = "Running" }, flink_state = "RUNNING", start_time = 1000,
        restarts = { count = 0, samples = { { count = 0, time = 1000 } } },
        checkpoints = { enabled = enabled, completed = 3, progress = progress }, now = 2000 }
    end

    it("fails a job whose last checkpoint progress is older than the window", function()
      assert.same({ action = "fail", reason = "job " .. ID .. ": no checkpoint completed for 601 s (more than 10m)" },
        health.decide(ctx(true, 1399)))
    end)
    it("keeps a job with progress within the window, or without checkpointing", function()
      assert.same({ action = "ok" }, health.decide(ctx(true, 1400)))
      assert.same({ action = "ok" }, health.decide(ctx(false, 1000)))
    end)
  end)
end)
