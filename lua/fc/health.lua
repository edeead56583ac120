-- SPDX-License-Identifier: Apache-2.0
--- fc.health: what the health policy (policies/health.lua) reads, kept by the framework.
--
-- While a job is Running, each pass asks Flink for its restart counter and its checkpoints
-- (fc.flink intents job_restarts, job_checkpoints), keeps a few samples of them in
-- status.components.job.health and hands them to health.decide as its `ctx`. The samples are
-- small and bounded: the restart count each time it changed (at most SAMPLES) and the last
-- checkpoint progress. Times in them are unix seconds (the window arithmetic is the policy's).
-- A new job id starts them afresh.
local util = require("fc.util")

local health = {}

--- Restart-count samples kept (the oldest go first): more than any RESTART_THRESHOLD a policy
-- sensibly uses within its window.
health.SAMPLES = 16

-- Flink states in which a job is judged: it runs or Flink restarts it by itself.
local JUDGED = { RUNNING = true, RESTARTING = true, FAILING = true, CREATED = true, INITIALIZING = true }

local function checkpointing_on(spec)
  local props = type(spec) == "table" and spec.flinkProperties or {}
  local v = type(props) == "table" and props["execution.checkpointing.interval"] or nil
  return v ~= nil and not tostring(v):match("^%s*0+%s*%a*%s*$") and tostring(v) ~= ""
end

--- health.kept(job) -> the job's status health when it is of this job id, else nil.
function health.kept(job)
  local h = type(job) == "table" and job.health or nil
  if type(h) == "table" and job.id ~= nil and h.jobID == job.id then return h end
  return nil
end

--- health.observe(job, flink_state, start_time, flink, spec, now) -> {health=<the job's new
--   status.components.job.health, nil when the job is not judged>, ctx=<health.decide's input,
--   nil when not judged>, intents={{kind="job_restarts", job_id=}, {kind="job_checkpoints", job_id=}}}
-- job: the job status after job.observe ({id, state, health=<the kept samples>});
-- flink_state: Flink's state of it; start_time: unix s it started in Flink (0: unknown);
-- flink: the fc.flink view (its health[<id>]: the latest answers); spec: the defaulted spec;
-- now: unix s. Judged: a job with an id, state Running and Flink state in JUDGED. Checkpoints
-- are asked for only when the spec turns checkpointing on (execution.checkpointing.interval).
function health.observe(job, flink_state, start_time, flink, spec, now)
  if type(job) ~= "table" or not job.id or job.state ~= "Running" or not JUDGED[flink_state] then
    return { intents = {} }
  end
  local old = health.kept(job) or {}
  local seen = (type(flink) == "table" and type(flink.health) == "table" and flink.health[job.id]) or {}
  local h = { jobID = job.id, failed = util.deepcopy(old.failed),
    restarts = util.deepcopy(type(old.restarts) == "table" and old.restarts or {}),
    checkpoints = util.deepcopy(type(old.checkpoints) == "table" and old.checkpoints or nil) }
  local count = seen.restarts
  if count ~= nil then
    local last = h.restarts[#h.restarts]
    if not last or last.count ~= count then
      h.restarts[#h.restarts + 1] = { count = count, time = math.floor(seen.restarts_time or now) }
      while #h.restarts > health.SAMPLES do table.remove(h.restarts, 1) end
    end
  elseif #h.restarts > 0 then
    count = h.restarts[#h.restarts].count
  end
  local cp = seen.checkpoints
  if cp then
    local prev = h.checkpoints or {}
    local progress = prev.progress or (start_time > 0 and start_time) or now
    if prev.completed ~= nil and cp.completed > prev.completed then
      progress = math.max(progress, math.floor(seen.checkpoints_time or now))
    end
    if cp.latest_ack > 0 then progress = math.max(progress, math.floor(cp.latest_ack / 1000)) end
    h.checkpoints = { completed = cp.completed, progress = progress }
  end
  local ctx = { job = { id = job.id, state = job.state }, flink_state = flink_state, start_time = start_time,
    restarts = { count = count, samples = util.deepcopy(h.restarts) },
    checkpoints = { enabled = checkpointing_on(spec), completed = h.checkpoints and h.checkpoints.completed,
      progress = h.checkpoints and h.checkpoints.progress or (start_time > 0 and start_time or nil) },
    now = now }
  local intents = { { kind = "job_restarts", job_id = job.id } }
  if ctx.checkpoints.enabled then intents[2] = { kind = "job_checkpoints", job_id = job.id } end
  return { health = h, ctx = ctx, intents = intents }
end

--- health.pass(decide, input) -> {health=<job.decide's input.health: nil | {action="fail",
--   reason=, told=<true once told>}>, intents=<the polls, as observe's>, ctx=<observe's ctx or nil>}
--   | nil, message (decide's answer is not a decision: the caller's badresult of health.decide)
-- The health step of a pass, the same for a job cluster (fc.reconcile) and a FlinkJob
-- (fc.flinkjob): `observe` above on `input` {job=<job.observe's job, its `health` set here to the
-- samples to keep (the status it writes)>, flink_state=, start_time=, flink=<fc.flink view>,
-- spec=<defaulted spec>, now=}, then decide(ctx) (the caller calls the policy) while the job is
-- judged. A verdict "fail" is kept in job.health.failed (so the job stays Failed and is told
-- once) until the job id changes.
function health.pass(decide, input)
  local job = input.job
  local hv = health.observe(job, input.flink_state or "", input.start_time or 0, input.flink, input.spec, input.now)
  job.health = hv.health or health.kept(job)
  local kept_failed = job.health and job.health.failed
  local verdict
  if hv.ctx then
    local hd = decide(hv.ctx)
    if hd == "ok" then hd = { action = "ok" } end
    if not (type(hd) == "table" and (hd.action == "ok" or hd.action == "fail" and type(hd.reason) == "string")) then
      return nil, "must return {action=\"ok\"} or {action=\"fail\", reason=<text>}"
    end
    if hd.action == "fail" and not kept_failed then
      job.health.failed = { reason = hd.reason, time = input.now }
      verdict = { action = "fail", reason = hd.reason }
    end
  end
  if kept_failed then verdict = { action = "fail", reason = kept_failed.reason, told = true } end
  return { health = verdict, intents = hv.intents, ctx = hv.ctx }
end

return health
