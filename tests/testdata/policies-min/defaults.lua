--- Test policy (tests/reconcile_spec.lua): a tiny defaults.apply for the framework tests.
-- Fills jobManager.replicas 1, the ui port 8081 and, for a job cluster, restartPolicy and
-- cleanupPolicy as the API defaults them.
local defaults = {}

function defaults.apply(c)
  c.spec.jobManager = c.spec.jobManager or {}
  c.spec.jobManager.replicas = c.spec.jobManager.replicas or 1
  c.spec.jobManager.ports = c.spec.jobManager.ports or { ui = 8081 }
  c.spec.taskManager = c.spec.taskManager or {}
  if c.spec.job then
    c.spec.job.restartPolicy = c.spec.job.restartPolicy or "Never"
    local cp = c.spec.job.cleanupPolicy or {}
    cp.afterJobSucceeds = cp.afterJobSucceeds or "DeleteCluster"
    cp.afterJobFails = cp.afterJobFails or "KeepCluster"
    cp.afterJobCancelled = cp.afterJobCancelled or "DeleteCluster"
    c.spec.job.cleanupPolicy = cp
  end
  return c
end

return defaults
