-- SPDX-License-Identifier: Apache-2.0
-- The admission webhook: fc.admission's decisions (policies in the production host, fc.host), then
-- `flink-controller webhook` (#bin: the binary from FC_BIN) over TLS with certificates from
-- scripts/webhook-certs.sh, spoken to with curl: AdmissionReview v1 in and out, the JSON Patch
-- of /mutate, the refusals of /validate, the HTTP errors, certificate rotation.
-- The webhook registered with a real API server: tests/admission_spec.lua (#testenv).
local cjson = require("cjson")
local fx = require("support.fixtures")
local admission = require("fc.admission")
local host = require("fc.host")

local ROOT = fx.ROOT

-- An AdmissionReview request for `object` (a FlinkCluster table).
local function review(op, object, old, uid)
  return { apiVersion = "admission.k8s.io/v1", kind = "AdmissionReview",
    request = { uid = uid or "uid-1", operation = op, namespace = "team-a", object = object, oldObject = old } }
end

local function cluster(name, spec)
  return { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster", metadata = { name = name },
    spec = spec or { image = { name = "flink:1.20.1" }, taskManager = { replicas = 1 } } }
end

describe("fc.admission", function()
  it("refuses a Lua-only rule with <name>: <field path>: <message>, echoing the uid", function()
    local c = cluster("small")
    c.spec.taskManager.resources = { limits = { memory = "512Mi" } }
    local r = admission.validate(review("CREATE", c), host).review
    assert.are.equal("AdmissionReview", r.kind)
    assert.are.equal("uid-1", r.response.uid)
    assert.is_false(r.response.allowed)
    assert.are.equal(422, r.response.status.code)
    assert.are.equal("small: spec.taskManager.memoryOffHeapMin: must be <= resources.limits.memory (600M > 512Mi)",
      r.response.status.message)
  end)

  it("allows a valid cluster and passes validate's warnings on", function()
    local c = cluster("warned")
    c.spec.taskManager.replica = 2
    local r = admission.validate(review("CREATE", c), host).review
    assert.is_true(r.response.allowed)
    assert.are.same({ 'warned: spec.taskManager.replica: unknown field (did you mean "replicas"?)' },
      r.response.warnings)
  end)

  it("checks an UPDATE against the old object and its status", function()
    local old = cluster("job")
    old.spec.job = { jarFile = "/j.jar", savepointsDir = "/sp", savepointGeneration = 2 }
    old.status = { components = { job = { savepointGeneration = 2 } } }
    local new = cluster("job")
    new.spec.job = { jarFile = "/j.jar", savepointsDir = "/sp", savepointGeneration = 5 }
    local r = admission.validate(review("UPDATE", new, old), host).review
    assert.is_false(r.response.allowed)
    assert.are.equal("job: spec.job.savepointGeneration: may only change to status + 1 (3)", r.response.status.message)
    new.spec.job.savepointGeneration = 3
    assert.is_true(admission.validate(review("UPDATE", new, old), host).review.response.allowed)
  end)

  it("does not hold against an update an error the stored object already had", function()
    local old = cluster(string.rep("n", 60))   -- stored before the name rule
    local new = cluster(string.rep("n", 60))
    new.metadata.labels = { team = "data" }
    assert.is_true(admission.validate(review("UPDATE", new, old), host).review.response.allowed)
    assert.is_false(admission.validate(review("CREATE", new), host).review.response.allowed)
  end)

  it("allows other operations and kinds untouched, and refuses what is no AdmissionReview", function()
    assert.is_true(admission.validate(review("DELETE", cluster("x")), host).review.response.allowed)
    assert.is_true(admission.mutate(review("CREATE", { kind = "ConfigMap" }), host).review.response.allowed)
    assert.is_nil(admission.mutate(review("CREATE", { kind = "ConfigMap" }), host).patch)
    local r = admission.validate({ kind = "AdmissionReview" }, host).review
    assert.is_false(r.response.allowed)
    assert.are.equal("not an AdmissionReview request", r.response.status.message)
  end)

  it("mutates with a JSON Patch of defaults.lua's additions, and none when nothing changes", function()
    local c = cluster("d")
    local out = admission.mutate(review("CREATE", c), host)
    assert.is_true(out.review.response.allowed)
    assert.are.equal("JSONPatch", out.review.response.patchType)
    local by_path = {}
    for _, op in ipairs(out.patch) do by_path[op.path] = op end
    assert.are.same({ op = "add", path = "/spec/image/pullPolicy", value = "IfNotPresent" },
      by_path["/spec/image/pullPolicy"])
    assert.are.equal(8081, by_path["/spec/jobManager"].value.ports.ui)
    assert.are.same({ op = "add", path = "/spec/revisionHistoryLimit", value = 10 },
      by_path["/spec/revisionHistoryLimit"])
    -- the patched object is defaults.apply's: mutating it again changes nothing
    local defaulted = require("defaults").apply(c)
    local again = admission.mutate(review("UPDATE", defaulted, defaulted), host)
    assert.is_nil(again.patch)
    assert.is_nil(again.review.response.patchType)
    assert.is_true(again.review.response.allowed)
  end)

  it("writes JSON Pointers with ~0 and ~1, removes and replaces", function()
    assert.are.same({
      { op = "remove", path = "/a~1b" },
      { op = "add", path = "/m~0n", value = 1 },
      { op = "replace", path = "/x/0", value = { 2 } },
    }, admission.patch({ ["a/b"] = 1, x = { ["0"] = { 1 } } }, { ["m~n"] = 1, x = { ["0"] = { 2 } } }))
    assert.are.same({}, admission.patch({ a = { b = { 1, 2 } } }, { a = { b = { 1, 2 } } }))
  end)
end)

describe("flink-controller webhook #bin", function()
  local dir, pid, port, log
  local curl

  local function start(extra)
    log = dir .. "/webhook.log"
    local cmd = string.format("%s webhook --addr 127.0.0.1:0 --cert-file %s/tls.crt --key-file %s/tls.key %s"
      .. " >%s 2>&1 & echo $!", fx.quote(fx.BIN), dir, dir, extra or "", log)
    local p = assert(io.popen(cmd))
    pid = p:read("l")
    p:close()
    for _ = 1, 100 do
      port = (fx.read(log, true) or ""):match("serving the admission webhook.* port=(%d+)")
      if port then return end
      os.execute("sleep 0.1")
    end
    error("webhook did not start: " .. (fx.read(log, true) or ""))
  end

  -- curl(path, body_file, ca) -> status code, body
  curl = function(path, body_file, ca, method)
    local out = os.tmpname()
    local cmd = string.format("curl -s -m 10 -o %s -w '%%{http_code}' --cacert %s %s %s https://127.0.0.1:%s%s",
      out, ca or (dir .. "/ca.crt"), method and ("-X " .. method) or "",
      body_file and ("-H 'Content-Type: application/json' --data-binary @" .. body_file) or "", port, path)
    local p = assert(io.popen(cmd))
    local code = p:read("a")
    p:close()
    local body = fx.read(out, true) or ""
    os.remove(out)
    return tonumber(code), body
  end

  local function post(path, tbl)
    local f = os.tmpname()
    fx.write(f, cjson.encode(tbl))
    local code, body = curl(path, f)
    os.remove(f)
    return code, body
  end

  setup(function()
    dir = fx.tmpdir()
    assert.is_true(os.execute(ROOT .. "/scripts/webhook-certs.sh " .. dir .. " >/dev/null"))
    start("--cert-check-seconds 1 --metrics-addr 127.0.0.1:0")
  end)
  teardown(function()
    if pid then os.execute("kill " .. pid .. " 2>/dev/null; sleep 0.3") end
    if dir then os.execute("rm -rf " .. fx.quote(dir)) end
  end)

  it("answers /validate over TLS with an AdmissionReview naming the field", function()
    local c = cluster("small")
    c.spec.taskManager.resources = { limits = { memory = "512Mi" } }
    local code, body = post("/validate", review("CREATE", c, nil, "abc"))
    assert.are.equal(200, code, body)
    local r = cjson.decode(body)
    assert.are.equal("admission.k8s.io/v1", r.apiVersion)
    assert.are.equal("abc", r.response.uid)
    assert.is_false(r.response.allowed)
    assert.are.equal("small: spec.taskManager.memoryOffHeapMin: must be <= resources.limits.memory (600M > 512Mi)",
      r.response.status.message)
  end)

  it("refuses a name holding a NUL (JSON \\u0000) with its message whole, not with a 500", function()
    local c = cluster("a\0b")
    local code, body = post("/validate", review("CREATE", c, nil, "nul"))
    assert.are.equal(200, code, body)
    local r = cjson.decode(body)
    assert.are.equal("nul", r.response.uid)
    assert.is_false(r.response.allowed)
    assert.are.equal("a\0b: metadata.name: must be a DNS-1035 label: lowercase letters, digits and '-', "
      .. "starting with a letter and ending with a letter or digit", r.response.status.message)
    code, body = post("/mutate", review("CREATE", c, nil, "nul2"))
    assert.are.equal(200, code, body)
    assert.is_true(cjson.decode(body).response.allowed)
  end)

  it("answers /mutate with a base64 JSON Patch, and with none for a defaulted object", function()
    local code, body = post("/mutate", review("CREATE", cluster("m")))
    assert.are.equal(200, code, body)
    local r = cjson.decode(body).response
    assert.is_true(r.allowed)
    assert.are.equal("JSONPatch", r.patchType)
    local p = assert(io.popen("echo " .. r.patch .. " | base64 -d"))
    local ops = cjson.decode(p:read("a"))
    p:close()
    local paths = {}
    for _, op in ipairs(ops) do paths[#paths + 1] = op.op .. " " .. op.path end
    table.sort(paths)
    assert.are.same({ "add /spec/image/pullPolicy", "add /spec/jobManager", "add /spec/recreateOnUpdate",
      "add /spec/revisionHistoryLimit", "add /spec/taskManager/memoryOffHeapMin",
      "add /spec/taskManager/memoryOffHeapRatio", "add /spec/taskManager/ports" }, paths)
    local defaulted = require("defaults").apply(cluster("m"))
    code, body = post("/mutate", review("UPDATE", defaulted, defaulted))
    assert.are.equal(200, code, body)
    r = cjson.decode(body).response
    assert.is_true(r.allowed)
    assert.is_nil(r.patch)
    assert.is_nil(r.patchType)
  end)

  it("counts admissions by operation and result on --metrics-addr's /metrics, with build and process", function()
    local mport = (fx.read(log, true) or ""):match("serving metrics\" port=(%d+)")
    assert.is_not_nil(mport, fx.read(log, true))
    local function scrape()
      local p = assert(io.popen("curl -s -m 5 http://127.0.0.1:" .. mport .. "/metrics"))
      local text = p:read("a")
      p:close()
      return text
    end
    local function value(text, series)
      for line in text:gmatch("[^\n]+") do
        local name, v = line:match("^(%S+) (%S+)$")
        if name == series then return tonumber(v) end
      end
      return 0
    end
    local denied = 'flink_controller_webhook_admissions_total{operation="CREATE",result="denied"}'
    local allowed = 'flink_controller_webhook_admissions_total{operation="UPDATE",result="allowed"}'
    local errors = 'flink_controller_webhook_admissions_total{operation="",result="error"}'
    local before = scrape()
    local bad = cluster("small")
    bad.spec.taskManager.resources = { limits = { memory = "512Mi" } }
    assert.are.equal(200, (post("/validate", review("CREATE", bad, nil, "m1"))))
    local defaulted = require("defaults").apply(cluster("m"))
    assert.are.equal(200, (post("/mutate", review("UPDATE", defaulted, defaulted))))
    local f = os.tmpname()
    fx.write(f, "not json")
    assert.are.equal(400, (curl("/validate", f)))
    os.remove(f)
    local after = scrape()
    assert.are.equal(value(before, denied) + 1, value(after, denied), after)
    assert.are.equal(value(before, allowed) + 1, value(after, allowed), after)
    assert.are.equal(value(before, errors) + 1, value(after, errors), after)
    local build = '\nflink_controller_build_info{version="[^"]+",commit="[^"]+",lua="Lua 5.4[^"]*"} 1\n'
    assert.is_not_nil(after:find(build), after)
    assert.is_true(value(after, "process_resident_memory_bytes") > 1e6, after)
    assert.is_true(value(after, "process_open_fds") > 3, after)
  end)

  it("answers 404, 405, 400, 413 and /healthz", function()
    assert.are.equal(404, (curl("/nope")))
    assert.are.equal(405, (curl("/validate")))
    local f = os.tmpname()
    fx.write(f, "not json")
    local code, body = curl("/validate", f)
    assert.are.equal(400, code)
    assert.is_not_nil(body:find("invalid JSON", 1, true), body)
    assert.is_true(os.execute("head -c 9000000 /dev/zero | tr '\\0' a > " .. f))
    assert.are.equal(413, (curl("/mutate", f)))
    os.remove(f)
    assert.are.equal(200, (curl("/healthz")))
  end)

  it("serves TLS only, with the certificate of the CA", function()
    local p = assert(io.popen("curl -s -m 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:" .. port .. "/healthz"))
    local plain = p:read("a")
    p:close()
    assert.are_not.equal("200", plain)
    local other = fx.tmpdir()
    assert.is_true(os.execute(ROOT .. "/scripts/webhook-certs.sh " .. other .. " >/dev/null"))
    local code = curl("/healthz", nil, other .. "/ca.crt")
    os.execute("rm -rf " .. fx.quote(other))
    assert.are.equal(0, code)  -- curl: certificate not trusted
  end)

  it("speaks TLS 1.2 and 1.3 only: a TLS 1.0 or 1.1 handshake is refused", function()
    -- openssl s_client with one protocol version; OpenSSL 3 offers 1.0 and 1.1 only at security
    -- level 0. What the handshake agreed is its line "New, <protocol>, Cipher is <cipher>".
    local function hello(v)
      local p = assert(io.popen("echo | timeout 5 openssl s_client -connect 127.0.0.1:" .. port .. " -" .. v
        .. " -cipher DEFAULT@SECLEVEL=0 -CAfile " .. dir .. "/ca.crt 2>&1"))
      local out = p:read("a")
      p:close()
      local proto, cipher = out:match("\nNew, (%S+), Cipher is (%S+)")
      return proto or "", cipher or "", out
    end
    for v, want in pairs({ tls1_2 = "TLSv1.2", tls1_3 = "TLSv1.3" }) do
      local proto, cipher, out = hello(v)
      assert.are.equal(want, proto, out)
      assert.are_not.equal("(NONE)", cipher, out)
      assert.is_not_nil(out:find("Verify return code: 0 (ok)", 1, true), out)
    end
    for _, v in ipairs({ "tls1", "tls1_1" }) do
      local proto, cipher, out = hello(v)
      assert.are.same({ "(NONE)", "(NONE)" }, { proto, cipher }, out)
      assert.is_nil(out:find("BEGIN CERTIFICATE", 1, true), out)
    end
  end)

  it("re-reads the certificate files when they change", function()
    -- a new CA and pair in the same files (scripts/webhook-certs.sh keeps ca.* when present)
    os.execute("rm -f " .. dir .. "/ca.crt " .. dir .. "/ca.key")
    assert.is_true(os.execute(ROOT .. "/scripts/webhook-certs.sh " .. dir .. " >/dev/null"))
    local ok = false
    for _ = 1, 50 do
      if curl("/healthz") == 200 then
        ok = true
        break
      end
      os.execute("sleep 0.2")
    end
    assert.is_true(ok, fx.read(log, true))
    assert.is_not_nil(fx.read(log):find("webhook certificates reloaded", 1, true))
  end)
end)

-- The controller serves the same webhook (`run --webhook-addr`), beside its reconciles.
describe("flink-controller run --webhook-addr #testenv #bin", function()
  if not fx.live() then
    pending("no kube-apiserver (start one with `make testenv-up` or set FC_KUBECONFIG)")
    return
  end
  local dir, pid

  teardown(function()
    if pid then os.execute("kill " .. pid .. " 2>/dev/null; sleep 0.5") end
    if dir then os.execute("rm -rf " .. fx.quote(dir)) end
  end)

  it("needs both certificate files or a Secret, and the Secret's options well formed", function()
    local r = fx.run_bin({ "run", "--webhook-addr", "127.0.0.1:0", "--webhook-cert-file", "/x" })
    assert.are.equal(2, r.code)
    assert.are.equal("run: --webhook-addr needs --webhook-cert-file and --webhook-key-file, or --webhook-cert-secret\n",
      r.stderr)
    for _, case in ipairs({
      { { "--webhook-cert-secret", "x" }, "run: --webhook-cert-secret: expected NAMESPACE/NAME, got 'x'\n" },
      { { "--webhook-cert-secret", "ns/x" }, "run: no names: --webhook-service or --webhook-host is needed\n" },
      { { "--webhook-cert-secret", "ns/x", "--webhook-service", "svc" },
        "run: --webhook-service: expected NAMESPACE/NAME, got 'svc'\n" },
      { { "--webhook-cert-secret", "ns/x", "--webhook-host", "127.0.0.1", "--webhook-cert-validity", "5s" },
        "run: --webhook-cert-validity: expected a duration 30s..397d such as 90d, got '5s'\n" },
      { { "--webhook-cert-secret", "ns/x", "--webhook-host", "h", "--webhook-cert-file", "/x",
        "--webhook-key-file", "/y" },
        "run: --webhook-cert-file/--webhook-key-file and --webhook-cert-secret exclude each other\n" },
    }) do
      r = fx.run_bin({ "run", "--webhook-addr", "127.0.0.1:0", table.unpack(case[1]) })
      assert.are.equal(2, r.code, table.concat(case[1], " "))
      assert.are.equal(case[2], r.stderr)
    end
    -- the Secret's options without the Secret (and without --webhook-addr)
    for _, case in ipairs({ { "--webhook-configuration", "c" }, { "--webhook-service", "ns/s" } }) do
      r = fx.run_bin({ "run", table.unpack(case) })
      assert.are.equal(2, r.code, table.concat(case, " "))
      assert.are.equal("run: --webhook-service, --webhook-configuration, --webhook-host and "
        .. "--webhook-cert-validity need --webhook-cert-secret\n", r.stderr)
    end
  end)

  it("answers /validate while it runs", function()
    dir = fx.tmpdir()
    assert.is_true(os.execute(ROOT .. "/scripts/webhook-certs.sh " .. dir .. " >/dev/null"))
    local log = dir .. "/run.log"
    local ns = "webhook-run-" .. os.time()
    local p = assert(io.popen(string.format("%s run --kubeconfig %s --namespace %s --webhook-addr 127.0.0.1:0 "
      .. "--webhook-cert-file %s/tls.crt --webhook-key-file %s/tls.key >%s 2>&1 & echo $!", fx.quote(fx.BIN),
      fx.quote(fx.kubeconfig()), ns, dir, dir, log)))
    pid = p:read("l")
    p:close()
    local port
    for _ = 1, 100 do
      port = (fx.read(log, true) or ""):match("serving the admission webhook\" port=(%d+)")
      if port then break end
      os.execute("sleep 0.1")
    end
    assert.is_not_nil(port, fx.read(log, true))
    local body = os.tmpname()
    local c = cluster("small")
    c.spec.taskManager.resources = { limits = { memory = "512Mi" } }
    fx.write(body, cjson.encode(review("CREATE", c)))
    local out = assert(io.popen("curl -s -m 10 --cacert " .. dir .. "/ca.crt --data-binary @" .. body
      .. " https://127.0.0.1:" .. port .. "/validate")):read("a")
    os.remove(body)
    local r = cjson.decode(out).response
    assert.is_false(r.allowed)
    assert.are.equal("small: spec.taskManager.memoryOffHeapMin: must be <= resources.limits.memory (600M > 512Mi)",
      r.status.message)
  end)
end)
