-- SPDX-License-Identifier: Apache-2.0
--- lib.pods: pieces of the pod templates of the JobManager, the TaskManagers and the job
-- submitter: volumes and mounts every pod shares, environment, probes, init containers and
-- the pod spec. Pure functions of the (defaulted) FlinkCluster; used by policies/cluster.lua.
local util = require("fc.util")
local names = require("lib.names")

local pods = {}

--- Where the Flink images read their configuration (FLINK_HOME/conf).
pods.CONF_DIR = "/opt/flink/conf"
pods.CONF_VOLUME = "flink-config-volume"
pods.HADOOP_VOLUME = "hadoop-config-volume"
pods.GCP_VOLUME = "gcp-service-account-volume"

--- `base` followed by `extra` (lists of tables), an item of `extra` replacing the item of
-- `base` with the same `key` in place. Kubernetes' server-side apply treats env (key name),
-- volumes (name) and volumeMounts (mountPath) as maps and rejects duplicate keys, so the
-- user's entry must replace ours rather than follow it. Returns a new list. An item without
-- `key` (or not a table) is kept as it is and replaces nothing: the API server reports the
-- missing field when the object is applied, naming it, instead of this policy failing.
function pods.merge_by(key, base, extra)
  local out, index = {}, {}
  local function key_of(item)
    if type(item) == "table" then return item[key] end
    return nil
  end
  for _, item in ipairs(base or {}) do
    out[#out + 1] = item
    local k = key_of(item)
    if k ~= nil then index[k] = #out end
  end
  for _, item in ipairs(extra or {}) do
    local k = key_of(item)
    local at = k ~= nil and index[k] or nil
    if at then
      out[at] = item
    else
      out[#out + 1] = item
      if k ~= nil then index[k] = #out end
    end
  end
  return out
end

--- `first` followed by the items of `rest` whose `key` no item of `first` has (lists of
-- tables; a new list). The original operator's order for a pod's volumes and mounts: the
-- user's first, then ours; an entry of ours the user already gives under the same key is left
-- out, so the user's wins (server-side apply rejects duplicate keys). Items without `key` are
-- kept as they are.
function pods.after(key, first, rest)
  local out, seen = {}, {}
  for _, item in ipairs(first or {}) do
    out[#out + 1] = item
    if type(item) == "table" and item[key] ~= nil then seen[item[key]] = true end
  end
  for _, item in ipairs(rest or {}) do
    if not (type(item) == "table" and item[key] ~= nil and seen[item[key]]) then out[#out + 1] = item end
  end
  return out
end

--- True when spec.hadoopConfig / spec.gcpConfig are given with their required fields.
local function hadoop_of(spec)
  local h = spec.hadoopConfig
  if type(h) == "table" and h.configMapName and h.mountPath then return h end
  return nil
end
local function gcp_of(spec)
  local sa = type(spec.gcpConfig) == "table" and spec.gcpConfig.serviceAccount or nil
  if type(sa) == "table" and sa.secretName and sa.keyFile and sa.mountPath then return sa end
  return nil
end

--- Volumes every Flink pod gets, with their mounts and environment, for cluster name `n` and
-- spec `spec`: {volumes={...}, mounts={...}, env={...}}.
--  - the ConfigMap `<n>-configmap` at /opt/flink/conf (Kubernetes mounts ConfigMap volumes
--    read-only whatever the mount says, so the mount does not say it, as the original's);
--  - hadoopConfig: ConfigMap `configMapName` at `mountPath`, HADOOP_CONF_DIR = mountPath
--    (Hadoop and Flink read core-site.xml/hdfs-site.xml from that directory);
--  - gcpConfig.serviceAccount: Secret `secretName` at `mountPath`,
--    GOOGLE_APPLICATION_CREDENTIALS = mountPath/keyFile (Google Application Default
--    Credentials read the key file named by that variable).
function pods.shared(n, spec)
  local volumes = { { name = pods.CONF_VOLUME, configMap = { name = names.configmap(n) } } }
  local mounts = { { name = pods.CONF_VOLUME, mountPath = pods.CONF_DIR } }
  local env = {}
  local hadoop = hadoop_of(spec)
  if hadoop then
    volumes[#volumes + 1] = { name = pods.HADOOP_VOLUME, configMap = { name = hadoop.configMapName } }
    mounts[#mounts + 1] = { name = pods.HADOOP_VOLUME, mountPath = hadoop.mountPath, readOnly = true }
    env[#env + 1] = { name = "HADOOP_CONF_DIR", value = hadoop.mountPath }
  end
  local gcp = gcp_of(spec)
  if gcp then
    volumes[#volumes + 1] = { name = pods.GCP_VOLUME, secret = { secretName = gcp.secretName } }
    mounts[#mounts + 1] = { name = pods.GCP_VOLUME, mountPath = gcp.mountPath, readOnly = true }
    local path = gcp.mountPath:gsub("/+$", "") .. "/" .. gcp.keyFile
    env[#env + 1] = { name = "GOOGLE_APPLICATION_CREDENTIALS", value = path }
  end
  return { volumes = volumes, mounts = mounts, env = env }
end

--- Downward-API environment with the limits of the container named `container` (Kubernetes
-- docs, "Expose Pod Information to Containers Through Environment Variables",
-- resourceFieldRef): <PREFIX>_CPU_LIMIT in millicores (divisor 1m) and <PREFIX>_MEMORY_LIMIT in
-- MiB (divisor 1Mi), naming the container as the original operator does. Without a limit
-- Kubernetes reports the node's allocatable amount.
function pods.limits_env(prefix, container)
  return {
    { name = prefix .. "_CPU_LIMIT",
      valueFrom = { resourceFieldRef = { containerName = container, resource = "limits.cpu", divisor = "1m" } } },
    { name = prefix .. "_MEMORY_LIMIT",
      valueFrom = { resourceFieldRef = { containerName = container, resource = "limits.memory", divisor = "1Mi" } } },
  }
end

--- TCP readiness and liveness probes on `port` (the component's RPC port, integer), with the
-- original operator's timings. Readiness: from 5 s on, every 5 s, 10 s timeout; unready after
-- 60 failures in a row (5 minutes: a JobManager or TaskManager busy starting or recovering is
-- not taken out of its Service at once). Liveness: from 5 s on, every 60 s, 10 s timeout;
-- restarted after 5 failures in a row (about 5 minutes), so a long GC pause or a slow start is
-- not mistaken for a dead process.
function pods.probes(port)
  local readiness = { tcpSocket = { port = port }, initialDelaySeconds = 5, periodSeconds = 5,
    timeoutSeconds = 10, failureThreshold = 60 }
  local liveness = { tcpSocket = { port = port }, initialDelaySeconds = 5, periodSeconds = 60,
    timeoutSeconds = 10, failureThreshold = 5 }
  return readiness, liveness
end

--- Container ports: `named` is a list of {name, port}; `extra` the spec's extraPorts
-- ({name, containerPort, protocol}). The protocol is always written: server-side apply keys
-- container ports by (containerPort, protocol).
function pods.container_ports(named, extra)
  local out = {}
  for _, p in ipairs(named) do
    out[#out + 1] = { name = p[1], containerPort = p[2], protocol = "TCP" }
  end
  for _, p in ipairs(extra or {}) do
    out[#out + 1] = { name = p.name, containerPort = p.containerPort, protocol = p.protocol or "TCP" }
  end
  return out
end

--- Init containers of a component: each one as given, plus the component's volumeMounts
-- (`mounts`) so that, for example, a downloader writes the jar into the volume the main
-- container reads: the init container's own mounts first, then the component's at a
-- mountPath it does not mount (the original operator's rule). `list` items are objects
-- (validate.lua); a volumeMounts that is not a list is left for the API server to report.
function pods.init_containers(list, mounts)
  local out = {}
  for i, c in ipairs(list or {}) do
    local copy = util.merge(c) -- a new top level: the input's container is not changed
    if c.volumeMounts == nil or type(c.volumeMounts) == "table" then
      copy.volumeMounts = util.nonempty(pods.after("mountPath", c.volumeMounts, mounts))
    end
    out[i] = copy
  end
  return util.nonempty(out)
end

--- Pod-level fields shared by every pod (lists and maps omitted when empty):
-- imagePullSecrets from image.pullSecrets, serviceAccountName, schedulerName from
-- batchSchedulerName (a batch scheduler such as Volcano then schedules the pod).
function pods.common_spec(spec)
  return {
    imagePullSecrets = util.nonempty(spec.image.pullSecrets),
    serviceAccountName = spec.serviceAccountName,
    schedulerName = spec.batchSchedulerName,
  }
end

--- Pod template {metadata={labels, annotations}, spec} from its parts:
-- `labels` (table), `annotations` (table or nil), `init` (list or nil), `containers` (list),
-- `volumes` (list), `extra` (more pod spec fields; nil values are skipped).
function pods.template(t)
  local spec = pods.common_spec(t.cluster_spec)
  spec.initContainers = t.init
  spec.containers = t.containers
  spec.volumes = util.nonempty(t.volumes)
  for k, v in pairs(t.extra or {}) do spec[k] = v end
  local metadata = { labels = t.labels }
  if t.annotations and next(t.annotations) ~= nil then metadata.annotations = t.annotations end
  return { metadata = metadata, spec = spec }
end

return pods
