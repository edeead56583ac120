-- SPDX-License-Identifier: Apache-2.0
--- fc.haclean: Flink's Kubernetes HA ConfigMaps are the controller's to remove (issue 29).
--
-- With Flink's Kubernetes HA services (upgradeMode last-state) the JobManagers write ConfigMaps
-- `<cluster-id>-cluster-config-map` (leader election) and `<cluster-id>-<job id>-config-map`
-- (the job graph and checkpoint pointers), labelled `app=<cluster-id>,
-- type=flink-native-kubernetes` (Flink's KubernetesHaServices, kubernetes.cluster-id = the
-- FlinkCluster's name, lib/flinkconf.lua; Flink 1.x adds configmap-type=high-availability,
-- Flink 2.x writes no such label, so the selector is the labels both write). Flink sets no
-- ownerReference on them, so the garbage collector would leave them behind, and a cluster
-- created again with the same name would recover the old jobs. The controller removes them:
--   - on the FlinkCluster's deletion: a cluster whose policies say it runs the HA services
--     (cluster.desired's `ha_configmaps = true`) carries the finalizer FINALIZER. Once it is
--     being deleted, the pass deletes its StatefulSets (the garbage collector would wait for
--     the finalizer), waits until no JobManager pod of the cluster is left (a running
--     JobManager writes its leader ConfigMap again), then deletes the ConfigMaps by
--     selector(name) and removes the finalizer, after the deletion went through
--     (`unless_failed`: a failed delete keeps the finalizer and the pass is retried);
--   - when a cleanup policy removed the JobManager (job.decide's `cleanup` DeleteCluster): the
--     same deletion once its pods are gone, in each pass after (one DELETE of an empty
--     collection on a finished cluster's pass).
-- A flinkProperties `kubernetes.cluster-id` other than the name labels the ConfigMaps with that
-- id: those are not found here. Pure functions; fc.reconcile adds the actions they return.
local names = require("fc.names")
local util = require("fc.util")

local haclean = {}

--- The finalizer a FlinkCluster with HA ConfigMaps carries.
haclean.FINALIZER = "flinkoperator.k8s.io/ha-configmaps"

--- haclean.selector(n) -> the label selector of Flink's HA ConfigMaps of the cluster named `n`.
function haclean.selector(n)
  return "app=" .. n .. ",type=flink-native-kubernetes"
end

--- haclean.has_finalizer(metadata) -> bool
function haclean.has_finalizer(md)
  for _, f in ipairs((md or {}).finalizers or {}) do
    if f == haclean.FINALIZER then return true end
  end
  return false
end

-- metadata.finalizers with FINALIZER added (add true) or removed, as a new list.
local function finalizers(md, add)
  local out = {}
  for _, f in ipairs(md.finalizers or {}) do
    if f ~= haclean.FINALIZER then out[#out + 1] = f end
  end
  if add then out[#out + 1] = haclean.FINALIZER end
  return out
end

-- after the status (its write changes the resourceVersion: the core then patches at the one it
-- answered); the removal only when every write of the pass went through
local function patch_finalizers(md, add)
  return { op = "patch_finalizers", finalizers = finalizers(md, add), resourceVersion = md.resourceVersion,
    after_status = true, unless_failed = not add or nil }
end

--- haclean.jobmanager_left(children, n) -> the name of a JobManager pod of the cluster named `n`
-- in `children` (by the component label), else nil.
function haclean.jobmanager_left(children, n)
  for name, p in pairs((children or {}).Pod or {}) do
    local labels = type(p) == "table" and type(p.metadata) == "table" and p.metadata.labels or {}
    if labels[names.CLUSTER_LABEL] == n and labels[names.COMPONENT_LABEL] == "jobmanager" then return name end
  end
  return nil
end

local function delete_configmaps(n)
  return { op = "delete_collection", kind = "ConfigMap", selector = haclean.selector(n) }
end

--- haclean.deleting(cluster, children) -> actions for a FlinkCluster being deleted
-- (metadata.deletionTimestamp set): {} without FINALIZER; with it, the deletion of its
-- StatefulSets while there are any, else (no JobManager pod left either) the ConfigMaps'
-- deletion and then the finalizer's removal.
function haclean.deleting(cluster, children)
  local md = cluster.metadata or {}
  if not haclean.has_finalizer(md) then return {} end
  local out = {}
  for _, n in ipairs(util.sorted_keys((children or {}).StatefulSet or {})) do
    out[#out + 1] = { op = "delete", kind = "StatefulSet", name = n }
  end
  if #out > 0 or haclean.jobmanager_left(children, md.name) then return out end
  return { delete_configmaps(md.name), patch_finalizers(md, false) }
end

--- haclean.pass(cluster, ha, cleanup, children) -> actions of a pass of a cluster not being
-- deleted: `ha` (cluster.desired's ha_configmaps) and no FINALIZER -> add it; `ha` or the
-- FINALIZER, `cleanup` "DeleteCluster" and no StatefulSet or JobManager pod left -> delete the
-- ConfigMaps. The finalizer stays once added (the ConfigMaps of an earlier HA run may be there).
function haclean.pass(cluster, ha, cleanup, children)
  local md = cluster.metadata or {}
  local has = haclean.has_finalizer(md)
  local out = {}
  if ha and not has then out[#out + 1] = patch_finalizers(md, true) end
  if (ha or has) and cleanup == "DeleteCluster" and next((children or {}).StatefulSet or {}) == nil
      and not haclean.jobmanager_left(children, md.name) then
    out[#out + 1] = delete_configmaps(md.name)
  end
  return out
end

return haclean
