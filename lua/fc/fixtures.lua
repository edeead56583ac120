-- SPDX-License-Identifier: Apache-2.0
--- fc.fixtures: one fixture case of a policy, run in the production sandbox (`flink-controller
-- test`, core/fixtures.c, issue "Policy authoring", item 2). The C side walks
-- <policy dir>/testdata/<policy>/<case>/ and hands the files' text here; this module decodes
-- them as the controller decodes what it reads (fc.codec: nulls dropped, map keys strings),
-- calls the policy through fc.host (the C sandbox with its budgets) and compares.
--
-- The fixture format is the one the busted specs beside the policies read:
--   defaults: input.yaml (a FlinkCluster manifest) -> defaults.apply -> expected.yaml, equal;
--   validate: input.yaml (+ old.yaml, the previous manifest of an update), both through
--     defaults.apply -> validate.check{cluster, raw, old} -> expected.yaml {errors, warnings}
--     of {path, message}, equal once sorted;
--   cluster: input.yaml -> defaults.apply -> cluster.desired -> expected.yaml (the object list),
--     equal;
--   any other policy (job, savepoint, status, your own): input.yaml {hook: <name>, input: <its
--     argument>} -> expected.yaml matched partially: every key it gives must be equal, a list must
--     have as many items, `{}` means empty or absent, `~` means absent.
-- A case of any policy may give expected-partial.yaml instead of expected.yaml: the output is
-- then matched partially (e.g. only the labels of each rendered object).
local lyaml = require("lyaml")
local codec = require("fc.codec")
local util = require("fc.util")
local contract = require("fc.contract")

local fixtures = {}

-- Decodes the text of a fixture file like the controller decodes what it reads; `keep_null`
-- keeps `~` as lyaml.null (for a partial expectation). Raises "<file>: <reason>".
local function decode(text, file, keep_null)
  local ok, v = pcall(lyaml.load, text)
  if not ok then error(file .. ": invalid YAML: " .. tostring(v), 0) end
  if keep_null then return v end
  local out, err = codec.normalize(v)
  if err then error(file .. ": " .. err, 0) end
  return out
end

-- Through fc.contract.call, as the controller calls the hooks: the same normalized inputs.
local function call(host, policy, hook, input)
  local ok, res = contract.call(host, policy, hook, input)
  if not ok then error(res.message, 0) end
  return res
end

-- The most differences one case reports (the rest are counted, not listed).
fixtures.MAX_DIFFERENCES = 40

local function shown(v)
  if v == nil then return "absent" end
  return codec.encode_json(v)
end

local function sub_path(path, k)
  if type(k) == "number" then return path .. "[" .. (k - 1) .. "]" end
  return path == "" and k or path .. "." .. k
end

-- Appends "<path>: expected <a>, got <b>" to `out` for every leaf where two decoded values differ
-- (sorted key order; path from the top, `.key` and `[i]` from 0; "<root>" for the top itself).
local function all_diffs(want, got, path, out)
  if type(want) ~= "table" or type(got) ~= "table" then
    if want ~= got then
      out[#out + 1] = string.format("%s: expected %s, got %s", path ~= "" and path or "<root>", shown(want), shown(got))
    end
    return out
  end
  for _, k in ipairs(util.sorted_keys(util.merge(want, got))) do
    all_diffs(want[k], got[k], sub_path(path, k), out)
  end
  return out
end

-- Appends to `out` every way `got` fails the partial expectation `want` (see the top of this
-- file; `~` read as lyaml.null), as "<path>: <what differs>".
local function all_mismatches(want, got, path, out)
  local where = path ~= "" and path or "<root>"
  if want == lyaml.null then
    if got ~= nil then out[#out + 1] = where .. ": expected absent, got " .. codec.encode_json(got) end
  elseif type(want) == "table" then
    if next(want) == nil then
      if got ~= nil and (type(got) ~= "table" or next(got) ~= nil) then
        out[#out + 1] = where .. ": expected empty, got " .. codec.encode_json(got)
      end
    elseif type(got) ~= "table" then
      out[#out + 1] = where .. ": expected a table, got " .. shown(got)
    elseif #want > 0 and #want ~= #got then
      out[#out + 1] = where .. ": " .. #got .. " items, expected " .. #want
    else
      for _, k in ipairs(util.sorted_keys(want)) do all_mismatches(want[k], got[k], sub_path(path, k), out) end
    end
  elseif want ~= got then
    out[#out + 1] = where .. ": expected " .. codec.encode_json(want) .. ", got " .. shown(got)
  end
  return out
end

--- fixtures.mismatch(want, got, path) -> nil when `got` matches the partial expectation `want`
-- (see the top of this file; `~` read as lyaml.null), else "<path>: <what differs>" for the
-- first difference (`path`: the prefix, "" at the top; `.key` and `[i]` from 0).
function fixtures.mismatch(want, got, path)
  return all_mismatches(want, got, path, {})[1]
end

--- fixtures.report(lines) -> nil for no difference; the one line; or, for several,
-- "<n> differences:" followed by one indented line each (at most MAX_DIFFERENCES, then
-- "... and <k> more"), the text `flink-controller test` prints after "FAIL <policy>/<case>: ".
function fixtures.report(lines)
  if #lines == 0 then return nil end
  if #lines == 1 then return lines[1] end
  local out = { #lines .. " differences:" }
  for i = 1, math.min(#lines, fixtures.MAX_DIFFERENCES) do out[#out + 1] = "    " .. lines[i] end
  if #lines > fixtures.MAX_DIFFERENCES then
    out[#out + 1] = "    ... and " .. (#lines - fixtures.MAX_DIFFERENCES) .. " more"
  end
  return table.concat(out, "\n")
end

--- fixtures.sorted_findings(list) -> validate's findings {path, message} in a stable order (a copy).
function fixtures.sorted_findings(list)
  local out = {}
  for _, e in ipairs(list or {}) do out[#out + 1] = { path = e.path, message = e.message } end
  table.sort(out, function(a, b)
    if a.path ~= b.path then return a.path < b.path end
    return a.message < b.message
  end)
  return out
end

-- The output of a case and how it is compared ("equal" or "partial").
local function output(host, case)
  local input = decode(case.input, "input.yaml")
  if case.policy == "defaults" then
    return call(host, "defaults", "apply", input), "equal"
  elseif case.policy == "validate" then
    local old = case.old and call(host, "defaults", "apply", decode(case.old, "old.yaml")) or {}
    local v = call(host, "validate", "check",
      { cluster = call(host, "defaults", "apply", input), raw = input, old = old })
    return { errors = fixtures.sorted_findings(v.errors), warnings = fixtures.sorted_findings(v.warnings) }, "equal"
  elseif case.policy == "cluster" then
    return call(host, "cluster", "desired", { cluster = call(host, "defaults", "apply", input) }).objects, "equal"
  end
  if type(input) ~= "table" or type(input.hook) ~= "string" then
    error("input.yaml: must hold `hook` (the hook's name) and `input` (its argument)", 0)
  end
  return call(host, case.policy, input.hook, input.input), "partial"
end

--- fixtures.run_case(case) -> {ok=bool, message=<why not, or nil>, output=<the output as YAML
-- text, for --update; nil when the policy failed>}.
-- case: {policy=<name>, name=<case directory name>, input=<text of input.yaml>, old=<text of
-- old.yaml or nil>, expected=<text of expected.yaml or nil>, partial=<text of
-- expected-partial.yaml or nil (used when there is no expected.yaml)>}. A policy error, a bad fixture file
-- or a missing expected.yaml is a failed case with its reason, never a raise.
function fixtures.run_case(case)
  local host = require("fc.host")
  local ok, got, how = pcall(output, host, case)
  if not ok then return { ok = false, message = tostring(got) } end
  local result = { ok = false }
  local enc_ok, text = pcall(codec.encode_yaml, got == nil and {} or got)
  result.output = enc_ok and text or nil
  if case.expected == nil and case.partial ~= nil then
    how = "partial"
    case.expected = case.partial
  end
  if case.expected == nil then
    result.message = "no expected.yaml (write it with --update " .. case.policy .. "/" .. case.name .. ")"
    return result
  end
  local dec_ok, want = pcall(decode, case.expected, "expected.yaml", how == "partial")
  if not dec_ok then
    result.message = tostring(want)
    return result
  end
  if how == "equal" and case.policy == "validate" then
    want = { errors = fixtures.sorted_findings(want.errors), warnings = fixtures.sorted_findings(want.warnings) }
  end
  if how == "partial" then
    result.message = fixtures.report(all_mismatches(want, got, "", {}))
  else
    result.message = fixtures.report(all_diffs(want, codec.normalize(got), "", {}))
  end
  result.ok = result.message == nil
  return result
end

return fixtures
