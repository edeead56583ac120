-- SPDX-License-Identifier: Apache-2.0
--- fc.yaml: YAML text for policies (which cannot reach lyaml): a flat map of options written
-- by the same libyaml emitter as everything else the controller writes (fc.codec), so a value
-- that would read back as another type ("8081", "true", "null") or break the syntax (": ",
-- " #", a line break) is quoted by the emitter, never by hand.
--
-- Trusted framework code: the C host preloads it for the sandbox (core/lhost.c); the
-- framework and the specs require it directly. Pure: no I/O.
local codec = require("fc.codec")

local yaml = {}

--- yaml.encode_map(map) -> string: a YAML block mapping, one `key: value` line per entry in
-- byte order of the keys, no `---`, "\n"-terminated ("{}\n" for an empty map). `map` is a
-- table of string keys to string values. Errors "fc.yaml.encode_map: <key>: ..." naming the
-- first key (or value) that is not a string.
function yaml.encode_map(map)
  if type(map) ~= "table" then error("fc.yaml.encode_map: expected a table, got " .. type(map), 2) end
  local copy = {}
  for k, v in pairs(map) do
    if type(k) ~= "string" then error("fc.yaml.encode_map: key " .. tostring(k) .. " is not a string", 2) end
    if type(v) ~= "string" then
      error("fc.yaml.encode_map: " .. k .. ": value is a " .. type(v) .. ", not a string", 2)
    end
    copy[k] = v
  end
  return codec.encode_yaml(copy, true)
end

return yaml
