-- SPDX-License-Identifier: Apache-2.0
-- Specs of lua/fc/savepoints.lua (the savepoint trigger protocol) with the shipped
-- policies/savepoint.lua in the production sandbox, as fc.reconcile and fc.flinkjob run them.
-- Fixtures: tests/testdata/savepoints/<case>/ (every case directory): input.yaml holds the
-- input of savepoints.pass (what the framework had for savepoint.decide before the protocol
-- moved out of the policy: cluster, job, start_time, flink, components, update, now);
-- expected.yaml is matched against the pass's result as support.fixtures' `mismatch` says (every
-- key given must be equal, lists as long, `{}` empty or absent, `~` absent).
local fx = require("support.fixtures")
local savepoints = require("fc.savepoints")
local checkpoints = require("fc.checkpoints")
local contract = require("fc.contract")

local clock = require("lib.clock")
local DIR = fx.ROOT .. "/tests/testdata/savepoints"
local host = require("fc.host")

local function decide(i)
  if host.info().policy_dir ~= fx.ROOT .. "/policies" then host.configure({ policy_dir = fx.ROOT .. "/policies" }) end
  local ok, res = contract.call(host, "savepoint", "decide", i)
  if not ok then error(res.message, 2) end
  return res
end
local function pass(i) return savepoints.pass(decide, i) end

describe("fc.savepoints", function()
  describe("fixtures (with policies/savepoint.lua)", function()
    local all = fx.subdirs(DIR)
    it("has the cases", function()
      fx.assert_cases(all, {
        "auto-initial-due", "auto-not-yet-due", "auto-scheduled-exact", "cancel-no-savepoints-dir", "cancel-stop",
        "checkpoint-accepted-polls", "checkpoint-completed", "checkpoint-failed", "checkpoint-not-found-resends",
        "checkpoint-start", "checkpoint-trigger-refused",
        "completed-failure", "completed-location", "control-acknowledged-none", "control-annotation-set-again",
        "control-new-savepoint-same-second", "disposal-accepted-polls", "disposal-completed",
        "disposal-failed-backoff", "disposal-gone", "disposal-retry-due", "disposal-retry-waits",
        "disposal-waits-jobmanager-gone",
        "generation-request", "history-failed-recorded", "history-recorded",
        "recover-found-completed", "recover-lookup", "recover-not-found-resends", "recover-not-found-timeout",
        "stop-created-job-failed", "stop-failed-fallback", "trigger-accepted-polls", "trigger-error",
        "retention-age", "retention-count", "retention-failed-dropped", "retention-none-keeps", "retention-protected",
        "retention-waits-no-jobmanager",
        "trigger-sent-waits", "trigger-unanswered-lookup", "update-stops-despite-recent-savepoint",
        "update-last-state-none", "update-last-state-job-changed",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        local dir = DIR .. "/" .. case
        local input = fx.read_yaml(dir .. "/input.yaml")
        assert.equal("decide", input.hook)
        local out = savepoints.pass(decide, input.input)
        assert.is_nil(fx.mismatch(fx.expected(dir, out), out, ""))
      end)
    end
  end)

  local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"
  local function input(spec_job, status, now, operations, update)
    spec_job.jarFile = "/j.jar"
    return {
      cluster = { metadata = { name = "wc" }, spec = { job = spec_job }, status = status or {} },
      job = status and status.job or { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 },
      components = {},
      start_time = 1000, flink = { operations = operations or {} },
      update = { pending = update or false }, now = now,
    }
  end

  it("triggers every autoSavepointSeconds exactly, counted from each trigger", function()
    -- simulate 1000 s of a job started at t=1000 with savepoints that take 7 s each
    local spec = { savepointsDir = "/sp", autoSavepointSeconds = 300 }
    local st = { job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 } }
    local ops, times, n = {}, {}, 0
    for now = 1000, 2000 do
      local out = pass(input(spec, st, now, ops))
      for _, a in ipairs(out.intents) do
        if a.kind == "savepoint" then
          times[#times + 1] = now
          n = n + 1
          ops[a.id] = { phase = "accepted", time = now }
        end
      end
      if out.savepoint.state == "InProgress" and now - clock.parse(out.savepoint.triggerTime) >= 7 then
        ops[out.savepoint.triggerID] = { phase = "status", status = "COMPLETED", location = "/sp/s" .. n, time = now }
      end
      st = { savepoint = out.savepoint, job = out.job }
    end
    assert.same({ 1300, 1600, 1900 }, times)
    assert.equal("/sp/s3", st.job.savepointLocation)
  end)

  it("triggers a checkpoint every autoCheckpointSeconds, one at a time, and records each in the history", function()
    -- 200 s of a job started at t=1000, a checkpoint every 30 s, each taking 7 s in Flink (ids from
    -- 11 on); the third is refused (declined by a task): Failed, a CheckpointFailed Event
    local spec = { autoCheckpointSeconds = 30 }
    local st = { job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 } }
    local ckpts, times, events, next_id = {}, {}, {}, 11
    for now = 1000, 1200 do
      local inp = input(spec, st, now)
      inp.flink.checkpoints = ckpts
      local out = pass(inp)
      for _, a in ipairs(out.intents) do
        if a.kind == "checkpoint" then
          times[#times + 1] = now
          assert.equal("CONFIGURED", a.checkpoint_type)
          ckpts[a.id] = { phase = "accepted", time = now, n = #times }
        end
      end
      for _, e in ipairs(out.events or {}) do events[#events + 1] = e.reason .. ": " .. e.message end
      local ct = out.job.checkpointTrigger
      if ct and ct.state == "InProgress" then
        local op = ckpts[ct.triggerID]
        if op and op.phase == "accepted" and now - clock.parse(ct.triggerTime) >= 7 then
          if op.n == 3 then
            ckpts[ct.triggerID] = { phase = "status", status = "COMPLETED", time = now,
              failure = "org.apache.flink.runtime.checkpoint.CheckpointException: Task local checkpoint failure." }
          else
            ckpts[ct.triggerID] = { phase = "status", status = "COMPLETED", checkpoint_id = next_id, time = now }
            next_id = next_id + 1
          end
        end
      end
      st = { savepoint = out.savepoint, job = out.job }
    end
    -- due 30 s after each trigger; the outcome read at the 5 s polls (trigger + 5, + 10)
    assert.same({ 1030, 1060, 1090, 1120, 1150, 1180 }, times)
    local h = st.job.checkpointHistory
    local got = {}
    for i, e in ipairs(h) do got[i] = e.state .. " " .. tostring(e.checkpointID) .. " " .. e.completionTime end
    -- each read 8 s after its trigger (Flink done at 7 s, seen by the next pass), the oldest
    -- (checkpoint 11) beyond HISTORY_MAX
    assert.same({ "Succeeded 15 1970-01-01T00:19:48Z", "Succeeded 14 1970-01-01T00:19:18Z",
      "Succeeded 13 1970-01-01T00:18:48Z", "Failed nil 1970-01-01T00:18:18Z",
      "Succeeded 12 1970-01-01T00:17:48Z" }, got)
    assert.equal(checkpoints.HISTORY_MAX, #h)
    assert.same({ "CheckpointFailed: checkpoint " .. h[4].triggerID .. " of job " .. ID
      .. " failed: org.apache.flink.runtime.checkpoint.CheckpointException: Task local checkpoint failure." }, events)
    -- the last trigger (1180) ended; the next one is due at 1210
    assert.same({ "Succeeded", 15, 1180 }, { st.job.checkpointTrigger.state, st.job.checkpointTrigger.checkpointID,
      clock.parse(st.job.checkpointTrigger.triggerTime) })
  end)

  it("keeps maxCount savepoints over many passes and disposes the older ones one at a time", function()
    -- a scheduled savepoint every 100 s, each taking 3 s, each disposal 2 s; maxCount 2
    local spec = { savepointsDir = "/sp", autoSavepointSeconds = 100, savepointRetention = { maxCount = 2 } }
    local st = { job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 } }
    local ready = { jobManagerStatefulSet = { state = "Ready" }, jobManagerService = { state = "Ready" } }
    local ops, disposals, on_disk, n, requests = {}, {}, {}, 0, 0
    for now = 1000, 1560 do
      local inp = input(spec, st, now, ops)
      inp.flink.disposals, inp.components = disposals, ready
      local out = pass(inp)
      for _, a in ipairs(out.intents) do
        if a.kind == "savepoint" then
          n = n + 1
          ops[a.id] = { phase = "accepted", time = now, n = n }
        elseif a.kind == "dispose_savepoint" then
          requests = requests + 1
          assert.is_true(on_disk[a.location], a.location .. " disposed twice or never written")
          disposals[a.id] = { phase = "accepted", request_id = string.format("%032x", requests), time = now,
            done_at = now + 2, location = a.location }
        end
      end
      local sp = out.savepoint
      if sp.state == "InProgress" and ops[sp.triggerID] and now - clock.parse(sp.triggerTime) >= 3 then
        local loc = "/sp/s" .. ops[sp.triggerID].n
        on_disk[loc] = true
        ops[sp.triggerID] = { phase = "status", status = "COMPLETED", location = loc, time = now }
      end
      for _, d in pairs(disposals) do
        if d.done_at and now >= d.done_at then
          on_disk[d.location] = nil
          d.phase, d.status, d.request_id, d.done_at, d.time = "status", "COMPLETED", nil, nil, now
        end
      end
      st = { savepoint = out.savepoint, job = out.job }
    end
    -- savepoints at 1100 ... 1500: s1 .. s5; s1 .. s3 disposed, s4 and s5 kept
    assert.equal(5, n)
    assert.equal(3, requests)
    assert.same({ ["/sp/s4"] = true, ["/sp/s5"] = true }, on_disk)
    local locs = {}
    for i, e in ipairs(st.job.savepointHistory) do
      locs[i] = e.location
      assert.equal("periodic", e.triggerType)
      assert.is_nil(e.disposal)
    end
    assert.same({ "/sp/s5", "/sp/s4" }, locs)
  end)

  it("disposes nothing without savepointRetention, and keeps the newest HISTORY_MAX entries", function()
    local retention = require("lib.retention")
    local history = {}
    for i = 1, 12 do
      history = savepoints.record(history, { triggerID = string.format("%032x", i), jobID = ID,
        triggerReason = "scheduled", state = "Succeeded", location = "/sp/s" .. i }, 1000 + i)
    end
    local plan = retention.plan({ history = history, jm_ready = true, disposals = {}, now = 9999 })
    assert.same({}, plan.intents)
    assert.equal(retention.HISTORY_MAX, #plan.history)
    assert.equal("/sp/s12", plan.history[1].location)
    assert.equal("/sp/s3", plan.history[10].location)
  end)

  it("reads only the answer recorded under its own trigger id (not the previous savepoint's)", function()
    local st = {
      savepoint = { jobID = ID, triggerID = "000003ea000000000000000000000000", triggerTime = "1970-01-01T00:16:42Z",
        requestTime = "1970-01-01T00:16:42Z", triggerReason = "scheduled", state = "InProgress" },
      job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0,
        lastSavepointTriggerID = "000003ea000000000000000000000000" },
    }
    local old_answer = { ["000003e8000000000000000000000000"] = { phase = "status", status = "COMPLETED",
      location = "/sp/old", time = 1001 } }
    local out = pass(input({ savepointsDir = "/sp" }, st, 1003, old_answer))
    assert.equal("InProgress", out.savepoint.state)
    assert.same({}, out.intents)
    assert.equal(4, out.requeue_after)
  end)

  it("gives each trigger of the same second its own id", function()
    local trigger = require("fc.trigger")
    local a = trigger.id(1700000100, nil)
    local b = trigger.id(1700000100, a)
    assert.equal("6553f164000000000000000000000000", a)
    assert.equal("6553f164000000000000000000000001", b)
    assert.equal(a, trigger.id(1700000100, "6553f163000000000000000000000005"))
    assert.truthy(b:match("^" .. string.rep("%x", 32) .. "$"))
  end)

  it("fails a savepoint the status recorded without a trigger id (nothing to look up)", function()
    local st = {
      savepoint = { jobID = ID, triggerTime = "1970-01-01T00:16:40Z", triggerReason = "scheduled",
        state = "InProgress" },
      job = { name = "wc-job-submitter", id = ID, state = "Running", restartCount = 0 },
    }
    local out = pass(input({ savepointsDir = "/sp" }, st, 1001))
    assert.equal("TriggerFailed", out.savepoint.state)
  end)

  it("starts a savepoint with a new trigger id after the job's last one, recorded before it is sent", function()
    local job = { id = ID, state = "Running", lastSavepointTriggerID = "6553f164000000000000000000000000" }
    local sp, intent = savepoints.start(job, { reason = "update", stop = true }, "/sp", 1700000100)
    assert.same({ jobID = ID, triggerID = "6553f164000000000000000000000001", triggerTime = "2023-11-14T22:15:00Z",
      requestTime = "2023-11-14T22:15:00Z", triggerReason = "update", state = "InProgress", stop = true }, sp)
    assert.same({ kind = "stop", id = "6553f164000000000000000000000001", job_id = ID, target_directory = "/sp" },
      intent)
    assert.equal("6553f164000000000000000000000001", job.lastSavepointTriggerID)
    assert.equal("2023-11-14T22:15:00Z", job.lastSavepointTriggerTime)
  end)

  it("starts nothing the policy asks for while a savepoint is in flight or the job does not run", function()
    local busy = { jobID = ID, triggerID = "000003e8000000000000000000000000", triggerTime = "1970-01-01T00:16:40Z",
      requestTime = "1970-01-01T00:16:40Z", triggerReason = "scheduled", state = "InProgress" }
    local take = function(i)
      return { job = i.job, outcome = {}, take = { reason = "user requested", stop = false } }
    end
    local inp = input({ savepointsDir = "/sp" }, { savepoint = busy }, 1002)
    local out = savepoints.pass(take, inp)
    assert.equal("000003e8000000000000000000000000", out.savepoint.triggerID)
    assert.same({}, out.intents)
    assert.equal(3, out.requeue_after)
    local stopped = input({ savepointsDir = "/sp" }, { job = { id = ID, state = "Cancelled" } }, 1002)
    out = savepoints.pass(take, stopped)
    assert.equal("NotTriggered", out.savepoint.state)
    assert.same({}, out.intents)
  end)

  it("refuses a take that is not {reason, stop} (fc.contract's check of savepoint.decide)", function()
    assert.is_nil(savepoints.check_take(nil))
    assert.is_nil(savepoints.check_take({ reason = "scheduled", stop = false }))
    assert.equal("take must be {reason=<text>, stop=<boolean>} or absent", savepoints.check_take({ stop = true }))
    assert.equal("take must be {reason=<text>, stop=<boolean>} or absent",
      savepoints.check_take({ reason = "update", stop = "yes" }))
    assert.equal("take must be {reason=<text>, stop=<boolean>} or absent",
      contract.check_result("savepoint", "decide", { job = {}, take = { reason = "" } }))
  end)
end)
