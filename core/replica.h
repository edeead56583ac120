/* SPDX-License-Identifier: Apache-2.0 */
/* core/replica: this replica's share of the work in `flink-controller run` (docs/sharding.md,
 * docs/contracts.md "Reconcile"): which keys it reconciles and when it may write, wired to the
 * Leases that decide it:
 *   - --leader-elect: one Lease (core/leader); leading, every cached FlinkCluster and FlinkJob is
 *     enqueued; the lease lost, the passes and Flink calls in flight are fenced and the process
 *     stops (exit 1, its Deployment restarts it as a candidate);
 *   - --shards N > 1: one Lease per shard (core/shard), a key's shard shard_of_key(key, N); a
 *     shard taken enqueues its keys (shard 0 also makes the webhook certificates), a shard lost
 *     fences its passes and Flink calls and forgets what was kept of its keys;
 *   - at stop, the Leases held are released.
 * Nothing else: the keys, the pump and the stop are core/run's (core/runctx.h).
 */
#ifndef FC_REPLICA_H
#define FC_REPLICA_H

struct run_ctx;

/* Starts the elections the options ask for (ctx->o.leader_elect, ctx->o.shards > 1), their
 * callbacks on ctx; sets ctx->leading (1 without --leader-elect, else 0 until leading).
 * Returns 0, or -1 after logging "startup failed" (step "leader election" or "shards": an
 * identity or namespace too long, an elector that cannot start). */
int replica_start(struct run_ctx *ctx);

/* 1 when this replica reconciles workqueue key `key` ("<namespace>/<name>" or
 * "<namespace>/FlinkJob:<name>"): always without --shards, else while it owns the key's shard
 * (another shard's key is dropped: that shard's owner has it). */
int replica_owns_key(struct run_ctx *ctx, const char *key);

/* 1 when this replica may write now: no leader election, or leading with the Lease renewed
 * within the renew deadline (leader_may_write reads the clock: the fence closes at the deadline
 * even before the elector's timer runs); with --shards N > 1: holding shard 0 (the writes of no
 * cluster: webhook certificates, the policy ConfigMap's status). */
int replica_may_write(struct run_ctx *ctx);

/* 1 when this replica may write for workqueue key `key` now: with --shards N > 1 while it holds
 * the key's shard Lease renewed within the renew deadline (shard_may_write), else as
 * replica_may_write. */
int replica_may_write_key(struct run_ctx *ctx, const char *key);

/* At a scrape: flink_controller_shard_owned and flink_controller_shard_clusters per shard (the
 * FlinkClusters counted by their keys in ctx->cm_index); nothing without --shards. */
void replica_scrape(struct run_ctx *ctx);

/* At stop, once no pass is in flight: releases the shard Leases, else the leader Lease when
 * leading; the loop is broken (ev_break) when the release is answered. Returns 1 when a release
 * is in flight (ctx->releasing set; the caller waits), 0 when there is nothing to release. */
int replica_release(struct run_ctx *ctx);

#endif
