--- fc.codec: YAML and JSON in and out for Kubernetes objects (plain Lua tables shaped as the
-- API's JSON). YAML goes through lyaml (libyaml's parser and emitter), JSON through lua-cjson;
-- nothing here writes YAML or JSON text by hand.
--
-- Data rules (docs/contracts.md, "Data"):
--  * decoded documents are normalized: a null map value drops the key (Kubernetes treats
--    null as absent), a null list item is an error, map keys become strings, numbers with an
--    integral value become Lua integers (JSON `1.0` is `1`; cjson decodes every number as a float).
--  * encoding: a table is a list when it is a non-empty sequence 1..n (fc.util.is_array) or
--    carries `codec.array_mt`; any other table is a map, keys sorted; empty tables are `{}`.
local lyaml = require("lyaml")
local implicit = require("lyaml.implicit")
local yaml = require("yaml")
local cjson = require("cjson")
local util = require("fc.util")

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

-- Bounds of one decoded document: YAML aliases can make a small text expand into a huge tree
-- ("billion laughs"), and Kubernetes objects are neither that big nor that deep.
codec.MAX_VALUES = 1000000
codec.MAX_DEPTH = 100

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
  if t == "string" or t == "boolean" then return v end
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

--- Decodes one JSON value. Errors (bad JSON, non-normalizable values) raise
-- "invalid JSON: <reason>".
function codec.decode_json(text)
  local ok, v = pcall(cjson.decode, text)
  if not ok then error("invalid JSON: " .. tostring(v), 0) end
  local out, err = codec.normalize(v)
  if err then error("invalid JSON: " .. err, 0) end
  return out
end

--- Decodes a stream of documents: JSON (one value; a top-level array is a list of documents)
-- or multi-document YAML. Returns a list of {index=<1-based position in the stream>,
-- value=<normalized value or nil for an empty document>, error=<message or nil>}, or nil,
-- "invalid YAML|JSON: <reason>" when the stream itself cannot be parsed.
function codec.decode_documents(text)
  local raw
  if codec.looks_like_json(text) then
    local ok, v = pcall(cjson.decode, text)
    if not ok then return nil, "invalid JSON: " .. tostring(v) end
    raw = (type(v) == "table" and util.is_array(v)) and v or { v }
  else
    local ok, v = pcall(lyaml.load, text, { all = true })
    if not ok then return nil, "invalid YAML: " .. tostring(v):gsub("^[^:]*lyaml[^:]*:%d+: ", "") end
    raw = v
  end
  local docs = {}
  for i, d in ipairs(raw) do
    local value, err = codec.normalize(d)
    docs[#docs + 1] = { index = i, value = value, error = err }
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
