/* SPDX-License-Identifier: Apache-2.0 */
/* core/shard: one Lease per shard of the FlinkClusters (see shard.h, docs/sharding.md). */
#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

/* ---- pure logic -------------------------------------------------------------------------- */

uint32_t shard_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

int shard_of_key(const char *key, int nshards)
{
    if (!key || nshards <= 1)
        return 0;
    return (int)(shard_hash(key, strlen(key)) % (uint32_t)nshards);
}

long shard_ordinal(const char *name)
{
    const char *dash = name ? strrchr(name, '-') : NULL;
    if (!dash || !dash[1] || strlen(dash + 1) > 9)
        return -1;
    long v = 0;
    for (const char *p = dash + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

int shard_preferred(long explicit_index, const char *pod_name, int nshards)
{
    if (nshards < 1)
        return -1;
    if (explicit_index >= 0)
        return (int)(explicit_index % nshards);
    if (!pod_name || !*pod_name)
        return -1;
    long ord = shard_ordinal(pod_name);
    if (ord >= 0 && ord < nshards)
        return (int)ord;
    return (int)(shard_hash(pod_name, strlen(pod_name)) % (uint32_t)nshards);
}

double shard_campaign_delay(int shard, int preferred, double standby_delay_s)
{
    return preferred < 0 || shard == preferred ? 0 : standby_delay_s;
}

int shard_lease_name(int i, char *buf, size_t n)
{
    int w = snprintf(buf, n, SHARD_LEASE_PREFIX "%d", i);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* ---- the shard set ----------------------------------------------------------------------- */

struct shard_slot {
    shard_set *set;
    int index;
    char name[64];
    leader_elector *e;
    ev_timer start_timer; /* the (delayed) first campaign, or a new one after a loss */
    int owned;
    int releasing;        /* leader_release asked, its done not yet called */
};

struct shard_set {
    struct ev_loop *loop;
    kube_client *kc;
    shard_opts o;
    char *ns, *identity;
    struct shard_slot *slots;
    int releasing, pending;
    ev_timer done_timer;  /* calls release_done from the loop */
    void (*release_done)(void *ud);
    void *release_ud;
};

static void slot_started(void *ud)
{
    struct shard_slot *sl = ud;
    sl->owned = 1;
    log_info("shard acquired", "lease", sl->name, "shard", sl->name + strlen(SHARD_LEASE_PREFIX), NULL);
    if (sl->set->o.on_acquired)
        sl->set->o.on_acquired(sl->index, sl->set->o.ud);
}

static void slot_stopped(void *ud)
{
    struct shard_slot *sl = ud;
    int was = sl->owned;
    sl->owned = 0;
    if (was && sl->set->o.on_lost)
        sl->set->o.on_lost(sl->index, sl->set->o.ud);
    if (!sl->set->releasing) {
        /* campaign again as a candidate, from the loop (never leader_free inside its callback) */
        ev_timer_stop(sl->set->loop, &sl->start_timer);
        ev_timer_set(&sl->start_timer, 0., 0.);
        ev_timer_start(sl->set->loop, &sl->start_timer);
    }
}

static void slot_start_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct shard_slot *sl = w->data;
    shard_set *s = sl->set;
    if (s->releasing)
        return;
    leader_free(sl->e);
    sl->e = NULL;
    char err[256];
    leader_opts lo = {.namespace = s->ns,
                      .name = sl->name,
                      .identity = s->identity,
                      .lease_duration_s = s->o.lease_duration_s,
                      .renew_deadline_s = s->o.renew_deadline_s,
                      .retry_period_s = s->o.retry_period_s,
                      .api = s->o.api,
                      .api_ud = s->o.api_ud,
                      .on_started_leading = slot_started,
                      .on_stopped_leading = slot_stopped,
                      .ud = sl};
    sl->e = leader_start(s->loop, s->kc, &lo, err, sizeof err);
    if (!sl->e) {
        log_warn("shard election not started, retrying", "lease", sl->name, "error", err, NULL);
        ev_timer_set(&sl->start_timer, s->o.retry_period_s > 0 ? s->o.retry_period_s : LEADER_RETRY_PERIOD_S, 0.);
        ev_timer_start(s->loop, &sl->start_timer);
    }
}

shard_set *shard_start(struct ev_loop *loop, kube_client *kc, const shard_opts *opts, char *err,
                       size_t errlen)
{
    if (!opts || opts->nshards < 2 || opts->nshards > SHARD_MAX) {
        util_set_err(err, errlen, "shard_start: nshards must be 2..%d", SHARD_MAX);
        return NULL;
    }
    if (!opts->namespace || !*opts->namespace || !opts->identity || !*opts->identity || !loop ||
        (!kc && !opts->api)) {
        util_set_err(err, errlen, "shard_start: a loop, namespace, identity and a kube client or api are required");
        return NULL;
    }
    if (opts->preferred >= opts->nshards) {
        util_set_err(err, errlen, "shard_start: preferred shard %d not below %d", opts->preferred,
                     opts->nshards);
        return NULL;
    }
    shard_set *s = calloc(1, sizeof *s);
    if (!s) {
        util_set_err(err, errlen, "shard_start: out of memory");
        return NULL;
    }
    s->loop = loop;
    s->kc = kc;
    s->o = *opts;
    if (s->o.standby_delay_s <= 0)
        s->o.standby_delay_s = s->o.lease_duration_s > 0 ? s->o.lease_duration_s : LEADER_LEASE_DURATION_S;
    s->ns = strdup(opts->namespace);
    s->identity = strdup(opts->identity);
    s->slots = calloc((size_t)opts->nshards, sizeof *s->slots);
    if (!s->ns || !s->identity || !s->slots) {
        util_set_err(err, errlen, "shard_start: out of memory");
        shard_free(s);
        return NULL;
    }
    ev_init(&s->done_timer, NULL);
    for (int i = 0; i < opts->nshards; i++) {
        struct shard_slot *sl = &s->slots[i];
        sl->set = s;
        sl->index = i;
        shard_lease_name(i, sl->name, sizeof sl->name);
        ev_timer_init(&sl->start_timer, slot_start_cb,
                      shard_campaign_delay(i, s->o.preferred, s->o.standby_delay_s), 0.);
        sl->start_timer.data = sl;
        ev_timer_start(loop, &sl->start_timer);
    }
    return s;
}

int shard_owned(const shard_set *s, int i)
{
    return s && i >= 0 && i < s->o.nshards && s->slots[i].owned;
}

int shard_may_write(shard_set *s, int i)
{
    return shard_owned(s, i) && leader_may_write(s->slots[i].e);
}

int shard_count_owned(const shard_set *s)
{
    int n = 0;
    for (int i = 0; s && i < s->o.nshards; i++)
        n += s->slots[i].owned;
    return n;
}

static void done_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    shard_set *s = w->data;
    void (*done)(void *) = s->release_done;
    s->release_done = NULL;
    if (done)
        done(s->release_ud);
}

static void slot_released(int ok, void *ud)
{
    struct shard_slot *sl = ud;
    shard_set *s = sl->set;
    sl->releasing = 0;
    if (!ok)
        log_warn("shard lease not released", "lease", sl->name, NULL);
    if (--s->pending == 0) {
        ev_timer_set(&s->done_timer, 0., 0.);
        ev_timer_start(s->loop, &s->done_timer);
    }
}

int shard_release_all(shard_set *s, void (*done)(void *ud), void *ud)
{
    if (!s || s->releasing)
        return -1;
    s->releasing = 1;
    s->release_done = done;
    s->release_ud = ud;
    ev_timer_init(&s->done_timer, done_cb, 0., 0.);
    s->done_timer.data = s;
    s->pending = 1; /* held until every release is asked: none completes inside this loop */
    for (int i = 0; i < s->o.nshards; i++) {
        struct shard_slot *sl = &s->slots[i];
        ev_timer_stop(s->loop, &sl->start_timer);
        if (!sl->e)
            continue;
        s->pending++;
        sl->releasing = 1;
        if (leader_release(sl->e, slot_released, sl) != 0) {
            sl->releasing = 0;
            s->pending--;
        }
    }
    if (--s->pending == 0) {
        ev_timer_set(&s->done_timer, 0., 0.);
        ev_timer_start(s->loop, &s->done_timer);
    }
    return 0;
}

void shard_free(shard_set *s)
{
    if (!s)
        return;
    for (int i = 0; s->slots && i < s->o.nshards; i++) {
        if (s->loop)
            ev_timer_stop(s->loop, &s->slots[i].start_timer);
        leader_free(s->slots[i].e);
    }
    if (s->loop && s->releasing)
        ev_timer_stop(s->loop, &s->done_timer);
    free(s->slots);
    free(s->ns);
    free(s->identity);
    free(s);
}
