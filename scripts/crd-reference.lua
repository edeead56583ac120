-- SPDX-License-Identifier: Apache-2.0
-- scripts/crd-reference.lua: writes docs/reference.md, the FlinkCluster field reference, from the
-- CRD, so that the CRD stays the one description of the API's fields and the reference cannot
-- drift from it.
--
--   lua5.4 scripts/crd-reference.lua deploy/crd.yaml docs/reference.md     (run by `make docs`)
--   lua5.4 scripts/crd-reference.lua deploy/crd.yaml                       (to stdout)
--
-- The reference lists the printer columns, the object's CEL rules and, per field of the served
-- and stored version's openAPIV3Schema (depth first, properties in name order), its path, type,
-- default, allowed values (enum, limits, lengths, pattern) and description, with the field's CEL
-- rules (their messages) after the description. Paths: `a.b` a property, `a[]` an array's
-- items, `a.<key>` a map's values. tests/reference_spec.lua fails when docs/reference.md is not
-- what this script writes from the current CRD. Exit status 1 with a message on a bad CRD.
local lyaml = require("lyaml")

local function fail(msg)
  io.stderr:write("crd-reference: ", msg, "\n")
  os.exit(1)
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- One line of a table cell: whitespace runs (the YAML's folded lines) become one space and `|`
-- is escaped (also inside a code span, GitHub's tables split on it).
local function line(s)
  s = tostring(s):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
  return (s:gsub("|", "\\|"))
end

-- Prose in a cell: `<` and `>` as entities too, so that `<name>` is shown, not taken for HTML
-- (a code span shows its text as it is, so code() must not).
local function cell(s)
  return (line(s):gsub("<", "&lt;"):gsub(">", "&gt;"))
end

-- Kubernetes' quantity pattern (apimachinery resource.Quantity), which the CRD gives every
-- quantity: its type is "quantity", the pattern said once at the top instead of in each row.
local QUANTITY = "^\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+))?$"

-- A value as YAML flow text in a code span: 'Cluster', 8081, {}, [a, b].
local function literal(v)
  local t = type(v)
  if t == "string" then return v end
  if t ~= "table" then return tostring(v) end
  if next(v) == nil then return "{}" end
  local parts = {}
  if #v > 0 then
    for _, item in ipairs(v) do parts[#parts + 1] = literal(item) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  for _, k in ipairs(sorted_keys(v)) do parts[#parts + 1] = k .. ": " .. literal(v[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function code(v)
  local s = line(literal(v))
  -- a code span holding a backtick needs a longer fence
  if s:find("`", 1, true) then return "`` " .. s .. " ``" end
  return "`" .. s .. "`"
end

-- The type of a node as a reader says it: string, integer (int32), quantity, array of string,
-- map of string, object; "any fields" where unknown fields are kept (embedded Kubernetes types).
local function type_of(node)
  local t
  if node["x-kubernetes-int-or-string"] then
    t = node.pattern == QUANTITY and "quantity" or "integer or string"
  elseif node.type == "array" then
    t = "array of " .. (type(node.items) == "table" and type_of(node.items) or "any")
  elseif node.type == "object" and type(node.additionalProperties) == "table" and not node.properties then
    t = "map of " .. type_of(node.additionalProperties)
  elseif node.type then
    t = node.type
    if node.format then t = t .. " (" .. node.format .. ")" end
  else
    t = "any"
  end
  if node["x-kubernetes-preserve-unknown-fields"] and not t:find("any fields", 1, true) then
    t = t .. ", any fields"
  end
  return t
end

-- The allowed values of a node: enum, range, lengths, item and property counts, pattern.
local function values_of(node)
  local out = {}
  if node.enum then
    local items = {}
    for _, v in ipairs(node.enum) do items[#items + 1] = code(v) end
    out[#out + 1] = "one of " .. table.concat(items, ", ")
  end
  if node.minimum and node.maximum then
    out[#out + 1] = node.minimum .. " to " .. node.maximum
  elseif node.minimum then
    out[#out + 1] = ">= " .. node.minimum
  elseif node.maximum then
    out[#out + 1] = "<= " .. node.maximum
  end
  if node.minLength then out[#out + 1] = "length >= " .. node.minLength end
  if node.maxLength then out[#out + 1] = "length <= " .. node.maxLength end
  if node.maxItems then out[#out + 1] = "at most " .. node.maxItems .. " items" end
  if node.maxProperties then out[#out + 1] = "at most " .. node.maxProperties .. " keys" end
  if node.pattern and node.pattern ~= QUANTITY then
    out[#out + 1] = "pattern " .. code(node.pattern)
  end
  return table.concat(out, "; ")
end

-- The CEL rules of a node, as their messages (the rule itself when it has none).
local function rules_of(node)
  local out = {}
  for _, r in ipairs(node["x-kubernetes-validations"] or {}) do
    local when = r.optionalOldSelf and "at create" or (r.rule:find("oldSelf", 1, true) and "on update" or nil)
    local what = r.message and cell(r.message) or code(r.rule)
    out[#out + 1] = "Rule" .. (when and " (" .. when .. ")" or "") .. ": " .. what .. "."
  end
  return table.concat(out, " ")
end

-- The rows of a node's subtree: {path, node, required} depth first.
local function walk(path, node, required, rows)
  rows[#rows + 1] = { path = path, node = node, required = required }
  local req = {}
  for _, name in ipairs(node.required or {}) do req[name] = true end
  if type(node.properties) == "table" then
    for _, name in ipairs(sorted_keys(node.properties)) do
      walk(path .. "." .. name, node.properties[name], req[name], rows)
    end
  end
  if type(node.items) == "table" then walk(path .. "[]", node.items, false, rows) end
  if type(node.additionalProperties) == "table" then
    walk(path .. ".<key>", node.additionalProperties, false, rows)
  end
  return rows
end

local function field_table(rows, out)
  out[#out + 1] = "| Field | Type | Default | Values | Description |"
  out[#out + 1] = "| --- | --- | --- | --- | --- |"
  for _, r in ipairs(rows) do
    local n = r.node
    local desc = n.description and cell(n.description) or ""
    local rules = rules_of(n)
    if rules ~= "" then desc = desc == "" and rules or desc .. " " .. rules end
    out[#out + 1] = string.format("| %s | %s | %s | %s | %s |", code(r.path),
      type_of(n) .. (r.required and ", **required**" or ""),
      n.default ~= nil and code(n.default) or "", values_of(n), desc)
  end
end

local function reference(crd, src)
  if type(crd) ~= "table" or type(crd.spec) ~= "table" then fail(src .. ": not a CustomResourceDefinition") end
  local version
  for _, v in ipairs(crd.spec.versions or {}) do
    if v.served and v.storage and v.schema then version = v end
  end
  if not version or type(version.schema.openAPIV3Schema) ~= "table" then
    fail(src .. ": no served and stored version with a schema")
  end
  local schema, names = version.schema.openAPIV3Schema, crd.spec.names or {}
  local out = {
    "# " .. (names.kind or "FlinkCluster") .. " field reference",
    "",
    "<!-- Generated by scripts/crd-reference.lua from " .. src .. " (make docs): do not edit; edit the CRD. -->",
    "",
    string.format("`%s`, kind `%s` (`apiVersion: %s/%s`), %s; `kubectl get %s` (short name%s %s).",
      crd.metadata and crd.metadata.name or "?", names.kind or "?", crd.spec.group or "?", version.name,
      (crd.spec.scope or "?"):lower(), names.plural or "?", #(names.shortNames or {}) == 1 and "" or "s",
      table.concat(names.shortNames or {}, ", ")),
    "The API server checks every field below against its type and values, applies the defaults"
      .. " and runs the rules, with no controller running"
      .. " ([admission.md](admission.md)); `validate.lua` adds the rules a schema cannot state.",
    "Paths: `a.b` is a property, `a[]` an array's items, `a.<key>` a map's values;"
      .. " \"any fields\" marks embedded Kubernetes types (containers, volumes, resources, ...),"
      .. " kept as given. A quantity is a Kubernetes quantity, an integer or a string such as `500m`,"
      .. " `2Gi`, `1` (the pattern `" .. QUANTITY .. "`).",
    "",
  }
  local cols = version.additionalPrinterColumns or {}
  if #cols > 0 then
    out[#out + 1] = "## Printer columns (`kubectl get " .. (names.plural or "") .. "`)"
    out[#out + 1] = ""
    out[#out + 1] = "| Column | Type | JSON path | Description |"
    out[#out + 1] = "| --- | --- | --- | --- |"
    for _, c in ipairs(cols) do
      out[#out + 1] = string.format("| %s | %s | %s | %s |", cell(c.name), cell(c.type), code(c.jsonPath),
        c.description and cell(c.description) or "")
    end
    out[#out + 1] = ""
  end
  out[#out + 1] = "## The object"
  out[#out + 1] = ""
  local top = {}
  local req = {}
  for _, name in ipairs(schema.required or {}) do req[name] = true end
  top[1] = { path = names.kind or "object", node = schema, required = false }
  for _, name in ipairs(sorted_keys(schema.properties or {})) do
    top[#top + 1] = { path = name, node = schema.properties[name], required = req[name] }
  end
  field_table(top, out)
  for _, name in ipairs(sorted_keys(schema.properties or {})) do
    local node = schema.properties[name]
    if type(node.properties) == "table" then
      out[#out + 1] = ""
      out[#out + 1] = "## `" .. name .. "`"
      out[#out + 1] = ""
      local rows = walk(name, node, req[name], {})
      table.remove(rows, 1)   -- the node itself is in the table above
      field_table(rows, out)
    end
  end
  return table.concat(out, "\n") .. "\n"
end

local src, dst = arg[1], arg[2]
if not src then fail("usage: crd-reference.lua CRD.yaml [OUT.md]") end
local f = io.open(src) or fail("cannot read " .. src)
local ok, crds = pcall(lyaml.load, f:read("a"), { all = true })
f:close()
if not ok then fail(src .. ": " .. tostring(crds)) end
-- every CRD of the file, in order (FlinkCluster, then FlinkJob)
local parts = {}
for _, crd in ipairs(crds) do parts[#parts + 1] = reference(crd, src) end
local text = table.concat(parts, "\n")
if not dst then
  io.write(text)
  return
end
local tmp = dst .. ".tmp"
local w = io.open(tmp, "w") or fail("cannot write " .. tmp)
w:write(text)
w:close()
assert(os.rename(tmp, dst))
