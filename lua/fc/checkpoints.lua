-- SPDX-License-Identifier: Apache-2.0
--- fc.checkpoints: the protocol of the checkpoints the controller triggers through Flink's REST
-- API (issue 29, item 4: spec.job.autoCheckpointSeconds, as the Apache Flink Kubernetes
-- operator's kubernetes.operator.periodic.checkpoint.interval). When one is due is the policy's
-- (policies/savepoint.lua, savepoint.decide's `checkpoint`); fc.savepoints.pass follows the one
-- in flight (checkpoints.track) before the policy and starts the one it asks for
-- (checkpoints.start) after it.
--
-- A triggered checkpoint is one of our trigger ids (fc.trigger), recorded in
-- status.components.job.checkpointTrigger {triggerID, jobID, triggerTime, state, checkpointID,
-- completionTime, message} in the pass that starts it; the trigger goes to Flink only once that
-- status is written (fc.flink: after_status) and carries the id, so the same trigger sent twice
-- is one checkpoint. Flink REST (Flink >= 1.19; fc.flink): `POST /jobs/<id>/checkpoints`
-- {"triggerId", "checkpointType"}, then `GET /jobs/<id>/checkpoints/<trigger id>` until
-- COMPLETED (operation.checkpointId, or operation.failureCause). Answers arrive decoded in
-- flink.checkpoints[<trigger id>] (fc.flink.view). The recovery of a trigger without an answer
-- is the savepoints' (fc.savepoints): looked up by its id, sent again while Flink does not know
-- it, TriggerFailed after TRIGGER_TIMEOUT; never a second id for one request.
-- Each one that ends is also written to job.checkpointHistory (newest first, HISTORY_MAX
-- entries): the next trigger may replace checkpointTrigger in the same pass.
-- A checkpoint that ends Failed or TriggerFailed is told by a Warning Event (CheckpointFailed);
-- one that succeeded asks Flink for the job's checkpoints (job_checkpoints), so that
-- job.latestCheckpoint (savepoint.decide) names it with its path in the next pass.
local util = require("fc.util")
local clock = require("fc.clock")
local trigger = require("fc.trigger")

local checkpoints = {}

--- Seconds between polls of a checkpoint in progress, and how long a trigger may stay unknown
-- to Flink or in progress before it is TriggerFailed / Failed (as fc.savepoints').
checkpoints.POLL_SECONDS = 5
checkpoints.TRIGGER_TIMEOUT = 60
checkpoints.COMPLETE_TIMEOUT = 600

--- Entries of job.checkpointHistory kept.
checkpoints.HISTORY_MAX = 5

--- The checkpoint types Flink takes (CheckpointTriggerRequestBody.checkpointType).
checkpoints.TYPES = { CONFIGURED = true, FULL = true, INCREMENTAL = true }

--- checkpoints.track(t) -> {job=<t.job with checkpointTrigger advanced, one that ended first in
--   checkpointHistory>, intents=, events=,
--   requeue_after=<seconds or nil>}: the progress of the checkpoint in flight.
-- t: {job=<job.observe's job: status.components.job with the observed state>, operations=
--   <fc.flink.view's checkpoints: {<trigger id>={phase="trigger"|"accepted"|"status", status=,
--   checkpoint_id=, failure=, error=, http=, not_found=, time=}}>, now=<unix s>}.
-- Intents: {kind="checkpoint"|"checkpoint_status", id=<trigger id>, job_id=, checkpoint_type=}
-- and, once one succeeded, {kind="job_checkpoints", job_id=} (fc.flink). Events: {type="Warning",
-- reason="CheckpointFailed", message=} when one ends Failed or TriggerFailed. Inputs are not
-- modified.
function checkpoints.track(t)
  local now = t.now
  local j = util.deepcopy(t.job)
  local out = { job = j, intents = {}, events = {} }
  local ct = j.checkpointTrigger
  if type(ct) ~= "table" or ct.state ~= "InProgress" then return out end
  local function ask(kind)
    out.intents[#out.intents + 1] = { kind = kind, id = ct.triggerID, job_id = ct.jobID,
      checkpoint_type = kind == "checkpoint" and ct.checkpointType or nil }
  end
  local function finish(state, message)
    ct.state, ct.message, ct.completionTime = state, message, clock.format(now)
    local history = { util.deepcopy(ct) }
    for _, e in ipairs(type(j.checkpointHistory) == "table" and j.checkpointHistory or {}) do
      if #history < checkpoints.HISTORY_MAX and type(e) == "table" and e.triggerID ~= ct.triggerID then
        history[#history + 1] = e
      end
    end
    j.checkpointHistory = history
    if state == "Succeeded" then
      out.intents[#out.intents + 1] = { kind = "job_checkpoints", job_id = ct.jobID }
      out.requeue_after = 1
    else
      out.events[#out.events + 1] = { type = "Warning", reason = "CheckpointFailed",
        message = "checkpoint " .. tostring(ct.triggerID) .. " of job " .. tostring(ct.jobID) .. " "
          .. (state == "TriggerFailed" and "not triggered" or "failed") .. ": " .. tostring(message) }
    end
  end
  local op = type(ct.triggerID) == "string" and (t.operations or {})[ct.triggerID] or nil
  trigger.follow({ id = ct.triggerID, job_id = ct.jobID, op = op, t0 = clock.parse(ct.triggerTime) or now, now = now,
    what = "checkpoint", can_resend = j.state == "Running" and j.id ~= nil and j.id == ct.jobID,
    limits = { poll = checkpoints.POLL_SECONDS, trigger = checkpoints.TRIGGER_TIMEOUT,
      complete = checkpoints.COMPLETE_TIMEOUT },
    completed = function()
      if op.checkpoint_id and not op.failure then
        ct.checkpointID = op.checkpoint_id
        finish("Succeeded")
      else
        finish("Failed", tostring(op.failure or "checkpoint failed"))
      end
    end,
    finish = finish, send = function() ask("checkpoint") end, poll = function() ask("checkpoint_status") end,
    requeue = function(s) out.requeue_after = s end })
  return out
end

--- checkpoints.start(job, ask, now) -> intent: a new checkpoint of the running job `job` for
-- the policy's `ask` {type=<CONFIGURED|FULL|INCREMENTAL or absent>}: a new trigger id (fc.trigger,
-- after the last one's), job.checkpointTrigger = {triggerID, jobID, triggerTime, state=
-- "InProgress", checkpointType} (in place), and the trigger intent to send once the status is
-- written.
function checkpoints.start(job, ask, now)
  local last = type(job.checkpointTrigger) == "table" and job.checkpointTrigger or {}
  local id = trigger.id(now, last.triggerID)
  job.checkpointTrigger = { triggerID = id, jobID = job.id, triggerTime = clock.format(now), state = "InProgress",
    checkpointType = ask.type }
  return { kind = "checkpoint", id = id, job_id = job.id, checkpoint_type = ask.type }
end

--- checkpoints.check_ask(ask) -> nil, or why savepoint.decide's `checkpoint` is not nil or
-- {type=<one of TYPES, or absent>} (fc.contract's check of its result).
function checkpoints.check_ask(ask)
  if ask == nil then return nil end
  if type(ask) ~= "table" or (ask.type ~= nil and not checkpoints.TYPES[ask.type]) then
    return "checkpoint must be {type=\"CONFIGURED\"|\"FULL\"|\"INCREMENTAL\"} or absent"
  end
  return nil
end

return checkpoints
