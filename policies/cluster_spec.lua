-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/cluster.lua and its helpers (lib.names, lib.flinkconf, lib.logconf,
-- lib.pods, lib.submitter).
-- Fixtures: policies/testdata/cluster/<case>/input.yaml (a user manifest, as applied) and
-- expected.yaml (the list of desired objects), compared structurally after defaults.apply.
-- Every case directory is tested. FC_UPDATE_FIXTURES=1 rewrites the expected.yaml files from
-- the policy's output (review the diff before committing: the fixtures are the contract).
local lyaml = require("lyaml")
local fx = require("support.fixtures")
local util = require("fc.util")
local cluster = require("cluster")
local defaults = require("defaults")
local names = require("lib.names")
local flinkconf = require("lib.flinkconf")
local flinkversion = require("lib.flinkversion")
local logconf = require("lib.logconf")
local pods = require("lib.pods")
local submit = require("lib.submitter")
local confighash = require("lib.confighash")

local ROOT = fx.ROOT
local TESTDATA = fx.cases_dir("cluster")
local read, write, load_yaml, strip_null, first_diff = fx.read, fx.write, fx.load_yaml, fx.strip_null, fx.first_diff

-- Every case directory under policies/testdata/cluster/ (a new one is tested without editing
-- this file); the "has the cases" test below keeps the ones this spec was written for.
local CASES = fx.cases("cluster")

local function render(manifest)
  return cluster.desired({ cluster = defaults.apply(manifest) }).objects
end

-- Walks every table of `v`; calls f(table, path).
local function walk(v, f, path)
  path = path or "$"
  if type(v) ~= "table" then return end
  f(v, path)
  for k, x in pairs(v) do walk(x, f, path .. "." .. tostring(k)) end
end

local function by_kind(objects, kind, name)
  for _, o in ipairs(objects) do
    if o.kind == kind and (name == nil or o.metadata.name == name) then return o end
  end
  return nil
end

local function env_of(container)
  local out = {}
  for _, e in ipairs(container.env or {}) do out[e.name] = e end
  return out
end

-- The Flink configuration of rendered objects as a {key = value} map: config.yaml read as
-- YAML when the ConfigMap has it, else the legacy flink-conf.yaml's `key: value` lines.
local function conf_of(objects)
  local data = by_kind(objects, "ConfigMap").data
  if data["config.yaml"] then return lyaml.load(data["config.yaml"]) end
  local props = {}
  for line in data["flink-conf.yaml"]:gmatch("[^\n]+") do
    local k, v = line:match("^(.-): (.*)$")
    props[k] = v
  end
  return props
end

local function fixture_objects(case)
  return render(load_yaml(TESTDATA .. "/" .. case .. "/input.yaml"))
end

describe("cluster policy fixtures", function()
  it("has the cases", function()
    fx.assert_cases(CASES, {
      "wordcount", "session", "session-full", "job-full",
      "access-vpc", "access-external", "access-nodeport", "access-headless",
      "ingress-plain", "ingress-tls",
      "memory-1gi-defaults", "memory-4gi-25", "flink-1.9-keys", "flink-1.10-keys", "flink-1.17-keys",
      "flinkproperties-memory", "config-hash", "last-state-ha", "last-state-ha-account",
    })
  end)

  for _, case in ipairs(CASES) do
    it("renders testdata/cluster/" .. case .. " as expected.yaml", function()
      local got = fixture_objects(case)
      local want = fx.expected(TESTDATA .. "/" .. case, got, { strip = true })
      assert.is_nil(first_diff(got, want))
    end)
  end

  it("uses only manifests that validate.lua accepts", function()
    local validate = require("validate")
    for _, case in ipairs(CASES) do
      local raw = load_yaml(TESTDATA .. "/" .. case .. "/input.yaml")
      local r = validate.check({ cluster = defaults.apply(raw), raw = raw, old = {} })
      assert.same({}, r.errors or {}, case)
    end
  end)

  it("keeps the wordcount fixture identical to deploy/examples/wordcount.yaml", function()
    assert.is_nil(first_diff(load_yaml(TESTDATA .. "/wordcount/input.yaml"),
      load_yaml(ROOT .. "/deploy/examples/wordcount.yaml")))
  end)

  it("writes fixtures that read back unchanged", function()
    local got = fixture_objects("session-full")
    assert.is_nil(first_diff(strip_null(lyaml.load(fx.emit_yaml(got))), got))
  end)
end)

describe("cluster.desired", function()
  local wc = fixture_objects("wordcount")

  it("makes each of several JobManagers (HA) announce its pod IP; one JobManager keeps the Service name", function()
    local function manifest(replicas)
      return { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster", metadata = { name = "ha" },
        spec = { image = { name = "flink:1.20.5" }, jobManager = { replicas = replicas },
          taskManager = { replicas = 1 },
          job = { jarFile = "/j.jar", upgradeMode = "last-state", highAvailability = { storageDir = "file:///ha" } } } }
    end
    local out = cluster.desired({ cluster = defaults.apply(manifest(2)) })
    local sts = by_kind(out.objects, "StatefulSet", "ha-jobmanager")
    assert.equal(2, sts.spec.replicas)
    local c = sts.spec.template.spec.containers[1]
    assert.same({ "jobmanager", "-D", "jobmanager.rpc.address=$(POD_IP)" }, c.args)
    assert.same({ name = "POD_IP", valueFrom = { fieldRef = { apiVersion = "v1", fieldPath = "status.podIP" } } },
      env_of(c).POD_IP)
    assert.is_true(out.ha_configmaps)
    -- the TaskManagers keep `taskmanager`, and a single JobManager `jobmanager`
    local tm = by_kind(out.objects, "StatefulSet", "ha-taskmanager").spec.template.spec.containers[1]
    assert.same({ "taskmanager" }, tm.args)
    local one = by_kind(render(manifest(1)), "StatefulSet", "ha-jobmanager").spec.template.spec.containers[1]
    assert.same({ "jobmanager" }, one.args)
    assert.is_nil(env_of(one).POD_IP)
  end)

  it("returns the objects in apply order", function()
    local order = {}
    for i, o in ipairs(wc) do order[i] = o.kind .. "/" .. o.metadata.name end
    assert.same({ "ConfigMap/wordcount-configmap", "StatefulSet/wordcount-jobmanager",
      "Service/wordcount-jobmanager", "StatefulSet/wordcount-taskmanager",
      "Job/wordcount-job-submitter" }, order)
    local full = fixture_objects("ingress-tls")
    assert.equal("Ingress", full[4].kind)
    assert.equal(4, #fixture_objects("session"))
  end)

  it("labels and owns every object, without a namespace when the manifest has none", function()
    for _, o in ipairs(wc) do
      assert.equal("flink", o.metadata.labels.app)
      assert.equal("wordcount", o.metadata.labels.cluster)
      assert.is_nil(o.metadata.namespace)
      assert.same({ { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster", name = "wordcount",
        uid = "<uid of FlinkCluster wordcount, set when applied>", controller = true,
        blockOwnerDeletion = false } }, o.metadata.ownerReferences)
    end
    for _, o in ipairs(fixture_objects("session-full")) do
      assert.equal("analytics", o.metadata.namespace)
      assert.equal("5f0c7a52-1111-4c1e-9d7e-0123456789ab", o.metadata.ownerReferences[1].uid)
    end
  end)

  it("labels each child with input.revision only when REVISION_LABEL is on, never a pod template", function()
    local c = defaults.apply(load_yaml(TESTDATA .. "/wordcount/input.yaml"))
    local key = "flinkoperator.k8s.io/revision-name"
    for _, o in ipairs(cluster.desired({ cluster = util.deepcopy(c), revision = "wordcount-0a1b2c3d" }).objects) do
      assert.is_nil(o.metadata.labels[key], o.kind)
    end
    cluster.REVISION_LABEL = true
    local ok, got = pcall(cluster.desired, { cluster = util.deepcopy(c), revision = "wordcount-0a1b2c3d" })
    cluster.REVISION_LABEL = false
    assert.is_true(ok, got)
    assert.equal(5, #got.objects)
    for _, o in ipairs(got.objects) do
      assert.equal("wordcount-0a1b2c3d", o.metadata.labels[key], o.kind)
      local t = o.spec and o.spec.template
      if t then assert.is_nil((t.metadata.labels or {})[key], o.kind) end
    end
  end)

  it("never emits an empty list or map (only emptyDir: {})", function()
    for _, case in ipairs(CASES) do
      for _, o in ipairs(fixture_objects(case)) do
        walk(o, function(t, path)
          if next(t) == nil then
            assert.truthy(path:match("%.emptyDir$"), case .. ": empty table at " .. path)
          end
        end)
      end
    end
  end)

  it("treats explicit nulls as unset", function()
    local raw = lyaml.load(read(TESTDATA .. "/session/input.yaml"))
    raw.spec.jobManager.ingress = lyaml.null
    raw.spec.jobManager.podLabels = lyaml.null
    raw.spec.hadoopConfig = lyaml.null
    raw.spec.gcpConfig = { serviceAccount = lyaml.null }
    raw.spec.envVars = lyaml.null
    assert.is_nil(first_diff(render(raw), fixture_objects("session")))
  end)

  it("returns no table twice from the host (callers may edit the output in place), sharing them inside", function()
    local manifest = strip_null(load_yaml(TESTDATA .. "/session-full/input.yaml"))
    local boxed = fx.sandboxed("cluster").desired({ cluster = defaults.apply(manifest) }).objects
    local seen = {}
    for _, o in ipairs(boxed) do
      walk(o, function(t, path)
        assert.is_nil(seen[t], "shared table at " .. path)
        seen[t] = true
      end)
    end
  end)

  it("puts our env first, a user variable of the same name replacing ours; the user's mounts first", function()
    local objects = fixture_objects("session-full")
    for _, sts in ipairs({ objects[2], objects[4] }) do
      local main = sts.spec.template.spec.containers[1]
      local env = env_of(main)
      assert.equal("/opt/hadoop/override", env.HADOOP_CONF_DIR.value)
      assert.equal("/etc/gcp/key.json", env.GOOGLE_APPLICATION_CREDENTIALS.value)
      assert.equal("UTC", env.TZ.value)
      local limit = env[main.name == "jobmanager" and "JOB_MANAGER_MEMORY_LIMIT" or "TASK_MANAGER_MEMORY_LIMIT"]
      assert.same({ containerName = main.name, resource = "limits.memory", divisor = "1Mi" },
        limit.valueFrom.resourceFieldRef)
      assert.equal(5, #main.env)
      -- the component's volumeMounts, then ours (the original operator's order)
      local paths = {}
      for i, m in ipairs(main.volumeMounts) do paths[i] = m.mountPath end
      assert.same({ main.name == "jobmanager" and "/flink-ha" or "/tmp/flink", "/opt/flink/conf", "/etc/hadoop/conf",
        "/etc/gcp" }, paths)
      assert.is_nil(main.volumeMounts[2].readOnly) -- ConfigMap volumes are read-only anyway
    end
  end)

  it("builds the job submitter with the job's pod settings and the original's layout", function()
    local job = by_kind(fixture_objects("job-full"), "Job")
    local pod = job.spec.template
    assert.equal(0, job.spec.backoffLimit)
    assert.equal("Never", pod.spec.restartPolicy)
    assert.equal("main", pod.spec.containers[1].name)
    local main = pod.spec.containers[1]
    assert.is_nil(main.command) -- the image's entrypoint runs bash with the script
    assert.same({ "bash", "/opt/flink-operator/submit-job.sh", "--jobmanager", "etl-jobmanager:8081" },
      { table.unpack(main.args, 1, 4) })
    assert.same({ name = "FLINK_JM_ADDR", value = "etl-jobmanager:8081" }, main.env[1])
    assert.same({ name = "flink-config-volume", mountPath = "/opt/flink-operator/submit-job.sh",
      subPath = "submit-job.sh" }, main.volumeMounts[2])
    assert.same({ name = "flink-config-volume", mountPath = "/opt/flink/conf" }, main.volumeMounts[3])
    assert.equal("etl", job.metadata.labels.team)
    assert.equal("etl", pod.metadata.labels.team)            -- job.podLabels, not the JM's
    assert.is_nil(pod.metadata.labels.jmonly)
    assert.equal("flink", pod.metadata.labels.app)           -- ours win over podLabels
    local cm = by_kind(fixture_objects("job-full"), "ConfigMap")
    assert.same({ ["example.com/owner"] = "etl", [confighash.ANNOTATION] = confighash.of(cm.data) },
      pod.metadata.annotations)
    assert.equal("/cache", pod.spec.initContainers[1].volumeMounts[1].mountPath)
    assert.same({ limits = { cpu = "100m", memory = "256Mi" } }, pod.spec.containers[1].resources)
    assert.same({ runAsUser = 9999 }, pod.spec.securityContext)
  end)

  it("annotates the Flink pod templates with the hash of the files they read (not the submit script)", function()
    local function hashes(mutate)
      local m = load_yaml(TESTDATA .. "/job-full/input.yaml")
      m.spec.flinkProperties = m.spec.flinkProperties or {}
      if mutate then mutate(m.spec) end
      local objs = render(m)
      local function of(kind, name)
        return by_kind(objs, kind, name).spec.template.metadata.annotations[confighash.ANNOTATION]
      end
      return { jm = of("StatefulSet", "etl-jobmanager"), tm = of("StatefulSet", "etl-taskmanager"),
        job = of("Job"), data = by_kind(objs, "ConfigMap").data }
    end
    local base = hashes()
    assert.matches("^%x+$", base.jm)
    assert.equal(16, #base.jm)
    assert.equal(base.jm, base.tm)
    assert.equal(confighash.of(base.data, { [submit.SCRIPT_KEY] = true }), base.jm)
    assert.are_not.equal(base.jm, base.job) -- the submitter's covers the script too
    local props = hashes(function(s) s.flinkProperties["taskmanager.numberOfTaskSlots"] = "4" end)
    assert.are_not.equal(base.jm, props.jm)
    assert.equal(props.jm, props.tm)
    local log = hashes(function(s) s.logConfig = { ["log4j-console.properties"] = "rootLogger.level = DEBUG\n" } end)
    assert.are_not.equal(base.jm, log.jm)
    -- the script changes with noLoggingToStdout: the submitter's hash moves, the Flink pods' does
    -- not (fromSavepoint is in the submitter's args, not in any file)
    local quiet = hashes(function(s) s.job.noLoggingToStdout = not s.job.noLoggingToStdout end)
    assert.equal(base.jm, quiet.jm)
    assert.are_not.equal(base.job, quiet.job)
    local sp = hashes(function(s) s.job.fromSavepoint = "gs://bucket/savepoints/sp-2" end)
    assert.equal(base.jm, sp.jm)
    assert.equal(base.job, sp.job)
    -- ours wins over a podAnnotation of the same key
    local own = hashes(function(s) s.taskManager.podAnnotations = { [confighash.ANNOTATION] = "mine" } end)
    assert.equal(base.jm, own.tm)
  end)

  it("computes the memory keys of the documented cases exactly", function()
    -- 1Gi limit, ratio 25, min 600M, Flink 1.9: heap = 1073741824 - 600000000 = 473741824 B
    local c = conf_of(fixture_objects("memory-1gi-defaults"))
    assert.equal("451m", c["jobmanager.heap.size"])
    assert.equal("451m", c["taskmanager.heap.size"])
    -- 4Gi at 25%: off-heap 1Gi > 600M, heap 3Gi = 3072 MiB
    c = conf_of(fixture_objects("memory-4gi-25"))
    assert.equal("3072m", c["jobmanager.heap.size"])
    assert.equal("3072m", c["taskmanager.heap.size"])
    c = conf_of(fixture_objects("flink-1.17-keys"))
    assert.equal("1024m", c["jobmanager.memory.process.size"])
    assert.equal("2048m", c["taskmanager.memory.process.size"])
    assert.is_nil(c["jobmanager.heap.size"])
    c = conf_of(fixture_objects("flink-1.10-keys"))
    assert.equal("451m", c["jobmanager.heap.size"])          -- JM model changed in 1.11
    assert.equal("2048m", c["taskmanager.memory.process.size"])
    c = conf_of(fixture_objects("flinkproperties-memory"))
    assert.equal("1536m", c["jobmanager.memory.heap.size"])
    assert.is_nil(c["jobmanager.memory.process.size"])
    assert.equal("4096m", c["taskmanager.memory.process.size"])  -- the user's value
    assert.equal("0.2", c["taskmanager.memory.managed.fraction"])
  end)

  it("maps every accessScope to its Service", function()
    local function svc(case) return by_kind(fixture_objects(case), "Service") end
    assert.equal("ClusterIP", svc("session").spec.type)
    assert.is_nil(svc("session").spec.clusterIP)
    assert.equal("LoadBalancer", svc("access-vpc").spec.type)
    assert.same({ ["cloud.google.com/load-balancer-type"] = "Internal",
      ["networking.gke.io/load-balancer-type"] = "Internal" }, svc("access-vpc").metadata.annotations)
    assert.equal("LoadBalancer", svc("access-external").spec.type)
    assert.is_nil(svc("access-external").metadata.annotations)
    assert.equal("NodePort", svc("access-nodeport").spec.type)
    assert.equal("None", svc("access-headless").spec.clusterIP)
  end)

  it("rejects an unknown accessScope and a limit that leaves no heap", function()
    local m = load_yaml(TESTDATA .. "/session/input.yaml")
    m.spec.jobManager.accessScope = "Public"
    assert.has_error(function() render(m) end,
      "spec.jobManager.accessScope: unknown value Public (Cluster, VPC, External, NodePort or Headless)")
    m = load_yaml(TESTDATA .. "/memory-1gi-defaults/input.yaml")
    m.spec.taskManager.resources.limits.memory = "500Mi"
    assert.has_error(function() render(m) end, "spec.taskManager.resources.limits.memory (500Mi): 524288000 bytes "
      .. "leave -75712000 bytes of heap after 600000000 bytes of off-heap; raise the limit or lower "
      .. "memoryOffHeapMin/memoryOffHeapRatio")
    -- the new memory model has no heap split to get wrong: Flink divides the process size
    m.spec.image.name = "flink:1.17.1"
    assert.equal("500m", conf_of(render(m))["taskmanager.memory.process.size"])
  end)

  it("builds ingress hosts from hostFormat, with TLS only when asked", function()
    local plain = by_kind(fixture_objects("ingress-plain"), "Ingress")
    assert.equal("wordcount.flink.example.com", plain.spec.rules[1].host)
    assert.is_nil(plain.spec.tls)
    assert.same({ name = "ui" }, plain.spec.rules[1].http.paths[1].backend.service.port)
    local tls = by_kind(fixture_objects("ingress-tls"), "Ingress")
    assert.same({ { hosts = { "flink-wordcount.apps.example.com" }, secretName = "flink-tls" } }, tls.spec.tls)
    -- no hostFormat: the rule matches every host; TLS then names only the secret, if any
    local m = load_yaml(TESTDATA .. "/ingress-tls/input.yaml")
    m.spec.jobManager.ingress.hostFormat = nil
    local ing = by_kind(render(m), "Ingress")
    assert.is_nil(ing.spec.rules[1].host)
    assert.same({ { secretName = "flink-tls" } }, ing.spec.tls)
    m.spec.jobManager.ingress.tlsSecretName = nil
    assert.is_nil(by_kind(render(m), "Ingress").spec.tls)
    -- the name replaces every occurrence, and a '%' in it is no pattern
    m.spec.jobManager.ingress.hostFormat = "{{$clusterName}}.{{$clusterName}}.example.com"
    assert.equal("wordcount.wordcount.example.com", by_kind(render(m), "Ingress").spec.rules[1].host)
  end)

  it("gives the same objects in the production sandbox", function()
    local policy = fx.sandboxed("cluster")
    for _, case in ipairs(CASES) do
      local input = { cluster = defaults.apply(load_yaml(TESTDATA .. "/" .. case .. "/input.yaml")) }
      assert.is_nil(first_diff(policy.desired(util.deepcopy(input)).objects, cluster.desired(input).objects), case)
    end
  end)
end)

-- The test environment's settings (tests/env/up.sh writes $TESTENV_DIR/env.sh), or nil. Only
-- when TESTENV_DIR is set explicitly: a shared build/testenv may be brought down by another
-- run (tests/env/smoke.sh) in the middle of this test. Run it with
--   TESTENV_DIR=build/testenv bash tests/run.sh busted      (after make testenv-up)
local function testenv()
  local dir = os.getenv("TESTENV_DIR")
  if not dir then return nil end
  local f = io.open(dir .. "/env.sh")
  if not f then return nil end
  local env = {}
  for line in f:lines() do
    local k, v = line:match("^export ([%w_]+)=(.*)$")
    if k then env[k] = v end
  end
  f:close()
  if not (env.KUBECONFIG and env.TESTENV_KUBECTL) then return nil end
  return env
end

describe("cluster objects on a live API server", function()
  it("creates each fixture's FlinkCluster and server-side applies its objects #testenv", function()
    local env = testenv()
    if not env then
      pending("no test environment (TESTENV_DIR unset or without env.sh)")
      return
    end
    local cjson = require("cjson")
    local function kubectl(args, stdin_path)
      local cmd = string.format("%s --kubeconfig=%s %s%s 2>&1", env.TESTENV_KUBECTL, env.KUBECONFIG, args,
        stdin_path and (" -f " .. stdin_path) or "")
      local p = io.popen(cmd)
      local out = p:read("a")
      local ok = p:close()
      return ok, out
    end
    if not kubectl("get --raw /readyz") then
      pending("the test environment in " .. os.getenv("TESTENV_DIR") .. " does not answer")
      return
    end
    local tmp = fx.tmpdir()
    local namespaces = {}
    for i, case in ipairs(CASES) do
      local ns = string.format("cluster-spec-%d-%d", os.time() % 100000, i)
      namespaces[#namespaces + 1] = ns
      assert(kubectl("create namespace " .. ns))
      local manifest = load_yaml(TESTDATA .. "/" .. case .. "/input.yaml")
      manifest.metadata.namespace = ns
      write(tmp .. "/fc.json", cjson.encode(manifest))
      local ok, out = kubectl("create -o json", tmp .. "/fc.json")
      assert(ok, case .. ": FlinkCluster rejected: " .. out)
      local live = cjson.decode(out)                      -- with the uid the server gave it
      local objects = cluster.desired({ cluster = defaults.apply(live) }).objects
      write(tmp .. "/objects.json", cjson.encode({ apiVersion = "v1", kind = "List", items = objects }))
      ok, out = kubectl("apply --server-side --field-manager=flink-controller", tmp .. "/objects.json")
      assert(ok, case .. ": " .. out)
      local _, applied = out:gsub("serverside%-applied", "")
      assert.equal(#objects, applied, case .. ": " .. out)
    end
    for _, ns in ipairs(namespaces) do kubectl("delete namespace --wait=false " .. ns) end
    os.execute("rm -rf " .. tmp)
  end)
end)

describe("lib.names", function()
  it("names the children", function()
    assert.equal("wc-configmap", names.configmap("wc"))
    assert.equal("wc-jobmanager", names.jobmanager("wc"))
    assert.equal("wc-taskmanager", names.taskmanager("wc"))
    assert.equal("wc-job-submitter", names.job_submitter("wc"))
  end)

  it("keeps our labels over podLabels", function()
    assert.same({ app = "flink", cluster = "wc", component = "jobmanager", team = "a" },
      names.pod_labels(names.component_labels("wc", "jobmanager"), { team = "a", component = "x", app = "y" }))
  end)

  it("uses the uid when there is one, a placeholder when not, and omits an empty namespace", function()
    assert.equal("abc", names.owner_reference({ metadata = { name = "wc", uid = "abc" } }).uid)
    assert.equal("<uid of FlinkCluster wc, set when applied>",
      names.owner_reference({ metadata = { name = "wc" } }).uid)
    local m = names.metadata({ metadata = { name = "wc", namespace = "" } }, "wc-x", {}, {})
    assert.is_nil(m.namespace)
    assert.is_nil(m.annotations)
    assert.equal("ns1", names.metadata({ metadata = { name = "wc", namespace = "ns1" } }, "wc-x", {}).namespace)
  end)
end)

describe("lib.flinkversion", function()
  it("reads the Flink version from the image tag", function()
    local cases = {
      { "flink:1.9.2", 1, 9 }, { "flink:1.17.1-scala_2.12-java11", 1, 17 },
      { "registry.local:5000/team/flink:1.10", 1, 10 }, { "apache/flink:v1.12.0", 1, 12 },
      { "acme/flink-base:1.9", 1, 9 }, { "Flink:1.8", 1, 8 },
      { "flink:2.0", 2, 0 }, { "flink:1.18@sha256:0123", 1, 18 }, { "flink:2.3.0-java17", 2, 3 },
    }
    for _, c in ipairs(cases) do
      assert.same({ major = c[2], minor = c[3] }, flinkversion.of_image(c[1]), c[1])
    end
    for _, unknown in ipairs({ "flink", "flink:latest", "registry.local:5000/flink", "flink@sha256:0123",
      "flink:stable", "my-job:1.0.3", "registry.local:5000/jobs/etl:1.9.0" }) do
      assert.is_nil(flinkversion.of_image(unknown), unknown)
    end
  end)

  it("reads spec.flinkVersion in the Spotify fork's and the Apache operator's spellings", function()
    for s, v in pairs({ ["1.20"] = { 1, 20 }, ["1.20.1"] = { 1, 20 }, ["2.3"] = { 2, 3 }, v1_20 = { 1, 20 },
      v2_0 = { 2, 0 }, V1_8 = { 1, 8 } }) do
      assert.same({ major = v[1], minor = v[2] }, flinkversion.parse(s), s)
    end
    for _, bad in ipairs({ "1", "v1.20", "1_20", "v1_20_1", "latest", "", "1.20-SNAPSHOT", "1.20.", "1.2.3.4" }) do
      assert.is_nil(flinkversion.parse(bad), bad)
    end
    assert.is_nil(flinkversion.parse(1.2))
  end)

  it("takes spec.flinkVersion over the image tag, and the tag when it is unset", function()
    local v, from = flinkversion.of({ flinkVersion = "v2_3", image = { name = "flink:1.20.5" } })
    assert.same({ { major = 2, minor = 3 }, "spec.flinkVersion" }, { v, from })
    v, from = flinkversion.of({ image = { name = "flink:1.20.5" } })
    assert.same({ { major = 1, minor = 20 }, "spec.image.name" }, { v, from })
    assert.is_nil(flinkversion.of({ image = { name = "my-app:3.1" } }))
  end)

  it("compares versions, unknown counting as new (and as unknown for known_at_least)", function()
    local V = flinkversion.parse
    assert.is_false(flinkversion.at_least(V("1.9"), 1, 10))
    assert.is_true(flinkversion.at_least(V("1.10"), 1, 10))
    assert.is_false(flinkversion.at_least(V("1.10"), 1, 11))
    assert.is_true(flinkversion.at_least(V("2.0"), 1, 11))
    assert.is_true(flinkversion.at_least(nil, 1, 11))
    assert.is_false(flinkversion.known_at_least(nil, 2, 0))
    assert.is_true(flinkversion.known_at_least(V("2.3"), 2, 0))
    assert.equal("unknown", flinkversion.string(nil))
    assert.equal("1.20", flinkversion.string(V("v1_20")))
  end)
end)

describe("lib.flinkconf", function()
  it("splits memory in bytes and writes MiB", function()
    assert.same({ offheap = 600000000, heap = 473741824, heap_mib = 451, process_mib = 1024 },
      flinkconf.memory_plan(1073741824, 25, 600000000))
    assert.same({ offheap = 1073741824, heap = 3221225472, heap_mib = 3072, process_mib = 4096 },
      flinkconf.memory_plan(4294967296, 25, 600000000))
    -- 2000M at 50%: off-heap 1000000000 B, heap 1000000000 B = 953.67 MiB
    assert.same({ offheap = 1000000000, heap = 1000000000, heap_mib = 953, process_mib = 1907 },
      flinkconf.memory_plan(2000000000, 50, 600000000))
    -- no heap left (the original accepts it and writes no heap key); a negative heap is an error
    assert.same({ offheap = 600000000, heap = 0, process_mib = 572 }, flinkconf.memory_plan(600000000, 25, 600000000))
    assert.same({ offheap = 1073741824, heap = 0, process_mib = 1024 }, flinkconf.memory_plan(1073741824, 100, 0))
    assert.has_error(function() flinkconf.memory_plan(500000000, 25, 600000000) end)
    assert.equal(1, flinkconf.memory_plan(600000000 + 1048576, 0, 600000000).heap_mib)
  end)

  it("writes the memory key per component and version, unless the user set one", function()
    local V = flinkversion.parse
    local spec = { resources = { limits = { memory = "2Gi" } }, memoryOffHeapRatio = 25, memoryOffHeapMin = "600M" }
    -- 2Gi: off-heap max(536870912, 600000000) = 600000000, heap 1547483648 B = 1475.8 MiB
    assert.same({ ["taskmanager.heap.size"] = "1475m" },
      flinkconf.memory_properties(spec, "taskmanager", V("1.9"), {}))
    assert.same({ ["taskmanager.memory.process.size"] = "2048m" },
      flinkconf.memory_properties(spec, "taskmanager", V("1.10"), {}))
    assert.same({ ["jobmanager.heap.size"] = "1475m" },
      flinkconf.memory_properties(spec, "jobmanager", V("1.10"), {}))
    assert.same({ ["jobmanager.memory.process.size"] = "2048m" },
      flinkconf.memory_properties(spec, "jobmanager", V("1.11"), {}))
    assert.same({}, flinkconf.memory_properties(spec, "jobmanager", V("1.17"), { ["jobmanager.heap.size"] = "1g" }))
    assert.same({ ["jobmanager.memory.process.size"] = "2048m" },
      flinkconf.memory_properties(spec, "jobmanager", V("1.17"), { ["taskmanager.memory.process.size"] = "1g" }))
    assert.same({}, flinkconf.memory_properties({ resources = { requests = { memory = "1Gi" } } }, "jobmanager",
      V("1.17"), {}))
    assert.has_error(function()
      flinkconf.memory_properties({ resources = { limits = { memory = "1 Gi" } } }, "jobmanager", V("1.17"), {})
    end)
  end)

  it("recognises the user's memory keys by component prefix", function()
    assert.is_true(flinkconf.user_sets_memory({ ["taskmanager.memory.managed.fraction"] = "0.2" }, "taskmanager"))
    assert.is_true(flinkconf.user_sets_memory({ ["jobmanager.heap.size"] = "1g" }, "jobmanager"))
    assert.is_false(flinkconf.user_sets_memory({ ["jobmanager.heap.size"] = "1g" }, "taskmanager"))
    assert.is_false(flinkconf.user_sets_memory({ ["taskmanager.numberOfTaskSlots"] = "2" }, "taskmanager"))
  end)

  it("renders sorted key: value lines and refuses injected lines", function()
    assert.equal("a.b: 1\nrest.port: 8081\nz: x y\n",
      flinkconf.render_legacy({ z = "x y", ["rest.port"] = "8081", ["a.b"] = "1" }))
    assert.has_error(function() flinkconf.render_legacy({ ["a"] = "1\nrest.port: 1" }) end)
    assert.has_error(function() flinkconf.render_legacy({ ["a: b"] = "1" }) end)
  end)

  it("renders config.yaml as YAML that reads back as the same strings", function()
    local props = { ["rest.port"] = "8081", z = "x y", ["a.b"] = "x: y # not a comment",
      ["env.java.opts.all"] = "-XX:+UseG1GC -Dk=v", t = "true", n = "null", e = "", multi = "a\nrest.port: 1",
      ["taskmanager.memory.process.size"] = "2048m", ["odd: key"] = "1" }
    local text = flinkconf.render_yaml(props)
    assert.same(props, lyaml.load(text))
    assert.falsy(text:find("^%-%-%-"), "no document marker")
    assert.truthy(text:find('\nrest.port: "8081"\n', 1, true), text)
  end)

  it("picks the file by version: legacy before 1.19, config.yaml from 1.19, both when unknown", function()
    local function files_for(image, flink_version)
      local m = load_yaml(TESTDATA .. "/session/input.yaml")
      m.spec.image.name = image
      m.spec.flinkVersion = flink_version
      local names_ = {}
      for f in pairs(flinkconf.files(defaults.apply(m))) do names_[#names_ + 1] = f end
      table.sort(names_)
      return names_
    end
    assert.same({ "flink-conf.yaml" }, files_for("flink:1.18.1"))
    assert.same({ "config.yaml" }, files_for("flink:1.19"))
    assert.same({ "config.yaml" }, files_for("flink:2.3.0"))
    assert.same({ "config.yaml", "flink-conf.yaml" }, files_for("flink:latest"))
    assert.same({ "config.yaml" }, files_for("my-app:7", "v2_0"))
    assert.same({ "flink-conf.yaml" }, files_for("flink:2.3", "1.17"))
  end)

  it("leaves out the options Flink 2 no longer knows, only for a version known to be 2.x", function()
    local m = load_yaml(TESTDATA .. "/session/input.yaml")
    m.spec.flinkProperties = { ["taskmanager.heap.size"] = "1g", ["web.ssl.enabled"] = "true",
      ["state.savepoints.dir"] = "file:///sp" }
    m.spec.taskManager.resources = { limits = { memory = "2Gi" } }
    m.spec.image.name = "flink:2.3.0"
    local p2 = flinkconf.properties(defaults.apply(m))
    assert.is_nil(p2["taskmanager.heap.size"])
    assert.is_nil(p2["web.ssl.enabled"])
    assert.is_nil(p2["query.server.port"])
    assert.equal("file:///sp", p2["state.savepoints.dir"], "a deprecated key 2.x still reads is kept")
    -- the removed heap key no longer counts as the user's memory: the process size is ours
    assert.equal("2048m", p2["taskmanager.memory.process.size"])
    assert.same({ "taskmanager.heap.size", "web.ssl.enabled" },
      flinkconf.removed_keys(m.spec.flinkProperties, flinkversion.parse("2.0")))
    assert.same({}, flinkconf.removed_keys(m.spec.flinkProperties, nil))
    m.spec.image.name = "flink:1.20.5"
    local p1 = flinkconf.properties(defaults.apply(m))
    assert.equal("1g", p1["taskmanager.heap.size"])
    assert.equal("6125", p1["query.server.port"])
    assert.is_nil(p1["taskmanager.memory.process.size"], "the user's heap key owns the memory")
  end)
end)

describe("lib.logconf", function()
  it("writes log4j 2 syntax for new images and log4j 1 for old ones", function()
    assert.truthy(logconf.log4j_console(true):find("\nrootLogger.level = INFO\n", 1, true))
    assert.falsy(logconf.log4j_console(true):find("log4j.rootLogger", 1, true))
    assert.truthy(logconf.log4j_console(false):find("\nlog4j.rootLogger=INFO, stdout\n", 1, true))
    assert.truthy(logconf.logback_console():find('<logger name="org.apache.kafka" level="WARN"/>', 1, true))
  end)
end)

describe("lib.pods", function()
  it("merges keyed lists, the later entry replacing in place", function()
    assert.same({ { name = "A", value = "user" }, { name = "B", value = "1" }, { name = "C", value = "2" } },
      pods.merge_by("name", { { name = "A", value = "ours" }, { name = "B", value = "1" } },
        { { name = "A", value = "user" }, { name = "C", value = "2" } }))
    assert.same({}, pods.merge_by("name", nil, nil))
    -- an entry without its key is kept (the API server names the missing field), never an error
    assert.same({ { name = "A", value = "1" }, { value = "2" }, { value = "3" } },
      pods.merge_by("name", { { name = "A", value = "1" } }, { { value = "2" }, { value = "3" } }))
  end)

  it("mounts hadoop and gcp configuration with their variables", function()
    local s = pods.shared("wc", {
      hadoopConfig = { configMapName = "hadoop", mountPath = "/etc/hadoop/conf" },
      gcpConfig = { serviceAccount = { secretName = "gcp-key", keyFile = "key.json", mountPath = "/etc/gcp/" } },
    })
    assert.same({ { name = "HADOOP_CONF_DIR", value = "/etc/hadoop/conf" },
      { name = "GOOGLE_APPLICATION_CREDENTIALS", value = "/etc/gcp/key.json" } }, s.env)
    assert.equal(3, #s.volumes)
    assert.same({ secretName = "gcp-key" }, s.volumes[3].secret)
    assert.equal(1, #pods.shared("wc", { hadoopConfig = {} }).volumes)
  end)

  it("lets init containers inherit the component mounts", function()
    local init = pods.init_containers({ { name = "i", volumeMounts = { { name = "own", mountPath = "/cache" } } } },
      { { name = "cache", mountPath = "/cache" }, { name = "data", mountPath = "/data" } })
    assert.same({ { name = "own", mountPath = "/cache" }, { name = "data", mountPath = "/data" } },
      init[1].volumeMounts)
    assert.is_nil(pods.init_containers({}, {}))
    -- a volumeMounts of the wrong type stays for the API server to name, never a policy error
    local bad = pods.init_containers({ { name = "i", volumeMounts = 5 } }, { { mountPath = "/d" } })
    assert.equal(5, bad[1].volumeMounts)
  end)
end)

describe("lib.submitter", function()
  local base = {
    metadata = { name = "wc" },
    spec = { jobManager = { ports = { ui = 8081 } },
      job = { jarFile = "/cache/app.jar", parallelism = 2, allowNonRestoredState = false } },
  }

  it("hashes files with FNV-1a 64: published vectors, every file counted, order and skips", function()
    -- FNV-1a 64 test vectors (Fowler/Noll/Vo reference test suite)
    assert.equal("cbf29ce484222325", string.format("%016x", confighash.fnv1a64("")))
    assert.equal("af63dc4c8601ec8c", string.format("%016x", confighash.fnv1a64("a")))
    assert.equal("85944171f73967e8", string.format("%016x", confighash.fnv1a64("foobar")))
    -- the file list "1:a3:xyz" continues from the offset basis
    assert.equal(string.format("%016x", confighash.fnv1a64("1:a3:xyz")), confighash.of({ a = "xyz" }))
    local files = { ["flink-conf.yaml"] = "a: 1\n", ["log4j-console.properties"] = "x" }
    local h = confighash.of(files)
    assert.equal(h, confighash.of({ ["log4j-console.properties"] = "x", ["flink-conf.yaml"] = "a: 1\n" }))
    assert.are_not.equal(h, confighash.of({ ["flink-conf.yaml"] = "a: 2\n", ["log4j-console.properties"] = "x" }))
    assert.are_not.equal(h, confighash.of({ ["flink-conf.yaml"] = "a: 1\n" }))
    -- a file's name and contents cannot trade bytes with the next one
    assert.are_not.equal(confighash.of({ a = "bc", d = "" }), confighash.of({ a = "b", cd = "" }))
    assert.equal(confighash.of({ ["flink-conf.yaml"] = "a: 1\n" }),
      confighash.of(files, { ["log4j-console.properties"] = true }))
  end)

  it("builds flink run arguments in CLI order", function()
    assert.same({ "--jobmanager", "wc-jobmanager:8081", "--parallelism", "2", "--detached", "/cache/app.jar" },
      submit.flink_run_args(base))
    local c = util.deepcopy(base)
    c.spec.job.className = "org.example.Main"
    c.spec.job.fromSavepoint = "gs://b/sp-1"
    c.spec.job.allowNonRestoredState = true
    c.spec.job.args = { "--in", "a b" }
    assert.same({ "--jobmanager", "wc-jobmanager:8081", "--class", "org.example.Main", "--fromSavepoint",
      "gs://b/sp-1", "--allowNonRestoredState", "--parallelism", "2", "--detached", "/cache/app.jar", "--in", "a b" },
      submit.flink_run_args(c))
  end)

  -- Runs the generated script with sh, a fake `curl` (the REST API answers) and a fake
  -- `flink` that records its arguments NUL-separated.
  local function run_script(c, flink_body)
    local dir = fx.tmpdir()
    os.execute("mkdir -p " .. dir .. "/bin")
    write(dir .. "/bin/curl", "#!/bin/sh\nexit 0\n")
    write(dir .. "/bin/flink", "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done >\"$ARGS_OUT\"\n"
      .. flink_body)
    write(dir .. "/submit.sh", submit.script(c))
    os.execute("chmod +x " .. dir .. "/bin/curl " .. dir .. "/bin/flink")
    -- the container's command and args, as the kubelet passes them (an argv, no shell)
    local argv = {}
    for i, a in ipairs(submit.flink_run_args(c)) do argv[i] = fx.quote(a) end
    local cmd = string.format("cd %s && PATH=%s/bin:$PATH FLINK_HOME=%s ARGS_OUT=%s/args TERMINATION_LOG=%s/term "
      .. "sh submit.sh %s >stdout 2>&1; echo $?", dir, dir, dir, dir, dir, table.concat(argv, " "))
    local rc = tonumber(io.popen(cmd):read("l"))
    local args = {}
    for a in read(dir .. "/args"):gmatch("([^%z]*)%z") do args[#args + 1] = a end
    local result = { rc = rc, args = args, term = read(dir .. "/term"), stdout = read(dir .. "/stdout") }
    os.execute("rm -rf " .. dir)
    return result
  end

  it("passes hostile arguments to flink unchanged and reports the job id", function()
    local c = util.deepcopy(base)
    local hostile = { "it's", "$(touch /tmp/pwned-by-args)", "`id`", "a b  c", "\"q\"", "back\\slash", "line1\nline2",
      "", "*", "; exit 3" }
    c.spec.job.args = hostile
    c.spec.job.jarFile = "/jars/my app's.jar"
    local r = run_script(c, "echo 'Job has been submitted with JobID 0123456789abcdef0123456789abcdef'\n")
    assert.equal(0, r.rc)
    local want = { "run", "--jobmanager", "wc-jobmanager:8081", "--parallelism", "2", "--detached",
      "/jars/my app's.jar" }
    for _, a in ipairs(hostile) do want[#want + 1] = a end
    assert.same(want, r.args)
    assert.equal("jobID: 0123456789abcdef0123456789abcdef\n", r.term)
    assert.truthy(r.stdout:find("Job has been submitted", 1, true))
  end)

  it("fails with flink's output in the termination log, and hides it when noLoggingToStdout", function()
    local c = util.deepcopy(base)
    c.spec.job.noLoggingToStdout = true
    local r = run_script(c, "echo 'could not connect to blob server'\nexit 4\n")
    assert.equal(4, r.rc)
    assert.equal("could not connect to blob server\n", r.term)
    assert.falsy(r.stdout:find("blob server", 1, true))
  end)
end)
