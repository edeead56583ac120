-- SPDX-License-Identifier: Apache-2.0
-- fc.contract: the hook contract checked in one place (inputs with every documented key, results
-- checked, typed failures, the declared contract version).
local fx = require("support.fixtures")
local host = require("fc.host")
local contract = require("fc.contract")

-- A policy dir holding `files` ({name = text}).
local function dir_with(files)
  local dir = fx.tmpdir()
  for name, text in pairs(files) do fx.write(dir .. "/" .. name, text) end
  return dir
end

describe("fc.contract", function()
  after_each(function() host.configure({ policy_dir = "policies", timeout_ms = 200 }) end)

  it("names its version and a contract for every hook the framework calls", function()
    assert.equal("hooks.flinkoperator.k8s.io/v1", contract.API_VERSION)
    local hooks = {}
    for k in pairs(contract.HOOKS) do hooks[#hooks + 1] = k end
    table.sort(hooks)
    assert.same({ "cluster.desired", "cluster.taskmanager_pod", "defaults.apply", "health.decide", "job.decide",
      "job.observe", "rollback.decide", "savepoint.decide", "status.components", "status.compute", "validate.check" },
      hooks)
  end)

  it("fills every documented key the caller left out, empty of its kind, and keeps optional ones absent", function()
    local input = { cluster = { metadata = { name = "a" } }, now = 5 }
    local n = assert(contract.normalize("job", "decide", input))
    assert.same({ cluster = { metadata = { name = "a" } }, job = {}, flink_state = "", flink = {}, savepoint = {},
      outcome = {}, children = {}, components = {}, update = {}, now = 5 }, n)
    assert.same({ cluster = { metadata = { name = "a" } }, now = 5 }, input) -- the caller's table is not changed
    local s = assert(contract.normalize("status", "components", {}))
    assert.is_nil(s.taskmanagers)
    assert.same({ cluster = {}, raw = {}, old = {}, admission = false }, contract.normalize("validate", "check", nil))
  end)

  it("types a key of the wrong kind in an input as a contract failure of the framework", function()
    local ok, f = contract.call(host, "job", "decide", { cluster = {}, now = "soon" })
    assert.is_false(ok)
    assert.same({ kind = "contract", policy = "job", hook = "job.decide",
      message = "job.lua: decide: input: now must be a number, got string" }, f)
  end)

  it("passes the normalized input to the policy and checks its result", function()
    host.configure({ policy_dir = dir_with({ ["job.lua"] =
      "return { observe = function(i) return { job = { seen = type(i.children) .. type(i.flink) } } end,\n"
      .. "  decide = function() return { job = 'running' } end }\n" }) })
    local ok, res = contract.call(host, "job", "observe", { cluster = {} })
    assert.is_true(ok, res)
    assert.same({ job = { seen = "tabletable" } }, res)
    local ok2, f = contract.call(host, "job", "decide", {})
    assert.is_false(ok2)
    assert.same({ kind = "badresult", policy = "job", hook = "job.decide",
      message = "job.lua: decide: job must be a table, got string" }, f)
  end)

  it("types the host's failures: a Lua error, the time budget, a result that is not plain data", function()
    host.configure({ timeout_ms = 50, policy_dir = dir_with({ ["status.lua"] =
      "return { components = function() error('no') end,\n"
      .. "  compute = function() while true do end end }\n",
      ["cluster.lua"] = "return { desired = function() return { objects = { print } } end }\n" }) })
    local _, e = contract.call(host, "status", "components", {})
    assert.same({ "error", "status.components", "status.lua:1: no" }, { e.kind, e.hook, e.message })
    local _, t = contract.call(host, "status", "compute", {})
    assert.same({ "timeout", "status.compute" }, { t.kind, t.hook })
    local _, b = contract.call(host, "cluster", "desired", {})
    assert.same({ "badresult",
      "cluster.lua:1: desired returned a bad result: objects[1]: function value is not allowed" },
      { b.kind, b.message })
  end)

  it("accepts a policy declaring this contract and refuses one declaring another", function()
    local text = "return { contract = %q, components = function() return {} end }\n"
    host.configure({ policy_dir = dir_with({ ["status.lua"] = text:format(contract.API_VERSION) }) })
    assert.same({ true, {} }, { contract.call(host, "status", "components", {}) })
    host.configure({ policy_dir = dir_with({ ["status.lua"] = text:format("hooks.flinkoperator.k8s.io/v2") }) })
    local ok, f = contract.call(host, "status", "components", {})
    assert.is_false(ok)
    assert.same({ kind = "contract", policy = "status", hook = "status.components",
      message = 'status.lua: declares contract "hooks.flinkoperator.k8s.io/v2"; this controller implements '
        .. '"hooks.flinkoperator.k8s.io/v1"' }, f)
    host.configure({ policy_dir = dir_with({ ["status.lua"] = "return { contract = 1, components = print }\n" }) })
    local _, g = contract.call(host, "status", "components", {})
    assert.same({ "error", "status.lua: contract must be a string (the hook contract's version), got number" },
      { g.kind, g.message })
  end)

  it("is what the shipped policies declare", function()
    for _, p in ipairs({ "defaults", "validate", "cluster", "job", "savepoint", "status" }) do
      assert.equal(contract.API_VERSION, require("policies." .. p).contract, p)
    end
  end)
end)
