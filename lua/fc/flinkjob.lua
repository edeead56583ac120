-- SPDX-License-Identifier: Apache-2.0
--- fc.flinkjob: the pass of one FlinkJob, a job on a session cluster (deploy/crd.yaml, the
-- FlinkJob document; docs/lifecycle.md, "FlinkJob"). The core calls it through fc.reconcile.run
-- with a snapshot whose `cluster` is the FlinkJob (kind "FlinkJob") and `session` the FlinkCluster
-- spec.clusterRef.name of its namespace (absent when there is none).
--
-- The job goes through the job policies of a job cluster (policies/job.lua, savepoint.lua with
-- its savepointRetention, health.lua through fc.health.pass; the same hooks, fixtures and
-- constants): the FlinkJob is seen by them as the session cluster with
-- the FlinkJob's spec.job (`as_cluster`), the FlinkJob's status as that cluster's job, savepoint
-- and control; the session cluster's JobManager is the Flink endpoint and its status.components
-- say when it is ready. What differs:
--   - the job is always submitted through the REST API (fc.restsubmit; jarFile an http(s):// URL,
--     the CRD's pattern), with a job id of its own (`own_job_id`: several FlinkJobs submitted in
--     the same second must not share one);
--   - the policies see only this FlinkJob's jobs in the JobManager's job list (`own_view`): a
--     session cluster runs other jobs, which fc.restsubmit would otherwise adopt as its own;
--   - an update is a change of spec.job (status.currentRevision, a hash of the defaulted
--     spec.job: `update`), never of the cluster; cleanupPolicy does not apply (the session
--     cluster stays);
--   - the finalizer FINALIZER: added first, and on deletion the job is cancelled in Flink (no
--     savepoint) before it is removed (`deleting`).
-- The session cluster's own pass is not affected. Pure decisions, no I/O (as fc.reconcile).
local util = require("fc.util")
local contract = require("fc.contract")
local fcflink = require("fc.flink")
local revision = require("fc.revision")
local codec = require("fc.codec")
local clock = require("fc.clock")
local savepoints = require("fc.savepoints")
local fchealth = require("fc.health")
local restsubmit = require("fc.restsubmit")

local flinkjob = {}

--- The finalizer that holds a deleted FlinkJob until its job is cancelled in Flink.
flinkjob.FINALIZER = "flinkoperator.k8s.io/job"
--- Seconds a deleted FlinkJob waits for Flink (an unreachable JobManager) before its finalizer
-- goes anyway, with a Warning event (the job may still run).
flinkjob.DELETE_GIVE_UP_SECONDS = 300
--- Seconds between passes while the FlinkJob waits for its session cluster.
flinkjob.WAIT_SECONDS = 10
--- Seconds between passes while a deleted FlinkJob's job is being cancelled.
flinkjob.DELETE_POLL_SECONDS = 2

-- Flink job states that end a job.
local ENDED = { FINISHED = true, CANCELED = true, FAILED = true }

-- A policy failure inside a pass (turned into the PolicyError result by flinkjob.run).
local Failure = {}

local function call(host, policy, hook, input)
  local ok, res = contract.call(host, policy, hook, input)
  if not ok then error(setmetatable({ failure = res }, Failure), 0) end
  return res
end

local function has(list, v)
  for _, x in ipairs(type(list) == "table" and list or {}) do
    if x == v then return true end
  end
  return false
end

local function without(list, v)
  local out = {}
  for _, x in ipairs(type(list) == "table" and list or {}) do
    if x ~= v then out[#out + 1] = x end
  end
  return out
end

local function set_condition(status, cond, now, gen, previous)
  return require("fc.reconcile").set_condition(status, cond, now, gen, previous)
end

--- flinkjob.own_view(view, j) -> the fc.flink view `view` with only the jobs of this FlinkJob in
-- its job list: the id of its job record `j` (status.job.id) and of its submission.
function flinkjob.own_view(view, j)
  local ids = {}
  if type(j) == "table" then
    if type(j.id) == "string" then ids[j.id] = true end
    if type(j.submission) == "table" and type(j.submission.jobID) == "string" then ids[j.submission.jobID] = true end
  end
  local out = util.merge(view)
  out.jobs = {}
  for _, fj in ipairs(view.jobs or {}) do
    if ids[fj.jid or fj.id] then out.jobs[#out.jobs + 1] = fj end
  end
  return out
end

--- flinkjob.own_job_id(id, uid) -> 32 hex: fc.restsubmit.job_id's id `id` (8 hex of time, 16 zeros, 8 of
-- sequence) with the 16 middle digits taken from the FlinkJob's uid, so that two FlinkJobs
-- submitted in the same second get two ids.
function flinkjob.own_job_id(id, uid)
  local mid = string.format("%08x%08x", revision.fnv1a32(tostring(uid)), revision.fnv1a32("job/" .. tostring(uid)))
  return id:sub(1, 8) .. mid .. id:sub(25)
end

--- flinkjob.as_cluster(fj, session) -> the FlinkCluster the job policies see: the session
-- cluster (its name, hence its JobManager Service; its spec) with the FlinkJob's spec.job and
-- annotations (the user control), and the FlinkJob's status as its job, savepoint and control.
function flinkjob.as_cluster(fj, session)
  local c = util.deepcopy(session)
  c.spec = c.spec or {}
  c.spec.job = util.deepcopy((fj.spec or {}).job or {})
  c.metadata = c.metadata or {}
  c.metadata.annotations = util.deepcopy((fj.metadata or {}).annotations)
  c.metadata.generation = (fj.metadata or {}).generation
  c.status = nil
  return c
end

-- The status the job policies read (cluster.status of a job cluster) from the FlinkJob's.
local function policy_status(st)
  return { components = { job = st.job }, savepoint = st.savepoint, control = st.control,
    nextRevision = st.nextRevision, currentRevision = st.currentRevision }
end

-- A session cluster to validate a FlinkJob's spec.job in when its own is not at hand (admission,
-- render): only the spec.job errors count (flinkjob.validate).
local function stub_session(fj)
  local md = fj.metadata or {}
  local ref = type(fj.spec) == "table" and fj.spec.clusterRef or nil
  local name = type(ref) == "table" and type(ref.name) == "string" and ref.name ~= "" and ref.name or "session"
  return { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
    metadata = { name = name, namespace = md.namespace },
    spec = { image = { name = "flink:1.20.5" }, jobManager = {}, taskManager = { replicas = 1 } } }
end

--- flinkjob.validate(host, fj [, session [, old]]) -> true, errors, defaulted | false, failure.
-- errors ({path=, message=}, the FlinkJob's field paths): its own rules, then spec.job through the
-- job cluster's defaults and validate policies in `session` (the FlinkCluster it names; a
-- stand-in when nil) as the controller runs it (only the errors under spec.job count: the rest
-- is the session cluster's); defaulted: that cluster. `old`: the stored FlinkJob of an update
-- (the webhook's oldObject): its clusterRef may not change, and spec.job's update rules
-- (validate.lua's twins of the CRD's transition rules, fc.rules.flinkjob) see its spec.job and
-- status. false, failure: a policy failed (fc.contract's typed {kind, policy, hook, message}).
function flinkjob.validate(host, fj, session, old)
  local errs = {}
  local function bad(path, message) errs[#errs + 1] = { path = path, message = message } end
  local spec = fj.spec
  if type(spec) ~= "table" then
    bad("spec", "is required (clusterRef and job)")
    return true, errs
  end
  local ref = spec.clusterRef
  if type(ref) ~= "table" or type(ref.name) ~= "string" or ref.name == "" then
    bad("spec.clusterRef.name", "is required: the session cluster (a FlinkCluster in the same namespace)")
  end
  if type(spec.job) ~= "table" then
    bad("spec.job", "is required")
    return true, errs
  end
  if type(spec.job.jarFile) ~= "string" or not spec.job.jarFile:match("^https?://") then
    bad("spec.job.jarFile", "must be an http(s):// URL: a FlinkJob is submitted through the JobManager's REST API "
      .. "(the controller downloads the jar and uploads it)")
  end
  if spec.job.upgradeMode == "last-state" then
    bad("spec.job.upgradeMode", "last-state is for job clusters (Flink's HA restarts the cluster): use savepoint "
      .. "or stateless")
  end
  local old_ref = type(old) == "table" and type(old.spec) == "table" and old.spec.clusterRef or nil
  if type(old_ref) == "table" and type(ref) == "table" and old_ref.name ~= ref.name then
    bad("spec.clusterRef.name", "cannot change (delete the FlinkJob and create another)")
  end
  local raw = flinkjob.as_cluster(fj, session or stub_session(fj))
  local ok, defaulted = contract.call(host, "defaults", "apply", raw)
  if not ok then return false, defaulted end
  local old_cluster
  if type(old) == "table" and type(old.spec) == "table" and type(old.spec.job) == "table" then
    ok, old_cluster = contract.call(host, "defaults", "apply", flinkjob.as_cluster(old, session or stub_session(old)))
    if not ok then return false, old_cluster end
    old_cluster.status = policy_status(type(old.status) == "table" and old.status or {})
  end
  local v
  ok, v = contract.call(host, "validate", "check", { cluster = defaulted, raw = raw, old = old_cluster })
  if not ok then return false, v end
  for _, e in ipairs(v.errors or {}) do
    if type(e.path) == "string" and e.path:sub(1, 8) == "spec.job" then errs[#errs + 1] = e end
  end
  return true, errs, defaulted
end

--- flinkjob.replaced_alive(prev, j, sp, view, jd) -> intents: a session cluster keeps a job the
-- update replaces (a job cluster's JobManager goes with it): while Flink still lists the job of
-- the previous record `prev` (status.job) as not ended after its update's stop-with-savepoint
-- succeeded (savepoint `sp`), or after job.decide moved on from its id, it is cancelled and the
-- resubmission waits: `j` (job.decide's record) keeps the old id, submission and state
-- Updating, and jd's submission intents are dropped. Returns the cancel and list intents ({}
-- when the old job is gone or was never replaced).
function flinkjob.replaced_alive(prev, j, sp, view, jd)
  if type(prev) ~= "table" or type(prev.id) ~= "string" then return {} end
  local stopped = type(sp) == "table" and sp.stop and sp.jobID == prev.id and sp.state == "Succeeded"
  if j.id == prev.id and not (stopped and j.state == "Updating") then return {} end
  local listed
  for _, x in ipairs(view.jobs or {}) do
    if (x.jid or x.id) == prev.id then listed = x end
  end
  local state = listed and (listed.state or listed.status) or ""
  if not listed or ENDED[state] then return {} end
  if j.id ~= prev.id then
    j.id, j.submission, j.state, j.missingSince = prev.id, util.deepcopy(prev.submission), "Updating", nil
    j.fromSavepoint = prev.fromSavepoint
    local keep = {}
    for _, i in ipairs(jd.intents or {}) do
      if i.kind ~= "upload_jar" and i.kind ~= "run_jar" and i.kind ~= "list_jobs" then keep[#keep + 1] = i end
    end
    jd.intents = keep
    jd.update_done = nil
  end
  local out = {}
  if state ~= "CANCELLING" then out[1] = { kind = "cancel", job_id = prev.id } end
  local listing = false
  for _, i in ipairs(jd.intents or {}) do listing = listing or i.kind == "list_jobs" end
  if not listing then out[#out + 1] = { kind = "list_jobs" } end
  return out
end


-- The pass of a deleted FlinkJob holding our finalizer: cancel its job, then let it go.
local function deleting(fj, session, view, now, result)
  local md = fj.metadata
  local st = fj.status or {}
  local j = st.job or {}
  local function release(why, warn)
    result.actions[#result.actions + 1] = { op = "patch_finalizers",
      finalizers = without(md.finalizers, flinkjob.FINALIZER), resourceVersion = md.resourceVersion }
    if warn then
      result.events[#result.events + 1] = { type = "Warning", reason = "JobNotCancelled", message = why }
    end
    return result
  end
  if not session or type(j.id) ~= "string" then return release() end
  local since = clock.parse(md.deletionTimestamp) or now
  -- the JobManager the job was submitted to (recorded by the passes that ran it)
  local target = util.merge(st.jobManager or {}, { namespace = md.namespace })
  if type(target.service) ~= "string" then return release() end
  local listed, fresh = nil, view.reachable and (tonumber(view.jobs_time) or 0) >= since
  for _, x in ipairs(view.jobs or {}) do
    if (x.jid or x.id) == j.id then listed = x end
  end
  if fresh and (not listed or ENDED[listed.state or listed.status or ""]) then
    result.events[#result.events + 1] = { type = "Normal", reason = "JobCancelled",
      message = "job " .. j.id .. (listed and (" " .. tostring(listed.state or listed.status)) or " not listed")
        .. " in Flink: FlinkJob released" }
    return release()
  end
  if now - since >= flinkjob.DELETE_GIVE_UP_SECONDS then
    return release("job " .. j.id .. " not confirmed ended by the JobManager of " .. session.metadata.name
      .. " after " .. flinkjob.DELETE_GIVE_UP_SECONDS .. " s: FlinkJob released, the job may still run", true)
  end
  if fresh and listed and (listed.state or listed.status) ~= "CANCELLING" then
    result.actions[#result.actions + 1] = fcflink.action({ kind = "cancel", job_id = j.id }, target)
  end
  result.actions[#result.actions + 1] = fcflink.action({ kind = "list_jobs" }, target)
  result.requeue_after = flinkjob.DELETE_POLL_SECONDS
  return result
end

-- A status without a job decision (no session cluster, an invalid spec): Ready=False, `reason`.
local function waiting(fj, state, reason, message, now, result, requeue)
  local old = fj.status or {}
  local new = util.deepcopy(old)
  new.state = state
  new.observedGeneration = (fj.metadata or {}).generation
  new.conditions = {}
  set_condition(new, { type = "Ready", status = "False", reason = reason, message = message }, now,
    new.observedGeneration, old.conditions)
  for _, c in ipairs(old.conditions or {}) do
    if c.type ~= "Ready" then new.conditions[#new.conditions + 1] = c end
  end
  if not util.equal(new, old) then
    result.status = new
    local was = nil
    for _, c in ipairs(old.conditions or {}) do
      if c.type == "Ready" then was = c end
    end
    if not (was and was.reason == reason and was.message == message) then
      result.events[#result.events + 1] = { type = "Warning", reason = reason, message = message }
    end
  end
  result.requeue_after = requeue
  return result
end

local function pass(host, snapshot)
  local fj = snapshot.cluster
  local md = fj.metadata or {}
  local gen = md.generation
  local now = snapshot.now or os.time()
  local old_status = fj.status or {}
  local result = { actions = {}, events = {} }
  local view = fcflink.view(snapshot.flink)
  local session = snapshot.session
  if md.deletionTimestamp then
    if not has(md.finalizers, flinkjob.FINALIZER) then return result end
    return deleting(fj, session, flinkjob.own_view(view, (old_status.job or {})), now, result)
  end
  if not has(md.finalizers, flinkjob.FINALIZER) then
    -- first the finalizer (the next pass, after the watch brings it, goes on)
    local fins = util.deepcopy(md.finalizers or {})
    fins[#fins + 1] = flinkjob.FINALIZER
    result.actions[1] = { op = "patch_finalizers", finalizers = fins, resourceVersion = md.resourceVersion }
    return result
  end
  local cname = tostring(((fj.spec or {}).clusterRef or {}).name)
  if type(session) ~= "table" then
    return waiting(fj, old_status.state or "Pending", "ClusterNotFound", "FlinkCluster " .. cname
      .. " not found in namespace " .. tostring(md.namespace), now, result, flinkjob.WAIT_SECONDS)
  end
  if type((session.spec or {}).job) == "table" then
    return waiting(fj, old_status.state or "Pending", "NotASessionCluster", "FlinkCluster " .. cname
      .. " is a job cluster (spec.job set): a FlinkJob runs on a session cluster", now, result, flinkjob.WAIT_SECONDS)
  end

  -- the job policies' cluster: defaults and validation of spec.job as in a job cluster
  local vok, errors, defaulted = flinkjob.validate(host, fj, session)
  if not vok then error(setmetatable({ failure = errors }, Failure), 0) end
  if #errors > 0 then
    local errs = {}
    for _, e in ipairs(errors) do errs[#errs + 1] = tostring(e.path) .. ": " .. tostring(e.message) end
    return waiting(fj, old_status.state or "Pending", "InvalidSpec", table.concat(errs, "; "), now, result, nil)
  end
  defaulted.status = policy_status(old_status)
  local components = (session.status or {}).components or {}

  -- an update: spec.job (defaulted) no longer the one the job was submitted with
  local next_rev = revision.hash({ job = defaulted.spec.job })
  local current = old_status.currentRevision or next_rev
  local update = { pending = current ~= next_rev, current = current, next = next_rev,
    from_savepoint_changed = false, old_job = nil }
  if update.pending and old_status.submittedFromSavepoint ~= defaulted.spec.job.fromSavepoint
      and defaulted.spec.job.fromSavepoint then
    update.from_savepoint_changed = true
  end

  local own = flinkjob.own_view(view, old_status.job)
  local obs = call(host, "job", "observe", { cluster = defaulted, children = {}, flink = own, now = now })
  -- health (policies/health.lua), as a job cluster's (fc.health.pass): samples in status.job.health;
  -- the session cluster's flinkProperties say whether checkpointing is on
  local hv, bad = fchealth.pass(function(ctx) return call(host, "health", "decide", ctx) end, { job = obs.job,
    flink_state = obs.flink_state, start_time = obs.start_time, flink = own, spec = defaulted.spec, now = now })
  if not hv then
    error(setmetatable({ failure = contract.failure("badresult", "health", "decide", "health.lua: decide: " .. bad) },
      Failure), 0)
  end
  -- the trigger protocol (fc.savepoints) around savepoint.decide (when to take one)
  local sd = savepoints.pass(function(i) return call(host, "savepoint", "decide", i) end, { cluster = defaulted,
    job = obs.job, start_time = obs.start_time or 0, flink = own, components = components, update = update, now = now })
  local jd = call(host, "job", "decide", { cluster = defaulted, job = sd.job, flink_state = obs.flink_state or "",
    flink = own, savepoint = sd.savepoint or {}, outcome = sd.outcome or {}, children = {},
    components = components, update = update, health = hv.health, now = now })
  local j = jd.job
  j.name = nil -- the submitter Job's name (job.observe's): a FlinkJob has none
  local extra = flinkjob.replaced_alive(old_status.job, j, sd.savepoint, view, jd)
  if #extra > 0 then result.requeue_after = 2 end
  -- a new submission's id: our own (own_job_id), set before any request names it
  local sub = j.submission
  local old_sub = (old_status.job or {}).submission
  if type(sub) == "table" and type(sub.jobID) == "string" and sub.state == "Checking"
      and not (type(old_sub) == "table" and old_sub.jobID == sub.jobID) then
    sub.jobID = flinkjob.own_job_id(sub.jobID, md.uid)
  end
  for _, from in ipairs({ sd.events or {}, jd.events or {} }) do
    for _, e in ipairs(from) do
      result.events[#result.events + 1] = { type = e.type, reason = e.reason, message = e.message }
    end
  end
  local target = { scheme = obs.jobmanager.scheme or "http", namespace = tostring(md.namespace),
    service = obs.jobmanager.service, port = math.tointeger(tonumber(obs.jobmanager.port)) or obs.jobmanager.port }
  -- the jar of the submission, deleted from the session cluster once Flink ran it (fc.restsubmit)
  local jars = restsubmit.jar_deletions(j, view)
  for _, list in ipairs({ obs.intents or {}, sd.intents or {}, jd.intents or {}, hv.intents, extra, jars }) do
    for _, intent in ipairs(list) do
      result.actions[#result.actions + 1] = fcflink.action(intent, target)
    end
  end
  if type(jd.remove_annotation) == "string" then
    result.actions[#result.actions + 1] = { op = "patch_annotations", remove = { jd.remove_annotation } }
  end

  -- status
  local new_current = current
  if jd.update_done or not update.pending then new_current = next_rev end
  local new = util.deepcopy(old_status)
  new.state = j.state
  new.jobID = j.id
  new.job = j
  new.savepoint = sd.savepoint
  new.control = jd.control
  new.currentRevision = (j.id or j.submission or jd.update_done) and new_current or old_status.currentRevision
  new.nextRevision = new_current ~= next_rev and next_rev or nil
  new.submittedFromSavepoint = j.fromSavepoint
  new.jobManager = { scheme = target.scheme, service = target.service, port = target.port }
  new.observedGeneration = gen
  new.conditions = {}
  local ready = j.state == "Running"
  set_condition(new, { type = "Ready", status = ready and "True" or "False", reason = ready and "JobRunning"
    or ("Job" .. tostring(j.state)), message = "job " .. tostring(j.id or "(not submitted)") .. " "
    .. tostring(j.state) .. " on FlinkCluster " .. cname
    .. (j.failureReason and (": " .. tostring(j.failureReason)) or "") }, now, gen, old_status.conditions)
  set_condition(new, { type = "PolicyError", status = "False", reason = "PoliciesSucceeded",
    message = "policies ran without error" }, now, gen, old_status.conditions)
  new.lastUpdateTime = old_status.lastUpdateTime
  if not util.equal(new, old_status) then
    new.lastUpdateTime = clock.format(now)
    result.status = new
    if old_status.state ~= new.state then
      result.events[#result.events + 1] = { type = new.state == "Failed" and "Warning" or "Normal",
        reason = "Job" .. tostring(new.state), message = "job " .. tostring(j.id or "(not submitted)") .. ": "
          .. tostring(old_status.state or "(new)") .. " -> " .. tostring(new.state) }
    end
  end
  require("fc.reconcile").requeue_earliest(result, { sd.requeue_after, jd.requeue_after })
  local unencodable = codec.unencodable(result)
  if unencodable then error(setmetatable({ failure = { kind = "badresult",
    message = "policy output cannot be sent to the API server: " .. unencodable } }, Failure), 0) end
  return result
end

--- flinkjob.run(snapshot) -> result (fc.reconcile.run's shape; actions also
-- {op="patch_finalizers", finalizers={...}, resourceVersion=}). A policy failure fails this
-- FlinkJob only: PolicyError=True with the failure's message and a Warning event.
function flinkjob.run(snapshot)
  local host = require("fc.host")
  local ok, res = pcall(pass, host, snapshot)
  if ok then return res end
  if getmetatable(res) ~= Failure then error(res, 0) end
  local fj = snapshot.cluster
  local now = snapshot.now or os.time()
  local f = res.failure or {}
  local message = tostring(f.message or "policy failed")
  local old = fj.status or {}
  local new = util.deepcopy(old)
  local gen = (fj.metadata or {}).generation
  new.conditions = {}
  for _, c in ipairs(old.conditions or {}) do
    if c.type ~= "PolicyError" then new.conditions[#new.conditions + 1] = c end
  end
  set_condition(new, { type = "PolicyError", status = "True", reason = "PolicyFailed", message = message }, now, gen,
    old.conditions)
  local result = { actions = {}, events = {}, requeue_after = 60,
    failure = { kind = f.kind or "error", policy = f.policy, hook = f.hook, message = message } }
  if not util.equal(new, old) then
    result.status = new
    result.events[1] = { type = "Warning", reason = "PolicyError", message = message }
  end
  return result
end

return flinkjob
