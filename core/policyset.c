/* SPDX-License-Identifier: Apache-2.0 */
/* core/policyset: the policy set serving and --policy-configmap reloads (see policyset.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "policyset.h"
#include "lhost_json.h"
#include "replica.h"
#include "runctx.h"
#include "util.h"

static void policyset_event_done(const kube_result *res, void *ud)
{
    struct run_ctx *ctx = ud;
    run_count_request(ctx, "POST", res->status);
    if (res->status < 200 || res->status >= 300)
        run_log(LOG_WARN, NULL, "event write failed", "configmap", ctx->ov.name, "namespace", ctx->ov.ns,
                "http_code", RUN_LD(res->status), "error", res->message ? res->message : "", NULL);
}

/* An Event about the ConfigMap `cm` (not deduplicated: one per set checked); written only by a
 * replica that may write (the leader with --leader-elect). */
static void policyset_event(struct run_ctx *ctx, json_t *cm, const char *type, const char *reason,
                               const char *message)
{
    if (!cm || !replica_may_write(ctx))
        return;
    json_t *inv = run_typed(cm, &kube_kind_configmap);
    char err[512] = "out of memory";
    if (!inv || !kube_event_create(ctx->kc, inv, type, reason, message, policyset_event_done, ctx, err, sizeof err))
        run_log(LOG_WARN, NULL, "event write failed", "configmap", ctx->ov.name, "namespace", ctx->ov.ns, "reason", reason, "error", err, NULL);
    json_decref(inv);
}

void policyset_set_info(struct run_ctx *ctx)
{
    const char *v[] = {ctx->ov.active_hash};
    metrics_clear(ctx->m.policy_set_info);
    metrics_set(ctx->m.policy_set_info, v, 1);
}

/* fc.override.<fn>(in) on the live host (`in` is taken: decref'd here); its result decoded (err
 * then ""), or NULL with the reason in err ("out of memory", or the framework's error). */
static json_t *policyset_lua(struct run_ctx *ctx, const char *fn, json_t *in, char *err, size_t errlen)
{
    json_t *res = lhost_json_call(ctx->host, "fc.override", fn, in, JSON_DECODE_ANY | JSON_ALLOW_NUL, err, errlen);
    json_decref(in);
    if (res)
        err[0] = '\0';
    return res;
}

/* Serves the set in `dir` ("" = the built-in one) from the next pass on, between passes (a pass
 * makes its policy calls in one go on the loop, so none sees two sets), and enqueues every
 * FlinkCluster and FlinkJob (a key of a shard this replica does not own is dropped when taken
 * from the queue). The set served before, when made by core/override, is removed. */
static int policyset_switch(struct run_ctx *ctx, const char *dir, const char *hash, const char *why)
{
    struct policyset *ov = &ctx->ov;
    char err[1024];
    json_t *res = policyset_lua(ctx, "activate", json_pack("{s:s}", "policy_dir", *dir ? dir : ov->builtin_dir),
                                   err, sizeof err);
    json_decref(res);
    if (!res) {
        run_log(LOG_ERROR, NULL, "policy set not switched", "hash", hash, "error", err, "serving_hash",
                ov->active_hash, NULL);
        return -1;
    }
    char old[sizeof ov->active_dir];
    snprintf(old, sizeof old, "%s", ov->active_dir);
    snprintf(ov->active_dir, sizeof ov->active_dir, "%s", dir);
    snprintf(ov->active_hash, sizeof ov->active_hash, "%s", hash);
    if (*old && strcmp(old, dir) != 0)
        override_remove(old);
    policyset_set_info(ctx);
    log_msg(LOG_INFO, "policy set switched", "hash", hash, "reason", why, "policy_dir",
            *dir ? dir : ov->builtin_dir, NULL);
    run_enqueue_all(ctx);
    return 0;
}

/* A set of the ConfigMap refused: counted, logged, a Warning PolicyRejected on the ConfigMap;
 * the set serving stays. */
static void policyset_refuse(struct run_ctx *ctx, json_t *cm, const char *hash, const char *why)
{
    struct policyset *ov = &ctx->ov;
    const char *v[] = {"refused"};
    metrics_inc(ctx->m.policy_reloads_total, v);
    const char *rv = json_string_value(json_object_get(json_object_get(cm, "metadata"), "resourceVersion"));
    char msg[2048];
    snprintf(msg, sizeof msg, "policy set %s refused: %s; the last good set %s keeps serving", hash, why,
             ov->active_hash);
    log_msg(LOG_ERROR, msg, "configmap_resource_version", rv ? rv : "", NULL);
    policyset_event(ctx, cm, "Warning", "PolicyRejected", msg);
}

static void policyset_take(struct run_ctx *ctx, json_t *cm);

/* The fixtures of the set in ctx->ov.check_dir are done. */
static void policyset_checked(int status, const char *output, void *ud)
{
    struct run_ctx *ctx = ud;
    struct policyset *ov = &ctx->ov;
    json_t *cm = ov->check_cm;
    ov->check = NULL;
    ov->check_cm = NULL;
    if (status == 0) {
        const char *v[] = {"accepted"};
        metrics_inc(ctx->m.policy_reloads_total, v);
        const char *rv = json_string_value(json_object_get(json_object_get(cm, "metadata"), "resourceVersion"));
        char why[600], msg[700];
        snprintf(why, sizeof why, "ConfigMap %s/%s resourceVersion %s: compiled, every fixture passed", ov->ns,
                 ov->name, rv ? rv : "?");
        if (policyset_switch(ctx, ov->check_dir, ov->check_hash, why) == 0) {
            snprintf(msg, sizeof msg, "policy set %s serving: compiled, every fixture passed", ov->check_hash);
            policyset_event(ctx, cm, "Normal", "PolicyAccepted", msg);
        } else {
            override_remove(ov->check_dir);
        }
    } else {
        char err[1024];
        json_t *sum = policyset_lua(ctx, "summary", json_pack("{s:s}", "output", output ? output : ""), err,
                                       sizeof err);
        char why[1600];
        snprintf(why, sizeof why, "%s%s", status < 0 ? "the fixtures' process was killed: " : "",
                 json_is_string(sum) ? json_string_value(sum) : err);
        json_decref(sum);
        policyset_refuse(ctx, cm, ov->check_hash, why);
        override_remove(ov->check_dir);
    }
    ov->check_dir[0] = '\0';
    json_decref(cm);
    ov->settled = 1;
    run_check_synced(ctx);
    if (ov->pending && !ctx->stopping) {
        json_t *next = ov->pending;
        ov->pending = NULL;
        policyset_take(ctx, next);
        json_decref(next);
    }
}

/* A new version of the ConfigMap: its set is made, hashed and compiled at once, its fixtures
 * checked in a child process (policyset_checked); a refusal at any step is final for this
 * version. A set with the hash of the one serving changes nothing. */
static void policyset_take(struct run_ctx *ctx, json_t *cm)
{
    struct policyset *ov = &ctx->ov;
    const char *rv = json_string_value(json_object_get(json_object_get(cm, "metadata"), "resourceVersion"));
    char err[2048];
    json_t *plan = policyset_lua(ctx, "files", json_pack("{s:O?, s:O?}", "data", json_object_get(cm, "data"),
                                                            "binaryData", json_object_get(cm, "binaryData")),
                                    err, sizeof err);
    char dir[4096] = "", hash[OVERRIDE_HASH_LEN + 1] = "-";
    const char *bad = json_string_value(json_object_get(plan, "error"));
    if (bad) {
        policyset_refuse(ctx, cm, hash, bad);
    } else if (!plan || override_materialize(ov->builtin_dir, ctx->o.policy_work_dir, plan, dir, sizeof dir, err,
                                             sizeof err)) {
        policyset_refuse(ctx, cm, hash, err);
    } else if (override_hash(dir, hash, sizeof hash, err, sizeof err)) {
        policyset_refuse(ctx, cm, "-", err);
        override_remove(dir);
    } else if (strcmp(hash, ov->active_hash) == 0) {
        log_msg(LOG_INFO, "policy set from the ConfigMap is the one serving: nothing to switch", "hash", hash,
                "configmap_resource_version", rv ? rv : "", NULL);
        override_remove(dir);
    } else if (override_compile(dir, err, sizeof err) != 0) {
        policyset_refuse(ctx, cm, hash, err);
        override_remove(dir);
    } else if (!(ov->check = override_check_start(ctx->loop, dir, ctx->o.host.timeout_ms, ctx->o.host.memory_mib,
                                                  policyset_checked, ctx, err, sizeof err))) {
        policyset_refuse(ctx, cm, hash, err);
        override_remove(dir);
    } else {
        snprintf(ov->check_dir, sizeof ov->check_dir, "%s", dir);
        snprintf(ov->check_hash, sizeof ov->check_hash, "%s", hash);
        ov->check_cm = json_incref(cm);
        log_msg(LOG_INFO, "policy set from the ConfigMap compiled: running its fixtures", "hash", hash,
                "configmap_resource_version", rv ? rv : "", NULL);
    }
    json_decref(plan);
    if (!ov->check) {
        ov->settled = 1;
        run_check_synced(ctx);
    }
}

/* Drops the check in flight (its child killed) and the version waiting for it. */
void policyset_cancel(struct run_ctx *ctx)
{
    struct policyset *ov = &ctx->ov;
    if (ov->check) {
        override_check_cancel(ov->check);
        ov->check = NULL;
        override_remove(ov->check_dir);
        ov->check_dir[0] = '\0';
    }
    json_decref(ov->check_cm);
    json_decref(ov->pending);
    ov->check_cm = ov->pending = NULL;
}

void policyset_on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)r;
    (void)old;
    struct run_ctx *ctx = ud;
    struct policyset *ov = &ctx->ov;
    static const char *const evnames[] = {"ADDED", "MODIFIED", "DELETED", "RESYNC"};
    const char *kv[] = {"ConfigMap", evnames[ev]};
    metrics_inc(ctx->m.watch_events_total, kv);
    if (ev == REFLECTOR_DELETED) {
        policyset_cancel(ctx);
        ov->seen_rv[0] = '\0';
        if (ov->active_dir[0])
            policyset_switch(ctx, "", ov->builtin_hash, "ConfigMap deleted: the built-in set");
        ov->settled = 1;
        run_check_synced(ctx);
        return;
    }
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (rv && strcmp(rv, ov->seen_rv) == 0)
        return;
    snprintf(ov->seen_rv, sizeof ov->seen_rv, "%s", rv ? rv : "");
    if (ov->check) {
        /* checked once the set in flight is decided: the latest version only */
        json_decref(ov->pending);
        ov->pending = json_incref(obj);
        return;
    }
    policyset_take(ctx, obj);
}

void policyset_on_synced(reflector *r, void *ud)
{
    struct run_ctx *ctx = ud;
    if (!ctx->ov.check && reflector_len(r) == 0)
        ctx->ov.settled = 1; /* no ConfigMap: the built-in set */
    run_check_synced(ctx);
}

