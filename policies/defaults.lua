--- policies/defaults.lua: the defaults of a FlinkCluster (flinkoperator.k8s.io/v1beta1).
--
-- Hook: apply(cluster) -> cluster, the FlinkCluster with every default of the API filled in
-- (shared/reference/flinkcluster-api.md, "Spec"). Only fields that are unset (absent or null)
-- are filled. A field of the wrong type is left as it is for validate.lua to report, and a
-- missing optional section never raises. Ports are integers, memoryOffHeapRatio a percent,
-- memoryOffHeapMin a Kubernetes quantity (string, bytes).
local util = require("fc.util")
local values = require("lib.values")
local image_ref = require("lib.image")

local defaults = {}

local is_null, is_object = values.is_null, values.is_object

--- Component defaults: ports (container ports, integers) and memory (percent, quantity).
defaults.JOB_MANAGER_PORTS = { rpc = 6123, blob = 6124, query = 6125, ui = 8081 }
defaults.TASK_MANAGER_PORTS = { data = 6121, rpc = 6122, query = 6125 }
defaults.MEMORY_OFF_HEAP_RATIO = 25
defaults.MEMORY_OFF_HEAP_MIN = "600M"
--- Native TaskManagers: failed pods (terminated, or not registered in time) before no more are
-- started (ours; Flink's old resource manager had such a limit, without a fixed default here).
defaults.NATIVE_MAX_FAILED_ATTEMPTS = 10
--- Native TaskManagers: seconds from a pod's creation to its registration with the JobManager,
-- Flink's own `taskmanager.registration.timeout` default (5 min).
defaults.NATIVE_REGISTRATION_TIMEOUT_SECONDS = 300
defaults.CLEANUP_POLICY = {
  afterJobSucceeds = "DeleteCluster",
  afterJobFails = "KeepCluster",
  afterJobCancelled = "DeleteCluster",
}

-- t[k] = v when t[k] is unset (absent or null).
local function fill(t, k, v)
  if is_null(t[k]) then t[k] = util.deepcopy(v) end
end

-- t[k] as an object to fill: a new {} when unset, the table when it is an object,
-- nil when it holds a value of another type (left for validate to report).
local function section(t, k)
  if is_null(t[k]) then t[k] = {} end
  if is_object(t[k]) then return t[k] end
  return nil
end

--- defaults.pull_policy(image) -> "Always" | "IfNotPresent"
-- The rule Kubernetes applies to a container's imagePullPolicy (kubernetes
-- pkg/apis/core/v1/defaults.go, SetDefaults_Container, with the tag from
-- parsers.ParseImageName): "Always" when the tag is `latest` or the reference has neither
-- tag nor digest (it then means latest), else "IfNotPresent". Tag and digest as lib.image
-- reads them ("registry:5000/flink" has no tag). `image` is the image reference string.
function defaults.pull_policy(image)
  local ref = image_ref.parse(image)
  if ref.tag == "latest" or (ref.tag == nil and ref.digest == nil) then return "Always" end
  return "IfNotPresent"
end

-- Ports and memory defaults shared by the JobManager and the TaskManager spec `c`.
local function component(c, ports)
  local p = section(c, "ports")
  if p then
    for name, port in pairs(ports) do fill(p, name, port) end
  end
  fill(c, "memoryOffHeapRatio", defaults.MEMORY_OFF_HEAP_RATIO)
  fill(c, "memoryOffHeapMin", defaults.MEMORY_OFF_HEAP_MIN)
end

--- defaults.apply(cluster) -> cluster
-- `cluster` is a FlinkCluster as a Lua table (the API's JSON shape); returns a copy with:
--   spec.image.pullPolicy (Kubernetes rule above; only when image.name is a string),
--   spec.jobManager{replicas 1, accessScope "Cluster", ports{rpc 6123, blob 6124,
--     query 6125, ui 8081}, memoryOffHeapRatio 25, memoryOffHeapMin "600M"},
--   spec.taskManager{ports{data 6121, rpc 6122, query 6125}, memoryOffHeapRatio 25,
--     memoryOffHeapMin "600M"} (replicas is required in mode StatefulSet, never defaulted);
--     with mode Native also maxFailedAttempts 10 and registrationTimeoutSeconds 300 (mode
--     itself is not filled: an absent mode is StatefulSet, and an existing manifest keeps its
--     defaulted spec, hence its revision, unchanged),
--   spec.job, only when present (a job cluster){parallelism 1, allowNonRestoredState false,
--     takeSavepointOnUpgrade true, restartPolicy "Never", noLoggingToStdout false,
--     cleanupPolicy{afterJobSucceeds "DeleteCluster", afterJobFails "KeepCluster",
--     afterJobCancelled "DeleteCluster"}, each action filled on its own},
--   spec.revisionHistoryLimit 10, spec.recreateOnUpdate true.
-- metadata (name, namespace) is not defaulted: kubectl and the API server fill the namespace
-- from the request. A non-object `cluster` or `spec` comes back unchanged.
function defaults.apply(cluster)
  local out = util.deepcopy(cluster)
  if not is_object(out) then return out end
  local spec = section(out, "spec")
  if not spec then return out end

  local image = section(spec, "image")
  if image and type(image.name) == "string" and image.name ~= "" then
    fill(image, "pullPolicy", defaults.pull_policy(image.name))
  end

  local jm = section(spec, "jobManager")
  if jm then
    fill(jm, "replicas", 1)
    fill(jm, "accessScope", "Cluster")
    component(jm, defaults.JOB_MANAGER_PORTS)
  end

  local tm = section(spec, "taskManager")
  if tm then component(tm, defaults.TASK_MANAGER_PORTS) end
  if tm and tm.mode == "Native" then
    fill(tm, "maxFailedAttempts", defaults.NATIVE_MAX_FAILED_ATTEMPTS)
    fill(tm, "registrationTimeoutSeconds", defaults.NATIVE_REGISTRATION_TIMEOUT_SECONDS)
  end

  -- job: absent (or null) means a session cluster; only an object is defaulted.
  if is_null(spec.job) then
    spec.job = nil
  elseif is_object(spec.job) then
    local job = spec.job
    fill(job, "parallelism", 1)
    fill(job, "allowNonRestoredState", false)
    fill(job, "takeSavepointOnUpgrade", true)
    fill(job, "restartPolicy", "Never")
    fill(job, "noLoggingToStdout", false)
    local cleanup = section(job, "cleanupPolicy")
    if cleanup then
      for k, v in pairs(defaults.CLEANUP_POLICY) do fill(cleanup, k, v) end
    end
  end

  fill(spec, "revisionHistoryLimit", 10)
  fill(spec, "recreateOnUpdate", true)
  return out
end

return defaults
