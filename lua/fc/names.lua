-- SPDX-License-Identifier: Apache-2.0
--- fc.names: the labels by which the controller finds a FlinkCluster's children, in one place.
-- The C core watches the children with `names.watch().selector` (core/run.c and `diff`'s
-- core/livediff.c ask for it at start), indexes them by the value of CLUSTER_LABEL and expects
-- its own writes back only for objects that carry these labels; the framework's own objects
-- (fc.revision's ControllerRevisions, fc.taskmanagers' reading of Native TaskManager pods) and
-- the policies (policies/lib/names.lua, the other names of the objects) use the same functions.
-- To rename a label, edit the constants below: the watches, the cache's index, the objects
-- every policy renders and the framework's lookups follow (tests/names_spec.lua, integration
-- case labelrename). Available to policies: require("fc.names").
local names = {}

--- The label every child carries with the value APP ("app=flink").
names.APP_LABEL = "app"
names.APP = "flink"
--- The label whose value is the FlinkCluster's name ("cluster=<name>").
names.CLUSTER_LABEL = "cluster"
--- The label naming the component ("jobmanager" or "taskmanager") of a pod and of the objects
-- that select the pods (StatefulSets, the JobManager Service).
names.COMPONENT_LABEL = "component"

--- The owner of every child (the controller ownerReference), as in the CRD.
names.OWNER_API_VERSION = "flinkoperator.k8s.io/v1beta1"
names.OWNER_KIND = "FlinkCluster"

--- names.cluster_labels(n) -> {[APP_LABEL]=APP, [CLUSTER_LABEL]=n}: the labels every child of
-- the cluster named `n` carries. A fresh table each call.
function names.cluster_labels(n)
  return { [names.APP_LABEL] = names.APP, [names.CLUSTER_LABEL] = n }
end

--- names.component_labels(n, component) -> cluster_labels(n) plus COMPONENT_LABEL = component.
-- A fresh table each call.
function names.component_labels(n, component)
  local out = names.cluster_labels(n)
  out[names.COMPONENT_LABEL] = component
  return out
end

--- names.selector([n]) -> the label selector (Kubernetes syntax) of every cluster's children,
-- "app=flink,cluster" (the cluster label present with any value), or with a cluster name `n`
-- (string) of that cluster's only: "app=flink,cluster=<n>".
function names.selector(n)
  local s = names.APP_LABEL .. "=" .. names.APP .. "," .. names.CLUSTER_LABEL
  if type(n) == "string" then s = s .. "=" .. n end
  return s
end

--- names.owned(labels) -> the cluster name when `labels` (a metadata.labels table or nil) carry
-- the children's labels (what selector() matches), else nil.
function names.owned(labels)
  if type(labels) ~= "table" or labels[names.APP_LABEL] ~= names.APP then return nil end
  local n = labels[names.CLUSTER_LABEL]
  if type(n) ~= "string" then return nil end
  return n
end

--- names.watch() -> {selector=, app_label=, app=, cluster_label=}: what the C core reads once at
-- start (core/run.c run_load_kinds, core/livediff.c): the children's watch selector
-- (selector()), the label pair an object must carry for the core to expect its own write back
-- in the cache, and the label whose value indexes the cache by cluster.
function names.watch()
  return { selector = names.selector(), app_label = names.APP_LABEL, app = names.APP,
    cluster_label = names.CLUSTER_LABEL }
end

return names
