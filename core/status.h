/* SPDX-License-Identifier: Apache-2.0 */
/* core/status: a pass's FlinkCluster /status write: the merge patch from the cached status to
 * the pass's one with metadata.resourceVersion (a 409 when someone wrote in between), skipped
 * when the server already kept all it keeps of that status (cluster_state sent and kept: digests of the status
 * sent and of the one the server answered with).
 */
#ifndef FC_STATUS_H
#define FC_STATUS_H

#include <jansson.h>

#include "kube.h"

struct run_ctx;
struct run_item;
struct run_ns;

/* RFC 7386 merge patch turning `old` into `new` (both JSON values; NULL = absent): keys of
 * `old` missing in `new` become null, objects are diffed recursively, anything else that
 * differs is replaced whole (lists included). Returns a new reference: an empty object when
 * nothing differs; `new` itself (incref'd) when either side is not an object. */
json_t *status_merge_patch(json_t *old, json_t *new);

/* A status's digest for the cluster_state's sent and kept into `out`: hex SHA-256 (64 digits and NUL) of its compact
 * JSON with sorted keys, without lastUpdateTime when `unstamped`; "" for NULL. */
void status_digest(json_t *status, int unstamped, char out[65]);

/* Starts the status write of item `it` (its cluster as read, `status` the pass's new one):
 * a merge patch of /status through ctx->kc, answered to `done` with `it`. Returns 1 when
 * started; 0 when not written: unchanged since the server kept it (logged at debug), or the
 * request could not start (it->failed and it->status_refused set, logged). */
int status_start(struct run_item *it, json_t *status, kube_done_fn done);

#endif
