-- SPDX-License-Identifier: Apache-2.0
-- deploy/crd.yaml: the FlinkCluster CustomResourceDefinition.
--
-- deploy/crd.yaml is the one description of the API's fields (docs/admission.md, "one schema"): this
-- spec does not list them again. It checks what must hold of any field: every field is set by
-- some fixture or example, every default is the value policies/defaults.lua fills in, the
-- CEL rules are well formed, lua/fc/crd.lua (what policies read) is generated from this file;
-- printer columns, the status subresource; the structural-schema rules a kube-apiserver
-- enforces (apiextensions.k8s.io/v1); then a small validator for the subset of OpenAPI the CRD
-- uses runs the example manifests and broken variants through the schema, the way the API
-- server would (errors for invalid values, pruning for unknown fields). The CEL rules are
-- checked on a real API server: tests/admission_spec.lua.
local lyaml = require("lyaml")
local cjson = require("cjson")

local fx = require("support.fixtures")

local ROOT = fx.ROOT

-- The text of `path`, a path inside the repository.
local function read(path)
  return fx.read(fx.path(path))
end

local crd = lyaml.load(read("deploy/crd.yaml"))
local version = crd.spec.versions[1]
local schema = version.schema.openAPIV3Schema

-- node("spec.jobManager.ports.rpc"): the schema node at a dotted path; "[]" steps into
-- array items, "{}" into additionalProperties. nil when absent.
local function node(path)
  local n = schema
  for seg in path:gmatch("[^.]+") do
    local name, suffix = seg:match("^([^%[{]*)(.*)$")
    if name ~= "" then
      n = n and n.properties and n.properties[name]
    end
    for s in suffix:gmatch("..") do
      if s == "[]" then
        n = n and n.items
      elseif s == "{}" then
        n = n and n.additionalProperties
      end
    end
    if not n then return nil end
  end
  return n
end

-- kind_of(n): "int-or-string", "any" (preserve-unknown, no type) or the node's type.
local function kind_of(n)
  if n["x-kubernetes-int-or-string"] then return "int-or-string" end
  if n.type == nil and n["x-kubernetes-preserve-unknown-fields"] then return "any" end
  return n.type
end

local function sorted(t)
  table.sort(t)
  return t
end

-- Where unknown fields may be kept: embedded core/v1 types, and all of status.
local function preserve_allowed(path)
  if path == "status" or path:sub(1, 7) == "status." then return true end
  for _, a in ipairs({ "volumes", "volumeMounts", "volumeClaimTemplates", "initContainers",
    "tolerations", "sidecars" }) do
    if path:match("^spec%.%w+%." .. a .. "%[%]$") then return true end
  end
  if path == "spec.envVars[]" or path == "spec.envFrom[]" then return true end
  if path:match("^spec%.%w+%.resources$") or path:match("^spec%.%w+%.securityContext$") then
    return true
  end
  return false
end

-- walk(fn): calls fn(path, node) for every schema node below the root, depth first.
local function walk(fn)
  local function go(path, n)
    fn(path, n)
    for name, child in pairs(n.properties or {}) do
      go(path == "" and name or path .. "." .. name, child)
    end
    if type(n.items) == "table" then go(path .. "[]", n.items) end
    if type(n.additionalProperties) == "table" then go(path .. "{}", n.additionalProperties) end
  end
  go("", schema)
end

describe("deploy/crd.yaml", function()
  it("is an apiextensions.k8s.io/v1 CRD for flinkclusters.flinkoperator.k8s.io", function()
    assert.are.equal("apiextensions.k8s.io/v1", crd.apiVersion)
    assert.are.equal("CustomResourceDefinition", crd.kind)
    assert.are.equal("flinkclusters.flinkoperator.k8s.io", crd.metadata.name)
    -- *.k8s.io is a protected group: the API server needs this annotation (KEP-1111)
    assert.is_not_nil(crd.metadata.annotations["api-approved.kubernetes.io"]:find("^unapproved, %S"))
    assert.are.equal("flinkoperator.k8s.io", crd.spec.group)
    assert.are.equal("Namespaced", crd.spec.scope)
    assert.are.same({ kind = "FlinkCluster", listKind = "FlinkClusterList", plural = "flinkclusters",
      singular = "flinkcluster", shortNames = { "fc" }, categories = { "flink" } }, crd.spec.names)
  end)

  it("serves and stores exactly one version, v1beta1, with the status subresource", function()
    assert.are.equal(1, #crd.spec.versions)
    assert.are.equal("v1beta1", version.name)
    assert.is_true(version.served)
    assert.is_true(version.storage)
    assert.are.same({ status = {} }, version.subresources)
  end)

  it("prints State, Job State and Age columns", function()
    assert.are.same({
      { name = "State", type = "string", jsonPath = ".status.state" },
      { name = "Job State", type = "string", jsonPath = ".status.components.job.state" },
      { name = "Age", type = "date", jsonPath = ".metadata.creationTimestamp" },
    }, (function()
      local out = {}
      for i, c in ipairs(version.additionalPrinterColumns) do
        out[i] = { name = c.name, type = c.type, jsonPath = c.jsonPath }
      end
      return out
    end)())
  end)

  it("has every spec field set by some fixture or example (adding a field adds a fixture)", function()
    local seen = {}
    local function mark(v, path)
      seen[path] = true
      if type(v) == "table" then
        for k, x in pairs(v) do
          mark(x, math.type(k) == "integer" and path .. "[]" or path .. "." .. tostring(k))
        end
      end
    end
    local p = assert(io.popen("ls " .. ROOT .. "/deploy/examples/*.yaml " .. ROOT
      .. "/policies/testdata/*/*/input.yaml " .. ROOT .. "/policies/testdata/*/*/old.yaml 2>/dev/null"))
    local files = 0
    for file in p:lines() do
      local ok, docs = pcall(lyaml.load, fx.read(file), { all = true })
      for _, d in ipairs(ok and docs or {}) do
        if type(d) == "table" and d.kind == "FlinkCluster" and type(d.spec) == "table" then
          files = files + 1
          mark(d.spec, "spec")
        end
      end
    end
    p:close()
    assert.is_true(files >= 30)
    local unused = {}
    local function leaves(n, path)
      if n.properties then
        for k, c in pairs(n.properties) do leaves(c, path .. "." .. k) end
      elseif n.items and n.items.properties then
        leaves(n.items, path .. "[]")
      elseif not seen[path] then
        unused[#unused + 1] = path
      end
    end
    leaves(schema.properties.spec, "spec")
    assert.are.same({}, sorted(unused))
  end)

  it("has defaults only where policies/defaults.lua fills the same value, and all of them", function()
    package.path = ROOT .. "/policies/?.lua;" .. ROOT .. "/policies/?/init.lua;" .. package.path
    local defaults = require("defaults")
    -- a job cluster with every defaulted section absent but what the schema requires
    local filled = defaults.apply({ apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
      metadata = { name = "d" }, spec = { image = { name = "flink:1.20.1" }, taskManager = { replicas = 1 },
        job = { jarFile = "/j.jar" }, hadoopConfig = { configMapName = "h" } } })
    local function at(path)
      local v = filled
      for seg in path:gmatch("[^.]+") do
        if type(v) ~= "table" then return nil end
        v = v[seg]
      end
      return v
    end
    local seen = {}
    walk(function(path, n)
      if n.default ~= nil then
        seen[path] = true
        assert.is_nil(path:find("[%[{]"), path)   -- only under properties
        if type(n.default) == "table" then       -- `{}`: the section defaults.lua creates
          assert.are.same({}, n.default, path)
          assert.are.equal("table", type(at(path)), path)
        else
          assert.are.equal(n.default, at(path), path)
        end
      end
    end)
    -- the reverse: every scalar defaults.lua fills in is a CRD default, but what the input
    -- sets and the pull policy (it depends on the image tag)
    local given = { ["spec.image.name"] = true, ["spec.image.pullPolicy"] = true,
      ["spec.taskManager.replicas"] = true, ["spec.job.jarFile"] = true,
      ["spec.hadoopConfig.configMapName"] = true }
    local missing = {}
    local function scan(v, path)
      if type(v) == "table" then
        for k, x in pairs(v) do scan(x, path .. "." .. k) end
      elseif not seen[path] and not given[path] then
        missing[#missing + 1] = path
      end
    end
    scan(filled.spec, "spec")
    assert.are.same({}, sorted(missing))
    assert.is_true(seen["spec.jobManager.ports.ui"] and seen["spec.job.cleanupPolicy.afterJobFails"])
  end)

  it("has well-formed CEL rules: a message, a reason, a relative fieldPath", function()
    local reasons = { FieldValueInvalid = true, FieldValueForbidden = true, FieldValueRequired = true,
      FieldValueDuplicate = true }
    local n = 0
    walk(function(path, node_)
      for _, r in ipairs(node_["x-kubernetes-validations"] or {}) do
        n = n + 1
        assert.is_string(r.rule, path)
        assert.is_true(type(r.message) == "string" or type(r.messageExpression) == "string", path)
        assert.is_true(reasons[r.reason] == true, path .. ": reason " .. tostring(r.reason))
        if r.fieldPath then assert.is_not_nil(r.fieldPath:match("^%.[%w.]+$"), path .. ": " .. r.fieldPath) end
        if r.optionalOldSelf then assert.is_not_nil(r.rule:find("oldSelf.hasValue()", 1, true), path) end
        for k in pairs(r) do
          assert.is_true(({ rule = true, message = true, messageExpression = true, reason = true,
            fieldPath = true, optionalOldSelf = true })[k] == true, path .. ": " .. k)
        end
      end
    end)
    assert.is_true(n >= 12)
  end)

  it("is what lua/fc/crd.lua (the policies' copy, generated by make) was generated from", function()
    local tmp = os.tmpname()
    local ok = os.execute("cd " .. ROOT .. " && lua5.4 scripts/crd-schema.lua deploy/crd.yaml " .. tmp)
    assert.is_true(ok)
    local want = fx.read(tmp)
    os.remove(tmp)
    assert.are.equal(want, fx.read(ROOT .. "/lua/fc/crd.lua"), "run make: lua/fc/crd.lua is stale")
  end)

  it("describes int32 fields as int32 and quantities as int-or-string with a pattern", function()
    walk(function(path, n)
      if n.type == "integer" and path:sub(1, 4) == "spec" then
        assert.are.equal("int32", n.format, path)
      end
      if n["x-kubernetes-int-or-string"] then
        assert.is_nil(n.type, path)
        assert.are.same({ { type = "integer" }, { type = "string" } }, n.anyOf, path)
        assert.is_string(n.pattern, path)
      end
    end)
    assert.is_true(node("spec.taskManager.memoryOffHeapMin")["x-kubernetes-int-or-string"])
  end)

  it("accepts Kubernetes quantities and rejects malformed ones (pattern run by grep -E)", function()
    local good = { "600M", "600Mi", "1Gi", "1.5Gi", "0.5", ".5", "1e3", "1E-3", "200m", "+1k", "1024",
      "7Ei", "5n" }
    local bad = { "", "-1Gi", "1GB", "1 Gi", "Gi", "1.2.3", "1e", "abc", "1Mi ", "0x10", "1iB" }
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "w"))
    f:write(table.concat(good, "\n"), "\n", table.concat(bad, "\n"), "\n")
    f:close()
    for _, path in ipairs({ "spec.jobManager.memoryOffHeapMin", "spec.taskManager.resources.limits{}",
      "spec.job.resources.requests{}" }) do
      local pattern = node(path).pattern
      assert.is_nil(pattern:find("'", 1, true))
      local p = assert(io.popen("grep -xE '" .. pattern .. "' " .. tmp))
      local matched = {}
      for line in p:lines() do matched[#matched + 1] = line end
      p:close()
      assert.are.same(good, matched, path)
    end
    os.remove(tmp)
  end)

  it("accepts the spec.flinkVersion values the policies read, and no others (pattern run by grep -E)", function()
    local flinkversion = require("lib.flinkversion")
    local values = { "1.20", "1.20.5", "2.3", "v1_20", "v2_0", "V1_8", "1", "1.20.", "1.2.3.4", "v1.20",
      "1_20", "v1_20_1", "latest", "1.20-SNAPSHOT", " 1.20" }
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "w"))
    f:write(table.concat(values, "\n"), "\n")
    f:close()
    local pattern = node("spec.flinkVersion").pattern
    assert.is_nil(pattern:find("'", 1, true))
    local p = assert(io.popen("grep -xE '" .. pattern .. "' " .. tmp))
    local matched = {}
    for line in p:lines() do matched[#matched + 1] = line end
    p:close()
    os.remove(tmp)
    local parsed = {}
    for _, v in ipairs(values) do
      if flinkversion.parse(v) then parsed[#parsed + 1] = v end
    end
    assert.are.same({ "1.20", "1.20.5", "2.3", "v1_20", "v2_0", "V1_8" }, matched)
    assert.are.same(matched, parsed)
  end)

  describe("is a structural schema", function()
    it("gives every node a type, except int-or-string and preserve-unknown nodes", function()
      local untyped = {}
      walk(function(path, n)
        if not n.type and not n["x-kubernetes-int-or-string"]
          and not n["x-kubernetes-preserve-unknown-fields"] then
          untyped[#untyped + 1] = path
        end
      end)
      assert.are.same({}, untyped)
      assert.are.equal("object", schema.type)
    end)

    it("keeps unknown fields only in embedded Kubernetes types and status", function()
      local where = {}
      walk(function(path, n)
        local p = n["x-kubernetes-preserve-unknown-fields"]
        if p ~= nil then
          assert.is_true(p, path)
          if not preserve_allowed(path) then where[#where + 1] = path end
        end
      end)
      assert.are.same({}, where)
      -- and really there, on each embedded type
      local embedded = 0
      walk(function(path, n)
        if preserve_allowed(path) and path:sub(1, 5) == "spec." then
          embedded = embedded + 1
          assert.are.equal("object", n.type, path)
          assert.is_true(n["x-kubernetes-preserve-unknown-fields"], path)
        end
      end)
      assert.is_true(embedded >= 20)
      assert.is_true(node("spec.envFrom[]")["x-kubernetes-preserve-unknown-fields"])
      assert.is_nil(node("spec.image.pullSecrets[]")["x-kubernetes-preserve-unknown-fields"])
      assert.is_nil(node("spec.jobManager")["x-kubernetes-preserve-unknown-fields"])
    end)

    it("uses only the constructs a structural schema allows", function()
      local allowed = { type = true, description = true, properties = true, items = true,
        additionalProperties = true, required = true, enum = true, minimum = true, maximum = true,
        minLength = true, maxLength = true, pattern = true, format = true, anyOf = true,
        maxItems = true, maxProperties = true, default = true, ["x-kubernetes-validations"] = true,
        ["x-kubernetes-preserve-unknown-fields"] = true, ["x-kubernetes-int-or-string"] = true }
      local types = { object = true, array = true, string = true, integer = true, boolean = true,
        number = true }
      walk(function(path, n)
        for k in pairs(n) do
          assert.is_true(allowed[k] == true, path .. ": unexpected keyword " .. tostring(k))
        end
        if n.type then assert.is_true(types[n.type], path) end
        assert.is_false(n.properties ~= nil and n.additionalProperties ~= nil, path)
        if n.additionalProperties ~= nil then assert.are.equal("table", type(n.additionalProperties), path) end
        if n.type == "array" then assert.are.equal("table", type(n.items), path) end
        if n.items then assert.are.equal("array", n.type, path) end
        if n.properties or n.additionalProperties then assert.are.equal("object", n.type, path) end
        if n.anyOf then assert.is_true(n["x-kubernetes-int-or-string"], path) end
        if n.format then assert.is_true(n.format == "int32" or n.format == "int64", path) end
        if n.enum then
          for _, v in ipairs(n.enum) do assert.are.equal(n.type, type(v), path) end
        end
        if n.minimum and n.maximum then assert.is_true(n.minimum <= n.maximum, path) end
        if n.format == "int32" then
          assert.is_true((n.maximum or 0) <= 2147483647 and (n.minimum or 0) >= -2147483648, path)
        end
      end)
    end)

    it("does not describe metadata", function()
      assert.are.same({ type = "object" }, schema.properties.metadata)
      assert.are.same({ type = "string" }, schema.properties.apiVersion)
      assert.are.same({ type = "string" }, schema.properties.kind)
      local top = {}
      for k in pairs(schema.properties) do top[#top + 1] = k end
      assert.are.same({ "apiVersion", "kind", "metadata", "spec", "status" }, sorted(top))
    end)
  end)

  describe("status", function()
    local status = schema.properties.status

    it("is an object that keeps unknown fields at its root", function()
      assert.are.equal("object", status.type)
      assert.is_true(status["x-kubernetes-preserve-unknown-fields"])
    end)

    it("documents the known fields without constraining them", function()
      local want = {
        ["status.state"] = "string", ["status.observedGeneration"] = "integer",
        ["status.conditions"] = "any", ["status.components"] = "object",
        ["status.components.job"] = "object", ["status.components.job.state"] = "string",
        ["status.components.job.id"] = "string", ["status.components.job.restartCount"] = "integer",
        ["status.components.job.savepointGeneration"] = "integer",
        ["status.components.jobManagerService.nodePort"] = "integer",
        ["status.components.jobManagerIngress.urls"] = "any",
        ["status.components.configMap.state"] = "string",
        ["status.components.taskManagerStatefulSet.state"] = "string",
        ["status.savepoint.triggerReason"] = "string", ["status.control.details"] = "object",
        ["status.currentRevision"] = "string", ["status.nextRevision"] = "string",
        ["status.collisionCount"] = "integer", ["status.lastUpdateTime"] = "string",
      }
      for path, kind in pairs(want) do
        assert.is_not_nil(node(path), path)
        assert.are.equal(kind, kind_of(node(path)), path)
      end
      walk(function(path, n)
        if path:sub(1, 6) == "status" then
          assert.is_nil(n.required, path)
          assert.is_nil(n.enum, path)
          assert.is_nil(n.minimum, path)
          assert.is_nil(n.maximum, path)
          assert.is_nil(n.pattern, path)
          assert.is_nil(n.minLength, path)
          assert.is_nil(n.items, path)
          assert.is_false(n.type == "array", path)
          if n.type == "object" then
            assert.is_true(n["x-kubernetes-preserve-unknown-fields"], path .. " would prune")
          end
        end
      end)
    end)
  end)
end)

-- A validator for the subset of OpenAPI v3 the CRD uses, with the API server's pruning:
-- returns the list of errors ("<path>: <reason>") and the list of fields that would be pruned.
local function is_array(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for k in pairs(v) do
    if math.type(k) ~= "integer" then return false end
    n = n + 1
  end
  return n == #v
end

local function check(s, v, path, errs, pruned)
  local function err(msg) errs[#errs + 1] = path .. ": " .. msg end
  if s["x-kubernetes-int-or-string"] then
    if not (math.type(v) == "integer" or type(v) == "string") then err("must be int or string") end
    return
  end
  local t = s.type
  if t == "object" and (type(v) ~= "table" or (next(v) ~= nil and is_array(v))) then
    return err("must be an object")
  elseif t == "array" and not is_array(v) then
    return err("must be an array")
  elseif t == "string" and type(v) ~= "string" then
    return err("must be a string")
  elseif t == "boolean" and type(v) ~= "boolean" then
    return err("must be a boolean")
  elseif t == "integer" and math.type(v) ~= "integer" then
    return err("must be an integer")
  end
  if s.enum then
    local ok = false
    for _, e in ipairs(s.enum) do ok = ok or e == v end
    if not ok then err("unsupported value") end
  end
  if s.minimum and v < s.minimum then err("must be >= " .. s.minimum) end
  if s.maximum and v > s.maximum then err("must be <= " .. s.maximum) end
  if s.minLength and #v < s.minLength then err("too short") end
  if s.maxLength and #v > s.maxLength then err("too long") end
  for _, r in ipairs(s.required or {}) do
    if type(v) ~= "table" or v[r] == nil then errs[#errs + 1] = path .. "." .. r .. ": required" end
  end
  if t == "array" then
    for i, item in ipairs(v) do check(s.items, item, path .. "[" .. (i - 1) .. "]", errs, pruned) end
  elseif t == "object" then
    for k, item in pairs(v) do
      local sub = (s.properties or {})[k] or s.additionalProperties
      if sub then
        check(sub, item, path .. "." .. k, errs, pruned)
      elseif not s["x-kubernetes-preserve-unknown-fields"] then
        pruned[#pruned + 1] = path .. "." .. k
      end
    end
  end
end

local function validate(obj)
  local errs, pruned = {}, {}
  for k, item in pairs(obj) do
    local sub = schema.properties[k]
    if k == "metadata" then
      -- ObjectMeta is validated by the API server itself, never pruned by the CRD schema
      if type(item) ~= "table" then errs[#errs + 1] = "metadata: must be an object" end
    elseif sub then
      check(sub, item, k, errs, pruned)
    else
      pruned[#pruned + 1] = k
    end
  end
  if obj.spec == nil then errs[#errs + 1] = "spec: required" end
  return sorted(errs), sorted(pruned)
end

local function wordcount()
  return lyaml.load(read("deploy/examples/wordcount.yaml"))
end

describe("the CRD schema applied to manifests", function()
  it("accepts every example in deploy/examples and prunes nothing", function()
    local p = assert(io.popen("ls " .. ROOT .. "/deploy/examples/*.yaml"))
    local n = 0
    for file in p:lines() do
      for _, doc in ipairs(lyaml.load(fx.read(file), { all = true })) do
        if doc.kind == "FlinkCluster" then
          n = n + 1
          local errs, pruned = validate(doc)
          assert.are.same({}, errs, file)
          assert.are.same({}, pruned, file)
        end
      end
    end
    p:close()
    assert.is_true(n >= 1)
  end)

  it("keeps unknown fields inside embedded types (the init container's env and command)", function()
    local doc = wordcount()
    doc.spec.job.initContainers[1].futureField = { a = 1 }
    doc.spec.taskManager.resources.claims = { { name = "gpu" } }
    local errs, pruned = validate(doc)
    assert.are.same({}, errs)
    assert.are.same({}, pruned)
  end)

  it("prunes unknown spec fields", function()
    local doc = wordcount()
    doc.spec.jobManager.bogus = 1
    doc.spec.taskManager.ports = { data = 6121, bogus = 2 }
    local errs, pruned = validate(doc)
    assert.are.same({}, errs)
    assert.are.same({ "spec.jobManager.bogus", "spec.taskManager.ports.bogus" }, pruned)
  end)

  it("accepts a minimal session cluster and quantities as strings or integers", function()
    local doc = { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
      metadata = { name = "session" },
      spec = { image = { name = "flink:1.20" }, taskManager = { replicas = 2,
        memoryOffHeapMin = 629145600, resources = { limits = { memory = "2Gi", cpu = 1 } } },
        jobManager = { memoryOffHeapMin = "600M", accessScope = "Headless",
          ports = { rpc = 1025, blob = 65535, query = 6125, ui = 8081 } } } }
    local errs, pruned = validate(doc)
    assert.are.same({}, errs)
    assert.are.same({}, pruned)
  end)

  local cases = {
    { "accessScope Bogus", function(s) s.jobManager = { accessScope = "Bogus" } end,
      "spec.jobManager.accessScope: unsupported value" },
    { "pullPolicy Sometimes", function(s) s.image.pullPolicy = "Sometimes" end,
      "spec.image.pullPolicy: unsupported value" },
    { "no image name", function(s) s.image = {} end, "spec.image.name: required" },
    { "empty image name", function(s) s.image.name = "" end, "spec.image.name: too short" },
    { "no image", function(s) s.image = nil end, "spec.image: required" },
    { "taskManager.replicas 0", function(s) s.taskManager.replicas = 0 end,
      "spec.taskManager.replicas: must be >= 1" },
    { "taskManager.mode Fargate", function(s) s.taskManager.mode = "Fargate" end,
      "spec.taskManager.mode: unsupported value" },
    { "taskManager.slots 0", function(s) s.taskManager.slots = 0 end,
      "spec.taskManager.slots: must be >= 1" },
    { "jobManager.replicas 0", function(s) s.jobManager.replicas = 0 end,
      "spec.jobManager.replicas: must be >= 1" },
    { "ui port 1024", function(s) s.jobManager.ports.ui = 1024 end,
      "spec.jobManager.ports.ui: must be >= 1025" },
    { "data port 65536", function(s) s.taskManager.ports = { data = 65536 } end,
      "spec.taskManager.ports.data: must be <= 65535" },
    { "port as string", function(s) s.jobManager.ports.ui = "8081" end,
      "spec.jobManager.ports.ui: must be an integer" },
    { "memoryOffHeapRatio 101", function(s) s.taskManager.memoryOffHeapRatio = 101 end,
      "spec.taskManager.memoryOffHeapRatio: must be <= 100" },
    { "memoryOffHeapRatio -1", function(s) s.jobManager.memoryOffHeapRatio = -1 end,
      "spec.jobManager.memoryOffHeapRatio: must be >= 0" },
    { "memoryOffHeapMin 1.5 (a float)", function(s) s.jobManager.memoryOffHeapMin = 1.5 end,
      "spec.jobManager.memoryOffHeapMin: must be int or string" },
    { "parallelism 0", function(s) s.job.parallelism = 0 end, "spec.job.parallelism: must be >= 1" },
    { "no jarFile", function(s) s.job.jarFile = nil end, "spec.job.jarFile: required" },
    { "restartPolicy Always", function(s) s.job.restartPolicy = "Always" end,
      "spec.job.restartPolicy: unsupported value" },
    { "cleanup afterJobFails Delete", function(s) s.job.cleanupPolicy = { afterJobFails = "Delete" } end,
      "spec.job.cleanupPolicy.afterJobFails: unsupported value" },
    { "flinkProperties number", function(s) s.flinkProperties["taskmanager.numberOfTaskSlots"] = 1 end,
      "spec.flinkProperties.taskmanager.numberOfTaskSlots: must be a string" },
    { "extraPorts protocol HTTP", function(s)
        s.taskManager.extraPorts = { { name = "metrics", containerPort = 9249, protocol = "HTTP" } }
      end, "spec.taskManager.extraPorts[0].protocol: unsupported value" },
    { "hadoopConfig without configMapName", function(s) s.hadoopConfig = { mountPath = "/etc/hadoop/conf" } end,
      "spec.hadoopConfig.configMapName: required" },
    { "volumes as an object", function(s) s.job.volumes = { cache = { emptyDir = {} } } end,
      "spec.job.volumes: must be an array" },
  }
  for _, c in ipairs(cases) do
    it("refuses " .. c[1], function()
      local doc = wordcount()
      c[2](doc.spec)
      local errs = validate(doc)
      assert.are.same({ c[3] }, errs)
    end)
  end
end)

-- The CRD must never be stricter than policies/validate.lua: whatever the validate fixtures
-- (policies/testdata/validate/<case>/{input,expected}.yaml) accept, the API server accepts too,
-- and every field it would prune is one validate warns about as unknown (and the reverse).
describe("the CRD schema against the validate policy's fixtures", function()
  local dir = fx.cases_dir("validate")
  for _, name in ipairs(fx.cases("validate")) do
    local case = dir .. "/" .. name
    if fx.exists(case .. "/input.yaml") and fx.exists(case .. "/expected.yaml") then
      local input, expected = fx.read_yaml(case .. "/input.yaml"), fx.read_yaml(case .. "/expected.yaml")
      it(name, function()
        local errs, pruned = validate(input)
        -- each CRD error is also a validate error at the same path (map keys as .key)
        local policy_paths = {}
        for _, x in ipairs(expected.errors or {}) do
          policy_paths[(x.path:gsub("%[(%a[^%]]*)%]", ".%1"))] = true
        end
        for _, err in ipairs(errs) do
          local path = err:match("^(.-): ")
          local found = policy_paths[path] == true
          for pp in pairs(policy_paths) do -- a missing object: validate names the field inside it
            found = found or pp:sub(1, #path + 1) == path .. "."
          end
          assert.is_true(found, "CRD only: " .. err)
        end
        local unknown = {}
        for _, w in ipairs(expected.warnings or {}) do
          if w.message:find("^unknown field") then unknown[#unknown + 1] = w.path end
        end
        assert.are.same(sorted(unknown), pruned)
      end)
    end
  end
end)

-- Against a live kube-apiserver (the test environment, or FC_KUBECONFIG): the server agrees with
-- the checks above. Pending when no API server answers. Needs kubectl ($TESTENV_KUBECTL or PATH).
describe("deploy/crd.yaml on a live kube-apiserver #testenv", function()
  local sh = fx.kubectl
  if not fx.live() then
    pending("no kube-apiserver (start one with `make testenv-up` or set FC_KUBECONFIG)")
    return
  end

  -- FlinkCluster documents of the validate fixtures and the examples, with their verdicts; a
  -- file's further documents (deploy/examples/session-jobs.yaml: its FlinkJobs) go with it, and
  -- `valid_objects` counts every document the valid files hold.
  local valid, invalid = {}, {}
  local valid_objects = 0
  local namespaces = {}
  local function add(text, policy_ok)
    local docs = lyaml.load(text, { all = true })
    local doc = type(docs) == "table" and docs[1] or nil
    if type(doc) ~= "table" or doc.kind ~= "FlinkCluster" or doc.apiVersion ~= "flinkoperator.k8s.io/v1beta1"
      or type(doc.metadata) ~= "table" or type(doc.metadata.name) ~= "string" then
      return
    end
    local ns = doc.metadata.namespace
    -- a DNS-1123 label (Lua patterns have no optional groups: two matches)
    if type(ns) == "string" and ns:match("^[a-z0-9][a-z0-9-]*$") and not ns:match("%-$") then
      namespaces[ns] = true
    end
    local errs = validate(doc)
    if #errs > 0 then
      invalid[#invalid + 1] = { text = text, name = doc.metadata.name, errs = errs }
    elseif policy_ok then
      valid[#valid + 1] = text
      valid_objects = valid_objects + #docs
    end
  end
  for _, name in ipairs(fx.cases("validate")) do
    local path = fx.cases_dir("validate") .. "/" .. name .. "/"
    local text, expected = fx.read(path .. "input.yaml", true), fx.read_yaml(path .. "expected.yaml", true)
    -- an update's input is valid as an update only (tests/admission_spec.lua runs those)
    if text and expected and not fx.exists(path .. "old.yaml") then add(text, #(expected.errors or {}) == 0) end
  end
  local p = assert(io.popen("ls " .. ROOT .. "/deploy/examples/*.yaml 2>/dev/null"))
  for path in p:lines() do add(fx.read(path), true) end
  p:close()

  local write_stream = fx.yaml_stream

  local ready = false
  local function setup()
    if ready then return end
    fx.apply_crd()
    for ns in pairs(namespaces) do
      local made, created = sh("create namespace " .. ns)
      assert(created or made:find("AlreadyExists", 1, true), made)
    end
    ready = true
  end

  it("is accepted, Established, with its names accepted", function()
    setup()
    local out = sh("get crd flinkclusters.flinkoperator.k8s.io -o jsonpath="
      .. "'{.status.conditions[?(@.type==\"NamesAccepted\")].status}"
      .. " {.status.conditions[?(@.type==\"Established\")].status}'")
    assert.are.equal("True True", out)
  end)

  it("accepts every manifest validate accepts (server-side dry run)", function()
    setup()
    assert.is_true(#valid >= 10)
    local tmp = write_stream(valid)
    local out, ok = sh("apply --dry-run=server --validate=false -f " .. tmp)
    os.remove(tmp)
    assert.is_true(ok, out)
    local n = 0
    for _ in out:gmatch("%(server dry run%)") do n = n + 1 end
    assert.are.equal(valid_objects, n, out)
  end)

  it("refuses what this spec's validator refuses, naming the same fields", function()
    setup()
    assert.is_true(#invalid >= 5)
    for _, doc in ipairs(invalid) do
      local tmp = write_stream({ doc.text })
      local out, ok = sh("apply --dry-run=server --validate=false -f " .. tmp)
      os.remove(tmp)
      assert.is_false(ok, doc.name)
      assert.is_not_nil(out:find('The FlinkCluster "' .. doc.name .. '" is invalid', 1, true), out)
      for _, e in ipairs(doc.errs) do
        local path = e:match("^(.-): ")
        assert.is_not_nil(out:find(path .. ":", 1, true), path .. " not in: " .. out)
      end
    end
  end)

  it("keeps any status the controller writes, and prints State and Job State", function()
    setup()
    local name = "crd-spec-" .. os.time() .. "-" .. math.random(1000, 9999)
    local tmp = write_stream({ (read("deploy/examples/wordcount.yaml"):gsub("name: wordcount", "name: " .. name)) })
    local out, ok = sh("create -n default -f " .. tmp)
    os.remove(tmp)
    assert.is_true(ok, out)
    local status = '{"status":{"state":"Running","observedGeneration":1,"conditions":{},'
      .. '"components":{"job":{"state":"Succeeded","id":"0123","novel":[1,"x"]},'
      .. '"jobManagerIngress":{"urls":{}}},"futureField":{"a":true}}}'
    out, ok = sh("patch flinkcluster " .. name .. " -n default --subresource=status --type=merge -p '"
      .. status .. "'")
    local got = sh("get flinkcluster " .. name .. " -n default -o json")
    local printed = sh("get flinkcluster " .. name .. " -n default --no-headers")
    sh("delete flinkcluster " .. name .. " -n default --wait=false")
    assert.is_true(ok, out)
    local s = cjson.decode(got).status
    assert.are.equal("Running", s.state)
    assert.are.same({ 1, "x" }, s.components.job.novel)
    assert.are.same({ a = true }, s.futureField)
    assert.are.equal("table", type(s.conditions))
    assert.is_not_nil(printed:match("^" .. name:gsub("%-", "%%-") .. "%s+Running%s+Succeeded%s+%d+s"), printed)
  end)
end)
