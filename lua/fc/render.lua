-- SPDX-License-Identifier: Apache-2.0
--- fc.render: the offline dry-run behind `flink-controller render` (docs/contracts.md, "Render").
--
-- For every FlinkCluster document of the input: defaults.apply -> validate.check ->
-- cluster.desired with the spec's revision name (fc.revision.name) (and, for taskManager.mode
-- Native, cluster.taskmanager_pod: the pods a new cluster starts with), each through
-- fc.host.call (the sandbox of core/lhost.c and its budgets), with the output shapes checked
-- here. Every document is processed even when an earlier one failed;
-- all errors are reported; stdout is empty when anything failed.
-- Before the policies, the fields the CRD does not know (fc.strict) are refused, as the API
-- server's strict field validation refuses them (`--validate=strict`, the default; `warn`:
-- reported as warnings; `ignore`: not reported, the API server prunes them).
-- Children of a FlinkCluster without metadata.uid (a manifest never applied) are printed
-- without their ownerReference to it: the policies can only give them a placeholder uid,
-- which the API server would store as is (it checks no owner), and the garbage collector
-- would then delete them as orphans of an absent owner.
local codec = require("fc.codec")
local strict = require("fc.strict")
local profile = require("fc.profile")
local shape = require("fc.shape")
local contract = require("fc.contract")
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
-- Calls a policy hook through fc.contract.call and checks its output shape (fc.shape: for
-- defaults, a FlinkCluster of our version): true, result | false, message.
local function run_policy(host, policy, input)
  local ok, res = contract.call(host, policy, HOOKS[policy], input)
  if not ok then return false, res.message end
  local bad = render.shape[policy](res)
  if bad then return false, string.format("%s.lua: %s: %s", policy, HOOKS[policy], bad) end
  return true, res
end

--- The validation levels of unknown fields (kubectl's --validate values, their aliases).
render.VALIDATE = { strict = "strict", ["true"] = "strict", warn = "warn", ignore = "ignore", ["false"] = "ignore" }

-- Removes from each object the ownerReferences to the FlinkCluster `name` (which has no uid):
-- true when any was removed; an emptied list is removed.
local function drop_owner_refs(objects, name)
  local dropped = false
  for _, o in ipairs(objects) do
    local meta = type(o) == "table" and o.metadata
    local refs = type(meta) == "table" and meta.ownerReferences
    if type(refs) == "table" then
      local keep = {}
      for _, r in ipairs(refs) do
        if type(r) == "table" and r.kind == KIND and r.name == name
          and type(r.apiVersion) == "string" and r.apiVersion:match("^flinkoperator%.k8s%.io/") then
          dropped = true
        else
          keep[#keep + 1] = r
        end
      end
      meta.ownerReferences = #keep > 0 and keep or nil
    end
  end
  return dropped
end

--- Renders one decoded, normalized document.
-- `validate`: "strict" (default) | "warn" | "ignore" (render.VALIDATE), what unknown fields are.
-- Returns {name=, objects={...} | nil, errors={lines}, warnings={lines}, owner_dropped=bool};
-- lines are "<name>: <field path>: <message>" and "<name>: warning: <path>: <message>";
-- owner_dropped: the cluster has no uid and ownerReferences to it were left out of objects.
function render.document(doc, index, host, validate)
  host = host or require("fc.host")
  validate = validate or "strict"
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
  if doc.apiVersion == API_VERSION and doc.kind == "FlinkJob" then
    -- a job on a session cluster: no Kubernetes objects of its own (its job goes to the
    -- JobManager of spec.clusterRef.name); checked as the controller and the webhook check it
    local ok, errors = require("fc.flinkjob").validate(host, doc)
    if not ok then return fail("policy", tostring(errors.message)) end
    for _, e in ipairs(errors) do fail(e.path, e.message) end
    if #out.errors > 0 then return out end
    out.objects = {}
    out.warnings[#out.warnings + 1] = string.format("%s: FlinkJob: no objects (its job is submitted to the "
      .. "JobManager of FlinkCluster %s)", out.name, tostring(doc.spec.clusterRef.name))
    return out
  end
  if doc.apiVersion ~= API_VERSION or doc.kind ~= KIND then
    return fail(doc.kind ~= KIND and "kind" or "apiVersion", string.format(
      "document %d is a %s (%s), not a %s (%s)", index, tostring(doc.kind or "document without kind"),
      tostring(doc.apiVersion or "no apiVersion"), KIND, API_VERSION))
  end
  -- unknown fields: the CRD's judgement (fc.strict), whatever validate.lua warns about; its
  -- warnings at those paths are then dropped (one line per field)
  local unknown = {}
  for _, u in ipairs(strict.unknown_fields(doc)) do
    unknown[u.path] = true
    if validate == "strict" then
      fail(u.path, strict.message(u))
    elseif validate == "warn" then
      out.warnings[#out.warnings + 1] = string.format("%s: warning: %s: %s", out.name, u.path, strict.message(u))
    end
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
    if not unknown[w.path] then
      out.warnings[#out.warnings + 1] = string.format("%s: warning: %s: %s", out.name, w.path, w.message)
    end
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
    ok, pres = contract.call(host, "cluster", "taskmanager_pod",
      { cluster = cluster, slots = p.slots, resource = p.profile })
    if not ok then
      out.objects = nil
      return fail("policy", pres.message)
    end
    for _, pod in ipairs(taskmanagers.render(cluster, pres.object)) do out.objects[#out.objects + 1] = pod end
  end
  local uid = cluster.metadata.uid
  if uid == nil or uid == "" then out.owner_dropped = drop_owner_refs(out.objects, cluster.metadata.name) end
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
-- opts: inputs ({{source=<name for messages: a path or "<stdin>">, text=<its content>}...}, in
-- order; from_dir=true: a file found in a directory, whose documents of another kind than
-- FlinkCluster are passed over with a note on stderr, where a file named alone makes them
-- errors) or text (one input); source (the name of the whole input, e.g. the directory; default:
-- the one input's); output "yaml" (default) | "json"; validate "strict" (default) | "warn" |
-- "ignore" (unknown fields: errors, warnings or nothing; also "true" and "false", kubectl's
-- aliases; another value raises); name_files (messages start with the
-- input's source: several files or a directory); policy_dir (optional: fc.host.configure);
-- host (optional, a host module for tests).
-- Returns {stdout=<string>, stderr={<lines>}, code=0|1}: code 1 when an input cannot be
-- decoded, a document is invalid or a policy failed; stdout is "" then. In YAML, the objects of
-- a cluster whose ownerReferences were left out (no metadata.uid) follow a comment saying so.
function render.run(opts)
  local host = opts.host or require("fc.host")
  if opts.policy_dir then host.configure({ policy_dir = opts.policy_dir }) end
  local validate = render.VALIDATE[tostring(opts.validate or "strict")]
  if not validate then error("render.run: validate must be strict, warn or ignore (true, false)", 2) end
  local inputs = opts.inputs or { { source = opts.source or "<input>", text = opts.text or "" } }
  local res = { stdout = "", stderr = {}, code = 0 }
  local prefix = ""
  local function note(line) res.stderr[#res.stderr + 1] = render.printable(prefix .. line) end
  local function err(line)
    note(line)
    res.code = 1
  end
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
  for _, input in ipairs(inputs) do
    local source = input.source or "<input>"
    prefix = opts.name_files and source .. ": " or ""
    local docs, derr = codec.decode_documents(input.text or "")
    if not docs then
      prefix = ""
      err(source .. ": " .. derr)
      docs = {}
    end
    docs = render.expand_lists(docs)
    for i = 1, #docs do
      local d = docs[i]
      docs[i] = false -- its tables are garbage once its objects are text
      local v = d.value
      if d.error then
        err(string.format("document %d: %s", d.index, d.error))
      elseif input.from_dir and type(v) == "table" and type(v.kind) == "string" and v.kind ~= KIND
          and v.kind ~= "FlinkJob" then
        note(string.format("document %d: skipped: a %s (%s), not a %s", d.index, v.kind,
          tostring(v.apiVersion or "no apiVersion"), KIND))
      elseif v ~= nil then
        count = count + 1
        local r = render.document(v, d.index, host, validate)
        for _, w in ipairs(r.warnings) do note(w) end
        for _, e in ipairs(r.errors) do err(e) end
        if r.objects then
          local meta = v.metadata
          local key = tostring(meta.namespace or "") .. "/" .. meta.name
            .. (v.kind == "FlinkJob" and " (FlinkJob)" or "")
          local where = opts.name_files and string.format("%s document %d", source, d.index)
            or string.format("document %d", d.index)
          if seen[key] then
            err(string.format("%s: metadata.name: document %d renders the same cluster as %s",
              r.name, d.index, seen[key]))
          else
            seen[key] = where
            local ok, text = pcall(encode, r.objects)
            if not ok then
              err(string.format("%s: cannot encode its objects: %s", r.name, tostring(text)))
            elseif text ~= "" then
              if r.owner_dropped and opts.output ~= "json" then
                text = string.format("# FlinkCluster %s has no metadata.uid: its objects are shown without their "
                  .. "ownerReference (the controller sets it when it applies them)\n", render.printable(r.name)) .. text
              end
              pieces[#pieces + 1] = text
            end
          end
        end
      end
    end
  end
  prefix = ""
  if count == 0 and res.code == 0 then
    local what = opts.source or #inputs == 1 and inputs[1].source or "the input files"
    err(tostring(what) .. ": no FlinkCluster documents")
  end
  if res.code ~= 0 then return res end
  if opts.output == "json" then
    res.stdout = '{"apiVersion":"v1","kind":"List","items":[' .. table.concat(pieces, ",") .. "]}\n"
  else
    res.stdout = table.concat(pieces)
  end
  return res
end

return render
