-- SPDX-License-Identifier: Apache-2.0
--- policies/savepoint.lua: when to take a savepoint of the running job, and which recorded
-- savepoints to keep. Pure; the framework (fc.savepoints) calls savepoint.decide once per pass,
-- after job.observe and before job.decide.
--
-- The trigger protocol is the framework's (lua/fc/savepoints.lua): it follows the savepoint in
-- flight (trigger ids, polling Flink, recovery after a restart, its timeouts), records every
-- savepoint that ends in job.savepointHistory, and, when this policy asks for one (`take`),
-- chooses its trigger id and sends the trigger or stop. This file only decides.
--
-- Reasons, highest priority first (one savepoint at a time): "job cancel" (cancelRequested or
-- the job-cancel user control), "update" (a new revision), "user requested"
-- (savepointGeneration = status + 1, or the savepoint user control), "scheduled initial" /
-- "scheduled" (autoSavepointSeconds: the schedule, step 3 below).
--
-- The savepoint of the reasons in settings.SAVEPOINT_STOP_REASONS ("job cancel" and "update")
-- also ends the job: Flink's stop-with-savepoint (drain false: the job resumes from the
-- savepoint as it was); on success Flink reports the job FINISHED (job.lua maps that to
-- Cancelled/Updating, not Succeeded). status.savepoint.stop = true marks such a savepoint. When
-- the stop fails (e.g. a task already finished), the next pass falls back to a plain savepoint,
-- which job.lua follows with a cancel. An update always restores from the savepoint of the job
-- it ended. Tunables: the "-- Savepoints" section of settings.lua.
--
-- Triggered checkpoints (spec.job.autoCheckpointSeconds, step 4): when one is due is decided
-- here too (`checkpoint`); the framework's lua/fc/checkpoints.lua triggers it through Flink's
-- REST API, follows it and records it in job.checkpointTrigger.
local util = require("fc.util")
local clock = require("lib.clock")
local user_control = require("lib.control")
local retention = require("lib.retention")
local upgrade = require("lib.upgrade")
local settings = require("settings")

local savepoint = {}
--- The hook contract this policy is written for (fc.contract; another version is refused).
savepoint.contract = "hooks.flinkoperator.k8s.io/v1"

savepoint.CONTROL_ANNOTATION = user_control.ANNOTATION

local ON_DEMAND = { "job cancel", "update", "user requested" }

-- `out` with the history's retention applied (lib.retention.plan): the
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

--- savepoint.decide(input) -> {job=<input.job with latestCheckpoint and the history's
--   retention applied>, outcome={<on-demand reason>="pending"|"done"|"failed"|"skipped"},
--   take=<nil, or {reason=<one of the reasons above>, stop=<bool: stop-with-savepoint>}: a new
--   savepoint to trigger now (the framework starts it when none is in flight and the job runs
--   with a savepointsDir)>, checkpoint=<nil, or {type=settings.AUTO_CHECKPOINT_TYPE}: a checkpoint
--   to trigger now (the framework starts it when none is in flight and the job runs)>,
--   intents=<the disposals: {kind="dispose_savepoint"|"dispose_status", ...} (lib.retention,
--   fc.flink)>, events={{type=, reason="SavepointDisposed"|
--   "SavepointDisposalFailed", message=}...}, requeue_after=<seconds or nil>}
-- input: {cluster=<defaulted; cluster.status.savepoint is the one observed before this pass>,
--   job=<status.components.job after the framework read the savepoint and the triggered
--   checkpoint in flight: history, savepointLocation, lastSavepointTriggerTime,
--   savepointGeneration, checkpointTrigger {triggerID, jobID, triggerTime, state} ...>, savepoint=<status.
--   savepoint after that: {state="NotTriggered"|"InProgress"|"Succeeded"|"Failed"|
--   "TriggerFailed", triggerID, jobID, triggerReason, triggerTime, requestTime, stop, message}>,
--   start_time=<unix s the job started in Flink, 0 unknown>, flink={disposals={<id>={...}},
--   health={<job id>={checkpoints=}}} (fc.flink.view), components=<status.components(): the
--   JobManager's readiness gates disposal>, update={pending=bool, old_job=<the current
--   revision's spec.job>}, now=<unix seconds>}.
-- `outcome` has a key for each on-demand reason asked for now: "done" once a savepoint for it
-- of this job succeeded (status.savepoint.stop says whether it also stopped the job), "skipped"
-- when no savepoint applies (no savepointsDir, takeSavepointOnUpgrade false, an update whose
-- upgrade mode is not savepoint: lib.upgrade.effective), "failed" when the last one failed
-- (retried after settings.SAVEPOINT_RETRY_SECONDS for update and cancelRequested); a failed stop
-- is "pending": a plain savepoint is taken at once instead (then job.lua cancels).
-- job.savepointHistory and its retention (spec.job.savepointRetention): lib.retention.
-- job.latestCheckpoint: the latest completed checkpoint Flink reported (flink.health, the
-- health polls of a job with checkpointing on): lib.upgrade.latest_checkpoint.
-- Fixtures: policies/testdata/savepoint/; the protocol's: tests/testdata/savepoints/.
function savepoint.decide(input)
  local cluster = input.cluster
  local spec = cluster.spec.job or {}
  local status = cluster.status or {}
  local now = input.now
  local j = util.deepcopy(input.job)
  local sp = input.savepoint or { state = "NotTriggered" }
  local out = { job = j, outcome = {}, intents = {} }
  local running = j.state == "Running" and j.id ~= nil
  local dir = spec.savepointsDir
  -- the latest completed checkpoint Flink reported for this job (lib.upgrade.latest_checkpoint):
  -- with HA (last-state) what the JobManager recovers from
  local seen = (((input.flink or {}).health or {})[j.id or ""] or {}).checkpoints
  j.latestCheckpoint = upgrade.latest_checkpoint(j.latestCheckpoint, j.id, type(seen) == "table" and seen.latest or nil)

  local function requeue(s)
    if s and s > 0 and (out.requeue_after == nil or s < out.requeue_after) then out.requeue_after = s end
  end

  if not running then return retain(input, out) end

  -- 1. What is asked for now.
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
    -- consumed when its savepoint ends (fc.savepoints), so only one in flight matches it
    local in_flight = sp.state == "InProgress" and sp.triggerReason == "user requested"
    asked["user requested"] = { since = in_flight and 0 or math.huge, retry = false }
  end
  if control_asks(user_control.SAVEPOINT) then
    asked["user requested"] = { since = control_since, retry = false }
  end

  -- 2. The outcome of each on-demand reason; take the first one that needs a savepoint.
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
          and not (a.retry and now - (clock.parse(sp.triggerTime) or 0) >= settings.SAVEPOINT_RETRY_SECONDS) then
        out.outcome[reason] = "failed"
        if a.retry then requeue(settings.SAVEPOINT_RETRY_SECONDS - (now - (clock.parse(sp.triggerTime) or now))) end
      else
        out.outcome[reason] = "pending"
        if not busy and not to_trigger then
          to_trigger, stop = reason, settings.SAVEPOINT_STOP_REASONS[reason] == true
        end
      end
    end
  end

  -- 3. The schedule: every autoSavepointSeconds exactly, counted from the last trigger (or from
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

  if to_trigger then out.take = { reason = to_trigger, stop = stop or false } end

  -- 4. Triggered checkpoints: every autoCheckpointSeconds, counted from the last trigger of this
  -- job (or from its start in Flink for the first one); none while a savepoint is taken or asked
  -- for (it ends the job or is a full snapshot itself) or an update is pending.
  local every = tonumber(spec.autoCheckpointSeconds) or 0
  if every > 0 then
    local ct = type(j.checkpointTrigger) == "table" and j.checkpointTrigger or {}
    local last = ct.jobID == j.id and clock.parse(ct.triggerTime) or nil
    local base = last or ((input.start_time or 0) > 0 and input.start_time) or nil
    if base and now < base + every then
      requeue(base + every - now)
    elseif base and ct.state ~= "InProgress" and not busy and not out.take and not (input.update or {}).pending then
      out.checkpoint = { type = settings.AUTO_CHECKPOINT_TYPE }
    end
  end
  return retain(input, out)
end

return savepoint
