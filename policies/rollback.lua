-- SPDX-License-Identifier: Apache-2.0
--- policies/rollback.lua: is the job of a new revision healthy, and if not, is it time to return
-- to the last stable revision? The Apache Flink Kubernetes Operator's
-- `kubernetes.operator.deployment.rollback.enabled` / `readiness.timeout` as a policy, opt-in
-- per cluster with spec.job.rollback {enabled, readinessTimeoutSeconds}.
--
-- The framework (lua/fc/reconcile.lua) calls `decide` on each pass of a job cluster with
-- spec.job.rollback.enabled while no update is in progress and the current revision is not the
-- last stable one (status.lastStableRevision). Its answer:
--   {action="stable"}: the current revision becomes status.lastStableRevision (what a later
--     unhealthy upgrade returns to).
--   {action="wait", requeue_after=<seconds>}: not judged yet; asked again by then.
--   {action="rollback", reason=<text>}: the framework renders the last stable revision's spec
--     instead of the user's (which stays as written): the broken job is cancelled without a
--     savepoint and the stable spec's job is submitted from the savepoint the upgrade took;
--     status.rollback, the condition RolledBack and a Warning Event UpgradeRolledBack give the
--     reason. The user's spec is not tried again until it changes (a new generation).
--     Without a stable revision to return to (the first revision, never healthy) the framework
--     only waits.
-- Healthy: Flink runs the job (RUNNING), it has not restarted since it started (numRestarts 0),
-- and it has run so for at least settings.ROLLBACK_STABLE_SECONDS; the deadline without
-- readinessTimeoutSeconds (the CRD's default) is settings.ROLLBACK_DEFAULT_TIMEOUT_SECONDS. The
-- tunables an operator may change are those, in settings.lua (docs/lifecycle.md, "Rollback";
-- fixtures in policies/testdata/rollback/).
local clock = require("lib.clock")
local settings = require("settings")

local rollback = {}
rollback.contract = "hooks.flinkoperator.k8s.io/v1"

--- rollback.decide(input) -> {action="stable"} | {action="wait", requeue_after=} |
--   {action="rollback", reason=}
-- input: {settings=<spec.job.rollback: {enabled, readinessTimeoutSeconds}>,
--   revision=<the current revision's name>, since=<RFC 3339: when it became current, i.e. its
--   job's submission (status.currentRevisionTime)>, job={id=, state=<status job state: Running, Failed, Pending, ...>,
--   failureReason=}, flink_state=<Flink's state: RUNNING, RESTARTING, ... or "">,
--   start_time=<unix s the job started in Flink, 0 when unknown>,
--   restarts=<numRestarts now, absent while unknown>, now=<unix s>}.
function rollback.decide(input)
  local job = input.job
  local now = input.now
  local timeout = tonumber(input.settings.readinessTimeoutSeconds) or settings.ROLLBACK_DEFAULT_TIMEOUT_SECONDS
  local running = job.state == "Running" and input.flink_state == "RUNNING" and input.start_time > 0
  local calm = input.restarts == 0
  if running and calm and now - input.start_time >= settings.ROLLBACK_STABLE_SECONDS then
    return { action = "stable" }
  end
  local left = (clock.parse(input.since) or now) + timeout - now
  if left > 0 then
    local wait = left
    if running and calm then wait = math.min(wait, input.start_time + settings.ROLLBACK_STABLE_SECONDS - now) end
    return { action = "wait", requeue_after = math.max(1, math.ceil(wait)) }
  end
  local why
  if running and calm then
    why = "running for " .. (now - input.start_time) .. " s only"
  elseif running then
    why = "restarted " .. tostring(input.restarts or "?") .. " times"
  else
    why = "job " .. tostring(job.state or "unknown")
      .. (job.failureReason and (" (" .. tostring(job.failureReason) .. ")") or "")
  end
  return { action = "rollback", reason = "revision " .. tostring(input.revision) .. " not healthy within "
    .. timeout .. " s of its submission: " .. why }
end

return rollback
