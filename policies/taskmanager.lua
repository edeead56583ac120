-- SPDX-License-Identifier: Apache-2.0
--- Policy `taskmanager`: the TaskManager pod template, in one small file. cluster.lua puts it in
-- the `<n>-taskmanager` StatefulSet (taskManager.mode StatefulSet) and builds every Native
-- TaskManager's pod from it (cluster.taskmanager_pod: resources, args and restartPolicy of its
-- own), so a change here (a node pool, tolerations, a label) reaches both; the cookbook's
-- "TaskManager pod template" recipe patches this file alone (docs/policies.md).
--
-- pod_template({cluster = <FlinkCluster after defaults.apply>, config_hash = <text>})
--   -> {template = <PodTemplateSpec: {metadata = {labels, annotations}, spec}>}
-- `config_hash`: the hash of the ConfigMap files the Flink processes read (lib.confighash),
-- the pod annotation flinkoperator.k8s.io/config-hash. The template: the `taskmanager`
-- container first (the image's entrypoint with argument "taskmanager"; ports data, rpc, query;
-- env, mounts and probes of lib.flinkpod), then taskManager.sidecars; init containers, volumes,
-- nodeSelector, tolerations, securityContext and podLabels/podAnnotations of spec.taskManager;
-- labels app=flink, cluster=<n>, component=taskmanager. Fixtures: policies/testdata/taskmanager/.
local flinkpod = require("lib.flinkpod")

local taskmanager = {}
--- The hook contract this policy is written for (fc.contract; another version is refused).
taskmanager.contract = "hooks.flinkoperator.k8s.io/v1"

--- The hook.
function taskmanager.pod_template(input)
  local c = input.cluster
  local template = flinkpod.template(c, "taskmanager", c.spec.taskManager, input.config_hash)
  return { template = template }
end

return taskmanager
