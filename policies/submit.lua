-- SPDX-License-Identifier: Apache-2.0
--- Policy `submit`: how a job cluster's job is submitted, and the limits of a REST submission.
-- The protocol itself (jar upload, run request, the job id, retries) is the framework's,
-- fc.restsubmit; job.lua asks this policy which way to go and runs the one it names.
--
-- method({job = <spec.job of the defaulted FlinkCluster>}) -> {method = "rest"|"job"}
--   "rest": the controller downloads jarFile, uploads it to the JobManager (POST /jars/upload)
--           and runs it (POST /jars/<jar id>/run), giving the job its id (fc.restsubmit);
--   "job":  the submitter Job `<n>-job-submitter` runs `flink run` in a pod (lib.submitter).
-- Shipped: "rest" for a jarFile given as an http(s):// URL (the submitter image of the API
-- cannot fetch one), "job" otherwise. E.g. always REST: `return { method = "rest" }`.
-- A FlinkJob (a job on a session cluster) has no submitter Job: its jarFile is an http(s):// URL
-- (the CRD's pattern), which must give "rest".
-- Fixtures: policies/testdata/submit/.
local submit = {}

--- The limits of a REST submission (fc.restsubmit.step's `limits`): the jar download takes at
-- most JAR_MAX_BYTES (a bigger jar fails the submission: job Failed, "submission failed: ...")
-- within JAR_TIMEOUT_SECONDS; the controller keeps the jar in a temporary file in $TMPDIR (/tmp,
-- the Deployment's emptyDir, sizeLimit 2Gi), not in memory, while it uploads it. An upload
-- without an answer after RETRY_SECONDS is checked (GET /jobs/overview) and sent again.
submit.JAR_MAX_BYTES = 1024 * 1024 * 1024
submit.JAR_TIMEOUT_SECONDS = 120
submit.RETRY_SECONDS = 180

--- Longest failureReason of a failed submission ("submission failed: <root cause>"; bytes).
submit.REASON_MAX = 300

--- The hook: which way the job of `input.job` (spec.job) is submitted.
function submit.method(input)
  local jar = (input.job or {}).jarFile
  if type(jar) == "string" and jar:match("^https?://") then return { method = "rest" } end
  return { method = "job" }
end

--- submit.limits() -> {jar_max_bytes, jar_timeout_seconds, retry_seconds}: the constants above,
-- in fc.restsubmit.step's shape.
function submit.limits()
  return { jar_max_bytes = submit.JAR_MAX_BYTES, jar_timeout_seconds = submit.JAR_TIMEOUT_SECONDS,
    retry_seconds = submit.RETRY_SECONDS }
end

return submit
