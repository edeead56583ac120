-- SPDX-License-Identifier: Apache-2.0
-- The golden cases (tests/golden/, README.md there): each FlinkCluster the original operator's
-- converter tests used, rendered in-process as `flink-controller render` renders it (fc.render:
-- defaults, validate, cluster.desired with the revision name; the production sandbox), and
-- compared field by field with the objects the original operator renders for it. Every
-- difference must be one the allowlist below names, with its reason; every allowlist entry must
-- be met by some case (none outlives its cause), and docs/original-objects.md must list exactly
-- these deviations, by id.
local lyaml = require("lyaml")
local fx = require("support.fixtures")
local codec = require("fc.codec")
local render = require("fc.render")
local revision = require("fc.revision")
local util = require("fc.util")
local host = require("fc.host")

local DIR = fx.ROOT .. "/tests/golden"
-- FC_GOLDEN_SHOW=1: every difference found, allowed ones too, on stderr
local SHOW = (os.getenv("FC_GOLDEN_SHOW") or "") ~= ""
local DOC = fx.ROOT .. "/docs/original-objects.md"

-- The deliberate deviations. Each: id (the doc's name for it), what (the kind of difference:
-- "differs" = both have the field with other values, "extra" = only ours has it, "missing" =
-- only the original's has it, "present" = ours has what a partial expectation says is absent),
-- where (a Lua pattern over "<Kind>/<name> <field path>", anchored), reason (one line; the doc
-- says more), and optionally check(ours, theirs, ctx) -> true when our value is the one we mean
-- (ctx.revision: our revision name of the case's spec).
local ALLOW = {
  { id = "revision-name", what = "missing",
    where = "^%S+ metadata%.labels%[\"flinkoperator%.k8s%.io/revision%-name\"%]$",
    reason = "no revision label by default (cluster.lua REVISION_LABEL): each spec change would rewrite every child" },
  { id = "pull-policy", what = "differs",
    where = "^%S+ spec%.template%.spec%.containers%[[%w-]+%]%.imagePullPolicy$",
    reason = "image.pullPolicy defaults by Kubernetes' own rule (IfNotPresent for a tagged image), not Always",
    check = function(ours) return ours == "IfNotPresent" end },
  { id = "heap-mib", what = "differs",
    where = "^ConfigMap/%S+ data%[\"flink%-conf%.yaml\"%]%[\"%a+%.heap%.size\"%]$",
    reason = "heap size in MiB (floor), not decimal megabytes (ceiling) written with Flink's MiB suffix",
    -- theirs = ceil(bytes / 10^6), ours = floor(bytes / 2^20): the same bytes
    check = function(ours, theirs)
      local o, t = tonumber((ours or ""):match("^(%d+)m$")), tonumber((theirs or ""):match("^(%d+)m$"))
      return o ~= nil and t ~= nil and o >= (t - 1) * 10 ^ 6 // 2 ^ 20 and o <= t * 10 ^ 6 // 2 ^ 20
    end },
  { id = "data-port", what = "extra",
    where = "^ConfigMap/%S+ data%[\"flink%-conf%.yaml\"%]%[\"taskmanager%.data%.port\"%]$",
    reason = "the TaskManager's data port is configured where its containerPort says Flink listens" },
  { id = "submit-script", what = "differs",
    where = "^ConfigMap/%S+ data%[\"submit%-job%.sh\"%]$",
    reason = "our own submit script (POSIX sh, the same arguments and termination-log contract)" },
  { id = "session-script", what = "missing",
    where = "^ConfigMap/%S+ data%[\"submit%-job%.sh\"%]$",
    reason = "a session cluster has no submitter, so its ConfigMap has no submit script" },
  { id = "log-defaults", what = "differs",
    where = "^ConfigMap/%S+ data%[\"log4j%-console%.properties\"%]$",
    reason = "our own default console logging files (log4j 2 syntax for Flink 1.11 and newer)",
    check = function(ours) return type(ours) == "string" and ours:lower():find("console", 1, true) ~= nil end },
  { id = "log-defaults", what = "differs",
    where = "^ConfigMap/%S+ data%[\"logback%-console%.xml\"%]$",
    check = function(ours) return type(ours) == "string" and ours:lower():find("console", 1, true) ~= nil end },
  { id = "config-hash", what = "extra",
    where = "^%S+ spec%.template%.metadata%.annotations%[\"flinkoperator%.k8s%.io/config%-hash\"%]$",
    reason = "pod templates carry the hash of the ConfigMap files their pods read, so a change rolls them" },
  { id = "sts-history", what = "extra",
    where = "^StatefulSet/%S+ spec%.revisionHistoryLimit$",
    reason = "the StatefulSets keep spec.revisionHistoryLimit revisions (default 10, Kubernetes' default too)" },
  { id = "port-protocol", what = "extra",
    where = "^%S+ spec%..-ports%[[%w-]+%]%.protocol$",
    reason = "protocol TCP is written: server-side apply keys ports by port and protocol" },
  { id = "vpc-annotation", what = "extra",
    where = "^Service/%S+ metadata%.annotations%[\"networking%.gke%.io/load%-balancer%-type\"%]$",
    reason = "GKE's current name of the internal load balancer annotation, beside the original's" },
  { id = "ingress-v1", what = "any",
    where = "^Ingress/%S+ (apiVersion)$",
    reason = "networking.k8s.io/v1 (extensions/v1beta1 is gone since Kubernetes 1.22)" },
  { id = "ingress-v1", what = "any",
    where = "^Ingress/%S+ spec%.rules%[%d+%]%.http%.paths%[%d+%]%.(pathType)$" },
  { id = "ingress-v1", what = "any",
    where = "^Ingress/%S+ spec%.rules%[%d+%]%.http%.paths%[%d+%]%.backend%.(service%a*)$" },
  { id = "submitter-conf", what = "extra",
    where = "^Job/%S+ spec%.template%.spec%.containers%[main%]%.volumeMounts%[/opt/flink/conf%]$",
    reason = "the submitter's flink CLI reads the cluster's configuration too (REST and SSL options)" },
  { id = "selector-pod-labels", what = "any",
    where = "^%S+ spec%.selector%..+$",
    reason = "selectors are the fixed component labels, never podLabels (immutable on a StatefulSet)" },
  { id = "pod-label-clash", what = "differs",
    where = "^%S+ [%w.]*labels%.component$",
    reason = "our labels win over a podLabels key of the same name, so the selector keeps matching" },
  { id = "submitter-pod-labels", what = "any",
    where = "^Job/%S+ [%w.]*labels%.team$",
    reason = "the submitter takes job.podLabels, as the API documents; the original took jobManager.podLabels" },
  { id = "service-extra-ports", what = "extra",
    where = "^Service/%S+ spec%.ports%[[%w-]+%]$",
    reason = "the Service also exposes jobManager.extraPorts (by name), so they are reachable like the others" },
}

-- The doc string of an entry (an id's first entry carries its reason).
local REASON = {}
for _, a in ipairs(ALLOW) do REASON[a.id] = REASON[a.id] or a.reason end

-- "a.b[\"x/y\"]": a map key as a path segment
local function seg_key(path, k)
  k = tostring(k)
  if k:match("^[%a_][%w_]*$") then return (path == "" and "" or path .. ".") .. k end
  return path .. "[\"" .. k .. "\"]"
end

-- The key a list's items are matched by: volumeMounts by mountPath, lists of named items by name,
-- anything else by position (nil).
local function list_key(path, a, b)
  if path:match("volumeMounts$") then return "mountPath" end
  for _, l in ipairs({ a, b }) do
    for _, item in ipairs(l) do
      if type(item) ~= "table" or type(item.name) ~= "string" then return nil end
    end
  end
  return "name"
end

local is_array = util.is_array
local function is_list(v) return type(v) == "table" and next(v) ~= nil and is_array(v) end

-- Every difference of ours against theirs below `path`, appended to `out` as
-- {what=, path=, ours=, theirs=, order}. `full`: map keys only ours has are differences too
-- ("extra"); else (a partial expectation) only the keys theirs names count, lyaml.null = must be
-- absent. A list is always whole: an item only ours has is "extra". Lists of named items (by
-- `name`; volumeMounts by `mountPath`) match items by that key, path segment [key], and their
-- order must be the same ("order"); other lists by position, [i] from 0.
local function compare(theirs, ours, path, full, out)
  local function add(what, o, t) out[#out + 1] = { what = what, path = path, ours = o, theirs = t } end
  if theirs == lyaml.null then
    if ours ~= nil then add("present", ours, nil) end
    return
  end
  if ours == nil then return add("missing", nil, theirs) end
  if type(theirs) ~= "table" or type(ours) ~= "table" then
    if theirs ~= ours then add("differs", ours, theirs) end
    return
  end
  if is_list(theirs) or is_list(ours) then
    local key = list_key(path, theirs, ours)
    if not key then
      for i = 1, math.max(#theirs, #ours) do
        local sub = path .. "[" .. (i - 1) .. "]"
        if theirs[i] == nil then
          out[#out + 1] = { what = "extra", path = sub, ours = ours[i] }
        else
          compare(theirs[i], ours[i], sub, full, out)
        end
      end
      return
    end
    local mine, order_t, order_o = {}, {}, {}
    for _, item in ipairs(ours) do mine[item[key]] = item end
    local theirs_keys = {}
    for _, item in ipairs(theirs) do
      local k = item[key]
      theirs_keys[k] = true
      compare(item, mine[k], path .. "[" .. k .. "]", full, out)
      if mine[k] ~= nil then order_t[#order_t + 1] = k end
    end
    for _, item in ipairs(ours) do
      local k = item[key]
      if theirs_keys[k] then
        order_o[#order_o + 1] = k
      else
        out[#out + 1] = { what = "extra", path = path .. "[" .. k .. "]", ours = item }
      end
    end
    if table.concat(order_t, "\0") ~= table.concat(order_o, "\0") then
      add("order", table.concat(order_o, ","), table.concat(order_t, ","))
    end
    return
  end
  for _, k in ipairs(util.sorted_keys(util.merge(theirs, full and ours or {}))) do
    local sub = seg_key(path, k)
    if theirs[k] == nil then
      out[#out + 1] = { what = "extra", path = sub, ours = ours[k] }
    else
      compare(theirs[k], ours[k], sub, full, out)
    end
  end
end

-- flink-conf.yaml as {key = value} ("key: value" lines), so that its options compare one by one.
local function conf_map(text)
  if type(text) ~= "string" then return text end
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local k, v = line:match("^([^:]+): (.*)$")
    out[assert(k, "not a key: value line: " .. line)] = v
  end
  return out
end

-- The object with its flink-conf.yaml read into a map (new tables down to it; lyaml.null kept).
local function comparable(obj)
  if obj.kind ~= "ConfigMap" or type(obj.data) ~= "table" or obj.data["flink-conf.yaml"] == nil then return obj end
  local o = util.merge(obj)
  o.data = util.merge(obj.data)
  o.data["flink-conf.yaml"] = conf_map(o.data["flink-conf.yaml"])
  return o
end

-- The case directories (sorted).
local function cases() return fx.subdirs(DIR) end

-- Renders case `name`: {objects=, revision=}; raises with render's errors.
local function rendered(name)
  local docs = assert(codec.decode_documents(fx.read(DIR .. "/" .. name .. "/cluster.yaml")))
  local r = render.document(docs[1].value, 1, host)
  assert(#r.errors == 0, name .. ": " .. table.concat(r.errors, "; "))
  local ok, c = host.call("defaults", "apply", docs[1].value)
  assert(ok, c)
  return { objects = r.objects, revision = revision.name(c) }
end

-- The expectation of case `name`: {objects=, full=true|false}.
local function expectation(name)
  local base = DIR .. "/" .. name .. "/"
  local full = fx.read(base .. "expected.yaml", true)
  local text = full or fx.read(base .. "expected-partial.yaml")
  local doc = lyaml.load(text)
  assert(doc.kind == "List" and type(doc.items) == "table", name .. ": the expectation is a v1 List")
  return { objects = doc.items, full = full ~= nil }
end

-- The allowlist entry that accepts difference `d` of an object ("<Kind>/<name>"), or nil.
local function allowed(d, where, ctx)
  for _, a in ipairs(ALLOW) do
    if (a.what == "any" or a.what == d.what) and where:find(a.where)
        and (a.check == nil or a.check(d.ours, d.theirs, ctx)) then
      return a
    end
  end
  return nil
end

-- Every difference of case `name`: {{where=, d=, allow=<entry or nil>}}.
local function differences(name)
  local got, exp = rendered(name), expectation(name)
  local by = {}
  for _, o in ipairs(got.objects) do by[o.kind .. "/" .. o.metadata.name] = o end
  local out, seen = {}, {}
  for _, t in ipairs(exp.objects) do
    local id = t.kind .. "/" .. t.metadata.name
    seen[id] = true
    local ds = {}
    if t.absent == true then
      if by[id] then ds[1] = { what = "present", path = "", ours = "the object" } end
    elseif not by[id] then
      ds[1] = { what = "missing", path = "", theirs = "the object" }
    else
      t.absent = nil
      compare(comparable(t), comparable(by[id]), "", exp.full, ds)
    end
    for _, d in ipairs(ds) do
      local where = id .. " " .. d.path
      out[#out + 1] = { where = where, d = d, allow = allowed(d, where, got) }
    end
  end
  if exp.full then
    for id in pairs(by) do
      if not seen[id] then out[#out + 1] = { where = id .. " ", d = { what = "extra", path = "" } } end
    end
  end
  return out
end

local function show(v)
  if type(v) == "table" then return codec.encode_json(v) end
  return tostring(v)
end

describe("golden cases from the original operator's converter tests", function()
  local all = cases()
  local met = {}

  it("compares field by field: values, fields only one side has, absent fields, list order", function()
    local function diffs(theirs, ours, full)
      local out = {}
      compare(theirs, ours, "", full, out)
      local s = {}
      for i, d in ipairs(out) do s[i] = d.what .. " " .. d.path end
      return s
    end
    local theirs = { a = 1, m = { x = "1" }, gone = lyaml.null, l = { { name = "p" }, { name = "q" } },
      v = { "a", "b" } }
    assert.same({}, diffs(theirs, { a = 1, m = { x = "1" }, l = { { name = "p" }, { name = "q" } }, v = { "a", "b" } }))
    assert.same({ "differs a", "extra b", "present gone", "order l", "missing m.x", "extra v[2]" },
      diffs(theirs, { a = 2, b = 0, m = {}, gone = 1, l = { { name = "q" }, { name = "p" } }, v = { "a", "b", "c" } },
        true))
    -- partial: keys only ours has do not count, list items do
    assert.same({ "extra l[r]" }, diffs({ l = { { name = "p" } } }, { b = 0, l = { { name = "p" }, { name = "r" } } }))
    assert.same({ "differs [\"k.y\"]" }, diffs({ ["k.y"] = "1" }, { ["k.y"] = "2" }))
    assert.same({ ["a.b"] = "1", c = "x: y" }, conf_map("a.b: 1\nc: x: y\n"))
  end)

  it("has the cases translated from its tests", function()
    fx.assert_cases(all, { "job-cluster", "security-context-given", "security-context-absent", "heap-sizes",
      "heap-no-room", "log-config-defaults", "log-config-one-given", "log-config-extra-file" })
  end)

  for _, name in ipairs(all) do
    it(name .. ": every field as the original renders it, or an allowed deviation", function()
      local bad = {}
      for _, x in ipairs(differences(name)) do
        if SHOW then
          io.stderr:write(string.format("%s: %s: %s [%s]\n", name, x.where, x.d.what,
            x.allow and x.allow.id or "NOT ALLOWED"))
        end
        if x.allow then
          met[x.allow.id] = true
        else
          bad[#bad + 1] = string.format("%s: %s (ours %s, the original's %s)", x.where, x.d.what,
            show(x.d.ours), show(x.d.theirs))
        end
      end
      assert(#bad == 0, name .. ": differences no allowlist entry names:\n" .. table.concat(bad, "\n"))
    end)
  end

  it("meets every allowlist entry in some case (none outlives its cause)", function()
    local stale = {}
    for _, a in ipairs(ALLOW) do
      if not met[a.id] then stale[#stale + 1] = a.id end
    end
    assert.same({}, stale)
  end)

  it("lists exactly the allowlist's deviations, each with its reason, in docs/original-objects.md", function()
    local doc = fx.read(DOC)
    local listed, ids = {}, {}
    for id in doc:gmatch("\n| `([%w-]+)` |") do listed[#listed + 1] = id end
    for _, a in ipairs(ALLOW) do
      if not ids[a.id] then ids[#ids + 1] = a.id; ids[a.id] = true end
    end
    table.sort(listed)
    local want = { table.unpack(ids) }
    table.sort(want)
    assert.same(want, listed)
    for _, id in ipairs(want) do assert.is_truthy(REASON[id], id .. " has no reason") end
    assert.is_truthy(fx.read(fx.ROOT .. "/docs/README.md"):find("(original-objects.md)", 1, true))
  end)
end)
