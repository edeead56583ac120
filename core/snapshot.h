/* SPDX-License-Identifier: Apache-2.0 */
/* core/snapshot: what one pass of a FlinkCluster reads (docs/contracts.md, "Reconcile"):
 * {cluster, children, flink, dry_runs, now}, the children's cached texts handed to the policy
 * host as parts (never decoded into the tree), the Flink answers kept per key, and the
 * --debug-snapshot-dir copy of a pass's snapshot.
 */
#ifndef FC_SNAPSHOT_H
#define FC_SNAPSHOT_H

#include <stddef.h>

#include <jansson.h>

#include "lhost.h"

struct run_ctx;
struct run_item;
struct run_ns;

/* The children's cached texts of one pass, placed at snapshot.children[Kind][name]: each part's
 * path and text point into its own buffer "<Kind>\0<name>\0<text>" (owned[i]). */
struct snapshot_parts {
    struct lhost_part *parts;
    char **owned;
    size_t n, cap;
    const char *kind;
    json_t *names; /* "<Kind>/<name>" seen: an object found by owner and by label is placed once */
};

/* Frees what `c` collected (not `c` itself). */
void snapshot_parts_free(struct snapshot_parts *c);

/* The Flink answers kept for `key` (borrowed; made when missing): {answers={...}, since=<unix s
 * this process first kept them>}; a request made before `since` (by an earlier process, e.g. one
 * SIGKILLed) has no answer to come. */
json_t *snapshot_flink_state(struct run_ctx *ctx, const char *key);

/* The snapshot of `cluster` (cached, of watches `rn`) for `key`, a new reference:
 * {cluster (typed), children={<Kind>={}} for every watched kind, flink, dry_runs, now (unix s)};
 * the children's objects (by owner uid, and by cluster label for the kinds declared by_label)
 * are collected into `c` (zeroed by the caller; snapshot_parts_free after), placed at
 * children[Kind][name] by lhost_call_json_parts. */
json_t *snapshot_build(struct run_ctx *ctx, struct run_ns *rn, const char *key, json_t *cluster,
                       struct snapshot_parts *c);

/* The snapshot of FlinkJob `job` (cached, of watches `rn`) for `key`, a new reference:
 * {cluster (the FlinkJob, typed), session (its spec.clusterRef.name FlinkCluster from the cache,
 * typed; absent when there is none), children={}, flink, dry_runs={}, now (unix s)}
 * (lua/fc/flinkjob.lua). NULL when out of memory. */
json_t *snapshot_build_job(struct run_ctx *ctx, struct run_ns *rn, const char *key, json_t *job);

/* The snapshot `snap` as one JSON text with `c`'s texts in place (malloc'd; the file `reconcile
 * --snapshot` reads); NULL when a text does not decode. */
char *snapshot_text(json_t *snap, const struct snapshot_parts *c);

/* --debug-snapshot-dir: `text` into DIR/<namespace>.<name>.json of item `it`, replaced
 * atomically (a temporary file renamed). A failure is logged, never a failed pass. */
void snapshot_write(struct run_ctx *ctx, struct run_item *it, const char *text);

#endif
