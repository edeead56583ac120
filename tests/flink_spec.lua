-- SPDX-License-Identifier: Apache-2.0
-- Specs of lua/fc/flink.lua: the one module that knows Flink's REST API. Intents map to
-- requests (method, path, body, where the answer is recorded, whether it waits for the status
-- write), and the core's raw answers (Flink 1.20 bodies, as core/run.c records them) decode
-- into the view the policies read. reconcile_spec runs whole passes through it.
local flink = require("fc.flink")

local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"
local TID = "6553f164000000000000000000000000"
local JM = { scheme = "http", namespace = "ns", service = "wc-jobmanager", port = 8081 }

local function answer(intent, status, body, err, time)
  return { intent = intent, status = status, body = body or "", error = err or "", time = time or 100 }
end

describe("fc.flink.action", function()
  it("sends a savepoint with our trigger id, after the status write", function()
    local a = flink.action({ kind = "savepoint", id = TID, job_id = ID, target_directory = "/sp" }, JM)
    assert.same({ op = "flink", id = TID, method = "POST", path = "/jobs/" .. ID .. "/savepoints",
      body = { ["target-directory"] = "/sp", ["cancel-job"] = false, triggerId = TID }, target = JM,
      after_status = true, intent = { kind = "savepoint", id = TID, job_id = ID, target_directory = "/sp" } }, a)
  end)

  it("sends a stop-with-savepoint (camelCase body, drain false) under the same id as its polls", function()
    local a = flink.action({ kind = "stop", id = TID, job_id = ID, target_directory = "/sp" }, JM)
    assert.same({ "POST", "/jobs/" .. ID .. "/stop", { targetDirectory = "/sp", drain = false, triggerId = TID },
      TID, true }, { a.method, a.path, a.body, a.id, a.after_status })
    local poll = flink.action({ kind = "savepoint_status", id = TID, job_id = ID }, JM)
    assert.same({ "GET", "/jobs/" .. ID .. "/savepoints/" .. TID, TID }, { poll.method, poll.path, poll.id })
    assert.is_nil(poll.after_status)
    assert.is_nil(poll.body)
  end)

  it("triggers a checkpoint with our trigger id and its type, after the status write, then polls it", function()
    local a = flink.action({ kind = "checkpoint", id = TID, job_id = ID, checkpoint_type = "FULL" }, JM)
    assert.same({ op = "flink", id = "checkpoint/" .. TID, method = "POST", path = "/jobs/" .. ID .. "/checkpoints",
      body = { triggerId = TID, checkpointType = "FULL" }, target = JM, after_status = true,
      intent = { kind = "checkpoint", id = TID, job_id = ID, checkpoint_type = "FULL" } }, a)
    -- no type: Flink's default (CONFIGURED)
    assert.same({ triggerId = TID }, flink.action({ kind = "checkpoint", id = TID, job_id = ID }, JM).body)
    local poll = flink.action({ kind = "checkpoint_status", id = TID, job_id = ID }, JM)
    assert.same({ "GET", "/jobs/" .. ID .. "/checkpoints/" .. TID, "checkpoint/" .. TID },
      { poll.method, poll.path, poll.id })
    assert.is_nil(poll.after_status)
    assert.has_error(function() flink.action({ kind = "checkpoint", id = TID, job_id = ID, checkpoint_type = "full" },
      JM) end, "checkpoint intent: checkpoint_type must be CONFIGURED, FULL or INCREMENTAL")
    assert.has_error(function() flink.action({ kind = "checkpoint_status", id = "x", job_id = ID }, JM) end,
      "checkpoint_status intent: id must be 32 hex digits")
  end)

  it("disposes a savepoint by its path, after the status write, then polls Flink's request id", function()
    local a = flink.action({ kind = "dispose_savepoint", id = TID, location = "file:/sp/savepoint-8c2d6f-1" }, JM)
    assert.same({ op = "flink", id = "dispose/" .. TID, method = "POST", path = "/savepoint-disposal",
      body = { ["savepoint-path"] = "file:/sp/savepoint-8c2d6f-1" }, target = JM, after_status = true,
      intent = { kind = "dispose_savepoint", id = TID, location = "file:/sp/savepoint-8c2d6f-1" } }, a)
    local rid = "0f0f0000000000000000000000000001"
    local poll = flink.action({ kind = "dispose_status", id = TID, request_id = rid }, JM)
    assert.same({ "GET", "/savepoint-disposal/" .. rid, "dispose/" .. TID }, { poll.method, poll.path, poll.id })
    assert.is_nil(poll.after_status)
    assert.has_error(function() flink.action({ kind = "dispose_savepoint", id = TID }, JM) end,
      "dispose_savepoint intent: location must be a non-empty string")
    assert.has_error(function() flink.action({ kind = "dispose_status", id = TID, request_id = "../jobs" }, JM) end,
      "dispose_status intent: request_id must be 32 hex digits")
  end)

  it("maps the job list, the failure cause and a cancel", function()
    local function req(i)
      local a = flink.action(i, JM)
      return a.method .. " " .. a.path .. " -> " .. a.id
    end
    assert.equal("GET /jobs/overview -> list_jobs", req({ kind = "list_jobs" }))
    assert.equal("GET /jobs/" .. ID .. "/exceptions?maxExceptions=1 -> job_exceptions/" .. ID,
      req({ kind = "job_exceptions", job_id = ID }))
    assert.equal("PATCH /jobs/" .. ID .. "?mode=cancel -> cancel/" .. ID, req({ kind = "cancel", job_id = ID }))
  end)

  it("maps a REST submission: the jar downloaded and uploaded, then run with our job id", function()
    local up = flink.action({ kind = "upload_jar", id = TID, jar_url = "https://jars.example.com/app-1.0.jar" }, JM)
    assert.same({ "upload/" .. TID, "POST", "/jars/upload", true, flink.JAR_TIMEOUT_SECONDS * 1000 },
      { up.id, up.method, up.path, up.after_status, up.timeout_ms })
    assert.same({ url = "https://jars.example.com/app-1.0.jar", max_bytes = flink.JAR_MAX_BYTES,
      timeout_ms = flink.JAR_TIMEOUT_SECONDS * 1000 }, up.upload)
    assert.is_nil(up.body)
    local small = flink.action({ kind = "upload_jar", id = TID, jar_url = "http://127.0.0.1:8000/j.jar",
      max_bytes = 1024, timeout_seconds = 5 }, JM)
    assert.same({ 1024, 5000 }, { small.upload.max_bytes, small.upload.timeout_ms })
    local run = flink.action({ kind = "run_jar", id = TID, jar_id = "5f6e1c2a-8d1b_app-1.0.jar",
      entry_class = "com.example.App", args = { "--rate", "5" }, parallelism = 2,
      savepoint_path = "file:/sp/savepoint-1", allow_non_restored_state = true }, JM)
    assert.same({ "run/" .. TID, "POST", "/jars/5f6e1c2a-8d1b_app-1.0.jar/run", true }, { run.id, run.method, run.path,
      run.after_status })
    assert.same({ jobId = TID, entryClass = "com.example.App", programArgsList = { "--rate", "5" }, parallelism = 2,
      savepointPath = "file:/sp/savepoint-1", allowNonRestoredState = true }, run.body)
    -- only what is given: Flink's strict mapper refuses unknown fields, and absent ones default
    assert.same({ jobId = TID }, flink.action({ kind = "run_jar", id = TID, jar_id = "x.jar" }, JM).body)
    local del = flink.action({ kind = "delete_jar", id = TID, jar_id = "5f6e1c2a-8d1b_app-1.0.jar" }, JM)
    assert.same({ "delete_jar/" .. TID, "DELETE", "/jars/5f6e1c2a-8d1b_app-1.0.jar" }, { del.id, del.method, del.path })
    assert.is_nil(del.body)
    assert.is_nil(del.after_status)
  end)

  it("refuses a jar URL that is not http(s), a jar id with a path, a non-string argument", function()
    assert.has_error(function() flink.action({ kind = "upload_jar", id = TID, jar_url = "file:///etc/passwd" }, JM) end,
      "upload_jar intent: jar_url must be an http:// or https:// URL")
    assert.has_error(function() flink.action({ kind = "run_jar", id = TID, jar_id = "../jobs" }, JM) end,
      "run_jar intent: jar_id must be a jar id (letters, digits, '-', '_', '.')")
    assert.has_error(function() flink.action({ kind = "delete_jar", id = TID, jar_id = "../../etc" }, JM) end,
      "delete_jar intent: jar_id must be a jar id (letters, digits, '-', '_', '.')")
    assert.has_error(function() flink.action({ kind = "run_jar", id = TID, jar_id = "x.jar", args = { 1 } }, JM) end,
      "run_jar intent: args[0] must be a string")
    assert.has_error(function() flink.action({ kind = "run_jar", id = TID, jar_id = "x.jar", parallelism = 0 }, JM) end,
      "run_jar intent: parallelism must be a positive integer")
  end)

  it("refuses an unknown kind and malformed ids (a policy error, never a bad request)", function()
    assert.has_error(function() flink.action({ kind = "restart" }, JM) end,
      "intent: unknown kind restart (one of list_jobs, job_exceptions, job_restarts, job_checkpoints, savepoint, "
      .. "stop, savepoint_status, checkpoint, checkpoint_status, dispose_savepoint, dispose_status, cancel, "
      .. "upload_jar, run_jar, delete_jar)")
    assert.has_error(function() flink.action({ kind = "savepoint", id = "abc", job_id = ID, target_directory = "/sp" },
      JM) end, "savepoint intent: id must be 32 hex digits")
    assert.has_error(function() flink.action({ kind = "stop", id = TID, job_id = ID }, JM) end,
      "stop intent: target_directory must be a non-empty string")
    assert.has_error(function() flink.action({ kind = "cancel", job_id = "../x" }, JM) end,
      "cancel intent: job_id must be 32 hex digits")
  end)
end)

describe("fc.flink.view", function()
  it("leaves JSON nulls out of the job list (Flink 2.3: schedulerType null while initializing)", function()
    local v = flink.view({ answers = { list_jobs = answer({ kind = "list_jobs" }, 200,
      '{"jobs":[{"jid":"' .. ID .. '","state":"INITIALIZING","schedulerType":null,"start-time":1700000000000}]}') } })
    assert.same({ { jid = ID, state = "INITIALIZING", ["start-time"] = 1700000000000 } }, v.jobs)
  end)

  it("leaves JSON nulls out of every answer, at any depth and as list items", function()
    local v = flink.view({ answers = {
      list_jobs = answer({ kind = "list_jobs" }, 200,
        '{"jobs":[null,{"jid":"' .. ID .. '","state":"RUNNING","schedulerType":null}]}'),
      ["job_exceptions/" .. ID] = answer({ kind = "job_exceptions", job_id = ID }, 200,
        '{"root-exception":null,"exceptionHistory":{"entries":[null,'
        .. '{"exceptionName":"java.lang.RuntimeException","stacktrace":"boom","taskName":null}]}}'),
    } })
    assert.same({ { jid = ID, state = "RUNNING" } }, v.jobs)
    assert.same({ name = "java.lang.RuntimeException", stacktrace = "boom", time = 100 }, v.exceptions[ID])
  end)

  it("reads the job list; an unanswered or refused list is an unreachable JobManager", function()
    local v = flink.view({ answers = { list_jobs = answer({ kind = "list_jobs" }, 200,
      '{"jobs":[{"jid":"' .. ID .. '","state":"RUNNING","start-time":1700000000000}]}') } })
    assert.is_true(v.reachable)
    assert.same({ { jid = ID, state = "RUNNING", ["start-time"] = 1700000000000 } }, v.jobs)
    v = flink.view({ answers = { list_jobs = answer({ kind = "list_jobs" }, 200, '{"jobs":[]}') } })
    assert.same({ true, {} }, { v.reachable, v.jobs })
    v = flink.view({ answers = { list_jobs = answer({ kind = "list_jobs" }, 0, "",
      "JobManager unreachable through the API server: HTTP 503: no endpoints available") } })
    assert.is_false(v.reachable)
    v = flink.view({ answers = { list_jobs = answer({ kind = "list_jobs" }, 503,
      '{"errors":["Service temporarily unavailable due to an ongoing leader election. Please refresh."]}') } })
    assert.is_false(v.reachable)
    assert.same({ reachable = false, jobs = {}, jobs_time = 0, operations = {}, checkpoints = {}, disposals = {},
      exceptions = {}, submissions = {}, health = {}, since = 0 }, flink.view(nil))
  end)

  it("passes on since: when this controller process began keeping the cluster's answers", function()
    assert.equal(1700000110, flink.view({ answers = {}, since = 1700000110 }).since)
    assert.equal(0, flink.view({ answers = {} }).since)
    assert.equal(0, flink.view({ answers = {}, since = "soon" }).since)
  end)

  it("decodes a trigger: accepted, refused by Flink, or unanswered", function()
    local st = { kind = "stop", id = TID, job_id = ID }
    assert.same({ phase = "accepted", time = 100 },
      flink.view({ answers = { [TID] = answer(st, 202, '{"request-id":"' .. TID .. '"}') } }).operations[TID])
    assert.same({ phase = "trigger", http = 404, time = 100,
      error = "HTTP 404: Job could not be found." },
      flink.view({ answers = { [TID] = answer(st, 404, '{"errors":["Job could not be found."]}') } }).operations[TID])
    assert.same({ phase = "trigger", http = 0, time = 100, error = "Timeout was reached" },
      flink.view({ answers = { [TID] = answer(st, 0, "", "Timeout was reached") } }).operations[TID])
  end)

  it("decodes a poll: in progress, completed with a location or a failure, unknown id (404)", function()
    local poll = { kind = "savepoint_status", id = TID, job_id = ID }
    local function op(status, body)
      return flink.view({ answers = { [TID] = answer(poll, status, body) } }).operations[TID]
    end
    assert.same({ phase = "status", status = "IN_PROGRESS", time = 100 },
      op(200, '{"status":{"id":"IN_PROGRESS"},"operation":null}'))
    assert.same({ phase = "status", status = "COMPLETED", location = "file:/sp/savepoint-8c2d6f-1", time = 100 },
      op(200, '{"status":{"id":"COMPLETED"},"operation":{"location":"file:/sp/savepoint-8c2d6f-1"}}'))
    local failed = op(200, '{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.util.concurrent.'
      .. 'CompletionException","stack-trace":"java.util.concurrent.CompletionException: org.apache.flink.runtime.'
      .. 'checkpoint.CheckpointException: Task has finished\\n\\tat x.y(Z.java:1)"}}}')
    assert.equal("java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: "
      .. "Task has finished", failed.failure)
    assert.same({ phase = "status", not_found = true, http = 404, time = 100,
      error = "HTTP 404: There is no savepoint operation with triggerId=" .. TID .. " for job " .. ID .. "." },
      op(404, '{"errors":["There is no savepoint operation with triggerId=' .. TID .. ' for job ' .. ID .. '."]}'))
    assert.same({ phase = "status", http = 500, time = 100, error = "HTTP 500" }, op(500, "<html>oops</html>"))
  end)

  it("decodes a checkpoint: accepted, in progress, completed with Flink's id or a failureCause, 404", function()
    local trig = { kind = "checkpoint", id = TID, job_id = ID }
    local poll = { kind = "checkpoint_status", id = TID, job_id = ID }
    local function op(intent, status, body)
      local v = flink.view({ answers = { ["checkpoint/" .. TID] = answer(intent, status, body) } })
      assert.same({}, v.operations) -- never read as a savepoint of the same id
      return v.checkpoints[TID]
    end
    assert.same({ phase = "accepted", time = 100 }, op(trig, 202, '{"request-id":"' .. TID .. '"}'))
    assert.same({ phase = "trigger", http = 404, time = 100, error = "HTTP 404: Job could not be found." },
      op(trig, 404, '{"errors":["Job could not be found."]}'))
    assert.same({ phase = "status", status = "IN_PROGRESS", time = 100 },
      op(poll, 200, '{"status":{"id":"IN_PROGRESS"},"operation":null}'))
    -- CheckpointInfo: camelCase checkpointId / failureCause (flink-rest-notes.md)
    assert.same({ phase = "status", status = "COMPLETED", checkpoint_id = 42, time = 100 },
      op(poll, 200, '{"status":{"id":"COMPLETED"},"operation":{"checkpointId":42}}'))
    assert.same({ phase = "status", status = "COMPLETED", time = 100,
      failure = "org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint expired before completing." },
      op(poll, 200, '{"status":{"id":"COMPLETED"},"operation":{"failureCause":{"class":"org.apache.flink.runtime.'
        .. 'checkpoint.CheckpointException","stack-trace":"org.apache.flink.runtime.checkpoint.CheckpointException: '
        .. 'Checkpoint expired before completing.\\n\\tat x.y(Z.java:1)"}}}'))
    assert.same({ phase = "status", not_found = true, http = 404, time = 100, error = "HTTP 404: Operation not found" },
      op(poll, 404, '{"errors":["Operation not found"]}'))
  end)

  it("decodes a disposal: accepted with Flink's request id, in progress, done, failed, unknown (404)", function()
    local rid = "0f0f0000000000000000000000000001"
    local function one(kind, status, body, err, time)
      local intent = { kind = kind, id = TID, location = "/sp/s1", request_id = rid }
      return flink.view({ answers = { ["dispose/" .. TID] = answer(intent, status, body, err, time) } }).disposals[TID]
    end
    assert.same({ phase = "accepted", request_id = rid, time = 100 },
      one("dispose_savepoint", 200, '{"request-id":"' .. rid .. '"}'))
    assert.same({ phase = "trigger", error = "connection refused", http = 0, time = 100 },
      one("dispose_savepoint", 0, "", "connection refused"))
    assert.same({ phase = "status", status = "IN_PROGRESS", time = 100 },
      one("dispose_status", 200, '{"status":{"id":"IN_PROGRESS"},"operation":null}'))
    assert.same({ phase = "status", status = "COMPLETED", time = 100 },
      one("dispose_status", 200, '{"status":{"id":"COMPLETED"},"operation":{}}'))
    -- Flink's Dispatcher wraps the cause: the first line says "Could not dispose", the trace why
    -- (as a 1.20.5 JobManager answered a disposal of a path that does not exist)
    local trace = "org.apache.flink.util.FlinkException: Could not dispose savepoint file:/sp/s1.\n"
      .. "\tat org.apache.flink.runtime.dispatcher.Dispatcher.lambda$disposeSavepoint$11(Dispatcher.java:806)\n"
      .. "Caused by: java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory "
      .. "'file:/sp/s1' on file system 'file'.\n"
    assert.same({ phase = "status", status = "COMPLETED", time = 100,
      failure = "org.apache.flink.util.FlinkException: Could not dispose savepoint file:/sp/s1.", trace = trace },
      one("dispose_status", 200, require("cjson").encode({ status = { id = "COMPLETED" }, operation = {
        ["failure-cause"] = { class = "org.apache.flink.util.FlinkException", ["stack-trace"] = trace } } })))
    assert.same({ phase = "status", not_found = true, http = 404, time = 100,
      error = "HTTP 404: Operation not found under key" },
      one("dispose_status", 404, '{"errors":["Operation not found under key"]}'))
  end)

  it("decodes a REST submission: the jar id of the upload, the job id of the run, or why not", function()
    local up = { kind = "upload_jar", id = TID }
    local run = { kind = "run_jar", id = TID }
    local v = flink.view({ answers = {
      ["upload/" .. TID] = answer(up, 200, '{"filename":"/tmp/flink-web-1/flink-web-upload/5f6e1c2a_app.jar",'
        .. '"status":"success"}', "", 101),
      ["run/" .. TID] = answer(run, 200, '{"jobid":"' .. TID .. '"}', "", 102),
    } })
    assert.same({ upload = { jar_id = "5f6e1c2a_app.jar", time = 101 }, run = { job_id = TID, time = 102 } },
      v.submissions[TID])
    v = flink.view({ answers = {
      ["upload/" .. TID] = answer(up, 0, "", "download https://x/app.jar: HTTP 404", 101),
      ["run/" .. TID] = answer(run, 400, '{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: '
        .. 'Could not execute application."]}', "", 102),
    } })
    assert.same({ error = "download https://x/app.jar: HTTP 404", http = 0, time = 101 }, v.submissions[TID].upload)
    -- the jar's deletion: done, or why not (Flink's 400 for a jar it does not hold)
    local del = { kind = "delete_jar", id = TID, jar_id = "5f6e1c2a_app.jar" }
    assert.same({ time = 103 }, flink.view({ answers = { ["delete_jar/" .. TID] = answer(del, 200, "{}", "", 103) } })
      .submissions[TID].delete)
    assert.same({ error = "HTTP 400: File 5f6e1c2a_app.jar does not exist in /tmp/flink-web-upload.", http = 400,
      time = 103 }, flink.view({ answers = { ["delete_jar/" .. TID] = answer(del, 400,
      '{"errors":["File 5f6e1c2a_app.jar does not exist in /tmp/flink-web-upload."]}', "", 103) } })
      .submissions[TID].delete)
    assert.same({ error = "HTTP 400: org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute "
      .. "application.", http = 400, time = 102 }, v.submissions[TID].run)
  end)

  it("asks for the restart counter and the checkpoints, and reads both as Flink 1.20 and 2.x answer", function()
    local r = flink.action({ kind = "job_restarts", job_id = ID }, JM)
    assert.same({ "GET", "/jobs/" .. ID .. "/metrics?get=numRestarts", "job_restarts/" .. ID },
      { r.method, r.path, r.id })
    local c = flink.action({ kind = "job_checkpoints", job_id = ID }, JM)
    assert.same({ "GET", "/jobs/" .. ID .. "/checkpoints", "job_checkpoints/" .. ID }, { c.method, c.path, c.id })
    assert.has_error(function() flink.action({ kind = "job_restarts", job_id = "x" }, JM) end,
      "job_restarts intent: job_id must be 32 hex digits")
    local v = flink.view({ answers = {
      ["job_restarts/" .. ID] = answer({ kind = "job_restarts", job_id = ID }, 200,
        '[{"id":"numRestarts","value":"12"}]',
        "", 103),
      ["job_checkpoints/" .. ID] = answer({ kind = "job_checkpoints", job_id = ID }, 200,
        '{"counts":{"restored":0,"total":5,"in_progress":0,"completed":4,"failed":1},'
        .. '"latest":{"completed":{"id":4,"latest_ack_timestamp":1764484805123,'
        .. '"external_path":"file:/state/checkpoints/' .. ID .. '/chk-4"},"failed":null}}', "", 104),
    } })
    assert.same({ restarts = 12, restarts_time = 103, checkpoints = { completed = 4, latest_ack = 1764484805123,
      latest = { id = 4, path = "file:/state/checkpoints/" .. ID .. "/chk-4", timestamp = 1764484805123 } },
      checkpoints_time = 104 }, v.health[ID])
    -- a metric not collected yet ([]), no checkpoint yet (latest.completed null), a 404
    v = flink.view({ answers = {
      ["job_restarts/" .. ID] = answer({ kind = "job_restarts", job_id = ID }, 200, "[]"),
      ["job_checkpoints/" .. ID] = answer({ kind = "job_checkpoints", job_id = ID }, 200,
        '{"counts":{"completed":0},"latest":{"completed":null}}'),
    } })
    assert.same({ checkpoints = { completed = 0, latest_ack = 0 }, checkpoints_time = 100 }, v.health[ID])
    v = flink.view({ answers = { ["job_restarts/" .. ID] = answer({ kind = "job_restarts", job_id = ID }, 404,
      '{"errors":["Job could not be found."]}') } })
    assert.same({}, v.health[ID])
  end)

  it("keeps the newest answer of a trigger id and bounds a failed job's stack trace", function()
    local v = flink.view({ answers = {
      [TID] = answer({ kind = "savepoint_status", id = TID, job_id = ID }, 200, '{"status":{"id":"IN_PROGRESS"}}',
        "", 105),
      ["job_exceptions/" .. ID] = answer({ kind = "job_exceptions", job_id = ID }, 200,
        '{"exceptionHistory":{"entries":[{"exceptionName":"java.lang.RuntimeException","stacktrace":"'
        .. string.rep("\\u00e9", 5000) .. '"}],"truncated":false}}'),
    } })
    assert.equal("IN_PROGRESS", v.operations[TID].status)
    local e = v.exceptions[ID]
    assert.equal("java.lang.RuntimeException", e.name)
    assert.equal(flink.EXCEPTION_MAX, #e.stacktrace) -- 2-byte characters: cut between them
    assert.truthy(utf8.len(e.stacktrace))
    v = flink.view({ answers = { ["job_exceptions/" .. ID] = answer({ kind = "job_exceptions", job_id = ID }, 200,
      '{"root-exception":"java.lang.Exception: old style","exceptionHistory":{"entries":[]}}') } })
    assert.equal("java.lang.Exception: old style", v.exceptions[ID].stacktrace)
  end)
end)
