-- SPDX-License-Identifier: Apache-2.0
-- Specs of fc.override (lua/fc/override.lua): the ConfigMap keys of `run --policy-configmap`,
-- the refusals, and the message of a set whose fixtures failed.
local override = require("fc.override")

describe("fc.override.path", function()
  it("maps each key form to its file in the policy dir", function()
    assert.are.equal("cluster.lua", override.path("cluster.lua"))
    assert.are.equal("my_policy.lua", override.path("my_policy.lua"))
    assert.are.equal("lib/names.lua", override.path("lib.names.lua"))
    assert.are.equal("testdata/cluster/wordcount/input.yaml", override.path("testdata.cluster.wordcount.input.yaml"))
    assert.are.equal("testdata/validate/update-x/old.yaml", override.path("testdata.validate.update-x.old.yaml"))
    assert.are.equal("testdata/job/a/expected.yaml", override.path("testdata.job.a.expected.yaml"))
    assert.are.equal("testdata/job/a/expected-partial.yaml", override.path("testdata.job.a.expected-partial.yaml"))
  end)

  it("keeps dots inside a case name (built-in cases such as flink-1.10-keys)", function()
    assert.are.equal("testdata/cluster/flink-1.10-keys/expected.yaml",
      override.path("testdata.cluster.flink-1.10-keys.expected.yaml"))
  end)

  it("refuses any other shape, saying which forms there are", function()
    local cases = {
      ["README.md"] = "not <policy>.lua, lib.<name>.lua or testdata.<policy>.<case>."
        .. "<input|old|expected|expected-partial>.yaml",
      ["cluster_spec.lua"] = "<policy>.lua: <policy> must be a Lua name not ending in _spec",
      ["my-policy.lua"] = "<policy>.lua: <policy> must be a Lua name not ending in _spec",
      ["lib.a.b.lua"] = "lib.<name>.lua: <name> must be a Lua name",
      ["testdata.cluster.x.output.yaml"] =
        "a fixture key ends with .input.yaml, .old.yaml, .expected.yaml or .expected-partial.yaml",
      ["testdata.cluster.input.yaml"] =
        "a fixture key ends with .input.yaml, .old.yaml, .expected.yaml or .expected-partial.yaml",
      ["testdata.cluster.-x.input.yaml"] = "testdata.<policy>.<case>...: <case> must start with a letter or "
        .. "digit and hold only letters, digits, '.', '_' and '-'",
      ["testdata.clu-ster.x.input.yaml"] = "testdata.<policy>...: <policy> must be a Lua name",
    }
    for key, why in pairs(cases) do
      local path, got = override.path(key)
      assert.is_nil(path, key)
      assert.are.equal(why, got, key)
    end
  end)
end)

describe("fc.override.files", function()
  it("lists the files in path order, and the other expectation of each case given one", function()
    local got = override.files({ data = {
      ["testdata.cluster.wordcount.expected-partial.yaml"] = "p",
      ["cluster.lua"] = "return {}",
      ["lib.names.lua"] = "return {}",
      ["testdata.job.x.expected.yaml"] = "e",
    } })
    assert.are.same({
      files = {
        { path = "cluster.lua", text = "return {}" },
        { path = "lib/names.lua", text = "return {}" },
        { path = "testdata/cluster/wordcount/expected-partial.yaml", text = "p" },
        { path = "testdata/job/x/expected.yaml", text = "e" },
      },
      remove = { "testdata/cluster/wordcount/expected.yaml", "testdata/job/x/expected-partial.yaml" },
    }, got)
  end)

  it("is an empty set for an empty ConfigMap", function()
    assert.are.same({ files = {}, remove = {} }, override.files({}))
  end)

  it("refuses the first bad key in key order, naming it", function()
    assert.are.same({ error = "key a.txt: not <policy>.lua, lib.<name>.lua or testdata.<policy>.<case>."
      .. "<input|old|expected|expected-partial>.yaml" },
      override.files({ data = { ["b.txt"] = "", ["a.txt"] = "", ["cluster.lua"] = "" } }))
  end)

  it("refuses binaryData and a case given both expectations", function()
    assert.are.same({ error = "key cluster.lua: binaryData: policies and fixtures are text (use data)" },
      override.files({ data = {}, binaryData = { ["cluster.lua"] = "AA==" } }))
    assert.are.same({ error = "key testdata.job.x.expected-partial.yaml: the case also has "
      .. "testdata.job.x.expected.yaml (a case has one expectation)" },
      override.files({ data = {
        ["testdata.job.x.expected.yaml"] = "",
        ["testdata.job.x.expected-partial.yaml"] = "",
      } }))
  end)
end)

describe("fc.override.summary", function()
  local out = table.concat({
    "ok cluster/a",
    "FAIL cluster/b: [3].spec.replicas: expected 1, got 2",
    "FAIL cluster/c: cluster.lua:12: boom",
    "ok cluster/d",
    "FAIL job/e: job.decide: x",
    "FAIL status/f: y",
    "3 passed, 4 failed",
  }, "\n")

  it("gives the first failures with their difference, and how many more", function()
    assert.are.equal("cluster/b: [3].spec.replicas: expected 1, got 2; cluster/c: cluster.lua:12: boom; "
      .. "job/e: job.decide: x; and 1 more", override.summary({ output = out }))
    assert.are.equal("cluster/b: [3].spec.replicas: expected 1, got 2", override.summary({ output = "FAIL "
      .. "cluster/b: [3].spec.replicas: expected 1, got 2\n0 passed, 1 failed\n", max = 1 }))
  end)

  it("gives a case of several differences with its first", function()
    assert.are.equal("cluster/b: 2 differences: [3].metadata.labels.x: expected absent, got \"y\", ...; "
      .. "cluster/c: cluster.lua:12: boom", override.summary({ output = table.concat({
        "FAIL cluster/b: 2 differences:",
        "    [3].metadata.labels.x: expected absent, got \"y\"",
        "    [3].spec.replicas: expected 1, got 2",
        "FAIL cluster/c: cluster.lua:12: boom",
        "0 passed, 2 failed" }, "\n") }))
  end)

  it("falls back to the last line, or says there was no output", function()
    assert.are.equal("test: /x: not a directory", override.summary({ output = "test: /x: not a directory\n\n" }))
    assert.are.equal("no output", override.summary({ output = "" }))
  end)
end)

describe("an override of one hook (the built-in kept as lib/builtin_<policy>.lua by core/override.c)", function()
  local fx = require("support.fixtures")
  local host = require("fc.host")
  local contract = require("fc.contract")
  after_each(function() host.configure({ policy_dir = fx.ROOT .. "/policies" }) end)

  it("replaces that hook; the others are the built-in's", function()
    local dir = fx.tmpdir()
    assert(os.execute("cp -r " .. fx.quote(fx.ROOT .. "/policies/lib") .. " " .. fx.quote(dir .. "/lib")))
    fx.write(dir .. "/lib/builtin_status.lua", fx.read(fx.ROOT .. "/policies/status.lua"))
    fx.write(dir .. "/status.lua", 'local status = require("lib.builtin_status")\n'
      .. 'function status.compute() return { state = "Overridden" } end\nreturn status\n')
    host.configure({ policy_dir = dir })
    local ok, st = contract.call(host, "status", "compute", {})
    assert.is_true(ok, st)
    assert.same({ state = "Overridden" }, st)
    host.configure({ policy_dir = fx.ROOT .. "/policies" })
    local input = { cluster = { metadata = { name = "a" }, spec = {} } }
    local wok, want = contract.call(host, "status", "components", input)
    assert.is_true(wok, want)
    assert.is_not_nil(next(want))
    host.configure({ policy_dir = dir })
    local ok2, got = contract.call(host, "status", "components", input)
    assert.is_true(ok2, got)
    assert.same(want, got)
  end)

  it("an override of settings.lua alone (from lib.builtin_settings) changes job.decide's restart backoff; "
    .. "restart.lua, not in the override, is the built-in", function()
    local dir = fx.tmpdir()
    -- as core/override.c makes the set: the built-in files, the key's file over them, the built-in kept
    assert(os.execute("cp -r " .. fx.quote(fx.ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
    fx.write(dir .. "/lib/builtin_settings.lua", fx.read(fx.ROOT .. "/policies/settings.lua"))
    fx.write(dir .. "/settings.lua", 'local settings = require("lib.builtin_settings")\n'
      .. "settings.RESTART_INITIAL_DELAY_SECONDS = 30\nsettings.RESTART_BACKOFF_FACTOR = 1\nreturn settings\n")
    local case = fx.ROOT .. "/policies/testdata/job/decide-restart-waits/input.yaml"
    local input = fx.read_yaml(case).input
    host.configure({ policy_dir = dir })
    local ok, d = contract.call(host, "job", "decide", input)
    host.configure({ policy_dir = fx.ROOT .. "/policies" })
    local ok0, d0 = contract.call(host, "job", "decide", input)
    os.execute("rm -rf " .. fx.quote(dir))
    assert.is_true(ok, d)
    assert.is_true(ok0, d0)
    assert.same({ 30, "2023-11-14T22:15:30Z" }, { d.requeue_after, d.job.nextRestartTime })
    assert.same({ 20, "2023-11-14T22:15:20Z" }, { d0.requeue_after, d0.job.nextRestartTime })
  end)
end)
