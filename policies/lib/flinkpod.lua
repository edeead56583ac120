-- SPDX-License-Identifier: Apache-2.0
--- lib.flinkpod: the pod template of a Flink component, JobManager or TaskManager (the Flink
-- container, its ports, probes, environment and mounts, the init containers and sidecars), which
-- policies/cluster.lua (the JobManager) and policies/taskmanager.lua (the TaskManagers) build
-- their pods from. Pure functions of the defaulted FlinkCluster.
local util = require("fc.util")
local confighash = require("lib.confighash")
local names = require("lib.names")
local pods = require("lib.pods")

local flinkpod = {}

--- Environment variable with the JobManager pod's IP (downward API, status.podIP) when there
-- are more than one (spec.jobManager.replicas, HA): the address each announces.
flinkpod.POD_IP_ENV = "POD_IP"

--- flinkpod.ports(component, ports) -> {{name, number}, ...}: the ports of the JobManager
-- ("jobmanager": rpc, blob, query, ui) or TaskManager container (data, rpc, query), in that order.
function flinkpod.ports(component, ports)
  if component == "jobmanager" then
    return { { "rpc", ports.rpc }, { "blob", ports.blob }, { "query", ports.query }, { "ui", ports.ui } }
  end
  return { { "data", ports.data }, { "rpc", ports.rpc }, { "query", ports.query } }
end

--- The Flink container of a component: the image's entrypoint takes "jobmanager" or
-- "taskmanager" as its argument. Env: our downward-API limits and Hadoop/GCP variables, then
-- spec.envVars (a user variable of the same name replaces ours). Mounts: the component's
-- volumeMounts, then ours (lib.pods.shared) at the paths it leaves free.
local function flink_container(c, component, comp, shared)
  local spec = c.spec
  local readiness, liveness = pods.probes(comp.ports.rpc)
  local ours = pods.limits_env(component == "jobmanager" and "JOB_MANAGER" or "TASK_MANAGER", component)
  for _, e in ipairs(shared.env) do ours[#ours + 1] = e end
  local args = { component }
  if component == "jobmanager" and (tonumber(comp.replicas) or 1) > 1 then
    -- more than one JobManager (HA): each announces its own pod IP to the leader election, not
    -- the Service name, which reaches any of them (FLINK-21382, FLINK-30518); the TaskManagers
    -- and a standby's REST handlers find the leader through the HA services. A dynamic property
    -- (`jobmanager.sh start-foreground -D key=value`), as Flink 2 has no `--host` (FLINK-38795)
    args = { component, "-D", "jobmanager.rpc.address=$(" .. flinkpod.POD_IP_ENV .. ")" }
    ours[#ours + 1] = { name = flinkpod.POD_IP_ENV,
      valueFrom = { fieldRef = { apiVersion = "v1", fieldPath = "status.podIP" } } }
  end
  return {
    name = component,
    image = spec.image.name,
    imagePullPolicy = spec.image.pullPolicy,
    args = args,
    ports = pods.container_ports(flinkpod.ports(component, comp.ports), comp.extraPorts),
    env = util.nonempty(pods.merge_by("name", ours, spec.envVars)),
    envFrom = util.nonempty(spec.envFrom),
    resources = util.nonempty(comp.resources),
    volumeMounts = pods.after("mountPath", comp.volumeMounts, shared.mounts),
    readinessProbe = readiness,
    livenessProbe = liveness,
  }
end

--- flinkpod.annotations(user, config_hash) -> the pod template annotations: the user's
-- podAnnotations, then our config hash (lib.confighash.ANNOTATION; ours wins).
function flinkpod.annotations(user, config_hash)
  return util.merge(user, { [confighash.ANNOTATION] = config_hash })
end

--- flinkpod.template(c, component, comp, config_hash) -> PodTemplateSpec {metadata = {labels,
-- annotations}, spec}: the pod template of a component ("jobmanager" with spec.jobManager,
-- "taskmanager" with spec.taskManager) of the defaulted FlinkCluster `c`: init containers
-- (inheriting the component's volumeMounts), the Flink container, then the sidecars; labels =
-- the fixed component labels plus podLabels. `config_hash`: the hash of the ConfigMap files the
-- Flink processes read. Volumes: the component's, then ours under the names it leaves free.
function flinkpod.template(c, component, comp, config_hash)
  local n, spec = c.metadata.name, c.spec
  local shared = pods.shared(n, spec)
  local containers = { flink_container(c, component, comp, shared) }
  for _, s in ipairs(comp.sidecars or {}) do containers[#containers + 1] = s end
  return pods.template {
    cluster_spec = spec,
    labels = names.pod_labels(names.component_labels(n, component), comp.podLabels),
    annotations = flinkpod.annotations(comp.podAnnotations, config_hash),
    init = pods.init_containers(comp.initContainers, comp.volumeMounts),
    containers = containers,
    volumes = pods.after("name", comp.volumes, shared.volumes),
    extra = {
      nodeSelector = util.nonempty(comp.nodeSelector),
      tolerations = util.nonempty(comp.tolerations),
      securityContext = util.nonempty(comp.securityContext),
    },
  }
end

return flinkpod
