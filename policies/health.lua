-- SPDX-License-Identifier: Apache-2.0
--- policies/health.lua: is a running job healthy? The Apache Flink Kubernetes Operator's
-- `kubernetes.operator.cluster.health-check.*` (restarts within a window, checkpoint progress
-- within a window) as a policy. Pure function; the framework (lua/fc/reconcile.lua) asks Flink
-- for the job's restart counter (GET /jobs/<id>/metrics?get=numRestarts: the job details of
-- Flink 1.20 and 2.x carry no restart count, the metric is in both) and its checkpoints (GET
-- /jobs/<id>/checkpoints), keeps a few samples of them in status.components.job.health, and
-- calls `decide` on each pass while the job is Running (Flink: RUNNING, RESTARTING, ...).
-- Its answer goes to job.decide as `input.health`:
--   {action="ok"}: nothing to do.
--   {action="fail", reason=<text>}: the job is cancelled in Flink and its state is Failed with
--     job.failureReason = reason and a Warning Event JobUnhealthy. A job with restartPolicy
--     FromSavepointOnFailure is then resubmitted from its latest savepoint when restart.lua says
--     so (settings.lua's RESTART_*: at most RESTART_MAX_ATTEMPTS times, then it stays Failed):
--     "restart from the last savepoint, Failed after N". Without it, cleanupPolicy.afterJobFails applies.
-- The decisions an operator may change are its tunables in settings.lua, section "Health":
-- HEALTH_RESTART_THRESHOLD restarts within HEALTH_RESTART_WINDOW (Apache operator:
-- restarts.threshold 64 within restarts.window 2 min; ours is stricter: a job that restarts
-- every minute is broken) and HEALTH_CHECKPOINT_PROGRESS_WINDOW (only when checkpointing is on:
-- flinkProperties execution.checkpointing.interval; off by default, as the Apache operator's
-- checkpoint-progress.enabled) (docs/lifecycle.md, fixtures in policies/testdata/health/).
local settings = require("settings")

local health = {}
health.contract = "hooks.flinkoperator.k8s.io/v1"

local UNITS = { s = 1, m = 60, h = 3600, d = 86400 }

--- health.seconds(d) -> seconds of a duration "<n>s|m|h|d" (or a number of seconds), nil for nil;
-- raises "health: bad duration <d>" for anything else.
function health.seconds(d)
  if d == nil or type(d) == "number" then return d end
  local n, u = tostring(d):match("^(%d+)([smhd])$")
  if not n then error("health: bad duration " .. tostring(d) .. " (e.g. 30s, 5m, 1h)", 0) end
  return tonumber(n) * UNITS[u]
end

--- health.restarts_within(ctx, window) -> restarts of the job within the last `window` seconds,
-- nil while Flink has not told its restart count. The count at the window's start is the newest
-- sample taken at or before it; without one, 0 when the job started within the window, else
-- the oldest sample (restarts before the controller first saw the count are not counted).
function health.restarts_within(ctx, window)
  local r = ctx.restarts or {}
  if r.count == nil then return nil end
  local from = ctx.now - window
  local base
  for _, s in ipairs(r.samples or {}) do
    if s.time <= from then base = s.count end
  end
  if base == nil then
    if (ctx.start_time or 0) >= from then
      base = 0
    else
      base = ((r.samples or {})[1] or { count = r.count }).count
    end
  end
  return r.count - base
end

--- health.decide(ctx) -> {action="ok"} | {action="fail", reason=}
-- ctx: {job={id=, state=}, flink_state=<Flink's state: RUNNING, RESTARTING, ...>,
--   start_time=<unix s the job started in Flink, 0 when unknown>,
--   restarts={count=<numRestarts now, nil while unknown>, samples={{count=, time=}...} (oldest
--   first: the count each time it changed, at most fc.health.SAMPLES)},
--   checkpoints={enabled=bool, completed=<counts.completed, nil while unknown>,
--   progress=<unix s of the last progress: the newest checkpoint's ack, or when the completed
--   count last grew, or when the job started>}, now=<unix s>}.
function health.decide(ctx)
  local threshold = settings.HEALTH_RESTART_THRESHOLD
  if threshold then
    local window = health.seconds(settings.HEALTH_RESTART_WINDOW)
    local n = health.restarts_within(ctx, window)
    if n and n > threshold then
      return { action = "fail", reason = "job " .. tostring(ctx.job.id) .. " restarted " .. n .. " times within "
        .. tostring(settings.HEALTH_RESTART_WINDOW) .. " (more than " .. threshold .. ")" }
    end
  end
  local cp = ctx.checkpoints or {}
  local window = health.seconds(settings.HEALTH_CHECKPOINT_PROGRESS_WINDOW)
  if window and cp.enabled and cp.progress and ctx.now - cp.progress > window then
    return { action = "fail", reason = "job " .. tostring(ctx.job.id) .. ": no checkpoint completed for "
      .. math.floor(ctx.now - cp.progress) .. " s (more than "
      .. tostring(settings.HEALTH_CHECKPOINT_PROGRESS_WINDOW) .. ")" }
  end
  return { action = "ok" }
end

return health
