/* SPDX-License-Identifier: Apache-2.0 */
/* core/events: a pass's Events and their correlator (see events.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "clusterstate.h"
#include "events.h"
#include "run.h"
#include "runctx.h"
#include "util.h"

/* An Event's record, "event" with "event_type", "reason" and "message" (its `mlen` bytes: a NUL
 * in it, a policy's message naming a value "a\u0000b", is written escaped, not the end of the
 * line). */
static void events_log(const char *key, const char *type, const char *reason, const char *message,
                          size_t mlen)
{
    log_level level = strcmp(type, "Warning") == 0 ? LOG_WARN : LOG_INFO;
    if (!log_enabled(level))
        return;
    char ns[256];
    const char *kvs[] = {"cluster", run_key_split(key, ns, sizeof ns), "namespace", ns, "event_type", type,
                         "reason", reason, "message", message};
    size_t lens[] = {strlen(kvs[1]), strlen(ns), strlen(type), strlen(reason), mlen};
    log_kvn(level, "event", strlen("event"), 5, kvs, lens);
}

/* A write of an action that failed becomes a Warning Event about the cluster (after the
 * framework's own): reason ApplyFailed / DeleteFailed / PatchFailed / StatusFailed, message
 * "<what>: HTTP <status>: <API message>" (status 0: no answer). */
void events_failure(struct run_item *it, long status, const char *message)
{
    static const char *const reasons[] = {
        [WRITE_PATCH] = "PatchFailed", [WRITE_APPLY] = "ApplyFailed",
        [WRITE_DELETE] = "DeleteFailed", [WRITE_STATUS] = "StatusFailed", [WRITE_DRY_RUN] = "DryRunFailed",
        [WRITE_COLLECTION] = "DeleteFailed"};
    const char *reason = reasons[it->write];
    char text[1024];
    snprintf(text, sizeof text, "%s: HTTP %ld: %s", it->what, status, message ? message : "");
    json_t *events = json_object_get(it->result, "events");
    if (!json_is_array(events)) {
        events = json_array();
        json_object_set_new(it->result, "events", events);
    }
    json_array_append_new(events, json_pack("{s:s, s:s, s:s}", "type", "Warning", "reason", reason, "message", text));
}

/* The emitted entry of an Event (type, reason, message) for this cluster:
 * {"time": unix s of the last emission, "count": emissions, "name": the Event object's name
 * once created}. Entries older than RUN_EVENT_DEDUP_S are forgotten, so a repeat after that
 * is a new Event. As client-go's EventCorrelator: a repeat within the window is the same Event
 * with its count raised and lastTimestamp moved, never a second object and never dropped. */
static json_t *events_entry(struct run_ctx *ctx, const char *key, const char *type, const char *reason,
                               const char *message)
{
    cluster_state *cs = clusterstate_get_or_add(ctx->clusters, key);
    if (cs && !cs->emitted)
        cs->emitted = json_object();
    json_t *m = cs ? cs->emitted : NULL;
    if (!m)
        return NULL;
    double now = (double)time(NULL);
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(m, tmp, k, v)
    {
        if (now - json_number_value(json_object_get(v, "time")) > RUN_EVENT_DEDUP_S)
            json_object_del(m, k);
    }
    char id[1400];
    snprintf(id, sizeof id, "%s\x1f%s\x1f%.1200s", type, reason, message);
    json_t *e = json_object_get(m, id);
    if (!e) {
        e = json_pack("{s:f, s:I}", "time", now, "count", (json_int_t)0);
        json_object_set_new(m, id, e);
    }
    json_object_set_new(e, "time", json_real(now));
    json_object_set_new(e, "count", json_integer(json_integer_value(json_object_get(e, "count")) + 1));
    return e;
}

int events_start(struct run_item *it, json_t *ev, kube_done_fn done)
{
    struct run_ctx *ctx = it->ctx;
    const char *type = json_string_value(json_object_get(ev, "type"));
    const char *reason = json_string_value(json_object_get(ev, "reason"));
    const char *message = json_string_value(json_object_get(ev, "message"));
    if (!type || !reason || !message)
        return 0;
    if (strcmp(reason, "PolicyError") == 0) {
        /* the typed failure fc.contract made (once per new message): its fields, no parsing */
        json_t *f = json_object_get(ev, "failure");
        const char *policy = json_string_value(json_object_get(f, "policy"));
        const char *kind = json_string_value(json_object_get(f, "kind"));
        const char *pv[] = {policy ? policy : "", kind ? kind : "error"};
        metrics_inc(ctx->m.policy_errors_total, pv);
    }
    events_log(it->key, type, reason, message, json_string_length(json_object_get(ev, "message")));
    json_t *e = events_entry(ctx, it->key, type, reason, message);
    json_int_t count = json_integer_value(json_object_get(e, "count"));
    const char *ev_name = json_string_value(json_object_get(e, "name"));
    if (count > 1 && !ev_name)
        return 0; /* the first is still being created (or could not be): nothing to count on */
    char err[512] = "";
    it->event = json_incref(e); /* kept while the call is in flight (the entry may expire) */
    if (ev_name) {
        /* a repeat: the same Event, count and lastTimestamp raised (a merge patch) */
        char ts[32], patch[128];
        if (util_format_time((double)time(NULL), 0, ts, sizeof ts) != 0)
            return 0;
        snprintf(patch, sizeof patch, "{\"count\":%lld,\"lastTimestamp\":\"%s\"}", (long long)count, ts);
        snprintf(it->what, sizeof it->what, "count event %s (%lld)", reason, (long long)count);
        it->verb = "PATCH";
        it->call = ctx->ops->patch(ctx->kc, &kube_kind_event, it->ns, ev_name, NULL, "application/merge-patch+json",
                              patch, done, it, err, sizeof err);
    } else {
        json_t *inv = run_typed(it->cluster, RUN_ITEM_KIND(it));
        snprintf(it->what, sizeof it->what, "create event %s", reason);
        it->verb = "POST";
        it->call = ctx->ops->event_create(ctx->kc, inv, type, reason, message, done, it, err, sizeof err);
        json_decref(inv);
    }
    if (it->call)
        return 1;
    json_decref(it->event);
    it->event = NULL;
    run_log(LOG_WARN, it->key, "event write failed", "action", it->what, "error", err, NULL);
    return 0;
}

