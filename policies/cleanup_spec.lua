-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/cleanup.lua: the fixtures in policies/testdata/cleanup/<case>/ run on the
-- policy in the production sandbox, plus every (state, action) pair on the plain module.
local fx = require("support.fixtures")

describe("policies/cleanup.lua", function()
  local sandboxed = fx.sandboxed("cleanup")
  local cleanup = require("cleanup")

  describe("fixtures", function()
    local all = fx.cases("cleanup")
    it("has the cases", function()
      fx.assert_cases(all, {
        "decide-cancelled-keep", "decide-delete-taskmanager", "decide-failed-default", "decide-lost-as-failed",
        "decide-succeeded-default",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("cleanup", sandboxed, case))
      end)
    end
  end)

  it("takes each terminal state's field, else the original operator's default", function()
    local got = {}
    for _, state in ipairs({ "Succeeded", "Failed", "Cancelled", "Lost" }) do
      got[state] = cleanup.decide({ name = "c", state = state }).action
    end
    assert.same({ Succeeded = "DeleteCluster", Failed = "KeepCluster", Cancelled = "DeleteCluster",
      Lost = "KeepCluster" }, got)
    local policy = { afterJobSucceeds = "KeepCluster", afterJobFails = "DeleteCluster",
      afterJobCancelled = "DeleteTaskManager" }
    for _, state in ipairs({ "Succeeded", "Failed", "Cancelled", "Lost" }) do
      got[state] = cleanup.decide({ name = "c", state = state, policy = policy }).action
    end
    assert.same({ Succeeded = "KeepCluster", Failed = "DeleteCluster", Cancelled = "DeleteTaskManager",
      Lost = "DeleteCluster" }, got)
  end)

  it("removes nothing for KeepCluster or an action the API does not know", function()
    assert.is_nil(cleanup.decide({ name = "c", state = "Failed" }).remove)
    local odd = cleanup.decide({ name = "c", state = "Succeeded", policy = { afterJobSucceeds = "Shred" } })
    assert.same({ action = "Shred" }, odd)
  end)
end)
