/* SPDX-License-Identifier: Apache-2.0 */
/* core/replica: this replica's share of the work (see replica.h). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "certsync.h"
#include "clustermetrics.h"
#include "executor.h"
#include "flinkcall.h"
#include "flinkjob.h"
#include "kube.h"
#include "leader.h"
#include "log.h"
#include "metrics.h"
#include "reflector.h"
#include "replica.h"
#include "runctx.h"
#include "shard.h"
#include "workqueue.h"

/* A key's shard among --shards (0 without). */
static int replica_shard_of(struct run_ctx *ctx, const char *key)
{
    return shard_of_key(key, ctx->o.shards);
}

int replica_owns_key(struct run_ctx *ctx, const char *key)
{
    return !ctx->shards || shard_owned(ctx->shards, replica_shard_of(ctx, key));
}

int replica_may_write(struct run_ctx *ctx)
{
    if (ctx->shards)
        return shard_may_write(ctx->shards, 0);
    return !ctx->o.leader_elect || (ctx->leading && leader_may_write(ctx->le));
}

int replica_may_write_key(struct run_ctx *ctx, const char *key)
{
    if (ctx->shards)
        return shard_may_write(ctx->shards, replica_shard_of(ctx, key));
    return replica_may_write(ctx);
}

/* ---- metrics ------------------------------------------------------------------------------ */

/* The FlinkClusters of each shard, counted by their keys in the metrics index (no cached object
 * decoded at a scrape). */
struct replica_shard_count {
    struct run_ctx *ctx;
    long n[SHARD_MAX];
};

static void replica_count_shard(const char *key, void *ud)
{
    struct replica_shard_count *c = ud;
    c->n[replica_shard_of(c->ctx, key)]++;
}

void replica_scrape(struct run_ctx *ctx)
{
    if (!ctx->shards)
        return;
    struct replica_shard_count c = {.ctx = ctx};
    clustermetrics_index_keys(ctx->cm_index, replica_count_shard, &c);
    for (int i = 0; i < ctx->o.shards; i++) {
        char b[16];
        snprintf(b, sizeof b, "%d", i);
        const char *v[] = {b};
        metrics_set(ctx->m.shard_owned, v, shard_owned(ctx->shards, i));
        metrics_set(ctx->m.shard_clusters, v, (double)c.n[i]);
    }
}

/* ---- the fence ----------------------------------------------------------------------------- */

/* Fences the passes in flight of shard `shard` (-1: all): their calls cancelled, nothing more
 * written (a request already sent cannot be taken back; its answer is dropped); and the Flink
 * calls in flight of those keys. */
static void replica_fence(struct run_ctx *ctx, int shard)
{
    for (;;) {
        struct run_item *it = ctx->items;
        while (it && shard >= 0 && replica_shard_of(ctx, it->key) != shard)
            it = it->next_item;
        if (!it)
            break;
        if (it->call)
            ctx->ops->cancel(it->call);
        it->call = NULL;
        if (!it->fenced)
            run_log(LOG_WARN, it->key, "leadership lost, pass not written", NULL);
        it->fenced = 1;
        executor_finish(it);
    }
    if (shard < 0) {
        flinkcall_cancel_key(ctx, NULL);
        return;
    }
    for (;;) {
        struct run_fcall *c = ctx->fcalls;
        while (c && replica_shard_of(ctx, c->key) != shard)
            c = c->next;
        if (!c)
            break;
        flinkcall_cancel_key(ctx, c->key);
    }
}

/* ---- leader election ----------------------------------------------------------------------- */

static void replica_started_leading(void *ud)
{
    struct run_ctx *ctx = ud;
    ctx->leading = 1;
    metrics_set(ctx->m.leader, NULL, 1);
    run_log(LOG_INFO, NULL, "leading", "identity", leader_identity(ctx->le), NULL);
    certsync_check_now(ctx->cs); /* a new leader makes or renews the certificates at once */
    /* everything cached so far may have changed while another replica led */
    run_enqueue_all(ctx);
    ev_idle_start(ctx->loop, &ctx->pump_idle);
}

static void replica_stopped_leading(void *ud)
{
    struct run_ctx *ctx = ud;
    ctx->leading = 0;
    metrics_set(ctx->m.leader, NULL, 0);
    /* fenced: the keys in flight write nothing more (a request already sent cannot be taken
     * back; its answer is dropped), nor do the Flink calls in flight */
    replica_fence(ctx, -1);
    if (ctx->stopping)
        return;
    /* as client-go's OnStoppedLeading: a replica that lost the lease must not act; it exits
     * (after the keys in flight) and its Deployment restarts it as a candidate */
    run_log(LOG_ERROR, NULL, "leader lease lost, stopping", NULL);
    run_begin_stop(ctx, 1);
}

static void replica_new_leader(const char *identity, void *ud)
{
    (void)ud;
    run_log(LOG_INFO, NULL, "leader changed", "identity", identity && *identity ? identity : "(none)", NULL);
}

/* ---- shards -------------------------------------------------------------------------------- */

/* A shard taken: its keys are enqueued (they may have changed while another replica owned
 * them); a shard lost: what was kept of them forgotten. One walk over a cache: its objects'
 * keys made by `key` (run_cluster_key, flinkjob_key). */
struct replica_walk {
    struct run_ctx *ctx;
    int shard;
    int (*key)(json_t *obj, char *key, size_t n);
};

static void replica_enqueue_in_shard(json_t *obj, void *ud)
{
    struct replica_walk *w = ud;
    char key[600];
    if (w->key(obj, key, sizeof key) == 0 && replica_shard_of(w->ctx, key) == w->shard)
        workqueue_add(w->ctx->q, key);
}

static void replica_forget_in_shard(json_t *obj, void *ud)
{
    struct replica_walk *w = ud;
    char key[600];
    if (w->key(obj, key, sizeof key) == 0 && replica_shard_of(w->ctx, key) == w->shard)
        run_forget_key(w->ctx, key);
}

/* Both caches of every namespace walked with `fn` for shard `shard`. */
static void replica_walk_shard(struct run_ctx *ctx, int shard, void (*fn)(json_t *obj, void *ud))
{
    struct replica_walk clusters = {ctx, shard, run_cluster_key}, jobs = {ctx, shard, flinkjob_key};
    for (size_t i = 0; i < ctx->nns; i++) {
        if (ctx->nss[i].r[0])
            reflector_foreach(ctx->nss[i].r[0], fn, &clusters);
        if (ctx->nss[i].jobs)
            reflector_foreach(ctx->nss[i].jobs, fn, &jobs);
    }
}

/* shard 0 also does the writes of no cluster (certificates). */
static void replica_shard_acquired(int shard, void *ud)
{
    struct run_ctx *ctx = ud;
    run_log(LOG_INFO, NULL, "shard owned", "shard", RUN_LD(shard), "identity", ctx->identity, NULL);
    if (shard == 0)
        certsync_check_now(ctx->cs);
    replica_walk_shard(ctx, shard, replica_enqueue_in_shard);
    ev_idle_start(ctx->loop, &ctx->pump_idle);
}

/* A shard lost (or released at the end): its passes fenced at once, what was kept of its
 * clusters forgotten (the next owner starts from the cluster as it finds it); the process goes
 * on with its other shards and campaigns for this one again (core/shard). */
static void replica_shard_lost(int shard, void *ud)
{
    struct run_ctx *ctx = ud;
    run_log(ctx->stopping ? LOG_INFO : LOG_WARN, NULL, "shard lost", "shard", RUN_LD(shard), NULL);
    replica_fence(ctx, shard);
    replica_walk_shard(ctx, shard, replica_forget_in_shard);
}

/* ---- start and release --------------------------------------------------------------------- */

/* The holder identity (leader_default_identity) into ident (ni bytes) and the Leases' namespace
 * (--leader-election-namespace, else leader_default_namespace) into lns (nl bytes); 0, or -1
 * when one does not fit. */
static int replica_lease_identity(struct run_ctx *ctx, char *ident, size_t ni, char *lns, size_t nl)
{
    const kube_config *kcfg = kube_client_config(ctx->kc);
    return leader_default_identity(ident, ni) ||
           (ctx->o.leader_ns ? snprintf(lns, nl, "%s", ctx->o.leader_ns) >= (int)nl
                             : leader_default_namespace(kcfg ? kcfg->namespace : NULL, lns, nl));
}

/* --leader-elect: the elector on the Lease LEADER_LEASE_NAME. */
static int replica_start_leader(struct run_ctx *ctx)
{
    char ident[300], lns[254], err[1024];
    if (replica_lease_identity(ctx, ident, sizeof ident, lns, sizeof lns)) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "leader election", "error", "identity or namespace too long", NULL);
        return -1;
    }
    leader_opts lo = {.namespace = lns,
                      .identity = ident,
                      .on_started_leading = replica_started_leading,
                      .on_stopped_leading = replica_stopped_leading,
                      .on_new_leader = replica_new_leader,
                      .ud = ctx};
    ctx->le = leader_start(ctx->loop, ctx->kc, &lo, err, sizeof err);
    if (!ctx->le) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "leader election", "error", err, NULL);
        return -1;
    }
    run_log(LOG_INFO, NULL, "leader election", "lease", LEADER_LEASE_NAME, "namespace", lns, "identity", ident, NULL);
    return 0;
}

/* --shards N > 1: one elector per shard (core/shard), the Leases in the leader election's
 * namespace; the preferred shard from --shard-index or POD_NAME (else the host name). */
static int replica_start_shards(struct run_ctx *ctx, char *err, size_t n)
{
    char lns[254], host[256] = "";
    if (replica_lease_identity(ctx, ctx->identity, sizeof ctx->identity, lns, sizeof lns)) {
        snprintf(err, n, "identity or namespace too long");
        return -1;
    }
    const char *pod = getenv("POD_NAME");
    if (!pod || !*pod) {
        gethostname(host, sizeof host - 1);
        pod = host;
    }
    int pref = shard_preferred(ctx->o.shard_index_set ? ctx->o.shard_index : -1, pod, ctx->o.shards);
    shard_opts so = {.nshards = ctx->o.shards,
                     .preferred = pref,
                     .namespace = lns,
                     .identity = ctx->identity,
                     .on_acquired = replica_shard_acquired,
                     .on_lost = replica_shard_lost,
                     .ud = ctx};
    ctx->shards = shard_start(ctx->loop, ctx->kc, &so, err, n);
    if (!ctx->shards)
        return -1;
    for (int i = 0; i < ctx->o.shards; i++) {
        char b[16];
        snprintf(b, sizeof b, "%d", i);
        const char *v[] = {b};
        metrics_set(ctx->m.shard_owned, v, 0);
    }
    run_log(LOG_INFO, NULL, "shards", "shards", RUN_LD(ctx->o.shards), "preferred", RUN_LD(pref),
            "namespace", lns, "identity", ctx->identity, NULL);
    return 0;
}

int replica_start(struct run_ctx *ctx)
{
    char err[1024];
    ctx->leading = !ctx->o.leader_elect;
    if (ctx->o.leader_elect && replica_start_leader(ctx))
        return -1;
    if (ctx->o.shards > 1 && replica_start_shards(ctx, err, sizeof err)) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "shards", "error", err, NULL);
        return -1;
    }
    return 0;
}

static void replica_released(int ok, void *ud)
{
    struct run_ctx *ctx = ud;
    run_log(ok ? LOG_INFO : LOG_WARN, NULL, ok ? "leader lease released" : "leader lease not released", NULL);
    ev_break(ctx->loop, EVBREAK_ALL);
}

static void replica_shards_released(void *ud)
{
    struct run_ctx *ctx = ud;
    run_log(LOG_INFO, NULL, "shard leases released", NULL);
    ev_break(ctx->loop, EVBREAK_ALL);
}

int replica_release(struct run_ctx *ctx)
{
    if (ctx->shards && shard_release_all(ctx->shards, replica_shards_released, ctx) == 0) {
        ctx->releasing = 1;
        return 1;
    }
    if (ctx->le && leader_is_leader(ctx->le) && leader_release(ctx->le, replica_released, ctx) == 0) {
        ctx->releasing = 1;
        return 1;
    }
    return 0;
}
