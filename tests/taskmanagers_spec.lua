-- SPDX-License-Identifier: Apache-2.0
-- Native TaskManagers through the reconcile framework (lua/fc/reconcile.lua, fc.taskmanagers)
-- with the real policies/: pods created, cancelled, replaced, timed out, stopped at the limit,
-- and rebuilt after a restart. The API server is played by this file: applied pods come back
-- with a uid, a creation time and a phase; deleted ones are gone by the next pass.
local fx = require("support.fixtures")
local util = require("fc.util")
local host = require("fc.host")
local reconcile = require("fc.reconcile")
local taskmanagers = require("fc.taskmanagers")

local ROOT = fx.ROOT
local T0 = 1764484800 -- 2025-11-30T06:40:00Z
local KEY = "default/wc"

local function cluster(tm, job)
  return {
    apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
    metadata = { name = "wc", namespace = "default", uid = "0b6c3f5e-1111-4222-8333-944455556666", generation = 1 },
    spec = { image = { name = "flink:1.20" }, jobManager = {}, job = job,
      taskManager = util.merge({ mode = "Native", slots = 7, maxFailedAttempts = 3, registrationTimeoutSeconds = 60,
        resourceProfile = { cpu = "1", memory = "1Gi" }, maxPerTaskManager = { cpu = "2", memory = "2Gi" } }, tm) },
  }
end

local function rfc3339(t) return os.date("!%Y-%m-%dT%H:%M:%SZ", t) end

-- The core's record of the JobManager's GET /taskmanagers answer (fc.flink decodes it).
local function tm_answer(ids, time)
  local tms = {}
  for i, id in ipairs(ids) do tms[i] = { id = id, slotsNumber = 2 } end
  return { answers = { list_taskmanagers = { intent = { kind = "list_taskmanagers" }, status = 200,
    body = require("cjson").encode({ taskmanagers = tms }), error = "", time = time } } }
end

-- A small world: the cluster, its children, the Flink answers, the clock; pass() runs one
-- reconcile and plays the API server for its actions; returns the actions as "op Kind name".
local function world(c)
  local w = { cluster = c, children = { Pod = {} }, flink = {}, now = T0, events = {}, dry_runs = {} }
  function w.pass()
    local r = reconcile.run({ cluster = w.cluster, children = w.children, flink = w.flink, now = w.now,
      dry_runs = w.dry_runs })
    local out = {}
    for _, a in ipairs(r.actions) do
      if a.op == "apply" then
        local o = util.deepcopy(a.object)
        out[#out + 1] = "apply " .. o.kind .. " " .. o.metadata.name
        local old = (w.children[o.kind] or {})[o.metadata.name]
        o.metadata.uid = old and old.metadata.uid or ("uid-" .. o.metadata.name)
        o.metadata.creationTimestamp = old and old.metadata.creationTimestamp or rfc3339(w.now)
        if o.kind == "Pod" then o.status = { phase = "Running" } end
        w.children[o.kind] = w.children[o.kind] or {}
        w.children[o.kind][o.metadata.name] = o
      elseif a.op == "delete" then
        out[#out + 1] = "delete " .. a.kind .. " " .. a.name
        w.children[a.kind][a.name] = nil
      elseif a.op == "flink" then
        out[#out + 1] = "flink " .. a.method .. " " .. a.path
        w.flink_target = a.target
      elseif a.op == "dry_run" then -- the update gate's dry runs: accepted
        w.dry_runs[a.object.kind .. "/" .. a.object.metadata.name] = { hash = a.hash, status = 200, message = "" }
      end
    end
    for _, e in ipairs(r.events) do w.events[#w.events + 1] = e end
    if r.status then w.cluster.status = r.status end
    w.requeue_after = r.requeue_after
    return out
  end
  return w
end

local function grep(list, pattern)
  local out = {}
  for _, s in ipairs(list) do if s:find(pattern) then out[#out + 1] = s end end
  return out
end

local function pods_of(w)
  return util.sorted_keys(w.children.Pod)
end

local function condition(status, t)
  for _, c in ipairs((status or {}).conditions or {}) do if c.type == t then return c end end
end

describe("Native TaskManagers (reconcile.run with the real policies/)", function()
  before_each(function()
    host.configure({ policy_dir = ROOT .. "/policies" })
    taskmanagers.forget(KEY)
  end)

  it("starts ceil(7 / 2) = 4 pods named <cluster>-taskmanager-<id>, and no TaskManager StatefulSet", function()
    local w = world(cluster())
    local o = w.pass()
    assert.same({ "apply Pod wc-taskmanager-1", "apply Pod wc-taskmanager-2", "apply Pod wc-taskmanager-3",
      "apply Pod wc-taskmanager-4" }, grep(o, "Pod"))
    assert.same({}, grep(o, "StatefulSet wc%-taskmanager"))
    local pod = w.children.Pod["wc-taskmanager-3"]
    assert.same({ app = "flink", cluster = "wc", component = "taskmanager", priority = "0" }, pod.metadata.labels)
    assert.equal("FlinkCluster", pod.metadata.ownerReferences[1].kind)
    assert.same({ cpu = "2", memory = "2Gi" }, pod.spec.containers[1].resources.limits)
    assert.same({ "taskmanager", "-Dtaskmanager.resource-id=$(FLINK_POD_NAME)", "-Dtaskmanager.numberOfTaskSlots=2" },
      pod.spec.containers[1].args)
    assert.equal("Never", pod.spec.restartPolicy)
    -- the next pass sees them: nothing more
    assert.same({}, grep(w.pass(), "Pod"))
    local tms = w.cluster.status.components.taskManagers
    assert.same({ 4, 0, 2, 7, "NotReady" },
      { tms.pods, tms.registered, tms.slotsPerTaskManager, tms.demand, tms.state })
  end)

  it("demand 7 -> 3 cancels pending pods down to 2", function()
    local w = world(cluster())
    w.pass()
    w.pass()
    w.cluster.spec.taskManager.slots = 3
    w.cluster.metadata.generation = 2
    assert.same({ "delete Pod wc-taskmanager-1", "delete Pod wc-taskmanager-2" }, grep(w.pass(), "Pod"))
    assert.same({ "wc-taskmanager-3", "wc-taskmanager-4" }, pods_of(w))
  end)

  it("replaces a deleted pod and a pod that ended, counting both as failed", function()
    local w = world(cluster())
    w.pass()
    w.pass()
    w.children.Pod["wc-taskmanager-2"] = nil
    assert.same({ "apply Pod wc-taskmanager-5" }, grep(w.pass(), "Pod"))
    w.children.Pod["wc-taskmanager-3"].status.phase = "Failed"
    assert.same({ "delete Pod wc-taskmanager-3", "apply Pod wc-taskmanager-6" }, grep(w.pass(), "Pod"))
    assert.equal(2, w.cluster.status.components.taskManagers.failedAttempts)
    local reasons = {}
    for _, e in ipairs(w.events) do reasons[#reasons + 1] = e.reason end
    assert.same({ "TaskManagerFailed", "TaskManagerFailed" }, grep(reasons, "^TaskManager"))
  end)

  it("after a restart (the accounting forgotten) creates nothing for the pods that exist", function()
    local w = world(cluster())
    w.pass()
    w.pass()
    taskmanagers.forget(KEY)
    assert.same({}, grep(w.pass(), "Pod"))
    -- and the ids go on after the largest one
    w.children.Pod["wc-taskmanager-4"] = nil
    assert.same({ "apply Pod wc-taskmanager-5" }, grep(w.pass(), "Pod"))
  end)

  it("keeps the maxFailedAttempts stop across a restart (the count from the status)", function()
    local w = world(cluster({ maxFailedAttempts = 2, slots = 2 }))
    w.pass()
    w.children.Pod["wc-taskmanager-1"].status.phase = "Failed"
    w.pass()
    w.children.Pod["wc-taskmanager-2"].status.phase = "Failed"
    w.pass()
    assert.equal("True", condition(w.cluster.status, "TaskManagersStopped").status)
    taskmanagers.forget(KEY)
    assert.same({}, grep(w.pass(), "apply Pod"))
    assert.equal("True", condition(w.cluster.status, "TaskManagersStopped").status)
  end)

  it("counts pods that ended while no controller ran, on start", function()
    local w = world(cluster())
    w.pass()
    taskmanagers.forget(KEY)
    w.children.Pod["wc-taskmanager-1"].status.phase = "Failed"
    assert.same({ "delete Pod wc-taskmanager-1", "apply Pod wc-taskmanager-5" }, grep(w.pass(), "Pod"))
    assert.equal(1, w.cluster.status.components.taskManagers.failedAttempts)
  end)

  it("asks the JobManager for its TaskManagers, is Ready once they registered, times out the others", function()
    local w = world(cluster())
    w.children.Service = { ["wc-jobmanager"] = { kind = "Service", metadata = { name = "wc-jobmanager" },
      spec = { type = "ClusterIP" } } }
    w.pass()
    local o = w.pass()
    assert.same({ "flink GET /taskmanagers" }, grep(o, "taskmanagers"))
    -- where: the JobManager Service cluster.desired named (a session cluster has no job.observe)
    assert.same({ scheme = "http", namespace = "default", service = "wc-jobmanager", port = 8081 }, w.flink_target)
    assert.equal(10, w.requeue_after) -- polled while pods wait for their registration
    w.now = T0 + 30
    w.flink = tm_answer({ "wc-taskmanager-1", "wc-taskmanager-2", "wc-taskmanager-3" }, T0 + 30)
    assert.same({}, grep(w.pass(), "Pod"))
    assert.equal(3, w.cluster.status.components.taskManagers.registered)
    w.now = T0 + 61
    -- pod 4 was created at T0: its deadline passed
    w.flink = tm_answer({ "wc-taskmanager-1", "wc-taskmanager-2", "wc-taskmanager-3" }, T0 + 61)
    assert.same({ "delete Pod wc-taskmanager-4", "apply Pod wc-taskmanager-5" }, grep(w.pass(), "Pod"))
    local timed_out = {}
    for _, e in ipairs(w.events) do
      if e.reason == "TaskManagerNotRegistered" then timed_out[#timed_out + 1] = e.message end
    end
    assert.same({ "TaskManager pod wc-taskmanager-4 did not register with the JobManager within 60s: replaced" },
      timed_out)
    w.flink = tm_answer({ "wc-taskmanager-1", "wc-taskmanager-2", "wc-taskmanager-3", "wc-taskmanager-5" }, T0 + 70)
    w.now = T0 + 70
    w.pass()
    local tms = w.cluster.status.components.taskManagers
    assert.same({ 4, 4, "Ready", 1 }, { tms.pods, tms.registered, tms.state, tms.failedAttempts })
  end)

  it("stops at maxFailedAttempts with a condition and one Warning event", function()
    local w = world(cluster({ maxFailedAttempts = 2, slots = 2 }))
    w.pass()
    w.children.Pod["wc-taskmanager-1"].status.phase = "Failed"
    assert.same({ "delete Pod wc-taskmanager-1", "apply Pod wc-taskmanager-2" }, grep(w.pass(), "Pod"))
    w.children.Pod["wc-taskmanager-2"].status.phase = "Failed"
    assert.same({ "delete Pod wc-taskmanager-2" }, grep(w.pass(), "Pod"))
    local c = condition(w.cluster.status, "TaskManagersStopped")
    assert.same({ "True", "MaxFailedAttempts" }, { c.status, c.reason })
    assert.same({}, grep(w.pass(), "Pod"))
    local stopped = 0
    for _, e in ipairs(w.events) do if e.reason == "TaskManagersStopped" then stopped = stopped + 1 end end
    assert.equal(1, stopped)
  end)

  it("waits after a pod that could not be created (quota), with a requeue instead of a hot loop", function()
    local w = world(cluster({ slots = 2 }))
    local r = reconcile.run({ cluster = w.cluster, children = w.children, flink = {}, now = T0 })
    assert.equal(1, #grep((function()
      local out = {}
      for _, a in ipairs(r.actions) do if a.op == "apply" and a.object.kind == "Pod" then out[#out + 1] = "x" end end
      return out
    end)(), "x"))
    -- the create was refused: the next pass does not list the pod
    w.now = T0 + 1
    local o = w.pass()
    assert.same({}, grep(o, "Pod"))
    local failed = {}
    for _, e in ipairs(w.events) do if e.reason == "TaskManagerStartFailed" then failed[#failed + 1] = e.message end end
    assert.same({ "TaskManager pod wc-taskmanager-1 was not created; new pods wait 5s" }, failed)
    assert.equal(5, w.requeue_after)
    w.now = T0 + 6
    assert.same({ "apply Pod wc-taskmanager-2" }, grep(w.pass(), "Pod"))
  end)

  it("a job cluster's demand is its parallelism", function()
    local c = cluster({}, { jarFile = "/opt/job.jar", parallelism = 3 })
    c.spec.taskManager.slots = nil
    local w = world(c)
    assert.same({ "apply Pod wc-taskmanager-1", "apply Pod wc-taskmanager-2" }, grep(w.pass(), "Pod"))
    w.pass()
    local tms = w.cluster.status.components.taskManagers
    assert.same({ 2, 3 }, { tms.pods, tms.demand })
  end)

  it("back to mode StatefulSet: deletes the Native pods, and the StatefulSet comes", function()
    local w = world(cluster())
    w.pass()
    w.pass()
    w.cluster.spec.taskManager = { replicas = 2 }
    w.cluster.metadata.generation = 2
    w.pass() -- the update gate's dry runs
    local o = w.pass()
    assert.same({ "delete Pod wc-taskmanager-1", "delete Pod wc-taskmanager-2", "delete Pod wc-taskmanager-3",
      "delete Pod wc-taskmanager-4" }, grep(o, "Pod"))
    assert.same({ "apply StatefulSet wc-taskmanager" }, grep(o, "StatefulSet wc%-taskmanager"))
  end)

  it("wants no slots while a cleanup removes the TaskManagers", function()
    local job = cluster({}, { jarFile = "/opt/job.jar", parallelism = 3 })
    assert.same({ 3, 0, 7 }, { taskmanagers.demand(job, false), taskmanagers.demand(job, true),
      taskmanagers.demand(cluster(), false) })
  end)

  it("deletes the pods once the job succeeded (job.decide's cleanup removes kind Pod)", function()
    local id = "8c2d6f00000000000000000000000001"
    local c = cluster({}, { jarFile = "/opt/job.jar", parallelism = 3 })
    c.spec.taskManager.slots = nil -- a job cluster's demand is its parallelism
    local w = world(c)
    w.pass()
    w.pass()
    assert.same({ "wc-taskmanager-1", "wc-taskmanager-2" }, pods_of(w))
    w.cluster.status.components.job = { id = id, state = "Running" }
    w.flink = require("support.flink_answers").raw({ reachable = true, jobs = { { jid = id, state = "FINISHED" } } },
      w.now)
    local o = w.pass()
    assert.equal("Succeeded", w.cluster.status.components.job.state)
    assert.same({ "delete Pod wc-taskmanager-1", "delete Pod wc-taskmanager-2" }, grep(o, "Pod"))
    assert.same({}, pods_of(w))
  end)
end)

describe("render of a Native FlinkCluster #bin", function()
  it("shows the 4 GPU TaskManager pods of deploy/examples/native-gpu-session.yaml", function()
    local r = fx.run_bin({ "render", "-o", "json", "-f", ROOT .. "/deploy/examples/native-gpu-session.yaml" })
    assert.equal(0, r.code, r.stderr)
    local list = require("cjson").decode(r.stdout)
    local kinds, pods = {}, {}
    for _, o in ipairs(list.items) do
      kinds[#kinds + 1] = o.kind .. " " .. o.metadata.name
      if o.kind == "Pod" then pods[#pods + 1] = o end
    end
    assert.same({ "ConfigMap session-gpu-configmap", "StatefulSet session-gpu-jobmanager",
      "Service session-gpu-jobmanager", "Pod session-gpu-taskmanager-1", "Pod session-gpu-taskmanager-2",
      "Pod session-gpu-taskmanager-3", "Pod session-gpu-taskmanager-4" }, kinds)
    local c = pods[4].spec.containers[1]
    assert.same({ cpu = "2", memory = "4Gi", ["nvidia.com/gpu"] = "1" }, c.resources.limits)
    assert.same({ "taskmanager", "-Dtaskmanager.resource-id=$(FLINK_POD_NAME)", "-Dtaskmanager.numberOfTaskSlots=2",
      "-Dexternal-resources=gpu", "-Dexternal-resource.gpu.amount=1",
      "-Dexternal-resource.gpu.kubernetes.config-key=nvidia.com/gpu" }, c.args)
    local conf = list.items[1].data["config.yaml"] or list.items[1].data["flink-conf.yaml"]
    assert.truthy(conf:find('taskmanager.memory.process.size: "?4096m"?'), conf)
  end)
end)
