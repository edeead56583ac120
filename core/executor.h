/* SPDX-License-Identifier: Apache-2.0 */
/* core/executor: a pass's result written in order (docs/contracts.md, "Reconcile"): the
 * actions (server-side apply, dry-run apply, delete, patch; Flink calls started detached by
 * core/flinkcall), the
 * /status merge patch (core/status), the user-control annotation and after_status Flink calls,
 * the policy-hash annotation, the Events (core/events); then the key is forgotten, requeued with
 * backoff or after requeue_after. Each write's answer records what the next pass waits to see
 * (core/expect) or, failing, a Warning Event; a 409 on the status is a conflict (the next pass
 * waits for another resourceVersion), a 404 on it a gone cluster (no Events), a 403
 * NamespaceTerminating drops the rest of the pass, a 404 on a delete is success.
 */
#ifndef FC_EXECUTOR_H
#define FC_EXECUTOR_H

#include <jansson.h>

#include "kube.h"

struct run_ctx;
struct run_item;
struct run_ns;

/* Runs item `it` (it->phase set: PHASE_ACTIONS after a pass, PHASE_DONE to finish at once) until
 * a write is in flight (its answer continues) or the item finishes (executor_finish). Nothing is
 * written once replica_may_write says no (the item is then fenced). */
void executor_step(struct run_item *it);

/* Ends item `it`: counted (reconcile_total, reconcile_duration unless waiting or fenced), its
 * key forgotten, requeued rate-limited (failed, conflict) or after requeue_after, marked done
 * in the workqueue; the item freed and the pump woken. */
void executor_finish(struct run_item *it);

/* Unlinks item `it` from ctx->items and frees it (its call, if any, must be cancelled first). */
void executor_item_free(struct run_item *it);

#endif
