--- fc.reconcile: the framework entry the C core calls for each FlinkCluster key.
--
-- reconcile.run(snapshot) -> result. Pure decisions, no I/O: the core builds the snapshot from
-- its caches and the last Flink REST answers, and executes the result's actions. Policies run
-- through fc.host (sandboxed in the binary, the pure-Lua fallback under busted). The contract
-- (shapes of snapshot, result and actions) is docs/contracts.md, section "Reconcile".
local util = require("fc.util")
local diff = require("fc.diff")
local revision = require("fc.revision")
local shape = require("fc.shape")
local taskmanagers = require("fc.taskmanagers")

local reconcile = {}

--- Child kinds the framework deletes when they are no longer desired (Pods belong to their
-- StatefulSet or Job; ControllerRevisions are pruned by revisionHistoryLimit instead).
reconcile.DELETABLE = { "Ingress", "Service", "StatefulSet", "ConfigMap", "Job" }
--- Kinds applied only when absent: a Job's pod template and a ControllerRevision's data are
-- immutable in Kubernetes (batch/v1 JobSpec.template, apps/v1 ControllerRevision.data).
reconcile.CREATE_ONLY = { Job = true, ControllerRevision = true }
--- Kinds whose pod template runs the Flink processes. When an update (a new revision) changes
-- their template and spec.recreateOnUpdate is true (the API's default) they are deleted and
-- created again: all pods replaced at once, not rolled. A template change outside an update (a
-- policy edit, a new controller version) waits while a job cluster's job runs (see run()).
reconcile.POD_KINDS = { StatefulSet = true }
--- Seconds before retrying a cluster whose policies failed.
reconcile.POLICY_ERROR_REQUEUE = 60
--- The user-control annotation (removed by a patch_annotations action when done).
reconcile.CONTROL_ANNOTATION = "flinkclusters.flinkoperator.k8s.io/user-control"

local function rfc3339(t)
  return os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(t))
end

-- A policy failure: raised inside run() and turned into a result by it.
local PolicyFailure = {}
PolicyFailure.__index = PolicyFailure

local function fail(message)
  error(setmetatable({ message = message }, PolicyFailure), 0)
end

local function call(host, policy, hook, input)
  local ok, res = host.call(policy, hook, input)
  if not ok then fail(tostring(res)) end
  return res
end

-- Output shape checks: a wrong shape is a policy error of that hook.
local function expect(cond, policy, hook, what)
  if not cond then fail(policy .. ".lua: " .. hook .. ": " .. what) end
end

local function is_table(v) return type(v) == "table" end

--- reconcile.set_condition(status, cond, now, generation [, previous]) -> status (changed in place)
-- Sets `cond` ({type, status, reason, message}) in status.conditions (metav1.Condition shape):
-- lastTransitionTime is kept from the previous condition of the same type (looked up in the list
-- `previous`, default status.conditions) when its status did not change, else `now` (unix
-- seconds, written RFC 3339); observedGeneration = `generation`.
function reconcile.set_condition(status, cond, now, generation, previous)
  status.conditions = status.conditions or {}
  local prev
  for _, c in ipairs(previous or status.conditions) do
    if c.type == cond.type then prev = c end
  end
  local c = { type = cond.type, status = cond.status, reason = cond.reason, message = cond.message,
    observedGeneration = generation }
  if prev and prev.status == cond.status and prev.lastTransitionTime then
    c.lastTransitionTime = prev.lastTransitionTime
  else
    c.lastTransitionTime = rfc3339(now)
  end
  for i, old in ipairs(status.conditions) do
    if old.type == cond.type then
      status.conditions[i] = c
      return status
    end
  end
  status.conditions[#status.conditions + 1] = c
  return status
end

local function find_condition(status, ctype)
  for _, c in ipairs((status or {}).conditions or {}) do
    if c.type == ctype then return c end
  end
  return nil
end

-- `spec` (a copy of a revision's spec, which has no control fields) with the control fields of
-- `from` (today's spec) copied in; returns `spec`.
local function with_control_fields(spec, from)
  for _, path in ipairs(revision.CONTROL_FIELDS) do
    local src, dst = from, spec
    for i = 1, #path - 1 do
      src = is_table(src) and src[path[i]] or nil
      dst = is_table(dst) and dst[path[i]] or nil
    end
    if is_table(src) and is_table(dst) then dst[path[#path]] = src[path[#path]] end
  end
  return spec
end

-- The previous defaulted FlinkCluster for validate's update rules: {} before the first
-- revision (a create); else the spec of the current ControllerRevision with today's control
-- fields (control-field transitions are admission's to check), and the status. Shares every
-- table but `spec` with `defaulted`: fc.host.call copies its input, so nothing here is changed.
local function previous(defaulted, children)
  local st = defaulted.status or {}
  if not st.currentRevision then return {} end
  local old = util.merge(defaulted)
  local rev = (children.ControllerRevision or {})[st.currentRevision]
  if rev and is_table(rev.data) then
    old.spec = with_control_fields(util.deepcopy(rev.data), defaulted.spec)
  end
  return old
end

-- The snapshot of the last valid spec, for a pass that supervises a cluster whose spec is
-- invalid or whose policies fail on it (issue "Converge for real", item 5): the observed cluster
-- with the current ControllerRevision's spec (the defaulted spec of the last revision that
-- validated and rendered) and today's control fields, the rest of the snapshot unchanged.
-- nil before the first revision, or when that ControllerRevision is not in the cache.
local function last_valid_snapshot(snapshot)
  local cluster = snapshot.cluster
  local cur = (cluster.status or {}).currentRevision
  local rev = cur and ((snapshot.children or {}).ControllerRevision or {})[cur]
  if not (rev and is_table(rev.data)) then return nil end
  local held = util.merge(cluster)
  held.spec = with_control_fields(util.deepcopy(rev.data), cluster.spec)
  return util.merge(snapshot, { cluster = held })
end

-- Result of a pass that acts on nothing (a failed policy, an invalid spec): `condition` set on a
-- copy of the status (the rest stays), a Warning event `event_reason` with the condition's
-- message unless `already(prev, generation)` says the previous condition of that type recorded
-- it, and the status only when it changed.
local function no_action_result(cluster, condition, event_reason, already, now)
  local old = cluster.status or {}
  local gen = (cluster.metadata or {}).generation
  local st = util.deepcopy(old)
  local prev = find_condition(old, condition.type)
  reconcile.set_condition(st, condition, now, gen)
  local result = { actions = {}, events = {} }
  if not (prev and already(prev, gen)) then
    result.events[1] = { type = "Warning", reason = event_reason, message = condition.message }
  end
  if not util.equal(st, old) then
    st.lastUpdateTime = rfc3339(now)
    result.status = st
  end
  return result
end

-- Result when the cluster's policies failed: no apply/delete/Flink actions, PolicyError=True,
-- the event once per message.
local function policy_failure_result(cluster, message, now)
  local result = no_action_result(cluster,
    { type = "PolicyError", status = "True", reason = "PolicyFailed", message = message }, "PolicyError",
    function(prev) return prev.status == "True" and prev.message == message end, now)
  result.requeue_after = reconcile.POLICY_ERROR_REQUEUE
  return result
end

-- "invalid spec: <path>: <message>; ..." for validate's errors.
local function invalid_message(errors)
  local parts = {}
  for _, e in ipairs(errors) do
    parts[#parts + 1] = (e.path ~= "" and e.path or "<root>") .. ": " .. tostring(e.message)
  end
  return "invalid spec: " .. table.concat(parts, "; ")
end

-- Whether the previous condition `prev` already recorded an invalid spec `message` at `gen`.
local function invalid_recorded(prev, gen, message)
  return prev.reason == "InvalidSpec" and prev.message == message and prev.observedGeneration == gen
end

-- Result for a spec that fails validation when no last valid spec can supervise the cluster (no
-- revision yet): no actions, a Warning event and Ready=False with reason InvalidSpec naming the
-- fields (the event once per generation and message); the state and everything else stay.
local function invalid_result(cluster, message, now)
  return no_action_result(cluster,
    { type = "Ready", status = "False", reason = "InvalidSpec", message = message }, "InvalidSpec",
    function(prev, gen) return invalid_recorded(prev, gen, message) end, now)
end

local function index(objects)
  local by = {}
  for _, o in ipairs(objects) do
    by[o.kind] = by[o.kind] or {}
    by[o.kind][o.metadata.name] = o
  end
  return by
end

-- Events for what changed between the observed status `old` and the new status `new` (cluster
-- state, job state, savepoint, user control, PolicyError resolved), appended to `events`.
local function transition_events(old, new, events)
  if old.state ~= new.state then
    events[#events + 1] = {
      type = new.state == "Reconciling" and "Warning" or "Normal",
      reason = "StateChanged",
      message = old.state and ("cluster state " .. old.state .. " -> " .. new.state)
        or ("cluster state " .. new.state),
    }
  end
  local old_job = (old.components or {}).job or {}
  local new_job = (new.components or {}).job
  if new_job and old_job.state ~= new_job.state then
    local bad = new_job.state == "Failed" or new_job.state == "Lost" or new_job.state == "Suspended"
    events[#events + 1] = {
      type = bad and "Warning" or "Normal",
      reason = "JobStateChanged",
      message = (old_job.state and ("job state " .. old_job.state .. " -> ") or "job state ")
        .. new_job.state .. (new_job.id and (" (job " .. new_job.id .. ")") or "")
        .. (bad and new_job.failureReason and (": " .. tostring(new_job.failureReason)) or ""),
    }
  end
  local old_sp, new_sp = old.savepoint or {}, new.savepoint
  if new_sp and new_sp.state ~= "NotTriggered"
      and (old_sp.state ~= new_sp.state or old_sp.triggerTime ~= new_sp.triggerTime) then
    local bad = new_sp.state == "Failed" or new_sp.state == "TriggerFailed"
    local msg = "savepoint " .. tostring(new_sp.state) .. " (" .. tostring(new_sp.triggerReason) .. ")"
    if new_sp.state == "Succeeded" and new_job and new_job.savepointLocation then
      msg = msg .. ": " .. new_job.savepointLocation
    end
    if bad and new_sp.message then msg = msg .. ": " .. new_sp.message end
    events[#events + 1] = { type = bad and "Warning" or "Normal", reason = "SavepointStateChanged", message = msg }
  end
  local old_ctl, new_ctl = old.control or {}, new.control
  if new_ctl and (old_ctl.name ~= new_ctl.name or old_ctl.state ~= new_ctl.state
      or old_ctl.updateTime ~= new_ctl.updateTime) then
    events[#events + 1] = { type = new_ctl.state == "Failed" and "Warning" or "Normal", reason = "UserControl",
      message = tostring(new_ctl.name) .. " " .. tostring(new_ctl.state)
        .. (new_ctl.message and (": " .. new_ctl.message) or "") }
  end
  local old_pe, new_pe = find_condition(old, "PolicyError"), find_condition(new, "PolicyError")
  if old_pe and old_pe.status == "True" and not (new_pe and new_pe.status == "True") then
    events[#events + 1] = { type = "Normal", reason = "PolicyErrorResolved", message = "policies ran without error" }
  end
end

--- reconcile.flink_action(target, method, path, body) -> {op="flink", method=, path=, body=, target=,
--   result=<"jobs"|"savepoint_trigger"|"savepoint_status"|nil>, job_id=<id or nil>}
-- `target` = reconcile.flink_target(...): the JobManager's REST Service; the core reaches it by
-- its cluster DNS name or through the API server's service proxy (`run --flink-access`).
-- `result` tells the core where the answer goes in the next snapshot's `flink` (see
-- docs/contracts.md, "Reconcile"): GET /jobs/overview -> flink.jobs; POST
-- /jobs/<id>/savepoints, POST /jobs/<id>/stop (stop-with-savepoint: the same {"request-id"}
-- answer, polled at the same URL) and GET /jobs/<id>/savepoints/<rid> ->
-- flink.savepoint_triggers[<id>]; GET /jobs/<id>/exceptions[?...] -> flink.exceptions[<id>];
-- GET /taskmanagers -> flink.taskmanagers = {ids, time} (Native TaskManagers, fc.taskmanagers).
function reconcile.flink_action(target, method, path, body)
  local a = { op = "flink", method = method, path = path, body = body, target = target }
  if method == "GET" and path == "/jobs/overview" then
    a.result = "jobs"
  elseif method == "POST" and (path:match("^/jobs/%x+/savepoints$") or path:match("^/jobs/%x+/stop$")) then
    a.result, a.job_id = "savepoint_trigger", path:match("^/jobs/(%x+)/")
  elseif method == "GET" and path:match("^/jobs/%x+/savepoints/[%w-]+$") then
    a.result, a.job_id = "savepoint_status", path:match("^/jobs/(%x+)/")
  elseif method == "GET" and (path:match("^/jobs/%x+/exceptions$") or path:match("^/jobs/%x+/exceptions%?")) then
    a.result, a.job_id = "exceptions", path:match("^/jobs/(%x+)/")
  elseif method == "GET" and path == "/taskmanagers" then
    a.result = "taskmanagers"
  end
  return a
end

--- reconcile.flink_target(namespace, name, ui_port) -> {scheme="http", namespace=, service=
--   "<name>-jobmanager", port=<integer>}: the JobManager Service's REST (`ui`) port of a cluster.
function reconcile.flink_target(namespace, name, ui_port)
  return { scheme = "http", namespace = namespace, service = name .. "-jobmanager",
    port = math.tointeger(tonumber(ui_port)) or 8081 }
end

-- One pass. `hold` is nil for a pass of the cluster's own spec; for a pass that supervises the
-- cluster with its last valid spec (last_valid_snapshot) while changes are held, it is
-- {why="invalid"|"policy", message=<validate's errors or the policy failure>, revision=<name>}:
-- no update can start (the revision stays the current one), status.observedGeneration stays the
-- last one acted on, and the condition (Ready=False InvalidSpec, or PolicyError=True) with its
-- Warning event says why the new spec is held.
-- The status and events of a supervising pass (see run's `hold`), applied to its new status
-- `new`: observedGeneration stays, the condition says why changes are held, its Warning event
-- once per message (and generation, for an invalid spec), first in the list; a policy failure is
-- retried after reconcile.POLICY_ERROR_REQUEUE at the latest.
local function held_status(hold, new, old_status, gen, now, result)
  new.observedGeneration = old_status.observedGeneration
  local message = hold.message .. "; changes held: the last valid spec (revision " .. hold.revision
    .. ") keeps running"
  local cond, reason, recorded
  if hold.why == "invalid" then
    cond, reason = { type = "Ready", status = "False", reason = "InvalidSpec", message = message }, "InvalidSpec"
    recorded = function(prev) return invalid_recorded(prev, gen, message) end
  else
    cond, reason = { type = "PolicyError", status = "True", reason = "PolicyFailed", message = message }, "PolicyError"
    recorded = function(prev) return prev.status == "True" and prev.message == message end
    if result.requeue_after == nil or result.requeue_after > reconcile.POLICY_ERROR_REQUEUE then
      result.requeue_after = reconcile.POLICY_ERROR_REQUEUE
    end
  end
  reconcile.set_condition(new, cond, now, gen, old_status.conditions)
  local prev = find_condition(old_status, cond.type)
  if not (prev and recorded(prev)) then
    table.insert(result.events, 1, { type = "Warning", reason = reason, message = message })
  end
end

-- Native TaskManagers, the last step of a pass (nothing after it can fail, so the accounting
-- never counts a pod whose create is dropped): pods to create (the cluster policy's
-- taskmanager_pod, asked only when pods are missing) and delete, their events, the
-- TaskManagersStopped condition (True once maxFailedAttempts pods failed: no more are started,
-- with a Warning event when it becomes True) and the requeue while pods wait for registration
-- or a start cool-down.
local function native_actions(host, native, cluster, cleanup, now, result, new, old_status, gen)
  local demand = taskmanagers.demand(cluster, cleanup)
  local p = native.profile
  local template
  if native.summary.pods * p.slots < demand then
    local res = call(host, "cluster", "taskmanager_pod", { cluster = cluster, slots = p.slots, resource = p.profile })
    expect(is_table(res) and is_table(res.object) and res.object.kind == "Pod" and is_table(res.object.metadata),
      "cluster", "taskmanager_pod", "must return {object=<Pod>}")
    template = res.object
  end
  local out = taskmanagers.decide(native, demand, template, now)
  -- deletes first: they free the quota the creates may need
  for _, n in ipairs(out.delete) do result.actions[#result.actions + 1] = { op = "delete", kind = "Pod", name = n } end
  for _, pod in ipairs(out.create) do result.actions[#result.actions + 1] = { op = "apply", object = pod } end
  for _, e in ipairs(out.events) do result.events[#result.events + 1] = e end
  local s = out.summary
  local cond = out.stopped
    and { type = "TaskManagersStopped", status = "True", reason = "MaxFailedAttempts",
      message = string.format("%d TaskManager pods failed (maxFailedAttempts %d): no more are started",
        s.failedAttempts, s.maxFailedAttempts) }
    or { type = "TaskManagersStopped", status = "False", reason = "BelowMaxFailedAttempts",
      message = string.format("%d of at most %d TaskManager pods failed", s.failedAttempts, s.maxFailedAttempts) }
  local prev = find_condition(old_status, cond.type)
  if out.stopped and not (prev and prev.status == "True") then
    result.events[#result.events + 1] = { type = "Warning", reason = "TaskManagersStopped", message = cond.message }
  end
  reconcile.set_condition(new, cond, now, gen, old_status.conditions)
  if out.requeue_after and (result.requeue_after == nil or out.requeue_after < result.requeue_after) then
    result.requeue_after = out.requeue_after
  end
end

local function run(host, snapshot, hold)
  local cluster = snapshot.cluster
  local md = cluster.metadata or {}
  local name = md.name
  local gen = md.generation
  local now = snapshot.now or os.time()
  local children = snapshot.children or {}
  local flink = snapshot.flink or {}
  local old_status = cluster.status or {}
  local result = { actions = {}, events = {} }
  if md.deletionTimestamp then
    -- being deleted: the garbage collector removes the children (controller ownerReferences)
    taskmanagers.forget(tostring(md.namespace or "default") .. "/" .. tostring(name))
    return result
  end

  -- 1. defaults, validate
  local defaulted = call(host, "defaults", "apply", cluster)
  local bad = shape.defaults(defaulted)
  expect(bad == nil, "defaults", "apply", bad)
  -- fc.host.call copies every input, so the policies below share the observed status safely
  defaulted.status = old_status
  local old = previous(defaulted, children)
  local v = call(host, "validate", "check", { cluster = defaulted, raw = cluster, old = old })
  bad = shape.validate(v)
  expect(bad == nil, "validate", "check", bad)
  if v.errors and #v.errors > 0 then
    local message = invalid_message(v.errors)
    if hold then fail("the last valid spec (revision " .. hold.revision .. ") fails validation: " .. message) end
    -- supervision goes on: the last valid spec keeps polling the job and taking savepoints
    local held = last_valid_snapshot(snapshot)
    if held then
      local ok, res = pcall(run, host, held, { why = "invalid", message = message,
        revision = old_status.currentRevision })
      if ok then return res end
      if getmetatable(res) ~= PolicyFailure then error(res, 0) end
    end
    return invalid_result(cluster, message, now)
  end
  if not hold and gen ~= old_status.observedGeneration then
    for _, w in ipairs(v.warnings or {}) do
      result.events[#result.events + 1] = { type = "Warning", reason = "SpecWarning",
        message = tostring(w.path) .. ": " .. tostring(w.message) }
    end
  end

  -- 2. revision
  local next_rev = hold and hold.revision or revision.name(defaulted)
  local current = old_status.currentRevision or next_rev
  local update = { pending = current ~= next_rev, current = current, next = next_rev,
    from_savepoint_changed = false }
  local new_from = is_table(defaulted.spec.job) and defaulted.spec.job.fromSavepoint or nil
  local old_from = is_table(old.spec) and is_table(old.spec.job) and old.spec.job.fromSavepoint or nil
  if new_from ~= nil and new_from ~= old_from then update.from_savepoint_changed = true end

  -- Native TaskManagers (fc.taskmanagers): what the pods and the JobManager say, before the policies
  local native = taskmanagers.is_native(defaulted)
    and taskmanagers.observe(tostring(md.namespace or "default") .. "/" .. tostring(name), defaulted, children,
      flink, now, taskmanagers.demand(defaulted, "")) or nil
  -- the policies see the TaskManager pods as native.summary, not one by one (1,000 pods would
  -- be copied into every policy call)
  local for_policies = native and taskmanagers.without_pods(children) or children

  -- 3. job and savepoint decisions (job clusters)
  local components = call(host, "status", "components",
    { cluster = defaulted, children = for_policies, desired = {}, cleanup = "",
      taskmanagers = native and native.summary })
  expect(is_table(components), "status", "components", "must return a table")
  local is_job = is_table(defaulted.spec.job)
  local jd, sd, obs = {}, {}, {}
  if is_job then
    obs = call(host, "job", "observe", { cluster = defaulted, children = for_policies, flink = flink, now = now })
    expect(is_table(obs) and is_table(obs.job), "job", "observe", "must return {job=}")
    sd = call(host, "savepoint", "decide", { cluster = defaulted, job = obs.job, start_time = obs.start_time or 0,
      flink = flink, update = update, now = now })
    expect(is_table(sd) and is_table(sd.job) and is_table(sd.outcome or {}), "savepoint", "decide",
      "must return {job=, savepoint=, outcome=}")
    jd = call(host, "job", "decide", { cluster = defaulted, job = sd.job, flink_state = obs.flink_state or "",
      savepoint = sd.savepoint or {}, outcome = sd.outcome or {}, children = for_policies, components = components,
      update = update, now = now })
    expect(is_table(jd) and is_table(jd.job), "job", "decide", "must return {job=, ...}")
    -- the policy's own events (e.g. a restart with its attempt number), before the state events
    expect(jd.events == nil or is_table(jd.events), "job", "decide", "events must be a list")
    for i, e in ipairs(jd.events or {}) do
      expect(is_table(e) and (e.type == "Normal" or e.type == "Warning") and type(e.reason) == "string"
        and type(e.message) == "string", "job", "decide", "events[" .. (i - 1) .. "] needs type, reason, message")
      result.events[#result.events + 1] = { type = e.type, reason = e.reason, message = e.message }
    end
  end

  -- 4. desired objects
  -- the defaulted cluster without status, with the submission's fromSavepoint (shallow copies
  -- of the changed levels only: fc.host.call copies the input anyway)
  local for_desired = util.merge(defaulted)
  for_desired.status = nil
  if is_job and jd.from_savepoint then
    for_desired.spec = util.merge(defaulted.spec)
    for_desired.spec.job = util.merge(defaulted.spec.job, { fromSavepoint = jd.from_savepoint })
  end
  local des = call(host, "cluster", "desired", { cluster = for_desired })
  bad = shape.cluster(des) or (des.objects == nil and "must return {objects={...}}") or nil
  expect(bad == nil, "cluster", "desired", bad)
  local cleanup = jd.cleanup or ""
  local desired = {}
  for _, o in ipairs(des.objects) do
    diff.stamp(o)
    local keep = true
    if o.kind == "Job" then
      local observed = (children.Job or {})[o.metadata.name]
      keep = is_job and ((observed ~= nil and not jd.resubmit) or (observed == nil and jd.submit == true))
    elseif cleanup == "DeleteCluster" then
      keep = o.kind == "ControllerRevision"
    elseif cleanup == "DeleteTaskManager" then
      keep = not (o.kind == "StatefulSet" and o.metadata.name == name .. "-taskmanager")
    end
    if keep then desired[#desired + 1] = o end
  end
  local revisions = children.ControllerRevision or {}
  local has_rev = false
  for _, o in ipairs(desired) do
    if o.kind == "ControllerRevision" and o.metadata.name == next_rev then has_rev = true end
  end
  if not has_rev then
    local obj = revisions[next_rev] or revision.object(defaulted, revision.next_number(revisions))
    desired[#desired + 1] = obj
  end

  -- 5. diff: apply what differs from the last applied intent or drifted (in order), delete what
  -- is no longer desired; during an update with recreateOnUpdate, a StatefulSet whose pods change
  -- is deleted and created again by the next pass instead of rolled pod by pod; outside an update
  -- a new pod template waits while the job runs (new pods would kill it without a savepoint)
  local by_kind = index(desired)
  local recreate = update.pending and defaulted.spec.recreateOnUpdate ~= false
  local job_runs = is_job and not update.pending and jd.job.state == "Running"
  local held = {}
  for _, o in ipairs(desired) do
    local observed = (children[o.kind] or {})[o.metadata.name]
    local changed
    if observed ~= nil and (reconcile.CREATE_ONLY[o.kind] or jd.hold) then
      changed = false
    else
      changed = diff.needs_apply(o, observed)
    end
    local new_pods = changed and reconcile.POD_KINDS[o.kind] and diff.template_changed(o, observed)
    if changed == "intent" and new_pods and job_runs then
      held[#held + 1] = o.kind .. " " .. o.metadata.name
      changed = false
    end
    if changed and (diff.immutable_change(o, observed) or recreate and new_pods) then
      -- cannot be changed in place: deleted below, created again by the next pass
      by_kind[o.kind][o.metadata.name] = nil
    elseif changed then
      result.actions[#result.actions + 1] = { op = "apply", object = o }
    end
  end
  if #held > 0 then
    result.events[#result.events + 1] = { type = "Warning", reason = "TemplateChangeHeld",
      message = "new pod template of " .. table.concat(held, ", ") .. " held while the job runs: "
        .. "it rolls out with the next update of the spec (savepoint, cancel, resubmit)" }
  end
  for _, kind in ipairs(reconcile.DELETABLE) do
    for _, n in ipairs(util.sorted_keys(children[kind] or {})) do
      if not (by_kind[kind] or {})[n] then
        result.actions[#result.actions + 1] = { op = "delete", kind = kind, name = n }
      end
    end
  end

  local keep = { [next_rev] = true, [current] = true }
  local limit = tonumber(defaulted.spec.revisionHistoryLimit) or 10
  for _, n in ipairs(revision.prune(revisions, math.max(limit, 1), keep)) do
    result.actions[#result.actions + 1] = { op = "delete", kind = "ControllerRevision", name = n }
  end

  -- 6. Flink REST calls and the user-control annotation
  local target = reconcile.flink_target(tostring(md.namespace or "default"), name,
    ((defaulted.spec.jobManager or {}).ports or {}).ui)
  local function flink_action(method, path, body)
    result.actions[#result.actions + 1] = reconcile.flink_action(target, method, path, body)
  end
  for _, from in ipairs({ { "job", "observe", obs.flink }, { "savepoint", "decide", sd.flink },
    { "job", "decide", jd.flink } }) do
    expect(from[3] == nil or is_table(from[3]), from[1], from[2], "flink must be a list")
    for i, f in ipairs(from[3] or {}) do
      expect(is_table(f) and type(f.method) == "string" and type(f.path) == "string"
        and (f.body == nil or is_table(f.body)), from[1], from[2],
        "flink[" .. (i - 1) .. "] needs method and path strings")
      flink_action(f.method, f.path, f.body)
    end
  end
  local js = is_job and jd.job.state or nil
  if is_job and components.jobManagerService and components.jobManagerService.state == "Ready"
      and (js == "Running" or js == "Pending" or js == "Updating" or js == "Lost" or js == "Suspended")
      and cleanup == "" then
    flink_action("GET", "/jobs/overview")
  end
  if native and components.jobManagerService and components.jobManagerService.state == "Ready"
      and native.summary.pods > 0 then
    flink_action("GET", "/taskmanagers")
  end
  if jd.remove_annotation then
    result.actions[#result.actions + 1] = { op = "patch_annotations", remove = { reconcile.CONTROL_ANNOTATION } }
  end

  -- 7. status
  local new_current = current
  if not is_job or jd.update_done then new_current = next_rev end
  local final_components = call(host, "status", "components",
    { cluster = defaulted, children = for_policies, desired = by_kind, cleanup = cleanup,
      taskmanagers = native and native.summary })
  expect(is_table(final_components), "status", "components", "must return a table")
  local st = call(host, "status", "compute", {
    cluster = defaulted, components = final_components, job = is_job and jd.job or nil,
    savepoint = is_job and sd.savepoint or old_status.savepoint,
    control = jd.control or old_status.control, cleanup = cleanup,
    updating = new_current ~= next_rev, revision = { current = new_current, next = next_rev }, now = now,
  })
  expect(is_table(st) and type(st.state) == "string" and (st.conditions == nil or is_table(st.conditions)),
    "status", "compute", "must return a status with a state")
  for i, c in ipairs(st.conditions or {}) do
    expect(is_table(c) and type(c.type) == "string" and (c.status == "True" or c.status == "False"
      or c.status == "Unknown"), "status", "compute", "conditions[" .. (i - 1) .. "] needs a type and a status")
  end
  -- `st` is fc.host.call's private copy of the policy's result: stamped in place
  local new, conds = st, st.conditions or {}
  new.conditions = {}
  for _, c in ipairs(conds) do reconcile.set_condition(new, c, now, gen, old_status.conditions) end
  reconcile.set_condition(new, { type = "PolicyError", status = "False", reason = "PoliciesSucceeded",
    message = "policies ran without error" }, now, gen, old_status.conditions)
  new.observedGeneration = gen
  if native then native_actions(host, native, for_desired, cleanup, now, result, new, old_status, gen) end
  if hold then held_status(hold, new, old_status, gen, now, result) end
  new.collisionCount = old_status.collisionCount
  new.lastUpdateTime = old_status.lastUpdateTime
  if not util.equal(new, old_status) then
    new.lastUpdateTime = rfc3339(now)
    result.status = new
    transition_events(old_status, new, result.events)
  end

  -- 8. requeue: the earliest time a policy asked for
  for _, r in pairs({ sd.requeue_after, jd.requeue_after }) do
    if type(r) == "number" and r > 0 and (result.requeue_after == nil or r < result.requeue_after) then
      result.requeue_after = r
    end
  end
  return result
end

--- reconcile.run(snapshot) -> result
-- snapshot: {cluster=<FlinkCluster as observed, metadata.generation, status (or none)>,
--   children={<kind>={<name>=obj}}, flink={reachable=bool, jobs={...}, savepoint_triggers={...}},
--   now=<unix seconds>}.
-- result: {actions={{op="apply", object=}|{op="delete", kind=, name=}|{op="flink", method=, path=, body=, target=}
--   |{op="patch_annotations", remove={key,...}}}, status=<new status or nil when unchanged>,
--   events={{type="Normal"|"Warning", reason=, message=}}, requeue_after=<seconds or nil>}.
-- A policy failure (fc.host.call returning false, or an output of the wrong shape) fails this
-- cluster only: no actions, a Warning event naming the policy file and line, PolicyError=True.
-- Errors: raises only on a snapshot without a cluster table (a bug in the caller).
function reconcile.run(snapshot)
  if type(snapshot) ~= "table" or type(snapshot.cluster) ~= "table" then
    error("reconcile.run: snapshot.cluster must be a table", 2)
  end
  local host = require("fc.host")
  local ok, res = pcall(run, host, snapshot)
  if ok then return res end
  if getmetatable(res) ~= PolicyFailure then error(res, 0) end
  -- the policies failed on this spec: the last valid spec keeps supervising the cluster (a
  -- policy broken for every spec fails that pass too)
  local held = last_valid_snapshot(snapshot)
  if held then
    local ok2, res2 = pcall(run, host, held, { why = "policy", message = res.message,
      revision = held.cluster.status.currentRevision })
    if ok2 then return res2 end
    if getmetatable(res2) ~= PolicyFailure then error(res2, 0) end
  end
  return policy_failure_result(snapshot.cluster, res.message, snapshot.now or os.time())
end

return reconcile
