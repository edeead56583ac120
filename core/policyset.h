/* SPDX-License-Identifier: Apache-2.0 */
/* core/policyset: the policy set serving and the --policy-configmap watch (docs/policies.md,
 * "Overriding policies in a running controller"). A set is the built-in dir or one core/override
 * made from it and the ConfigMap; a new ConfigMap version is made, hashed, compiled and its
 * fixtures run in a child process (one check at a time, the latest version next); an accepted
 * set serves from the next pass on (every FlinkCluster enqueued), a refused one leaves the last
 * good set serving (Warning PolicyRejected on the ConfigMap, policy_reloads_total).
 */
#ifndef FC_POLICYSET_H
#define FC_POLICYSET_H

#include <jansson.h>

#include "reflector.h"

struct run_ctx;
struct run_item;
struct run_ns;

/* Sets the policy_set_info metric to the set serving (ctx->ov.active_hash). */
void policyset_set_info(struct run_ctx *ctx);

/* Drops the check in flight (its child killed, its directory removed) and the version waiting. */
void policyset_cancel(struct run_ctx *ctx);

/* The ConfigMap watch's callbacks (ud: the ctx): a new resourceVersion is checked (or queued
 * behind the check in flight); DELETED returns to the built-in set. on_synced settles the first
 * set when there is no ConfigMap. */
void policyset_on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud);
void policyset_on_synced(reflector *r, void *ud);

#endif
