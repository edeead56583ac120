/* SPDX-License-Identifier: Apache-2.0 */
/* core/clustermetrics: the Flink-level metrics of the controller (docs/monitoring.md), filled
 * into the families of metrics_controller (core/metrics.h):
 *   - the FlinkClusters as the watch cache shows them, kept by the cache's events in a small
 *     index (clustermetrics_index: a few fields per cluster, so that a scrape decodes no cached
 *     object) and turned into gauges at each scrape by clustermetrics_collect, which clears the
 *     families first: a deleted cluster's series are gone at the next scrape (as
 *     kube-state-metrics' stores fed by informers);
 *   - the savepoints that ended, counted once when the status recording the end is written
 *     (clustermetrics_savepoint_ended);
 *   - Flink REST calls by route template (clustermetrics_route, clustermetrics_flink_request).
 * No I/O; callers are on the one loop.
 */
#ifndef FC_CLUSTERMETRICS_H
#define FC_CLUSTERMETRICS_H

#include <stddef.h>
#include <jansson.h>

#include "metrics.h"

/* The route template of a Flink REST path: the query string dropped, and the segment after
 * "jobs" -> ":jobid" (but "overview"), after "jars" -> ":jarid" (but "upload"), after
 * "savepoints", "savepoint-disposal" or "checkpoints" (but "config", "details": Flink's
 * /jobs/:jobid/checkpoints/:triggerid, a triggered checkpoint) -> ":triggerid", after
 * "vertices" -> ":vertexid", after "taskmanagers" -> ":taskmanagerid" (but "metrics"); any other segment of 16 or more hex digits, or of digits only, -> ":id".
 * E.g. "/jobs/3f1c.../savepoints/9a0b..." -> "/jobs/:jobid/savepoints/:triggerid",
 * "/jars/7d2e..._ticker.jar/run?entry-class=X" -> "/jars/:jarid/run". Writes buf (n bytes;
 * truncated to "" and -1 when too small or `path` is NULL); 0 otherwise. */
int clustermetrics_route(const char *path, char *buf, size_t n);

/* One Flink REST call ended: flink_requests_total{method, route, code} += 1 and
 * flink_request_duration_seconds{method, route} observes `seconds` (ignored when negative).
 * `status` is the HTTP status, 0 when the JobManager did not answer. */
void clustermetrics_flink_request(const metrics_controller *m, const char *method, const char *path, long status,
                                  double seconds);

/* Starts a collection: clears clusters, jobs, job_restarts and job_last_savepoint. */
void clustermetrics_begin(const metrics_controller *m);

/* Counts one FlinkCluster object (borrowed): clusters{namespace, status.state or "Unknown"} += 1;
 * with spec.job: jobs{namespace, status.components.job.state or "Unknown"} += 1,
 * job_restarts{namespace, name} = restartCount (0 when absent), and
 * job_last_savepoint{namespace, name} = lastSavepointTime as Unix seconds when it parses as
 * RFC 3339. Each cluster once per collection. Returns 0, -1 when `cluster` has no
 * metadata.namespace/name (nothing counted). */
int clustermetrics_add(const metrics_controller *m, json_t *cluster);

/* The collector's view of the FlinkClusters: per "namespace/name", the fields
 * clustermetrics_add reads (state, job state, restartCount, lastSavepointTime parsed), a
 * few hundred bytes a cluster. */
typedef struct clustermetrics_index clustermetrics_index;

/* NULL on out-of-memory. */
clustermetrics_index *clustermetrics_index_new(void);
void clustermetrics_index_free(clustermetrics_index *x);
/* A FlinkCluster added or changed (borrowed; replaces what the index held of it). 0, or -1
 * when it has no metadata.namespace/name. */
int clustermetrics_index_put(clustermetrics_index *x, json_t *cluster);
/* A FlinkCluster deleted: forgotten. */
void clustermetrics_index_delete(clustermetrics_index *x, json_t *cluster);
size_t clustermetrics_index_len(const clustermetrics_index *x);
/* Calls fn(key, ud) with each indexed cluster's "namespace/name" (borrowed for the call); fn
 * must not change the index. For counts at a scrape without decoding cached objects. */
void clustermetrics_index_keys(const clustermetrics_index *x, void (*fn)(const char *key, void *ud), void *ud);
/* clustermetrics_begin, then every indexed cluster counted as clustermetrics_add does. */
void clustermetrics_collect(const metrics_controller *m, const clustermetrics_index *x);

/* Counts a savepoint that ended between the status `old` (as the pass read it; NULL: none) and
 * the status `new` just written: when new.savepoint.state is Succeeded, Failed or TriggerFailed
 * and old.savepoint differs in state or triggerID, savepoints_total{namespace, operation="stop"
 * when new.savepoint.stop is true else "savepoint", result "success"|"failure"} += 1. Returns
 * 1 when counted, 0 otherwise. */
int clustermetrics_savepoint_ended(const metrics_controller *m, const char *ns, json_t *old, json_t *new);

#endif
