-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/rollback.lua: the fixtures in policies/testdata/rollback/<case>/ (input.yaml:
-- `hook` and its `input`; expected.yaml matched as support.fixtures' `mismatch` says), run on the
-- policy in the production sandbox, plus unit tests of the edges of its two clocks.
local fx = require("support.fixtures")

describe("policies/rollback.lua", function()
  local sandboxed = fx.sandboxed("rollback")
  local rollback = require("rollback")
  local settings = require("settings")

  describe("fixtures", function()
    local all = fx.cases("rollback")
    it("has the cases", function()
      fx.assert_cases(all, {
        "decide-rollback-failed", "decide-rollback-restarting", "decide-stable", "decide-wait-default-timeout",
        "decide-wait-until-stable",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("rollback", sandboxed, case))
      end)
    end
  end)

  -- a job Running in Flink since `start`, judged at `now` (since = 1000 s: 1970-01-01T00:16:40Z)
  local function input(start, now, restarts, timeout)
    return { settings = { enabled = true, readinessTimeoutSeconds = timeout or 60 }, revision = "r-2",
      since = "1970-01-01T00:16:40Z", job = { id = "j", state = "Running" }, flink_state = "RUNNING",
      start_time = start, restarts = restarts, now = now }
  end

  it("judges stable at STABLE_SECONDS of running without restarts, not a second before", function()
    assert.same({ action = "stable" }, rollback.decide(input(1000, 1000 + settings.ROLLBACK_STABLE_SECONDS, 0)))
    assert.same({ action = "wait", requeue_after = 1 },
      rollback.decide(input(1000, 1000 + settings.ROLLBACK_STABLE_SECONDS - 1, 0)))
  end)

  it("rolls back at the deadline, not a second before; a restart count not yet known is not calm", function()
    assert.same({ action = "wait", requeue_after = 1 }, rollback.decide(input(1055, 1059, nil)))
    assert.same({ action = "rollback", reason = "revision r-2 not healthy within 60 s of its submission: "
      .. "restarted ? times" }, rollback.decide(input(1055, 1060, nil)))
  end)

  it("a job calm but younger than STABLE_SECONDS at the deadline is rolled back, saying so", function()
    assert.same({ action = "rollback", reason = "revision r-2 not healthy within 30 s of its submission: "
      .. "running for 5 s only" }, rollback.decide(input(1025, 1030, 0, 30)))
  end)
end)
