-- SPDX-License-Identifier: Apache-2.0
-- `flink-controller test` (core/fixtures.c, lua/fc/fixtures.lua): every policy's fixture cases
-- run in the production sandbox, every difference of a mismatch listed, a policy without
-- cases failing, --update writing expected.yaml (#bin: the binary from FC_BIN).
local fx = require("support.fixtures")

local ROOT = fx.ROOT
local run = fx.run_bin

-- the number of case directories of the shipped policies (what the command must run)
local function shipped_cases()
  local n = 0
  for _, p in ipairs(fx.subdirs(ROOT .. "/policies/testdata")) do n = n + #fx.cases(p) end
  return n
end

-- a copy of policies/ in a temporary directory (removed by the caller)
local function policy_copy()
  local dir = fx.tmpdir()
  assert(os.execute("cp -r " .. fx.quote(ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
  return dir
end

describe("flink-controller test #bin", function()
  it("passes every fixture of the shipped policies in the production sandbox", function()
    local r = run({ "test" })
    assert.equal(0, r.code, r.stdout .. r.stderr)
    local n = shipped_cases()
    assert.is_true(n >= 100, "cases found: " .. n)
    assert.equal(n .. " passed, 0 failed", r.stdout:match("([^\n]+)\n$"))
    assert.truthy(r.stdout:find("\nok cluster/wordcount\n", 1, true))
    assert.truthy(r.stdout:find("\nok validate/update-cancel-resume\n", 1, true))
  end)

  it("keeps the cases a PATTERN names", function()
    local r = run({ "test", "cluster/access-" })
    assert.equal(0, r.code, r.stdout)
    assert.equal("ok cluster/access-external\nok cluster/access-headless\nok cluster/access-nodeport\n"
      .. "ok cluster/access-vpc\n4 passed, 0 failed\n", r.stdout)
  end)

  -- a copy of policies/ whose cluster.desired runs `edit` (Lua statements on `o`) on every
  -- TaskManager StatefulSet before it returns (removed by the caller)
  local function taskmanager_edit(edit)
    local dir = policy_copy()
    local text = fx.read(dir .. "/cluster.lua")
    local edited, n = text:gsub("\n(  return { objects = objects, jobmanager = jobmanager,)",
      "\n  for _, o in ipairs(objects) do\n"
        .. "    if o.metadata.name:match('%%-taskmanager$') then " .. edit .. " end\n"
        .. "  end\n%1", 1)
    assert.equal(1, n)
    fx.write(dir .. "/cluster.lua", edited)
    return dir
  end

  it("fails a broken policy with the first difference, and a policy without fixtures", function()
    -- the edit: every TaskManager StatefulSet gets one replica more than asked
    local dir = taskmanager_edit("o.spec.replicas = o.spec.replicas + 1")
    fx.write(dir .. "/alerts.lua", "return { hook = function() return {} end }\n")
    local r = run({ "test", "--policy-dir", dir, "cluster/wordcount" })
    assert.equal(1, r.code)
    assert.equal("FAIL alerts: no fixtures (no case directory in testdata/alerts/)\n"
      .. "FAIL cluster/wordcount: [3].spec.replicas: expected 1, got 2\n"
      .. "0 passed, 2 failed\n", r.stdout)
    os.execute("rm -rf " .. fx.quote(dir))
  end)

  it("lists every difference of a case, one per line, in key order", function()
    -- two edits of the TaskManager StatefulSet: one replica more and a label of its own
    local dir = taskmanager_edit("o.spec.replicas = o.spec.replicas + 1; o.metadata.labels.extra = 'x'")
    local r = run({ "test", "--policy-dir", dir, "cluster/wordcount" })
    assert.equal(1, r.code)
    assert.equal("FAIL cluster/wordcount: 2 differences:\n"
      .. "    [3].metadata.labels.extra: expected absent, got \"x\"\n"
      .. "    [3].spec.replicas: expected 1, got 2\n"
      .. "0 passed, 1 failed\n", r.stdout)
    os.execute("rm -rf " .. fx.quote(dir))
  end)

  it("names a policy error of a case, and matches hook fixtures partially", function()
    local dir = policy_copy()
    fx.write(dir .. "/status.lua", fx.read(dir .. "/status.lua"):gsub("\nreturn status%s*$",
      "\nfunction status.compute() error('boom') end\nreturn status\n"))
    local r = run({ "test", "--policy-dir", dir, "status/" })
    assert.equal(1, r.code)
    for line in r.stdout:gmatch("[^\n]+") do
      if line:match("^FAIL status/") then assert.matches("status%.lua:%d+: boom$", line) end
    end
    assert.truthy(r.stdout:find("FAIL status/", 1, true), r.stdout)
    os.execute("rm -rf " .. fx.quote(dir))
  end)

  it("writes a case's expected.yaml with --update, which then passes", function()
    local dir = policy_copy()
    local case = dir .. "/testdata/defaults/wordcount"
    os.remove(case .. "/expected.yaml")
    local r = run({ "test", "--policy-dir", dir, "defaults/wordcount" })
    assert.equal(1, r.code)
    assert.equal("FAIL defaults/wordcount: no expected.yaml (write it with --update defaults/wordcount)\n"
      .. "0 passed, 1 failed\n", r.stdout)
    r = run({ "test", "--policy-dir", dir, "--update", "defaults/wordcount", "defaults/wordcount" })
    assert.equal(0, r.code, r.stdout)
    assert.equal("updated " .. case .. "/expected.yaml\n1 passed, 0 failed\n", r.stdout)
    r = run({ "test", "--policy-dir", dir, "defaults/wordcount" })
    assert.equal("ok defaults/wordcount\n1 passed, 0 failed\n", r.stdout)
    r = run({ "test", "--policy-dir", dir, "--update", "defaults/nope" })
    assert.equal(1, r.code)
    assert.truthy(r.stdout:find("FAIL --update defaults/nope: no such case", 1, true), r.stdout)
    os.execute("rm -rf " .. fx.quote(dir))
  end)
end)

describe("flink-controller reconcile --snapshot #bin", function()
  local lyaml = require("lyaml")
  local cjson = require("cjson")
  local function snapshot(path)
    local c = lyaml.load(fx.read(ROOT .. "/deploy/examples/wordcount.yaml"))
    c.metadata.namespace, c.metadata.uid, c.metadata.generation = "default", "u-1", 1
    fx.write(path, cjson.encode({ cluster = c, children = {}, flink = {}, now = 1764484800 }))
  end

  it("replays a pass offline: a new cluster's children, in apply order, and its status", function()
    local f = os.tmpname()
    snapshot(f)
    local r = run({ "reconcile", "--snapshot", f })
    local short = run({ "reconcile", "-f", f })
    os.remove(f)
    assert.equal(0, r.code, r.stderr)
    assert.equal(r.stdout, short.stdout) -- -f is --snapshot
    local out = lyaml.load(r.stdout)
    local ops = {}
    for _, a in ipairs(out.actions) do ops[#ops + 1] = a.op .. " " .. a.object.kind .. " " .. a.object.metadata.name end
    assert.same({ "apply ConfigMap wordcount-configmap", "apply StatefulSet wordcount-jobmanager",
      "apply Service wordcount-jobmanager", "apply StatefulSet wordcount-taskmanager" }, { table.unpack(ops, 1, 4) })
    assert.equal("Creating", out.status.state)
  end)

  it("refuses what is not a snapshot (exit 1, the reason on stderr)", function()
    local f = os.tmpname()
    fx.write(f, "{}")
    local r = run({ "reconcile", "--snapshot", f })
    os.remove(f)
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
    assert.equal(f .. ": expected one snapshot: a mapping with `cluster` (and children, flink, now)\n", r.stderr)
  end)
end)
