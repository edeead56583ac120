-- SPDX-License-Identifier: Apache-2.0
-- Admission by the API server itself (deploy/crd.yaml's schema, defaults and CEL rules), on a
-- live kube-apiserver with NO controller running (#testenv: the test environment, or
-- FC_KUBECONFIG). What it proves, against policies/validate.lua's fixtures
-- (policies/testdata/validate/<case>/):
--   - every manifest validate refuses is refused by `kubectl apply` (server-side) and each of
--     validate's error paths is named in the refusal (the rule on a component names the
--     component's field: spec.jobManager.ports for a duplicate port of spec.jobManager.ports.blob);
--   - every update rule: the fixture's old.yaml is stored (its status too), then replacing it
--     with input.yaml is refused exactly when validate refuses it;
--   - the defaults are on the stored object and are defaults.lua's; a repeated apply and a
--     patch to a defaulted value leave resourceVersion unchanged; status and metadata updates
--     are not caught by the create or update rules.
-- The reverse (what validate accepts, the API server accepts) is tests/crd_spec.lua's.
local lyaml = require("lyaml")
local cjson = require("cjson")
local fx = require("support.fixtures")

local ROOT = fx.ROOT
local API = "flinkoperator.k8s.io/v1beta1"

-- A minimal session cluster (a job cluster with `jar`).
local function minimal(name, jar)
  return { apiVersion = API, kind = "FlinkCluster", metadata = { name = name },
    spec = { image = { name = "flink:1.20.1" }, taskManager = { replicas = 1 },
      job = jar and { jarFile = jar } or nil } }
end

-- The stored FlinkCluster ns/name, decoded.
local function get(ns, name)
  local out, ok = fx.kubectl("get flinkcluster -n " .. ns .. " " .. name .. " -o json")
  assert(ok, out)
  return cjson.decode(out)
end

describe("admission by the API server (CRD schema, defaults, CEL) #testenv", function()
  local sh = fx.kubectl
  if not fx.live() then
    pending("no kube-apiserver (start one with `make testenv-up` or set FC_KUBECONFIG)")
    return
  end

  local ns = string.format("admission-%d-%d", os.time(), math.random(1000, 9999))
  local ready = false
  local function setup()
    if ready then return end
    fx.apply_crd()
    local out, ok = sh("create namespace " .. ns)
    assert(ok, out)
    ready = true
  end
  teardown(function()
    if ready then sh("delete namespace " .. ns .. " --wait=false") end
  end)

  -- apply(doc, verb): `kubectl <verb> -n ns -f -` of a Lua table (JSON is YAML); output, ok.
  local function submit(doc, verb)
    local tmp = fx.yaml_stream({ cjson.encode(doc) })
    local out, ok = sh(verb .. " -n " .. ns .. " -f " .. tmp)
    os.remove(tmp)
    return out, ok
  end

  -- The field paths of an API server refusal ("* spec.x: Invalid value: ..." lines, or the
  -- single-error form "is invalid: spec.x: Required value").
  local function refused_paths(out)
    local paths = {}
    for p in out:gmatch("([%w%.%[%]_%-]+): [A-Z][%a ]*[vV]alue") do paths[#paths + 1] = p end
    for p in out:gmatch("([%w%.%[%]_%-]+): Forbidden") do paths[#paths + 1] = p end
    for p in out:gmatch("([%w%.%[%]_%-]+): Too long") do paths[#paths + 1] = p end
    return paths
  end

  -- True when the API server named `path` (validate's), the same field, a field inside it, or
  -- the object a CEL rule on it names (spec.jobManager.ports for spec.jobManager.ports.blob);
  -- a rule on the root names its field in the message ("<nil>: ...: metadata.name: ...").
  local function named(paths, path, out)
    if out:find(": " .. path .. ": ", 1, true) then return true end
    path = path:gsub("%[(%a[^%]]*)%]", ".%1")   -- map keys: validate [a.b], the server .a.b
    for _, p in ipairs(paths) do
      local q = p:gsub("%[(%a[^%]]*)%]", ".%1")
      if q == path or path:sub(1, #q + 1) == q .. "." or path:sub(1, #q + 1) == q .. "["
        or q:sub(1, #path + 1) == path .. "." then
        return true
      end
    end
    return false
  end

  -- The fixture's document made appliable: right apiVersion and kind, no namespace (the
  -- test's), with validate's errors on those left out of the expectation.
  local function fixture(dir)
    local doc = fx.load_yaml(dir .. "/input.yaml")
    local expected = fx.read_yaml(dir .. "/expected.yaml")
    if type(doc) ~= "table" or type(doc.metadata) ~= "table" or type(doc.metadata.name) ~= "string"
      or not doc.metadata.name:match("^[a-z0-9][-a-z0-9.]*$") then
      return nil
    end
    doc.apiVersion, doc.kind = API, "FlinkCluster"
    doc.metadata.namespace = nil
    local errors = {}
    for _, e in ipairs(expected.errors or {}) do
      if e.path ~= "apiVersion" and e.path ~= "kind" and e.path ~= "metadata.namespace" then
        errors[#errors + 1] = e
      end
    end
    return doc, errors, fx.exists(dir .. "/old.yaml") and fx.load_yaml(dir .. "/old.yaml") or nil
  end

  -- validate's rules that only the webhook enforces (no CEL twin in deploy/crd.yaml)
  -- (a whole number of each extended resource per pod needs the slot calculation)
  local WEBHOOK_ONLY = { "^must be <= resources%.limits%.memory", "is not a whole number$" }
  local function webhook_only(e)
    for _, pat in ipairs(WEBHOOK_ONLY) do
      if e.message:find(pat) then return true end
    end
    return false
  end
  -- The API server runs the CEL rules only on an object the rest of the schema accepts
  -- ("some validation rules were not checked"): then only the schema's errors are named.
  local SKIPPED = "some validation rules were not checked"
  local function assert_named(errors, out)
    local paths = refused_paths(out)
    local n = 0
    for _, e in ipairs(errors) do
      if not webhook_only(e) then
        local ok = named(paths, e.path, out)
        if ok then n = n + 1 end
        assert.is_true(ok or out:find(SKIPPED, 1, true) ~= nil, e.path .. " (" .. e.message .. ") not in: " .. out)
      end
    end
    assert.is_true(n >= 1, out)
  end
  local function any_schema_error(errors)
    for _, e in ipairs(errors) do
      if not webhook_only(e) then return true end
    end
    return false
  end

  local creates, updates = 0, 0
  for _, case in ipairs(fx.cases("validate")) do
    local dir = fx.cases_dir("validate") .. "/" .. case
    local doc, errors, old = fixture(dir)
    if doc and not old and #errors > 0 and not any_schema_error(errors) then
      it("accepts fixture " .. case .. " at create (its rules are the webhook's)", function()
        setup()
        local out, ok = submit(doc, "create --dry-run=server --validate=false")
        assert.is_true(ok, out)
      end)
    elseif doc and not old and #errors > 0 then
      creates = creates + 1
      it("refuses fixture " .. case .. " at create, naming validate's fields", function()
        setup()
        local out, ok = submit(doc, "create --dry-run=server --validate=false")
        assert.is_false(ok, out)
        assert.is_not_nil(out:find('"' .. doc.metadata.name .. '" is invalid', 1, true), out)
        assert_named(errors, out)
      end)
    elseif doc and old then
      updates = updates + 1
      it("update fixture " .. case .. ": " .. (#errors > 0 and "refused, naming validate's fields"
        or "accepted"), function()
        setup()
        old.metadata.namespace = nil
        -- store the old object as a user would have reached it: created without
        -- cancelRequested (not allowed at create), then updated to it, then its status
        local first = lyaml.load(cjson.encode(old))
        if type(first.spec.job) == "table" then first.spec.job.cancelRequested = nil end
        local status = first.status
        first.status = nil
        local out, ok = submit(first, "create")
        assert.is_true(ok, out)
        local stored = cjson.decode((sh("get flinkcluster -n " .. ns .. " " .. old.metadata.name .. " -o json")))
        old.status = nil
        old.metadata.resourceVersion = stored.metadata.resourceVersion
        out, ok = submit(old, "replace")
        assert.is_true(ok, out)
        if status then
          out, ok = sh("patch flinkcluster -n " .. ns .. " " .. old.metadata.name
            .. " --subresource=status --type=merge -p " .. fx.quote(cjson.encode({ status = status })))
          assert.is_true(ok, out)
        end
        out, ok = submit(doc, "replace --dry-run=server --validate=false")
        sh("delete flinkcluster -n " .. ns .. " " .. old.metadata.name)
        if #errors == 0 then
          assert.is_true(ok, out)
        else
          assert.is_false(ok, out)
          assert_named(errors, out)
        end
      end)
    end
  end
  it("covers the create and update fixtures", function()
    assert.is_true(creates >= 14, "create fixtures: " .. creates)
    assert.is_true(updates >= 8, "update fixtures: " .. updates)
  end)

  -- A minimal job cluster (the examples' shape).
  local function job_cluster(name)
    return minimal(name, "/opt/flink/usrlib/job.jar")
  end
  -- patch(name, json, args): `kubectl patch` of a FlinkCluster (merge patch unless args say).
  local function patch(name, json, args)
    return sh("patch flinkcluster -n " .. ns .. " " .. name .. " " .. (args or "--type=merge") .. " -p "
      .. fx.quote(json))
  end
  it("stores the defaults, and they are policies/defaults.lua's", function()
    setup()
    local doc = job_cluster("defaults")
    local out, ok = submit(doc, "create")
    assert.is_true(ok, out)
    local stored = get(ns, "defaults").spec
    assert.are.equal(8081, stored.jobManager.ports.ui)
    assert.are.equal("Cluster", stored.jobManager.accessScope)
    assert.are.equal("600M", stored.taskManager.memoryOffHeapMin)
    assert.are.equal("KeepCluster", stored.job.cleanupPolicy.afterJobFails)
    assert.are.equal(10, stored.revisionHistoryLimit)
    package.path = ROOT .. "/policies/?.lua;" .. package.path
    local want = require("defaults").apply(doc).spec
    want.image.pullPolicy = nil -- depends on the tag: defaults.lua's alone
    assert.are.same(want, stored)
  end)

  it("keeps resourceVersion on a repeated apply and on a patch to a defaulted value", function()
    setup()
    local tmp = fx.yaml_stream({ cjson.encode(job_cluster("noop")) })
    local out, ok = sh("apply -n " .. ns .. " -f " .. tmp)
    assert.is_true(ok, out)
    local rv = get(ns, "noop").metadata.resourceVersion
    out, ok = sh("apply -n " .. ns .. " -f " .. tmp)
    os.remove(tmp)
    assert.is_true(ok, out)
    assert.is_not_nil(out:find("unchanged", 1, true), out)
    out, ok = patch("noop", '{"spec":{"jobManager":{"ports":{"ui":8081}},"revisionHistoryLimit":10}}')
    assert.is_true(ok, out)
    assert.are.equal(rv, get(ns, "noop").metadata.resourceVersion)
    -- and a real change does bump it
    out, ok = patch("noop", '{"spec":{"revisionHistoryLimit":3}}')
    assert.is_true(ok, out)
    assert.are_not.equal(rv, get(ns, "noop").metadata.resourceVersion)
  end)

  it("lets status and metadata updates through the create and update rules", function()
    setup()
    local doc = job_cluster("cancelled")
    doc.spec.job.savepointsDir = "/savepoints"
    local out, ok = submit(doc, "create")
    assert.is_true(ok, out)
    out, ok = patch("cancelled", '{"spec":{"job":{"cancelRequested":true}}}')
    assert.is_true(ok, out)
    -- the controller's status write (a savepoint generation the spec does not ask for)
    out, ok = patch("cancelled", '{"status":{"state":"Stopped","components":{"job":'
      .. '{"state":"Cancelled","savepointGeneration":4}}}}', "--subresource=status --type=merge")
    assert.is_true(ok, out)
    -- a label and a finalizer change (what deletion needs) with cancelRequested still true
    out, ok = sh("label flinkcluster -n " .. ns .. " cancelled team=data")
    assert.is_true(ok, out)
    out, ok = patch("cancelled", '{"metadata":{"finalizers":["test/x"]}}')
    assert.is_true(ok, out)
    out, ok = patch("cancelled", '[{"op":"remove","path":"/metadata/finalizers"}]', "--type=json")
    assert.is_true(ok, out)
    -- savepointGeneration: status 4, so 5 is the next one and 6 is refused
    out, ok = patch("cancelled", '{"spec":{"job":{"savepointGeneration":6}}}')
    assert.is_false(ok, out)
    assert.is_not_nil(out:find("spec.job.savepointGeneration: Forbidden: may only change to "
      .. "status.components.job.savepointGeneration + 1", 1, true), out)
    out, ok = patch("cancelled", '{"spec":{"job":{"savepointGeneration":5}}}')
    assert.is_true(ok, out)
    out, ok = sh("delete flinkcluster -n " .. ns .. " cancelled")
    assert.is_true(ok, out)
  end)

  it("refuses a name over 40 characters, job cluster or not", function()
    setup()
    for _, doc in ipairs({ job_cluster(string.rep("j", 41)), minimal(string.rep("s", 41)) }) do
      local out, ok = submit(doc, "create --dry-run=server")
      assert.is_false(ok, out)
      assert.is_not_nil(out:find("metadata.name: must be at most 40 characters so that the pods' "
        .. 'controller-revision-hash label "<name>-taskmanager-<hash>" fits in 63', 1, true), out)
    end
    local out, ok = submit(minimal(string.rep("s", 40)), "create --dry-run=server")
    assert.is_true(ok, out)
  end)

  -- what render prints with exit 0, the API server accepts (each object, server-side dry run)
  it("accepts every object render prints for the examples and the cluster fixtures", function()
    setup()
    local inputs = {}
    local p = assert(io.popen("ls " .. ROOT .. "/deploy/examples/*.yaml " .. ROOT
      .. "/policies/testdata/cluster/*/input.yaml"))
    for f in p:lines() do inputs[#inputs + 1] = f end
    p:close()
    assert.is_true(#inputs >= 15)
    local rendered = 0
    for _, f in ipairs(inputs) do
      -- into the test's namespace: the input without metadata.namespace
      local doc = fx.load_yaml(f)
      if type(doc.metadata) == "table" then doc.metadata.namespace = nil end
      local in_file = os.tmpname()
      fx.write(in_file, cjson.encode(doc))
      local r = fx.run_bin({ "render", "-f", in_file, "-o", "json" })
      os.remove(in_file)
      if r.code == 0 then
        rendered = rendered + 1
        local list = cjson.decode(r.stdout)
        local out_file = os.tmpname()
        fx.write(out_file, r.stdout)
        local out, ok = sh("apply --dry-run=server -n " .. ns .. " -f " .. out_file)
        os.remove(out_file)
        assert.is_true(ok, f .. ": " .. out)
        local n = select(2, out:gsub("%(server dry run%)", ""))
        assert.are.equal(#list.items, n, f .. ": " .. out)
      end
    end
    assert.is_true(rendered >= 15, "rendered " .. rendered)
  end)

end)

-- The webhook registered with the API server: `flink-controller webhook` on 127.0.0.1 (the API
-- server of the test environment runs on this host), certificates from scripts/webhook-certs.sh,
-- Validating and Mutating configurations of deploy/webhook/webhook.yaml with a url and the CA
-- as caBundle, limited to this test's namespace (a label), removed again at the end.
describe("admission by the webhook registered with the API server #testenv #bin", function()
  local sh = fx.kubectl
  if not fx.live() then
    pending("no kube-apiserver (start one with `make testenv-up` or set FC_KUBECONFIG)")
    return
  end
  local tag = string.format("%d-%d", os.time(), math.random(1000, 9999))
  local ns, config = "admission-webhook-" .. tag, "flink-controller-test-" .. tag
  local dir, pid, port
  local started = false

  local function start_webhook()
    local log = dir .. "/webhook.log"
    local p = assert(io.popen(string.format("%s webhook --addr 127.0.0.1:%s --cert-file %s/tls.crt"
      .. " --key-file %s/tls.key >>%s 2>&1 & echo $!", fx.quote(fx.BIN), port or "0", dir, dir, log)))
    pid = p:read("l")
    p:close()
    for _ = 1, 100 do
      local text = fx.read(log, true) or ""
      local got = select(2, text:gsub("serving the admission webhook", "%0"))
      local last
      for m in text:gmatch("serving the admission webhook.- port=(%d+)") do last = m end
      if last and (port == nil or got >= 2) then
        port = last
        return
      end
      os.execute("sleep 0.1")
    end
    error("webhook did not start: " .. (fx.read(log, true) or ""))
  end
  local function stop_webhook()
    if pid then os.execute("kill " .. pid .. " 2>/dev/null; sleep 0.5") end
    pid = nil
  end

  -- the two configurations of deploy/webhook/webhook.yaml, pointed at the local webhook
  local function register(failure_policy)
    local docs = lyaml.load(fx.read(ROOT .. "/deploy/webhook/webhook.yaml"), { all = true })
    local ca = assert(io.popen("base64 -w0 " .. dir .. "/ca.crt")):read("a")
    local out = {}
    for _, d in ipairs(docs) do
      if d.kind:find("WebhookConfiguration$") then
        d.metadata = { name = config }
        for _, h in ipairs(d.webhooks) do
          h.clientConfig = { url = "https://127.0.0.1:" .. port .. h.clientConfig.service.path, caBundle = ca }
          h.namespaceSelector = { matchLabels = { ["flink-controller-test"] = tag } }
          h.failurePolicy = failure_policy
        end
        out[#out + 1] = cjson.encode(d)
      end
    end
    assert.are.equal(2, #out)
    for _, text in ipairs(out) do   -- one JSON document per file
      local tmp = fx.yaml_stream({ text })
      local o, ok = sh("apply -f " .. tmp)
      os.remove(tmp)
      assert(ok, o)
    end
  end

  local function setup_all()
    if started then return end
    started = true
    fx.apply_crd()
    dir = fx.tmpdir()
    assert(os.execute(ROOT .. "/scripts/webhook-certs.sh " .. dir .. " >/dev/null"))
    start_webhook()
    local out, ok = sh("create namespace " .. ns)
    assert(ok, out)
    out, ok = sh("label namespace " .. ns .. " flink-controller-test=" .. tag)
    assert(ok, out)
    register("Fail")
    -- the API server's webhook client picks the configuration up within a second or so
    os.execute("sleep 2")
  end
  teardown(function()
    if not started then return end
    sh("delete validatingwebhookconfiguration " .. config .. " --ignore-not-found")
    sh("delete mutatingwebhookconfiguration " .. config .. " --ignore-not-found")
    stop_webhook()
    sh("delete namespace " .. ns .. " --wait=false")
    if dir then os.execute("rm -rf " .. fx.quote(dir)) end
  end)

  local function apply(doc, verb)
    local tmp = fx.yaml_stream({ cjson.encode(doc) })
    local out, ok = sh((verb or "apply") .. " -n " .. ns .. " -f " .. tmp)
    os.remove(tmp)
    return out, ok
  end

  it("refuses a rule only Lua knows, with the webhook's <name>: <field path>: <message>", function()
    setup_all()
    local doc = minimal("small")
    doc.spec.taskManager.resources = { limits = { memory = "512Mi" } }
    local out, ok = apply(doc)
    assert.is_false(ok, out)
    assert.is_not_nil(out:find('admission webhook "validate.flinkclusters.flinkoperator.k8s.io" denied the request: '
      .. "small: spec.taskManager.memoryOffHeapMin: must be <= resources.limits.memory (600M > 512Mi)", 1, true), out)
  end)

  it("stores what the mutating webhook adds (the pull policy only defaults.lua knows)", function()
    setup_all()
    local out, ok = apply(minimal("mutated"))
    assert.is_true(ok, out)
    local stored = get(ns, "mutated")
    assert.are.equal("IfNotPresent", stored.spec.image.pullPolicy)
    local latest = minimal("latest")
    latest.spec.image.name = "flink:latest"
    out, ok = apply(latest)
    assert.is_true(ok, out)
    assert.are.equal("Always", get(ns, "latest").spec.image.pullPolicy)
  end)

  it("leaves resourceVersion alone on a repeated apply and a no-op patch through both webhooks", function()
    setup_all()
    local out, ok = apply(minimal("noop"))
    assert.is_true(ok, out)
    local rv = get(ns, "noop").metadata.resourceVersion
    out, ok = apply(minimal("noop"))
    assert.is_true(ok, out)
    assert.is_not_nil(out:find("unchanged", 1, true), out)
    out, ok = sh("patch flinkcluster -n " .. ns .. " noop --type=merge -p "
      .. fx.quote('{"spec":{"image":{"pullPolicy":"IfNotPresent"},"revisionHistoryLimit":10}}'))
    assert.is_true(ok, out)
    assert.are.equal(rv, get(ns, "noop").metadata.resourceVersion)
  end)

  it("refuses the user-control annotations the original operator refuses (metadata: Lua only)", function()
    setup_all()
    local out, ok = apply(minimal("session"))
    assert.is_true(ok, out)
    local annotate = "annotate -n " .. ns .. " flinkcluster session flinkclusters.flinkoperator.k8s.io/user-control="
    out, ok = sh(annotate .. "savepoint")
    assert.is_false(ok, out)
    assert.is_not_nil(out:find("session: metadata.annotations[flinkclusters.flinkoperator.k8s.io/user-control]: "
      .. "savepoint needs a job cluster (spec.job)", 1, true), out)
    out, ok = sh(annotate .. "stop")
    assert.is_false(ok, out)
    assert.is_not_nil(out:find('must be "savepoint" or "job-cancel"', 1, true), out)
  end)

  it("with the webhook down: failurePolicy Fail refuses every write, Ignore lets the CRD's rules decide", function()
    setup_all()
    stop_webhook()
    local out, ok = apply(minimal("while-down"))
    assert.is_false(ok, out)
    assert.is_not_nil(out:find('failed calling webhook "', 1, true), out)
    register("Ignore")
    os.execute("sleep 2")
    out, ok = apply(minimal("while-down"))
    assert.is_true(ok, out)
    -- no webhook defaults then (the controller still applies them), CEL still refuses
    assert.is_nil(get(ns, "while-down").spec.image.pullPolicy)
    local dup = minimal("dup-while-down")
    dup.spec.taskManager.ports = { data = 7000, rpc = 7000 }
    out, ok = apply(dup)
    assert.is_false(ok, out)
    assert.is_not_nil(out:find("spec.taskManager.ports: Invalid value", 1, true), out)
    -- and the Lua-only rule is not enforced at apply time: the controller reports it
    local small = minimal("small-while-down")
    small.spec.taskManager.resources = { limits = { memory = "512Mi" } }
    out, ok = apply(small)
    assert.is_true(ok, out)
    -- back up on the same port: enforced again
    start_webhook()
    os.execute("sleep 1")
    small.metadata.name = "small-again"
    out, ok = apply(small)
    assert.is_false(ok, out)
    assert.is_not_nil(out:find("denied the request", 1, true), out)
  end)
end)
