/* SPDX-License-Identifier: Apache-2.0 */
/* core/events: a pass's Events about its FlinkCluster and their correlator (as client-go's
 * EventCorrelator): a repeat of the same type, reason and message within RUN_EVENT_DEDUP_S is
 * the same Event object with its count and lastTimestamp raised (the cluster_state's emitted), never a second
 * object and never dropped. The PolicyError metric is counted here.
 */
#ifndef FC_EVENTS_H
#define FC_EVENTS_H

#include <jansson.h>

#include "kube.h"

struct run_ctx;
struct run_item;
struct run_ns;

/* A write of an action that failed becomes a Warning Event about the cluster, appended to the
 * pass's result.events (after the framework's own): reason PatchFailed / ApplyFailed /
 * DeleteFailed / StatusFailed / DryRunFailed by it->write, message "<it->what>: HTTP <status>:
 * <message>" (status 0: no answer). */
void events_failure(struct run_item *it, long status, const char *message);

/* Starts writing Event `ev` ({type, reason, message}) of item `it`: logged, counted in the
 * correlator, then created (POST) or, for a repeat whose Event exists, counted (merge patch of
 * count and lastTimestamp); the answer goes to `done` with `it` (it->event holds the
 * correlator's entry meanwhile). Returns 1 when started; 0 when there is nothing to write (an
 * incomplete Event, a repeat whose first is still being created) or the request could not start
 * (logged "event write failed"). */
int events_start(struct run_item *it, json_t *ev, kube_done_fn done);

#endif
