/* SPDX-License-Identifier: Apache-2.0 */
/* core/executor: a pass's result written through the kube client (see executor.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "clusterstate.h"
#include "events.h"
#include "executor.h"
#include "expect.h"
#include "flinkcall.h"
#include "replica.h"
#include "run.h"
#include "runctx.h"
#include "snapshot.h"
#include "status.h"
#include "util.h"

void executor_item_free(struct run_item *it)
{
    struct run_ctx *ctx = it->ctx;
    for (struct run_item **p = &ctx->items; *p; p = &(*p)->next_item)
        if (*p == it) {
            *p = it->next_item;
            break;
        }
    json_decref(it->cluster);
    json_decref(it->result);
    json_decref(it->sent);
    json_decref(it->fresh);
    json_decref(it->event);
    free(it->key);
    free(it);
}

void executor_finish(struct run_item *it)
{
    struct run_ctx *ctx = it->ctx;
    json_t *ra = json_object_get(it->result, "requeue_after");
    double requeue = json_is_number(ra) ? json_number_value(ra) : 0;
    const char *res = it->conflict ? "conflict"
                      : it->failed || it->terminating ? "error"
                      : requeue > 0 ? "requeue"
                                    : "success";
    const char *rv[] = {res};
    if (!it->waiting && !it->fenced) {
        metrics_inc(ctx->m.reconcile_total, rv);
        if (it->started > 0)
            metrics_observe(ctx->m.reconcile_duration, rv, ev_time() - it->started);
    }
    if (it->waiting || it->fenced || it->terminating) {
        /* waiting: the watch event that brings our write enqueues the key (or the timeout set
         * by run_process); fenced: nothing more from this replica; terminating: the namespace's
         * deletion removes the cluster (its DELETED event forgets the key) */
        if (it->terminating)
            workqueue_forget(ctx->q, it->key);
    } else if (it->conflict) {
        /* a write of someone else came in between: the watch brings it; meanwhile back off as
         * for a failure (client-go: AddRateLimited on any error, conflicts included) */
        double d = workqueue_add_rate_limited(ctx->q, it->key);
        run_log(LOG_INFO, it->key, "status conflict", "retry_in_ms", RUN_MS(d), NULL);
    } else if (it->failed) {
        ctx->reconcile_errors++;
        double d = workqueue_add_rate_limited(ctx->q, it->key);
        if (d >= 0)
            run_log(LOG_WARN, it->key, "reconcile failed", "retry_in_ms", RUN_MS(d), NULL);
        else
            run_log(LOG_WARN, it->key, "reconcile failed", "reason", "Stopping", NULL);
    } else {
        workqueue_forget(ctx->q, it->key);
        if (requeue > 0)
            workqueue_add_after(ctx->q, it->key, requeue);
    }
    ctx->reconciles++;
    workqueue_done(ctx->q, it->key);
    ctx->inflight--;
    executor_item_free(it);
    /* the next key on the next loop turn: no recursion through keys that finish at once */
    ev_idle_start(ctx->loop, &ctx->pump_idle);
}

static void executor_kube_done(const kube_result *res, void *ud)
{
    struct run_item *it = ud;
    it->call = NULL;
    struct run_ctx *ctx = it->ctx;
    run_count_request(ctx, it->verb ? it->verb : "PATCH", res->status);
    int ok = res->status >= 200 && res->status < 300;
    if (!ok && res->status == 404 && it->write == WRITE_DELETE)
        ok = 1; /* already gone */
    if (it->write == WRITE_DRY_RUN) {
        /* the answer is the framework's to judge in the next pass (snapshot.dry_runs), never a
         * failed key: a refusal is what a dry run is for */
        cluster_state *cs = clusterstate_get_or_add(ctx->clusters, it->key);
        if (cs && !cs->dryruns)
            cs->dryruns = json_object();
        json_t *d = cs ? cs->dryruns : NULL;
        json_object_set_new(d, it->dry_key,
                            json_pack("{s:s, s:I, s:s}", "hash", it->dry_hash, "status", (json_int_t)res->status,
                                      "message", ok ? "" : (res->message ? res->message : "")));
        run_log(ok ? LOG_DEBUG : LOG_INFO, it->key, ok ? "dry run accepted" : "dry run refused", "action", it->what,
                "http_code", RUN_LD(res->status), ok ? NULL : "error", res->message ? res->message : "", NULL);
    } else if (!ok && it->phase == PHASE_EVENTS) {
        /* an Event that cannot be written is logged, never a reason to retry the key; a repeat
         * whose Event is gone (expired by the API server's event TTL) creates a new one */
        run_log(LOG_WARN, it->key, "event write failed", "action", it->what, "http_code", RUN_LD(res->status), "error", res->message ? res->message : "", NULL);
        if (it->event) {
            json_object_del(it->event, "name");
            json_object_set_new(it->event, "count", json_integer(0));
        }
    } else if (!ok && it->phase == PHASE_STATUS && res->status == 409) {
        it->conflict = 1;
        it->status_refused = 1;
        /* someone else wrote the FlinkCluster after the version this pass read (a user's edit
         * or annotation the lagging watch has not brought yet): the next pass waits until the
         * cache shows another version, instead of retrying against the same stale one */
        const char *read_rv =
            json_string_value(json_object_get(json_object_get(it->cluster, "metadata"), "resourceVersion"));
        if (read_rv)
            expect_add(ctx, it->key, 0, it->name, json_pack("{s:s}", "not_rv", read_rv));
    } else if (!ok && it->phase == PHASE_STATUS && res->status == 404) {
        /* the FlinkCluster is gone: deleted after the cache showed it to this pass (a status
         * write on a cluster recreated meanwhile is a 409: its resourceVersion is another).
         * Nothing to retry and no Event about an object that no longer exists; the watch's
         * DELETED event forgets the key. */
        it->status_refused = 1;
        it->gone = 1;
        run_log(LOG_INFO, it->key, "cluster gone", "action", it->what, "http_code", "404", NULL);
    } else if (!ok && res->status == 403 && kube_status_has_cause(res->body, "NamespaceTerminating")) {
        /* the namespace is being deleted (its FlinkCluster with it): every further write of
         * this pass, its retry and its Warning Events would be refused the same way. As
         * Kubernetes' own controllers (the ReplicaSet and Job controllers ignore this cause):
         * the rest of the pass is dropped and not retried; a watch event enqueues the key again. */
        ctx->action_errors++;
        it->terminating = 1;
        it->status_refused = 1;
        it->phase = PHASE_DONE;
        run_log(LOG_INFO, it->key, "namespace terminating, pass not written", "action", it->what, "http_code", "403",
                "reason", "NamespaceTerminating", NULL);
    } else if (!ok) {
        ctx->action_errors++;
        it->failed = 1;
        it->status_refused |= it->phase == PHASE_STATUS;
        run_log(LOG_ERROR, it->key, it->phase == PHASE_STATUS ? "status write failed" : "write failed", "action", it->what, "http_code", RUN_LD(res->status), "error", res->message ? res->message : "", NULL);
        events_failure(it, res->status, res->message);
    } else {
        ctx->actions_done++;
        run_log(LOG_DEBUG, it->key, "written", "action", it->what, "http_code", RUN_LD(res->status), NULL);
        /* what the next pass waits to see in the cache */
        if (it->write == WRITE_DELETE)
            expect_add(ctx, it->key, it->del_kind, strrchr(it->what, ' ') + 1,
                       json_pack("{s:s}", "uid", it->del_uid));
        else if (it->phase != PHASE_EVENTS && it->write != WRITE_COLLECTION)
            expect_written(ctx, it->key, it->write == WRITE_APPLY ? expect_kind_of(res->body) : 0, res->body);
        else if (it->event && json_is_string(json_object_get(json_object_get(res->body, "metadata"), "name")))
            json_object_set(it->event, "name", json_object_get(json_object_get(res->body, "metadata"), "name"));
        if (it->write == WRITE_STATUS) {
            const char *rv = json_string_value(json_object_get(json_object_get(res->body, "metadata"), "resourceVersion"));
            snprintf(it->status_rv, sizeof it->status_rv, "%s", rv ? rv : "");
            char sent[65], kept[65];
            status_digest(it->sent, 1, sent);
            status_digest(json_object_get(res->body, "status"), 0, kept);
            cluster_state *cs = clusterstate_get_or_add(ctx->clusters, it->key);
            if (cs) {
                cs->has_kept = 1;
                memcpy(cs->sent, sent, sizeof cs->sent);
                memcpy(cs->kept, kept, sizeof cs->kept);
            }
        }
    }
    if (it->event) {
        json_decref(it->event);
        it->event = NULL;
    }
    executor_step(it);
}

/* A merge patch of the item's FlinkCluster (`patch` taken; NULL: out of memory): it->call set
 * when started, else err (errlen bytes) says why, as given when the patch could not be encoded. */
static void executor_patch_cluster(struct run_item *it, json_t *patch, char *err, size_t errlen)
{
    char *text = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (text)
        it->call = it->ctx->ops->patch(it->ctx->kc, RUN_ITEM_KIND(it), it->ns, it->name, NULL,
                                       "application/merge-patch+json", text, executor_kube_done, it, err, errlen);
    free(text);
}

/* Starts one action; 1 when started (its callback continues the item), 0 when it failed at
 * once (recorded). */
static int executor_start_action(struct run_item *it, json_t *a)
{
    struct run_ctx *ctx = it->ctx;
    const char *op = json_string_value(json_object_get(a, "op"));
    char err[512] = "out of memory"; /* what is left when json_dumps failed; others overwrite it */
    op = op ? op : "?";
    it->write = WRITE_PATCH;
    if (strcmp(op, "apply") == 0 || strcmp(op, "dry_run") == 0) {
        /* server-side apply of the object, or its dry run (answer kept for the next pass) */
        int dry = op[0] == 'd';
        json_t *obj = json_object_get(a, "object");
        json_t *meta = json_object_get(obj, "metadata");
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        snprintf(it->what, sizeof it->what, "%s %s %s", dry ? "dry-run apply" : "apply", kind ?: "?", name ?: "?");
        it->verb = "PATCH";
        it->write = dry ? WRITE_DRY_RUN : WRITE_APPLY;
        if (dry) {
            snprintf(it->dry_key, sizeof it->dry_key, "%s/%s", kind ?: "?", name ?: "?");
            snprintf(it->dry_hash, sizeof it->dry_hash, "%s", json_string_value(json_object_get(a, "hash")) ?: "");
        }
        /* children live in the cluster's namespace */
        if (json_is_object(meta) && !json_object_get(meta, "namespace"))
            json_object_set_new(meta, "namespace", json_string(it->ns));
        char *text = json_dumps(obj, JSON_COMPACT);
        if (text)
            it->call = (dry ? ctx->ops->apply_dry_run : ctx->ops->apply)(ctx->kc, text, executor_kube_done, it, err, sizeof err);
        free(text);
        if (it->call)
            return 1;
    } else if (strcmp(op, "delete") == 0) {
        const char *kind = json_string_value(json_object_get(a, "kind"));
        const char *name = json_string_value(json_object_get(a, "name"));
        snprintf(it->what, sizeof it->what, "delete %s %s", kind ?: "?", name ?: "?");
        it->verb = "DELETE";
        it->write = WRITE_DELETE;
        const kube_kind *k = kube_kind_find(NULL, kind);
        struct run_ns *rn = run_ns_for(ctx, it->ns);
        it->del_kind = -1;
        it->del_uid[0] = '\0';
        for (int i = 0; k && name && rn && i < run_nkinds; i++)
            if (run_kinds[i] == k && rn->r[i]) {
                json_t *have = reflector_get_copy(rn->r[i], it->ns, name);
                const char *uid = json_string_value(json_object_get(json_object_get(have, "metadata"), "uid"));
                it->del_kind = i;
                snprintf(it->del_uid, sizeof it->del_uid, "%s", uid ? uid : "");
                json_decref(have);
            }
        if (!k || !name)
            snprintf(err, sizeof err, "unknown kind or no name");
        else
            it->call = ctx->ops->delete(ctx->kc, k, it->ns, name, "Background", executor_kube_done, it, err, sizeof err);
        if (it->call)
            return 1;
    } else if (strcmp(op, "delete_collection") == 0) {
        /* objects the controller does not watch, by label selector (Flink's HA ConfigMaps) */
        const char *kind = json_string_value(json_object_get(a, "kind"));
        const char *sel = json_string_value(json_object_get(a, "selector"));
        snprintf(it->what, sizeof it->what, "delete %s -l %s", kind ?: "?", sel ?: "?");
        it->verb = "DELETE";
        it->write = WRITE_COLLECTION;
        const kube_kind *k = kube_kind_find(NULL, kind);
        if (!k || !sel || !*sel)
            snprintf(err, sizeof err, "unknown kind or no selector");
        else
            it->call = ctx->ops->delete_collection(ctx->kc, k, it->ns, sel, "Background", executor_kube_done, it, err,
                                                   sizeof err);
        if (it->call)
            return 1;
    } else if (strcmp(op, "patch_finalizers") == 0) {
        /* of the pass's object (a FlinkCluster, or a FlinkJob: fc.flinkjob): the whole list (a
         * merge patch replaces lists), at the resourceVersion the pass read, or
         * the one the pass's own status write produced (after_status): a finalizer someone else
         * changed meanwhile makes it a 409, retried from the new version. An empty list (from
         * Lua an empty table, encoded {}) removes the field (null). */
        snprintf(it->what, sizeof it->what, "patch finalizers");
        it->verb = "PATCH";
        json_t *fin = json_object_get(a, "finalizers");
        json_t *rv = json_object_get(a, "resourceVersion");
        int empty = json_is_object(fin) ? json_object_size(fin) == 0 : json_is_array(fin) && json_array_size(fin) == 0;
        if (!(json_is_array(fin) || empty) || !json_is_string(rv))
            snprintf(err, sizeof err, "finalizers (a list) and resourceVersion are required");
        else
            executor_patch_cluster(it, json_pack("{s:{s:o, s:s}}", "metadata", "finalizers",
                                                 empty ? json_null() : json_incref(fin), "resourceVersion",
                                                 it->status_rv[0] ? it->status_rv : json_string_value(rv)),
                                   err, sizeof err);
        if (it->call)
            return 1;
    } else if (strcmp(op, "patch_annotations") == 0) {
        snprintf(it->what, sizeof it->what, "patch annotations");
        it->verb = "PATCH";
        json_t *ann = json_object();
        size_t i;
        json_t *k;
        json_array_foreach(json_object_get(a, "remove"), i, k)
        {
            if (json_is_string(k))
                json_object_set_new(ann, json_string_value(k), json_null());
        }
        executor_patch_cluster(it, json_pack("{s:{s:o}}", "metadata", "annotations", ann), err, sizeof err);
        if (it->call)
            return 1;
    } else if (strcmp(op, "flink") == 0) {
        flinkcall_for_action(it, a);
        return 0;
    } else {
        snprintf(it->what, sizeof it->what, "action %s", op);
        snprintf(err, sizeof err, "unknown op");
    }
    it->failed = 1;
    ctx->action_errors++;
    run_log(LOG_ERROR, it->key, "write not started", "action", it->what, "error", err, NULL);
    events_failure(it, 0, err);
    return 0;
}

/* 1 when action `a` runs after the status is written: the user-control annotation's removal,
 * any action marked after_status (fc.haclean's finalizer removal, after the HA ConfigMaps'
 * deletion), so a Flink call marked after_status (a savepoint or stop trigger whose id the status
 * records first, so that a controller that dies in between can look it up). */
static int executor_is_control(json_t *a)
{
    const char *op = json_string_value(json_object_get(a, "op"));
    return op && (strcmp(op, "patch_annotations") == 0 || json_is_true(json_object_get(a, "after_status")));
}

/* The policy-hash annotation of the cluster, when the pass ran with another set than the one
 * it names: a merge patch of that one annotation (no write at steady state). Only with
 * --policy-configmap: without overrides the set never changes, and a write per cluster more
 * would be all it cost. 1 when started. */
static int executor_start_hash_patch(struct run_item *it)
{
    struct run_ctx *ctx = it->ctx;
    json_t *ann = json_object_get(json_object_get(it->cluster, "metadata"), "annotations");
    const char *have = json_string_value(json_object_get(ann, RUN_POLICY_HASH_ANNOTATION));
    if (!ctx->ov.ns[0] || !it->policy_hash[0] || (have && strcmp(have, it->policy_hash) == 0))
        return 0;
    char err[512] = "out of memory";
    snprintf(it->what, sizeof it->what, "patch annotation %s=%s", RUN_POLICY_HASH_ANNOTATION, it->policy_hash);
    it->verb = "PATCH";
    it->write = WRITE_PATCH;
    executor_patch_cluster(
        it, json_pack("{s:{s:{s:s}}}", "metadata", "annotations", RUN_POLICY_HASH_ANNOTATION, it->policy_hash), err,
        sizeof err);
    if (it->call)
        return 1;
    it->failed = 1;
    run_log(LOG_ERROR, it->key, "write not started", "action", it->what, "error", err, NULL);
    return 0;
}

void executor_step(struct run_item *it)
{
    for (;;) {
        if (it->phase != PHASE_DONE && !replica_may_write_key(it->ctx, it->key)) {
            run_log(LOG_WARN, it->key, "leadership lost, pass not written", NULL);
            it->fenced = 1;
            it->phase = PHASE_DONE;
        }
        json_t *actions = json_object_get(it->result, "actions");
        switch (it->phase) {
        case PHASE_ACTIONS: {
            if (it->next < json_array_size(actions)) {
                json_t *a = json_array_get(actions, it->next++);
                if (!executor_is_control(a) && executor_start_action(it, a))
                    return;
                continue;
            }
            it->phase = PHASE_STATUS;
            it->next = 0;
            json_t *status = json_object_get(it->result, "status");
            if (json_is_object(status) && status_start(it, status, executor_kube_done))
                return;
            continue;
        }
        case PHASE_STATUS:
            /* a savepoint's end is counted once: when the status recording it is written */
            if (it->sent && !it->status_refused && RUN_ITEM_KIND(it) == &kube_kind_flinkcluster)
                clustermetrics_savepoint_ended(&it->ctx->m, it->ns, json_object_get(it->cluster, "status"),
                                              it->sent);
            it->phase = PHASE_CONTROL;
            continue;
        case PHASE_CONTROL:
            /* the user control's outcome is in the status first; then the annotation goes (a
             * refused status keeps it, so the control is finished again by the next pass); the
             * same for a trigger whose id the status records (not sent when the status was not
             * written: the next pass decides again) */
            if (!it->status_refused && it->next < json_array_size(actions)) {
                json_t *a = json_array_get(actions, it->next++);
                /* `unless_failed`: only when every write of the pass went through (a finalizer
                 * removed once what it guards is done) */
                if (executor_is_control(a) && !(it->failed && json_is_true(json_object_get(a, "unless_failed"))) &&
                    executor_start_action(it, a))
                    return;
                continue;
            }
            it->phase = PHASE_HASH;
            it->next = 0;
            continue;
        case PHASE_HASH:
            it->phase = PHASE_EVENTS;
            if (!it->status_refused && executor_start_hash_patch(it))
                return;
            continue;
        case PHASE_EVENTS: {
            json_t *events = json_object_get(it->result, "events");
            if (it->gone) {
                it->phase = PHASE_DONE;
                continue;
            }
            /* also after a status conflict: they were decided; the next pass, deciding them
             * again from the same observed status, raises the same Event's count
             * (events_entry) instead of creating a second one */
            if (it->next < json_array_size(events)) {
                if (events_start(it, json_array_get(events, it->next++), executor_kube_done))
                    return;
                continue;
            }
            it->phase = PHASE_DONE;
            continue;
        }
        case PHASE_DONE:
            executor_finish(it);
            return;
        }
    }
}

