/* SPDX-License-Identifier: Apache-2.0 */
/* core/flinkcall: Flink REST calls and their answers (see flinkcall.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clustermetrics.h"
#include "flinkcall.h"
#include "http.h"
#include "kube.h"
#include "metrics.h"
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
