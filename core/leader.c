/* SPDX-License-Identifier: Apache-2.0 */
/* core/leader: leader election on a coordination.k8s.io/v1 Lease (see
 * leader.h; the algorithm follows client-go tools/leaderelection). */
#include "leader.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"

/* ---- pure logic ------------------------------------------------------------ */

static int copy_str(json_t *v, const char *field, char *dst, size_t n, char *err, size_t errlen)
{
    dst[0] = '\0';
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v)) {
        util_set_err(err, errlen, "lease: %s: want a string", field);
        return -1;
    }
    if (json_string_length(v) >= n) {
        util_set_err(err, errlen, "lease: %s: longer than %zu bytes", field, n - 1);
        return -1;
    }
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int copy_int(json_t *v, const char *field, long *dst, char *err, size_t errlen)
{
    *dst = 0;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) {
        util_set_err(err, errlen, "lease: %s: want an integer", field);
        return -1;
    }
    *dst = (long)json_integer_value(v);
    return 0;
}

int leader_lease_parse(json_t *obj, leader_lease *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(obj)) {
        util_set_err(err, errlen, "lease: not a JSON object");
        return -1;
    }
    json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    if ((md && !json_is_object(md)) || (spec && !json_is_null(spec) && !json_is_object(spec))) {
        util_set_err(err, errlen, "lease: metadata/spec: want objects");
        return -1;
    }
    if (copy_str(json_object_get(md, "resourceVersion"), "metadata.resourceVersion",
                 out->resource_version, sizeof out->resource_version, err, errlen) ||
        copy_str(json_object_get(spec, "holderIdentity"), "spec.holderIdentity", out->holder,
                 sizeof out->holder, err, errlen) ||
        copy_str(json_object_get(spec, "acquireTime"), "spec.acquireTime", out->acquire_time,
                 sizeof out->acquire_time, err, errlen) ||
        copy_str(json_object_get(spec, "renewTime"), "spec.renewTime", out->renew_time,
                 sizeof out->renew_time, err, errlen) ||
        copy_int(json_object_get(spec, "leaseDurationSeconds"), "spec.leaseDurationSeconds",
                 &out->duration_s, err, errlen) ||
        copy_int(json_object_get(spec, "leaseTransitions"), "spec.leaseTransitions",
                 &out->transitions, err, errlen))
        return -1;
    out->exists = 1;
    return 0;
}

int leader_lease_same(const leader_lease *a, const leader_lease *b)
{
    return a->exists == b->exists && a->duration_s == b->duration_s &&
           a->transitions == b->transitions && strcmp(a->holder, b->holder) == 0 &&
           strcmp(a->renew_time, b->renew_time) == 0 &&
           strcmp(a->acquire_time, b->acquire_time) == 0 &&
           strcmp(a->resource_version, b->resource_version) == 0;
}

leader_decision leader_decide(const leader_lease *lease, double observed_at, double now,
                              const char *identity)
{
    if (!lease || !lease->exists) return LEADER_CREATE;
    if (identity && *identity && strcmp(lease->holder, identity) == 0) return LEADER_RENEW;
    if (!lease->holder[0]) return LEADER_ACQUIRE;
    if (observed_at + (double)lease->duration_s <= now) return LEADER_ACQUIRE;
    return LEADER_WAIT;
}

int leader_format_microtime(double t, char *buf, size_t n)
{
    if (!buf || n < 28) return -1;
    return util_format_time(t, 6, buf, n);
}

json_t *leader_lease_update(json_t *observed, const char *ns, const char *name, leader_decision d,
                            const char *identity, long duration_s, double now_wall)
{
    char now[40];
    if (!ns || !name || !identity || leader_format_microtime(now_wall, now, sizeof now) != 0)
        return NULL;
    if (observed && !json_is_object(observed)) return NULL;
    json_t *obj = (observed && d != LEADER_CREATE) ? json_deep_copy(observed) : json_object();
    if (!obj) return NULL;
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(md)) {
        md = json_object();
        if (json_object_set_new(obj, "metadata", md)) goto fail;
    }
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        if (json_object_set_new(obj, "spec", spec)) goto fail;
    }
    json_t *h = json_object_get(spec, "holderIdentity");
    const char *prev = json_is_string(h) ? json_string_value(h) : "";
    json_t *tr = json_object_get(spec, "leaseTransitions");
    json_int_t transitions = json_is_integer(tr) ? json_integer_value(tr) : 0;
    int release = d == LEADER_RELEASE;
    if (d == LEADER_CREATE) transitions = 0;
    else if (d == LEADER_ACQUIRE && strcmp(prev, identity) != 0) transitions++;
    int bad = 0;
    json_object_del(md, "managedFields");
    bad |= json_object_set_new(obj, "apiVersion", json_string("coordination.k8s.io/v1"));
    bad |= json_object_set_new(obj, "kind", json_string("Lease"));
    bad |= json_object_set_new(md, "name", json_string(name));
    bad |= json_object_set_new(md, "namespace", json_string(ns));
    bad |= json_object_set_new(spec, "holderIdentity", json_string(release ? "" : identity));
    bad |= json_object_set_new(spec, "leaseDurationSeconds", json_integer(release ? 1 : duration_s));
    bad |= json_object_set_new(spec, "renewTime", json_string(now));
    if (d != LEADER_RENEW || !json_is_string(json_object_get(spec, "acquireTime")))
        bad |= json_object_set_new(spec, "acquireTime", json_string(now));
    bad |= json_object_set_new(spec, "leaseTransitions", json_integer(transitions));
    if (bad) goto fail;
    return obj;
fail:
    json_decref(obj);
    return NULL;
}

/* ---- identity and namespace ------------------------------------------------ */

int leader_default_identity(char *buf, size_t n)
{
    char host[256] = "";
    const char *pod = getenv("POD_NAME");
    if (pod && *pod) snprintf(host, sizeof host, "%s", pod);
    else if (gethostname(host, sizeof host) != 0 || !host[0]) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        double j = loop_jitter();
        for (size_t i = 0; i < sizeof rnd; i++) {
            j *= 256;
            rnd[i] = (unsigned char)j;
            j -= floor(j);
        }
    }
    int w = snprintf(buf, n, "%s_%02x%02x%02x%02x%02x%02x%02x%02x", host, rnd[0], rnd[1], rnd[2],
                     rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    return (w < 0 || (size_t)w >= n || w > 253) ? -1 : 0;
}

int leader_default_namespace(const char *fallback, char *buf, size_t n)
{
    const char *env = getenv("POD_NAMESPACE");
    char file[256] = "";
    if (!env || !*env) {
        FILE *f = fopen(KUBE_SA_DIR "/namespace", "r");
        if (f) {
            if (!fgets(file, sizeof file, f)) file[0] = '\0';
            fclose(f);
            file[strcspn(file, " \t\r\n")] = '\0';
        }
        env = file[0] ? file : (fallback && *fallback ? fallback : "default");
    }
    int w = snprintf(buf, n, "%s", env);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

/* ---- the elector ----------------------------------------------------------------- */

typedef enum req_kind { REQ_NONE, REQ_GET, REQ_CREATE, REQ_UPDATE, REQ_RELEASE, REQ_RELEASE_GET } req_kind;

struct leader_elector {
    struct ev_loop *loop;
    kube_client *kc;
    leader_opts o;
    char *ns, *name, *identity;
    leader_api api;
    void *api_ud;
    int leading, stopped;
    /* what we saw last, and when (our clock) it changed */
    leader_lease seen;
    json_t *seen_obj;
    double seen_at;
    char reported_holder[254];     /* last on_new_leader */
    double last_renew;             /* our clock, last successful write */
    int need_get;                  /* leader fast path off until a GET */
    double next_attempt;
    /* the request in flight */
    req_kind req;
    leader_decision req_decision;
    double req_started;
    kube_call *call;
    /* release */
    int releasing, release_pending_done, release_ok;
    int release_refetched; /* the release met a 409 once and read the Lease again */
    void (*release_done)(int ok, void *ud);
    void *release_ud;
    ev_timer timer;
};

static double now_of(leader_elector *e)
{
    if (e->o.now) return e->o.now(e->o.now_ud);
    return e->loop ? ev_now(e->loop) : 0;
}

static double jitter_of(leader_elector *e)
{
    return e->o.jitter ? e->o.jitter(e->o.now_ud) : loop_jitter();
}

static void lease_key(leader_elector *e, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", e->ns, e->name);
}

/* default API: the kube client */
static void kube_answer(const kube_result *res, void *ud)
{
    leader_elector *e = ud;
    e->call = NULL;
    leader_answer(e, res->status, res->raw && *res->raw ? res->raw : NULL);
}

static int kube_api_request(void *api_ud, leader_elector *e, const char *method, const char *path,
                            const char *body)
{
    (void)api_ud;
    char err[256];
    kube_req r = { .method = method, .path = path, .body = body,
                   .timeout_s = e->o.request_timeout_s };
    e->call = kube_request(e->kc, &r, kube_answer, e, err, sizeof err);
    if (!e->call) {
        char key[600];
        lease_key(e, key, sizeof key);
        log_warn("leader election request failed", "lease", key, "error", err, NULL);
        return -1;
    }
    return 0;
}

static void kube_api_cancel(void *api_ud, leader_elector *e)
{
    (void)api_ud;
    if (e->call) kube_cancel(e->call);
    e->call = NULL;
}

static const leader_api kube_api = { kube_api_request, kube_api_cancel };

static void arm(leader_elector *e, double delay)
{
    if (!e->loop) return;
    ev_timer_stop(e->loop, &e->timer);
    if (delay < 0) return;
    ev_timer_set(&e->timer, delay, 0.);
    ev_timer_start(e->loop, &e->timer);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    leader_elector *e = w->data;
    arm(e, leader_step(e));
}

leader_elector *leader_start(struct ev_loop *loop, kube_client *kc, const leader_opts *opts,
                             char *err, size_t errlen)
{
    if (!opts || !opts->namespace || !*opts->namespace) {
        util_set_err(err, errlen, "leader_start: namespace is required");
        return NULL;
    }
    if (!opts->identity || !*opts->identity || strlen(opts->identity) > 253) {
        util_set_err(err, errlen, "leader_start: identity is required (1 to 253 bytes)");
        return NULL;
    }
    if (!opts->api && !kc) {
        util_set_err(err, errlen, "leader_start: a kube client or an api is required");
        return NULL;
    }
    leader_elector *e = calloc(1, sizeof *e);
    if (!e) {
        util_set_err(err, errlen, "leader_start: out of memory");
        return NULL;
    }
    e->o = *opts;
    if (e->o.lease_duration_s <= 0) e->o.lease_duration_s = LEADER_LEASE_DURATION_S;
    if (e->o.renew_deadline_s <= 0) e->o.renew_deadline_s = LEADER_RENEW_DEADLINE_S;
    if (e->o.retry_period_s <= 0) e->o.retry_period_s = LEADER_RETRY_PERIOD_S;
    if (e->o.request_timeout_s <= 0) e->o.request_timeout_s = e->o.renew_deadline_s / 2;
    /* client-go NewLeaderElector: leaseDuration > renewDeadline > JitterFactor * retryPeriod */
    if (!(e->o.lease_duration_s > e->o.renew_deadline_s) ||
        !(e->o.renew_deadline_s > LEADER_JITTER_FACTOR * e->o.retry_period_s)) {
        util_set_err(err, errlen,
                "leader_start: want lease duration (%gs) > renew deadline (%gs) > 1.2 x retry "
                "period (%gs)",
                e->o.lease_duration_s, e->o.renew_deadline_s, e->o.retry_period_s);
        free(e);
        return NULL;
    }
    e->ns = strdup(opts->namespace);
    e->name = strdup(opts->name && *opts->name ? opts->name : LEADER_LEASE_NAME);
    e->identity = strdup(opts->identity);
    if (!e->ns || !e->name || !e->identity) {
        util_set_err(err, errlen, "leader_start: out of memory");
        leader_free(e);
        return NULL;
    }
    e->o.namespace = e->ns;
    e->o.name = e->name;
    e->o.identity = e->identity;
    e->loop = loop;
    e->kc = kc;
    e->api = opts->api ? *opts->api : kube_api;
    e->api_ud = opts->api ? opts->api_ud : e;
    e->next_attempt = now_of(e);
    if (loop) {
        ev_init(&e->timer, on_timer);
        e->timer.data = e;
        arm(e, 0);
    }
    return e;
}

static int send_request(leader_elector *e, req_kind kind, const char *method, json_t *body)
{
    char path[512];
    const char *name = kind == REQ_CREATE ? NULL : e->name;
    if (kube_path(path, sizeof path, &kube_kind_lease, e->ns, name, NULL) != 0) return -1;
    char *text = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        if (!text) return -1;
    }
    e->req = kind;
    e->req_started = now_of(e);
    int rc = e->api.request(e->api_ud, e, method, path, text);
    free(text);
    if (rc != 0) e->req = REQ_NONE;
    return rc;
}

static void stop_leading(leader_elector *e, const char *why)
{
    char key[600];
    lease_key(e, key, sizeof key);
    int was = e->leading;
    e->leading = 0;
    e->stopped = 1;
    if (e->req != REQ_NONE) {
        e->api.cancel(e->api_ud, e);
        e->req = REQ_NONE;
    }
    log_msg(was ? LOG_WARN : LOG_INFO, "leader election stopped", "lease", key, "identity",
            e->identity, "reason", why, NULL);
    if (was && e->o.on_stopped_leading) e->o.on_stopped_leading(e->o.ud);
}

/* Ends an attempt (request answered, failed or timed out). */
static void attempt_done(leader_elector *e, int ok)
{
    double now = now_of(e);
    e->req = REQ_NONE;
    if (!ok) e->need_get = 1;
    if (e->leading) e->next_attempt = now + e->o.retry_period_s;
    else e->next_attempt = now + e->o.retry_period_s * (1 + LEADER_JITTER_FACTOR * jitter_of(e));
}

/* Records an observed Lease object (from a GET or our own write). */
static void observe(leader_elector *e, json_t *obj, const leader_lease *l)
{
    if (!leader_lease_same(&e->seen, l)) {
        e->seen = *l;
        e->seen_at = now_of(e);
    }
    json_decref(e->seen_obj);
    e->seen_obj = json_incref(obj);
    if (l->holder[0] && strcmp(l->holder, e->reported_holder) != 0) {
        snprintf(e->reported_holder, sizeof e->reported_holder, "%s", l->holder);
        if (e->o.on_new_leader) e->o.on_new_leader(l->holder, e->o.ud);
    }
}

static void start_attempt(leader_elector *e)
{
    if (e->leading && !e->need_get && e->seen_obj) {
        /* renew from our last write (client-go keeps the lease it wrote) */
        json_t *body = leader_lease_update(e->seen_obj, e->ns, e->name, LEADER_RENEW, e->identity,
                                           (long)e->o.lease_duration_s, now_of(e));
        e->req_decision = LEADER_RENEW;
        int rc = body ? send_request(e, REQ_UPDATE, "PUT", body) : -1;
        json_decref(body);
        if (rc != 0) attempt_done(e, 0);
        return;
    }
    if (send_request(e, REQ_GET, "GET", NULL) != 0) attempt_done(e, 0);
}

static void handle_get(leader_elector *e, long status, json_t *body)
{
    char key[600];
    lease_key(e, key, sizeof key);
    leader_lease l = {0};
    if (status == 404) {
        l.exists = 0;
        if (!leader_lease_same(&e->seen, &l)) {
            e->seen = l;
            e->seen_at = now_of(e);
        }
        json_decref(e->seen_obj);
        e->seen_obj = NULL;
    } else if (status == 200) {
        char err[256];
        if (leader_lease_parse(body, &l, err, sizeof err) != 0) {
            log_warn("leader election: bad lease", "lease", key, "error", err, NULL);
            attempt_done(e, 0);
            return;
        }
        observe(e, body, &l);
    } else {
        char code[16];
        snprintf(code, sizeof code, "%ld", status);
        log_warn("leader election: get failed", "lease", key, "http_code", code, NULL);
        attempt_done(e, 0);
        return;
    }
    double now = now_of(e);
    leader_decision d = leader_decide(&e->seen, e->seen_at, now, e->identity);
    if (d == LEADER_WAIT) {
        if (e->leading) {   /* another holder while we lead: it took over */
            stop_leading(e, "lease held by another");
            return;
        }
        attempt_done(e, 1);
        return;
    }
    json_t *req = leader_lease_update(d == LEADER_CREATE ? NULL : e->seen_obj, e->ns, e->name, d,
                                      e->identity, (long)e->o.lease_duration_s, now);
    e->req_decision = d;
    int rc = req ? (d == LEADER_CREATE ? send_request(e, REQ_CREATE, "POST", req)
                                       : send_request(e, REQ_UPDATE, "PUT", req))
                 : -1;
    json_decref(req);
    if (rc != 0) attempt_done(e, 0);
}

static void handle_write(leader_elector *e, long status, json_t *body)
{
    char key[600];
    lease_key(e, key, sizeof key);
    leader_lease l;
    char err[256];
    if ((status == 200 || status == 201) && leader_lease_parse(body, &l, err, sizeof err) == 0) {
        observe(e, body, &l);
        e->last_renew = now_of(e);
        e->need_get = 0;
        int was = e->leading;
        e->leading = 1;
        attempt_done(e, 1);
        if (!was) {
            log_info("leader election: acquired", "lease", key, "identity", e->identity, NULL);
            if (e->o.on_started_leading) e->o.on_started_leading(e->o.ud);
        }
        return;
    }
    char code[16];
    snprintf(code, sizeof code, "%ld", status);
    log_msg(status == 409 ? LOG_INFO : LOG_WARN,
            e->req_decision == LEADER_RENEW ? "leader election: renew failed"
                                            : "leader election: acquire failed",
            "lease", key, "http_code", code, NULL);
    attempt_done(e, 0);
}

static void finish_release(leader_elector *e, int ok)
{
    char key[600];
    lease_key(e, key, sizeof key);
    e->req = REQ_NONE;
    e->releasing = 0;
    int was = e->leading;
    e->leading = 0;
    e->stopped = 1;
    log_msg(ok ? LOG_INFO : LOG_WARN, ok ? "leader election: released" : "leader election: release failed",
            "lease", key, "identity", e->identity, NULL);
    if (was && e->o.on_stopped_leading) e->o.on_stopped_leading(e->o.ud);
    void (*done)(int, void *) = e->release_done;
    e->release_done = NULL;
    if (done) done(ok, e->release_ud);
}

/* The answer to the release's second read: still ours -> the release PUT again on that version;
 * someone else's -> nothing left to release (ok); else the release failed. */
static void release_again(leader_elector *e, long status, json_t *obj)
{
    leader_lease l = {0};
    char err[256];
    if (status != 200 || leader_lease_parse(obj, &l, err, sizeof err) != 0) {
        finish_release(e, 0);
        return;
    }
    if (strcmp(l.holder, e->identity) != 0) {
        finish_release(e, 1);
        return;
    }
    json_decref(e->seen_obj);
    e->seen_obj = json_incref(obj);
    json_t *body = leader_lease_update(e->seen_obj, e->ns, e->name, LEADER_RELEASE, e->identity, 1, now_of(e));
    int rc = body ? send_request(e, REQ_RELEASE, "PUT", body) : -1;
    json_decref(body);
    if (rc != 0)
        finish_release(e, 0);
}

void leader_answer(leader_elector *e, long status, const char *body)
{
    if (!e || e->req == REQ_NONE) return;
    json_t *obj = body ? json_loads(body, 0, NULL) : NULL;
    req_kind k = e->req;
    e->req = REQ_NONE;
    switch (k) {
    case REQ_GET: handle_get(e, status, obj); break;
    case REQ_CREATE:
    case REQ_UPDATE: handle_write(e, status, obj); break;
    case REQ_RELEASE:
        /* a 409: a renew cancelled client-side at the stop still reached the server and moved the
         * resourceVersion on; read the Lease once more and release that one */
        if (status == 409 && !e->release_refetched) {
            e->release_refetched = 1;
            if (send_request(e, REQ_RELEASE_GET, "GET", NULL) == 0)
                break;
        }
        finish_release(e, status == 200);
        break;
    case REQ_RELEASE_GET: release_again(e, status, obj); break;
    case REQ_NONE: break;
    }
    json_decref(obj);
    arm(e, 0);
}

double leader_step(leader_elector *e)
{
    if (!e) return -1;
    if (e->release_pending_done) {
        e->release_pending_done = 0;
        void (*done)(int, void *) = e->release_done;
        e->release_done = NULL;
        if (done) done(e->release_ok, e->release_ud);
    }
    if (e->stopped) return -1;
    double now = now_of(e);
    if (e->releasing) {
        if ((e->req == REQ_RELEASE || e->req == REQ_RELEASE_GET) && now >= e->req_started + e->o.request_timeout_s) {
            e->api.cancel(e->api_ud, e);
            finish_release(e, 0);
            return -1;
        }
        return e->req_started + e->o.request_timeout_s - now;
    }
    if (e->leading && now - e->last_renew >= e->o.renew_deadline_s) {
        stop_leading(e, "renew deadline passed");
        return -1;
    }
    if (e->req != REQ_NONE && now >= e->req_started + e->o.request_timeout_s) {
        e->api.cancel(e->api_ud, e);
        attempt_done(e, 0);
    }
    if (e->req == REQ_NONE && now >= e->next_attempt) start_attempt(e);
    if (e->stopped) return -1;
    double due = INFINITY;
    if (e->req == REQ_NONE) due = e->next_attempt;
    else due = e->req_started + e->o.request_timeout_s;
    if (e->leading && e->last_renew + e->o.renew_deadline_s < due)
        due = e->last_renew + e->o.renew_deadline_s;
    double d = due - now;
    return d < 0 ? 0 : d;
}

int leader_is_leader(const leader_elector *e) { return e ? e->leading : 0; }

int leader_may_write(leader_elector *e)
{
    if (!e || !e->leading || e->releasing)
        return 0;
    /* the loop's cached time lags behind after a long callback: the fence reads the real clock */
    double now = e->o.now ? e->o.now(e->o.now_ud) : e->loop ? ev_time() : 0;
    return now - e->last_renew < e->o.renew_deadline_s;
}
const char *leader_holder(const leader_elector *e) { return e ? e->seen.holder : ""; }
const char *leader_identity(const leader_elector *e) { return e ? e->identity : ""; }
int leader_stopped(const leader_elector *e) { return e ? e->stopped : 1; }

int leader_release(leader_elector *e, void (*done)(int ok, void *ud), void *ud)
{
    if (!e || e->releasing || e->release_done || e->release_pending_done) return -1;
    e->release_done = done;
    e->release_ud = ud;
    if (e->req != REQ_NONE) {
        e->api.cancel(e->api_ud, e);
        e->req = REQ_NONE;
    }
    if (!e->leading || !e->seen_obj) {
        /* nothing to release: report from the next step */
        int was = e->leading;
        e->leading = 0;
        e->stopped = 1;
        if (was && e->o.on_stopped_leading) e->o.on_stopped_leading(e->o.ud);
        e->release_ok = 1;
        e->release_pending_done = 1;
        arm(e, 0);
        return 0;
    }
    e->releasing = 1;
    json_t *body = leader_lease_update(e->seen_obj, e->ns, e->name, LEADER_RELEASE, e->identity,
                                       1, now_of(e));
    int rc = body ? send_request(e, REQ_RELEASE, "PUT", body) : -1;
    json_decref(body);
    if (rc != 0) {
        e->releasing = 0;
        e->leading = 0;
        e->stopped = 1;
        if (e->o.on_stopped_leading) e->o.on_stopped_leading(e->o.ud);
        e->release_ok = 0;
        e->release_pending_done = 1;
    }
    arm(e, rc != 0 ? 0 : e->o.request_timeout_s);
    return 0;
}

void leader_free(leader_elector *e)
{
    if (!e) return;
    if (e->req != REQ_NONE) e->api.cancel(e->api_ud, e);
    if (e->loop) ev_timer_stop(e->loop, &e->timer);
    json_decref(e->seen_obj);
    free(e->ns);
    free(e->name);
    free(e->identity);
    free(e);
}
