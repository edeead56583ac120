-- SPDX-License-Identifier: Apache-2.0
--- fc.reconcile: the framework entry the C core calls for each FlinkCluster key.
--
-- reconcile.run(snapshot) -> result. Pure decisions, no I/O: the core builds the snapshot from
-- its caches and the last Flink REST answers, and executes the result's actions. Policies run
-- through fc.host (the sandbox of core/lhost.c, in the binary and under busted). The contract
-- (shapes of snapshot, result and actions) is docs/contracts.md, section "Reconcile".
local util = require("fc.util")
local clock = require("fc.clock")
local diff = require("fc.diff")
local revision = require("fc.revision")
local shape = require("fc.shape")
local contract = require("fc.contract")
local taskmanagers = require("fc.taskmanagers")
local fcflink = require("fc.flink")
local fchealth = require("fc.health")
local kinds = require("fc.kinds")
local codec = require("fc.codec")
local haclean = require("fc.haclean")
local savepoints = require("fc.savepoints")
local restsubmit = require("fc.restsubmit")

local reconcile = {}

--- Child kinds the framework deletes when they are no longer desired, in that order (fc.kinds:
-- Pods belong to their StatefulSet or Job; ControllerRevisions are pruned by
-- revisionHistoryLimit instead).
reconcile.DELETABLE = kinds.names("delete")
--- Kinds applied only when absent: a Job's pod template and a ControllerRevision's data are
-- immutable in Kubernetes (batch/v1 JobSpec.template, apps/v1 ControllerRevision.data).
reconcile.CREATE_ONLY = kinds.set("create_only")
--- Kinds whose pod template runs the Flink processes (fc.kinds). When an update (a new revision)
-- changes their template and spec.recreateOnUpdate is true (the API's default) they are deleted
-- and created again: all pods replaced at once, not rolled. A template change outside an update
-- (a policy edit, a new controller version) waits while a job cluster's job runs (see run()).
reconcile.POD_KINDS = kinds.set("pods")
--- Seconds before retrying a cluster whose policies failed.
reconcile.POLICY_ERROR_REQUEUE = 60
--- Seconds before the pass that reads the dry-run answers of an update (the answers come back
-- within a pass's writes; this bounds the wait), and before asking again after an answer that
-- says nothing about the object (HTTP 0, 409, 429, 5xx).
reconcile.DRY_RUN_REQUEUE = 1
reconcile.DRY_RUN_RETRY = 10

--- reconcile.requeue_earliest(result, values): result.requeue_after = the smallest positive number
-- among `values` (a list with holes allowed: the policies' requeue_after, nil when not asked)
-- and result.requeue_after itself.
function reconcile.requeue_earliest(result, values)
  for _, r in pairs(values) do
    if type(r) == "number" and r > 0 and (result.requeue_after == nil or r < result.requeue_after) then
      result.requeue_after = r
    end
  end
end

-- A policy failure: raised inside run() and turned into a result by it.
local PolicyFailure = {}
PolicyFailure.__index = PolicyFailure

-- `failure`: fc.contract's {kind, policy, hook, message}; a string is the framework's own
-- message about a held spec (kind "error").
local function fail(failure)
  if type(failure) == "string" then failure = { kind = "error", message = failure } end
  error(setmetatable(failure, PolicyFailure), 0)
end

-- Every hook goes through fc.contract.call: inputs normalized, results checked, typed failures.
local function call(host, policy, hook, input)
  local ok, res = contract.call(host, policy, hook, input)
  if not ok then fail(res) end
  return res
end

-- Output checks beyond the contract's shapes: a wrong output is a "badresult" of that hook.
local function expect(cond, policy, hook, what)
  if not cond then fail(contract.failure("badresult", policy, hook, policy .. ".lua: " .. hook .. ": " .. what)) end
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
    c.lastTransitionTime = clock.format(now)
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

--- reconcile.stall(status, reason, message, now, generation [, previous]) -> status (in place)
-- Stalled=True with `reason` and `message`, and Reconciling=False reason Stalled: progress needs
-- the user (kstatus, sigs.k8s.io/cli-utils pkg/kstatus README "Conditions": a Stalled=True
-- object is Failed; the two are never True together). For what the framework itself refuses: an
-- invalid spec, an update the API server refused, a policy error, TaskManagersStopped;
-- status.lua decides them for the rest (policies/status.lua, status.compute).
function reconcile.stall(status, reason, message, now, generation, previous)
  reconcile.set_condition(status, { type = "Reconciling", status = "False", reason = "Stalled",
    message = "progress is blocked: see condition Stalled" }, now, generation, previous)
  return reconcile.set_condition(status, { type = "Stalled", status = "True", reason = reason, message = message },
    now, generation, previous)
end

-- `spec` with the fields at `paths` (lists of keys) of `from` copied in, where both hold the
-- parent object; returns `spec`.
local function copy_fields(spec, from, paths)
  for _, path in ipairs(paths) do
    local src, dst = from, spec
    for i = 1, #path - 1 do
      src = is_table(src) and src[path[i]] or nil
      dst = is_table(dst) and dst[path[i]] or nil
    end
    if is_table(src) and is_table(dst) then dst[path[#path]] = src[path[#path]] end
  end
  return spec
end

-- The spec a ControllerRevision `rev` records (fc.revision.spec_of: ours, or the original
-- operator's) with the control fields of `from` (today's spec) copied in, and, for the original
-- operator's, without what its Go structs wrote for unset fields (fc.revision.without_unset:
-- `"accessScope": ""` is unset, and defaults.apply fills only absent fields) and with the
-- fields its revisions leave out (fc.revision.ORIGINAL_IGNORED); nil when `rev` records none.
local function recorded_spec(rev, from)
  local spec, original = revision.spec_of(rev)
  if not spec then return nil end
  if original then spec = revision.without_unset(spec) end
  copy_fields(spec, from, revision.CONTROL_FIELDS)
  if original then copy_fields(spec, from, revision.ORIGINAL_IGNORED) end
  return spec
end

-- The current revision of a cluster: status.currentRevision, else (no pass has written the
-- status yet: each was cut short, e.g. by a SIGKILL, after it applied objects) the first
-- observed ControllerRevision, whose spec the submitter Job left by those passes was rendered
-- from (fc.revision.first; the revision is applied before it); nil before any revision. The
-- name as the status has it: the original operator's `<object>-<number>` included.
local function current_revision(status, children)
  return (status or {}).currentRevision or revision.first((children or {}).ControllerRevision)
end

-- The observed ControllerRevision of the current revision (fc.revision.find), or nil.
local function current_object(status, children)
  local _, rev = revision.find((children or {}).ControllerRevision, current_revision(status, children))
  return rev
end

-- The previous defaulted FlinkCluster for validate's update rules: {} before the first
-- revision (a create); else the spec of the current ControllerRevision with today's control
-- fields (control-field transitions are admission's to check) and today's defaults, and the
-- status. Shares every table but `spec` with `defaulted`: fc.host.call copies its input, so
-- nothing here is changed.
local function previous(host, defaulted, children)
  local cur = current_revision(defaulted.status, children)
  if not cur then return {} end
  local old = util.merge(defaulted)
  local spec = recorded_spec(current_object(defaulted.status, children), defaulted.spec)
  if spec then
    local ok, d = contract.call(host, "defaults", "apply", util.merge(defaulted, { spec = spec }))
    old.spec = ok and is_table(d) and is_table(d.spec) and d.spec or spec
  end
  return old
end

-- The snapshot of the last valid spec, for a pass that supervises a cluster whose spec is
-- invalid or whose policies fail on it (issue "Converge for real", item 5): the observed cluster
-- with the current ControllerRevision's spec (the spec of the last revision that validated and
-- rendered: recorded_spec) and today's control fields, the rest of the snapshot unchanged.
-- nil before the first revision, or when that ControllerRevision is not in the cache.
local function last_valid_snapshot(snapshot)
  local cluster = snapshot.cluster
  local spec = recorded_spec(current_object(cluster.status, snapshot.children), cluster.spec)
  if not spec then return nil end
  local held = util.merge(cluster)
  held.spec = spec
  return util.merge(snapshot, { cluster = held })
end

-- The snapshot of a rollback (policies/rollback.lua; status.rollback `rb` = {from, to,
-- savepoint, ...}): the observed cluster with the spec of the last stable revision `rb.to` (its
-- ControllerRevision's, today's control fields copied in: recorded_spec), restored from the
-- savepoint the upgrade took (spec.job.fromSavepoint = rb.savepoint) and with no savepoint of
-- the broken job (takeSavepointOnUpgrade false: its state is not wanted). nil when that
-- ControllerRevision is not in the cache.
local function rollback_snapshot(snapshot, rb)
  local cluster = snapshot.cluster
  local _, rev = revision.find((snapshot.children or {}).ControllerRevision, rb.to)
  local spec = rev and recorded_spec(rev, cluster.spec)
  if not (spec and is_table(spec.job)) then return nil end
  if type(rb.savepoint) == "string" and rb.savepoint ~= "" then spec.job.fromSavepoint = rb.savepoint end
  spec.job.takeSavepointOnUpgrade = false
  local held = util.merge(cluster)
  held.spec = spec
  return util.merge(snapshot, { cluster = held })
end

-- Result of a pass that acts on nothing (a failed policy, an invalid spec): `condition` set on a
-- copy of the status (the rest stays) with Stalled=True (reason the condition's) and
-- observedGeneration (the generation is seen, and refused), a Warning event `event_reason` with
-- the condition's message unless `already(prev, generation)` says the previous condition of that
-- type recorded it, and the status only when it changed.
local function no_action_result(cluster, condition, event_reason, already, now)
  local old = cluster.status or {}
  local gen = (cluster.metadata or {}).generation
  local st = util.deepcopy(old)
  local prev = find_condition(old, condition.type)
  reconcile.set_condition(st, condition, now, gen)
  reconcile.stall(st, condition.reason, condition.message, now, gen)
  st.observedGeneration = gen
  local result = { actions = {}, events = {} }
  if not (prev and already(prev, gen)) then
    result.events[1] = { type = "Warning", reason = event_reason, message = condition.message }
  end
  if not util.equal(st, old) then
    st.lastUpdateTime = clock.format(now)
    result.status = st
  end
  return result
end

-- Result when the cluster's policies failed: no apply/delete/Flink actions, PolicyError=True,
-- the event once per message.
local function policy_failure_result(cluster, failure, now)
  local message = failure.message
  local result = no_action_result(cluster,
    { type = "PolicyError", status = "True", reason = "PolicyFailed", message = message }, "PolicyError",
    function(prev) return prev.status == "True" and prev.message == message end, now)
  result.requeue_after = reconcile.POLICY_ERROR_REQUEUE
  result.failure = failure
  if result.events[1] then result.events[1].failure = failure end
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
-- state, job state, savepoint, user control, PolicyError resolved), appended to `events`. A new
-- cluster's first state Creating gets none: it tells nothing the FlinkCluster's creation and its
-- status do not (one write per cluster fewer at creation; its `Creating -> Running` event names
-- it, and a first state other than Creating, e.g. an adopted cluster's, still gets one).
local function transition_events(old, new, events)
  if old.state ~= new.state and (old.state ~= nil or new.state ~= "Creating") then
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

-- The JobManager REST target of a cluster: job.observe's `jobmanager` ({scheme, service, port})
-- in the cluster's namespace; nil when the policy named none (then no Flink call is made).
local function flink_target(namespace, jm)
  if not is_table(jm) then return nil end
  return { scheme = jm.scheme or "http", namespace = namespace, service = jm.service,
    port = math.tointeger(tonumber(jm.port)) or jm.port }
end

-- One pass. `hold` is nil for a pass of the cluster's own spec; for a pass that supervises the
-- cluster with its last valid spec (last_valid_snapshot) while changes are held, it is
-- {why="invalid"|"policy", message=<validate's errors or the policy failure>, revision=<name>}:
-- no update can start (the revision stays the current one), and the condition (Ready=False
-- InvalidSpec, or PolicyError=True) with its Warning event says why the new spec is held. A
-- rollback's pass (rollback_snapshot) is {why="rollback", revision=<the last stable one>,
-- rollback=<status.rollback>}: its revision is the next one, so the broken revision's job is
-- replaced by the stable spec's (an update), and RolledBack=True says why.
-- The status and events of a supervising pass (see run's `hold`), applied to its new status
-- `new`: the condition says why changes are held, with Stalled=True (same reason and message)
-- and observedGeneration = the generation (seen, and refused: kstatus then reports Failed, not
-- InProgress), its Warning event once per message (and generation, for an invalid spec), first in
-- the list; a policy failure is retried after reconcile.POLICY_ERROR_REQUEUE at the latest. While
-- the update gate waits for its dry runs (why="verify") observedGeneration stays the last one
-- acted on (the new one's SpecWarning events are still to come) and Reconciling=True says so.
local function held_status(hold, new, old_status, gen, now, result)
  if hold.next then new.nextRevision = hold.next end
  if hold.why == "rollback" then
    -- the user's spec stays refused until it changes: Stalled (kstatus: Failed) with the reason;
    -- the Warning UpgradeRolledBack was told by the pass that decided it
    local rb = hold.rollback
    new.rollback = rb
    local message = "upgrade to revision " .. tostring(rb.from) .. " rolled back to revision " .. tostring(rb.to)
      .. ": " .. tostring(rb.reason) .. "; the spec is tried again when it changes"
    reconcile.set_condition(new, { type = "RolledBack", status = "True", reason = "UpgradeRolledBack",
      message = message }, now, gen, old_status.conditions)
    reconcile.stall(new, "UpgradeRolledBack", message, now, gen, old_status.conditions)
    return
  end
  if hold.why == "verify" then
    new.observedGeneration = old_status.observedGeneration
    reconcile.set_condition(new, { type = "Reconciling", status = "True", reason = "VerifyingUpdate",
      message = "the API server checks revision " .. tostring(hold.next) .. " in a dry run before the update" },
      now, gen, old_status.conditions)
    return
  end
  local message = hold.message .. "; changes held: the last valid spec (revision " .. hold.revision
    .. ") keeps running"
  local cond, reason, recorded
  if hold.why == "refused" then
    cond, reason = { type = "Ready", status = "False", reason = "UpdateRefused", message = message }, "UpdateRefused"
    recorded = function(prev) return prev.reason == "UpdateRefused" and prev.message == message end
  elseif hold.why == "invalid" then
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
  reconcile.stall(new, cond.reason, message, now, gen, old_status.conditions)
  local prev = find_condition(old_status, cond.type)
  if hold.failure then result.failure = hold.failure end
  if not (prev and recorded(prev)) then
    table.insert(result.events, 1, { type = "Warning", reason = reason, message = message, failure = hold.failure })
  end
end

-- Native TaskManagers, the last step of a pass (nothing after it can fail, so the accounting
-- never counts a pod whose create is dropped): pods to create (the cluster policy's
-- taskmanager_pod, asked only when pods are missing) and delete, their events, the
-- TaskManagersStopped condition (True once maxFailedAttempts pods failed: no more are started,
-- with a Warning event when it becomes True) and the requeue while pods wait for registration
-- or a start cool-down.
local function native_actions(host, native, cluster, removed, now, result, new, old_status, gen)
  local demand = taskmanagers.demand(cluster, removed)
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
  if out.stopped then reconcile.stall(new, cond.reason, cond.message, now, gen, old_status.conditions) end
  if out.requeue_after and (result.requeue_after == nil or out.requeue_after < result.requeue_after) then
    result.requeue_after = out.requeue_after
  end
end

-- The condition PolicyError=True reason UndeclaredKind and its Warning event (once per message)
-- for objects cluster.desired produced of kinds fc.kinds does not declare (`undeclared`, from
-- kinds.refused): the rest of the pass went on without them.
local function undeclared_status(undeclared, new, old_status, gen, now, result)
  local parts = {}
  for _, u in ipairs(undeclared) do parts[#parts + 1] = u.message end
  local message = "cluster.lua: desired: " .. table.concat(parts, "; ") .. "; left out"
  reconcile.set_condition(new, { type = "PolicyError", status = "True", reason = "UndeclaredKind",
    message = message }, now, gen, old_status.conditions)
  reconcile.stall(new, "UndeclaredKind", message, now, gen, old_status.conditions)
  local prev = find_condition(old_status, "PolicyError")
  if not (prev and prev.status == "True" and prev.message == message) then
    result.events[#result.events + 1] = { type = "Warning", reason = "PolicyError", message = message }
  end
end

-- The rollback policy's judgement of the current revision (policies/rollback.lua), in a pass of
-- the user's spec with spec.job.rollback.enabled and no update in progress: "stable" records it
-- as status.lastStableRevision; "rollback", when a last stable revision other than it is in the
-- cache, sets status.rollback {from, to, generation, reason, savepoint (what its job was
-- submitted from: the upgrade's savepoint), time} with a Warning UpgradeRolledBack, and the next
-- pass rolls back (run); "wait" asks again when the policy says. `p`: {defaulted, current, job
-- (job.decide's), obs (job.observe's), hv (fc.health's), revisions, gen, now}.
local function rollback_decide(host, p, new, result)
  local current, stable = p.current, new.lastStableRevision
  if current == stable then return end
  local restarts = is_table(p.hv.ctx) and p.hv.ctx.restarts.count or nil
  local d = call(host, "rollback", "decide", { settings = p.defaulted.spec.job.rollback, revision = current,
    since = new.currentRevisionTime, job = { id = p.job.id, state = p.job.state, failureReason = p.job.failureReason },
    flink_state = p.obs.flink_state or "", start_time = p.obs.start_time or 0,
    restarts = math.tointeger(tonumber(restarts)), now = p.now })
  local wait
  if d.action == "stable" then
    new.lastStableRevision = current
  elseif d.action == "rollback" and stable and revision.find(p.revisions, stable) then
    new.rollback = { from = current, to = stable, generation = p.gen, reason = d.reason,
      savepoint = p.job.fromSavepoint, time = clock.format(p.now) }
    result.events[#result.events + 1] = { type = "Warning", reason = "UpgradeRolledBack",
      message = d.reason .. ": rolling back to revision " .. stable
        .. (p.job.fromSavepoint and (" from savepoint " .. p.job.fromSavepoint) or "") }
    wait = 1
  elseif d.action == "wait" then
    wait = tonumber(d.requeue_after)
  end
  if wait and wait > 0 and (result.requeue_after == nil or wait < result.requeue_after) then
    result.requeue_after = wait
  end
end

local run -- one pass (below); gate_update runs a supervising one

-- An HTTP status of a dry run that says nothing about the object: no answer, a conflict, too
-- many requests, a server error. It is asked again.
local function transient(status)
  status = tonumber(status) or 0
  return status == 0 or status == 409 or status == 429 or status >= 500
end

-- The update gate (issue "Converge for real", item 6): an update starts only once the API
-- server accepted, in a dry run (dryRun=All: admission and validation, nothing written), every
-- object of the new revision that differs from what runs. Objects that change an immutable
-- field are left to the delete-and-create path (a dry run in place would refuse them for that
-- reason alone). Returns nil when every answer is in and accepted (the update goes on);
-- otherwise the result of a supervising pass with the last valid spec plus the dry runs still
-- to ask (hold why="verify"), or, when the server refused one, that pass with Ready=False
-- reason UpdateRefused and a Warning naming the object and the server's message (why="refused";
-- no savepoint, cancel or resubmission; a new spec is verified again). `snapshot.dry_runs` =
-- {["<Kind>/<name>"]={hash=<applied-hash sent>, status=<HTTP status>, message=<server's>}}.
local function gate_update(host, snapshot, defaulted, next_rev, current)
  local children = snapshot.children or {}
  local for_desired = util.merge(defaulted)
  for_desired.status = nil
  -- the objects of the new revision (its name for the revision label, cluster.REVISION_LABEL)
  local des = call(host, "cluster", "desired", { cluster = for_desired, revision = next_rev })
  expect(des.objects ~= nil, "cluster", "desired", "must return {objects={...}}")
  local answers = snapshot.dry_runs or {}
  local ask, refused, retry = {}, {}, false
  local skip = {}
  for _, u in ipairs(kinds.refused(des.objects)) do skip[u.index] = true end
  for i, o in ipairs(des.objects) do
    local observed = (children[o.kind] or {})[o.metadata.name]
    if not skip[i] and not reconcile.CREATE_ONLY[o.kind] then
      diff.stamp(o)
      if diff.needs_apply(o, observed) and not (observed and diff.immutable_change(o, observed)) then
        local key = o.kind .. "/" .. o.metadata.name
        local hash = o.metadata.annotations[diff.APPLIED_HASH]
        local a = answers[key]
        if a == nil or a.hash ~= hash or transient(a.status) then
          retry = retry or a ~= nil and a.hash == hash
          ask[#ask + 1] = { op = "dry_run", object = o, hash = hash }
        elseif tonumber(a.status) >= 300 then
          refused[#refused + 1] = o.kind .. " " .. o.metadata.name .. ": HTTP " .. tostring(a.status) .. ": "
            .. tostring(a.message)
        end
      end
    end
  end
  if #ask == 0 and #refused == 0 then return nil end
  local held = last_valid_snapshot(snapshot)
  if not held then return nil end
  local hold = { why = "verify", revision = current, next = next_rev }
  if #refused > 0 then
    hold.why = "refused"
    hold.message = "update to revision " .. next_rev .. " refused by the API server: " .. table.concat(refused, "; ")
  end
  local res = run(host, held, hold)
  if #ask > 0 then
    for _, a in ipairs(ask) do res.actions[#res.actions + 1] = a end
    local wait = retry and reconcile.DRY_RUN_RETRY or reconcile.DRY_RUN_REQUEUE
    if res.requeue_after == nil or res.requeue_after > wait then res.requeue_after = wait end
  end
  return res
end

-- Adoption (issue 27): an update starts only when the spec means something else than the
-- current revision's. When the status names a revision `current` (ours, of any format, or the
-- original operator's `<object>-<number>`) other than `next_rev`, and the ControllerRevision it
-- names records a spec that, with today's defaults (defaults.apply) and compared for meaning
-- (fc.revision.comparable; with an original revision, without the fields it leaves out), equals
-- the cluster's defaulted spec, the revision is adopted: current := next_rev at once, no
-- update. The cases: a controller whose revisions hash the spec as written replacing one that
-- hashed the defaulted spec; a default added to policies/defaults.lua (or to the CRD) before
-- that; a FlinkCluster made by the original operator (same API, same objects). Returns
-- {format=<text for the Event>} or nil (not adoptable: no such ControllerRevision, a real
-- change, or defaults.apply failed on the recorded spec).
local function adopt_revision(host, cluster, defaulted, revisions, current, next_rev)
  local _, rev = revision.find(revisions, current)
  if not rev or current == next_rev then return nil end
  local spec = recorded_spec(rev, cluster.spec)
  if not spec then return nil end
  local original = revision.is_original(rev)
  local function with_defaults(s)
    local ok, d = contract.call(host, "defaults", "apply", util.merge(defaulted, { spec = s }))
    return ok and is_table(d) and is_table(d.spec) and d.spec or nil
  end
  local live = defaulted.spec
  if original then
    -- its data is the Go structs' encoding (recorded_spec): what they write for unset fields is
    -- unset on this side too
    live = with_defaults(revision.without_unset(cluster.spec))
  end
  local old = with_defaults(spec)
  if not (old and live) or revision.comparable(old, original) ~= revision.comparable(live, original) then return nil end
  return { format = original and "the original operator's" or "ours" }
end

function run(host, snapshot, hold)
  local cluster = snapshot.cluster
  local md = cluster.metadata or {}
  local gen = md.generation
  local now = snapshot.now or os.time()
  local children = snapshot.children or {}
  -- the Flink answers, decoded (fc.flink: the core records them raw)
  local flink = fcflink.view(snapshot.flink)
  local old_status = cluster.status or {}
  local result = { actions = {}, events = {} }
  if md.deletionTimestamp then
    -- being deleted: the garbage collector removes the children (controller ownerReferences);
    -- with fc.haclean's finalizer, Flink's HA ConfigMaps go first
    taskmanagers.forget(tostring(md.namespace or "default") .. "/" .. tostring(md.name))
    result.actions = haclean.deleting(cluster, children)
    return result
  end

  -- 1. defaults, validate
  local defaulted = call(host, "defaults", "apply", cluster)
  local bad = shape.defaults(defaulted)
  expect(bad == nil, "defaults", "apply", bad)
  -- fc.host.call copies every input, so the policies below share the observed status safely
  defaulted.status = old_status
  local old = previous(host, defaulted, children)
  local v = call(host, "validate", "check", { cluster = defaulted, raw = cluster, old = old })
  if v.errors and #v.errors > 0 then
    local message = invalid_message(v.errors)
    if hold then fail("the last valid spec (revision " .. hold.revision .. ") fails validation: " .. message) end
    -- supervision goes on: the last valid spec keeps polling the job and taking savepoints
    local held = last_valid_snapshot(snapshot)
    if held then
      local ok, res = pcall(run, host, held, { why = "invalid", message = message,
        revision = current_revision(old_status, children) })
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

  -- a rollback in force (status.rollback, policies/rollback.lua) while the spec is the one it
  -- refused (same generation): the last stable revision's spec runs instead
  local rb = old_status.rollback
  if not hold and is_table(rb) and rb.generation == gen then
    local back = rollback_snapshot(snapshot, rb)
    if back then return run(host, back, { why = "rollback", revision = rb.to, rollback = rb }) end
  end

  -- 2. revision: the user's spec as written names it; an update starts only when that spec
  -- means something else than the current revision's (adopt_revision)
  local revisions = children.ControllerRevision or {}
  local next_rev = hold and hold.revision or revision.name(cluster)
  local current = current_revision(old_status, children) or next_rev
  local adopted = old_status.adoptedRevision
  if not hold and current ~= next_rev then
    local now_adopted = adopt_revision(host, cluster, defaulted, revisions, current, next_rev)
    if now_adopted then
      result.events[#result.events + 1] = { type = "Normal", reason = "RevisionAdopted",
        message = "revision " .. current .. " (" .. now_adopted.format .. ") adopted as " .. next_rev
          .. ": same spec with today's defaults, nothing is restarted" }
      adopted = { from = current, to = next_rev, time = clock.format(now) }
      current = next_rev
    end
  end
  if not (is_table(adopted) and adopted.to == current) then adopted = nil end
  -- old_job: the current revision's spec.job (what the running job was submitted with), for
  -- the policies' upgrade mode (lib.upgrade.effective)
  local update = { pending = current ~= next_rev, current = current, next = next_rev,
    from_savepoint_changed = false, old_job = is_table(old.spec) and old.spec.job or nil }
  if update.pending and not hold then
    local gated = gate_update(host, snapshot, defaulted, next_rev, current)
    if gated then return gated end
  end
  local new_from = is_table(defaulted.spec.job) and defaulted.spec.job.fromSavepoint or nil
  local old_from = is_table(old.spec) and is_table(old.spec.job) and old.spec.job.fromSavepoint or nil
  if new_from ~= nil and new_from ~= old_from then update.from_savepoint_changed = true end

  -- Native TaskManagers (fc.taskmanagers): what the pods and the JobManager say, before the policies
  local native = taskmanagers.is_native(defaulted)
    and taskmanagers.observe(tostring(md.namespace or "default") .. "/" .. tostring(md.name), defaulted, children,
      flink, now, taskmanagers.demand(defaulted)) or nil
  -- the policies see the TaskManager pods as native.summary, not one by one (1,000 pods would
  -- be copied into every policy call)
  local for_policies = native and taskmanagers.without_pods(children) or children
  if not native then
    -- back to mode StatefulSet: the Native TaskManager pods go (the StatefulSet replaces them)
    for _, n in ipairs(taskmanagers.leftovers(children)) do
      result.actions[#result.actions + 1] = { op = "delete", kind = "Pod", name = n }
    end
    taskmanagers.forget(tostring(md.namespace or "default") .. "/" .. tostring(md.name))
  end

  -- 3. job and savepoint decisions (job clusters)
  local components = call(host, "status", "components",
    { cluster = defaulted, children = for_policies, desired = {}, cleanup = "",
      taskmanagers = native and native.summary })
  expect(is_table(components), "status", "components", "must return a table")
  local is_job = is_table(defaulted.spec.job)
  local jd, sd, obs, health_intents, hv = {}, {}, {}, nil, {}
  if is_job then
    obs = call(host, "job", "observe", { cluster = defaulted, children = for_policies, flink = flink, now = now })
    expect(is_table(obs) and is_table(obs.job), "job", "observe", "must return {job=}")
    -- health (policies/health.lua): judged on the samples fc.health keeps in job.health
    local not_decision
    hv, not_decision = fchealth.pass(function(ctx) return call(host, "health", "decide", ctx) end, { job = obs.job,
      flink_state = obs.flink_state, start_time = obs.start_time, flink = flink, spec = defaulted.spec, now = now })
    expect(hv ~= nil, "health", "decide", not_decision)
    health_intents = hv.intents
    -- the trigger protocol (fc.savepoints) around savepoint.decide (when to take one)
    -- (fc.contract.call checks its result: job a table, outcome, take and checkpoint)
    sd = savepoints.pass(function(i) return call(host, "savepoint", "decide", i) end, { cluster = defaulted,
      job = obs.job, start_time = obs.start_time or 0, flink = flink, components = components, update = update,
      now = now })
    jd = call(host, "job", "decide", { cluster = defaulted, job = sd.job, flink_state = obs.flink_state or "",
      flink = flink, savepoint = sd.savepoint or {}, outcome = sd.outcome or {}, children = for_policies,
      components = components, update = update, health = hv.health, now = now })
    expect(is_table(jd) and is_table(jd.job), "job", "decide", "must return {job=, ...}")
    -- the policies' own events (e.g. a restart with its attempt number, a savepoint disposed),
    -- before the state events
    for _, from in ipairs({ { "savepoint", sd.events }, { "job", jd.events } }) do
      expect(from[2] == nil or is_table(from[2]), from[1], "decide", "events must be a list")
      for i, e in ipairs(from[2] or {}) do
        expect(is_table(e) and (e.type == "Normal" or e.type == "Warning") and type(e.reason) == "string"
          and type(e.message) == "string", from[1], "decide", "events[" .. (i - 1) .. "] needs type, reason, message")
        result.events[#result.events + 1] = { type = e.type, reason = e.reason, message = e.message }
      end
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
  -- next_rev: the revision they are rendered from (the held one in a supervising pass)
  local des = call(host, "cluster", "desired", { cluster = for_desired, revision = next_rev })
  expect(des.objects ~= nil, "cluster", "desired", "must return {objects={...}}")
  local cleanup = jd.cleanup or ""
  -- the children job.decide removes as the job ended ({kind=, name=}; no name: all of the kind)
  expect(jd.remove == nil or is_table(jd.remove), "job", "decide", "remove must be a list")
  local removed = {}
  for i, r in ipairs(jd.remove or {}) do
    expect(is_table(r) and type(r.kind) == "string" and (r.name == nil or type(r.name) == "string"),
      "job", "decide", "remove[" .. (i - 1) .. "] needs a kind (and a name)")
    removed[r.kind] = removed[r.kind] or {}
    removed[r.kind][r.name or "*"] = true
  end
  local desired = {}
  -- objects of kinds the controller does not manage are left out, and the cluster marked
  local undeclared, skip = kinds.refused(des.objects), {}
  for _, u in ipairs(undeclared) do skip[u.index] = true end
  for i, o in ipairs(des.objects) do
    local keep = true
    local r = removed[o.kind]
    if skip[i] then
      keep = false
    elseif o.kind == "ControllerRevision" then
      keep = true -- the revision history stays (revisionHistoryLimit)
    elseif r and (r["*"] or r[o.metadata.name]) then
      keep = false
    elseif o.kind == "Job" then
      local observed = (children.Job or {})[o.metadata.name]
      keep = is_job and ((observed ~= nil and not jd.resubmit) or (observed == nil and jd.submit == true))
    end
    if keep then
      diff.stamp(o)
      desired[#desired + 1] = o
    end
  end
  local next_obj = revision.find(revisions, next_rev) or next_rev
  local has_rev = false
  for _, o in ipairs(desired) do
    if o.kind == "ControllerRevision" and o.metadata.name == next_obj then has_rev = true end
  end
  if not has_rev then
    -- before the submitter Job in the apply order (else last): a pass cut short after the
    -- submitter has recorded the revision it was rendered from (current_revision)
    local obj = revisions[next_obj] or revision.object(cluster, revision.next_number(revisions))
    local at = #desired + 1
    for i, o in ipairs(desired) do
      if o.kind == "Job" then at = i; break end
    end
    table.insert(desired, at, obj)
  end

  -- 5. diff: apply what differs from the last applied intent or drifted (in order), delete what
  -- is no longer desired; during an update with recreateOnUpdate, a StatefulSet whose pods change
  -- is deleted and created again by the next pass instead of rolled pod by pod; outside an update
  -- the pods stay while the job runs (new pods would kill it without a savepoint), and, after an
  -- adoption (adopt_revision), those of a session cluster too until the next update: a new pod
  -- template, or an immutable field that would need the object deleted and created again (the
  -- original operator's StatefulSet selectors hold the podLabels), is held
  local by_kind = index(desired)
  local recreate = update.pending and defaulted.spec.recreateOnUpdate ~= false
  local keep_pods = not update.pending and (is_job and jd.job.state == "Running" or not is_job and adopted ~= nil)
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
    local immutable = changed and diff.immutable_change(o, observed)
    if keep_pods and reconcile.POD_KINDS[o.kind] and (changed == "intent" and new_pods or immutable) then
      held[#held + 1] = o.kind .. " " .. o.metadata.name
        .. (immutable and (" (" .. immutable .. " cannot change in place)") or "")
      changed = false
    end
    if changed and (immutable or recreate and new_pods) then
      -- cannot be changed in place: deleted below, created again by the next pass
      by_kind[o.kind][o.metadata.name] = nil
    elseif changed then
      result.actions[#result.actions + 1] = { op = "apply", object = o }
    end
  end
  -- the Event once per held set: the status written with it names the same objects (Ready's
  -- message after an adoption, Stalled's otherwise), and a hold can last for days (after an
  -- adoption, until the next spec change), where a repeat each pass would patch the Event's
  -- count every few seconds
  local held_text = "new pod template of " .. table.concat(held, ", ") .. " held"
  local held_told = false
  for _, c in ipairs(#held > 0 and old_status.conditions or {}) do
    if type(c) == "table" and type(c.message) == "string" and c.message:find(held_text, 1, true) then
      held_told = true
      break
    end
  end
  local tell = #held > 0 and not held_told
  if tell and adopted then
    -- not the user's change: the adopted revision's pods run what the spec asks (no Warning)
    result.events[#result.events + 1] = { type = "Normal", reason = "TemplateChangeHeld",
      message = "new pod template of " .. table.concat(held, ", ") .. " held since revision " .. adopted.from
        .. " was adopted: it rolls out with the next update of the spec" }
  elseif tell then
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

  -- and the last stable revision, which a rollback returns to (policies/rollback.lua)
  local stable = old_status.lastStableRevision
  local keep = { [next_rev] = true, [current] = true, [next_obj] = true,
    [revision.find(revisions, current) or current] = true }
  if type(stable) == "string" then keep[revision.find(revisions, stable) or stable] = true end
  local limit = tonumber(defaulted.spec.revisionHistoryLimit) or 10
  for _, n in ipairs(revision.prune(revisions, math.max(limit, 1), keep)) do
    result.actions[#result.actions + 1] = { op = "delete", kind = "ControllerRevision", name = n }
  end

  -- 6. Flink REST calls (the policies' intents, through fc.flink) and the user-control annotation
  local target = flink_target(tostring(md.namespace or "default"), obs.jobmanager)
  for _, from in ipairs({ { "job", "observe", obs.intents }, { "savepoint", "decide", sd.intents },
    { "job", "decide", jd.intents }, { "health", "decide", health_intents } }) do
    expect(from[3] == nil or is_table(from[3]), from[1], from[2], "intents must be a list")
    for i, intent in ipairs(from[3] or {}) do
      expect(target ~= nil, from[1], from[2], "intents need job.observe's jobmanager {service, port}")
      local ok, a = pcall(fcflink.action, intent, target)
      expect(ok, from[1], from[2], "intents[" .. (i - 1) .. "]: " .. tostring(a))
      result.actions[#result.actions + 1] = a
    end
  end
  -- the jar of a REST submission, deleted from the JobManager once Flink ran it (fc.restsubmit)
  if target and is_job then
    for _, intent in ipairs(restsubmit.jar_deletions(jd.job, flink)) do
      result.actions[#result.actions + 1] = fcflink.action(intent, target)
    end
  end
  if native and components.jobManagerService and components.jobManagerService.state == "Ready"
      and native.summary.pods > 0 then
    -- who registered (Native TaskManagers): the JobManager REST address job.observe named, else
    -- the one cluster.desired named with the Service it renders (a session cluster)
    target = target or flink_target(tostring(md.namespace or "default"), des.jobmanager)
    expect(target ~= nil, "cluster", "desired", "Native TaskManagers need jobmanager {service, port}")
    result.actions[#result.actions + 1] = fcflink.action({ kind = "list_taskmanagers" }, target)
  end
  -- Flink's HA ConfigMaps (fc.haclean): the finalizer, their deletion after a DeleteCluster cleanup
  expect(des.ha_configmaps == nil or type(des.ha_configmaps) == "boolean", "cluster", "desired",
    "ha_configmaps must be a boolean")
  for _, a in ipairs(haclean.pass(cluster, des.ha_configmaps, cleanup, children)) do
    result.actions[#result.actions + 1] = a
  end
  if jd.remove_annotation ~= nil then
    expect(type(jd.remove_annotation) == "string", "job", "decide", "remove_annotation must be an annotation key")
    result.actions[#result.actions + 1] = { op = "patch_annotations", remove = { jd.remove_annotation } }
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
    updating = new_current ~= next_rev, revision = { current = new_current, next = next_rev }, held = held,
    adopted = new_current == current and adopted or nil, now = now,
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
  if #undeclared > 0 then
    undeclared_status(undeclared, new, old_status, gen, now, result)
  else
    reconcile.set_condition(new, { type = "PolicyError", status = "False", reason = "PoliciesSucceeded",
      message = "policies ran without error" }, now, gen, old_status.conditions)
  end
  new.observedGeneration = gen
  if native then
    native_actions(host, native, for_desired, removed.Pod ~= nil, now, result, new, old_status, gen)
  end
  new.lastStableRevision = old_status.lastStableRevision
  new.currentRevisionTime = new_current == old_status.currentRevision and old_status.currentRevisionTime
    or clock.format(now)
  if is_job and not hold and not update.pending and is_table(defaulted.spec.job.rollback)
      and defaulted.spec.job.rollback.enabled == true then
    rollback_decide(host, { defaulted = defaulted, current = current, job = jd.job, obs = obs, hv = hv,
      revisions = revisions, gen = gen, now = now }, new, result)
  end
  if hold then held_status(hold, new, old_status, gen, now, result) end
  new.collisionCount = old_status.collisionCount
  -- the adoption that made the current revision, until the next update replaces it
  new.adoptedRevision = new_current == current and adopted or nil
  new.lastUpdateTime = old_status.lastUpdateTime
  if not util.equal(new, old_status) then
    new.lastUpdateTime = clock.format(now)
    result.status = new
    transition_events(old_status, new, result.events)
  end

  -- 8. requeue: the earliest time a policy asked for
  reconcile.requeue_earliest(result, { sd.requeue_after, jd.requeue_after })
  -- a NaN or an integer JSON cannot keep, from any policy: this cluster's policy failure, named
  local unencodable = codec.unencodable(result)
  if unencodable then
    fail({ kind = "badresult", message = "policy output cannot be sent to the API server: " .. unencodable })
  end
  return result
end

-- The plain failure table of a raised PolicyFailure (the event and result carry it to the core).
local function failure_of(f)
  return { kind = f.kind or "error", policy = f.policy, hook = f.hook, message = f.message }
end

--- reconcile.run(snapshot) -> result
-- snapshot: {cluster=<FlinkCluster as observed, metadata.generation, status (or none)>,
--   children={<kind>={<name>=obj}}, flink={answers={<id>={intent=, status=, body=, error=, time=}}}
--   (the core's raw Flink answers; fc.flink.view decodes them for the policies),
--   now=<unix seconds>}.
-- result: {actions={{op="apply", object=}|{op="delete", kind=, name=}|{op="flink", id=, intent=, method=,
--   path=, body=, target=, after_status=} (fc.flink.action)|{op="patch_annotations", remove={key,...}}},
--   status=<new status or nil when unchanged>,
--   events={{type="Normal"|"Warning", reason=, message=}}, requeue_after=<seconds or nil>}.
-- A policy failure (fc.contract.call failing: a Lua error, a budget, a result off the hook
-- contract) fails this cluster only: no actions, a Warning event naming the policy file and
-- line, PolicyError=True; result.failure (and the PolicyError event's `failure`) is the typed
-- failure {kind=, policy=, hook=, message=} (fc.contract) the core counts by its fields.
-- Errors: raises only on a snapshot without a cluster table (a bug in the caller).
function reconcile.run(snapshot)
  if type(snapshot) ~= "table" or type(snapshot.cluster) ~= "table" then
    error("reconcile.run: snapshot.cluster must be a table", 2)
  end
  -- a job on a session cluster (its own object, its own key in the core)
  if snapshot.cluster.kind == "FlinkJob" then return require("fc.flinkjob").run(snapshot) end
  local host = require("fc.host")
  local ok, res = pcall(run, host, snapshot)
  if ok then return res end
  if getmetatable(res) ~= PolicyFailure then error(res, 0) end
  -- the policies failed on this spec: the last valid spec keeps supervising the cluster (a
  -- policy broken for every spec fails that pass too)
  local held = last_valid_snapshot(snapshot)
  if held then
    local ok2, res2 = pcall(run, host, held, { why = "policy", message = res.message, failure = failure_of(res),
      revision = current_revision(snapshot.cluster.status, snapshot.children) })
    if ok2 then return res2 end
    if getmetatable(res2) ~= PolicyFailure then error(res2, 0) end
  end
  return policy_failure_result(snapshot.cluster, failure_of(res), snapshot.now or os.time())
end

return reconcile
