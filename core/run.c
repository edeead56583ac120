/* SPDX-License-Identifier: Apache-2.0 */
/* core/run: `flink-controller run` (see run.h and docs/contracts.md, "Reconcile"/"Transport"). */
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <ev.h>
#include <jansson.h>
#include <lua.h>

#include "admission.h"
#include "certsync.h"
#include "clustermetrics.h"
#include "clusterstate.h"
#include "executor.h"
#include "expect.h"
#include "flinkcall.h"
#include "flinkjob.h"
#include "http.h"
#include "kube.h"
#include "leader.h"
#include "lhost.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "override.h"
#include "policyset.h"
#include "reflector.h"
#include "replica.h"
#include "run.h"
#include "runctx.h"
#include "server.h"
#include "shard.h"
#include "snapshot.h"
#include "util.h"
#include "webhook.h"
#include "workqueue.h"

/* ---- the controller ------------------------------------------------------------------------ */

/* The watched kinds: [0] the FlinkClusters, then the children as lua/fc/kinds.lua declares them
 * (run_load_kinds, at start; one process runs one controller). */
const kube_kind *run_kinds[RUN_MAXKINDS] = {&kube_kind_flinkcluster};
int run_nkinds = 1;
unsigned run_by_label;
unsigned run_any_labels;
struct run_label_names run_labels;

static void run_pump(struct run_ctx *ctx);

/* ---- logs --------------------------------------------------------------------------------- */

/* The workqueue key "<namespace>/<name>" split for logs: the namespace into `ns` (n bytes, ""
 * without a '/'), the name returned (inside `key`). */
const char *run_key_split(const char *key, char *ns, size_t n)
{
    const char *slash = strchr(key, '/');
    snprintf(ns, n, "%.*s", slash ? (int)(slash - key) : 0, key);
    return slash ? slash + 1 : key;
}

/* One record through core/log (log.h, "Keys"): `msg` a constant phrase; when `key` is a workqueue
 * key "<namespace>/<name>" the record carries "cluster" = name and "namespace" (NULL: a line
 * about no FlinkCluster); then the caller's key/value pairs, const char *, ended by NULL (at
 * most 22 pairs). */
void run_log(log_level level, const char *key, const char *msg, ...)
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
const char *run_fmt(char *b, size_t n, const char *fmt, double v)
{
    snprintf(b, n, fmt, v);
    return b;
}

/* ---- metrics ------------------------------------------------------------------------------ */

void run_count_request(struct run_ctx *ctx, const char *verb, long status)
{
    char code[16];
    snprintf(code, sizeof code, "%ld", status);
    const char *v[] = {code, verb};
    metrics_inc(ctx->m.api_requests_total, v);
}

void run_count_watch_event(struct run_ctx *ctx, const char *kind, reflector_event ev)
{
    static const char *const evnames[] = {"ADDED", "MODIFIED", "DELETED", "RESYNC"};
    ctx->activity++;
    const char *kv[] = {kind, evnames[ev]};
    metrics_inc(ctx->m.watch_events_total, kv);
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

/* "<namespace>/<name>" of a FlinkCluster object into key (n bytes); 0, or -1 when a name is
 * missing or the key does not fit. */
int run_cluster_key(json_t *obj, char *key, size_t n)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!ns || !name)
        return -1;
    int w = snprintf(key, n, "%s/%s", ns, name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static void run_on_scrape(void *ud)
{
    struct run_ctx *ctx = ud;
    if (ctx->q)
        metrics_set(ctx->m.workqueue_depth, NULL, (double)workqueue_len(ctx->q));
    metrics_set(ctx->m.leader, NULL, ctx->o.leader_elect && ctx->leading ? 1 : 0);
    replica_scrape(ctx);
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

struct run_ns *run_ns_for(struct run_ctx *ctx, const char *ns)
{
    for (size_t i = 0; i < ctx->nns; i++)
        if (!ctx->nss[i].ns || strcmp(ctx->nss[i].ns, ns) == 0)
            return &ctx->nss[i];
    return NULL;
}

/* A shallow copy of a cached object with apiVersion and kind set (list items of built-in
 * kinds come without them). */
json_t *run_typed(json_t *obj, const kube_kind *k)
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

/* Forgets what was kept for a key whose FlinkCluster is gone. */
void run_forget_key(struct run_ctx *ctx, const char *key)
{
    clusterstate_forget(ctx->clusters, key);
    flinkcall_cancel_key(ctx, key);
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
    /* a FlinkJob's key names it "FlinkJob:<name>" (RUN_FLINKJOB_KEY) */
    const char *job = flinkjob_key_name(it->name);
    int is_job = job != NULL;
    if (is_job)
        memmove(it->name, job, strlen(job) + 1);
    it->kind = is_job ? &kube_kind_flinkjob : &kube_kind_flinkcluster;
    struct run_ns *rn = slash ? run_ns_for(ctx, it->ns) : NULL;
    reflector *src = !rn ? NULL : is_job ? rn->jobs : rn->r[0];
    /* decoded from the compact cache: the pass's own tree (it->cluster) */
    json_t *cluster = src ? reflector_get_copy(src, it->ns, it->name) : NULL;
    if (!cluster) {
        /* deleted: the garbage collector removes the children; forget what we kept */
        run_forget_key(ctx, key);
        it->phase = PHASE_DONE;
        executor_step(it);
        return;
    }
    double wait = expect_pending(ctx, rn, key, it->ns);
    if (wait > 0) {
        run_log(LOG_DEBUG, key, "waiting for own writes in the cache", "wait_ms", RUN_MS(wait), NULL);
        it->waiting = 1;
        json_decref(cluster);
        workqueue_add_after(ctx->q, key, wait);
        it->phase = PHASE_DONE;
        executor_step(it);
        return;
    }
    cluster_state *cs = clusterstate_get(ctx->clusters, key);
    it->fresh = cs ? cs->fresh : NULL; /* taken: the next pass starts without */
    if (cs)
        cs->fresh = NULL;
    it->cluster = cluster;
    snprintf(it->policy_hash, sizeof it->policy_hash, "%s", ctx->ov.active_hash);
    struct snapshot_parts c = {0};
    json_t *snap = is_job ? snapshot_build_job(ctx, rn, key, cluster) : snapshot_build(ctx, rn, key, cluster, &c);
    char *in = snap ? json_dumps(snap, JSON_COMPACT) : NULL;
    if (in && ctx->o.debug_snapshot_dir) {
        char *whole = snapshot_text(snap, &c);
        if (whole)
            snapshot_write(ctx, it, whole);
        free(whole);
    }
    json_decref(snap);
    char *out = NULL;
    char err[4096] = "";
    double t0 = ev_time();
    int rc = in ? lhost_call_json_parts(ctx->host, "fc.reconcile", "run", in, c.parts, c.n, &out, err, sizeof err)
                : -1;
    free(in);
    snapshot_parts_free(&c);
    double dt = ev_time() - t0;
    if (rc == 0)
        it->result = json_loads(out, JSON_ALLOW_NUL, NULL); /* a "\u0000" in a message is data */
    free(out);
    if (rc != 0 || !json_is_object(it->result)) {
        run_log(LOG_ERROR, key, "reconcile framework error", "error", rc ? err : "result is not an object", NULL);
        it->failed = 1;
        it->phase = PHASE_DONE;
        executor_step(it);
        return;
    }
    run_log(LOG_DEBUG, key, "reconciled", "duration_ms", RUN_MS(dt),
            "actions", RUN_ZU(json_array_size(json_object_get(it->result, "actions"))),
            "status", json_object_get(it->result, "status") ? "changed" : "unchanged",
            "events", RUN_ZU(json_array_size(json_object_get(it->result, "events"))), NULL);
    it->phase = PHASE_ACTIONS;
    executor_step(it);
}

static int run_may_work(struct run_ctx *ctx)
{
    return !ctx->stopping && ctx->synced && (!ctx->o.leader_elect || ctx->leading);
}

static void run_finish_stop(struct run_ctx *ctx)
{
    if (ctx->releasing)
        return;
    if (replica_release(ctx))
        return;
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
        if (!replica_owns_key(ctx, key)) {
            workqueue_forget(ctx->q, key);
            workqueue_done(ctx->q, key);
            continue;
        }
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

static void run_on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)old;
    struct run_ctx *ctx = ud;
    char key[600];
    int k = run_kind_index(ctx, r);
    run_count_watch_event(ctx, run_kind_name(k), ev);
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
    /* the watches are shared by every shard: another shard's events are dropped here */
    if (replica_owns_key(ctx, key))
        workqueue_add(ctx->q, key);
}

static void run_enqueue_cluster(json_t *obj, void *ud)
{
    struct run_ctx *ctx = ud;
    char key[600];
    if (run_cluster_key(obj, key, sizeof key) == 0)
        workqueue_add(ctx->q, key);
}

void run_enqueue_all(struct run_ctx *ctx)
{
    for (size_t i = 0; i < ctx->nns; i++) {
        if (ctx->nss[i].r[0])
            reflector_foreach(ctx->nss[i].r[0], run_enqueue_cluster, ctx);
        if (ctx->nss[i].jobs)
            reflector_foreach(ctx->nss[i].jobs, flinkjob_enqueue, ctx);
    }
}

/* Ready once every cache synced and the first policy set is decided (with --policy-configmap:
 * no ConfigMap, or its set accepted or refused), so that no pass runs with a set about to be
 * replaced at start. */
void run_check_synced(struct run_ctx *ctx)
{
    if (ctx->synced || (ctx->ov.r && (!reflector_has_synced(ctx->ov.r) || !ctx->ov.settled)))
        return;
    for (size_t i = 0; i < ctx->nns; i++) {
        for (int k = 0; k < run_nkinds; k++)
            if (!ctx->nss[i].r[k] || !reflector_has_synced(ctx->nss[i].r[k]))
                return;
        if (!ctx->nss[i].jobs || !reflector_has_synced(ctx->nss[i].jobs))
            return;
    }
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
    int k = run_kind_index(ctx, r);
    const char *kind = r == ctx->ov.r ? "ConfigMap" : k < 0 ? kube_kind_flinkjob.kind : run_kind_name(k);
    const char *kv[] = {kind};
    metrics_inc(ctx->m.watch_restarts_total, kv);
    run_log(LOG_WARN, NULL, "watch restarted", "kind", kind, "error", what, NULL);
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
void run_begin_stop(struct run_ctx *ctx, int exit_code)
{
    struct ev_loop *loop = ctx->loop;
    ctx->stopping = 1;
    ctx->exit_code = exit_code;
    workqueue_shutdown(ctx->q);
    for (size_t i = 0; i < ctx->nns; i++) {
        for (int k = 0; k < run_nkinds; k++)
            if (ctx->nss[i].r[k]) {
                /* in-flight items hold their own references to what they need */
                reflector_stop(ctx->nss[i].r[k]);
                ctx->nss[i].r[k] = NULL;
            }
        if (ctx->nss[i].jobs) {
            reflector_stop(ctx->nss[i].jobs);
            ctx->nss[i].jobs = NULL;
        }
    }
    if (ctx->ov.r) {
        reflector_stop(ctx->ov.r);
        ctx->ov.r = NULL;
    }
    policyset_cancel(ctx);
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

/* ---- options ------------------------------------------------------------------------------- */

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
                                 /* the FlinkClusters streamed (a watch-list), the first from
                                  * the watch cache as it is; a server without watch-lists lists
                                  * them from that cache in one page; the children, 2-4 per
                                  * cluster and larger, in consistent pages of 500 */
                                 .list_from_cache = k == 0,
                                 .watch_list = k == 0,
                                 .on_synced = run_on_synced,
                                 .on_error = run_on_error};
            ctx->nss[i].r[k] = reflector_start(ctx->kc, run_kinds[k], &ro, run_on_event, ctx, err, sizeof err);
            if (!ctx->nss[i].r[k]) {
                run_log(LOG_ERROR, NULL, "startup failed", "step", "watch", "kind", run_kinds[k]->plural, "error", err, NULL);
                return -1;
            }
        }
        reflector_opts jo = {.namespace = ctx->nss[i].ns, .resync_s = RUN_RESYNC_S, .transform = run_transform,
                             .compact = 1, .on_synced = run_on_synced, .on_error = run_on_error};
        ctx->nss[i].jobs = reflector_start(ctx->kc, &kube_kind_flinkjob, &jo, flinkjob_on_event, ctx, err, sizeof err);
        if (!ctx->nss[i].jobs) {
            run_log(LOG_ERROR, NULL, "startup failed", "step", "watch", "kind", kube_kind_flinkjob.plural, "error", err, NULL);
            return -1;
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
    ctx->ops = &kube_ops_default;
    ctx->o.qps = RUN_DEFAULT_QPS;
    ctx->o.burst = RUN_DEFAULT_BURST;
    ctx->o.workers = RUN_WORKERS_DEFAULT;
    ctx->o.log_level = LOG_INFO;
    int p = options_parse(argc, argv, &ctx->o);
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
    ctx->clusters = clusterstate_new();
    if (!ctx->clusters) {
        run_log(LOG_ERROR, NULL, "startup failed", "error", "out of memory", NULL);
        goto out;
    }
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
    policyset_set_info(ctx);
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
    if (admission_start(ctx))
        goto out;
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
    ctx->flink_env.access = flinkcall_access_resolve(ctx->o.flink_access, cfg.context);
    ctx->flink_env.base_url = ctx->o.flink_base;
    run_log(LOG_INFO, NULL, "flink REST access", "flink_rest", ctx->o.flink_base ? ctx->o.flink_base
                                               : ctx->flink_env.access == FLINKCALL_SERVICE
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
                             .on_synced = policyset_on_synced,
                             .on_error = run_on_error};
        ctx->ov.r = reflector_start(ctx->kc, &kube_kind_configmap, &ro, policyset_on_event, ctx, err, sizeof err);
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
    if (replica_start(ctx))
        goto out;
    if (admission_start_certs(ctx))
        goto out;
    ev_run(ctx->loop, 0);
    run_log(LOG_INFO, NULL, "stopped", "reconciles", RUN_LD(ctx->reconciles), "reconciles_failed",
            RUN_LD(ctx->reconcile_errors), "writes", RUN_LD(ctx->actions_done), "writes_failed", RUN_LD(ctx->action_errors), NULL);
    code = ctx->stopping ? ctx->exit_code : 1;
out:
    /* items still in flight after the grace period: cancel their calls */
    while (ctx->items) {
        struct run_item *it = ctx->items;
        if (it->call)
            ctx->ops->cancel(it->call);
        executor_item_free(it);
    }
    flinkcall_cancel_key(ctx, NULL);
    for (size_t i = 0; ctx->nss && i < ctx->nns; i++) {
        for (int k = 0; k < run_nkinds; k++)
            if (ctx->nss[i].r[k])
                reflector_stop(ctx->nss[i].r[k]);
        if (ctx->nss[i].jobs)
            reflector_stop(ctx->nss[i].jobs);
        free(ctx->nss[i].ns);
    }
    free(ctx->nss);
    if (ctx->ov.r)
        reflector_stop(ctx->ov.r);
    policyset_cancel(ctx);
    override_remove(ctx->ov.active_dir); /* a set made for this process ("" = the built-in one) */
    if (ctx->q)
        workqueue_free(ctx->q);
    if (ctx->hc)
        http_client_free(ctx->hc);
    /* before the client: an elector with a request in flight (a standby's try, say) cancels
     * its kube call, which kube_client_free would already have freed */
    leader_free(ctx->le);
    shard_free(ctx->shards);
    certsync_free(ctx->cs);
    if (ctx->kc)
        kube_client_free(ctx->kc);
    server_stop(ctx->srv);
    webhook_stop(ctx->wh);
    metrics_registry_free(ctx->reg);
    clustermetrics_index_free(ctx->cm_index);
    lhost_free(ctx->host);
    clusterstate_free(ctx->clusters);
    free(ctx->o.namespaces);
    return code;
}
