-- SPDX-License-Identifier: Apache-2.0
--- fc.codec: YAML and JSON in and out for Kubernetes objects (plain Lua tables shaped as the
-- API's JSON). YAML goes through lyaml (libyaml's parser and emitter), JSON through lua-cjson;
-- nothing here writes YAML or JSON text by hand.
--
-- Data rules (docs/contracts.md, "Data"):
--  * decoded documents are normalized: a null map value drops the key (Kubernetes treats
--    null as absent), a null list item is an error, map keys become strings, numbers with an
--    integral value become Lua integers (JSON `1.0` is `1`; cjson decodes every number as a float),
--    a string (or key) that is not valid UTF-8 is an error.
--  * encoding: a table is a list when it is a non-empty sequence 1..n (fc.util.is_array) or
--    carries `codec.array_mt`; any other table is a map, keys sorted; empty tables are `{}`.
local lyaml = require("lyaml")
local implicit = require("lyaml.implicit")
local explicit = require("lyaml.explicit")
local yaml = require("yaml")
local util = require("fc.util")
-- a private cjson instance: its decode depth limit (below) is not every other user's
local cjson = require("cjson").new()

local codec = {}

--- Metatable marking a table as a list even when empty (YAML `[]`; cjson 2.1.0 has no
-- empty-array marker, so JSON still writes `{}` for an empty marked table).
codec.array_mt = { __name = "fc.array" }

--- Marks `t` (a table) as a list; returns it.
function codec.array(t)
  return setmetatable(t or {}, codec.array_mt)
end

local function is_null(v)
  return v == lyaml.null or v == cjson.null
end

-- Largest integer magnitude cjson writes exactly (it formats numbers with %.14g).
local JSON_INT_MAX = 99999999999999

-- A list position (integer key) is written 0-based, as Kubernetes field paths are; any other
-- number key as it is (`[2.5]`, `[inf]`).
local function path_key(path, k)
  if math.type(k) == "integer" then return string.format("%s[%d]", path, k - 1) end
  if type(k) == "number" then return path .. "[" .. tostring(k) .. "]" end
  if path == "" then return tostring(k) end
  return path .. "." .. tostring(k)
end

-- Bounds of decoded input. Kubernetes objects are neither that big nor that deep (the API
-- server takes request bodies up to 3 MiB, etcd stores objects up to 1.5 MiB), and YAML
-- aliases can make a small text expand into a huge tree ("billion laughs"). YAML is checked
-- while libyaml's events arrive (codec.load_yaml), JSON by cjson while it parses (depth) and
-- before (size), so that a hostile input stops at the first event past a bound, not after
-- its tree is built.
codec.MAX_DEPTH = 64                 -- maps and lists nested in one another
codec.MAX_VALUES = 1000000           -- values of one document, alias expansions included
codec.MAX_ALIAS_VALUES = 100000      -- values the aliases of one YAML document add
codec.MAX_SCALAR_BYTES = 1 << 20     -- bytes of one YAML scalar
codec.MAX_DOCUMENT_BYTES = 4 << 20   -- bytes of one YAML document of a stream
codec.MAX_TEXT_BYTES = 64 << 20      -- bytes of one text given to the decoder (a stream)

cjson.decode_max_depth(codec.MAX_DEPTH)

local function normalize(v, path, budget, depth, lenient)
  if is_null(v) then return nil end
  budget.n = budget.n + 1
  if budget.n > codec.MAX_VALUES then
    error({ path = path, message = "more than " .. codec.MAX_VALUES .. " values (alias expansion?)" })
  end
  if depth > codec.MAX_DEPTH then
    error({ path = path, message = "nested deeper than " .. codec.MAX_DEPTH .. " levels" })
  end
  local t = type(v)
  if t == "number" then
    if math.type(v) == "float" and v == math.floor(v) and v >= -2^53 and v <= 2^53 then
      return math.tointeger(v)
    end
    if v ~= v or v == math.huge or v == -math.huge then
      error({ path = path, message = "not a finite number" })
    end
    return v
  end
  if t == "string" then
    -- JSON text is UTF-8 (RFC 8259 section 8.1), but cjson passes any byte through; libyaml
    -- checks YAML itself, and its emitter refuses to write anything else
    if not utf8.len(v) then error({ path = path, message = "not valid UTF-8" }) end
    return v
  end
  if t == "boolean" then return v end
  if t ~= "table" then
    error({ path = path, message = "unsupported value of type " .. t })
  end
  local out = {}
  if util.is_array(v) then
    for i, x in ipairs(v) do
      if not is_null(x) then
        out[#out + 1] = normalize(x, path_key(path, i), budget, depth + 1, lenient)
      elseif not lenient then
        error({ path = path_key(path, i), message = "null is not allowed in a list" })
      end
    end
    return out
  end
  for k, x in pairs(v) do
    local kt = type(k)
    local key
    if kt == "string" then
      if not utf8.len(k) then error({ path = path, message = "a mapping key is not valid UTF-8" }) end
      key = k
    elseif kt == "number" or kt == "boolean" then
      key = tostring(math.tointeger(k) or k)
    else
      error({ path = path, message = "a mapping key must be a string, number or boolean, not "
        .. (kt == "table" and (util.is_array(k) and "a list" or "a mapping") or kt) })
    end
    if out[key] ~= nil then
      error({ path = path_key(path, key), message = "duplicate key" })
    end
    out[key] = normalize(x, path_key(path, key), budget, depth + 1, lenient)
  end
  return out
end

--- Normalizes a decoded value (see the data rules above); `lenient` (for answers of other
-- programs than the API server, e.g. Flink's REST API) drops a null list item too instead of
-- refusing it. Returns the value, or nil, "<path>: <message>" (path "" is the document itself).
function codec.normalize(v, lenient)
  local ok, res = pcall(normalize, v, "", { n = 0 }, 0, lenient)
  if ok then return res end
  if type(res) == "table" then
    return nil, (res.path ~= "" and res.path or "<root>") .. ": " .. res.message
  end
  error(res, 0)
end

--- True when `text` holds JSON (its first non-space character is `{` or `[`).
function codec.looks_like_json(text)
  return text:match("^%s*[%[{]") ~= nil
end

-- cjson.decode of `text` within the bounds: true, value | false, "<reason>".
local function json_value(text)
  if #text > codec.MAX_TEXT_BYTES then
    return false, "more than " .. codec.MAX_TEXT_BYTES .. " bytes"
  end
  local ok, v = pcall(cjson.decode, text)
  if not ok then return false, tostring(v) end
  return true, v
end

--- Decodes one JSON value. Errors (bad JSON, more than codec.MAX_TEXT_BYTES, nesting deeper
-- than codec.MAX_DEPTH, non-normalizable values) raise "invalid JSON: <reason>".
function codec.decode_json(text)
  local ok, v = json_value(text)
  if not ok then error("invalid JSON: " .. v, 0) end
  local out, err = codec.normalize(v)
  if err then error("invalid JSON: " .. err, 0) end
  return out
end

-- The YAML loader: lyaml.load's rules (the same implicit and explicit scalar types, `<<` merge
-- keys, anchors reset per document, an empty document is null) built from libyaml's events
-- here, so that every bound is checked as the events arrive.
local TAG_PREFIX = "tag:yaml.org,2002:"
local EXPLICIT = {
  [TAG_PREFIX .. "bool"] = explicit.bool, [TAG_PREFIX .. "float"] = explicit.float,
  [TAG_PREFIX .. "int"] = explicit.int, [TAG_PREFIX .. "null"] = explicit.null,
  [TAG_PREFIX .. "str"] = explicit.str,
}
local IMPLICIT = { implicit.null, implicit.octal, implicit.decimal, implicit.float, implicit.bool,
  implicit.inf, implicit.nan, implicit.hexadecimal, implicit.binary, implicit.sexagesimal,
  implicit.sexfloat }
local END_OF = { MAPPING_START = "MAPPING_END", SEQUENCE_START = "SEQUENCE_END", SCALAR = "SCALAR" }

local function implicit_scalar(s)
  for _, f in ipairs(IMPLICIT) do
    local v = f(s)
    if v ~= nil then return v end
  end
  return s
end

-- Thrown (as a table) for a bound passed: ends the stream at that document.
local function limit_error(p, message)
  local path = {}
  for i = 1, p.depth do
    local k = p.path[i]
    if type(k) == "number" then
      path[#path + 1] = string.format("[%d]", k - 1)
    elseif k ~= nil then
      path[#path + 1] = (#path > 0 and "." or "") .. k
    end
  end
  local where = #path > 0 and table.concat(path) .. ": " or ""
  error({ limit = string.format("line %d: %s%s", p.line, where, message) }, 0)
end

-- Reads the next event; a libyaml error is raised as lyaml raises it ("<line>:<col>: <reason>",
-- at the last event read).
local function next_event(p)
  local ok, ev = pcall(p.next)
  if not ok then
    error({ syntax = string.format("%d:%d: %s", p.line, p.column,
      (tostring(ev):gsub(" at document: .*$", ""))) }, 0)
  end
  p.event = ev
  p.line, p.column = ev.start_mark.line + 1, ev.start_mark.column + 1
  if ev.type == "DOCUMENT_START" then p.doc_start = ev.start_mark.index end
  if ev.type ~= "STREAM_END" and ev.start_mark.index - p.doc_start > codec.MAX_DOCUMENT_BYTES then
    limit_error(p, "the document is longer than " .. codec.MAX_DOCUMENT_BYTES .. " bytes")
  end
  return ev.type
end

local function syntax_error(p, fmt, ...)
  error({ syntax = string.format("%d:%d: " .. fmt, p.line, p.column, ...) }, 0)
end

-- Counts `n` more values of the document (`alias` when an alias adds them).
local function count(p, n, alias)
  p.values = p.values + n
  if alias then
    p.alias_values = p.alias_values + n
    if p.alias_values > codec.MAX_ALIAS_VALUES then
      limit_error(p, string.format("alias *%s: expands to more than %d values", alias, codec.MAX_ALIAS_VALUES))
    end
  end
  if p.values > codec.MAX_VALUES then
    limit_error(p, "more than " .. codec.MAX_VALUES .. " values")
  end
end

local load_node

-- The node whose first event was just read: value, its end event type ("SCALAR" for a scalar,
-- MAPPING_END, SEQUENCE_END), its values and its height (maps and lists nested in it, 0 for a
-- scalar). nil at a
-- MAPPING_END, SEQUENCE_END or DOCUMENT_END.
local function load_current(p)
  local ev = p.event
  local t = ev.type
  if t == "SCALAR" then
    if #ev.value > codec.MAX_SCALAR_BYTES then
      limit_error(p, "a scalar longer than " .. codec.MAX_SCALAR_BYTES .. " bytes")
    end
    count(p, 1)
    local value = ev.value
    local conv = ev.tag and EXPLICIT[ev.tag]
    if conv then
      value = conv(ev.value)
      if value == nil then syntax_error(p, "invalid '%s' value: '%s'", ev.tag, ev.value) end
    elseif ev.style == "PLAIN" then
      value = implicit_scalar(value)
    end
    if ev.anchor then p.anchors[ev.anchor] = { value = value, type = "SCALAR", values = 1, height = 0 } end
    return value, "SCALAR", 1, 0
  elseif t == "ALIAS" then
    local a = p.anchors[ev.anchor]
    if not a then syntax_error(p, "invalid reference: %s", tostring(ev.anchor)) end
    if p.depth + a.height > codec.MAX_DEPTH then
      limit_error(p, string.format("alias *%s: nested deeper than %d levels", ev.anchor, codec.MAX_DEPTH))
    end
    count(p, a.values, ev.anchor)
    return a.value, a.type, a.values, a.height
  elseif t ~= "MAPPING_START" and t ~= "SEQUENCE_START" then
    if t == "MAPPING_END" or t == "SEQUENCE_END" or t == "DOCUMENT_END" then return nil end
    syntax_error(p, "invalid event: %s", t)
  end
  p.depth = p.depth + 1
  if p.depth > codec.MAX_DEPTH then limit_error(p, "nested deeper than " .. codec.MAX_DEPTH .. " levels") end
  count(p, 1)
  local node, anchor = {}, ev.anchor
  -- an anchor names the node from its start: a reference inside it is to the node itself
  -- (a cycle, which normalize refuses by its depth)
  local entry = anchor and { value = node, type = END_OF[t], values = codec.MAX_VALUES + 1,
    height = codec.MAX_DEPTH + 1 }
  if entry then p.anchors[anchor] = entry end
  local values, height = 1, 1
  local depth = p.depth
  if t == "SEQUENCE_START" then
    local n = 0
    while true do
      p.path[depth] = n + 1
      local v, _, nv, h = load_node(p)
      if v == nil then break end
      n = n + 1
      node[n] = v
      values, height = values + nv, math.max(height, h + 1)
    end
  else
    while true do
      p.path[depth] = nil
      local key, _, nk, hk = load_node(p)
      if key == nil then break end
      local tag = p.event.tag
      values, height = values + nk, math.max(height, hk + 1)
      p.path[depth] = type(key) == "table" and "?" or tostring(key)
      if key == "<<" or tag == TAG_PREFIX .. "merge" then
        local m, mt, nv, h = load_node(p)
        values, height = values + (nv or 0), math.max(height, (h or 0) + 1)
        local sources = mt == "MAPPING_END" and { m } or mt == "SEQUENCE_END" and m or nil
        if not sources then
          syntax_error(p, "invalid '%s' merge event: %s", tag or key, mt == "SCALAR" and tostring(m) or tostring(mt))
        end
        for i, src in ipairs(sources) do
          if type(src) ~= "table" then
            syntax_error(p, "invalid '%s' sequence element %d: %s", tag or key, i, tostring(src))
          end
          for k, v in pairs(src) do
            if node[k] == nil then node[k] = v end
          end
        end
      else
        local v, _, nv, h = load_node(p)
        if v == nil then syntax_error(p, "unexpected %s event", p.event.type) end
        node[key] = v
        values, height = values + nv, math.max(height, h + 1)
      end
    end
  end
  p.path[depth] = nil
  p.depth = depth - 1
  if entry then entry.values, entry.height = values, height end
  return node, END_OF[t], values, height
end

function load_node(p)
  next_event(p)
  return load_current(p)
end

--- codec.load_yaml(text) -> list of {index=, raw=<lyaml value: lyaml.null for null> | error=}
-- A YAML stream read as lyaml.load(text, {all = true}) reads it (the same values), with the
-- bounds above checked as libyaml's events arrive: the first event past one ends the stream
-- with that document's error, "line <n>: [<path>: ]<what was exceeded>" (e.g. "line 12:
-- spec.a.b: nested deeper than 64 levels", "line 9: lol8[3]: alias *lol7: expands to more
-- than 100000 values"). Raises "<line>:<col>: <reason>" on a syntax error.
function codec.load_yaml(text)
  local p = { next = yaml.parser(text), line = 0, column = 0, doc_start = 0, depth = 0, path = {} }
  local docs = {}
  local ok, err = pcall(function()
    if next_event(p) ~= "STREAM_START" then syntax_error(p, "expecting STREAM_START event") end
    while next_event(p) ~= "STREAM_END" do
      p.anchors, p.values, p.alias_values, p.depth = {}, 0, 0, 0
      docs[#docs + 1] = { index = #docs + 1 }
      local doc = load_node(p)
      if doc == nil then syntax_error(p, "unexpected %s event", p.event.type) end
      if next_event(p) ~= "DOCUMENT_END" then
        syntax_error(p, "expecting DOCUMENT_END event, but got %s", p.event.type)
      end
      docs[#docs].raw = doc
    end
  end)
  if ok then return docs end
  if type(err) == "table" and err.limit then
    if #docs == 0 then docs[1] = { index = 1 } end
    docs[#docs].raw, docs[#docs].error = nil, err.limit
    return docs
  end
  error(type(err) == "table" and err.syntax or err, 0)
end

--- Decodes a stream of documents: JSON (one value; a top-level array is a list of documents)
-- or multi-document YAML (codec.load_yaml). Returns a list of {index=<1-based position in the
-- stream>, value=<normalized value or nil for an empty document>, error=<message or nil>}
-- (a YAML document past a bound is the last one read), or nil, "invalid YAML|JSON: <reason>"
-- when the stream itself cannot be parsed or is longer than codec.MAX_TEXT_BYTES.
function codec.decode_documents(text)
  local docs = {}
  if codec.looks_like_json(text) then
    local ok, v = json_value(text)
    if not ok then return nil, "invalid JSON: " .. v end
    for i, d in ipairs((type(v) == "table" and util.is_array(v)) and v or { v }) do
      docs[i] = { index = i, raw = d }
    end
  else
    if #text > codec.MAX_TEXT_BYTES then
      return nil, "invalid YAML: more than " .. codec.MAX_TEXT_BYTES .. " bytes"
    end
    local ok, v = pcall(codec.load_yaml, text)
    if not ok then return nil, "invalid YAML: " .. tostring(v) end
    docs = v
  end
  for _, d in ipairs(docs) do
    if not d.error then d.value, d.error = codec.normalize(d.raw) end
    d.raw = nil
  end
  return docs
end

--- codec.unencodable(v) -> nil, or "<path>: <reason>" for the first value (in no set order)
-- that JSON and YAML cannot hold exactly: a non-finite number (NaN, inf), an integer beyond 14
-- significant digits (cjson's %.14g) as a value or a mapping key, a function, userdata or
-- thread. Paths as validate writes them (`spec.replicas`, `items[0]`; a bad key is named at its
-- mapping), "<root>" for `v` itself.
function codec.unencodable(v)
  -- a number the encoder would not write exactly: as a value, or (`key`) as a mapping key,
  -- which cjson writes with %.14g too
  local function check_number(x, path, key)
    local what = key and ("key " .. tostring(x) .. " ") or ""
    if x ~= x or x == math.huge or x == -math.huge then
      return path .. ": " .. what .. (key and "is " or "") .. "not a finite number"
    end
    local int = math.tointeger(x)
    if (math.type(x) == "integer" or (key and int)) and (int > JSON_INT_MAX or int < -JSON_INT_MAX) then
      return path .. ": " .. (key and what or ("integer " .. int .. " "))
        .. "has more digits than the JSON encoder keeps"
    end
    return nil
  end
  local function check(x, path)
    local t = type(x)
    if t == "number" then
      return check_number(x, path, false)
    elseif t == "table" then
      for k, y in pairs(x) do
        -- a bad key is named at its mapping (`k - 1` of math.mininteger would wrap)
        local bad = type(k) == "number" and check_number(k, path, true) or check(y, path_key(path, k))
        if bad then return bad end
      end
    elseif t ~= "string" and t ~= "boolean" and t ~= "nil" then
      return path .. ": a " .. t .. " is not data"
    end
    return nil
  end
  local bad = check(v, "")
  if bad and bad:sub(1, 1) == ":" then bad = "<root>" .. bad end
  return bad
end

--- Encodes `v` as JSON text (cjson). Raises "encode_json: <path>: <reason>" on values JSON
-- cannot hold exactly (codec.unencodable).
function codec.encode_json(v)
  local bad = codec.unencodable(v)
  if bad then error("encode_json: " .. bad, 0) end
  return cjson.encode(v)
end

-- YAML 1.1 words that resolve to booleans or null (what kubectl's YAML reader does).
local SPECIAL_WORDS = {
  y = true, n = true, yes = true, no = true, on = true, off = true,
  ["true"] = true, ["false"] = true, null = true, ["~"] = true, [""] = true,
  ["<<"] = true, ["="] = true,
}

--- True when a string must be quoted in YAML to stay a string: it would read back as a
-- number, boolean, null, timestamp, .inf/.nan or a merge key (YAML 1.1 and 1.2 readers).
function codec.needs_quotes(s)
  if SPECIAL_WORDS[s:lower()] then return true end
  if tonumber(s) ~= nil then return true end
  if s:match("^[-+]?%.?%d") or s:match("^[-+]?%.[iInN]") then return true end
  for _, f in ipairs({ implicit.null, implicit.bool, implicit.octal, implicit.decimal, implicit.float,
    implicit.inf, implicit.nan, implicit.hexadecimal, implicit.binary, implicit.sexagesimal,
    implicit.sexfloat }) do
    if f(s) ~= nil then return true end
  end
  return false
end

local function emit_scalar(emit, value)
  local t = type(value)
  local style = "PLAIN"
  if t == "string" then
    if codec.needs_quotes(value) then
      style = "DOUBLE_QUOTED"
    elseif value:find("\n", 1, true) then
      style = "LITERAL"
    end
  elseif t == "number" then
    if value ~= value or value == math.huge or value == -math.huge then
      error("encode_yaml: not a finite number", 0)
    end
    if math.type(value) == "integer" then
      value = string.format("%d", value)
    else
      local s
      for prec = 15, 17 do
        s = string.format("%." .. prec .. "g", value)
        if tonumber(s) == value then break end
      end
      value = s
    end
  elseif t == "boolean" then
    value = tostring(value)
  else
    error("encode_yaml: cannot encode a " .. t, 0)
  end
  emit({ type = "SCALAR", value = value, plain_implicit = true, quoted_implicit = true, style = style })
end

local function emit_node(emit, v, depth)
  if depth > 100 then error("encode_yaml: nested deeper than 100 levels (a cycle?)", 0) end
  if type(v) ~= "table" then return emit_scalar(emit, v) end
  if getmetatable(v) == codec.array_mt or util.is_array(v) then
    emit({ type = "SEQUENCE_START", style = next(v) == nil and "FLOW" or "BLOCK" })
    for _, x in ipairs(v) do emit_node(emit, x, depth + 1) end
    return emit({ type = "SEQUENCE_END" })
  end
  emit({ type = "MAPPING_START", style = next(v) == nil and "FLOW" or "BLOCK" })
  for _, k in ipairs(util.sorted_keys(v)) do
    emit_scalar(emit, type(k) == "string" and k or tostring(k))
    emit_node(emit, v[k], depth + 1)
  end
  return emit({ type = "MAPPING_END" })
end

--- Encodes a list of values as a YAML stream, each document introduced by `---` (none when
-- `bare` is true and there is one document), map keys sorted. Returns the text ("" for an
-- empty list).
function codec.encode_yaml_stream(docs, bare)
  if #docs == 0 then return "" end
  local emitter = yaml.emitter()
  local function emit(ev)
    local ok, err = emitter.emit(ev)
    if not ok then error("encode_yaml: " .. tostring(err), 0) end
    return err
  end
  emit({ type = "STREAM_START", encoding = "UTF8" })
  for _, d in ipairs(docs) do
    emit({ type = "DOCUMENT_START", implicit = bare == true and #docs == 1 })
    emit_node(emit, d, 0)
    emit({ type = "DOCUMENT_END", implicit = true })
  end
  return emit({ type = "STREAM_END" })
end

--- Encodes one value as a YAML document: with its `---`, or without it when `bare` is true
-- (a configuration file such as Flink's config.yaml).
function codec.encode_yaml(v, bare)
  return codec.encode_yaml_stream({ v }, bare)
end

return codec
