-- The JobManager REST target of the `flink` actions (lua/fc/reconcile.lua): the framework names
-- the Service (namespace, name, ui port, scheme) and the core reaches it by its cluster DNS name
-- or through the API server's service proxy (`run --flink-access`, core/run.c). reconcile_spec
-- checks the target of the actions of a whole pass.
local reconcile = require("fc.reconcile")

local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"

describe("reconcile.flink_target", function()
  it("names the <cluster>-jobmanager Service's ui port over http", function()
    assert.same({ scheme = "http", namespace = "team-a", service = "wc-jobmanager", port = 18081 },
      reconcile.flink_target("team-a", "wc", 18081))
  end)

  it("keeps the port an integer (JSON 8081, not 8081.0) and defaults it to 8081", function()
    local t = reconcile.flink_target("ns", "wc", 9081.0)
    assert.equal("integer", math.type(t.port))
    assert.equal(9081, t.port)
    assert.equal(8081, reconcile.flink_target("ns", "wc", nil).port)
    assert.equal(7000, reconcile.flink_target("ns", "wc", "7000").port)
  end)
end)

describe("reconcile.flink_action", function()
  local target = reconcile.flink_target("ns", "wc", 8081)

  it("carries the target, method, path and body, and where the answer goes", function()
    local a = reconcile.flink_action(target, "POST", "/jobs/" .. ID .. "/savepoints",
      { ["target-directory"] = "/sp", ["cancel-job"] = false })
    assert.same({ op = "flink", method = "POST", path = "/jobs/" .. ID .. "/savepoints",
      body = { ["target-directory"] = "/sp", ["cancel-job"] = false },
      target = { scheme = "http", namespace = "ns", service = "wc-jobmanager", port = 8081 },
      result = "savepoint_trigger", job_id = ID }, a)
    assert.is_nil(a.base)
  end)

  it("records a stop-with-savepoint like a savepoint trigger (same request-id answer, same poll)", function()
    local a = reconcile.flink_action(target, "POST", "/jobs/" .. ID .. "/stop",
      { drain = false, targetDirectory = "/sp" })
    assert.same({ "savepoint_trigger", ID, { drain = false, targetDirectory = "/sp" } }, { a.result, a.job_id, a.body })
  end)

  it("records nothing for a cancel (PATCH ?mode=cancel) and names the poll's job", function()
    local cancel = reconcile.flink_action(target, "PATCH", "/jobs/" .. ID .. "?mode=cancel")
    assert.is_nil(cancel.result)
    assert.same(target, cancel.target)
    local poll = reconcile.flink_action(target, "GET", "/jobs/" .. ID .. "/savepoints/abc-1")
    assert.equal("savepoint_status", poll.result)
    assert.equal(ID, poll.job_id)
  end)
end)
