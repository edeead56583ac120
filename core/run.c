/* SPDX-License-Identifier: Apache-2.0 */
/* core/run: `flink-controller run` (see run.h and docs/contracts.md, "Reconcile"/"Transport"). */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>
#include <lua.h>
#include <openssl/evp.h>

#include "http.h"
#include "kube.h"
#include "leader.h"
#include "lhost.h"
#include "log.h"
#include "clustermetrics.h"
#include "metrics.h"
#include "override.h"
#include "reflector.h"
#include "run.h"
#include "server.h"
#include "webhook.h"
#include "certsync.h"
#include "util.h"
#include "workqueue.h"

/* ---- pure helpers (exported for tests) ---------------------------------------------------- */

json_t *run_merge_patch(json_t *old, json_t *new)
{
    if (!json_is_object(old) || !json_is_object(new))
        return new ? json_incref(new) : json_null();
    json_t *patch = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(old, k, v)
    {
        if (!json_object_get(new, k))
            json_object_set_new(patch, k, json_null());
    }
    json_object_foreach(new, k, v)
    {
        json_t *o = json_object_get(old, k);
        if (!o) {
            json_object_set(patch, k, v);
        } else if (json_is_object(o) && json_is_object(v)) {
            json_t *sub = run_merge_patch(o, v);
            if (json_object_size(sub) > 0)
                json_object_set(patch, k, sub);
            json_decref(sub);
        } else if (!json_equal(o, v)) {
            json_object_set(patch, k, v);
        }
    }
    return patch;
}

int run_flink_record(json_t *st, const char *id, json_t *intent, long status, const char *body,
                     const char *error, double now)
{
    if (!json_is_object(st))
        return -1;
    if (!id || !*id)
        return 0;
    json_t *answers = json_object_get(st, "answers");
    if (!json_is_object(answers)) {
        answers = json_object();
        json_object_set_new(st, "answers", answers);
    }
    /* answers nobody asked again for RUN_FLINK_ANSWER_TTL_S are forgotten */
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(answers, tmp, k, v)
    {
        if (now - json_number_value(json_object_get(v, "time")) > RUN_FLINK_ANSWER_TTL_S)
            json_object_del(answers, k);
    }
    size_t n = body ? strlen(body) : 0;
    json_t *text = n > RUN_FLINK_ANSWER_MAX ? NULL : json_stringn(body ? body : "", n);
    const char *why = error ? error : "";
    if (!text && !*why)
        why = n > RUN_FLINK_ANSWER_MAX ? "answer larger than RUN_FLINK_ANSWER_MAX bytes" : "answer is not UTF-8";
    json_t *a = json_pack("{s:O?, s:I, s:o, s:s, s:I}", "intent", json_is_object(intent) ? intent : NULL, "status",
                          (json_int_t)(text ? status : 0), "body", text ? text : json_string(""), "error", why,
                          "time", (json_int_t)now);
    if (!a)
        return -1;
    json_object_set_new(answers, id, a);
    return 0;
}

/* ---- Flink REST calls ---------------------------------------------------------------------- */

int run_flink_access_parse(const char *s, run_flink_access *out)
{
    static const char *const names[] = {[RUN_FLINK_AUTO] = "auto", [RUN_FLINK_SERVICE] = "service",
                                        [RUN_FLINK_PROXY] = "proxy"};
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (run_flink_access)i;
            return 0;
        }
    return -1;
}

run_flink_access run_flink_access_resolve(run_flink_access a, const char *kube_context)
{
    if (a != RUN_FLINK_AUTO)
        return a;
    return kube_context && strcmp(kube_context, "in-cluster") == 0 ? RUN_FLINK_SERVICE : RUN_FLINK_PROXY;
}

int run_flink_location(char *buf, size_t n, run_flink_access access, const char *base_url, json_t *target,
                       const char *path)
{
    if (!buf || !n)
        return -1;
    buf[0] = '\0';
    if (!path || path[0] != '/')
        return -1;
    int w = -1;
    if (base_url) {
        size_t bl = strlen(base_url);
        while (bl > 0 && base_url[bl - 1] == '/')
            bl--;
        w = snprintf(buf, n, "%.*s%s", (int)bl, base_url, path);
    } else {
        const char *scheme = json_string_value(json_object_get(target, "scheme"));
        const char *ns = json_string_value(json_object_get(target, "namespace"));
        const char *svc = json_string_value(json_object_get(target, "service"));
        json_t *jp = json_object_get(target, "port");
        json_int_t port = json_is_integer(jp) ? json_integer_value(jp)
                          : json_is_real(jp) && json_real_value(jp) == (double)(json_int_t)json_real_value(jp)
                              ? (json_int_t)json_real_value(jp) : 0;
        if (!scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) || !ns || !*ns || !svc ||
            !*svc || port < 1 || port > 65535)
            return -1;
        if (access == RUN_FLINK_SERVICE) {
            w = snprintf(buf, n, "%s://%s.%s.svc:%d%s", scheme, svc, ns, (int)port, path);
        } else if (access == RUN_FLINK_PROXY) {
            char ps[8];
            snprintf(ps, sizeof ps, "%d", (int)port);
            return kube_service_proxy_path(buf, n, ns, scheme, svc, ps, path);
        }
    }
    if (w < 0 || (size_t)w >= n) {
        buf[0] = '\0';
        return -1;
    }
    return 0;
}

struct run_flink_call {
    kube_call *kcall;
    http_request *hreq;
    run_flink_done_fn done;
    void *ud;
    const metrics_controller *metrics; /* flink_requests_total, or NULL */
    char method[16];
    char route[256];                    /* the path's route template */
    double started;                     /* monotonic seconds */
};

static double run_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run_flink_count(const struct run_flink_call *c, long status)
{
    if (c->metrics)
        clustermetrics_flink_request(c->metrics, c->method, c->route, status, run_monotonic() - c->started);
}

static void run_flink_http_done(http_request *req, const http_response *resp, void *ud)
{
    (void)req;
    struct run_flink_call *c = ud;
    c->hreq = NULL;
    run_flink_count(c, resp->status);
    c->done(resp->status, resp->body ? resp->body : "", resp->error ? resp->error : "", c->ud);
    free(c);
}

/* An answer of the API server itself (a metav1.Status: no endpoints, no such Service, no RBAC,
 * the dial to the pod failed) means the JobManager was not reached: reported as status 0 with
 * the reason, like a connection error. Flink's own errors are {"errors": [...]}. */
static void run_flink_kube_done(const kube_result *res, void *ud)
{
    struct run_flink_call *c = ud;
    c->kcall = NULL;
    const char *kind = json_string_value(json_object_get(res->body, "kind"));
    int ok = res->status >= 200 && res->status < 300;
    run_flink_count(c, res->status == 0 || (!ok && kind && strcmp(kind, "Status") == 0) ? 0 : res->status);
    if (res->status == 0) {
        c->done(0, "", *res->error ? res->error : "no answer from the API server", c->ud);
    } else if (!ok && kind && strcmp(kind, "Status") == 0) {
        char text[1024];
        snprintf(text, sizeof text, "JobManager unreachable through the API server: HTTP %ld: %s", res->status,
                 *res->message ? res->message : *res->reason ? res->reason : "no message");
        c->done(0, "", text, c->ud);
    } else {
        c->done(res->status, res->raw, "", c->ud);
    }
    free(c);
}

run_flink_call *run_flink_start(const run_flink_env *env, json_t *action, const http_part *part,
                                run_flink_done_fn done, void *ud, char *err, size_t errlen)
{
    const char *method = json_string_value(json_object_get(action, "method"));
    const char *path = json_string_value(json_object_get(action, "path"));
    char loc[2048];
    if (!env || !done || !method || !path) {
        util_set_err(err, errlen, "flink action needs method and path");
        return NULL;
    }
    if (run_flink_location(loc, sizeof loc, env->access, env->base_url, json_object_get(action, "target"), path)) {
        util_set_err(err, errlen, "flink action needs target {scheme, namespace, service, port} and a path "
                                  "starting with '/' (or the location is too long)");
        return NULL;
    }
    int proxy = !env->base_url && env->access == RUN_FLINK_PROXY;
    if ((proxy && !env->kc) || (!proxy && !env->hc)) {
        util_set_err(err, errlen, "flink call: no %s client", proxy ? "kube" : "http");
        return NULL;
    }
    struct run_flink_call *c = calloc(1, sizeof *c);
    json_t *body = part ? NULL : json_object_get(action, "body");
    json_t *tmo = json_object_get(action, "timeout_ms");
    long timeout_ms = json_is_integer(tmo) && json_integer_value(tmo) > 0 ? (long)json_integer_value(tmo)
                                                                          : RUN_FLINK_TIMEOUT_MS;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (!c || (body && !text)) {
        free(c);
        free(text);
        util_set_err(err, errlen, "flink call: out of memory");
        return NULL;
    }
    c->done = done;
    c->ud = ud;
    c->metrics = env->metrics;
    snprintf(c->method, sizeof c->method, "%s", method);
    if (clustermetrics_route(path, c->route, sizeof c->route))
        snprintf(c->route, sizeof c->route, "(too long)");
    c->started = run_monotonic();
    if (proxy) {
        kube_req r = {.method = method,
                      .path = loc,
                      .body = text,
                      .body_len = text ? strlen(text) : 0,
                      .part = part,
                      .timeout_s = timeout_ms / 1000.0};
        c->kcall = kube_request(env->kc, &r, run_flink_kube_done, c, err, errlen);
    } else {
        static const char *const hdrs[] = {"Content-Type: application/json", "Accept: application/json", NULL};
        http_opts ho = {.method = method,
                        .url = loc,
                        .headers = part ? hdrs + 1 : hdrs,
                        .body = text,
                        .body_len = text ? strlen(text) : 0,
                        .part = part,
                        .timeout_ms = timeout_ms,
                        .max_body = (size_t)16 << 20,
                        .on_done = run_flink_http_done,
                        .ud = c};
        c->hreq = http_request_start(env->hc, &ho, err, errlen);
    }
    free(text);
    if (!c->kcall && !c->hreq) {
        free(c);
        return NULL;
    }
    return c;
}

void run_flink_cancel(run_flink_call *c)
{
    if (!c)
        return;
    if (c->kcall)
        kube_cancel(c->kcall);
    if (c->hreq)
        http_request_cancel(c->hreq);
    free(c);
}

/* ---- the controller ------------------------------------------------------------------------ */

/* The watched kinds: [0] the FlinkClusters, then the children as lua/fc/kinds.lua declares them
 * (run_load_kinds, at start; one process runs one controller). */
enum { RUN_MAXKINDS = 1 + KUBE_KINDS_DEFINED_MAX };
static const kube_kind *run_kinds[RUN_MAXKINDS] = {&kube_kind_flinkcluster};
static int run_nkinds = 1;
/* bit k set: kind k's objects belong to a cluster by its `cluster` label, not by ownerReference */
static unsigned run_by_label;
/* bit k set: kind k is watched without the children's selector (kinds.lua any_labels: the original
 * operator's ControllerRevisions carry the FlinkCluster's labels; run_transform filters them) */
static unsigned run_any_labels;
/* The children's labels as lua/fc/names.lua declares them (fc.names.watch(), read by
 * run_load_kinds at start): the watches' selector ("app=flink,cluster"), the label whose value
 * names the cluster (the caches' index, the owner key of a pod) and the app label pair a written
 * object must carry for the cache to show it. Never freed: one process runs one controller. */
static struct {
    char *selector, *cluster, *app_label, *app;
} run_labels;

struct run_ns {
    char *ns; /* NULL: all namespaces */
    reflector *r[RUN_MAXKINDS];
};

struct run_opts {
    const char *kubeconfig;
    const char *context; /* --context: the kubeconfig's context (NULL: current-context) */
    const char **namespaces;
    size_t nns;
    const char *metrics_addr;
    const char *health_addr;
    const char *webhook_addr, *webhook_cert, *webhook_key;
    /* self-managed webhook certificates (core/certsync.h) */
    const char *webhook_secret, *webhook_service, *webhook_config, *webhook_hosts;
    double webhook_validity_s;
    int leader_elect;
    const char *leader_ns;
    double qps;
    int burst;
    int json_logs;
    log_level log_level;
    int workers;
    const char *flink_base;
    const char *debug_snapshot_dir; /* --debug-snapshot-dir: each pass's snapshot, by cluster */
    run_flink_access flink_access; /* as given; ctx->flink_env.access holds the resolved one */
    const char *policy_configmap;  /* --policy-configmap NS/NAME: policy overrides, or NULL */
    const char *policy_work_dir;   /* --policy-work-dir: where override sets are made */
    struct lhost_opts host;
};

/* The policy set serving and the --policy-configmap watch (docs/policies.md, "Overriding policies in
 * a running controller"). A set is the built-in dir (lhost's policy dir at start) or a
 * directory core/override made from it and the ConfigMap; one check runs at a time. */
struct run_override {
    char ns[254], name[254];     /* the ConfigMap; "" without --policy-configmap */
    reflector *r;
    char builtin_dir[4096], builtin_hash[OVERRIDE_HASH_LEN + 1];
    char active_dir[4096], active_hash[OVERRIDE_HASH_LEN + 1]; /* active_dir "" = built-in */
    char seen_rv[64];            /* the ConfigMap's resourceVersion last taken */
    override_check *check;       /* the check in flight */
    char check_dir[4096], check_hash[OVERRIDE_HASH_LEN + 1];
    json_t *check_cm;            /* the ConfigMap being checked */
    json_t *pending;             /* a newer ConfigMap seen meanwhile: checked next */
    int settled;                 /* the first set is decided: keys may be taken */
};

struct run_item;

struct run_ctx {
    struct ev_loop *loop;
    struct run_opts o;
    struct lhost *host;
    kube_client *kc;
    http_client *hc;
    run_flink_env flink_env;
    workqueue *q;
    struct run_ns *nss;
    size_t nns;
    int inflight;
    int stopping;
    int synced;
    int leading;
    int exit_code;
    json_t *flink;   /* "ns/name" -> the cluster's flink snapshot state */
    json_t *emitted; /* "ns/name" -> {"type reason message": unix time emitted} */
    /* "ns/name" -> {"deadline": unix s, "objects": {"<kind index>/<name>": {"rv": s} | {"uid": s}}}:
     * the controller's own writes the cache must show before the key's next pass */
    json_t *expect;
    json_t *kept;    /* "ns/name" -> {"sent": digest of the status written, "kept": digest of the status the
                        server answered with} (run_status_digest) */
    json_t *fresh;   /* "ns/name" -> {"<METHOD> <path>": true}: Flink answers for the next pass */
    json_t *dryruns; /* "ns/name" -> {"<Kind>/<name>": {hash, status, message}}: dry-run answers */
    struct run_fcall *fcalls; /* Flink calls in flight (they hold no worker) */
    struct run_item *items;
    ev_signal sig_term, sig_int;
    ev_timer stop_timer;
    ev_idle pump_idle;
    ev_timer trim_timer;      /* gives malloc's free pages back after a burst (run_trim_cb) */
    unsigned long activity;   /* passes started and watch events since the last trim */
    double trim_next;         /* ev_now() before which no trim runs (its cost, run_trim_cb) */
    unsigned loop_iter_seen;  /* ev_iteration() at the last scrape (loop_iterations_total) */
    server *srv;
    webhook *wh;
    certsync *cs;
    leader_elector *le;
    int releasing;
    metrics_registry *reg;
    metrics_controller m;
    clustermetrics_index *cm_index; /* the FlinkClusters' figures for the metrics, kept by run_on_event */
    struct run_override ov;
    /* counters */
    unsigned long reconciles, reconcile_errors, actions_done, action_errors;
};

enum run_phase { PHASE_ACTIONS, PHASE_STATUS, PHASE_CONTROL, PHASE_HASH, PHASE_EVENTS, PHASE_DONE };

/* The annotation on each FlinkCluster naming the policy set that last reconciled it. */
#define RUN_POLICY_HASH_ANNOTATION "flinkoperator.k8s.io/policy-hash"

/* The kind of write in flight: a failed one becomes an Event with the matching reason. */
enum run_write { WRITE_PATCH, WRITE_APPLY, WRITE_DELETE, WRITE_STATUS, WRITE_DRY_RUN };

struct run_item {
    struct run_ctx *ctx;
    struct run_item *next_item;
    char *key;
    char ns[254];
    char name[254];
    json_t *cluster; /* the FlinkCluster the snapshot was built from */
    json_t *result;  /* fc.reconcile.run's answer */
    enum run_phase phase;
    size_t next;     /* next action / event index */
    int failed;
    int conflict;
    int status_refused; /* the status write failed or met a 409: the annotation stays */
    int waiting;        /* the cache lacks our last writes: no pass ran */
    int fenced;         /* leadership lost: the rest of the pass was dropped */
    int gone;           /* the status write found no FlinkCluster (404): no Events follow */
    int terminating;    /* a write met a namespace being deleted: the rest dropped, no retry */
    kube_call *call;
    char what[600];   /* the action in flight, for logs */
    enum run_write write;
    const char *verb; /* its HTTP method, for flink_controller_api_requests_total */
    json_t *sent;     /* the status being written */
    char del_uid[64]; /* uid of the object being deleted */
    int del_kind;     /* its index in run_kinds, -1 when not watched */
    char dry_key[300]; /* "<Kind>/<name>" of the object being dry-run applied */
    char dry_hash[80]; /* the applied-hash the framework sent with it */
    json_t *fresh;    /* the Flink answers this pass was run for ({"<METHOD> <path>": true}) */
    json_t *event;    /* the ctx->emitted entry of the Event being written (a reference) */
    double started; /* ev_time() when taken off the queue */
    char policy_hash[OVERRIDE_HASH_LEN + 1]; /* the set the pass ran with ("" when none ran) */
};

/* A Flink REST call in flight for a key; its answer goes into the key's flink state and
 * enqueues the key. */
struct run_fcall {
    struct run_ctx *ctx;
    struct run_fcall *next;
    char *key;
    char sig[600]; /* "<METHOD> <path>": one call per key and signature at a time */
    char id[128];  /* where the answer is recorded (answers[id]) */
    json_t *intent; /* recorded with the answer */
    run_flink_call *call;
    /* an upload action: the jar is downloaded first (dl) into a file without a name (jar_fd,
     * util_tmpfile: never whole in memory, freed when closed), then sent from it as the
     * multipart part */
    json_t *action;
    http_request *dl;
    int jar_fd;
    http_part part;
    char filename[256];
};

static void run_item_step(struct run_item *it);
static void run_pump(struct run_ctx *ctx);
static void run_fcall_free(struct run_fcall *c);

/* ---- logs --------------------------------------------------------------------------------- */

/* The workqueue key "<namespace>/<name>" split for logs: the namespace into `ns` (n bytes, ""
 * without a '/'), the name returned (inside `key`). */
static const char *run_key_split(const char *key, char *ns, size_t n)
{
    const char *slash = strchr(key, '/');
    snprintf(ns, n, "%.*s", slash ? (int)(slash - key) : 0, key);
    return slash ? slash + 1 : key;
}

/* One record through core/log (log.h, "Keys"): `msg` a constant phrase; when `key` is a workqueue
 * key "<namespace>/<name>" the record carries "cluster" = name and "namespace" (NULL: a line
 * about no FlinkCluster); then the caller's key/value pairs, const char *, ended by NULL (at
 * most 22 pairs). */
static void run_log(log_level level, const char *key, const char *msg, ...) __attribute__((sentinel));
static void run_log(log_level level, const char *key, const char *msg, ...)
{
    if (!log_enabled(level))
        return;
    const char *kvs[2 * 24];
    size_t n = 0;
    char ns[256];
    if (key) {
        kvs[n++] = "cluster";
        kvs[n++] = run_key_split(key, ns, sizeof ns);
        kvs[n++] = "namespace";
        kvs[n++] = ns;
    }
    va_list ap;
    va_start(ap, msg);
    for (const char *k; n + 2 <= sizeof kvs / sizeof *kvs && (k = va_arg(ap, const char *));) {
        const char *v = va_arg(ap, const char *);
        kvs[n++] = k;
        kvs[n++] = v ? v : "(MISSING)";
        if (!v)
            break;
    }
    va_end(ap);
    log_kv(level, msg, n / 2, kvs);
}

/* Numbers as log values, in a buffer that lives as long as the enclosing block (a compound
 * literal): RUN_LD(long) "%ld", RUN_MS(seconds) milliseconds "%.1f", RUN_ZU(size_t). */
static const char *run_fmt(char *b, size_t n, const char *fmt, double v)
{
    snprintf(b, n, fmt, v);
    return b;
}
#define RUN_LD(v) run_fmt((char[32]){0}, 32, "%.0f", (double)(v))
#define RUN_ZU(v) RUN_LD(v)
#define RUN_MS(s) run_fmt((char[32]){0}, 32, "%.1f", (double)(s) * 1000.0)

/* A Flink REST call's record: "method" and "path" from the call's signature "<METHOD> <path>",
 * "job" when the path names one (/jobs/<32 hex digits>...), "http_code" when `code` >= 0 and
 * "error" when `error` is not NULL. */
static void run_log_flink(log_level level, const char *key, const char *msg, const char *sig, long code,
                          const char *error)
{
    if (!log_enabled(level))
        return;
    char method[16], job[33] = "";
    const char *sp = strchr(sig, ' ');
    const char *path = sp ? sp + 1 : "?";
    snprintf(method, sizeof method, "%.*s", sp ? (int)(sp - sig) : 1, sp ? sig : "?");
    if (strncmp(path, "/jobs/", 6) == 0 && strspn(path + 6, "0123456789abcdef") == 32 &&
        (path[38] == '\0' || path[38] == '/' || path[38] == '?'))
        snprintf(job, sizeof job, "%.32s", path + 6);
    const char *kv[8] = {NULL};
    size_t n = 0;
    if (*job) {
        kv[n++] = "job";
        kv[n++] = job;
    }
    if (code >= 0) {
        kv[n++] = "http_code";
        kv[n++] = RUN_LD(code);
    }
    if (error) {
        kv[n++] = "error";
        kv[n++] = error;
    }
    run_log(level, key, msg, "method", method, "path", path, kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], NULL);
}

/* An Event's record, "event" with "event_type", "reason" and "message" (its `mlen` bytes: a NUL
 * in it, a policy's message naming a value "a\u0000b", is written escaped, not the end of the
 * line). */
static void run_log_event(const char *key, const char *type, const char *reason, const char *message,
                          size_t mlen)
{
    log_level level = strcmp(type, "Warning") == 0 ? LOG_WARN : LOG_INFO;
    if (!log_enabled(level))
        return;
    char ns[256];
    const char *kvs[] = {"cluster", run_key_split(key, ns, sizeof ns), "namespace", ns, "event_type", type,
                         "reason", reason, "message", message};
    size_t lens[] = {strlen(kvs[1]), strlen(ns), strlen(type), strlen(reason), mlen};
    log_kvn(level, "event", strlen("event"), 5, kvs, lens);
}

/* ---- metrics ------------------------------------------------------------------------------ */

static void run_count_request(struct run_ctx *ctx, const char *verb, long status)
{
    char code[16];
    snprintf(code, sizeof code, "%ld", status);
    const char *v[] = {code, verb};
    metrics_inc(ctx->m.api_requests_total, v);
}

/* The index in run_kinds of the reflector r (0: FlinkCluster), -1 when it is none of ours. */
static int run_kind_index(struct run_ctx *ctx, const reflector *r)
{
    for (size_t i = 0; i < ctx->nns; i++)
        for (int k = 0; k < run_nkinds; k++)
            if (ctx->nss[i].r[k] == r)
                return k;
    return -1;
}

static const char *run_kind_name(int k)
{
    return k >= 0 ? run_kinds[k]->kind : "?";
}

static void run_on_scrape(void *ud)
{
    struct run_ctx *ctx = ud;
    if (ctx->q)
        metrics_set(ctx->m.workqueue_depth, NULL, (double)workqueue_len(ctx->q));
    metrics_set(ctx->m.leader, NULL, ctx->o.leader_elect && ctx->leading ? 1 : 0);
    metrics_set(ctx->m.lua_memory_bytes, NULL, (double)lhost_mem_used(ctx->host));
    struct mallinfo2 mi = mallinfo2();
    const char *in_use[] = {"in_use"}, *free_[] = {"free"};
    metrics_set(ctx->m.heap_bytes, in_use, (double)(mi.uordblks + mi.hblkhd));
    metrics_set(ctx->m.heap_bytes, free_, (double)mi.fordblks);
    unsigned it = ev_iteration(ctx->loop);  /* wraps at 2^32: the difference stays right */
    metrics_add(ctx->m.loop_iterations_total, NULL, (double)(unsigned)(it - ctx->loop_iter_seen));
    ctx->loop_iter_seen = it;
    for (int k = 0; k < run_nkinds; k++) {
        size_t n = 0, bytes = 0;
        for (size_t i = 0; i < ctx->nns; i++) {
            n += reflector_len(ctx->nss[i].r[k]);
            bytes += reflector_bytes(ctx->nss[i].r[k]);
        }
        const char *kv[] = {run_kinds[k]->kind};
        metrics_set(ctx->m.cache_objects, kv, (double)n);
        metrics_set(ctx->m.cache_bytes, kv, (double)bytes);
    }
    metrics_process_update(&ctx->m.process);
    /* the Flink clusters as the cache shows them now: a deleted one's series go */
    clustermetrics_collect(&ctx->m, ctx->cm_index);
}

/* ---- snapshot ------------------------------------------------------------------------------ */

static struct run_ns *run_ns_for(struct run_ctx *ctx, const char *ns)
{
    for (size_t i = 0; i < ctx->nns; i++)
        if (!ctx->nss[i].ns || strcmp(ctx->nss[i].ns, ns) == 0)
            return &ctx->nss[i];
    return NULL;
}

/* A shallow copy of a cached object with apiVersion and kind set (list items of built-in
 * kinds come without them). */
static json_t *run_typed(json_t *obj, const kube_kind *k)
{
    json_t *c = json_copy(obj);
    if (!c)
        return NULL;
    if (!json_is_string(json_object_get(c, "apiVersion")))
        json_object_set_new(c, "apiVersion", json_string(k->api_version));
    if (!json_is_string(json_object_get(c, "kind")))
        json_object_set_new(c, "kind", json_string(k->kind));
    return c;
}

/* The children's cached texts of one pass, placed at snapshot.children[Kind][name]: each part's
 * path and text point into its own buffer "<Kind>\0<name>\0<text>" (owned[i]). */
struct run_collect {
    struct lhost_part *parts;
    char **owned;
    size_t n, cap;
    const char *kind;
    json_t *names; /* "<Kind>/<name>" seen: an object found by owner and by label is placed once */
};

static void run_collect_fn(const char *name, const char *text, size_t len, void *ud)
{
    struct run_collect *c = ud;
    char id[600];
    int idlen = snprintf(id, sizeof id, "%s/%s", c->kind, name);
    if (idlen < 0 || (size_t)idlen >= sizeof id || json_object_get(c->names, id))
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct lhost_part *p = realloc(c->parts, cap * sizeof *p);
        if (p)
            c->parts = p;
        char **o = p ? realloc(c->owned, cap * sizeof *o) : NULL;
        if (o)
            c->owned = o;
        if (!p || !o)
            return;
        c->cap = cap;
    }
    size_t klen = strlen(c->kind);
    char *buf = malloc((size_t)idlen + 1 + len);
    if (!buf)
        return;
    memcpy(buf, id, (size_t)idlen + 1);
    buf[klen] = '\0';
    memcpy(buf + idlen + 1, text, len);
    json_object_set_new(c->names, id, json_true());
    c->owned[c->n] = buf;
    c->parts[c->n++] = (struct lhost_part){{"children", buf, buf + klen + 1, NULL}, buf + idlen + 1, len};
}

static void run_collect_free(struct run_collect *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->owned[i]);
    free(c->owned);
    free(c->parts);
    json_decref(c->names);
}

/* The Flink answers kept for `key`: {answers={...}, since=<unix s this process first kept
 * them>}; a request made before `since` (by an earlier process, e.g. one SIGKILLed) has no
 * answer to come. */
static json_t *run_flink_state(struct run_ctx *ctx, const char *key)
{
    json_t *st = json_object_get(ctx->flink, key);
    if (!st) {
        st = json_pack("{s:{}, s:I}", "answers", "since", (json_int_t)time(NULL));
        json_object_set_new(ctx->flink, key, st);
    }
    return st;
}

/* {cluster, children, flink, now} for the cluster `cluster` (cached) in `rn`, but for the
 * children's objects, which are collected into `c` (placed at children[Kind][name] by
 * lhost_call_json_parts from the cache's texts); children[Kind] is {} for every watched kind. */
static json_t *run_snapshot(struct run_ctx *ctx, struct run_ns *rn, const char *key, json_t *cluster,
                            struct run_collect *c)
{
    json_t *meta = json_object_get(cluster, "metadata");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    json_t *children = json_object();
    c->names = json_object();
    for (int k = 1; k < run_nkinds; k++) {
        c->kind = run_kinds[k]->kind;
        if (uid)
            reflector_texts_by_owner_uid(rn->r[k], uid, run_collect_fn, c);
        /* Pods belong to the StatefulSets and the Job: found by their cluster label */
        if (run_by_label & (1u << k))
            reflector_texts_by_cluster(rn->r[k], ns, name, run_collect_fn, c);
        json_object_set_new(children, run_kinds[k]->kind, json_object());
    }
    json_t *snap = json_object();
    json_object_set_new(snap, "cluster", run_typed(cluster, &kube_kind_flinkcluster));
    json_object_set_new(snap, "children", children);
    json_object_set(snap, "flink", run_flink_state(ctx, key));
    json_t *dry = json_object_get(ctx->dryruns, key);
    json_object_set_new(snap, "dry_runs", dry ? json_deep_copy(dry) : json_object());
    json_object_set_new(snap, "now", json_integer((json_int_t)time(NULL)));
    return snap;
}

/* The snapshot as one JSON text with the children's texts in place (--debug-snapshot-dir's
 * file, read back by `reconcile --snapshot`); NULL when a text does not decode. */
static char *run_snapshot_text(json_t *snap, const struct run_collect *c)
{
    json_t *whole = json_deep_copy(snap);
    json_t *children = json_object_get(whole, "children");
    for (size_t i = 0; i < c->n; i++) {
        const struct lhost_part *p = &c->parts[i];
        json_t *obj = json_loadb(p->text, p->len, JSON_ALLOW_NUL, NULL);
        if (!obj) {
            json_decref(whole);
            return NULL;
        }
        json_object_set_new(json_object_get(children, p->path[1]), p->path[2], obj);
    }
    char *text = json_dumps(whole, JSON_COMPACT);
    json_decref(whole);
    return text;
}

/* --debug-snapshot-dir: the pass's snapshot `text` (JSON) into DIR/<namespace>.<name>.json,
 * replaced atomically (a temporary file renamed), for `flink-controller reconcile --snapshot`.
 * A failure is logged, never a failed pass. */
static void run_write_snapshot(struct run_ctx *ctx, struct run_item *it, const char *text)
{
    char path[4096], tmp[4200];
    int n = snprintf(path, sizeof path, "%s/%s.%s.json", ctx->o.debug_snapshot_dir, it->ns, it->name);
    int m = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = n < (int)sizeof path && m < (int)sizeof tmp ? fopen(tmp, "w") : NULL;
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0)
        run_log(LOG_WARN, it->key, "debug snapshot not written", "path", path, "error", strerror(errno), NULL);
}

/* ---- expectations: act only on what has been seen ------------------------------------------- */

int run_rv_at_least(const char *have, const char *want)
{
    if (!have || !want)
        return 0;
    size_t hl = strspn(have, "0123456789"), wl = strspn(want, "0123456789");
    if (!hl || !wl || have[hl] || want[wl])
        return strcmp(have, want) == 0;
    while (*have == '0' && hl > 1)
        have++, hl--;
    while (*want == '0' && wl > 1)
        want++, wl--;
    return hl != wl ? hl > wl : strcmp(have, want) >= 0;
}

/* The index in run_kinds of an object's kind (apiVersion and kind as the server answers), -1
 * when it is not watched. */
static int run_kind_of(json_t *obj)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    for (int k = 0; kind && k < run_nkinds; k++)
        if (strcmp(run_kinds[k]->kind, kind) == 0 && (!av || strcmp(run_kinds[k]->api_version, av) == 0))
            return k;
    return -1;
}

/* Records that the key's next pass waits until the cache shows `want` for object `name` of
 * kind index `k` ({"rv": <resourceVersion or newer>}, {"uid": <gone, or another uid>} or
 * {"not_rv": <any resourceVersion but this one>}); steals `want`. Each write restarts the
 * key's RUN_EXPECT_TTL_S. */
static void run_expect(struct run_ctx *ctx, const char *key, int k, const char *name, json_t *want)
{
    json_t *e = json_object_get(ctx->expect, key);
    char id[320];
    if (k < 0 || !name || snprintf(id, sizeof id, "%d/%s", k, name) >= (int)sizeof id) {
        json_decref(want);
        return;
    }
    if (!e) {
        e = json_pack("{s:f, s:{}}", "deadline", 0.0, "objects");
        json_object_set_new(ctx->expect, key, e);
    }
    json_object_set_new(e, "deadline", json_real(ev_time() + RUN_EXPECT_TTL_S));
    json_object_set_new(json_object_get(e, "objects"), id, want);
}

/* The object a write answered with (`obj`, kind index `k`): the cache must reach its
 * resourceVersion. Children the reflectors cannot see (no cluster label) expect nothing. */
static void run_expect_written(struct run_ctx *ctx, const char *key, int k, json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    json_t *labels = json_object_get(meta, "labels");
    const char *app = json_string_value(json_object_get(labels, run_labels.app_label));
    int ours = json_is_string(json_object_get(labels, run_labels.cluster)) && app && strcmp(app, run_labels.app) == 0;
    if (!rv || (k > 0 && !ours))
        return;
    run_expect(ctx, key, k, json_string_value(json_object_get(meta, "name")), json_pack("{s:s}", "rv", rv));
}

/* Seconds the key still waits for the cache (> 0), or 0 when every expectation is met (or they
 * expired: logged), then forgotten. */
static double run_expect_pending(struct run_ctx *ctx, struct run_ns *rn, const char *key, const char *ns)
{
    json_t *e = json_object_get(ctx->expect, key);
    if (!e)
        return 0;
    json_t *objs = json_object_get(e, "objects");
    const char *id;
    json_t *want;
    void *tmp;
    json_object_foreach_safe(objs, tmp, id, want)
    {
        int k = atoi(id);
        const char *name = strchr(id, '/') + 1;
        json_t *have = k >= 0 && k < run_nkinds && rn->r[k] ? reflector_get_copy(rn->r[k], ns, name) : NULL;
        json_t *hm = json_object_get(have, "metadata");
        const char *uid = json_string_value(json_object_get(want, "uid"));
        const char *not_rv = json_string_value(json_object_get(want, "not_rv"));
        const char *have_rv = json_string_value(json_object_get(hm, "resourceVersion"));
        int met = uid      ? !have || !json_equal(json_object_get(hm, "uid"), json_object_get(want, "uid"))
                  : not_rv ? !have || !have_rv || strcmp(have_rv, not_rv) != 0
                           : have && run_rv_at_least(have_rv, json_string_value(json_object_get(want, "rv")));
        json_decref(have);
        if (met)
            json_object_del(objs, id);
    }
    double left = json_number_value(json_object_get(e, "deadline")) - ev_time();
    if (json_object_size(objs) && left <= 0)
        run_log(LOG_WARN, key, "cache lacks own writes, pass runs anyway", "objects", RUN_ZU(json_object_size(objs)),
                "wait_ms", RUN_MS(RUN_EXPECT_TTL_S), NULL);
    if (!json_object_size(objs) || left <= 0) {
        json_object_del(ctx->expect, key);
        return 0;
    }
    return left;
}

/* A status's digest for ctx->kept: hex SHA-256 of its compact JSON with sorted keys, without
 * lastUpdateTime (each pass that finds a difference stamps it) when `unstamped`; "" for none.
 * A digest, not the tree: the two statuses per cluster cost ~70 bytes instead of some KiB. */
static void run_status_digest(json_t *status, int unstamped, char out[65])
{
    out[0] = 0;
    if (!status)
        return;
    json_t *c = unstamped ? json_copy(status) : json_incref(status);
    if (unstamped)
        json_object_del(c, "lastUpdateTime");
    char *text = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(c);
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (text && EVP_Digest(text, strlen(text), sum, &len, EVP_sha256(), NULL) == 1)
        for (unsigned i = 0; i < len && i < 32; i++)
            snprintf(out + 2 * i, 3, "%02x", sum[i]);
    free(text);
}

/* 1 when a pass's new `status` is the one this controller last wrote for the key (but for the
 * stamp) and the `cached` status is what the server kept of that write: writing it again could
 * only be pruned again (a CRD whose status schema lacks fields). */
static int run_status_kept(struct run_ctx *ctx, const char *key, json_t *status, json_t *cached)
{
    json_t *last = json_object_get(ctx->kept, key);
    if (!last)
        return 0;
    char d[65];
    run_status_digest(cached, 0, d);
    if (strcmp(d, json_string_value(json_object_get(last, "kept")) ?: "-") != 0)
        return 0;
    run_status_digest(status, 1, d);
    return strcmp(d, json_string_value(json_object_get(last, "sent")) ?: "-") == 0;
}

/* Cancels the Flink calls in flight of `key` (NULL: all); their answers are never used. */
static void run_cancel_fcalls(struct run_ctx *ctx, const char *key)
{
    for (struct run_fcall **p = &ctx->fcalls; *p;) {
        struct run_fcall *c = *p;
        if (!key || strcmp(c->key, key) == 0) {
            *p = c->next;
            run_fcall_free(c);
        } else {
            p = &c->next;
        }
    }
}

/* Forgets what was kept for a key whose FlinkCluster is gone. */
static void run_forget_key(struct run_ctx *ctx, const char *key)
{
    json_object_del(ctx->flink, key);
    json_object_del(ctx->emitted, key);
    json_object_del(ctx->expect, key);
    json_object_del(ctx->kept, key);
    json_object_del(ctx->fresh, key);
    json_object_del(ctx->dryruns, key);
    run_cancel_fcalls(ctx, key);
}

/* ---- items: executing one key's result ----------------------------------------------------- */

static void run_item_free(struct run_item *it)
{
    struct run_ctx *ctx = it->ctx;
    for (struct run_item **p = &ctx->items; *p; p = &(*p)->next_item)
        if (*p == it) {
            *p = it->next_item;
            break;
        }
    json_decref(it->cluster);
    json_decref(it->result);
    json_decref(it->sent);
    json_decref(it->fresh);
    json_decref(it->event);
    free(it->key);
    free(it);
}

static void run_item_finish(struct run_item *it)
{
    struct run_ctx *ctx = it->ctx;
    json_t *ra = json_object_get(it->result, "requeue_after");
    double requeue = json_is_number(ra) ? json_number_value(ra) : 0;
    const char *res = it->conflict ? "conflict"
                      : it->failed || it->terminating ? "error"
                      : requeue > 0 ? "requeue"
                                    : "success";
    const char *rv[] = {res};
    if (!it->waiting && !it->fenced) {
        metrics_inc(ctx->m.reconcile_total, rv);
        if (it->started > 0)
            metrics_observe(ctx->m.reconcile_duration, rv, ev_time() - it->started);
    }
    if (it->waiting || it->fenced || it->terminating) {
        /* waiting: the watch event that brings our write enqueues the key (or the timeout set
         * by run_process); fenced: nothing more from this replica; terminating: the namespace's
         * deletion removes the cluster (its DELETED event forgets the key) */
        if (it->terminating)
            workqueue_forget(ctx->q, it->key);
    } else if (it->conflict) {
        /* a write of someone else came in between: the watch brings it; meanwhile back off as
         * for a failure (client-go: AddRateLimited on any error, conflicts included) */
        double d = workqueue_add_rate_limited(ctx->q, it->key);
        run_log(LOG_INFO, it->key, "status conflict", "retry_in_ms", RUN_MS(d), NULL);
    } else if (it->failed) {
        ctx->reconcile_errors++;
        double d = workqueue_add_rate_limited(ctx->q, it->key);
        if (d >= 0)
            run_log(LOG_WARN, it->key, "reconcile failed", "retry_in_ms", RUN_MS(d), NULL);
        else
            run_log(LOG_WARN, it->key, "reconcile failed", "reason", "Stopping", NULL);
    } else {
        workqueue_forget(ctx->q, it->key);
        if (requeue > 0)
            workqueue_add_after(ctx->q, it->key, requeue);
    }
    ctx->reconciles++;
    workqueue_done(ctx->q, it->key);
    ctx->inflight--;
    run_item_free(it);
    /* the next key on the next loop turn: no recursion through keys that finish at once */
    ev_idle_start(ctx->loop, &ctx->pump_idle);
}

/* A write of an action that failed becomes a Warning Event about the cluster (after the
 * framework's own): reason ApplyFailed / DeleteFailed / PatchFailed / StatusFailed, message
 * "<what>: HTTP <status>: <API message>" (status 0: no answer). */
static void run_failure_event(struct run_item *it, long status, const char *message)
{
    static const char *const reasons[] = {
        [WRITE_PATCH] = "PatchFailed", [WRITE_APPLY] = "ApplyFailed",
        [WRITE_DELETE] = "DeleteFailed", [WRITE_STATUS] = "StatusFailed", [WRITE_DRY_RUN] = "DryRunFailed"};
    const char *reason = reasons[it->write];
    char text[1024];
    snprintf(text, sizeof text, "%s: HTTP %ld: %s", it->what, status, message ? message : "");
    json_t *events = json_object_get(it->result, "events");
    if (!json_is_array(events)) {
        events = json_array();
        json_object_set_new(it->result, "events", events);
    }
    json_array_append_new(events, json_pack("{s:s, s:s, s:s}", "type", "Warning", "reason", reason, "message", text));
}

static void run_kube_done(const kube_result *res, void *ud)
{
    struct run_item *it = ud;
    it->call = NULL;
    struct run_ctx *ctx = it->ctx;
    run_count_request(ctx, it->verb ? it->verb : "PATCH", res->status);
    int ok = res->status >= 200 && res->status < 300;
    if (!ok && res->status == 404 && it->write == WRITE_DELETE)
        ok = 1; /* already gone */
    if (it->write == WRITE_DRY_RUN) {
        /* the answer is the framework's to judge in the next pass (snapshot.dry_runs), never a
         * failed key: a refusal is what a dry run is for */
        json_t *d = json_object_get(ctx->dryruns, it->key);
        if (!d) {
            d = json_object();
            json_object_set_new(ctx->dryruns, it->key, d);
        }
        json_object_set_new(d, it->dry_key,
                            json_pack("{s:s, s:I, s:s}", "hash", it->dry_hash, "status", (json_int_t)res->status,
                                      "message", ok ? "" : (res->message ? res->message : "")));
        run_log(ok ? LOG_DEBUG : LOG_INFO, it->key, ok ? "dry run accepted" : "dry run refused", "action", it->what,
                "http_code", RUN_LD(res->status), ok ? NULL : "error", res->message ? res->message : "", NULL);
    } else if (!ok && it->phase == PHASE_EVENTS) {
        /* an Event that cannot be written is logged, never a reason to retry the key; a repeat
         * whose Event is gone (expired by the API server's event TTL) creates a new one */
        run_log(LOG_WARN, it->key, "event write failed", "action", it->what, "http_code", RUN_LD(res->status), "error", res->message ? res->message : "", NULL);
        if (it->event) {
            json_object_del(it->event, "name");
            json_object_set_new(it->event, "count", json_integer(0));
        }
    } else if (!ok && it->phase == PHASE_STATUS && res->status == 409) {
        it->conflict = 1;
        it->status_refused = 1;
        /* someone else wrote the FlinkCluster after the version this pass read (a user's edit
         * or annotation the lagging watch has not brought yet): the next pass waits until the
         * cache shows another version, instead of retrying against the same stale one */
        const char *read_rv =
            json_string_value(json_object_get(json_object_get(it->cluster, "metadata"), "resourceVersion"));
        if (read_rv)
            run_expect(ctx, it->key, 0, it->name, json_pack("{s:s}", "not_rv", read_rv));
    } else if (!ok && it->phase == PHASE_STATUS && res->status == 404) {
        /* the FlinkCluster is gone: deleted after the cache showed it to this pass (a status
         * write on a cluster recreated meanwhile is a 409: its resourceVersion is another).
         * Nothing to retry and no Event about an object that no longer exists; the watch's
         * DELETED event forgets the key. */
        it->status_refused = 1;
        it->gone = 1;
        run_log(LOG_INFO, it->key, "cluster gone", "action", it->what, "http_code", "404", NULL);
    } else if (!ok && res->status == 403 && kube_status_has_cause(res->body, "NamespaceTerminating")) {
        /* the namespace is being deleted (its FlinkCluster with it): every further write of
         * this pass, its retry and its Warning Events would be refused the same way. As
         * Kubernetes' own controllers (the ReplicaSet and Job controllers ignore this cause):
         * the rest of the pass is dropped and not retried; a watch event enqueues the key again. */
        ctx->action_errors++;
        it->terminating = 1;
        it->status_refused = 1;
        it->phase = PHASE_DONE;
        run_log(LOG_INFO, it->key, "namespace terminating, pass not written", "action", it->what, "http_code", "403",
                "reason", "NamespaceTerminating", NULL);
    } else if (!ok) {
        ctx->action_errors++;
        it->failed = 1;
        it->status_refused |= it->phase == PHASE_STATUS;
        run_log(LOG_ERROR, it->key, it->phase == PHASE_STATUS ? "status write failed" : "write failed", "action", it->what, "http_code", RUN_LD(res->status), "error", res->message ? res->message : "", NULL);
        run_failure_event(it, res->status, res->message);
    } else {
        ctx->actions_done++;
        run_log(LOG_DEBUG, it->key, "written", "action", it->what, "http_code", RUN_LD(res->status), NULL);
        /* what the next pass waits to see in the cache */
        if (it->write == WRITE_DELETE)
            run_expect(ctx, it->key, it->del_kind, strrchr(it->what, ' ') + 1,
                       json_pack("{s:s}", "uid", it->del_uid));
        else if (it->phase != PHASE_EVENTS)
            run_expect_written(ctx, it->key, it->write == WRITE_APPLY ? run_kind_of(res->body) : 0, res->body);
        else if (it->event && json_is_string(json_object_get(json_object_get(res->body, "metadata"), "name")))
            json_object_set(it->event, "name", json_object_get(json_object_get(res->body, "metadata"), "name"));
        if (it->write == WRITE_STATUS) {
            char sent[65], kept[65];
            run_status_digest(it->sent, 1, sent);
            run_status_digest(json_object_get(res->body, "status"), 0, kept);
            json_object_set_new(ctx->kept, it->key, json_pack("{s:s, s:s}", "sent", sent, "kept", kept));
        }
    }
    if (it->event) {
        json_decref(it->event);
        it->event = NULL;
    }
    run_item_step(it);
}

static void run_fcall_free(struct run_fcall *c)
{
    if (c->dl)
        http_request_cancel(c->dl);
    run_flink_cancel(c->call);
    json_decref(c->intent);
    json_decref(c->action);
    if (c->jar_fd >= 0)
        close(c->jar_fd);
    free(c->key);
    free(c);
}

static void run_fcall_done(long status, const char *body, const char *error, void *ud)
{
    struct run_fcall *c = ud;
    struct run_ctx *ctx = c->ctx;
    c->call = NULL; /* it frees itself after this callback */
    for (struct run_fcall **p = &ctx->fcalls; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    run_flink_record(run_flink_state(ctx, c->key), c->id, c->intent, status, body, error, (double)time(NULL));
    if (status < 200 || status >= 300)
        run_log_flink(LOG_WARN, c->key, "flink request failed", c->sig, status,
                      *error ? error : *body ? body : "(an empty answer)");
    else
        run_log_flink(LOG_DEBUG, c->key, "flink request", c->sig, status, NULL);
    /* the next pass uses this answer at once (and does not ask the same again) */
    json_t *f = json_object_get(ctx->fresh, c->key);
    if (!f) {
        f = json_object();
        json_object_set_new(ctx->fresh, c->key, f);
    }
    json_object_set_new(f, c->sig, json_true());
    if (!ctx->stopping)
        workqueue_add(ctx->q, c->key);
    run_fcall_free(c);
}

/* The jar of an upload action arrived (or not): send it as the multipart part of the action's
 * request, or record the download's failure as the answer (status 0). */
static void run_fcall_downloaded(http_request *req, const http_response *resp, void *ud)
{
    (void)req;
    struct run_fcall *c = ud;
    c->dl = NULL;
    char err[600] = "";
    if (resp->status >= 200 && resp->status < 300 && !*resp->error) {
        /* resp->body_len: the bytes written to jar_fd */
        c->part = (http_part){.name = "jarfile", .filename = c->filename, .type = "application/x-java-archive",
                              .from_fd = 1, .fd = c->jar_fd, .len = resp->body_len};
        char e2[512] = "";
        c->call = run_flink_start(&c->ctx->flink_env, c->action, &c->part, run_fcall_done, c, e2, sizeof e2);
        if (c->call)
            return;
        snprintf(err, sizeof err, "%s", e2);
    } else {
        snprintf(err, sizeof err, "download %s: %s", json_string_value(json_object_get(json_object_get(c->action,
                 "upload"), "url")) ?: "?", *resp->error ? resp->error : "not a 2xx answer");
        if (!*resp->error)
            snprintf(err, sizeof err, "download %s: HTTP %ld",
                     json_string_value(json_object_get(json_object_get(c->action, "upload"), "url")) ?: "?",
                     resp->status);
    }
    run_fcall_done(0, "", err, c);
}

/* Starts the Flink call of action `a` on the loop, detached from the item (a hung JobManager
 * holds no worker). Skipped when the same call of this key is in flight, or when its answer is
 * what this pass was run for. */
static void run_start_fcall(struct run_item *it, json_t *a)
{
    struct run_ctx *ctx = it->ctx;
    const char *method = json_string_value(json_object_get(a, "method"));
    const char *path = json_string_value(json_object_get(a, "path"));
    const char *id = json_string_value(json_object_get(a, "id"));
    struct run_fcall *c = calloc(1, sizeof *c);
    char err[512] = "out of memory";
    if (!c || !(c->key = strdup(it->key))) {
        free(c);
        run_log(LOG_WARN, it->key, "flink request not started", "method", method ?: "?", "path", path ?: "?", "error", err, NULL);
        return;
    }
    c->ctx = ctx;
    c->jar_fd = -1;
    snprintf(c->sig, sizeof c->sig, "%s %s", method ?: "?", path ?: "?");
    snprintf(c->id, sizeof c->id, "%s", id ? id : "");
    c->intent = json_incref(json_object_get(a, "intent"));
    int busy = json_object_get(it->fresh, c->sig) != NULL;
    for (struct run_fcall *o = ctx->fcalls; o && !busy; o = o->next)
        busy = strcmp(o->key, c->key) == 0 && strcmp(o->sig, c->sig) == 0;
    json_t *up = json_object_get(a, "upload");
    if (!busy && json_is_object(up)) {
        /* the jar first: GET upload.url with its size cap and timeout (libcurl, TLS verified)
         * into a temporary file (the cap is on the file; memory stays libcurl's buffers) */
        const char *url = json_string_value(json_object_get(up, "url"));
        json_t *mb = json_object_get(up, "max_bytes"), *tm = json_object_get(up, "timeout_ms");
        const char *base = url ? strrchr(url, '/') : NULL;
        snprintf(c->filename, sizeof c->filename, "%s", base && base[1] ? base + 1 : "job.jar");
        c->filename[strcspn(c->filename, "?#")] = '\0';
        c->action = json_incref(a);
        http_opts ho = {.method = "GET",
                        .url = url,
                        .timeout_ms = json_is_integer(tm) ? (long)json_integer_value(tm) : 60000,
                        .max_body = json_is_integer(mb) && json_integer_value(mb) > 0 ? (size_t)json_integer_value(mb)
                                                                                       : (size_t)64 << 20,
                        .save = 1,
                        .on_done = run_fcall_downloaded,
                        .ud = c};
        char e2[400] = "";
        if (ctx->flink_env.hc && url && (c->jar_fd = util_tmpfile(e2, sizeof e2)) < 0)
            snprintf(err, sizeof err, "download %s: %s", url, e2);
        ho.save_fd = c->jar_fd;
        c->dl = c->jar_fd >= 0 ? http_request_start(ctx->flink_env.hc, &ho, err, sizeof err) : NULL;
        if (c->dl) {
            c->next = ctx->fcalls;
            ctx->fcalls = c;
            return;
        }
        /* else err is util_tmpfile's or http_request_start's */
        if (!url || !ctx->flink_env.hc)
            snprintf(err, sizeof err, "upload needs upload.url and an HTTP client");
    } else if (!busy) {
        c->call = run_flink_start(&ctx->flink_env, a, NULL, run_fcall_done, c, err, sizeof err);
    }
    if (c->call) {
        c->next = ctx->fcalls;
        ctx->fcalls = c;
        return;
    }
    if (!busy) {
        /* a Flink call that cannot start is an unreachable JobManager, not a failed key */
        run_flink_record(run_flink_state(ctx, it->key), c->id, c->intent, 0, NULL, err, (double)time(NULL));
        run_log_flink(LOG_WARN, it->key, "flink request not started", c->sig, -1, err);
    }
    run_fcall_free(c);
}

/* Starts one action; 1 when started (its callback continues the item), 0 when it failed at
 * once (recorded). */
static int run_start_action(struct run_item *it, json_t *a)
{
    struct run_ctx *ctx = it->ctx;
    const char *op = json_string_value(json_object_get(a, "op"));
    char err[512] = "out of memory"; /* what is left when json_dumps failed; others overwrite it */
    op = op ? op : "?";
    it->write = WRITE_PATCH;
    if (strcmp(op, "apply") == 0 || strcmp(op, "dry_run") == 0) {
        /* server-side apply of the object, or its dry run (answer kept for the next pass) */
        int dry = op[0] == 'd';
        json_t *obj = json_object_get(a, "object");
        json_t *meta = json_object_get(obj, "metadata");
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        snprintf(it->what, sizeof it->what, "%s %s %s", dry ? "dry-run apply" : "apply", kind ?: "?", name ?: "?");
        it->verb = "PATCH";
        it->write = dry ? WRITE_DRY_RUN : WRITE_APPLY;
        if (dry) {
            snprintf(it->dry_key, sizeof it->dry_key, "%s/%s", kind ?: "?", name ?: "?");
            snprintf(it->dry_hash, sizeof it->dry_hash, "%s", json_string_value(json_object_get(a, "hash")) ?: "");
        }
        /* children live in the cluster's namespace */
        if (json_is_object(meta) && !json_object_get(meta, "namespace"))
            json_object_set_new(meta, "namespace", json_string(it->ns));
        char *text = json_dumps(obj, JSON_COMPACT);
        if (text)
            it->call = (dry ? kube_apply_dry_run : kube_apply)(ctx->kc, text, run_kube_done, it, err, sizeof err);
        free(text);
        if (it->call)
            return 1;
    } else if (strcmp(op, "delete") == 0) {
        const char *kind = json_string_value(json_object_get(a, "kind"));
        const char *name = json_string_value(json_object_get(a, "name"));
        snprintf(it->what, sizeof it->what, "delete %s %s", kind ?: "?", name ?: "?");
        it->verb = "DELETE";
        it->write = WRITE_DELETE;
        const kube_kind *k = kube_kind_find(NULL, kind);
        struct run_ns *rn = run_ns_for(ctx, it->ns);
        it->del_kind = -1;
        it->del_uid[0] = '\0';
        for (int i = 0; k && name && rn && i < run_nkinds; i++)
            if (run_kinds[i] == k && rn->r[i]) {
                json_t *have = reflector_get_copy(rn->r[i], it->ns, name);
                const char *uid = json_string_value(json_object_get(json_object_get(have, "metadata"), "uid"));
                it->del_kind = i;
                snprintf(it->del_uid, sizeof it->del_uid, "%s", uid ? uid : "");
                json_decref(have);
            }
        if (!k || !name)
            snprintf(err, sizeof err, "unknown kind or no name");
        else
            it->call = kube_delete(ctx->kc, k, it->ns, name, "Background", run_kube_done, it, err, sizeof err);
        if (it->call)
            return 1;
    } else if (strcmp(op, "patch_annotations") == 0) {
        snprintf(it->what, sizeof it->what, "patch annotations");
        it->verb = "PATCH";
        json_t *ann = json_object();
        size_t i;
        json_t *k;
        json_array_foreach(json_object_get(a, "remove"), i, k)
        {
            if (json_is_string(k))
                json_object_set_new(ann, json_string_value(k), json_null());
        }
        json_t *patch = json_pack("{s:{s:o}}", "metadata", "annotations", ann);
        char *text = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        json_decref(patch);
        if (text)
            it->call = kube_patch(ctx->kc, &kube_kind_flinkcluster, it->ns, it->name, NULL,
                                  "application/merge-patch+json", text, run_kube_done, it, err, sizeof err);
        free(text);
        if (it->call)
            return 1;
    } else if (strcmp(op, "flink") == 0) {
        run_start_fcall(it, a);
        return 0;
    } else {
        snprintf(it->what, sizeof it->what, "action %s", op);
        snprintf(err, sizeof err, "unknown op");
    }
    it->failed = 1;
    ctx->action_errors++;
    run_log(LOG_ERROR, it->key, "write not started", "action", it->what, "error", err, NULL);
    run_failure_event(it, 0, err);
    return 0;
}

static int run_start_status(struct run_item *it, json_t *status)
{
    struct run_ctx *ctx = it->ctx;
    json_t *meta = json_object_get(it->cluster, "metadata");
    if (run_status_kept(ctx, it->key, status, json_object_get(it->cluster, "status"))) {
        run_log(LOG_DEBUG, it->key, "status unchanged, not written", NULL);
        return 0;
    }
    json_decref(it->sent);
    it->sent = json_incref(status);
    json_t *diff = run_merge_patch(json_object_get(it->cluster, "status"), status);
    json_t *patch = json_object();
    json_t *rv = json_object_get(meta, "resourceVersion");
    if (rv)
        json_object_set_new(patch, "metadata", json_pack("{s:O}", "resourceVersion", rv));
    json_object_set_new(patch, "status", diff);
    char *text = json_dumps(patch, JSON_COMPACT);
    json_decref(patch);
    char err[512] = "out of memory"; /* unless kube_patch_status says otherwise */
    snprintf(it->what, sizeof it->what, "patch status");
    it->verb = "PATCH";
    it->write = WRITE_STATUS;
    if (text)
        it->call = kube_patch_status(ctx->kc, &kube_kind_flinkcluster, it->ns, it->name, text, run_kube_done, it,
                                     err, sizeof err);
    free(text);
    if (it->call)
        return 1;
    it->failed = 1;
    it->status_refused = 1;
    run_log(LOG_ERROR, it->key, "status write failed", "action", "patch status", "error", err, NULL);
    return 0;
}

/* The emitted entry of an Event (type, reason, message) for this cluster:
 * {"time": unix s of the last emission, "count": emissions, "name": the Event object's name
 * once created}. Entries older than RUN_EVENT_DEDUP_S are forgotten, so a repeat after that
 * is a new Event. As client-go's EventCorrelator: a repeat within the window is the same Event
 * with its count raised and lastTimestamp moved, never a second object and never dropped. */
static json_t *run_event_entry(struct run_ctx *ctx, const char *key, const char *type, const char *reason,
                               const char *message)
{
    json_t *m = json_object_get(ctx->emitted, key);
    if (!m) {
        m = json_object();
        json_object_set_new(ctx->emitted, key, m);
    }
    double now = (double)time(NULL);
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(m, tmp, k, v)
    {
        if (now - json_number_value(json_object_get(v, "time")) > RUN_EVENT_DEDUP_S)
            json_object_del(m, k);
    }
    char id[1400];
    snprintf(id, sizeof id, "%s\x1f%s\x1f%.1200s", type, reason, message);
    json_t *e = json_object_get(m, id);
    if (!e) {
        e = json_pack("{s:f, s:I}", "time", now, "count", (json_int_t)0);
        json_object_set_new(m, id, e);
    }
    json_object_set_new(e, "time", json_real(now));
    json_object_set_new(e, "count", json_integer(json_integer_value(json_object_get(e, "count")) + 1));
    return e;
}

static int run_start_event(struct run_item *it, json_t *ev)
{
    struct run_ctx *ctx = it->ctx;
    const char *type = json_string_value(json_object_get(ev, "type"));
    const char *reason = json_string_value(json_object_get(ev, "reason"));
    const char *message = json_string_value(json_object_get(ev, "message"));
    if (!type || !reason || !message)
        return 0;
    if (strcmp(reason, "PolicyError") == 0) {
        /* "<policy>.lua:<line>: ..." or "<policy>.lua: <hook>: ..." (once per new message) */
        char policy[64];
        size_t l = strcspn(message, ".:");
        snprintf(policy, sizeof policy, "%.*s", (int)(l < 63 ? l : 63), message);
        const char *pv[] = {policy};
        metrics_inc(ctx->m.policy_errors_total, pv);
    }
    run_log_event(it->key, type, reason, message, json_string_length(json_object_get(ev, "message")));
    json_t *e = run_event_entry(ctx, it->key, type, reason, message);
    json_int_t count = json_integer_value(json_object_get(e, "count"));
    const char *ev_name = json_string_value(json_object_get(e, "name"));
    if (count > 1 && !ev_name)
        return 0; /* the first is still being created (or could not be): nothing to count on */
    char err[512] = "";
    it->event = json_incref(e); /* kept while the call is in flight (the entry may expire) */
    if (ev_name) {
        /* a repeat: the same Event, count and lastTimestamp raised (a merge patch) */
        char ts[32], patch[128];
        if (util_format_time((double)time(NULL), 0, ts, sizeof ts) != 0)
            return 0;
        snprintf(patch, sizeof patch, "{\"count\":%lld,\"lastTimestamp\":\"%s\"}", (long long)count, ts);
        snprintf(it->what, sizeof it->what, "count event %s (%lld)", reason, (long long)count);
        it->verb = "PATCH";
        it->call = kube_patch(ctx->kc, &kube_kind_event, it->ns, ev_name, NULL, "application/merge-patch+json",
                              patch, run_kube_done, it, err, sizeof err);
    } else {
        json_t *inv = run_typed(it->cluster, &kube_kind_flinkcluster);
        snprintf(it->what, sizeof it->what, "create event %s", reason);
        it->verb = "POST";
        it->call = kube_event_create(ctx->kc, inv, type, reason, message, run_kube_done, it, err, sizeof err);
        json_decref(inv);
    }
    if (it->call)
        return 1;
    json_decref(it->event);
    it->event = NULL;
    run_log(LOG_WARN, it->key, "event write failed", "action", it->what, "error", err, NULL);
    return 0;
}

/* 1 when this replica may write now: no leader election, or leading with the Lease renewed
 * within the renew deadline (leader_may_write reads the clock: the fence closes at the
 * deadline even before the elector's timer runs). */
static int run_may_write(struct run_ctx *ctx)
{
    return !ctx->o.leader_elect || (ctx->leading && leader_may_write(ctx->le));
}

/* 1 when action `a` runs after the status is written: the user-control annotation's removal,
 * and a Flink call marked after_status (a savepoint or stop trigger whose id the status
 * records first, so that a controller that dies in between can look it up). */
static int run_is_control(json_t *a)
{
    const char *op = json_string_value(json_object_get(a, "op"));
    return op && (strcmp(op, "patch_annotations") == 0 ||
                  (strcmp(op, "flink") == 0 && json_is_true(json_object_get(a, "after_status"))));
}

/* The policy-hash annotation of the cluster, when the pass ran with another set than the one
 * it names: a merge patch of that one annotation (no write at steady state). Only with
 * --policy-configmap: without overrides the set never changes, and a write per cluster more
 * would be all it cost. 1 when started. */
static int run_start_hash_patch(struct run_item *it)
{
    struct run_ctx *ctx = it->ctx;
    json_t *ann = json_object_get(json_object_get(it->cluster, "metadata"), "annotations");
    const char *have = json_string_value(json_object_get(ann, RUN_POLICY_HASH_ANNOTATION));
    if (!ctx->ov.ns[0] || !it->policy_hash[0] || (have && strcmp(have, it->policy_hash) == 0))
        return 0;
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", RUN_POLICY_HASH_ANNOTATION, it->policy_hash);
    char *text = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    char err[512] = "out of memory";
    snprintf(it->what, sizeof it->what, "patch annotation %s=%s", RUN_POLICY_HASH_ANNOTATION, it->policy_hash);
    it->verb = "PATCH";
    it->write = WRITE_PATCH;
    if (text)
        it->call = kube_patch(ctx->kc, &kube_kind_flinkcluster, it->ns, it->name, NULL,
                              "application/merge-patch+json", text, run_kube_done, it, err, sizeof err);
    free(text);
    if (it->call)
        return 1;
    it->failed = 1;
    run_log(LOG_ERROR, it->key, "write not started", "action", it->what, "error", err, NULL);
    return 0;
}

static void run_item_step(struct run_item *it)
{
    for (;;) {
        if (it->phase != PHASE_DONE && !run_may_write(it->ctx)) {
            run_log(LOG_WARN, it->key, "leadership lost, pass not written", NULL);
            it->fenced = 1;
            it->phase = PHASE_DONE;
        }
        json_t *actions = json_object_get(it->result, "actions");
        switch (it->phase) {
        case PHASE_ACTIONS: {
            if (it->next < json_array_size(actions)) {
                json_t *a = json_array_get(actions, it->next++);
                if (!run_is_control(a) && run_start_action(it, a))
                    return;
                continue;
            }
            it->phase = PHASE_STATUS;
            it->next = 0;
            json_t *status = json_object_get(it->result, "status");
            if (json_is_object(status) && run_start_status(it, status))
                return;
            continue;
        }
        case PHASE_STATUS:
            /* a savepoint's end is counted once: when the status recording it is written */
            if (it->sent && !it->status_refused)
                clustermetrics_savepoint_ended(&it->ctx->m, it->ns, json_object_get(it->cluster, "status"),
                                              it->sent);
            it->phase = PHASE_CONTROL;
            continue;
        case PHASE_CONTROL:
            /* the user control's outcome is in the status first; then the annotation goes (a
             * refused status keeps it, so the control is finished again by the next pass); the
             * same for a trigger whose id the status records (not sent when the status was not
             * written: the next pass decides again) */
            if (!it->status_refused && it->next < json_array_size(actions)) {
                json_t *a = json_array_get(actions, it->next++);
                if (run_is_control(a) && run_start_action(it, a))
                    return;
                continue;
            }
            it->phase = PHASE_HASH;
            it->next = 0;
            continue;
        case PHASE_HASH:
            it->phase = PHASE_EVENTS;
            if (!it->status_refused && run_start_hash_patch(it))
                return;
            continue;
        case PHASE_EVENTS: {
            json_t *events = json_object_get(it->result, "events");
            if (it->gone) {
                it->phase = PHASE_DONE;
                continue;
            }
            /* also after a status conflict: they were decided; the next pass, deciding them
             * again from the same observed status, raises the same Event's count
             * (run_event_entry) instead of creating a second one */
            if (it->next < json_array_size(events)) {
                if (run_start_event(it, json_array_get(events, it->next++)))
                    return;
                continue;
            }
            it->phase = PHASE_DONE;
            continue;
        }
        case PHASE_DONE:
            run_item_finish(it);
            return;
        }
    }
}

/* Takes `key` from the queue and starts working on it. */
static void run_process(struct run_ctx *ctx, const char *key)
{
    struct run_item *it = calloc(1, sizeof *it);
    char *k = strdup(key);
    if (!it || !k) {
        free(it);
        free(k);
        workqueue_add_rate_limited(ctx->q, key);
        workqueue_done(ctx->q, key);
        return;
    }
    it->ctx = ctx;
    it->key = k;
    it->started = ev_time();
    ctx->inflight++;
    it->next_item = ctx->items;
    ctx->items = it;
    const char *slash = strchr(key, '/');
    if (slash) {
        snprintf(it->ns, sizeof it->ns, "%.*s", (int)(slash - key), key);
        snprintf(it->name, sizeof it->name, "%s", slash + 1);
    }
    struct run_ns *rn = slash ? run_ns_for(ctx, it->ns) : NULL;
    /* decoded from the compact cache: the pass's own tree (it->cluster) */
    json_t *cluster = rn ? reflector_get_copy(rn->r[0], it->ns, it->name) : NULL;
    if (!cluster) {
        /* deleted: the garbage collector removes the children; forget what we kept */
        run_forget_key(ctx, key);
        it->phase = PHASE_DONE;
        run_item_step(it);
        return;
    }
    double wait = run_expect_pending(ctx, rn, key, it->ns);
    if (wait > 0) {
        run_log(LOG_DEBUG, key, "waiting for own writes in the cache", "wait_ms", RUN_MS(wait), NULL);
        it->waiting = 1;
        json_decref(cluster);
        workqueue_add_after(ctx->q, key, wait);
        it->phase = PHASE_DONE;
        run_item_step(it);
        return;
    }
    it->fresh = json_object_get(ctx->fresh, key);
    json_incref(it->fresh);
    json_object_del(ctx->fresh, key);
    it->cluster = cluster;
    snprintf(it->policy_hash, sizeof it->policy_hash, "%s", ctx->ov.active_hash);
    struct run_collect c = {0};
    json_t *snap = run_snapshot(ctx, rn, key, cluster, &c);
    char *in = json_dumps(snap, JSON_COMPACT);
    if (in && ctx->o.debug_snapshot_dir) {
        char *whole = run_snapshot_text(snap, &c);
        if (whole)
            run_write_snapshot(ctx, it, whole);
        free(whole);
    }
    json_decref(snap);
    char *out = NULL;
    char err[4096] = "";
    double t0 = ev_time();
    int rc = in ? lhost_call_json_parts(ctx->host, "fc.reconcile", "run", in, c.parts, c.n, &out, err, sizeof err)
                : -1;
    free(in);
    run_collect_free(&c);
    double dt = ev_time() - t0;
    if (rc == 0)
        it->result = json_loads(out, JSON_ALLOW_NUL, NULL); /* a "\u0000" in a message is data */
    free(out);
    if (rc != 0 || !json_is_object(it->result)) {
        run_log(LOG_ERROR, key, "reconcile framework error", "error", rc ? err : "result is not an object", NULL);
        it->failed = 1;
        it->phase = PHASE_DONE;
        run_item_step(it);
        return;
    }
    run_log(LOG_DEBUG, key, "reconciled", "duration_ms", RUN_MS(dt),
            "actions", RUN_ZU(json_array_size(json_object_get(it->result, "actions"))),
            "status", json_object_get(it->result, "status") ? "changed" : "unchanged",
            "events", RUN_ZU(json_array_size(json_object_get(it->result, "events"))), NULL);
    it->phase = PHASE_ACTIONS;
    run_item_step(it);
}

static int run_may_work(struct run_ctx *ctx)
{
    return !ctx->stopping && ctx->synced && (!ctx->o.leader_elect || ctx->leading);
}

static void run_released(int ok, void *ud)
{
    struct run_ctx *ctx = ud;
    run_log(ok ? LOG_INFO : LOG_WARN, NULL, ok ? "leader lease released" : "leader lease not released", NULL);
    ev_break(ctx->loop, EVBREAK_ALL);
}

/* Work in flight is done: release the lease (when leading), then leave the loop. */
static void run_finish_stop(struct run_ctx *ctx)
{
    if (ctx->releasing)
        return;
    if (ctx->le && leader_is_leader(ctx->le) && leader_release(ctx->le, run_released, ctx) == 0) {
        ctx->releasing = 1;
        return;
    }
    ev_break(ctx->loop, EVBREAK_ALL);
}

/* Starts passes of ready keys while workers are free, at most `max` of them (0: no limit).
 * Returns 1 when it stopped at `max` with more work possible. */
static int run_pump_some(struct run_ctx *ctx, int max)
{
    int n = 0, more = 0;
    while (run_may_work(ctx) && ctx->inflight < ctx->o.workers) {
        if (max && n == max) {
            more = 1;
            break;
        }
        const char *key = workqueue_get(ctx->q);
        if (!key)
            break;
        run_process(ctx, key);
        ctx->activity++;
        n++;
    }
    if (ctx->stopping && ctx->inflight == 0)
        run_finish_stop(ctx);
    return more;
}

static void run_pump(struct run_ctx *ctx)
{
    run_pump_some(ctx, 0);
}

/* The pump as an idle watcher: RUN_PASSES_PER_TURN passes, then back to the loop while more
 * can start (libev runs idle watchers only when no other event is pending). A pass runs its
 * policies synchronously, so 64 passes in one go kept every answer, watch event, write and
 * /healthz, /metrics request waiting behind them (~0.5 s at start with 64 workers, seconds on
 * a loaded machine); one at a time, a pass's writes are on the wire before the next starts. */
static void run_pump_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    if (!run_pump_some(w->data, RUN_PASSES_PER_TURN))
        ev_idle_stop(loop, w);
}

/* Every RUN_TRIM_INTERVAL_S seconds after passes or watch events: malloc_trim(0), which gives
 * the free pages inside the heap back to the system (glibc madvises them), not only its top.
 * A burst of passes leaves its transient trees' memory free but resident between the cached
 * texts that outlive them; without this, RSS stays at the burst's peak. The call walks malloc's
 * free chunks and blocks the loop meanwhile: ~35 ms for 200,000 free chunks in 90 MB here (a
 * synthetic worst case), so the next one waits RUN_TRIM_COST_FACTOR times as long as the last
 * took (at most ~2 % of the loop's time). Nothing when idle. */
static void run_trim_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct run_ctx *ctx = w->data;
    if (!ctx->activity || ev_now(loop) < ctx->trim_next)
        return;
    ctx->activity = 0;
    double t0 = ev_time();
    malloc_trim(0);
    ctx->trim_next = ev_now(loop) + RUN_TRIM_COST_FACTOR * (ev_time() - t0);
}

static void run_on_ready(workqueue *q, void *ud)
{
    (void)q;
    struct run_ctx *ctx = ud;
    /* not from inside workqueue_add (called from reflector callbacks): on the next loop turn */
    ev_idle_start(ctx->loop, &ctx->pump_idle);
}

/* ---- reflector callbacks ------------------------------------------------------------------- */

/* "<namespace>/<name>" of a FlinkCluster object into key (n bytes); 0, or -1 when a name is
 * missing or the key does not fit. */
static int run_cluster_key(json_t *obj, char *key, size_t n)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!ns || !name)
        return -1;
    int w = snprintf(key, n, "%s/%s", ns, name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static void run_on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)old;
    struct run_ctx *ctx = ud;
    ctx->activity++;
    char key[600];
    static const char *const evnames[] = {"ADDED", "MODIFIED", "DELETED", "RESYNC"};
    int k = run_kind_index(ctx, r);
    const char *kv[] = {run_kind_name(k), evnames[ev]};
    metrics_inc(ctx->m.watch_events_total, kv);
    if (k == 0) {
        if (run_cluster_key(obj, key, sizeof key))
            return;
        if (ev == REFLECTOR_DELETED) {
            clustermetrics_index_delete(ctx->cm_index, obj);
            run_forget_key(ctx, key);
        } else {
            clustermetrics_index_put(ctx->cm_index, obj);
        }
    } else if (!reflector_owner_key(obj, kube_kind_flinkcluster.kind, run_labels.cluster, key, sizeof key)) {
        return;
    }
    workqueue_add(ctx->q, key);
}

static void run_enqueue_cluster(json_t *obj, void *ud)
{
    struct run_ctx *ctx = ud;
    char key[600];
    if (run_cluster_key(obj, key, sizeof key) == 0)
        workqueue_add(ctx->q, key);
}

/* Ready once every cache synced and the first policy set is decided (with --policy-configmap:
 * no ConfigMap, or its set accepted or refused), so that no pass runs with a set about to be
 * replaced at start. */
static void run_check_synced(struct run_ctx *ctx)
{
    if (ctx->synced || (ctx->ov.r && (!reflector_has_synced(ctx->ov.r) || !ctx->ov.settled)))
        return;
    for (size_t i = 0; i < ctx->nns; i++)
        for (int k = 0; k < run_nkinds; k++)
            if (!ctx->nss[i].r[k] || !reflector_has_synced(ctx->nss[i].r[k]))
                return;
    ctx->synced = 1;
    run_log(LOG_INFO, NULL, "caches synced, ready", NULL);
    if (ctx->srv)
        server_set_ready(ctx->srv, 1, NULL);
    ev_idle_start(ctx->loop, &ctx->pump_idle);
}

static void run_on_synced(reflector *r, void *ud)
{
    (void)r;
    run_check_synced(ud);
}

static void run_on_error(reflector *r, const char *what, void *ud)
{
    struct run_ctx *ctx = ud;
    const char *kind = r == ctx->ov.r ? "ConfigMap" : run_kind_name(run_kind_index(ctx, r));
    const char *kv[] = {kind};
    metrics_inc(ctx->m.watch_restarts_total, kv);
    run_log(LOG_WARN, NULL, "watch restarted", "kind", kind, "error", what, NULL);
}

/* ---- policy overrides (--policy-configmap) -------------------------------------------------- */

static void run_override_event_done(const kube_result *res, void *ud)
{
    struct run_ctx *ctx = ud;
    run_count_request(ctx, "POST", res->status);
    if (res->status < 200 || res->status >= 300)
        run_log(LOG_WARN, NULL, "event write failed", "configmap", ctx->ov.name, "namespace", ctx->ov.ns,
                "http_code", RUN_LD(res->status), "error", res->message ? res->message : "", NULL);
}

/* An Event about the ConfigMap `cm` (not deduplicated: one per set checked); written only by a
 * replica that may write (the leader with --leader-elect). */
static void run_override_event(struct run_ctx *ctx, json_t *cm, const char *type, const char *reason,
                               const char *message)
{
    if (!cm || !run_may_write(ctx))
        return;
    json_t *inv = run_typed(cm, &kube_kind_configmap);
    char err[512] = "out of memory";
    if (!inv || !kube_event_create(ctx->kc, inv, type, reason, message, run_override_event_done, ctx, err, sizeof err))
        run_log(LOG_WARN, NULL, "event write failed", "configmap", ctx->ov.name, "namespace", ctx->ov.ns, "reason", reason, "error", err, NULL);
    json_decref(inv);
}

static void run_override_set_info(struct run_ctx *ctx)
{
    const char *v[] = {ctx->ov.active_hash};
    metrics_clear(ctx->m.policy_set_info);
    metrics_set(ctx->m.policy_set_info, v, 1);
}

/* fc.override.<fn>(in) on the live host (`in` is taken: decref'd here); its result decoded (err
 * then ""), or NULL with the reason in err ("out of memory", or the framework's error). */
static json_t *run_override_lua(struct run_ctx *ctx, const char *fn, json_t *in, char *err, size_t errlen)
{
    char *text = in ? json_dumps(in, JSON_COMPACT) : NULL, *out = NULL;
    json_decref(in);
    json_t *res = NULL;
    util_set_err(err, errlen, "out of memory");
    if (text && lhost_call_json(ctx->host, "fc.override", fn, text, &out, err, errlen) == 0) {
        if ((res = json_loads(out, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)))
            err[0] = '\0';
        else
            util_set_err(err, errlen, "fc.override.%s: its result is not JSON", fn);
    }
    free(text);
    free(out);
    return res;
}

/* Serves the set in `dir` ("" = the built-in one) from the next pass on, between passes (a pass
 * makes its policy calls in one go on the loop, so none sees two sets), and enqueues every
 * FlinkCluster. The set served before, when made by core/override, is removed. */
static int run_override_switch(struct run_ctx *ctx, const char *dir, const char *hash, const char *why)
{
    struct run_override *ov = &ctx->ov;
    char err[1024];
    json_t *res = run_override_lua(ctx, "activate", json_pack("{s:s}", "policy_dir", *dir ? dir : ov->builtin_dir),
                                   err, sizeof err);
    json_decref(res);
    if (!res) {
        run_log(LOG_ERROR, NULL, "policy set not switched", "hash", hash, "error", err, "serving_hash",
                ov->active_hash, NULL);
        return -1;
    }
    char old[sizeof ov->active_dir];
    snprintf(old, sizeof old, "%s", ov->active_dir);
    snprintf(ov->active_dir, sizeof ov->active_dir, "%s", dir);
    snprintf(ov->active_hash, sizeof ov->active_hash, "%s", hash);
    if (*old && strcmp(old, dir) != 0)
        override_remove(old);
    run_override_set_info(ctx);
    log_msg(LOG_INFO, "policy set switched", "hash", hash, "reason", why, "policy_dir",
            *dir ? dir : ov->builtin_dir, NULL);
    for (size_t i = 0; i < ctx->nns; i++)
        if (ctx->nss[i].r[0])
            reflector_foreach(ctx->nss[i].r[0], run_enqueue_cluster, ctx);
    return 0;
}

/* A set of the ConfigMap refused: counted, logged, a Warning PolicyRejected on the ConfigMap;
 * the set serving stays. */
static void run_override_refuse(struct run_ctx *ctx, json_t *cm, const char *hash, const char *why)
{
    struct run_override *ov = &ctx->ov;
    const char *v[] = {"refused"};
    metrics_inc(ctx->m.policy_reloads_total, v);
    const char *rv = json_string_value(json_object_get(json_object_get(cm, "metadata"), "resourceVersion"));
    char msg[2048];
    snprintf(msg, sizeof msg, "policy set %s refused: %s; the last good set %s keeps serving", hash, why,
             ov->active_hash);
    log_msg(LOG_ERROR, msg, "configmap_resource_version", rv ? rv : "", NULL);
    run_override_event(ctx, cm, "Warning", "PolicyRejected", msg);
}

static void run_override_take(struct run_ctx *ctx, json_t *cm);

/* The fixtures of the set in ctx->ov.check_dir are done. */
static void run_override_checked(int status, const char *output, void *ud)
{
    struct run_ctx *ctx = ud;
    struct run_override *ov = &ctx->ov;
    json_t *cm = ov->check_cm;
    ov->check = NULL;
    ov->check_cm = NULL;
    if (status == 0) {
        const char *v[] = {"accepted"};
        metrics_inc(ctx->m.policy_reloads_total, v);
        const char *rv = json_string_value(json_object_get(json_object_get(cm, "metadata"), "resourceVersion"));
        char why[600], msg[700];
        snprintf(why, sizeof why, "ConfigMap %s/%s resourceVersion %s: compiled, every fixture passed", ov->ns,
                 ov->name, rv ? rv : "?");
        if (run_override_switch(ctx, ov->check_dir, ov->check_hash, why) == 0) {
            snprintf(msg, sizeof msg, "policy set %s serving: compiled, every fixture passed", ov->check_hash);
            run_override_event(ctx, cm, "Normal", "PolicyAccepted", msg);
        } else {
            override_remove(ov->check_dir);
        }
    } else {
        char err[1024];
        json_t *sum = run_override_lua(ctx, "summary", json_pack("{s:s}", "output", output ? output : ""), err,
                                       sizeof err);
        char why[1600];
        snprintf(why, sizeof why, "%s%s", status < 0 ? "the fixtures' process was killed: " : "",
                 json_is_string(sum) ? json_string_value(sum) : err);
        json_decref(sum);
        run_override_refuse(ctx, cm, ov->check_hash, why);
        override_remove(ov->check_dir);
    }
    ov->check_dir[0] = '\0';
    json_decref(cm);
    ov->settled = 1;
    run_check_synced(ctx);
    if (ov->pending && !ctx->stopping) {
        json_t *next = ov->pending;
        ov->pending = NULL;
        run_override_take(ctx, next);
        json_decref(next);
    }
}

/* A new version of the ConfigMap: its set is made, hashed and compiled at once, its fixtures
 * checked in a child process (run_override_checked); a refusal at any step is final for this
 * version. A set with the hash of the one serving changes nothing. */
static void run_override_take(struct run_ctx *ctx, json_t *cm)
{
    struct run_override *ov = &ctx->ov;
    const char *rv = json_string_value(json_object_get(json_object_get(cm, "metadata"), "resourceVersion"));
    char err[2048];
    json_t *plan = run_override_lua(ctx, "files", json_pack("{s:O?, s:O?}", "data", json_object_get(cm, "data"),
                                                            "binaryData", json_object_get(cm, "binaryData")),
                                    err, sizeof err);
    char dir[4096] = "", hash[OVERRIDE_HASH_LEN + 1] = "-";
    const char *bad = json_string_value(json_object_get(plan, "error"));
    if (bad) {
        run_override_refuse(ctx, cm, hash, bad);
    } else if (!plan || override_materialize(ov->builtin_dir, ctx->o.policy_work_dir, plan, dir, sizeof dir, err,
                                             sizeof err)) {
        run_override_refuse(ctx, cm, hash, err);
    } else if (override_hash(dir, hash, sizeof hash, err, sizeof err)) {
        run_override_refuse(ctx, cm, "-", err);
        override_remove(dir);
    } else if (strcmp(hash, ov->active_hash) == 0) {
        log_msg(LOG_INFO, "policy set from the ConfigMap is the one serving: nothing to switch", "hash", hash,
                "configmap_resource_version", rv ? rv : "", NULL);
        override_remove(dir);
    } else if (override_compile(dir, err, sizeof err) != 0) {
        run_override_refuse(ctx, cm, hash, err);
        override_remove(dir);
    } else if (!(ov->check = override_check_start(ctx->loop, dir, ctx->o.host.timeout_ms, ctx->o.host.memory_mib,
                                                  run_override_checked, ctx, err, sizeof err))) {
        run_override_refuse(ctx, cm, hash, err);
        override_remove(dir);
    } else {
        snprintf(ov->check_dir, sizeof ov->check_dir, "%s", dir);
        snprintf(ov->check_hash, sizeof ov->check_hash, "%s", hash);
        ov->check_cm = json_incref(cm);
        log_msg(LOG_INFO, "policy set from the ConfigMap compiled: running its fixtures", "hash", hash,
                "configmap_resource_version", rv ? rv : "", NULL);
    }
    json_decref(plan);
    if (!ov->check) {
        ov->settled = 1;
        run_check_synced(ctx);
    }
}

/* Drops the check in flight (its child killed) and the version waiting for it. */
static void run_override_cancel(struct run_ctx *ctx)
{
    struct run_override *ov = &ctx->ov;
    if (ov->check) {
        override_check_cancel(ov->check);
        ov->check = NULL;
        override_remove(ov->check_dir);
        ov->check_dir[0] = '\0';
    }
    json_decref(ov->check_cm);
    json_decref(ov->pending);
    ov->check_cm = ov->pending = NULL;
}

static void run_override_on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)r;
    (void)old;
    struct run_ctx *ctx = ud;
    struct run_override *ov = &ctx->ov;
    static const char *const evnames[] = {"ADDED", "MODIFIED", "DELETED", "RESYNC"};
    const char *kv[] = {"ConfigMap", evnames[ev]};
    metrics_inc(ctx->m.watch_events_total, kv);
    if (ev == REFLECTOR_DELETED) {
        run_override_cancel(ctx);
        ov->seen_rv[0] = '\0';
        if (ov->active_dir[0])
            run_override_switch(ctx, "", ov->builtin_hash, "ConfigMap deleted: the built-in set");
        ov->settled = 1;
        run_check_synced(ctx);
        return;
    }
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (rv && strcmp(rv, ov->seen_rv) == 0)
        return;
    snprintf(ov->seen_rv, sizeof ov->seen_rv, "%s", rv ? rv : "");
    if (ov->check) {
        /* checked once the set in flight is decided: the latest version only */
        json_decref(ov->pending);
        ov->pending = json_incref(obj);
        return;
    }
    run_override_take(ctx, obj);
}

static void run_override_on_synced(reflector *r, void *ud)
{
    struct run_ctx *ctx = ud;
    if (!ctx->ov.check && reflector_len(r) == 0)
        ctx->ov.settled = 1; /* no ConfigMap: the built-in set */
    run_check_synced(ctx);
}

/* ---- stop ---------------------------------------------------------------------------------- */

static void run_stop_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    (void)w;
    run_log(LOG_WARN, NULL, "work still in flight, exiting", "wait_ms", RUN_MS(RUN_STOP_GRACE_S), NULL);
    ev_break(loop, EVBREAK_ALL);
}

/* Stops taking keys; the loop ends once the keys in flight are done (or after the grace). */
static void run_begin_stop(struct run_ctx *ctx, int exit_code)
{
    struct ev_loop *loop = ctx->loop;
    ctx->stopping = 1;
    ctx->exit_code = exit_code;
    workqueue_shutdown(ctx->q);
    for (size_t i = 0; i < ctx->nns; i++)
        for (int k = 0; k < run_nkinds; k++)
            if (ctx->nss[i].r[k]) {
                /* in-flight items hold their own references to what they need */
                reflector_stop(ctx->nss[i].r[k]);
                ctx->nss[i].r[k] = NULL;
            }
    if (ctx->ov.r) {
        reflector_stop(ctx->ov.r);
        ctx->ov.r = NULL;
    }
    run_override_cancel(ctx);
    ev_timer_init(&ctx->stop_timer, run_stop_timeout, RUN_STOP_GRACE_S, 0);
    ev_timer_start(loop, &ctx->stop_timer);
    run_pump(ctx);
}

static void run_on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)revents;
    struct run_ctx *ctx = w->data;
    if (ctx->stopping) {
        run_log(LOG_WARN, NULL, "second signal, exiting now", NULL);
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    run_log(LOG_INFO, NULL, "stopping", "signal", RUN_LD(w->signum), "in_flight", RUN_LD(ctx->inflight), NULL);
    run_begin_stop(ctx, 0);
}

static void run_started_leading(void *ud)
{
    struct run_ctx *ctx = ud;
    ctx->leading = 1;
    metrics_set(ctx->m.leader, NULL, 1);
    run_log(LOG_INFO, NULL, "leading", "identity", leader_identity(ctx->le), NULL);
    certsync_check_now(ctx->cs); /* a new leader makes or renews the certificates at once */
    /* everything cached so far may have changed while another replica led */
    for (size_t i = 0; i < ctx->nns; i++)
        if (ctx->nss[i].r[0])
            reflector_foreach(ctx->nss[i].r[0], run_enqueue_cluster, ctx);
    ev_idle_start(ctx->loop, &ctx->pump_idle);
}

static void run_stopped_leading(void *ud)
{
    struct run_ctx *ctx = ud;
    ctx->leading = 0;
    metrics_set(ctx->m.leader, NULL, 0);
    /* fenced: the keys in flight write nothing more (a request already sent cannot be taken
     * back; its answer is dropped), nor do the Flink calls in flight */
    while (ctx->items) {
        struct run_item *it = ctx->items;
        if (it->call)
            kube_cancel(it->call);
        it->call = NULL;
        if (!it->fenced)
            run_log(LOG_WARN, it->key, "leadership lost, pass not written", NULL);
        it->fenced = 1;
        run_item_finish(it);
    }
    run_cancel_fcalls(ctx, NULL);
    if (ctx->stopping)
        return;
    /* as client-go's OnStoppedLeading: a replica that lost the lease must not act; it exits
     * (after the keys in flight) and its Deployment restarts it as a candidate */
    run_log(LOG_ERROR, NULL, "leader lease lost, stopping", NULL);
    run_begin_stop(ctx, 1);
}

static void run_new_leader(const char *identity, void *ud)
{
    (void)ud;
    run_log(LOG_INFO, NULL, "leader changed", "identity", identity && *identity ? identity : "(none)", NULL);
}

/* ---- options ------------------------------------------------------------------------------- */

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: flink-controller run [--kubeconfig F] [--context NAME] [--namespace NS]... [--policy-dir D]\n"
            "         [--metrics-addr A] [--health-addr A] [--leader-elect]\n"
            "         [--leader-election-namespace NS] [--qps N --burst N] [--log-format text|json]\n"
            "         [--log-level debug|info|warn|error]\n"
            "         [--workers N] [--flink-access auto|service|proxy] [--flink-base-url URL]\n"
            "         [--policy-timeout-ms N] [--policy-memory-mib N]\n"
            "         [--webhook-addr A --webhook-cert-file F --webhook-key-file F]\n"
            "         [--webhook-addr A --webhook-cert-secret NS/NAME --webhook-service NS/NAME\n"
            "          [--webhook-configuration NAME] [--webhook-cert-validity D] [--webhook-host H,...]]\n"
            "         [--debug-snapshot-dir DIR] [--policy-configmap NS/NAME [--policy-work-dir DIR]]\n"
            "Runs the controller: watches FlinkClusters and their children, reconciles each cluster\n"
            "through the policies and applies the result.  SIGTERM/SIGINT stop it (exit 0).\n"
            "--flink-access: how Flink REST calls reach a JobManager: service (its Service's cluster\n"
            "DNS name), proxy (the API server's service proxy, with the kubeconfig's credentials),\n"
            "auto (default: service in a pod with the service-account config, else proxy).\n"
            "--flink-base-url (testing) replaces the JobManager REST base of every cluster.\n"
            "--metrics-addr/--health-addr: HOST:PORT of /metrics and of /healthz, /readyz; none\n"
            "unless given; \":8081\" (no host) is loopback only, as 127.0.0.1:8081; every interface\n"
            "is asked for by name: 0.0.0.0:8081, or [::]:8081 (IPv6 and IPv4); \"0\" disables.\n"
            "--qps/--burst: a client-side limit of API requests (token bucket); default none (0):\n"
            "the API server's priority and fairness and its 429 Retry-After answers pace the writes.\n"
            "--webhook-addr: also serve the admission webhook (POST /validate, /mutate) over TLS\n"
            "with that certificate pair, re-read when the files change (core/webhook.h), or with\n"
            "the pair the controller keeps in the Secret --webhook-cert-secret (kubernetes.io/tls;\n"
            "made, renewed after 2/3 of --webhook-cert-validity (default 90d), the CA's caBundle\n"
            "kept in the webhook configurations --webhook-configuration; docs/webhook.md).\n"
            "--policy-configmap: overrides of the policy files from that ConfigMap (keys <policy>.lua,\n"
            "lib.<name>.lua, testdata.<policy>.<case>.<file>), compiled and their fixtures run before\n"
            "use; a bad set is refused and the last good one serves. Sets are made under\n"
            "--policy-work-dir (default $TMPDIR, else /tmp).\n");
}

enum {
    RO_CONTEXT = 299, RO_KUBECONFIG = 300, RO_NAMESPACE, RO_POLICY_DIR, RO_METRICS, RO_HEALTH, RO_LEADER, RO_LEADER_NS, RO_QPS,
    RO_BURST, RO_LOG_FORMAT, RO_WORKERS, RO_FLINK_BASE, RO_TIMEOUT, RO_MEMORY, RO_LOG_LEVEL,
    RO_FLINK_ACCESS, RO_WEBHOOK_ADDR, RO_WEBHOOK_CERT, RO_WEBHOOK_KEY, RO_DEBUG_SNAPSHOT, RO_POLICY_CM,
    RO_POLICY_WORK, RO_WEBHOOK_SECRET, RO_WEBHOOK_SERVICE, RO_WEBHOOK_CONFIG, RO_WEBHOOK_VALIDITY, RO_WEBHOOK_HOST
};

/* The webhook options' combinations: files or a Secret for --webhook-addr, the Secret's
 * options only with it, and its names well formed. 0, or -1 after a message on stderr. */
static int run_check_webhook_opts(const struct run_opts *o)
{
    int files = o->webhook_cert || o->webhook_key, secret = o->webhook_secret != NULL;
    if (files && secret) {
        fprintf(stderr, "run: --webhook-cert-file/--webhook-key-file and --webhook-cert-secret exclude each other\n");
        return -1;
    }
    if (o->webhook_addr && *o->webhook_addr && !secret && (!o->webhook_cert || !o->webhook_key)) {
        fprintf(stderr, "run: --webhook-addr needs --webhook-cert-file and --webhook-key-file, or --webhook-cert-secret\n");
        return -1;
    }
    if (!secret && (o->webhook_service || o->webhook_config || o->webhook_hosts || o->webhook_validity_s > 0)) {
        fprintf(stderr, "run: --webhook-service, --webhook-configuration, --webhook-host and --webhook-cert-validity "
                        "need --webhook-cert-secret\n");
        return -1;
    }
    if (secret) {
        char *names[CERTS_MAX_NAMES], err[256], ns[254];
        const char *slash = strchr(o->webhook_secret, '/');
        if (!slash || slash == o->webhook_secret || !slash[1] || strchr(slash + 1, '/') ||
            snprintf(ns, sizeof ns, "%.*s", (int)(slash - o->webhook_secret), o->webhook_secret) >= (int)sizeof ns) {
            fprintf(stderr, "run: --webhook-cert-secret: expected NAMESPACE/NAME, got '%s'\n", o->webhook_secret);
            return -1;
        }
        int n = certsync_names(o->webhook_service, o->webhook_hosts, names, CERTS_MAX_NAMES, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "run: %s\n", err);
            return -1;
        }
        certsync_names_free(names, (size_t)n);
    }
    return 0;
}

/* core/certsync's pair: the webhook starts with the first one (a replica serves once the
 * Secret holds a pair), later ones replace it. */
static void run_on_webhook_pair(const char *cert_pem, const char *key_pem, void *ud)
{
    struct run_ctx *ctx = ud;
    char err[512];
    if (!ctx->o.webhook_addr || !*ctx->o.webhook_addr)
        return;
    if (ctx->wh) {
        if (webhook_set_pair(ctx->wh, cert_pem, key_pem, err, sizeof err))
            run_log(LOG_WARN, NULL, "webhook certificate not taken, the previous one serves", "error", err, NULL);
        else
            run_log(LOG_INFO, NULL, "webhook serving the certificate from the Secret", "generation",
                    RUN_LD(webhook_generation(ctx->wh)), NULL);
        return;
    }
    webhook_opts wo = {.addr = ctx->o.webhook_addr, .cert_pem = cert_pem, .key_pem = key_pem, .host = ctx->host,
                       .admissions = ctx->m.webhook_admissions};
    ctx->wh = webhook_start(ctx->loop, &wo, err, sizeof err);
    if (!ctx->wh) {
        /* as at start with files: a webhook that cannot listen stops the controller */
        run_log(LOG_ERROR, NULL, "startup failed", "step", "serve", "error", err, NULL);
        run_begin_stop(ctx, 1);
        return;
    }
    run_log(LOG_INFO, NULL, "serving the admission webhook", "port", RUN_LD(webhook_port(ctx->wh)), NULL);
}

static int run_may_write_ud(void *ud)
{
    return run_may_write(ud);
}

static int run_parse_num(const char *flag, const char *v, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || x < min || x > max) {
        fprintf(stderr, "run: %s: expected a number %g..%g, got '%s'\n", flag, min, max, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* The integer flags (--burst, --workers, the policy budgets): as render's, no fraction. */
static int run_parse_int(const char *flag, const char *v, unsigned long min, unsigned long max, unsigned long *out)
{
    if (util_parse_uint(v, min, max, out)) {
        fprintf(stderr, "run: %s: expected an integer %lu..%lu, got '%s'\n", flag, min, max, v);
        return -1;
    }
    return 0;
}

/* Returns -1 on a usage error (message printed), 1 for --help, 0 otherwise. */
static int run_parse(int argc, char **argv, struct run_opts *o)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, RO_KUBECONFIG},
        {"context", required_argument, NULL, RO_CONTEXT},
        {"namespace", required_argument, NULL, RO_NAMESPACE},
        {"policy-dir", required_argument, NULL, RO_POLICY_DIR},
        {"metrics-addr", required_argument, NULL, RO_METRICS},
        {"health-addr", required_argument, NULL, RO_HEALTH},
        {"leader-elect", no_argument, NULL, RO_LEADER},
        {"leader-election-namespace", required_argument, NULL, RO_LEADER_NS},
        {"qps", required_argument, NULL, RO_QPS},
        {"burst", required_argument, NULL, RO_BURST},
        {"log-format", required_argument, NULL, RO_LOG_FORMAT},
        {"log-level", required_argument, NULL, RO_LOG_LEVEL},
        {"workers", required_argument, NULL, RO_WORKERS},
        {"flink-base-url", required_argument, NULL, RO_FLINK_BASE},
        {"flink-access", required_argument, NULL, RO_FLINK_ACCESS},
        {"debug-snapshot-dir", required_argument, NULL, RO_DEBUG_SNAPSHOT},
        {"policy-timeout-ms", required_argument, NULL, RO_TIMEOUT},
        {"policy-memory-mib", required_argument, NULL, RO_MEMORY},
        {"webhook-addr", required_argument, NULL, RO_WEBHOOK_ADDR},
        {"webhook-cert-file", required_argument, NULL, RO_WEBHOOK_CERT},
        {"webhook-key-file", required_argument, NULL, RO_WEBHOOK_KEY},
        {"webhook-cert-secret", required_argument, NULL, RO_WEBHOOK_SECRET},
        {"webhook-service", required_argument, NULL, RO_WEBHOOK_SERVICE},
        {"webhook-configuration", required_argument, NULL, RO_WEBHOOK_CONFIG},
        {"webhook-cert-validity", required_argument, NULL, RO_WEBHOOK_VALIDITY},
        {"webhook-host", required_argument, NULL, RO_WEBHOOK_HOST},
        {"policy-configmap", required_argument, NULL, RO_POLICY_CM},
        {"policy-work-dir", required_argument, NULL, RO_POLICY_WORK},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;
    unsigned long n;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            run_usage(stdout);
            return 1;
        case RO_KUBECONFIG:
            o->kubeconfig = optarg;
            break;
        case RO_CONTEXT:
            o->context = optarg;
            break;
        case RO_NAMESPACE: {
            const char **n = realloc(o->namespaces, (o->nns + 1) * sizeof *n);
            if (!n)
                return -1;
            o->namespaces = n;
            o->namespaces[o->nns++] = optarg;
            break;
        }
        case RO_POLICY_DIR:
            o->host.policy_dir = optarg;
            break;
        case RO_METRICS:
            o->metrics_addr = optarg;
            break;
        case RO_HEALTH:
            o->health_addr = optarg;
            break;
        case RO_LEADER:
            o->leader_elect = 1;
            break;
        case RO_LEADER_NS:
            o->leader_ns = optarg;
            break;
        case RO_QPS:
            if (run_parse_num("--qps", optarg, 0, 1e6, &o->qps))
                return -1;
            break;
        case RO_BURST:
            if (run_parse_int("--burst", optarg, 1, 1000000, &n))
                return -1;
            o->burst = (int)n;
            break;
        case RO_LOG_FORMAT:
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                fprintf(stderr, "run: --log-format: expected text or json, got '%s'\n", optarg);
                return -1;
            }
            o->json_logs = strcmp(optarg, "json") == 0;
            break;
        case RO_LOG_LEVEL:
            if (log_parse_level(optarg, &o->log_level)) {
                fprintf(stderr, "run: --log-level: expected debug, info, warn or error, got '%s'\n", optarg);
                return -1;
            }
            break;
        case RO_WORKERS:
            if (run_parse_int("--workers", optarg, 1, 1024, &n))
                return -1;
            o->workers = (int)n;
            break;
        case RO_FLINK_BASE:
            if (strncmp(optarg, "http://", 7) != 0 && strncmp(optarg, "https://", 8) != 0) {
                fprintf(stderr, "run: --flink-base-url: expected http:// or https://, got '%s'\n", optarg);
                return -1;
            }
            o->flink_base = optarg;
            break;
        case RO_DEBUG_SNAPSHOT:
            o->debug_snapshot_dir = optarg;
            break;
        case RO_FLINK_ACCESS:
            if (run_flink_access_parse(optarg, &o->flink_access)) {
                fprintf(stderr, "run: --flink-access: expected auto, service or proxy, got '%s'\n", optarg);
                return -1;
            }
            break;
        case RO_TIMEOUT:
            if (run_parse_int("--policy-timeout-ms", optarg, 1, 3600000, &n))
                return -1;
            o->host.timeout_ms = (unsigned)n;
            break;
        case RO_MEMORY:
            if (run_parse_int("--policy-memory-mib", optarg, 1, 65536, &n))
                return -1;
            o->host.memory_mib = (unsigned)n;
            break;
        case RO_WEBHOOK_ADDR:
            o->webhook_addr = optarg;
            break;
        case RO_WEBHOOK_CERT:
            o->webhook_cert = optarg;
            break;
        case RO_WEBHOOK_KEY:
            o->webhook_key = optarg;
            break;
        case RO_WEBHOOK_SECRET:
            o->webhook_secret = optarg;
            break;
        case RO_WEBHOOK_SERVICE:
            o->webhook_service = optarg;
            break;
        case RO_WEBHOOK_CONFIG:
            o->webhook_config = optarg;
            break;
        case RO_WEBHOOK_HOST:
            o->webhook_hosts = optarg;
            break;
        case RO_WEBHOOK_VALIDITY: {
            char why[128];
            if (certs_parse_validity(optarg, &o->webhook_validity_s, why, sizeof why)) {
                fprintf(stderr, "run: --webhook-cert-validity: %s\n", why);
                return -1;
            }
            break;
        }
        case RO_POLICY_CM: {
            const char *slash = strchr(optarg, '/');
            if (!slash || slash == optarg || !slash[1] || strchr(slash + 1, '/') || slash - optarg > 253 ||
                strlen(slash + 1) > 253) {
                fprintf(stderr, "run: --policy-configmap: expected NAMESPACE/NAME, got '%s'\n", optarg);
                return -1;
            }
            o->policy_configmap = optarg;
            break;
        }
        case RO_POLICY_WORK:
            o->policy_work_dir = optarg;
            break;
        default:
            if (optopt)
                fprintf(stderr, "run: bad or incomplete option '-%c' (see --help)\n", optopt);
            else
                fprintf(stderr, "run: bad or incomplete option '%s' (see --help)\n", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "run: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (run_check_webhook_opts(o))
        return -1;
    return 0;
}

/* The cache keeps what a pass reads (docs/contracts.md, "What the cache keeps"; the reflector
 * removed metadata.managedFields already), as client-go informers' TransformFunc trims theirs:
 *   - every kind: the annotation kubectl.kubernetes.io/last-applied-configuration (a copy of
 *     the object as a user last applied it with kubectl);
 *   - ControllerRevision: only those a FlinkCluster controls (ours; the StatefulSet
 *     controller's, one copy of a pod template per revision, are never in a snapshot, which
 *     finds ControllerRevisions by their controller's uid);
 *   - Pod: `spec` only as {nodeName}, what a pass reads of a pod being metadata and status
 *     (phase, containerStatuses; the pod template is the StatefulSet's, Job's or the
 *     taskmanager_pod hook's).
 * and sets apiVersion and kind where the server left them out (list items): the caches are
 * compact (the children's texts go into the snapshots as they are). */
static int run_transform(reflector *r, const kube_kind *kind, json_t *obj, void *ud)
{
    (void)r;
    (void)ud;
    json_t *md = json_object_get(obj, "metadata");
    json_object_del(json_object_get(md, "annotations"), "kubectl.kubernetes.io/last-applied-configuration");
    /* list items of built-in kinds come without apiVersion and kind: the compact cache's texts go
     * into snapshots as they are, so they are typed here */
    if (!json_is_string(json_object_get(obj, "apiVersion")))
        json_object_set_new(obj, "apiVersion", json_string(kind->api_version));
    if (!json_is_string(json_object_get(obj, "kind")))
        json_object_set_new(obj, "kind", json_string(kind->kind));
    if (kind == &kube_kind_controllerrevision) {
        size_t i;
        json_t *ref;
        json_array_foreach(json_object_get(md, "ownerReferences"), i, ref) {
            const char *k = json_string_value(json_object_get(ref, "kind"));
            if (json_is_true(json_object_get(ref, "controller")) && k && strcmp(k, "FlinkCluster") == 0)
                return 0;
        }
        return 1;
    }
    if (kind == &kube_kind_pod) {
        json_t *spec = json_object_get(obj, "spec"), *kept = json_object();
        json_t *node = json_object_get(spec, "nodeName");
        if (kept && node)
            json_object_set(kept, "nodeName", node);
        if (kept)
            json_object_set_new(obj, "spec", kept);
    }
    return 0;
}

/* ---- main ---------------------------------------------------------------------------------- */

static int run_start_reflectors(struct run_ctx *ctx)
{
    char err[512];
    for (size_t i = 0; i < ctx->nns; i++) {
        for (int k = 0; k < run_nkinds; k++) {
            reflector_opts ro = {.namespace = ctx->nss[i].ns,
                                 .label_selector = k == 0 || (run_any_labels & (1u << k)) ? NULL
                                                                                          : run_labels.selector,
                                 .cluster_label = k == 0 ? NULL : run_labels.cluster,
                                 .resync_s = k == 0 ? RUN_RESYNC_S : 0,
                                 .transform = run_transform,
                                 .compact = 1,
                                 .on_synced = run_on_synced,
                                 .on_error = run_on_error};
            ctx->nss[i].r[k] = reflector_start(ctx->kc, run_kinds[k], &ro, run_on_event, ctx, err, sizeof err);
            if (!ctx->nss[i].r[k]) {
                run_log(LOG_ERROR, NULL, "startup failed", "step", "watch", "kind", run_kinds[k]->plural, "error", err, NULL);
                return -1;
            }
        }
    }
    return 0;
}

/* Reads the children's labels from lua/fc/names.lua (names.watch(): {selector, cluster_label,
 * app_label, app}, each a non-empty string) into run_labels. -1 with err (n bytes) when one is
 * missing. */
static int run_load_labels(struct run_ctx *ctx, char *err, size_t n)
{
    char *out = NULL;
    if (lhost_call_json(ctx->host, "fc.names", "watch", NULL, &out, err, n))
        return -1;
    json_t *w = json_loads(out, 0, NULL);
    free(out);
    static const char *const fields[] = {"selector", "cluster_label", "app_label", "app"};
    char **dst[] = {&run_labels.selector, &run_labels.cluster, &run_labels.app_label, &run_labels.app};
    int rc = 0;
    for (size_t i = 0; i < sizeof fields / sizeof *fields && !rc; i++) {
        const char *v = json_string_value(json_object_get(w, fields[i]));
        if (!v || !*v || !(*dst[i] = strdup(v))) {
            snprintf(err, n, "names.watch().%s must be a non-empty string", fields[i]);
            rc = -1;
        }
    }
    json_decref(w);
    return rc;
}

/* Reads the child kinds from lua/fc/kinds.lua (kinds.watched(): [{apiVersion, kind, resource,
 * by_label, any_labels}]) into run_kinds and their labels from lua/fc/names.lua
 * (run_load_labels); the watches, the snapshot's children and the deletes follow. */
static int run_load_kinds(struct run_ctx *ctx)
{
    char err[1024];
    char *out = NULL;
    if (run_load_labels(ctx, err, sizeof err)) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "fc.names", "error", err, NULL);
        return -1;
    }
    if (lhost_call_json(ctx->host, "fc.kinds", "watched", NULL, &out, err, sizeof err)) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "fc.kinds", "error", err, NULL);
        return -1;
    }
    json_error_t jerr;
    json_t *list = json_loads(out, 0, &jerr);
    free(out);
    int rc = json_is_array(list) ? 0 : -1;
    if (rc)
        snprintf(err, sizeof err, "kinds.watched() must return a list");
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if (rc)
            break;
        const char *av = json_string_value(json_object_get(e, "apiVersion"));
        const char *kind = json_string_value(json_object_get(e, "kind"));
        const char *res = json_string_value(json_object_get(e, "resource"));
        const kube_kind *k = NULL;
        if (run_nkinds >= RUN_MAXKINDS)
            snprintf(err, sizeof err, "more than %d kinds", RUN_MAXKINDS - 1);
        else
            k = kube_kind_define(av, kind, res, 1, err, sizeof err);
        for (int j = 0; k && j < run_nkinds; j++)
            if (run_kinds[j] == k) {
                snprintf(err, sizeof err, "%s %s declared twice", av, kind);
                k = NULL;
            }
        if (!k) {
            rc = -1;
            break;
        }
        if (json_is_true(json_object_get(e, "by_label")))
            run_by_label |= 1u << run_nkinds;
        if (json_is_true(json_object_get(e, "any_labels")))
            run_any_labels |= 1u << run_nkinds;
        run_kinds[run_nkinds++] = k;
    }
    json_decref(list);
    if (rc)
        run_log(LOG_ERROR, NULL, "startup failed", "step", "fc.kinds", "error", err, NULL);
    return rc;
}

/* Loads fc.reconcile once so that a broken installation fails at start, not per key. */
static int run_check_framework(struct run_ctx *ctx)
{
    char err[4096];
    lua_State *L = lhost_state(ctx->host);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fc.reconcile");
    if (lhost_pcall(ctx->host, 1, 1, err, sizeof err)) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "load the framework", "error", err, NULL);
        return -1;
    }
    lua_pop(L, 1);
    return 0;
}

int run_main(int argc, char **argv)
{
    struct run_ctx ctx_ = {0}, *ctx = &ctx_;
    ctx->o.qps = RUN_DEFAULT_QPS;
    ctx->o.burst = RUN_DEFAULT_BURST;
    ctx->o.workers = RUN_WORKERS_DEFAULT;
    ctx->o.log_level = LOG_INFO;
    int p = run_parse(argc, argv, &ctx->o);
    if (p) {
        free(ctx->o.namespaces);
        return p > 0 ? 0 : 2;
    }
    log_configure(ctx->o.json_logs ? LOG_FORMAT_JSON : LOG_FORMAT_TEXT, ctx->o.log_level);
    int code = 1;
    char err[1024];
    struct stat sb;
    if (ctx->o.host.policy_dir && (stat(ctx->o.host.policy_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
        fprintf(stderr, "run: --policy-dir: %s: not a directory\n", ctx->o.host.policy_dir);
        free(ctx->o.namespaces);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* A fixed mmap threshold: glibc's dynamic one rises to the largest block freed (up to
     * 32 MiB), after which list pages and request bodies of a few MiB come from the heap and
     * leave it fragmented; at 256 KiB they are mapped and unmapped. */
    mallopt(M_MMAP_THRESHOLD, RUN_MMAP_THRESHOLD);
    ctx->loop = ev_default_loop(EVFLAG_AUTO);
    ev_timer_init(&ctx->trim_timer, run_trim_cb, RUN_TRIM_INTERVAL_S, RUN_TRIM_INTERVAL_S);
    ctx->trim_timer.data = ctx;
    ev_timer_start(ctx->loop, &ctx->trim_timer);
    ev_unref(ctx->loop); /* the trim timer alone does not keep the loop running */
    ctx->flink = json_object();
    ctx->emitted = json_object();
    ctx->expect = json_object();
    ctx->kept = json_object();
    ctx->fresh = json_object();
    ctx->dryruns = json_object();
    ctx->host = lhost_new(&ctx->o.host, err, sizeof err);
    if (!ctx->host) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "lua host", "error", err, NULL);
        goto out;
    }
    if (run_check_framework(ctx) || run_load_kinds(ctx))
        goto out;
    /* the built-in set: the policy dir given at start; its hash names it like any other */
    snprintf(ctx->ov.builtin_dir, sizeof ctx->ov.builtin_dir, "%s", lhost_policy_dir(ctx->host));
    if (override_hash(ctx->ov.builtin_dir, ctx->ov.builtin_hash, sizeof ctx->ov.builtin_hash, err, sizeof err)) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "policy set", "error", err, NULL);
        goto out;
    }
    memcpy(ctx->ov.active_hash, ctx->ov.builtin_hash, sizeof ctx->ov.active_hash);
    if (!ctx->o.policy_work_dir)
        ctx->o.policy_work_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (ctx->o.policy_configmap) {
        const char *slash = strchr(ctx->o.policy_configmap, '/');
        snprintf(ctx->ov.ns, sizeof ctx->ov.ns, "%.*s", (int)(slash - ctx->o.policy_configmap),
                 ctx->o.policy_configmap);
        snprintf(ctx->ov.name, sizeof ctx->ov.name, "%s", slash + 1);
    }
    ctx->reg = metrics_registry_new(0, "flink_controller_metrics_dropped_total");
    ctx->cm_index = clustermetrics_index_new();
    if (!ctx->reg || !ctx->cm_index || metrics_register_controller(ctx->reg, &ctx->m, err, sizeof err)) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "metrics", "error",
                ctx->reg && ctx->cm_index ? err : "out of memory", NULL);
        goto out;
    }
    run_override_set_info(ctx);
    if ((ctx->o.health_addr && *ctx->o.health_addr) || (ctx->o.metrics_addr && *ctx->o.metrics_addr)) {
        server_opts so = {.health_addr = ctx->o.health_addr,
                          .metrics_addr = ctx->o.metrics_addr,
                          .metrics = ctx->reg,
                          .on_scrape = run_on_scrape,
                          .scrape_ud = ctx};
        ctx->srv = server_start(ctx->loop, &so, err, sizeof err);
        if (!ctx->srv) {
            run_log(LOG_ERROR, NULL, "startup failed", "step", "serve", "error", err, NULL);
            goto out;
        }
        server_set_ready(ctx->srv, 0, "caches not synced");
        run_log(LOG_INFO, NULL, "serving health and metrics", "health_port", RUN_LD(server_health_port(ctx->srv)),
                "metrics_port", RUN_LD(server_metrics_port(ctx->srv)), NULL);
    }
    if (ctx->o.webhook_addr && *ctx->o.webhook_addr && !ctx->o.webhook_secret) {
        /* served by every replica, leader or not: admission needs no leadership */
        webhook_opts wo = {.addr = ctx->o.webhook_addr,
                           .cert_file = ctx->o.webhook_cert,
                           .key_file = ctx->o.webhook_key,
                           .host = ctx->host,
                           .admissions = ctx->m.webhook_admissions};
        ctx->wh = webhook_start(ctx->loop, &wo, err, sizeof err);
        if (!ctx->wh) {
            run_log(LOG_ERROR, NULL, "startup failed", "step", "serve", "error", err, NULL);
            goto out;
        }
        run_log(LOG_INFO, NULL, "serving the admission webhook", "port", RUN_LD(webhook_port(ctx->wh)), NULL);
    }
    kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (kube_config_load_default(&cfg, ctx->o.kubeconfig, ctx->o.context, err, sizeof err)) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "kubernetes config", "error", err, NULL);
        goto out;
    }
    cfg.qps = ctx->o.qps;
    cfg.burst = ctx->o.burst;
    ctx->kc = kube_client_new(ctx->loop, &cfg, err, sizeof err);
    run_log(LOG_INFO, NULL, "starting", "server", cfg.server ? cfg.server : "?", "context", cfg.context ? cfg.context : "?",
            "policy_dir", lhost_policy_dir(ctx->host), "hash", ctx->ov.builtin_hash, "workers", RUN_LD(ctx->o.workers), NULL);
    ctx->flink_env.access = run_flink_access_resolve(ctx->o.flink_access, cfg.context);
    ctx->flink_env.base_url = ctx->o.flink_base;
    run_log(LOG_INFO, NULL, "flink REST access", "flink_rest", ctx->o.flink_base ? ctx->o.flink_base
                                               : ctx->flink_env.access == RUN_FLINK_SERVICE
                                                   ? "each JobManager Service's cluster DNS name"
                                                   : "the API server's service proxy", NULL);
    kube_config_clear(&cfg);
    if (!ctx->kc) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "kubernetes client", "error", err, NULL);
        goto out;
    }
    ctx->hc = http_client_new(ctx->loop, err, sizeof err);
    if (!ctx->hc) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "http client", "error", err, NULL);
        goto out;
    }
    ctx->flink_env.kc = ctx->kc;
    ctx->flink_env.hc = ctx->hc;
    ctx->flink_env.metrics = &ctx->m;
    ctx->q = workqueue_new(ctx->loop, &(workqueue_opts){.on_ready = run_on_ready, .ready_ud = ctx});
    ev_idle_init(&ctx->pump_idle, run_pump_cb);
    ctx->pump_idle.data = ctx;
    ctx->nns = ctx->o.nns ? ctx->o.nns : 1;
    ctx->nss = calloc(ctx->nns, sizeof *ctx->nss);
    if (!ctx->q || !ctx->nss) {
        run_log(LOG_ERROR, NULL, "startup failed", "error", "out of memory", NULL);
        goto out;
    }
    for (size_t i = 0; i < ctx->o.nns; i++) {
        /* a NULL namespace means all of them: an allocation failure must not widen the watch */
        ctx->nss[i].ns = strdup(ctx->o.namespaces[i]);
        if (!ctx->nss[i].ns) {
            run_log(LOG_ERROR, NULL, "startup failed", "error", "out of memory", NULL);
            goto out;
        }
    }
    if (run_start_reflectors(ctx))
        goto out;
    if (ctx->o.policy_configmap) {
        /* exactly that ConfigMap (RBAC resourceNames allows a list/watch by metadata.name only) */
        char sel[300];
        snprintf(sel, sizeof sel, "metadata.name=%.253s", ctx->ov.name);
        reflector_opts ro = {.namespace = ctx->ov.ns,
                             .field_selector = sel,
                             .on_synced = run_override_on_synced,
                             .on_error = run_on_error};
        ctx->ov.r = reflector_start(ctx->kc, &kube_kind_configmap, &ro, run_override_on_event, ctx, err, sizeof err);
        if (!ctx->ov.r) {
            run_log(LOG_ERROR, NULL, "startup failed", "step", "watch", "kind", "ConfigMap", "configmap", ctx->o.policy_configmap, "error", err, NULL);
            goto out;
        }
        run_log(LOG_INFO, NULL, "policy overrides from a ConfigMap", "configmap", ctx->o.policy_configmap,
                "policy_work_dir", ctx->o.policy_work_dir, NULL);
    }
    ev_signal_init(&ctx->sig_term, run_on_signal, SIGTERM);
    ev_signal_init(&ctx->sig_int, run_on_signal, SIGINT);
    ctx->sig_term.data = ctx->sig_int.data = ctx;
    ev_signal_start(ctx->loop, &ctx->sig_term);
    ev_signal_start(ctx->loop, &ctx->sig_int);
    ctx->leading = !ctx->o.leader_elect;
    if (ctx->o.leader_elect) {
        char ident[300], lns[254];
        const kube_config *kcfg = kube_client_config(ctx->kc);
        if (leader_default_identity(ident, sizeof ident) ||
            (ctx->o.leader_ns ? snprintf(lns, sizeof lns, "%s", ctx->o.leader_ns) >= (int)sizeof lns
                              : leader_default_namespace(kcfg ? kcfg->namespace : NULL, lns, sizeof lns))) {
            run_log(LOG_ERROR, NULL, "startup failed", "step", "leader election", "error", "identity or namespace too long", NULL);
            goto out;
        }
        leader_opts lo = {.namespace = lns,
                          .identity = ident,
                          .on_started_leading = run_started_leading,
                          .on_stopped_leading = run_stopped_leading,
                          .on_new_leader = run_new_leader,
                          .ud = ctx};
        ctx->le = leader_start(ctx->loop, ctx->kc, &lo, err, sizeof err);
        if (!ctx->le) {
            run_log(LOG_ERROR, NULL, "startup failed", "step", "leader election", "error", err, NULL);
            goto out;
        }
        run_log(LOG_INFO, NULL, "leader election", "lease", LEADER_LEASE_NAME, "namespace", lns, "identity", ident, NULL);
    }
    if (ctx->o.webhook_secret) {
        /* every replica reads the Secret and serves its pair; only one that may write makes it */
        certsync_opts co = {.secret = ctx->o.webhook_secret,
                            .service = ctx->o.webhook_service,
                            .hosts = ctx->o.webhook_hosts,
                            .configuration = ctx->o.webhook_config,
                            .validity_s = ctx->o.webhook_validity_s,
                            .may_write = run_may_write_ud,
                            .on_pair = run_on_webhook_pair,
                            .ud = ctx};
        ctx->cs = certsync_start(ctx->loop, ctx->kc, &co, err, sizeof err);
        if (!ctx->cs) {
            run_log(LOG_ERROR, NULL, "startup failed", "step", "webhook certificates", "error", err, NULL);
            goto out;
        }
    }
    ev_run(ctx->loop, 0);
    run_log(LOG_INFO, NULL, "stopped", "reconciles", RUN_LD(ctx->reconciles), "reconciles_failed",
            RUN_LD(ctx->reconcile_errors), "writes", RUN_LD(ctx->actions_done), "writes_failed", RUN_LD(ctx->action_errors), NULL);
    code = ctx->stopping ? ctx->exit_code : 1;
out:
    /* items still in flight after the grace period: cancel their calls */
    while (ctx->items) {
        struct run_item *it = ctx->items;
        if (it->call)
            kube_cancel(it->call);
        run_item_free(it);
    }
    run_cancel_fcalls(ctx, NULL);
    for (size_t i = 0; ctx->nss && i < ctx->nns; i++) {
        for (int k = 0; k < run_nkinds; k++)
            if (ctx->nss[i].r[k])
                reflector_stop(ctx->nss[i].r[k]);
        free(ctx->nss[i].ns);
    }
    free(ctx->nss);
    if (ctx->ov.r)
        reflector_stop(ctx->ov.r);
    run_override_cancel(ctx);
    override_remove(ctx->ov.active_dir); /* a set made for this process ("" = the built-in one) */
    if (ctx->q)
        workqueue_free(ctx->q);
    if (ctx->hc)
        http_client_free(ctx->hc);
    /* before the client: an elector with a request in flight (a standby's try, say) cancels
     * its kube call, which kube_client_free would already have freed */
    leader_free(ctx->le);
    certsync_free(ctx->cs);
    if (ctx->kc)
        kube_client_free(ctx->kc);
    server_stop(ctx->srv);
    webhook_stop(ctx->wh);
    metrics_registry_free(ctx->reg);
    clustermetrics_index_free(ctx->cm_index);
    lhost_free(ctx->host);
    json_decref(ctx->flink);
    json_decref(ctx->emitted);
    json_decref(ctx->expect);
    json_decref(ctx->kept);
    json_decref(ctx->fresh);
    json_decref(ctx->dryruns);
    free(ctx->o.namespaces);
    return code;
}
