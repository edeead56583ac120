-- SPDX-License-Identifier: Apache-2.0
--- fc.restsubmit: the protocol of submitting a job cluster's job through the JobManager's REST
-- API instead of the submitter Job (policies/submit.lua decides which, and gives the limits).
-- Available to policies: require("fc.restsubmit") (policies/job.lua runs it). One step per pass,
-- recorded in status.components.job.submission (ours) = {jobID=<the id we give the job>, state=,
-- time=}:
--
--   Checking   the job list (GET /jobs/overview) answered after `time` shows no job that is not
--              ended -> Uploading (upload_jar intent: the core downloads jarFile and sends it to
--              POST /jars/upload); a job that is not ended is adopted as ours (j.id) instead: one
--              FlinkCluster never runs two copies (e.g. after a controller restart mid-submit)
--   Uploading  the jar id came back -> Submitted: run_jar intent (POST /jars/<jar id>/run with
--              jobId = jobID, the entry class, args, parallelism, savepoint and
--              allowNonRestoredState), and job.id = jobID at once (the status holds it before the
--              request goes out); no answer after limits.retry_seconds (lost) -> Checking; at once
--              when the upload was asked before this controller process began (flink.since: a
--              restart, e.g. after a SIGKILL, lost the answer for sure)
--   Submitted  job.observe follows job.id like a submitted one (Lost if never listed, Failed
--              with the run's error as the reason); a run request an earlier controller process
--              sent that Flink does not list (run_lost) -> Checking again, the same id
--
-- Once Flink answered the run request (or lists the job), the uploaded jar is deleted from the
-- JobManager (jar_deletions): Flink built the job from it and needs it no more, and a session
-- cluster would otherwise keep one jar per submission in its web.upload.dir.
--
-- A failed download or upload fails the submission: step's `failed` is Flink's or the
-- download's error text, which the policy turns into the job's failureReason. Pure functions.
local trigger = require("fc.trigger")

local restsubmit = {}

--- The limits of a submission, policies/submit.lua's (`limits` of step): the jar download
-- takes at most jar_max_bytes (a bigger jar fails the submission) within jar_timeout_seconds
-- (the controller keeps the jar in a temporary file in $TMPDIR, not in memory, while it uploads
-- it); an upload without an answer after retry_seconds is checked and sent again. These
-- defaults apply to a key the policy leaves out.
restsubmit.LIMITS = { jar_max_bytes = 1024 * 1024 * 1024, jar_timeout_seconds = 120, retry_seconds = 180 }

--- restsubmit.job_id(now, previous) -> 32 lowercase hex (a Flink JobID): the id of a new
-- submission asked at `now` (unix seconds), made as our savepoints' trigger ids are
-- (fc.trigger.id: the time in 8 hex digits, then a sequence number), so the ids of one job
-- never repeat and sort by time. Pure: the same inputs give the same id.
restsubmit.job_id = trigger.id

-- A job state from Flink that is not ended (FINISHED, CANCELED, FAILED end a job).
local ENDED = { FINISHED = true, CANCELED = true, FAILED = true }

-- Whether Flink's job list (fc.flink view's `jobs`) holds job `id`.
local function listed(flink, id)
  for _, fj in ipairs(flink.jobs or {}) do
    if (fj.jid or fj.id) == id then return true end
  end
  return false
end

--- restsubmit.step(input) -> {intents={...}, submitted=bool, failed=<error text or nil>,
--   requeue_after=<seconds or nil>}; updates j.submission (and j.id once submitted) in place.
-- input: {job=<status.components.job, changed in place>, spec=<spec.job>, flink=<fc.flink view:
--   jobs, jobs_time, submissions, since>, from_savepoint=<path or nil>, now=<unix s>,
--   limits=<{jar_max_bytes, jar_timeout_seconds, retry_seconds}, absent keys LIMITS'>}.
-- `failed` is the download's or Flink's error text as it came ("" when it gave none).
function restsubmit.step(input)
  local j, spec, flink, now = input.job, input.spec, input.flink or {}, input.now
  local limits = {}
  for k, v in pairs(restsubmit.LIMITS) do limits[k] = (input.limits or {})[k] or v end
  local out = { intents = {} }
  local sub = j.submission
  if not sub or sub.state == "Submitted" then
    -- a new submission (the previous one, if any, belongs to a job that ended)
    sub = { jobID = restsubmit.job_id(now, sub and sub.jobID), state = "Checking", time = now }
    j.submission = sub
    out.intents[1] = { kind = "list_jobs" }
    out.requeue_after = 1
    return out
  end
  local answers = (flink.submissions or {})[sub.jobID] or {}
  if sub.state == "Checking" then
    if (tonumber(flink.jobs_time) or 0) < sub.time then
      out.intents[1] = { kind = "list_jobs" }
      out.requeue_after = 1
      return out
    end
    for _, fj in ipairs(flink.jobs or {}) do
      local id = fj.jid or fj.id
      if type(id) == "string" and not ENDED[fj.state or fj.status or ""] then
        -- a job runs already: ours from an earlier submission; follow it, submit nothing
        j.id = id
        sub.state = "Submitted"
        out.submitted = true
        return out
      end
    end
    sub.state, sub.time = "Uploading", now
    out.intents[1] = { kind = "upload_jar", id = sub.jobID, jar_url = spec.jarFile,
      max_bytes = limits.jar_max_bytes, timeout_seconds = limits.jar_timeout_seconds }
    out.requeue_after = limits.retry_seconds
    return out
  end
  -- Uploading
  local up = answers.upload
  if up and up.time >= sub.time and up.jar_id then
    sub.state, sub.time = "Submitted", now
    j.id = sub.jobID
    out.submitted = true
    out.intents[1] = { kind = "run_jar", id = sub.jobID, jar_id = up.jar_id, entry_class = spec.className,
      args = spec.args, parallelism = spec.parallelism, savepoint_path = input.from_savepoint,
      allow_non_restored_state = spec.allowNonRestoredState == true }
  elseif up and up.time >= sub.time and up.error then
    j.submission = nil
    out.failed = tostring(up.error)
  elseif now - sub.time >= limits.retry_seconds or (tonumber(flink.since) or 0) > sub.time then
    sub.state, sub.time = "Checking", now
    out.intents[1] = { kind = "list_jobs" }
    out.requeue_after = 1
  else
    out.requeue_after = limits.retry_seconds - (now - sub.time)
  end
  return out
end

--- restsubmit.run_lost(job, flink) -> bool: the run request of job.id was sent by an earlier
-- controller process (submission.time before flink.since: e.g. it was SIGKILLed right after the
-- status named the id), has no answer here, and a job list answered since this process began
-- does not show the job: Flink never got it (a request that got in is listed), so no answer
-- comes and the job would only turn Lost. the caller then submits again (restsubmit.again).
function restsubmit.run_lost(j, flink)
  local sub = j.submission
  if not (sub and sub.state == "Submitted" and j.id and sub.jobID == j.id) then return false end
  flink = flink or {}
  local since = tonumber(flink.since) or 0
  if since <= (tonumber(sub.time) or 0) or (tonumber(flink.jobs_time) or 0) < since then return false end
  if (((flink.submissions or {})[j.id] or {}).run) ~= nil then return false end
  if listed(flink, j.id) then return false end
  return flink.reachable == true
end

--- restsubmit.again(job, now): the submission starts over with the same job id (Checking: a job
-- of ours that got in after all is adopted, none runs twice); job.id is forgotten until then.
function restsubmit.again(j, now)
  j.id = nil
  j.missingSince = nil
  j.submission = { jobID = j.submission.jobID, state = "Checking", time = now }
end

--- restsubmit.run_error(job, flink) -> error text or nil: why the run request of job.id failed
-- (Flink's answer as it came).
function restsubmit.run_error(j, flink)
  local sub = j.submission
  if not (sub and j.id and sub.jobID == j.id) then return nil end
  local run = (((flink or {}).submissions or {})[j.id] or {}).run
  if run and run.error then return tostring(run.error) end
  return nil
end

--- restsubmit.jar_deletions(job, flink) -> {{kind="delete_jar", id=<submission.jobID>,
--   jar_id=<the upload's>}} or {}: the jar the current submission uploaded, to be deleted from
-- the JobManager (DELETE /jars/<jar id>, as the Apache Flink operator does after its run
-- request), once the run request was answered by Flink (an answer with an HTTP status: the job
-- graph was built, or failed to) or the job is listed (a run answer lost to a timeout). Asked
-- until a delete answer newer than the upload came, whatever it says (Flink answers 400 "File
-- ... does not exist" for a jar it does not hold: gone with a restarted JobManager, say).
-- job: status.components.job (its `submission`); flink: fc.flink's view.
-- Pure. A jar of a submission given up before its run (a lost upload answer, another upload
-- with the same id) is not tracked: the JobManager's web.upload.dir holds it until it restarts.
function restsubmit.jar_deletions(j, flink)
  local sub = type(j) == "table" and j.submission or nil
  if type(sub) ~= "table" or type(sub.jobID) ~= "string" then return {} end
  flink = flink or {}
  local answers = (flink.submissions or {})[sub.jobID] or {}
  local up, run, del = answers.upload, answers.run, answers.delete
  if not (up and up.jar_id) or del and del.time >= up.time then return {} end
  local ran = run and run.time >= up.time and (run.job_id ~= nil or (run.http or 0) ~= 0)
  ran = ran or (tonumber(flink.jobs_time) or 0) >= up.time and listed(flink, sub.jobID)
  if not ran then return {} end
  return { { kind = "delete_jar", id = sub.jobID, jar_id = up.jar_id } }
end

return restsubmit
