-- SPDX-License-Identifier: Apache-2.0
-- The Flink REST answers the job lifecycle reads, as real JobManagers of Flink 1.20 and 2.3
-- sent them (recorded by tests/env/flink/record-rest.sh from session clusters on the test
-- environment's real node into tests/testdata/flink-rest/<version>/): each field the
-- controller reads (core/flinkcall.c flinkcall_record, policies/job.lua, policies/savepoint.lua) is
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
--    job states (RUNNING, FINISHED, FAILED), error bodies ({"errors": [...]}), the REST
--    submission (/jars/upload's filename; /jars/<id>/run takes our jobId and answers it as
--    jobid, 2.x adding applicationId), and `flink run` submission (the realjob and realjob2
--    cases run it against both).
-- The answers go through fc.flink.view, the framework's one reader of Flink's JSON, below.
local cjson = require("cjson")
local fx = require("support.fixtures")
local failure = require("lib.failure")
local flink = require("fc.flink")

-- The recordings: tests/testdata/flink-rest, or FC_FLINK_REST_DIR (the integration case
-- realrest records both versions afresh on the real node and runs this spec on them).
local DIR = os.getenv("FC_FLINK_REST_DIR") or fx.path("tests/testdata/flink-rest")
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

    it("take a jar upload and run it with the job id we give (REST submission)", function()
      local up = answer(dir, "upload-jar")
      assert.equal(200, up.status)
      assert.truthy(up.body.filename:match("_jobs%.jar$"), up.body.filename)
      local run = answer(dir, "run-jar")
      assert.equal(200, run.status)
      assert.truthy(run.request.jobId:match("^%x+$") and #run.request.jobId == 32)
      assert.equal(run.request.jobId, run.body.jobid)
      assert.equal(run.body.jobid, answer(dir, "job-finished").body.jid)
    end)

    it("answer an unknown job with 404 and Flink's errors list", function()
      local a = answer(dir, "exceptions-unknown")
      assert.equal(404, a.status)
      assert.truthy(a.body.errors[1]:find("Job 0123456789abcdef0123456789abcdef not found", 1, true))
    end)
  end)
end

-- The recorded answer NAME of version DIR as the core records it for fc.flink.view: the intent
-- it answers, the HTTP status (an integer, as the core gives it; cjson decodes a float), the
-- body text, no transport error, the time.
local function raw(dir, name, intent, time)
  local a = answer(dir, name)
  return { intent = intent, status = math.tointeger(a.status), body = cjson.encode(a.body), error = "", time = time }
end

for dir, full in pairs(VERSIONS) do
  describe("fc.flink.view on Flink " .. full .. "'s recorded answers", function()
    local jid = answer(dir, "job-finished").body.jid
    local failed = answer(dir, "job-failed").body.jid
    local unknown = string.rep("0123456789abcdef", 2)
    local run_id = answer(dir, "run-jar").request.jobId
    local T1, T2, T3 = string.rep("1", 32), string.rep("2", 32), string.rep("3", 32)
    local view = flink.view({ answers = {
      list_jobs = raw(dir, "overview-finished", { kind = "list_jobs" }, 10),
      [T1] = raw(dir, "savepoint-completed", { kind = "savepoint_status", id = T1, job_id = jid }, 11),
      [T2] = raw(dir, "stop-completed", { kind = "savepoint_status", id = T2, job_id = jid }, 12),
      [T3] = raw(dir, "savepoint-unknown-completed",
        { kind = "savepoint_status", id = T3, job_id = unknown }, 13),
      ["job_exceptions/" .. failed] = raw(dir, "exceptions-failed", { kind = "job_exceptions", job_id = failed }, 14),
      ["job_exceptions/" .. unknown] = raw(dir, "exceptions-unknown",
        { kind = "job_exceptions", job_id = unknown }, 15),
      ["upload/" .. run_id] = raw(dir, "upload-jar", { kind = "upload_jar", id = run_id }, 16),
      ["run/" .. run_id] = raw(dir, "run-jar", { kind = "run_jar", id = run_id }, 17),
    } })

    it("lists the jobs: reachable, the stopped job FINISHED", function()
      assert.is_true(view.reachable)
      assert.equal(10, view.jobs_time)
      local state
      for _, j in ipairs(view.jobs) do
        if j.jid == jid then state = j.state end
      end
      assert.equal("FINISHED", state)
    end)

    it("reads a savepoint's and a stop's outcome: COMPLETED with the location", function()
      for _, t in ipairs({ T1, T2 }) do
        assert.equal("COMPLETED", view.operations[t].status)
        assert.truthy(view.operations[t].location:match("^file:/tmp/record%-rest%-savepoints/savepoint%-"))
        assert.is_nil(view.operations[t].failure)
      end
    end)

    it("reads a failed savepoint's first line", function()
      assert.equal("COMPLETED", view.operations[T3].status)
      assert.truthy(view.operations[T3].failure:find("FlinkJobNotFoundException", 1, true), view.operations[T3].failure)
    end)

    it("reads the newest exception, whose root cause the policies find", function()
      local e = view.exceptions[failed]
      assert.equal("org.apache.flink.runtime.JobException", e.name)
      assert.equal("Caused by: java.lang.IllegalArgumentException: timeout value is negative",
        failure.cause(e.stacktrace))
      local err = view.exceptions[unknown].error
      assert.truthy(err:match("^HTTP 404: .*not found"), err)
    end)

    it("reads a REST submission: the jar id of the upload, our job id from the run", function()
      local sub = view.submissions[run_id]
      assert.truthy(sub.upload.jar_id:match("^[%x-]+_jobs%.jar$"), sub.upload.jar_id)
      assert.equal(run_id, sub.run.job_id)
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
