-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/taskmanager.lua: the fixtures in policies/testdata/taskmanager/<case>/, run on
-- the policy in the production sandbox, and its place in cluster.lua: the StatefulSet's template
-- and every Native TaskManager pod come from pod_template.
local fx = require("support.fixtures")
local lyaml = require("lyaml")

describe("policies/taskmanager.lua", function()
  local sandboxed = fx.sandboxed("taskmanager")

  describe("fixtures", function()
    local all = fx.cases("taskmanager")
    it("has the cases", function()
      fx.assert_cases(all, { "session-full", "wordcount" })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("taskmanager", sandboxed, case))
      end)
    end
  end)

  it("is the template of cluster.desired's TaskManager StatefulSet and of a Native pod", function()
    local defaults, cluster = fx.sandboxed("defaults"), fx.sandboxed("cluster")
    local c = defaults.apply(lyaml.load(fx.read(fx.ROOT .. "/policies/testdata/cluster/wordcount/input.yaml")))
    local sts
    for _, o in ipairs(cluster.desired({ cluster = c }).objects) do
      if o.kind == "StatefulSet" and o.metadata.name == "wordcount-taskmanager" then sts = o end
    end
    local hash = sts.spec.template.metadata.annotations["flinkoperator.k8s.io/config-hash"]
    assert.equal(16, #hash)
    assert.same(sts.spec.template, sandboxed.pod_template({ cluster = c, config_hash = hash }).template)
    local pod = cluster.taskmanager_pod({ cluster = c, slots = 2,
      resource = { cpu_cores = 0.5, memory_mib = 512, extended = {} } }).object
    assert.same(sts.spec.template.metadata.labels, pod.metadata.labels)
    assert.equal("Never", pod.spec.restartPolicy)
    assert.same({ "taskmanager", "-Dtaskmanager.resource-id=$(FLINK_POD_NAME)", "-Dtaskmanager.numberOfTaskSlots=2" },
      pod.spec.containers[1].args)
    assert.same(sts.spec.template.spec.containers[1].ports, pod.spec.containers[1].ports)
  end)
end)
