-- SPDX-License-Identifier: Apache-2.0
--- fc.override: policy overrides from a ConfigMap (`run --policy-configmap NS/NAME`, issue 12,
-- item 4). The framework side: what the ConfigMap's keys mean, what a refusal says, and the
-- switch of the live host. The C side (core/override.c) writes the files, hashes and compiles
-- the set and runs its fixtures (`flink-controller test` in a child process); core/run.c
-- watches the ConfigMap and switches (docs/policies.md, "Overriding policies in a running controller").
--
-- Keys (ConfigMap keys cannot hold '/'; each maps to one file of the policy dir):
--   <policy>.lua                               -> <policy>.lua (replaces a built-in policy or adds one)
--   lib.<name>.lua                             -> lib/<name>.lua (require("lib.<name>"))
--   testdata.<policy>.<case>.<file>            -> testdata/<policy>/<case>/<file>, <file> one of
--                                                 input.yaml, old.yaml, expected.yaml, expected-partial.yaml
-- <policy> and <name>: a Lua name ([A-Za-z_][A-Za-z0-9_]*), not ending in _spec; <case>: letters,
-- digits, '.', '_', '-', starting with a letter or digit. A case's expectation is one file: a key
-- giving expected.yaml removes the built-in expected-partial.yaml of that case and the other
-- way round. Any other key, a binaryData key, or a case given both expectations is a refusal.
local override = {}

override.FIXTURE_FILES = { "input.yaml", "old.yaml", "expected.yaml", "expected-partial.yaml" }
local OTHER_EXPECTATION = { ["expected.yaml"] = "expected-partial.yaml", ["expected-partial.yaml"] = "expected.yaml" }

local KEY_FORMS = "<policy>.lua, lib.<name>.lua or testdata.<policy>.<case>."
  .. "<input|old|expected|expected-partial>.yaml"

local function lua_name(s)
  return s ~= nil and s:match("^[%a_][%w_]*$") ~= nil and s:match("_spec$") == nil
end

--- override.path(key) -> the file's path relative to the policy dir ("lib/names.lua"), or nil,
-- "<why>" when the key is none of the forms above.
function override.path(key)
  if type(key) ~= "string" then return nil, "not a string" end
  local lib = key:match("^lib%.(.+)%.lua$")
  if lib then
    if lua_name(lib) then return "lib/" .. lib .. ".lua" end
    return nil, "lib.<name>.lua: <name> must be a Lua name"
  end
  local rest = key:match("^testdata%.(.+)$")
  if rest then
    local policy, tail = rest:match("^([^.]+)%.(.+)$")
    if not lua_name(policy) then return nil, "testdata.<policy>...: <policy> must be a Lua name" end
    for _, f in ipairs(override.FIXTURE_FILES) do
      if #tail > #f + 1 and tail:sub(-#f - 1) == "." .. f then
        local case = tail:sub(1, -#f - 2)
        if case:match("^[%w][%w._-]*$") then return "testdata/" .. policy .. "/" .. case .. "/" .. f end
        return nil, "testdata.<policy>.<case>...: <case> must start with a letter or digit and hold only "
          .. "letters, digits, '.', '_' and '-'"
      end
    end
    return nil, "a fixture key ends with .input.yaml, .old.yaml, .expected.yaml or .expected-partial.yaml"
  end
  local policy = key:match("^(.+)%.lua$")
  if policy then
    if lua_name(policy) then return policy .. ".lua" end
    return nil, "<policy>.lua: <policy> must be a Lua name not ending in _spec"
  end
  return nil, "not " .. KEY_FORMS
end

--- override.files({data={key=text}, binaryData={key=base64}}) -> {files={{path=, text=}...} in
-- path order, remove={path...} (built-in files the set drops: the other expectation of a case
-- given one)} or {error="key <key>: <why>"} for the first bad key in key order.
function override.files(cm)
  cm = cm or {}
  local bin = {}
  for k in pairs(cm.binaryData or {}) do bin[#bin + 1] = k end
  table.sort(bin)
  if bin[1] then return { error = "key " .. bin[1] .. ": binaryData: policies and fixtures are text (use data)" } end
  local keys = {}
  for k in pairs(cm.data or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  local files, remove, given = {}, {}, {}
  for _, k in ipairs(keys) do
    local path, why = override.path(k)
    if not path then return { error = "key " .. k .. ": " .. why } end
    given[path] = k
    files[#files + 1] = { path = path, text = cm.data[k] }
  end
  for _, f in ipairs(files) do
    local dir, name = f.path:match("^(testdata/.+/)([^/]+)$")
    local other = dir and OTHER_EXPECTATION[name]
    if other then
      if given[dir .. other] then
        return { error = "key " .. given[f.path] .. ": the case also has " .. given[dir .. other]
          .. " (a case has one expectation)" }
      end
      remove[#remove + 1] = dir .. other
    end
  end
  table.sort(files, function(a, b) return a.path < b.path end)
  table.sort(remove)
  return { files = files, remove = remove }
end

--- override.summary({output=<text>, max=<n>}) -> the Event message of a set whose fixtures failed: the first
-- `max` (default 3) "FAIL <policy>/<case>: <why>" lines of `flink-controller test`'s output,
-- without "FAIL ", joined by "; ", then "; and <n> more" when there are more; a case with several
-- differences ("FAIL <id>: <n> differences:" and one indented line each) is given with its first
-- ("<id>: <n> differences: <first>, ..."); the last non-empty line when there is no FAIL line
-- (e.g. the policy dir unreadable); "no output" for none.
function override.summary(args)
  local output, max = args.output, args.max or 3
  local fails, last, open = {}, nil, false
  for line in tostring(output or ""):gmatch("[^\n]+") do
    local f = line:match("^FAIL (.*)$")
    local more = line:match("^    (%S.*)$")
    if f then
      fails[#fails + 1] = f
      open = f:match(" differences:$") ~= nil
    elseif more and open then
      fails[#fails] = fails[#fails] .. " " .. more .. ", ..."
      open = false
    else
      open = false
    end
    if line:match("%S") then last = line end
  end
  if #fails == 0 then return last or "no output" end
  local shown = {}
  for i = 1, math.min(max, #fails) do shown[i] = fails[i] end
  local text = table.concat(shown, "; ")
  if #fails > max then text = text .. "; and " .. (#fails - max) .. " more" end
  return text
end

--- override.activate({policy_dir=DIR}) -> {policy_dir=DIR}: the live host loads policies from
-- DIR from the next call on (fc.host.configure: the loaded policies are dropped). core/run.c
-- calls it between passes (a pass runs its policy calls in one go on the loop), never in one.
function override.activate(args)
  local host = require("fc.host")
  host.configure({ policy_dir = args.policy_dir })
  return { policy_dir = args.policy_dir }
end

return override
