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
 * Pure helpers below are exported for the unit tests (tests/c/test_run.c).
 */
#ifndef FC_RUN_H
#define FC_RUN_H

#include <jansson.h>

#include "http.h"
#include "kube.h"

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
#define RUN_FLINK_TIMEOUT_MS 10000 /* one Flink REST call, milliseconds */
#define RUN_FLINK_ANSWER_MAX ((size_t)1 << 20) /* bytes of one Flink answer kept for the policies */
#define RUN_FLINK_ANSWER_TTL_S 3600           /* seconds an answer is kept when not asked again */
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

/* 1 when resourceVersion `have` is `want` or newer. Resource versions are opaque strings to
 * clients (Kubernetes API concepts, "Resource versions"), but an etcd-backed API server hands out
 * increasing decimal integers (the etcd revision): two such are compared as numbers (leading
 * zeros ignored), anything else only for equality. NULL on either side: 0. */
int run_rv_at_least(const char *have, const char *want);

/* `flink-controller run [options]`; argv[0] is "run". Returns the exit code: 0 after a clean
 * stop (SIGTERM/SIGINT), 1 when start-up fails (kubeconfig, policy dir, framework), 2 usage. */
int run_main(int argc, char **argv);

/* RFC 7386 merge patch turning `old` into `new` (both JSON values; NULL = absent): keys of
 * `old` missing in `new` become null, objects are diffed recursively, anything else that
 * differs is replaced whole (lists included). Returns a new reference: an empty object when
 * nothing differs; `new` itself (incref'd) when either side is not an object. */
json_t *run_merge_patch(json_t *old, json_t *new);

/* Records the answer to a Flink REST action in a cluster's `flink` snapshot state `st`
 * ({answers={...}}, docs/contracts.md "Reconcile"): st.answers[`id`] = {intent=<the action's
 * `intent`, as given>, status=<HTTP status, 0 when Flink did not answer>, body=<the response
 * text>, error=<transport error or "">, time=`now` (unix seconds)}. The core parses none of it:
 * lua/fc/flink.lua decodes the answers for the policies. A body longer than
 * RUN_FLINK_ANSWER_MAX or not UTF-8 is recorded as status 0 with that error. Answers older
 * than RUN_FLINK_ANSWER_TTL_S are dropped on each record. An empty or NULL `id` records
 * nothing. Returns 0, or -1 when `st` is not an object. */
int run_flink_record(json_t *st, const char *id, json_t *intent, long status, const char *body,
                     const char *error, double now);

/* ---- Flink REST calls (the `flink` action) ---------------------------------------------------- */

/* How Flink REST calls reach a JobManager (--flink-access). SERVICE: straight to the Service's
 * cluster DNS name (needs the cluster network: in a pod). PROXY: through the API server's
 * service proxy with the kube client's credentials, TLS, rate limit and retries (works wherever
 * the API server is reachable; one more hop, load on the API server). AUTO: SERVICE when the
 * kube config is the in-cluster service account, else PROXY. */
typedef enum { RUN_FLINK_AUTO = 0, RUN_FLINK_SERVICE, RUN_FLINK_PROXY } run_flink_access;

/* Parses "auto" | "service" | "proxy" into *out; -1 for anything else. */
int run_flink_access_parse(const char *s, run_flink_access *out);

/* AUTO -> SERVICE when `kube_context` is "in-cluster" (kube_config_load_incluster), else PROXY;
 * SERVICE and PROXY are returned as they are. */
run_flink_access run_flink_access_resolve(run_flink_access a, const char *kube_context);

/* Where one Flink REST call goes, into buf (n bytes). `target` is the action's
 * {scheme="http"|"https", namespace=, service=, port=<1..65535>}; `path` begins with '/' (query
 * allowed). With `base_url` (--flink-base-url, tests and demos) the result is the URL
 * "<base_url without trailing '/'><path>" whatever the access and target; else for SERVICE the
 * URL "<scheme>://<service>.<namespace>.svc:<port><path>", for PROXY the API server path of
 * kube_service_proxy_path (port as a number). AUTO must be resolved first. Returns 0; -1 (buf
 * "") when the target lacks a field, the access is AUTO or buf is too small. */
int run_flink_location(char *buf, size_t n, run_flink_access access, const char *base_url, json_t *target,
                       const char *path);

/* What a Flink call needs: the resolved access, the --flink-base-url override (or NULL), the
 * kube client (PROXY) and the HTTP client (SERVICE, base URL). */
typedef struct run_flink_env {
    run_flink_access access;
    const char *base_url;
    kube_client *kc;
    http_client *hc;
    /* NULL, or where each call's end is counted (clustermetrics_flink_request: method, route
     * template of the action's path, status, seconds from start to answer) */
    const struct metrics_controller *metrics;
} run_flink_env;

typedef struct run_flink_call run_flink_call;

/* The answer of a Flink call: `status` the JobManager's HTTP status, or 0 when no answer came
 * from Flink (then `error` says why: transport error, timeout, or an API server proxy error
 * "JobManager unreachable through the API server: HTTP <code>: <Status message>", e.g. 503 "no
 * endpoints available for service ..." or 404 "services ... not found"); `body` Flink's body
 * ("" when none). Pointers are valid during the callback only. */
typedef void (*run_flink_done_fn)(long status, const char *body, const char *error, void *ud);

/* Starts the Flink REST call of `action` ({method, path, body=<JSON or absent>, target,
 * timeout_ms=<optional>}) the way `env` says, JSON in and out, RUN_FLINK_TIMEOUT_MS per attempt
 * (or the action's timeout_ms). With `part` (it and its data must outlive the call) the body
 * is that multipart/form-data part instead (POST /jars/upload). Through the proxy the call
 * goes through kube_request (the client's qps/burst limiter, 429 / 5xx+Retry-After retries, a
 * 401 re-reads the token file). `done` runs exactly once, never inside this call, unless
 * cancelled. Returns NULL with err filled when the action is malformed or cannot start (done
 * is then not called). */
run_flink_call *run_flink_start(const run_flink_env *env, json_t *action, const http_part *part,
                                run_flink_done_fn done, void *ud, char *err, size_t errlen);

/* Stops a call that has not reported; its callback will not run. */
void run_flink_cancel(run_flink_call *call);

#endif
