--- policies/job.lua: the job of a job cluster (one with `spec.job`): what state it is in, when
-- to submit it, when to restart, cancel or clean up. Pure functions; the framework
-- (lua/fc/reconcile.lua) calls `observe`, then savepoint.lua, then `decide`.
-- Times in the status are RFC 3339 strings; `now` is unix seconds.
local util = require("fc.util")
local clock = require("lib.clock")
local names = require("lib.names")
local user_control = require("lib.control")

local job = {}

--- The user-control annotation and its values (lib.control).
job.CONTROL_ANNOTATION = user_control.ANNOTATION
job.CONTROL_SAVEPOINT = user_control.SAVEPOINT
job.CONTROL_JOB_CANCEL = user_control.JOB_CANCEL

--- Seconds between Flink REST polls while the job is not in a terminal state.
job.POLL_SECONDS = 10
--- Seconds a job seen live may be missing from a reachable JobManager's /jobs/overview before
-- it is Lost: right after a JobManager (re)start the list is empty while HA recovery brings the
-- job back (flink-rest-notes.md, GET /jobs/overview: "confirm over several polls"), and a Lost
-- job is resubmitted by FromSavepointOnFailure, which would then run it twice. 3 polls.
job.LOST_AFTER_SECONDS = 3 * job.POLL_SECONDS

--- Flink JobStatus (flink-core api/common/JobStatus.java) -> FlinkCluster job state, as the
-- API defines it: every non-terminal state is Running; SUSPENDED is only locally terminal.
job.FLINK_STATES = {
  INITIALIZING = "Running", CREATED = "Running", RUNNING = "Running", FAILING = "Running",
  CANCELLING = "Running", RESTARTING = "Running", RECONCILING = "Running",
  FINISHED = "Succeeded", CANCELED = "Cancelled", FAILED = "Failed", SUSPENDED = "Suspended",
}

--- Job states after which the job will not run again by itself.
job.TERMINAL = { Succeeded = true, Failed = true, Cancelled = true }

-- cleanupPolicy field for each terminal state.
local CLEANUP_FIELD = { Succeeded = "afterJobSucceeds", Failed = "afterJobFails", Cancelled = "afterJobCancelled" }
local CLEANUP_DEFAULT = { Succeeded = "DeleteCluster", Failed = "KeepCluster", Cancelled = "DeleteCluster" }

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

local function find_flink_job(flink, id)
  for _, j in ipairs(flink.jobs or {}) do
    if (j.jid or j.id) == id then return j end
  end
  return nil
end

--- job.observe(input) -> {job=<status.components.job>, flink_state=<Flink state or "">,
--   start_time=<unix seconds the job started in Flink, 0 when unknown>}
-- input: {cluster=<defaulted FlinkCluster, status as observed or {}>, children={<kind>={<name>=obj}},
--   flink={reachable=bool, jobs={{jid=, state=, ["start-time"]=<ms>},...}, savepoint_triggers={}},
--   now=<unix seconds>}.
-- Rules (API "Behaviour"): the id comes from the status, else from the submitter pod's
-- termination message; with the JobManager reachable, the Flink state maps through
-- FLINK_STATES; an id absent from the JobManager once the job had been seen live keeps its
-- state for LOST_AFTER_SECONDS (job.missingSince, ours, RFC 3339, records the first absence),
-- then is Lost; without the JobManager the last state stays. No id: Failed when the submitter
-- Job failed (submission failed), else Pending.
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
  local flink = input.flink or {}
  local flink_state, start_time = "", 0
  out.missingSince = nil -- set again below while the grace period runs
  if out.id then
    local fj = flink.reachable and find_flink_job(flink, out.id) or nil
    if fj then
      flink_state = fj.state or fj.status or ""
      out.state = job.map_flink_state(flink_state) or out.state
      start_time = math.floor((tonumber(fj["start-time"]) or 0) / 1000)
    elseif flink.reachable and (old.state == "Running" or old.state == "Suspended") then
      local since = clock.parse(old.missingSince) or input.now
      if input.now - since >= job.LOST_AFTER_SECONDS then
        out.state = "Lost"
      else
        out.missingSince = clock.format(since)
      end
    elseif old.state == nil or (old.state == "Pending" and not old.id) then
      out.state = "Pending"
    end
  elseif submitter_failed(submitter) then
    out.state = "Failed"
  elseif not job.TERMINAL[out.state] and out.state ~= "Updating" then
    out.state = "Pending"
  end
  return { job = out, flink_state = flink_state, start_time = start_time }
end

local function all_ready(components)
  local function ready(c) return c and c.state == "Ready" end
  return ready(components.jobManagerStatefulSet) and ready(components.jobManagerService)
    and ready(components.taskManagerStatefulSet)
end

--- job.decide(input) -> decision
-- input: {cluster=<defaulted, status as observed>, job=<from observe, savepoint fields updated by
--   savepoint.lua>, flink_state=<string>, savepoint=<status.savepoint after savepoint.lua>,
--   outcome={<reason>="pending"|"done"|"failed"|"skipped"} (savepoint.lua, per on-demand reason),
--   children=<observed>, components=<status.components from status.components()>,
--   update={pending=bool, current=<revision name>, next=<revision name>, from_savepoint_changed=bool
--   (spec.job.fromSavepoint differs from the current revision's)}, now=<unix s>}.
-- decision: {job=<status.components.job>, submit=bool (apply the submitter Job now),
--   resubmit=bool (delete the observed submitter so that a new one is submitted; its uid is kept
--   in job.staleSubmitterUID (ours) until it is gone, so that a cache that still shows it cannot
--   bring back the old job id),
--   from_savepoint=<path or nil> (what the next submission restores from),
--   cleanup=<"DeleteCluster"|"DeleteTaskManager"|nil> (components to remove as the job ended),
--   hold=bool (do not change the running components yet: update waits for savepoint/cancel),
--   update_done=bool (the new revision's job is submitted: current := next),
--   control=<status.control or nil>, remove_annotation=bool,
--   flink={{method=, path=, body=}...}, requeue_after=<seconds or nil>}.
function job.decide(input)
  local cluster = input.cluster
  local spec = cluster.spec.job
  local status = cluster.status or {}
  local j = util.deepcopy(input.job)
  local now = input.now
  local outcome = input.outcome or {}
  local d = { job = j, submit = false, resubmit = false, hold = false, update_done = false,
    remove_annotation = false, flink = {} }
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
  local running = j.state == "Running" and j.id ~= nil
  local cancelling = input.flink_state == "CANCELLING"

  local function cancel()
    if running and not cancelling then
      d.flink[#d.flink + 1] = { method = "PATCH", path = "/jobs/" .. j.id .. "?mode=cancel" }
    end
  end

  -- User control (annotation): record progress in status.control, remove the annotation when done.
  local old_control = status.control
  local value = user_control.requested(cluster)
  local control
  if old_control and old_control.state == "Progressing" then
    control = util.deepcopy(old_control)
  elseif value == job.CONTROL_SAVEPOINT or value == job.CONTROL_JOB_CANCEL then
    if user_control.just_finished(old_control, value, now) then
      -- the annotation removal has not been observed yet
      d.remove_annotation = true
    else
      control = { name = value, state = "Progressing", updateTime = clock.format(now) }
    end
  elseif value ~= nil then
    d.remove_annotation = true
    control = { name = tostring(value), state = "Failed", updateTime = clock.format(now),
      message = "unknown user control \"" .. tostring(value) .. "\": use savepoint or job-cancel" }
  end
  local function finish_control(state, message)
    control.state = state
    control.message = message
    control.updateTime = clock.format(now)
    d.remove_annotation = true
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
        finish_control("Failed", (input.savepoint or {}).message or "savepoint failed")
      end
    elseif control.name == job.CONTROL_JOB_CANCEL and not running then
      if j.state == "Cancelled" or job.TERMINAL[j.state] then
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
      if sp == "done" or sp == "skipped" then
        cancel()
      elseif sp == "failed" and control and control.state == "Progressing" then
        finish_control("Failed", "savepoint before cancel failed: " .. tostring((input.savepoint or {}).message))
      end
    elseif j.state == "Pending" and not j.id and spec.cancelRequested == true then
      j.state = "Cancelled"
    end
  end

  -- Update: when the revision changes, a running job is stopped (after a savepoint) before the
  -- components change, then resubmitted from that savepoint.
  local update = input.update or {}
  if update.pending then
    if running then
      d.hold = true
      local sp = outcome["update"]
      if sp == "done" or sp == "skipped" then
        cancel()
        j.state = "Updating"
      end
    elseif not cancel_wanted and (j.state == "Updating" or job.TERMINAL[j.state] or j.state == "Lost"
        or j.state == "Suspended") then
      -- the old job is gone: resubmit with the new spec from the latest savepoint
      retire_submitter()
      j.state = "Updating"
      j.id = nil
      -- a fromSavepoint the user just changed wins (ours: resume a cancelled job from it)
      d.from_savepoint = update.from_savepoint_changed and spec.fromSavepoint
        or j.savepointLocation or spec.fromSavepoint
    end
  end

  -- Restart: FromSavepointOnFailure resubmits a Failed or Lost job from its latest savepoint.
  local restarting = false
  local location = j.savepointLocation or spec.fromSavepoint
  if not update.pending and spec.restartPolicy == "FromSavepointOnFailure"
      and (j.state == "Failed" or j.state == "Lost") and j.id and location and not cancel_wanted then
    restarting = true
    retire_submitter()
    d.from_savepoint = location
    j.restartCount = (j.restartCount or 0) + 1
    j.id = nil
    j.state = "Pending"
  end

  -- Submit: once JobManager, its Service and the TaskManagers are Ready, when no submitter exists.
  local wants_job = (j.state == "Pending" or j.state == "Updating") and not j.id and not cancel_wanted
  if wants_job and not (submitter or d.resubmit or restarting or d.hold) and all_ready(input.components or {}) then
    d.submit = true
    if j.state == "Updating" then
      d.update_done = true
      j.state = "Pending"
    end
  end
  if update.pending and not running and not submitter and not restarting and j.state ~= "Updating"
      or update.pending and cancel_wanted and not running then
    -- nothing was running (never submitted, or ended and kept): the new spec applies directly
    d.update_done = true
  end
  -- the submitter (and the submit script in the ConfigMap) always restores from this one, so
  -- that they do not change while the job runs
  d.from_savepoint = d.from_savepoint or j.fromSavepoint or spec.fromSavepoint
  j.fromSavepoint = d.from_savepoint

  -- Cleanup once the job ended (cleanupPolicy), unless it is restarting.
  if job.TERMINAL[j.state] and not restarting then
    local policy = spec.cleanupPolicy or {}
    local action = policy[CLEANUP_FIELD[j.state]] or CLEANUP_DEFAULT[j.state]
    if action ~= "KeepCluster" then d.cleanup = action end
  end

  if not job.TERMINAL[j.state] then d.requeue_after = job.POLL_SECONDS end
  d.control = control
  return d
end

return job
