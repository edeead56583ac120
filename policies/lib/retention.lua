-- SPDX-License-Identifier: Apache-2.0
--- lib.retention: the savepoint history of a job cluster (status.components.job.savepointHistory)
-- and its retention: which recorded savepoints are disposed through Flink, when. Pure; used by
-- savepoint.lua, which calls retention.plan each pass (the framework, fc.savepoints, records
-- every savepoint it sees end).
--
-- History (recorded by the framework, fc.savepoints.record): a list, newest first, of
-- {time=<RFC 3339, when the outcome was read>, triggerType=
-- "manual"|"periodic"|"upgrade"|"cancel", triggerID=<ours, 32 hex>, jobID=, location=<on
-- success>, result="Succeeded"|"Failed", failureCause=<short, on failure>, disposal=<while one
-- is under way or failed: {state="InProgress"|"Failed", requestTime=, requestID=<Flink's>,
-- attempts=, nextAttemptTime=, message=}>}. Only what the controller triggered is recorded (and
-- so only that is ever disposed): a fromSavepoint the user gives, a savepoint taken outside the
-- controller, or one recorded before this history existed is never deleted.
--
-- Retention, spec.job.savepointRetention {maxCount, maxAgeSeconds}:
-- - absent: nothing is disposed (the savepoints stay, as before this history); the history
--   keeps its newest HISTORY_MAX entries.
-- - set: the newest maxCount (default MAX_COUNT_DEFAULT) Succeeded entries are kept, and those
--   younger than maxAgeSeconds when set (both limits apply); every other Succeeded entry is
--   disposed (Flink's POST /savepoint-disposal, then GET /savepoint-disposal/<request id> until
--   COMPLETED) and leaves the history once disposed (Event SavepointDisposed). Failed entries
--   (no files) beyond maxCount failed ones or maxAgeSeconds are dropped.
-- - protected, never disposed (kept in the history beyond the limits): the newest Succeeded
--   entry, and any whose location is one of `protected` (savepoint.lua: the job's savepointLocation,
--   the savepoint it was last started from, spec.job.fromSavepoint).
-- - one disposal at a time, only while the JobManager runs (`jm_ready`): with the cluster stopped
--   (cleanupPolicy deleted it) disposal waits until a JobManager runs again. A disposal that
--   fails is recorded on its entry (disposal.state Failed, message, Event
--   SavepointDisposalFailed) and tried again after RETRY_SECONDS, doubling up to
--   RETRY_MAX_SECONDS; the job is never held for it. Flink answering that the savepoint does not
--   exist (an earlier request disposed it, or it was removed by hand) counts as disposed.
local clock = require("lib.clock")

local retention = {}

--- Entries the history keeps without spec.job.savepointRetention (nothing is disposed then).
retention.HISTORY_MAX = 10
--- Succeeded savepoints kept when savepointRetention gives no maxCount.
retention.MAX_COUNT_DEFAULT = 5
--- Seconds between polls of a disposal in progress.
retention.POLL_SECONDS = 5
--- Seconds a disposal request may stay unanswered (e.g. the controller restarted) before it
-- counts as failed and is sent again.
retention.REQUEST_TIMEOUT = 120
--- Backoff of a failed disposal: RETRY_SECONDS, doubled per attempt, at most RETRY_MAX_SECONDS.
retention.RETRY_SECONDS = 30
retention.RETRY_MAX_SECONDS = 3600
--- Flink's failure when the savepoint to dispose is not there (Flink's
-- AbstractFsCheckpointStorageAccess: "Cannot find checkpoint or savepoint file/directory"),
-- looked for in the whole trace: its first line is the wrapper "Could not dispose savepoint".
retention.GONE_PATTERNS = { "FileNotFoundException", "Cannot find checkpoint or savepoint" }

local function gone(failure)
  for _, p in ipairs(retention.GONE_PATTERNS) do
    if tostring(failure):find(p, 1, true) then return true end
  end
  return false
end

local function describe(e)
  return "savepoint " .. tostring(e.location) .. " (" .. tostring(e.triggerType) .. ", " .. tostring(e.time) .. ")"
end

--- retention.plan(input) -> {history=<the new list>, intents={{kind="dispose_savepoint", id=,
--   location=}|{kind="dispose_status", id=, request_id=}} (fc.flink), events={{type, reason,
--   message}}, requeue_after=<seconds or nil>}
-- input: {history=<status.components.job.savepointHistory or nil>, retention=<spec.job.
--   savepointRetention or nil>, protected={<location>=true}, jm_ready=<bool: the JobManager and
--   its Service are Ready>, disposals=<fc.flink view's disposals: {<savepoint trigger id>=
--   {phase=, request_id=, status=, failure=, trace=, error=, http=, not_found=, time=}}>, now=<unix s>}.
function retention.plan(input)
  local now = input.now
  local out = { history = {}, intents = {}, events = {} }
  local history = input.history or {}
  local function requeue(s)
    if s and s > 0 and (out.requeue_after == nil or s < out.requeue_after) then out.requeue_after = s end
  end
  local r = input.retention
  if type(r) ~= "table" then
    for i = 1, math.min(#history, retention.HISTORY_MAX) do out.history[i] = history[i] end
    return out
  end
  local max_count = tonumber(r.maxCount) or retention.MAX_COUNT_DEFAULT
  local max_age = tonumber(r.maxAgeSeconds) or 0
  local protected = input.protected or {}
  local disposals = input.disposals or {}

  -- 1. what is kept, what goes (newest first)
  local succeeded, failed = 0, 0
  local expired = {} -- the Succeeded entries to dispose, newest first
  for _, e in ipairs(history) do
    local age = now - (clock.parse(e.time) or now)
    local old = max_age > 0 and age > max_age
    if e.result == "Succeeded" and e.location then
      succeeded = succeeded + 1
      local keep = succeeded == 1 or protected[e.location] or (succeeded <= max_count and not old)
      if not keep then expired[#expired + 1] = e end
      out.history[#out.history + 1] = e
    else
      failed = failed + 1
      if failed <= max_count and not old then out.history[#out.history + 1] = e end
    end
  end

  -- 2. the disposal in flight: its answer (only one newer than its request counts)
  local busy = false
  local function failed_now(e, message)
    local d = e.disposal
    local attempts = tonumber(d.attempts) or 1
    local delay = math.min(retention.RETRY_MAX_SECONDS, retention.RETRY_SECONDS * 2 ^ (attempts - 1))
    e.disposal = { state = "Failed", attempts = attempts, message = tostring(message):sub(1, 300),
      requestTime = d.requestTime, nextAttemptTime = clock.format(now + math.floor(delay)) }
    out.events[#out.events + 1] = { type = "Warning", reason = "SavepointDisposalFailed",
      message = describe(e) .. ": attempt " .. attempts .. " failed, next in " .. math.floor(delay) .. " s: "
        .. e.disposal.message }
    requeue(math.floor(delay))
  end
  local disposed = {}
  -- (any entry's: one sent before the entry was protected is followed to its end too)
  for _, e in ipairs(out.history) do
    local d = e.disposal
    if d and d.state == "InProgress" then
      local t0 = clock.parse(d.requestTime) or now
      local op = disposals[e.triggerID]
      if op and (tonumber(op.time) or 0) < t0 then op = nil end
      if op and op.phase == "accepted" and op.request_id then
        d.requestID = op.request_id
      end
      local done = op and op.phase == "status" and op.status == "COMPLETED"
      if done and (not op.failure or gone(op.trace or op.failure)) then
        disposed[e] = true
        out.events[#out.events + 1] = { type = "Normal", reason = "SavepointDisposed",
          message = describe(e) .. (op.failure and " was already gone" or " disposed") }
      elseif done then
        failed_now(e, op.failure)
      elseif op and (op.phase == "trigger" or op.not_found) then
        failed_now(e, op.error or "disposal request failed")
      elseif not input.jm_ready then
        -- the JobManager went away meanwhile: wait for it (its readiness brings the next pass;
        -- a new JobManager answers 404 for the request, and the disposal is sent again)
        busy = true
      elseif d.requestID then
        -- accepted, in progress, or a poll went unanswered: poll (after POLL_SECONDS when
        -- this controller holds no answer yet)
        busy = true
        if op or now - t0 >= retention.POLL_SECONDS then
          out.intents[#out.intents + 1] = { kind = "dispose_status", id = e.triggerID, request_id = d.requestID }
        end
        requeue(retention.POLL_SECONDS)
      elseif now - t0 >= retention.REQUEST_TIMEOUT then
        failed_now(e, "no answer to the disposal request within " .. retention.REQUEST_TIMEOUT .. " s")
      else
        busy = true
        requeue(retention.POLL_SECONDS)
      end
    end
  end
  if next(disposed) then
    local kept = {}
    for _, e in ipairs(out.history) do
      if not disposed[e] then kept[#kept + 1] = e end
    end
    out.history = kept
  end

  -- 3. the next disposal: the oldest expired entry that is not waiting for its retry
  if not busy then
    for i = #expired, 1, -1 do
      local e = expired[i]
      local d = e.disposal
      local due = d and d.state == "Failed" and clock.parse(d.nextAttemptTime) or nil
      if not disposed[e] and (not d or d.state ~= "InProgress") then
        if due and due > now then
          requeue(due - now)
        elseif input.jm_ready then
          e.disposal = { state = "InProgress", requestTime = clock.format(now),
            attempts = (d and tonumber(d.attempts) or 0) + 1 }
          out.intents[#out.intents + 1] = { kind = "dispose_savepoint", id = e.triggerID, location = e.location }
          requeue(retention.POLL_SECONDS)
          break
        end
      end
    end
  end
  -- entries kept again (a larger maxCount, a protected location) forget their disposal
  local expired_set = {}
  for _, e in ipairs(expired) do expired_set[e] = true end
  for _, e in ipairs(out.history) do
    if not expired_set[e] and e.disposal and e.disposal.state ~= "InProgress" then e.disposal = nil end
  end
  return out
end

return retention
