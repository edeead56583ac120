-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/validate.lua: the fixtures in policies/testdata/validate/<case>/
-- (every case directory; input.yaml as given, optional old.yaml for an update, expected.yaml
-- {errors, warnings} of {path, message}, sorted; FC_UPDATE_FIXTURES=1 rewrites it from the
-- output), run as a plain module and inside a sandbox like the host's (support.fixtures); plus unit
-- tests. Each fixture input goes through defaults.apply first, as in render and admission.
local fx = require("support.fixtures")
local util = require("fc.util")
local defaults = require("defaults")
local validate = require("validate")

-- A list of {path, message} in a stable order, for comparison (as `flink-controller test` sorts).
local sorted = require("fc.fixtures").sorted_findings

local function run(v, raw, old_raw)
  local old = old_raw and defaults.apply(old_raw) or {}
  return v.check({ cluster = defaults.apply(util.deepcopy(raw)), raw = util.deepcopy(raw), old = old })
end

describe("validate fixtures", function()
  local boxed = fx.sandboxed("validate")
  local dirs = fx.cases("validate")
  it("has the cases the task asks for", function()
    fx.assert_cases(dirs, { "wordcount", "session-cluster", "access-scope-cluster", "access-scope-vpc",
      "access-scope-external", "access-scope-nodeport", "access-scope-headless", "replicas-negative",
      "port-80", "name-70-characters", "bad-enums", "unknown-fields", "update-session-to-job",
      "access-scope-bad", "duplicate-ports", "hadoop-gcp-incomplete", "job-rules", "memory",
      "memory-default-min-over-limit",
      "list-items-not-objects", "name-40-job", "name-41-session", "name-not-dns1035", "not-an-object",
      "required-missing", "sections-wrong-type", "type-errors", "update-cancel-resume", "update-cancel-revert",
      "update-cancel-still-requested", "update-job-to-session", "update-savepoint-generation",
      "update-savepoint-generation-next", "update-savepoints-dir-removed", "duplicate-ports-only",
      "gcp-mount-path-key-file", "memory-min-equals-limit", "volume-mount-types",
      "rarely-used-fields", "savepoint-retention", "upgrade-mode-needs", "upgrade-mode-last-state-no-dir",
      "upgrade-mode-last-state-ha", "rollback-needs-savepoints-dir" })
  end)
  for _, case in ipairs(dirs) do
    local dir = fx.cases_dir("validate") .. "/" .. case
    it(case, function()
      local raw = assert(fx.read_yaml(dir .. "/input.yaml"))
      local old = fx.read_yaml(dir .. "/old.yaml", true)
      local plain = run(validate, raw, old)
      local expected = assert(fx.expected(dir, { errors = sorted(plain.errors), warnings = sorted(plain.warnings) }))
      for _, v in ipairs({ validate, boxed }) do
        local got = run(v, raw, old)
        assert.are.same(sorted(expected.errors), sorted(got.errors))
        assert.are.same(sorted(expected.warnings), sorted(got.warnings))
      end
    end)
  end
end)

describe("validate.check", function()
  local function cluster(spec)
    return { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
             metadata = { name = "c", namespace = "ns" }, spec = spec }
  end
  local function valid_spec()
    return { image = { name = "flink:1.17" }, taskManager = { replicas = 1 }, job = { jarFile = "/j.jar" } }
  end

  it("accepts a minimal job cluster with no warnings", function()
    assert.are.same({ errors = {}, warnings = {} }, run(validate, cluster(valid_spec())))
  end)

  it("warns about each flinkProperties option the controller sets from the spec", function()
    local s = valid_spec()
    s.flinkProperties = { ["rest.port"] = "9081", ["jobmanager.rpc.address"] = "x", ["parallelism.default"] = "2" }
    local r = run(validate, cluster(s))
    assert.are.same({}, r.errors)
    assert.are.same({
      { path = "spec.flinkProperties[jobmanager.rpc.address]",
        message = "set by the controller from metadata.name; this entry is not written" },
      { path = "spec.flinkProperties[rest.port]",
        message = "set by the controller from spec.jobManager.ports.ui; this entry is not written" },
    }, sorted(r.warnings))
  end)

  it("reads JSON numbers decoded as floats (lua-cjson) as integers", function()
    local s = valid_spec()
    s.taskManager.replicas = 2.0
    s.jobManager = { ports = { ui = 8081.0 }, replicas = 1.0 }
    assert.are.same({}, run(validate, cluster(s)).errors)
  end)

  it("reports each quantity error of resources by path", function()
    local s = valid_spec()
    s.job.resources = { requests = { cpu = "1.5.5", memory = "1e3Mi", ["nvidia.com/gpu"] = "x" } }
    assert.are.same({
      { path = "spec.job.resources.requests.cpu", message = 'invalid quantity: unknown suffix ".5"' },
      { path = "spec.job.resources.requests.memory", message = 'invalid quantity: unknown suffix "e3Mi"' },
      { path = "spec.job.resources.requests[nvidia.com/gpu]", message = "invalid quantity: invalid number" },
    }, sorted(run(validate, cluster(s)).errors))
  end)

  it("reports an extraPorts item that is not an object once", function()
    local s = valid_spec()
    s.jobManager = { extraPorts = { 5 } }
    assert.are.same({ { path = "spec.jobManager.extraPorts[0]", message = "must be an object" } },
      run(validate, cluster(s)).errors)
  end)

  it("compares memoryOffHeapMin and the limit in bytes, equal allowed", function()
    local s = valid_spec()
    s.taskManager.memoryOffHeapMin = "1Gi"
    s.taskManager.resources = { limits = { memory = "1073741824" } }
    assert.are.same({}, run(validate, cluster(s)).errors)
    s.taskManager.resources.limits.memory = "1073741823"
    assert.are.same({ { path = "spec.taskManager.memoryOffHeapMin",
                        message = "must be <= resources.limits.memory (1Gi > 1073741823)" } },
      run(validate, cluster(s)).errors)
  end)

  it("accepts a 40-character name and refuses 41, job cluster or not", function()
    local c = cluster(valid_spec())
    c.metadata.name = string.rep("a", 40)
    assert.are.same({ errors = {}, warnings = {} }, run(validate, c))
    c.metadata.name = string.rep("a", 41)
    local want = { { path = "metadata.name", message = "must be at most 40 characters so that the pods' "
      .. 'controller-revision-hash label "<name>-taskmanager-<hash>" fits in 63' } }
    assert.are.same(want, run(validate, c).errors)
    c.spec.job = nil
    assert.are.same(want, run(validate, c).errors)
  end)

  it("treats an empty old as a creation and a missing raw as the cluster", function()
    local c = defaults.apply(cluster(valid_spec()))
    c.spec.job.cancelRequested = true
    local r = validate.check({ cluster = c, old = {} })
    assert.are.same({ { path = "spec.job.cancelRequested", message = "must not be true at creation" } }, r.errors)
  end)

  it("never raises on malformed input", function()
    local junk = { "s", 7, true, { 1, 2 }, {}, { {} } }
    local fields = { "image", "jobManager", "taskManager", "job", "hadoopConfig", "gcpConfig",
      "flinkProperties", "envVars" }
    local sub = { "ports", "extraPorts", "resources", "cleanupPolicy", "serviceAccount", "replicas",
      "memoryOffHeapMin", "name", "args" }
    for _, v in ipairs(junk) do
      assert.has_no.errors(function() validate.check({ cluster = v, raw = v, old = v }) end)
      assert.has_no.errors(function() run(validate, { metadata = v, spec = v }) end)
      for _, f in ipairs(fields) do
        assert.has_no.errors(function() run(validate, cluster({ [f] = v }), cluster({ [f] = v })) end)
        for _, s in ipairs(sub) do
          local spec = { [f] = { [s] = v, limits = v } }
          assert.has_no.errors(function() run(validate, cluster(spec), cluster(spec)) end)
        end
      end
    end
    assert.has_no.errors(function() validate.check({}) end)
    assert.are.same({ { path = "", message = "must be an object" } }, validate.check({}).errors)
  end)
end)

describe("validate name helpers (apimachinery util/validation)", function()
  it("dns1035_label", function()
    assert.is_true(validate.dns1035_label("wordcount"))
    assert.is_true(validate.dns1035_label("a-1"))
    assert.is_false(validate.dns1035_label("1a"))
    assert.is_false(validate.dns1035_label("a-"))
    assert.is_false(validate.dns1035_label("A"))
    assert.is_false(validate.dns1035_label(string.rep("a", 64)))
    assert.is_true(validate.dns1035_label(string.rep("a", 63)))
  end)
  it("dns1123_label", function()
    assert.is_true(validate.dns1123_label("1a"))
    assert.is_false(validate.dns1123_label("-a"))
    assert.is_false(validate.dns1123_label("a.b"))
  end)
  it("port_name (IANA_SVC_NAME)", function()
    assert.is_true(validate.port_name("metrics"))
    assert.is_true(validate.port_name("web-1"))
    assert.is_false(validate.port_name("9249"))
    assert.is_false(validate.port_name("a--b"))
    assert.is_false(validate.port_name("-a"))
    assert.is_false(validate.port_name("sixteen-chars-xx"))
    assert.is_false(validate.port_name("Metrics"))
  end)
end)

describe("validate.check at admission: the user-control annotation", function()
  local KEY = "flinkclusters.flinkoperator.k8s.io/user-control"
  local AT = "metadata.annotations[" .. KEY .. "]"
  local function job_cluster(value, job)
    return { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
      metadata = { name = "c", annotations = value and { [KEY] = value } or nil },
      spec = { image = { name = "flink:1.17" }, taskManager = { replicas = 1 },
        job = job or { jarFile = "/j.jar", savepointsDir = "/sp" } } }
  end
  local function check(c, old, admission)
    return validate.check({ cluster = defaults.apply(c), raw = c, old = old and defaults.apply(old) or {},
      admission = admission ~= false }).errors
  end

  it("takes savepoint and job-cancel on a running job cluster", function()
    local old = job_cluster(nil)
    old.status = { components = { job = { state = "Running" } } }
    assert.are.same({}, check(job_cluster("savepoint"), old))
    assert.are.same({}, check(job_cluster("job-cancel"), old))
  end)

  it("refuses another value, a session cluster, a savepoint without savepointsDir", function()
    assert.are.same({ { path = AT, message = 'must be "savepoint" or "job-cancel"' } }, check(job_cluster("stop")))
    local session = job_cluster("savepoint")
    session.spec.job = nil
    assert.are.same({ { path = AT, message = "savepoint needs a job cluster (spec.job)" } }, check(session))
    assert.are.same({ { path = AT, message = "savepoint needs spec.job.savepointsDir" } },
      check(job_cluster("savepoint", { jarFile = "/j.jar" })))
  end)

  it("refuses one while another is in progress, and once the job has ended", function()
    local old = job_cluster(nil)
    old.status = { control = { name = "savepoint", state = "Progressing" } }
    assert.are.same({ { path = AT, message = 'user control "savepoint" is still in progress' } },
      check(job_cluster("job-cancel"), old))
    old.status = { components = { job = { state = "Succeeded" } } }
    assert.are.same({ { path = AT, message = "the job has ended (Succeeded)" } }, check(job_cluster("savepoint"), old))
  end)

  it("judges only a new or changed value, and only at admission", function()
    local old = job_cluster("stop")
    assert.are.same({}, check(job_cluster("stop"), old))           -- unchanged: not this request's
    assert.are.same({}, check(job_cluster("stop"), nil, false))    -- the controller's own pass
  end)
end)
