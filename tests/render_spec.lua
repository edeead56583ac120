-- SPDX-License-Identifier: Apache-2.0
-- Specs of fc.codec and fc.render (policies in the production host, fc.host) and of
-- `flink-controller render` (#bin: the binary from FC_BIN, default build/flink-controller).
local cjson = require("cjson")
local lyaml = require("lyaml")

local fx = require("support.fixtures")
local ROOT = fx.ROOT
local INPUTS = ROOT .. "/tests/testdata/render/"
local POLICIES = ROOT .. "/tests/testdata/policies/"

local codec = require("fc.codec")
local render = require("fc.render")
local host = require("fc.host")

local slurp, run = fx.read, fx.run_bin

-- "<kind> <name>" of each object of a YAML stream, in order.
local function kinds_names(docs)
  local out = {}
  for i, d in ipairs(docs) do out[i] = d.kind .. " " .. d.metadata.name end
  return out
end

describe("fc.codec", function()
  it("quotes strings that would read back as something else", function()
    for _, s in ipairs({ "1", "0755", "1.10", "-1", "+1", ".5", "1e3", "0x1F", "1:20", "true", "True", "yes",
      "No", "on", "OFF", "y", "n", "null", "Null", "~", "", ".inf", "-.Inf", ".NaN", "2001-12-14", "<<" }) do
      assert.is_true(codec.needs_quotes(s), s)
    end
    for _, s in ipairs({ "flink:1.9.2", "wordcount", "a b", "x1", "yesterday", "nullable", "v1" }) do
      assert.is_false(codec.needs_quotes(s), s)
    end
  end)

  it("writes a YAML stream with sorted keys, quoted look-alikes, literal blocks and {}", function()
    local text = codec.encode_yaml_stream({
      { kind = "ConfigMap", data = { b = "2", a = "x\ny\n", c = "yes" }, metadata = { annotations = {} } },
      { list = { 1, true, 2.5, "on" }, empty = codec.array({}) },
    })
    assert.equal(table.concat({
      "---",
      "data:",
      "  a: |",
      "    x",
      "    y",
      '  b: "2"',
      '  c: "yes"',
      "kind: ConfigMap",
      "metadata:",
      "  annotations: {}",
      "---",
      "empty: []",
      "list:",
      "- 1",
      "- true",
      "- 2.5",
      '- "on"',
      "",
    }, "\n"), text)
    assert.same({ { data = { a = "x\ny\n", b = "2", c = "yes" }, kind = "ConfigMap",
      metadata = { annotations = {} } }, { empty = {}, list = { 1, true, 2.5, "on" } } },
      lyaml.load(text, { all = true }))
    assert.equal("", codec.encode_yaml_stream({}))
  end)

  it("refuses values YAML or JSON cannot hold", function()
    assert.has_error(function() codec.encode_yaml({ f = print }) end, "encode_yaml: cannot encode a function")
    assert.has_error(function() codec.encode_yaml({ x = 0 / 0 }) end, "encode_yaml: not a finite number")
    assert.has_error(function() codec.encode_json({ big = 1 << 60 }) end,
      "encode_json: big: integer 1152921504606846976 has more digits than the JSON encoder keeps")
    assert.equal('{"a":[1,2]}', codec.encode_json({ a = { 1, 2 } }))
    assert.equal("{}", codec.encode_json({}))
    -- the same judgement without raising, with the path
    assert.equal("spec.replicas[1]: not a finite number", codec.unencodable({ spec = { replicas = { 1, 0 / 0 } } }))
    assert.equal("<root>: not a finite number", codec.unencodable(1 / 0))
    assert.equal("f: a function is not data", codec.unencodable({ f = print }))
    assert.is_nil(codec.unencodable({ a = { "x", true, 2.5, 99999999999999 } }))
    -- keys are written with %.14g too: named at their mapping
    assert.equal("spec: key -9223372036854775808 has more digits than the JSON encoder keeps",
      codec.unencodable({ spec = { [math.mininteger] = 1 } }))
    assert.equal("<root>: key inf is not a finite number", codec.unencodable({ [1 / 0] = 1 }))
    assert.is_nil(codec.unencodable({ [0.5] = 1, [3] = { 1 } }))
  end)

  it("names the path of a mapping key that is not a scalar, <root> at the top", function()
    local docs = assert(codec.decode_documents("? [a, b]\n: 1\n---\nspec:\n  ? {a: 1}\n  : 1\n"))
    assert.equal("<root>: a mapping key must be a string, number or boolean, not a list", docs[1].error)
    assert.equal("spec: a mapping key must be a string, number or boolean, not a mapping", docs[2].error)
  end)

  it("decodes YAML streams: empty documents are nil, nulls dropped, integral floats are integers", function()
    local docs = assert(codec.decode_documents("---\n---\na: 1.0\nb: ~\nc: [x, 2]\n3: three\n---\nx\n"))
    assert.equal(3, #docs)
    assert.same({ index = 1 }, docs[1])
    assert.same({ a = 1, c = { "x", 2 }, ["3"] = "three" }, docs[2].value)
    assert.equal("integer", math.type(docs[2].value.a))
    assert.equal("x", docs[3].value)
    local bad = assert(codec.decode_documents("a: [1, null]\n"))
    assert.equal("a[1]: null is not allowed in a list", bad[1].error)
    local nothing, err = codec.decode_documents("a: [\n")
    assert.is_nil(nothing)
    assert.equal("invalid YAML: 1:4: did not find expected node content", err)
  end)

  it("bounds alias expansion and nesting (tests/decode_limits_spec.lua has the rest)", function()
    local lines = { "a0: &a0 [x, x, x, x, x, x, x, x, x, x]" }
    for i = 1, 8 do
      lines[#lines + 1] = string.format("a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]",
        i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1)
    end
    local docs = assert(codec.decode_documents(table.concat(lines, "\n") .. "\n"))
    assert.equal("line 5: a4[7]: alias *a3: expands to more than 100000 values", docs[1].error)
    local deep = string.rep("[", 150) .. string.rep("]", 150)
    docs = assert(codec.decode_documents("a: " .. deep .. "\n"))
    assert.equal("line 1: a" .. string.rep("[0]", 63) .. ": nested deeper than 64 levels", docs[1].error)
  end)

  it("decodes JSON: one document, or a top-level array of documents", function()
    local docs = assert(codec.decode_documents('  {"a": 2.0, "n": null}'))
    assert.same({ { index = 1, value = { a = 2 } } }, docs)
    assert.equal("integer", math.type(docs[1].value.a))
    docs = assert(codec.decode_documents('[{"a": 1}, {"b": 2}]'))
    assert.same({ a = 1 }, docs[1].value)
    assert.same({ b = 2 }, docs[2].value)
    local nothing, err = codec.decode_documents("{nope")
    assert.is_nil(nothing)
    assert.truthy(err:find("^invalid JSON: "), err)
    assert.same({ x = { 1 } }, codec.decode_json('{"x": [1.0]}'))
    assert.has_error(function() codec.decode_json("[") end)
  end)
end)

describe("fc.strict", function()
  local strict = require("fc.strict")
  local SCHEMA = { type = "object", properties = {
    metadata = { type = "object" },
    spec = { type = "object", properties = {
      replicas = { type = "integer" },
      props = { type = "object", additionalProperties = { type = "object", properties = { v = { type = "string" } } } },
      env = { type = "array", items = { type = "object", ["x-kubernetes-preserve-unknown-fields"] = true,
        properties = { name = { type = "string" } } } },
      ports = { type = "array", items = { type = "object", properties = { port = { type = "integer" } } } },
      empty = { type = "object" },
    } },
    status = { type = "object", ["x-kubernetes-preserve-unknown-fields"] = true },
  } }

  it("finds the fields the API server would prune, with their paths and a near known name", function()
    local found = strict.unknown_fields({
      metadata = { name = "x", Labels = {}, uid = "u", managedFields = {} },
      spec = { replica = 1, props = { ["a.b"] = { v = "1", w = 2 } }, env = { { name = "A", value = "1" } },
        ports = { { port = 1 }, { prot = 2 } }, empty = { k = 1 } },
      status = { anything = { at = "all" } },
      kindd = "FlinkCluster",
    }, SCHEMA)
    assert.same({
      { path = "kindd", hint = nil },
      { path = "metadata.Labels", hint = "labels" },
      { path = "spec.empty.k" },
      { path = "spec.ports[1].prot", hint = "port" },
      { path = "spec.props[a.b].w", hint = "v" },
      { path = "spec.replica", hint = "replicas" },
    }, found)
    assert.equal('unknown field (did you mean "replicas"?)', strict.message(found[6]))
    assert.equal("unknown field", strict.message(found[3]))
    assert.same({}, strict.unknown_fields({ spec = { replicas = 1 } }, SCHEMA))
    -- the CRD's own schema (fc.crd) by default: every example is clean
    for _, name in ipairs({ "quickstart", "wordcount", "native-gpu-session" }) do
      local doc = lyaml.load(slurp(ROOT .. "/deploy/examples/" .. name .. ".yaml"))
      assert.same({}, strict.unknown_fields(doc), name)
    end
  end)
end)

describe("fc.render (the production host in process)", function()
  -- validate "warn": the inputs have unknown fields, which the test policies warn about
  local function render_file(name, policies, output)
    return render.run({ text = slurp(INPUTS .. name), source = name, output = output,
      policy_dir = POLICIES .. (policies or "basic"), host = host, validate = "warn" })
  end

  it("renders every FlinkCluster of a stream in order, skipping empty documents", function()
    local r = render_file("good.yaml")
    assert.same({ "good: warning: spec.extraField: unknown field" }, r.stderr)
    assert.equal(0, r.code)
    local docs = lyaml.load(r.stdout, { all = true })
    assert.same({ "ConfigMap good-configmap", "StatefulSet good-taskmanager", "ConfigMap second-configmap",
      "StatefulSet second-taskmanager" }, kinds_names(docs))
    assert.equal("team-a", docs[3].metadata.namespace)
    assert.equal("2", docs[1].data.replicas)
    assert.equal("yes", docs[1].data.yes)
  end)

  it("checks FlinkJobs (no objects of their own) with the path of each error", function()
    local r = render.run({ text = slurp(INPUTS .. "flinkjob.yaml"), source = "flinkjob.yaml", host = host,
      policy_dir = ROOT .. "/policies" })
    assert.same({ "good-job: FlinkJob: no objects (its job is submitted to the JobManager of FlinkCluster good)",
      "bad-job: spec.clusterRef.name: is required: the session cluster (a FlinkCluster in the same namespace)",
      "bad-job: spec.job.jarFile: must be an http(s):// URL: a FlinkJob is submitted through the JobManager's REST API "
        .. "(the controller downloads the jar and uploads it)" }, r.stderr)
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
  end)

  it("prints a v1 List for -o json", function()
    local r = render_file("good.json", "basic", "json")
    assert.equal(0, r.code)
    local list = cjson.decode(r.stdout)
    assert.equal("v1", list.apiVersion)
    assert.equal("List", list.kind)
    assert.equal("jsonic-configmap", list.items[1].metadata.name)
    assert.equal(3, list.items[2].spec.replicas)
  end)

  it("reports every invalid document and prints nothing", function()
    local r = render_file("invalid.yaml")
    assert.same({ "wordcount: spec.taskManager.replicas: must be >= 1" }, r.stderr)
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
    r = render.run({ text = slurp(INPUTS .. "not_flinkcluster.yaml"), source = "x", host = host,
      policy_dir = POLICIES .. "basic" })
    assert.same({ "nginx: kind: document 2 is a Deployment (apps/v1), not a FlinkCluster " ..
      "(flinkoperator.k8s.io/v1beta1)" }, r.stderr)
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
  end)

  it("fails a policy that raises or goes over its memory cap, and renders the others", function()
    local r = render_file("failures.yaml")
    assert.equal(1, r.code)
    assert.equal(3, #r.stderr)
    assert.equal("boom: policy: defaults.lua:17: boom requested", r.stderr[1])
    assert.truthy(r.stderr[2]:find("^hog: policy: defaults%.lua:%d+: policy exceeded its memory cap %(64 MiB%)$"),
      r.stderr[2])
    assert.equal("fine: spec.taskManager.replicas: must be >= 1", r.stderr[3])
    assert.equal("", r.stdout)
  end)

  it("keeps going after a policy failure and names the policy", function()
    local calls = {}
    local fake = {
      configure = function() end,
      call = function(policy, hook, input)
        local name = (input.metadata or input.cluster.metadata).name
        calls[#calls + 1] = policy .. "." .. hook .. " " .. name
        if name == "evil" then return false, "defaults.lua:11: policy exceeded its time budget (200 ms)" end
        return host.call(policy, hook, input)
      end,
    }
    local r = render.run({ text = slurp(INPUTS .. "evil_good.yaml"), source = "x", host = fake,
      policy_dir = POLICIES .. "basic", validate = "warn" })
    assert.same({ "evil: policy: defaults.lua:11: policy exceeded its time budget (200 ms)",
      "good: warning: spec.bogus: unknown field" }, r.stderr)
    -- after a failed defaults, validate looks at the input as given (its errors would say more)
    assert.same({ "defaults.apply evil", "validate.check evil", "defaults.apply good", "validate.check good",
      "cluster.desired good" }, calls)
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
  end)

  it("treats a wrong output shape as a policy error", function()
    local r = render_file("good.yaml", "badshape")
    assert.equal(1, r.code)
    assert.same({ "good: warning: spec.extraField: unknown field",
      "good: policy: cluster.lua: desired: objects[0] must have apiVersion, kind and metadata.name strings",
      "second: policy: cluster.lua: desired: objects[0] must have apiVersion, kind and metadata.name strings",
    }, r.stderr)
    assert.is_nil(render.shape.validate({ errors = { { path = "a", message = "b" } } }))
    assert.equal("warnings[0] must be {path=<string>, message=<string>}",
      render.shape.validate({ warnings = { { path = 1 } } }))
    assert.equal("must return a FlinkCluster of flinkoperator.k8s.io/v1beta1", render.shape.defaults({ kind = "Pod" }))
  end)

  it("renders the items of a v1 List (kubectl get -o json)", function()
    local item = cjson.decode(slurp(INPUTS .. "good.json"))
    local second = cjson.decode(slurp(INPUTS .. "good.json"))
    second.metadata.name = "other"
    local r = render.run({ text = cjson.encode({ apiVersion = "v1", kind = "List", items = { item, second } }),
      source = "list.json", host = host, policy_dir = POLICIES .. "basic" })
    assert.same({}, r.stderr)
    assert.same({ "ConfigMap jsonic-configmap", "StatefulSet jsonic-taskmanager", "ConfigMap other-configmap",
      "StatefulSet other-taskmanager" }, kinds_names(lyaml.load(r.stdout, { all = true })))
  end)

  it("takes kubectl's --validate values and refuses others", function()
    local text = slurp(INPUTS .. "good.yaml")
    local function run_with(v)
      return render.run({ text = text, source = "good.yaml", host = host, policy_dir = POLICIES .. "basic",
        validate = v })
    end
    assert.same({ "good: spec.extraField: unknown field" }, run_with("true").stderr)
    assert.same({}, run_with("false").stderr)
    assert.equal(0, run_with("ignore").code)
    assert.has_error(function() run_with("maybe") end,
      "render.run: validate must be strict, warn or ignore (true, false)")
  end)

  it("rejects an input without FlinkCluster documents and a cluster given twice", function()
    local r = render.run({ text = "---\n", source = "empty.yaml", host = host })
    assert.same({ "empty.yaml: no FlinkCluster documents" }, r.stderr)
    assert.equal(1, r.code)
    local doc = slurp(INPUTS .. "invalid.yaml"):gsub("replicas: 0", "replicas: 1")
    r = render.run({ text = doc .. "---\n" .. doc, source = "twice.yaml", host = host,
      policy_dir = POLICIES .. "basic" })
    assert.same({ "wordcount: metadata.name: document 2 renders the same cluster as document 1" }, r.stderr)
    assert.equal(1, r.code)
  end)
end)

describe("flink-controller render #bin", function()
  local BASIC = POLICIES .. "basic"

  it("renders and exits 0, warnings on stderr", function()
    local r = run({ "render", "-f", INPUTS .. "good.yaml", "--policy-dir", BASIC, "--validate=warn" })
    assert.equal(0, r.code, r.stderr)
    assert.equal("good: warning: spec.extraField: unknown field\n", r.stderr)
    assert.same({ "ConfigMap good-configmap", "StatefulSet good-taskmanager", "ConfigMap second-configmap",
      "StatefulSet second-taskmanager" }, kinds_names(lyaml.load(r.stdout, { all = true })))
    assert.truthy(r.stdout:find('\n  "yes": "yes"\n', 1, true), r.stdout)
  end)

  it("reads stdin with -f - and writes a List with -o json", function()
    local r = run({ "render", "-f", "-", "-o", "json", "--policy-dir", BASIC }, INPUTS .. "good.json")
    assert.equal(0, r.code, r.stderr)
    local list = cjson.decode(r.stdout)
    assert.equal("List", list.kind)
    assert.equal(2, #list.items)
  end)

  it("exits 1 for an invalid spec, naming cluster, field and rule, with nothing on stdout", function()
    local r = run({ "render", "-f", INPUTS .. "invalid.yaml", "--policy-dir", BASIC })
    assert.equal(1, r.code)
    assert.equal("wordcount: spec.taskManager.replicas: must be >= 1\n", r.stderr)
    assert.equal("", r.stdout)
  end)

  it("exits 1 for bad YAML and for a document that is not a FlinkCluster", function()
    local r = run({ "render", "-f", INPUTS .. "bad.yaml", "--policy-dir", BASIC })
    assert.equal(1, r.code)
    assert.equal(INPUTS .. "bad.yaml: invalid YAML: 4:10: did not find expected ',' or ']'\n", r.stderr)
    assert.equal("", r.stdout)
    r = run({ "render", "-f", INPUTS .. "not_flinkcluster.yaml", "--policy-dir", BASIC })
    assert.equal(1, r.code)
    assert.equal("nginx: kind: document 2 is a Deployment (apps/v1), not a FlinkCluster " ..
      "(flinkoperator.k8s.io/v1beta1)\n", r.stderr)
    assert.equal("", r.stdout)
  end)

  it("exits 2 for usage and I/O errors", function()
    local cases = {
      { { "render", "-f", "/nonexistent/x.yaml" }, "render: /nonexistent/x.yaml: No such file or directory\n" },
      { { "render", "-f", INPUTS .. "good.yaml", "--bogus" },
        "render: bad or incomplete option '--bogus' (see --help)\n" },
      { { "render", "-f", INPUTS .. "good.yaml", "-o", "xml" }, "render: -o: expected yaml or json, got 'xml'\n" },
      { { "render", "-f", INPUTS .. "good.yaml", "--policy-dir", "/nonexistent" },
        "render: --policy-dir: /nonexistent: No such file or directory\n" },
      { { "render", "-f", INPUTS .. "good.yaml", "extra" }, "render: unexpected argument 'extra' (see --help)\n" },
      { { "render", "-f" }, "render: bad or incomplete option '-f' (see --help)\n" },
      { { "render", "-f", POLICIES }, "render: " .. POLICIES .. ": no .yaml, .yml or .json files in this directory\n" },
      { { "render", "-f", INPUTS .. "good.yaml", "--validate=maybe" },
        "render: --validate: expected strict, warn or ignore (true, false), got 'maybe'\n" },
      { { "render", "-f", "-", "-f", "-" }, "render: -f -: stdin can be read once\n" },
    }
    for _, c in ipairs(cases) do
      local r = run(c[1])
      assert.equal(2, r.code, table.concat(c[1], " "))
      assert.equal(c[2], r.stderr)
      assert.equal("", r.stdout)
    end
    local r = run({ "render" })
    assert.equal(2, r.code)
    assert.truthy(r.stderr:find("^render: %-f FILE is required"), r.stderr)
    r = run({ "render", "--help" })
    assert.equal(0, r.code)
    assert.truthy(r.stdout:find("^usage: flink%-controller render %-f FILE|DIR|%-"), r.stdout)
  end)

  it("checks the next document after a policy loops forever, in under a second", function()
    local r = run({ "render", "-f", INPUTS .. "evil_good.yaml", "--policy-dir", BASIC, "--validate=warn" })
    assert.equal(1, r.code)
    assert.equal("evil: policy: defaults.lua:11: policy exceeded its time budget (200 ms)\n" ..
      "good: warning: spec.bogus: unknown field\n", r.stderr)
    assert.equal("", r.stdout)
    assert.is_true(r.cpu_ms < 1000, "took " .. r.cpu_ms .. " ms of CPU")
  end)

  it("reports a raising policy, a memory hog and an invalid spec together", function()
    local r = run({ "render", "-f", INPUTS .. "failures.yaml", "--policy-dir", BASIC })
    assert.equal(1, r.code)
    local lines = {}
    for l in r.stderr:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(3, #lines, r.stderr)
    assert.equal("boom: policy: defaults.lua:17: boom requested", lines[1])
    assert.truthy(lines[2]:find("^hog: policy: defaults%.lua:%d+: policy exceeded its memory cap %(64 MiB%)$"),
      lines[2])
    assert.equal("fine: spec.taskManager.replicas: must be >= 1", lines[3])
    assert.equal("", r.stdout)
  end)

  it("reports a wrong output shape as a policy error", function()
    local r = run({ "render", "-f", INPUTS .. "invalid.yaml", "--policy-dir", POLICIES .. "badshape" })
    assert.equal(1, r.code)
    assert.equal("wordcount: spec.taskManager.replicas: must be >= 1\n", r.stderr)
    local doc = INPUTS .. "good.json"
    r = run({ "render", "-f", doc, "--policy-dir", POLICIES .. "badshape" })
    assert.equal(1, r.code)
    assert.equal("jsonic: policy: cluster.lua: desired: objects[0] must have apiVersion, kind and " ..
      "metadata.name strings\n", r.stderr)
  end)
end)

describe("flink-controller render with the project's policies #bin", function()
  local EXAMPLE = ROOT .. "/deploy/examples/wordcount.yaml"

  it("renders deploy/examples/wordcount.yaml in apply order", function()
    local r = run({ "render", "-f", EXAMPLE })
    assert.equal(0, r.code, r.stderr)
    assert.same({ "ConfigMap wordcount-configmap", "StatefulSet wordcount-jobmanager",
      "Service wordcount-jobmanager", "StatefulSet wordcount-taskmanager", "Job wordcount-job-submitter" },
      kinds_names(lyaml.load(r.stdout, { all = true })))
    local j = run({ "render", "-f", EXAMPLE, "-o", "json" })
    assert.equal(0, j.code, j.stderr)
    local list = cjson.decode(j.stdout)
    assert.equal("List", list.kind)
    assert.equal(5, #list.items)
    assert.equal("wordcount-job-submitter", list.items[5].metadata.name)
  end)

  it("writes no revision label by default (policies/cluster.lua REVISION_LABEL false)", function()
    local r = run({ "render", "-f", EXAMPLE })
    assert.equal(0, r.code, r.stderr)
    local objs = lyaml.load(r.stdout, { all = true })
    assert.equal(5, #objs)
    for _, o in ipairs(objs) do
      assert.equal("flink", o.metadata.labels.app, o.kind)
      assert.is_nil(o.metadata.labels["flinkoperator.k8s.io/revision-name"], o.kind)
    end
  end)

  it("rejects replicas 0 with the field path", function()
    local bad = os.tmpname()
    fx.write(bad, (slurp(EXAMPLE):gsub("replicas: 1", "replicas: 0")))
    local r = run({ "render", "-f", bad })
    os.remove(bad)
    assert.equal(1, r.code)
    assert.truthy(r.stderr:find("^wordcount: spec%.taskManager%.replicas: "), r.stderr)
    assert.equal("", r.stdout)
  end)

  it("keeps one message on one line: a NUL in a name is written \\x00", function()
    local json = '{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster",'
      .. '"metadata":{"name":"bad\\u0000name"},"spec":{"image":{"name":"flink:1.20"},'
      .. '"jobManager":{},"taskManager":{"replicas":0}}}'
    local f = os.tmpname()
    fx.write(f, json)
    local r = run({ "render", "-f", f })
    os.remove(f)
    assert.equal(1, r.code)
    for line in r.stderr:gmatch("[^\n]+") do assert.matches("^bad\\x00name: ", line) end
    assert.truthy(r.stderr:find("bad\\x00name: spec.taskManager.replicas: must be >= 1\n", 1, true), r.stderr)
  end)

  it("says what a non-string apiVersion is instead of printing a Lua table", function()
    local f = os.tmpname()
    fx.write(f, "apiVersion: {a: 1}\nkind: FlinkCluster\nmetadata: {name: x}\n")
    local r = run({ "render", "-f", f })
    os.remove(f)
    assert.equal(1, r.code)
    assert.equal("x: apiVersion: must be a string, not a mapping\n", r.stderr)
  end)

  it("names the document and the path of a NaN a policy returns; the other documents are not blamed", function()
    local dir = fx.tmpdir()
    assert(os.execute("cp -r " .. fx.quote(ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
    local text = slurp(dir .. "/cluster.lua")
    local edited, n = text:gsub("\n(  return { objects = objects, jobmanager = jobmanager,)",
      "\n  if c.metadata.name == 'second' then objects[2].spec.replicas = 0 / 0 end\n%1", 1)
    assert.equal(1, n)
    fx.write(dir .. "/cluster.lua", edited)
    local example = slurp(EXAMPLE)
    local two = dir .. "/two.yaml"
    fx.write(two, example .. "\n---\n" .. example:gsub("name: wordcount", "name: second", 1))
    local r = run({ "render", "-f", two, "--policy-dir", dir })
    os.execute("rm -rf " .. fx.quote(dir))
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
    assert.matches("^second: policy: cluster%.lua:%d+: desired returned a bad result: objects%[2%]%.spec%.replicas: "
      .. "NaN is not a JSON number\n$", r.stderr)
  end)

  it("refuses an object of a kind the controller does not manage (fc.kinds), with its path", function()
    local dir = fx.tmpdir()
    assert(os.execute("cp -r " .. fx.quote(ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
    local text = slurp(dir .. "/cluster.lua")
    local pdb = "  objects[#objects + 1] = { apiVersion = 'policy/v1', kind = 'PodDisruptionBudget',\n"
      .. "    metadata = { name = c.metadata.name .. '-pdb' }, spec = { maxUnavailable = 1 } }\n"
    local edited, n = text:gsub("\n(  return { objects = objects, jobmanager = jobmanager,)",
      "\n" .. pdb .. "%1", 1)
    assert.equal(1, n)
    fx.write(dir .. "/cluster.lua", edited)
    local r = run({ "render", "-f", EXAMPLE, "--policy-dir", dir })
    os.execute("rm -rf " .. fx.quote(dir))
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
    assert.equal("wordcount: policy: cluster.lua: desired: objects[5] (policy/v1 PodDisruptionBudget "
      .. "wordcount-pdb): kind not declared in lua/fc/kinds.lua (the controller may create "
      .. "networking.k8s.io/v1 Ingress, v1 Service, apps/v1 StatefulSet, v1 ConfigMap, v1 ServiceAccount, "
      .. "rbac.authorization.k8s.io/v1 Role, rbac.authorization.k8s.io/v1 RoleBinding, batch/v1 Job, "
      .. "apps/v1 ControllerRevision)\n", r.stderr)
  end)

  -- input errors at any depth are field errors, never a policy file and line (issue 11 item 4)
  local function render_text(text)
    local f = os.tmpname()
    fx.write(f, text)
    local r = run({ "render", "-f", f })
    os.remove(f)
    return r
  end
  local HEAD = "apiVersion: flinkoperator.k8s.io/v1beta1\nkind: FlinkCluster\n"
  for _, c in ipairs({
    { "a scalar spec", HEAD .. "metadata: {name: a}\nspec: 5\n", "a: spec: must be an object\n" },
    { "a missing name", HEAD .. "metadata: {}\nspec: {image: {name: flink}, taskManager: {replicas: 1}}\n",
      "document 1: metadata.name: is required\n" },
    { "a flinkProperties key with a line break", HEAD .. "metadata: {name: a}\nspec: {image: {name: flink}, "
      .. "taskManager: {replicas: 1}, flinkProperties: {\"a\\nb\": \"1\"}}\n",
      "a: spec.flinkProperties[a\\x0Ab]: must be a flink-conf.yaml key: not empty, without a line break or ': '\n" },
    { "an over-long quantity", HEAD .. "metadata: {name: a}\nspec: {image: {name: flink}, taskManager: "
      .. "{replicas: 1, memoryOffHeapMin: \"" .. string.rep("9", 70) .. "Mi\"}}\n",
      "a: spec.taskManager.memoryOffHeapMin: invalid quantity: too many significant digits\n" },
    { "a 41-character name", HEAD .. "metadata: {name: " .. string.rep("n", 41) .. "}\nspec: {image: {name: flink}, "
      .. "taskManager: {replicas: 1}}\n", string.rep("n", 41) .. ": metadata.name: must be at most 40 characters "
      .. "so that the pods' controller-revision-hash label \"<name>-taskmanager-<hash>\" fits in 63\n" },
  }) do
    it("reports " .. c[1] .. " as <name>: <field path>: <message>", function()
      local r = render_text(c[2])
      assert.equal(1, r.code)
      assert.equal("", r.stdout)
      assert.equal(c[3], r.stderr)
    end)
  end

  -- A FlinkCluster with unknown fields at several depths (the production policies).
  local UNKNOWN = table.concat({
    "apiVersion: flinkoperator.k8s.io/v1beta1",
    "kind: FlinkCluster",
    "metadata: {name: strict, lables: {a: b}}",
    "spec:",
    "  image: {name: 'flink:1.20'}",
    "  jobManager: {replica: 1, ports: {rpc: 6123, ui2: 1}}",
    "  taskManager:",
    "    replicas: 1",
    "    volumeMounts: [{name: v, mountPath: /v, anything: 1}]", -- an embedded core/v1 type: kept
    "  flinkProperties: {a.b: '1'}", -- a map: any key
    "  bogus: {x: 1}",
    "",
  }, "\n")

  it("refuses fields the CRD does not know, with their paths, like kubectl --validate=strict", function()
    local dir = fx.tmpdir()
    fx.write(dir .. "/unknown.yaml", UNKNOWN)
    local r = run({ "render", "-f", dir .. "/unknown.yaml" })
    assert.equal(1, r.code, r.stderr)
    local found = {
      'metadata.lables: unknown field (did you mean "labels"?)',
      "spec.bogus: unknown field",
      'spec.jobManager.ports.ui2: unknown field (did you mean "ui"?)',
      'spec.jobManager.replica: unknown field (did you mean "replicas"?)',
    }
    local function lines(prefix)
      local out = {}
      for i, f in ipairs(found) do out[i] = prefix .. f .. "\n" end
      return table.concat(out)
    end
    assert.equal(lines("strict: "), r.stderr)
    assert.equal("", r.stdout)
    -- --validate=true is strict; warn: the same fields reported once each as warnings, rendered
    assert.equal(r.stderr, run({ "render", "-f", dir .. "/unknown.yaml", "--validate=true" }).stderr)
    r = run({ "render", "-f", dir .. "/unknown.yaml", "--validate", "warn" })
    assert.equal(0, r.code, r.stderr)
    assert.equal(lines("strict: warning: "), r.stderr)
    assert.truthy(r.stdout:find("\nkind: StatefulSet\n", 1, true))
    -- ignore (false): the API server prunes them; nothing said, the same objects
    local ignored = run({ "render", "-f", dir .. "/unknown.yaml", "--validate=false" })
    assert.equal(0, ignored.code, ignored.stderr)
    assert.equal("", ignored.stderr)
    assert.equal(r.stdout, ignored.stdout)
    os.execute("rm -rf " .. fx.quote(dir))
  end)

  it("prints no placeholder uid: ownerReferences left out without metadata.uid, kept with it", function()
    local r = run({ "render", "-f", ROOT .. "/deploy/examples/quickstart.yaml" })
    assert.equal(0, r.code, r.stderr)
    local comment = "# FlinkCluster quickstart has no metadata.uid: its objects are shown without their "
      .. "ownerReference (the controller sets it when it applies them)\n---\n"
    assert.equal(comment, r.stdout:sub(1, #comment))
    local docs = lyaml.load(r.stdout, { all = true })
    assert.is_true(#docs >= 5)
    for _, d in ipairs(docs) do assert.is_nil(d.metadata.ownerReferences, d.kind .. " " .. d.metadata.name) end
    assert.is_nil(r.stdout:find("ownerReferences", 1, true))
    assert.is_nil(r.stdout:find("<uid", 1, true))
    local list = cjson.decode(run({ "render", "-f", ROOT .. "/deploy/examples/quickstart.yaml", "-o", "json" }).stdout)
    assert.equal(#docs, #list.items)
    for _, d in ipairs(list.items) do assert.is_nil(d.metadata.ownerReferences) end
    -- the live object (kubectl get -o yaml): its uid, as the controller applies them
    local live = slurp(ROOT .. "/deploy/examples/quickstart.yaml"):gsub("\n  name: quickstart\n",
      "\n  name: quickstart\n  uid: 0b5d9e4c-5a47-4b0f-9d7e-1f2a3b4c5d6e\n", 1)
    local dir = fx.tmpdir()
    fx.write(dir .. "/live.yaml", live)
    r = run({ "render", "-f", dir .. "/live.yaml" })
    os.execute("rm -rf " .. fx.quote(dir))
    assert.equal(0, r.code, r.stderr)
    assert.equal("---\n", r.stdout:sub(1, 4))
    docs = lyaml.load(r.stdout, { all = true })
    for _, d in ipairs(docs) do
      assert.same({ { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster", name = "quickstart",
        uid = "0b5d9e4c-5a47-4b0f-9d7e-1f2a3b4c5d6e", controller = true, blockOwnerDeletion = false } },
        d.metadata.ownerReferences, d.kind .. " " .. d.metadata.name)
    end
  end)

  it("reads a directory like kubectl -f DIR: its manifests in name order, errors naming the file", function()
    local dir = fx.tmpdir()
    local function cluster(name, extra)
      return string.format("apiVersion: flinkoperator.k8s.io/v1beta1\nkind: FlinkCluster\nmetadata: {name: %s}\n"
        .. "spec: {taskManager: {replicas: 1}%s}\n", name, extra or "")
    end
    fx.write(dir .. "/b.yml", cluster("bee"))
    fx.write(dir .. "/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n---\n" .. cluster("ay"))
    fx.write(dir .. "/c.json", cjson.encode(lyaml.load(cluster("sea"))))
    fx.write(dir .. "/notes.txt", "not: [a manifest\n")   -- another extension: not read
    os.execute("mkdir " .. fx.quote(dir .. "/sub"))
    fx.write(dir .. "/sub/x.yaml", cluster("nested"))        -- no recursion, as kubectl without -R
    local BASIC = POLICIES .. "basic"
    local r = run({ "render", "-f", dir, "--policy-dir", BASIC })
    assert.equal(0, r.code, r.stderr)
    assert.equal(dir .. "/a.yaml: document 1: skipped: a ConfigMap (v1), not a FlinkCluster\n", r.stderr)
    assert.same({ "ConfigMap ay-configmap", "StatefulSet ay-taskmanager", "ConfigMap bee-configmap",
      "StatefulSet bee-taskmanager", "ConfigMap sea-configmap", "StatefulSet sea-taskmanager" },
      kinds_names(lyaml.load(r.stdout, { all = true })))
    -- a file and -f again: the same as one stream; errors name the file, the cluster and the path
    fx.write(dir .. "/b.yml", cluster("bee", ", replica: 2") .. "---\n" .. cluster("ay"))
    fx.write(dir .. "/d.yaml", "a: [\n")
    r = run({ "render", "-f", dir, "-f", ROOT .. "/tests/testdata/render/invalid.yaml", "--policy-dir", BASIC })
    assert.equal(1, r.code)
    assert.equal(table.concat({
      dir .. "/a.yaml: document 1: skipped: a ConfigMap (v1), not a FlinkCluster",
      dir .. '/b.yml: bee: spec.replica: unknown field',
      dir .. "/b.yml: ay: metadata.name: document 2 renders the same cluster as " .. dir .. "/a.yaml document 2",
      dir .. "/d.yaml: invalid YAML: 1:4: did not find expected node content",
      ROOT .. "/tests/testdata/render/invalid.yaml: wordcount: spec.taskManager.replicas: must be >= 1",
      "" }, "\n"), r.stderr)
    assert.equal("", r.stdout)
    os.execute("rm -rf " .. fx.quote(dir))
  end)
end)
