-- SPDX-License-Identifier: Apache-2.0
-- fc.names (lua/fc/names.lua), the one place of the labels the controller finds a FlinkCluster's
-- children by (issue #32): renamed there, the selector the core watches with (names.watch(),
-- read by core/run.c at start; names.selector(n), core/livediff.c), the labels of every child
-- the policies render (lib.names takes them from fc.names), the framework's own
-- ControllerRevisions (fc.revision) and its reading of Native TaskManager pods
-- (fc.taskmanagers) all follow. The controller itself with renamed labels on a cluster:
-- integration case labelrename.
local cjson = require("cjson")
local fx = require("support.fixtures")
local names = require("fc.names")
local lib_names = require("lib.names")
local revision = require("fc.revision")
local taskmanagers = require("fc.taskmanagers")

-- the renamed labels of these specs (keys with a prefix, another app value)
local RENAMED = { APP_LABEL = "example.com/app", APP = "flink-x", CLUSTER_LABEL = "example.com/cluster",
  COMPONENT_LABEL = "example.com/component" }
local ORIGINAL = {}
for k in pairs(RENAMED) do ORIGINAL[k] = names[k] end

local function cluster(name)
  return { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
    metadata = { name = name, namespace = "ns", uid = "u-1" }, spec = { image = { name = "flink:1.8.1" } } }
end

describe("fc.names", function()
  it("declares the labels the objects carry today: app=flink, cluster=<name>, component", function()
    assert.same({ selector = "app=flink,cluster", app_label = "app", app = "flink", cluster_label = "cluster" },
      names.watch())
    assert.equal("app=flink,cluster=wc", names.selector("wc"))
    assert.same({ app = "flink", cluster = "wc" }, names.cluster_labels("wc"))
    assert.same({ app = "flink", cluster = "wc", component = "jobmanager" }, names.component_labels("wc", "jobmanager"))
    assert.equal("FlinkCluster", lib_names.OWNER_KIND)
    assert.equal(names.OWNER_API_VERSION, lib_names.OWNER_API_VERSION)
  end)

  it("owned: the cluster name of labels the selector matches, else nil", function()
    assert.equal("wc", names.owned({ app = "flink", cluster = "wc", component = "jobmanager" }))
    assert.is_nil(names.owned({ app = "other", cluster = "wc" }))
    assert.is_nil(names.owned({ app = "flink" }))
    assert.is_nil(names.owned({ cluster = "wc" }))
    assert.is_nil(names.owned(nil))
  end)

  describe("renamed in place", function()
    before_each(function() for k, v in pairs(RENAMED) do names[k] = v end end)
    after_each(function() for k, v in pairs(ORIGINAL) do names[k] = v end end)

    it("gives the core the renamed selector and keys", function()
      assert.same({ selector = "example.com/app=flink-x,example.com/cluster", app_label = "example.com/app",
        app = "flink-x", cluster_label = "example.com/cluster" }, names.watch())
      assert.equal("example.com/app=flink-x,example.com/cluster=wc", names.selector("wc"))
      assert.equal("wc", names.owned({ ["example.com/app"] = "flink-x", ["example.com/cluster"] = "wc" }))
      assert.is_nil(names.owned({ app = "flink", cluster = "wc" }))
    end)

    it("labels the policies' children through lib.names", function()
      assert.same({ ["example.com/app"] = "flink-x", ["example.com/cluster"] = "wc",
        ["example.com/component"] = "taskmanager" }, lib_names.component_labels("wc", "taskmanager"))
      assert.same({ ["example.com/app"] = "flink-x", ["example.com/cluster"] = "wc" }, lib_names.cluster_labels("wc"))
    end)

    it("labels the framework's ControllerRevisions", function()
      local cr = revision.object(cluster("wc"), 1)
      assert.same({ ["example.com/app"] = "flink-x", ["example.com/cluster"] = "wc" }, cr.metadata.labels)
      assert.equal("FlinkCluster", cr.metadata.ownerReferences[1].kind)
    end)

    it("finds the Native TaskManager pods by the renamed component label", function()
      local function pod(labels) return { metadata = { labels = labels } } end
      local children = { Pod = {
        ["wc-taskmanager-1"] = pod({ ["example.com/component"] = "taskmanager", priority = "0" }),
        ["wc-taskmanager-2"] = pod({ component = "taskmanager", priority = "0" }),
      } }
      assert.same({ "wc-taskmanager-1" }, taskmanagers.leftovers(children))
    end)
  end)
end)

-- Runs the binary with FLINK_CONTROLLER_HOME = `home`; {code=, stdout=}.
local function run_home(home, args)
  local q = {}
  for i, a in ipairs(args) do q[i] = fx.quote(a) end
  local out = os.tmpname()
  local cmd = string.format("FLINK_CONTROLLER_HOME=%s timeout 20 %s %s >%s 2>&1", fx.quote(home), fx.quote(fx.BIN),
    table.concat(q, " "), out)
  local ok, _, code = os.execute(cmd)
  local res = { code = ok and 0 or code, stdout = fx.read(out) }
  os.remove(out)
  return res
end

describe("a data directory with lua/fc/names.lua renamed #bin", function()
  local home
  setup(function()
    home = fx.tmpdir()
    assert(os.execute("cp -r " .. fx.quote(fx.path("lua")) .. " " .. fx.quote(fx.path("policies")) .. " "
      .. fx.quote(home)))
    local path = home .. "/lua/fc/names.lua"
    local text = fx.read(path)
    for k, v in pairs(RENAMED) do
      local n
      text, n = text:gsub('\nnames%.' .. k .. ' = "[^"\n]*"\n', '\nnames.' .. k .. ' = "' .. v .. '"\n')
      assert.equal(1, n, k)
    end
    fx.write(path, text)
  end)
  teardown(function() os.execute("rm -rf " .. fx.quote(home)) end)

  it("hands the core the renamed selector (what core/run.c watches with)", function()
    local patched = dofile(home .. "/lua/fc/names.lua")
    assert.equal("example.com/app=flink-x,example.com/cluster", patched.watch().selector)
    assert.equal("example.com/cluster", patched.watch().cluster_label)
  end)

  for _, example in ipairs({ "wordcount", "native-gpu-session" }) do
    it("renders every child of " .. example .. " with the renamed labels only", function()
      local r = run_home(home, { "render", "-f", fx.path("deploy/examples/" .. example .. ".yaml"), "-o", "json" })
      assert.equal(0, r.code, r.stdout)
      local items = cjson.decode(r.stdout).items
      assert.is_true(#items >= 4, r.stdout)
      for _, o in ipairs(items) do
        local what = o.kind .. " " .. o.metadata.name
        local l = o.metadata.labels
        assert.equal("flink-x", l["example.com/app"], what)
        assert.is_string(l["example.com/cluster"], what)
        assert.is_nil(l.app, what)
        assert.is_nil(l.cluster, what)
        assert.is_nil(l.component, what)
        local sel = o.kind == "StatefulSet" and o.spec.selector.matchLabels or o.kind == "Service" and o.spec.selector
        if sel then
          assert.equal(l["example.com/component"], sel["example.com/component"], what)
          assert.equal(l["example.com/cluster"], sel["example.com/cluster"], what)
          assert.is_nil(sel.component, what)
        end
        if o.kind == "Pod" then assert.equal("taskmanager", l["example.com/component"], what) end
      end
    end)
  end
end)
