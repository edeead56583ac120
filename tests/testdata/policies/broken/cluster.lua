-- Test policy (tests/render_spec.lua): a ConfigMap and a StatefulSet whose values exercise
-- the YAML emitter (strings that look like numbers/booleans/null, a multi-line string, an
-- empty map).
local cluster = {}

--- desired({cluster=}) -> {objects={ConfigMap <n>-configmap, StatefulSet <n>-taskmanager}}
function cluster.desired(input)
  local c = input.cluster
  local n = c.metadata.name
  return {
    objects = {
      {
        apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = n .. "-configmap", namespace = c.metadata.namespace, annotations = {} },
        data = {
          ["flink-conf.yaml"] = "a: 1\nb: two\n",
          replicas = tostring(c.spec.taskManager.replicas),
          yes = "yes", truth = "true", nothing = "null", octal = "0755", version = "1.10",
          plain = "flink:1.9.2",
        },
      },
      {
        apiVersion = "apps/v1", kind = "StatefulSet",
        metadata = { name = n .. "-taskmanager", namespace = c.metadata.namespace },
        spec = { replicas = c.spec.taskManager.replicas, ratio = 0.25, paused = false },
      },
    },
  }
end

return cluster
