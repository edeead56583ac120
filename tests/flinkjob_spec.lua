-- SPDX-License-Identifier: Apache-2.0
-- Specs of fc.flinkjob (a FlinkJob's pass: a job on a session cluster) through fc.reconcile.run
-- with the real policies/ (job.lua, submit.lua, savepoint.lua; fc.restsubmit), as the core calls it.
local lyaml = require("lyaml")
local cjson = require("cjson")
local fx = require("support.fixtures")
local util = require("fc.util")
local host = require("fc.host")
local reconcile = require("fc.reconcile")
local flinkjob = require("fc.flinkjob")

local ROOT = fx.ROOT
local T0 = 1764484800
local UID = "7f1e2d3c-aaaa-4bbb-8ccc-123456789abc"
local JAR = "http://jars.example/testenv-jobs.jar"

local function session(over)
  local c = lyaml.load(fx.read(ROOT .. "/deploy/examples/wordcount.yaml"))
  c.metadata.name = "session"
  c.metadata.namespace = "default"
  c.metadata.uid = "0b6c3f5e-1111-4222-8333-944455556666"
  c.spec.job = nil
  c.status = { state = "Running", components = {
    jobManagerStatefulSet = { name = "session-jobmanager", state = "Ready" },
    jobManagerService = { name = "session-jobmanager", state = "Ready" },
    taskManagerStatefulSet = { name = "session-taskmanager", state = "Ready" } } }
  for k, v in pairs(over or {}) do c[k] = v end
  return c
end

local function job(over, status)
  local j = { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkJob",
    metadata = { name = "ticker", namespace = "default", uid = UID, generation = 1, resourceVersion = "10",
      finalizers = { flinkjob.FINALIZER } },
    spec = { clusterRef = { name = "session" },
      job = { jarFile = JAR, className = "testenv.Ticker", args = { "a" }, parallelism = 1,
        savepointsDir = "file:///tmp/sp" } },
    status = status }
  for k, v in pairs(over or {}) do j[k] = v end
  return j
end

-- raw answers as the core records them: {<id>={intent=, status=, body=, error=, time=}} (`key`: the
-- answer's id; a savepoint's trigger and polls share the trigger id, the latest kept)
local function answers(list, since)
  local out = {}
  for i, a in ipairs(list) do
    out[a.key or ("a" .. i)] = { intent = a.intent, status = a.status or 200, body = a.body or "",
      error = a.error or "",
      time = a.time }
  end
  return { answers = out, since = since or T0 - 100 }
end

local function listed(jobs, time)
  return { intent = { kind = "list_jobs" }, body = cjson.encode({ jobs = jobs }), time = time }
end

local function ops(r)
  local out = {}
  for _, a in ipairs(r.actions) do
    if a.op == "flink" then
      out[#out + 1] = a.method .. " " .. a.path
    else
      out[#out + 1] = a.op
    end
  end
  return out
end

local function cond(st, t)
  for _, c in ipairs(st.conditions or {}) do
    if c.type == t then return c end
  end
end

describe("fc.flinkjob through reconcile.run", function()
  before_each(function()
    host.configure({ policy_dir = ROOT .. "/policies" })
  end)

  it("adds its finalizer first, with the observed resourceVersion, and nothing else", function()
    local fj = job()
    fj.metadata.finalizers = { "other/keep" }
    local r = reconcile.run({ cluster = fj, session = session(), flink = {}, now = T0 })
    assert.same({ { op = "patch_finalizers", finalizers = { "other/keep", flinkjob.FINALIZER },
      resourceVersion = "10" } },
      r.actions)
    assert.is_nil(r.status)
  end)

  it("waits for a missing session cluster, and refuses a job cluster, Ready=False with the reason", function()
    local r = reconcile.run({ cluster = job(), flink = {}, now = T0 })
    assert.equal("ClusterNotFound", cond(r.status, "Ready").reason)
    assert.equal("FlinkCluster session not found in namespace default", cond(r.status, "Ready").message)
    assert.equal(flinkjob.WAIT_SECONDS, r.requeue_after)
    local jc = session()
    jc.spec.job = { jarFile = "/opt/job.jar" }
    r = reconcile.run({ cluster = job(), session = jc, flink = {}, now = T0 })
    assert.equal("NotASessionCluster", cond(r.status, "Ready").reason)
    assert.same({}, r.actions)
  end)

  it("submits through REST with its own job id, never adopting another FlinkJob's job", function()
    -- pass 1: a new submission, Checking: the job list is asked
    local r1 = reconcile.run({ cluster = job(), session = session(), flink = {}, now = T0 })
    assert.same({ "GET /jobs/overview" }, ops(r1))
    assert.same({ scheme = "http", namespace = "default", service = "session-jobmanager", port = 8081 },
      r1.actions[1].target)
    local id = r1.status.job.submission.jobID
    assert.equal(flinkjob.own_job_id(string.format("%08x", T0) .. string.rep("0", 24), UID), id)
    assert.are_not.equal(string.rep("0", 16), id:sub(9, 24))
    -- pass 2: the list shows another job running (another FlinkJob's): ours is uploaded anyway
    local other = { jid = "ffffffff000000000000000000000001", state = "RUNNING", name = "other" }
    local r2 = reconcile.run({ cluster = job(nil, r1.status), session = session(),
      flink = answers({ listed({ other }, T0 + 1) }), now = T0 + 1 })
    assert.same({ "upload_jar" }, { r2.actions[1].intent.kind })
    assert.equal(JAR, r2.actions[1].intent.jar_url)
    assert.equal("Uploading", r2.status.job.submission.state)
    assert.is_nil(r2.status.job.id)
    -- pass 3: the jar id came back: run with our id
    local up = { intent = { kind = "upload_jar", id = id },
      body = cjson.encode({ filename = "/tmp/flink-web/abc_jobs.jar",
      status = "success" }), time = T0 + 2 }
    local r3 = reconcile.run({ cluster = job(nil, r2.status), session = session(),
      flink = answers({ listed({ other }, T0 + 1), up }), now = T0 + 2 })
    assert.equal("POST /jars/abc_jobs.jar/run", ops(r3)[1])
    assert.equal(id, r3.actions[1].body.jobId)
    assert.equal("testenv.Ticker", r3.actions[1].body.entryClass)
    assert.equal(id, r3.status.jobID)
    -- pass 4: Flink lists it RUNNING: Running, Ready=True, current revision recorded
    local r4 = reconcile.run({ cluster = job(nil, r3.status), session = session(),
      flink = answers({ listed({ other, { jid = id, state = "RUNNING", ["start-time"] = (T0 + 3) * 1000 } }, T0 + 4) }),
      now = T0 + 4 })
    assert.equal("Running", r4.status.state)
    assert.equal("True", cond(r4.status, "Ready").status)
    assert.is_nil(r4.status.job.name) -- no submitter Job
    assert.is_string(r4.status.currentRevision)
    assert.is_nil(r4.status.nextRevision)
  end)

  local function running_status()
    local id = "656d0c40" .. "1234567812345678" .. "00000000"
    return { state = "Running", jobID = id, currentRevision = nil,
      job = { id = id, state = "Running", submission = { jobID = id, state = "Submitted", time = T0 } },
      jobManager = { scheme = "http", service = "session-jobmanager", port = 8081 } }, id
  end

  it("stops the job with a savepoint when spec.job changes (upgrade), keeps it on an unchanged spec", function()
    local st, id = running_status()
    local run_list = answers({ listed({ { jid = id, state = "RUNNING", ["start-time"] = T0 * 1000 } }, T0 + 5) })
    local r0 = reconcile.run({ cluster = job(nil, st), session = session(), flink = run_list, now = T0 + 5 })
    assert.equal("Running", r0.status.state)
    local rev = r0.status.currentRevision
    assert.is_string(rev)
    -- the same spec again: no stop, no savepoint
    local r1 = reconcile.run({ cluster = job(nil, r0.status), session = session(), flink = run_list, now = T0 + 6 })
    for _, a in ipairs(r1.actions) do assert.are_not.equal("stop", (a.intent or {}).kind) end
    -- new args: the update stops the job with a savepoint
    local changed = job(nil, r0.status)
    changed.spec.job.args = { "b" }
    changed.metadata.generation = 2
    local r2 = reconcile.run({ cluster = changed, session = session(), flink = run_list, now = T0 + 7 })
    local kinds = {}
    for _, a in ipairs(r2.actions) do kinds[#kinds + 1] = (a.intent or {}).kind end
    -- (the health policy's restart poll of the running job, as every pass of a running job)
    assert.same({ "stop", "list_jobs", "job_restarts" }, kinds)
    assert.equal(id, r2.actions[1].intent.job_id)
    assert.equal(rev, r2.status.currentRevision)
    assert.is_string(r2.status.nextRevision)
    assert.are_not.equal(rev, r2.status.nextRevision)
    assert.equal("update", r2.status.savepoint.triggerReason)
    assert.is_true(r2.status.savepoint.stop)
  end)

  it("triggers a checkpoint every autoCheckpointSeconds (a control field: no update), records Flink's id", function()
    local st, id = running_status()
    local run_list = answers({ listed({ { jid = id, state = "RUNNING", ["start-time"] = T0 * 1000 } }, T0 + 5) })
    local r0 = reconcile.run({ cluster = job(nil, st), session = session(), flink = run_list, now = T0 + 5 })
    local fj = job(nil, r0.status)
    fj.spec.job.autoCheckpointSeconds = 10
    fj.metadata.generation = 2
    local r1 = reconcile.run({ cluster = fj, session = session(), flink = run_list, now = T0 + 10 })
    -- the trigger, the job list and the health policy's restart poll (fc.health)
    assert.same({ "POST /jobs/" .. id .. "/checkpoints", "GET /jobs/overview",
      "GET /jobs/" .. id .. "/metrics?get=numRestarts" }, ops(r1))
    assert.is_nil(r1.status.nextRevision) -- no update: the job is not stopped
    local trig = r1.status.job.checkpointTrigger.triggerID
    assert.same({ triggerId = trig, checkpointType = "CONFIGURED" }, r1.actions[1].body)
    local done = answers({ listed({ { jid = id, state = "RUNNING", ["start-time"] = T0 * 1000 } }, T0 + 15),
      { key = "checkpoint/" .. trig, intent = { kind = "checkpoint_status", id = trig, job_id = id },
        body = '{"status":{"id":"COMPLETED"},"operation":{"checkpointId":3}}', time = T0 + 15 } })
    local r2 = reconcile.run({ cluster = util.merge(fj, { status = r1.status }), session = session(), flink = done,
      now = T0 + 15 })
    local ct = r2.status.job.checkpointTrigger
    assert.same({ "Succeeded", 3 }, { ct.state, ct.checkpointID })
    -- Flink's checkpoints asked for (latestCheckpoint); no new trigger before T0 + 20
    local asked = {}
    for _, o in ipairs(ops(r2)) do asked[o] = true end
    assert.is_true(asked["GET /jobs/" .. id .. "/checkpoints"])
    assert.is_nil(asked["POST /jobs/" .. id .. "/checkpoints"])
  end)

  it("resubmits the updated job from the stop's savepoint with a new id, then the update is done", function()
    local st, id = running_status()
    local run_list = answers({ listed({ { jid = id, state = "RUNNING", ["start-time"] = T0 * 1000 } }, T0 + 5) })
    local r0 = reconcile.run({ cluster = job(nil, st), session = session(), flink = run_list, now = T0 + 5 })
    local changed = job(nil, r0.status)
    changed.spec.job.args = { "b" }
    changed.metadata.generation = 2
    local r1 = reconcile.run({ cluster = changed, session = session(), flink = run_list, now = T0 + 7 })
    local trig = r1.actions[1].intent.id
    -- the stop accepted (its savepoint polled next), then completed, the job FINISHED
    local loc = "file:/savepoints/savepoint-656d0c-0123456789ab"
    local accepted = { key = trig, intent = { kind = "stop", id = trig, job_id = id }, status = 202,
      body = cjson.encode({ ["request-id"] = trig }), time = T0 + 7 }
    local r2 = reconcile.run({ cluster = util.merge(changed, { status = r1.status }), session = session(),
      flink = answers({ accepted, listed({ { jid = id, state = "RUNNING" } }, T0 + 8) }), now = T0 + 9 })
    r2.status = r2.status or r1.status -- nothing new until the poll answers
    assert.equal("InProgress", r2.status.savepoint.state)
    local done = answers({
      { key = trig, intent = { kind = "savepoint_status", id = trig, job_id = id },
        body = cjson.encode({ status = { id = "COMPLETED" }, operation = { location = loc } }), time = T0 + 11 },
      listed({ { jid = id, state = "FINISHED" } }, T0 + 11) })
    local r3 = reconcile.run({ cluster = util.merge(changed, { status = r2.status }), session = session(), flink = done,
      now = T0 + 11 })
    if r3.status.job.submission.state ~= "Checking" then
      -- the savepoint read first, the resubmission on the next pass
      r3 = reconcile.run({ cluster = util.merge(changed, { status = r3.status }), session = session(), flink = done,
        now = T0 + 11 })
    end
    assert.equal(loc, r3.status.job.savepointLocation)
    assert.equal(loc, r3.status.job.fromSavepoint)
    local sub = r3.status.job.submission
    assert.equal("Checking", sub.state)
    assert.are_not.equal(id, sub.jobID)
    assert.equal(flinkjob.own_job_id(sub.jobID, UID), sub.jobID)
    -- the list (FINISHED old job only) answered after the check began: upload, then run from the savepoint
    local after = answers({ listed({ { jid = id, state = "FINISHED" } }, T0 + 12) })
    local r4 = reconcile.run({ cluster = util.merge(changed, { status = r3.status }), session = session(),
      flink = after,
      now = T0 + 12 })
    assert.equal("upload_jar", r4.actions[1].intent.kind)
    local up = { intent = { kind = "upload_jar", id = sub.jobID },
      body = cjson.encode({ filename = "/tmp/flink-web/x_jobs.jar", status = "success" }), time = T0 + 13 }
    local r5 = reconcile.run({ cluster = util.merge(changed, { status = r4.status }), session = session(),
      flink = answers({ listed({ { jid = id, state = "FINISHED" } }, T0 + 12), up }), now = T0 + 13 })
    assert.equal("POST /jars/x_jobs.jar/run", ops(r5)[1])
    assert.equal(loc, r5.actions[1].body.savepointPath)
    assert.same({ "b" }, r5.actions[1].body.programArgsList)
    assert.equal(sub.jobID, r5.status.jobID)
    assert.is_nil(r5.status.nextRevision)
    assert.are_not.equal(r0.status.currentRevision, r5.status.currentRevision)
  end)

  it("cancels a job whose stop-with-savepoint succeeded while Flink still runs it, resubmits once it ended", function()
    local st, id = running_status()
    local loc = "file:/savepoints/savepoint-656d0c-0123456789ab"
    st.state, st.job.state = "Updating", "Updating"
    st.job.savepointLocation = loc
    st.savepoint = { jobID = id, triggerID = "692be6c7000000000000000000000000", state = "Succeeded", stop = true,
      triggerReason = "update", requestTime = "2025-11-30T06:40:07Z", triggerTime = "2025-11-30T06:40:07Z" }
    st.currentRevision = "00000000" -- not spec.job's: an update
    st.nextRevision = nil
    local fj = job(nil, st)
    -- Flink lists the job RUNNING still: not resubmitted, cancelled
    local r1 = reconcile.run({ cluster = fj, session = session(),
      flink = answers({ listed({ { jid = id, state = "RUNNING" } }, T0 + 20) }), now = T0 + 20 })
    local kinds = {}
    for _, a in ipairs(r1.actions) do kinds[#kinds + 1] = a.intent.kind end
    assert.same({ "list_jobs", "job_restarts", "cancel" }, kinds)
    assert.equal(id, r1.actions[3].intent.job_id)
    local s1 = r1.status or st
    assert.equal(id, s1.job.id)
    assert.equal("Updating", s1.job.state)
    assert.equal("00000000", s1.currentRevision)
    -- CANCELED: resubmitted from the stop's savepoint, a new id
    local r2 = reconcile.run({ cluster = job(nil, s1), session = session(),
      flink = answers({ listed({ { jid = id, state = "CANCELED" } }, T0 + 22) }), now = T0 + 22 })
    assert.is_nil(r2.status.job.id)
    assert.equal("Checking", r2.status.job.submission.state)
    assert.are_not.equal(id, r2.status.job.submission.jobID)
    assert.equal(loc, r2.status.job.fromSavepoint)
  end)

  it("cancels its job on deletion, then releases the finalizer once Flink lists it ended", function()
    local st, id = running_status()
    local fj = job(nil, st)
    fj.metadata.deletionTimestamp = "2025-11-30T06:40:10Z" -- T0 + 10
    -- a job list older than the deletion: asked again, nothing cancelled yet
    local r0 = reconcile.run({ cluster = fj, session = session(),
      flink = answers({ listed({ { jid = id, state = "RUNNING" } }, T0 + 5) }), now = T0 + 11 })
    assert.same({ "GET /jobs/overview" }, ops(r0))
    -- listed RUNNING after the deletion: cancelled
    local r1 = reconcile.run({ cluster = fj, session = session(),
      flink = answers({ listed({ { jid = id, state = "RUNNING" } }, T0 + 12) }), now = T0 + 12 })
    assert.same({ "PATCH /jobs/" .. id .. "?mode=cancel", "GET /jobs/overview" }, ops(r1))
    assert.equal(flinkjob.DELETE_POLL_SECONDS, r1.requeue_after)
    -- CANCELED: the finalizer goes (another's stays)
    fj.metadata.finalizers = { flinkjob.FINALIZER, "other/keep" }
    local r2 = reconcile.run({ cluster = fj, session = session(),
      flink = answers({ listed({ { jid = id, state = "CANCELED" } }, T0 + 14) }), now = T0 + 14 })
    assert.same({ { op = "patch_finalizers", finalizers = { "other/keep" }, resourceVersion = "10" } }, r2.actions)
    assert.equal("JobCancelled", r2.events[1].reason)
  end)

  it("releases a deleted FlinkJob whose JobManager never answers for DELETE_GIVE_UP_SECONDS, a Warning", function()
    local st = running_status()
    local fj = job(nil, st)
    fj.metadata.deletionTimestamp = "2025-11-30T06:40:10Z"
    local r = reconcile.run({ cluster = fj, session = session(), flink = {},
      now = T0 + 10 + flinkjob.DELETE_GIVE_UP_SECONDS })
    assert.same({ "patch_finalizers" }, ops(r))
    assert.equal("JobNotCancelled", r.events[1].reason)
  end)

  -- Health (policies/health.lua through fc.health.pass, as for a job cluster): the restart counter
  -- of the FlinkJob's own job is asked of the session cluster's JobManager on each pass while it
  -- runs; more than 5 restarts within 5m (settings.lua) cancel that job, Failed with a JobUnhealthy
  -- Warning once; another job of the session cluster, restarting as well, is never polled nor cancelled.
  it("health: its job restarting in a loop is cancelled in Flink, Failed, JobUnhealthy once; others untouched",
    function()
    local st, id = running_status()
    local other = { jid = "ffffffff000000000000000000000001", state = "RESTARTING", name = "other" }
    local function pass(status, state, n, t)
      local list = { listed({ other, { jid = id, state = state, ["start-time"] = T0 * 1000 } }, t) }
      if n then
        list[2] = { intent = { kind = "job_restarts", job_id = id },
          body = cjson.encode({ { id = "numRestarts", value = tostring(n) } }), time = t }
      end
      local r = reconcile.run({ cluster = job(nil, status), session = session(), flink = answers(list), now = t })
      return r, r.status or status
    end
    -- no count yet: asked of the session's JobManager, nothing judged
    local r1, s1 = pass(st, "RUNNING", nil, T0 + 30)
    assert.same({ "GET /jobs/overview", "GET /jobs/" .. id .. "/metrics?get=numRestarts" }, ops(r1))
    assert.same({ scheme = "http", namespace = "default", service = "session-jobmanager", port = 8081 },
      r1.actions[2].target)
    assert.same({ jobID = id, restarts = {} }, s1.job.health)
    -- 0, then 3 restarts: samples kept in status.job.health, still Running
    local _, s2 = pass(s1, "RUNNING", 0, T0 + 60)
    local r3, s3 = pass(s2, "RESTARTING", 3, T0 + 90)
    assert.equal("Running", s3.state)
    assert.same({ jobID = id, restarts = { { count = 0, time = T0 + 60 }, { count = 3, time = T0 + 90 } } },
      s3.job.health)
    assert.same({}, r3.events)
    -- 7 within 5m: cancelled, Failed with the policy's reason, one Warning
    local r4, s4 = pass(s3, "RESTARTING", 7, T0 + 120)
    local reason = "job " .. id .. " restarted 7 times within 5m (more than 5)"
    assert.same({ "Failed", "Failed", reason, reason }, { s4.state, s4.job.state, s4.job.failureReason,
      s4.job.health.failed.reason })
    assert.same({ "PATCH /jobs/" .. id .. "?mode=cancel", "GET /jobs/overview",
      "GET /jobs/" .. id .. "/metrics?get=numRestarts" }, ops(r4))
    assert.same({ { type = "Warning", reason = "JobUnhealthy", message = reason .. ": cancelled, job Failed" },
      { type = "Warning", reason = "JobFailed", message = "job " .. id .. ": Running -> Failed" } }, r4.events)
    assert.equal("False", cond(s4, "Ready").status)
    assert.equal("JobFailed", cond(s4, "Ready").reason)
    -- Flink cancels it: still Failed, the job list followed, no second Warning; the other job never named
    local r5, s5 = pass(s4, "CANCELLING", nil, T0 + 125)
    assert.same({ "GET /jobs/overview" }, ops(r5))
    local r6, s6 = pass(s5, "CANCELED", nil, T0 + 130)
    assert.same({ "Failed", reason }, { s6.state, s6.job.failureReason })
    for _, r in ipairs({ r1, r3, r4, r5, r6 }) do
      for _, a in ipairs(r.actions) do
        assert.is_nil(tostring(a.path):find(other.jid, 1, true))
      end
      for _, e in ipairs(r ~= r4 and r.events or {}) do assert.are_not.equal("JobUnhealthy", e.reason) end
    end
  end)

  -- savepointRetention (policies/savepoint.lua through lib.retention, as for a job cluster): the
  -- savepoint history in status.job.savepointHistory; with maxCount 1 the older Succeeded one is
  -- disposed through the session's JobManager (POST /savepoint-disposal, polled until COMPLETED)
  -- and leaves the history; the newest stays.
  it("savepointRetention maxCount 1: the older savepoint of its history disposed through Flink, the newest kept",
    function()
    local st, id = running_status()
    local old_loc = "file:/savepoints/savepoint-656d0c-000000000001"
    local new_loc = "file:/savepoints/savepoint-656d0c-000000000002"
    local t_old, t_new = "692be6c7000000000000000000000001", "692be6c7000000000000000000000002"
    st.job.savepointLocation = new_loc
    st.job.savepointHistory = {
      { time = "2025-11-30T06:40:20Z", triggerType = "manual", triggerID = t_new, jobID = id, location = new_loc,
        result = "Succeeded" },
      { time = "2025-11-30T06:40:10Z", triggerType = "manual", triggerID = t_old, jobID = id, location = old_loc,
        result = "Succeeded" } }
    local function pass(status, extra, t)
      local list = { listed({ { jid = id, state = "RUNNING", ["start-time"] = T0 * 1000 } }, t) }
      for _, a in ipairs(extra) do list[#list + 1] = a end
      local fj = job(nil, status)
      fj.spec.job.savepointRetention = { maxCount = 1 }
      local r = reconcile.run({ cluster = fj, session = session(), flink = answers(list), now = t })
      return r, r.status or status
    end
    local function disposal_ops(r)
      local out = {}
      for _, a in ipairs(r.actions) do
        if tostring(a.path):find("savepoint-disposal", 1, true) then
          out[#out + 1] = { a.method .. " " .. a.path, a.body, a.target.service }
        end
      end
      return out
    end
    -- without savepointRetention: nothing disposed
    local r0 = reconcile.run({ cluster = job(nil, st), session = session(),
      flink = answers({ listed({ { jid = id, state = "RUNNING" } }, T0 + 40) }), now = T0 + 40 })
    assert.same({}, disposal_ops(r0))
    -- maxCount 1: the older one goes, the newest stays
    local r1, s1 = pass(st, {}, T0 + 40)
    assert.same({ { "POST /savepoint-disposal", { ["savepoint-path"] = old_loc }, "session-jobmanager" } },
      disposal_ops(r1))
    assert.same({ "InProgress", 1 }, { s1.job.savepointHistory[2].disposal.state,
      s1.job.savepointHistory[2].disposal.attempts })
    assert.is_nil(s1.job.savepointHistory[1].disposal)
    -- accepted (Flink's request id), then polled
    local rid = "aa000000000000000000000000000001"
    local accepted = { intent = { kind = "dispose_savepoint", id = t_old, location = old_loc }, status = 202,
      body = cjson.encode({ ["request-id"] = rid }), time = T0 + 41 }
    local r2, s2 = pass(s1, { accepted }, T0 + 41)
    assert.same({ { "GET /savepoint-disposal/" .. rid, nil, "session-jobmanager" } }, disposal_ops(r2))
    -- completed: out of the history, an Event; the newest one stays, nothing more disposed
    local done = { intent = { kind = "dispose_status", id = t_old, request_id = rid },
      body = cjson.encode({ status = { id = "COMPLETED" }, operation = {} }), time = T0 + 43 }
    local r3, s3 = pass(s2, { done }, T0 + 43)
    assert.same({ new_loc }, { s3.job.savepointHistory[1].location, s3.job.savepointHistory[2] })
    assert.same({ { type = "Normal", reason = "SavepointDisposed",
      message = "savepoint " .. old_loc .. " (manual, 2025-11-30T06:40:10Z) disposed" } }, r3.events)
    assert.same({}, disposal_ops(r3))
    -- savepointRetention is a control field: no update (the same revision, no stop)
    assert.equal(r0.status.currentRevision, s3.currentRevision)
    assert.is_nil(s3.nextRevision)
  end)

  it("own_view keeps only the FlinkJob's own ids in the job list", function()
    local v = flinkjob.own_view({ reachable = true, jobs = { { jid = "a" }, { jid = "b" }, { id = "c" } } },
      { id = "a", submission = { jobID = "c" } })
    assert.same({ { jid = "a" }, { id = "c" } }, v.jobs)
    assert.is_true(v.reachable)
  end)
end)

describe("the FlinkJob CRD (deploy/crd.yaml's second document)", function()
  it("has the job cluster's lifecycle fields of spec.job with the FlinkCluster's schema, savepointRetention too",
    function()
    local docs = lyaml.load(fx.read(ROOT .. "/deploy/crd.yaml"), { all = true })
    local function job_fields(d)
      return d.spec.versions[1].schema.openAPIV3Schema.properties.spec.properties.job.properties
    end
    assert.equal("FlinkJob", docs[2].spec.names.kind)
    local cluster, fj = job_fields(docs[1]), job_fields(docs[2])
    for _, f in ipairs({ "savepointsDir", "autoSavepointSeconds", "savepointGeneration", "savepointRetention",
      "fromSavepoint", "allowNonRestoredState", "restartPolicy", "cancelRequested", "parallelism" }) do
      assert.is_table(fj[f], f)
      assert.is_true(util.equal(cluster[f], fj[f]), f)
    end
    assert.same({ 1, 100 }, { fj.savepointRetention.properties.maxCount.minimum,
      fj.savepointRetention.properties.maxCount.maximum })
  end)
end)

describe("fc.admission of a FlinkJob", function()
  local admission = require("fc.admission")
  before_each(function()
    host.configure({ policy_dir = ROOT .. "/policies" })
  end)
  local function review(obj, op)
    return { apiVersion = "admission.k8s.io/v1", kind = "AdmissionReview",
      request = { uid = "u1", operation = op or "CREATE", namespace = "default", object = obj } }
  end

  it("allows a valid FlinkJob", function()
    local fj = job()
    local r = admission.validate(review(fj)).review.response
    assert.same({ uid = "u1", allowed = true }, r)
    -- with savepointRetention (the FlinkCluster's field)
    fj.spec.job.savepointRetention = { maxCount = 1, maxAgeSeconds = 3600 }
    r = admission.validate(review(fj)).review.response
    assert.same({ uid = "u1", allowed = true }, r)
  end)

  it("refuses a jarFile no http(s) URL, a missing clusterRef, last-state and spec.job's own rules, by path", function()
    local fj = job()
    fj.spec.clusterRef = nil
    fj.spec.job.jarFile = "/opt/flink/usrlib/job.jar"
    fj.spec.job.upgradeMode = "last-state"
    fj.spec.job.parallelism = 0
    local r = admission.validate(review(fj)).review.response
    assert.is_false(r.allowed)
    assert.equal(422, r.status.code)
    local msg = r.status.message
    assert.truthy(msg:find("ticker: spec.clusterRef.name: is required", 1, true), msg)
    assert.truthy(msg:find("ticker: spec.job.jarFile: must be an http(s):// URL", 1, true), msg)
    assert.truthy(msg:find("ticker: spec.job.upgradeMode: last-state is for job clusters", 1, true), msg)
    assert.truthy(msg:find("ticker: spec.job.parallelism:", 1, true), msg)
  end)

  it("a DELETE of a FlinkJob is allowed untouched", function()
    local r = admission.validate(review(job(), "DELETE")).review.response
    assert.is_true(r.allowed)
  end)
end)

describe("fc.admission of a FlinkJob update", function()
  local admission = require("fc.admission")
  before_each(function()
    host.configure({ policy_dir = ROOT .. "/policies" })
  end)
  local function update(obj, old)
    return admission.validate({ apiVersion = "admission.k8s.io/v1", kind = "AdmissionReview",
      request = { uid = "u2", operation = "UPDATE", namespace = "default", object = obj, oldObject = old } })
      .review.response
  end

  it("refuses another clusterRef and the removal of savepointsDir (the CRD's transition rules' twins)", function()
    local old = job()
    local new = job()
    new.spec.clusterRef = { name = "other" }
    new.spec.job.savepointsDir = nil
    local r = update(new, old)
    assert.is_false(r.allowed)
    assert.truthy(r.status.message:find("ticker: spec.clusterRef.name: cannot change (delete the FlinkJob and create "
      .. "another)", 1, true), r.status.message)
    assert.truthy(r.status.message:find("ticker: spec.job.savepointsDir: cannot be removed", 1, true), r.status.message)
  end)

  it("allows an update of args with the same clusterRef", function()
    local new = job()
    new.spec.job.args = { "b" }
    assert.is_true(update(new, job()).allowed)
  end)
end)
