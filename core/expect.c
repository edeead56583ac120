/* SPDX-License-Identifier: Apache-2.0 */
/* core/expect: the controller's own writes awaited in the cache (see expect.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "clusterstate.h"
#include "expect.h"
#include "flinkjob.h"
#include "run.h"
#include "runctx.h"

int expect_rv_at_least(const char *have, const char *want)
{
    if (!have || !want)
        return 0;
    size_t hl = strspn(have, "0123456789"), wl = strspn(want, "0123456789");
    if (!hl || !wl || have[hl] || want[wl])
        return strcmp(have, want) == 0;
    while (*have == '0' && hl > 1)
        have++, hl--;
    while (*want == '0' && wl > 1)
        want++, wl--;
    return hl != wl ? hl > wl : strcmp(have, want) >= 0;
}

/* The index in run_kinds of an object's kind (apiVersion and kind as the server answers), -1
 * when it is not watched. */
int expect_kind_of(json_t *obj)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    for (int k = 0; kind && k < run_nkinds; k++)
        if (strcmp(run_kinds[k]->kind, kind) == 0 && (!av || strcmp(run_kinds[k]->api_version, av) == 0))
            return k;
    return -1;
}

/* Records that the key's next pass waits until the cache shows `want` for object `name` of
 * kind index `k` ({"rv": <resourceVersion or newer>}, {"uid": <gone, or another uid>} or
 * {"not_rv": <any resourceVersion but this one>}); steals `want`. Each write restarts the
 * key's RUN_EXPECT_TTL_S. */
void expect_add(struct run_ctx *ctx, const char *key, int k, const char *name, json_t *want)
{
    char id[320];
    cluster_state *cs = NULL;
    if (k < 0 || !name || snprintf(id, sizeof id, "%d/%s", k, name) >= (int)sizeof id ||
        !(cs = clusterstate_get_or_add(ctx->clusters, key))) {
        json_decref(want);
        return;
    }
    if (!cs->expect)
        cs->expect = json_pack("{s:f, s:{}}", "deadline", 0.0, "objects");
    json_t *e = cs->expect;
    json_object_set_new(e, "deadline", json_real(ev_time() + RUN_EXPECT_TTL_S));
    json_object_set_new(json_object_get(e, "objects"), id, want);
}

/* The object a write answered with (`obj`, kind index `k`): the cache must reach its
 * resourceVersion. Children the reflectors cannot see (no cluster label) expect nothing. */
void expect_written(struct run_ctx *ctx, const char *key, int k, json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    json_t *labels = json_object_get(meta, "labels");
    const char *app = json_string_value(json_object_get(labels, run_labels.app_label));
    int ours = json_is_string(json_object_get(labels, run_labels.cluster)) && app && strcmp(app, run_labels.app) == 0;
    if (!rv || (k > 0 && !ours))
        return;
    expect_add(ctx, key, k, json_string_value(json_object_get(meta, "name")), json_pack("{s:s}", "rv", rv));
}

/* Seconds the key still waits for the cache (> 0), or 0 when every expectation is met (or they
 * expired: logged), then forgotten. */
double expect_pending(struct run_ctx *ctx, struct run_ns *rn, const char *key, const char *ns)
{
    cluster_state *cs = clusterstate_get(ctx->clusters, key);
    json_t *e = cs ? cs->expect : NULL;
    if (!e)
        return 0;
    json_t *objs = json_object_get(e, "objects");
    /* a FlinkJob's pass: its own writes (kind 0) are of the FlinkJob, not of a FlinkCluster */
    const char *slash = strchr(key, '/');
    int job_key = slash && flinkjob_key_name(slash + 1) != NULL;
    const char *id;
    json_t *want;
    void *tmp;
    json_object_foreach_safe(objs, tmp, id, want)
    {
        int k = atoi(id);
        const char *name = strchr(id, '/') + 1;
        reflector *src = k == 0 && job_key ? rn->jobs : k >= 0 && k < run_nkinds ? rn->r[k] : NULL;
        json_t *have = src ? reflector_get_copy(src, ns, name) : NULL;
        json_t *hm = json_object_get(have, "metadata");
        const char *uid = json_string_value(json_object_get(want, "uid"));
        const char *not_rv = json_string_value(json_object_get(want, "not_rv"));
        const char *have_rv = json_string_value(json_object_get(hm, "resourceVersion"));
        int met = uid      ? !have || !json_equal(json_object_get(hm, "uid"), json_object_get(want, "uid"))
                  : not_rv ? !have || !have_rv || strcmp(have_rv, not_rv) != 0
                           : have && expect_rv_at_least(have_rv, json_string_value(json_object_get(want, "rv")));
        json_decref(have);
        if (met)
            json_object_del(objs, id);
    }
    double left = json_number_value(json_object_get(e, "deadline")) - ev_time();
    if (json_object_size(objs) && left <= 0)
        run_log(LOG_WARN, key, "cache lacks own writes, pass runs anyway", "objects", RUN_ZU(json_object_size(objs)),
                "wait_ms", RUN_MS(RUN_EXPECT_TTL_S), NULL);
    if (!json_object_size(objs) || left <= 0) {
        json_decref(cs->expect);
        cs->expect = NULL;
        return 0;
    }
    return left;
}

