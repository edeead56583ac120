-- SPDX-License-Identifier: Apache-2.0
-- The fixtures walker: every policy (policies/*.lua, not *_spec.lua, not lib/) must have
-- its spec beside it (policies/<policy>_spec.lua) and at least one fixture case directory
-- (policies/testdata/<policy>/<case>/). Files under policies/lib/ are helpers, not policies.
local lfs = require("lfs")
local fx = require("support.fixtures")

local ROOT = fx.ROOT
local is_file, write = fx.is_file, fx.write

-- Policies of a policy directory `dir`: names of dir/*.lua files that are not specs.
-- Subdirectories (lib/, testdata/) are not walked: their files are not policies.
local function policies_in(dir)
  local out = {}
  for entry in lfs.dir(dir) do
    local name = entry:match("^(.+)%.lua$")
    if name and not name:match("_spec$") and is_file(dir .. "/" .. entry) then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

-- Problems of policy directory `dir`, one string per missing piece, sorted.
local function problems(dir)
  local out = {}
  for _, p in ipairs(policies_in(dir)) do
    if not is_file(dir .. "/" .. p .. "_spec.lua") then
      out[#out + 1] = p .. ": no " .. p .. "_spec.lua"
    end
    -- the same walk as the policy specs' (support.fixtures.cases)
    if #fx.subdirs(dir .. "/testdata/" .. p) == 0 then
      out[#out + 1] = p .. ": no case directory in testdata/" .. p .. "/"
    end
  end
  return out
end

describe("policy fixtures", function()
  it("every policy in policies/ has a spec and a testdata case; lib/ holds helpers", function()
    local dir = ROOT .. "/policies"
    local found = policies_in(dir)
    local set = {}
    for _, p in ipairs(found) do set[p] = true end
    -- the walk sees the policies (so it cannot pass by finding nothing) and no helper
    assert.is_true(set.defaults and set.validate, "policies found: " .. table.concat(found, ", "))
    assert.are.same({}, problems(dir))
  end)

  it("fails a policy without spec or cases, and ignores lib/ files", function()
    local tmp = os.tmpname()
    os.remove(tmp)
    assert(lfs.mkdir(tmp))
    local paths = { tmp .. "/lib", tmp .. "/testdata", tmp .. "/testdata/good", tmp .. "/testdata/good/case1",
                    tmp .. "/testdata/nocases" }
    for _, d in ipairs(paths) do assert(lfs.mkdir(d)) end
    write(tmp .. "/good.lua", "return {}\n")
    write(tmp .. "/good_spec.lua", "\n")
    write(tmp .. "/nospec.lua", "return {}\n")
    write(tmp .. "/nocases.lua", "return {}\n")
    write(tmp .. "/nocases_spec.lua", "\n")
    write(tmp .. "/lib/helper.lua", "return {}\n")
    local got = problems(tmp)
    assert.are.same({ "good", "nocases", "nospec" }, policies_in(tmp))
    assert.are.same({
      "nocases: no case directory in testdata/nocases/",
      "nospec: no nospec_spec.lua",
      "nospec: no case directory in testdata/nospec/",
    }, got)
    for _, f in ipairs({ "good.lua", "good_spec.lua", "nospec.lua", "nocases.lua", "nocases_spec.lua",
                         "lib/helper.lua" }) do
      os.remove(tmp .. "/" .. f)
    end
    for i = #paths, 1, -1 do lfs.rmdir(paths[i]) end
    lfs.rmdir(tmp)
  end)
end)
