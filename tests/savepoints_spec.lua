-- SPDX-License-Identifier: Apache-2.0
-- Specs of lua/fc/savepoints.lua (the savepoint trigger protocol) with the shipped
-- policies/savepoint.lua in the production sandbox, as fc.reconcile and fc.flinkjob run them.
-- Fixtures: tests/testdata/savepoints/<case>/ (every case directory): input.yaml holds the
-- input of savepoints.pass (what the framework had for savepoint.decide before the protocol
-- moved out of the policy: cluster, job, start_time, flink, components, update, now);
-- expected.yaml is matched against the pass's result as support.fixtures' `mismatch` says (every
-- key given must be equal, lists as long, `{}` empty or absent, `~` absent).
local fx = require("support.fixtures")
local savepoints = require("fc.savepoints")
local contract = require("fc.contract")

local DIR = fx.ROOT .. "/tests/testdata/savepoints"
local host = require("fc.host")

local function decide(i)
  if host.info().policy_dir ~= fx.ROOT .. "/policies" then host.configure({ policy_dir = fx.ROOT .. "/policies" }) end
  local ok, res = contract.call(host, "savepoint", "decide", i)
  if not ok then error(res.message, 2) end
  return res
end

describe("fc.savepoints", function()
  describe("fixtures (with policies/savepoint.lua)", function()
    local all = fx.subdirs(DIR)
    it("has the cases", function()
      fx.assert_cases(all, {
        "auto-initial-due", "auto-not-yet-due", "auto-scheduled-exact", "cancel-no-savepoints-dir", "cancel-stop",
        "completed-failure", "completed-location", "control-acknowledged-none", "control-annotation-set-again",
        "control-new-savepoint-same-second", "disposal-accepted-polls", "disposal-completed",
        "disposal-failed-backoff", "disposal-gone", "disposal-retry-due", "disposal-retry-waits",
        "disposal-waits-jobmanager-gone",
        "generation-request", "history-failed-recorded", "history-recorded",
        "recover-found-completed", "recover-lookup", "recover-not-found-resends", "recover-not-found-timeout",
        "stop-created-job-failed", "stop-failed-fallback", "trigger-accepted-polls", "trigger-error",
        "retention-age", "retention-count", "retention-failed-dropped", "retention-none-keeps", "retention-protected",
        "retention-waits-no-jobmanager",
        "trigger-sent-waits", "trigger-unanswered-lookup", "update-stops-despite-recent-savepoint",
        "update-last-state-none", "update-last-state-job-changed",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        local dir = DIR .. "/" .. case
        local input = fx.read_yaml(dir .. "/input.yaml")
        assert.equal("decide", input.hook)
        local out = savepoints.pass(decide, input.input)
        assert.is_nil(fx.mismatch(fx.expected(dir, out), out, ""))
      end)
    end
  end)
end)
