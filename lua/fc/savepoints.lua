-- SPDX-License-Identifier: Apache-2.0
--- fc.savepoints: the savepoint trigger protocol (issue 32, item 1), around the policy that
-- decides when to take one (policies/savepoint.lua, savepoint.decide). fc.reconcile (job
-- clusters) and fc.flinkjob (FlinkJobs) call `savepoints.pass` once per pass, after job.observe
-- and before job.decide.
--
-- A savepoint is one of our trigger ids (fc.trigger, 32 hex), chosen here and written to
-- status.savepoint.triggerID in the pass that starts it; the trigger intent ("savepoint" or
-- "stop") goes to Flink only once that status is written (fc.flink sends triggers after the
-- status), and carries the id, so Flink keys the operation by it: the same trigger sent twice is
-- one savepoint. Flink REST (fc.flink, flink-rest-notes.md "Async operation pattern"):
-- `POST /jobs/<id>/savepoints` or `/stop` with {"triggerId": <ours>}, then
-- `GET /jobs/<id>/savepoints/<ours>` until COMPLETED (operation.location, or failure-cause).
-- Answers arrive decoded in flink.operations[<trigger id>] (fc.flink.view).
--
-- Recovery: a savepoint InProgress whose id has no answer in this controller (it restarted,
-- another replica took over, or the request has not been answered yet) is looked up by its id
-- after POLL_SECONDS: found, it is followed to its outcome; unknown to Flink (404: the request
-- never arrived, or its result expired or went with the JobManager), the same trigger is sent
-- again while the job runs (Flink makes it one savepoint), and after TRIGGER_TIMEOUT without
-- Flink knowing it, it is TriggerFailed. Never a second id for one request.
--
-- A stop (status.savepoint.stop = true: Flink's stop-with-savepoint) that wrote its savepoint and
-- then failed stopping (Flink's StopWithSavepointStoppingException: "A savepoint has been
-- created at: <path>, but the corresponding job <id> failed during stopping") counts as
-- Succeeded with that path, as the Flink Kubernetes operator does.
local util = require("fc.util")
local trigger = require("fc.trigger")
local checkpoints = require("fc.checkpoints")

local savepoints = {}

--- Seconds between polls of a savepoint in progress.
savepoints.POLL_SECONDS = 5
--- Seconds a trigger may stay unknown to Flink (no answer, or 404 on the lookup) before it is
-- TriggerFailed.
savepoints.TRIGGER_TIMEOUT = 60
--- Seconds after which a savepoint still in progress is marked Failed.
savepoints.COMPLETE_TIMEOUT = 600

-- RFC 3339 UTC of unix seconds ("Z"), and back (nil for anything else); the policies' lib.clock
-- reads the same (one fc.clock for both is under way)
local function rfc3339(t) return os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(t)) end
local function parse(s)
  if type(s) ~= "string" then return nil end
  local y, mo, d, h, mi, sec = s:match("^(%d%d%d%d)-(%d%d)-(%d%d)T(%d%d):(%d%d):(%d%d)")
  if not y then return nil end
  y, mo = tonumber(y), tonumber(mo)
  -- days from the civil date (Howard Hinnant's algorithm), no os.time (local time zone)
  local yy = mo <= 2 and y - 1 or y
  local era = (yy >= 0 and yy or yy - 399) // 400
  local yoe = yy - era * 400
  local mp = (mo + 9) % 12
  local doy = (153 * mp + 2) // 5 + tonumber(d) - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec)
end

--- status.savepoint.triggerReason -> the history's triggerType.
savepoints.TRIGGER_TYPES = { ["user requested"] = "manual", scheduled = "periodic",
  ["scheduled initial"] = "periodic", update = "upgrade", ["job cancel"] = "cancel" }

--- savepoints.record(history, sp, now) -> history (a new list, `sp`'s entry first): the entry
-- {time=<RFC 3339 of `now`>, triggerType=<TRIGGER_TYPES, "unknown" else>, triggerID, jobID,
-- result="Succeeded"|"Failed", location=<on success>, failureCause=<on failure, 200 bytes at
-- most>} of `sp`, status.savepoint as it ends {triggerID, jobID, triggerReason, state, message}
-- with `location` on success. TriggerFailed is recorded as Failed. An entry of the same
-- triggerID is replaced (a savepoint is recorded once). The history's shape and retention:
-- policies/lib/retention.lua (which trims it to its HISTORY_MAX).
function savepoints.record(history, sp, now)
  local ok = sp.state == "Succeeded"
  local e = { time = rfc3339(now), triggerType = savepoints.TRIGGER_TYPES[sp.triggerReason] or "unknown",
    triggerID = sp.triggerID, jobID = sp.jobID, result = ok and "Succeeded" or "Failed",
    location = ok and sp.location or nil,
    failureCause = not ok and sp.message and tostring(sp.message):sub(1, 200) or nil }
  local out = { e }
  for _, old in ipairs(history or {}) do
    if old.triggerID == nil or old.triggerID ~= e.triggerID then out[#out + 1] = old end
  end
  return out
end

--- savepoints.track(t) -> {savepoint=<status.savepoint>, job=<status.components.job>, intents=,
--   requeue_after=<seconds or nil>}: the progress of the savepoint in flight.
-- t: {savepoint=<status.savepoint as observed, or nil>, job=<job.observe's job (the status's
--   with the observed state)>, operations={<trigger id>={phase="trigger"|"accepted"|"status",
--   status=, location=, failure=, error=, http=, not_found=}} (fc.flink.view), dir=<spec.job.
--   savepointsDir or nil>, generation=<spec.job.savepointGeneration or nil>, now=<unix s>}.
-- A savepoint that ends (Succeeded, Failed, TriggerFailed) is written to job.savepointHistory
-- (savepoints.record); a Succeeded one sets job.savepointLocation and job.lastSavepointTime; a
-- "user requested" one that ends consumes spec.job.savepointGeneration (job.savepointGeneration =
-- it, when it is one more than the job's). Intents: {kind="savepoint"|"stop"|"savepoint_status",
-- id=<trigger id>, job_id=, target_directory=} (fc.flink). Inputs are not modified.
function savepoints.track(t)
  local now = t.now
  local j = util.deepcopy(t.job)
  local sp = util.deepcopy(t.savepoint or { state = "NotTriggered" })
  local out = { savepoint = sp, job = j, intents = {} }
  if sp.state ~= "InProgress" then return out end
  local running = j.state == "Running" and j.id ~= nil
  local function requeue(s) out.requeue_after = s end
  local function ask(kind)
    out.intents[#out.intents + 1] = { kind = kind, id = sp.triggerID, job_id = sp.jobID, target_directory = t.dir }
  end
  local t0 = parse(sp.triggerTime) or now
  local op = sp.triggerID and (t.operations or {})[sp.triggerID] or nil
  local function finish(state, message, location)
    sp.state = state
    sp.message = message
    j.savepointHistory = savepoints.record(j.savepointHistory, { triggerID = sp.triggerID, jobID = sp.jobID,
      triggerReason = sp.triggerReason, state = state, message = message, location = location }, now)
    if sp.triggerReason == "user requested" then
      local gen = tonumber(t.generation) or 0
      if gen == (tonumber(j.savepointGeneration) or 0) + 1 then j.savepointGeneration = gen end
    end
  end
  local created = sp.stop and op and type(op.failure) == "string"
    and op.failure:match("A savepoint has been created at: (%S-), but the corresponding job")
  trigger.follow({ id = sp.triggerID, job_id = sp.jobID, op = op, t0 = t0, now = now, what = "savepoint",
    can_resend = running and t.dir ~= nil and j.id == sp.jobID,
    limits = { poll = savepoints.POLL_SECONDS, trigger = savepoints.TRIGGER_TIMEOUT,
      complete = savepoints.COMPLETE_TIMEOUT },
    completed = function()
      if op.location or created then
        -- `created`: the stop wrote its savepoint, then the job failed while stopping; the
        -- savepoint is consistent and used as such (flink-rest-notes.md, POST /jobs/:jobid/stop)
        finish("Succeeded", created and ("the job failed while stopping after its savepoint: "
          .. op.failure) or nil, op.location or created)
        j.savepointLocation = op.location or created
        j.lastSavepointTime = rfc3339(now)
      else
        finish("Failed", tostring(op.failure or "savepoint failed"))
      end
    end,
    finish = finish, send = function() ask(sp.stop and "stop" or "savepoint") end,
    poll = function() ask("savepoint_status") end, requeue = requeue })
  return out
end

--- savepoints.start(sp, job, take, dir, now) -> sp, intent: a new savepoint of the running job
-- `job` for the policy's `take` {reason=<text>, stop=<bool>}: a new trigger id (fc.trigger, after
-- job.lastSavepointTriggerID), status.savepoint {jobID, triggerID, triggerTime, requestTime,
-- triggerReason, state="InProgress", stop}, job.lastSavepointTriggerTime/ID set (in place), and
-- the trigger intent ("stop" or "savepoint") to send once the status is written.
function savepoints.start(job, take, dir, now)
  local ts = rfc3339(now)
  local id = trigger.id(now, job.lastSavepointTriggerID)
  local sp = { jobID = job.id, triggerID = id, triggerTime = ts, requestTime = ts, triggerReason = take.reason,
    state = "InProgress", stop = take.stop and true or nil }
  job.lastSavepointTriggerTime = ts
  job.lastSavepointTriggerID = id
  return sp, { kind = take.stop and "stop" or "savepoint", id = id, job_id = job.id, target_directory = dir }
end

--- savepoints.check_take(take) -> nil, or why savepoint.decide's `take` is not nil or
-- {reason=<text>, stop=<boolean or absent>} (fc.contract's check of its result).
function savepoints.check_take(take)
  if take == nil then return nil end
  if type(take) ~= "table" or type(take.reason) ~= "string" or take.reason == ""
      or (take.stop ~= nil and type(take.stop) ~= "boolean") then
    return "take must be {reason=<text>, stop=<boolean>} or absent"
  end
  return nil
end

--- savepoints.pass(decide, input) -> {savepoint=, job=, outcome=, intents=, events=,
--   requeue_after=}: the savepoints (and triggered checkpoints) of one pass, what job.decide and
--   the status read.
-- input: {cluster=<defaulted, status as observed>, job=<job.observe's>, start_time=, flink=
--   <fc.flink.view>, components=, update=, now=}; `decide(policy_input)` calls savepoint.decide
--   (fc.contract.call: it raises on a failed call) and returns its result. Order: the savepoint
--   in flight (savepoints.track), then the policy with it (input.savepoint; cluster.status keeps
--   the observed one), then the savepoint the policy asks for (`take`) when none is in flight and
--   the job runs with a savepointsDir (savepoints.start). The same for a triggered checkpoint
--   (fc.checkpoints): the one in flight (job.checkpointTrigger) is followed before the policy,
--   the one it asks for (`checkpoint`) started after it when none is in flight and the job runs.
--   fc.contract checks the policy's result (savepoints.check_take, checkpoints.check_ask).
function savepoints.pass(decide, input)
  local cluster = input.cluster
  local spec = (cluster.spec or {}).job or {}
  local now = input.now
  local tracked = savepoints.track({ savepoint = (cluster.status or {}).savepoint, job = input.job,
    operations = (input.flink or {}).operations, dir = spec.savepointsDir, generation = spec.savepointGeneration,
    now = now })
  local ckpt = checkpoints.track({ job = tracked.job, operations = (input.flink or {}).checkpoints, now = now })
  local sd = decide({ cluster = cluster, job = ckpt.job, savepoint = tracked.savepoint,
    start_time = input.start_time, flink = input.flink, components = input.components, update = input.update,
    now = now })
  local j = sd.job
  local out = { savepoint = tracked.savepoint, job = j, outcome = sd.outcome or {}, intents = tracked.intents,
    events = sd.events, requeue_after = tracked.requeue_after }
  local function requeue(s)
    if s and s > 0 and (out.requeue_after == nil or s < out.requeue_after) then out.requeue_after = s end
  end
  requeue(sd.requeue_after)
  requeue(ckpt.requeue_after)
  for _, i in ipairs(ckpt.intents) do out.intents[#out.intents + 1] = i end
  if #ckpt.events > 0 then
    out.events = util.deepcopy(sd.events or {})
    for _, e in ipairs(ckpt.events) do out.events[#out.events + 1] = e end
  end
  local ct = j.checkpointTrigger
  if sd.checkpoint and not (type(ct) == "table" and ct.state == "InProgress") and j.state == "Running"
      and j.id ~= nil then
    -- the id is in the status before the trigger goes out (fc.flink sends it after the status)
    out.intents[#out.intents + 1] = checkpoints.start(j, sd.checkpoint, now)
    requeue(checkpoints.POLL_SECONDS)
  end
  local take = sd.take
  if take and tracked.savepoint.state ~= "InProgress" and j.state == "Running" and j.id ~= nil
      and spec.savepointsDir then
    -- the id is in the status before the trigger goes out (fc.flink sends it after the status)
    local sp, intent = savepoints.start(j, take, spec.savepointsDir, now)
    out.savepoint = sp
    out.intents[#out.intents + 1] = intent
    requeue(savepoints.POLL_SECONDS)
  end
  for _, i in ipairs(sd.intents or {}) do out.intents[#out.intents + 1] = i end
  return out
end

return savepoints
