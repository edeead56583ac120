/* SPDX-License-Identifier: Apache-2.0 */
/* core/expect: expectations, the controller's own writes a key's next pass waits to see in the
 * cache (docs/contracts.md, "Reconcile"; as Kubernetes' ControllerExpectations). Kept per key in
 * the cluster_state's expect: {"deadline": unix s, "objects": {"<kind index>/<name>": want}}; a key whose
 * expectations are unmet waits without a pass, at most RUN_EXPECT_TTL_S after its last write.
 */
#ifndef FC_EXPECT_H
#define FC_EXPECT_H

#include <jansson.h>

#include "kube.h"

struct run_ctx;
struct run_item;
struct run_ns;

/* 1 when resourceVersion `have` is `want` or newer. Resource versions are opaque strings to
 * clients (Kubernetes API concepts, "Resource versions"), but an etcd-backed API server hands out
 * increasing decimal integers (the etcd revision): two such are compared as numbers (leading
 * zeros ignored), anything else only for equality. NULL on either side: 0. */
int expect_rv_at_least(const char *have, const char *want);

/* The index in run_kinds of an object's kind (its apiVersion and kind as the server answers),
 * -1 when it is not watched. */
int expect_kind_of(json_t *obj);

/* Records that the next pass of `key` waits until the cache shows `want` for object `name` of
 * kind index `k` ({"rv": <resourceVersion or newer>}, {"uid": <gone, or another uid>} or
 * {"not_rv": <any resourceVersion but this one>}); steals `want` (dropped when k < 0 or no
 * name). Each call restarts the key's RUN_EXPECT_TTL_S. */
void expect_add(struct run_ctx *ctx, const char *key, int k, const char *name, json_t *want);

/* The object a write answered with (`obj`, kind index `k`): the cache must reach its
 * resourceVersion. Children the reflectors cannot see (without the cluster and app labels of
 * run_labels) expect nothing. */
void expect_written(struct run_ctx *ctx, const char *key, int k, json_t *obj);

/* Seconds `key` (in namespace `ns`, watched by `rn`) still waits for the cache (> 0), or 0 when
 * every expectation is met or they expired (logged "cache lacks own writes, pass runs anyway");
 * at 0 the key's expectations are forgotten. */
double expect_pending(struct run_ctx *ctx, struct run_ns *rn, const char *key, const char *ns);

#endif
