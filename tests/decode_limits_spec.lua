-- SPDX-License-Identifier: Apache-2.0
-- Specs of fc.codec's bounds (docs/reliability.md): YAML read from libyaml's events with
-- the same values as lyaml.load, and every bound checked while the input is read.
local cjson = require("cjson")
local lyaml = require("lyaml")
local lfs = require("lfs")

local fx = require("support.fixtures")
local codec = require("fc.codec")

-- every YAML file under dir (recursively), sorted
local function yaml_files(dir, out)
  out = out or {}
  for name in lfs.dir(dir) do
    local path = dir .. "/" .. name
    if name:sub(1, 1) ~= "." then
      if fx.is_dir(path) then
        yaml_files(path, out)
      elseif name:match("%.ya?ml$") then
        out[#out + 1] = path
      end
    end
  end
  table.sort(out)
  return out
end

-- `lol0: &lol0 [...]` and lolN, each a list of ten references to lol<N-1> (10^(levels+1) values)
local function bomb(levels)
  local lines = { "lol0: &lol0 [" .. string.rep('"lol"', 10, ",") .. "]" }
  for i = 1, levels do
    lines[#lines + 1] = string.format("lol%d: &lol%d [%s]", i, i, string.rep("*lol" .. (i - 1), 10, ","))
  end
  return table.concat(lines, "\n") .. "\n"
end

-- runs f with codec[name] = value, restored afterwards
local function with_bound(name, value, f)
  local old = codec[name]
  codec[name] = value
  local ok, err = pcall(f)
  codec[name] = old
  if not ok then error(err, 0) end
end

describe("fc.codec.load_yaml", function()
  it("reads every YAML file of the repository as lyaml.load does", function()
    local files = {}
    for _, dir in ipairs({ "deploy", "policies/testdata", "tests/testdata", "docs" }) do
      yaml_files(fx.ROOT .. "/" .. dir, files)
    end
    assert.is_true(#files > 100, #files)
    local compared = 0
    for _, f in ipairs(files) do
      local text = fx.read(f)
      local ok, want = pcall(lyaml.load, text, { all = true })
      local gok, got = pcall(codec.load_yaml, text)
      if ok then
        assert.is_true(gok, f .. ": " .. tostring(got))
        local raw = {}
        for i, d in ipairs(got) do
          assert.is_nil(d.error, f)
          raw[i] = d.raw
        end
        assert.same(want, raw, f)
        compared = compared + 1
      else
        assert.is_false(gok, f)
      end
    end
    assert.is_true(compared > 100, compared)
  end)

  it("keeps lyaml's types, tags, nulls, merge keys, anchors and documents", function()
    local text = table.concat({
      "a: 1\nb: 1.5\nc: 0o17\nd: 017\ne: 0x1F\nf: true\ng: yes\nh: ~\ni: null\nj: ''\nk: '1'\nl: !!str 1",
      "m: !!int '7'\nn: .inf\no: 1:20\np: \"x\"\nbase: &b {x: 1, y: 2}\nq: {<<: *b, y: 3}",
      "r: {<<: [*b, {z: 4}], x: 0}\ns: !!null ''\nt: &s str\nu: *s\nv: [a, *s, {w: *b}]",
      "---\n---\nplain\n--- &top\n- top\n...\n--- !!binary aGk=\n" }, "\n")
    local want = lyaml.load(text, { all = true })
    local got = codec.load_yaml(text)
    assert.equal(5, #got)
    for i = 1, 5 do
      assert.equal(i, got[i].index)
      assert.is_nil(got[i].error)
    end
    local raw = {}
    for i, d in ipairs(got) do raw[i] = d.raw end
    assert.same(want, raw)
    local d = raw[1]
    assert.equal(lyaml.null, d.h)
    assert.equal("0o17", d.c)
    assert.equal(15, d.d)
    assert.equal("1", d.l)
    assert.same({ x = 1, y = 3 }, d.q)
    assert.same({ x = 0, y = 2, z = 4 }, d.r)
    assert.equal(d.base, d.v[3].w) -- an alias is the anchored node itself, as in lyaml
    assert.equal(lyaml.null, raw[2])
  end)

  it("raises lyaml's messages on syntax errors and bad references", function()
    for _, c in ipairs({
      { "a: [\n", "1:4: did not find expected node content" },
      { "a: *nope\n", "1:4: invalid reference: nope" },
      { "a: !!int x\n", "1:4: invalid 'tag:yaml.org,2002:int' value: 'x'" },
      { "a: {<<: 1}\n", "1:9: invalid '<<' merge event: 1" },
      { "a: {<<: [1]}\n", "1:11: invalid '<<' sequence element 1: 1" },
    }) do
      local ok, err = pcall(codec.load_yaml, c[1])
      assert.is_false(ok, c[1])
      assert.equal(c[2], err)
      local lok, lerr = pcall(lyaml.load, c[1])
      assert.is_false(lok)
      assert.equal(c[2], tostring(lerr):gsub("^[^:]*lyaml[^:]*:%d+: ", ""), c[1])
    end
  end)
end)

describe("fc.codec bounds", function()
  it("stops an alias bomb at the first alias past the expansion bound, in well under a second", function()
    local text = bomb(8)
    assert.is_true(#text < 700, #text)
    local t0 = os.clock()
    local docs = assert(codec.decode_documents(text))
    local dt = os.clock() - t0
    assert.same({ { index = 1, error = "line 5: lol4[7]: alias *lol3: expands to more than 100000 values" } }, docs)
    assert.is_true(dt < 0.5, dt)
    -- within the bound the expansion is decoded, each alias a copy of its own
    docs = assert(codec.decode_documents(bomb(3)))
    assert.is_nil(docs[1].error)
    assert.equal("lol", docs[1].value.lol3[10][10][10][10])
    assert.are_not.equal(docs[1].value.lol3[1], docs[1].value.lol3[2])
  end)

  it("bounds a document's values, alias expansions included", function()
    with_bound("MAX_VALUES", 500, function()
      local docs = assert(codec.decode_documents(bomb(2)))
      assert.equal("line 3: lol2[3]: more than 500 values", docs[1].error)
      docs = assert(codec.decode_documents("a: [" .. string.rep("1,", 600) .. "1]\n"))
      assert.equal("line 1: a[497]: more than 500 values", docs[1].error)
    end)
  end)

  it("stops nesting at the first level past the depth bound, in well under a second", function()
    local n = 600 * 1024 // 5
    local text = "a: " .. string.rep("{a: ", n) .. "1" .. string.rep("}", n) .. "\n"
    local t0 = os.clock()
    local docs = assert(codec.decode_documents(text))
    local dt = os.clock() - t0
    assert.same({ { index = 1, error = "line 1: " .. string.rep("a", 64, ".") .. ": nested deeper than 64 levels" } },
      docs)
    assert.is_true(dt < 0.5, dt)
    docs = assert(codec.decode_documents("x: 1\nb:\n  - " .. string.rep("[", 70) .. string.rep("]", 70) .. "\n"))
    assert.equal("line 3: b" .. string.rep("[0]", 63) .. ": nested deeper than 64 levels", docs[1].error)
    -- 64 levels are fine
    docs = assert(codec.decode_documents(string.rep("[", 64) .. "1" .. string.rep("]", 64)))
    assert.is_nil(docs[1].error)
  end)

  it("bounds the depth an alias adds", function()
    local deep = string.rep("[", 60) .. string.rep("]", 60)
    local docs = assert(codec.decode_documents("a: &d " .. deep .. "\nb: [[[*d]]]\nc: [[[[*d]]]]\n"))
    assert.equal("line 3: c[0][0][0][0]: alias *d: nested deeper than 64 levels", docs[1].error)
    docs = assert(codec.decode_documents("a: &d " .. deep .. "\nb: [[[*d]]]\n"))
    assert.is_nil(docs[1].error)
    -- an anchor referenced inside itself (a cycle) is deeper than any bound
    docs = assert(codec.decode_documents("a: &a [x, *a]\n"))
    assert.equal("line 1: a[1]: alias *a: nested deeper than 64 levels", docs[1].error)
  end)

  it("bounds scalars, documents and whole texts", function()
    with_bound("MAX_SCALAR_BYTES", 100, function()
      local docs = assert(codec.decode_documents("a:\n  b: " .. string.rep("x", 101) .. "\n"))
      assert.equal("line 2: a.b: a scalar longer than 100 bytes", docs[1].error)
    end)
    with_bound("MAX_DOCUMENT_BYTES", 1000, function()
      local big = "a: [" .. string.rep("xxxxxxxxx,", 200) .. "x]\n"
      local docs = assert(codec.decode_documents("small: 1\n---\n" .. big .. "---\nnot: read\n"))
      assert.equal(2, #docs)
      assert.same({ small = 1 }, docs[1].value)
      assert.truthy(docs[2].error:match("^line 3: a%[%d+%]: the document is longer than 1000 bytes$"), docs[2].error)
    end)
    with_bound("MAX_TEXT_BYTES", 100, function()
      local text = string.rep("a: 1\n", 30)
      assert.same({ nil, "invalid YAML: more than 100 bytes" }, { codec.decode_documents(text) })
      assert.same({ nil, "invalid JSON: more than 100 bytes" }, { codec.decode_documents("[" .. text .. "]") })
      assert.has_error(function() codec.decode_json("[" .. string.rep("1,", 60) .. "1]") end,
        "invalid JSON: more than 100 bytes")
    end)
  end)

  it("bounds JSON nesting while cjson parses, in its own cjson instance", function()
    local deep = string.rep("[", 65) .. string.rep("]", 65)
    local nothing, err = codec.decode_documents(deep)
    assert.is_nil(nothing)
    assert.equal("invalid JSON: Found too many nested data structures (65) at character 65", err)
    assert.has_error(function() codec.decode_json(deep) end,
      "invalid JSON: Found too many nested data structures (65) at character 65")
    assert.same({ index = 1, value = { { { 1 } } } }, codec.decode_documents("[[[[1]]]]")[1])
    -- the shared cjson module keeps its own (default) limit
    assert.equal("table", type(cjson.decode(string.rep("[", 200) .. string.rep("]", 200))))
  end)

  it("refuses JSON strings that are not UTF-8 (found by tests/fuzz/fuzz_decode.c)", function()
    local docs = assert(codec.decode_documents('{"metadata": {"name": "a\143b"}}'))
    assert.same({ { index = 1, error = "metadata.name: not valid UTF-8" } }, docs)
    docs = assert(codec.decode_documents('{"a": {"\255": 1}}'))
    assert.equal("a: a mapping key is not valid UTF-8", docs[1].error)
    assert.same({ name = "\u{e9}" }, codec.decode_json('{"name": "\\u00e9"}'))
  end)
end)
