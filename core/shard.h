/* SPDX-License-Identifier: Apache-2.0 */
/* core/shard: `run --shards N` (docs/sharding.md): the FlinkClusters split into N shards, each
 * with a Lease of its own, so that N replicas reconcile at once.
 *   - a FlinkCluster's shard is shard_of_key("<namespace>/<name>", N): FNV-1a 32-bit of the
 *     key's bytes, modulo N (stable across versions, machines and restarts);
 *   - shard i's Lease is "flink-controller-shard-<i>" in the controller's namespace, elected
 *     with core/leader's rules (client-go LeaseLock: lease 15 s, renew deadline 10 s, retry 2 s);
 *   - a replica prefers one shard (shard_preferred: --shard-index, else the StatefulSet ordinal
 *     at the end of its pod name, else a hash of the pod name) and campaigns for it at once; for
 *     every other shard it starts campaigning only after a standby delay (one lease duration), so
 *     at start each replica creates its own shard's Lease and the others find it held. A
 *     candidate takes a Lease over when its record has not changed for the lease duration (a
 *     dead replica's shard), so every shard keeps an owner while one replica lives;
 *   - a shard lost (renew deadline passed, another holder seen) calls on_lost at once and the
 *     replica campaigns for it again as a candidate (the process goes on with its other shards);
 *   - no rebalancing: a restarted replica whose shard another replica took over waits for that
 *     Lease to expire or be released (docs/sharding.md).
 * The pure parts (hash, shard of a key, preferred shard, campaign delay) are unit-tested in
 * tests/c/test_shard.c; the elector's own decisions are core/leader's.
 */
#ifndef FC_SHARD_H
#define FC_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "kube.h"
#include "leader.h"

#define SHARD_MAX 256                 /* --shards 1..SHARD_MAX */
#define SHARD_LEASE_PREFIX "flink-controller-shard-"

/* ---- pure logic -------------------------------------------------------------------------- */

/* FNV-1a 32-bit of `n` bytes at `s` (offset basis 2166136261, prime 16777619). */
uint32_t shard_hash(const char *s, size_t n);

/* The shard of workqueue key `key` ("<namespace>/<name>", NUL-terminated) among `nshards`
 * (>= 1): shard_hash(key) % nshards. 0 when nshards <= 1 or key is NULL. */
int shard_of_key(const char *key, int nshards);

/* The StatefulSet ordinal at the end of a pod name ("flink-controller-2" -> 2): the digits after
 * the last '-', at most 9 of them; -1 when there is none (no '-', no digits, other characters
 * after it) or `name` is NULL. */
long shard_ordinal(const char *name);

/* The shard a replica prefers among `nshards`: `explicit_index` when >= 0 (--shard-index,
 * checked < nshards by the caller); else the ordinal of `pod_name` when it is < nshards; else
 * shard_hash(pod_name) % nshards; -1 when pod_name is NULL or empty (no preference). */
int shard_preferred(long explicit_index, const char *pod_name, int nshards);

/* Seconds after start before a replica campaigns for `shard`: 0 for its preferred shard (or for
 * every shard when `preferred` is -1), `standby_delay_s` for the others. */
double shard_campaign_delay(int shard, int preferred, double standby_delay_s);

/* The Lease name of shard `i` ("flink-controller-shard-<i>") into buf (n bytes); 0, or -1 when
 * it does not fit. */
int shard_lease_name(int i, char *buf, size_t n);

/* ---- the shard set ----------------------------------------------------------------------- */

typedef struct shard_set shard_set;

typedef struct shard_opts {
    int nshards;                 /* 2..SHARD_MAX */
    int preferred;               /* shard_preferred's answer, -1: none */
    const char *namespace;       /* of the Leases, required */
    const char *identity;        /* required (leader_default_identity) */
    double standby_delay_s;      /* 0 = the lease duration */
    /* the electors' timings, 0 = core/leader's defaults (15 s, 10 s, 2 s; tests shorten them) */
    double lease_duration_s, renew_deadline_s, retry_period_s;
    /* the Lease API (leader_opts.api), NULL = the kube client `kc` */
    const leader_api *api;
    void *api_ud;
    /* called when this replica starts / stops owning shard i (stop: lost, or released at the
     * end); the fence is shard_may_write */
    void (*on_acquired)(int shard, void *ud);
    void (*on_lost)(int shard, void *ud);
    void *ud;
} shard_opts;

/* Starts one elector per shard on `loop` (the preferred one at once, the others after the
 * standby delay). NULL with err on bad options or out of memory. */
shard_set *shard_start(struct ev_loop *loop, kube_client *kc, const shard_opts *opts, char *err,
                       size_t errlen);

/* 1 while this replica owns shard i (between on_acquired and on_lost). */
int shard_owned(const shard_set *s, int i);
/* The write fence of shard i: owned and its Lease renewed within the renew deadline by the
 * clock read now (leader_may_write). 0 for a bad i or NULL. */
int shard_may_write(shard_set *s, int i);
/* Shards owned now. */
int shard_count_owned(const shard_set *s);

/* Clean shutdown: stops campaigning and releases every shard held (leader_release: holder "",
 * duration 1), then calls done(ud) from the loop, never inside this call. -1 when a release is
 * already under way. */
int shard_release_all(shard_set *s, void (*done)(void *ud), void *ud);

/* Cancels everything (no callbacks) and frees; NULL is a no-op. */
void shard_free(shard_set *s);

#endif
