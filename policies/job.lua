-- SPDX-License-Identifier: Apache-2.0
--- policies/job.lua: the job of a job cluster (one with `spec.job`): what state it is in, when
-- to submit it, when to restart, cancel or clean up. Pure functions; the framework
-- (lua/fc/reconcile.lua) calls `observe`, then savepoint.lua, then `decide`. What is asked of
-- Flink goes out as intents (`cancel`, `list_jobs`, `job_exceptions`, and a REST submission's
-- `upload_jar`/`run_jar`): lua/fc/flink.lua turns them into REST calls and their answers into
-- `input.flink`. The decisions an operator may change are the constants and functions in
-- CAPITALS below (docs/lifecycle.md lists them with their fixtures); its numbers (polls, the
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

-- Why the submitter Job failed: the termination message of one of its pods (the submit script
-- writes Flink's error there, Kubernetes keeps at most 4096 bytes: core/v1
-- ContainerStatus.state.terminated.message), else the Job's Failed condition message.
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
            and failure.cause(t.message, settings.JOB_FAILURE_REASON_MAX)
          if cause then return "submission failed: " .. cause end
        end
      end
    end
  end
  for _, c in ipairs((submitter.status or {}).conditions or {}) do
    if c.type == "Failed" and c.status == "True" then
      return "submission failed: " .. tostring(c.reason) .. (c.message and (": " .. c.message) or "")
    end
  end
  return "submission failed: the submitter Job failed"
end

-- failureReason of a job Flink reports FAILED: with the root cause of its newest exception
-- (GET /jobs/<id>/exceptions, decoded by fc.flink into flink.exceptions[<id>]) once known.
local function flink_failure(id, flink)
  local ex = (flink.exceptions or {})[id] or {}
  local cause = failure.cause(ex.stacktrace, settings.JOB_FAILURE_REASON_MAX) or ex.name
  return "Flink reports job " .. id .. " FAILED" .. (cause and (": " .. cause) or "")
end

-- "submission failed: <the root cause of Flink's or the download's error text>" (a failed REST
-- submission, fc.restsubmit), at most submit.REASON_MAX bytes.
local function submission_failed(text)
  return "submission failed: " .. (failure.cause(text, submit.REASON_MAX - 19) or "no reason given")
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
  out.missingSince = nil -- set again below while the grace period runs
  if out.id then
    local fj = flink.reachable and find_flink_job(flink, out.id) or nil
    if fj then
      flink_state = fj.state or fj.status or ""
      out.state = job.map_flink_state(flink_state) or out.state
      local sp = (cluster.status or {}).savepoint or {}
      if flink_state == "FINISHED" and sp.stop and sp.jobID == out.id and STOPPED_AS[sp.triggerReason] then
        -- ended by our stop-with-savepoint, not by itself (savepoint.lua)
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

--- job.decide(input) -> decision
-- input: {cluster=<defaulted, status as observed>, job=<from observe, savepoint fields updated by
--   savepoint.lua>, flink_state=<string>, flink=<fc.flink view, as job.observe's: the REST
--   submission reads jobs, jobs_time, submissions and since>, savepoint=<status.savepoint after savepoint.lua>,
--   outcome={<reason>="pending"|"done"|"failed"|"skipped"} (savepoint.lua, per on-demand reason),
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
--   intents={{kind="cancel", job_id=}|{kind="list_jobs"}} (fc.flink), requeue_after=<seconds or nil>,
--   events={{type="Normal"|"Warning", reason=, message=}...} (JobRestarted with the attempt
--   number, RestartLimitReached, LastStateUpgrade, UpgradeModeFallback, JobUnhealthy)}.
function job.decide(input)
  local cluster = input.cluster
  local spec = cluster.spec.job
  local status = cluster.status or {}
  local j = util.deepcopy(input.job)
  local now = input.now
  local outcome = input.outcome
  local d = { job = j, submit = false, resubmit = false, hold = false, update_done = false,
    intents = {}, events = {} }
  local submitter, stale = observed_submitter(input.children, cluster.metadata.name, j)
  if stale then
    -- the submitter deleted for a resubmission is still observed: delete it again, wait
    d.resubmit = true
  elseif submitter then
    j.staleSubmitterUID = nil
  end
  local function retire_submitter()
    if submitter then
      d.resubmit = true
      j.staleSubmitterUID = (submitter.metadata or {}).uid
    end
  end
  local cancelling = input.flink_state == "CANCELLING"
  -- the savepoint of this job taken by stop-with-savepoint: done, or still in flight
  local sp_now = input.savepoint
  local of_job = sp_now.stop and j.id ~= nil and sp_now.jobID == j.id
  local stopped = of_job and sp_now.state == "Succeeded"
  local stop_in_flight = of_job and sp_now.state == "InProgress"
  if stopped and (input.flink_state == "FINISHED" or input.flink_state == "FAILED") then
    -- ended by our stop: FAILED when it failed while stopping after its savepoint (savepoint.lua)
    j.state = STOPPED_AS[sp_now.triggerReason] or j.state
    j.failureReason = nil
  end
  -- Health (policies/health.lua, judged by the framework: input.health): an unhealthy job is
  -- cancelled in Flink and Failed (a Warning JobUnhealthy once); it stays Failed while Flink
  -- cancels it, and the restart below applies to it as to any failed job.
  local health = input.health
  if type(health) == "table" and health.action == "fail" and j.id
      and (j.state == "Running" or j.state == "Cancelled") then
    local fs = input.flink_state or ""
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
  local running = j.state == "Running" and j.id ~= nil

  local function cancel()
    if running and not cancelling then
      d.intents[#d.intents + 1] = { kind = "cancel", job_id = j.id }
    end
  end

  -- User control (annotation): record progress in status.control; when done, acknowledge the
  -- annotation there (kept: Git may hold it) or remove it (lib.control.REMOVE_WHEN_DONE).
  local old_control = status.control
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
  local function finish_control(state, message)
    control.state = state
    control.message = message
    control.updateTime = clock.format(now)
    if remove then d.remove_annotation = user_control.ANNOTATION end
  end

  local cancel_wanted = spec.cancelRequested == true
    or (control and control.state == "Progressing" and control.name == job.CONTROL_JOB_CANCEL)
  if control and control.state == "Progressing" then
    if control.name == job.CONTROL_SAVEPOINT then
      if not running then
        finish_control("Failed", "job is not running")
      elseif outcome["user requested"] == "done" then
        finish_control("Succeeded", "savepoint " .. tostring(j.savepointLocation))
      elseif outcome["user requested"] == "failed" then
        finish_control("Failed", input.savepoint.message or "savepoint failed")
      end
    elseif control.name == job.CONTROL_JOB_CANCEL and not running then
      if stop_in_flight then -- luacheck: ignore 542
        -- stopped, its savepoint not read yet: the control ends with the savepoint's location
      elseif j.state == "Cancelled" or job.TERMINAL[j.state] then
        finish_control("Succeeded", "job " .. j.state)
      elseif j.state == "Pending" and not j.id then
        j.state = "Cancelled"
        finish_control("Succeeded", "job cancelled before submission")
      else
        finish_control("Failed", "job is " .. tostring(j.state))
      end
    end
  end

  -- Cancel (cancelRequested or job-cancel): savepoint first when savepointsDir is set.
  if cancel_wanted then
    if running then
      local sp = outcome["job cancel"]
      if sp == "done" and stopped then -- luacheck: ignore 542
        -- stopped with its savepoint: Flink lists it FINISHED next, which observe calls Cancelled
      elseif sp == "done" or sp == "skipped" then
        cancel()
      elseif sp == "failed" and control and control.state == "Progressing" then
        finish_control("Failed", "savepoint before cancel failed: " .. tostring(input.savepoint.message))
      end
    elseif j.state == "Pending" and not j.id and spec.cancelRequested == true then
      j.state = "Cancelled"
    end
  end

  -- Update: when the revision changes, by the upgrade mode (lib.upgrade.effective):
  --   savepoint   a running job is stopped with a savepoint before the components change, then
  --               resubmitted from that savepoint;
  --   stateless   it is cancelled, then resubmitted without state (a fromSavepoint changed by
  --               this update excepted);
  --   last-state  it keeps running while the components are replaced (update_done at once): the
  --               new JobManager recovers the same job from its latest checkpoint through
  --               Flink's Kubernetes HA services, with no savepoint and no submission.
  local update = input.update
  local mode, fallback = nil, nil
  if update.pending then mode, fallback = upgrade.effective(spec, update.old_job) end
  if update.pending and running and fallback and status.nextRevision ~= update.next then
    -- told once, on the update's first pass (the status then names the next revision)
    d.events[#d.events + 1] = { type = "Normal", reason = "UpgradeModeFallback",
      message = "last-state update of job " .. j.id .. " goes as " .. mode .. ": " .. fallback }
  end
  if update.pending and mode == upgrade.LAST_STATE and running and not cancel_wanted then
    d.update_done = true
    d.events[#d.events + 1] = { type = "Normal", reason = "LastStateUpgrade",
      message = "revision " .. tostring(update.current) .. " -> " .. tostring(update.next) .. ": job " .. j.id
        .. " keeps its id and resumes from its latest checkpoint (Flink HA), no savepoint" }
  elseif update.pending then
    if running then
      d.hold = true
      local sp = outcome["update"]
      if sp == "done" or sp == "skipped" then
        if not stopped then cancel() end
        j.state = "Updating"
      end
    elseif stop_in_flight then
      -- the job stopped before the stop's savepoint was polled: resubmit from that one only
      d.hold = true
      j.state = "Updating"
    elseif not cancel_wanted and (j.state == "Updating" or job.TERMINAL[j.state] or j.state == "Lost"
        or j.state == "Suspended") then
      -- the old job is gone: resubmit with the new spec from the latest savepoint
      retire_submitter()
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

  -- Restart: FromSavepointOnFailure resubmits a Failed or Lost job from its latest savepoint
  -- when policies/restart.lua says so (wait, restart, or give up: it stays Failed, cleanup applies).
  local restarting, restart_waits = false, false
  local location = j.savepointLocation or spec.fromSavepoint
  if not update.pending and spec.restartPolicy == "FromSavepointOnFailure"
      and (j.state == "Failed" or j.state == "Lost") and j.id and location and not cancel_wanted then
    local r = restart.decide({ job = j, now = now })
    if r.action == "give_up" then
      j.nextRestartTime = nil
      if ((status.components or {}).job or {}).state ~= j.state then
        d.events[#d.events + 1] = { type = "Warning", reason = "RestartLimitReached", message = "job " .. j.id
          .. " " .. j.state .. " " .. r.reason .. ": not restarted again (cleanupPolicy.afterJobFails applies)" }
      end
    elseif r.action == "wait" then
      restart_waits = true
      j.nextRestartTime = r.next_restart_time
      d.requeue_after = r.after_seconds
    else
      restarting = true
      retire_submitter()
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

  -- Submit: once JobManager, its Service and the TaskManagers are Ready, when no submitter exists.
  local wants_job = (j.state == "Pending" or j.state == "Updating") and not j.id and not cancel_wanted
  if wants_job and not (submitter or d.resubmit or restarting or d.hold) and all_ready(input.components) then
    local submitted = true
    if submit.method({ job = spec }).method == "rest" then
      -- through the REST API, one step per pass (fc.restsubmit); the job id is ours
      local from = d.from_savepoint or j.fromSavepoint or spec.fromSavepoint
      local step = restsubmit.step({ job = j, spec = spec, flink = input.flink,
        from_savepoint = from ~= "" and from or nil, now = now, limits = submit.limits() })
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
  if update.pending and not running and not submitter and not restarting and j.state ~= "Updating"
      or update.pending and cancel_wanted and not running then
    -- nothing was running (never submitted, or ended and kept): the new spec applies directly
    d.update_done = true
  end
  -- the submitter (its container args: --fromSavepoint) always restores from this one, so
  -- that they do not change while the job runs
  d.from_savepoint = d.from_savepoint or j.fromSavepoint or spec.fromSavepoint
  j.fromSavepoint = d.from_savepoint

  -- Cleanup once the job ended (cleanupPolicy), unless it is restarting or waits to, or its
  -- stop-with-savepoint has not been read yet: Flink may list the job FINISHED before the stop's
  -- savepoint is polled, and that poll needs the JobManager still there.
  if job.TERMINAL[j.state] and not restarting and not restart_waits and not stop_in_flight then
    local c = cleanup.decide({ name = cluster.metadata.name, state = j.state, policy = spec.cleanupPolicy })
    if c.action ~= "KeepCluster" then
      d.cleanup = c.action
      d.remove = c.remove
    end
  end

  -- Poll the job list while the job may still change and the JobManager's Service is Ready.
  local jm_service = input.components.jobManagerService
  local listing = false
  for _, i in ipairs(d.intents) do listing = listing or i.kind == "list_jobs" end
  if jm_service and jm_service.state == "Ready" and not d.cleanup and not listing and (j.state == "Running"
      or j.state == "Pending" or j.state == "Updating" or j.state == "Lost" or j.state == "Suspended") then
    d.intents[#d.intents + 1] = { kind = "list_jobs" }
  end

  if not job.TERMINAL[j.state] then
    d.requeue_after = math.min(d.requeue_after or settings.JOB_POLL_SECONDS, settings.JOB_POLL_SECONDS)
  end
  if j.state ~= "Failed" and j.state ~= "Lost" then j.nextRestartTime = nil end
  d.control = control
  return d
end

return job
