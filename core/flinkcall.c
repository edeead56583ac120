/* SPDX-License-Identifier: Apache-2.0 */
/* core/flinkcall: Flink REST calls and their answers (see flinkcall.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clustermetrics.h"
#include "clusterstate.h"
#include "flinkcall.h"
#include "http.h"
#include "kube.h"
#include "metrics.h"
#include "runctx.h"
#include "snapshot.h"
#include "util.h"

int flinkcall_record(json_t *st, const char *id, json_t *intent, long status, const char *body,
                     const char *error, double now)
{
    if (!json_is_object(st))
        return -1;
    if (!id || !*id)
        return 0;
    json_t *answers = json_object_get(st, "answers");
    if (!json_is_object(answers)) {
        answers = json_object();
        json_object_set_new(st, "answers", answers);
    }
    /* answers nobody asked again for FLINKCALL_ANSWER_TTL_S are forgotten */
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(answers, tmp, k, v)
    {
        if (now - json_number_value(json_object_get(v, "time")) > FLINKCALL_ANSWER_TTL_S)
            json_object_del(answers, k);
    }
    size_t n = body ? strlen(body) : 0;
    json_t *text = n > FLINKCALL_ANSWER_MAX ? NULL : json_stringn(body ? body : "", n);
    const char *why = error ? error : "";
    if (!text && !*why)
        /* the text the policies have always seen (the constant's name before core/flinkcall) */
        why = n > FLINKCALL_ANSWER_MAX ? "answer larger than RUN_FLINK_ANSWER_MAX bytes" : "answer is not UTF-8";
    json_t *a = json_pack("{s:O?, s:I, s:o, s:s, s:I}", "intent", json_is_object(intent) ? intent : NULL, "status",
                          (json_int_t)(text ? status : 0), "body", text ? text : json_string(""), "error", why,
                          "time", (json_int_t)now);
    if (!a)
        return -1;
    json_object_set_new(answers, id, a);
    return 0;
}

/* ---- Flink REST calls ---------------------------------------------------------------------- */

int flinkcall_access_parse(const char *s, flinkcall_access *out)
{
    static const char *const names[] = {[FLINKCALL_AUTO] = "auto", [FLINKCALL_SERVICE] = "service",
                                        [FLINKCALL_PROXY] = "proxy"};
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (flinkcall_access)i;
            return 0;
        }
    return -1;
}

flinkcall_access flinkcall_access_resolve(flinkcall_access a, const char *kube_context)
{
    if (a != FLINKCALL_AUTO)
        return a;
    return kube_context && strcmp(kube_context, "in-cluster") == 0 ? FLINKCALL_SERVICE : FLINKCALL_PROXY;
}

int flinkcall_location(char *buf, size_t n, flinkcall_access access, const char *base_url, json_t *target,
                       const char *path)
{
    if (!buf || !n)
        return -1;
    buf[0] = '\0';
    if (!path || path[0] != '/')
        return -1;
    int w = -1;
    if (base_url) {
        size_t bl = strlen(base_url);
        while (bl > 0 && base_url[bl - 1] == '/')
            bl--;
        w = snprintf(buf, n, "%.*s%s", (int)bl, base_url, path);
    } else {
        const char *scheme = json_string_value(json_object_get(target, "scheme"));
        const char *ns = json_string_value(json_object_get(target, "namespace"));
        const char *svc = json_string_value(json_object_get(target, "service"));
        json_t *jp = json_object_get(target, "port");
        json_int_t port = json_is_integer(jp) ? json_integer_value(jp)
                          : json_is_real(jp) && json_real_value(jp) == (double)(json_int_t)json_real_value(jp)
                              ? (json_int_t)json_real_value(jp) : 0;
        if (!scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) || !ns || !*ns || !svc ||
            !*svc || port < 1 || port > 65535)
            return -1;
        if (access == FLINKCALL_SERVICE) {
            w = snprintf(buf, n, "%s://%s.%s.svc:%d%s", scheme, svc, ns, (int)port, path);
        } else if (access == FLINKCALL_PROXY) {
            char ps[8];
            snprintf(ps, sizeof ps, "%d", (int)port);
            return kube_service_proxy_path(buf, n, ns, scheme, svc, ps, path);
        }
    }
    if (w < 0 || (size_t)w >= n) {
        buf[0] = '\0';
        return -1;
    }
    return 0;
}

struct flinkcall {
    kube_call *kcall;
    http_request *hreq;
    flinkcall_done_fn done;
    void *ud;
    const metrics_controller *metrics; /* flink_requests_total, or NULL */
    char method[16];
    char route[256];                    /* the path's route template */
    double started;                     /* monotonic seconds */
};

static double flinkcall_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void flinkcall_count(const struct flinkcall *c, long status)
{
    if (c->metrics)
        clustermetrics_flink_request(c->metrics, c->method, c->route, status, flinkcall_monotonic() - c->started);
}

static void flinkcall_http_done(http_request *req, const http_response *resp, void *ud)
{
    (void)req;
    struct flinkcall *c = ud;
    c->hreq = NULL;
    flinkcall_count(c, resp->status);
    c->done(resp->status, resp->body ? resp->body : "", resp->error ? resp->error : "", c->ud);
    free(c);
}

/* An answer of the API server itself (a metav1.Status: no endpoints, no such Service, no RBAC,
 * the dial to the pod failed) means the JobManager was not reached: reported as status 0 with
 * the reason, like a connection error. Flink's own errors are {"errors": [...]}. */
static void flinkcall_kube_done(const kube_result *res, void *ud)
{
    struct flinkcall *c = ud;
    c->kcall = NULL;
    const char *kind = json_string_value(json_object_get(res->body, "kind"));
    int ok = res->status >= 200 && res->status < 300;
    flinkcall_count(c, res->status == 0 || (!ok && kind && strcmp(kind, "Status") == 0) ? 0 : res->status);
    if (res->status == 0) {
        c->done(0, "", *res->error ? res->error : "no answer from the API server", c->ud);
    } else if (!ok && kind && strcmp(kind, "Status") == 0) {
        char text[1024];
        snprintf(text, sizeof text, "JobManager unreachable through the API server: HTTP %ld: %s", res->status,
                 *res->message ? res->message : *res->reason ? res->reason : "no message");
        c->done(0, "", text, c->ud);
    } else {
        c->done(res->status, res->raw, "", c->ud);
    }
    free(c);
}

flinkcall *flinkcall_start(const flinkcall_env *env, json_t *action, const http_part *part,
                                flinkcall_done_fn done, void *ud, char *err, size_t errlen)
{
    const char *method = json_string_value(json_object_get(action, "method"));
    const char *path = json_string_value(json_object_get(action, "path"));
    char loc[2048];
    if (!env || !done || !method || !path) {
        util_set_err(err, errlen, "flink action needs method and path");
        return NULL;
    }
    if (flinkcall_location(loc, sizeof loc, env->access, env->base_url, json_object_get(action, "target"), path)) {
        util_set_err(err, errlen, "flink action needs target {scheme, namespace, service, port} and a path "
                                  "starting with '/' (or the location is too long)");
        return NULL;
    }
    int proxy = !env->base_url && env->access == FLINKCALL_PROXY;
    if ((proxy && !env->kc) || (!proxy && !env->hc)) {
        util_set_err(err, errlen, "flink call: no %s client", proxy ? "kube" : "http");
        return NULL;
    }
    struct flinkcall *c = calloc(1, sizeof *c);
    json_t *body = part ? NULL : json_object_get(action, "body");
    json_t *tmo = json_object_get(action, "timeout_ms");
    long timeout_ms = json_is_integer(tmo) && json_integer_value(tmo) > 0 ? (long)json_integer_value(tmo)
                                                                          : FLINKCALL_TIMEOUT_MS;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (!c || (body && !text)) {
        free(c);
        free(text);
        util_set_err(err, errlen, "flink call: out of memory");
        return NULL;
    }
    c->done = done;
    c->ud = ud;
    c->metrics = env->metrics;
    snprintf(c->method, sizeof c->method, "%s", method);
    if (clustermetrics_route(path, c->route, sizeof c->route))
        snprintf(c->route, sizeof c->route, "(too long)");
    c->started = flinkcall_monotonic();
    if (proxy) {
        kube_req r = {.method = method,
                      .path = loc,
                      .body = text,
                      .body_len = text ? strlen(text) : 0,
                      .part = part,
                      .timeout_s = timeout_ms / 1000.0};
        c->kcall = kube_request(env->kc, &r, flinkcall_kube_done, c, err, errlen);
    } else {
        static const char *const hdrs[] = {"Content-Type: application/json", "Accept: application/json", NULL};
        http_opts ho = {.method = method,
                        .url = loc,
                        .headers = part ? hdrs + 1 : hdrs,
                        .body = text,
                        .body_len = text ? strlen(text) : 0,
                        .part = part,
                        .timeout_ms = timeout_ms,
                        .max_body = (size_t)16 << 20,
                        .on_done = flinkcall_http_done,
                        .ud = c};
        c->hreq = http_request_start(env->hc, &ho, err, errlen);
    }
    free(text);
    if (!c->kcall && !c->hreq) {
        free(c);
        return NULL;
    }
    return c;
}

void flinkcall_cancel(flinkcall *c)
{
    if (!c)
        return;
    if (c->kcall)
        kube_cancel(c->kcall);
    if (c->hreq)
        http_request_cancel(c->hreq);
    free(c);
}

/* ---- the calls in flight per key (the controller's `flink` actions) ------------------------- */

static void flinkcall_inflight_free(struct run_fcall *c);

/* A Flink REST call's record: "method" and "path" from the call's signature "<METHOD> <path>",
 * "job" when the path names one (/jobs/<32 hex digits>...), "http_code" when `code` >= 0 and
 * "error" when `error` is not NULL. */
static void flinkcall_log(log_level level, const char *key, const char *msg, const char *sig, long code,
                          const char *error)
{
    if (!log_enabled(level))
        return;
    char method[16], job[33] = "";
    const char *sp = strchr(sig, ' ');
    const char *path = sp ? sp + 1 : "?";
    snprintf(method, sizeof method, "%.*s", sp ? (int)(sp - sig) : 1, sp ? sig : "?");
    if (strncmp(path, "/jobs/", 6) == 0 && strspn(path + 6, "0123456789abcdef") == 32 &&
        (path[38] == '\0' || path[38] == '/' || path[38] == '?'))
        snprintf(job, sizeof job, "%.32s", path + 6);
    const char *kv[8] = {NULL};
    size_t n = 0;
    if (*job) {
        kv[n++] = "job";
        kv[n++] = job;
    }
    if (code >= 0) {
        kv[n++] = "http_code";
        kv[n++] = RUN_LD(code);
    }
    if (error) {
        kv[n++] = "error";
        kv[n++] = error;
    }
    run_log(level, key, msg, "method", method, "path", path, kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], NULL);
}

/* Cancels the Flink calls in flight of `key` (NULL: all); their answers are never used. */
void flinkcall_cancel_key(struct run_ctx *ctx, const char *key)
{
    for (struct run_fcall **p = &ctx->fcalls; *p;) {
        struct run_fcall *c = *p;
        if (!key || strcmp(c->key, key) == 0) {
            *p = c->next;
            flinkcall_inflight_free(c);
        } else {
            p = &c->next;
        }
    }
}

static void flinkcall_inflight_free(struct run_fcall *c)
{
    if (c->dl)
        http_request_cancel(c->dl);
    flinkcall_cancel(c->call);
    json_decref(c->intent);
    json_decref(c->action);
    if (c->jar_fd >= 0)
        close(c->jar_fd);
    free(c->key);
    free(c);
}

static void flinkcall_answered(long status, const char *body, const char *error, void *ud)
{
    struct run_fcall *c = ud;
    struct run_ctx *ctx = c->ctx;
    c->call = NULL; /* it frees itself after this callback */
    for (struct run_fcall **p = &ctx->fcalls; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    flinkcall_record(snapshot_flink_state(ctx, c->key), c->id, c->intent, status, body, error, (double)time(NULL));
    if (status < 200 || status >= 300)
        flinkcall_log(LOG_WARN, c->key, "flink request failed", c->sig, status,
                      *error ? error : *body ? body : "(an empty answer)");
    else
        flinkcall_log(LOG_DEBUG, c->key, "flink request", c->sig, status, NULL);
    /* the next pass uses this answer at once (and does not ask the same again) */
    cluster_state *cs = clusterstate_get_or_add(ctx->clusters, c->key);
    if (cs && !cs->fresh)
        cs->fresh = json_object();
    json_t *f = cs ? cs->fresh : NULL;
    json_object_set_new(f, c->sig, json_true());
    if (!ctx->stopping)
        workqueue_add(ctx->q, c->key);
    flinkcall_inflight_free(c);
}

/* The jar of an upload action arrived (or not): send it as the multipart part of the action's
 * request, or record the download's failure as the answer (status 0). */
static void flinkcall_downloaded(http_request *req, const http_response *resp, void *ud)
{
    (void)req;
    struct run_fcall *c = ud;
    c->dl = NULL;
    char err[600] = "";
    if (resp->status >= 200 && resp->status < 300 && !*resp->error) {
        /* resp->body_len: the bytes written to jar_fd */
        c->part = (http_part){.name = "jarfile", .filename = c->filename, .type = "application/x-java-archive",
                              .from_fd = 1, .fd = c->jar_fd, .len = resp->body_len};
        char e2[512] = "";
        c->call = flinkcall_start(&c->ctx->flink_env, c->action, &c->part, flinkcall_answered, c, e2, sizeof e2);
        if (c->call)
            return;
        snprintf(err, sizeof err, "%s", e2);
    } else {
        snprintf(err, sizeof err, "download %s: %s", json_string_value(json_object_get(json_object_get(c->action,
                 "upload"), "url")) ?: "?", *resp->error ? resp->error : "not a 2xx answer");
        if (!*resp->error)
            snprintf(err, sizeof err, "download %s: HTTP %ld",
                     json_string_value(json_object_get(json_object_get(c->action, "upload"), "url")) ?: "?",
                     resp->status);
    }
    flinkcall_answered(0, "", err, c);
}

/* Starts the Flink call of action `a` on the loop, detached from the item (a hung JobManager
 * holds no worker). Skipped when the same call of this key is in flight, or when its answer is
 * what this pass was run for. */
void flinkcall_for_action(struct run_item *it, json_t *a)
{
    struct run_ctx *ctx = it->ctx;
    const char *method = json_string_value(json_object_get(a, "method"));
    const char *path = json_string_value(json_object_get(a, "path"));
    const char *id = json_string_value(json_object_get(a, "id"));
    struct run_fcall *c = calloc(1, sizeof *c);
    char err[512] = "out of memory";
    if (!c || !(c->key = strdup(it->key))) {
        free(c);
        run_log(LOG_WARN, it->key, "flink request not started", "method", method ?: "?", "path", path ?: "?", "error", err, NULL);
        return;
    }
    c->ctx = ctx;
    c->jar_fd = -1;
    snprintf(c->sig, sizeof c->sig, "%s %s", method ?: "?", path ?: "?");
    snprintf(c->id, sizeof c->id, "%s", id ? id : "");
    c->intent = json_incref(json_object_get(a, "intent"));
    int busy = json_object_get(it->fresh, c->sig) != NULL;
    for (struct run_fcall *o = ctx->fcalls; o && !busy; o = o->next)
        busy = strcmp(o->key, c->key) == 0 && strcmp(o->sig, c->sig) == 0;
    json_t *up = json_object_get(a, "upload");
    if (!busy && json_is_object(up)) {
        /* the jar first: GET upload.url with its size cap and timeout (libcurl, TLS verified)
         * into a temporary file (the cap is on the file; memory stays libcurl's buffers) */
        const char *url = json_string_value(json_object_get(up, "url"));
        json_t *mb = json_object_get(up, "max_bytes"), *tm = json_object_get(up, "timeout_ms");
        const char *base = url ? strrchr(url, '/') : NULL;
        snprintf(c->filename, sizeof c->filename, "%s", base && base[1] ? base + 1 : "job.jar");
        c->filename[strcspn(c->filename, "?#")] = '\0';
        c->action = json_incref(a);
        http_opts ho = {.method = "GET",
                        .url = url,
                        .timeout_ms = json_is_integer(tm) ? (long)json_integer_value(tm) : 60000,
                        .max_body = json_is_integer(mb) && json_integer_value(mb) > 0 ? (size_t)json_integer_value(mb)
                                                                                       : (size_t)64 << 20,
                        .save = 1,
                        .on_done = flinkcall_downloaded,
                        .ud = c};
        char e2[400] = "";
        if (ctx->flink_env.hc && url && (c->jar_fd = util_tmpfile(e2, sizeof e2)) < 0)
            snprintf(err, sizeof err, "download %s: %s", url, e2);
        ho.save_fd = c->jar_fd;
        c->dl = c->jar_fd >= 0 ? http_request_start(ctx->flink_env.hc, &ho, err, sizeof err) : NULL;
        if (c->dl) {
            c->next = ctx->fcalls;
            ctx->fcalls = c;
            return;
        }
        /* else err is util_tmpfile's or http_request_start's */
        if (!url || !ctx->flink_env.hc)
            snprintf(err, sizeof err, "upload needs upload.url and an HTTP client");
    } else if (!busy) {
        c->call = flinkcall_start(&ctx->flink_env, a, NULL, flinkcall_answered, c, err, sizeof err);
    }
    if (c->call) {
        c->next = ctx->fcalls;
        ctx->fcalls = c;
        return;
    }
    if (!busy) {
        /* a Flink call that cannot start is an unreachable JobManager, not a failed key */
        flinkcall_record(snapshot_flink_state(ctx, it->key), c->id, c->intent, 0, NULL, err, (double)time(NULL));
        flinkcall_log(LOG_WARN, it->key, "flink request not started", c->sig, -1, err);
    }
    flinkcall_inflight_free(c);
}
