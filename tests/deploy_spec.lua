-- SPDX-License-Identifier: Apache-2.0
-- deploy/: RBAC, the controller Deployment, the namespace, the kustomization, and the Dockerfile
-- that builds the image the Deployment runs.
local lyaml = require("lyaml")
local cjson = require("cjson")

local fx = require("support.fixtures")

local ROOT = fx.ROOT

-- The text of `path` (inside the repository), and whether it exists.
local function read(path) return fx.read(fx.path(path)) end
local function exists(path) return fx.exists(fx.path(path)) end

local mf = require("support.manifests")
local docs, by_kind, sorted, grants = mf.docs, mf.by_kind, mf.sorted, mf.grants

local function expand(group, resources, verbs)
  local out = {}
  for _, res in ipairs(resources) do
    for _, v in ipairs(verbs) do out[#out + 1] = group .. "/" .. res .. ":" .. v end
  end
  return out
end

local function concat(...)
  local out = {}
  for _, t in ipairs({ ... }) do
    for _, v in ipairs(t) do out[#out + 1] = v end
  end
  return sorted(out)
end

local CRUD = { "get", "list", "watch", "create", "update", "patch", "delete" }

describe("deploy/rbac.yaml", function()
  local rbac = docs("deploy/rbac.yaml")

  it("holds a ServiceAccount, ClusterRole, ClusterRoleBinding, Role and RoleBinding", function()
    local kinds = {}
    for _, d in ipairs(rbac) do kinds[#kinds + 1] = d.kind .. "/" .. d.metadata.name end
    assert.are.same({ "ClusterRole/flink-controller", "ClusterRoleBinding/flink-controller",
      "Role/flink-controller-leader-election", "RoleBinding/flink-controller-leader-election",
      "ServiceAccount/flink-controller" }, sorted(kinds))
    assert.are.equal("flink-system", by_kind(rbac, "ServiceAccount")[1].metadata.namespace)
  end)

  it("grants the ClusterRole exactly what the controller uses, children as lua/fc/kinds.lua declares", function()
    local kinds = require("fc.kinds")
    local children = {}
    for _, e in ipairs(kinds.CHILDREN) do
      -- "apps/v1" -> "apps", "v1" -> "" (the core group)
      local group = e.apiVersion:match("^(.+)/[^/]+$") or ""
      -- policies may produce it: the whole lifecycle; the framework creates (by apply: patch) and
      -- deletes it (native): those; else read and watch only
      children[#children + 1] = expand(group, { e.resource }, e.apply and CRUD
        or e.native and { "get", "list", "watch", "create", "patch", "delete" } or { "get", "list", "watch" })
    end
    local want = concat(
      expand("flinkoperator.k8s.io", { "flinkclusters" }, { "get", "list", "watch", "patch", "update" }),
      expand("flinkoperator.k8s.io", { "flinkclusters/status" }, { "get", "patch", "update" }),
      -- FlinkJobs (lua/fc/flinkjob.lua): watched, their finalizer patched, their status written
      expand("flinkoperator.k8s.io", { "flinkjobs" }, { "get", "list", "watch", "patch", "update" }),
      expand("flinkoperator.k8s.io", { "flinkjobs/status" }, { "get", "patch", "update" }),
      concat(table.unpack(children)),
      -- Flink's HA ConfigMaps by label selector (fc.haclean)
      expand("", { "configmaps" }, { "deletecollection" }),
      expand("", { "events" }, { "create", "patch" }),
      -- Flink REST through the API server's service proxy: GET, POST (savepoint), PATCH (cancel),
      -- DELETE (an uploaded jar)
      expand("", { "services/proxy" }, { "get", "create", "patch", "delete" }),
      expand("events.k8s.io", { "events" }, { "create", "patch" }))
    assert.are.equal(94, #want)
    assert.are.same(want, grants(by_kind(rbac, "ClusterRole")[1].rules))
  end)

  it("limits the Lease to get/create/update of flink-controller in flink-system", function()
    local role = by_kind(rbac, "Role")[1]
    assert.are.equal("flink-system", role.metadata.namespace)
    assert.are.same({ "coordination.k8s.io/leases:create", "coordination.k8s.io/leases:get@flink-controller",
      "coordination.k8s.io/leases:update@flink-controller" }, grants(role.rules))
  end)

  it("never uses a wildcard and never grants secrets", function()
    for _, d in ipairs(rbac) do
      for _, r in ipairs(d.rules or {}) do
        for _, field in ipairs({ "apiGroups", "resources", "verbs", "resourceNames" }) do
          for _, v in ipairs(r[field] or {}) do
            assert.is_nil(v:find("*", 1, true), d.metadata.name .. " " .. field)
            assert.are_not.equal("secrets", v)
          end
        end
        assert.is_nil(r.nonResourceURLs)
      end
    end
  end)

  it("binds both roles to the controller's ServiceAccount", function()
    local sa = { { kind = "ServiceAccount", name = "flink-controller", namespace = "flink-system" } }
    local crb = by_kind(rbac, "ClusterRoleBinding")[1]
    assert.are.same({ apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "flink-controller" },
      crb.roleRef)
    assert.are.same(sa, crb.subjects)
    local rb = by_kind(rbac, "RoleBinding")[1]
    assert.are.equal("flink-system", rb.metadata.namespace)
    assert.are.same({ apiGroup = "rbac.authorization.k8s.io", kind = "Role",
      name = "flink-controller-leader-election" }, rb.roleRef)
    assert.are.same(sa, rb.subjects)
  end)
end)

describe("deploy/deployment.yaml", function()
  local dep = docs("deploy/deployment.yaml")[1]
  local pod = dep.spec.template.spec
  local c = pod.containers[1]

  it("runs two replicas of flink-controller:<VERSION> in flink-system as the controller's ServiceAccount", function()
    assert.are.equal("apps/v1", dep.apiVersion)
    assert.are.equal("Deployment", dep.kind)
    assert.are.equal("flink-controller", dep.metadata.name)
    assert.are.equal("flink-system", dep.metadata.namespace)
    assert.are.equal(2, dep.spec.replicas)
    assert.are.equal("flink-controller", pod.serviceAccountName)
    assert.are.equal(1, #pod.containers)
    -- the release's image (VERSION, as `make image` tags it), never a tag nobody can have
    assert.are.equal("flink-controller:" .. read("VERSION"):match("^(%d+%.%d+%.%d+)\n$"), c.image)
    for k, v in pairs(dep.spec.selector.matchLabels) do
      assert.are.equal(v, dep.spec.template.metadata.labels[k], k)
    end
  end)

  it("starts the controller with leader election, metrics, health and JSON logs", function()
    -- every interface by name: the CLI's ":8081" is loopback, which the kubelet's probes cannot reach
    assert.are.same({ "run", "--leader-elect", "--metrics-addr", "0.0.0.0:8080", "--health-addr", "0.0.0.0:8081",
      "--log-format", "json" }, c.args)
    assert.is_nil(c.command)
  end)

  it("runs non-root with a read-only root file system, no capabilities, RuntimeDefault seccomp", function()
    assert.are.same({ runAsNonRoot = true, runAsUser = 65532, runAsGroup = 65532,
      seccompProfile = { type = "RuntimeDefault" } }, pod.securityContext)
    local sc = c.securityContext
    assert.is_false(sc.allowPrivilegeEscalation)
    assert.is_true(sc.readOnlyRootFilesystem)
    assert.is_true(sc.runAsNonRoot)
    assert.are.equal(65532, sc.runAsUser)
    assert.are.same({ drop = { "ALL" } }, sc.capabilities)
    assert.are.same({ type = "RuntimeDefault" }, sc.seccompProfile)
    assert.is_nil(sc.privileged)
    assert.is_nil(pod.hostNetwork)
    for _, v in ipairs(pod.volumes or {}) do assert.is_nil(v.hostPath, v.name) end
  end)

  it("probes /healthz and /readyz on 8081 and exposes metrics on 8080", function()
    local ports = {}
    for _, p in ipairs(c.ports) do ports[p.name] = p.containerPort end
    assert.are.same({ metrics = 8080, health = 8081 }, ports)
    local function port(probe)
      local p = probe.httpGet.port
      return math.type(p) == "integer" and p or ports[p]
    end
    assert.are.equal("/healthz", c.livenessProbe.httpGet.path)
    assert.are.equal(8081, port(c.livenessProbe))
    assert.are.equal("/readyz", c.readinessProbe.httpGet.path)
    assert.are.equal(8081, port(c.readinessProbe))
  end)

  it("requests 50m/64Mi and is limited to 500m/256Mi", function()
    assert.are.same({ requests = { cpu = "50m", memory = "64Mi" }, limits = { cpu = "500m", memory = "256Mi" } },
      c.resources)
  end)

  it("gets its namespace and name through the downward API", function()
    local env = {}
    for _, e in ipairs(c.env) do env[e.name] = e.valueFrom.fieldRef.fieldPath end
    assert.are.same({ POD_NAME = "metadata.name", POD_NAMESPACE = "metadata.namespace" }, env)
  end)
end)

describe("deploy/namespace.yaml", function()
  it("creates flink-system and enforces the restricted Pod Security Standard", function()
    local ns = docs("deploy/namespace.yaml")
    assert.are.equal(1, #ns)
    assert.are.equal("Namespace", ns[1].kind)
    assert.are.equal("flink-system", ns[1].metadata.name)
    assert.are.equal("restricted", ns[1].metadata.labels["pod-security.kubernetes.io/enforce"])
  end)
end)

describe("deploy/kustomization.yaml", function()
  local k = docs("deploy/kustomization.yaml")[1]

  it("lists files that exist, and every manifest of deploy/ but the CRD", function()
    assert.are.equal("Kustomization", k.kind)
    for _, r in ipairs(k.resources) do assert.is_true(exists("deploy/" .. r), r) end
    local p = assert(io.popen("cd " .. ROOT .. "/deploy && ls *.yaml"))
    local files = {}
    for f in p:lines() do
      if f ~= "kustomization.yaml" and f ~= "crd.yaml" then files[#files + 1] = f end
    end
    p:close()
    local listed = {}
    for _, r in ipairs(k.resources) do listed[#listed + 1] = r end
    assert.are.same(sorted(files), sorted(listed))
    assert.are.same({ "deployment.yaml", "namespace.yaml", "rbac.yaml" }, sorted(listed))
  end)

  it("creates the namespace first and the RBAC before the controller", function()
    assert.are.equal("namespace.yaml", k.resources[1])
    local pos = {}
    for i, r in ipairs(k.resources) do pos[r] = i end
    assert.is_true(pos["rbac.yaml"] < pos["deployment.yaml"])
  end)
end)

describe("deploy/crds (the CRD's own kustomization)", function()
  local k = docs("deploy/crds/kustomization.yaml")[1]

  it("is a Kustomization of flinkclusters.yaml alone, the same bytes as deploy/crd.yaml", function()
    assert.are.equal("Kustomization", k.kind)
    assert.are.same({ "flinkclusters.yaml" }, k.resources)
    -- the one source is deploy/crd.yaml (`make crds` copies it)
    assert.is_true(read("deploy/crd.yaml") == read("deploy/crds/flinkclusters.yaml"),
      "deploy/crds/flinkclusters.yaml differs from deploy/crd.yaml: run `make crds`")
    -- the FlinkCluster's, then the FlinkJob's (lua/fc/flinkjob.lua)
    local crd = docs("deploy/crds/flinkclusters.yaml")
    assert.are.equal(2, #crd)
    assert.are.equal("flinkclusters.flinkoperator.k8s.io", crd[1].metadata.name)
    assert.are.equal("flinkjobs.flinkoperator.k8s.io", crd[2].metadata.name)
  end)
end)

-- appended(ops): a Component's JSON patch, every operation an "add" at the end of a list
-- ("<path>/-"), as {path = {value...}}.
local function appended(ops)
  local out = {}
  for _, op in ipairs(ops) do
    assert.are.equal("add", op.op)
    assert.matches("/%-$", op.path)
    out[op.path] = out[op.path] or {}
    table.insert(out[op.path], op.value)
  end
  return out
end

-- The arguments a Component's JSON patch appends to the controller container's.
local function appended_args(ops)
  return appended(ops)["/spec/template/spec/containers/0/args/-"] or {}
end

describe("deploy/webhook (the admission webhook component)", function()
  local k = docs("deploy/webhook/kustomization.yaml")[1]
  local wh = docs("deploy/webhook/webhook.yaml")
  local rbac = docs("deploy/webhook/rbac.yaml")
  local ops = lyaml.load(read("deploy/webhook/deployment-patch.yaml"))
  local base = by_kind(docs("deploy/deployment.yaml"), "Deployment")[1]

  it("is a kustomize Component of webhook.yaml, its RBAC and the Deployment patch", function()
    assert.are.equal("Component", k.kind)
    assert.are.same({ "webhook.yaml", "rbac.yaml" }, k.resources)
    assert.are.same({ { path = "deployment-patch.yaml", target = { group = "apps", version = "v1",
      kind = "Deployment", name = "flink-controller" } } }, k.patches)
  end)

  it("registers /validate and /mutate for FlinkCluster CREATE and UPDATE, AdmissionReview v1", function()
    local paths = {}
    for _, kind in ipairs({ "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration" }) do
      local c = by_kind(wh, kind)[1]
      assert.are.equal(1, #c.webhooks, kind)
      local h = c.webhooks[1]
      paths[#paths + 1] = h.clientConfig.service.path
      assert.are.same({ "v1" }, h.admissionReviewVersions)
      assert.are.equal("None", h.sideEffects)
      assert.are.equal(5, h.timeoutSeconds)
      assert.are.equal("flink-controller-webhook", h.clientConfig.service.name)
      assert.are.equal("flink-system", h.clientConfig.service.namespace)
      assert.are.equal("", h.clientConfig.caBundle)   -- the controller's or cert-manager's (docs/webhook.md)
      assert.are.same({ { apiGroups = { "flinkoperator.k8s.io" }, apiVersions = { "v1beta1" },
        operations = { "CREATE", "UPDATE" }, scope = "Namespaced",
        -- FlinkJobs are validated (fc.flinkjob.validate), not mutated
        resources = kind == "ValidatingWebhookConfiguration" and { "flinkclusters", "flinkjobs" }
          or { "flinkclusters" } } },
        h.rules)
      -- the documented trade-off (docs/admission.md)
      assert.are.equal("Ignore", h.failurePolicy)
      -- never blocks the controller's own namespace
      assert.are.same({ matchExpressions = { { key = "kubernetes.io/metadata.name", operator = "NotIn",
        values = { "flink-system" } } } }, h.namespaceSelector)
    end
    assert.are.same({ "/validate", "/mutate" }, paths)
  end)

  it("serves the webhook from every replica on 9443 with the certificates the controller keeps", function()
    local svc = by_kind(wh, "Service")[1]
    assert.are.same({ { name = "webhook", port = 443, targetPort = "webhook", protocol = "TCP" } }, svc.spec.ports)
    assert.are.same(base.spec.template.metadata.labels["app.kubernetes.io/name"] and
      { ["app.kubernetes.io/name"] = "flink-controller" }, svc.spec.selector)
    -- appended to the base's arguments and ports (so it composes with the other Components in
    -- any order); no volume: the pair comes from the Secret through the API
    local add = appended(ops)
    assert.are.same({ "--webhook-addr", ":9443", "--webhook-cert-secret", "flink-system/flink-controller-webhook",
      "--webhook-service", "flink-system/flink-controller-webhook", "--webhook-configuration", "flink-controller" },
      add["/spec/template/spec/containers/0/args/-"])
    assert.are.same({ { name = "webhook", containerPort = 9443, protocol = "TCP" } },
      add["/spec/template/spec/containers/0/ports/-"])
    local n = 0
    for _ in pairs(add) do n = n + 1 end
    assert.are.equal(2, n)
    -- the flags name this Component's Service and configurations
    assert.are.equal("flink-system/flink-controller-webhook", svc.metadata.namespace .. "/" .. svc.metadata.name)
    for _, kind in ipairs({ "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration" }) do
      assert.are.equal("flink-controller", by_kind(wh, kind)[1].metadata.name)
    end
  end)

  it("grants the Secret by name (create cannot be) and get/patch of the two configurations by name", function()
    local role, crole = by_kind(rbac, "Role")[1], by_kind(rbac, "ClusterRole")[1]
    assert.are.equal("flink-system", role.metadata.namespace)
    assert.are.same({ "/secrets:create", "/secrets:get@flink-controller-webhook",
      "/secrets:patch@flink-controller-webhook", "/secrets:update@flink-controller-webhook" }, grants(role.rules))
    assert.are.same({ "admissionregistration.k8s.io/mutatingwebhookconfigurations:get@flink-controller",
      "admissionregistration.k8s.io/mutatingwebhookconfigurations:patch@flink-controller",
      "admissionregistration.k8s.io/validatingwebhookconfigurations:get@flink-controller",
      "admissionregistration.k8s.io/validatingwebhookconfigurations:patch@flink-controller" }, grants(crole.rules))
    local sa = by_kind(docs("deploy/rbac.yaml"), "ServiceAccount")[1]
    for _, pair in ipairs({ { "RoleBinding", role }, { "ClusterRoleBinding", crole } }) do
      local b = by_kind(rbac, pair[1])[1]
      assert.are.same({ apiGroup = "rbac.authorization.k8s.io", kind = pair[2].kind, name = pair[2].metadata.name },
        b.roleRef)
      assert.are.same({ { kind = "ServiceAccount", name = sa.metadata.name, namespace = sa.metadata.namespace } },
        b.subjects)
    end
    local kinds = {}
    for _, d in ipairs(rbac) do kinds[#kinds + 1] = d.kind end
    assert.are.same({ "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding" }, sorted(kinds))
  end)
end)

describe("deploy/webhook-cert-manager (the webhook with cert-manager's certificates)", function()
  local k = docs("deploy/webhook-cert-manager/kustomization.yaml")[1]
  local certs = docs("deploy/webhook-cert-manager/certificates.yaml")
  local inject = lyaml.load(read("deploy/webhook-cert-manager/inject-ca.yaml"))
  local function named(kind, name)
    for _, d in ipairs(by_kind(certs, kind)) do
      if d.metadata.name == name then return d end
    end
  end

  it("is deploy/webhook plus cert-manager's objects and the CA injection of both configurations", function()
    assert.are.equal("Component", k.kind)
    assert.are.same({ "../webhook" }, k.components)
    assert.are.same({ "certificates.yaml" }, k.resources)
    assert.are.same({ { path = "inject-ca.yaml", target = { group = "admissionregistration.k8s.io", version = "v1",
      name = "flink-controller" } } }, k.patches)
    assert.are.same({ { op = "add", path = "/metadata/annotations",
      value = { ["cert-manager.io/inject-ca-from"] = "flink-system/flink-controller-webhook" } } }, inject)
  end)

  it("a self-signed CA signs the serving certificate of the Service's names into the Secret", function()
    local selfsigned = named("Issuer", "flink-controller-webhook-selfsigned")
    assert.are.same({ selfSigned = {} }, selfsigned.spec)
    local ca = named("Certificate", "flink-controller-webhook-ca")
    assert.is_true(ca.spec.isCA)
    assert.are.same({ kind = "Issuer", name = selfsigned.metadata.name }, ca.spec.issuerRef)
    assert.are.equal("87600h", ca.spec.duration)   -- 10 years, as the controller's own CA
    local issuer = named("Issuer", "flink-controller-webhook-ca")
    assert.are.same({ ca = { secretName = ca.spec.secretName } }, issuer.spec)
    local serving = named("Certificate", "flink-controller-webhook")
    assert.are.same({ kind = "Issuer", name = issuer.metadata.name }, serving.spec.issuerRef)
    -- the Secret and names the controller's flags give (deploy/webhook's deployment patch)
    assert.are.equal("flink-controller-webhook", serving.spec.secretName)
    assert.are.same({ "flink-controller-webhook.flink-system.svc",
      "flink-controller-webhook.flink-system.svc.cluster.local", "flink-controller-webhook.flink-system" },
      serving.spec.dnsNames)
    assert.are.same({ "2160h", "720h" }, { serving.spec.duration, serving.spec.renewBefore })
    assert.are.same({ algorithm = "ECDSA", size = 256, rotationPolicy = "Always" }, serving.spec.privateKey)
    -- inject-ca-from names this Certificate
    assert.are.equal(inject[1].value["cert-manager.io/inject-ca-from"],
      serving.metadata.namespace .. "/" .. serving.metadata.name)
    for _, d in ipairs(certs) do
      assert.are.equal("cert-manager.io/v1", d.apiVersion)
      assert.are.equal("flink-system", d.metadata.namespace)
    end
    assert.are.equal(4, #certs)
  end)
end)

describe("deploy/policy-override (the policy override component)", function()
  local k = docs("deploy/policy-override/kustomization.yaml")[1]
  local rbac = docs("deploy/policy-override/rbac.yaml")
  local ops = lyaml.load(read("deploy/policy-override/deployment-patch.yaml"))

  it("is a kustomize Component of its RBAC and a JSON patch of the controller Deployment", function()
    assert.are.equal("Component", k.kind)
    assert.are.same({ "rbac.yaml" }, k.resources)
    assert.are.same({ { path = "deployment-patch.yaml", target = { group = "apps", version = "v1",
      kind = "Deployment", name = "flink-controller" } } }, k.patches)
  end)

  it("appends --policy-configmap flink-system/flink-controller-policies and the work dir /tmp", function()
    assert.are.same({ "--policy-configmap", "flink-system/flink-controller-policies", "--policy-work-dir", "/tmp" },
      appended_args(ops))
    -- /tmp is the Deployment's emptyDir (the root file system is read-only)
    local base = by_kind(docs("deploy/deployment.yaml"), "Deployment")[1]
    assert.are.same({ { name = "tmp", mountPath = "/tmp" } }, base.spec.template.spec.containers[1].volumeMounts)
    assert.is_true(base.spec.template.spec.containers[1].securityContext.readOnlyRootFilesystem)
  end)

  it("grants get/list/watch on exactly that ConfigMap to the controller's ServiceAccount, nothing else", function()
    local role = by_kind(rbac, "Role")[1]
    local rb = by_kind(rbac, "RoleBinding")[1]
    assert.are.equal(2, #rbac)
    assert.are.equal("flink-system", role.metadata.namespace)
    assert.are.same({ "/configmaps:get@flink-controller-policies", "/configmaps:list@flink-controller-policies",
      "/configmaps:watch@flink-controller-policies" }, grants(role.rules))
    assert.are.equal("flink-system", rb.metadata.namespace)
    assert.are.same({ apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = role.metadata.name }, rb.roleRef)
    assert.are.same({ { kind = "ServiceAccount", name = "flink-controller", namespace = "flink-system" } }, rb.subjects)
  end)
end)

-- Dockerfile: instructions per stage, continuation lines joined; those before the first FROM
-- (global ARGs) in stages.global.
local function dockerfile()
  local text = read("Dockerfile"):gsub("\\\n", " ")
  local stages = { global = {} }
  for line in text:gmatch("[^\n]+") do
    local instr, rest = line:match("^%s*(%u+)%s+(.*)$")
    if instr == "FROM" then
      stages[#stages + 1] = { from = rest }
    elseif instr then
      local s = stages[#stages] or stages.global
      s[#s + 1] = { instr = instr, args = rest }
    end
  end
  return stages
end

local function find(stage, instr, pattern)
  for _, i in ipairs(stage) do
    if i.instr == instr and (not pattern or i.args:find(pattern)) then return i.args end
  end
  return nil
end

describe("deploy/namespaced (RBAC scoped to the watched namespace)", function()
  local k = docs("deploy/namespaced/kustomization.yaml")[1]
  local rbac = docs("deploy/namespaced/rbac.yaml")
  local ops = lyaml.load(read("deploy/namespaced/deployment-patch.yaml"))
  local removed = docs("deploy/namespaced/remove-cluster-rbac.yaml")
  local base = docs("deploy/rbac.yaml")

  it("is a kustomize Component of its RBAC, a JSON patch of the Deployment and the removal of the cluster RBAC",
    function()
      assert.are.equal("Component", k.kind)
      assert.are.same({ "rbac.yaml" }, k.resources)
      local rbac_v1 = { group = "rbac.authorization.k8s.io", version = "v1" }
      assert.are.same({ { path = "deployment-patch.yaml", target = { group = "apps", version = "v1",
        kind = "Deployment", name = "flink-controller" } },
        { path = "remove-cluster-rbac.yaml", target = { group = rbac_v1.group, version = rbac_v1.version,
          kind = "ClusterRole", name = "flink-controller" } },
        { path = "remove-cluster-rbac.yaml", target = { group = rbac_v1.group, version = rbac_v1.version,
          kind = "ClusterRoleBinding", name = "flink-controller" } } }, k.patches)
    end)

  it("appends --namespace $(WATCH_NAMESPACE) to the arguments and WATCH_NAMESPACE=flink-jobs to the env", function()
    local add = appended(ops)
    assert.are.same({ "--namespace", "$(WATCH_NAMESPACE)" }, appended_args(ops))
    assert.are.same({ { name = "WATCH_NAMESPACE", value = "flink-jobs" } },
      add["/spec/template/spec/containers/0/env/-"])
    local n = 0
    for _ in pairs(add) do n = n + 1 end
    assert.are.equal(2, n)
  end)

  it("deletes exactly the ClusterRole and ClusterRoleBinding of deploy/rbac.yaml", function()
    local got, want = {}, {}
    assert.are.equal(1, #removed)
    assert.are.equal("delete", removed[1]["$patch"])
    -- one delete patch, aimed by the kustomization at both
    for _, p in ipairs(k.patches) do
      if p.path == "remove-cluster-rbac.yaml" then
        got[#got + 1] = p.target.group .. "/" .. p.target.version .. " " .. p.target.kind .. "/" .. p.target.name
      end
    end
    for _, d in ipairs(base) do
      if d.kind:find("^Cluster") then want[#want + 1] = d.apiVersion .. " " .. d.kind .. "/" .. d.metadata.name end
    end
    assert.are.same(sorted(want), sorted(got))
    assert.are.equal(2, #got)
  end)

  it("grants the ClusterRole's rules in flink-jobs only, to the controller's ServiceAccount", function()
    assert.are.equal(2, #rbac)
    local role, rb = by_kind(rbac, "Role")[1], by_kind(rbac, "RoleBinding")[1]
    assert.are.equal("flink-jobs", role.metadata.namespace)
    assert.are.equal("flink-jobs", rb.metadata.namespace)
    assert.are.same(grants(by_kind(base, "ClusterRole")[1].rules), grants(role.rules))
    assert.are.same({ apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = role.metadata.name }, rb.roleRef)
    assert.are.same({ { kind = "ServiceAccount", name = "flink-controller", namespace = "flink-system" } }, rb.subjects)
  end)
end)

describe("Dockerfile", function()
  local stages = dockerfile()
  local build, runtime = stages[1], stages[2]

  it("builds on debian:bookworm-slim pinned by digest, the tag beside it, in two stages", function()
    assert.are.equal(2, #stages)
    assert.are.equal("${BASE_IMAGE} AS build", build.from)
    assert.are.equal("${BASE_IMAGE}", runtime.from)
    local base = find(stages.global, "ARG", "^BASE_IMAGE=")
    assert.is_not_nil(base, "a global ARG BASE_IMAGE")
    assert.matches("^BASE_IMAGE=debian:bookworm%-slim@sha256:" .. string.rep("%x", 64) .. "$", base)
    -- how to refresh it is written beside it
    assert.is_not_nil(read("Dockerfile"):find("docker buildx imagetools inspect debian:bookworm-slim", 1, true))
  end)

  it("installs the build packages through `make deps-build` and builds with the installed DATADIR", function()
    assert.is_not_nil(find(build, "RUN", "make deps%-build"))
    assert.are.equal("DATADIR=/usr/local/share/flink-controller", find(build, "ARG", "^DATADIR"))
    local run = find(build, "RUN", "make install")
    assert.is_not_nil(run:find('DATADIR="${DATADIR}" all', 1, true))
    assert.is_not_nil(run:find('make install PREFIX=/usr/local DATADIR="${DATADIR}" DESTDIR=/out', 1, true))
    assert.is_nil(find(build, "COPY", "^%. "), "COPY . would bring a host build/ into the image")
  end)

  it("has a runtime library for every library the build links or loads", function()
    local mk = read("Makefile"):gsub("\\\n", " ")
    local pkgs = mk:match("DEBIAN_PKGS%s*:=%s*([^\n]+)")
    local runtime_of = { ["liblua5.4-dev"] = "liblua5.4-0", ["libev-dev"] = "libev4",
      ["libcurl4-openssl-dev"] = "libcurl4", ["libssl-dev"] = "libssl3", ["libjansson-dev"] = "libjansson4",
      ["libyaml-dev"] = "libyaml-0-2", ["libmicrohttpd-dev"] = "libmicrohttpd12", ["libzstd-dev"] = "libzstd1",
      ["lua-cjson"] = "lua-cjson",
      ["lua-yaml"] = "lua-yaml", ["ca-certificates"] = "ca-certificates" }
    local build_only = { ["lua5.4"] = true, ["lua-busted"] = true, ["lua-check"] = true, ["pkg-config"] = true,
      gcc = true, make = true }
    local install = find(runtime, "RUN", "apt%-get install")
    local have = {}
    for p in install:gmatch("%S+") do have[p] = true end
    local n = 0
    for p in pkgs:gmatch("%S+") do
      n = n + 1
      if not build_only[p] then
        assert.is_not_nil(runtime_of[p], "no runtime package known for " .. p)
        assert.is_true(have[runtime_of[p]], runtime_of[p] .. " missing from the runtime stage")
      end
    end
    assert.is_true(n >= 14)
    for _, p in ipairs({ "gcc", "make", "pkg-config", "libssl-dev", "lua-busted" }) do
      assert.is_nil(have[p], p .. " in the runtime stage")
    end
  end)

  it("ships the binary and the Lua code, runs as 65532 the Deployment's uid", function()
    assert.are.equal("--from=build /out/usr/local/ /usr/local/", find(runtime, "COPY"))
    assert.are.equal("65532:65532", find(runtime, "USER"))
    local dep = docs("deploy/deployment.yaml")[1]
    assert.are.equal(65532, dep.spec.template.spec.securityContext.runAsUser)
    assert.are.same({ "/usr/local/bin/flink-controller" }, cjson.decode(find(runtime, "ENTRYPOINT")))
    assert.are.equal("8080 8081", find(runtime, "EXPOSE"))
  end)
end)
