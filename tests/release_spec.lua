-- SPDX-License-Identifier: Apache-2.0
-- A release's metadata: the licence, the one release number (VERSION) that the chart, the
-- Deployment and the changelog repeat, and the SPDX line of every source file.
local lyaml = require("lyaml")
local fx = require("support.fixtures")

local function read(path) return fx.read(fx.path(path)) end

local RELEASE = read("VERSION"):match("^(%d+%.%d+%.%d+)\n$")

describe("release metadata", function()
  it("VERSION holds one MAJOR.MINOR.PATCH", function()
    assert.is_not_nil(RELEASE, "VERSION: " .. read("VERSION"))
  end)

  it("LICENSE is the Apache License 2.0", function()
    local text = read("LICENSE")
    assert.is_not_nil(text:find("Apache License\n%s+Version 2%.0, January 2004"))
    assert.is_not_nil(text:find("END OF TERMS AND CONDITIONS", 1, true))
  end)

  it("the chart's version and appVersion, the Deployment's image and the changelog name the release", function()
    local chart = lyaml.load(read("deploy/helm/flink-controller/Chart.yaml"))
    assert.are.equal(RELEASE, chart.version)
    assert.are.equal(RELEASE, chart.appVersion)
    local dep = lyaml.load(read("deploy/deployment.yaml"))
    assert.are.equal("flink-controller:" .. RELEASE, dep.spec.template.spec.containers[1].image)
    assert.is_not_nil(read("CHANGELOG.md"):find("\n## %[" .. RELEASE:gsub("%.", "%%.") .. "%]\n"))
  end)

  it("every source file of the product and its tests carries the SPDX line", function()
    local p = assert(io.popen("cd " .. fx.ROOT .. " && git ls-files core lua policies scripts bench tests "
      .. "deploy/argocd Makefile Dockerfile .ci/run 2>/dev/null"))
    local missing, checked = {}, 0
    for f in p:lines() do
      local base = f:match("[^/]+$")
      local source = f:match("%.[ch]$") or f:match("%.lua$") or f:match("%.sh$") or f:match("%.py$")
        or base == "Makefile" or base == "Dockerfile" or f == ".ci/run" or f == "bench/converge"
      if source and not f:find("/testdata/", 1, true) then
        checked = checked + 1
        local head = read(f):sub(1, 200)
        if not head:find("SPDX%-License%-Identifier: Apache%-2%.0") then missing[#missing + 1] = f end
      end
    end
    p:close()
    assert.is_true(checked > 150, "only " .. checked .. " files listed (not a git checkout?)")
    assert.are.same({}, missing)
  end)
end)
