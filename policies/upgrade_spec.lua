-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/lib/upgrade.lua (spec.job.upgradeMode) and the HA options it turns on in
-- policies/lib/flinkconf.lua. The decisions built on them have fixtures: job/decide-update-*,
-- savepoint/update-last-state-*, cluster/last-state-ha, validate/upgrade-mode-*.
local upgrade = require("lib.upgrade")
local flinkconf = require("lib.flinkconf")

describe("lib.upgrade", function()
  it("records the latest completed checkpoint Flink reported, keeps it without an answer", function()
    local ID = "8c2d6f0e4a1b3c5d7e9f00112233aabb"
    local seen = { id = 7, path = "file:/state/checkpoints/" .. ID .. "/chk-7", timestamp = 1764484805123 }
    local rec = upgrade.latest_checkpoint(nil, ID, seen)
    assert.same({ jobID = ID, id = 7, path = "file:/state/checkpoints/" .. ID .. "/chk-7",
      timestamp = "2025-11-30T06:40:05Z" }, rec)
    -- no answer (or no checkpoint yet): the one recorded stays; none recorded: nil
    assert.equal(rec, upgrade.latest_checkpoint(rec, ID, nil))
    assert.is_nil(upgrade.latest_checkpoint(nil, ID, nil))
    assert.is_nil(upgrade.latest_checkpoint(nil, nil, seen))
    -- a newer one replaces it; an older id of the same job (an answer from before a restore) does not
    local newer = upgrade.latest_checkpoint(rec, ID, { id = 9, path = "file:/c/chk-9", timestamp = 1764484807000 })
    assert.same({ jobID = ID, id = 9, path = "file:/c/chk-9", timestamp = "2025-11-30T06:40:07Z" }, newer)
    assert.equal(newer, upgrade.latest_checkpoint(newer, ID, seen))
    -- another job (resubmitted): its own checkpoints, whatever their ids
    local other = "00000000000000000000000000000001"
    assert.same({ jobID = other, id = 1 }, upgrade.latest_checkpoint(newer, other, { id = 1, timestamp = 0 }))
  end)

  it("defaults to savepoint with savepointsDir, else stateless; an explicit mode wins", function()
    assert.equal("savepoint", upgrade.mode({ savepointsDir = "/sp" }))
    assert.equal("stateless", upgrade.mode({}))
    assert.equal("stateless", upgrade.mode({ savepointsDir = "" }))
    assert.equal("stateless", upgrade.mode({ savepointsDir = "/sp", upgradeMode = "stateless" }))
    assert.equal("last-state", upgrade.mode({ upgradeMode = "last-state" }))
  end)

  it("names the first changed field of the job graph; an unknown old job counts as changed", function()
    local old = { jarFile = "/a.jar", args = { "1", "2" }, parallelism = 2 }
    assert.is_nil(upgrade.job_changed(old, { jarFile = "/a.jar", args = { "1", "2" }, parallelism = 2,
      savepointsDir = "/other" }))
    assert.equal("args", upgrade.job_changed(old, { jarFile = "/a.jar", args = { "1" }, parallelism = 2 }))
    assert.equal("parallelism", upgrade.job_changed(old, { jarFile = "/a.jar", args = { "1", "2" } }))
    assert.equal("spec.job", upgrade.job_changed(nil, old))
  end)

  it("falls back from last-state to savepoint (savepointsDir) or stateless when the job changes", function()
    local ls = { jarFile = "/b.jar", upgradeMode = "last-state" }
    assert.same({ "last-state" }, { upgrade.effective(ls, { jarFile = "/b.jar", upgradeMode = "last-state" }) })
    local mode, why = upgrade.effective(ls, { jarFile = "/a.jar" })
    assert.equal("stateless", mode)
    assert.equal("spec.job.jarFile changed: the HA job graph is the old one", why)
    ls.savepointsDir = "/sp"
    assert.equal("savepoint", (upgrade.effective(ls, { jarFile = "/a.jar" })))
  end)

  it("writes the HA options by Flink version, none without last-state", function()
    local function cluster(image, job)
      return { metadata = { name = "c1", namespace = "ns" },
        spec = { image = { name = image }, job = job, jobManager = { ports = { rpc = 6123 } } } }
    end
    local ha = { jarFile = "/j.jar", upgradeMode = "last-state", highAvailability = { storageDir = "s3://b/ha" } }
    assert.same({ ["high-availability.type"] = "kubernetes", ["high-availability.storageDir"] = "s3://b/ha",
      ["kubernetes.cluster-id"] = "c1", ["kubernetes.namespace"] = "ns", ["high-availability.jobmanager.port"] = 6123 },
      flinkconf.ha_properties(cluster("flink:1.20.5", ha)))
    local old = flinkconf.ha_properties(cluster("flink:1.16.3", ha))
    assert.is_nil(old["high-availability.type"])
    assert.equal("org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory", old["high-availability"])
    assert.same({}, flinkconf.ha_properties(cluster("flink:1.20.5", { jarFile = "/j.jar" })))
    assert.same({}, flinkconf.ha_properties(cluster("flink:1.20.5", nil)))
  end)
end)
