-- SPDX-License-Identifier: Apache-2.0
--- fc.rules: the CRD's CEL rules (deploy/crd.yaml, x-kubernetes-validations) and their Lua twins,
-- in one table (issue 32, item 3). The API server runs the CEL rules; `flink-controller render`,
-- the webhook and the controller run validate.lua (and fc.profile), which re-implement them so
-- that a spec is refused the same way without an API server. tests/rules_spec.lua fails on
-- drift: a CEL rule in deploy/crd.yaml without its entry here (or an entry without its rule),
-- any difference of rule, message, messageExpression, fieldPath, reason or optionalOldSelf, an
-- entry whose twin does not refuse a spec breaking the rule, or a twin whose message differs
-- from the one recorded here.
--
-- Entry: id; at = the schema node holding the rule ("" the root, "[]" a list's items);
-- fieldPath, reason, optionalOldSelf, rule, message | messageExpression: as in deploy/crd.yaml;
-- twin = {check = "<the Lua function that implements it>", path = "<the field path of its
-- error>", messages = {<its message for each outcome>}}; without `messages` the twin says the
-- CEL `message` word for word. Where they differ (a twin names the value or the other port)
-- the twin's words are the ones listed.
local rules = {}

--- rules.list: the entries, in the CRD's order.
rules.list = {
  { id = "name-dns1035", at = "", reason = "FieldValueInvalid", optionalOldSelf = true,
    rule = "oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
    message = "metadata.name: must be a DNS-1035 label: lowercase letters, digits and '-', starting with "
      .. "a letter and ending with a letter or digit",
    twin = { check = "validate.check_metadata", path = "metadata.name",
      messages = { "must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter and "
        .. "ending with a letter or digit" } },
  },
  { id = "name-length", at = "", reason = "FieldValueInvalid", optionalOldSelf = true,
    rule = "oldSelf.hasValue() || size(self.metadata.name) <= 40",
    message = "metadata.name: must be at most 40 characters so that the pods' controller-revision-hash "
      .. "label \"<name>-taskmanager-<hash>\" fits in 63",
    twin = { check = "validate.check_metadata", path = "metadata.name",
      messages = { "must be at most 40 characters so that the pods' controller-revision-hash label "
        .. "\"<name>-taskmanager-<hash>\" fits in 63" } },
  },
  { id = "savepoint-generation", at = "", fieldPath = ".spec.job.savepointGeneration", reason = "FieldValueForbidden",
    rule = "!has(self.spec.job) || !has(oldSelf.spec.job) || (has(self.spec.job.savepointGeneration) "
      .. "? self.spec.job.savepointGeneration : 0) == (has(oldSelf.spec.job.savepointGeneration) ? "
      .. "oldSelf.spec.job.savepointGeneration : 0) || (has(self.spec.job.savepointGeneration) ? "
      .. "self.spec.job.savepointGeneration : 0) == (has(oldSelf.status) && "
      .. "has(oldSelf.status.components) && has(oldSelf.status.components.job) && "
      .. "has(oldSelf.status.components.job.savepointGeneration) ? "
      .. "oldSelf.status.components.job.savepointGeneration : 0) + 1",
    message = "may only change to status.components.job.savepointGeneration + 1",
    twin = { check = "validate.check_update", path = "spec.job.savepointGeneration",
      -- names the value it may take
      messages = { "may only change to status + 1 (1)" } },
  },
  { id = "jm-replicas-ha", at = "spec", fieldPath = ".jobManager.replicas", reason = "FieldValueForbidden",
    rule = "!has(self.jobManager) || !has(self.jobManager.replicas) || self.jobManager.replicas <= 1 || "
      .. "(has(self.job) && has(self.job.upgradeMode) && self.job.upgradeMode == 'last-state')",
    message = "more than 1 JobManager needs Flink's HA services (spec.job.upgradeMode last-state)",
    twin = { check = "validate.check_upgrade", path = "spec.jobManager.replicas" },
  },
  { id = "last-state-storage", at = "spec", fieldPath = ".job.highAvailability.storageDir",
    reason = "FieldValueRequired",
    rule = "!has(self.job) || !has(self.job.upgradeMode) || self.job.upgradeMode != 'last-state' || "
      .. "(has(self.job.highAvailability) && has(self.job.highAvailability.storageDir)) || "
      .. "(has(self.flinkProperties) && 'high-availability.storageDir' in self.flinkProperties)",
    message = "upgradeMode last-state needs spec.job.highAvailability.storageDir (or flinkProperties "
      .. "high-availability.storageDir)",
    twin = { check = "validate.check_upgrade", path = "spec.job.highAvailability.storageDir",
      messages = { "is required with upgradeMode last-state (or flinkProperties high-availability.storageDir)" } },
  },
  { id = "job-added-removed", at = "spec", fieldPath = ".job", reason = "FieldValueForbidden",
    rule = "has(self.job) == has(oldSelf.job)",
    messageExpression = "has(self.job) ? 'cannot be added: a session cluster cannot become a job cluster' : "
      .. "'cannot be removed: a job cluster cannot become a session cluster'",
    twin = { check = "validate.check_update", path = "spec.job",
      messages = { "cannot be added: a session cluster cannot become a job cluster",
        "cannot be removed: a job cluster cannot become a session cluster" } },
  },
  { id = "native-slots", at = "spec", fieldPath = ".taskManager.slots", reason = "FieldValueInvalid",
    rule = "!has(self.taskManager.mode) || self.taskManager.mode != 'Native' || has(self.job) != "
      .. "has(self.taskManager.slots)",
    messageExpression = "has(self.job) ? \"only for a session cluster: a job cluster's demand is "
      .. "spec.job.parallelism\" : 'is required with mode Native for a session cluster'",
    twin = { check = "validate.check_native", path = "spec.taskManager.slots",
      messages = { "only for a session cluster: a job cluster's demand is spec.job.parallelism",
        "is required with mode Native for a session cluster" } },
  },
  { id = "gcp-mount-path", at = "spec.gcpConfig.serviceAccount", fieldPath = ".mountPath", reason = "FieldValueInvalid",
    rule = "!has(self.mountPath) || !has(self.keyFile) || !self.mountPath.endsWith(self.keyFile)",
    message = "must be the directory the Secret is mounted at, not end with keyFile",
    twin = { check = "validate.check", path = "spec.gcpConfig.serviceAccount.mountPath" },
  },
  { id = "cancel-at-create", at = "spec.job", fieldPath = ".cancelRequested", reason = "FieldValueForbidden",
    optionalOldSelf = true,
    rule = "oldSelf.hasValue() || !has(self.cancelRequested) || !self.cancelRequested",
    message = "must not be true at creation",
    twin = { check = "validate.check_job", path = "spec.job.cancelRequested" },
  },
  { id = "savepoints-dir-removed", at = "spec.job", fieldPath = ".savepointsDir", reason = "FieldValueForbidden",
    rule = "!has(oldSelf.savepointsDir) || oldSelf.savepointsDir == '' || (has(self.savepointsDir) && "
      .. "self.savepointsDir != '')",
    message = "cannot be removed",
    twin = { check = "validate.check_update", path = "spec.job.savepointsDir" },
  },
  { id = "cancel-revert", at = "spec.job", fieldPath = ".cancelRequested", reason = "FieldValueForbidden",
    rule = "!has(oldSelf.cancelRequested) || !oldSelf.cancelRequested || (has(self.cancelRequested) "
      .. "&& self.cancelRequested) || (has(self.fromSavepoint) && self.fromSavepoint != '' && "
      .. "(!has(oldSelf.fromSavepoint) || self.fromSavepoint != oldSelf.fromSavepoint))",
    message = "cannot change from true to false without a new spec.job.fromSavepoint",
    twin = { check = "validate.check_update", path = "spec.job.cancelRequested" },
  },
  { id = "savepoint-mode-dir", at = "spec.job", fieldPath = ".savepointsDir", reason = "FieldValueRequired",
    rule = "!has(self.upgradeMode) || self.upgradeMode != 'savepoint' || (has(self.savepointsDir) && "
      .. "self.savepointsDir != '')",
    message = "is required with upgradeMode savepoint",
    twin = { check = "validate.check_upgrade", path = "spec.job.savepointsDir" },
  },
  { id = "rollback-dir", at = "spec.job", fieldPath = ".savepointsDir", reason = "FieldValueRequired",
    rule = "!has(self.rollback) || !has(self.rollback.enabled) || !self.rollback.enabled || "
      .. "(has(self.savepointsDir) && self.savepointsDir != '')",
    message = "is required with rollback.enabled (a rollback restores the upgrade's savepoint)",
    twin = { check = "validate.check_upgrade", path = "spec.job.savepointsDir" },
  },
  { id = "jm-port-numbers", at = "spec.jobManager", fieldPath = ".ports", reason = "FieldValueInvalid",
    rule = "!has(self.ports) || [self.ports.rpc, self.ports.blob, self.ports.query, "
      .. "self.ports.ui].all(p, [self.ports.rpc, self.ports.blob, self.ports.query, "
      .. "self.ports.ui].filter(q, q == p).size() == 1)",
    message = "port numbers must be unique within the component",
    twin = { check = "validate.check_ports", path = "spec.jobManager.ports.blob",
      -- reported at the later port, naming the earlier one
      messages = { "duplicate port 6124, also used by spec.jobManager.ports.rpc" } },
  },
  { id = "jm-extra-port-numbers", at = "spec.jobManager", fieldPath = ".extraPorts", reason = "FieldValueInvalid",
    rule = "!has(self.extraPorts) || self.extraPorts.all(e, self.extraPorts.filter(f, f.containerPort "
      .. "== e.containerPort).size() == 1 && (!has(self.ports) || !(e.containerPort in "
      .. "[self.ports.rpc, self.ports.blob, self.ports.query, self.ports.ui])))",
    message = "port numbers must be unique within the component (ports and extraPorts)",
    twin = { check = "validate.check_ports", path = "spec.jobManager.extraPorts[0].containerPort",
      messages = { "duplicate port 8081, also used by spec.jobManager.ports.ui" } },
  },
  { id = "jm-extra-port-names", at = "spec.jobManager", fieldPath = ".extraPorts", reason = "FieldValueInvalid",
    rule = "!has(self.extraPorts) || self.extraPorts.all(e, !has(e.name) || (!(e.name in ['rpc', "
      .. "'blob', 'query', 'ui']) && self.extraPorts.filter(f, has(f.name) && f.name == "
      .. "e.name).size() == 1))",
    message = "port names must be unique within the component (ports and extraPorts)",
    twin = { check = "validate.check_ports", path = "spec.jobManager.extraPorts[0].name",
      messages = { 'duplicate port name "ui", also used by spec.jobManager.ports.ui' } },
  },
  { id = "jm-extra-port-name-format", at = "spec.jobManager.extraPorts[].name", reason = "FieldValueInvalid",
    rule = "self.matches('[a-z]') && !self.contains('--')",
    message = "must be a port name: at most 15 lowercase letters, digits and '-'",
    twin = { check = "validate.check_ports", path = "spec.jobManager.extraPorts[0].name" },
  },
  { id = "tm-replicas", at = "spec.taskManager", fieldPath = ".replicas", reason = "FieldValueRequired",
    rule = "(has(self.mode) && self.mode == 'Native') || has(self.replicas)",
    message = "is required (mode StatefulSet)",
    twin = { check = "validate.check", path = "spec.taskManager.replicas", messages = { "is required" } },
  },
  { id = "tm-port-numbers", at = "spec.taskManager", fieldPath = ".ports", reason = "FieldValueInvalid",
    rule = "!has(self.ports) || [self.ports.data, self.ports.rpc, self.ports.query].all(p, "
      .. "[self.ports.data, self.ports.rpc, self.ports.query].filter(q, q == p).size() == 1)",
    message = "port numbers must be unique within the component",
    twin = { check = "validate.check_ports", path = "spec.taskManager.ports.rpc",
      messages = { "duplicate port 6121, also used by spec.taskManager.ports.data" } },
  },
  { id = "tm-extra-port-numbers", at = "spec.taskManager", fieldPath = ".extraPorts", reason = "FieldValueInvalid",
    rule = "!has(self.extraPorts) || self.extraPorts.all(e, self.extraPorts.filter(f, f.containerPort "
      .. "== e.containerPort).size() == 1 && (!has(self.ports) || !(e.containerPort in "
      .. "[self.ports.data, self.ports.rpc, self.ports.query])))",
    message = "port numbers must be unique within the component (ports and extraPorts)",
    twin = { check = "validate.check_ports", path = "spec.taskManager.extraPorts[0].containerPort",
      messages = { "duplicate port 6122, also used by spec.taskManager.ports.rpc" } },
  },
  { id = "tm-extra-port-names", at = "spec.taskManager", fieldPath = ".extraPorts", reason = "FieldValueInvalid",
    rule = "!has(self.extraPorts) || self.extraPorts.all(e, !has(e.name) || (!(e.name in ['data', "
      .. "'rpc', 'query']) && self.extraPorts.filter(f, has(f.name) && f.name == e.name).size() == "
      .. "1))",
    message = "port names must be unique within the component (ports and extraPorts)",
    twin = { check = "validate.check_ports", path = "spec.taskManager.extraPorts[0].name",
      messages = { 'duplicate port name "rpc", also used by spec.taskManager.ports.rpc' } },
  },
  { id = "tm-extra-port-name-format", at = "spec.taskManager.extraPorts[].name", reason = "FieldValueInvalid",
    rule = "self.matches('[a-z]') && !self.contains('--')",
    message = "must be a port name: at most 15 lowercase letters, digits and '-'",
    twin = { check = "validate.check_ports", path = "spec.taskManager.extraPorts[0].name" },
  },
  { id = "tm-max-extended", at = "spec.taskManager.maxPerTaskManager.extendedResources", reason = "FieldValueInvalid",
    rule = "self.all(k, size(k) <= 253 && k.matches('^[a-z0-9][-a-z0-9.]*[a-z0-9]/[A-Za-z0-9]([-A-Za-z"
      .. "0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('kubernetes.io/') && "
      .. "!k.matches('^[^/]*[.]kubernetes[.]io/'))",
    message = "must be an extended resource name such as nvidia.com/gpu (domain/name, not "
      .. "*.kubernetes.io)",
    twin = { check = "fc.profile.of", path = "spec.taskManager.maxPerTaskManager.extendedResources[gpu]" },
  },
  { id = "tm-profile-extended", at = "spec.taskManager.resourceProfile.extendedResources", reason = "FieldValueInvalid",
    rule = "self.all(k, size(k) <= 253 && k.matches('^[a-z0-9][-a-z0-9.]*[a-z0-9]/[A-Za-z0-9]([-A-Za-z"
      .. "0-9_.]{0,61}[A-Za-z0-9])?$') && !k.startsWith('kubernetes.io/') && "
      .. "!k.matches('^[^/]*[.]kubernetes[.]io/'))",
    message = "must be an extended resource name such as nvidia.com/gpu (domain/name, not "
      .. "*.kubernetes.io)",
    twin = { check = "fc.profile.of", path = "spec.taskManager.resourceProfile.extendedResources[gpu]" },
  },
}

--- rules.by_id[id] -> the entry.
rules.by_id = {}
for _, r in ipairs(rules.list) do rules.by_id[r.id] = r end

--- rules.flinkjob: the CEL rules of the FlinkJob CRD (the second document of deploy/crd.yaml), in
-- its order: spec.job's are the FlinkCluster's (the same entries, run for a FlinkJob by
-- fc.flinkjob.validate through validate.lua), then the FlinkJob's own.
rules.flinkjob = {
  { id = "clusterref-immutable", at = "spec.clusterRef", fieldPath = ".name", reason = "FieldValueForbidden",
    rule = "self.name == oldSelf.name",
    message = "cannot change (delete the FlinkJob and create another)",
    twin = { check = "fc.flinkjob.validate", path = "spec.clusterRef.name" },
  },
  rules.by_id["cancel-at-create"], rules.by_id["savepoints-dir-removed"], rules.by_id["cancel-revert"],
  rules.by_id["savepoint-mode-dir"],
}

--- rules.twin_messages(entry) -> the Lua twin's messages (its own, or the CEL message).
function rules.twin_messages(r)
  return r.twin.messages or { r.message }
end

return rules
