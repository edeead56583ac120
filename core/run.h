/* core/run: `flink-controller run`, the controller itself.
 *
 * Wires the transport (core/kube, core/reflector, core/workqueue, core/http) to the reconcile
 * framework (lua/fc/reconcile.lua through core/lhost) on one libev loop (docs/contracts.md,
 * "Reconcile" and "Transport"):
 *   - one reflector per kind (FlinkCluster; ConfigMap, StatefulSet, Service, Ingress, Job,
 *     ControllerRevision and Pod labelled app=flink) per --namespace, or over all namespaces;
 *     every event enqueues the owner key "namespace/name" (reflector_owner_key);
 *   - once every cache synced (and, with --leader-elect, while leading) up to --workers keys are
 *     in flight: snapshot -> fc.reconcile.run (protected) -> actions executed asynchronously in
 *     order -> /status merge patch (with metadata.resourceVersion: a 409 requeues at once) ->
 *     Events -> forget / rate-limited requeue / requeue_after;
 *   - SIGTERM/SIGINT: no new keys, work in flight finishes, exit 0 within RUN_STOP_GRACE_S.
 *
 * Pure helpers below are exported for the unit tests (tests/c/test_run.c).
 */
#ifndef FC_RUN_H
#define FC_RUN_H

#include <jansson.h>

#define RUN_WORKERS_DEFAULT 2     /* keys in flight at once */
#define RUN_STOP_GRACE_S 9.0      /* seconds between SIGTERM and exit at the latest */
#define RUN_FLINK_TIMEOUT_MS 10000 /* one Flink REST call, milliseconds */
#define RUN_EVENT_DEDUP_S 600.0   /* an identical Event for a cluster is not repeated within */
#define RUN_RESYNC_S 600.0        /* FlinkCluster cache resync period, seconds */

/* `flink-controller run [options]`; argv[0] is "run". Returns the exit code: 0 after a clean
 * stop (SIGTERM/SIGINT), 1 when start-up fails (kubeconfig, policy dir, framework), 2 usage. */
int run_main(int argc, char **argv);

/* RFC 7386 merge patch turning `old` into `new` (both JSON values; NULL = absent): keys of
 * `old` missing in `new` become null, objects are diffed recursively, anything else that
 * differs is replaced whole (lists included). Returns a new reference: an empty object when
 * nothing differs; `new` itself (incref'd) when either side is not an object. */
json_t *run_merge_patch(json_t *old, json_t *new);

/* Records the answer to a Flink REST action in a cluster's `flink` snapshot state `st`
 * ({reachable=bool, jobs=[...], savepoint_triggers={<job id>={...}}}, docs/contracts.md
 * "Reconcile"). `result` is the action's "jobs" | "savepoint_trigger" | "savepoint_status"
 * (anything else: nothing recorded); `path` the request path (the trigger id of a poll is its
 * last segment); `status` the HTTP status (0: no answer), `body` the response text (may be
 * NULL), `error` the transport error ("" or NULL when none), `now` unix seconds.
 *   jobs: 2xx with a `jobs` list -> reachable=true, jobs=that list; else reachable=false
 *     (the last jobs are kept);
 *   savepoint_trigger: 2xx with `request-id` -> {request_id, status="IN_PROGRESS", time};
 *     else {error="<HTTP status or transport error>: <Flink errors>", time};
 *   savepoint_status: 2xx -> {request_id, status=<status.id>, location=<operation.location>,
 *     failure=<operation.failure-cause class: first stack-trace line>, time}; else error.
 * Returns 0, or -1 when `st` is not an object. */
int run_flink_record(json_t *st, const char *result, const char *job_id, const char *path,
                     long status, const char *body, const char *error, double now);

#endif
