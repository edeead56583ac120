-- SPDX-License-Identifier: Apache-2.0
-- Specs of tests/support/fixtures.lua, the helpers the policy and framework specs share: if one
-- of these is wrong, every spec that uses it may pass for the wrong reason.
local lyaml = require("lyaml")
local fx = require("support.fixtures")

local function tmp_tree(files)
  local dir = fx.tmpdir()
  for path, text in pairs(files) do
    local sub = path:match("^(.*)/[^/]+$")
    if sub then assert(os.execute("mkdir -p " .. fx.quote(dir .. "/" .. sub))) end
    fx.write(dir .. "/" .. path, text)
  end
  return dir
end

local function rm(dir) os.execute("rm -rf " .. fx.quote(dir)) end

describe("support.fixtures mismatch", function()
  it("accepts extra keys in the output and names the first differing path", function()
    assert.is_nil(fx.mismatch({ a = 1 }, { a = 1, b = 2 }, ""))
    assert.equal("a.b: expected 1, got 2", fx.mismatch({ a = { b = 1 } }, { a = { b = 2 } }, ""))
    assert.equal('l[1].x: expected "y", got "z"', fx.mismatch({ l = { {}, { x = "y" } } }, { l = { {}, { x = "z" } } }))
  end)
  it("wants lists of the same length, {} empty or absent, ~ absent", function()
    assert.equal("l: 3 items, expected 2", fx.mismatch({ l = { 1, 2 } }, { l = { 1, 2, 3 } }, ""))
    assert.is_nil(fx.mismatch({ l = {} }, {}, ""))
    assert.is_nil(fx.mismatch({ l = {} }, { l = {} }, ""))
    assert.equal("l: expected empty, got [1]", fx.mismatch({ l = {} }, { l = { 1 } }, ""))
    assert.equal('k: expected absent, got "v"', fx.mismatch(lyaml.load("k: ~"), { k = "v" }, ""))
    assert.is_nil(fx.mismatch(lyaml.load("k: ~"), {}, ""))
    assert.equal("t: expected a table, got 5", fx.mismatch({ t = { a = 1 } }, { t = 5 }, ""))
  end)
end)

describe("support.fixtures first_diff", function()
  it("is nil for equal values and names the first difference in key order both ways", function()
    assert.is_nil(fx.first_diff({ a = { 1, 2 }, b = "x" }, { b = "x", a = { 1, 2 } }))
    assert.equal("$.a.2: 2 ~= 3", fx.first_diff({ a = { 1, 2 } }, { a = { 1, 3 } }))
    assert.equal("$.c: nil ~= true", fx.first_diff({ a = 1 }, { a = 1, c = true }))
    assert.equal("$.a: 1 ~= nil", fx.first_diff({ a = 1 }, {}))
  end)
end)

describe("support.fixtures YAML", function()
  it("drops nulls", function()
    assert.same({ a = { c = 1 }, l = { 1 } }, fx.strip_null(lyaml.load("a: {b: ~, c: 1}\nl: [1]\nn: null\n")))
  end)
  it("writes YAML that reads back as the same value", function()
    local v = { s = "a: b", q = "true", n = "1.10", multi = "x\ny\n", f = 1.1111111111111111e31, i = 42,
      empty = {}, list = { "it's", "#x", "" }, b = false, null = lyaml.null }
    local back = lyaml.load(fx.emit_yaml(v))
    assert.is_true(back.null == lyaml.null)
    back.null = nil
    v.null = nil
    assert.same(v, back)
    assert.is_nil(fx.first_diff(v, back))
  end)
end)

describe("support.fixtures cases", function()
  it("lists the case directories sorted, without files and hidden entries", function()
    local dir = tmp_tree({ ["b/input.yaml"] = "", ["a/input.yaml"] = "", [".hidden/x"] = "", ["file.yaml"] = "" })
    assert.same({ "a", "b" }, fx.subdirs(dir))
    assert.same({}, fx.subdirs(dir .. "/missing"))
    rm(dir)
  end)
  it("walks every policy's testdata directory", function()
    assert.same(fx.subdirs(fx.ROOT .. "/policies/testdata/job"), fx.cases("job"))
    assert.is_true(#fx.cases("cluster") >= 16)
    fx.assert_cases({ "a", "b" }, { "b" })
    assert.has_error(function() fx.assert_cases({ "a" }, { "a", "b" }) end, "missing fixture case b")
  end)
  it("runs a hook case and reports the mismatch", function()
    local mod = { double = function(i) return { v = i.n * 2 } end }
    local save = fx.cases_dir
    local dir = tmp_tree({ ["policies/testdata/p/ok/input.yaml"] = "hook: double\ninput: {n: 2}\n",
      ["policies/testdata/p/ok/expected.yaml"] = "v: 4\n",
      ["policies/testdata/p/bad/input.yaml"] = "hook: double\ninput: {n: 3}\n",
      ["policies/testdata/p/bad/expected.yaml"] = "v: 4\n",
      ["policies/testdata/p/nohook/input.yaml"] = "hook: triple\ninput: {}\n" })
    fx.cases_dir = function(p) return dir .. "/policies/testdata/" .. p end
    local ok, err = pcall(function()
      assert.is_nil(fx.hook_case("p", mod, "ok"))
      assert.equal("v: expected 4, got 6", fx.hook_case("p", mod, "bad"))
      assert.has_error(function() fx.hook_case("p", mod, "nohook") end)
    end)
    fx.cases_dir = save
    rm(dir)
    assert(ok, err)
  end)
end)

describe("support.fixtures FC_UPDATE_FIXTURES", function()
  -- fx.expected in a child lua5.4 (the variable is read when the module loads).
  local function expected_in_child(env, dir)
    local code = "local fx = require('support.fixtures'); "
      .. "local w = fx.expected(" .. string.format("%q", dir) .. ", {a = {1, 2}, s = 'x: y'}); "
      .. "io.write(w.s, ' ', #w.a)"
    local p = assert(io.popen(env .. " lua5.4 -e " .. fx.quote(code) .. " 2>&1"))
    local out = p:read("a")
    p:close()
    return out
  end
  it("rewrites expected.yaml with 1 or the case's name, and leaves it alone otherwise", function()
    local root = tmp_tree({ ["c1/expected.yaml"] = "a: [9]\ns: old\n", ["c2/expected.yaml"] = "a: [9]\ns: old\n" })
    assert.equal("old 1", expected_in_child("FC_UPDATE_FIXTURES=", root .. "/c1"))
    assert.equal("old 1", expected_in_child("FC_UPDATE_FIXTURES=c2", root .. "/c1"))
    assert.equal("x: y 2", expected_in_child("FC_UPDATE_FIXTURES=c2", root .. "/c2"))
    assert.equal("x: y 2", expected_in_child("FC_UPDATE_FIXTURES=1", root .. "/c1"))
    local written = fx.read(root .. "/c1/expected.yaml"):gsub("^%-%-%-\n", ""):gsub("%.%.%.\n$", "")
    assert.equal("a:\n- 1\n- 2\ns: 'x: y'\n", written)
    rm(root)
  end)
end)

describe("support.fixtures sandboxed", function()
  local dir
  setup(function()
    dir = tmp_tree({
      ["ok.lua"] = "local u = require('fc.util')\nlocal l = require('lib.h')\n"
        .. "return { f = function(x) return { copy = u.deepcopy(x), h = l.h, dump = string.dump } end }\n",
      ["lib/h.lua"] = "return { h = 'lib' }\n",
      ["global_read.lua"] = "return { f = function() return io end }\n",
      ["global_write.lua"] = "x = 1\nreturn {}\n",
      ["require_io.lua"] = "return require('io')\n",
      ["gc.lua"] = "return setmetatable({}, { __gc = function() end })\n",
    })
  end)
  teardown(function() rm(dir) end)

  it("calls a policy with fc.util and lib.* and without string.dump in the production host", function()
    local p = fx.sandboxed("ok", { dir = dir })
    assert.same({ copy = { 1 }, h = "lib" }, p.f({ 1 }))
    assert.equal(dir, require("fc.host").info().policy_dir)
    -- the default dir again for a policy of policies/, whose data members come along
    assert.equal(30, fx.sandboxed("settings").JOB_LOST_AFTER_SECONDS)
    assert.equal("Running", fx.sandboxed("job").map_flink_state("RUNNING"))
    assert.equal(fx.ROOT .. "/policies", require("fc.host").info().policy_dir)
  end)
  it("raises the host's errors: unknown globals, global writes, other modules and __gc", function()
    local cases = {
      { "global_read", "global_read.lua:1: undefined global 'io' (not available to policies)" },
      { "global_write", "global_write.lua:1: assignment to global 'x': policies cannot write globals" },
      { "require_io", "require_io.lua:1: require: module 'io' is not available to policies (allowed: fc.util, "
        .. "fc.quantity, fc.slots, fc.profile, fc.yaml, fc.crd, fc.names, fc.clock, fc.trigger, "
        .. "fc.restsubmit, lib.<name>, <a policy of the set>)" },
      { "gc", "gc.lua:1: setmetatable: __gc metamethods are not allowed in policies" },
    }
    for _, c in ipairs(cases) do
      local p = fx.sandboxed(c[1], { dir = dir })
      local ok, err = pcall(p.f, {})
      assert.is_false(ok)
      assert.equal(c[2], err)
    end
  end)
end)

describe("support.fixtures run_bin #bin", function()
  it("returns the exit code, both streams and the CPU time", function()
    local r = fx.run_bin({ "render", "-f", fx.ROOT .. "/no/such/file.yaml" })
    assert.equal(2, r.code)
    assert.equal("", r.stdout)
    assert.truthy(r.stderr:find("no/such/file.yaml", 1, true), r.stderr)
    assert.is_true(r.cpu_ms >= 0 and r.ms >= 0)
  end)
end)
