-- SPDX-License-Identifier: Apache-2.0
--- fc.taskmanagers: Native TaskManagers (spec.taskManager.mode Native). The controller plays
-- Flink's resource manager: one pod per TaskManager, as many as the slot demand needs, each
-- checked for registration with the JobManager, failed ones replaced up to a limit.
--
-- Trusted framework code, called by fc.reconcile on each pass of a Native cluster. The state of
-- each cluster is an fc.slots accounting (core/slots.c: the rules, slots.h "The controller's
-- pass") kept here for the life of the process, keyed by "<namespace>/<name>"; after a
-- controller restart (or a new FlinkCluster uid, or changed limits) it is rebuilt from the pods
-- the cache lists: their names (ids), `priority` labels, creation times and resource annotations,
-- plus the failed attempts the status recorded (status.components.taskManagers.failedAttempts).
--
-- A pass:
--   local st = taskmanagers.observe(key, cluster, children, flink, now)  -- before the policies
--   ... st.summary feeds status.components (taskManagers) ...
--   local out = taskmanagers.decide(st, demand, template, now)  -- last step
-- `template` is the cluster policy's taskmanager_pod result; out.create are the pod objects to
-- apply, out.delete the pod names to delete, out.events Warning events, out.requeue_after
-- seconds. Pod names are <cluster>-taskmanager-<id>; ids are never reused.
local clock = require("fc.clock")
local codec = require("fc.codec")
local names = require("fc.names")
local profile = require("fc.profile")
local slots = require("fc.slots")
local util = require("fc.util")

local taskmanagers = {}

--- Label with the pod's priority (fc.slots: one per distinct resource profile).
taskmanagers.PRIORITY_LABEL = "priority"
--- Annotation with one slot's resource (fc.slots shape, JSON): a restarted controller binds the
-- priority to it again, so the pod stays replaceable (issue 10 item 4).
taskmanagers.RESOURCE_ANNOTATION = "flinkoperator.k8s.io/taskmanager-resource"
--- Seconds between checks while a pod waits for its registration (GET /taskmanagers).
taskmanagers.POLL_SECONDS = 10
--- Start cool-down after a pod could not be created (doubled per failure, at most the max).
taskmanagers.START_BACKOFF_SECONDS = 5
taskmanagers.START_BACKOFF_MAX_SECONDS = 300

local registry = {}

--- taskmanagers.is_native(cluster) -> bool (the defaulted FlinkCluster)
function taskmanagers.is_native(cluster)
  local tm = (cluster.spec or {}).taskManager
  return type(tm) == "table" and tm.mode == "Native"
end

--- taskmanagers.demand(cluster[, removed]) -> slots wanted: spec.job.parallelism for a job
-- cluster, spec.taskManager.slots for a session cluster, 0 when `removed` (job.decide's cleanup
-- removes the TaskManager pods: its `remove` list names kind "Pod"; nil: no cleanup).
function taskmanagers.demand(cluster, removed)
  if removed then return 0 end
  local spec = cluster.spec
  if type(spec.job) == "table" then return math.tointeger(spec.job.parallelism) or 1 end
  return math.tointeger(spec.taskManager.slots) or 0
end

local function prefix_of(name) return name .. "-taskmanager-" end

-- The Native TaskManager pods among the children: Pods labelled component=taskmanager
-- (fc.names.COMPONENT_LABEL) that no StatefulSet owns (a StatefulSet's pods are mode
-- StatefulSet's, going away after a switch).
local function listed_pods(children)
  local out = {}
  for name, pod in pairs(children.Pod or {}) do
    local md = pod.metadata or {}
    local owned_by_sts = false
    for _, ref in ipairs(md.ownerReferences or {}) do
      if ref.kind == "StatefulSet" then owned_by_sts = true end
    end
    if (md.labels or {})[names.COMPONENT_LABEL] == "taskmanager" and not owned_by_sts then
      out[#out + 1] = { name, pod }
    end
  end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  return out
end

--- taskmanagers.leftovers(children) -> sorted names of the Native TaskManager pods (with a
-- `priority` label) not being deleted: what a cluster switched back to mode StatefulSet deletes.
function taskmanagers.leftovers(children)
  local out = {}
  for _, p in ipairs(listed_pods(children)) do
    local md = p[2].metadata or {}
    if (md.labels or {})[taskmanagers.PRIORITY_LABEL] ~= nil and not md.deletionTimestamp then out[#out + 1] = p[1] end
  end
  return out
end

--- taskmanagers.without_pods(children) -> children without the Native TaskManager pods (a
-- shallow copy; the other kinds and pods are shared).
function taskmanagers.without_pods(children)
  local out, pods = {}, {}
  for k, v in pairs(children) do out[k] = v end
  local tms = {}
  for _, p in ipairs(listed_pods(children)) do tms[p[1]] = true end
  for name, pod in pairs(children.Pod or {}) do
    if not tms[name] then pods[name] = pod end
  end
  out.Pod = pods
  return out
end

-- A pod's creation time, unix seconds (fc.clock: UTC); 0 when it has none or it does not parse.
local function created_seconds(s)
  return clock.parse(s) or 0
end

local function priority_of(pod)
  local v = ((pod.metadata or {}).labels or {})[taskmanagers.PRIORITY_LABEL]
  if type(v) ~= "string" or not v:match("^%d+$") or #v > 10 then return nil end
  return math.tointeger(tonumber(v))
end

local PHASES = { Pending = true, Running = true, Unknown = true, Succeeded = true, Failed = true }

local function phase_of(pod)
  local p = (pod.status or {}).phase
  return PHASES[p] and p or "Pending"
end

-- The resource annotation of a pod, decoded and checked, or nil.
local function resource_of(pod)
  local text = ((pod.metadata or {}).annotations or {})[taskmanagers.RESOURCE_ANNOTATION]
  if type(text) ~= "string" then return nil end
  local ok, r = pcall(codec.decode_json, text)
  if not ok or type(r) ~= "table" then return nil end
  local ok2 = pcall(slots.per_taskmanager, r, {})
  return ok2 and r or nil
end

-- Rebuilds an accounting from the listed pods (a restart, a new uid, changed limits). Pods whose
-- names or labels do not parse are left out: the pass then deletes them as malformed.
local function recovered(cfg, prefix, pods, now)
  local acct = slots.new(cfg)
  acct:begin_pass(now)
  local records = {}
  for _, p in ipairs(pods) do
    local name, pod = p[1], p[2]
    local id = name:sub(1, #prefix) == prefix and name:sub(#prefix + 1):match("^[1-9]%d*$")
    local prio = priority_of(pod)
    if id and #id <= 18 and prio then
      local phase = phase_of(pod)
      records[#records + 1] = { name = name, id = math.tointeger(tonumber(id)), priority = prio,
        -- registration is known from the JobManager's next answer, not from the pod
        phase = (phase == "Succeeded" or phase == "Failed") and phase or "Pending",
        created = created_seconds((pod.metadata or {}).creationTimestamp), resource = resource_of(pod) }
    end
  end
  if not pcall(acct.recover, acct, records) then
    -- conflicting annotations (one priority, two resources): recover without them
    for _, r in ipairs(records) do r.resource = nil end
    acct = slots.new(cfg)
    acct:begin_pass(now)
    if not pcall(acct.recover, acct, records) then
      acct = slots.new(cfg)
      acct:begin_pass(now)
    end
  end
  return acct, #records
end

local function summary(acct, p, demand)
  local snap = acct:snapshot()
  local pending, registered = 0, 0
  for _, n in pairs(snap.pending) do pending = pending + n end
  for _, n in pairs(snap.registered) do registered = registered + n end
  return { pods = pending + registered, registered = registered, slotsPerTaskManager = p.slots,
    demand = demand, failedAttempts = snap.failed_attempts, maxFailedAttempts = snap.max_failed_attempts }
end

--- taskmanagers.observe(key, cluster, children, flink, now, demand) -> st
-- `cluster`: the defaulted Native FlinkCluster (metadata.uid, spec.taskManager); `children`:
-- the snapshot's children (Pods); `flink`: the snapshot's Flink answers (flink.taskmanagers =
-- {ids, time} from GET /taskmanagers); `demand`: the slots wanted (for the summary only).
-- st = {acct, profile = {profile, max, slots}, delete = {{name, reason}}, events = {...},
--   summary = <status.components' taskmanagers input>, recovered = <pods recovered or nil>}.
-- Errors: raises on a spec fc.profile cannot read (validate refuses those first).
function taskmanagers.observe(key, cluster, children, flink, now, demand)
  local tm = cluster.spec.taskManager
  local p = assert(profile.of(tm))
  local name = cluster.metadata.name
  local prefix = prefix_of(name)
  local cfg = { max = p.max, name_prefix = prefix, max_failed_attempts = math.tointeger(tm.maxFailedAttempts) or 10,
    registration_timeout_seconds = tonumber(tm.registrationTimeoutSeconds) or 300,
    start_backoff_seconds = taskmanagers.START_BACKOFF_SECONDS,
    start_backoff_max_seconds = taskmanagers.START_BACKOFF_MAX_SECONDS, max_pods = 1 << 20 }
  local sig = codec.encode_json({ cfg.max, cfg.max_failed_attempts, cfg.registration_timeout_seconds })
  local uid = cluster.metadata.uid or ""
  local pods = listed_pods(children)
  local entry = registry[key]
  local st = { profile = p, delete = {}, events = {} }
  if not entry or entry.uid ~= uid or entry.sig ~= sig then
    local acct, n = recovered(cfg, prefix, pods, now)
    -- the count the previous accounting wrote into the status goes on (a restart does not lift
    -- the maxFailedAttempts stop); pods that ended meanwhile were counted by the recovery
    local before = (((cluster.status or {}).components or {}).taskManagers or {}).failedAttempts
    if type(before) == "number" and before > 0 and before == math.floor(before) and before < 2 ^ 31 then
      acct:add_failed(math.tointeger(before))
    end
    entry = { uid = uid, sig = sig, acct = acct }
    registry[key] = entry
    st.recovered = n
  end
  local acct = entry.acct
  st.acct = acct
  acct:begin_pass(now)
  for _, lp in ipairs(pods) do
    local pod_name, pod = lp[1], lp[2]
    local md = pod.metadata or {}
    local verdict = acct:observe_pod(pod_name, priority_of(pod), phase_of(pod), created_seconds(md.creationTimestamp))
    if verdict ~= "keep" and not md.deletionTimestamp then
      st.delete[#st.delete + 1] = { pod_name, verdict }
      if verdict == "terminated" then
        st.events[#st.events + 1] = { type = "Warning", reason = "TaskManagerFailed",
          message = "TaskManager pod " .. pod_name .. " ended (" .. phase_of(pod) .. "): replaced" }
      end
    end
  end
  local answer = flink.taskmanagers
  local answered_at
  if type(answer) == "table" and type(answer.ids) == "table" and type(answer.time) == "number" then
    for _, id in ipairs(answer.ids) do
      if type(id) == "string" then acct:tm_registered(id) end
    end
    answered_at = answer.time
  end
  for _, ev in ipairs(acct:sweep(answered_at)) do
    if ev.kind == "timeout" then
      st.delete[#st.delete + 1] = { ev.pod_name, "timeout" }
      st.events[#st.events + 1] = { type = "Warning", reason = "TaskManagerNotRegistered",
        message = string.format("TaskManager pod %s did not register with the JobManager within %ds: replaced",
          ev.pod_name, math.tointeger(cfg.registration_timeout_seconds) or 0) }
    elseif ev.kind == "gone" then
      st.events[#st.events + 1] = { type = "Warning", reason = "TaskManagerFailed",
        message = "TaskManager pod " .. ev.pod_name .. " disappeared: replaced" }
    else
      st.events[#st.events + 1] = { type = "Warning", reason = "TaskManagerStartFailed",
        message = string.format("TaskManager pod %s was not created; new pods wait %ds", ev.pod_name,
          math.tointeger(math.ceil(ev.wait_until - now)) or 0) }
    end
  end
  st.summary = summary(acct, p, demand)
  return st
end

--- taskmanagers.decide(st, demand, template, now) -> {create = {pods}, delete = {names},
--   events = {...}, stopped = bool, requeue_after = seconds or nil, summary = {...}}
-- `template`: the taskmanager_pod policy's Pod for this profile; may be nil when
-- st.summary.pods x slots >= demand (no pod can be requested then).
function taskmanagers.decide(st, demand, template, now)
  local acct, p = st.acct, st.profile
  local actions, final = acct:demand(p.profile, demand)
  local out = { create = {}, delete = {}, events = st.events }
  for _, d in ipairs(st.delete) do out.delete[#out.delete + 1] = d[1] end
  local annotation = codec.encode_json(p.profile)
  for _, a in ipairs(actions) do
    if a.action == "request" then
      assert(template, "fc.taskmanagers.decide: a pod is requested but no template was given")
      local pod = util.deepcopy(template)
      local md = pod.metadata
      md.name = a.pod_name
      md.labels = md.labels or {}
      md.labels[taskmanagers.PRIORITY_LABEL] = tostring(a.priority)
      md.annotations = md.annotations or {}
      md.annotations[taskmanagers.RESOURCE_ANNOTATION] = annotation
      out.create[#out.create + 1] = pod
    else
      out.delete[#out.delete + 1] = a.pod_name
    end
  end
  out.stopped = final.action == "stopped"
  if final.action == "wait" then
    out.requeue_after = math.max(1, math.ceil(final.wait_until - now))
  end
  out.summary = summary(acct, p, demand)
  if out.summary.pods > out.summary.registered then
    -- waiting for registrations (and their deadlines)
    out.requeue_after = math.min(out.requeue_after or taskmanagers.POLL_SECONDS, taskmanagers.POLL_SECONDS)
  end
  return out
end

--- taskmanagers.render(cluster, template) -> pods: the pods a new Native cluster starts with
-- (a fresh accounting, the demand of the spec), for `flink-controller render`.
function taskmanagers.render(cluster, template)
  local p = assert(profile.of(cluster.spec.taskManager))
  local name = cluster.metadata.name
  local st = { acct = slots.new({ max = p.max, name_prefix = prefix_of(name), max_pods = 1 << 20 }),
    profile = p, delete = {}, events = {} }
  st.acct:begin_pass(0)
  return taskmanagers.decide(st, taskmanagers.demand(cluster), template, 0).create
end

--- taskmanagers.forget(key): drops a cluster's accounting (the FlinkCluster is gone).
function taskmanagers.forget(key)
  registry[key] = nil
end

return taskmanagers
