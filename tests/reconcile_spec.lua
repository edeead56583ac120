-- SPDX-License-Identifier: Apache-2.0
-- Specs of the reconcile framework (lua/fc/reconcile.lua) with fc.diff and fc.revision.
-- The framework runs through fc.host (the production host, core/lhost.c, by fc.sandbox) against
-- a policy dir built per test: the tiny defaults/validate/cluster of tests/testdata/policies-min/ plus the
-- real job, savepoint and status policies (and lib/clock.lua); the last block runs the real
-- policies/ directory. Observed objects are the applied ones as an API server would return
-- them: with uid, resourceVersion, managedFields, server-filled defaults and a status.
local lyaml = require("lyaml")
local fx = require("support.fixtures")
local util = require("fc.util")
local host = require("fc.host")
local reconcile = require("fc.reconcile")
local diff = require("fc.diff")
local revision = require("fc.revision")
local flink_answers = require("support.flink_answers")

local ROOT = fx.ROOT
local T0 = 1764484800 -- 2025-11-30T06:40:00Z
local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"
-- the JobManager REST target of the `wordcount` cluster in `default` (the ui port's default)
local JM = { scheme = "http", namespace = "default", service = "wordcount-jobmanager", port = 8081 }
local read, write = fx.read, fx.write
local CONTROL_ANNOTATION = "flinkclusters.flinkoperator.k8s.io/user-control"
-- savepoint.lua's TRIGGER_TIMEOUT
local function savepoint_timeout() return require("fc.savepoints").TRIGGER_TIMEOUT end

-- reconcile.run with what the core records for the Flink answers a test gives decoded
-- (support.flink_answers: Flink 1.20's bodies, decoded again by fc.flink)
local function run(snapshot)
  return reconcile.run(util.merge(snapshot, { flink = flink_answers.raw(snapshot.flink, snapshot.now) }))
end

local made = {}
-- A policy dir: policies-min + the real job/savepoint/status; `overrides` = {file = text}.
local function policy_dir(overrides)
  local dir = fx.tmpdir()
  made[#made + 1] = dir
  assert(os.execute("mkdir -p " .. fx.quote(dir .. "/lib")))
  for _, f in ipairs({ "defaults.lua", "validate.lua", "cluster.lua" }) do
    write(dir .. "/" .. f, read(ROOT .. "/tests/testdata/policies-min/" .. f))
  end
  for _, f in ipairs({ "job.lua", "savepoint.lua", "settings.lua", "status.lua", "health.lua", "rollback.lua",
    "restart.lua", "cleanup.lua", "lib/clock.lua", "lib/names.lua", "lib/control.lua", "lib/failure.lua",
    "lib/retention.lua", "submit.lua", "lib/upgrade.lua", "lib/tunables.lua" }) do
    write(dir .. "/" .. f, read(ROOT .. "/policies/" .. f))
  end
  for f, text in pairs(overrides or {}) do write(dir .. "/" .. f, text) end
  return dir
end

local function wordcount(over)
  local c = lyaml.load(read(ROOT .. "/deploy/examples/wordcount.yaml"))
  c.metadata.namespace = "default"
  c.metadata.uid = "0b6c3f5e-1111-4222-8333-944455556666"
  c.metadata.generation = 1
  for k, v in pairs(over or {}) do c[k] = v end
  return c
end

-- The object as the API server returns it after an apply. `ready` makes StatefulSets Ready.
local uids = 0
local function served(obj, ready)
  local o = util.deepcopy(obj)
  local md = o.metadata
  uids = uids + 1
  md.uid = string.format("uid-%s-%s-%d", o.kind, md.name, uids) -- unique, as the API server's
  md.resourceVersion = "4711"
  md.creationTimestamp = "2025-11-30T06:40:01Z"
  md.managedFields = { { manager = "flink-controller", operation = "Apply", fieldsType = "FieldsV1" } }
  md.generation = 1
  if o.kind == "StatefulSet" then
    o.spec.revisionHistoryLimit = 10
    o.spec.updateStrategy = { type = "RollingUpdate", rollingUpdate = { partition = 0 } }
    local c = o.spec.template.spec.containers[1]
    c.terminationMessagePath = "/dev/termination-log"
    c.imagePullPolicy = "IfNotPresent"
    if c.resources and c.resources.limits and c.resources.limits.memory == "1024Mi" then
      c.resources.limits.memory = "1Gi" -- the API server canonicalises quantities
    end
    local r = o.spec.replicas or 1
    o.status = { observedGeneration = 1, replicas = r, readyReplicas = ready and r or nil,
      currentRevision = md.name .. "-5d8f", updateRevision = md.name .. "-5d8f" }
  elseif o.kind == "Service" then
    o.spec.clusterIP = o.spec.clusterIP or "10.96.0.12"
    o.spec.sessionAffinity = "None"
    for _, p in ipairs(o.spec.ports) do
      p.protocol = "TCP"
      p.targetPort = p.targetPort or p.port -- the API server defaults it to the port only when absent
    end
    o.status = { loadBalancer = {} }
  elseif o.kind == "Job" then
    o.status = { active = 1 }
  end
  return o
end

-- Children {kind={name=obj}} from a list of objects, served.
local function children_of(objects, ready)
  local ch = {}
  for _, o in ipairs(objects) do
    ch[o.kind] = ch[o.kind] or {}
    ch[o.kind][o.metadata.name] = served(o, ready)
  end
  return ch
end

-- pick(list, f) -> {f(x)...} of the items for which f gives a value (not nil or false)
local function pick(list, f)
  local out = {}
  for _, x in ipairs(list) do
    local v = f(x)
    if v then out[#out + 1] = v end
  end
  return out
end

local function applied(result)
  return pick(result.actions, function(a) return a.op == "apply" and a.object end)
end

-- The health policy's polls (job_restarts, job_checkpoints: every pass of a running job) are
-- left out unless `with_health`; the "health" describe below asserts them.
local HEALTH_POLLS = { job_restarts = true, job_checkpoints = true }
local function ops(result, with_health)
  local out = {}
  for _, a in ipairs(result.actions) do
    if a.op == "flink" and not with_health and HEALTH_POLLS[(a.intent or {}).kind] then -- luacheck: ignore 542
      -- left out
    elseif a.op == "apply" then
      out[#out + 1] = "apply " .. a.object.kind .. " " .. a.object.metadata.name
    elseif a.op == "delete" then
      out[#out + 1] = "delete " .. a.kind .. " " .. a.name
    elseif a.op == "flink" then
      out[#out + 1] = "flink " .. a.method .. " " .. a.path
    elseif a.op == "dry_run" then
      out[#out + 1] = "dry_run " .. a.object.kind .. " " .. a.object.metadata.name
    else
      out[#out + 1] = a.op
    end
  end
  return out
end

local function condition(status, ctype)
  for _, c in ipairs(status.conditions or {}) do
    if c.type == ctype then return c end
  end
  return nil
end

local function with_status(cluster, status)
  local c = util.deepcopy(cluster)
  c.status = util.deepcopy(status)
  return c
end

-- A tiny world: runs a pass, then executes apply/delete on the children as the API server
-- would (StatefulSets become Ready at once) and keeps the status.
-- The API server's answers to the dry_run actions of `result` (all accepted: HTTP 200, or
-- `refuse[<Kind>/<name>]` = {status=, message=}), merged into `answers` (a snapshot's dry_runs).
local function answer_dry_runs(result, answers, refuse)
  local n = 0
  for _, a in ipairs(result.actions) do
    if a.op == "dry_run" then
      local key = a.object.kind .. "/" .. a.object.metadata.name
      local no = (refuse or {})[key]
      answers[key] = { hash = a.hash, status = no and no.status or 200, message = no and no.message or "" }
      n = n + 1
    end
  end
  return n
end

-- run(snap); when the pass asked for dry runs (an update's gate), the API server
-- accepts them and the pass runs again with the answers: returns that result (and the first).
local function run_answered(snap)
  local r1 = run(snap)
  snap.dry_runs = snap.dry_runs or {}
  if answer_dry_runs(r1, snap.dry_runs) == 0 then return r1, r1 end
  return run(snap), r1
end

local function world(cluster)
  local w = { cluster = cluster, children = {}, flink = { reachable = true, jobs = {}, operations = {} },
    now = T0, log = {}, dry_runs = {} }
  -- one pass at now + dt; an update's dry runs are answered (accepted) at once and the pass runs
  -- again with them (its ops are returned, the gate's pass is in w.gated)
  function w.pass(dt)
    w.now = w.now + (dt or 1)
    local snap = { cluster = w.cluster, children = w.children, flink = w.flink, now = w.now, dry_runs = w.dry_runs }
    local r = run(snap)
    w.gated = nil
    if answer_dry_runs(r, w.dry_runs) > 0 then
      w.gated = r
      r = run(snap)
    end
    for _, a in ipairs(r.actions) do
      if a.op == "apply" then
        local kind = a.object.kind
        w.children[kind] = w.children[kind] or {}
        w.children[kind][a.object.metadata.name] = served(a.object, true)
      elseif a.op == "delete" then
        w.children[a.kind][a.name] = nil
      end
    end
    if r.status then w.cluster.status = r.status end
    w.last = r
    return ops(r)
  end
  return w
end

local function submitted(w, id)
  local sub = w.children.Job["wordcount-job-submitter"]
  w.children.Pod = { ["submitter-pod"] = { metadata = { name = "submitter-pod",
    ownerReferences = { { kind = "Job", uid = sub.metadata.uid } } },
    status = { containerStatuses = { { state = { terminated = { message = "jobID: " .. id } } } } } } }
  w.flink.jobs = { { jid = id, state = "RUNNING", ["start-time"] = w.now * 1000 } }
end

-- world(wordcount()) brought up to a running job: created, Ready, submitted (job id ID).
local function running_world()
  local w = world(wordcount())
  w.pass()
  w.pass()
  submitted(w, ID)
  w.pass()
  return w
end

-- running_world() with cancelRequested set (a new generation).
local function cancelling_world()
  local w = running_world()
  w.cluster.spec.job.cancelRequested = true
  w.cluster.metadata.generation = 2
  return w
end

-- What Flink answered about the savepoint in the status (by its trigger id): accepted the trigger
-- (`fields` nil), or the poll's outcome (`fields` {status=, location=, failure=}).
local function answer(w, fields)
  local sp = w.cluster.status.savepoint
  local op = { job_id = sp.jobID, stop = sp.stop, time = w.now + 1, phase = fields and "status" or "accepted" }
  for k, v in pairs(fields or {}) do op[k] = v end
  w.flink.operations = w.flink.operations or {}
  w.flink.operations[sp.triggerID] = op
  return sp.triggerID
end

-- The stop-with-savepoint of a running job (ID) completes at `location`: nothing to cancel, Flink
-- then reports the job FINISHED (savepoint.lua, POST /jobs/<id>/stop).
local function stop_with_savepoint(w, location)
  answer(w, { status = "COMPLETED", location = location })
  assert.same({ "flink GET /jobs/overview" }, w.pass())
  assert.is_true(w.cluster.status.savepoint.stop)
  w.flink.jobs[1].state = "FINISHED"
end

teardown(function()
  for _, d in ipairs(made) do os.execute("rm -rf '" .. d .. "'") end
end)

describe("fc.revision", function()
  it("encodes canonically: sorted keys, integers, empty table as {}", function()
    assert.equal('{"a":[1,2,{"x":true}],"b":{},"c":"q\\"","d":2}',
      revision.canonical({ d = 2.0, c = 'q"', b = {}, a = { 1, 2, { x = true } } }))
  end)
  it("hashes with FNV-1a 32 (published test vectors)", function()
    assert.equal(0x811c9dc5, revision.fnv1a32(""))
    assert.equal(0xe40c292c, revision.fnv1a32("a"))
    assert.equal(0xbf9cf968, revision.fnv1a32("foobar"))
  end)
  it("ignores control fields and key order, not other changes", function()
    local a = { image = { name = "flink:1.9.2" }, taskManager = { replicas = 1 },
      job = { jarFile = "/j.jar", savepointGeneration = 1, cancelRequested = false, autoSavepointSeconds = 60 } }
    local b = { job = { autoSavepointSeconds = 300, savepointGeneration = 2, jarFile = "/j.jar",
      savepointRetention = { maxCount = 2 }, autoCheckpointSeconds = 30 }, taskManager = { replicas = 1 },
      image = { name = "flink:1.9.2" } }
    assert.equal(revision.hash(a), revision.hash(b))
    b.taskManager.replicas = 2
    assert.are_not.equal(revision.hash(a), revision.hash(b))
    assert.matches("^%x%x%x%x%x%x%x%x$", revision.hash(a))
  end)
  it("prunes the oldest revisions beyond the limit, never the kept ones", function()
    local revs = { ["c-a"] = { revision = 1 }, ["c-b"] = { revision = 2 }, ["c-c"] = { revision = 3 },
      ["c-d"] = { revision = 4 } }
    assert.same({ "c-b", "c-c" }, revision.prune(revs, 2, { ["c-a"] = true }))
    assert.same({}, revision.prune(revs, 10, {}))
    assert.equal(5, revision.next_number(revs))
  end)
  it("first: the lowest revision number (ties: the lower name), nil when none", function()
    assert.equal("c-b", revision.first({ ["c-c"] = { revision = 3 }, ["c-b"] = { revision = 2 },
      ["c-d"] = { revision = 4 } }))
    assert.equal("c-a", revision.first({ ["c-z"] = { revision = 1 }, ["c-a"] = { revision = 1 } }))
    assert.is_nil(revision.first({}))
    assert.is_nil(revision.first(nil))
  end)
end)

describe("fc.revision: adoption helpers", function()
  it("compares specs by meaning: zero values, quantity notation, key order and control fields aside", function()
    local a = { image = { name = "flink:1.20" }, taskManager = { replicas = 1,
      resources = { limits = { memory = "1024Mi", cpu = "0.5" } } }, job = { jarFile = "/j.jar", args = {},
      savepointGeneration = 3 }, jobManager = { podAnnotations = {}, accessScope = "" } }
    local b = { jobManager = {}, job = { jarFile = "/j.jar", savepointGeneration = 4, autoSavepointSeconds = 60 },
      taskManager = { resources = { limits = { cpu = "500m", memory = "1Gi" } }, replicas = 1 },
      image = { name = "flink:1.20" } }
    assert.equal(revision.comparable(a), revision.comparable(b))
    b.taskManager.resources.limits.memory = "2Gi"
    assert.are_not.equal(revision.comparable(a), revision.comparable(b))
    b.taskManager.resources.limits.memory = "1Gi"
    b.taskManager.replicas = 2
    assert.are_not.equal(revision.comparable(a), revision.comparable(b))
    -- a list keeps its positions: an emptied item is still an item
    assert.are_not.equal(revision.comparable({ job = { args = { "", "x" } } }),
      revision.comparable({ job = { args = { "x" } } }))
  end)
  it("leaves out what the original operator's revisions leave out, only for those", function()
    local a = { job = { jarFile = "/j.jar", restartPolicy = "Never", cleanupPolicy = { afterJobFails = "KeepCluster" },
      cancelRequested = false } }
    local b = { job = { jarFile = "/j.jar", restartPolicy = "FromSavepointOnFailure" } }
    assert.equal(revision.comparable(a, true), revision.comparable(b, true))
    assert.are_not.equal(revision.comparable(a), revision.comparable(b))
    -- what Go writes for unset fields: "" strings, {} structs, a zero Quantity
    assert.same({ jobManager = { ports = { ui = 8081 } }, job = { args = { {}, "x" } } },
      revision.without_unset({ jobManager = { accessScope = "", memoryOffHeapMin = "0", resources = {},
        ports = { ui = 8081 } }, job = { args = { "", "x" }, resources = { limits = {} } } }))
  end)
  it("reads the spec of our revisions and of the original operator's", function()
    local ours = { data = { image = { name = "flink:1.20" }, taskManager = { replicas = 1 } }, revision = 1 }
    local orig = { data = { spec = { image = { name = "flink:1.20" }, ["$patch"] = "replace" } }, revision = 3 }
    assert.is_false(revision.is_original(ours))
    assert.is_true(revision.is_original(orig))
    assert.same({ { image = { name = "flink:1.20" }, taskManager = { replicas = 1 } }, false },
      { revision.spec_of(ours) })
    assert.same({ { image = { name = "flink:1.20" } }, true }, { revision.spec_of(orig) })
    assert.is_nil(revision.spec_of({ data = "x" }))
  end)
  it("finds the ControllerRevision a status names: ours by name, the original's <name>-<number>", function()
    local revs = {
      ["wc-1a2b3c4d"] = { revision = 4 },
      ["wc-b7745cb6b"] = { revision = 3, metadata = { labels = { ["flinkoperator.k8s.io/hash"] = "b7745cb6b" } } },
      ["wc-renamed"] = { revision = 2, metadata = { labels = { ["controller.kubernetes.io/hash"] = "c5d9f" } } },
    }
    assert.equal("wc-1a2b3c4d", (revision.find(revs, "wc-1a2b3c4d")))
    assert.equal("wc-b7745cb6b", (revision.find(revs, "wc-b7745cb6b-3")))
    assert.is_nil(revision.find(revs, "wc-b7745cb6b-2")) -- another number: not that revision
    assert.equal("wc-renamed", (revision.find(revs, "wc-c5d9f-2"))) -- by its hash label
    assert.is_nil(revision.find(revs, "wc-gone-7"))
    assert.is_nil(revision.find(revs, nil))
  end)
end)

describe("fc.diff", function()
  local desired = {
    apiVersion = "apps/v1", kind = "StatefulSet",
    metadata = { name = "x", labels = { app = "flink" } },
    spec = { replicas = 1, template = { spec = { containers = { { name = "m", image = "flink:1.9.2",
      resources = { limits = { memory = "1024Mi", cpu = "0.2" } }, args = {} } } } } },
  }
  it("ignores server-filled defaults, server metadata, status and canonical quantities", function()
    local o = util.deepcopy(desired)
    o.metadata.uid, o.metadata.resourceVersion, o.metadata.managedFields = "u", "9", { {} }
    o.metadata.labels.extra = "by-someone-else"
    o.spec.podManagementPolicy = "OrderedReady"
    o.spec.template.spec.containers[1].terminationMessagePath = "/dev/termination-log"
    o.spec.template.spec.containers[1].resources.limits = { memory = "1Gi", cpu = "200m" }
    o.spec.template.spec.containers[1].args = nil -- an empty list we set is dropped by the server
    local d = util.deepcopy(desired)
    d.spec.template.spec.containers[1].stdin = false -- so is a zero value (omitempty)
    o.status = { replicas = 1 }
    assert.is_false(diff.differs(d, o))
  end)
  it("reports the first field we set that differs", function()
    local o = util.deepcopy(desired)
    o.spec.replicas = 2
    assert.equal("spec.replicas", diff.differs(desired, o))
    o = util.deepcopy(desired)
    o.spec.template.spec.containers[1].image = "flink:1.10"
    assert.equal("spec.template.spec.containers[0].image", diff.differs(desired, o))
    o = util.deepcopy(desired)
    o.spec.template.spec.containers[1].resources.limits.memory = "1G"
    assert.equal("spec.template.spec.containers[0].resources.limits.memory", diff.differs(desired, o))
    o = util.deepcopy(desired)
    o.spec.template.spec.containers[2] = { name = "sidecar" }
    assert.equal("spec.template.spec.containers", diff.differs(desired, o))
  end)
  it("finds changes Kubernetes refuses in place", function()
    local sts = { kind = "StatefulSet", spec = { replicas = 2, serviceName = "a", podManagementPolicy = "Parallel" } }
    local o = { kind = "StatefulSet", spec = { replicas = 1, serviceName = "a", podManagementPolicy = "Parallel" } }
    assert.is_false(diff.immutable_change(sts, o))
    o.spec.podManagementPolicy = "OrderedReady"
    assert.equal("spec.podManagementPolicy", diff.immutable_change(sts, o))
    local svc = { kind = "Service", spec = { clusterIP = "None" } }
    assert.equal("spec.clusterIP", diff.immutable_change(svc, { kind = "Service", spec = { clusterIP = "10.0.0.1" } }))
    assert.is_false(diff.immutable_change({ kind = "Service", spec = {} }, { spec = { clusterIP = "10.0.0.1" } }))
  end)

  it("says an absent object differs", function()
    assert.equal("", diff.differs(desired, nil))
  end)

  it("stamps the hash of the applied intent, stable across key order, and of the pod template", function()
    local a = diff.stamp(util.deepcopy(desired))
    local ann = a.metadata.annotations
    local bare = util.deepcopy(desired)
    assert.equal(string.format("%08x", revision.fnv1a32(revision.canonical(bare))), ann[diff.APPLIED_HASH])
    assert.equal(string.format("%08x", revision.fnv1a32(revision.canonical(bare.spec.template))),
      ann[diff.TEMPLATE_HASH])
    -- built in another order, or stamped twice: the same hashes
    local b = { spec = util.deepcopy(desired.spec), metadata = util.deepcopy(desired.metadata), kind = "StatefulSet",
      apiVersion = "apps/v1" }
    assert.same(ann, diff.stamp(diff.stamp(b)).metadata.annotations)
    -- an object without a template gets no template hash
    local cm = diff.stamp({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "c" }, data = { a = "1" } })
    assert.matches("^%x%x%x%x%x%x%x%x$", cm.metadata.annotations[diff.APPLIED_HASH])
    assert.is_nil(cm.metadata.annotations[diff.TEMPLATE_HASH])
  end)

  it("applies a changed intent (removals included) and drift in our fields, nothing else", function()
    local with_label = util.deepcopy(desired)
    with_label.spec.template.metadata = { annotations = { team = "a" } }
    local old = diff.stamp(util.deepcopy(with_label))
    local observed = util.deepcopy(old)
    observed.metadata.uid, observed.spec.podManagementPolicy = "u", "OrderedReady" -- server fields
    assert.is_false(diff.needs_apply(diff.stamp(util.deepcopy(with_label)), observed))
    -- the annotation removed from the intent: the live diff alone would see nothing
    local now = diff.stamp(util.deepcopy(desired))
    assert.is_false(diff.differs(now, util.merge(observed, { metadata = now.metadata })))
    assert.equal("intent", diff.needs_apply(now, observed))
    assert.is_true(diff.template_changed(now, observed))
    -- a scale changes the intent, not the template
    local scaled = util.deepcopy(with_label)
    scaled.spec.replicas = 3
    scaled = diff.stamp(scaled)
    assert.equal("intent", diff.needs_apply(scaled, observed))
    assert.is_false(diff.template_changed(scaled, observed))
    -- someone else changed a field we own: repaired; an object from before the hash: applied
    local drifted = util.deepcopy(observed)
    drifted.spec.template.spec.containers[1].image = "flink:evil"
    assert.equal("spec.template.spec.containers[0].image", diff.needs_apply(old, drifted))
    local unstamped = util.deepcopy(observed)
    unstamped.metadata.annotations = nil
    assert.equal("intent", diff.needs_apply(old, unstamped))
    assert.equal("absent", diff.needs_apply(old, nil))
  end)

  it("recreates a headless Service that should no longer be headless", function()
    local headless = { kind = "Service", spec = { clusterIP = "None", type = "ClusterIP" } }
    assert.equal("spec.clusterIP", diff.immutable_change({ kind = "Service", spec = { type = "ClusterIP" } }, headless))
    assert.is_false(diff.immutable_change({ kind = "Service", spec = { clusterIP = "None" } }, headless))
  end)
end)

describe("reconcile.run with policies-min", function()
  before_each(function()
    host.configure({ policy_dir = policy_dir() })
  end)

  -- The wordcount example brought up step by step; returns the results and snapshots.
  local function bring_up(c)
    c = c or wordcount()
    local r1 = run({ cluster = c, children = {}, flink = {}, now = T0 })
    local objs = applied(r1)
    local r2 = run({ cluster = with_status(c, r1.status), children = children_of(objs, true),
      flink = {}, now = T0 + 30 })
    for _, o in ipairs(applied(r2)) do objs[#objs + 1] = o end
    return c, r1, r2, objs
  end

  -- bring_up(c0), then the job as Flink runs it: the cluster, a copy of the last status with
  -- components.job id ID and state Running, and the objects applied so far.
  local function running_job(c0)
    local c, _, r2, objs = bring_up(c0)
    local st = util.deepcopy(r2.status)
    st.components.job.id = ID
    st.components.job.state = "Running"
    return c, st, objs
  end

  -- running_job(c0), then the spec edited to `replicas` TaskManagers at generation 2: the edited
  -- cluster (with the last status), the objects applied so far, Flink listing the job RUNNING, and
  -- the current revision.
  local function edited_running_job(c0, replicas)
    local c, st, objs = running_job(c0)
    local edited = with_status(c, st)
    edited.metadata.generation = 2
    edited.spec.taskManager.replicas = replicas
    local flink = { reachable = true, jobs = { { jid = ID, state = "RUNNING", ["start-time"] = T0 * 1000 } } }
    return edited, objs, flink, st.currentRevision
  end

  it("applies the wordcount objects in order when nothing exists: Creating", function()
    local c = wordcount()
    local r = run({ cluster = c, children = {}, flink = {}, now = T0 })
    local rev = r.status.nextRevision
    assert.matches("^wordcount%-%x%x%x%x%x%x%x%x$", rev)
    assert.same({
      "apply ConfigMap wordcount-configmap",
      "apply StatefulSet wordcount-jobmanager",
      "apply Service wordcount-jobmanager",
      "apply StatefulSet wordcount-taskmanager",
      "apply ControllerRevision " .. rev,
    }, ops(r))
    assert.equal("Creating", r.status.state)
    assert.equal(1, r.status.observedGeneration)
    assert.equal(rev, r.status.currentRevision)
    assert.equal(rev, r.status.nextRevision)
    assert.equal("Pending", r.status.components.job.state)
    assert.equal("NotReady", r.status.components.jobManagerStatefulSet.state)
    assert.same({ type = "Ready", status = "False", reason = "Creating",
      message = "not ready: jobManagerStatefulSet NotReady, jobManagerService NotReady, "
        .. "taskManagerStatefulSet NotReady",
      lastTransitionTime = "2025-11-30T06:40:00Z", observedGeneration = 1 }, condition(r.status, "Ready"))
    assert.equal("False", condition(r.status, "PolicyError").status)
    assert.equal("2025-11-30T06:40:00Z", r.status.lastUpdateTime)
    assert.same({
      -- no StateChanged for the first state Creating (the creation says it)
      { type = "Warning", reason = "SpecWarning", message = "spec.flinkProperties: unknown field" },
      { type = "Normal", reason = "JobStateChanged", message = "job state Pending" },
    }, r.events)
    assert.equal(10, r.requeue_after)
    local cr = applied(r)[5]
    assert.equal(1, cr.revision)
    assert.equal("/cache/flink-app.jar", cr.data.job.jarFile)
    assert.equal(c.metadata.uid, cr.metadata.ownerReferences[1].uid)
    assert.is_true(cr.metadata.ownerReferences[1].controller)
    assert.is_false(cr.metadata.ownerReferences[1].blockOwnerDeletion)
  end)

  it("goes Running when all are Ready and then submits the job", function()
    local _, _, r2 = bring_up()
    assert.same({ "apply Job wordcount-job-submitter", "flink GET /jobs/overview" }, ops(r2))
    assert.equal("Running", r2.status.state)
    -- a job cluster is Ready once its job runs (policies/status.lua): meanwhile the submission is
    -- work in progress (kstatus: InProgress); both kept their status, so their transition times
    assert.same({ "False", "JobPending", "2025-11-30T06:40:00Z" }, { condition(r2.status, "Ready").status,
      condition(r2.status, "Ready").reason, condition(r2.status, "Ready").lastTransitionTime })
    assert.same({ "True", "SubmittingJob", "2025-11-30T06:40:00Z" }, { condition(r2.status, "Reconciling").status,
      condition(r2.status, "Reconciling").reason, condition(r2.status, "Reconciling").lastTransitionTime })
    -- PolicyError stayed False: its transition time is kept from the first run
    assert.equal("2025-11-30T06:40:00Z", condition(r2.status, "PolicyError").lastTransitionTime)
    assert.same({ type = "Normal", reason = "StateChanged", message = "cluster state Creating -> Running" },
      r2.events[1])
  end)

  it("changes nothing and reports no status when all is as desired", function()
    local c, _, r2, objs = bring_up()
    local r3 = run({ cluster = with_status(c, r2.status), children = children_of(objs, true),
      flink = {}, now = T0 + 60 })
    assert.same({ "flink GET /jobs/overview" }, ops(r3))
    assert.is_nil(r3.status)
    assert.same({}, r3.events)
  end)

  it("re-applies only the JobManager Service when it was deleted", function()
    local c, _, r2, objs = bring_up()
    local ch = children_of(objs, true)
    ch.Service = nil
    local r = run({ cluster = with_status(c, r2.status), children = ch, flink = {}, now = T0 + 60 })
    assert.same({ "apply Service wordcount-jobmanager" }, ops(r))
    assert.equal("Reconciling", r.status.state)
    assert.equal("NotReady", r.status.components.jobManagerService.state)
    assert.same({ type = "Warning", reason = "StateChanged", message = "cluster state Running -> Reconciling" },
      r.events[1])
  end)

  it("re-applies only the TaskManager StatefulSet when replicas change (session cluster)", function()
    local c = wordcount()
    c.spec.job = nil
    local r1 = run({ cluster = c, children = {}, flink = {}, now = T0 })
    local objs = applied(r1)
    local r2 = run({ cluster = with_status(c, r1.status), children = children_of(objs, true), flink = {},
      now = T0 + 30 })
    assert.same({}, ops(r2))
    assert.equal("Running", r2.status.state)
    local c2 = with_status(c, r2.status)
    c2.metadata.generation = 2
    c2.spec.taskManager.replicas = 2
    local r3, gate = run_answered({ cluster = c2, children = children_of(objs, true), flink = {}, now = T0 + 60 })
    local rev2 = r3.status.nextRevision
    assert.are_not.equal(r2.status.currentRevision, rev2)
    -- first the API server's dry run of the changed object, then the update
    assert.same({ "dry_run StatefulSet wordcount-taskmanager" }, ops(gate))
    assert.same({ "apply StatefulSet wordcount-taskmanager", "apply ControllerRevision " .. rev2 }, ops(r3))
    assert.equal(2, applied(r3)[1].spec.replicas)
    assert.equal(2, applied(r3)[2].revision)
    assert.equal(rev2, r3.status.currentRevision)
    assert.equal(2, r3.status.observedGeneration)
    assert.equal(2, condition(r3.status, "Ready").observedGeneration)
  end)

  it("takes a savepoint before changing a running job cluster (update)", function()
    local c, st, objs = running_job()
    local ch = children_of(objs, true)
    local c2 = with_status(c, st)
    c2.metadata.generation = 2
    c2.spec.taskManager.replicas = 2
    local flink = { reachable = true, jobs = { { jid = ID, state = "RUNNING", ["start-time"] = T0 * 1000 } } }
    local r, gate = run_answered({ cluster = c2, children = ch, flink = flink, now = T0 + 90 })
    local rev2 = r.status.nextRevision
    assert.are_not.equal(st.currentRevision, rev2) -- (st: a copy of the status so far)
    -- the gate's pass polls the job and asks for the dry run; no savepoint yet
    assert.same({ "flink GET /jobs/overview", "dry_run StatefulSet wordcount-taskmanager" }, ops(gate))
    assert.equal(rev2, gate.status.nextRevision)
    assert.same({ "apply ControllerRevision " .. rev2, "flink POST /jobs/" .. ID .. "/stop",
      "flink GET /jobs/overview" }, ops(r))
    -- our trigger id, in the status and in the request, which goes out after the status write
    local tid = r.status.savepoint.triggerID
    assert.equal(string.format("%08x", T0 + 90) .. string.rep("0", 24), tid)
    assert.same({ op = "flink", id = tid, method = "POST", path = "/jobs/" .. ID .. "/stop",
      body = { drain = false, targetDirectory = "/cache/savepoints", triggerId = tid }, after_status = true,
      intent = { kind = "stop", id = tid, job_id = ID, target_directory = "/cache/savepoints" },
      target = JM }, r.actions[2])
    assert.same({ op = "flink", id = "list_jobs", method = "GET", path = "/jobs/overview",
      intent = { kind = "list_jobs" }, target = JM }, r.actions[3])
    assert.equal("Updating", r.status.state)
    assert.equal("update", r.status.savepoint.triggerReason)
    assert.are_not.equal(rev2, r.status.currentRevision)
    assert.equal(rev2, r.status.nextRevision)
  end)

  it("replaces the pods of a running job at once in upgradeMode last-state: no savepoint, same job", function()
    local c0 = wordcount()
    c0.spec.job.upgradeMode = "last-state"
    c0.spec.job.highAvailability = { storageDir = "file:///ha" }
    local c, st, objs = running_job(c0)
    local ch = children_of(objs, true)
    local c2 = with_status(c, st)
    c2.metadata.generation = 2
    c2.spec.image.name = "flink:1.20.6" -- a new pod template for both StatefulSets
    local flink = { reachable = true, jobs = { { jid = ID, state = "RUNNING", ["start-time"] = T0 * 1000 } } }
    local r = run_answered({ cluster = c2, children = ch, flink = flink, now = T0 + 90 })
    local rev2 = r.status.nextRevision
    assert.are_not.equal(st.currentRevision, rev2)
    -- no stop, no cancel: the StatefulSets go (recreateOnUpdate), the revision is current at once
    local got = ops(r)
    table.sort(got)
    assert.same({ "apply ControllerRevision " .. rev2,
      "delete StatefulSet wordcount-jobmanager", "delete StatefulSet wordcount-taskmanager",
      "flink GET /jobs/overview" }, got)
    assert.equal(rev2, r.status.currentRevision)
    assert.equal(ID, r.status.components.job.id)
    assert.equal("Running", r.status.components.job.state)
    assert.is_nil(r.status.savepoint and r.status.savepoint.triggerID)
    local reasons = {}
    for _, e in ipairs(r.events) do reasons[#reasons + 1] = e.reason end
    assert.truthy(table.concat(reasons, " "):find("LastStateUpgrade", 1, true))
    -- the next pass, the StatefulSets gone: created again with the new template, not held
    local left = util.deepcopy(ch)
    left.StatefulSet = {}
    local r2 = run({ cluster = with_status(c2, r.status), children = left, flink = flink, now = T0 + 95 })
    got = ops(r2)
    table.sort(got)
    assert.same({ "apply ControllerRevision " .. rev2, -- (not in these children)
      "apply StatefulSet wordcount-jobmanager", "apply StatefulSet wordcount-taskmanager",
      "flink GET /jobs/overview" }, got)
    for _, o in ipairs(applied(r2)) do
      if o.kind == "StatefulSet" then assert.equal("flink:1.20.6", o.spec.template.spec.containers[1].image) end
    end
    assert.equal(ID, r2.status.components.job.id)
  end)

  it("does not start an update the API server refuses in a dry run: no stop, the job runs, UpdateRefused", function()
    local c2, objs, flink = edited_running_job(nil, 2)
    local snap = { cluster = c2, children = children_of(objs, true), flink = flink, now = T0 + 90, dry_runs = {} }
    local gate = run(snap)
    assert.same({ "flink GET /jobs/overview", "dry_run StatefulSet wordcount-taskmanager" }, ops(gate))
    assert.equal(reconcile.DRY_RUN_REQUEUE, gate.requeue_after)
    -- while the dry runs are asked: work in progress, the new generation not yet acted on
    assert.same({ "True", "VerifyingUpdate" }, { condition(gate.status, "Reconciling").status,
      condition(gate.status, "Reconciling").reason })
    assert.equal(1, gate.status.observedGeneration)
    local server = "StatefulSet.apps \"wordcount-taskmanager\" is invalid: spec.template.spec.containers[0]"
      .. ".resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 200m"
    answer_dry_runs(gate, snap.dry_runs, { ["StatefulSet/wordcount-taskmanager"] = { status = 422, message = server } })
    snap.cluster = with_status(c2, gate.status)
    local r = run(snap)
    -- the job is only polled: no savepoint, no stop, no apply
    assert.same({ "flink GET /jobs/overview" }, ops(r))
    local cur = c2.status.currentRevision
    local msg = "update to revision " .. gate.status.nextRevision .. " refused by the API server: StatefulSet "
      .. "wordcount-taskmanager: HTTP 422: " .. server .. "; changes held: the last valid spec (revision "
      .. cur .. ") keeps running"
    local ready = condition(r.status, "Ready")
    assert.same({ "False", "UpdateRefused", msg }, { ready.status, ready.reason, ready.message })
    assert.same({ "True", "UpdateRefused", msg, "False" }, { condition(r.status, "Stalled").status,
      condition(r.status, "Stalled").reason, condition(r.status, "Stalled").message,
      condition(r.status, "Reconciling").status })
    assert.equal(2, r.status.observedGeneration)
    assert.same({ type = "Warning", reason = "UpdateRefused", message = msg }, r.events[1])
    assert.equal(cur, r.status.currentRevision)
    assert.equal("Running", r.status.components.job.state)
    -- nothing new: no second event, no dry run asked again
    snap.cluster = with_status(c2, r.status)
    local again = run(snap)
    assert.same({ "flink GET /jobs/overview" }, ops(again))
    assert.same({}, again.events)
    -- a new spec is verified again
    local c3 = with_status(c2, r.status)
    c3.metadata.generation = 3
    c3.spec.taskManager.replicas = 3
    snap.cluster = c3
    assert.same({ "flink GET /jobs/overview", "dry_run StatefulSet wordcount-taskmanager" }, ops(run(snap)))
  end)

  it("asks a dry run again after an answer that says nothing (HTTP 500), 10 s later", function()
    local c2, objs, flink = edited_running_job(nil, 2)
    local snap = { cluster = c2, children = children_of(objs, true), flink = flink, now = T0 + 90, dry_runs = {} }
    local gate = run(snap)
    answer_dry_runs(gate, snap.dry_runs, { ["StatefulSet/wordcount-taskmanager"] = { status = 500, message = "etcd" } })
    local r = run(snap)
    assert.same({ "flink GET /jobs/overview", "dry_run StatefulSet wordcount-taskmanager" }, ops(r))
    assert.equal(reconcile.DRY_RUN_RETRY, r.requeue_after)
    assert.are_not.equal("UpdateRefused", condition(r.status, "Ready").reason)
  end)

  it("holds an invalid spec: event and condition name the field, the last valid spec keeps polling the job", function()
    local bad, objs, flink, rev = edited_running_job(nil, 0)
    local r = run({ cluster = bad, children = children_of(objs, true), flink = flink, now = T0 + 60 })
    -- nothing applied or deleted: the children already are what the last valid spec renders
    assert.same({ "flink GET /jobs/overview" }, ops(r))
    local msg = "invalid spec: spec.taskManager.replicas: must be >= 1; "
      .. "changes held: the last valid spec (revision " .. rev .. ") keeps running"
    assert.same({ type = "Warning", reason = "InvalidSpec", message = msg }, r.events[1])
    local ready = condition(r.status, "Ready")
    assert.same({ "False", "InvalidSpec", msg, 2 },
      { ready.status, ready.reason, ready.message, ready.observedGeneration })
    assert.equal("Running", r.status.components.job.state)
    assert.equal(rev, r.status.currentRevision)
    assert.equal(rev, r.status.nextRevision)
    -- seen and refused (kstatus: Failed, not InProgress): Stalled says why, Reconciling is False
    assert.equal(2, r.status.observedGeneration)
    local stalled = condition(r.status, "Stalled")
    assert.same({ "True", "InvalidSpec", msg, 2 },
      { stalled.status, stalled.reason, stalled.message, stalled.observedGeneration })
    assert.same({ "False", "Stalled" }, { condition(r.status, "Reconciling").status,
      condition(r.status, "Reconciling").reason })
    assert.equal(10, r.requeue_after) -- the job poll goes on
    -- the same invalid spec again: no new event, no status change, still polling
    local again = run({ cluster = with_status(bad, r.status), children = children_of(objs, true),
      flink = flink, now = T0 + 90 })
    assert.same({}, again.events)
    assert.is_nil(again.status)
    assert.same({ "flink GET /jobs/overview" }, ops(again))
    -- the job fails meanwhile: the held pass still sees it and says so
    local failed = { reachable = true, jobs = { { jid = ID, state = "FAILED", ["start-time"] = T0 * 1000 } } }
    local r3 = run({ cluster = with_status(bad, r.status), children = children_of(objs, true),
      flink = failed, now = T0 + 120 })
    assert.equal("Failed", r3.status.components.job.state)
    assert.equal("InvalidSpec", condition(r3.status, "Ready").reason)
  end)

  it("takes a scheduled savepoint while an invalid spec is held", function()
    local c0 = wordcount()
    c0.spec.job.autoSavepointSeconds = 60
    c0.spec.job.savepointsDir = "/cache/savepoints"
    local bad, objs, flink = edited_running_job(c0, 0)
    local r = run({ cluster = bad, children = children_of(objs, true), flink = flink, now = T0 + 200 })
    assert.same({ "flink POST /jobs/" .. ID .. "/savepoints", "flink GET /jobs/overview" }, ops(r))
    assert.equal("scheduled initial", r.status.savepoint.triggerReason) -- the first scheduled one
    assert.equal("InvalidSpec", condition(r.status, "Ready").reason)
  end)

  it("holds a spec the policies fail on: PolicyError says so, the last valid spec keeps running", function()
    -- cluster.lua fails only for 5 TaskManagers (a policy bug a new spec runs into)
    local min = read(ROOT .. "/tests/testdata/policies-min/cluster.lua")
    local broken = min:gsub("function cluster%.desired%(input%)\n",
      "function cluster.desired(input)\n"
        .. "  if input.cluster.spec.taskManager.replicas == 5 then error('no five') end\n", 1)
    assert.are_not.equal(min, broken)
    host.configure({ policy_dir = policy_dir({ ["cluster.lua"] = broken }) })
    local five, objs, flink, rev = edited_running_job(nil, 5)
    local r = run({ cluster = five, children = children_of(objs, true), flink = flink, now = T0 + 60 })
    assert.same({ "flink GET /jobs/overview" }, ops(r))
    local pe = condition(r.status, "PolicyError")
    assert.equal("True", pe.status)
    assert.matches("cluster%.lua:%d+: no five; changes held: the last valid spec %(revision "
      .. rev:gsub("%-", "%%-") .. "%) keeps running$", pe.message)
    -- the typed failure (fc.contract) the core counts by its fields: the held pass's failure
    local failure = { kind = "error", policy = "cluster", hook = "cluster.desired",
      message = pe.message:match("^(.-); changes held") }
    assert.same({ type = "Warning", reason = "PolicyError", message = pe.message, failure = failure }, r.events[1])
    assert.same(failure, r.failure)
    assert.equal(2, r.status.observedGeneration)
    assert.same({ "True", "PolicyFailed", pe.message }, { condition(r.status, "Stalled").status,
      condition(r.status, "Stalled").reason, condition(r.status, "Stalled").message })
    assert.equal(rev, r.status.nextRevision)
    assert.equal(10, r.requeue_after)
    host.configure({ policy_dir = policy_dir() })
  end)

  it("leaves out an object of a kind fc.kinds does not declare, marks the cluster and applies the rest", function()
    local min = read(ROOT .. "/tests/testdata/policies-min/cluster.lua")
    local with_pdb, n = min:gsub("\n  return { objects = objects }\n",
      "\n  objects[#objects + 1] = { apiVersion = 'policy/v1', kind = 'PodDisruptionBudget',\n"
        .. "    metadata = { name = n .. '-pdb' }, spec = { maxUnavailable = 1 } }\n"
        .. "  return { objects = objects }\n", 1)
    assert.equal(1, n)
    host.configure({ policy_dir = policy_dir({ ["cluster.lua"] = with_pdb }) })
    local r = run({ cluster = wordcount(), children = {}, flink = {}, now = T0 })
    local rev = r.status.nextRevision
    assert.same({ "apply ConfigMap wordcount-configmap", "apply StatefulSet wordcount-jobmanager",
      "apply Service wordcount-jobmanager", "apply StatefulSet wordcount-taskmanager",
      "apply ControllerRevision " .. rev }, ops(r))
    local msg = "cluster.lua: desired: objects[5] (policy/v1 PodDisruptionBudget wordcount-pdb): kind not "
      .. "declared in lua/fc/kinds.lua (the controller may create networking.k8s.io/v1 Ingress, v1 Service, "
      .. "apps/v1 StatefulSet, v1 ConfigMap, v1 ServiceAccount, rbac.authorization.k8s.io/v1 Role, "
      .. "rbac.authorization.k8s.io/v1 RoleBinding, batch/v1 Job, apps/v1 ControllerRevision); left out"
    local pe = condition(r.status, "PolicyError")
    assert.same({ "True", "UndeclaredKind", msg }, { pe.status, pe.reason, pe.message })
    local pe_events = {}
    for _, e in ipairs(r.events) do
      if e.reason == "PolicyError" then pe_events[#pe_events + 1] = e end
    end
    assert.same({ { type = "Warning", reason = "PolicyError", message = msg } }, pe_events)
    assert.equal(10, r.requeue_after) -- the job poll, not the policy-error retry (60)
    -- the next pass: the same condition, no second event
    local r2 = run({ cluster = with_status(wordcount(), r.status), children = children_of(applied(r), true),
      flink = {}, now = T0 + 30 })
    for _, e in ipairs(r2.events) do assert.are_not.equal("PolicyError", e.reason) end
    assert.equal("UndeclaredKind", condition(r2.status, "PolicyError").reason)
    host.configure({ policy_dir = policy_dir() })
  end)

  it("fails only this cluster when a policy raises: PolicyError naming file and line", function()
    host.configure({ policy_dir = policy_dir({ ["status.lua"] =
      "local s = {}\nfunction s.components(input)\n" ..
      "  error(\"boom: \" .. input.cluster.metadata.name)\nend\nreturn s\n" }) })
    local c = with_status(wordcount(), { state = "Running" })
    local r = run({ cluster = c, children = {}, flink = {}, now = T0 })
    assert.same({}, r.actions)
    assert.equal(1, #r.events)
    assert.equal("Warning", r.events[1].type)
    assert.equal("PolicyError", r.events[1].reason)
    assert.matches("status%.lua:3: boom: wordcount", r.events[1].message)
    assert.same({ kind = "error", policy = "status", hook = "status.components", message = r.events[1].message },
      r.failure)
    local pe = condition(r.status, "PolicyError")
    assert.equal("True", pe.status)
    assert.equal(r.events[1].message, pe.message)
    assert.equal("Running", r.status.state)
    assert.equal(reconcile.POLICY_ERROR_REQUEUE, r.requeue_after)
    assert.same({ "True", "PolicyFailed", pe.message }, { condition(r.status, "Stalled").status,
      condition(r.status, "Stalled").reason, condition(r.status, "Stalled").message })
    assert.equal(1, r.status.observedGeneration)
    -- once the policy is fixed, the condition clears with an event, and Stalled with it
    host.configure({ policy_dir = policy_dir() })
    local ok = run({ cluster = with_status(c, r.status), children = {}, flink = {}, now = T0 + 60 })
    assert.equal("False", condition(ok.status, "PolicyError").status)
    assert.equal("False", condition(ok.status, "Stalled").status)
    local reasons = {}
    for _, e in ipairs(ok.events) do reasons[#reasons + 1] = e.reason end
    assert.is_truthy(table.concat(reasons, ","):find("PolicyErrorResolved", 1, true))
  end)

  it("treats a NaN in a policy's output as that cluster's policy error, named by its path", function()
    local min = read(ROOT .. "/tests/testdata/policies-min/cluster.lua")
    local nan, n = min:gsub("\n  return { objects = objects }\n",
      "\n  objects[2].spec.replicas = 0 / 0\n  return { objects = objects }\n", 1)
    assert.equal(1, n)
    host.configure({ policy_dir = policy_dir({ ["cluster.lua"] = nan }) })
    local r = run({ cluster = wordcount(), children = {}, flink = {}, now = T0 })
    assert.same({}, r.actions)
    assert.matches("^cluster%.lua:%d+: desired returned a bad result: objects%[2%]%.spec%.replicas: "
      .. "NaN is not a JSON number$", condition(r.status, "PolicyError").message)
    assert.same({ "badresult", "cluster.desired" }, { r.failure.kind, r.failure.hook })
    host.configure({ policy_dir = policy_dir() })
  end)

  it("types a policy that spends its time budget as a timeout (from the host, not the message)", function()
    host.configure({ policy_dir = policy_dir({ ["status.lua"] =
      "return { components = function() while true do end end }\n" }), timeout_ms = 50 })
    local r = run({ cluster = wordcount(), children = {}, flink = {}, now = T0 })
    host.configure({ policy_dir = policy_dir(), timeout_ms = 200 })
    assert.same({}, r.actions)
    assert.same({ "timeout", "status", "status.components" }, { r.failure.kind, r.failure.policy, r.failure.hook })
    assert.matches("^status%.lua:1: policy exceeded its time budget %(50 ms%)$", r.failure.message)
    assert.same(r.failure, r.events[1].failure)
  end)

  it("refuses a policy declaring another hook contract version (kind contract)", function()
    local min = read(ROOT .. "/tests/testdata/policies-min/cluster.lua")
    local other, n = min:gsub("\nreturn (%a+)%s*$", "\n%1.contract = \"hooks.flinkoperator.k8s.io/v0\"\nreturn %1\n")
    assert.equal(1, n)
    host.configure({ policy_dir = policy_dir({ ["cluster.lua"] = other }) })
    local r = run({ cluster = wordcount(), children = {}, flink = {}, now = T0 })
    host.configure({ policy_dir = policy_dir() })
    assert.same({}, r.actions)
    assert.equal("contract", r.failure.kind)
    assert.equal('cluster.lua: declares contract "hooks.flinkoperator.k8s.io/v0"; this controller implements '
      .. '"hooks.flinkoperator.k8s.io/v1"', r.events[1].message)
  end)

  it("treats an output of the wrong shape as a policy error", function()
    host.configure({ policy_dir = policy_dir({ ["cluster.lua"] =
      "return { desired = function() return { objects = { { kind = 'ConfigMap' } } } end }\n" }) })
    local r = run({ cluster = wordcount(), children = {}, flink = {}, now = T0 })
    assert.same({}, r.actions)
    -- the same check and words as render (fc.shape), list positions from 0
    assert.equal("cluster.lua: desired: objects[0] must have apiVersion, kind and metadata.name strings",
      r.events[1].message)
    host.configure({ policy_dir = policy_dir({ ["cluster.lua"] = "return { desired = function() return {} end }\n" }) })
    r = run({ cluster = wordcount(), children = {}, flink = {}, now = T0 })
    assert.same({}, r.actions) -- an absent list is not "delete every child"
    assert.equal("cluster.lua: desired: must return {objects={...}}", r.events[1].message)
    assert.same({ "badresult", "cluster" }, { r.failure.kind, r.failure.policy })
  end)

  it("prunes ControllerRevisions beyond revisionHistoryLimit, oldest first", function()
    local c0 = wordcount()
    c0.spec.revisionHistoryLimit = 2
    local c, _, r2, objs = bring_up(c0)
    local ch = children_of(objs, true)
    for i = 1, 3 do
      ch.ControllerRevision["wordcount-old0000" .. i] = { kind = "ControllerRevision",
        metadata = { name = "wordcount-old0000" .. i }, revision = i + 10 }
    end
    ch.ControllerRevision[r2.status.currentRevision].revision = 1
    local r = run({ cluster = with_status(c, r2.status), children = ch, flink = {}, now = T0 + 60 })
    assert.same({ "delete ControllerRevision wordcount-old00001", "delete ControllerRevision wordcount-old00002",
      "flink GET /jobs/overview" }, ops(r))
  end)

  it("recreates a StatefulSet whose immutable fields changed: delete now, apply next pass", function()
    local c, _, r2, objs = bring_up()
    local ch = children_of(objs, true)
    ch.StatefulSet["wordcount-taskmanager"].spec.podManagementPolicy = "OrderedReady"
    local r = run({ cluster = with_status(c, r2.status), children = ch, flink = {}, now = T0 + 60 })
    assert.same({ "delete StatefulSet wordcount-taskmanager", "flink GET /jobs/overview" }, ops(r))
    ch.StatefulSet["wordcount-taskmanager"] = nil
    r = run({ cluster = with_status(c, r.status), children = ch, flink = {}, now = T0 + 61 })
    assert.same({ "apply StatefulSet wordcount-taskmanager", "flink GET /jobs/overview" }, ops(r))
  end)

  it("does nothing for a FlinkCluster being deleted", function()
    local c, _, r2, objs = bring_up()
    local d = with_status(c, r2.status)
    d.metadata.deletionTimestamp = "2025-11-30T07:00:00Z"
    local r = run({ cluster = d, children = children_of(objs, true), flink = {}, now = T0 + 60 })
    assert.same({ actions = {}, events = {} }, r)
  end)

  it("treats a malformed Flink call or condition as a policy error, not a crash", function()
    local bad_job, n = read(ROOT .. "/policies/job.lua"):gsub("d%.control = control",
      "d.control = control; d.intents[#d.intents + 1] = { kind = 'GET' }")
    assert.equal(1, n)
    host.configure({ policy_dir = policy_dir({ ["job.lua"] = bad_job }) })
    local r = run({ cluster = wordcount(), children = {}, flink = {}, now = T0 })
    assert.same({}, r.actions)
    -- list positions from 0, as in every other path the policies and render report
    assert.equal("job.lua: decide: intents[0]: intent: unknown kind GET (one of list_jobs, job_exceptions, "
      .. "job_restarts, job_checkpoints, savepoint, stop, savepoint_status, checkpoint, checkpoint_status, "
      .. "dispose_savepoint, dispose_status, cancel, upload_jar, run_jar, delete_jar)",
      r.events[1].message)
    local bad_status = read(ROOT .. "/policies/status.lua"):gsub('type = "Ready", status = "False"',
      'type = "Ready", status = false')
    host.configure({ policy_dir = policy_dir({ ["status.lua"] = bad_status }) })
    r = run({ cluster = wordcount(), children = {}, flink = {}, now = T0 })
    assert.same({}, r.actions)
    assert.equal("status.lua: compute: conditions[0] needs a type and a status", r.events[1].message)
  end)

  it("deletes children that are no longer desired", function()
    local c, _, r2, objs = bring_up()
    local ch = children_of(objs, true)
    ch.Ingress = { ["wordcount-jobmanager"] = served({ kind = "Ingress", metadata = { name = "wordcount-jobmanager" },
      spec = {} }) }
    local r = run({ cluster = with_status(c, r2.status), children = ch, flink = {}, now = T0 + 60 })
    assert.same({ "delete Ingress wordcount-jobmanager", "flink GET /jobs/overview" }, ops(r))
  end)

  it("reads the job id from the submitter and the state from Flink", function()
    local c, _, r2, objs = bring_up()
    local ch = children_of(objs, true)
    local sub = ch.Job["wordcount-job-submitter"]
    ch.Pod = { ["wordcount-job-submitter-abcde"] = { metadata = { name = "wordcount-job-submitter-abcde",
      ownerReferences = { { kind = "Job", name = "wordcount-job-submitter", uid = sub.metadata.uid } } },
      status = { containerStatuses = { { name = "main",
        state = { terminated = { exitCode = 0, message = "jobID: " .. ID } } } } } } }
    local flink = { reachable = true, jobs = { { jid = ID, state = "RUNNING", ["start-time"] = (T0 + 40) * 1000 } } }
    local r = run({ cluster = with_status(c, r2.status), children = ch, flink = flink, now = T0 + 60 })
    assert.equal(ID, r.status.components.job.id)
    assert.equal("Running", r.status.components.job.state)
    assert.equal("True", condition(r.status, "JobRunning").status)
    assert.same({ type = "Normal", reason = "JobStateChanged",
      message = "job state Pending -> Running (job " .. ID .. ")" },
      r.events[1])
    assert.same({ "flink GET /jobs/overview" }, ops(r))
  end)

  it("cleans up after the job succeeded: Stopping, then Stopped; the submitter stays", function()
    local c, st, objs = running_job()
    local flink = { reachable = true, jobs = { { jid = ID, state = "FINISHED" } } }
    local r = run({ cluster = with_status(c, st), children = children_of(objs, true), flink = flink,
      now = T0 + 120 })
    assert.same({ "delete Service wordcount-jobmanager", "delete StatefulSet wordcount-jobmanager",
      "delete StatefulSet wordcount-taskmanager", "delete ConfigMap wordcount-configmap" }, ops(r))
    assert.equal("Stopping", r.status.state)
    assert.equal("Succeeded", r.status.components.job.state)
    local left = children_of(objs, true)
    left.Service, left.StatefulSet, left.ConfigMap = nil, nil, nil
    local r5 = run({ cluster = with_status(c, r.status), children = left, flink = { reachable = false },
      now = T0 + 150 })
    assert.same({}, ops(r5))
    assert.equal("Stopped", r5.status.state)
    assert.equal("Deleted", r5.status.components.taskManagerStatefulSet.state)
    assert.equal("Succeeded", r5.status.components.job.state)
    assert.is_nil(r5.requeue_after)
  end)

  it("triggers a checkpoint every autoCheckpointSeconds through Flink's REST API, its id written first", function()
    local c0 = wordcount()
    c0.spec.job.autoCheckpointSeconds = 30
    local c, st, objs = running_job(c0)
    local ch = children_of(objs, true)
    local flink = { reachable = true, jobs = { { jid = ID, state = "RUNNING", ["start-time"] = T0 * 1000 } },
      checkpoints = {} }
    local early = run({ cluster = with_status(c, st), children = ch, flink = flink, now = T0 + 29 })
    assert.same({ "flink GET /jobs/overview" }, ops(early))
    local r = run({ cluster = with_status(c, st), children = ch, flink = flink, now = T0 + 30 })
    assert.same({ "flink POST /jobs/" .. ID .. "/checkpoints", "flink GET /jobs/overview" }, ops(r))
    local ct = r.status.components.job.checkpointTrigger
    assert.same({ jobID = ID, triggerTime = "2025-11-30T06:40:30Z", state = "InProgress", checkpointType = "CONFIGURED",
      triggerID = ct.triggerID }, ct)
    assert.matches("^" .. string.format("%08x", T0 + 30) .. string.rep("0", 24) .. "$", ct.triggerID)
    local post = r.actions[1]
    assert.same({ { triggerId = ct.triggerID, checkpointType = "CONFIGURED" }, true, "checkpoint/" .. ct.triggerID },
      { post.body, post.after_status, post.id })
    -- accepted: polled by our id; then completed with Flink's checkpoint id
    flink.checkpoints[ct.triggerID] = { phase = "accepted", job_id = ID, time = T0 + 31 }
    local r2 = run({ cluster = with_status(c, r.status), children = ch, flink = flink, now = T0 + 35 })
    assert.same({ "flink GET /jobs/" .. ID .. "/checkpoints/" .. ct.triggerID, "flink GET /jobs/overview" }, ops(r2))
    flink.checkpoints[ct.triggerID] = { phase = "status", job_id = ID, status = "COMPLETED", checkpoint_id = 7,
      time = T0 + 36 }
    local r3 = run({ cluster = with_status(c, r.status), children = ch, flink = flink, now = T0 + 36 })
    local done = r3.status.components.job.checkpointTrigger
    assert.same({ "Succeeded", 7, "2025-11-30T06:40:36Z" }, { done.state, done.checkpointID, done.completionTime })
    assert.same({ done }, r3.status.components.job.checkpointHistory)
    -- Flink's checkpoints asked for at once (latestCheckpoint; the health polls ask for them only with
    -- execution.checkpointing.interval), no Event, no second trigger before T0 + 60
    assert.same({ "flink GET /jobs/" .. ID .. "/checkpoints", "flink GET /jobs/overview",
      "flink GET /jobs/" .. ID .. "/metrics?get=numRestarts" }, ops(r3, true))
    assert.same({}, r3.events)
    assert.equal(1, r3.requeue_after)
    local r4 = run({ cluster = with_status(c, r3.status), children = ch, flink = flink, now = T0 + 60 })
    assert.same({ "flink POST /jobs/" .. ID .. "/checkpoints", "flink GET /jobs/overview" }, ops(r4))
  end)

  it("runs the savepoint user control once while its annotation stays set (Git), again once re-set", function()
    local c, st, objs = running_job()
    local ch = children_of(objs, true)
    local cc = with_status(c, st)
    cc.metadata.annotations = { [CONTROL_ANNOTATION] = "savepoint" }
    local flink = { reachable = true, jobs = { { jid = ID, state = "RUNNING" } }, operations = {} }
    local r = run({ cluster = cc, children = ch, flink = flink, now = T0 + 100 })
    assert.same({ "flink POST /jobs/" .. ID .. "/savepoints", "flink GET /jobs/overview" }, ops(r))
    assert.equal("Progressing", r.status.control.state)
    assert.is_true(r.status.control.acknowledged)
    assert.same({ type = "Normal", reason = "UserControl", message = "savepoint Progressing" }, r.events[#r.events])
    -- Flink accepted the trigger (under our id), then the operation completed
    local tid = r.status.savepoint.triggerID
    local progressing = r.status
    flink.operations[tid] = { phase = "accepted", job_id = ID, time = T0 + 101 }
    r = run({ cluster = with_status(cc, progressing), children = ch, flink = flink, now = T0 + 102 })
    assert.same({ "flink GET /jobs/" .. ID .. "/savepoints/" .. tid,
      "flink GET /jobs/overview" }, ops(r))
    assert.is_nil(r.status) -- the id was in the status already: nothing to write
    flink.operations[tid] = { phase = "status", job_id = ID, status = "COMPLETED",
      location = "/cache/savepoints/savepoint-8c2d6f-0123456789ab", time = T0 + 107 }
    r = run({ cluster = with_status(cc, progressing), children = ch, flink = flink, now = T0 + 107 })
    assert.equal("Succeeded", r.status.savepoint.state)
    assert.equal("/cache/savepoints/savepoint-8c2d6f-0123456789ab", r.status.components.job.savepointLocation)
    assert.equal("Succeeded", r.status.control.state)
    assert.is_true(r.status.control.acknowledged)
    assert.same({ "flink GET /jobs/overview" }, ops(r)) -- the annotation is kept: no patch
    -- the annotation still set, an hour later (Git syncs it again and again): nothing new
    local done = r.status
    r = run({ cluster = with_status(cc, done), children = ch, flink = flink, now = T0 + 3700 })
    assert.same({ "flink GET /jobs/overview" }, ops(r))
    assert.is_nil(r.status)
    -- removed (from Git, or kubectl annotate NAME KEY-): the acknowledgement is cleared, quietly
    local gone = with_status(c, done)
    r = run({ cluster = gone, children = ch, flink = flink, now = T0 + 3710 })
    assert.same({ "flink GET /jobs/overview" }, ops(r))
    assert.is_nil(r.status.control.acknowledged)
    assert.equal("Succeeded", r.status.control.state)
    for _, e in ipairs(r.events) do assert.not_equal("UserControl", e.reason) end
    -- set again: a new savepoint
    local cleared = r.status
    r = run({ cluster = with_status(cc, cleared), children = ch, flink = flink, now = T0 + 3720 })
    assert.same({ "flink POST /jobs/" .. ID .. "/savepoints", "flink GET /jobs/overview" }, ops(r))
    assert.equal("Progressing", r.status.control.state)
  end)

  it("restarts a failed job from its savepoint with FromSavepointOnFailure, after the first delay", function()
    local c0 = wordcount()
    c0.spec.job.restartPolicy = "FromSavepointOnFailure"
    local c, st, objs = running_job(c0)
    st.components.job.savepointLocation = "/cache/savepoints/savepoint-1"
    local flink = { reachable = true, jobs = { { jid = ID, state = "FAILED" } } }
    local stale = children_of(objs, true)
    -- the failure is shown first (Failed, why, when the restart comes), nothing is deleted
    local r0 = run({ cluster = with_status(c, st), children = stale, flink = flink, now = T0 + 110 })
    assert.same({ "flink GET /jobs/" .. ID .. "/exceptions?maxExceptions=1" }, ops(r0))
    assert.same({ kind = "job_exceptions", job_id = ID }, r0.actions[1].intent)
    assert.equal("Failed", r0.status.components.job.state)
    assert.equal("Flink reports job " .. ID .. " FAILED", r0.status.components.job.failureReason)
    assert.equal(os.date("!%Y-%m-%dT%H:%M:%SZ", T0 + 120), r0.status.components.job.nextRestartTime)
    assert.equal(10, r0.requeue_after)
    flink.exceptions = { [ID] = { name = "org.apache.flink.runtime.JobException", time = T0 + 111,
      stacktrace = "org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy\n"
        .. "\tat org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handleFailure(...)\n"
        .. "Caused by: java.lang.IllegalArgumentException: timeout value is negative\n\tat java.lang.Thread.sleep" } }
    local r = run({ cluster = with_status(c, r0.status), children = stale, flink = flink, now = T0 + 120 })
    assert.same({ "delete Job wordcount-job-submitter", "flink GET /jobs/overview" }, ops(r))
    assert.same({ type = "Warning", reason = "JobRestarted", message = "restart 1 of 3: job " .. ID .. " Failed (Flink "
      .. "reports job " .. ID .. " FAILED: Caused by: java.lang.IllegalArgumentException: timeout value is negative), "
      .. "resubmitted from /cache/savepoints/savepoint-1" }, r.events[1])
    assert.equal(1, r.status.components.job.restartCount)
    assert.equal("Pending", r.status.components.job.state)
    -- a cache that still shows the deleted submitter and its pod: no second restart, delete again
    local old_uid = stale.Job["wordcount-job-submitter"].metadata.uid
    stale.Pod = { p = { metadata = { name = "p", ownerReferences = { { kind = "Job", uid = old_uid } } },
      status = { containerStatuses = { { state = { terminated = { message = "jobID: " .. ID } } } } } } }
    local rs = run({ cluster = with_status(c, r.status), children = stale, flink = flink, now = T0 + 125 })
    assert.same({ "delete Job wordcount-job-submitter", "flink GET /jobs/overview" }, ops(rs))
    assert.is_nil(rs.status)
    -- next pass, the old submitter is gone: a new one restores from the savepoint
    local ch = children_of(objs, true)
    ch.Job = nil
    local r6 = run({ cluster = with_status(c, r.status), children = ch, flink = flink, now = T0 + 130 })
    local job = applied(r6)[#applied(r6)]
    assert.equal("Job", job.kind)
    assert.same({ "--class", "org.apache.flink.streaming.examples.wordcount.WordCount", "--fromSavepoint",
      "/cache/savepoints/savepoint-1" }, job.spec.template.spec.containers[1].args)
  end)
end)

describe("reconcile.run over several passes (policies-min)", function()
  before_each(function()
    host.configure({ policy_dir = policy_dir() })
  end)

  -- Health (policies/health.lua through fc.health): Flink's restart counter is asked for on each
  -- pass of a running job; more than RESTART_THRESHOLD (5) restarts within RESTART_WINDOW (5m)
  -- cancel the job, which is Failed with a JobUnhealthy Event once and stays Failed while Flink
  -- cancels it. The same passes with a job restarting less leave it alone.
  it("health: a job restarting in a loop is cancelled, Failed (JobUnhealthy once); a healthy one untouched", function()
    local function reasons(r)
      return pick(r.events, function(e) return e.reason end)
    end
    local function play(counts)
      local w = running_world()
      local started = w.now
      for _, n in ipairs(counts) do
        w.flink.health = { [ID] = { restarts = n } }
        w.flink.jobs[1].state = n > 0 and "RESTARTING" or "RUNNING"
        w.pass(30)
      end
      return w, started
    end
    local healthy = play({ 0, 2, 4 })
    assert.equal("Running", healthy.cluster.status.components.job.state)
    assert.same({}, reasons(healthy.last))
    assert.same({ "flink GET /jobs/overview", "flink GET /jobs/" .. ID .. "/metrics?get=numRestarts" },
      ops(healthy.last, true))
    assert.same({ jobID = ID, restarts = { { count = 0, time = T0 + 33 }, { count = 2, time = T0 + 63 },
      { count = 4, time = T0 + 93 } } }, healthy.cluster.status.components.job.health)

    local w = play({ 0, 3 })
    assert.equal("Running", w.cluster.status.components.job.state)
    w.flink.health = { [ID] = { restarts = 7 } }
    w.pass(30)
    local reason = "job " .. ID .. " restarted 7 times within 5m (more than 5)"
    local j = w.cluster.status.components.job
    assert.same({ "Failed", reason, reason }, { j.state, j.failureReason, j.health.failed.reason })
    assert.same({ "flink PATCH /jobs/" .. ID .. "?mode=cancel", "flink GET /jobs/overview" }, ops(w.last))
    local unhealthy = pick(w.last.events, function(e) return e.reason == "JobUnhealthy" and e end)
    assert.same({ { type = "Warning", reason = "JobUnhealthy", message = reason .. ": cancelled, job Failed" } },
      unhealthy)
    -- Flink cancels it: still Failed, nothing sent again but the job list, no second Event
    w.flink.jobs[1].state = "CANCELLING"
    assert.same({ "flink GET /jobs/overview" }, w.pass(10))
    w.flink.jobs[1].state = "CANCELED"
    assert.same({}, w.pass(10))
    assert.same({ "Failed", reason }, { w.cluster.status.components.job.state,
      w.cluster.status.components.job.failureReason })
    assert.same({}, pick(w.last.events, function(e) return e.reason == "JobUnhealthy" and e end))
  end)

  -- Rollback (policies/rollback.lua, spec.job.rollback): a revision whose job ran 20 s without
  -- restarts is the last stable one; an update whose job then fails is rolled back when
  -- readinessTimeoutSeconds (60) have passed since its submission: its spec's children, its job
  -- restored from the savepoint the update took, status and one Warning saying so; the user's spec
  -- stays, is not tried again, and its next change is an update from the stable revision.
  it("rollback: an upgrade never healthy returns to the last stable revision and the upgrade's savepoint", function()
    local w = world(wordcount())
    w.cluster.spec.job.rollback = { enabled = true, readinessTimeoutSeconds = 60 }
    -- one revision kept besides the current and next ones: the last stable one (else pruned)
    w.cluster.spec.revisionHistoryLimit = 1
    w.pass()
    w.pass()
    submitted(w, ID)
    w.pass()
    local rev1 = w.cluster.status.currentRevision
    assert.is_nil(w.cluster.status.lastStableRevision) -- the restart count not known yet
    w.flink.health = { [ID] = { restarts = 0 } }
    w.pass(30)
    assert.equal(rev1, w.cluster.status.lastStableRevision)

    -- the update: stop with a savepoint, then the new spec's job from it
    w.cluster.spec.job.args = { "--broken" }
    w.cluster.metadata.generation = 2
    w.pass()
    local rev2 = w.cluster.status.nextRevision
    answer(w)
    w.pass()
    w.flink.jobs[1].state = "FINISHED"
    w.pass()
    answer(w, { status = "COMPLETED", location = "/cache/savepoints/sp-update" })
    w.pass()
    w.children.Pod = nil
    assert.same({ "apply Job wordcount-job-submitter", "flink GET /jobs/overview" }, w.pass())
    assert.equal(rev2, w.cluster.status.currentRevision)
    local submitted_at = w.now
    local BROKEN = "0000000000000000000000000000dead"
    submitted(w, BROKEN)
    w.flink.health = nil
    w.pass()
    w.flink.jobs[1].state = "FAILED"
    -- failed, but the deadline is 60 s after the submission: no rollback before
    for _ = 1, 5 do w.pass(10) end
    assert.equal("Failed", w.cluster.status.components.job.state)
    assert.is_nil(w.cluster.status.rollback)
    assert.equal(rev1, w.cluster.status.lastStableRevision)
    assert.is_not_nil(w.children.ControllerRevision[rev1])
    w.pass(submitted_at + 60 - w.now)
    local reason = "revision " .. rev2 .. " not healthy within 60 s of its submission: job Failed (Flink reports job "
      .. BROKEN .. " FAILED)"
    assert.same({ from = rev2, to = rev1, generation = 2, reason = reason, savepoint = "/cache/savepoints/sp-update",
      time = os.date("!%Y-%m-%dT%H:%M:%SZ", w.now) }, w.cluster.status.rollback)
    assert.same({ { type = "Warning", reason = "UpgradeRolledBack", message = reason .. ": rolling back to revision "
      .. rev1 .. " from savepoint /cache/savepoints/sp-update" } },
      pick(w.last.events, function(e) return e.reason == "UpgradeRolledBack" and e end))
    assert.equal(1, w.last.requeue_after)

    -- the rollback: the broken submitter goes, the stable spec's job is submitted from the savepoint
    assert.same({ "delete Job wordcount-job-submitter", "flink GET /jobs/" .. BROKEN .. "/exceptions?maxExceptions=1",
      "flink GET /jobs/overview" }, w.pass())
    w.children.Pod = nil
    assert.same({ "apply Job wordcount-job-submitter", "flink GET /jobs/overview" }, w.pass())
    local args = w.children.Job["wordcount-job-submitter"].spec.template.spec.containers[1].args
    assert.same({ "--class", "org.apache.flink.streaming.examples.wordcount.WordCount", "--fromSavepoint",
      "/cache/savepoints/sp-update" }, { args[1], args[2], args[3], args[4] })
    for _, a in ipairs(args) do assert.are_not.equal("--broken", a) end
    local st = w.cluster.status
    assert.same({ rev1, rev1, 2 }, { st.currentRevision, st.nextRevision, st.observedGeneration })
    local rb = condition(st, "RolledBack")
    assert.same({ "True", "UpgradeRolledBack" }, { rb.status, rb.reason })
    assert.equal("upgrade to revision " .. rev2 .. " rolled back to revision " .. rev1 .. ": " .. reason
      .. "; the spec is tried again when it changes", rb.message)
    assert.same({ "True", "UpgradeRolledBack" }, { condition(st, "Stalled").status, condition(st, "Stalled").reason })
    assert.same({ "--broken" }, w.cluster.spec.job.args) -- the user's spec as written
    local BACK = "000000000000000000000000000000ba"
    submitted(w, BACK)
    w.pass()
    assert.same({ "Running", BACK }, { w.cluster.status.components.job.state, w.cluster.status.components.job.id })
    -- not tried again: the passes that follow keep the stable revision, no second Warning
    for _ = 1, 3 do
      assert.same({ "flink GET /jobs/overview" }, w.pass(30))
      assert.same({}, pick(w.last.events, function(e) return e.reason == "UpgradeRolledBack" and e end))
    end
    assert.equal(rev1, w.cluster.status.currentRevision)

    -- the user changes the spec: a new generation, an update from the stable revision (stop with
    -- savepoint of the running job), the rollback over
    w.cluster.spec.job.args = { "--fixed" }
    w.cluster.metadata.generation = 3
    local o = w.pass()
    local rev3 = w.cluster.status.nextRevision
    assert.is_true(rev3 ~= rev1 and rev3 ~= rev2)
    assert.same({ "apply ControllerRevision " .. rev3, "flink POST /jobs/" .. BACK .. "/stop",
      "flink GET /jobs/overview" }, o)
    assert.is_nil(w.cluster.status.rollback)
    assert.is_nil(condition(w.cluster.status, "RolledBack"))
    assert.same({ rev1, "Updating" }, { w.cluster.status.currentRevision, w.cluster.status.state })
  end)

  -- The restart schedule of policies/restart.lua (settings.lua RESTART_*: 10 s, x2, at most 3), pass by
  -- pass: a job that fails at once is shown Failed, restarted 10, 20 and 40 s after each failure
  -- with a JobRestarted Event naming the attempt, then stays Failed and afterJobFails applies.
  it("FromSavepointOnFailure: restarts 10, 20, 40 s after each failure, then stays Failed (cleanup)", function()
    local c = wordcount()
    c.spec.job.restartPolicy = "FromSavepointOnFailure"
    c.spec.job.cleanupPolicy = { afterJobFails = "DeleteCluster" }
    local w = world(c)
    w.pass()
    w.pass()
    submitted(w, ID)
    w.pass()
    assert.equal("Running", w.cluster.status.components.job.state)
    w.cluster.status.components.job.savepointLocation = "/cache/savepoints/sp-1"
    local function events(reason)
      local out = {}
      for _, e in ipairs(w.last.events) do
        if e.reason == reason then out[#out + 1] = e.type .. " " .. e.message end
      end
      return out
    end
    local id = ID
    for attempt, delay in ipairs({ 10, 20, 40 }) do
      w.flink.jobs = { { jid = id, state = "FAILED" } }
      assert.same({ "flink GET /jobs/" .. id .. "/exceptions?maxExceptions=1" }, w.pass())
      local j = w.cluster.status.components.job
      assert.equal("Failed", j.state)
      assert.equal(delay, w.last.requeue_after)
      assert.same({ "Warning job state Running -> Failed (job " .. id .. "): Flink reports job " .. id .. " FAILED" },
        events("JobStateChanged"))
      w.flink.exceptions = { [id] = { error = "HTTP 404: Job not found", time = w.now } } -- no cause: asked once
      assert.same({}, w.pass(delay - 1)) -- 1 s before the restart is due
      assert.equal("Failed", w.cluster.status.components.job.state)
      assert.same({ "delete Job wordcount-job-submitter", "flink GET /jobs/overview" }, w.pass(1))
      assert.same({ "Warning restart " .. attempt .. " of 3: job " .. id .. " Failed (Flink reports job " .. id
        .. " FAILED), resubmitted from /cache/savepoints/sp-1" }, events("JobRestarted"))
      j = w.cluster.status.components.job
      assert.same({ "Pending", attempt, attempt }, { j.state, j.restartCount, j.restartAttempt })
      assert.is_nil(j.id)
      assert.is_nil(j.nextRestartTime)
      local o = w.pass()
      assert.equal("apply Job wordcount-job-submitter", o[1])
      id = string.format("%032x", attempt)
      submitted(w, id)
      w.pass()
      assert.equal("Running", w.cluster.status.components.job.state)
    end
    -- the fourth failure: no restart, Failed for good, the cleanup of afterJobFails
    w.flink.jobs = { { jid = id, state = "FAILED" } }
    w.flink.exceptions = { [id] = { name = "java.lang.IllegalArgumentException", time = w.now } }
    assert.same({ "delete Service wordcount-jobmanager", "delete StatefulSet wordcount-jobmanager",
      "delete StatefulSet wordcount-taskmanager", "delete ConfigMap wordcount-configmap" }, w.pass())
    assert.same({ "Warning job " .. id .. " Failed after 3 restarts: not restarted again "
      .. "(cleanupPolicy.afterJobFails applies)" }, events("RestartLimitReached"))
    assert.equal("Failed", w.cluster.status.components.job.state)
    assert.equal(3, w.cluster.status.components.job.restartCount)
    assert.same({}, w.pass(600))
    assert.equal("Failed", w.cluster.status.components.job.state)
  end)

  it("cancelRequested: stop with savepoint, Flink FINISHED counts as Cancelled, then cleanup", function()
    local w = running_world()
    assert.equal("Running", w.cluster.status.components.job.state)
    w.cluster.spec.job.cancelRequested = true
    w.cluster.metadata.generation = 2
    assert.same({ "flink POST /jobs/" .. ID .. "/stop", "flink GET /jobs/overview" }, w.pass())
    assert.equal("job cancel", w.cluster.status.savepoint.triggerReason)
    local tid = answer(w)
    assert.same({ "flink GET /jobs/" .. ID .. "/savepoints/" .. tid, "flink GET /jobs/overview" }, w.pass())
    stop_with_savepoint(w, "/cache/savepoints/sp-cancel")
    assert.same({ "delete Service wordcount-jobmanager", "delete StatefulSet wordcount-jobmanager",
      "delete StatefulSet wordcount-taskmanager", "delete ConfigMap wordcount-configmap" }, w.pass())
    assert.equal("Cancelled", w.cluster.status.components.job.state)
    assert.equal("Stopping", w.cluster.status.state)
    w.flink = { reachable = false }
    assert.same({}, w.pass())
    assert.equal("Stopped", w.cluster.status.state)
    assert.equal("/cache/savepoints/sp-cancel", w.cluster.status.components.job.savepointLocation)
    -- ours: resume the cancelled job from a savepoint the user names, with cancelRequested false
    w.cluster.spec.job.cancelRequested = false
    w.cluster.spec.job.fromSavepoint = "/cache/savepoints/sp-user"
    w.cluster.metadata.generation = 3
    local o = w.pass()
    assert.same({ "apply ConfigMap wordcount-configmap", "apply StatefulSet wordcount-jobmanager",
      "apply Service wordcount-jobmanager", "apply StatefulSet wordcount-taskmanager",
      "apply ControllerRevision " .. w.cluster.status.nextRevision, "delete Job wordcount-job-submitter" }, o)
    w.children.Pod = nil
    w.flink = { reachable = true, jobs = { { jid = ID, state = "CANCELED" } } }
    assert.same({ "apply Job wordcount-job-submitter", "flink GET /jobs/overview" }, w.pass())
    local args = w.children.Job["wordcount-job-submitter"].spec.template.spec.containers[1].args
    assert.same({ "--fromSavepoint", "/cache/savepoints/sp-user" }, { args[3], args[4] })
    assert.equal(w.cluster.status.nextRevision, w.cluster.status.currentRevision)
    assert.equal("Pending", w.cluster.status.components.job.state)
  end)

  -- Idempotent triggers: the trigger id is in the status before the request; a controller that
  -- restarts (or a new leader) with the savepoint in flight looks it up by that id.
  it("a controller restarted between trigger and answer finds the savepoint by its trigger id", function()
    local w = cancelling_world()
    assert.same({ "flink POST /jobs/" .. ID .. "/stop", "flink GET /jobs/overview" }, w.pass())
    local tid = w.cluster.status.savepoint.triggerID
    assert.truthy(tid:match("^" .. string.rep("%x", 32) .. "$"))
    assert.is_true(w.last.actions[1].after_status) -- sent once the status naming it is written
    -- the controller dies before Flink's answer is recorded: the next one knows nothing of it
    w.flink.operations = {}
    assert.same({ "flink GET /jobs/overview" }, w.pass(1)) -- the request may still be on its way
    assert.same({ "flink GET /jobs/" .. ID .. "/savepoints/" .. tid, "flink GET /jobs/overview" }, w.pass(4))
    assert.equal("InProgress", w.cluster.status.savepoint.state)
    -- Flink knows it and it completed: Succeeded, no second trigger
    answer(w, { status = "COMPLETED", location = "/cache/savepoints/sp-found" })
    assert.same({ "flink GET /jobs/overview" }, w.pass())
    assert.same({ "Succeeded", tid }, { w.cluster.status.savepoint.state, w.cluster.status.savepoint.triggerID })
    assert.equal("/cache/savepoints/sp-found", w.cluster.status.components.job.savepointLocation)
  end)

  it("a trigger Flink never got (404 on the lookup) is sent again with the same id", function()
    local w = cancelling_world()
    w.pass()
    local tid = w.cluster.status.savepoint.triggerID
    w.pass(5)
    answer(w, { not_found = true })
    local o = w.pass()
    assert.same({ "flink POST /jobs/" .. ID .. "/stop", "flink GET /jobs/overview" }, o)
    assert.same({ kind = "stop", id = tid, job_id = ID, target_directory = "/cache/savepoints" },
      w.last.actions[1].intent)
    assert.equal(tid, w.last.actions[1].body.triggerId)
    answer(w)
    assert.same({ "flink GET /jobs/" .. ID .. "/savepoints/" .. tid, "flink GET /jobs/overview" }, w.pass())
    -- still unknown to Flink a minute after the trigger: TriggerFailed, shown, not sent again
    answer(w, { not_found = true })
    w.pass(savepoint_timeout())
    assert.equal("TriggerFailed", w.cluster.status.savepoint.state)
  end)

  it("cancelRequested: a stop that fails falls back to savepoint, then cancel (Flink CANCELED)", function()
    local w = cancelling_world()
    assert.same({ "flink POST /jobs/" .. ID .. "/stop", "flink GET /jobs/overview" }, w.pass())
    answer(w, { status = "COMPLETED",
      failure = "org.apache.flink.runtime.checkpoint.CheckpointException: Task has finished" })
    -- the stop failed, the job runs on: the failure shown (status, Event), then a plain savepoint
    assert.same({ "flink GET /jobs/overview" }, w.pass())
    assert.same({ "Failed", true }, { w.cluster.status.savepoint.state, w.cluster.status.savepoint.stop })
    assert.equal(1, w.last.requeue_after)
    local warned = {}
    for _, e in ipairs(w.last.events) do
      if e.reason == "SavepointStateChanged" then warned[#warned + 1] = e.type .. " " .. e.message end
    end
    assert.same({ "Warning savepoint Failed (job cancel): org.apache.flink.runtime.checkpoint.CheckpointException: "
      .. "Task has finished" }, warned)
    assert.same({ "flink POST /jobs/" .. ID .. "/savepoints", "flink GET /jobs/overview" }, w.pass())
    assert.is_nil(w.cluster.status.savepoint.stop)
    answer(w)
    w.pass()
    answer(w, { status = "COMPLETED", location = "/cache/savepoints/sp-fallback" })
    assert.same({ "flink PATCH /jobs/" .. ID .. "?mode=cancel", "flink GET /jobs/overview" }, w.pass())
    w.flink.jobs[1].state = "CANCELED"
    assert.same({ "delete Service wordcount-jobmanager", "delete StatefulSet wordcount-jobmanager",
      "delete StatefulSet wordcount-taskmanager", "delete ConfigMap wordcount-configmap" }, w.pass())
    assert.equal("Cancelled", w.cluster.status.components.job.state)
    assert.equal("/cache/savepoints/sp-fallback", w.cluster.status.components.job.savepointLocation)
  end)

  it("update of a running job: stop with savepoint, new components, resubmit from that savepoint", function()
    local w = running_world()
    local rev1 = w.cluster.status.currentRevision
    w.cluster.spec.taskManager.replicas = 2
    w.cluster.metadata.generation = 2
    local o = w.pass()
    local rev2 = w.cluster.status.nextRevision
    assert.same({ "apply ControllerRevision " .. rev2, "flink POST /jobs/" .. ID .. "/stop",
      "flink GET /jobs/overview" }, o)
    assert.equal("Updating", w.cluster.status.state)
    local tid = answer(w)
    w.pass()
    -- Flink lists the job FINISHED before the stop's outcome is polled: nothing moves yet, so the
    -- resubmission cannot restore from an older savepoint
    w.flink.jobs[1].state = "FINISHED"
    assert.same({ "flink GET /jobs/" .. ID .. "/savepoints/" .. tid, "flink GET /jobs/overview" }, w.pass())
    assert.equal("Updating", w.cluster.status.components.job.state)
    assert.equal(1, w.children.StatefulSet["wordcount-taskmanager"].spec.replicas) -- held until the stop is through
    assert.is_not_nil(w.children.Job["wordcount-job-submitter"])
    answer(w, { status = "COMPLETED", location = "/cache/savepoints/sp-update" })
    assert.same({ "apply StatefulSet wordcount-taskmanager", "delete Job wordcount-job-submitter",
      "flink GET /jobs/overview" }, w.pass())
    w.children.Pod = nil
    o = w.pass()
    assert.same({ "apply Job wordcount-job-submitter", "flink GET /jobs/overview" }, o)
    local args = w.children.Job["wordcount-job-submitter"].spec.template.spec.containers[1].args
    assert.same({ "--fromSavepoint", "/cache/savepoints/sp-update" }, { args[3], args[4] })
    assert.equal(rev2, w.cluster.status.currentRevision)
    assert.are_not.equal(rev1, rev2)
    local new_id = "0000000000000000000000000000beef"
    submitted(w, new_id)
    w.pass()
    assert.equal("Running", w.cluster.status.state)
    assert.equal(new_id, w.cluster.status.components.job.id)
    assert.equal("True", condition(w.cluster.status, "JobRunning").status)
  end)
end)

describe("reconcile.run: a new pod template outside an update (policies-min)", function()
  it("waits while the job runs (a Warning says so), then rolls out with the next update", function()
    host.configure({ policy_dir = policy_dir() })
    local w = running_world()
    -- the operator edits the cluster policy: every pod template gets an annotation
    local text = read(ROOT .. "/tests/testdata/policies-min/cluster.lua")
    local edited = text:gsub("metadata = { labels = labels },",
      'metadata = { labels = labels, annotations = { ["example.com/policy"] = "v2" } },')
    assert.are_not.equal(text, edited)
    host.configure({ policy_dir = policy_dir({ ["cluster.lua"] = edited }) })
    assert.same({ "flink GET /jobs/overview" }, w.pass())
    assert.same({ type = "Warning", reason = "TemplateChangeHeld",
      message = "new pod template of StatefulSet wordcount-jobmanager, StatefulSet wordcount-taskmanager held "
        .. "while the job runs: it rolls out with the next update of the spec (savepoint, cancel, resubmit)" },
      w.last.events[1])
    assert.is_nil(w.children.StatefulSet["wordcount-taskmanager"].spec.template.metadata.annotations)
    -- held until the user updates the spec: Stalled (kstatus Failed), the job still Ready
    assert.same({ "True", "TemplateChangeHeld", "True" }, { condition(w.cluster.status, "Stalled").status,
      condition(w.cluster.status, "Stalled").reason, condition(w.cluster.status, "Ready").status })
    -- told once: the next passes (the job polls) hold it without another Event
    assert.same({ "flink GET /jobs/overview" }, w.pass())
    assert.same({}, w.last.events)
    assert.equal("TemplateChangeHeld", condition(w.cluster.status, "Stalled").reason)
    -- an update of the spec: savepoint, cancel, then the StatefulSets are created again with it
    w.cluster.spec.taskManager.replicas = 2
    w.cluster.metadata.generation = 2
    local o = w.pass()
    assert.equal("flink POST /jobs/" .. ID .. "/stop", o[2])
    stop_with_savepoint(w, "/cache/savepoints/sp-policy")
    assert.same({ "delete StatefulSet wordcount-jobmanager", "delete StatefulSet wordcount-taskmanager",
      "delete Job wordcount-job-submitter", "flink GET /jobs/overview" }, w.pass())
    o = w.pass()
    assert.same({ "apply StatefulSet wordcount-jobmanager", "apply StatefulSet wordcount-taskmanager" }, { o[1], o[2] })
    assert.equal("v2", w.children.StatefulSet["wordcount-taskmanager"].spec.template.metadata.annotations
      ["example.com/policy"])
    assert.equal(2, w.children.StatefulSet["wordcount-taskmanager"].spec.replicas)
  end)
end)

describe("reconcile.run with the real policies/", function()
  before_each(function()
    host.configure({ policy_dir = ROOT .. "/policies" })
  end)

  it("applies the wordcount objects in order: Creating", function()
    local c = wordcount()
    local r = run({ cluster = c, children = {}, flink = {}, now = T0 })
    assert.same({
      "apply ConfigMap wordcount-configmap",
      "apply StatefulSet wordcount-jobmanager",
      "apply Service wordcount-jobmanager",
      "apply StatefulSet wordcount-taskmanager",
      "apply ControllerRevision " .. r.status.nextRevision,
    }, ops(r))
    assert.equal("Creating", r.status.state)
    assert.equal("False", condition(r.status, "PolicyError").status)
  end)

  it("is idempotent once everything is applied and Ready, and submits the job", function()
    local c = wordcount()
    local r1 = run({ cluster = c, children = {}, flink = {}, now = T0 })
    local objs = applied(r1)
    local r2 = run({ cluster = with_status(c, r1.status), children = children_of(objs, true), flink = {},
      now = T0 + 30 })
    assert.same({ "apply Job wordcount-job-submitter", "flink GET /jobs/overview" }, ops(r2))
    assert.equal("Running", r2.status.state)
  end)

  -- issue 14 (churn with kill -9): every pass so far was killed before its status write; the
  -- submitter Job it left was rendered from the first revision, so an edit made meanwhile is an
  -- update from that revision (it waits for the job), not the revision the submitter runs
  it("with no status written yet, takes the observed ControllerRevision as current: an edit is an update", function()
    local c = wordcount()
    local r1 = run({ cluster = c, children = {}, flink = {}, now = T0 })
    local objs = applied(r1)
    local r2 = run({ cluster = c, children = children_of(objs, true), flink = {}, now = T0 + 30 })
    assert.same({ "apply Job wordcount-job-submitter", "flink GET /jobs/overview" }, ops(r2))
    for _, o in ipairs(applied(r2)) do objs[#objs + 1] = o end
    local rev1 = r1.status.nextRevision
    local c3 = util.deepcopy(c)
    c3.metadata.generation = 2
    c3.spec.image.name = "flink:1.9.3"
    local r3 = run_answered({ cluster = c3, children = children_of(objs, true), flink = {}, now = T0 + 60 })
    assert.equal(rev1, r3.status.currentRevision)
    assert.are_not.equal(rev1, r3.status.nextRevision)
    assert.equal("Updating", r3.status.state)
    -- the apply order that makes it so: a pass that submits and applies the revision (here
    -- none was observed) applies the revision first
    local all = {}
    local ch = children_of(applied(r1), true)
    ch.ControllerRevision = nil
    for i, o in ipairs(applied(run({ cluster = wordcount(), children = ch, flink = {}, now = T0 + 30 }))) do
      all[i] = o.kind
    end
    assert.same({ "ControllerRevision", "Job" }, all)
  end)

  it("re-applies only what changed: a deleted Service, then the TaskManagers on a replicas change", function()
    local c = wordcount()
    c.spec.job = nil
    local r1 = run({ cluster = c, children = {}, flink = {}, now = T0 })
    local objs = applied(r1)
    local c1 = with_status(c, r1.status)
    local ch = children_of(objs, true)
    ch.Service = nil
    local r2 = run({ cluster = c1, children = ch, flink = {}, now = T0 + 30 })
    assert.same({ "apply Service wordcount-jobmanager" }, ops(r2))
    local c3 = with_status(c, r2.status)
    c3.metadata.generation = 2
    c3.spec.taskManager.replicas = 3
    local r3 = run_answered({ cluster = c3, children = children_of(objs, true), flink = {}, now = T0 + 60 })
    assert.same({ "apply StatefulSet wordcount-taskmanager", "apply ControllerRevision " .. r3.status.nextRevision },
      ops(r3))
    assert.equal(3, applied(r3)[1].spec.replicas)
  end)

  -- A session cluster with every field the removal cases take away, brought to steady state.
  local function session_world(spec)
    local c = wordcount()
    c.spec.job = nil
    for k, v in pairs(spec or {}) do c.spec[k] = v end
    c.spec.jobManager.accessScope = "VPC"
    c.spec.jobManager.nodeSelector = { pool = "flink" }
    c.spec.jobManager.ingress = { hostFormat = "{{$clusterName}}.example.com", useTls = true }
    c.spec.taskManager.podAnnotations = { ["example.com/team"] = "data", ["example.com/keep"] = "yes" }
    c.spec.logConfig = { ["extra.properties"] = "a = 1\n" }
    local w = world(c)
    w.pass()
    assert.same({}, w.pass())
    return w
  end
  -- Changes the spec (a new generation), runs one pass, returns its operations with the apply
  -- of the new ControllerRevision written "apply revision".
  local function edit(w, f)
    f(w.cluster.spec)
    w.cluster.metadata.generation = w.cluster.metadata.generation + 1
    local o = w.pass()
    for i, op in ipairs(o) do
      if op == "apply ControllerRevision " .. w.cluster.status.nextRevision then o[i] = "apply revision" end
    end
    return o
  end
  local function applied_named(w, kind, name)
    for _, o in ipairs(applied(w.last)) do
      if o.kind == kind and o.metadata.name == name then return o end
    end
    return nil
  end

  it("converges removals: each removed field leaves the object we apply; steady state writes nothing", function()
    local w = session_world({ recreateOnUpdate = false })
    -- a podAnnotations key: the TaskManager template without it (and the same config hash)
    local before = w.children.StatefulSet["wordcount-taskmanager"].spec.template.metadata.annotations
    assert.same({ "apply StatefulSet wordcount-taskmanager", "apply revision" },
      edit(w, function(s) s.taskManager.podAnnotations["example.com/team"] = nil end))
    local ann = applied_named(w, "StatefulSet", "wordcount-taskmanager").spec.template.metadata.annotations
    assert.is_nil(ann["example.com/team"])
    assert.equal("yes", ann["example.com/keep"])
    assert.equal(before["flinkoperator.k8s.io/config-hash"], ann["flinkoperator.k8s.io/config-hash"])
    assert.same({}, w.pass())
    -- the nodeSelector: the JobManager template without one
    assert.same({ "apply StatefulSet wordcount-jobmanager", "apply revision" },
      edit(w, function(s) s.jobManager.nodeSelector = nil end))
    assert.is_nil(applied_named(w, "StatefulSet", "wordcount-jobmanager").spec.template.spec.nodeSelector)
    assert.same({}, w.pass())
    -- a logConfig file: the ConfigMap without it, both Flink templates with a new config hash
    assert.same({ "apply ConfigMap wordcount-configmap", "apply StatefulSet wordcount-jobmanager",
      "apply StatefulSet wordcount-taskmanager", "apply revision" }, edit(w, function(s) s.logConfig = nil end))
    assert.is_nil(applied_named(w, "ConfigMap", "wordcount-configmap").data["extra.properties"])
    assert.are_not.equal(before["flinkoperator.k8s.io/config-hash"],
      applied_named(w, "StatefulSet", "wordcount-taskmanager").spec.template.metadata.annotations
        ["flinkoperator.k8s.io/config-hash"])
    assert.same({}, w.pass())
    -- ingress.useTls off: the Ingress without tls
    assert.same({ "apply Ingress wordcount-jobmanager", "apply revision" },
      edit(w, function(s) s.jobManager.ingress.useTls = false end))
    assert.is_nil(applied_named(w, "Ingress", "wordcount-jobmanager").spec.tls)
    assert.same({}, w.pass())
    -- accessScope VPC -> External: the Service without the internal load balancer annotation
    assert.same({ "apply Service wordcount-jobmanager", "apply revision" },
      edit(w, function(s) s.jobManager.accessScope = "External" end))
    local svc = applied_named(w, "Service", "wordcount-jobmanager")
    assert.is_nil(svc.metadata.annotations["networking.gke.io/load-balancer-type"])
    assert.equal("LoadBalancer", svc.spec.type)
    assert.same({}, w.pass())
    -- Headless -> Cluster: clusterIP cannot change in place: deleted, then created without it
    assert.same({ "apply revision", "delete Service wordcount-jobmanager" },
      edit(w, function(s) s.jobManager.accessScope = "Headless" end))
    assert.same({ "apply Service wordcount-jobmanager" }, w.pass())
    assert.equal("None", w.children.Service["wordcount-jobmanager"].spec.clusterIP)
    assert.same({ "apply revision", "delete Service wordcount-jobmanager" },
      edit(w, function(s) s.jobManager.accessScope = "Cluster" end))
    assert.same({ "apply Service wordcount-jobmanager" }, w.pass())
    assert.is_nil(applied_named(w, "Service", "wordcount-jobmanager").spec.clusterIP)
    assert.same({}, w.pass())
  end)

  it("repairs drift in the fields we own, and leaves the server's and others' alone", function()
    local w = session_world()
    local tm = w.children.StatefulSet["wordcount-taskmanager"]
    tm.spec.template.spec.containers[1].image = "flink:patched-by-hand"
    tm.metadata.labels["example.com/added-by-someone"] = "x"
    assert.same({ "apply StatefulSet wordcount-taskmanager" }, w.pass())
    assert.equal("flink:1.9.2", applied_named(w, "StatefulSet", "wordcount-taskmanager")
      .spec.template.spec.containers[1].image)
    w.children.Service["wordcount-jobmanager"].metadata.labels["example.com/added-by-someone"] = "x"
    assert.same({}, w.pass())
  end)

  it("recreateOnUpdate: a flinkProperties change deletes and recreates the Flink StatefulSets", function()
    local w = session_world()
    local old_hash = w.children.StatefulSet["wordcount-jobmanager"].spec.template.metadata.annotations
      ["flinkoperator.k8s.io/config-hash"]
    local o = edit(w, function(s) s.flinkProperties["taskmanager.numberOfTaskSlots"] = "4" end)
    assert.same({ "apply ConfigMap wordcount-configmap", "apply revision",
      "delete StatefulSet wordcount-jobmanager", "delete StatefulSet wordcount-taskmanager" }, o)
    assert.matches("taskmanager.numberOfTaskSlots: 4", applied_named(w, "ConfigMap", "wordcount-configmap")
      .data["flink-conf.yaml"], 1, true)
    assert.same({ "apply StatefulSet wordcount-jobmanager", "apply StatefulSet wordcount-taskmanager" }, w.pass())
    local new_hash = w.children.StatefulSet["wordcount-jobmanager"].spec.template.metadata.annotations
      ["flinkoperator.k8s.io/config-hash"]
    assert.are_not.equal(old_hash, new_hash)
    assert.equal(new_hash, w.children.StatefulSet["wordcount-taskmanager"].spec.template.metadata.annotations
      ["flinkoperator.k8s.io/config-hash"])
    assert.same({}, w.pass())
    -- a scale is no change of the pods: applied in place even with recreateOnUpdate
    assert.same({ "apply StatefulSet wordcount-taskmanager", "apply revision" },
      edit(w, function(s) s.taskManager.replicas = 3 end))
  end)

  it("recreateOnUpdate false: a flinkProperties change rolls the Flink StatefulSets in place", function()
    local w = session_world({ recreateOnUpdate = false })
    assert.same({ "apply ConfigMap wordcount-configmap", "apply StatefulSet wordcount-jobmanager",
      "apply StatefulSet wordcount-taskmanager", "apply revision" },
      edit(w, function(s) s.flinkProperties["taskmanager.numberOfTaskSlots"] = "4" end))
    assert.same({}, w.pass())
  end)

  it("a config change of a running job: stop with savepoint, new pods, then the resubmission", function()
    local w = running_world()
    assert.equal("Running", w.cluster.status.components.job.state)
    local o = edit(w, function(s) s.flinkProperties["taskmanager.numberOfTaskSlots"] = "4" end)
    -- held: nothing of the running cluster changes before the savepoint and the cancel
    assert.same({ "apply revision", "flink POST /jobs/" .. ID .. "/stop", "flink GET /jobs/overview" }, o)
    stop_with_savepoint(w, "/cache/savepoints/sp-conf")
    assert.same({ "apply ConfigMap wordcount-configmap", "delete StatefulSet wordcount-jobmanager",
      "delete StatefulSet wordcount-taskmanager", "delete Job wordcount-job-submitter", "flink GET /jobs/overview" },
      w.pass())
    w.children.Pod = nil
    -- the new pods first; the job is submitted only once they are Ready
    o = w.pass()
    assert.same({ "apply StatefulSet wordcount-jobmanager", "apply StatefulSet wordcount-taskmanager" },
      { o[1], o[2] })
    assert.is_nil(w.children.Job["wordcount-job-submitter"])
    o = w.pass()
    assert.equal("apply Job wordcount-job-submitter", o[1])
    local args = table.concat(w.children.Job["wordcount-job-submitter"].spec.template.spec.containers[1].args, " ")
    assert.truthy(args:find("--fromSavepoint /cache/savepoints/sp-conf", 1, true), args)
    assert.equal(w.cluster.status.nextRevision, w.cluster.status.currentRevision)
  end)

  it("reports an invalid spec from validate.lua", function()
    local c = wordcount()
    c.spec.taskManager.replicas = 0
    local r = run({ cluster = c, children = {}, flink = {}, now = T0 })
    assert.same({}, r.actions)
    assert.matches("spec%.taskManager%.replicas", r.events[1].message)
    assert.equal("InvalidSpec", condition(r.status, "Ready").reason)
    -- before the first revision too: seen and refused
    assert.equal(1, r.status.observedGeneration)
    assert.same({ "True", "InvalidSpec", "False" }, { condition(r.status, "Stalled").status,
      condition(r.status, "Stalled").reason, condition(r.status, "Reconciling").status })
    assert.is_nil(r.status.state)
  end)
end)

-- Issue 27: starting beside the original operator, or upgrading the controller or its defaults,
-- restarts nothing. An update starts only when the spec means something else than the current
-- revision's; else that revision is adopted (RevisionAdopted), and the pod templates that now
-- differ wait for the next real update (TemplateChangeHeld, Normal: the cluster stays Ready).
describe("reconcile.run: adoption of a revision (issue 27)", function()
  local ORIGINAL = ROOT .. "/tests/testdata/reconcile-adopt/original-running.yaml"

  -- the events of `result` with `reason`
  local function events(result, reason)
    return pick(result.events, function(e) return e.reason == reason and e end)
  end
  -- the Flink calls of `result` but the job list poll (a savepoint, stop or cancel would be here)
  local function flink_writes(result)
    return pick(result.actions, function(a)
      return a.op == "flink" and a.method ~= "GET" and (a.method .. " " .. a.path)
    end)
  end
  -- a copy of the real policies/ whose defaults.lua also defaults the TaskManager's podAnnotations
  -- (a default that changes the TaskManager pod template)
  local function policies_with_a_default()
    local dir = fx.tmpdir()
    made[#made + 1] = dir
    assert(os.execute("cp -r " .. fx.quote(ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
    local text = read(dir .. "/defaults.lua")
    local edited, n = text:gsub("\n  return out\nend\n", "\n  if is_object(spec.taskManager) then\n"
      .. "    fill(spec.taskManager, \"podAnnotations\", { [\"example.com/defaulted\"] = \"yes\" })\n  end\n"
      .. "  return out\nend\n", 1)
    assert.equal(1, n)
    write(dir .. "/defaults.lua", edited)
    return dir
  end
  -- The world's revision rewritten as an earlier version of the controller named and recorded it:
  -- the hash of the defaulted spec (with the defaults of the policy dir `dir`), that spec as its data.
  -- Returns the old name.
  local function as_older_revision(w, dir)
    host.configure({ policy_dir = dir })
    local ok, d = host.call("defaults", "apply", w.cluster)
    assert.is_true(ok, d)
    local old = "wordcount-" .. revision.hash(d.spec)
    local obj = revision.object(d, 1)
    obj.metadata.name = old
    w.children.ControllerRevision = { [old] = served(obj, true) }
    w.cluster.status.currentRevision, w.cluster.status.nextRevision = old, old
    return old
  end

  before_each(function()
    host.configure({ policy_dir = ROOT .. "/policies" })
  end)

  it("a job cluster of the original operator: adopted, no update, no savepoint, stop or cancel", function()
    local snap = fx.read_yaml(ORIGINAL)
    local orig_rev = snap.cluster.status.currentRevision
    assert.matches("^wordcount%-%w+%-1$", orig_rev)
    local r = run(snap)
    local new_rev = revision.name(snap.cluster)
    -- nothing of the running cluster is replaced: no delete, no StatefulSet or Job written
    assert.same({ "apply ConfigMap wordcount-configmap", "apply Service wordcount-jobmanager",
      "apply ControllerRevision " .. new_rev, "flink GET /jobs/overview" }, ops(r))
    assert.same({}, flink_writes(r))
    assert.same({ { type = "Normal", reason = "RevisionAdopted", message = "revision " .. orig_rev
      .. " (the original operator's) adopted as " .. new_rev .. ": same spec with today's defaults, "
      .. "nothing is restarted" } }, events(r, "RevisionAdopted"))
    -- our templates differ from the original's: held, a Normal Event, not Stalled
    assert.same({ { type = "Normal", reason = "TemplateChangeHeld", message = "new pod template of StatefulSet "
      .. "wordcount-jobmanager, StatefulSet wordcount-taskmanager held since revision " .. orig_rev
      .. " was adopted: it rolls out with the next update of the spec" } }, events(r, "TemplateChangeHeld"))
    local st = r.status
    assert.same({ new_rev, new_rev }, { st.currentRevision, st.nextRevision })
    assert.same({ from = orig_rev, to = new_rev, time = "2025-11-30T06:40:00Z" }, st.adoptedRevision)
    assert.same({ "Running", "Running", ID }, { st.state, st.components.job.state, st.components.job.id })
    assert.same({ "True", "False", "False" }, { condition(st, "Ready").status, condition(st, "Stalled").status,
      condition(st, "Reconciling").status })
    assert.matches("held since revision " .. orig_rev:gsub("%-", "%%-") .. " was adopted",
      condition(st, "Ready").message)
    assert.same({ state = "NotTriggered" }, st.savepoint)
    -- our revision: the user's spec, number 2 after the original's 1
    local cr = applied(r)[3]
    assert.equal(2, cr.revision)
    assert.same(revision.strip(snap.cluster.spec), cr.data)
    -- no event of a job or state change: the job runs as it ran
    assert.same({}, events(r, "JobStateChanged"))
    assert.same({}, events(r, "StateChanged"))
  end)

  it("the original operator's cluster after the adoption: steady; a real change (parallelism) updates", function()
    local snap = fx.read_yaml(ORIGINAL)
    local w = world(snap.cluster)
    w.children, w.flink, w.now = snap.children, snap.flink, snap.now - 1
    w.pass()
    local new_rev = w.cluster.status.currentRevision
    assert.equal(1, #events(w.last, "RevisionAdopted"))
    -- the next passes: the job polled, the held templates, nothing written, adopted once
    assert.same({ "flink GET /jobs/overview" }, w.pass())
    assert.same({}, events(w.last, "RevisionAdopted"))
    assert.is_nil(w.last.status)
    assert.equal(new_rev, w.cluster.status.currentRevision)
    assert.equal("uid-orig-sts-tm", w.children.StatefulSet["wordcount-taskmanager"].metadata.uid)
    -- a real change: the usual update, from the original's running job (its id)
    w.cluster.spec.job.parallelism = 2
    w.cluster.metadata.generation = 2
    local o = w.pass()
    local rev2 = w.cluster.status.nextRevision
    assert.are_not.equal(new_rev, rev2)
    assert.same({ "apply ControllerRevision " .. rev2, "flink POST /jobs/" .. ID .. "/stop",
      "flink GET /jobs/overview" }, o)
    assert.same({ "Updating", "update" }, { w.cluster.status.state, w.cluster.status.savepoint.triggerReason })
    assert.same({}, events(w.last, "RevisionAdopted"))
    -- the stop's savepoint, then the original's StatefulSets and submitter are replaced by ours
    stop_with_savepoint(w, "/cache/savepoints/sp-adopted")
    o = w.pass()
    assert.same({ "delete StatefulSet wordcount-jobmanager", "delete StatefulSet wordcount-taskmanager",
      "delete Job wordcount-job-submitter" }, { o[#o - 3], o[#o - 2], o[#o - 1] })
    w.children.Pod = nil
    assert.same({ "apply StatefulSet wordcount-jobmanager", "apply StatefulSet wordcount-taskmanager",
      "flink GET /jobs/overview" }, w.pass())
    -- (applied again: the tiny world's server writes imagePullPolicy IfNotPresent over the spec's Always)
    assert.truthy(table.concat(w.pass(), "; "):find("apply Job wordcount-job-submitter", 1, true))
    local args = table.concat(w.children.Job["wordcount-job-submitter"].spec.template.spec.containers[1].args, " ")
    assert.truthy(args:find("--fromSavepoint /cache/savepoints/sp-adopted", 1, true), args)
    assert.equal(rev2, w.cluster.status.currentRevision)
    assert.is_nil(w.cluster.status.adoptedRevision) -- an update replaced the adopted revision
  end)

  it("the original operator's cluster whose spec changed while no controller ran: an update", function()
    local snap = fx.read_yaml(ORIGINAL)
    snap.cluster.spec.taskManager.replicas = 2
    local r = run_answered(snap)
    assert.same({}, events(r, "RevisionAdopted"))
    assert.same({ "POST /jobs/" .. ID .. "/stop" }, flink_writes(r))
    assert.equal(snap.cluster.status.currentRevision, r.status.currentRevision)
    assert.are_not.equal(r.status.currentRevision, r.status.nextRevision)
  end)

  it("our older revision (the defaulted spec's hash) and a default added since: adopted, no update", function()
    local w = running_world()
    local old = as_older_revision(w, ROOT .. "/policies")
    host.configure({ policy_dir = policies_with_a_default() })
    local new_rev = revision.name(w.cluster)
    assert.are_not.equal(old, new_rev)
    assert.same({ "apply ControllerRevision " .. new_rev, "flink GET /jobs/overview" }, w.pass())
    assert.same({ { type = "Normal", reason = "RevisionAdopted", message = "revision " .. old .. " (ours) adopted as "
      .. new_rev .. ": same spec with today's defaults, nothing is restarted" } }, events(w.last, "RevisionAdopted"))
    assert.same({ new_rev, new_rev, old }, { w.cluster.status.currentRevision, w.cluster.status.nextRevision,
      w.cluster.status.adoptedRevision.from })
    -- the new default changes the TaskManager's pods: held while the job runs, not Stalled
    assert.same({ "Normal" }, { events(w.last, "TemplateChangeHeld")[1].type })
    assert.matches("StatefulSet wordcount%-taskmanager held since", events(w.last, "TemplateChangeHeld")[1].message)
    assert.same({ "True", "False" }, { condition(w.cluster.status, "Ready").status,
      condition(w.cluster.status, "Stalled").status })
    assert.equal("Running", w.cluster.status.components.job.state)
    assert.same({ "flink GET /jobs/overview" }, w.pass())
    -- told once, though still held (Ready's message names it)
    assert.same({}, events(w.last, "TemplateChangeHeld"))
    assert.matches("StatefulSet wordcount%-taskmanager held since", condition(w.cluster.status, "Ready").message)
    -- a real change: the update rolls the held default out with it
    w.cluster.spec.job.parallelism = 2
    w.cluster.metadata.generation = 2
    local o = w.pass()
    assert.same("flink POST /jobs/" .. ID .. "/stop", o[2])
    stop_with_savepoint(w, "/cache/savepoints/sp-default")
    w.pass()
    w.children.Pod = nil
    w.pass()
    assert.equal("yes", w.children.StatefulSet["wordcount-taskmanager"].spec.template.metadata.annotations
      ["example.com/defaulted"])
  end)

  it("a default added with today's revisions: no new revision at all; its new template held (Stalled)", function()
    local w = running_world()
    local rev = w.cluster.status.currentRevision
    host.configure({ policy_dir = policies_with_a_default() })
    assert.same({ "flink GET /jobs/overview" }, w.pass())
    assert.same({}, events(w.last, "RevisionAdopted"))
    assert.same({ rev, rev }, { w.cluster.status.currentRevision, w.cluster.status.nextRevision })
    -- not an adoption: the held template is the controller's change to a running job (Warning)
    assert.same({ "Warning" }, { events(w.last, "TemplateChangeHeld")[1].type })
    assert.same({ "True", "TemplateChangeHeld" }, { condition(w.cluster.status, "Stalled").status,
      condition(w.cluster.status, "Stalled").reason })
  end)

  it("a session cluster of the original operator: adopted, its pods held too until the next update", function()
    local snap = fx.read_yaml(ORIGINAL)
    snap.cluster.spec.job = nil
    snap.cluster.status.components.job = nil
    local rev = snap.children.ControllerRevision[snap.cluster.status.currentRevision:match("^(.+)%-%d+$")]
    rev.data.spec.job = nil
    snap.children.Job, snap.children.Pod["wordcount-job-submitter-x7k2p"] = nil, nil
    local r = run(snap)
    local new_rev = revision.name(snap.cluster)
    assert.same({ "apply ConfigMap wordcount-configmap", "apply Service wordcount-jobmanager",
      "apply ControllerRevision " .. new_rev }, ops(r))
    assert.equal(1, #events(r, "RevisionAdopted"))
    assert.matches("held since revision", events(r, "TemplateChangeHeld")[1].message)
    assert.same({ new_rev, "Running", "False" }, { r.status.currentRevision, r.status.state,
      condition(r.status, "Stalled").status })
  end)

  it("the original's selectors with podLabels: adopted, its StatefulSets neither applied nor deleted", function()
    local snap = fx.read_yaml(ORIGINAL)
    local rev = snap.children.ControllerRevision[snap.cluster.status.currentRevision:match("^(.+)%-%d+$")]
    for _, spec in ipairs({ snap.cluster.spec, rev.data.spec }) do spec.taskManager.podLabels = { team = "data" } end
    local tm = snap.children.StatefulSet["wordcount-taskmanager"]
    tm.spec.selector.matchLabels.team = "data"
    tm.spec.template.metadata.labels.team = "data"
    local r = run(snap)
    assert.equal(1, #events(r, "RevisionAdopted"))
    assert.same({ "apply ConfigMap wordcount-configmap", "apply Service wordcount-jobmanager",
      "apply ControllerRevision " .. revision.name(snap.cluster), "flink GET /jobs/overview" }, ops(r))
  end)

  it("an invalid spec at the takeover: the original's revision (unset fields as Go wrote them) supervises", function()
    local snap = fx.read_yaml(ORIGINAL)
    local rev = snap.children.ControllerRevision[snap.cluster.status.currentRevision:match("^(.+)%-%d+$")]
    rev.data.spec.jobManager.accessScope = "" -- no webhook defaulted it: Go wrote the unset string
    snap.cluster.spec.taskManager.replicas = 0
    snap.cluster.metadata.generation = 2
    local r = run(snap)
    local ready = condition(r.status, "Ready")
    assert.same({ "False", "InvalidSpec" }, { ready.status, ready.reason })
    assert.matches("changes held: the last valid spec %(revision wordcount%-%w+%-1%) keeps running",
      ready.message)
    assert.equal("False", condition(r.status, "PolicyError").status)
    assert.same({}, flink_writes(r))
    assert.same({ ID, "Running" }, { r.status.components.job.id, r.status.components.job.state })
  end)

  it("an immutable field of a running job's StatefulSet is held, never deleted (the original's selectors)", function()
    local snap = fx.read_yaml(ORIGINAL)
    -- a StatefulSet whose serviceName is not the one we render: replacing it would kill the job
    snap.children.StatefulSet["wordcount-taskmanager"].spec.serviceName = "wordcount-taskmanager-headless"
    local r = run(snap)
    for _, a in ipairs(r.actions) do
      assert.is_false(a.op == "delete", "deleted " .. tostring(a.kind) .. " " .. tostring(a.name))
    end
    assert.matches("StatefulSet wordcount%-taskmanager %(spec%.serviceName cannot change in place%)",
      events(r, "TemplateChangeHeld")[1].message)
    assert.same({}, flink_writes(r))
  end)
end)

describe("the reconcile policies inside the binary's sandbox #bin", function()
  it("job, savepoint and status load and decide under the C host (budgets, allowlist)", function()
    local dir = fx.tmpdir()
    made[#made + 1] = dir
    assert(os.execute("mkdir -p " .. fx.quote(dir .. "/lib") .. " && cp " .. fx.quote(ROOT) .. "/policies/lib/*.lua "
      .. fx.quote(dir .. "/lib/")))
    for _, f in ipairs({ "job.lua", "savepoint.lua", "status.lua" }) do
      write(dir .. "/lib/" .. f, read(ROOT .. "/policies/" .. f))
    end
    -- submit.lua, restart.lua, cleanup.lua, settings.lua: job.lua requires them from the policy dir
    for _, f in ipairs({ "defaults.lua", "validate.lua", "submit.lua", "restart.lua", "cleanup.lua",
      "settings.lua" }) do
      write(dir .. "/" .. f, read(ROOT .. "/policies/" .. f))
    end
    write(dir .. "/cluster.lua", read(ROOT .. "/tests/testdata/reconcile-sandbox/cluster.lua"))
    write(dir .. "/in.yaml", table.concat({
      "apiVersion: flinkoperator.k8s.io/v1beta1", "kind: FlinkCluster", "metadata: {name: sm, namespace: default}",
      "spec:", "  image: {name: 'flink:1.17.2'}", "  taskManager: {replicas: 1}",
      "  job: {jarFile: /j.jar, savepointsDir: /sp, autoSavepointSeconds: 300}", "" }, "\n"))
    local r = fx.run_bin({ "render", "-o", "json", "-f", dir .. "/in.yaml", "--policy-dir", dir })
    assert.equal(0, r.code, r.stderr)
    assert.equal("", r.stderr) -- (the output was read with stderr merged into it: nothing else may be there)
    local cm = require("cjson").decode(r.stdout)
    cm = cm.items and cm.items[1] or cm[1] or cm
    assert.same({ state = "Creating", job = "Running", take = "scheduled initial, stop false",
      trigger = "6553f22c000000000000000000000000" }, cm.data)
  end)
end)
