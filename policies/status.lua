-- SPDX-License-Identifier: Apache-2.0
--- policies/status.lua: the observed state of a FlinkCluster (API "Status" and "Behaviour").
-- Pure. The framework calls `components` first (job.lua needs to know what is Ready), then
-- `compute`; it stamps conditions with lastTransitionTime/observedGeneration, sets
-- status.observedGeneration and lastUpdateTime, and adds the PolicyError condition itself (and
-- Stalled=True for an invalid spec, a refused update or a policy error).
local util = require("fc.util")
local names = require("lib.names")

local status = {}
--- The hook contract this policy is written for (fc.contract; another version is refused).
status.contract = "hooks.flinkoperator.k8s.io/v1"

--- The three components whose readiness makes the cluster state (API "Behaviour"); with
-- taskManager.mode Native the TaskManagers are `taskManagers` instead of the StatefulSet.
status.COUNTED = { "jobManagerStatefulSet", "jobManagerService", "taskManagerStatefulSet" }
status.COUNTED_NATIVE = { "jobManagerStatefulSet", "jobManagerService", "taskManagers" }

-- Components each cleanup action removes.
local CLEANED = {
  DeleteCluster = { configMap = true, jobManagerStatefulSet = true, jobManagerService = true,
    jobManagerIngress = true, taskManagerStatefulSet = true, taskManagers = true },
  DeleteTaskManager = { taskManagerStatefulSet = true, taskManagers = true },
}

--- status.native_state(tms, cleaned) -> "Ready" | "NotReady" | "Deleted" for mode Native's
-- TaskManagers (`tms` = the framework's counts, see components): Ready when the TaskManagers
-- registered with the JobManager offer every slot of the demand; Deleted when a cleanup removed
-- them and no pod is left.
function status.native_state(tms, cleaned)
  if cleaned and tms.pods == 0 then return "Deleted" end
  if tms.demand > 0 and tms.registered * tms.slotsPerTaskManager >= tms.demand then return "Ready" end
  return "NotReady"
end

--- status.statefulset_state(obj) -> "Ready" | "Updating" | "NotReady".
-- Ready when status.readyReplicas == spec.replicas (default 1; readyReplicas is omitted when 0)
-- and the controller has seen the current spec (status.observedGeneration >=
-- metadata.generation) with no rollout in flight (currentRevision == updateRevision).
-- Updating while the StatefulSet controller has not caught up with a new spec, or rolls out.
-- (Kubernetes apps/v1 StatefulSetStatus; `kubectl rollout status` uses the same fields.)
function status.statefulset_state(obj)
  local spec, st, md = obj.spec or {}, obj.status or {}, obj.metadata or {}
  local replicas = tonumber(spec.replicas) or 1
  local ready = tonumber(st.readyReplicas) or 0
  local gen, seen = tonumber(md.generation), tonumber(st.observedGeneration)
  if gen and seen and seen < gen then return "Updating" end
  if gen and not seen then return "NotReady" end
  if st.updateRevision and st.currentRevision and st.updateRevision ~= st.currentRevision then
    return "Updating"
  end
  if ready == replicas then return "Ready" end
  return "NotReady"
end

local function has_lb_address(obj)
  local ing = (((obj or {}).status or {}).loadBalancer or {}).ingress
  return type(ing) == "table" and next(ing) ~= nil
end

--- status.service_state(obj) -> "Ready" | "NotReady": a Service is Ready once it exists, a
-- LoadBalancer Service once status.loadBalancer.ingress has an address.
function status.service_state(obj)
  if (obj.spec or {}).type == "LoadBalancer" then
    return has_lb_address(obj) and "Ready" or "NotReady"
  end
  return "Ready"
end

local function node_port(svc)
  for _, p in ipairs((svc.spec or {}).ports or {}) do
    if p.name == "ui" and p.nodePort then return p.nodePort end
  end
  return nil
end

local function ingress_urls(ing)
  local tls_hosts = {}
  for _, t in ipairs((ing.spec or {}).tls or {}) do
    for _, h in ipairs(t.hosts or {}) do tls_hosts[h] = true end
  end
  local urls = {}
  for _, r in ipairs((ing.spec or {}).rules or {}) do
    if r.host then urls[#urls + 1] = (tls_hosts[r.host] and "https://" or "http://") .. r.host end
  end
  return util.nonempty(urls)
end

--- status.components(input) -> {configMap=, jobManagerStatefulSet=, jobManagerService=,
--   jobManagerIngress= (only when an Ingress is desired or observed), taskManagerStatefulSet= or,
--   with taskManager.mode Native, taskManagers=},
-- each {name=, state="NotReady"|"Ready"|"Updating"|"Deleted"} (+ nodePort for the Service,
-- urls for the Ingress; taskManagers adds the framework's counts: pods, registered,
-- slotsPerTaskManager, demand, failedAttempts, maxFailedAttempts).
-- input: {cluster=<defaulted>, children=<observed {kind={name=obj}}>, desired=<{kind={name=obj}}>,
--   cleanup=<"DeleteCluster"|"DeleteTaskManager"|"">, taskmanagers=<mode Native: {pods=,
--   registered=, slotsPerTaskManager=, demand=, failedAttempts=, maxFailedAttempts=}>}.
-- A component the cleanup removes is Deleted once it is gone; otherwise an absent one is NotReady.
function status.components(input)
  local n = input.cluster.metadata.name
  local children, desired = input.children or {}, input.desired or {}
  local cleaned = CLEANED[input.cleanup or ""] or {}
  local out = {}
  local function one(key, kind, name, state_of)
    local obj = (children[kind] or {})[name]
    local c = { name = name }
    if obj then
      c.state = state_of(obj)
    elseif cleaned[key] then
      c.state = "Deleted"
    else
      c.state = "NotReady"
    end
    out[key] = c
    return obj
  end
  one("configMap", "ConfigMap", names.configmap(n), function() return "Ready" end)
  one("jobManagerStatefulSet", "StatefulSet", names.jobmanager(n), status.statefulset_state)
  if input.taskmanagers then
    local c = util.deepcopy(input.taskmanagers)
    c.name, c.state = names.taskmanager(n), status.native_state(input.taskmanagers, cleaned.taskManagers)
    out.taskManagers = c
  else
    one("taskManagerStatefulSet", "StatefulSet", names.taskmanager(n), status.statefulset_state)
  end
  local svc = one("jobManagerService", "Service", names.jobmanager(n), status.service_state)
  if svc then out.jobManagerService.nodePort = node_port(svc) end
  local ing_name = names.jobmanager(n)
  if (desired.Ingress or {})[ing_name] or (children.Ingress or {})[ing_name] then
    local ing = one("jobManagerIngress", "Ingress", ing_name,
      function(o) return has_lb_address(o) and "Ready" or "NotReady" end)
    if ing then out.jobManagerIngress.urls = ingress_urls(ing) end
  end
  return out
end

-- Whether every component the cleanup `action` removes is gone (Deleted, or not listed).
local function cleanup_done(comps, action)
  for key in pairs(CLEANED[action] or {}) do
    if comps[key] and comps[key].state ~= "Deleted" then return false end
  end
  return true
end

local function job_name(j)
  return j.id and ("job " .. j.id) or "the job"
end

--- Job states that reach a job cluster's desired state once its cleanupPolicy is done: the job
-- ran to its end, or was cancelled (spec.job.cancelRequested, the job-cancel user control, or in
-- Flink); and job states that end a job for good unless job.lua restarts it (its
-- job.nextRestartTime is set while a restart waits).
status.FINISHED = { Succeeded = true, Cancelled = true }
status.FAILED = { Failed = true, Lost = true }

-- Ready, Reconciling and Stalled (rules: status.compute's comment) for the cluster `state`
-- computed from `input`; `missing` = the counted components that are not Ready.
local function kstatus_conditions(input, state, missing)
  local j, cleanup = input.job, input.cleanup or ""
  local done = cleanup == "" or cleanup_done(input.components, cleanup)
  local js = j and (j.state or "Pending")
  local not_ready = #missing > 0 and ("not ready: " .. table.concat(missing, ", ")) or ("cluster is " .. state)
  local ready
  if not j then
    if state == "Running" then
      ready = { type = "Ready", status = "True", reason = "Running", message = "all components are Ready" }
    end
  elseif status.FINISHED[js] and done and (cleanup ~= "" or state == "Running") then
    ready = { type = "Ready", status = "True", reason = "Job" .. js, message = job_name(j) .. " " .. js .. "; "
      .. (cleanup == "" and "the cluster is kept (cleanupPolicy KeepCluster)"
        or ("cleanupPolicy " .. cleanup .. " done, cluster " .. state)) }
  elseif state == "Running" and js == "Running" then
    ready = { type = "Ready", status = "True", reason = "Running",
      message = "all components are Ready, " .. job_name(j) .. " is Running" }
  end
  local ready_reason = state
  if not ready and j and state == "Running" then
    ready_reason, not_ready = "Job" .. js, job_name(j) .. " is " .. js
  end
  ready = ready or { type = "Ready", status = "False", reason = ready_reason, message = not_ready }

  local stalled
  if j and status.FAILED[js] and not j.nextRestartTime then
    stalled = { reason = "Job" .. js, message = job_name(j) .. " is " .. js
      .. (j.failureReason and (" (" .. tostring(j.failureReason) .. ")") or "")
      .. " and is not restarted: an update of the spec submits it again" }
  elseif #(input.held or {}) > 0 and not input.adopted then
    stalled = { reason = "TemplateChangeHeld", message = "new pod template of " .. table.concat(input.held, ", ")
      .. " held while the job runs: the next update of the spec rolls it out" }
  elseif #(input.held or {}) > 0 and ready.status == "True" then
    -- after an adoption: nothing for the user to fix, the pods run what the spec asks
    ready.message = ready.message .. "; new pod template of " .. table.concat(input.held, ", ")
      .. " held since revision " .. tostring(input.adopted.from) .. " was adopted: the next update of the spec"
      .. " rolls it out"
  end

  local reconciling
  if not stalled then
    local sp, ctl = input.savepoint or {}, input.control or {}
    local cancelling = j and js == "Running" and ((input.cluster.spec.job or {}).cancelRequested == true
      or ctl.name == "job-cancel" and ctl.state == "Progressing")
    if state == "Updating" and sp.state == "InProgress" and sp.triggerReason == "update" then
      reconciling = { reason = "Updating", message = "taking a savepoint before the update to revision "
        .. tostring((input.revision or {}).next) }
    elseif state == "Updating" then
      reconciling = { reason = "Updating", message = "rolling out revision " .. tostring((input.revision or {}).next)
        .. (#missing > 0 and ("; " .. not_ready) or "") }
    elseif state == "Creating" then
      reconciling = { reason = "Creating", message = not_ready }
    elseif state == "Reconciling" then
      reconciling = { reason = "Recovering", message = not_ready }
    elseif not done then
      reconciling = { reason = "CleaningUp", message = "cleanupPolicy " .. cleanup .. " after " .. job_name(j)
        .. " " .. js .. ": cluster is " .. state }
    elseif j and (js == "Pending" or js == "Updating") then
      reconciling = { reason = "SubmittingJob", message = job_name(j) .. " is " .. js }
    elseif j and status.FAILED[js] then
      reconciling = { reason = "RestartPending", message = job_name(j) .. " is " .. js .. ", restarted at "
        .. tostring(j.nextRestartTime) }
    elseif cancelling then
      reconciling = { reason = "Cancelling", message = "cancelling " .. job_name(j) }
    end
  end
  reconciling = reconciling and { type = "Reconciling", status = "True", reason = reconciling.reason,
      message = reconciling.message }
    or { type = "Reconciling", status = "False", reason = stalled and "Stalled" or "Reconciled",
      message = stalled and "progress is blocked: see condition Stalled" or "nothing left to do for the spec" }
  stalled = stalled and { type = "Stalled", status = "True", reason = stalled.reason, message = stalled.message }
    or { type = "Stalled", status = "False", reason = "NotStalled", message = "nothing blocks progress" }
  return ready, reconciling, stalled
end

--- status.compute(input) -> status
-- input: {cluster=<defaulted, status as observed or {}>, components=<from status.components>,
--   job=<status.components.job or nil for a session cluster>, savepoint=<status.savepoint or nil>,
--   control=<status.control or nil>, cleanup=<"DeleteCluster"|"DeleteTaskManager"|"">,
--   updating=bool (a new revision is being rolled out), revision={current=, next=},
--   held=<list of "<Kind> <name>[ (<immutable field> cannot change in place)]" whose new pod
--   template the framework holds while the job runs (or after an adoption), {} when none>,
--   adopted=<{from=<revision adopted>, to=<current revision>, time=} while the current revision
--   is one the framework adopted without an update (docs/contracts.md, "Pipeline"), else nil>,
--   now=<unix s>}.
-- Output: {state=, components=<with job>, savepoint=, control=, currentRevision=, nextRevision=,
--   conditions={{type=, status="True"|"False", reason=, message=}...}}: Ready, Reconciling,
--   Stalled, in that order, and JobRunning for a job cluster.
-- State machine (API "Behaviour"): with a cleanup in effect, Stopping while the three counted
-- components all remain, PartiallyStopped while some do, Stopped when none; else Updating
-- while a new revision is not yet rolled out (`updating`) or, once the cluster has run, while a
-- StatefulSet rolls out; else Running when the three are Ready, Creating when the cluster never ran,
-- and Reconciling when it did.
-- Conditions for GitOps tools: kstatus (sigs.k8s.io/cli-utils pkg/kstatus, README "Conditions"
-- and "The Ready Condition": Reconciling=True -> InProgress, Stalled=True -> Failed, else Ready
-- True -> Current, False -> InProgress, after status.observedGeneration == metadata.generation),
-- which Flux, `kubectl wait --for=condition=...` and deploy/argocd's health check read:
-- - Ready=True when the desired state is reached: a session cluster Running; a job cluster
--   Running with its job Running, or whose job is Succeeded or Cancelled (status.FINISHED) and
--   whose cleanupPolicy is done (every component it removes is Deleted; KeepCluster: the cluster
--   still Running), reason Job<state>. Else False, reason the cluster state, or Job<state> while
--   the cluster is Running but its job is not.
-- - Reconciling and Stalled follow kstatus's "abnormal-true" polarity and are always present
--   (ours: False when they do not apply, so `kubectl wait --for=condition=Reconciling=False`
--   works and lastTransitionTime says when the last piece of work ended). Stalled=True (and then
--   Reconciling=False) when progress needs the user: a job Failed or Lost that job.lua does not
--   restart (no job.nextRestartTime), reason Job<state>; a pod template change held while the
--   job runs (`held`), reason TemplateChangeHeld, but not after an adoption (`adopted`): the
--   pods run the spec's meaning, the new template is the controller's (a migration from the
--   original operator, an upgrade), so the cluster stays Ready (its message names the held
--   objects) rather than Failed for kstatus and Degraded for Argo CD. The framework sets Stalled=True itself for an
--   invalid spec, a refused update and a policy error (docs/contracts.md, "Reconcile").
--   Reconciling=True while the controller works toward the spec: Creating, Updating (a rollout,
--   the savepoint before an update), Reconciling (reason Recovering), a cleanup not yet done
--   (CleaningUp), a job Pending or Updating (SubmittingJob), a restart that waits (RestartPending),
--   a requested cancel of a running job (Cancelling).
function status.compute(input)
  local old = input.cluster.status or {}
  local comps = util.deepcopy(input.components)
  comps.job = input.job
  local ready, remaining, missing, rolling = 0, 0, {}, false
  local counted = comps.taskManagers and status.COUNTED_NATIVE or status.COUNTED
  for _, key in ipairs(counted) do
    local c = comps[key]
    if c.state == "Ready" then ready = ready + 1 else missing[#missing + 1] = key .. " " .. c.state end
    if c.state ~= "Deleted" then remaining = remaining + 1 end
    if c.state == "Updating" then rolling = true end
  end
  local state
  if input.cleanup and input.cleanup ~= "" then
    if remaining == #counted then
      state = "Stopping"
    elseif remaining > 0 then
      state = "PartiallyStopped"
    else
      state = "Stopped"
    end
  elseif input.updating or (rolling and old.state ~= nil and old.state ~= "Creating") then
    state = "Updating"
  elseif ready == #counted then
    state = "Running"
  elseif old.state == nil or old.state == "Creating" then
    state = "Creating"
  else
    state = "Reconciling"
  end

  local conditions = { kstatus_conditions(input, state, missing) }
  if input.job then
    local js = input.job.state or "Pending"
    conditions[#conditions + 1] = { type = "JobRunning", status = js == "Running" and "True" or "False",
      reason = js, message = input.job.id and ("job " .. input.job.id .. " is " .. js) or ("job is " .. js) }
  end

  return {
    state = state,
    components = comps,
    savepoint = input.savepoint,
    control = input.control,
    currentRevision = (input.revision or {}).current,
    nextRevision = (input.revision or {}).next,
    conditions = conditions,
  }
end

return status
