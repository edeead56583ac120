-- SPDX-License-Identifier: Apache-2.0
-- fc.rules against deploy/crd.yaml and the Lua twins: fails on drift (a CEL rule without its
-- entry or an entry without its rule, any difference of the rule's fields, a twin that does not
-- refuse a spec breaking the rule, or says it in other words than the table records).
local lyaml = require("lyaml")
local util = require("fc.util")
local rules = require("fc.rules")
local defaults = require("policies.defaults")
local validate = require("policies.validate")

local ROOT = os.getenv("FC_ROOT") or "."

-- The CEL rules of deploy/crd.yaml: {at=, rule=, ...} in schema order (properties sorted); of its
-- document `doc` (1 the FlinkCluster's, 2 the FlinkJob's).
local function crd_rules(doc)
  local f = assert(io.open(ROOT .. "/deploy/crd.yaml"))
  local text = f:read("a")
  f:close()
  local out = {}
  local function walk(n, path)
    if type(n) ~= "table" then return end
    for _, r in ipairs(n["x-kubernetes-validations"] or {}) do
      out[#out + 1] = { at = path, rule = r.rule, message = r.message, messageExpression = r.messageExpression,
        fieldPath = r.fieldPath, reason = r.reason, optionalOldSelf = r.optionalOldSelf }
    end
    local keys = {}
    for k in pairs(n.properties or {}) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do walk(n.properties[k], (path == "" and "" or path .. ".") .. k) end
    if n.items then walk(n.items, path .. "[]") end
  end
  walk(lyaml.load(text, { all = true })[doc or 1].spec.versions[1].schema.openAPIV3Schema, "")
  return out
end

local FIELDS = { "at", "rule", "message", "messageExpression", "fieldPath", "reason", "optionalOldSelf" }

local function session()
  return { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
    metadata = { name = "session", namespace = "ns" },
    spec = { image = { name = "flink:1.17.1" }, taskManager = { replicas = 1 } } }
end

local function job_cluster()
  local c = session()
  c.spec.job = { jarFile = "/cache/app.jar", savepointsDir = "/cache/savepoints" }
  return c
end

local function native(c)
  c.spec.taskManager = { mode = "Native", slots = 2 }
  return c
end

-- Per entry: a spec breaking the rule (and the old spec, for an update rule), one per message.
local CASES = {
  ["name-dns1035"] = { function() local c = session(); c.metadata.name = "Bad_Name"; return c end },
  ["name-length"] = { function() local c = session(); c.metadata.name = string.rep("a", 41); return c end },
  ["savepoint-generation"] = { function()
    local c = job_cluster(); c.spec.job.savepointGeneration = 2; return c, job_cluster() end },
  ["jm-replicas-ha"] = { function() local c = job_cluster(); c.spec.jobManager = { replicas = 2 }; return c end },
  ["last-state-storage"] = { function() local c = job_cluster(); c.spec.job.upgradeMode = "last-state"; return c end },
  ["job-added-removed"] = { function() return job_cluster(), session() end,
    function() return session(), job_cluster() end },
  ["native-slots"] = { function() local c = native(job_cluster()); return c end,
    function() local c = native(session()); c.spec.taskManager.slots = nil; return c end },
  ["gcp-mount-path"] = { function()
    local c = session()
    c.spec.gcpConfig = { serviceAccount = { secretName = "gcp", keyFile = "key.json",
      mountPath = "/etc/gcp/key.json" } }
    return c
  end },
  ["cancel-at-create"] = { function() local c = job_cluster(); c.spec.job.cancelRequested = true; return c end },
  ["savepoints-dir-removed"] = { function()
    local c = job_cluster(); c.spec.job.savepointsDir = nil; return c, job_cluster() end },
  ["cancel-revert"] = { function()
    local old = job_cluster(); old.spec.job.cancelRequested = true
    local c = job_cluster(); c.spec.job.cancelRequested = false
    return c, old
  end },
  ["savepoint-mode-dir"] = { function()
    local c = job_cluster(); c.spec.job.savepointsDir = nil; c.spec.job.upgradeMode = "savepoint"; return c end },
  ["rollback-dir"] = { function()
    local c = job_cluster(); c.spec.job.savepointsDir = nil; c.spec.job.rollback = { enabled = true }; return c end },
  ["jm-port-numbers"] = { function()
    local c = session(); c.spec.jobManager = { ports = { rpc = 6124 } }; return c end },
  ["jm-extra-port-numbers"] = { function()
    local c = session(); c.spec.jobManager = { extraPorts = { { name = "x", containerPort = 8081 } } }; return c end },
  ["jm-extra-port-names"] = { function()
    local c = session(); c.spec.jobManager = { extraPorts = { { name = "ui", containerPort = 9000 } } }; return c end },
  ["jm-extra-port-name-format"] = { function()
    local c = session()
    c.spec.jobManager = { extraPorts = { { name = "a--b", containerPort = 9000 } } }
    return c
  end },
  ["tm-replicas"] = { function() local c = session(); c.spec.taskManager.replicas = nil; return c end },
  ["tm-port-numbers"] = { function()
    local c = session(); c.spec.taskManager.ports = { rpc = 6121 }; return c end },
  ["tm-extra-port-numbers"] = { function()
    local c = session(); c.spec.taskManager.extraPorts = { { name = "x", containerPort = 6122 } }; return c end },
  ["tm-extra-port-names"] = { function()
    local c = session(); c.spec.taskManager.extraPorts = { { name = "rpc", containerPort = 9000 } }; return c end },
  ["tm-extra-port-name-format"] = { function()
    local c = session(); c.spec.taskManager.extraPorts = { { name = "a--b", containerPort = 9000 } }; return c end },
  ["tm-max-extended"] = { function()
    local c = native(session()); c.spec.taskManager.maxPerTaskManager = { extendedResources = { gpu = "1" } }
    return c
  end },
  ["tm-profile-extended"] = { function()
    local c = native(session()); c.spec.taskManager.resourceProfile = { extendedResources = { gpu = "1" } }
    return c
  end },
}

-- validate.check's errors for raw (and old), as render and admission call it (defaults first).
local function errors_of(raw, old_raw)
  local old = old_raw and defaults.apply(old_raw) or {}
  local r = validate.check({ cluster = defaults.apply(util.deepcopy(raw)), raw = util.deepcopy(raw), old = old })
  return r.errors or {}
end

describe("fc.rules", function()
  it("lists every CEL rule of deploy/crd.yaml, with the same fields, and no other", function()
    local crd = crd_rules()
    assert.equal(#crd, #rules.list)
    for i, c in ipairs(crd) do
      local e = rules.list[i]
      for _, f in ipairs(FIELDS) do
        assert.equal(c[f], e[f], string.format("entry %d (%s): %s differs from deploy/crd.yaml", i, e.id, f))
      end
    end
  end)

  it("lists every CEL rule of the FlinkJob CRD (rules.flinkjob), with the same fields, and no other", function()
    local crd = crd_rules(2)
    assert.equal(#crd, #rules.flinkjob)
    for i, c in ipairs(crd) do
      local e = rules.flinkjob[i]
      for _, f in ipairs(FIELDS) do
        assert.equal(c[f], e[f], string.format("FlinkJob entry %d (%s): %s differs from deploy/crd.yaml", i, e.id, f))
      end
    end
  end)

  it("has a unique id and a twin for each entry", function()
    local seen = {}
    for _, e in ipairs(rules.list) do
      assert.is_nil(seen[e.id], e.id)
      seen[e.id] = true
      assert.equal("table", type(e.twin), e.id)
      assert.equal("string", type(e.twin.check), e.id)
      assert.equal("string", type(e.twin.path), e.id)
      assert.same(e, rules.by_id[e.id])
    end
  end)

  for _, e in ipairs(rules.list) do
    it("twin of " .. e.id .. " (" .. e.twin.check .. ") refuses the spec at its path in the recorded words",
      function()
        local cases = CASES[e.id]
        assert.is_table(cases, "no case for " .. e.id)
        local messages = rules.twin_messages(e)
        assert.equal(#messages, #cases)
        for i, case in ipairs(cases) do
          local found = {}
          for _, err in ipairs(errors_of(case())) do
            if err.path == e.twin.path then found[#found + 1] = err.message end
          end
          assert.same({ messages[i] }, found)
        end
      end)
  end
end)
