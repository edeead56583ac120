-- SPDX-License-Identifier: Apache-2.0
--- policies/savepoint.lua: when to take a savepoint of the running job, and the progress of
-- the one in flight. Pure; called by the framework after job.observe and before job.decide.
--
-- A savepoint is one of our trigger ids (lib.trigger, 32 hex), chosen here and written to
-- status.savepoint.triggerID in the pass that decides it; the trigger intent ("savepoint" or
-- "stop") goes to Flink only once that status is written (fc.flink sends triggers after the
-- status), and carries the id, so Flink keys the operation by it: the same trigger sent twice is
-- one savepoint. Flink REST (fc.flink, flink-rest-notes.md "Async operation pattern"):
-- `POST /jobs/<id>/savepoints` or `/stop` with {"triggerId": <ours>}, then
-- `GET /jobs/<id>/savepoints/<ours>` until COMPLETED (operation.location, or failure-cause).
-- Answers arrive decoded in input.flink.operations[<trigger id>] (fc.flink.view).
--
-- Recovery: a savepoint InProgress whose id has no answer in this
-- controller (it restarted, another replica took over, or the request has not been answered
-- yet) is looked up by its id after POLL_SECONDS: found, it is followed to its outcome; unknown
-- to Flink (404: the request never arrived, or its result expired or went with the JobManager),
-- the same trigger is sent again while the job runs (Flink makes it one savepoint), and after
-- TRIGGER_TIMEOUT without Flink knowing it, it is TriggerFailed. Never a second id for one request.
--
-- Reasons, highest priority first (one savepoint at a time): "job cancel" (cancelRequested or
-- the job-cancel user control), "update" (a new revision), "user requested"
-- (savepointGeneration = status + 1, or the savepoint user control), "scheduled initial" /
-- "scheduled" (autoSavepointSeconds).
--
-- The savepoint of "job cancel" and "update" also ends the job: Flink's stop-with-savepoint
-- (the "stop" intent: drain false, no MAX_WATERMARK, the job resumes from the savepoint as it
-- was), polled like a savepoint; on success Flink reports the job FINISHED (job.lua maps that to
-- Cancelled/Updating, not Succeeded). status.savepoint.stop = true (ours) marks such a
-- savepoint. When the stop fails (e.g. a task already finished), the next pass falls back to a
-- plain savepoint, which job.lua follows with a cancel. A stop that wrote its savepoint and then
-- failed stopping (Flink's StopWithSavepointStoppingException: "A savepoint has been created at:
-- <path>, but the corresponding job <id> failed during stopping") counts as Succeeded with that
-- path. An update always restores from the savepoint of the job it ended.
local util = require("fc.util")
local clock = require("lib.clock")
local user_control = require("lib.control")
local trigger = require("lib.trigger")
local retention = require("lib.retention")
local upgrade = require("lib.upgrade")

local savepoint = {}
--- The hook contract this policy is written for (fc.contract; another version is refused).
savepoint.contract = "hooks.flinkoperator.k8s.io/v1"

savepoint.CONTROL_ANNOTATION = user_control.ANNOTATION
--- Seconds between polls of a savepoint in progress.
savepoint.POLL_SECONDS = 5
--- Seconds a trigger may stay unknown to Flink (no answer, or 404 on the lookup) before it is
-- TriggerFailed.
savepoint.TRIGGER_TIMEOUT = 60
--- Seconds after which a savepoint still in progress is marked Failed.
savepoint.COMPLETE_TIMEOUT = 600
--- Seconds to wait before retrying a failed on-demand savepoint (update, cancel).
savepoint.RETRY_SECONDS = 30
--- Reasons whose savepoint ends the job with stop-with-savepoint (false: savepoint, then cancel).
savepoint.STOP_WITH_SAVEPOINT = { ["job cancel"] = true, update = true }

local ON_DEMAND = { "job cancel", "update", "user requested" }

-- `out` of savepoint.decide with the history's retention applied (lib.retention.plan): the
-- new status.components.job.savepointHistory, the disposal intents and their Events.
local function retain(input, out)
  local spec = input.cluster.spec.job or {}
  local j = out.job
  local comps = input.components or {}
  local function ready(c) return type(c) == "table" and c.state == "Ready" end
  local protected = {}
  for _, loc in ipairs({ j.savepointLocation, j.fromSavepoint, spec.fromSavepoint }) do
    if type(loc) == "string" and loc ~= "" then protected[loc] = true end
  end
  local plan = retention.plan({ history = j.savepointHistory, retention = spec.savepointRetention,
    protected = protected, jm_ready = ready(comps.jobManagerStatefulSet) and ready(comps.jobManagerService),
    disposals = (input.flink or {}).disposals, now = input.now })
  j.savepointHistory = #plan.history > 0 and plan.history or nil
  for _, i in ipairs(plan.intents) do out.intents[#out.intents + 1] = i end
  out.events = plan.events
  local r = plan.requeue_after
  if r and (out.requeue_after == nil or r < out.requeue_after) then out.requeue_after = r end
  return out
end

--- savepoint.decide(input) -> {savepoint=<status.savepoint>, job=<status.components.job with
--   lastSavepointTriggerID, lastSavepointTriggerTime, lastSavepointTime, savepointLocation,
--   savepointGeneration updated>, outcome={<on-demand reason>="pending"|"done"|"failed"|"skipped"},
--   intents={{kind="savepoint"|"stop"|"savepoint_status", id=<trigger id>, job_id=,
--   target_directory=}|{kind="dispose_savepoint"|"dispose_status", ...}...} (fc.flink),
--   events={{type=, reason="SavepointDisposed"|"SavepointDisposalFailed", message=}...},
--   requeue_after=<seconds or nil>}
-- job.savepointHistory: every savepoint that ended, newest first, and its retention
-- (spec.job.savepointRetention): lib.retention. job.latestCheckpoint: the latest completed
-- checkpoint Flink reported (flink.health, the health polls of a job with checkpointing on):
-- lib.upgrade.latest_checkpoint.
-- input: {cluster=<defaulted, status as observed>, job=<from job.observe>, start_time=<unix s the
--   job started in Flink, 0 unknown>, flink={operations={<trigger id>={phase=, status=, location=,
--   failure=, error=, not_found=, time=}}, disposals={<trigger id>={...}}} (fc.flink.view),
--   components=<status.components(): the JobManager's readiness gates disposal>,
--   update={pending=bool, old_job=<the current revision's spec.job>}, now=<unix seconds>}.
-- `outcome` has a key for each on-demand reason asked for now: "done" once a savepoint for it
-- of this job succeeded (status.savepoint.stop says whether it also stopped the job), "skipped"
-- when no savepoint applies (no savepointsDir, takeSavepointOnUpgrade false, an update whose
-- upgrade mode is not savepoint: lib.upgrade.effective), "failed" when the
-- last one failed (retried after RETRY_SECONDS for update and cancelRequested); a failed stop is
-- "pending": a plain savepoint is triggered at once instead (then job.lua cancels).
function savepoint.decide(input)
  local cluster = input.cluster
  local spec = cluster.spec.job or {}
  local status = cluster.status or {}
  local now = input.now
  local j = util.deepcopy(input.job)
  local sp = util.deepcopy(status.savepoint or { state = "NotTriggered" })
  local out = { savepoint = sp, job = j, outcome = {}, intents = {} }
  local running = j.state == "Running" and j.id ~= nil
  local dir = spec.savepointsDir
  local operations = (input.flink or {}).operations or {}
  -- the latest completed checkpoint Flink reported for this job (lib.upgrade.latest_checkpoint):
  -- with HA (last-state) what the JobManager recovers from
  local seen = (((input.flink or {}).health or {})[j.id or ""] or {}).checkpoints
  j.latestCheckpoint = upgrade.latest_checkpoint(j.latestCheckpoint, j.id, type(seen) == "table" and seen.latest or nil)

  local function requeue(s)
    if s and s > 0 and (out.requeue_after == nil or s < out.requeue_after) then out.requeue_after = s end
  end
  local function ask(kind)
    out.intents[#out.intents + 1] = { kind = kind, id = sp.triggerID, job_id = sp.jobID, target_directory = dir }
  end

  -- 1. The savepoint in flight: its answer from Flink, under our trigger id.
  if sp.state == "InProgress" then
    local t0 = clock.parse(sp.triggerTime) or now
    local op = sp.triggerID and operations[sp.triggerID] or nil
    local function finish(state, message, location)
      sp.state = state
      sp.message = message
      -- every savepoint that ends is recorded in the history (lib.retention)
      j.savepointHistory = retention.record(j.savepointHistory, { triggerID = sp.triggerID, jobID = sp.jobID,
        triggerReason = sp.triggerReason, state = state, message = message, location = location }, now)
      if sp.triggerReason == "user requested" then
        local gen = tonumber(spec.savepointGeneration) or 0
        if gen == (tonumber(j.savepointGeneration) or 0) + 1 then j.savepointGeneration = gen end
      end
    end
    local created = sp.stop and op and type(op.failure) == "string"
      and op.failure:match("A savepoint has been created at: (%S-), but the corresponding job")
    if not sp.triggerID or not sp.jobID then
      -- written by a controller that recorded no trigger id: nothing to look up
      finish("TriggerFailed", "no trigger id recorded for this savepoint")
    elseif op and op.status == "COMPLETED" then
      if op.location or created then
        -- `created`: the stop wrote its savepoint, then the job failed while stopping (Flink's
        -- StopWithSavepointStoppingException); the savepoint is consistent and used as such,
        -- as the Flink Kubernetes operator does (flink-rest-notes.md, POST /jobs/:jobid/stop)
        finish("Succeeded", created and ("the job failed while stopping after its savepoint: "
          .. op.failure) or nil, op.location or created)
        j.savepointLocation = op.location or created
        j.lastSavepointTime = clock.format(now)
      else
        finish("Failed", tostring(op.failure or "savepoint failed"))
      end
    elseif op and op.phase == "trigger" and (op.http or 0) > 0 then
      -- Flink refused the trigger (e.g. 503 leader election, 404 job gone)
      finish("TriggerFailed", tostring(op.error))
    elseif now - t0 >= savepoint.COMPLETE_TIMEOUT then
      finish("Failed", "savepoint not completed after " .. savepoint.COMPLETE_TIMEOUT .. "s")
    elseif op and op.not_found then
      -- Flink does not know our id: the trigger never arrived (or its result is gone). Send the
      -- same trigger again while the job runs (one savepoint however often it arrives).
      if running and dir and j.id == sp.jobID and now - t0 < savepoint.TRIGGER_TIMEOUT then
        ask(sp.stop and "stop" or "savepoint")
        requeue(savepoint.POLL_SECONDS)
      else
        finish("TriggerFailed", "Flink does not know trigger " .. sp.triggerID .. " of job " .. sp.jobID
          .. " (" .. tostring(op.error) .. ")")
      end
    elseif op and (op.phase == "accepted" or op.status == "IN_PROGRESS" or op.error) then
      -- accepted, in progress, or the last poll went unanswered: poll again
      ask("savepoint_status")
      requeue(savepoint.POLL_SECONDS)
    elseif now - t0 >= savepoint.POLL_SECONDS then
      -- no answer in this controller: triggered by another (a restart, a failover) or the
      -- trigger is still on its way; look the id up
      ask("savepoint_status")
      requeue(savepoint.POLL_SECONDS)
    else
      requeue(savepoint.POLL_SECONDS - (now - t0))
    end
  end

  if not running then return retain(input, out) end

  -- 2. What is asked for now.
  local control = status.control
  local control_live = control and control.state == "Progressing"
  -- a user control is asked for while it is in progress, or when its annotation asks for a new
  -- one (set, not acknowledged, and not just finished while its removal is not observed yet)
  local fresh = user_control.fresh(cluster, control, now)
  local function control_asks(name)
    if control_live then return control.name == name end
    return fresh == name
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
    if spec.takeSavepointOnUpgrade == false
        or upgrade.effective(spec, input.update.old_job) ~= upgrade.SAVEPOINT then
      -- stateless and last-state updates take none (lib.upgrade)
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
    -- the id is in the status before the trigger goes out (fc.flink sends it after the status)
    local ts = clock.format(now)
    local id = trigger.id(now, j.lastSavepointTriggerID)
    sp = { jobID = j.id, triggerID = id, triggerTime = ts, requestTime = ts, triggerReason = to_trigger,
      state = "InProgress", stop = stop or nil }
    out.savepoint = sp
    j.lastSavepointTriggerTime = ts
    j.lastSavepointTriggerID = id
    ask(stop and "stop" or "savepoint")
    requeue(savepoint.POLL_SECONDS)
  end
  return retain(input, out)
end

return savepoint
