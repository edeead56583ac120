/* SPDX-License-Identifier: Apache-2.0 */
/* core/run: `flink-controller run`, the controller itself.
 *
 * Wires the transport (core/kube, core/reflector, core/workqueue, core/http) to the reconcile
 * framework (lua/fc/reconcile.lua through core/lhost) on one libev loop (docs/contracts.md,
 * "Reconcile" and "Transport"):
 *   - one reflector per kind (FlinkCluster; ConfigMap, StatefulSet, Service, Ingress, Job and
 *     Pod labelled fc.names.selector(); ControllerRevision unselected, fc.kinds any_labels, those
 *     a FlinkCluster controls kept) per --namespace, or over all namespaces; every event enqueues the owner key "namespace/name" (reflector_owner_key);
 *   - once every cache synced (and, with --leader-elect, while leading) up to --workers keys are
 *     in flight: expectations met (the caches show the key's own last writes, or
 *     RUN_EXPECT_TTL_S passed; else the key waits without a pass) -> snapshot ->
 *     fc.reconcile.run (protected) -> actions executed asynchronously in order (Flink calls
 *     detached: their answers enqueue the key) -> /status merge patch (with
 *     metadata.resourceVersion: a 409 requeues with backoff; skipped when the server already
 *     kept all it keeps of that status) -> the user-control annotation -> Events -> forget /
 *     rate-limited requeue / requeue_after; with --leader-elect nothing is written once
 *     leader_may_write says no (the Lease lost or its renew deadline passed);
 *   - SIGTERM/SIGINT: no new keys, work in flight finishes, exit 0 within RUN_STOP_GRACE_S.
 *
 * The rooms (one header each): core/options (the command line), core/snapshot (a pass's input),
 * core/executor (a pass's writes, through a kube_ops table), core/status, core/events (with their
 * correlator), core/expect (expectations), core/flinkcall (Flink REST calls), core/policyset
 * (--policy-configmap), core/clusterstate (the per-cluster record), core/replica (leader
 * election and --shards: which keys this replica works on and when it may write), core/flinkjob
 * (the FlinkJobs' keys and watch), core/admission (the admission webhook and its certificates);
 * core/runctx.h the state they share. The tunables below are theirs too.
 */
#ifndef FC_RUN_H
#define FC_RUN_H

#include "kube.h" /* KUBE_DEFAULT_BURST */

/* Keys in flight at once. A key in flight holds only its API writes (Flink calls run apart,
 * the policies run synchronously on the loop), so a worker is a cheap slot: 64 lets a resync of
 * 1,000 clusters go through in 16 rounds, the API write rate being bounded by the API server's
 * pace (or by --qps/--burst when given). */
#define RUN_WORKERS_DEFAULT 64
#define RUN_PASSES_PER_TURN 1      /* passes started per loop iteration (see run_pump_cb) */
#define RUN_TRIM_INTERVAL_S 2.0    /* seconds between malloc_trim calls while busy (run_trim_cb) */
#define RUN_TRIM_COST_FACTOR 50.0  /* the next trim waits this many times the last one's time */
#define RUN_MMAP_THRESHOLD (256 * 1024) /* bytes: larger blocks are mmapped (see run_main) */
/* The controller's client-side rate limit by default: none (qps 0), as controller-runtime's
 * since v0.21 (kubernetes-sigs/controller-runtime#3119, on SIG API Machinery's advice): the API
 * server's priority and fairness (APF, on since Kubernetes 1.20) queues and sheds load, and every
 * 429/5xx with Retry-After is waited out and retried (core/kube.c). The requests in flight stay
 * bounded by the workers (RUN_WORKERS_DEFAULT passes, one write at a time each) and the
 * reflectors. --qps N --burst N sets a token bucket for API servers without APF. */
#define RUN_DEFAULT_QPS 0.0
#define RUN_DEFAULT_BURST KUBE_DEFAULT_BURST
#define RUN_STOP_GRACE_S 9.0      /* seconds between SIGTERM and exit at the latest */
#define RUN_EVENT_DEDUP_S 600.0   /* an identical Event for a cluster within this is counted on the first (count, lastTimestamp) */
/* FlinkCluster cache resync period, seconds: 10 h, controller-runtime's default SyncPeriod. A
 * resync re-queues every cluster; the watches (with relists on 410) deliver every change, so it
 * is a safety net; at 10,000 clusters a 600 s period would keep passes running ~20 s of every 10
 * minutes (10,000 passes of ~2 ms with nothing to write). */
#define RUN_RESYNC_S 36000.0
/* How long a key waits for the cache to show the controller's own writes before its pass runs
 * anyway, seconds. Kubernetes' ControllerExpectations use 5 minutes (pkg/controller
 * controller_utils.go ExpectationsTimeout); a watch that lags longer than a minute has broken
 * and been restarted by the reflector (relist), so one minute bounds the stall a lost event can
 * cause without letting a healthy watch's lag through. */
#define RUN_EXPECT_TTL_S 60.0

/* `flink-controller run [options]`; argv[0] is "run". Returns the exit code: 0 after a clean
 * stop (SIGTERM/SIGINT), 1 when start-up fails (kubeconfig, policy dir, framework), 2 usage. */
int run_main(int argc, char **argv);

#endif
