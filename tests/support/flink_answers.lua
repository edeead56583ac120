-- SPDX-License-Identifier: Apache-2.0
--- support.flink_answers: the core's raw Flink answers (snapshot.flink = {answers={...}}, what
-- core/run.c records) for a decoded view, so that specs can say what Flink answered in the
-- decoded shape and still go through fc.flink's decoding. The bodies are Flink 1.20's
-- (flink-rest-notes.md): /jobs/overview's {"jobs": [...]}, a trigger's {"request-id": id}, a
-- poll's {"status": {"id": ...}, "operation": {...}}, /exceptions' exceptionHistory.
local cjson = require("cjson")

local M = {}

local function jobs_body(jobs)
  if #jobs == 0 then return '{"jobs":[]}' end -- cjson writes {} for an empty table
  return cjson.encode({ jobs = jobs })
end

--- M.raw(view [, now]) -> {answers={<id>={intent=, status=, body=, error=, time=}}}
-- view: {reachable=true|false|nil, jobs={...}, operations={<trigger id>={phase="accepted"
--   |"status"|"trigger", job_id=, stop=, status=, location=, failure=, not_found=, http=,
--   error=, time=}}, checkpoints={<trigger id>={phase="accepted"|"status"|"trigger", job_id=, status=,
--   checkpoint_id=, failure=, http=, error=, time=}}, exceptions={<job id>={name=, stacktrace=, error=, time=}},
--   health={<job id>={restarts=<numRestarts>, restarts_time=, checkpoints={completed=, latest_ack=<ms>},
--   checkpoints_time=}}}.
-- reachable=false is a refused connection to /jobs/overview; nil: no answer recorded.
function M.raw(view, now)
  now = now or 0
  local answers = {}
  view = view or {}
  if view.reachable == true then
    answers.list_jobs = { intent = { kind = "list_jobs" }, status = 200, body = jobs_body(view.jobs or {}),
      error = "", time = now }
  elseif view.reachable == false then
    answers.list_jobs = { intent = { kind = "list_jobs" }, status = 0, body = "",
      error = "Failed to connect: Connection refused", time = now }
  end
  for id, op in pairs(view.operations or {}) do
    local a = { time = op.time or now, error = "", body = "" }
    local trigger_kind = op.stop and "stop" or "savepoint"
    if op.phase == "accepted" then
      a.intent = { kind = trigger_kind, id = id, job_id = op.job_id }
      a.status, a.body = 202, cjson.encode({ ["request-id"] = id })
    elseif op.phase == "trigger" then
      a.intent = { kind = trigger_kind, id = id, job_id = op.job_id }
      a.status = op.http or 0
      if a.status == 0 then
        a.error = op.error or "Timeout was reached"
      else
        a.body = cjson.encode({ errors = { op.error or "failed" } })
      end
    else
      a.intent = { kind = "savepoint_status", id = id, job_id = op.job_id }
      if op.not_found then
        a.status = 404
        a.body = cjson.encode({ errors = { "There is no savepoint operation with triggerId=" .. id } })
      elseif op.http and op.http ~= 200 then
        a.status = op.http
        a.error = op.http == 0 and (op.error or "Timeout was reached") or ""
      else
        local operation = cjson.null
        if op.location then
          operation = { location = op.location }
        elseif op.failure then
          operation = { ["failure-cause"] = { class = "java.util.concurrent.CompletionException",
            ["stack-trace"] = op.failure .. "\n\tat org.apache.flink.Foo.bar(Foo.java:1)" } }
        end
        a.status = 200
        a.body = cjson.encode({ status = { id = op.status or "IN_PROGRESS" }, operation = operation })
      end
    end
    answers[id] = a
  end
  for jid, e in pairs(view.exceptions or {}) do
    local a = { intent = { kind = "job_exceptions", job_id = jid }, time = e.time or now, error = "" }
    if e.error then
      a.status, a.body = 404, cjson.encode({ errors = { e.error } })
    else
      a.status = 200
      a.body = cjson.encode({ exceptionHistory = { entries = { { exceptionName = e.name, stacktrace = e.stacktrace,
        timestamp = 1 } }, truncated = false } })
    end
    answers["job_exceptions/" .. jid] = a
  end
  for id, op in pairs(view.checkpoints or {}) do
    -- POST /jobs/<id>/checkpoints and its polls (CheckpointInfo: camelCase checkpointId, failureCause)
    local a = { time = op.time or now, error = "", body = "", status = op.http or 200 }
    a.intent = { kind = op.phase == "status" and "checkpoint_status" or "checkpoint", id = id, job_id = op.job_id }
    if op.phase == "accepted" then
      a.status, a.body = 202, cjson.encode({ ["request-id"] = id })
    elseif op.http and op.http ~= 200 then
      a.body = cjson.encode({ errors = { op.error or "failed" } })
    else
      local operation = cjson.null
      if op.checkpoint_id then
        operation = { checkpointId = op.checkpoint_id }
      elseif op.failure then
        operation = { failureCause = { class = "org.apache.flink.runtime.checkpoint.CheckpointException",
          ["stack-trace"] = op.failure .. "\n\tat org.apache.flink.Foo.bar(Foo.java:1)" } }
      end
      a.body = cjson.encode({ status = { id = op.status or "IN_PROGRESS" }, operation = operation })
    end
    answers["checkpoint/" .. id] = a
  end
  for jid, h in pairs(view.health or {}) do
    if h.restarts then
      answers["job_restarts/" .. jid] = { intent = { kind = "job_restarts", job_id = jid }, status = 200,
        body = cjson.encode({ { id = "numRestarts", value = tostring(h.restarts) } }), error = "",
        time = h.restarts_time or now }
    end
    if h.checkpoints then
      answers["job_checkpoints/" .. jid] = { intent = { kind = "job_checkpoints", job_id = jid }, status = 200,
        body = cjson.encode({ counts = { completed = h.checkpoints.completed },
          latest = { completed = { latest_ack_timestamp = h.checkpoints.latest_ack } } }), error = "",
        time = h.checkpoints_time or now }
    end
  end
  return { answers = answers }
end

return M
