-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/defaults.lua: the fixtures in policies/testdata/defaults/<case>/
-- (every case directory; input.yaml -> expected.yaml, compared structurally;
-- FC_UPDATE_FIXTURES=1 rewrites expected.yaml from the output), run both as a plain module and
-- in the production sandbox (support.fixtures), plus unit tests of the rules.
local fx = require("support.fixtures")
local util = require("fc.util")
local defaults = require("defaults")

describe("defaults fixtures", function()
  local boxed = fx.sandboxed("defaults")
  local dirs = fx.cases("defaults")
  it("has the cases the task asks for", function()
    fx.assert_cases(dirs, { "wordcount", "session-latest", "wrong-types-left", "nulls-filled",
      "explicit-values-kept", "partial-sections" })
  end)
  for _, case in ipairs(dirs) do
    local dir = fx.cases_dir("defaults") .. "/" .. case
    it(case, function()
      local input = fx.read_yaml(dir .. "/input.yaml")
      local got = defaults.apply(util.deepcopy(input))
      local expected = fx.expected(dir, got)
      assert.are.same(expected, got)
      -- the production host gets the input as the controller decodes it: nulls dropped
      assert.are.same(expected, boxed.apply(fx.strip_null(input)))
    end)
  end
end)

describe("defaults.pull_policy (Kubernetes SetDefaults_Container)", function()
  local cases = {
    { "flink", "Always" },
    { "flink:latest", "Always" },
    { "flink:1.9.2", "IfNotPresent" },
    { "docker.io/library/flink:1.17.1-scala_2.12", "IfNotPresent" },
    { "registry.example.com:5000/flink", "Always" },
    { "registry.example.com:5000/flink:latest", "Always" },
    { "registry.example.com:5000/team/flink:1.17", "IfNotPresent" },
    { "flink@sha256:abcd", "IfNotPresent" },
    { "flink:latest@sha256:abcd", "Always" },
    { "flink:1.9@sha256:abcd", "IfNotPresent" },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " -> " .. c[2], function()
      assert.are.equal(c[2], defaults.pull_policy(c[1]))
    end)
  end
end)

describe("defaults.apply", function()
  local function minimal()
    return {
      apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
      metadata = { name = "c" },
      spec = { image = { name = "flink:1.17" }, taskManager = { replicas = 1 }, job = { jarFile = "/j.jar" } },
    }
  end

  it("does not change its input", function()
    local input = minimal()
    local out = defaults.apply(input)
    assert.are.same(minimal(), input)
    assert.are.equal(6123, out.spec.jobManager.ports.rpc)
  end)

  it("is idempotent", function()
    local once = defaults.apply(minimal())
    assert.are.same(once, defaults.apply(once))
  end)

  it("fills a whole missing spec except the required fields", function()
    local out = defaults.apply({ metadata = { name = "x" } })
    assert.are.same({
      image = {},
      jobManager = { replicas = 1, accessScope = "Cluster",
                     ports = { rpc = 6123, blob = 6124, query = 6125, ui = 8081 },
                     memoryOffHeapRatio = 25, memoryOffHeapMin = "600M" },
      taskManager = { ports = { data = 6121, rpc = 6122, query = 6125 },
                      memoryOffHeapRatio = 25, memoryOffHeapMin = "600M" },
      revisionHistoryLimit = 10, recreateOnUpdate = true,
    }, out.spec)
    assert.is_nil(out.spec.taskManager.replicas)
    assert.is_nil(out.spec.job)
  end)

  it("keeps false values, which are set (takeSavepointOnUpgrade false)", function()
    local input = minimal()
    input.spec.job.takeSavepointOnUpgrade = false
    input.spec.recreateOnUpdate = false
    local out = defaults.apply(input)
    assert.is_false(out.spec.job.takeSavepointOnUpgrade)
    assert.is_false(out.spec.recreateOnUpdate)
  end)

  it("treats a JSON null (lua-cjson light userdata) as unset", function()
    local cjson = require("cjson")
    local input = minimal()
    input.spec.job.parallelism = cjson.null
    input.spec.jobManager = cjson.null
    local out = defaults.apply(input)
    assert.are.equal(1, out.spec.job.parallelism)
    assert.are.equal(8081, out.spec.jobManager.ports.ui)
  end)

  it("never raises on values of the wrong type", function()
    for _, v in ipairs({ "s", 5, true, { 1, 2 }, {} }) do
      assert.has_no.errors(function() defaults.apply(v) end)
      assert.has_no.errors(function() defaults.apply({ spec = v }) end)
      for _, field in ipairs({ "image", "jobManager", "taskManager", "job" }) do
        assert.has_no.errors(function() defaults.apply({ spec = { [field] = v } }) end)
        assert.has_no.errors(function()
          defaults.apply({ spec = { [field] = { ports = v, cleanupPolicy = v, name = v } } })
        end)
      end
    end
    assert.are.equal("s", defaults.apply("s"))
    assert.are.same({ spec = 5 }, defaults.apply({ spec = 5 }))
    local out = defaults.apply({ spec = { image = { name = 7 } } })
    assert.are.equal(7, out.spec.image.name)
    assert.is_nil(out.spec.image.pullPolicy)
  end)
end)

describe("lib.image", function()
  local image = require("lib.image")
  it("splits a reference into name, tag and digest", function()
    assert.same({ name = "flink", tag = "1.17", digest = "sha256:ab" },
      image.parse("registry:5000/team/flink:1.17@sha256:ab"))
    assert.same({ name = "flink" }, image.parse("registry:5000/flink"))
    assert.same({ name = "flink", digest = "sha256:ab" }, image.parse("flink@sha256:ab"))
    assert.same({ name = "flink", tag = "latest" }, image.parse("docker.io/library/flink:latest"))
  end)
end)
