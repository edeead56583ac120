-- SPDX-License-Identifier: Apache-2.0
--- policies/restart.lua: when a failed job of restartPolicy FromSavepointOnFailure is
-- resubmitted from its latest savepoint: wait, restart now, or give up. One small decision;
-- job.decide (policies/job.lua) asks it for a Failed or Lost job that has an id and a savepoint
-- to restore from, while no update or cancel is in progress, and acts on the answer (Events
-- JobRestarted / RestartLimitReached, the resubmission, the status fields). The numbers are
-- settings.lua's RESTART_* (section "Restart"); fixtures in policies/testdata/restart/.
--
-- The rules and where they come from:
--   - Backoff (Kubernetes' CrashLoopBackOff, kubelet pkg/kubelet/kuberuntime: a crashed container
--     is restarted after 10 s, doubled per crash, capped at 300 s): restart n (1, 2, ...) is due
--     min(RESTART_MAX_DELAY_SECONDS, RESTART_INITIAL_DELAY_SECONDS * RESTART_BACKOFF_FACTOR^(n-1))
--     seconds after the failure was first seen. That moment's due time is kept in the status
--     (job.nextRestartTime, ours) so that the wait survives a controller restart.
--   - Reset (kubelet: the backoff is forgotten after a container ran 10 min): the count
--     (job.restartAttempt, ours) starts again once the job has run RESTART_RESET_AFTER_SECONDS in
--     Flink (`reset`, called by job.observe).
--   - Limit (ours; the kubelet retries for ever, and the Apache Flink Kubernetes Operator's
--     restart of a failed job (kubernetes.operator.job.restart.failed) has no limit either): after
--     RESTART_MAX_ATTEMPTS restarts the job stays Failed and cleanupPolicy.afterJobFails applies; a
--     job that failed that often from the same savepoint needs a human.
--   - What a restart is (Apache operator: a FAILED job with job.restart.failed is resubmitted from
--     its last savepoint or checkpoint, like an upgrade): job.decide resubmits from
--     job.savepointLocation (else spec.job.fromSavepoint). Lost (the JobManager stopped listing the
--     id) counts as failed.
local clock = require("lib.clock")
local settings = require("settings")

local restart = {}
restart.contract = "hooks.flinkoperator.k8s.io/v1"

--- restart.delay(n) -> whole seconds restart n (1, 2, ...) waits after the failure is seen.
function restart.delay(n)
  return math.floor(math.min(settings.RESTART_MAX_DELAY_SECONDS,
    settings.RESTART_INITIAL_DELAY_SECONDS * settings.RESTART_BACKOFF_FACTOR ^ (n - 1)))
end

--- restart.decide(input) -> decision
-- input: {job={restartAttempt=<restarts since the count last started again, absent: 0>,
--   nextRestartTime=<RFC 3339: when the restart waited for is due; absent: the failure is seen
--   for the first time>}, now=<unix s>} (job is status.components.job as job.decide has it: the
--   fields above are the ones the shipped rule reads; state, id, failureReason are there too).
-- decision: {action="wait", attempt=<n: the restart waited for>, after_seconds=<s until it is
--   due>, next_restart_time=<RFC 3339: job.nextRestartTime to keep>, reason=<text>}
--   | {action="restart", attempt=<n: job.restartAttempt from now on>, reason=<"restart n of max">}
--   | {action="give_up", attempt=<restarts done>, reason=<"after max restarts">}.
function restart.decide(input)
  local done = tonumber(input.job.restartAttempt) or 0
  local max = settings.RESTART_MAX_ATTEMPTS
  local n = done + 1
  if n > max then
    return { action = "give_up", attempt = done, reason = "after " .. max .. " restarts" }
  end
  local what = "restart " .. n .. " of " .. max
  local due = clock.parse(input.job.nextRestartTime)
  if not due then
    -- the failure seen for the first time: show it, restart later (even after 0 s: one pass on)
    local delay = restart.delay(n)
    return { action = "wait", attempt = n, after_seconds = delay, next_restart_time = clock.format(input.now + delay),
      reason = what .. " due in " .. delay .. " s" }
  elseif input.now < due then
    return { action = "wait", attempt = n, after_seconds = due - input.now,
      next_restart_time = input.job.nextRestartTime, reason = what .. " due in " .. (due - input.now) .. " s" }
  end
  return { action = "restart", attempt = n, reason = what }
end

--- restart.reset(input) -> true when the restart count starts again: the job runs and has run
-- RESTART_RESET_AFTER_SECONDS in Flink.
-- input: {state=<job state>, start_time=<unix s the job started in Flink, 0 unknown>, now=<unix s>}.
function restart.reset(input)
  local started = tonumber(input.start_time) or 0
  return input.state == "Running" and started > 0 and input.now - started >= settings.RESTART_RESET_AFTER_SECONDS
end

return restart
