/* SPDX-License-Identifier: Apache-2.0 */
/* core/flinkcall: Flink REST calls for the controller's `flink` actions (docs/contracts.md,
 * "Reconcile"): where a call goes (--flink-access), starting and cancelling one (JSON or a
 * multipart jar upload, straight over core/http or through the API server's service proxy with
 * core/kube), and recording an answer in a cluster's `flink` snapshot state for the policies.
 * Then the controller's calls in flight per key (the `flink` actions of a pass: one per key and
 * signature, a jar downloaded first for an upload, the answer kept for the next pass).
 */
#ifndef FC_FLINKCALL_H
#define FC_FLINKCALL_H

#include <jansson.h>

#include "http.h"
#include "kube.h"

#define FLINKCALL_TIMEOUT_MS 10000 /* one Flink REST call, milliseconds */
#define FLINKCALL_ANSWER_MAX ((size_t)1 << 20) /* bytes of one Flink answer kept for the policies */
#define FLINKCALL_ANSWER_TTL_S 3600           /* seconds an answer is kept when not asked again */

/* Records the answer to a Flink REST action in a cluster's `flink` snapshot state `st`
 * ({answers={...}}, docs/contracts.md "Reconcile"): st.answers[`id`] = {intent=<the action's
 * `intent`, as given>, status=<HTTP status, 0 when Flink did not answer>, body=<the response
 * text>, error=<transport error or "">, time=`now` (unix seconds)}. The core parses none of it:
 * lua/fc/flink.lua decodes the answers for the policies. A body longer than
 * FLINKCALL_ANSWER_MAX or not UTF-8 is recorded as status 0 with that error. Answers older
 * than FLINKCALL_ANSWER_TTL_S are dropped on each record. An empty or NULL `id` records
 * nothing. Returns 0, or -1 when `st` is not an object. */
int flinkcall_record(json_t *st, const char *id, json_t *intent, long status, const char *body,
                     const char *error, double now);

/* ---- Flink REST calls (the `flink` action) ---------------------------------------------------- */

/* How Flink REST calls reach a JobManager (--flink-access). SERVICE: straight to the Service's
 * cluster DNS name (needs the cluster network: in a pod). PROXY: through the API server's
 * service proxy with the kube client's credentials, TLS, rate limit and retries (works wherever
 * the API server is reachable; one more hop, load on the API server). AUTO: SERVICE when the
 * kube config is the in-cluster service account, else PROXY. */
typedef enum { FLINKCALL_AUTO = 0, FLINKCALL_SERVICE, FLINKCALL_PROXY } flinkcall_access;

/* Parses "auto" | "service" | "proxy" into *out; -1 for anything else. */
int flinkcall_access_parse(const char *s, flinkcall_access *out);

/* AUTO -> SERVICE when `kube_context` is "in-cluster" (kube_config_load_incluster), else PROXY;
 * SERVICE and PROXY are returned as they are. */
flinkcall_access flinkcall_access_resolve(flinkcall_access a, const char *kube_context);

/* Where one Flink REST call goes, into buf (n bytes). `target` is the action's
 * {scheme="http"|"https", namespace=, service=, port=<1..65535>}; `path` begins with '/' (query
 * allowed). With `base_url` (--flink-base-url, tests and demos) the result is the URL
 * "<base_url without trailing '/'><path>" whatever the access and target; else for SERVICE the
 * URL "<scheme>://<service>.<namespace>.svc:<port><path>", for PROXY the API server path of
 * kube_service_proxy_path (port as a number). AUTO must be resolved first. Returns 0; -1 (buf
 * "") when the target lacks a field, the access is AUTO or buf is too small. */
int flinkcall_location(char *buf, size_t n, flinkcall_access access, const char *base_url, json_t *target,
                       const char *path);

/* What a Flink call needs: the resolved access, the --flink-base-url override (or NULL), the
 * kube client (PROXY) and the HTTP client (SERVICE, base URL). */
typedef struct flinkcall_env {
    flinkcall_access access;
    const char *base_url;
    kube_client *kc;
    http_client *hc;
    /* NULL, or where each call's end is counted (clustermetrics_flink_request: method, route
     * template of the action's path, status, seconds from start to answer) */
    const struct metrics_controller *metrics;
} flinkcall_env;

typedef struct flinkcall flinkcall;

/* The answer of a Flink call: `status` the JobManager's HTTP status, or 0 when no answer came
 * from Flink (then `error` says why: transport error, timeout, or an API server proxy error
 * "JobManager unreachable through the API server: HTTP <code>: <Status message>", e.g. 503 "no
 * endpoints available for service ..." or 404 "services ... not found"); `body` Flink's body
 * ("" when none). Pointers are valid during the callback only. */
typedef void (*flinkcall_done_fn)(long status, const char *body, const char *error, void *ud);

/* Starts the Flink REST call of `action` ({method, path, body=<JSON or absent>, target,
 * timeout_ms=<optional>}) the way `env` says, JSON in and out, FLINKCALL_TIMEOUT_MS per attempt
 * (or the action's timeout_ms). With `part` (it and its data must outlive the call) the body
 * is that multipart/form-data part instead (POST /jars/upload). Through the proxy the call
 * goes through kube_request (the client's qps/burst limiter, 429 / 5xx+Retry-After retries, a
 * 401 re-reads the token file). `done` runs exactly once, never inside this call, unless
 * cancelled. Returns NULL with err filled when the action is malformed or cannot start (done
 * is then not called). */
flinkcall *flinkcall_start(const flinkcall_env *env, json_t *action, const http_part *part,
                                flinkcall_done_fn done, void *ud, char *err, size_t errlen);

/* Stops a call that has not reported; its callback will not run. */
void flinkcall_cancel(flinkcall *call);

/* ---- the calls in flight per key (core/run's `flink` actions) ------------------------------- */

struct run_ctx;
struct run_item;

/* Starts the Flink call of `flink` action `a` of item `it` on the loop, detached from the item (a
 * hung JobManager holds no worker): kept in ctx->fcalls, at most one per key and "<METHOD>
 * <path>"; skipped when that call is in flight or its answer is what this pass was run for
 * (it->fresh). An action with upload {url, max_bytes, timeout_ms} first downloads the jar into a
 * temporary file without a name (util_tmpfile), then sends it as the multipart part. The answer
 * (or the reason there is none: status 0) is recorded with flinkcall_record in the key's
 * cluster_state flink, marked fresh for the next pass, logged, and enqueues the key. A call that
 * cannot start is recorded as such at once (an unreachable JobManager, not a failed key). */
void flinkcall_for_action(struct run_item *it, json_t *a);

/* Cancels the Flink calls in flight of `key` (NULL: all); their answers are never used. */
void flinkcall_cancel_key(struct run_ctx *ctx, const char *key);

#endif
