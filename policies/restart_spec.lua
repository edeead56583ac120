-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/restart.lua: the fixtures in policies/testdata/restart/<case>/ (input.yaml:
-- `hook` and its `input`; expected.yaml matched as support.fixtures' `mismatch` says), run on the
-- policy in the production sandbox, plus the backoff's cap (settings changed on the plain
-- module) and a policy dir whose settings.lua alone changes the schedule, in the sandbox.
local fx = require("support.fixtures")

describe("policies/restart.lua", function()
  local sandboxed = fx.sandboxed("restart")
  local restart = require("restart")
  local settings = require("settings")

  describe("fixtures", function()
    local all = fx.cases("restart")
    it("has the cases", function()
      fx.assert_cases(all, {
        "decide-backoff", "decide-due", "decide-first-failure", "decide-give-up", "decide-waits",
        "reset-after-running", "reset-not-yet",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("restart", sandboxed, case))
      end)
    end
  end)

  describe("with RESTART_MAX_ATTEMPTS = 8", function()
    local saved
    before_each(function()
      saved = settings.RESTART_MAX_ATTEMPTS
      settings.RESTART_MAX_ATTEMPTS = 8
    end)
    after_each(function() settings.RESTART_MAX_ATTEMPTS = saved end)

    it("doubles the delay from 10 s and caps it at RESTART_MAX_DELAY_SECONDS (300)", function()
      local got = {}
      for n = 1, 8 do got[n] = restart.decide({ job = { restartAttempt = n - 1 }, now = 0 }).after_seconds end
      assert.same({ 10, 20, 40, 80, 160, 300, 300, 300 }, got)
      assert.equal("give_up", restart.decide({ job = { restartAttempt = 8 }, now = 0 }).action)
    end)
  end)

  it("is changed by settings.lua alone: a policy dir with a 30 s fixed delay, in the sandbox", function()
    local dir = fx.tmpdir()
    assert(os.execute("cp -r " .. fx.quote(fx.ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
    local text = fx.read(dir .. "/settings.lua")
      :gsub("\nsettings.RESTART_INITIAL_DELAY_SECONDS = 10\n", "\nsettings.RESTART_INITIAL_DELAY_SECONDS = 30\n")
      :gsub("\nsettings.RESTART_BACKOFF_FACTOR = 2\n", "\nsettings.RESTART_BACKOFF_FACTOR = 1\n")
    fx.write(dir .. "/settings.lua", text)
    local other = fx.sandboxed("restart", { dir = dir })
    local r = other.decide({ job = { state = "Failed", restartAttempt = 2 }, now = 1700000000 })
    os.execute("rm -rf " .. fx.quote(dir))
    require("fc.host").configure({ policy_dir = fx.ROOT .. "/policies" })
    assert.same({ action = "wait", attempt = 3, after_seconds = 30, next_restart_time = "2023-11-14T22:13:50Z",
      reason = "restart 3 of 3 due in 30 s" }, r)
  end)
end)
