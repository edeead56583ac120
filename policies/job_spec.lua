-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/job.lua: the fixtures in policies/testdata/job/<case>/ (every case directory;
-- input.yaml holds `hook` and its `input`; expected.yaml is matched against the output as
-- support.fixtures' `mismatch` says: every key given must be equal, lists must have the same
-- length, `{}` means "empty or absent", `~` means "absent"; FC_UPDATE_FIXTURES=1 rewrites it),
-- run on the policy in the production sandbox (support.fixtures), plus unit tests of the rules.
local fx = require("support.fixtures")

describe("policies/job.lua", function()
  local job = fx.sandboxed("job")

  describe("fixtures", function()
    local all = fx.cases("job")
    it("has the cases", function()
      fx.assert_cases(all, {
        "decide-cancel-after-savepoint", "decide-cancel-after-stop", "decide-cancel-stop-failed-stopping",
        "decide-cleanup-after-lost", "decide-cleanup-succeeded", "decide-control-annotation-gone",
        "decide-control-kept", "decide-control-savepoint-done", "decide-health-fail", "decide-health-fail-cancelled",
        "decide-rest-submit-adopts", "decide-rest-submit-checks", "decide-rest-submit-runs",
        "decide-rest-submit-upload-failed", "decide-rest-submit-uploads",
        "decide-restart-due", "decide-restart-limit", "decide-restart-waits", "decide-submit-when-ready",
        "decide-update-resubmit", "observe-failed-asks-exceptions", "observe-failed-cause",
        "observe-finished-after-stop", "observe-id-from-pod", "observe-lost", "observe-missing-grace",
        "observe-never-listed-lost", "observe-rest-run-failed", "observe-submit-failed",
        "observe-submit-failed-message", "decide-update-last-state", "decide-update-last-state-job-changed",
        "decide-update-stateless-resubmit", "observe-missing-grace-ha",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("job", job, case))
      end)
    end
  end)

  it("maps every Flink JobStatus as the API says", function()
    local want = {
      INITIALIZING = "Running", CREATED = "Running", RUNNING = "Running", FAILING = "Running",
      CANCELLING = "Running", RESTARTING = "Running", RECONCILING = "Running", FINISHED = "Succeeded",
      CANCELED = "Cancelled", FAILED = "Failed", SUSPENDED = "Suspended",
    }
    for flink, state in pairs(want) do assert.equal(state, job.map_flink_state(flink)) end
    assert.is_nil(job.map_flink_state("CANCELED_TWICE"))
  end)

  local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"
  local READY = { jobManagerStatefulSet = { state = "Ready" }, jobManagerService = { state = "Ready" },
    taskManagerStatefulSet = { state = "Ready" } }
  local function decide_input(over)
    local i = {
      cluster = { metadata = { name = "wc" }, spec = { job = { jarFile = "/j.jar", savepointsDir = "/sp" } },
        status = {} },
      job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 },
      flink_state = "RUNNING", savepoint = { state = "NotTriggered" }, outcome = {},
      children = { Job = { ["wc-job-submitter"] = { metadata = { name = "wc-job-submitter", uid = "u" } } } },
      components = READY, update = { pending = false, current = "wc-1", next = "wc-1" }, now = 1700000100,
    }
    for k, v in pairs(over or {}) do i[k] = v end
    return i
  end
  local LIST = { kind = "list_jobs" }
  local CANCEL = { kind = "cancel", job_id = ID }

  it("calls a job missing from a live JobManager Lost only after settings.JOB_LOST_AFTER_SECONDS", function()
    local function observe(missing_since, jobs, now)
      return job.observe({
        cluster = { metadata = { name = "wc" }, spec = { job = {} }, status = { components = { job = {
          id = ID, state = "Running", missingSince = missing_since } } } },
        children = {}, flink = { reachable = true, jobs = jobs }, now = now,
      }).job
    end
    assert.equal(30, require("settings").JOB_LOST_AFTER_SECONDS)
    -- 29 s after the first absence: still Running, the first absence kept
    local j = observe("2023-11-14T22:14:31Z", {}, 1700000100)
    assert.equal("Running", j.state)
    assert.equal("2023-11-14T22:14:31Z", j.missingSince)
    -- 30 s: Lost
    j = observe("2023-11-14T22:14:30Z", {}, 1700000100)
    assert.equal("Lost", j.state)
    assert.is_nil(j.missingSince)
    -- back in the list: the absence is forgotten
    j = observe("2023-11-14T22:14:31Z", { { jid = ID, state = "RUNNING", ["start-time"] = 1700000000000 } },
      1700000100)
    assert.equal("Running", j.state)
    assert.is_nil(j.missingSince)
  end)

  it("keeps the last state while the JobManager is unreachable", function()
    local out = job.observe({
      cluster = { metadata = { name = "wc" }, spec = { job = {} },
        status = { components = { job = { id = ID, state = "Running" } } } },
      children = {}, flink = { reachable = false, jobs = {} }, now = 1,
    })
    assert.equal("Running", out.job.state)
    assert.equal(ID, out.job.id)
  end)

  it("keeps failureReason within settings.JOB_FAILURE_REASON_MAX bytes, its start included", function()
    local max = require("settings").JOB_FAILURE_REASON_MAX
    local long = "Caused by: java.lang.IllegalStateException: " .. string.rep("x", 2 * max)
    -- Flink's FAILED, with the root cause of its newest exception
    local failed = job.observe({
      cluster = { metadata = { name = "wc" }, spec = { job = {} },
        status = { components = { job = { id = ID, state = "Running" } } } },
      children = {}, flink = { reachable = true, jobs = { { jid = ID, state = "FAILED" } },
        exceptions = { [ID] = { stacktrace = "org.apache.flink.runtime.JobException: Recovery suppressed\n" .. long,
          time = 1 } } }, now = 2,
    }).job
    assert.equal(max, #failed.failureReason)
    local head = "Flink reports job " .. ID .. " FAILED: Caused by: java.lang.IllegalStateException: xxx"
    assert.equal(head, failed.failureReason:sub(1, #head))
    assert.equal("...", failed.failureReason:sub(-3))
    -- the submitter Job's Failed condition, its message as long
    local sub = job.observe({
      cluster = { metadata = { name = "wc" }, spec = { job = {} }, status = {} },
      children = { Job = { ["wc-job-submitter"] = { metadata = { name = "wc-job-submitter", uid = "u1" },
        status = { failed = 1, conditions = { { type = "Failed", status = "True", reason = "BackoffLimitExceeded",
          message = string.rep("y", 2 * max) } } } } } },
      flink = { reachable = true, jobs = {} }, now = 2,
    }).job
    assert.equal("Failed", sub.state)
    assert.equal(max, #sub.failureReason)
    local start = "submission failed: BackoffLimitExceeded: yyy"
    assert.equal(start, sub.failureReason:sub(1, #start))
  end)

  it("does not submit before the components are Ready", function()
    local i = decide_input({ job = { name = "wc-job-submitter", state = "Pending", restartCount = 0 }, children = {},
      components = { jobManagerStatefulSet = { state = "Ready" }, jobManagerService = { state = "Ready" },
        taskManagerStatefulSet = { state = "NotReady" } } })
    assert.is_false(job.decide(i).submit)
    i.components = READY
    assert.is_true(job.decide(i).submit)
  end)

  it("waits for the cancel savepoint before cancelling", function()
    local i = decide_input({ outcome = { ["job cancel"] = "pending" } })
    i.cluster.spec.job.cancelRequested = true
    assert.same({ LIST }, job.decide(i).intents)
    i.flink_state = "CANCELLING"
    i.outcome = { ["job cancel"] = "done" }
    assert.same({ LIST }, job.decide(i).intents) -- already cancelling: no second cancel
  end)

  it("does not restart with restartPolicy Never, and keeps the cluster after a failure by default", function()
    local i = decide_input({ job = { name = "wc-job-submitter", id = ID, state = "Failed", restartCount = 0,
      savepointLocation = "/sp/savepoint-1" } })
    local d = job.decide(i)
    assert.is_false(d.resubmit)
    assert.equal("Failed", d.job.state)
    assert.is_nil(d.cleanup) -- afterJobFails defaults to KeepCluster
  end)

  it("does not restart without a savepoint to restart from", function()
    local i = decide_input({ job = { name = "wc-job-submitter", id = ID, state = "Lost", restartCount = 0 } })
    i.cluster.spec.job.restartPolicy = "FromSavepointOnFailure"
    local d = job.decide(i)
    assert.is_false(d.resubmit)
    assert.equal("Lost", d.job.state)
  end)

  it("holds the components and cancels after the update savepoint", function()
    local i = decide_input({ update = { pending = true, current = "wc-1", next = "wc-2" },
      outcome = { update = "pending" } })
    local d = job.decide(i)
    assert.is_true(d.hold)
    assert.same({ LIST }, d.intents)
    i.outcome = { update = "done" }
    d = job.decide(i)
    assert.is_true(d.hold)
    assert.equal("Updating", d.job.state)
    assert.same({ CANCEL, LIST }, d.intents)
  end)

  it("submits the new revision once the old submitter is gone, and then the update is done", function()
    local i = decide_input({ children = {}, update = { pending = true, current = "wc-1", next = "wc-2" },
      job = { name = "wc-job-submitter", state = "Updating", restartCount = 0,
        savepointLocation = "/sp/savepoint-2" } })
    local d = job.decide(i)
    assert.is_true(d.submit)
    assert.is_true(d.update_done)
    assert.equal("/sp/savepoint-2", d.from_savepoint)
    assert.equal("Pending", d.job.state)
  end)

  it("starts the job-cancel user control and fails an unknown control value, acknowledging both", function()
    local i = decide_input({ outcome = { ["job cancel"] = "pending" } })
    i.cluster.metadata.annotations = { [job.CONTROL_ANNOTATION] = "job-cancel" }
    local d = job.decide(i)
    assert.same({ name = "job-cancel", state = "Progressing", updateTime = "2023-11-14T22:15:00Z",
      acknowledged = true }, d.control)
    assert.is_nil(d.remove_annotation)
    i.cluster.metadata.annotations[job.CONTROL_ANNOTATION] = "restart"
    d = job.decide(i)
    assert.same({ name = "restart", state = "Failed", updateTime = "2023-11-14T22:15:00Z", acknowledged = true,
      message = 'unknown user control "restart": use savepoint or job-cancel' }, d.control)
    assert.is_nil(d.remove_annotation)
    -- acknowledged: the same value again changes nothing (no second Failed, no event)
    i.cluster.status.control = d.control
    d = job.decide(i)
    assert.is_nil(d.control)
    assert.is_nil(d.remove_annotation)
  end)

  it("finishes the job-cancel control once the job is Cancelled, keeping the annotation", function()
    local i = decide_input({ job = { name = "wc-job-submitter", id = ID, state = "Cancelled", restartCount = 0 },
      flink_state = "CANCELED" })
    i.cluster.metadata.annotations = { [job.CONTROL_ANNOTATION] = "job-cancel" }
    i.cluster.status.control = { name = "job-cancel", state = "Progressing", updateTime = "2023-11-14T22:14:00Z",
      acknowledged = true }
    local d = job.decide(i)
    assert.equal("Succeeded", d.control.state)
    assert.is_true(d.control.acknowledged)
    assert.is_nil(d.remove_annotation)
    assert.equal("DeleteCluster", d.cleanup) -- afterJobCancelled default
  end)

  describe("with lib.control.REMOVE_WHEN_DONE = true (the original operator's removal)", function()
    local dir, removing
    setup(function()
      dir = fx.tmpdir()
      assert(os.execute("cp -r " .. fx.quote(fx.ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
      local path = dir .. "/lib/control.lua"
      local text, n = fx.read(path):gsub("\ncontrol%.REMOVE_WHEN_DONE = false\n", "\ncontrol.REMOVE_WHEN_DONE = true\n")
      assert.equal(1, n)
      fx.write(path, text)
      removing = fx.sandboxed("job", { dir = dir })
    end)
    teardown(function() os.execute("rm -rf " .. fx.quote(dir)) end)

    it("removes the annotation when done and of an unknown value, and again while it is still seen", function()
      local i = decide_input({ outcome = { ["job cancel"] = "pending" } })
      i.cluster.metadata.annotations = { [job.CONTROL_ANNOTATION] = "job-cancel" }
      local d = removing.decide(i)
      assert.same({ name = "job-cancel", state = "Progressing", updateTime = "2023-11-14T22:15:00Z" }, d.control)
      assert.is_nil(d.remove_annotation)
      i.cluster.metadata.annotations[job.CONTROL_ANNOTATION] = "restart"
      d = removing.decide(i)
      assert.equal("Failed", d.control.state)
      assert.is_nil(d.control.acknowledged)
      assert.equal(job.CONTROL_ANNOTATION, d.remove_annotation)
      -- finished 5 s ago, the annotation still seen (the removal not observed yet): removed again
      i.cluster.metadata.annotations[job.CONTROL_ANNOTATION] = "job-cancel"
      i.cluster.status.control = { name = "job-cancel", state = "Succeeded", updateTime = "2023-11-14T22:14:55Z" }
      d = removing.decide(i)
      assert.is_nil(d.control)
      assert.equal(job.CONTROL_ANNOTATION, d.remove_annotation)
      -- 60 s later it is a new request
      i.cluster.status.control.updateTime = "2023-11-14T22:14:00Z"
      d = removing.decide(i)
      assert.equal("Progressing", d.control.state)
    end)
  end)
end)

describe("lib.control", function()
  local control = require("lib.control")

  it("reads the annotation and tells a control that just finished", function()
    assert.equal("savepoint", control.requested({ metadata = { annotations = {
      ["flinkclusters.flinkoperator.k8s.io/user-control"] = "savepoint" } } }))
    assert.is_nil(control.requested({ metadata = {} }))
    local done = { name = "savepoint", state = "Succeeded", updateTime = "2023-11-14T22:14:51Z" }
    assert.is_true(control.just_finished(done, "savepoint", 1700000100))       -- 9 s ago
    assert.is_false(control.just_finished(done, "savepoint", 1700000101))      -- 10 s ago
    assert.is_false(control.just_finished(done, "job-cancel", 1700000100))     -- another control
    done.state = "Progressing"
    assert.is_false(control.just_finished(done, "savepoint", 1700000100))
    assert.is_false(control.just_finished(nil, "savepoint", 1700000100))
  end)
end)
