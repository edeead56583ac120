/* SPDX-License-Identifier: Apache-2.0 */
/* core/status: a pass's /status write (see status.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include <openssl/evp.h>

#include "clusterstate.h"
#include "status.h"
#include "runctx.h"

json_t *status_merge_patch(json_t *old, json_t *new)
{
    if (!json_is_object(old) || !json_is_object(new))
        return new ? json_incref(new) : json_null();
    json_t *patch = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(old, k, v)
    {
        if (!json_object_get(new, k))
            json_object_set_new(patch, k, json_null());
    }
    json_object_foreach(new, k, v)
    {
        json_t *o = json_object_get(old, k);
        if (!o) {
            json_object_set(patch, k, v);
        } else if (json_is_object(o) && json_is_object(v)) {
            json_t *sub = status_merge_patch(o, v);
            if (json_object_size(sub) > 0)
                json_object_set(patch, k, sub);
            json_decref(sub);
        } else if (!json_equal(o, v)) {
            json_object_set(patch, k, v);
        }
    }
    return patch;
}

/* A status's digest for the cluster_state's sent and kept: hex SHA-256 of its compact JSON with sorted keys, without
 * lastUpdateTime (each pass that finds a difference stamps it) when `unstamped`; "" for none.
 * A digest, not the tree: the two statuses per cluster cost ~70 bytes instead of some KiB. */
void status_digest(json_t *status, int unstamped, char out[65])
{
    out[0] = 0;
    if (!status)
        return;
    json_t *c = unstamped ? json_copy(status) : json_incref(status);
    if (unstamped)
        json_object_del(c, "lastUpdateTime");
    char *text = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(c);
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (text && EVP_Digest(text, strlen(text), sum, &len, EVP_sha256(), NULL) == 1)
        for (unsigned i = 0; i < len && i < 32; i++)
            snprintf(out + 2 * i, 3, "%02x", sum[i]);
    free(text);
}

/* 1 when a pass's new `status` is the one this controller last wrote for the key (but for the
 * stamp) and the `cached` status is what the server kept of that write: writing it again could
 * only be pruned again (a CRD whose status schema lacks fields). */
static int status_kept(struct run_ctx *ctx, const char *key, json_t *status, json_t *cached)
{
    cluster_state *cs = clusterstate_get(ctx->clusters, key);
    if (!cs || !cs->has_kept)
        return 0;
    char d[65];
    status_digest(cached, 0, d);
    if (strcmp(d, cs->kept) != 0)
        return 0;
    status_digest(status, 1, d);
    return strcmp(d, cs->sent) == 0;
}

int status_start(struct run_item *it, json_t *status, kube_done_fn done)
{
    struct run_ctx *ctx = it->ctx;
    json_t *meta = json_object_get(it->cluster, "metadata");
    if (status_kept(ctx, it->key, status, json_object_get(it->cluster, "status"))) {
        run_log(LOG_DEBUG, it->key, "status unchanged, not written", NULL);
        return 0;
    }
    json_decref(it->sent);
    it->sent = json_incref(status);
    json_t *diff = status_merge_patch(json_object_get(it->cluster, "status"), status);
    json_t *patch = json_object();
    json_t *rv = json_object_get(meta, "resourceVersion");
    if (rv)
        json_object_set_new(patch, "metadata", json_pack("{s:O}", "resourceVersion", rv));
    json_object_set_new(patch, "status", diff);
    char *text = json_dumps(patch, JSON_COMPACT);
    json_decref(patch);
    char err[512] = "out of memory"; /* unless kube_patch_status says otherwise */
    snprintf(it->what, sizeof it->what, "patch status");
    it->verb = "PATCH";
    it->write = WRITE_STATUS;
    if (text)
        it->call = ctx->ops->patch_status(ctx->kc, RUN_ITEM_KIND(it), it->ns, it->name, text, done, it,
                                     err, sizeof err);
    free(text);
    if (it->call)
        return 1;
    it->failed = 1;
    it->status_refused = 1;
    run_log(LOG_ERROR, it->key, "status write failed", "action", "patch status", "error", err, NULL);
    return 0;
}

