-- SPDX-License-Identifier: Apache-2.0
--- lib.names: names, labels and metadata of the objects generated for a FlinkCluster.
-- Pure functions of the (defaulted) FlinkCluster; used by policies/cluster.lua.
-- The label keys and values the controller finds the children by (app=flink, cluster=<n>,
-- component) are the framework's, fc.names: the watches, the cache and the framework's own
-- objects use them too, so they are renamed there, in one place, never here.
local fcnames = require("fc.names")
local util = require("fc.util")

local names = {}

--- API group/version and kind of the owner, as in the CRD (fc.names).
names.OWNER_API_VERSION = fcnames.OWNER_API_VERSION
names.OWNER_KIND = fcnames.OWNER_KIND

--- Object names generated for cluster name `n` (strings). Kubernetes limits these to 253
-- characters (DNS subdomain) and Service names to 63 (DNS label); validate.lua rejects
-- cluster names that would overflow them.
function names.configmap(n) return n .. "-configmap" end
function names.jobmanager(n) return n .. "-jobmanager" end
function names.taskmanager(n) return n .. "-taskmanager" end
function names.job_submitter(n) return n .. "-job-submitter" end
--- The ServiceAccount, Role and RoleBinding of Flink's Kubernetes HA services (upgradeMode
-- last-state without spec.serviceAccountName; policies/cluster.lua).
function names.ha_account(n) return n .. "-flink-ha" end

--- Labels every child carries: {app = "flink", cluster = n} (fc.names.cluster_labels). A
-- fresh table each call.
names.cluster_labels = fcnames.cluster_labels

--- Labels that select the pods of one component ("jobmanager" or "taskmanager"). They are
-- also the StatefulSet selector, which Kubernetes makes immutable, so they never include
-- user podLabels. {app = "flink", cluster = n, component = component} (fc.names).
names.component_labels = fcnames.component_labels

--- Label naming the revision (a ControllerRevision, fc.revision) an object was rendered from,
-- on the metadata of every child but the pods (the original operator's label of the same name,
-- whose value was its revision name without the "-<number>" suffix).
names.REVISION_LABEL = "flinkoperator.k8s.io/revision-name"

--- Labels of a child's own metadata: `base` (our labels, a table), plus `extra` (the user's
-- podLabels or nil; ours win on a clash), plus REVISION_LABEL = `revision` when it is a
-- non-empty string (cluster.desired's input.revision). A new table.
function names.object_labels(base, extra, revision)
  local out = util.merge(extra, base)
  if type(revision) == "string" and revision ~= "" then out[names.REVISION_LABEL] = revision end
  return out
end

--- Pod labels: the user's `podLabels` (table or nil) plus `base` (our labels). Our labels win
-- on a clash: the StatefulSet selector must keep matching its pods (Kubernetes rejects a
-- template whose labels do not match the selector). A new table.
function names.pod_labels(base, pod_labels)
  return util.merge(pod_labels, base)
end

--- The controller ownerReference to the FlinkCluster `cluster` (its `metadata`). When the
-- FlinkCluster has no uid yet (render of a manifest that was never applied) the uid is a
-- readable placeholder; the reconciler always passes the live object, whose uid the API
-- server checks. blockOwnerDeletion is false: setting it to true needs delete permission on
-- the owner (Kubernetes garbage-collection docs, "Owners and dependents").
function names.owner_reference(cluster)
  local meta = cluster.metadata or {}
  local uid = meta.uid
  if uid == nil or uid == "" then
    uid = "<uid of FlinkCluster " .. tostring(meta.name) .. ", set when applied>"
  end
  return {
    apiVersion = names.OWNER_API_VERSION,
    kind = names.OWNER_KIND,
    name = meta.name,
    uid = uid,
    controller = true,
    blockOwnerDeletion = false,
  }
end

--- `metadata` of a child object named `name`: namespace of the FlinkCluster (omitted when the
-- manifest has none: kubectl and the API fill it from the request), `labels` (table),
-- optional `annotations` (omitted when empty) and the controller ownerReference.
function names.metadata(cluster, name, labels, annotations)
  local meta = {
    name = name,
    labels = labels,
    ownerReferences = { names.owner_reference(cluster) },
  }
  local ns = (cluster.metadata or {}).namespace
  if ns ~= nil and ns ~= "" then meta.namespace = ns end
  if annotations and next(annotations) ~= nil then meta.annotations = annotations end
  return meta
end

return names
