-- SPDX-License-Identifier: Apache-2.0
-- deploy/ as kustomize builds it: every kustomization and Component rendered by the test
-- environment's pinned kubectl (`kubectl kustomize`, tests/env/build.sh k8s), alone and in the
-- combinations docs/install.md gives, with the rendered objects and arguments compared to deploy/'s.
local lyaml = require("lyaml")

local fx = require("support.fixtures")
local mf = require("support.manifests")

local ROOT = fx.ROOT
local docs, by_kind, find, ids, grants, concat = mf.docs, mf.by_kind, mf.find, mf.ids, mf.grants, mf.concat

local BASE = by_kind(docs("deploy/deployment.yaml"), "Deployment")[1]
local BASE_ARGS = BASE.spec.template.spec.containers[1].args
local RBAC = docs("deploy/rbac.yaml")
local CLUSTER_GRANTS = grants(by_kind(RBAC, "ClusterRole")[1].rules)
local WEBHOOK_ARGS = { "--webhook-addr", ":9443", "--webhook-cert-secret", "flink-system/flink-controller-webhook",
  "--webhook-service", "flink-system/flink-controller-webhook", "--webhook-configuration", "flink-controller" }
local POLICY_ARGS = { "--policy-configmap", "flink-system/flink-controller-policies", "--policy-work-dir", "/tmp" }
local NS_ARGS = { "--namespace", "$(WATCH_NAMESPACE)" }

-- The team-a recipe of deploy/namespaced/kustomization.yaml and docs/install.md: the Role and
-- RoleBinding moved by their metadata.namespace, the watched namespace by the env's name.
local TEAM_A = {
  { target = { kind = "Role", name = "flink-controller" },
    patch = '[{"op": "replace", "path": "/metadata/namespace", "value": "team-a"}]' },
  { target = { kind = "RoleBinding", name = "flink-controller" },
    patch = '[{"op": "replace", "path": "/metadata/namespace", "value": "team-a"}]' },
  { patch = '{"apiVersion": "apps/v1", "kind": "Deployment",\n'
      .. ' "metadata": {"name": "flink-controller", "namespace": "flink-system"},\n'
      .. ' "spec": {"template": {"spec": {"containers": [{"name": "controller",\n'
      .. '   "env": [{"name": "WATCH_NAMESPACE", "value": "team-a"}]}]}}}}' },
}

local function env_of(c)
  local out = {}
  for _, e in ipairs(c.env) do out[e.name] = e.value or e.valueFrom.fieldRef.fieldPath end
  return out
end

describe("deploy/ built by the pinned kubectl's kustomize", function()
  local kubectl, why = mf.tool("kubectl")
  if not kubectl then
    pending("no test environment kubectl (" .. tostring(why) .. ")")
    return
  end
  -- overlays live under build/: kustomize takes a base by a path relative to the overlay
  local work = ROOT .. "/build/kustomize-spec." .. tostring(math.random(1e6, 9e6))
  local n = 0

  -- build(dir): the objects of `kubectl kustomize dir` (inside the repository), or raises with
  -- kubectl's message
  local function build(dir)
    local out, ok = mf.sh(fx.quote(kubectl) .. " kustomize " .. fx.quote(ROOT .. "/" .. dir))
    assert(ok, dir .. ": " .. out)
    return mf.objects(out)
  end
  -- overlay(components, patches): the objects of a kustomization of deploy/ with those
  -- Components (folders of deploy/) and patches
  local function overlay(components, patches)
    n = n + 1
    local dir = work .. "/" .. n
    assert(os.execute("mkdir -p " .. fx.quote(dir)))
    local k = { apiVersion = "kustomize.config.k8s.io/v1beta1", kind = "Kustomization",
      resources = { "../../../deploy" }, components = {}, patches = patches }
    for _, c in ipairs(components) do k.components[#k.components + 1] = "../../../deploy/" .. c end
    fx.write(dir .. "/kustomization.yaml", lyaml.dump({ k }))
    return build(dir:sub(#ROOT + 2))
  end
  local function args_of(list)
    return find(list, "Deployment", "flink-controller", "flink-system").spec.template.spec.containers[1].args
  end

  teardown(function() os.execute("rm -rf " .. fx.quote(work)) end)

  it("deploy: the namespace, the ServiceAccount, deploy/rbac.yaml's roles and the Deployment, no CRD", function()
    local objs = build("deploy")
    assert.are.same({ "ClusterRole/flink-controller", "ClusterRoleBinding/flink-controller",
      "Deployment/flink-system/flink-controller", "Namespace/flink-system",
      "Role/flink-system/flink-controller-leader-election", "RoleBinding/flink-system/flink-controller-leader-election",
      "ServiceAccount/flink-system/flink-controller" }, ids(objs))
    assert.are.same(CLUSTER_GRANTS, grants(by_kind(objs, "ClusterRole")[1].rules))
    assert.are.same(BASE_ARGS, args_of(objs))
    assert.are.equal("flink-controller:0.2.0", find(objs, "Deployment", "flink-controller").spec.template.spec
      .containers[1].image)
  end)

  it("deploy/crds: the CRD alone, deploy/crd.yaml's", function()
    local objs = build("deploy/crds")
    assert.are.same({ "CustomResourceDefinition/flinkclusters.flinkoperator.k8s.io",
      "CustomResourceDefinition/flinkjobs.flinkoperator.k8s.io" }, ids(objs))
    assert.are.same(fx.strip_null(docs("deploy/crd.yaml")[1]), fx.strip_null(objs[1]))
    assert.are.same(fx.strip_null(docs("deploy/crd.yaml")[2]), fx.strip_null(objs[2]))
  end)

  it("each Component alone gives only its own objects (a Component changes a base it is given)", function()
    assert.are.same({ "Role/flink-jobs/flink-controller", "RoleBinding/flink-jobs/flink-controller" },
      ids(build("deploy/namespaced")))
    assert.are.same({ "Role/flink-system/flink-controller-policy-override",
      "RoleBinding/flink-system/flink-controller-policy-override" }, ids(build("deploy/policy-override")))
    assert.are.same({ "ClusterRole/flink-controller-webhook", "ClusterRoleBinding/flink-controller-webhook",
      "MutatingWebhookConfiguration/flink-controller", "Role/flink-system/flink-controller-webhook",
      "RoleBinding/flink-system/flink-controller-webhook", "Service/flink-system/flink-controller-webhook",
      "ValidatingWebhookConfiguration/flink-controller" }, ids(build("deploy/webhook")))
  end)

  it("deploy + namespaced: Role and RoleBinding in flink-jobs instead of the cluster grant; --namespace flink-jobs",
    function()
      local objs = overlay({ "namespaced" })
      assert.are.same({ "Deployment/flink-system/flink-controller", "Namespace/flink-system",
        "Role/flink-jobs/flink-controller", "Role/flink-system/flink-controller-leader-election",
        "RoleBinding/flink-jobs/flink-controller", "RoleBinding/flink-system/flink-controller-leader-election",
        "ServiceAccount/flink-system/flink-controller" }, ids(objs))
      assert.are.same(CLUSTER_GRANTS, grants(find(objs, "Role", "flink-controller", "flink-jobs").rules))
      assert.are.same(concat(BASE_ARGS, NS_ARGS), args_of(objs))
      local c = find(objs, "Deployment", "flink-controller").spec.template.spec.containers[1]
      assert.are.same({ POD_NAME = "metadata.name", POD_NAMESPACE = "metadata.namespace",
        WATCH_NAMESPACE = "flink-jobs" }, env_of(c))
    end)

  it("deploy + policy-override: its flags appended, its Role", function()
    local objs = overlay({ "policy-override" })
    assert.are.same(concat(BASE_ARGS, POLICY_ARGS), args_of(objs))
    assert.are.same({ "/configmaps:get@flink-controller-policies", "/configmaps:list@flink-controller-policies",
      "/configmaps:watch@flink-controller-policies" },
      grants(find(objs, "Role", "flink-controller-policy-override", "flink-system").rules))
    assert.is_not_nil(find(objs, "ClusterRole", "flink-controller"))
  end)

  it("deploy + webhook: its flags appended, port 9443, no volume, the Service, configurations and RBAC", function()
    local objs = overlay({ "webhook" })
    assert.are.same(concat(BASE_ARGS, WEBHOOK_ARGS), args_of(objs))
    local pod = find(objs, "Deployment", "flink-controller").spec.template.spec
    local c = pod.containers[1]
    assert.are.same({ { name = "metrics", containerPort = 8080, protocol = "TCP" },
      { name = "health", containerPort = 8081, protocol = "TCP" },
      { name = "webhook", containerPort = 9443, protocol = "TCP" } }, c.ports)
    -- the controller reads the Secret through the API: the base's volumes and mounts only
    assert.are.same(BASE.spec.template.spec.volumes, pod.volumes)
    assert.are.same(BASE.spec.template.spec.containers[1].volumeMounts, c.volumeMounts)
    assert.is_not_nil(find(objs, "Service", "flink-controller-webhook", "flink-system"))
    assert.is_not_nil(find(objs, "ValidatingWebhookConfiguration", "flink-controller"))
    assert.is_not_nil(find(objs, "MutatingWebhookConfiguration", "flink-controller"))
    assert.are.same({ "/secrets:create", "/secrets:get@flink-controller-webhook",
      "/secrets:patch@flink-controller-webhook", "/secrets:update@flink-controller-webhook" },
      grants(find(objs, "Role", "flink-controller-webhook", "flink-system").rules))
    assert.are.equal("flink-controller",
      find(objs, "ClusterRoleBinding", "flink-controller-webhook").subjects[1].name)
    assert.is_nil(find(objs, "Certificate", "flink-controller-webhook", "flink-system"))
  end)

  it("deploy + webhook-cert-manager: deploy/webhook's flags, cert-manager's Issuers and Certificates, the CA injected",
    function()
      local objs = overlay({ "webhook-cert-manager" })
      assert.are.same(concat(BASE_ARGS, WEBHOOK_ARGS), args_of(objs))
      for _, kind in ipairs({ "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration" }) do
        local cfg = find(objs, kind, "flink-controller")
        assert.are.same({ ["cert-manager.io/inject-ca-from"] = "flink-system/flink-controller-webhook" },
          cfg.metadata.annotations, kind)
        assert.are.equal("flink-controller", cfg.metadata.labels["app.kubernetes.io/name"], kind)
      end
      assert.are.equal("flink-controller-webhook",
        find(objs, "Certificate", "flink-controller-webhook", "flink-system").spec.secretName)
      assert.is_true(find(objs, "Certificate", "flink-controller-webhook-ca", "flink-system").spec.isCA)
      assert.is_not_nil(find(objs, "Issuer", "flink-controller-webhook-selfsigned", "flink-system"))
      assert.is_not_nil(find(objs, "Issuer", "flink-controller-webhook-ca", "flink-system"))
      assert.is_not_nil(find(objs, "Role", "flink-controller-webhook", "flink-system"))
    end)

  it("namespaced + webhook, in either order, with the team-a recipe: --namespace $(WATCH_NAMESPACE)=team-a", function()
    for _, order in ipairs({ { "namespaced", "webhook" }, { "webhook", "namespaced" } }) do
      local objs = overlay(order, TEAM_A)
      local want = order[1] == "namespaced" and concat(BASE_ARGS, NS_ARGS, WEBHOOK_ARGS)
        or concat(BASE_ARGS, WEBHOOK_ARGS, NS_ARGS)
      assert.are.same(want, args_of(objs), table.concat(order, " + "))
      local c = find(objs, "Deployment", "flink-controller").spec.template.spec.containers[1]
      assert.are.equal("team-a", env_of(c).WATCH_NAMESPACE)
      assert.is_not_nil(find(objs, "Role", "flink-controller", "team-a"))
      assert.is_not_nil(find(objs, "RoleBinding", "flink-controller", "team-a"))
      assert.is_nil(find(objs, "Role", "flink-controller", "flink-jobs"))
      assert.is_nil(find(objs, "ClusterRole", "flink-controller"))
      assert.is_nil(find(objs, "ClusterRoleBinding", "flink-controller"))
      assert.is_not_nil(find(objs, "ValidatingWebhookConfiguration", "flink-controller"))
    end
  end)

  it("all three Components: every flag once, in the order listed", function()
    local objs = overlay({ "webhook", "policy-override", "namespaced" })
    assert.are.same(concat(BASE_ARGS, WEBHOOK_ARGS, POLICY_ARGS, NS_ARGS), args_of(objs))
  end)
end)
