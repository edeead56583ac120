--- policies/status.lua: the observed state of a FlinkCluster (API "Status" and "Behaviour").
-- Pure. The framework calls `components` first (job.lua needs to know what is Ready), then
-- `compute`; it stamps conditions with lastTransitionTime/observedGeneration, sets
-- status.observedGeneration and lastUpdateTime, and adds the PolicyError condition itself.
local util = require("fc.util")
local names = require("lib.names")

local status = {}

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

--- status.compute(input) -> status
-- input: {cluster=<defaulted, status as observed or {}>, components=<from status.components>,
--   job=<status.components.job or nil for a session cluster>, savepoint=<status.savepoint or nil>,
--   control=<status.control or nil>, cleanup=<"DeleteCluster"|"DeleteTaskManager"|"">,
--   updating=bool (a new revision is being rolled out), revision={current=, next=}, now=<unix s>}.
-- Output: {state=, components=<with job>, savepoint=, control=, currentRevision=, nextRevision=,
--   conditions={{type=, status="True"|"False", reason=, message=}...}} (Ready, and JobRunning
--   for a job cluster).
-- State machine (API "Behaviour"): with a cleanup in effect, Stopping while the three counted
-- components all remain, PartiallyStopped while some do, Stopped when none; else Updating
-- while a new revision is not yet rolled out (`updating`) or, once the cluster has run, while a
-- StatefulSet rolls out; else Running when the three are Ready, Creating when the cluster never ran,
-- and Reconciling when it did.
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

  local conditions = {}
  if state == "Running" then
    conditions[1] = { type = "Ready", status = "True", reason = "Running", message = "all components are Ready" }
  else
    local msg = #missing > 0 and ("not ready: " .. table.concat(missing, ", ")) or ("cluster is " .. state)
    conditions[1] = { type = "Ready", status = "False", reason = state, message = msg }
  end
  if input.job then
    local js = input.job.state or "Pending"
    conditions[2] = { type = "JobRunning", status = js == "Running" and "True" or "False", reason = js,
      message = input.job.id and ("job " .. input.job.id .. " is " .. js) or ("job is " .. js) }
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
