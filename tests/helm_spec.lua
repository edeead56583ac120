-- SPDX-License-Identifier: Apache-2.0
-- The Helm chart deploy/helm/flink-controller: `helm lint` and `helm template` (the test
-- environment's pinned Helm, tests/env/build.sh helm) for the value sets of docs/install.md,
-- each compared with the objects deploy/ makes for the same setup.
local lyaml = require("lyaml")

local fx = require("support.fixtures")
local mf = require("support.manifests")

local ROOT = fx.ROOT
local CHART = ROOT .. "/deploy/helm/flink-controller"
local docs, by_kind, find, ids, grants, concat = mf.docs, mf.by_kind, mf.find, mf.ids, mf.grants, mf.concat

local RBAC = docs("deploy/rbac.yaml")
local BASE = by_kind(docs("deploy/deployment.yaml"), "Deployment")[1]
local BASE_C = BASE.spec.template.spec.containers[1]
local WEBHOOK = docs("deploy/webhook/webhook.yaml")
local WEBHOOK_OPS = lyaml.load(fx.read(fx.path("deploy/webhook/deployment-patch.yaml")))
local POLICY_OPS = lyaml.load(fx.read(fx.path("deploy/policy-override/deployment-patch.yaml")))

-- the values of a Component's JSON patch appended at `path` ("<list>/-")
local function appended(ops, path)
  local out = {}
  for _, op in ipairs(ops) do
    if op.op == "add" and op.path == path then out[#out + 1] = op.value end
  end
  return out
end
local ARGS = "/spec/template/spec/containers/0/args/-"

-- the chart's arguments before the optional ones: deploy/'s, then the log level
local CHART_ARGS = concat(BASE_C.args, { "--log-level", "info" })

local function meta_less(o)
  local c = {}
  for k, v in pairs(o) do c[k] = v end
  c.metadata = nil
  return c
end

describe("deploy/helm/flink-controller", function()
  it("has apiVersion v2, version and appVersion 0.2.0, and the CRD of deploy/crd.yaml byte for byte", function()
    local chart = lyaml.load(fx.read(CHART .. "/Chart.yaml"))
    assert.are.equal("v2", chart.apiVersion)
    assert.are.equal("flink-controller", chart.name)
    assert.are.equal("0.2.0", chart.version)
    assert.are.equal("0.2.0", chart.appVersion)
    assert.is_true(fx.read(fx.path("deploy/crd.yaml")) == fx.read(CHART .. "/crds/flinkclusters.yaml"),
      "crds/flinkclusters.yaml differs from deploy/crd.yaml: run `make crds`")
    local values = lyaml.load(fx.read(CHART .. "/values.yaml"))
    assert.are.equal("flink-controller", values.image.repository)
    assert.are.equal("", values.image.tag)
    assert.are.equal(2, values.replicaCount)
    assert.are.same({}, values.watchNamespaces)
    assert.are.equal("self", values.webhook.certificates)
    assert.is_false(values.webhook.enabled)
  end)
end)

describe("helm lint and helm template of the chart", function()
  local helm, why = mf.tool("helm")
  if not helm then
    pending("no test environment helm (" .. tostring(why) .. ")")
    return
  end
  local work = fx.tmpdir()
  -- Helm's own folders in the scratch directory, not the user's
  local HENV = string.format("HELM_CONFIG_HOME=%s/config HELM_CACHE_HOME=%s/cache HELM_DATA_HOME=%s/data ",
    work, work, work)
  local n = 0
  teardown(function() os.execute("rm -rf " .. fx.quote(work)) end)

  -- values_file(values): a file of those values (a Lua table), its path
  local function values_file(values)
    n = n + 1
    local f = work .. "/values-" .. n .. ".yaml"
    -- lyaml writes an empty table as a list
    fx.write(f, next(values) == nil and "{}\n" or lyaml.dump({ values }))
    return f
  end
  -- helm(cmd, values) -> output, ok
  local function run(cmd, values)
    return mf.sh(HENV .. fx.quote(helm) .. " " .. cmd .. " " .. fx.quote(CHART) .. " -f " ..
      fx.quote(values_file(values or {})))
  end
  -- template(values): the objects of the release flink-controller in flink-system, CRDs included
  local function template(values)
    local out, ok = run("template flink-controller --namespace flink-system --include-crds", values)
    assert(ok, out)
    return mf.objects(out)
  end
  local function controller(objs, kind)
    local d = find(objs, kind or "Deployment", "flink-controller", "flink-system")
    assert.is_not_nil(d, "no " .. (kind or "Deployment") .. " flink-system/flink-controller")
    return d, d.spec.template.spec, d.spec.template.spec.containers[1]
  end

  local SETS = {
    defaults = {},
    namespaces = { watchNamespaces = { "a", "b" } },
    ["webhook self"] = { webhook = { enabled = true } },
    ["webhook cert-manager"] = { webhook = { enabled = true, certificates = "cert-manager" } },
    serviceMonitor = { metrics = { serviceMonitor = { enabled = true } } },
    monitoring = { metrics = { serviceMonitor = { enabled = true }, prometheusRule = { enabled = true },
      dashboard = { enabled = true } } },
    policyOverride = { policyOverride = { configMap = "flink-controller-policies" } },
    shards = { shards = 3 },
    everything = { watchNamespaces = { "a" }, webhook = { enabled = true }, policyOverride = { configMap = "p" },
      metrics = { serviceMonitor = { enabled = true } } },
  }

  it("lints clean with every value set", function()
    local names = {}
    for name in pairs(SETS) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local out, ok = run("lint --strict", SETS[name])
      assert(ok, name .. ": " .. out)
      assert.matches("1 chart%(s%) linted, 0 chart%(s%) failed", out, 1, false, name)
    end
  end)

  it("defaults: deploy/'s objects and rules, the CRD, the image flink-controller:0.2.0", function()
    local objs = template()
    assert.are.same({ "ClusterRole/flink-controller", "ClusterRoleBinding/flink-controller",
      "CustomResourceDefinition/flinkclusters.flinkoperator.k8s.io",
      "CustomResourceDefinition/flinkjobs.flinkoperator.k8s.io", "Deployment/flink-system/flink-controller",
      "Role/flink-system/flink-controller-leader-election", "RoleBinding/flink-system/flink-controller-leader-election",
      "ServiceAccount/flink-system/flink-controller" }, ids(objs))
    -- the CRD as deploy/crd.yaml has it
    assert.are.same(fx.strip_null(docs("deploy/crd.yaml")[1]),
      fx.strip_null(by_kind(objs, "CustomResourceDefinition")[1]))
    -- deploy/rbac.yaml's rules, roles and bindings
    for _, kind in ipairs({ "ClusterRole", "Role" }) do
      local want, got = by_kind(RBAC, kind)[1], by_kind(objs, kind)[1]
      assert.are.equal(want.metadata.name, got.metadata.name)
      assert.are.same(grants(want.rules), grants(got.rules), kind)
    end
    for _, kind in ipairs({ "ClusterRoleBinding", "RoleBinding" }) do
      local want, got = by_kind(RBAC, kind)[1], by_kind(objs, kind)[1]
      assert.are.same(want.roleRef, got.roleRef, kind)
      assert.are.same(want.subjects, got.subjects, kind)
    end
    local d, pod, c = controller(objs)
    assert.are.equal(2, d.spec.replicas)
    assert.are.equal("flink-controller:0.2.0", c.image)
    assert.are.equal("IfNotPresent", c.imagePullPolicy)
    assert.are.same(CHART_ARGS, c.args)
    -- the container is deploy/'s but for the image and the log level
    local want = {}
    for k, v in pairs(BASE_C) do want[k] = v end
    want.image, want.args = c.image, c.args
    assert.are.same(want, c)
    local base_pod = BASE.spec.template.spec
    for _, k in ipairs({ "serviceAccountName", "securityContext", "terminationGracePeriodSeconds", "volumes" }) do
      assert.are.same(base_pod[k], pod[k], k)
    end
    -- replicas spread over nodes, the selector the pods' labels
    assert.are.equal("kubernetes.io/hostname", pod.affinity.podAntiAffinity
      .preferredDuringSchedulingIgnoredDuringExecution[1].podAffinityTerm.topologyKey)
    for k, v in pairs(d.spec.selector.matchLabels) do assert.are.equal(v, d.spec.template.metadata.labels[k], k) end
    assert.are.equal("flink-controller", d.spec.selector.matchLabels["app.kubernetes.io/name"])
  end)

  it("watchNamespaces [a, b]: deploy/namespaced's Role and RoleBinding in each, no cluster grant, --namespace each",
    function()
      local objs = template(SETS.namespaces)
      local ns_rbac = docs("deploy/namespaced/rbac.yaml")
      assert.is_nil(find(objs, "ClusterRole", "flink-controller"))
      assert.is_nil(find(objs, "ClusterRoleBinding", "flink-controller"))
      for _, ns in ipairs({ "a", "b" }) do
        local role, rb = find(objs, "Role", "flink-controller", ns), find(objs, "RoleBinding", "flink-controller", ns)
        assert.are.same(grants(by_kind(ns_rbac, "Role")[1].rules), grants(role.rules), ns)
        assert.are.same(by_kind(ns_rbac, "RoleBinding")[1].roleRef, rb.roleRef)
        assert.are.same(by_kind(ns_rbac, "RoleBinding")[1].subjects, rb.subjects)
      end
      -- the Lease's Role stays in the release namespace
      assert.is_not_nil(find(objs, "Role", "flink-controller-leader-election", "flink-system"))
      local _, _, c = controller(objs)
      assert.are.same(concat(CHART_ARGS, { "--namespace", "a", "--namespace", "b" }), c.args)
    end)

  it("webhook (certificates: self): the controller's certificate flags, its Secret and configurations' RBAC", function()
    local objs = template(SETS["webhook self"])
    local _, pod, c = controller(objs)
    -- deploy/webhook's flags
    assert.are.same(concat(CHART_ARGS, appended(WEBHOOK_OPS, ARGS)), c.args)
    assert.are.same(appended(WEBHOOK_OPS, "/spec/template/spec/containers/0/ports/-")[1], c.ports[3])
    -- no mounted files: the controller reads the Secret through the API
    assert.are.same(BASE.spec.template.spec.volumes, pod.volumes)
    assert.are.same({ "/secrets:create", "/secrets:get@flink-controller-webhook",
      "/secrets:patch@flink-controller-webhook", "/secrets:update@flink-controller-webhook" },
      grants(find(objs, "Role", "flink-controller-webhook", "flink-system").rules))
    assert.are.same({ "admissionregistration.k8s.io/mutatingwebhookconfigurations:get@flink-controller",
      "admissionregistration.k8s.io/mutatingwebhookconfigurations:patch@flink-controller",
      "admissionregistration.k8s.io/validatingwebhookconfigurations:get@flink-controller",
      "admissionregistration.k8s.io/validatingwebhookconfigurations:patch@flink-controller" },
      grants(find(objs, "ClusterRole", "flink-controller-webhook").rules))
    for _, kind in ipairs({ "RoleBinding", "ClusterRoleBinding" }) do
      local b = find(objs, kind, "flink-controller-webhook")
      assert.are.equal("flink-controller-webhook", b.roleRef.name)
      assert.are.same({ { kind = "ServiceAccount", name = "flink-controller", namespace = "flink-system" } },
        b.subjects)
    end
    assert.is_nil(find(objs, "Certificate", "flink-controller-webhook"))
    -- deploy/webhook/webhook.yaml's Service and configurations (the caBundle is the controller's)
    assert.are.same(by_kind(WEBHOOK, "Service")[1].spec.ports,
      find(objs, "Service", "flink-controller-webhook").spec.ports)
    for _, kind in ipairs({ "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration" }) do
      local want = by_kind(WEBHOOK, kind)[1].webhooks[1]
      local got = find(objs, kind, "flink-controller")
      assert.is_nil(got.metadata.annotations)
      assert.is_nil(got.webhooks[1].clientConfig.caBundle)
      want.clientConfig.caBundle = nil
      assert.are.same({ want }, got.webhooks, kind)
    end
  end)

  it("webhook (certificates: cert-manager): deploy/webhook-cert-manager's Issuers and Certificates, the CA injected",
    function()
      local objs = template(SETS["webhook cert-manager"])
      local self_objs = template(SETS["webhook self"])
      local _, pod, c = controller(objs)
      -- the same controller and RBAC as with certificates: self (with cert-manager's annotation it
      -- only reads the Secret), as deploy/webhook-cert-manager takes in deploy/webhook
      assert.are.same(concat(CHART_ARGS, appended(WEBHOOK_OPS, ARGS)), c.args)
      assert.are.same(BASE.spec.template.spec.volumes, pod.volumes)
      for _, id in ipairs({ { "Role", "flink-controller-webhook" }, { "ClusterRole", "flink-controller-webhook" } }) do
        assert.are.same(grants(find(self_objs, id[1], id[2]).rules), grants(find(objs, id[1], id[2]).rules), id[1])
      end
      -- cert-manager's objects: deploy/webhook-cert-manager/certificates.yaml's, names, namespace and spec
      local want = docs("deploy/webhook-cert-manager/certificates.yaml")
      assert.is_true(#want >= 2)
      for _, w in ipairs(want) do
        local got = find(objs, w.kind, w.metadata.name, w.metadata.namespace)
        assert.is_not_nil(got, w.kind .. "/" .. w.metadata.name)
        assert.are.equal(w.apiVersion, got.apiVersion)
        assert.are.same(w.spec, got.spec, w.kind .. "/" .. w.metadata.name)
      end
      assert.are.equal(#want, #by_kind(objs, "Issuer") + #by_kind(objs, "Certificate"))
      assert.are.equal("flink-controller-webhook",
        find(objs, "Certificate", "flink-controller-webhook", "flink-system").spec.secretName)
      -- deploy/webhook-cert-manager/inject-ca.yaml's annotation on both configurations
      local inject = lyaml.load(fx.read(fx.path("deploy/webhook-cert-manager/inject-ca.yaml")))[1].value
      assert.are.same({ ["cert-manager.io/inject-ca-from"] = "flink-system/flink-controller-webhook" }, inject)
      for _, kind in ipairs({ "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration" }) do
        assert.are.same(inject, find(objs, kind, "flink-controller").metadata.annotations, kind)
      end
      -- with certificates: self, none of it
      assert.is_nil(find(self_objs, "Certificate", "flink-controller-webhook"))
      assert.is_nil(find(self_objs, "ValidatingWebhookConfiguration", "flink-controller").metadata.annotations)
    end)

  it("webhook.certificates other than self or cert-manager is refused", function()
    local out, ok = run("template flink-controller --namespace flink-system",
      { webhook = { enabled = true, certificates = "vault" } })
    assert.is_false(ok)
    assert.matches("webhook.certificates: expected self or cert-manager, got vault", out, 1, true)
  end)

  it("serviceMonitor on: the metrics Service and a monitoring.coreos.com/v1 ServiceMonitor of it", function()
    local objs = template(SETS.serviceMonitor)
    local svc = find(objs, "Service", "flink-controller-metrics", "flink-system")
    assert.are.same({ { name = "metrics", port = 8080, targetPort = "metrics", protocol = "TCP" } }, svc.spec.ports)
    local _, _, c = controller(objs)
    assert.are.same({ name = "metrics", containerPort = 8080, protocol = "TCP" }, c.ports[1])
    local d = controller(objs)
    for k, v in pairs(svc.spec.selector) do assert.are.equal(v, d.spec.template.metadata.labels[k], k) end
    local sm = find(objs, "ServiceMonitor", "flink-controller", "flink-system")
    assert.are.equal("monitoring.coreos.com/v1", sm.apiVersion)
    assert.are.same({ { port = "metrics", path = "/metrics", interval = "30s", honorLabels = true } },
      sm.spec.endpoints)
    for k, v in pairs(sm.spec.selector.matchLabels) do assert.are.equal(v, svc.metadata.labels[k], k) end
    assert.are.same({ matchNames = { "flink-system" } }, sm.spec.namespaceSelector)
    -- off by default
    assert.is_nil(find(template(), "Service", "flink-controller-metrics"))
  end)

  it("monitoring: deploy/monitoring's Service, ServiceMonitor, alerts (for the release's job) and dashboard", function()
    local mon = mf.objects(fx.read(fx.path("deploy/monitoring/metrics-service.yaml")) .. "\n---\n"
      .. fx.read(fx.path("deploy/monitoring/servicemonitor.yaml")) .. "\n---\n"
      .. fx.read(fx.path("deploy/monitoring/prometheusrule.yaml")))
    local objs = template(SETS.monitoring)
    -- the Service and ServiceMonitor as deploy/monitoring's but for the selector labels
    local svc, want_svc = find(objs, "Service", "flink-controller-metrics", "flink-system"), by_kind(mon, "Service")[1]
    assert.are.same(want_svc.spec.ports, svc.spec.ports)
    local sm = find(objs, "ServiceMonitor", "flink-controller", "flink-system")
    local want_sm = by_kind(mon, "ServiceMonitor")[1]
    assert.are.same(want_sm.spec.endpoints, sm.spec.endpoints)
    assert.are.same(want_sm.spec.namespaceSelector, sm.spec.namespaceSelector)
    -- the rule's groups as deploy/monitoring's for the release flink-controller
    local rule = find(objs, "PrometheusRule", "flink-controller", "flink-system")
    assert.are.equal("monitoring.coreos.com/v1", rule.apiVersion)
    assert.are.same(by_kind(mon, "PrometheusRule")[1].spec, rule.spec)
    local cm = find(objs, "ConfigMap", "flink-controller-dashboard", "flink-system")
    assert.are.equal("1", cm.metadata.labels.grafana_dashboard)
    assert.is_true(cm.data["flink-controller.json"] .. "\n" == fx.read(fx.path("deploy/monitoring/dashboard.json")))
    -- another release: the alerts select its metrics Service's job, which its ServiceMonitor scrapes
    local out, ok = run("template fc --namespace mon", SETS.monitoring)
    assert(ok, out)
    objs = mf.objects(out)
    assert.is_not_nil(find(objs, "Service", "fc-flink-controller-metrics", "mon"))
    rule = find(objs, "PrometheusRule", "fc-flink-controller", "mon")
    for _, g in ipairs(rule.spec.groups) do
      for _, r in ipairs(g.rules) do
        assert.matches('job="fc-flink-controller-metrics"', r.expr, 1, true, r.alert)
        assert.is_nil(r.expr:find('job="flink-controller-metrics"', 1, true), r.alert)
      end
    end
    -- off by default
    objs = template()
    assert.is_nil(find(objs, "PrometheusRule", "flink-controller"))
    assert.is_nil(find(objs, "ConfigMap", "flink-controller-dashboard"))
  end)

  it("policyOverride.configMap: deploy/policy-override's flags and Role", function()
    local objs = template(SETS.policyOverride)
    local _, _, c = controller(objs)
    assert.are.same(concat(CHART_ARGS, appended(POLICY_OPS, ARGS)), c.args)
    local want = docs("deploy/policy-override/rbac.yaml")
    local role = find(objs, "Role", "flink-controller-policy-override", "flink-system")
    assert.are.same(grants(by_kind(want, "Role")[1].rules), grants(role.rules))
    local rb = find(objs, "RoleBinding", "flink-controller-policy-override", "flink-system")
    assert.are.same(meta_less(by_kind(want, "RoleBinding")[1]), meta_less(rb))
  end)

  it("everything at once: each flag once, the override's Events granted in the release namespace", function()
    local objs = template(SETS.everything)
    local _, _, c = controller(objs)
    assert.are.same(concat(CHART_ARGS, { "--namespace", "a", "--policy-configmap", "flink-system/p",
      "--policy-work-dir", "/tmp", "--webhook-addr", ":9443",
      "--webhook-cert-secret", "flink-system/flink-controller-webhook",
      "--webhook-service", "flink-system/flink-controller-webhook",
      "--webhook-configuration", "flink-controller" }), c.args)
    -- with no ClusterRole, the Events about the ConfigMap need their own grant
    assert.are.same({ "/configmaps:get@p", "/configmaps:list@p", "/configmaps:watch@p", "/events:create",
      "/events:patch" }, grants(find(objs, "Role", "flink-controller-policy-override", "flink-system").rules))
    -- the webhook only for the watched namespaces
    assert.are.same({ matchExpressions = { { key = "kubernetes.io/metadata.name", operator = "In",
      values = { "a" } } } },
      find(objs, "ValidatingWebhookConfiguration", "flink-controller").webhooks[1].namespaceSelector)
    assert.is_not_nil(find(objs, "ServiceMonitor", "flink-controller"))
  end)

  it("the image, the pod's placement and extra arguments come from the values", function()
    local objs = template({
      image = { repository = "localhost/flink-controller", tag = "testenv", pullPolicy = "Never" },
      imagePullSecrets = { { name = "regcred" } }, replicaCount = 3, logLevel = "debug", logFormat = "text",
      extraArgs = { "--workers", "4" }, nodeSelector = { pool = "system" },
      tolerations = { { key = "dedicated", operator = "Exists" } }, podAnnotations = { a = "b" },
      resources = { limits = { memory = "512Mi" } }, serviceAccount = { name = "fc" } })
    local d, pod, c = controller(objs)
    assert.are.equal(3, d.spec.replicas)
    assert.are.equal("localhost/flink-controller:testenv", c.image)
    assert.are.equal("Never", c.imagePullPolicy)
    assert.are.same({ { name = "regcred" } }, pod.imagePullSecrets)
    assert.are.same({ "run", "--leader-elect", "--metrics-addr", "0.0.0.0:8080", "--health-addr", "0.0.0.0:8081",
      "--log-format", "text", "--log-level", "debug", "--workers", "4" }, c.args)
    assert.are.same({ pool = "system" }, pod.nodeSelector)
    assert.are.same({ { key = "dedicated", operator = "Exists" } }, pod.tolerations)
    assert.are.same({ a = "b" }, d.spec.template.metadata.annotations)
    -- Helm merges maps of values into the defaults: the other figures stay
    assert.are.same({ limits = { cpu = "500m", memory = "512Mi" }, requests = { cpu = "50m", memory = "64Mi" } },
      c.resources)
    assert.are.equal("fc", pod.serviceAccountName)
    assert.is_not_nil(find(objs, "ServiceAccount", "fc", "flink-system"))
    assert.are.equal("fc", find(objs, "ClusterRoleBinding", "flink-controller").subjects[1].name)
  end)

  it("shards 3: run --shards 3 instead of --leader-elect, the three shard Leases granted by name", function()
    local objs = template({ shards = 3 })
    local _, _, c = controller(objs, "StatefulSet")
    assert.are.same({ "run", "--shards", "3", "--metrics-addr", "0.0.0.0:8080", "--health-addr", "0.0.0.0:8081",
      "--log-format", "json", "--log-level", "info" }, c.args)
    local rules = find(objs, "Role", "flink-controller-leader-election", "flink-system").rules
    assert.are.same({ "create" }, rules[1].verbs)
    assert.are.same({ "flink-controller-shard-0", "flink-controller-shard-1", "flink-controller-shard-2" },
      rules[2].resourceNames)
    assert.are.same({ "get", "update" }, rules[2].verbs)
    -- the default: the single Lease, as deploy/rbac.yaml
    local d = find(template({}), "Role", "flink-controller-leader-election", "flink-system").rules
    assert.are.same({ "flink-controller" }, d[2].resourceNames)
  end)

  it("shards 3: a StatefulSet (pod i prefers shard i), Parallel start; workload overrides either way", function()
    local objs = template({ shards = 3, replicaCount = 3 })
    assert.is_nil(find(objs, "Deployment", "flink-controller", "flink-system"))
    local s, pod = controller(objs, "StatefulSet")
    assert.are.equal(3, s.spec.replicas)
    assert.are.equal("Parallel", s.spec.podManagementPolicy)
    assert.are.equal("flink-controller-metrics", s.spec.serviceName)
    assert.are.same({ ["app.kubernetes.io/name"] = "flink-controller",
      ["app.kubernetes.io/instance"] = "flink-controller" }, s.spec.selector.matchLabels)
    assert.are.equal("flink-controller", pod.serviceAccountName)
    -- the same pod template as the Deployment's, but for the workload's own fields
    local d = controller(template({ shards = 3, replicaCount = 3, workload = "Deployment" }))
    assert.are.same(d.spec.template, s.spec.template)
    assert.is_nil(d.spec.podManagementPolicy)
    controller(template({ workload = "StatefulSet" }), "StatefulSet")
    local out, ok = run("template flink-controller --namespace flink-system", { workload = "DaemonSet" })
    assert.is_false(ok)
    assert.matches('workload: "DaemonSet" is neither Deployment nor StatefulSet', out, 1, true)
  end)

  it("rbac.create and serviceAccount.create false: no RBAC, no ServiceAccount", function()
    local objs = template({ rbac = { create = false }, serviceAccount = { create = false, name = "mine" } })
    assert.are.same({ "CustomResourceDefinition/flinkclusters.flinkoperator.k8s.io",
      "CustomResourceDefinition/flinkjobs.flinkoperator.k8s.io", "Deployment/flink-system/flink-controller" },
      ids(objs))
    local _, pod = controller(objs)
    assert.are.equal("mine", pod.serviceAccountName)
  end)
end)
