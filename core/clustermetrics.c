/* SPDX-License-Identifier: Apache-2.0 */
/* core/clustermetrics: the Flink-level metrics (see clustermetrics.h). */
#include "clustermetrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubecred.h"

/* ---- Flink REST routes ---------------------------------------------------------------------- */

/* The placeholder for the segment following `prev`, NULL when it is kept: ids by their
 * collection, with the collection's own literal sub-paths kept. */
static const char *route_param(const char *prev, size_t plen, const char *seg, size_t slen)
{
    static const struct {
        const char *collection, *param, *keep[3];
    } rules[] = {
        {"jobs", ":jobid", {"overview"}},
        {"jars", ":jarid", {"upload"}},
        {"savepoints", ":triggerid", {NULL}},
        {"savepoint-disposal", ":triggerid", {NULL}},
        {"checkpoints", ":triggerid", {"config", "details"}},
        {"vertices", ":vertexid", {NULL}},
        {"taskmanagers", ":taskmanagerid", {"metrics"}},
    };
    for (size_t i = 0; prev && i < sizeof rules / sizeof rules[0]; i++) {
        if (strlen(rules[i].collection) != plen || strncmp(prev, rules[i].collection, plen) != 0)
            continue;
        for (size_t k = 0; k < 3 && rules[i].keep[k]; k++)
            if (strlen(rules[i].keep[k]) == slen && strncmp(seg, rules[i].keep[k], slen) == 0)
                return NULL;
        return rules[i].param;
    }
    size_t hex = 0, dec = 0;
    for (size_t i = 0; i < slen; i++) {
        char c = seg[i];
        dec += c >= '0' && c <= '9';
        hex += (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }
    if (slen && (dec == slen || (slen >= 16 && hex == slen)))
        return ":id";
    return NULL;
}

int clustermetrics_route(const char *path, char *buf, size_t n)
{
    if (!buf || !n)
        return -1;
    buf[0] = '\0';
    if (!path)
        return -1;
    size_t end = strcspn(path, "?#"), w = 0;
    const char *prev = NULL;
    size_t plen = 0;
    for (size_t i = 0; i < end;) {
        if (path[i] == '/') {
            if (w + 1 >= n)
                goto small;
            buf[w++] = '/';
            i++;
            continue;
        }
        size_t slen = strcspn(path + i, "/?#");
        if (i + slen > end)
            slen = end - i;
        const char *param = route_param(prev, plen, path + i, slen);
        const char *out = param ? param : path + i;
        size_t olen = param ? strlen(param) : slen;
        if (w + olen >= n)
            goto small;
        memcpy(buf + w, out, olen);
        w += olen;
        /* a placeholder ends a collection: "/jobs/:jobid/vertices/..." */
        prev = param ? NULL : path + i;
        plen = param ? 0 : slen;
        i += slen;
    }
    buf[w] = '\0';
    return 0;
small:
    buf[0] = '\0';
    return -1;
}

void clustermetrics_flink_request(const metrics_controller *m, const char *method, const char *path, long status,
                                  double seconds)
{
    char route[512], code[24];
    if (!m || !method)
        return;
    if (clustermetrics_route(path, route, sizeof route))
        snprintf(route, sizeof route, "(too long)");
    snprintf(code, sizeof code, "%ld", status);
    const char *v[] = {method, route, code};
    metrics_inc(m->flink_requests_total, v);
    if (seconds >= 0)
        metrics_observe(m->flink_request_duration, v, seconds);
}

/* ---- the collector ------------------------------------------------------------------------- */

void clustermetrics_begin(const metrics_controller *m)
{
    if (!m)
        return;
    metrics_clear(m->clusters);
    metrics_clear(m->jobs);
    metrics_clear(m->job_restarts);
    metrics_clear(m->job_last_savepoint);
}

/* Adds 1 to the gauge {ns, state}. */
static void count_state(metrics_family *f, const char *ns, const char *state)
{
    const char *v[] = {ns, state};
    double have = metrics_get(f, v);
    metrics_set(f, v, isnan(have) ? 1 : have + 1);
}

/* What the collector reads of a FlinkCluster: [namespace, name, state, job state or null (no
 * spec.job), restartCount, lastSavepointTime as Unix seconds or null]; NULL without
 * metadata.namespace/name. */
static json_t *cm_record(json_t *cluster)
{
    json_t *md = json_object_get(cluster, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!ns || !name)
        return NULL;
    json_t *status = json_object_get(cluster, "status");
    const char *state = json_string_value(json_object_get(status, "state"));
    json_t *rec = json_pack("[s,s,s]", ns, name, state && *state ? state : "Unknown");
    if (!rec)
        return NULL;
    if (!json_is_object(json_object_get(json_object_get(cluster, "spec"), "job")))
        return rec;
    json_t *job = json_object_get(json_object_get(status, "components"), "job");
    const char *jstate = json_string_value(json_object_get(job, "state"));
    json_t *rc = json_object_get(job, "restartCount");
    const char *sp = json_string_value(json_object_get(job, "lastSavepointTime"));
    double t;
    json_array_append_new(rec, json_string(jstate && *jstate ? jstate : "Unknown"));
    json_array_append_new(rec, json_real(json_is_number(rc) ? json_number_value(rc) : 0));
    json_array_append_new(rec, sp && kubecred_parse_time(sp, &t) == 0 ? json_real(t) : json_null());
    return rec;
}

static void cm_add_record(const metrics_controller *m, json_t *rec)
{
    const char *ns = json_string_value(json_array_get(rec, 0));
    const char *v[] = {ns, json_string_value(json_array_get(rec, 1))};
    count_state(m->clusters, ns, json_string_value(json_array_get(rec, 2)));
    if (json_array_size(rec) < 6)
        return;
    count_state(m->jobs, ns, json_string_value(json_array_get(rec, 3)));
    metrics_set_new(m->job_restarts, v, json_real_value(json_array_get(rec, 4)));
    if (json_is_real(json_array_get(rec, 5)))
        metrics_set_new(m->job_last_savepoint, v, json_real_value(json_array_get(rec, 5)));
}

int clustermetrics_add(const metrics_controller *m, json_t *cluster)
{
    json_t *rec = m ? cm_record(cluster) : NULL;
    if (!rec)
        return -1;
    cm_add_record(m, rec);
    json_decref(rec);
    return 0;
}

/* ---- the index kept from watch events ------------------------------------------------------- */

struct clustermetrics_index {
    json_t *recs; /* "namespace/name" -> cm_record */
};

clustermetrics_index *clustermetrics_index_new(void)
{
    clustermetrics_index *x = calloc(1, sizeof *x);
    if (x && !(x->recs = json_object())) {
        free(x);
        return NULL;
    }
    return x;
}

void clustermetrics_index_free(clustermetrics_index *x)
{
    if (!x)
        return;
    json_decref(x->recs);
    free(x);
}

/* "namespace/name" of a cluster into buf; -1 without them. */
static int cm_key(json_t *cluster, char *buf, size_t n)
{
    json_t *md = json_object_get(cluster, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    int w = ns && name ? snprintf(buf, n, "%s/%s", ns, name) : -1;
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int clustermetrics_index_put(clustermetrics_index *x, json_t *cluster)
{
    char key[600];
    if (!x || cm_key(cluster, key, sizeof key))
        return -1;
    json_t *rec = cm_record(cluster);
    return rec ? json_object_set_new(x->recs, key, rec) : -1;
}

void clustermetrics_index_delete(clustermetrics_index *x, json_t *cluster)
{
    char key[600];
    if (x && cm_key(cluster, key, sizeof key) == 0)
        json_object_del(x->recs, key);
}

size_t clustermetrics_index_len(const clustermetrics_index *x)
{
    return x ? json_object_size(x->recs) : 0;
}

void clustermetrics_index_keys(const clustermetrics_index *x, void (*fn)(const char *key, void *ud), void *ud)
{
    const char *k;
    json_t *rec;
    if (x)
        json_object_foreach(x->recs, k, rec) fn(k, ud);
}

void clustermetrics_collect(const metrics_controller *m, const clustermetrics_index *x)
{
    if (!m)
        return;
    clustermetrics_begin(m);
    const char *k;
    json_t *rec;
    if (x)
        json_object_foreach(x->recs, k, rec) cm_add_record(m, rec);
}

/* ---- savepoints ---------------------------------------------------------------------------- */

int clustermetrics_savepoint_ended(const metrics_controller *m, const char *ns, json_t *old, json_t *new)
{
    json_t *sp = json_object_get(new, "savepoint"), *osp = json_object_get(old, "savepoint");
    const char *state = json_string_value(json_object_get(sp, "state"));
    if (!m || !ns || !state)
        return 0;
    const char *result = strcmp(state, "Succeeded") == 0 ? "success"
                         : strcmp(state, "Failed") == 0 || strcmp(state, "TriggerFailed") == 0 ? "failure"
                                                                                               : NULL;
    if (!result)
        return 0;
    const char *ostate = json_string_value(json_object_get(osp, "state"));
    const char *id = json_string_value(json_object_get(sp, "triggerID"));
    const char *oid = json_string_value(json_object_get(osp, "triggerID"));
    int same_id = (!id && !oid) || (id && oid && strcmp(id, oid) == 0);
    if (ostate && strcmp(ostate, state) == 0 && same_id)
        return 0;
    const char *v[] = {ns, json_is_true(json_object_get(sp, "stop")) ? "stop" : "savepoint", result};
    metrics_inc(m->savepoints_total, v);
    return 1;
}
