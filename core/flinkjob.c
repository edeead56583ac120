/* SPDX-License-Identifier: Apache-2.0 */
/* core/flinkjob: the FlinkJobs' keys and watch events (see flinkjob.h). */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "flinkjob.h"
#include "kube.h"
#include "reflector.h"
#include "replica.h"
#include "runctx.h"
#include "workqueue.h"

int flinkjob_key(json_t *obj, char *key, size_t n)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!ns || !name)
        return -1;
    int w = snprintf(key, n, "%s/" RUN_FLINKJOB_KEY "%s", ns, name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

const char *flinkjob_key_name(const char *name)
{
    size_t plen = strlen(RUN_FLINKJOB_KEY);
    return strncmp(name, RUN_FLINKJOB_KEY, plen) == 0 ? name + plen : NULL;
}

/* Each FlinkJob its own key. */
void flinkjob_on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)r;
    (void)old;
    struct run_ctx *ctx = ud;
    char key[600];
    run_count_watch_event(ctx, kube_kind_flinkjob.kind, ev);
    if (flinkjob_key(obj, key, sizeof key))
        return;
    if (ev == REFLECTOR_DELETED)
        run_forget_key(ctx, key);
    /* sharded by its own key, as a cluster (another shard's events are dropped here) */
    if (replica_owns_key(ctx, key))
        workqueue_add(ctx->q, key);
}

void flinkjob_enqueue(json_t *obj, void *ud)
{
    struct run_ctx *ctx = ud;
    char key[600];
    if (flinkjob_key(obj, key, sizeof key) == 0)
        workqueue_add(ctx->q, key);
}
