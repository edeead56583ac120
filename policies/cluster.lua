-- SPDX-License-Identifier: Apache-2.0
--- Policy `cluster`: the Kubernetes objects a FlinkCluster should have.
--
-- desired({cluster = <FlinkCluster after defaults.apply>}) -> {objects = {obj, ...},
--   jobmanager = {scheme, service, port}, ha_configmaps = <bool: Flink's Kubernetes HA services
--   run (upgradeMode last-state): the controller deletes their ConfigMaps with the cluster,
--   lua/fc/haclean.lua>}
-- Objects are plain tables shaped as the API's JSON, in apply order:
--   ConfigMap   <n>-configmap       config.yaml (Flink 1.19+) or flink-conf.yaml (older; both
--                                   for an unknown version: lib.flinkconf.files),
--                                   log4j-console.properties, logback-console.xml,
--                                   submit-job.sh (job clusters)
--   StatefulSet <n>-jobmanager      jobManager.replicas (default 1; more only with HA: each then
--                                   announces its pod IP, -D jobmanager.rpc.address=$(POD_IP)),
--                                   container `jobmanager`
--   Service     <n>-jobmanager      type from jobManager.accessScope
--   Ingress     <n>-jobmanager      only with jobManager.ingress
--   StatefulSet <n>-taskmanager     taskManager.replicas, Parallel pod management (mode
--                                   StatefulSet; mode Native has none: see taskmanager_pod)
--   Job         <n>-job-submitter   only with spec.job: runs `flink run` once
--   ServiceAccount, Role, RoleBinding <n>-flink-ha
--                                   only with Flink's Kubernetes HA services (upgradeMode
--                                   last-state) and no spec.serviceAccountName: the pods' account,
--                                   allowed what the HA services do with the namespace's
--                                   ConfigMaps (HA_RULES); placed before the pods that use it
-- Every object: labels app=flink, cluster=<n> (and flinkoperator.k8s.io/revision-name with
-- REVISION_LABEL, below), the cluster's namespace (when it has one) and a controller
-- ownerReference to the FlinkCluster, so Kubernetes deletes them with it. The objects are the
-- original operator's, field by field, but for the deviations docs/original-objects.md lists
-- (tests/golden_spec.lua checks them against its converter tests).
-- Pod templates carry `flinkoperator.k8s.io/config-hash`, a hash of the ConfigMap files their
-- pods read (lib.confighash): Kubernetes does not restart pods when a ConfigMap changes, a
-- StatefulSet does when its template does, so a change of flinkProperties or logConfig restarts
-- the JobManager and the TaskManagers (for a job cluster inside the update: savepoint, cancel,
-- new pods, resubmit; see lua/fc/reconcile.lua and job.lua), and nothing else.
-- Errors (policy errors, file:line): a memory limit that leaves no heap, an unknown
-- accessScope, a flinkProperties option that cannot be written to the legacy flink-conf.yaml.
-- The ControllerRevision history is the reconciler's, not this policy's.
local util = require("fc.util")
local profile = require("fc.profile")
local confighash = require("lib.confighash")
local flinkpod = require("lib.flinkpod")
local names = require("lib.names")
local taskmanager = require("taskmanager")
local flinkconf = require("lib.flinkconf")
local flinkversion = require("lib.flinkversion")
local logconf = require("lib.logconf")
local pods = require("lib.pods")
local submitter = require("lib.submitter")
local upgrade = require("lib.upgrade")
local values = require("lib.values")

local cluster_policy = {}
--- The hook contract this policy is written for (fc.contract; another version is refused).
cluster_policy.contract = "hooks.flinkoperator.k8s.io/v1"
--- Environment variable with the JobManager pod's IP (downward API, status.podIP) when there
-- are more than one (spec.jobManager.replicas, HA): the address each announces (lib.flinkpod).
cluster_policy.POD_IP_ENV = flinkpod.POD_IP_ENV

--- ConfigMap `<n>-configmap`: the files under /opt/flink/conf of every pod. Entries of
-- spec.logConfig (file name -> contents) replace ours or add files. `rev`: the revision name
-- for the revision label (nil: none).
local function configmap(c, rev)
  local n, spec = c.metadata.name, c.spec
  local data = flinkconf.files(c)
  -- log4j 2 arrived with Flink 1.11; unknown versions count as new (lib.flinkversion.at_least)
  data["log4j-console.properties"] = logconf.log4j_console(flinkversion.at_least(flinkversion.of(spec), 1, 11))
  data["logback-console.xml"] = logconf.logback_console()
  if spec.job then data[submitter.SCRIPT_KEY] = submitter.script(c) end
  for file, contents in pairs(spec.logConfig or {}) do data[file] = contents end
  return {
    apiVersion = "v1",
    kind = "ConfigMap",
    metadata = names.metadata(c, names.configmap(n), names.object_labels(names.cluster_labels(n), nil, rev)),
    data = data,
  }
end

--- StatefulSet of a component; the selector is the fixed component labels (never podLabels:
-- Kubernetes makes a StatefulSet's selector immutable). Its own labels: the component labels,
-- the podLabels and the revision label (`rev`), as the original operator's.
local function component_statefulset(c, component, comp, config_hash, rev)
  local n, spec = c.metadata.name, c.spec
  local name = component == "jobmanager" and names.jobmanager(n) or names.taskmanager(n)
  local selector = names.component_labels(n, component)
  local template
  if component == "taskmanager" then
    template = taskmanager.pod_template({ cluster = c, config_hash = config_hash }).template
  else
    template = flinkpod.template(c, component, comp, config_hash)
  end
  local sts_spec = {
    replicas = comp.replicas,
    serviceName = name,
    selector = { matchLabels = selector },
    template = template,
    volumeClaimTemplates = util.nonempty(comp.volumeClaimTemplates),
    revisionHistoryLimit = spec.revisionHistoryLimit,
  }
  if component == "taskmanager" then
    -- TaskManagers are interchangeable: start and stop them all at once instead of one by one
    sts_spec.podManagementPolicy = "Parallel"
  end
  return {
    apiVersion = "apps/v1",
    kind = "StatefulSet",
    metadata = names.metadata(c, name, names.object_labels(names.component_labels(n, component), comp.podLabels, rev)),
    spec = sts_spec,
  }
end

-- Annotations that make a LoadBalancer internal to the VPC for accessScope VPC, on GKE (the
-- original operator's platform): the original's "cloud.google.com/load-balancer-type:
-- Internal", which GKE's service controller still reads as a deprecated name
-- (cloud-provider-gcp, GetLoadBalancerAnnotationType), and the name GKE documents today,
-- "networking.gke.io/load-balancer-type: Internal" (GKE docs, "LoadBalancer Service
-- parameters"), which it reads first.
local VPC_ANNOTATIONS = {
  ["cloud.google.com/load-balancer-type"] = "Internal",
  ["networking.gke.io/load-balancer-type"] = "Internal",
}

--- Service `<n>-jobmanager` selecting the JobManager pod. accessScope:
-- Cluster -> ClusterIP; VPC -> internal LoadBalancer; External -> LoadBalancer;
-- NodePort -> NodePort; Headless -> ClusterIP with clusterIP None (DNS names the pod directly).
-- Ports: rpc, blob, query, ui and the extraPorts, each targeting the container port by its
-- name (the original's targetPorts; an extra port without a name by its number). Labels: the
-- JobManager's, its podLabels and the revision label (`rev`); the selector never has podLabels.
local function jobmanager_service(c, rev)
  local n, jm = c.metadata.name, c.spec.jobManager
  local svc = { selector = names.component_labels(n, "jobmanager") }
  local annotations
  local scope = jm.accessScope or "Cluster"
  if scope == "Cluster" then
    svc.type = "ClusterIP"
  elseif scope == "VPC" then
    svc.type = "LoadBalancer"
    annotations = VPC_ANNOTATIONS
  elseif scope == "External" then
    svc.type = "LoadBalancer"
  elseif scope == "NodePort" then
    svc.type = "NodePort"
  elseif scope == "Headless" then
    svc.type = "ClusterIP"
    svc.clusterIP = "None"
  else
    error("spec.jobManager.accessScope: unknown value " .. tostring(scope)
      .. " (Cluster, VPC, External, NodePort or Headless)", 0)
  end
  local ports = {}
  for _, p in ipairs(pods.container_ports(flinkpod.ports("jobmanager", jm.ports), jm.extraPorts)) do
    ports[#ports + 1] = { name = p.name, port = p.containerPort, targetPort = p.name or p.containerPort,
      protocol = p.protocol }
  end
  svc.ports = ports
  return {
    apiVersion = "v1",
    kind = "Service",
    metadata = names.metadata(c, names.jobmanager(n),
      names.object_labels(names.component_labels(n, "jobmanager"), jm.podLabels, rev), annotations),
    spec = svc,
  }
end

--- The Ingress host: hostFormat with every "{{$clusterName}}" replaced by the cluster name
-- (plain text, no pattern). nil when there is no hostFormat: the rule then matches any host.
local function ingress_host(format, n)
  if format == nil or format == "" then return nil end
  local out, from = {}, 1
  while true do
    local s, e = format:find("{{$clusterName}}", from, true)
    if not s then break end
    out[#out + 1] = format:sub(from, s - 1) .. n
    from = e + 1
  end
  out[#out + 1] = format:sub(from)
  return table.concat(out)
end

--- Ingress `<n>-jobmanager` (networking.k8s.io/v1) to the Service's `ui` port, all paths;
-- with useTls a tls entry for the host, with tlsSecretName when given (else the ingress
-- controller's default certificate). Labels: the JobManager's and the revision label (`rev`).
local function jobmanager_ingress(c, rev)
  local n, ing = c.metadata.name, c.spec.jobManager.ingress
  local host = ingress_host(ing.hostFormat, n)
  local backend = { service = { name = names.jobmanager(n), port = { name = "ui" } } }
  local spec = {
    rules = { { host = host, http = { paths = { { path = "/", pathType = "Prefix", backend = backend } } } } },
  }
  if ing.useTls == true then
    local tls = { hosts = host and { host } or nil }
    if ing.tlsSecretName and ing.tlsSecretName ~= "" then tls.secretName = ing.tlsSecretName end
    -- without a host and a secret there is nothing to say: an empty entry would be `{}`
    spec.tls = next(tls) and { tls } or nil
  end
  return {
    apiVersion = "networking.k8s.io/v1",
    kind = "Ingress",
    metadata = names.metadata(c, names.jobmanager(n),
      names.object_labels(names.component_labels(n, "jobmanager"), nil, rev), ing.annotations),
    spec = spec,
  }
end

--- Job `<n>-job-submitter`: one pod, never retried (backoffLimit 0, restartPolicy Never: the
-- controller decides about resubmission), container `main` in the original operator's layout:
-- no command (the image's entrypoint runs its arguments), args `bash
-- /opt/flink-operator/submit-job.sh` and the `flink run` arguments (lib/submitter.lua); the script
-- is the ConfigMap's `submit-job.sh` mounted there alone (subPath). Env: FLINK_JOB_JAR_URI for
-- a remote jarFile (lib.submitter.jar), FLINK_JM_ADDR, then the cluster's env like the Flink pods
-- (a jar on HDFS or GCS needs the same credentials). It takes the job's podLabels,
-- podAnnotations, volumes, volumeMounts (first), initContainers, resources and
-- securityContext. Ours besides: the whole ConfigMap at /opt/flink/conf as well (last), so
-- that `flink run` reads the cluster's options (REST and SSL settings of flinkProperties).
-- `config_hash`: the hash of every ConfigMap file, the script included (a Job's template is
-- immutable: this records what the submission ran with). `rev`: the revision label's value.
local function job_submitter(c, config_hash, rev)
  local n, spec, job = c.metadata.name, c.spec, c.spec.job
  local shared = pods.shared(n, spec)
  local labels = names.cluster_labels(n)
  local env = {}
  local _, jar_uri = submitter.jar(job.jarFile)
  if jar_uri then env[#env + 1] = { name = "FLINK_JOB_JAR_URI", value = jar_uri } end
  env[#env + 1] = { name = "FLINK_JM_ADDR", value = submitter.jobmanager_address(c) }
  for _, e in ipairs(shared.env) do env[#env + 1] = e end
  -- the script alone where the original mounted it, the cluster's mounts, then the conf dir
  local mounts = { { name = pods.CONF_VOLUME, mountPath = submitter.SCRIPT_PATH, subPath = submitter.SCRIPT_KEY } }
  for i = 2, #shared.mounts do mounts[#mounts + 1] = shared.mounts[i] end
  mounts[#mounts + 1] = shared.mounts[1]
  local main = {
    name = "main",
    image = spec.image.name,
    imagePullPolicy = spec.image.pullPolicy,
    args = submitter.container_args(c),
    env = util.nonempty(pods.merge_by("name", env, spec.envVars)),
    envFrom = util.nonempty(spec.envFrom),
    resources = util.nonempty(job.resources),
    volumeMounts = pods.after("mountPath", job.volumeMounts, mounts),
  }
  local template = pods.template {
    cluster_spec = spec,
    labels = names.pod_labels(labels, job.podLabels),
    annotations = flinkpod.annotations(job.podAnnotations, config_hash),
    init = pods.init_containers(job.initContainers, job.volumeMounts),
    containers = { main },
    volumes = pods.after("name", job.volumes, shared.volumes),
    extra = { restartPolicy = "Never", securityContext = util.nonempty(job.securityContext) },
  }
  return {
    apiVersion = "batch/v1",
    kind = "Job",
    metadata = names.metadata(c, names.job_submitter(n), names.object_labels(labels, job.podLabels, rev)),
    spec = { backoffLimit = 0, template = template },
  }
end

-- The hash of the ConfigMap files the Flink processes read: every file but the submit script
-- (which changes with each submission's fromSavepoint and must not restart them).
local function flink_config_hash(cm)
  return confighash.of(cm.data, { [submitter.SCRIPT_KEY] = true })
end

--- What Flink's Kubernetes HA services do with ConfigMaps (leader election, job graphs,
-- checkpoint pointers: Flink docs, "Kubernetes HA Services"), the rules of the Role
-- <n>-flink-ha. The controller can grant only what it holds itself: deploy/rbac.yaml gives it
-- these verbs on configmaps.
cluster_policy.HA_RULES = {
  { apiGroups = { "" }, resources = { "configmaps" },
    verbs = { "get", "list", "watch", "create", "update", "patch", "delete" } },
}

--- with_ha_account(c) -> c, objects: with HA on (lib.upgrade.ha_enabled) and no
-- spec.serviceAccountName, `c` with serviceAccountName <n>-flink-ha (c is the hook's own copy)
-- and that ServiceAccount with its Role and RoleBinding; else `c` and {}.
local function with_ha_account(c, rev)
  if not upgrade.ha_enabled(c.spec) or values.is_text(c.spec.serviceAccountName) then return c, {} end
  local n = c.metadata.name
  local account = names.ha_account(n)
  c.spec.serviceAccountName = account
  local function meta() return names.metadata(c, account, names.object_labels(names.cluster_labels(n), nil, rev)) end
  local rbac = "rbac.authorization.k8s.io"
  return c, {
    { apiVersion = "v1", kind = "ServiceAccount", metadata = meta() },
    { apiVersion = rbac .. "/v1", kind = "Role", metadata = meta(), rules = util.deepcopy(cluster_policy.HA_RULES) },
    { apiVersion = rbac .. "/v1", kind = "RoleBinding", metadata = meta(),
      roleRef = { apiGroup = rbac, kind = "Role", name = account },
      subjects = { { kind = "ServiceAccount", name = account, namespace = c.metadata.namespace } } },
  }
end

--- Label every child with the revision it was rendered from, as the original operator did
-- (`flinkoperator.k8s.io/revision-name: <revision name>` on each object's own metadata, never on
-- a pod template, so a new revision alone restarts no pod). Off by default: with it, every spec
-- change rewrites every child (a dry run and an apply each, for a label), where without it only
-- the objects whose content changed are written. Set it to true for tools that select the
-- children by that label (docs/original-objects.md, `revision-name`).
cluster_policy.REVISION_LABEL = false

--- The hook. `input.cluster` is the defaulted FlinkCluster (a private copy); `input.revision`
-- (optional) the name of the revision the objects are rendered for (fc.revision.name; the
-- controller and `render` always pass it), written as the label
-- flinkoperator.k8s.io/revision-name when REVISION_LABEL is true; otherwise no object has it.
-- Returns {objects = <the child objects, in apply order>, jobmanager = {service, port}}:
-- `jobmanager` is the REST address of the JobManager Service rendered here (its `ui` port),
-- where the framework asks who registered when the TaskManagers are Native (mode Native of a
-- session cluster; a job cluster's comes from job.observe).
function cluster_policy.desired(input)
  -- explicit nulls mean unset (`ingress: null` makes no Ingress)
  local rev = cluster_policy.REVISION_LABEL and input.revision or nil
  local c, ha_objects = with_ha_account(values.without_nulls(input.cluster), rev)
  local spec = c.spec
  local cm = configmap(c, rev)
  local flink_hash = flink_config_hash(cm)
  local objects = { cm }
  for _, o in ipairs(ha_objects) do objects[#objects + 1] = o end
  objects[#objects + 1] = component_statefulset(c, "jobmanager", spec.jobManager, flink_hash, rev)
  objects[#objects + 1] = jobmanager_service(c, rev)
  if spec.jobManager.ingress then objects[#objects + 1] = jobmanager_ingress(c, rev) end
  if spec.taskManager.mode ~= "Native" then
    objects[#objects + 1] = component_statefulset(c, "taskmanager", spec.taskManager, flink_hash, rev)
  end
  if spec.job then objects[#objects + 1] = job_submitter(c, confighash.of(cm.data), rev) end
  -- The pieces above may share tables (selector labels, the user's envFrom): the host copies
  -- the output out of the call, so no table of it is the input's, this module's or another
  -- object's, and none needs a copy here.
  local jobmanager = { scheme = "http", service = names.jobmanager(c.metadata.name),
    port = (spec.jobManager.ports or {}).ui or 8081 }
  -- with Flink's Kubernetes HA services the controller removes their ConfigMaps (fc.haclean)
  return { objects = objects, jobmanager = jobmanager, ha_configmaps = upgrade.ha_enabled(spec) }
end

--- Environment variable with the pod's own name (downward API, metadata.name): the TaskManager's
-- resource id, so that the JobManager's /taskmanagers lists it under its pod name.
cluster_policy.POD_NAME_ENV = "FLINK_POD_NAME"

--- Hook for mode Native: the pod of one TaskManager.
-- taskmanager_pod({cluster = <defaulted FlinkCluster>, slots = <slots per TaskManager>,
--   resource = <one slot's resource, fc.slots shape: {cpu_cores, memory_mib, extended}>})
--   -> {object = <Pod>}
-- The framework (lua/fc/taskmanagers.lua) names each pod <n>-taskmanager-<id> and adds the
-- `priority` label and the resource annotation it rebuilds its state from after a restart; the
-- rest is this pod: the TaskManager container of the StatefulSet's template with
--   - resources = slots x the profile (fc.profile.container_resources; extended resources such
--     as nvidia.com/gpu as limits), replacing taskManager.resources;
--   - args: taskmanager.resource-id = the pod's name (Kubernetes expands $(FLINK_POD_NAME) in
--     args), taskmanager.numberOfTaskSlots = slots, and Flink's external-resource options for
--     the extended resources (fc.profile.flink_external), as -D dynamic options, which override
--     flink-conf.yaml;
--   - restartPolicy Never: a TaskManager that exits leaves a Failed pod, which the framework
--     counts and replaces (as Flink's native Kubernetes mode does);
-- labels app, cluster, component=taskmanager, owned by the FlinkCluster.
function cluster_policy.taskmanager_pod(input)
  local c = with_ha_account(values.without_nulls(input.cluster))
  local n = c.metadata.name
  local slots, res = input.slots, input.resource
  local template = taskmanager.pod_template({ cluster = c, config_hash = flink_config_hash(configmap(c)) }).template
  -- the Flink container (the first; sidecars follow) with this pod's resources and options
  local container = template.spec.containers[1]
  container.resources = profile.container_resources(res, slots)
  container.env = container.env or {}
  table.insert(container.env, 1, { name = cluster_policy.POD_NAME_ENV,
    valueFrom = { fieldRef = { fieldPath = "metadata.name" } } })
  local args = { "taskmanager",
    "-Dtaskmanager.resource-id=$(" .. cluster_policy.POD_NAME_ENV .. ")",
    "-Dtaskmanager.numberOfTaskSlots=" .. math.tointeger(slots) }
  for _, kv in ipairs(profile.flink_external(res, slots)) do args[#args + 1] = "-D" .. kv[1] .. "=" .. kv[2] end
  container.args = args
  template.spec.restartPolicy = "Never"
  local meta = names.metadata(c, names.taskmanager(n), template.metadata.labels, template.metadata.annotations)
  return { object = { apiVersion = "v1", kind = "Pod", metadata = meta, spec = template.spec } }
end

return cluster_policy
