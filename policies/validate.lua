--- policies/validate.lua: validation of a FlinkCluster (flinkoperator.k8s.io/v1beta1).
--
-- Hook: check({cluster=<defaulted>, raw=<as given>, old=<previous defaulted, {} on create>})
--   -> {errors = {{path=, message=}, ...}, warnings = {{path=, message=}, ...}}
-- The rules are those of shared/reference/flinkcluster-api.md ("Validation"), with its
-- **ours** decisions: names that keep every generated name and label value within 63
-- characters, and no crash on unset optional fields or values of the wrong type.
-- Paths use the API's JSON field names, `[i]` (from 0, as Kubernetes' field paths) for list
-- items and `[key]` for map keys that are not plain identifiers. Messages are short and
-- lowercase. Unknown fields of the FlinkCluster's own structure are warnings; embedded
-- Kubernetes types (volumes, containers, resources, securityContext, tolerations, ...) are
-- checked only for their JSON type, except the quantities in `resources`.
local profile = require("fc.profile")
local quantity = require("fc.quantity")
local util = require("fc.util")
local values = require("lib.values")

local validate = {}

local is_null, is_integer, is_object, is_list = values.is_null, values.is_integer,
  values.is_object, values.is_list

validate.API_VERSION = "flinkoperator.k8s.io/v1beta1"
validate.KIND = "FlinkCluster"
validate.PULL_POLICIES = { "Always", "IfNotPresent", "Never" }
validate.ACCESS_SCOPES = { "Cluster", "VPC", "External", "NodePort", "Headless" }
validate.RESTART_POLICIES = { "Never", "FromSavepointOnFailure" }
validate.CLEANUP_ACTIONS = { "KeepCluster", "DeleteCluster", "DeleteTaskManager" }
validate.PROTOCOLS = { "TCP", "UDP", "SCTP" }
validate.TASK_MANAGER_MODES = { "StatefulSet", "Native" }
--- Fields of spec.taskManager that only mode Native reads.
validate.NATIVE_FIELDS = { "resourceProfile", "maxPerTaskManager", "maxFailedAttempts",
  "registrationTimeoutSeconds", "slots" }
--- Kubernetes' limit for DNS labels and label values (apimachinery util/validation).
validate.MAX_LABEL = 63
--- Suffixes of the generated object names (see lib/names.lua); `job` only for a job cluster.
validate.NAME_SUFFIXES = {
  { suffix = "-configmap" }, { suffix = "-jobmanager" }, { suffix = "-taskmanager" },
  { suffix = "-job-submitter", job = true },
}
--- A StatefulSet's pods carry `controller-revision-hash: <statefulset>-<hash>` with a hash of
-- up to 10 characters, never truncated (kubernetes/kubernetes issue 64023), so a StatefulSet
-- name over 52 characters gives pods that cannot be created.
validate.MAX_STATEFULSET_NAME = 52

--------------------------------------------------------------------------------------------
-- Schema of the FlinkCluster's own structure. Node kinds: "string", "integer", "boolean",
-- "quantity" (Kubernetes quantity), "strmap" (object of strings), "qmap" (object of
-- quantities), "object" (an embedded
-- Kubernetes type: JSON type only), "resources" (ResourceRequirements: quantities),
-- {fields = {name = node}} (ours: unknown keys warn), {list = node}.

local K8S_OBJECT = "object"
--- A list of embedded Kubernetes objects (volumes, mounts, containers, env, tolerations, pull
-- secrets: every list of the API is one of objects): an item that is not an object is an
-- error here, not a policy failure while the pods are built.
local K8S_LIST = { list = K8S_OBJECT }

local EXTRA_PORT = { fields = { name = "string", containerPort = "integer", protocol = "string" } }

local function component_fields(ports, jobmanager)
  local f = {
    replicas = "integer",
    ports = { fields = ports },
    extraPorts = { list = EXTRA_PORT },
    resources = "resources",
    memoryOffHeapRatio = "integer",
    memoryOffHeapMin = "quantity",
    volumes = K8S_LIST, volumeMounts = K8S_LIST, volumeClaimTemplates = K8S_LIST,
    initContainers = K8S_LIST, sidecars = K8S_LIST, tolerations = K8S_LIST,
    nodeSelector = "strmap", podAnnotations = "strmap", podLabels = "strmap",
    securityContext = K8S_OBJECT,
  }
  if jobmanager then
    f.accessScope = "string"
    f.ingress = { fields = { hostFormat = "string", annotations = "strmap", useTls = "boolean",
                             tlsSecretName = "string" } }
  end
  return { fields = f }
end

local RESOURCE_SHAPE = { fields = { cpu = "quantity", memory = "quantity", extendedResources = "qmap" } }

local JOB = { fields = {
  jarFile = "string", className = "string", args = { list = "string" },
  fromSavepoint = "string", allowNonRestoredState = "boolean",
  takeSavepointOnUpgrade = "boolean", savepointsDir = "string",
  autoSavepointSeconds = "integer", savepointGeneration = "integer", parallelism = "integer",
  noLoggingToStdout = "boolean", volumes = K8S_LIST, volumeMounts = K8S_LIST,
  initContainers = K8S_LIST, restartPolicy = "string",
  cleanupPolicy = { fields = { afterJobSucceeds = "string", afterJobFails = "string",
                               afterJobCancelled = "string" } },
  cancelRequested = "boolean", podAnnotations = "strmap", podLabels = "strmap",
  resources = "resources", securityContext = K8S_OBJECT,
} }

local SPEC = { fields = {
  image = { fields = { name = "string", pullPolicy = "string", pullSecrets = K8S_LIST } },
  serviceAccountName = "string",
  batchSchedulerName = "string",
  jobManager = component_fields({ rpc = "integer", blob = "integer", query = "integer",
                                  ui = "integer" }, true),
  taskManager = (function()
    local tm = component_fields({ data = "integer", rpc = "integer", query = "integer" })
    tm.fields.mode = "string"
    tm.fields.resourceProfile = RESOURCE_SHAPE
    tm.fields.maxPerTaskManager = RESOURCE_SHAPE
    tm.fields.maxFailedAttempts = "integer"
    tm.fields.registrationTimeoutSeconds = "integer"
    tm.fields.slots = "integer"
    return tm
  end)(),
  job = JOB,
  envVars = K8S_LIST,
  envFrom = K8S_LIST,
  flinkProperties = "strmap",
  hadoopConfig = { fields = { configMapName = "string", mountPath = "string" } },
  gcpConfig = { fields = { serviceAccount = { fields = {
    secretName = "string", keyFile = "string", mountPath = "string" } } } },
  logConfig = "strmap",
  revisionHistoryLimit = "integer",
  recreateOnUpdate = "boolean",
} }

--- The schema of a whole FlinkCluster (see the node kinds above).
validate.SCHEMA = { fields = {
  apiVersion = "string", kind = "string", metadata = K8S_OBJECT, spec = SPEC,
  status = K8S_OBJECT,
} }

--------------------------------------------------------------------------------------------
-- Helpers

local sorted_keys = util.sorted_keys

-- path + key: ".key" for identifiers, "[key]" for anything else ("taskmanager.numberOf...").
local function key_path(path, key)
  key = tostring(key)
  if key:match("^[%a_][%w_]*$") then
    if path == "" then return key end
    return path .. "." .. key
  end
  return path .. "[" .. key .. "]"
end

local function index_path(path, i)
  return string.format("%s[%d]", path, i - 1)
end

local function one_of(v, list)
  for _, x in ipairs(list) do
    if v == x then return true end
  end
  return false
end

local function show(q)
  if math.type(q) == "float" and q == math.floor(q) then q = math.tointeger(q) end
  return tostring(q)
end

-- Levenshtein distance of two short strings.
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

-- The known field closest to the unknown `key` (same letters but case, or at most 2
-- edits away), or nil.
local function suggestion(key, fields)
  local best, best_d
  for _, k in ipairs(sorted_keys(fields)) do
    local d = k:lower() == key:lower() and 0 or distance(key, k)
    if d <= 2 and (best_d == nil or d < best_d) then best, best_d = k, d end
  end
  return best
end

--- validate.dns1035_label(s) -> bool: a Service name (apimachinery util/validation
-- IsDNS1035Label): at most 63 of [a-z0-9-], starting with a letter, ending alphanumeric.
function validate.dns1035_label(s)
  return type(s) == "string" and #s <= 63 and s:match("^[a-z][-a-z0-9]*$") ~= nil
    and s:match("[a-z0-9]$") ~= nil
end

--- validate.dns1123_label(s) -> bool: a namespace name (IsDNS1123Label): at most 63 of
-- [a-z0-9-], starting and ending alphanumeric.
function validate.dns1123_label(s)
  return type(s) == "string" and #s <= 63 and s:match("^[a-z0-9][-a-z0-9]*$") ~= nil
    and s:match("[a-z0-9]$") ~= nil
end

--- validate.port_name(s) -> bool: a container port name (IsValidPortName, IANA_SVC_NAME):
-- 1-15 of [a-z0-9-], at least one letter, no leading, trailing or double '-'.
function validate.port_name(s)
  return type(s) == "string" and #s >= 1 and #s <= 15 and s:match("^[-a-z0-9]+$") ~= nil
    and s:match("[a-z]") ~= nil and s:sub(1, 1) ~= "-" and s:sub(-1) ~= "-"
    and not s:find("--", 1, true)
end

--------------------------------------------------------------------------------------------
-- Type walk (on the defaulted cluster) and unknown-field walk (on the raw one).

local INT32_MIN, INT32_MAX = -2147483648, 2147483647
local TYPE_MESSAGES = {
  string = "must be a string", integer = "must be an integer", boolean = "must be a boolean",
}

local function check_quantity(v, path, add)
  local ok, reason = quantity.valid(v)
  if not ok then
    add(path, "invalid quantity: " .. reason)
    return
  end
  local b = quantity.bytes(v)
  if b ~= nil and b < 0 then add(path, "must not be negative") end
end

local function check_types(v, node, path, add)
  if is_null(v) then return end
  if node == "string" or node == "integer" or node == "boolean" then
    local ok = (node == "string" and type(v) == "string") or (node == "integer" and is_integer(v))
      or (node == "boolean" and type(v) == "boolean")
    if not ok then
      add(path, TYPE_MESSAGES[node])
    elseif node == "integer" and (v < INT32_MIN or v > INT32_MAX) then
      add(path, "must be a 32-bit integer")   -- the API's integers are int32 (Go types)
    end
  elseif node == "quantity" then
    check_quantity(v, path, add)
  elseif node == "strmap" then
    if not is_object(v) then return add(path, "must be an object") end
    for _, k in ipairs(sorted_keys(v)) do
      if not is_null(v[k]) and type(v[k]) ~= "string" then add(key_path(path, k), "must be a string") end
    end
  elseif node == "qmap" then
    if not is_object(v) then return add(path, "must be an object") end
    for _, k in ipairs(sorted_keys(v)) do
      if not is_null(v[k]) then check_quantity(v[k], key_path(path, k), add) end
    end
  elseif node == "object" then
    if not is_object(v) then add(path, "must be an object") end
  elseif node == "resources" then
    if not is_object(v) then return add(path, "must be an object") end
    for _, part in ipairs({ "limits", "requests" }) do
      local r = v[part]
      if not is_null(r) then
        if not is_object(r) then
          add(key_path(path, part), "must be an object")
        else
          for _, k in ipairs(sorted_keys(r)) do
            if not is_null(r[k]) then check_quantity(r[k], key_path(key_path(path, part), k), add) end
          end
        end
      end
    end
  elseif node.fields then
    if not is_object(v) then return add(path, "must be an object") end
    for _, k in ipairs(sorted_keys(node.fields)) do
      check_types(v[k], node.fields[k], key_path(path, k), add)
    end
  elseif node.list then
    if not is_list(v) then return add(path, "must be a list") end
    for i, item in ipairs(v) do check_types(item, node.list, index_path(path, i), add) end
  end
end

local function check_unknown(v, node, path, warn)
  if type(node) ~= "table" or is_null(v) then return end
  if node.fields and is_object(v) then
    for _, k in ipairs(sorted_keys(v)) do
      local child = node.fields[k]
      if child == nil then
        local hint = suggestion(k, node.fields)
        warn(key_path(path, k), hint and string.format('unknown field (did you mean "%s"?)', hint)
          or "unknown field")
      else
        check_unknown(v[k], child, key_path(path, k), warn)
      end
    end
  elseif node.list and is_list(v) then
    for i, item in ipairs(v) do check_unknown(item, node.list, index_path(path, i), warn) end
  end
end

--------------------------------------------------------------------------------------------
-- Rules

local function obj(v)
  if is_object(v) then return v end
  return nil
end

local function check_metadata(cluster, add, warn)
  local api, kind = cluster.apiVersion, cluster.kind
  if is_null(api) then add("apiVersion", "is required")
  elseif type(api) == "string" and api ~= validate.API_VERSION then
    add("apiVersion", "must be " .. validate.API_VERSION)
  end
  if is_null(kind) then add("kind", "is required")
  elseif type(kind) == "string" and kind ~= validate.KIND then add("kind", "must be " .. validate.KIND) end

  local meta = cluster.metadata
  if not is_object(meta) then
    if is_null(meta) then add("metadata.name", "is required") end
    return
  end
  -- The namespace may be absent from a manifest (kubectl and the API server take it from
  -- the request, and admission always sees it); when given it must be a namespace name.
  local ns = meta.namespace
  if not is_null(ns) then
    if type(ns) ~= "string" then add("metadata.namespace", "must be a string")
    elseif ns ~= "" and not validate.dns1123_label(ns) then
      add("metadata.namespace", "must be a DNS-1123 label (lowercase letters, digits and '-')")
    end
  end
  local name = meta.name
  if is_null(name) or name == "" then return add("metadata.name", "is required") end
  if type(name) ~= "string" then return add("metadata.name", "must be a string") end
  -- Service names are DNS-1035 labels (apimachinery ValidateServiceName): the JobManager
  -- Service is `<name>-jobmanager`, so the name must be one too (length checked below).
  if not (name:match("^[a-z][-a-z0-9]*$") and name:match("[a-z0-9]$")) then
    return add("metadata.name", "must be a DNS-1035 label: lowercase letters, digits and '-', "
      .. "starting with a letter and ending with a letter or digit")
  end
  -- ours: every generated object name and the `cluster` label value fit in 63 characters.
  local is_job = is_object(values.get(cluster, "spec", "job"))
  local longest, max = nil, validate.MAX_LABEL
  for _, n in ipairs(validate.NAME_SUFFIXES) do
    if (is_job or not n.job) and validate.MAX_LABEL - #n.suffix < max then
      longest, max = n.suffix, validate.MAX_LABEL - #n.suffix
    end
  end
  if #name > max then
    return add("metadata.name", string.format(
      'must be at most %d characters so that "<name>%s" fits in %d', max, longest, validate.MAX_LABEL))
  end
  local sts_max = validate.MAX_STATEFULSET_NAME - #"-taskmanager"
  if #name > sts_max then
    warn("metadata.name", string.format("longer than %d characters: the pods' controller-revision-hash "
      .. "label may exceed %d characters (kubernetes issue 64023)", sts_max, validate.MAX_LABEL))
  end
end

-- Ports of a component: the named Flink `ports` (in `order`) > 1024 and <= 65535 (Flink runs
-- unprivileged), `extraPorts` 1..65535 (Kubernetes' containerPort rule, as deploy/crd.yaml);
-- no number or name twice (the later one is reported, naming the earlier path).
local function check_ports(c, path, order, add)
  local by_number, by_name = {}, {}
  local function record(p, name, at, name_at, extra)
    if is_integer(p) then
      if extra and (p < 1 or p > 65535) then add(at, "must be between 1 and 65535")
      elseif not extra and p <= 1024 then add(at, "must be > 1024")
      elseif p > 65535 then add(at, "must be <= 65535")
      end
      local key = math.tointeger(p)
      if by_number[key] then
        add(at, string.format("duplicate port %d, also used by %s", key, by_number[key]))
      else
        by_number[key] = at
      end
    end
    if type(name) == "string" and name ~= "" then
      if by_name[name] then
        add(name_at, string.format('duplicate port name "%s", also used by %s', name, by_name[name]))
      else
        by_name[name] = name_at
      end
    end
  end
  local ports = obj(c.ports)
  if ports then
    for _, name in ipairs(order) do
      local at = path .. ".ports." .. name
      if is_null(ports[name]) then add(at, "is required") end
      record(ports[name], name, at, at)
    end
  end
  local extra = c.extraPorts
  if is_list(extra) then
    for i, ep in ipairs(extra) do
      local at = index_path(path .. ".extraPorts", i)
      if is_object(ep) then
        if is_null(ep.name) or ep.name == "" then add(at .. ".name", "is required")
        elseif type(ep.name) == "string" and not validate.port_name(ep.name) then
          add(at .. ".name", "must be a port name: at most 15 lowercase letters, digits and '-'")
        end
        if is_null(ep.containerPort) then add(at .. ".containerPort", "is required") end
        if type(ep.protocol) == "string" and not one_of(ep.protocol, validate.PROTOCOLS) then
          add(at .. ".protocol", "must be one of " .. table.concat(validate.PROTOCOLS, ", "))
        end
        record(ep.containerPort, ep.name, at .. ".containerPort", at .. ".name", true)
      end -- an item that is not an object: check_types reports it
    end
  end
end

-- memoryOffHeapRatio percent 0..100; memoryOffHeapMin <= resources.limits.memory (bytes).
local function check_memory(c, path, add)
  local ratio = c.memoryOffHeapRatio
  if is_integer(ratio) and (ratio < 0 or ratio > 100) then
    add(path .. ".memoryOffHeapRatio", "must be between 0 and 100")
  end
  local min = quantity.bytes(c.memoryOffHeapMin)
  local limit_q = values.get(c, "resources", "limits", "memory")
  local limit = limit_q ~= nil and quantity.bytes(limit_q) or nil
  if min and limit and min >= 0 and limit >= 0 and min > limit then
    add(path .. ".memoryOffHeapMin", string.format("must be <= resources.limits.memory (%s > %s)",
      show(c.memoryOffHeapMin), show(limit_q)))
  end
end

local function check_enum(v, list, path, add)
  if type(v) == "string" and not one_of(v, list) then
    add(path, "must be one of " .. table.concat(list, ", "))
  end
end

local function check_job(job, creating, add)
  if is_null(job.jarFile) or job.jarFile == "" then add("spec.job.jarFile", "is required") end
  if is_integer(job.parallelism) and job.parallelism < 1 then
    add("spec.job.parallelism", "must be >= 1")
  end
  if is_integer(job.autoSavepointSeconds) and job.autoSavepointSeconds < 0 then
    add("spec.job.autoSavepointSeconds", "must be >= 0")
  end
  if is_integer(job.savepointGeneration) and job.savepointGeneration < 0 then
    add("spec.job.savepointGeneration", "must be >= 0")
  end
  check_enum(job.restartPolicy, validate.RESTART_POLICIES, "spec.job.restartPolicy", add)
  local cleanup = obj(job.cleanupPolicy)
  if cleanup then
    for _, k in ipairs({ "afterJobSucceeds", "afterJobFails", "afterJobCancelled" }) do
      check_enum(cleanup[k], validate.CLEANUP_ACTIONS, "spec.job.cleanupPolicy." .. k, add)
    end
  end
  if creating and job.cancelRequested == true then
    add("spec.job.cancelRequested", "must not be true at creation")
  end
end

-- Mode Native: the slot demand (spec.taskManager.slots for a session cluster; a job cluster's
-- is spec.job.parallelism), the limits, and resource shapes fc.profile can read; extended
-- resources must come out whole per pod (Kubernetes takes no fractional extended resources).
local function check_native(tm, is_job, add, warn)
  if is_job and not is_null(tm.slots) then
    add("spec.taskManager.slots", "only for a session cluster: a job cluster's demand is spec.job.parallelism")
  elseif not is_job and is_null(tm.slots) then
    add("spec.taskManager.slots", "is required with mode Native for a session cluster")
  elseif is_integer(tm.slots) and tm.slots < 1 then
    add("spec.taskManager.slots", "must be >= 1")
  end
  if not is_null(tm.replicas) then
    warn("spec.taskManager.replicas", "ignored with mode Native: the slot demand sets the pods")
  end
  for _, k in ipairs({ "maxFailedAttempts", "registrationTimeoutSeconds" }) do
    if is_integer(tm[k]) and tm[k] < 1 then add("spec.taskManager." .. k, "must be >= 1") end
  end
  -- only shapes whose parts have the right JSON types (the type walk reports the others)
  for _, k in ipairs({ "resourceProfile", "maxPerTaskManager" }) do
    local shape = tm[k]
    if not is_null(shape) and (not is_object(shape) or not quantity.valid(shape.cpu or 0)
        or not quantity.valid(shape.memory or 0)) then
      return
    end
  end
  local p, errors = profile.of(tm)
  for _, e in ipairs(errors or {}) do
    -- the type walk already reports malformed and negative quantities
    if not (e.message:find("^invalid quantity") or e.message == "must not be negative") then
      add(e.path, e.message)
    end
  end
  if not p then return end
  for name, a in pairs(p.profile.extended) do
    local total = a * p.slots
    if math.abs(total - math.floor(total + 0.5)) > 1e-9 then
      add("spec.taskManager.resourceProfile.extendedResources[" .. name .. "]",
        string.format("%s per slot x %d slots per TaskManager is not a whole number", show(a), p.slots))
    end
  end
end

local function check_spec(spec, creating, add, warn)
  local image = obj(spec.image)
  if (image and (is_null(image.name) or image.name == "")) or is_null(spec.image) then
    add("spec.image.name", "is required")
  end
  if image then check_enum(image.pullPolicy, validate.PULL_POLICIES, "spec.image.pullPolicy", add) end

  local jm = obj(spec.jobManager)
  if jm then
    if is_integer(jm.replicas) and jm.replicas ~= 1 then add("spec.jobManager.replicas", "must be 1") end
    check_enum(jm.accessScope, validate.ACCESS_SCOPES, "spec.jobManager.accessScope", add)
    check_ports(jm, "spec.jobManager", { "rpc", "blob", "query", "ui" }, add)
    check_memory(jm, "spec.jobManager", add)
  end

  local tm = obj(spec.taskManager)
  local native = tm and tm.mode == "Native"
  if tm then check_enum(tm.mode, validate.TASK_MANAGER_MODES, "spec.taskManager.mode", add) end
  if native then
    check_native(tm, obj(spec.job) ~= nil, add, warn)
  elseif not tm or is_null(tm.replicas) then
    if is_null(spec.taskManager) or tm then add("spec.taskManager.replicas", "is required") end
  elseif is_integer(tm.replicas) and tm.replicas < 1 then
    add("spec.taskManager.replicas", "must be >= 1")
  end
  if tm and not native then
    for _, k in ipairs(validate.NATIVE_FIELDS) do
      if not is_null(tm[k]) then warn("spec.taskManager." .. k, "used only with mode Native: ignored") end
    end
  end
  if tm then
    check_ports(tm, "spec.taskManager", { "data", "rpc", "query" }, add)
    check_memory(tm, "spec.taskManager", add)
  end

  local job = obj(spec.job)
  if job then check_job(job, creating, add) end

  local hadoop = obj(spec.hadoopConfig)
  if hadoop then
    for _, k in ipairs({ "configMapName", "mountPath" }) do
      if is_null(hadoop[k]) or hadoop[k] == "" then add("spec.hadoopConfig." .. k, "is required") end
    end
  end
  local gcp = obj(spec.gcpConfig)
  if gcp then
    local sa = gcp.serviceAccount
    if is_null(sa) then
      add("spec.gcpConfig.serviceAccount", "is required")
    elseif is_object(sa) then
      for _, k in ipairs({ "secretName", "keyFile", "mountPath" }) do
        if is_null(sa[k]) or sa[k] == "" then add("spec.gcpConfig.serviceAccount." .. k, "is required") end
      end
    end
  end
  if is_integer(spec.revisionHistoryLimit) and spec.revisionHistoryLimit < 0 then
    add("spec.revisionHistoryLimit", "must be >= 0")
  end
end

-- Update rules: `spec` and `old_spec` are objects (the old one defaulted), `old` the old
-- FlinkCluster (for its status).
local function check_update(spec, old_spec, old, add)
  local job, old_job = obj(spec.job), obj(old_spec.job)
  if (job == nil) ~= (old_job == nil) then
    if job then
      add("spec.job", "cannot be added: a session cluster cannot become a job cluster")
    else
      add("spec.job", "cannot be removed: a job cluster cannot become a session cluster")
    end
    return
  end
  if not job then return end
  if values.is_text(old_job.savepointsDir) and not values.is_text(job.savepointsDir) then
    add("spec.job.savepointsDir", "cannot be removed")
  end
  local gen, old_gen = job.savepointGeneration, old_job.savepointGeneration
  if is_null(gen) then gen = 0 end
  if not is_integer(old_gen) then old_gen = 0 end
  if is_integer(gen) and gen ~= old_gen then
    local status_gen = values.get(old, "status", "components", "job", "savepointGeneration")
    if not is_integer(status_gen) then status_gen = 0 end
    if gen ~= status_gen + 1 then
      add("spec.job.savepointGeneration", string.format(
        "may only change to status + 1 (%d)", math.tointeger(status_gen + 1)))
    end
  end
  -- The original forbids true -> false; ours allows it with a new fromSavepoint (to resume
  -- a cancelled job from a savepoint).
  if old_job.cancelRequested == true and job.cancelRequested ~= true then
    local from, old_from = job.fromSavepoint, old_job.fromSavepoint
    if not (values.is_text(from) and from ~= old_from) then
      add("spec.job.cancelRequested", "cannot change from true to false without a new spec.job.fromSavepoint")
    end
  end
end

--- validate.check(input) -> {errors = {{path, message}...}, warnings = {{path, message}...}}
-- `input.cluster`: the FlinkCluster after defaults.apply (types and values checked);
-- `input.raw`: the FlinkCluster as given (unknown fields are warned about from it);
-- `input.old`: the previous, defaulted FlinkCluster on update, {} (or nil) on create.
-- Never raises on malformed input: every problem becomes an error entry.
function validate.check(input)
  local errors, warnings = {}, {}
  local function add(path, message) errors[#errors + 1] = { path = path, message = message } end
  local function warn(path, message) warnings[#warnings + 1] = { path = path, message = message } end
  input = obj(input) or {}
  local cluster = input.cluster
  local raw = input.raw
  if is_null(raw) then raw = cluster end
  local old = obj(input.old) or {}

  if not is_object(cluster) then
    add("", "must be an object")
    return { errors = errors, warnings = warnings }
  end
  check_unknown(raw, validate.SCHEMA, "", warn)
  check_metadata(cluster, add, warn)
  check_types(cluster, validate.SCHEMA, "", add)
  if is_null(cluster.spec) then
    add("spec", "is required")
  elseif is_object(cluster.spec) then
    local old_spec = obj(old.spec)
    check_spec(cluster.spec, old_spec == nil, add, warn)
    if old_spec then check_update(cluster.spec, old_spec, old, add) end
  end
  return { errors = errors, warnings = warnings }
end

return validate
