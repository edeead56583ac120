-- SPDX-License-Identifier: Apache-2.0
-- deploy/monitoring (docs/alerts.md): the Grafana dashboard (written by
-- scripts/monitoring-dashboard.lua), the PrometheusRule's alerts (`promtool check rules` and
-- `promtool test rules` with deploy/monitoring/tests/rules_test.yaml, promtool from Debian's
-- prometheus package, `make deps`), the metrics Service and ServiceMonitor as kustomize renders
-- them, and that every metric the dashboard and the alerts query is one the controller
-- registers: the string literals flink_controller_* and process_* of core/*.c, with a
-- histogram's _bucket, _sum and _count, and Prometheus's own `up`.
local cjson = require("cjson")
local lyaml = require("lyaml")
local lfs = require("lfs")

local fx = require("support.fixtures")
local mf = require("support.manifests")

local ROOT = fx.ROOT
local DIR = "deploy/monitoring"
local JOB = 'job="flink-controller-metrics"'
local ALERTS = { "FlinkControllerDown", "FlinkControllerNotReconciling", "FlinkJobFailing", "FlinkRESTErrors",
  "FlinkSavepointFailures", "FlinkSavepointTooOld" }

-- the metric names registered in core/*.c: string literals that are a whole name
local function registered()
  local names = {}
  for f in lfs.dir(fx.path("core")) do
    if f:match("%.c$") then
      local src = fx.read(fx.path("core/" .. f))
      for lit in src:gmatch('"([%w_]+)"') do
        if lit:match("^flink_controller_[a-z_]+$") or lit:match("^process_[a-z_]+$") then names[lit] = true end
      end
    end
  end
  return names
end

-- PromQL words that are not metric names
local KEYWORDS = { by = true, without = true, on = true, ignoring = true, group_left = true, group_right = true,
  ["and"] = true, ["or"] = true, unless = true, offset = true, bool = true, inf = true, nan = true }

-- metrics(expr): the metric names an expression selects, sorted: what is left of its words once
-- strings, label matchers, ranges, grouping clauses, function calls and numbers are taken out
local function metrics(expr)
  local e = expr:gsub('"[^"]*"', ""):gsub("%b{}", ""):gsub("%b[]", "")
  -- grouping clauses (`by (a, b)`) out, at every depth of the calls
  local function ungroup(s)
    return (s:gsub("([%a_][%w_]*)(%s*)(%b())", function(word, space, args)
      if KEYWORDS[word] then return " " end
      return word .. space .. "(" .. ungroup(args:sub(2, -2)) .. ")"
    end))
  end
  e = ungroup(e)
  local seen, out = {}, {}
  for pos, word in e:gmatch("()([%a_:][%w_:]*)") do
    local before = pos > 1 and e:sub(pos - 1, pos - 1) or ""
    local call = e:match("^%s*%(", pos + #word)
    if not call and not KEYWORDS[word:lower()] and not before:match("[%d.]") and not seen[word] then
      seen[word] = true
      out[#out + 1] = word
    end
  end
  table.sort(out)
  return out
end

-- the names of `used` that the controller does not export, sorted
local function unknown(used, known)
  local out = {}
  for name in pairs(used) do
    local base = name:gsub("_bucket$", ""):gsub("_sum$", ""):gsub("_count$", "")
    if name ~= "up" and not known[name] and not known[base] then out[#out + 1] = name end
  end
  table.sort(out)
  return out
end

local function rule_doc() return mf.docs(DIR .. "/prometheusrule.yaml")[1] end

local function each_rule(doc, fn)
  for _, g in ipairs(doc.spec.groups) do
    for _, r in ipairs(g.rules) do fn(r, g) end
  end
end

local function panels(d)
  local out = {}
  for _, p in ipairs(d.panels) do
    if p.type ~= "row" then out[#out + 1] = p end
  end
  return out
end

describe("the metric names of an expression", function()
  it("are its selectors, not its functions, labels, keywords or numbers", function()
    assert.are.same({ "a_total", "b_seconds_bucket", "c" }, metrics(
      'sum by (namespace, le) (rate(a_total{job="x", state=~"Failed|Lost"}[5m])) / on () group_left '
      .. 'histogram_quantile(0.95, b_seconds_bucket[$__rate_interval]) > 24 * 3600 and c unless vector(1e3)'))
    assert.are.same({ "up" }, metrics('absent(up{job="flink-controller-metrics"} == 1)'))
  end)

  it("found in core/*.c include the controller's families and no others", function()
    local known = registered()
    assert.is_true(known.flink_controller_reconcile_total)
    assert.is_true(known.flink_controller_reconcile_duration_seconds)
    assert.is_true(known.flink_controller_metrics_dropped_total)
    assert.is_nil(known.flink_controller_no_such_metric)
    assert.are.same({ "flink_controller_no_such_metric" }, unknown({ up = true,
      flink_controller_reconcile_duration_seconds_bucket = true, flink_controller_no_such_metric = true }, known))
  end)
end)

describe("deploy/monitoring/dashboard.json", function()
  local text = fx.read(fx.path(DIR .. "/dashboard.json"))
  local d = cjson.decode(text)

  it("is what scripts/monitoring-dashboard.lua writes (make monitoring)", function()
    local p = assert(io.popen("cd " .. fx.quote(ROOT) .. " && lua5.4 scripts/monitoring-dashboard.lua"))
    local out = p:read("a")
    assert.is_true(p:close())
    assert.is_true(out == text,
      "deploy/monitoring/dashboard.json differs from the script's output: run `make monitoring`")
  end)

  it("has a recent schema, the datasource, job and namespace variables, and unique panel ids", function()
    assert.are.equal("flink-controller", d.uid)
    assert.is_true(d.schemaVersion >= 36, "schemaVersion " .. d.schemaVersion)
    local vars = {}
    for _, v in ipairs(d.templating.list) do vars[v.name] = v end
    assert.are.equal("datasource", vars.datasource.type)
    assert.are.equal("prometheus", vars.datasource.query)
    assert.are.equal("label_values(flink_controller_build_info, job)", vars.job.definition)
    assert.are.equal('label_values(flink_controller_clusters{job=~"$job"}, namespace)', vars.namespace.definition)
    assert.is_true(vars.namespace.multi)
    local ids = {}
    for _, p in ipairs(d.panels) do
      assert.is_nil(ids[p.id], "panel id " .. p.id .. " twice")
      ids[p.id] = true
      assert.is_true(p.gridPos.x >= 0 and p.gridPos.x + p.gridPos.w <= 24, p.title .. ": outside the 24 columns")
    end
  end)

  it("has the panels of issue #31, each querying the datasource variable with a filtered expression", function()
    local titles = {}
    for _, p in ipairs(panels(d)) do
      titles[#titles + 1] = p.title
      assert.are.same({ type = "prometheus", uid = "${datasource}" }, p.datasource, p.title)
      assert.is_true(#p.targets > 0, p.title .. ": no query")
      for _, t in ipairs(p.targets) do
        assert.is_true(type(t.expr) == "string" and #metrics(t.expr) > 0, p.title .. ": no metric in its query")
        assert.matches('job=~"$job"', t.expr, 1, true, p.title)
        if t.expr:match("flink_controller_clusters") or t.expr:match("flink_controller_job") then
          assert.matches('namespace=~"$namespace"', t.expr, 1, true, p.title)
        end
      end
    end
    assert.are.same({ "Clusters by state", "Jobs by state", "Job restarts (top 10 clusters)",
      "Job restarts in the last hour (top 10 clusters)", "Last savepoint age", "Savepoint and stop failures",
      "Flink REST requests by path and code", "Flink REST latency p95 by path", "Webhook admissions by result",
      "Reconciles by result", "Reconcile errors", "Reconcile duration p95", "Work queue depth", "Leader",
      "Resident memory", "CPU", "Build" }, titles)
  end)

  it("has queries that parse as PromQL (promtool check rules, Grafana's variables filled in)", function()
    assert(mf.sh("command -v promtool") ~= "",
      "no promtool: `make deps` installs Debian's prometheus package, which has it")
    local rules = {}
    for _, p in ipairs(panels(d)) do
      for _, t in ipairs(p.targets) do
        local expr = t.expr:gsub("%$__rate_interval", "5m"):gsub("%$job", ".*"):gsub("%$namespace", ".*")
        rules[#rules + 1] = { record = string.format("dashboard:panel_%d:%s", p.id, t.refId:lower()), expr = expr }
      end
    end
    local work = fx.tmpdir()
    fx.write(work .. "/dashboard.yaml", lyaml.dump({ { groups = { { name = "dashboard", rules = rules } } } }))
    local out, ok = mf.sh("promtool check rules " .. fx.quote(work .. "/dashboard.yaml"))
    os.execute("rm -rf " .. fx.quote(work))
    assert(ok, out)
    assert.matches("SUCCESS: " .. #rules .. " rules found", out, 1, true)
  end)

  it("queries only metrics the controller exports", function()
    local used = {}
    for _, p in ipairs(panels(d)) do
      for _, t in ipairs(p.targets) do
        for _, m in ipairs(metrics(t.expr)) do used[m] = true end
      end
    end
    for _, v in ipairs(d.templating.list) do
      if v.definition then
        for _, m in ipairs(metrics(v.definition:gsub("^label_values%((.*),%s*[%w_]+%)$", "%1"))) do used[m] = true end
      end
    end
    assert.is_true(used.flink_controller_job_last_savepoint_timestamp_seconds)
    local missing = unknown(used, registered())
    assert.are.same({}, missing, "not registered in core/*.c: " .. table.concat(missing, " "))
  end)
end)

describe("deploy/monitoring/prometheusrule.yaml", function()
  local doc = rule_doc()

  it("alerts by the names of issue #31, each with a severity, a summary, a description and its runbook", function()
    local names, seen = {}, {}
    local anchors = {}
    for l in fx.read(fx.path("docs/alerts.md")):gmatch("[^\n]+") do
      local h = l:match("^###? (.+)$")
      if h then anchors[h:lower():gsub("[^%w%- ]", ""):gsub(" ", "-")] = true end
    end
    each_rule(doc, function(r)
      if not seen[r.alert] then names[#names + 1] = r.alert end
      seen[r.alert] = true
      assert.is_truthy(({ critical = true, warning = true })[r.labels.severity], r.alert)
      assert.is_true(#r.annotations.summary > 0 and #r.annotations.description > 0, r.alert)
      assert.are.equal("docs/alerts.md#" .. r.alert:lower(), r.annotations.runbook)
      assert.is_true(anchors[r.alert:lower()], r.alert .. ": no section in docs/alerts.md")
      assert.matches(JOB, r.expr, 1, true, r.alert)
    end)
    table.sort(names)
    assert.are.same(ALERTS, names)
  end)

  it("queries only metrics the controller exports", function()
    local used = {}
    each_rule(doc, function(r)
      for _, m in ipairs(metrics(r.expr)) do used[m] = true end
    end)
    assert.is_true(used.up)
    local missing = unknown(used, registered())
    assert.are.same({}, missing, "not registered in core/*.c: " .. table.concat(missing, " "))
  end)

  -- promtool(args, tests): promtool's output and success, run with ARGS in a scratch directory
  -- that holds the rule's groups as rules.yaml and the unit tests `tests` (a text) as rules_test.yaml
  local function promtool(args, tests)
    assert(mf.sh("command -v promtool") ~= "",
      "no promtool: `make deps` installs Debian's prometheus package, which has it")
    local work = fx.tmpdir()
    fx.write(work .. "/rules.yaml", lyaml.dump({ { groups = doc.spec.groups } }))
    fx.write(work .. "/rules_test.yaml", tests)
    local out, ok = mf.sh("cd " .. fx.quote(work) .. " && promtool " .. args)
    os.execute("rm -rf " .. fx.quote(work))
    return out, ok
  end
  local TESTS = fx.read(fx.path(DIR .. "/tests/rules_test.yaml"))

  it("passes promtool check rules and the alert unit tests of deploy/monitoring/tests/rules_test.yaml", function()
    local out, ok = promtool("check rules rules.yaml", TESTS)
    assert(ok, out)
    assert.matches("SUCCESS: 9 rules found", out, 1, true)
    out, ok = promtool("test rules rules_test.yaml", TESTS)
    assert(ok, out)
    assert.matches("SUCCESS", out, 1, true)
    -- every alert has a case that fires it
    local fired = {}
    for _, t in ipairs(lyaml.load(TESTS).tests) do
      for _, a in ipairs(t.alert_rule_test) do
        if #(a.exp_alerts or {}) > 0 then fired[a.alertname] = true end
      end
    end
    for _, name in ipairs(ALERTS) do assert.is_true(fired[name], name .. " fires in no test") end
  end)

  it("a broken expectation fails promtool test rules (the unit tests can fail)", function()
    local broken = TESTS:gsub("summary: No flink%-controller replica is the leader", "summary: something else")
    assert.are_not.equal(TESTS, broken)
    local out, ok = promtool("test rules rules_test.yaml", broken)
    assert.is_false(ok)
    assert.matches("FlinkControllerNotReconciling", out, 1, true)
  end)
end)

describe("deploy/monitoring built by the pinned kubectl's kustomize", function()
  local kubectl, why = mf.tool("kubectl")
  if not kubectl then
    pending("no test environment kubectl (" .. tostring(why) .. ")")
    return
  end

  it("makes the metrics Service of the Deployment's pods, its ServiceMonitor, the rule and the dashboard", function()
    local out, ok = mf.sh(fx.quote(kubectl) .. " kustomize " .. fx.quote(fx.path(DIR)))
    assert(ok, out)
    local objs = mf.objects(out)
    assert.are.same({ "ConfigMap/flink-system/flink-controller-dashboard",
      "PrometheusRule/flink-system/flink-controller",
      "Service/flink-system/flink-controller-metrics", "ServiceMonitor/flink-system/flink-controller" }, mf.ids(objs))
    -- the dashboard, for Grafana's sidecar
    local cm = mf.find(objs, "ConfigMap", "flink-controller-dashboard")
    assert.are.equal("1", cm.metadata.labels.grafana_dashboard)
    assert.is_true(cm.data["flink-controller.json"] == fx.read(fx.path(DIR .. "/dashboard.json")))
    -- the Service selects the Deployment's pods and targets its metrics port
    local dep = mf.by_kind(mf.docs("deploy/deployment.yaml"), "Deployment")[1]
    local svc = mf.find(objs, "Service", "flink-controller-metrics")
    for k, v in pairs(svc.spec.selector) do assert.are.equal(v, dep.spec.template.metadata.labels[k], k) end
    local port = mf.container(dep, "controller").ports[1]
    assert.are.same({ name = "metrics", containerPort = 8080, protocol = "TCP" }, port)
    assert.are.same({ { name = "metrics", port = 8080, targetPort = "metrics", protocol = "TCP" } }, svc.spec.ports)
    -- the ServiceMonitor selects that Service and keeps the series' namespace label
    local sm = mf.find(objs, "ServiceMonitor", "flink-controller")
    for k, v in pairs(sm.spec.selector.matchLabels) do assert.are.equal(v, svc.metadata.labels[k], k) end
    assert.are.same({ matchNames = { "flink-system" } }, sm.spec.namespaceSelector)
    assert.are.same({ { port = "metrics", path = "/metrics", interval = "30s", honorLabels = true } },
      sm.spec.endpoints)
    -- the rule as the file has it
    assert.are.same(rule_doc(), mf.find(objs, "PrometheusRule", "flink-controller"))
  end)
end)

describe("the Helm chart's copies of deploy/monitoring", function()
  it("are its dashboard and alerts byte for byte (make monitoring)", function()
    for _, f in ipairs({ "dashboard.json", "prometheusrule.yaml" }) do
      assert.is_true(fx.read(fx.path(DIR .. "/" .. f)) == fx.read(fx.path("deploy/helm/flink-controller/files/" .. f)),
        "deploy/helm/flink-controller/files/" .. f .. " differs from " .. DIR .. "/" .. f .. ": run `make monitoring`")
    end
  end)
end)
