-- SPDX-License-Identifier: Apache-2.0
--- lib.flinkremoved: the configuration options Flink 2 no longer knows. Data and one lookup;
-- used by lib.flinkconf (such options are not written for a Flink 2 cluster) and validate.lua
-- (a warning names each one the user's flinkProperties set).
--
-- Where the list comes from: every ConfigOption key and fallback key declared in the jars of
-- Flink 1.20.5 that Flink 2.3.0's jars no longer declare, for the modules the test environment
-- runs (flink-core, flink-runtime, flink-clients, flink-streaming-java, flink-connector-files,
-- flink-runtime-web and their Flink dependencies; tests/env/flink/ListConfigKeys.java prints
-- them: `tests/env/flink/config-keys.sh`). Options of other modules (state backends, table,
-- connectors, Kubernetes, YARN) are not in it. Not in it either, although 1.20 declares them:
-- "class" (the suffix of metrics.reporter.<name>.class) and hidden.execution.* (internal).
-- A key still declared in 2.x, even as a deprecated name of a new option (state.backend,
-- state.savepoints.dir, env.java.opts, ...), is known and not listed: Flink 2 still reads it.
local flinkremoved = {}

--- Keys Flink 1.20 declares and Flink 2.3 does not, byte order.
flinkremoved.KEYS = {
  "akka.watch.heartbeat.interval",
  "akka.watch.heartbeat.pause",
  "akka.watch.threshold",
  "cluster.evenly-spread-out-slots",
  "execution.async-state.buffer-size",
  "execution.async-state.buffer-timeout",
  "execution.async-state.in-flight-records-limit",
  "execution.checkpointing.force",
  "fine-grained.shuffle-mode.all-blocking",
  "high-availability.job.delay",
  "high-availability.zookeeper.path.running-registry",
  "jobmanager.heap.mb",
  "jobmanager.heap.size",
  "jobmanager.web.backpressure.cleanup-interval",
  "jobmanager.web.backpressure.delay-between-samples",
  "jobmanager.web.backpressure.num-samples",
  "jobmanager.web.backpressure.refresh-interval",
  "jobmanager.web.ssl.enabled",
  "local.number-resourcemanager",
  "pipeline.auto-type-registration",
  "pipeline.default-kryo-serializers",
  "pipeline.registered-kryo-types",
  "pipeline.registered-pojo-types",
  "pipeline.time-characteristic",
  "recovery.job.delay",
  "resourcemanager.taskmanager-release.wait.result.consumed",
  "security.ssl.enabled",
  "source.file.records.fetch-size",
  "state.backend.async",
  "taskmanager.exit-on-fatal-akka-error",
  "taskmanager.heap.mb",
  "taskmanager.heap.size",
  "taskmanager.initial-registration-pause",
  "taskmanager.max-registration-pause",
  "taskmanager.net.client.numThreads",
  "taskmanager.net.num-arenas",
  "taskmanager.net.sendReceiveBufferSize",
  "taskmanager.net.server.backlog",
  "taskmanager.net.server.numThreads",
  "taskmanager.net.transport",
  "taskmanager.network.batch-shuffle.compression.enabled",
  "taskmanager.network.blocking-shuffle.compression.enabled",
  "taskmanager.network.blocking-shuffle.type",
  "taskmanager.network.hybrid-shuffle.enable-new-mode",
  "taskmanager.network.hybrid-shuffle.num-retained-in-memory-regions-max",
  "taskmanager.network.hybrid-shuffle.spill-index-region-group-size",
  "taskmanager.network.hybrid-shuffle.spill-index-segment-size",
  "taskmanager.network.max-num-tcp-connections",
  "taskmanager.network.memory.buffers-per-channel",
  "taskmanager.network.memory.floating-buffers-per-gate",
  "taskmanager.network.memory.max-buffers-per-channel",
  "taskmanager.network.memory.max-overdraft-buffers-per-gate",
  "taskmanager.network.netty.client.numThreads",
  "taskmanager.network.netty.num-arenas",
  "taskmanager.network.netty.sendReceiveBufferSize",
  "taskmanager.network.netty.server.backlog",
  "taskmanager.network.netty.server.numThreads",
  "taskmanager.network.netty.transport",
  "taskmanager.network.numberOfBuffers",
  "taskmanager.network.sort-shuffle.min-parallelism",
  "taskmanager.refused-registration-pause",
  "taskmanager.registration.initial-backoff",
  "taskmanager.registration.max-backoff",
  "taskmanager.registration.refused-backoff",
  "traces.report-events-as-spans",
  "web.backpressure.cleanup-interval",
  "web.backpressure.delay-between-samples",
  "web.backpressure.num-samples",
  "web.backpressure.refresh-interval",
  "web.ssl.enabled",
}

--- What to use instead, where Flink's documentation of 1.x names a successor that 2.x has.
flinkremoved.REPLACEMENTS = {
  ["jobmanager.heap.size"] = "jobmanager.memory.process.size",
  ["jobmanager.heap.mb"] = "jobmanager.memory.process.size",
  ["taskmanager.heap.size"] = "taskmanager.memory.process.size",
  ["taskmanager.heap.mb"] = "taskmanager.memory.process.size",
  ["security.ssl.enabled"] = "security.ssl.internal.enabled and security.ssl.rest.enabled",
  ["web.ssl.enabled"] = "security.ssl.rest.enabled",
  ["jobmanager.web.ssl.enabled"] = "security.ssl.rest.enabled",
  ["cluster.evenly-spread-out-slots"] = "taskmanager.load-balance.mode",
  ["pipeline.default-kryo-serializers"] = "pipeline.serialization-config",
  ["pipeline.registered-kryo-types"] = "pipeline.serialization-config",
  ["pipeline.registered-pojo-types"] = "pipeline.serialization-config",
  ["taskmanager.registration.initial-backoff"] = "cluster.registration.initial-timeout",
  ["taskmanager.initial-registration-pause"] = "cluster.registration.initial-timeout",
  ["taskmanager.registration.max-backoff"] = "cluster.registration.max-timeout",
  ["taskmanager.max-registration-pause"] = "cluster.registration.max-timeout",
  ["taskmanager.registration.refused-backoff"] = "cluster.registration.refused-registration-delay",
  ["taskmanager.refused-registration-pause"] = "cluster.registration.refused-registration-delay",
}

local SET = {}
for _, k in ipairs(flinkremoved.KEYS) do SET[k] = true end

--- flinkremoved.removed(key) -> false | true, replacement-or-nil: whether Flink 2 no longer
-- knows the option `key`, and the option to use instead when there is one.
function flinkremoved.removed(key)
  if not SET[key] then return false end
  return true, flinkremoved.REPLACEMENTS[key]
end

return flinkremoved
