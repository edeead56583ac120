-- SPDX-License-Identifier: Apache-2.0
-- Specs of fc.haclean (Flink's HA ConfigMaps removed with the cluster, issue 29) and of its
-- place in reconcile.run with the real policies/ (cluster.desired's ha_configmaps).
local lyaml = require("lyaml")
local fx = require("support.fixtures")
local host = require("fc.host")
local reconcile = require("fc.reconcile")
local haclean = require("fc.haclean")

local T0 = 1764484800
local SELECTOR = "app=wordcount,type=flink-native-kubernetes"

local function wordcount(last_state)
  local c = lyaml.load(fx.read(fx.ROOT .. "/deploy/examples/wordcount.yaml"))
  c.metadata.namespace = "default"
  c.metadata.uid = "0b6c3f5e-1111-4222-8333-944455556666"
  c.metadata.generation = 1
  c.metadata.resourceVersion = "500"
  if last_state then
    c.spec.job.upgradeMode = "last-state"
    c.spec.job.highAvailability = { storageDir = "file:///ha" }
  end
  return c
end

local function pod(name, component)
  return { metadata = { name = name, labels = { app = "flink", cluster = "wordcount", component = component } } }
end

local function of_op(actions, op)
  local out = {}
  for _, a in ipairs(actions) do
    if a.op == op then out[#out + 1] = a end
  end
  return out
end

describe("fc.haclean", function()
  it("names Flink's HA ConfigMaps of a cluster by its labels", function()
    assert.equal(SELECTOR, haclean.selector("wordcount"))
  end)

  it("adds the finalizer to an HA cluster, after the finalizers it has, at the version read", function()
    local c = wordcount(true)
    c.metadata.finalizers = { "example.com/other" }
    assert.same({ { op = "patch_finalizers", finalizers = { "example.com/other", haclean.FINALIZER },
      resourceVersion = "500", after_status = true } }, haclean.pass(c, true, "", {}))
    c.metadata.finalizers[2] = haclean.FINALIZER
    assert.same({}, haclean.pass(c, true, "", {}))
    -- a cluster without HA gets none
    assert.same({}, haclean.pass(wordcount(false), false, "", {}))
  end)

  it("deletes the ConfigMaps after a DeleteCluster cleanup once no StatefulSet or JobManager pod is left", function()
    local c = wordcount(true)
    c.metadata.finalizers = { haclean.FINALIZER }
    local sts = { StatefulSet = { ["wordcount-jobmanager"] = {} } }
    assert.same({}, haclean.pass(c, true, "DeleteCluster", sts))
    local jm = { Pod = { p = pod("wordcount-jobmanager-0", "jobmanager") } }
    assert.same({}, haclean.pass(c, true, "DeleteCluster", jm))
    local gone = { op = "delete_collection", kind = "ConfigMap", selector = SELECTOR }
    -- TaskManager pods left do not hold it (they only read the leader)
    assert.same({ gone }, haclean.pass(c, true, "DeleteCluster",
      { Pod = { ["wordcount-taskmanager-0"] = pod("wordcount-taskmanager-0", "taskmanager") } }))
    -- HA turned off since: the finalizer still says there may be some
    assert.same({ gone }, haclean.pass(c, false, "DeleteCluster", {}))
    -- other cleanups keep the JobManager and its leader ConfigMap
    assert.same({}, haclean.pass(c, true, "DeleteTaskManager", {}))
    assert.same({}, haclean.pass(wordcount(false), false, "DeleteCluster", {}))
  end)

  it("on deletion: StatefulSets first, then (no JobManager pod left) the ConfigMaps, then the finalizer", function()
    local c = wordcount(true)
    c.metadata.deletionTimestamp = "2025-11-30T07:00:00Z"
    c.metadata.finalizers = { "example.com/other", haclean.FINALIZER }
    local ch = { StatefulSet = { ["wordcount-taskmanager"] = {}, ["wordcount-jobmanager"] = {} },
      Pod = { ["wordcount-jobmanager-0"] = pod("wordcount-jobmanager-0", "jobmanager") } }
    assert.same({ { op = "delete", kind = "StatefulSet", name = "wordcount-jobmanager" },
      { op = "delete", kind = "StatefulSet", name = "wordcount-taskmanager" } }, haclean.deleting(c, ch))
    ch.StatefulSet = {}
    assert.same({}, haclean.deleting(c, ch), "the JobManager pod still runs: it would write its leader again")
    ch.Pod = {}
    assert.same({ { op = "delete_collection", kind = "ConfigMap", selector = SELECTOR },
      { op = "patch_finalizers", finalizers = { "example.com/other" }, resourceVersion = "500",
        after_status = true, unless_failed = true } }, haclean.deleting(c, ch))
    -- without our finalizer: nothing (the garbage collector's)
    c.metadata.finalizers = { "example.com/other" }
    assert.same({}, haclean.deleting(c, { StatefulSet = { ["wordcount-jobmanager"] = {} } }))
  end)
end)

describe("fc.haclean in reconcile.run with the real policies/", function()
  before_each(function()
    host.configure({ policy_dir = fx.ROOT .. "/policies" })
  end)

  it("puts the finalizer on a last-state cluster, not on another", function()
    local r = reconcile.run({ cluster = wordcount(true), children = {}, flink = {}, now = T0 })
    assert.same({ { op = "patch_finalizers", finalizers = { haclean.FINALIZER }, resourceVersion = "500",
      after_status = true } }, of_op(r.actions, "patch_finalizers"))
    r = reconcile.run({ cluster = wordcount(false), children = {}, flink = {}, now = T0 })
    assert.same({}, of_op(r.actions, "patch_finalizers"))
  end)

  it("removes the ConfigMaps and then the finalizer of a cluster being deleted", function()
    local c = wordcount(true)
    c.metadata.deletionTimestamp = "2025-11-30T07:00:00Z"
    c.metadata.finalizers = { haclean.FINALIZER }
    local r = reconcile.run({ cluster = c, children = { StatefulSet = { ["wordcount-jobmanager"] = {} } },
      flink = {}, now = T0 })
    assert.same({ { op = "delete", kind = "StatefulSet", name = "wordcount-jobmanager" } }, r.actions)
    r = reconcile.run({ cluster = c, children = {}, flink = {}, now = T0 + 5 })
    assert.same({ { op = "delete_collection", kind = "ConfigMap", selector = SELECTOR },
      { op = "patch_finalizers", finalizers = {}, resourceVersion = "500", after_status = true,
        unless_failed = true } },
      r.actions)
    assert.is_nil(r.status)
  end)
end)

describe("fc.haclean after a DeleteCluster cleanup, in reconcile.run with the real policies/", function()
  it("deletes the HA ConfigMaps of a Succeeded job's cluster once its StatefulSets and pods are gone", function()
    host.configure({ policy_dir = fx.ROOT .. "/policies" })
    local c = wordcount(true)
    c.metadata.finalizers = { haclean.FINALIZER }
    c.status = { state = "Stopped", components = { job = { name = "wordcount-job-submitter",
      id = "8c2d6f0e4a1b3c5d7e9f00112233aabb", state = "Succeeded", restartCount = 0 } } }
    local r = reconcile.run({ cluster = c, children = {}, flink = {}, now = T0 })
    assert.equal("Succeeded", r.status.components.job.state)
    assert.same({ { op = "delete_collection", kind = "ConfigMap", selector = SELECTOR } },
      of_op(r.actions, "delete_collection"))
    -- the JobManager still there: not yet
    r = reconcile.run({ cluster = c, children = { StatefulSet = { ["wordcount-jobmanager"] = {
      apiVersion = "apps/v1", kind = "StatefulSet", metadata = { name = "wordcount-jobmanager" } } } },
      flink = {}, now = T0 })
    assert.same({}, of_op(r.actions, "delete_collection"))
  end)
end)
