-- SPDX-License-Identifier: Apache-2.0
-- The policy cookbook (docs/policies.md, docs/cookbook/): each recipe is a patch to one policy
-- and a fixture case. Each patch applies exactly (no fuzz) to a copy of policies/, its case
-- passes there with `flink-controller test` (the production sandbox) and fails on the unpatched policies (so the
-- fixture tests the recipe), and docs/policies.md shows the patch exactly (#bin).
local fx = require("support.fixtures")

local ROOT = fx.ROOT
local COOKBOOK = ROOT .. "/docs/cookbook"
local run = fx.run_bin

-- recipe names: docs/cookbook/<name>.patch, sorted
local function recipes()
  local out = {}
  local p = assert(io.popen("cd " .. fx.quote(COOKBOOK) .. " && ls *.patch"))
  for f in p:lines() do out[#out + 1] = f:match("^(.+)%.patch$") end
  p:close()
  table.sort(out)
  return out
end

-- the policy whose testdata holds case cookbook-<name>, or nil
local function policy_of(name)
  for _, pol in ipairs(fx.subdirs(COOKBOOK .. "/testdata")) do
    if fx.is_dir(COOKBOOK .. "/testdata/" .. pol .. "/cookbook-" .. name) then return pol end
  end
  return nil
end

-- a copy of policies/ with the recipe's case in its testdata (patched when `patched`)
local function copy(name, policy, patched)
  local dir = fx.tmpdir()
  assert(os.execute("cp -r " .. fx.quote(ROOT .. "/policies") .. "/. " .. fx.quote(dir)))
  assert(os.execute("cp -r " .. fx.quote(COOKBOOK .. "/testdata/" .. policy .. "/cookbook-" .. name) .. " "
    .. fx.quote(dir .. "/testdata/" .. policy .. "/")))
  if patched then
    assert(os.execute("patch -s --fuzz=0 --no-backup-if-mismatch -p1 -d " .. fx.quote(dir) .. " < "
      .. fx.quote(COOKBOOK .. "/" .. name .. ".patch")),
      name .. ".patch does not apply to policies/")
  end
  return dir
end

describe("the policy cookbook #bin", function()
  local all = recipes()
  local doc = fx.read(ROOT .. "/docs/policies.md")

  it("has the seven recipes, each with one fixture case", function()
    assert.same({ "labels", "registry", "remove-annotation", "restart", "savepoints", "sidecar", "tm-template" }, all)
    for _, name in ipairs(all) do assert.is_truthy(policy_of(name), "no case for " .. name) end
  end)

  for _, name in ipairs(all) do
    it(name .. ": the patch applies, its case passes, and fails without it; the doc shows it", function()
      local policy = assert(policy_of(name))
      local case = policy .. "/cookbook-" .. name
      local dir = copy(name, policy, true)
      local r = run({ "test", "--policy-dir", dir, case })
      os.execute("rm -rf " .. fx.quote(dir))
      assert.equal(0, r.code, r.stdout .. r.stderr)
      assert.equal("ok " .. case .. "\n1 passed, 0 failed\n", r.stdout)
      dir = copy(name, policy, false)
      r = run({ "test", "--policy-dir", dir, case })
      os.execute("rm -rf " .. fx.quote(dir))
      assert.equal(1, r.code, "the fixture passes without the recipe: " .. r.stdout)
      local text = fx.read(COOKBOOK .. "/" .. name .. ".patch"):gsub("\n+$", "")
      assert.is_truthy(doc:find("```diff\n" .. text .. "\n```", 1, true), "docs/policies.md does not show " .. name)
    end)
  end
end)
