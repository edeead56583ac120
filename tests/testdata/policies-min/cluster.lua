--- Test policy (tests/reconcile_spec.lua): a tiny cluster.desired with the generated objects of
-- the API (names, kinds, order), much smaller than policies/cluster.lua.
local cluster = {}

local function meta(c, name)
  return {
    name = name, namespace = c.metadata.namespace,
    labels = { app = "flink", cluster = c.metadata.name },
    ownerReferences = { { apiVersion = "flinkoperator.k8s.io/v1beta1", kind = "FlinkCluster",
      name = c.metadata.name, uid = c.metadata.uid, controller = true, blockOwnerDeletion = true } },
  }
end

local function sts(c, component, replicas)
  local n = c.metadata.name
  local labels = { app = "flink", cluster = n, component = component }
  return {
    apiVersion = "apps/v1", kind = "StatefulSet", metadata = meta(c, n .. "-" .. component),
    spec = {
      replicas = replicas, serviceName = n .. "-" .. component, podManagementPolicy = "Parallel",
      selector = { matchLabels = labels },
      template = {
        metadata = { labels = labels },
        spec = { containers = { { name = component, image = c.spec.image.name, args = { component },
          resources = { limits = { memory = "1024Mi", cpu = "200m" } } } } },
      },
    },
  }
end

function cluster.desired(input)
  local c = input.cluster
  local n = c.metadata.name
  local objects = {
    { apiVersion = "v1", kind = "ConfigMap", metadata = meta(c, n .. "-configmap"),
      data = { ["flink-conf.yaml"] = "jobmanager.rpc.address: " .. n .. "-jobmanager\n" } },
    sts(c, "jobmanager", 1),
    { apiVersion = "v1", kind = "Service", metadata = meta(c, n .. "-jobmanager"),
      spec = { type = "ClusterIP", selector = { app = "flink", cluster = n, component = "jobmanager" },
        ports = { { name = "ui", port = c.spec.jobManager.ports.ui } } } },
  }
  if c.spec.jobManager.ingress then
    objects[#objects + 1] = { apiVersion = "networking.k8s.io/v1", kind = "Ingress",
      metadata = meta(c, n .. "-jobmanager"), spec = { rules = { { host = n .. ".example.com" } } } }
  end
  objects[#objects + 1] = sts(c, "taskmanager", c.spec.taskManager.replicas)
  if c.spec.job then
    local args = { "--class", c.spec.job.className or "Main" }
    if c.spec.job.fromSavepoint then
      args[#args + 1] = "--fromSavepoint"
      args[#args + 1] = c.spec.job.fromSavepoint
    end
    objects[#objects + 1] = { apiVersion = "batch/v1", kind = "Job", metadata = meta(c, n .. "-job-submitter"),
      spec = { backoffLimit = 0, template = { spec = { restartPolicy = "Never",
        containers = { { name = "main", image = c.spec.image.name, args = args } } } } } }
  end
  return { objects = objects }
end

return cluster
