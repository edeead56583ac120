-- SPDX-License-Identifier: Apache-2.0
-- Specs of fc.restsubmit, the REST-submission protocol (Checking -> Uploading -> Submitted, the
-- job id, retries, a lost run request), with the values a pass sees; the decision which way to
-- submit is policies/submit.lua's (its fixtures: policies/testdata/submit/).
local restsubmit = require("fc.restsubmit")

local T = 1700000100 -- 6553f164 in hex
local SPEC = { jarFile = "https://jars.example.com/app-1.0.jar", className = "com.example.App",
  args = { "--rate", "5" }, parallelism = 2, allowNonRestoredState = true }

describe("fc.restsubmit.job_id", function()
  it("is the time in 8 hex digits, 16 zeros and a sequence number that grows within a second", function()
    assert.equal("6553f164000000000000000000000000", restsubmit.job_id(T))
    assert.equal("6553f164000000000000000000000001", restsubmit.job_id(T, "6553f164000000000000000000000000"))
    assert.equal("6553f164000000000000000000000010", restsubmit.job_id(T, "6553f16400000000000000000000000f"))
    -- another second starts again at 0
    assert.equal("6553f165000000000000000000000000", restsubmit.job_id(T + 1, "6553f164000000000000000000000003"))
    assert.equal(32, #restsubmit.job_id(T + 0.9))
  end)
end)

describe("fc.restsubmit.step", function()
  it("starts a submission by listing the jobs, with a new id", function()
    local j = { state = "Pending" }
    local out = restsubmit.step({ job = j, spec = SPEC, flink = {}, now = T })
    assert.same({ { kind = "list_jobs" } }, out.intents)
    assert.equal(1, out.requeue_after)
    assert.same({ jobID = "6553f164000000000000000000000000", state = "Checking", time = T }, j.submission)
    assert.is_nil(j.id)
  end)

  it("waits for a job list answered after the check began", function()
    local j = { submission = { jobID = "6553f164000000000000000000000000", state = "Checking", time = T } }
    local out = restsubmit.step({ job = j, spec = SPEC, flink = { jobs = {}, jobs_time = T - 1 }, now = T + 1 })
    assert.same({ { kind = "list_jobs" } }, out.intents)
    assert.equal("Checking", j.submission.state)
  end)

  it("uploads the jar with the policy's limits when no job runs (ended ones do not count)", function()
    local j = { submission = { jobID = "6553f164000000000000000000000000", state = "Checking", time = T } }
    local flink = { jobs = { { jid = "aa", state = "FINISHED" }, { id = "bb", status = "CANCELED" } },
      jobs_time = T + 1 }
    local out = restsubmit.step({ job = j, spec = SPEC, flink = flink, now = T + 2,
      limits = { jar_max_bytes = 1000, retry_seconds = 60 } })
    assert.same({ { kind = "upload_jar", id = "6553f164000000000000000000000000", jar_url = SPEC.jarFile,
      max_bytes = 1000, timeout_seconds = 120 } }, out.intents)
    assert.equal(60, out.requeue_after)
    assert.same({ jobID = "6553f164000000000000000000000000", state = "Uploading", time = T + 2 }, j.submission)
  end)

  it("adopts a job that runs already instead of submitting a second copy", function()
    local j = { submission = { jobID = "6553f164000000000000000000000000", state = "Checking", time = T } }
    local out = restsubmit.step({ job = j, spec = SPEC, now = T + 2,
      flink = { jobs = { { jid = "0123456789abcdef0123456789abcdef", state = "RUNNING" } }, jobs_time = T + 1 } })
    assert.same({}, out.intents)
    assert.is_true(out.submitted)
    assert.equal("0123456789abcdef0123456789abcdef", j.id)
    assert.equal("Submitted", j.submission.state)
  end)

  it("runs the uploaded jar with our id, the spec's arguments and the savepoint", function()
    local id = "6553f164000000000000000000000000"
    local j = { submission = { jobID = id, state = "Uploading", time = T + 2 } }
    local flink = { submissions = { [id] = { upload = { jar_id = "abc_app.jar", time = T + 5 } } } }
    local out = restsubmit.step({ job = j, spec = SPEC, flink = flink, from_savepoint = "/sp/savepoint-1",
      now = T + 6 })
    assert.same({ { kind = "run_jar", id = id, jar_id = "abc_app.jar", entry_class = "com.example.App",
      args = { "--rate", "5" }, parallelism = 2, savepoint_path = "/sp/savepoint-1",
      allow_non_restored_state = true } },
      out.intents)
    assert.is_true(out.submitted)
    assert.equal(id, j.id)
    assert.same({ jobID = id, state = "Submitted", time = T + 6 }, j.submission)
  end)

  it("fails with the download's error text as it came", function()
    local id = "6553f164000000000000000000000000"
    local j = { submission = { jobID = id, state = "Uploading", time = T + 2 } }
    local upload = { error = "download https://x/app.jar: HTTP 404", time = T + 3 }
    local flink = { submissions = { [id] = { upload = upload } } }
    local out = restsubmit.step({ job = j, spec = SPEC, flink = flink, now = T + 4 })
    assert.equal("download https://x/app.jar: HTTP 404", out.failed)
    assert.is_nil(j.submission)
    assert.same({}, out.intents)
  end)

  it("ignores an answer older than the upload, and checks again after retry_seconds", function()
    local id = "6553f164000000000000000000000000"
    local j = { submission = { jobID = id, state = "Uploading", time = T + 2 } }
    local flink = { submissions = { [id] = { upload = { jar_id = "old.jar", time = T + 1 } } } }
    local out = restsubmit.step({ job = j, spec = SPEC, flink = flink, now = T + 62, limits = { retry_seconds = 100 } })
    assert.same({}, out.intents)
    assert.equal(40, out.requeue_after)
    out = restsubmit.step({ job = j, spec = SPEC, flink = flink, now = T + 102, limits = { retry_seconds = 100 } })
    assert.same({ { kind = "list_jobs" } }, out.intents)
    assert.same({ jobID = id, state = "Checking", time = T + 102 }, j.submission)
  end)

  it("checks again at once when the upload was asked before this controller process began", function()
    local id = "6553f164000000000000000000000000"
    local j = { submission = { jobID = id, state = "Uploading", time = T + 2 } }
    local out = restsubmit.step({ job = j, spec = SPEC, flink = { since = T + 10 }, now = T + 11 })
    assert.same({ { kind = "list_jobs" } }, out.intents)
    assert.equal("Checking", j.submission.state)
  end)
end)

describe("fc.restsubmit.run_lost, again and run_error", function()
  local id = "6553f164000000000000000000000000"
  local function submitted() return { id = id, submission = { jobID = id, state = "Submitted", time = T } } end

  it("a run request of an earlier process that Flink does not list is lost; sent again, same id", function()
    local flink = { reachable = true, since = T + 10, jobs_time = T + 11,
      jobs = { { jid = "other", state = "RUNNING" } } }
    local j = submitted()
    assert.is_true(restsubmit.run_lost(j, flink))
    restsubmit.again(j, T + 12)
    assert.is_nil(j.id)
    assert.same({ jobID = id, state = "Checking", time = T + 12 }, j.submission)
  end)

  it("is not lost when listed, answered here, sent by this process, or no list came since", function()
    local base = { reachable = true, since = T + 10, jobs_time = T + 11, jobs = {} }
    local listed = { reachable = true, since = T + 10, jobs_time = T + 11, jobs = { { jid = id, state = "RUNNING" } } }
    local answered = { reachable = true, since = T + 10, jobs_time = T + 11, jobs = {},
      submissions = { [id] = { run = { time = T + 11 } } } }
    assert.is_false(restsubmit.run_lost(submitted(), listed))
    assert.is_false(restsubmit.run_lost(submitted(), answered))
    local this_process = { reachable = true, since = T - 1, jobs_time = T + 11, jobs = {} }
    assert.is_false(restsubmit.run_lost(submitted(), this_process))
    local stale = { reachable = true, since = T + 10, jobs_time = T + 9, jobs = {} }
    assert.is_false(restsubmit.run_lost(submitted(), stale))
    assert.is_false(restsubmit.run_lost(submitted(), { since = T + 10, jobs_time = T + 11, jobs = {} }))
    assert.is_true(restsubmit.run_lost(submitted(), base))
  end)

  it("run_error is Flink's answer to our run request", function()
    local text = "org.apache.flink.client.program.ProgramInvocationException: boom"
    local flink = { submissions = { [id] = { run = { error = text, time = T } } } }
    assert.equal(text, restsubmit.run_error(submitted(), flink))
    assert.is_nil(restsubmit.run_error(submitted(), {}))
    assert.is_nil(restsubmit.run_error({ id = "other", submission = { jobID = id } }, flink))
  end)
end)

describe("fc.restsubmit.jar_deletions", function()
  local ID = "6553f164000000000000000000000000"
  local j = { id = ID, submission = { jobID = ID, state = "Submitted", time = T + 6 } }
  local UP = { jar_id = "abc_app.jar", time = T + 5 }
  local DELETE = { { kind = "delete_jar", id = ID, jar_id = "abc_app.jar" } }

  it("waits while the run request has no answer from Flink", function()
    assert.same({}, restsubmit.jar_deletions(j, { submissions = { [ID] = { upload = UP } } }))
    -- a timeout (no HTTP status): Flink may still build the job from the jar
    local run = { error = "Operation timed out after 60000 ms", http = 0, time = T + 66 }
    assert.same({}, restsubmit.jar_deletions(j, { submissions = { [ID] = { upload = UP, run = run } } }))
  end)

  it("deletes the jar once Flink answered the run, whether the job was accepted or refused", function()
    local ok = { job_id = ID, time = T + 8 }
    assert.same(DELETE, restsubmit.jar_deletions(j, { submissions = { [ID] = { upload = UP, run = ok } } }))
    local refused = { error = "ProgramInvocationException: main() threw", http = 400, time = T + 8 }
    assert.same(DELETE, restsubmit.jar_deletions(j, { submissions = { [ID] = { upload = UP, run = refused } } }))
  end)

  it("deletes it when the job is listed after the upload though the run's answer was lost", function()
    local run = { error = "Operation timed out after 60000 ms", http = 0, time = T + 66 }
    local flink = { submissions = { [ID] = { upload = UP, run = run } },
      jobs = { { jid = ID, state = "RUNNING" } }, jobs_time = T + 70 }
    assert.same(DELETE, restsubmit.jar_deletions(j, flink))
    flink.jobs_time = T + 4 -- a list older than the upload tells nothing of it
    assert.same({}, restsubmit.jar_deletions(j, flink))
  end)

  it("stops once a delete answer newer than the upload came, an error included", function()
    local ok = { job_id = ID, time = T + 8 }
    local gone = "HTTP 400: File abc_app.jar does not exist in /tmp/flink-web-1/flink-web-upload."
    for _, del in ipairs({ { time = T + 9 }, { error = gone, http = 400, time = T + 9 } }) do
      assert.same({}, restsubmit.jar_deletions(j, { submissions = { [ID] = { upload = UP, run = ok, delete = del } } }))
    end
    -- an older delete answer (of an earlier upload under the same id) does not count
    local newer = { jar_id = "def_app.jar", time = T + 20 }
    local flink = { submissions = { [ID] = { upload = newer, run = { job_id = ID, time = T + 21 },
      delete = { time = T + 9 } } } }
    assert.same({ { kind = "delete_jar", id = ID, jar_id = "def_app.jar" } }, restsubmit.jar_deletions(j, flink))
  end)

  it("asks nothing without a submission or an uploaded jar", function()
    assert.same({}, restsubmit.jar_deletions({ id = ID }, { submissions = { [ID] = { upload = UP } } }))
    assert.same({}, restsubmit.jar_deletions(nil, nil))
    local failed = { error = "HTTP 413", http = 413, time = T + 5 }
    assert.same({}, restsubmit.jar_deletions(j, { submissions = { [ID] = { upload = failed,
      run = { job_id = ID, time = T + 8 } } } }))
  end)
end)
