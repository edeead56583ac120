-- SPDX-License-Identifier: Apache-2.0
--- fc.render: the offline dry-run behind `flink-controller render` (docs/contracts.md, "Render").
--
-- For every FlinkCluster document of the input: defaults.apply -> validate.check ->
-- cluster.desired with the spec's revision name (fc.revision.name) (and, for taskManager.mode
-- Native, cluster.taskmanager_pod: the pods a new cluster starts with), each through
-- fc.host.call (the sandbox of core/lhost.c and its budgets), with the output shapes checked
-- here. Every document is processed even when an earlier one failed;
-- all errors are reported; stdout is empty when anything failed.
local codec = require("fc.codec")
local profile = require("fc.profile")
local shape = require("fc.shape")
local kinds = require("fc.kinds")
local revision = require("fc.revision")
local taskmanagers = require("fc.taskmanagers")

local render = {}

local API_VERSION = shape.API_VERSION
local KIND = shape.KIND
local is_list = shape.is_list

--- Shape checks of the policy outputs (fc.shape). Each returns nil or "<what is wrong>".
render.shape = shape

local HOOKS = {
  defaults = "apply",
  validate = "check",
  cluster = "desired",
}

-- "a mapping", "a list", "a number" ...: what a value that should be a string is.
local function what_is(v)
  if type(v) == "table" then return is_list(v) and "a list" or "a mapping" end
  return "a " .. type(v)
end

-- Calls a policy hook and checks its output shape: true, result | false, message.
local function run_policy(host, policy, input)
  local ok, res = host.call(policy, HOOKS[policy], input)
  if not ok then return false, res end
  local bad = render.shape[policy](res)
  if bad then return false, string.format("%s.lua: %s: %s", policy, HOOKS[policy], bad) end
  return true, res
end

--- Renders one decoded, normalized document.
-- Returns {name=, objects={...} | nil, errors={lines}, warnings={lines}}; lines are
-- "<name>: <field path>: <message>" and "<name>: warning: <path>: <message>".
function render.document(doc, index, host)
  host = host or require("fc.host")
  local out = { errors = {}, warnings = {} }
  local function fail(path, msg)
    out.errors[#out.errors + 1] = string.format("%s: %s: %s", out.name, path, msg)
    return out
  end
  if type(doc) ~= "table" or is_list(doc) then
    out.name = "document " .. index
    return fail("document", "not a mapping (a FlinkCluster object was expected)")
  end
  local meta = type(doc.metadata) == "table" and doc.metadata or {}
  out.name = (type(meta.name) == "string" and meta.name ~= "") and meta.name or ("document " .. index)
  for _, field in ipairs({ "apiVersion", "kind" }) do
    if doc[field] ~= nil and type(doc[field]) ~= "string" then
      return fail(field, "must be a string, not " .. what_is(doc[field]))
    end
  end
  if doc.apiVersion ~= API_VERSION or doc.kind ~= KIND then
    return fail(doc.kind ~= KIND and "kind" or "apiVersion", string.format(
      "document %d is a %s (%s), not a %s (%s)", index, tostring(doc.kind or "document without kind"),
      tostring(doc.apiVersion or "no apiVersion"), KIND, API_VERSION))
  end
  local ok, cluster = run_policy(host, "defaults", doc)
  if not ok then
    -- malformed input (a scalar spec, no name) makes the defaults' output malformed too: when
    -- validate finds errors in the input as given, those say what is wrong, not the policy
    local vok, given = run_policy(host, "validate", { cluster = doc, raw = doc, old = {} })
    if vok and given.errors and #given.errors > 0 then
      for _, e in ipairs(given.errors) do fail(e.path, e.message) end
      return out
    end
    return fail("policy", cluster)
  end
  local vres
  ok, vres = run_policy(host, "validate", { cluster = cluster, raw = doc, old = {} })
  if not ok then return fail("policy", vres) end
  for _, w in ipairs(vres.warnings or {}) do
    out.warnings[#out.warnings + 1] = string.format("%s: warning: %s: %s", out.name, w.path, w.message)
  end
  for _, e in ipairs(vres.errors or {}) do fail(e.path, e.message) end
  if #out.errors > 0 then return out end
  local dres
  -- the revision the controller would apply this spec as (fc.revision), for the revision label
  ok, dres = run_policy(host, "cluster", { cluster = cluster, revision = revision.name(cluster) })
  if not ok then return fail("policy", dres) end
  out.objects = dres.objects or {}
  -- the controller would leave these out (fc.kinds): refused here, with the object's path
  for _, u in ipairs(kinds.refused(out.objects)) do fail("policy", "cluster.lua: desired: " .. u.message) end
  -- a NaN or an integer JSON cannot keep fails this document, named, not the whole output
  for i, o in ipairs(out.objects) do
    local bad = codec.unencodable(o)
    if bad then
      fail("policy", string.format("cluster.lua: desired: objects[%d]%s", i - 1,
        bad:sub(1, 6) == "<root>" and bad:sub(7) or "." .. bad))
    end
  end
  if #out.errors > 0 then
    out.objects = nil
    return out
  end
  if taskmanagers.is_native(cluster) then
    -- mode Native: the TaskManager pods the controller would start for this cluster, created
    -- empty (pods <name>-taskmanager-1 .. N for the spec's slot demand)
    local p = profile.of(cluster.spec.taskManager)
    local pres
    ok, pres = host.call("cluster", "taskmanager_pod", { cluster = cluster, slots = p.slots, resource = p.profile })
    if ok and not (type(pres) == "table" and type(pres.object) == "table" and pres.object.kind == "Pod") then
      ok, pres = false, "cluster.lua: taskmanager_pod: must return {object=<Pod>}"
    end
    if not ok then
      out.objects = nil
      return fail("policy", pres)
    end
    for _, pod in ipairs(taskmanagers.render(cluster, pres.object)) do out.objects[#out.objects + 1] = pod end
  end
  return out
end

--- Replaces each `v1` `List` document (what `kubectl get -o yaml|json` prints) by its items,
-- which keep the List's document index.
function render.expand_lists(docs)
  local out = {}
  for _, d in ipairs(docs) do
    local v = d.value
    if type(v) == "table" and v.kind == "List" and v.apiVersion == "v1" and type(v.items) == "table" then
      for _, item in ipairs(v.items) do out[#out + 1] = { index = d.index, value = item } end
    else
      out[#out + 1] = d
    end
  end
  return out
end

--- render.printable(line) -> the line with control characters (a NUL in a name, a newline in a
-- message) written as \xNN, so that one message stays one whole line on a terminal and in C.
function render.printable(line)
  return (line:gsub("[\0-\31\127]", function(c) return string.format("\\x%02X", c:byte()) end))
end

--- Runs a whole render.
-- opts: text (the input), source (its name for messages, e.g. the file or "<stdin>"),
-- output "yaml" (default) | "json", policy_dir (optional: fc.host.configure), host (optional,
-- a host module for tests).
-- Returns {stdout=<string>, stderr={<lines>}, code=0|1}: code 1 when the input cannot be
-- decoded, a document is invalid or a policy failed; stdout is "" then.
function render.run(opts)
  local host = opts.host or require("fc.host")
  if opts.policy_dir then host.configure({ policy_dir = opts.policy_dir }) end
  local source = opts.source or "<input>"
  local res = { stdout = "", stderr = {}, code = 0 }
  local function err(line)
    res.stderr[#res.stderr + 1] = render.printable(line)
    res.code = 1
  end
  local docs, derr = codec.decode_documents(opts.text or "")
  if not docs then
    err(source .. ": " .. derr)
    return res
  end
  docs = render.expand_lists(docs)
  -- Each document's objects are encoded as soon as they are rendered and only their text is
  -- kept: with thousands of documents, keeping every object as Lua tables made the collector
  -- walk a heap of some 100 MiB inside later policy calls, which then ran out of their time
  -- budget (7,000 documents: 10 calls over 200 ms).
  local pieces, seen, count = {}, {}, 0
  local function encode(objects)
    if opts.output == "json" then
      local texts = {}
      for i, o in ipairs(objects) do texts[i] = codec.encode_json(o) end
      return table.concat(texts, ",")
    end
    return codec.encode_yaml_stream(objects)
  end
  for i = 1, #docs do
    local d = docs[i]
    docs[i] = false -- its tables are garbage once its objects are text
    if d.error then
      local name = "document " .. d.index
      err(string.format("%s: %s", name, d.error))
    elseif d.value ~= nil then
      count = count + 1
      local r = render.document(d.value, d.index, host)
      for _, w in ipairs(r.warnings) do res.stderr[#res.stderr + 1] = render.printable(w) end
      for _, e in ipairs(r.errors) do err(e) end
      if r.objects then
        local meta = d.value.metadata
        local key = tostring(meta.namespace or "") .. "/" .. meta.name
        if seen[key] then
          err(string.format("%s: metadata.name: document %d renders the same cluster as document %d",
            r.name, d.index, seen[key]))
        else
          seen[key] = d.index
          local ok, text = pcall(encode, r.objects)
          if not ok then
            err(string.format("%s: cannot encode its objects: %s", r.name, tostring(text)))
          elseif text ~= "" then
            pieces[#pieces + 1] = text
          end
        end
      end
    end
  end
  if count == 0 and res.code == 0 then err(source .. ": no FlinkCluster documents") end
  if res.code ~= 0 then return res end
  if opts.output == "json" then
    res.stdout = '{"apiVersion":"v1","kind":"List","items":[' .. table.concat(pieces, ",") .. "]}\n"
  else
    res.stdout = table.concat(pieces)
  end
  return res
end

return render
