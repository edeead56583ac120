-- The Flink REST answers the job lifecycle reads, as real JobManagers of Flink 1.20 and 2.3
-- sent them (recorded by tests/env/flink/record-rest.sh from session clusters on the test
-- environment's real node into tests/testdata/flink-rest/<version>/): each field the
-- controller reads (core/run.c run_flink_record, policies/job.lua, policies/savepoint.lua) is
-- there, with the same meaning, in both versions. Where the versions differ, the spec says so.
--
-- What differs between 1.20 and 2.3 in what the lifecycle uses (Flink 2.3 REST reference,
-- "/jobs/:jobid/exceptions"; and these recordings):
--  * GET /jobs/<id>/exceptions: 1.20 still sends the deprecated root-exception, timestamp,
--    all-exceptions and truncated beside exceptionHistory; 2.x sends exceptionHistory only. The
--    controller reads exceptionHistory.entries[0] (exceptionName, stacktrace) and falls back to
--    root-exception only when there is no history, so both work.
--  * the rest is the same: /jobs/overview (jid, state; 2.x adds application-id elsewhere and
--    pending-operators here, which nothing reads), savepoint and stop triggers (202,
--    request-id), their status (status.id, operation.location or operation.failure-cause),
--    job states (RUNNING, FINISHED, FAILED), error bodies ({"errors": [...]}), and `flink run`
--    submission (the realjob and realjob2 cases run it against both).
local cjson = require("cjson")
local fx = require("support.fixtures")
local failure = require("lib.failure")

local DIR = fx.path("tests/testdata/flink-rest")
local VERSIONS = { ["1.20"] = "1.20.5", ["2.3"] = "2.3.0" }

local function answer(version, name)
  local text = fx.read(DIR .. "/" .. version .. "/" .. name .. ".json")
  return cjson.decode(text)
end

for dir, full in pairs(VERSIONS) do
  describe("Flink " .. full .. " REST answers (recorded)", function()
    it("come from a JobManager of that version", function()
      local a = answer(dir, "config")
      assert.equal(200, a.status)
      assert.equal(full, a.body["flink-version"])
    end)

    it("list jobs in /jobs/overview with jid and state, RUNNING then FINISHED after a stop", function()
      local id = answer(dir, "job-finished").body.jid
      assert.truthy(id:match("^%x+$") and #id == 32, id)
      for name, state in pairs({ ["overview-running"] = "RUNNING", ["overview-finished"] = "FINISHED" }) do
        local a = answer(dir, name)
        assert.equal(200, a.status)
        local seen
        for _, j in ipairs(a.body.jobs) do
          if j.jid == id then seen = j.state end
        end
        assert.equal(state, seen, name)
      end
    end)

    it("accept a savepoint and a stop-with-savepoint with 202 and a request-id", function()
      for _, name in ipairs({ "savepoint-trigger", "stop-trigger", "savepoint-unknown" }) do
        local a = answer(dir, name)
        assert.equal(202, a.status, name)
        assert.truthy(a.body["request-id"]:match("^%x+$"), name)
      end
    end)

    it("report a finished savepoint or stop as COMPLETED with its file: location", function()
      for _, name in ipairs({ "savepoint-completed", "stop-completed" }) do
        local a = answer(dir, name)
        assert.equal(200, a.status, name)
        assert.equal("COMPLETED", a.body.status.id, name)
        assert.truthy(a.body.operation.location:match("^file:/tmp/record%-rest%-savepoints/savepoint%-"), name)
      end
    end)

    it("report a failed savepoint as COMPLETED with a failure-cause (class, stack-trace)", function()
      local a = answer(dir, "savepoint-unknown-completed")
      assert.equal("COMPLETED", a.body.status.id)
      assert.is_nil(a.body.operation.location)
      assert.is_string(a.body.operation["failure-cause"].class)
      assert.truthy(a.body.operation["failure-cause"]["stack-trace"]:find("FlinkJobNotFoundException", 1, true))
    end)

    it("end a stopped job FINISHED and a failing one FAILED", function()
      assert.equal("FINISHED", answer(dir, "job-finished").body.state)
      assert.equal("FAILED", answer(dir, "job-failed").body.state)
    end)

    it("give the newest exception in exceptionHistory, whose root cause the policies find", function()
      local a = answer(dir, "exceptions-failed")
      assert.equal(200, a.status)
      local e = a.body.exceptionHistory.entries[1]
      assert.equal("org.apache.flink.runtime.JobException", e.exceptionName)
      assert.equal("Caused by: java.lang.IllegalArgumentException: timeout value is negative",
        failure.cause(e.stacktrace))
    end)

    it("answer an unknown job with 404 and Flink's errors list", function()
      local a = answer(dir, "exceptions-unknown")
      assert.equal(404, a.status)
      assert.truthy(a.body.errors[1]:find("Job 0123456789abcdef0123456789abcdef not found", 1, true))
    end)
  end)
end

describe("Flink REST differences 1.20 -> 2.3 the lifecycle meets", function()
  it("none in the job states: both have the 11 of JobStatus, and job.lua maps each", function()
    local job = require("job")
    local function states(dir)
      local out = {}
      for k in pairs(answer(dir, "job-finished").body.timestamps) do out[#out + 1] = k end
      table.sort(out)
      return out
    end
    assert.same(states("1.20"), states("2.3"))
    assert.equal(11, #states("2.3"))
    for _, st in ipairs(states("2.3")) do
      assert.is_string(job.FLINK_STATES[st], st)
    end
  end)

  it("2.x dropped the deprecated root-exception fields of /jobs/<id>/exceptions", function()
    local old, new = answer("1.20", "exceptions-failed").body, answer("2.3", "exceptions-failed").body
    assert.is_string(old["root-exception"])
    assert.is_not_nil(old["all-exceptions"])
    assert.same({ "exceptionHistory" }, (function()
      local keys = {}
      for k in pairs(new) do keys[#keys + 1] = k end
      return keys
    end)())
  end)
end)
