-- SPDX-License-Identifier: Apache-2.0
--- policies/cleanup.lua: what is removed once a job cluster's job has ended, from the FlinkCluster's
-- spec.job.cleanupPolicy (the original operator's API: afterJobSucceeds, afterJobFails,
-- afterJobCancelled, each DeleteCluster | DeleteTaskManager | KeepCluster). One small decision;
-- job.decide (policies/job.lua) asks it when the job is in a terminal state and is neither
-- restarting nor waiting to (policies/restart.lua), nor stopping with a savepoint whose result
-- is still to be read; the framework deletes what `remove` lists. Fixtures in
-- policies/testdata/cleanup/.
--
-- The rules and where they come from:
--   - The field per state and the defaults are the original operator's (flinkcluster_types.go,
--     CleanupPolicy: afterJobSucceeds DeleteCluster, afterJobFails KeepCluster, afterJobCancelled
--     DeleteCluster), so that a failed job's pods and logs stay for a human to read.
--   - Lost (the JobManager no longer or never lists the job's id) counts as failed: afterJobFails.
--   - DeleteCluster removes the Flink components (StatefulSets, Services, Ingress, ConfigMap and
--     the Native TaskManager pods); DeleteTaskManager only the TaskManagers. The submitter Job
--     stays (its pod tells the job id and why a submission failed), and so do the
--     ControllerRevisions (the revision history) and the FlinkCluster itself.
local names = require("lib.names")

local cleanup = {}
cleanup.contract = "hooks.flinkoperator.k8s.io/v1"

--- The cleanupPolicy field that applies to each terminal job state, and its default.
cleanup.FIELD = { Succeeded = "afterJobSucceeds", Failed = "afterJobFails", Cancelled = "afterJobCancelled",
  Lost = "afterJobFails" }
cleanup.DEFAULT = { Succeeded = "DeleteCluster", Failed = "KeepCluster", Cancelled = "DeleteCluster",
  Lost = "KeepCluster" }

-- The children each action removes ({kind=, name=}; no name: every one of that kind; kind "Pod":
-- the Native TaskManager pods, whose slot demand becomes 0), for the cluster called `n`.
local REMOVES = {
  DeleteCluster = function()
    return { { kind = "StatefulSet" }, { kind = "Service" }, { kind = "Ingress" }, { kind = "ConfigMap" },
      { kind = "Pod" } }
  end,
  DeleteTaskManager = function(n)
    return { { kind = "StatefulSet", name = names.taskmanager(n) }, { kind = "Pod" } }
  end,
}

--- cleanup.decide(input) -> {action=<"DeleteCluster"|"DeleteTaskManager"|"KeepCluster">,
--   remove={{kind=<child kind>, name=<name, absent: all of that kind>}...} (absent for KeepCluster)}
-- input: {name=<the FlinkCluster's metadata.name>, state=<a terminal job state: Succeeded, Failed,
--   Cancelled or Lost>, policy=<spec.job.cleanupPolicy (defaulted or not), absent: {}>}.
-- An action the API does not know is kept as it is, with nothing to remove (validate.lua refuses
-- it at admission; an older object may still carry one).
function cleanup.decide(input)
  local policy = input.policy or {}
  local action = policy[cleanup.FIELD[input.state]] or cleanup.DEFAULT[input.state] or "KeepCluster"
  local removes = REMOVES[action]
  return { action = action, remove = removes and removes(input.name) or nil }
end

return cleanup
