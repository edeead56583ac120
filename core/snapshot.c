/* SPDX-License-Identifier: Apache-2.0 */
/* core/snapshot: a pass's snapshot (see snapshot.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clusterstate.h"
#include "runctx.h"
#include "snapshot.h"


static void snapshot_collect_fn(const char *name, const char *text, size_t len, void *ud)
{
    struct snapshot_parts *c = ud;
    char id[600];
    int idlen = snprintf(id, sizeof id, "%s/%s", c->kind, name);
    if (idlen < 0 || (size_t)idlen >= sizeof id || json_object_get(c->names, id))
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct lhost_part *p = realloc(c->parts, cap * sizeof *p);
        if (p)
            c->parts = p;
        char **o = p ? realloc(c->owned, cap * sizeof *o) : NULL;
        if (o)
            c->owned = o;
        if (!p || !o)
            return;
        c->cap = cap;
    }
    size_t klen = strlen(c->kind);
    char *buf = malloc((size_t)idlen + 1 + len);
    if (!buf)
        return;
    memcpy(buf, id, (size_t)idlen + 1);
    buf[klen] = '\0';
    memcpy(buf + idlen + 1, text, len);
    json_object_set_new(c->names, id, json_true());
    c->owned[c->n] = buf;
    c->parts[c->n++] = (struct lhost_part){{"children", buf, buf + klen + 1, NULL}, buf + idlen + 1, len};
}

void snapshot_parts_free(struct snapshot_parts *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->owned[i]);
    free(c->owned);
    free(c->parts);
    json_decref(c->names);
}

/* The Flink answers kept for `key`: {answers={...}, since=<unix s this process first kept
 * them>}; a request made before `since` (by an earlier process, e.g. one SIGKILLed) has no
 * answer to come. */
json_t *snapshot_flink_state(struct run_ctx *ctx, const char *key)
{
    cluster_state *cs = clusterstate_get_or_add(ctx->clusters, key);
    if (cs && !cs->flink)
        cs->flink = json_pack("{s:{}, s:I}", "answers", "since", (json_int_t)time(NULL));
    return cs ? cs->flink : NULL;
}

/* {cluster, children, flink, now} for the cluster `cluster` (cached) in `rn`, but for the
 * children's objects, which are collected into `c` (placed at children[Kind][name] by
 * lhost_call_json_parts from the cache's texts); children[Kind] is {} for every watched kind. */
json_t *snapshot_build(struct run_ctx *ctx, struct run_ns *rn, const char *key, json_t *cluster,
                            struct snapshot_parts *c)
{
    json_t *meta = json_object_get(cluster, "metadata");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    json_t *children = json_object();
    c->names = json_object();
    for (int k = 1; k < run_nkinds; k++) {
        c->kind = run_kinds[k]->kind;
        if (uid)
            reflector_texts_by_owner_uid(rn->r[k], uid, snapshot_collect_fn, c);
        /* Pods belong to the StatefulSets and the Job: found by their cluster label */
        if (run_by_label & (1u << k))
            reflector_texts_by_cluster(rn->r[k], ns, name, snapshot_collect_fn, c);
        json_object_set_new(children, run_kinds[k]->kind, json_object());
    }
    json_t *snap = json_object();
    json_object_set_new(snap, "cluster", run_typed(cluster, &kube_kind_flinkcluster));
    json_object_set_new(snap, "children", children);
    json_object_set(snap, "flink", snapshot_flink_state(ctx, key));
    cluster_state *cs = clusterstate_get(ctx->clusters, key);
    json_t *dry = cs ? cs->dryruns : NULL;
    json_object_set_new(snap, "dry_runs", dry ? json_deep_copy(dry) : json_object());
    json_object_set_new(snap, "now", json_integer((json_int_t)time(NULL)));
    return snap;
}

json_t *snapshot_build_job(struct run_ctx *ctx, struct run_ns *rn, const char *key, json_t *job)
{
    const char *ns = json_string_value(json_object_get(json_object_get(job, "metadata"), "namespace"));
    json_t *ref = json_object_get(json_object_get(job, "spec"), "clusterRef");
    const char *cname = json_string_value(json_object_get(ref, "name"));
    json_t *session = ns && cname && rn->r[0] ? reflector_get_copy(rn->r[0], ns, cname) : NULL;
    json_t *snap = json_pack("{s:o, s:{}, s:O, s:{}, s:I}", "cluster", run_typed(job, &kube_kind_flinkjob), "children",
                             "flink", snapshot_flink_state(ctx, key), "dry_runs", "now", (json_int_t)time(NULL));
    if (snap && session)
        json_object_set_new(snap, "session", run_typed(session, &kube_kind_flinkcluster));
    json_decref(session);
    return snap;
}

/* The snapshot as one JSON text with the children's texts in place (--debug-snapshot-dir's
 * file, read back by `reconcile --snapshot`); NULL when a text does not decode. */
char *snapshot_text(json_t *snap, const struct snapshot_parts *c)
{
    json_t *whole = json_deep_copy(snap);
    json_t *children = json_object_get(whole, "children");
    for (size_t i = 0; i < c->n; i++) {
        const struct lhost_part *p = &c->parts[i];
        json_t *obj = json_loadb(p->text, p->len, JSON_ALLOW_NUL, NULL);
        if (!obj) {
            json_decref(whole);
            return NULL;
        }
        json_object_set_new(json_object_get(children, p->path[1]), p->path[2], obj);
    }
    char *text = json_dumps(whole, JSON_COMPACT);
    json_decref(whole);
    return text;
}

/* --debug-snapshot-dir: the pass's snapshot `text` (JSON) into DIR/<namespace>.<name>.json,
 * replaced atomically (a temporary file renamed), for `flink-controller reconcile --snapshot`.
 * A failure is logged, never a failed pass. */
void snapshot_write(struct run_ctx *ctx, struct run_item *it, const char *text)
{
    char path[4096], tmp[4200];
    int n = snprintf(path, sizeof path, "%s/%s.%s.json", ctx->o.debug_snapshot_dir, it->ns, it->name);
    int m = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = n < (int)sizeof path && m < (int)sizeof tmp ? fopen(tmp, "w") : NULL;
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0)
        run_log(LOG_WARN, it->key, "debug snapshot not written", "path", path, "error", strerror(errno), NULL);
}

