-- SPDX-License-Identifier: Apache-2.0
-- Specs of core/lpattern.c, the sandbox's own (budgeted) Lua pattern matcher: in the production
-- host (fc.host, the sandbox of the binary) string.find/match/gmatch/gsub must give exactly what
-- Lua's own string library gives here in busted (the unwrapped lstrlib), results and errors,
-- on hand-written cases and on thousands of generated patterns and subjects.
local fx = require("support.fixtures")
local cjson = require("cjson")
local deepcompare = require("luassert.util").deepcompare

-- Runs every case with the `string` it sees and returns one packed result per case:
-- { ok = <pcall status>, n = <results>, ... } (gmatch: the list of its first 50 iterations).
-- The same text runs in the sandbox (run_chunk, `...` the cases) and here (load).
local RUNNER = [[
local cases = ...
local FN = {
  upper = function(c) return c:upper() end,
  none = function() return nil end,
  no = function() return false end,
  count = function(...) return select("#", ...) end,
  cat = function(...) return table.concat({ ... }, "|") end,
}
local function pack(ok, ...) return { ok = ok, n = select("#", ...), ... } end
local out = {}
for i, c in ipairs(cases) do
  if c.op == "gmatch" then
    out[i] = pack(pcall(function()
      local all = {}
      for a, b, d in string.gmatch(c.s, c.p, c.init) do
        all[#all + 1] = { a, b, d }
        if #all >= 50 then break end
      end
      return all
    end))
  elseif c.op == "gsub" then
    out[i] = pack(pcall(string.gsub, c.s, c.p, c.fn and FN[c.fn] or c.repl, c.max))
  else
    out[i] = pack(pcall(string[c.op], c.s, c.p, c.init, c.plain))
  end
end
return out
]]

-- Error messages name the function the way each state finds it ("string.gsub" in busted, "?" in
-- the sandbox, whose copy is in no loaded module): compared without that name.
local function normalize(results)
  for _, r in ipairs(results) do
    if not r.ok and type(r[1]) == "string" then r[1] = r[1]:gsub("to '[^']*'", "to '?'") end
  end
  return results
end

local FIXED = {
  { op = "find", s = "hello world", p = "o w" },
  { op = "find", s = "hello", p = "l+" },
  { op = "find", s = "a.b", p = ".", init = 1, plain = true },
  { op = "find", s = "abc", p = "b", init = -1 },
  { op = "find", s = "abc", p = "b", init = -10 },
  { op = "find", s = "abc", p = "", init = 10 },
  { op = "find", s = "abc", p = "", init = 4 },
  { op = "find", s = "THE (quick) fox", p = "%((%a+)%)" },
  { op = "find", s = "aXb", p = "%u" },
  { op = "match", s = "key = value", p = "(%w+)%s*=%s*(%w+)" },
  { op = "match", s = "  trim me  ", p = "^%s*(.-)%s*$" },
  { op = "match", s = "[[x]]", p = "%b[]" },
  { op = "match", s = "f(a(b)c)d", p = "%b()" },
  { op = "match", s = "hello", p = "()ll()" },
  { op = "match", s = "2024-01-02", p = "(%d+)-(%d+)-(%d+)" },
  { op = "match", s = "aaa", p = "^(a-)a$" },
  { op = "match", s = "x=1, y=2", p = "(%w+)=(%w+)$" },
  { op = "match", s = "THE END", p = "%f[%w]%w+$" },
  { op = "match", s = "say 'hi' there", p = "(['\"])(.-)%1" },
  { op = "match", s = "abc", p = "b", init = -2 },
  { op = "match", s = "a\0b", p = "%z" },
  { op = "match", s = "a\0b", p = "a%zb" },
  { op = "match", s = "a\0b", p = "[\0]" },
  { op = "gmatch", s = "one two three", p = "%a+", init = 5 },
  { op = "gmatch", s = "one two three", p = "%a+", init = -5 },
  { op = "gmatch", s = "k1=v1, k2=v2", p = "(%w+)=(%w+)" },
  { op = "gmatch", s = "abc", p = "" },
  { op = "gmatch", s = "^a^a", p = "^a" },
  { op = "gmatch", s = "hello", p = "()l" },
  { op = "gsub", s = "THE (quick) fox", p = "%f[%a]%a+", fn = "upper" },
  { op = "gsub", s = "hello world", p = "(o)", repl = "[%1]" },
  { op = "gsub", s = "abc", p = "", repl = "-" },
  { op = "gsub", s = "abc", p = "%w", repl = "%0%0" },
  { op = "gsub", s = "hello world", p = "%w+", repl = { hello = "HI", world = false } },
  { op = "gsub", s = "hello world", p = "(%w+)", repl = { hello = 1 } },
  { op = "gsub", s = "abc", p = ".", fn = "none" },
  { op = "gsub", s = "abc", p = "(a)(b)", fn = "cat" },
  { op = "gsub", s = "abc", p = "()b()", fn = "cat" },
  { op = "gsub", s = "abc", p = "^a", repl = "X" },
  { op = "gsub", s = "a,b,,c", p = ",", repl = ";", max = 2 },
  { op = "gsub", s = "abc", p = "b", repl = "%2" },
  { op = "gsub", s = "abc", p = "b", repl = "%" },
  { op = "gsub", s = "abc", p = "b", repl = { b = {} } },
  { op = "gsub", s = "abc", p = "b", repl = 7 },
  { op = "gsub", s = "abc", p = "()", repl = "%1" },
  { op = "find", s = "a", p = "%" },
  { op = "find", s = "a", p = "[a" },
  { op = "find", s = "a", p = "%f" },
  { op = "find", s = "a", p = "%ba" },
  { op = "find", s = "a", p = "(a" },
  { op = "find", s = "a", p = "a)" },
  { op = "find", s = "a", p = "(a))" },
  { op = "find", s = "a", p = "%1" },
  { op = "find", s = "a", p = "()%1" },
  { op = "find", s = ("a"):rep(40), p = ("(a)"):rep(33) },
}

-- Random cases from a fixed seed: patterns of 1-5 items (with classes, sets, %b, %f, captures,
-- back references, anchors and malformed pieces) over short subjects.
local function generated(count)
  local pieces = { "a", "b", "(", ")", ".", "%a", "%d", "%s", "%w", "%p", "%A", "%S", "%.", "%%", "[ab]",
    "[^a]", "[a-c]", "[%d_]", "[]]", "[^]a]", "%b()", "%bab", "%f[%w]", "%f[%W]", "%f[a]", "()", "%1", "%2",
    "$", "^", "x", " ", "-", "[", "%", "%z", "%x", "[%a-]", "[a-]", "%l", "%u" }
  local quants = { "", "", "", "*", "+", "-", "?" }
  local chars = { "a", "b", "(", ")", "1", " ", "_", ".", "%", "x", "A", "\0", "\xc3", "\xa9", "]" }
  local inits = { false, 1, 2, -1, -3, 0, 20 }
  local repls = { "%0", "<%1>", "%%", "x", "%2", "", "%", "[%0%0]", 7, { a = "A", ["("] = false, b = 3 } }
  local fns = { "upper", "none", "no", "count", "cat" }
  local maxes = { false, 0, 1, 2, -1 }
  local function pick(t) return t[math.random(#t)] end
  local cases = {}
  for i = 1, count do
    local p = math.random(5) == 1 and "^" or ""
    for _ = 1, math.random(5) do p = p .. pick(pieces) .. pick(quants) end
    local s = ""
    for _ = 1, math.random(0, 10) do s = s .. pick(chars) end
    local op = ({ "find", "match", "gmatch", "gsub" })[i % 4 + 1]
    local c = { op = op, s = s, p = p, init = pick(inits) or nil }
    if op == "find" then c.plain = ({ nil, true, false })[math.random(3)] end
    if op == "gsub" then
      c.init = nil
      if math.random(3) == 1 then c.fn = pick(fns) else c.repl = pick(repls) end
      c.max = pick(maxes) or nil
    end
    cases[i] = c
  end
  return cases
end

describe("the sandbox's pattern functions (core/lpattern.c)", function()
  local host = require("fc.host")
  local reference = assert(load(RUNNER, "=runner.lua", "t"))

  -- the 6,000 cases run in one call: a budget for them all
  before_each(function()
    host.configure({ policy_dir = fx.ROOT .. "/tests/testdata/policies/basic", timeout_ms = 20000 })
  end)
  after_each(function() host.configure({ timeout_ms = 200 }) end)

  -- Runs `cases` in both and lists the cases whose results differ.
  local function differences(cases)
    local ok, got = host.run_chunk("runner.lua", RUNNER, cases)
    assert.is_true(ok, got)
    local want = reference(cases)
    normalize(got)
    normalize(want)
    local diff = {}
    for i, c in ipairs(cases) do
      if not deepcompare(got[i], want[i], true) then
        diff[#diff + 1] = ("%s(%q, %q, %s): sandbox %s, Lua %s"):format(c.op, c.s, c.p,
          tostring(c.init or c.repl or c.fn), cjson.encode(got[i]), cjson.encode(want[i]))
      end
    end
    return diff
  end

  it("gives Lua's results and errors on hand-written cases", function()
    local diff = differences(FIXED)
    assert.same({}, diff)
    -- the cases do exercise captures, positions, errors and replacements
    local ok, got = host.run_chunk("runner.lua", RUNNER, FIXED)
    assert.is_true(ok, got)
    assert.same({ true, 2, "key", "value" }, { got[10].ok, got[10].n, got[10][1], got[10][2] })
    assert.same({ true, 2, 3, 5 }, { got[14].ok, got[14].n, got[14][1], got[14][2] })
    assert.same({ true, "THE (QUICK) FOX", 3 }, { got[30].ok, got[30][1], got[30][2] })
    assert.same({ false, "invalid capture index %2" }, { got[41].ok, got[41][1] })
  end)

  it("gives Lua's results and errors on 6,000 generated patterns and subjects", function()
    math.randomseed(14)
    local cases = generated(6000)
    local diff = differences(cases)
    assert.same({}, { table.unpack(diff, 1, 10) })
    -- not vacuous: many of them match, many fail to, some are malformed
    local want = reference(cases)
    local matched, failed, errors = 0, 0, 0
    for _, r in ipairs(want) do
      if not r.ok then errors = errors + 1 elseif r[1] ~= nil and (type(r[1]) ~= "table" or #r[1] > 0) then
        matched = matched + 1 else failed = failed + 1 end
    end
    assert.is_true(matched > 1000 and failed > 500 and errors > 200, ("%d %d %d"):format(matched, failed, errors))
  end)

  it("stops a search past the call's budget and serves the next call", function()
    host.configure({ timeout_ms = 50 })
    local t0 = os.clock()
    local ok, err = host.run_chunk("lazy.lua", "local s = ('a'):rep(3e4)\nreturn s:find('.-.-b')")
    assert.same({ false, "lazy.lua:2: policy exceeded its time budget (50 ms)" }, { ok, err })
    assert.is_true(os.clock() - t0 < 0.3, os.clock() - t0)
    local ok2, res = host.run_chunk("next.lua", "return { ('key=val'):match('(%w+)=(%w+)') }")
    assert.same({ true, { "key", "val" } }, { ok2, res })
  end)
end)
