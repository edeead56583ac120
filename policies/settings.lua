-- SPDX-License-Identifier: Apache-2.0
--- policies/settings.lua: the tunables of the policies, in one file an operator edits (issue 32,
-- item 1). Each is a number (or a duration text, or nil where it says so) with its unit and
-- meaning beside it; the policies read them from here (`require("settings")`: another file of
-- the policy dir), so e.g. a slower restart backoff is a change of two lines below and nothing
-- else. `flink-controller test` (fixture settings/shipped) checks every value with `check`
-- before a set is served (an override ConfigMap's settings.lua too): a value of the wrong kind
-- or out of range fails with its name. Other tunables a section documents keep their module.
local settings = {}
settings.contract = "hooks.flinkoperator.k8s.io/v1"
--- settings.check() -> {errors={{path="settings.<NAME>", message=}...}}, none when every value
-- below is of the kind the policies need (lib.tunables). The hook of fixture settings/shipped.
function settings.check() return require("lib.tunables").check(settings) end

-- Job (policies/job.lua) --------------------------------------------------------------------

-- seconds: Flink REST polls of the job list while the job is not in a terminal state
settings.JOB_POLL_SECONDS = 10
-- seconds: a job id missing from a reachable JobManager's /jobs/overview is Lost after this
-- (3 polls: HA recovery lists it late; Fixtures job/observe-missing-grace, observe-lost)
settings.JOB_LOST_AFTER_SECONDS = 30
-- seconds: the same under Flink's Kubernetes HA (upgradeMode last-state: leader election, then
-- recovery from the HA storage; fixture job/observe-missing-grace-ha)
settings.JOB_LOST_AFTER_SECONDS_HA = 120
-- bytes: longest job.failureReason kept in the status (longer text is cut)
settings.JOB_FAILURE_REASON_MAX = 300
-- seconds: GET /jobs/<id>/exceptions answered with no entry yet is asked again this much later
settings.JOB_EXCEPTIONS_RETRY_SECONDS = 5

-- Restart (policies/restart.lua: restartPolicy FromSavepointOnFailure) -------------------------

-- seconds: delay before the first restart after a failure is seen (kubelet: 10 s)
settings.RESTART_INITIAL_DELAY_SECONDS = 10
-- factor: each further restart waits this many times longer (kubelet: 2; 1 = a fixed delay)
settings.RESTART_BACKOFF_FACTOR = 2
-- seconds: longest delay before a restart (kubelet: 300 s)
settings.RESTART_MAX_DELAY_SECONDS = 300
-- restarts: after this many the job stays Failed and cleanupPolicy.afterJobFails applies
settings.RESTART_MAX_ATTEMPTS = 3
-- seconds: a job that ran this long in Flink starts its restart count again (kubelet: 10 min)
settings.RESTART_RESET_AFTER_SECONDS = 600

-- Health (policies/health.lua) ----------------------------------------------------------------

-- restarts: a job Flink restarted more often than this within HEALTH_RESTART_WINDOW is
-- unhealthy (Apache operator: 64 within 2 min); nil: never
settings.HEALTH_RESTART_THRESHOLD = 5
-- duration "<n>s|m|h|d": the window HEALTH_RESTART_THRESHOLD counts in
settings.HEALTH_RESTART_WINDOW = "5m"
-- duration "<n>s|m|h|d" or nil (off, as the Apache operator's default): a checkpointing job
-- with no checkpoint completed for this long is unhealthy, e.g. "10m"
settings.HEALTH_CHECKPOINT_PROGRESS_WINDOW = nil

-- Rollback (policies/rollback.lua, spec.job.rollback) -----------------------------------------

-- seconds: a new revision's job is stable after running this long without a restart
settings.ROLLBACK_STABLE_SECONDS = 20
-- seconds: the deadline to become stable when spec.job.rollback.readinessTimeoutSeconds is unset
settings.ROLLBACK_DEFAULT_TIMEOUT_SECONDS = 300

-- Savepoints (policies/savepoint.lua; the trigger protocol's timeouts are the framework's,
-- lua/fc/savepoints.lua: POLL_SECONDS 5, TRIGGER_TIMEOUT 60, COMPLETE_TIMEOUT 600) ----------

-- seconds: a failed on-demand savepoint (update, cancelRequested) is taken again this much later
settings.SAVEPOINT_RETRY_SECONDS = 30
-- reasons whose savepoint ends the job with Flink's stop-with-savepoint (drain false); the
-- others, and these when absent or false, take a savepoint and then cancel ({}: never stop)
settings.SAVEPOINT_STOP_REASONS = { ["job cancel"] = true, update = true }
-- "CONFIGURED" | "FULL" | "INCREMENTAL" or nil (Flink's default, CONFIGURED: as the job's state
-- backend is set up): the checkpointType of the checkpoints spec.job.autoCheckpointSeconds
-- triggers (POST /jobs/<id>/checkpoints, Flink >= 1.19; lua/fc/checkpoints.lua)
settings.AUTO_CHECKPOINT_TYPE = "CONFIGURED"

-- (more sections below)

return settings
