/* SPDX-License-Identifier: Apache-2.0 */
/* core/flinkjob: the FlinkJobs (jobs on session clusters, lua/fc/flinkjob.lua reconciles them) in
 * `flink-controller run`: their workqueue keys and their watch's events. A FlinkJob's key is
 * "<namespace>/" RUN_FLINKJOB_KEY "<name>" (core/runctx.h), sharded by that key as a cluster's
 * is; its pass is run like a cluster's (core/run, core/snapshot's snapshot_build_job).
 */
#ifndef FC_FLINKJOB_H
#define FC_FLINKJOB_H

#include <stddef.h>

#include <jansson.h>

#include "reflector.h"

/* "<namespace>/FlinkJob:<name>" of FlinkJob object `obj` into key (n bytes); 0, or -1 when
 * metadata.namespace or metadata.name is missing or the key does not fit. */
int flinkjob_key(json_t *obj, char *key, size_t n);

/* The FlinkJob's name when `name`, the part of a workqueue key after the '/', is
 * RUN_FLINKJOB_KEY "<name>" (a pointer inside `name`); NULL when it is a FlinkCluster's. */
const char *flinkjob_key_name(const char *name);

/* The FlinkJobs' watch callback (ud: the ctx): counted in watch_events_total{kind="FlinkJob"};
 * the key enqueued when this replica owns its shard; DELETED forgets what was kept of it. */
void flinkjob_on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud);

/* Enqueues the key of FlinkJob `obj` (ud: the ctx); a reflector_foreach callback. */
void flinkjob_enqueue(json_t *obj, void *ud);

#endif
