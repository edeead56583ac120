-- SPDX-License-Identifier: Apache-2.0
--- policies/job.lua: the job of a job cluster (one with `spec.job`): what state it is in, when
-- to submit it, when to restart, cancel or clean up. Pure functions; the framework
-- (lua/fc/reconcile.lua) calls `observe`, then savepoint.lua, then `decide`. What is asked of
-- Flink goes out as intents (`cancel`, `list_jobs`, `job_exceptions`, and a REST submission's
-- `upload_jar`/`run_jar`): lua/fc/flink.lua turns them into REST calls and their answers into
-- `input.flink`. The decisions an operator may change are the constants in CAPITALS below
-- (FLINK_STATES, TERMINAL, STOPPED_AS) and job.decide's steps, one local function each, in the
-- order job.decide (at the end) calls them; its numbers (polls, the
-- Lost grace, the failure reason's length) are settings.lua's JOB_*, when a failed job is
-- restarted is policies/restart.lua's decision, how it is submitted policies/submit.lua's, and
-- what is removed once it ended policies/cleanup.lua's.
-- Times in the status are RFC 3339 strings; `now` is unix seconds.
local util = require("fc.util")
local clock = require("lib.clock")
local names = require("lib.names")
local user_control = require("lib.control")
local failure = require("lib.failure")
local restsubmit = require("fc.restsubmit")
local submit = require("submit")
local upgrade = require("lib.upgrade")
local restart = require("restart")
local cleanup = require("cleanup")
local settings = require("settings")

local job = {}
--- The hook contract this policy is written for (fc.contract; another version is refused).
job.contract = "hooks.flinkoperator.k8s.io/v1"

--- The user-control annotation and its values (lib.control).
job.CONTROL_ANNOTATION = user_control.ANNOTATION
job.CONTROL_SAVEPOINT = user_control.SAVEPOINT
job.CONTROL_JOB_CANCEL = user_control.JOB_CANCEL


--- Flink JobStatus (flink-core api/common/JobStatus.java) -> FlinkCluster job state, as the
-- API defines it: every non-terminal state is Running; SUSPENDED is only locally terminal.
job.FLINK_STATES = {
  INITIALIZING = "Running", CREATED = "Running", RUNNING = "Running", FAILING = "Running",
  CANCELLING = "Running", RESTARTING = "Running", RECONCILING = "Running",
  FINISHED = "Succeeded", CANCELED = "Cancelled", FAILED = "Failed", SUSPENDED = "Suspended",
}

--- Job states after which the job will not run again by itself. Lost (an id the JobManager no
-- longer or never lists) counts as failed: afterJobFails applies, and FromSavepointOnFailure
-- restarts it.
job.TERMINAL = { Succeeded = true, Failed = true, Cancelled = true, Lost = true }

-- Job state of a job that Flink reports FINISHED after our stop-with-savepoint (or FAILED after
-- its savepoint was written), by the savepoint's reason: a cancel is Cancelled
-- (afterJobCancelled applies, not afterJobSucceeds); an update's job is Updating (resubmitted
-- from that savepoint).
local STOPPED_AS = { ["job cancel"] = "Cancelled", update = "Updating" }

--- job.map_flink_state(s) -> job state | nil for an unknown Flink state string.
function job.map_flink_state(s)
  return job.FLINK_STATES[s]
end

-- The job id written by the submitter into its termination message ("jobID: <32 hex>"), from
-- the pods of the observed submitter Job (matched by owner uid, else by the job-name label).
local function submitted_id(children, submitter)
  if not submitter then return nil end
  local uid = submitter.metadata and submitter.metadata.uid
  local name = submitter.metadata and submitter.metadata.name
  for _, pod in pairs(children.Pod or {}) do
    local md = pod.metadata or {}
    local mine = false
    for _, ref in ipairs(md.ownerReferences or {}) do
      if uid and ref.uid == uid then mine = true end
    end
    if not uid and md.labels and md.labels["job-name"] == name then mine = true end
    if mine then
      for _, cs in ipairs((pod.status or {}).containerStatuses or {}) do
        for _, st in ipairs({ cs.state, cs.lastState }) do
          local msg = st and st.terminated and st.terminated.message
          local id = type(msg) == "string" and msg:match("jobID:%s*(%x+)")
          if id then return id:lower() end
        end
      end
    end
  end
  return nil
end

-- The observed submitter Job of cluster `n` (nil when absent) and whether it is the stale one:
-- deleted for a resubmission (its uid kept in job.staleSubmitterUID) but still in the cache.
local function observed_submitter(children, n, j)
  local submitter = (children.Job or {})[names.job_submitter(n)]
  local stale = submitter ~= nil and j.staleSubmitterUID ~= nil
    and (submitter.metadata or {}).uid == j.staleSubmitterUID
  return submitter, stale
end

local function submitter_failed(submitter)
  if not submitter then return false end
  local st = submitter.status or {}
  if (tonumber(st.failed) or 0) > 0 then return true end
  for _, c in ipairs(st.conditions or {}) do
    if c.type == "Failed" and c.status == "True" then return true end
  end
  return false
end

-- The start of a failed submission's failureReason.
local SUBMISSION_FAILED = "submission failed: "

-- Why the submitter Job failed, at most settings.JOB_FAILURE_REASON_MAX bytes in all: the root
-- cause in the termination message of one of its pods (the submit script writes Flink's error
-- there, Kubernetes keeps at most 4096 bytes: core/v1 ContainerStatus.state.terminated.message),
-- else the Job's Failed condition (reason: message).
local function submitter_failure(children, submitter)
  local uid = (submitter.metadata or {}).uid
  for _, name in ipairs(util.sorted_keys(children.Pod or {})) do
    local pod = children.Pod[name]
    for _, ref in ipairs((pod.metadata or {}).ownerReferences or {}) do
      if uid and ref.uid == uid then
        for _, cs in ipairs((pod.status or {}).containerStatuses or {}) do
          local t = (cs.state or {}).terminated or (cs.lastState or {}).terminated
          -- the submit script writes the tail of `flink run`'s output there
          local cause = t and (tonumber(t.exitCode) or 1) ~= 0
            and failure.cause(t.message, settings.JOB_FAILURE_REASON_MAX - #SUBMISSION_FAILED)
          if cause then return SUBMISSION_FAILED .. cause end
        end
      end
    end
  end
  for _, c in ipairs((submitter.status or {}).conditions or {}) do
    if c.type == "Failed" and c.status == "True" then
      return SUBMISSION_FAILED .. failure.cause(tostring(c.reason) .. (c.message and (": " .. c.message) or ""),
        settings.JOB_FAILURE_REASON_MAX - #SUBMISSION_FAILED)
    end
  end
  return "submission failed: the submitter Job failed"
end

-- failureReason of a job Flink reports FAILED: with the root cause of its newest exception
-- (GET /jobs/<id>/exceptions, decoded by fc.flink into flink.exceptions[<id>]) once known; at
-- most settings.JOB_FAILURE_REASON_MAX bytes in all.
local function flink_failure(id, flink)
  local ex = (flink.exceptions or {})[id] or {}
  local head = "Flink reports job " .. id .. " FAILED"
  local room = settings.JOB_FAILURE_REASON_MAX - #head - 2
  local cause = failure.cause(ex.stacktrace, room) or failure.cause(ex.name, room)
  return head .. (cause and (": " .. cause) or "")
end

-- "submission failed: <the root cause of Flink's or the download's error text>" (a failed REST
-- submission, fc.restsubmit), at most submit.REASON_MAX bytes.
local function submission_failed(text)
  return SUBMISSION_FAILED .. (failure.cause(text, submit.REASON_MAX - #SUBMISSION_FAILED) or "no reason given")
end

local function find_flink_job(flink, id)
  for _, j in ipairs(flink.jobs or {}) do
    if (j.jid or j.id) == id then return j end
  end
  return nil
end

--- job.observe(input) -> {job=<status.components.job>, flink_state=<Flink state or "">,
--   start_time=<unix seconds the job started in Flink, 0 when unknown>,
--   jobmanager={scheme=, service=, port=} (where the JobManager's REST API is: every intent of
--   this cluster goes there),
--   intents={{kind="job_exceptions", job_id=}} (for a FAILED job: its failure cause; asked once,
--   again after settings.JOB_EXCEPTIONS_RETRY_SECONDS while Flink answered with no entry)}
-- input: {cluster=<defaulted FlinkCluster, status as observed or {}>, children={<kind>={<name>=obj}},
--   flink={reachable=bool, jobs={{jid=, state=, ["start-time"]=<ms>},...}, operations={},
--   exceptions={<job id>={name=, stacktrace=, error=, time=}}} (fc.flink.view),
--   now=<unix seconds>}. Every key is present (fc.contract, hooks.flinkoperator.k8s.io/v1).
-- Rules (API "Behaviour"): the id comes from the status, else from the submitter pod's
-- termination message; with the JobManager reachable, the Flink state maps through
-- FLINK_STATES; an id absent from the JobManager's list, whether seen live before or never
-- listed at all, keeps its state for settings.JOB_LOST_AFTER_SECONDS (job.missingSince, ours, RFC 3339,
-- records the first absence), then is Lost; a job already ended keeps its state; without the
-- JobManager the last state stays. No id: Failed when the submitter Job failed (submission
-- failed), else Pending. FINISHED after our stop-with-savepoint (status.savepoint.stop for this
-- id) is Cancelled for a cancel and Updating for an update. job.failureReason (ours, at most
-- settings.JOB_FAILURE_REASON_MAX bytes) says why a job is Failed or Lost: Flink's FAILED, the
-- missing id, or the submitter's termination message; job.restartAttempt is forgotten when
-- restart.reset says so (the job ran settings.RESTART_RESET_AFTER_SECONDS).
function job.observe(input)
  local cluster = input.cluster
  local n = cluster.metadata.name
  local old = ((cluster.status or {}).components or {}).job or {}
  local out = util.deepcopy(old)
  out.name = names.job_submitter(n)
  out.state = out.state or "Pending"
  out.restartCount = out.restartCount or 0
  local submitter, stale = observed_submitter(input.children, n, out)
  if stale then submitter = nil end -- its pods tell the old job's id
  if not out.id then
    out.id = submitted_id(input.children, submitter)
  end
  local flink = input.flink
  local flink_state, start_time, asks = "", 0, {}
  out.missingSince = nil -- set again below while the grace period runs (an unreachable
  -- JobManager tells nothing: the grace starts over once it answers again)
  if out.id then
    local fj = flink.reachable and find_flink_job(flink, out.id) or nil
    if fj then
      flink_state = fj.state or fj.status or ""
      out.state = job.map_flink_state(flink_state) or out.state
      local sp = (cluster.status or {}).savepoint or {}
      if flink_state == "FINISHED" and sp.stop and sp.jobID == out.id and STOPPED_AS[sp.triggerReason] then
        -- ended by our stop-with-savepoint, not by itself (savepoint.lua); provisional:
        -- job.decide's stopped_by_our_savepoint step decides, once the savepoint Succeeded
        -- (FAILED after it was written included)
        out.state = STOPPED_AS[sp.triggerReason]
      end
      start_time = math.floor((tonumber(fj["start-time"]) or 0) / 1000)
      if flink_state == "FAILED" then
        out.failureReason = flink_failure(out.id, flink)
        local ex = (flink.exceptions or {})[out.id]
        if not ex or (not ex.name and not ex.stacktrace and not ex.error
            and input.now - (tonumber(ex.time) or 0) >= settings.JOB_EXCEPTIONS_RETRY_SECONDS) then
          asks[1] = { kind = "job_exceptions", job_id = out.id }
        end
      end
    elseif restsubmit.run_error(out, flink) and not job.TERMINAL[out.state] then
      -- our REST submission's run request failed (fc.restsubmit)
      out.state = "Failed"
      out.failureReason = submission_failed(restsubmit.run_error(out, flink))
    elseif restsubmit.run_lost(out, flink) and not job.TERMINAL[out.state] then
      -- our run request went out from an earlier controller process and Flink never got it:
      -- submit again with the same id (fc.restsubmit), instead of Lost after the grace period
      restsubmit.again(out, input.now)
    elseif flink.reachable and not job.TERMINAL[out.state] then
      local since = clock.parse(old.missingSince) or input.now
      local grace = upgrade.ha_enabled(cluster.spec) and settings.JOB_LOST_AFTER_SECONDS_HA
        or settings.JOB_LOST_AFTER_SECONDS
      if input.now - since >= grace then
        out.state = "Lost"
        out.failureReason = "job " .. out.id .. " not listed by the JobManager for "
          .. math.floor(input.now - since) .. " s"
      else
        out.missingSince = clock.format(since)
      end
    end
  elseif submitter_failed(submitter) then
    if out.state ~= "Failed" then out.failureReason = submitter_failure(input.children, submitter) end
    out.state = "Failed"
  elseif not job.TERMINAL[out.state] and out.state ~= "Updating" then
    out.state = "Pending"
  end
  if restart.reset({ state = out.state, start_time = start_time, now = input.now }) then out.restartAttempt = nil end
  if out.state == "Running" or out.state == "Pending" then out.failureReason = nil end
  -- the JobManager Service cluster.lua renders, its REST (`ui`) port
  local jobmanager = { scheme = "http", service = names.jobmanager(n),
    port = ((cluster.spec.jobManager or {}).ports or {}).ui or 8081 }
  return { job = out, flink_state = flink_state, start_time = start_time, jobmanager = jobmanager, intents = asks }
end

local function all_ready(components)
  local function ready(c) return c and c.state == "Ready" end
  return ready(components.jobManagerStatefulSet) and ready(components.jobManagerService)
    and ready(components.taskManagers or components.taskManagerStatefulSet)
end

-- job.decide's steps -------------------------------------------------------------------------
-- job.decide (below, with its input and decision shapes) runs the steps below once per pass, in
-- the order they are written here. They share one table, the pass state `p`, built by new_pass;
-- each step's comment says what it decides, which fields it reads and which it changes. `p` holds:
--   from the input (new_pass):
--     p.input           job.decide's input (never changed)
--     p.cluster         input.cluster; p.spec its spec.job; p.status its status (or {})
--     p.now             input.now (unix s); p.outcome input.outcome (savepoint.lua, per reason)
--     p.j               the job's status being decided (a copy of input.job): the decision's `job`
--     p.d               the decision being built ({job=p.j, submit, resubmit, hold, update_done,
--                       intents, events, ...}): what job.decide returns
--     p.submitter       the observed submitter Job, nil when absent; also the stale one (deleted
--                       for a resubmission, still in the cache)
--     p.cancelling      Flink reports the job CANCELLING (a cancel is under way)
--     p.stopped         the savepoint of this job taken by stop-with-savepoint Succeeded
--     p.stop_in_flight  that savepoint is still InProgress (not polled yet)
--   set once by a step, read by the steps after it:
--     p.running         (job.decide, after health_verdict) the job is Running and has an id
--     p.control         (read_user_control) the status.control this pass writes, or nil (the
--                       framework then keeps status.control as it is)
--     p.remove_when_done (read_user_control) lib.control.REMOVE_WHEN_DONE: remove the
--                       annotation once its control is done
--     p.cancel_wanted   (job.decide, after read_user_control) spec.job.cancelRequested, or a
--                       job-cancel control in progress
--     p.restarting      (restart_failed_job) the failed job is resubmitted in this pass
--     p.restart_waits   (restart_failed_job) the failed job waits for its next restart

-- new_pass(input) -> p: the pass state above, from job.decide's input. Decides about a stale
-- submitter: the one deleted for a resubmission is still observed, so it is deleted again
-- (d.resubmit) and the pass waits; any other observed submitter drops j.staleSubmitterUID.
-- Reads input.cluster, job, children, flink_state, savepoint, outcome, now.
-- Changes d.resubmit, j.staleSubmitterUID.
local function new_pass(input)
  local cluster = input.cluster
  local j = util.deepcopy(input.job)
  local d = { job = j, submit = false, resubmit = false, hold = false, update_done = false,
    intents = {}, events = {} }
  local p = { input = input, cluster = cluster, spec = cluster.spec.job, status = cluster.status or {},
    now = input.now, outcome = input.outcome, j = j, d = d }
  local submitter, stale = observed_submitter(input.children, cluster.metadata.name, j)
  if stale then
    -- the submitter deleted for a resubmission is still observed: delete it again, wait
    d.resubmit = true
  elseif submitter then
    j.staleSubmitterUID = nil
  end
  p.submitter = submitter
  p.cancelling = input.flink_state == "CANCELLING"
  -- the savepoint of this job taken by stop-with-savepoint: done, or still in flight
  local sp_now = input.savepoint
  local of_job = sp_now.stop and j.id ~= nil and sp_now.jobID == j.id
  p.stopped = of_job and sp_now.state == "Succeeded"
  p.stop_in_flight = of_job and sp_now.state == "InProgress"
  return p
end

-- retire_submitter(p): for a resubmission, delete the observed submitter Job (d.resubmit) and
-- keep its uid in j.staleSubmitterUID until the cache no longer shows it. Nothing without one.
local function retire_submitter(p)
  if p.submitter then
    p.d.resubmit = true
    p.j.staleSubmitterUID = (p.submitter.metadata or {}).uid
  end
end

-- cancel_job(p): a `cancel` intent for the running job, unless Flink is cancelling it already.
-- Reads p.running, p.cancelling, j.id. Changes d.intents.
local function cancel_job(p)
  if p.running and not p.cancelling then
    p.d.intents[#p.d.intents + 1] = { kind = "cancel", job_id = p.j.id }
  end
end

-- Step: the end of our stop-with-savepoint. Decides the state of a job that Flink lists FINISHED
-- (or FAILED) after the stop-with-savepoint of this job id Succeeded: by the savepoint's reason
-- (STOPPED_AS), Cancelled for a cancel, Updating for an update (another reason keeps the state),
-- with no failureReason.
-- Reads p.stopped, input.flink_state, input.savepoint.triggerReason.
-- Changes j.state, j.failureReason.
local function stopped_by_our_savepoint(p)
  local j = p.j
  local flink_state = p.input.flink_state
  if p.stopped and (flink_state == "FINISHED" or flink_state == "FAILED") then
    -- ended by our stop: FAILED when it failed while stopping after its savepoint (savepoint.lua)
    j.state = STOPPED_AS[p.input.savepoint.triggerReason] or j.state
    j.failureReason = nil
  end
end

-- Step: health verdict. Health (policies/health.lua, judged by the framework: input.health): an
-- unhealthy job is cancelled in Flink and Failed (a Warning JobUnhealthy once); it stays Failed
-- while Flink cancels it, and the restart step (restart_failed_job) applies to it as to any
-- failed job. Applies to a job with an id that is Running or Cancelled when input.health says
-- action "fail".
-- Reads input.health {action, reason, told}, input.flink_state, j.id, j.state.
-- Changes d.intents (+cancel unless CANCELLING, +list_jobs: while the job is alive in Flink),
-- d.events (+JobUnhealthy, unless health.told), j.state ("Failed"), j.failureReason (the health
-- reason, at most settings.JOB_FAILURE_REASON_MAX bytes).
local function health_verdict(p)
  local j, d = p.j, p.d
  local health = p.input.health
  if type(health) == "table" and health.action == "fail" and j.id
      and (j.state == "Running" or j.state == "Cancelled") then
    local fs = p.input.flink_state or ""
    if fs ~= "" and not job.TERMINAL[job.map_flink_state(fs) or ""] then
      -- still alive in Flink: cancel it and follow the job list until it ended
      if fs ~= "CANCELLING" then d.intents[#d.intents + 1] = { kind = "cancel", job_id = j.id } end
      d.intents[#d.intents + 1] = { kind = "list_jobs" }
    end
    if not health.told then
      d.events[#d.events + 1] = { type = "Warning", reason = "JobUnhealthy",
        message = tostring(health.reason) .. ": cancelled, job Failed" }
    end
    j.state = "Failed"
    j.failureReason = tostring(health.reason):sub(1, settings.JOB_FAILURE_REASON_MAX)
  end
end

-- User control (annotation): record progress in status.control; when done, acknowledge the
-- annotation there (kept: Git may hold it) or remove it (lib.control.REMOVE_WHEN_DONE).
--
-- Step: read the user control. Decides which control this pass follows: a control Progressing in
-- status.control goes on; else a fresh annotation value (lib.control.fresh) `savepoint` or
-- `job-cancel` starts one (Progressing), any other value is recorded as Failed (unknown user
-- control); a value acted on already changes nothing; an acknowledged control whose annotation
-- is gone loses its acknowledgement (setting the annotation again is a new request).
-- Reads the annotation (cluster.metadata.annotations), status.control, p.now.
-- Sets p.control (the status.control to write, or nil: kept as it is), p.remove_when_done.
-- Changes d.remove_annotation (with REMOVE_WHEN_DONE: an unknown value, or one acted on already).
local function read_user_control(p)
  local d, cluster, now = p.d, p.cluster, p.now
  local old_control = p.status.control
  local value = user_control.requested(cluster)
  local remove = user_control.REMOVE_WHEN_DONE
  local control
  if old_control and old_control.state == "Progressing" then
    control = util.deepcopy(old_control)
  else
    local fresh = user_control.fresh(cluster, old_control, now)
    if fresh == job.CONTROL_SAVEPOINT or fresh == job.CONTROL_JOB_CANCEL then
      control = { name = fresh, state = "Progressing", updateTime = clock.format(now),
        acknowledged = not remove or nil }
    elseif fresh ~= nil then
      if remove then d.remove_annotation = user_control.ANNOTATION end
      control = { name = tostring(fresh), state = "Failed", updateTime = clock.format(now),
        message = "unknown user control \"" .. tostring(fresh) .. "\": use savepoint or job-cancel",
        acknowledged = not remove or nil }
    elseif value ~= nil then
      -- acted on already: kept (acknowledged), or its removal is not observed yet
      if remove then d.remove_annotation = user_control.ANNOTATION end
    elseif old_control and old_control.acknowledged then
      -- the annotation is gone: setting it again is a new request
      control = util.deepcopy(old_control)
      control.acknowledged = nil
    end
  end
  p.control = control
  p.remove_when_done = remove
end

-- finish_control(p, state, message): the control in progress ends: its state ("Succeeded" or
-- "Failed"), message and updateTime (now) in p.control; with REMOVE_WHEN_DONE the annotation is
-- removed (d.remove_annotation).
local function finish_control(p, state, message)
  local control = p.control
  control.state = state
  control.message = message
  control.updateTime = clock.format(p.now)
  if p.remove_when_done then p.d.remove_annotation = user_control.ANNOTATION end
end

-- cancel_wanted(p) -> whether the job is to be cancelled: spec.job.cancelRequested, or a
-- job-cancel control in progress as read_user_control left it (job.decide takes it before
-- follow_user_control, which may end that control in the same pass).
local function cancel_wanted(p)
  local control = p.control
  return p.spec.cancelRequested == true
    or (control and control.state == "Progressing" and control.name == job.CONTROL_JOB_CANCEL)
end

-- Step: follow the user control in progress. Decides when it ends:
--   savepoint   Failed when the job is not running; else by savepoint.lua's outcome
--               "user requested": done: Succeeded (message: the savepoint's location), failed:
--               Failed (the savepoint's message), otherwise it goes on;
--   job-cancel  once the job is not running: it goes on while the job's stop-with-savepoint is not
--               read yet; Succeeded for an ended job (job <state>); a job never submitted (Pending,
--               no id) is Cancelled and the control Succeeded; else Failed (job is <state>).
--               While the job runs, the cancel step cancels it.
-- Reads p.control, p.running, p.stop_in_flight, p.outcome["user requested"], j.state, j.id,
-- j.savepointLocation, input.savepoint.message.
-- Changes p.control and d.remove_annotation (finish_control), j.state (Cancelled).
local function follow_user_control(p)
  local j, control = p.j, p.control
  if control and control.state == "Progressing" then
    if control.name == job.CONTROL_SAVEPOINT then
      if not p.running then
        finish_control(p, "Failed", "job is not running")
      elseif p.outcome["user requested"] == "done" then
        finish_control(p, "Succeeded", "savepoint " .. tostring(j.savepointLocation))
      elseif p.outcome["user requested"] == "failed" then
        finish_control(p, "Failed", p.input.savepoint.message or "savepoint failed")
      end
    elseif control.name == job.CONTROL_JOB_CANCEL and not p.running then
      if p.stop_in_flight then -- luacheck: ignore 542
        -- stopped, its savepoint not read yet: the control ends with the savepoint's location
      elseif j.state == "Cancelled" or job.TERMINAL[j.state] then
        finish_control(p, "Succeeded", "job " .. j.state)
      elseif j.state == "Pending" and not j.id then
        j.state = "Cancelled"
        finish_control(p, "Succeeded", "job cancelled before submission")
      else
        finish_control(p, "Failed", "job is " .. tostring(j.state))
      end
    end
  end
end

-- Step: cancel (cancelRequested or job-cancel): savepoint first when savepointsDir is set.
-- Decides, when p.cancel_wanted: a running job is cancelled once savepoint.lua's "job cancel"
-- outcome is done or skipped, except when that savepoint was our stop-with-savepoint (it stopped
-- the job itself); a failed savepoint fails a job-cancel control in progress; a job never
-- submitted (Pending, no id) is Cancelled at once for cancelRequested.
-- Reads p.cancel_wanted, p.running, p.stopped, p.control, p.outcome["job cancel"],
-- spec.cancelRequested, j.state, j.id, input.savepoint.message.
-- Changes d.intents (+cancel: cancel_job), p.control and d.remove_annotation (finish_control),
-- j.state (Cancelled).
local function cancel_requested(p)
  local j, control = p.j, p.control
  if p.cancel_wanted then
    if p.running then
      local sp = p.outcome["job cancel"]
      if sp == "done" and p.stopped then -- luacheck: ignore 542
        -- stopped with its savepoint: Flink lists it FINISHED next, which observe calls Cancelled
      elseif sp == "done" or sp == "skipped" then
        cancel_job(p)
      elseif sp == "failed" and control and control.state == "Progressing" then
        finish_control(p, "Failed", "savepoint before cancel failed: " .. tostring(p.input.savepoint.message))
      end
    elseif j.state == "Pending" and not j.id and p.spec.cancelRequested == true then
      j.state = "Cancelled"
    end
  end
end

-- Step: update by upgrade mode. Update: when the revision changes, by the upgrade mode
-- (lib.upgrade.effective):
--   savepoint   a running job is stopped with a savepoint before the components change, then
--               resubmitted from that savepoint;
--   stateless   it is cancelled, then resubmitted without state (a fromSavepoint changed by
--               this update excepted);
--   last-state  it keeps running while the components are replaced (update_done at once): the
--               new JobManager recovers the same job from its latest checkpoint through
--               Flink's Kubernetes HA services, with no savepoint and no submission.
-- Nothing without a pending update. Otherwise (last-state aside) a running job is held
-- (d.hold); once savepoint.lua's "update" outcome is done or skipped it is cancelled (unless our
-- stop-with-savepoint stopped it) and Updating. A job whose stop's savepoint is not read yet stays
-- held; a job gone (Updating, ended, Lost or Suspended) is resubmitted unless a cancel is wanted.
-- Reads input.update {pending, current, next, from_savepoint_changed, old_job}, spec (its
-- upgradeMode, fromSavepoint), status.nextRevision, p.running, p.cancel_wanted, p.stopped,
-- p.stop_in_flight, p.outcome.update, j.id, j.state, j.savepointLocation.
-- Changes d.events (+UpgradeModeFallback, +LastStateUpgrade), d.update_done, d.hold, d.intents
-- (+cancel: cancel_job), d.from_savepoint, d.resubmit and j.staleSubmitterUID
-- (retire_submitter), j.state (Updating), j.id (nil).
local function update_by_mode(p)
  local j, d, spec = p.j, p.d, p.spec
  local update = p.input.update
  if not update.pending then return end
  local mode, fallback = upgrade.effective(spec, update.old_job)
  if p.running and fallback and p.status.nextRevision ~= update.next then
    -- told once, on the update's first pass (the status then names the next revision)
    d.events[#d.events + 1] = { type = "Normal", reason = "UpgradeModeFallback",
      message = "last-state update of job " .. j.id .. " goes as " .. mode .. ": " .. fallback }
  end
  if mode == upgrade.LAST_STATE and p.running and not p.cancel_wanted then
    d.update_done = true
    d.events[#d.events + 1] = { type = "Normal", reason = "LastStateUpgrade",
      message = "revision " .. tostring(update.current) .. " -> " .. tostring(update.next) .. ": job " .. j.id
        .. " keeps its id and resumes from its latest checkpoint (Flink HA), no savepoint" }
  elseif p.running then
    d.hold = true
    local sp = p.outcome["update"]
    if sp == "done" or sp == "skipped" then
      if not p.stopped then cancel_job(p) end
      j.state = "Updating"
    end
  elseif p.stop_in_flight then
    -- the job stopped before the stop's savepoint was polled: resubmit from that one only
    d.hold = true
    j.state = "Updating"
  elseif not p.cancel_wanted and (j.state == "Updating" or job.TERMINAL[j.state] or j.state == "Lost"
      or j.state == "Suspended") then
    -- the old job is gone: resubmit with the new spec from the latest savepoint
    retire_submitter(p)
    j.state = "Updating"
    j.id = nil
    -- a fromSavepoint the user just changed wins (ours: resume a cancelled job from it);
    -- stateless: nothing else ("": no --fromSavepoint)
    if update.from_savepoint_changed and spec.fromSavepoint then
      d.from_savepoint = spec.fromSavepoint
    elseif mode == upgrade.STATELESS then
      d.from_savepoint = ""
    else
      d.from_savepoint = j.savepointLocation or spec.fromSavepoint
    end
  end
end

-- Step: restart. Restart: FromSavepointOnFailure resubmits a Failed or Lost job from its latest
-- savepoint when policies/restart.lua says so (wait, restart, or give up: it stays Failed,
-- cleanup applies). Only with no update pending, no cancel wanted, and a job id and a savepoint
-- to restore from (j.savepointLocation, else spec.job.fromSavepoint).
--   give_up  j.nextRestartTime dropped; a Warning RestartLimitReached on the pass the job's state
--            changes (status.components.job.state, the last pass's, differs);
--   wait     j.nextRestartTime kept (restart.lua's due time), requeued for then;
--   restart  the submitter retired, a Warning JobRestarted, the job Pending with no id, to be
--            submitted from the savepoint (restartCount + 1, restartAttempt, the failure told by
--            the Event).
-- Reads input.update.pending, spec.restartPolicy, spec.fromSavepoint, p.cancel_wanted,
-- status.components.job.state, j.state, j.id, j.savepointLocation, j.failureReason, p.now.
-- Sets p.restarting, p.restart_waits.
-- Changes j.nextRestartTime, j.restartCount, j.restartAttempt, j.failureReason, j.id, j.state,
-- d.events (+RestartLimitReached | +JobRestarted), d.requeue_after, d.from_savepoint, d.resubmit
-- and j.staleSubmitterUID (retire_submitter).
local function restart_failed_job(p)
  local j, d, spec, status = p.j, p.d, p.spec, p.status
  p.restarting, p.restart_waits = false, false
  local location = j.savepointLocation or spec.fromSavepoint
  if not p.input.update.pending and spec.restartPolicy == "FromSavepointOnFailure"
      and (j.state == "Failed" or j.state == "Lost") and j.id and location and not p.cancel_wanted then
    local r = restart.decide({ job = j, now = p.now })
    if r.action == "give_up" then
      j.nextRestartTime = nil
      if ((status.components or {}).job or {}).state ~= j.state then
        d.events[#d.events + 1] = { type = "Warning", reason = "RestartLimitReached", message = "job " .. j.id
          .. " " .. j.state .. " " .. r.reason .. ": not restarted again (cleanupPolicy.afterJobFails applies)" }
      end
    elseif r.action == "wait" then
      p.restart_waits = true
      j.nextRestartTime = r.next_restart_time
      d.requeue_after = r.after_seconds
    else
      p.restarting = true
      retire_submitter(p)
      d.from_savepoint = location
      d.events[#d.events + 1] = { type = "Warning", reason = "JobRestarted", message = r.reason .. ": job " .. j.id
        .. " " .. j.state .. (j.failureReason and (" (" .. j.failureReason .. ")") or "")
        .. ", resubmitted from " .. location }
      j.restartCount = (j.restartCount or 0) + 1
      j.restartAttempt = r.attempt
      j.nextRestartTime = nil
      j.failureReason = nil -- told by the Event
      j.id = nil
      j.state = "Pending"
    end
  end
end

-- Step: submit. Submit: once JobManager, its Service and the TaskManagers are Ready, when no
-- submitter exists. Decides for a job that wants one (Pending or Updating, no id, no cancel
-- wanted) when no submitter is observed or being deleted, no restart happens in this pass and no
-- update holds the components: policies/submit.lua names the way. "rest": one step of the REST
-- submission per pass (fc.restsubmit, the job id is ours; a failed one makes the job Failed);
-- else the submitter Job is applied (d.submit). An Updating job once submitted is the new
-- revision's: update done, Pending.
-- Reads j.state, j.id, j.fromSavepoint, p.cancel_wanted, p.submitter, d.resubmit, p.restarting,
-- d.hold, input.components, input.flink, spec, d.from_savepoint, p.now.
-- Changes d.submit, d.intents (+the REST step's), d.requeue_after (the REST step's), d.update_done,
-- j.state (Failed | Pending), j.failureReason, and what restsubmit.step records in j (its
-- submission, the job id).
local function submit_when_ready(p)
  local j, d, spec = p.j, p.d, p.spec
  local wants_job = (j.state == "Pending" or j.state == "Updating") and not j.id and not p.cancel_wanted
  if wants_job and not (p.submitter or d.resubmit or p.restarting or d.hold) and all_ready(p.input.components) then
    local submitted = true
    if submit.method({ job = spec }).method == "rest" then
      -- through the REST API, one step per pass (fc.restsubmit); the job id is ours
      local from = d.from_savepoint or j.fromSavepoint or spec.fromSavepoint
      local step = restsubmit.step({ job = j, spec = spec, flink = p.input.flink,
        from_savepoint = from ~= "" and from or nil, now = p.now, limits = submit.limits() })
      for _, i in ipairs(step.intents) do d.intents[#d.intents + 1] = i end
      d.requeue_after = step.requeue_after
      submitted = step.submitted == true
      if step.failed then
        j.state = "Failed"
        j.failureReason = submission_failed(step.failed)
      end
    else
      d.submit = true
    end
    if submitted and j.state == "Updating" then
      d.update_done = true
      j.state = "Pending"
    end
  end
end

-- Step: an update with no job to carry over. Decides update_done for a pending update when
-- nothing was running (never submitted, or ended and kept: not running, no submitter observed, no
-- restart in this pass, not Updating after the submit step), or when a cancel is wanted and the
-- job does not run: the new spec applies directly.
-- Reads input.update.pending, p.running, p.submitter, p.restarting, p.cancel_wanted, j.state.
-- Changes d.update_done.
local function update_without_job(p)
  local update = p.input.update
  if (update.pending and not p.running and not p.submitter and not p.restarting and p.j.state ~= "Updating")
      or (update.pending and p.cancel_wanted and not p.running) then
    -- nothing was running (never submitted, or ended and kept): the new spec applies directly
    p.d.update_done = true
  end
end

-- Step: the savepoint the submitter restores from. Decides d.from_savepoint: the one the update
-- or restart step chose, else the one the job was submitted from (j.fromSavepoint), else
-- spec.job.fromSavepoint; j.fromSavepoint records it.
-- Reads d.from_savepoint, j.fromSavepoint, spec.fromSavepoint.
-- Changes d.from_savepoint, j.fromSavepoint.
local function pin_from_savepoint(p)
  local j, d = p.j, p.d
  -- the submitter (its container args: --fromSavepoint) always restores from this one, so
  -- that they do not change while the job runs
  d.from_savepoint = d.from_savepoint or j.fromSavepoint or p.spec.fromSavepoint
  j.fromSavepoint = d.from_savepoint
end

-- Step: cleanup. Cleanup once the job ended (cleanupPolicy), unless it is restarting or waits to,
-- or its stop-with-savepoint has not been read yet: Flink may list the job FINISHED before the
-- stop's savepoint is polled, and that poll needs the JobManager still there. What is removed is
-- policies/cleanup.lua's decision (KeepCluster: nothing).
-- Reads j.state, p.restarting, p.restart_waits, p.stop_in_flight, cluster.metadata.name,
-- spec.cleanupPolicy.
-- Changes d.cleanup, d.remove.
local function cleanup_when_ended(p)
  local j, d = p.j, p.d
  if job.TERMINAL[j.state] and not p.restarting and not p.restart_waits and not p.stop_in_flight then
    local c = cleanup.decide({ name = p.cluster.metadata.name, state = j.state, policy = p.spec.cleanupPolicy })
    if c.action ~= "KeepCluster" then
      d.cleanup = c.action
      d.remove = c.remove
    end
  end
end

-- Step: poll. Poll the job list while the job may still change and the JobManager's Service is
-- Ready: a `list_jobs` intent for a job Running, Pending, Updating, Lost or Suspended, unless the
-- cleanup removes components or an earlier step asked for the list already.
-- Reads input.components.jobManagerService, d.cleanup, d.intents, j.state.
-- Changes d.intents (+list_jobs).
local function poll_job_list(p)
  local j, d = p.j, p.d
  local jm_service = p.input.components.jobManagerService
  local listing = false
  for _, i in ipairs(d.intents) do listing = listing or i.kind == "list_jobs" end
  if jm_service and jm_service.state == "Ready" and not d.cleanup and not listing and (j.state == "Running"
      or j.state == "Pending" or j.state == "Updating" or j.state == "Lost" or j.state == "Suspended") then
    d.intents[#d.intents + 1] = { kind = "list_jobs" }
  end
end

-- Last step: the decision as returned. A job not ended is requeued within
-- settings.JOB_POLL_SECONDS (sooner when a step asked for it); j.nextRestartTime is kept only for
-- a Failed or Lost job; status.control is the pass's p.control.
-- Reads d.requeue_after, j.state, p.control.
-- Changes d.requeue_after, j.nextRestartTime, d.control. Returns d.
local function finish_decision(p)
  local j, d, control = p.j, p.d, p.control
  if not job.TERMINAL[j.state] then
    d.requeue_after = math.min(d.requeue_after or settings.JOB_POLL_SECONDS, settings.JOB_POLL_SECONDS)
  end
  if j.state ~= "Failed" and j.state ~= "Lost" then j.nextRestartTime = nil end
  d.control = control
  return d
end

--- job.decide(input) -> decision
-- input: {cluster=<defaulted, status as observed>, job=<from observe, savepoint fields updated by
--   savepoint.lua>, flink_state=<string>, flink=<fc.flink view, as job.observe's: the REST
--   submission reads jobs, jobs_time, submissions and since>, savepoint=<status.savepoint after savepoint.lua>,
--   outcome={<reason>="pending"|"done"|"failed"|"skipped"} (savepoint.lua, per on-demand reason:
--   "job cancel", "update", "user requested"; "skipped": savepoint.lua takes none, e.g. no
--   savepointsDir or an update not in savepoint mode, so the step goes on without one),
--   children=<observed>, components=<status.components from status.components()>,
--   update={pending=bool, current=<revision name>, next=<revision name>, from_savepoint_changed=bool
--   (spec.job.fromSavepoint differs from the current revision's), old_job=<the current revision's
--   spec.job>},
--   health=<nil | {action="fail", reason=, told=<true after the first pass>}: health.decide's
--   verdict on this job id, kept by the framework until the job id changes>, now=<unix s>}.
-- decision: {job=<status.components.job>, submit=bool (apply the submitter Job now),
--   resubmit=bool (delete the observed submitter so that a new one is submitted; its uid is kept
--   in job.staleSubmitterUID (ours) until it is gone, so that a cache that still shows it cannot
--   bring back the old job id),
--   from_savepoint=<path, "" (none: a stateless update) or nil> (what the next submission restores from),
--   cleanup=<"DeleteCluster"|"DeleteTaskManager"|nil> (components to remove as the job ended),
--   hold=bool (do not change the running components yet: update waits for savepoint/cancel),
--   update_done=bool (the new revision's job is submitted: current := next),
--   remove={{kind=, name=}...} (the children the cleanup removes; no name: all of that kind; kind
--   "Pod": the Native TaskManager pods),
--   control=<status.control or nil: {name, state, updateTime, message, acknowledged=true|nil}>,
--   remove_annotation=<the user-control annotation key: remove it (lib.control.REMOVE_WHEN_DONE)>,
--   intents={{kind="cancel", job_id=}|{kind="list_jobs"}|a REST submission's list_jobs, upload_jar
--   or run_jar (fc.restsubmit)} (fc.flink), requeue_after=<seconds or nil>,
--   events={{type="Normal"|"Warning", reason=, message=}...} (JobRestarted with the attempt
--   number, RestartLimitReached, LastStateUpgrade, UpgradeModeFallback, JobUnhealthy)}.
function job.decide(input)
  local p = new_pass(input)      -- the pass state; a stale submitter is deleted again
  stopped_by_our_savepoint(p)    -- FINISHED/FAILED after our stop-with-savepoint: Cancelled or Updating
  health_verdict(p)              -- unhealthy: cancelled in Flink, Failed
  p.running = p.j.state == "Running" and p.j.id ~= nil -- after the health verdict, for the whole pass
  read_user_control(p)           -- the annotation's control: goes on, starts, or is refused
  p.cancel_wanted = cancel_wanted(p) -- taken before follow_user_control may end a job-cancel
  follow_user_control(p)         -- savepoint / job-cancel: Succeeded or Failed once decided
  cancel_requested(p)            -- cancelRequested or job-cancel: cancel after the savepoint
  update_by_mode(p)              -- a new revision: savepoint, stateless or last-state
  restart_failed_job(p)          -- FromSavepointOnFailure: wait, restart or give up
  submit_when_ready(p)           -- the submitter Job, or one step of the REST submission
  update_without_job(p)          -- nothing was running: the new spec applies directly
  pin_from_savepoint(p)          -- what the (next) submission restores from
  cleanup_when_ended(p)          -- cleanupPolicy once the job ended
  poll_job_list(p)               -- list_jobs while the job may still change
  return finish_decision(p)      -- requeue, nextRestartTime, status.control
end

return job
