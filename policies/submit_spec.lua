-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/submit.lua: the fixtures in policies/testdata/submit/<case>/ (input.yaml:
-- `hook` and its `input`), run on the policy in the production sandbox, and its limits in
-- fc.restsubmit's shape.
local fx = require("support.fixtures")

describe("policies/submit.lua", function()
  local sandboxed = fx.sandboxed("submit")
  local submit = require("submit")

  describe("fixtures", function()
    local all = fx.cases("submit")
    it("has the cases", function()
      fx.assert_cases(all, { "method-job-gcs", "method-job-local", "method-rest-http", "method-rest-https" })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("submit", sandboxed, case))
      end)
    end
  end)

  it("a spec without a jar string goes to the submitter Job", function()
    assert.same({ method = "job" }, sandboxed.method({ job = {} }))
    assert.same({ method = "job" }, sandboxed.method({ job = { jarFile = "ftp://host/app.jar" } }))
  end)

  it("gives fc.restsubmit its limits: 1 GiB, 120 s, 180 s", function()
    assert.same({ jar_max_bytes = 1073741824, jar_timeout_seconds = 120, retry_seconds = 180 }, submit.limits())
    assert.equal(300, submit.REASON_MAX)
  end)
end)
