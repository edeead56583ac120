-- SPDX-License-Identifier: Apache-2.0
-- Reads one JSON document on stdin and prints the value at each dotted path
-- given as an argument, one per line, for the shell scripts of tests/env/.
-- Path segments are object keys or 1-based array indices ("jobs.1.id");
-- "#" as the last segment prints an array's length.  Integral numbers print
-- without a fraction; objects and arrays print as JSON.  A missing path
-- prints an empty line and makes the exit status 1; input that is not JSON
-- exits 2 with "json.lua: <reason>" on stderr.
local cjson = require("cjson")

local text = io.read("a")
local ok, doc = pcall(cjson.decode, text)
if not ok then
  io.stderr:write("json.lua: not JSON: ", tostring(doc), "\n")
  os.exit(2)
end

local function lookup(value, path)
  for seg in string.gmatch(path, "[^.]+") do
    if type(value) ~= "table" then return nil end
    if seg == "#" then return #value end
    local n = tonumber(seg)
    if n and value[n] ~= nil then value = value[n] else value = value[seg] end
    if value == nil then return nil end
  end
  return value
end

local status = 0
for _, path in ipairs(arg) do
  local v = lookup(doc, path)
  if v == nil or v == cjson.null then
    status = 1
    print("")
  elseif type(v) == "table" then
    print(cjson.encode(v))
  elseif math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2^53 then
    print(string.format("%d", v))
  else
    print(tostring(v))
  end
end
os.exit(status)
