-- SPDX-License-Identifier: Apache-2.0
-- tests/integration/INDEX.md lists every integration case: one row per `case_NAME` function of
-- tests/integration/*.sh and per name of tests/integration/run.sh's default list, with the file
-- it lives in, what it proves and its duration; no row names a case that does not exist.
local lfs = require("lfs")
local fx = require("support.fixtures")

local DIR = fx.path("tests/integration")

-- name -> file of each `case_NAME() {` in tests/integration/*.sh (a name defined twice: "a.sh b.sh")
local function case_functions()
  local found = {}
  for f in lfs.dir(DIR) do
    if f:match("%.sh$") then
      for name in fx.read(DIR .. "/" .. f):gmatch("\ncase_([%w_]+)%(%)") do
        found[name] = found[name] and (found[name] .. " " .. f) or f
      end
    end
  end
  return found
end

-- the names of run.sh's default list, in order
local function default_list()
  local text = fx.read(DIR .. "/run.sh")
  local list = text:match("%-gt 0 %] ||%s*\n%s*cases=%(([^)]*)%)")
  assert.is_not_nil(list, "tests/integration/run.sh: no default list (cases=(...) after '-gt 0 ] ||')")
  local names = {}
  for n in list:gmatch("[%w_]+") do names[#names + 1] = n end
  return names
end

-- the rows of INDEX.md: {name, proves, duration, file}, in order; a table row that does not
-- parse is an error naming its line
local function index_rows()
  local rows, n = {}, 0
  for line in fx.read(DIR .. "/INDEX.md"):gmatch("[^\n]*") do
    n = n + 1
    if line:match("^| `") then
      local name, proves, duration, label, link =
        line:match("^| `([%w_]+)` | (.-) | (.-) | %[([%w_.]+)%]%(([%w_.]+)%) |$")
      assert.is_not_nil(name, "tests/integration/INDEX.md:" .. n
        .. ": not a row | `case` | proves | duration | [file](file) |")
      assert.are.equal(label, link, "tests/integration/INDEX.md:" .. n .. ": the link names another file")
      rows[#rows + 1] = { name = name, proves = proves, duration = duration, file = label, line = n }
    end
  end
  return rows
end

describe("tests/integration/INDEX.md", function()
  local funcs, defaults, rows = case_functions(), default_list(), index_rows()
  local by_name = {}
  for _, r in ipairs(rows) do
    assert.is_nil(by_name[r.name], "INDEX.md:" .. r.line .. ": case " .. r.name .. " listed twice")
    by_name[r.name] = r
  end

  it("finds the cases it checks (the parsers read something)", function()
    assert.is_true(#defaults >= 50, "default list of " .. #defaults)
    assert.is_true(#rows >= 50, "rows: " .. #rows)
    assert.are.equal("cases.sh", funcs.example)
  end)

  it("has a row for every case function, naming the file that defines it", function()
    local missing, wrong = {}, {}
    for name, file in pairs(funcs) do
      if not by_name[name] then
        missing[#missing + 1] = name .. " (" .. file .. ")"
      elseif by_name[name].file ~= file then
        wrong[#wrong + 1] = name .. ": INDEX says " .. by_name[name].file .. ", defined in " .. file
      end
    end
    table.sort(missing)
    table.sort(wrong)
    assert.are.same({}, missing, "case functions without a row in tests/integration/INDEX.md")
    assert.are.same({}, wrong, "rows naming the wrong file")
  end)

  it("has a row for every name of run.sh's default list, each a case function, in that order", function()
    local missing, undefined, order = {}, {}, {}
    for _, name in ipairs(defaults) do
      if not by_name[name] then missing[#missing + 1] = name end
      if not funcs[name] then undefined[#undefined + 1] = name end
    end
    assert.are.same({}, missing, "default cases without a row in tests/integration/INDEX.md")
    assert.are.same({}, undefined, "default cases with no case_NAME function")
    local pos = {}
    for i, name in ipairs(defaults) do pos[name] = i end
    for _, r in ipairs(rows) do
      if pos[r.name] then order[#order + 1] = r.name end
    end
    assert.are.same(defaults, order, "rows of the default cases out of run.sh's order")
  end)

  it("names no case that does not exist, and says what each proves and how long it takes", function()
    local unknown, empty = {}, {}
    for _, r in ipairs(rows) do
      if not funcs[r.name] then unknown[#unknown + 1] = r.name .. " (line " .. r.line .. ")" end
      if not r.proves:match("%S") or not r.duration:match("%d") then
        empty[#empty + 1] = r.name .. " (line " .. r.line .. ")"
      end
    end
    assert.are.same({}, unknown, "rows naming no case_NAME function of tests/integration/*.sh")
    assert.are.same({}, empty, "rows without what the case proves or a duration")
  end)
end)
