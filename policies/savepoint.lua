--- policies/savepoint.lua: when to take a savepoint of the running job, and the progress of
-- the one in flight. Pure; called by the framework after job.observe and before job.decide.
--
-- Flink REST (flink-rest-notes.md, async operation pattern): `POST /jobs/<id>/savepoints` with
-- {"target-directory": savepointsDir, "cancel-job": false} answers {"request-id": ...}; poll
-- `GET /jobs/<id>/savepoints/<request-id>` until status.id COMPLETED, then read
-- operation.location (success) or operation.failure-cause (failure). The core records those
-- answers in snapshot.flink.savepoint_triggers[<job id>] = {request_id=, status=, location=,
-- failure=, error=, time=<unix s it was recorded>} (see docs/contracts.md, "Reconcile").
--
-- Reasons, highest priority first (one savepoint at a time): "job cancel" (cancelRequested or
-- the job-cancel user control), "update" (a new revision), "user requested"
-- (savepointGeneration = status + 1, or the savepoint user control), "scheduled initial" /
-- "scheduled" (autoSavepointSeconds).
--
-- The savepoint of "job cancel" and "update" also ends the job: Flink's stop-with-savepoint,
-- `POST /jobs/<id>/stop` with {"drain": false, "targetDirectory": savepointsDir} (camelCase,
-- unlike /savepoints; drain false: no MAX_WATERMARK, the job resumes from the savepoint as it
-- was; flink-rest-v1-dispatcher.yml StopWithSavepointRequestBody), polled like a savepoint; on
-- success Flink reports the job FINISHED (job.lua maps that to Cancelled/Updating, not
-- Succeeded). status.savepoint.stop = true (ours) marks such a savepoint. When the stop fails
-- (e.g. a task already finished), the next pass falls back to a plain savepoint, which job.lua
-- follows with a cancel. A stop that wrote its savepoint and then failed stopping (Flink's
-- StopWithSavepointStoppingException: "A savepoint has been created at: <path>, but the
-- corresponding job <id> failed during stopping") counts as Succeeded with that path. An update
-- always restores from the savepoint of the job it ended.
local util = require("fc.util")
local clock = require("lib.clock")
local user_control = require("lib.control")

local savepoint = {}

savepoint.CONTROL_ANNOTATION = user_control.ANNOTATION
--- Seconds between polls of a savepoint in progress.
savepoint.POLL_SECONDS = 5
--- Seconds to wait for the core to report the trigger's request-id before TriggerFailed.
savepoint.TRIGGER_TIMEOUT = 60
--- Seconds after which a savepoint still in progress is marked Failed.
savepoint.COMPLETE_TIMEOUT = 600
--- Seconds to wait before retrying a failed on-demand savepoint (update, cancel).
savepoint.RETRY_SECONDS = 30
--- Reasons whose savepoint ends the job with stop-with-savepoint (false: savepoint, then cancel).
savepoint.STOP_WITH_SAVEPOINT = { ["job cancel"] = true, update = true }

local ON_DEMAND = { "job cancel", "update", "user requested" }

local function trigger_action(job_id, dir, stop)
  if stop then
    return { method = "POST", path = "/jobs/" .. job_id .. "/stop",
      body = { drain = false, targetDirectory = dir } }
  end
  return { method = "POST", path = "/jobs/" .. job_id .. "/savepoints",
    body = { ["target-directory"] = dir, ["cancel-job"] = false } }
end

--- savepoint.decide(input) -> {savepoint=<status.savepoint>, job=<status.components.job with
--   lastSavepointTriggerID, lastSavepointTriggerTime, lastSavepointTime, savepointLocation,
--   savepointGeneration updated>, outcome={<on-demand reason>="pending"|"done"|"failed"|"skipped"},
--   flink={{method=, path=, body=}...}, requeue_after=<seconds or nil>}
-- input: {cluster=<defaulted, status as observed>, job=<from job.observe>, start_time=<unix s the
--   job started in Flink, 0 unknown>, flink={savepoint_triggers={...}},
--   update={pending=bool}, now=<unix seconds>}.
-- `outcome` has a key for each on-demand reason asked for now: "done" once a savepoint for it
-- of this job succeeded (status.savepoint.stop says whether it also stopped the job), "skipped"
-- when no savepoint applies (no savepointsDir, takeSavepointOnUpgrade false), "failed" when the
-- last one failed (retried after RETRY_SECONDS for update and cancelRequested); a failed stop is
-- "pending": a plain savepoint is triggered at once instead (then job.lua cancels).
function savepoint.decide(input)
  local cluster = input.cluster
  local spec = cluster.spec.job or {}
  local status = cluster.status or {}
  local now = input.now
  local j = util.deepcopy(input.job)
  local sp = util.deepcopy(status.savepoint or { state = "NotTriggered" })
  local out = { savepoint = sp, job = j, outcome = {}, flink = {} }
  local running = j.state == "Running" and j.id ~= nil
  local dir = spec.savepointsDir
  local triggers = (input.flink or {}).savepoint_triggers or {}

  local function requeue(s)
    if s and s > 0 and (out.requeue_after == nil or s < out.requeue_after) then out.requeue_after = s end
  end

  -- 1. The savepoint in flight.
  if sp.state == "InProgress" then
    local t0 = clock.parse(sp.triggerTime) or now
    local trig = sp.jobID and triggers[sp.jobID] or nil
    local fresh = trig and (tonumber(trig.time) or 0) >= t0
    local function finish(state, message)
      sp.state = state
      sp.message = message
      if sp.triggerReason == "user requested" then
        local gen = tonumber(spec.savepointGeneration) or 0
        if gen == (tonumber(j.savepointGeneration) or 0) + 1 then j.savepointGeneration = gen end
      end
    end
    if not sp.triggerID then
      if fresh and trig.error then
        finish("TriggerFailed", tostring(trig.error))
      elseif fresh and trig.request_id and trig.request_id ~= j.lastSavepointTriggerID then
        sp.triggerID = trig.request_id
        j.lastSavepointTriggerID = trig.request_id
      elseif now - t0 >= savepoint.TRIGGER_TIMEOUT then
        finish("TriggerFailed", "no answer to the savepoint trigger after " .. savepoint.TRIGGER_TIMEOUT .. "s")
      else
        requeue(savepoint.POLL_SECONDS)
      end
    end
    if sp.state == "InProgress" and sp.triggerID then
      local created = sp.stop and type(trig and trig.failure) == "string"
        and trig.failure:match("A savepoint has been created at: (%S-), but the corresponding job")
      if trig and trig.request_id == sp.triggerID and trig.status == "COMPLETED" then
        if trig.location or created then
          -- `created`: the stop wrote its savepoint, then the job failed while stopping (Flink's
          -- StopWithSavepointStoppingException); the savepoint is consistent and used as such,
          -- as the Flink Kubernetes operator does (flink-rest-notes.md, POST /jobs/:jobid/stop)
          finish("Succeeded", created and ("the job failed while stopping after its savepoint: "
            .. trig.failure) or nil)
          j.savepointLocation = trig.location or created
          j.lastSavepointTime = clock.format(now)
        else
          finish("Failed", tostring(trig.failure or "savepoint failed"))
        end
      elseif trig and trig.request_id == sp.triggerID and fresh and trig.error then
        finish("Failed", tostring(trig.error))
      elseif now - t0 >= savepoint.COMPLETE_TIMEOUT then
        finish("Failed", "savepoint not completed after " .. savepoint.COMPLETE_TIMEOUT .. "s")
      else
        out.flink[#out.flink + 1] = { method = "GET", path = "/jobs/" .. sp.jobID .. "/savepoints/" .. sp.triggerID }
        requeue(savepoint.POLL_SECONDS)
      end
    end
  end

  if not running then return out end

  -- 2. What is asked for now.
  local ann = user_control.requested(cluster)
  local control = status.control
  local control_live = control and control.state == "Progressing"
  -- a user control is asked for while it is in progress, or when its annotation is set and it
  -- did not just finish (the annotation removal may not be observed yet)
  local function control_asks(name)
    if control_live then return control.name == name end
    return ann == name and not user_control.just_finished(control, name, now)
  end
  -- a control that starts in this pass matches no savepoint yet, not even one requested earlier
  -- in the same second: it triggers its own (its updateTime is then that savepoint's requestTime)
  local control_since = control_live and (clock.parse(control.updateTime) or 0) or math.huge
  local asked = {}
  if control_asks(user_control.JOB_CANCEL) then
    asked["job cancel"] = { since = control_since, retry = false }
  elseif spec.cancelRequested == true then
    asked["job cancel"] = { since = 0, retry = true }
  end
  if (input.update or {}).pending then
    if spec.takeSavepointOnUpgrade == false then
      out.outcome["update"] = "skipped"
    else
      asked["update"] = { since = 0, retry = true }
    end
  end
  local gen = tonumber(spec.savepointGeneration) or 0
  if gen == (tonumber(j.savepointGeneration) or 0) + 1 then
    -- consumed when its savepoint completes (step 1), so only one in flight matches it
    local in_flight = sp.state == "InProgress" and sp.triggerReason == "user requested"
    asked["user requested"] = { since = in_flight and 0 or math.huge, retry = false }
  end
  if control_asks(user_control.SAVEPOINT) then
    asked["user requested"] = { since = control_since, retry = false }
  end

  -- 3. The outcome of each on-demand reason; trigger the first one that needs a savepoint.
  local busy = sp.state == "InProgress"
  local to_trigger, stop
  for _, reason in ipairs(ON_DEMAND) do
    local a = asked[reason]
    if a then
      local request_time = clock.parse(sp.requestTime) or -1
      local matches = sp.triggerReason == reason and sp.jobID == j.id and request_time >= a.since
      local failed = sp.state == "Failed" or sp.state == "TriggerFailed"
      if not dir then
        out.outcome[reason] = "skipped"
      elseif matches and sp.state == "Succeeded" then
        out.outcome[reason] = "done"
      elseif matches and sp.state == "InProgress" then
        out.outcome[reason] = "pending"
      elseif matches and failed and sp.stop then
        -- the stop failed and the job still runs: savepoint, then cancel (job.lua); from the next
        -- pass, so that the failed stop is written to the status (and its Event sent) first
        out.outcome[reason] = "pending"
        if (status.savepoint or {}).state ~= sp.state then
          requeue(1)
        elseif not busy and not to_trigger then
          to_trigger, stop = reason, false
        end
      elseif matches and failed
          and not (a.retry and now - (clock.parse(sp.triggerTime) or 0) >= savepoint.RETRY_SECONDS) then
        out.outcome[reason] = "failed"
        if a.retry then requeue(savepoint.RETRY_SECONDS - (now - (clock.parse(sp.triggerTime) or now))) end
      else
        out.outcome[reason] = "pending"
        if not busy and not to_trigger then to_trigger, stop = reason, savepoint.STOP_WITH_SAVEPOINT[reason] end
      end
    end
  end

  -- 4. The schedule: every autoSavepointSeconds exactly, counted from the last trigger (or from
  -- the job's start in Flink for the first one).
  local interval = tonumber(spec.autoSavepointSeconds) or 0
  if dir and interval > 0 and not to_trigger then
    local last = clock.parse(j.lastSavepointTriggerTime)
    local base = last or ((input.start_time or 0) > 0 and input.start_time) or nil
    if base then
      local due = base + interval
      if now >= due then
        if not busy then to_trigger = last and "scheduled" or "scheduled initial" end
      else
        requeue(due - now)
      end
    end
  end

  if to_trigger then
    local ts = clock.format(now)
    out.savepoint = { jobID = j.id, triggerTime = ts, requestTime = ts, triggerReason = to_trigger,
      state = "InProgress", stop = stop or nil }
    j.lastSavepointTriggerTime = ts
    out.flink[#out.flink + 1] = trigger_action(j.id, dir, stop)
    requeue(savepoint.POLL_SECONDS)
  end
  return out
end

return savepoint
