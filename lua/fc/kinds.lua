-- SPDX-License-Identifier: Apache-2.0
--- fc.kinds: the one declaration of the Kubernetes kinds the controller manages for a
-- FlinkCluster (issue "Converge for real", item 6). Everything else follows from this list:
--   - the C core watches exactly these kinds (core/run.c asks `kinds.watched()` at start and
--     opens one watch per kind and namespace, with the children's label selector);
--   - the reconcile framework applies, deletes and creates-only by these flags (fc.reconcile);
--   - `render` and the controller refuse a policy output of any other kind or apiVersion
--     (`kinds.refused`): render fails with the object's path, the controller leaves the object
--     out, marks the cluster (PolicyError=True, reason UndeclaredKind) and goes on with the rest;
--   - deploy/rbac.yaml grants what each entry needs (tests/deploy_spec.lua checks it against
--     this list): get/list/watch for every kind, and create/update/patch/delete for those
--     policies may produce.
-- To let policies create another kind (say a PodDisruptionBudget): add an entry here and its
-- rule to deploy/rbac.yaml.
--
-- Entry fields: kind, apiVersion, resource (the plural of the API path);
--   apply = true: policies may produce it (server-side applied);
--   delete = true: deleted when no longer desired, in the order of this list;
--   create_only = true: applied only when absent (immutable after creation in Kubernetes:
--     batch/v1 Job's pod template, apps/v1 ControllerRevision's data);
--   pods = true: its pod template runs the Flink processes (recreateOnUpdate, held templates);
--   by_label = true: found by the cluster label (fc.names.CLUSTER_LABEL) rather than by
--     ownerReference (pods belong to their StatefulSet or Job);
--   native = true: the framework itself creates (server-side apply) and deletes them: Native
--     TaskManager pods (lua/fc/taskmanagers.lua); policies still may not produce them;
--   any_labels = true: watched without the children's label selector (fc.names.selector(),
--     `app=flink,cluster`): the original operator labelled its ControllerRevisions with the
--     FlinkCluster's own labels, and a cluster it made is adopted by its revision (fc.revision);
--     the core's cache keeps only the ones a FlinkCluster controls (core/run.c, run_transform).
local kinds = {}

kinds.CHILDREN = {
  { kind = "Ingress", apiVersion = "networking.k8s.io/v1", resource = "ingresses", apply = true, delete = true },
  { kind = "Service", apiVersion = "v1", resource = "services", apply = true, delete = true },
  { kind = "StatefulSet", apiVersion = "apps/v1", resource = "statefulsets", apply = true, delete = true,
    pods = true },
  { kind = "ConfigMap", apiVersion = "v1", resource = "configmaps", apply = true, delete = true },
  -- the pods' account for Flink's Kubernetes HA services (policies/cluster.lua, upgradeMode last-state)
  { kind = "ServiceAccount", apiVersion = "v1", resource = "serviceaccounts", apply = true, delete = true },
  { kind = "Role", apiVersion = "rbac.authorization.k8s.io/v1", resource = "roles", apply = true, delete = true },
  { kind = "RoleBinding", apiVersion = "rbac.authorization.k8s.io/v1", resource = "rolebindings", apply = true,
    delete = true },
  { kind = "Job", apiVersion = "batch/v1", resource = "jobs", apply = true, delete = true, create_only = true },
  { kind = "ControllerRevision", apiVersion = "apps/v1", resource = "controllerrevisions", apply = true,
    create_only = true, any_labels = true },
  { kind = "Pod", apiVersion = "v1", resource = "pods", by_label = true, native = true },
}

--- kinds.find(kind [, apiVersion]) -> the entry of CHILDREN, or nil (apiVersion nil: by kind alone).
function kinds.find(kind, api_version)
  for _, e in ipairs(kinds.CHILDREN) do
    if e.kind == kind and (api_version == nil or e.apiVersion == api_version) then return e end
  end
  return nil
end

--- kinds.names(flag) -> {kind,...} of the entries with `flag` set, in list order.
function kinds.names(flag)
  local out = {}
  for _, e in ipairs(kinds.CHILDREN) do
    if e[flag] then out[#out + 1] = e.kind end
  end
  return out
end

--- kinds.set(flag) -> {[kind]=true} of the entries with `flag` set.
function kinds.set(flag)
  local out = {}
  for _, k in ipairs(kinds.names(flag)) do out[k] = true end
  return out
end

--- kinds.refused(objects) -> {{index=<1-based>, message=<text>}, ...}: the objects (a
-- cluster.desired output, each with apiVersion, kind and metadata.name strings) whose
-- apiVersion/kind is not declared here with apply = true. The message names the object's path
-- (list positions from 0, like validate's field paths) and what the controller may create:
--   objects[4] (policy/v1 PodDisruptionBudget wordcount-pdb): kind not declared in lua/fc/kinds.lua
--   (the controller may create Ingress, Service, ...)
function kinds.refused(objects)
  local out = {}
  for i, o in ipairs(objects) do
    local e = kinds.find(o.kind, o.apiVersion)
    if not (e and e.apply) then
      local why
      if e then
        why = "kind the controller watches but never creates"
      elseif kinds.find(o.kind) then
        why = "apiVersion not declared in lua/fc/kinds.lua (" .. o.kind .. " is "
          .. kinds.find(o.kind).apiVersion .. ")"
      else
        why = "kind not declared in lua/fc/kinds.lua"
      end
      local what = {}
      for _, d in ipairs(kinds.CHILDREN) do
        if d.apply then what[#what + 1] = d.apiVersion .. " " .. d.kind end
      end
      out[#out + 1] = { index = i, message = string.format("objects[%d] (%s %s %s): %s (the controller may create %s)",
        i - 1, o.apiVersion, o.kind, o.metadata.name, why, table.concat(what, ", ")) }
    end
  end
  return out
end

--- kinds.watched() -> {{apiVersion=, kind=, resource=, by_label=bool, any_labels=bool}, ...}: what
-- the C core watches beside the FlinkClusters (core/run.c, at start), in list order.
function kinds.watched()
  local out = {}
  for _, e in ipairs(kinds.CHILDREN) do
    out[#out + 1] = { apiVersion = e.apiVersion, kind = e.kind, resource = e.resource, by_label = e.by_label == true,
      any_labels = e.any_labels == true }
  end
  return out
end

return kinds
