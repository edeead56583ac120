-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/settings.lua: its fixture (the shipped values pass `check`) in the production
-- sandbox, and what `check` says of a value out of range, on the plain module and through
-- `flink-controller test` on a policy dir with a bad edit.
local fx = require("support.fixtures")

describe("policies/settings.lua", function()
  local sandboxed = fx.sandboxed("settings")
  local settings = require("settings")

  describe("fixtures", function()
    local all = fx.cases("settings")
    it("has the cases", function() fx.assert_cases(all, { "shipped" }) end)
    for _, case in ipairs(all) do
      it(case, function() assert.is_nil(fx.hook_case("settings", sandboxed, case)) end)
    end
  end)

  it("names each value of the wrong kind or out of range", function()
    local saved = { settings.RESTART_BACKOFF_FACTOR, settings.JOB_POLL_SECONDS, settings.HEALTH_RESTART_WINDOW,
      settings.HEALTH_RESTART_THRESHOLD }
    settings.RESTART_BACKOFF_FACTOR, settings.JOB_POLL_SECONDS = 0.5, 0
    settings.HEALTH_RESTART_WINDOW, settings.HEALTH_RESTART_THRESHOLD = "5 minutes", nil
    local got = settings.check()
    settings.RESTART_BACKOFF_FACTOR, settings.JOB_POLL_SECONDS, settings.HEALTH_RESTART_WINDOW,
      settings.HEALTH_RESTART_THRESHOLD = table.unpack(saved, 1, 4)
    assert.same({ errors = {
      { path = "settings.HEALTH_RESTART_WINDOW", message = "must be a duration such as 30s, 5m, 1h, got 5 minutes" },
      { path = "settings.JOB_POLL_SECONDS", message = "must be a number > 0, got 0" },
      { path = "settings.RESTART_BACKOFF_FACTOR", message = "must be a number >= 1, got 0.5" },
    } }, got)
    assert.same({ errors = {} }, settings.check())
  end)

  it("fails `flink-controller test` of a policy dir whose settings.lua has a bad value #bin", function()
    local dir = fx.tmpdir()
    assert(os.execute("cp -r " .. fx.quote(fx.ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
    fx.write(dir .. "/settings.lua", (fx.read(dir .. "/settings.lua")
      :gsub("\nsettings.RESTART_MAX_ATTEMPTS = 3\n", "\nsettings.RESTART_MAX_ATTEMPTS = -1\n")))
    local r = fx.run_bin({ "test", "--policy-dir", dir, "settings/" })
    os.execute("rm -rf " .. fx.quote(dir))
    assert.equal(1, r.code)
    -- the failing value by its name and what it must be (the JSON's key order is not fixed)
    assert.is_truthy(r.stdout:find("^FAIL settings/shipped: errors: expected empty, got %[{"), r.stdout)
    assert.is_truthy(r.stdout:find('"path":"settings.RESTART_MAX_ATTEMPTS"', 1, true), r.stdout)
    assert.is_truthy(r.stdout:find('"message":"must be a whole number >= 0, got -1"', 1, true), r.stdout)
    assert.is_truthy(r.stdout:find("\n0 passed, 1 failed\n$"), r.stdout)
  end)
end)
