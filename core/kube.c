/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube: the API client: credentials (token file, exec plugin), TLS and proxy, rate limit,
 * requests with retries, paginated lists and watch streams. See kube.h. */
#include "kube.h"
#include "util.h"
#include "http.h"
#include "log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ---- rate limit ------------------------------------------------------ */

void kube_limiter_init(kube_limiter *l, double qps, int burst, double now)
{
    l->qps = qps;
    l->burst = burst >= 1 ? burst : 1;
    l->tokens = l->burst;
    l->last = now;
}

double kube_limiter_reserve(kube_limiter *l, double now)
{
    if (!(l->qps > 0))
        return 0;
    if (now > l->last) {
        l->tokens += (now - l->last) * l->qps;
        if (l->tokens > l->burst)
            l->tokens = l->burst;
        l->last = now;
    }
    l->tokens -= 1;
    return l->tokens >= 0 ? 0 : -l->tokens / l->qps;
}

/* ---- client ---------------------------------------------------------- */

enum { CALL_PLAIN, CALL_LIST, CALL_WATCH };

struct kube_call {
    kube_client *client;
    int type;
    char *method, *path, *content_type, *body;
    size_t body_len;
    const http_part *part; /* the caller's (kube_req.part) */
    double timeout_s;
    kube_done_fn cb;
    void *ud;
    ev_timer wait;            /* rate limiter or Retry-After delay */
    http_request *req;
    int attempts, retried_401, in_cb, cancelled, done;
    long http_version;
    unsigned cred_gen;        /* the exec credential the last attempt was sent with */
    int cred_wait;            /* 1: parked until the exec plugin answers (2: being resent) */
    int cred_fresh;           /* send with the credential just fetched, whatever its expiry */
    /* list */
    char *selector;
    char *start_rv;           /* resourceVersion of the first page ("0": the watch cache), or NULL */
    long limit;
    json_t *items;
    char *list_rv;
    char *cont;
    int full_relist;
    kube_page_fn on_page;     /* kube_list_paged: each page to the caller, nothing merged */
    int page_restart;         /* the next page starts the list over (the first, or after a 410) */
    /* watch */
    kube_event_fn on_event;
    util_buf line;            /* bytes of a watch event not yet ended by '\n' */
    int stopped;
    char werr[256];
    kube_call *next, *prev;
};

struct kube_client {
    struct ev_loop *loop;
    http_client *http;
    kube_config cfg;
    http_tls tls;
    kube_limiter limiter;
    char *token;
    double token_loaded;
    char *proxy;              /* CURLOPT_PROXY of every request, or NULL (kube_config.proxy_url) */
    kubecred cred;            /* the exec plugin's credential (cfg.exec) */
    unsigned cred_gen;        /* bumped with each credential */
    int cred_invalid;         /* a 401 answered a request sent with it */
    kubecred_job *cred_job;   /* a plugin run under way */
    double cred_retry_at;     /* no background refresh before this (after a failed one) */
    long watch_idle_s;        /* kube_client_set_watch_idle */
    double (*now_fn)(void *);
    void *now_ud;
    kube_call *calls;
};

static double client_now(kube_client *c)
{
    return c->now_fn ? c->now_fn(c->now_ud) : ev_now(c->loop);
}

static int reload_token(kube_client *c, int force)
{
    if (!c->cfg.token_file)
        return 0;
    double now = client_now(c);
    if (!force && c->token && now - c->token_loaded < KUBE_TOKEN_RELOAD_S)
        return 0;
    char why[256] = "";
    char *t = kube_config_read_token(c->cfg.token_file, why, sizeof why);
    c->token_loaded = now;
    if (!t)
        return c->token ? 0 : -1;     /* keep the last good token */
    free(c->token);
    c->token = t;
    return 0;
}

/* 1 when the host of `url` (http(s)://host[:port]/...) is "localhost" or a loopback address;
 * the host is taken by libcurl's URL parser (IPv6 literals come back in brackets). */
static int loopback_host(const char *url)
{
    CURLU *u = curl_url();
    char *host = NULL;
    int lo = 0;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
        unsigned char a[16];
        size_t n = strlen(host);
        if (strcasecmp(host, "localhost") == 0) {
            lo = 1;
        } else if (inet_pton(AF_INET, host, a) == 1) {
            lo = a[0] == 127;
        } else if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
            host[n - 1] = '\0';
            lo = inet_pton(AF_INET6, host + 1, a) == 1 &&
                 memcmp(a, (const unsigned char[16]){[15] = 1}, 16) == 0;
        }
    }
    curl_free(host);
    curl_url_cleanup(u);
    return lo;
}

/* The proxy of the client's requests (client-go: proxy-url for every request; else Go's
 * ProxyFromEnvironment, which never proxies a loopback host). socks5:// becomes socks5h://:
 * Go's SOCKS5 dialer hands the host name to the proxy, libcurl's socks5:// would resolve it. */
static int set_proxy(kube_client *c)
{
    const char *p = c->cfg.proxy_url;
    if (p && strncmp(p, "socks5://", 9) == 0) {
        size_t n = strlen(p) + 2;
        if ((c->proxy = malloc(n)))
            snprintf(c->proxy, n, "socks5h://%s", p + 9);
    } else if (p) {
        c->proxy = strdup(p);
    } else if (loopback_host(c->cfg.server)) {
        c->proxy = strdup("");
    } else {
        return 0;
    }
    return c->proxy ? 0 : -1;
}

/* Makes c->cred the credential in use: its token, and its client certificate for TLS. */
static void cred_apply(kube_client *c)
{
    c->cred_gen++;
    c->cred_invalid = 0;
    if (c->cred.cert_pem) {
        c->tls.cert_file = c->tls.key_file = NULL;
        c->tls.cert_pem = c->cred.cert_pem;
        c->tls.cert_pem_len = c->cred.cert_pem_len;
        c->tls.key_pem = c->cred.key_pem;
        c->tls.key_pem_len = c->cred.key_pem_len;
    } else {
        c->tls.cert_pem = c->tls.key_pem = NULL;
        c->tls.cert_pem_len = c->tls.key_pem_len = 0;
    }
}

static void call_send(kube_call *k);
static void call_finish(kube_call *k, long status, const char *error, const char *raw, size_t raw_len,
                        json_t *body);

/* Sends (ok) or fails (error) the calls parked for the plugin's credential. A call that parks
 * again meanwhile is left for the next answer. */
static void cred_release(kube_client *c, const char *error)
{
    for (kube_call *k = c->calls; k; k = k->next)
        if (k->cred_wait == 1)
            k->cred_wait = 2;
    for (;;) {
        kube_call *k = c->calls;
        while (k && k->cred_wait != 2)
            k = k->next;
        if (!k)
            break;
        k->cred_wait = 0;
        if (error) {
            call_finish(k, 0, error, "", 0, NULL);
        } else {
            k->cred_fresh = 1;
            call_send(k);
        }
    }
}

static void cred_done(int rc, kubecred *cred, const char *error, void *ud)
{
    kube_client *c = ud;
    c->cred_job = NULL;
    if (rc == 0) {
        kubecred_clear(&c->cred);
        c->cred = *cred;
        memset(cred, 0, sizeof *cred);   /* taken */
        cred_apply(c);
        log_info("exec plugin credential refreshed", "command", c->cfg.exec->command, NULL);
        cred_release(c, NULL);
        return;
    }
    c->cred_retry_at = client_now(c) + KUBE_EXEC_RETRY_S;
    log_warn("exec plugin failed", "error", error, NULL);
    cred_release(c, error);
}

/* Starts a plugin run unless one is under way. A run that cannot start fails the parked calls. */
static void cred_refresh(kube_client *c)
{
    if (c->cred_job)
        return;
    char err[1024] = "";
    c->cred_job = kubecred_run_async(c->loop, c->cfg.exec, KUBECRED_TIMEOUT_S, cred_done, c, err, sizeof err);
    if (!c->cred_job) {
        c->cred_retry_at = client_now(c) + KUBE_EXEC_RETRY_S;
        log_warn("exec plugin failed", "error", err, NULL);
        cred_release(c, err);
    }
}

/* Before an attempt of `k` with an exec plugin: 0 to send now (with c->cred), 1 when `k` is
 * parked until the plugin answers (the credential is missing, past its expiry less
 * KUBE_EXEC_EXPIRY_MARGIN_S, or refused by a 401). Within KUBE_EXEC_REFRESH_AHEAD_S of that,
 * a run starts in the background while requests go on with the credential in hand. */
static int cred_ready(kube_client *c, kube_call *k)
{
    double now = client_now(c);
    double exp = c->cred.expiry;
    int have = (c->cred.token || c->cred.cert_pem) && !c->cred_invalid;
    if (k->cred_fresh || (have && (exp == 0 || now < exp - KUBE_EXEC_EXPIRY_MARGIN_S))) {
        k->cred_fresh = 0;
        k->cred_gen = c->cred_gen;
        if (exp != 0 && now >= exp - KUBE_EXEC_EXPIRY_MARGIN_S - KUBE_EXEC_REFRESH_AHEAD_S &&
            now >= c->cred_retry_at)
            cred_refresh(c);
        return 0;
    }
    k->cred_wait = 1;
    cred_refresh(c);
    return 1;
}

static int copy_cfg(kube_config *dst, const kube_config *s)
{
    memset(dst, 0, sizeof *dst);
#define DUP(f) do { if (s->f && !(dst->f = strdup(s->f))) return -1; } while (0)
#define DUPB(f, l) do { if (s->f) { if (!(dst->f = util_memdup(s->f, s->l))) return -1; \
        dst->l = s->l; } } while (0)
    DUP(server);
    DUP(ca_file);
    DUPB(ca_pem, ca_pem_len);
    DUP(cert_file);
    DUPB(cert_pem, cert_pem_len);
    DUP(key_file);
    DUPB(key_pem, key_pem_len);
    DUP(token);
    DUP(token_file);
    DUP(namespace);
    DUP(context);
    DUP(proxy_url);
#undef DUP
    if (s->exec && !(dst->exec = kubecred_exec_copy(s->exec)))
        return -1;
#undef DUPB
    dst->insecure = s->insecure;
    dst->qps = s->qps;
    dst->burst = s->burst;
    return 0;
}

kube_client *kube_client_new(struct ev_loop *loop, const kube_config *cfg, char *err, size_t errlen)
{
    if (!loop || !cfg || !cfg->server || !*cfg->server) {
        util_set_err(err, errlen, "kube_client_new: loop and config with server are required");
        return NULL;
    }
    kube_client *c = calloc(1, sizeof *c);
    if (!c) {
        util_set_err(err, errlen, "kube_client_new: out of memory");
        return NULL;
    }
    c->loop = loop;
    if (copy_cfg(&c->cfg, cfg) != 0) {
        kube_config_clear(&c->cfg);
        free(c);
        util_set_err(err, errlen, "kube_client_new: out of memory");
        return NULL;
    }
    c->http = http_client_new(loop, err, errlen);
    if (!c->http) {
        kube_config_clear(&c->cfg);
        free(c);
        return NULL;
    }
    c->tls.ca_file = c->cfg.ca_file;
    c->tls.ca_pem = c->cfg.ca_pem;
    c->tls.ca_pem_len = c->cfg.ca_pem_len;
    c->tls.cert_file = c->cfg.cert_file;
    c->tls.cert_pem = c->cfg.cert_pem;
    c->tls.cert_pem_len = c->cfg.cert_pem_len;
    c->tls.key_file = c->cfg.key_file;
    c->tls.key_pem = c->cfg.key_pem;
    c->tls.key_pem_len = c->cfg.key_pem_len;
    c->tls.insecure_skip_verify = c->cfg.insecure;
    if (c->cfg.token)
        c->token = strdup(c->cfg.token);
    if (c->cfg.token_file && reload_token(c, 1) != 0) {
        util_set_err(err, errlen, "kube_client_new: cannot read token file %s", c->cfg.token_file);
        kube_client_free(c);
        return NULL;
    }
    if (set_proxy(c) != 0) {
        util_set_err(err, errlen, "kube_client_new: out of memory");
        kube_client_free(c);
        return NULL;
    }
    /* the first credential is fetched here, blocking for at most KUBECRED_TIMEOUT_S: a plugin
     * that fails stops the start with its message; later runs are asynchronous (cred_ready) */
    if (c->cfg.exec) {
        char why[1024] = "";
        if (kubecred_run_sync(c->cfg.exec, KUBECRED_TIMEOUT_S, &c->cred, why, sizeof why) != 0) {
            util_set_err(err, errlen, "kube_client_new: %s", why);
            kube_client_free(c);
            return NULL;
        }
        cred_apply(c);
    }
    kube_limiter_init(&c->limiter, c->cfg.qps, c->cfg.burst, client_now(c));
    c->watch_idle_s = KUBE_WATCH_IDLE_S;
    return c;
}

static void call_free(kube_call *k)
{
    kube_client *c = k->client;
    if (k->prev)
        k->prev->next = k->next;
    else if (c->calls == k)
        c->calls = k->next;
    if (k->next)
        k->next->prev = k->prev;
    ev_timer_stop(c->loop, &k->wait);
    if (k->req)
        http_request_cancel(k->req);
    free(k->method);
    free(k->path);
    free(k->content_type);
    free(k->body);
    free(k->selector);
    free(k->start_rv);
    free(k->list_rv);
    free(k->cont);
    util_buf_free(&k->line);
    json_decref(k->items);
    free(k);
}

void kube_client_free(kube_client *c)
{
    if (!c)
        return;
    while (c->calls)
        call_free(c->calls);
    kubecred_cancel(c->cred_job);
    http_client_free(c->http);
    kube_config_clear(&c->cfg);
    kubecred_clear(&c->cred);
    free(c->token);
    free(c->proxy);
    free(c);
}

void kube_client_set_clock(kube_client *c, double (*now)(void *ud), void *ud)
{
    c->now_fn = now;
    c->now_ud = ud;
}

void kube_client_set_watch_idle(kube_client *c, long seconds)
{
    c->watch_idle_s = seconds > 0 ? seconds : 0;
}

void kube_client_set_rate_limit(kube_client *c, double qps, int burst)
{
    kube_limiter_init(&c->limiter, qps, burst, client_now(c));
}

const kube_config *kube_client_config(const kube_client *c)
{
    return &c->cfg;
}

struct ev_loop *kube_client_loop(const kube_client *c)
{
    return c->loop;
}

const char *kube_client_token(kube_client *c)
{
    if (c->cfg.exec)
        return c->cred.token && !c->cred_invalid ? c->cred.token : "";
    reload_token(c, 0);
    return c->token ? c->token : "";
}

int kube_status_has_cause(const json_t *body, const char *cause)
{
    json_t *causes = json_object_get(json_object_get(body, "details"), "causes");
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c)
    {
        const char *r = json_string_value(json_object_get(c, "reason"));
        if (r && strcmp(r, cause) == 0)
            return 1;
    }
    return 0;
}

void kube_cancel(kube_call *k)
{
    if (!k || k->cancelled || k->done)
        return;
    k->cancelled = 1;
    if (k->req) {
        http_request_cancel(k->req);
        k->req = NULL;
    }
    ev_timer_stop(k->client->loop, &k->wait);
    if (!k->in_cb)
        call_free(k);
}

/* Reports the result and frees the call. */
static void call_finish(kube_call *k, long status, const char *error, const char *raw, size_t raw_len,
                        json_t *body)
{
    kube_result res;
    memset(&res, 0, sizeof res);
    res.status = status;
    res.error = error ? error : "";
    res.raw = raw ? raw : "";
    res.raw_len = raw ? raw_len : 0;
    res.body = body;
    res.attempts = k->attempts;
    res.http_version = k->http_version;
    res.reason = "";
    res.message = res.error;
    const char *kind = json_string_value(json_object_get(body, "kind"));
    if (kind && strcmp(kind, "Status") == 0) {
        const char *r = json_string_value(json_object_get(body, "reason"));
        const char *m = json_string_value(json_object_get(body, "message"));
        if (r)
            res.reason = r;
        if (m)
            res.message = m;
    }
    k->done = 1;
    k->cb(&res, k->ud);
    call_free(k);
}


static void wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    call_send((kube_call *)w->data);
}

/* Waits `delay` seconds plus what the rate limiter asks, then sends. */
static void call_schedule(kube_call *k, double delay)
{
    kube_client *c = k->client;
    double wait = kube_limiter_reserve(&c->limiter, client_now(c) + delay);
    ev_timer_stop(c->loop, &k->wait);
    ev_timer_set(&k->wait, delay + wait, 0.);
    ev_timer_start(c->loop, &k->wait);
}

static json_t *parse_json(const char *raw, size_t len)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)raw[i]))
        i++;
    if (i == len || (raw[i] != '{' && raw[i] != '['))
        return NULL;
    return json_loadb(raw, len, JSON_ALLOW_NUL, NULL);
}

int kube_watch_event(const char *line, size_t len, json_t **event, const char **type, json_t **object, char *err,
                     size_t errlen)
{
    *event = NULL;
    *type = NULL;
    *object = NULL;
    size_t i = 0;
    while (i < len && isspace((unsigned char)line[i]))
        i++;
    if (i == len)
        return 1;
    json_error_t je;
    /* a string with a NUL ("\u0000" is valid JSON, and the API server stores it in a spec)
     * is data of that object, not a broken watch for every object */
    json_t *ev = json_loadb(line, len, JSON_ALLOW_NUL, &je);
    const char *t = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!t || !json_is_object(obj)) {
        snprintf(err, errlen, "watch: bad event: %s", ev ? "no type or object" : je.text);
        json_decref(ev);
        return -1;
    }
    *event = ev;
    *type = t;
    *object = obj;
    return 0;
}

int kube_watch_feed(util_buf *pending, const char *data, size_t len, kube_line_fn on_line, void *ud, char *err,
                    size_t errlen)
{
    if (pending->len + len + 1 > KUBE_WATCH_PENDING_MAX) {
        snprintf(err, errlen, "watch: event over %zu MiB", KUBE_WATCH_PENDING_MAX >> 20);
        return -1;
    }
    if (util_buf_put(pending, data, len) != 0) {
        snprintf(err, errlen, "watch: out of memory");
        return -1;
    }
    size_t start = 0;
    int rc = 0;
    for (size_t i = pending->len - len; i < pending->len; i++) {
        if (pending->p[i] != '\n')
            continue;
        rc = on_line(pending->p + start, i - start, ud);
        start = i + 1;
        if (rc != 0)
            break;
    }
    memmove(pending->p, pending->p + start, pending->len - start);
    pending->len -= start;
    pending->p[pending->len] = '\0';
    return rc;
}

static int watch_line(const char *line, size_t len, void *ud)
{
    kube_call *k = ud;
    json_t *ev;
    const char *type;
    json_t *obj;
    int rc = kube_watch_event(line, len, &ev, &type, &obj, k->werr, sizeof k->werr);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    k->in_cb++;
    int stop = k->on_event(type, obj, k->ud);
    k->in_cb--;
    json_decref(ev);
    if (stop && !k->werr[0])
        snprintf(k->werr, sizeof k->werr, "stopped");
    /* kube_cancel from on_event defers the free to watch_data: stop reading */
    return stop || k->cancelled ? -1 : 0;
}

static int watch_data(http_request *req, const char *data, size_t len, void *ud)
{
    (void)req;
    kube_call *k = ud;
    int rc = kube_watch_feed(&k->line, data, len, watch_line, k, k->werr, sizeof k->werr);
    if (k->cancelled) {
        call_free(k);      /* kube_cancel from on_event deferred the free */
        return 1;
    }
    return rc ? 1 : 0;
}

static char *build_list_path(kube_call *k)
{
    char q[2048] = "";
    size_t off = 0;
    int rc = 0;
    const char *sep = strchr(k->path, '?') ? "&" : "?";
    if (k->limit > 0 && !k->full_relist) {
        char lim[64];
        snprintf(lim, sizeof lim, "%slimit=%ld", sep, k->limit);
        rc |= kube_path_append(q, sizeof q, &off, lim, 0);
        sep = "&";
        if (k->cont) {
            rc |= kube_path_append(q, sizeof q, &off, "&continue=", 0);
            rc |= kube_path_append(q, sizeof q, &off, k->cont, 1);
        }
    }
    /* a continue token carries the list's resourceVersion: the server refuses both */
    if (k->start_rv && !k->cont && !k->full_relist) {
        rc |= kube_path_append(q, sizeof q, &off, sep, 0);
        rc |= kube_path_append(q, sizeof q, &off, "resourceVersion=", 0);
        rc |= kube_path_append(q, sizeof q, &off, k->start_rv, 1);
        sep = "&";
    }
    if (k->selector && *k->selector) {
        rc |= kube_path_append(q, sizeof q, &off, sep, 0);
        rc |= kube_path_append(q, sizeof q, &off, "labelSelector=", 0);
        rc |= kube_path_append(q, sizeof q, &off, k->selector, 1);
    }
    if (rc)
        return NULL;
    size_t n = strlen(k->path) + strlen(q) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s", k->path, q);
    return p;
}

static void list_page(kube_call *k, const http_response *resp)
{
    json_t *body = parse_json(resp->body, resp->body_len);
    if (resp->status == 410 && k->cont && !k->full_relist) {
        /* continue token expired: one full list instead (client-go pager) */
        json_decref(body);
        free(k->cont);
        k->cont = NULL;
        json_array_clear(k->items);
        k->page_restart = 1;
        free(k->list_rv);
        k->list_rv = NULL;
        k->full_relist = 1;
        call_schedule(k, 0);
        return;
    }
    json_t *items = json_object_get(body, "items");
    if (resp->status != 200 || !json_is_array(items)) {
        call_finish(k, resp->status, resp->status == 200 ? "list: response without items" : resp->error,
                    resp->body, resp->body_len, body);
        json_decref(body);
        return;
    }
    json_t *meta = json_object_get(body, "metadata");
    if (!k->list_rv) {
        const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
        k->list_rv = strdup(rv ? rv : "");
    }
    const char *cont = json_string_value(json_object_get(meta, "continue"));
    free(k->cont);
    k->cont = cont && *cont ? strdup(cont) : NULL;
    /* a lost continue token would end the list early: a partial list read as a whole one */
    int bad = !k->list_rv || (cont && *cont && !k->cont);
    if (!bad && k->on_page) {
        int restart = k->page_restart;
        k->page_restart = 0;
        k->in_cb++;
        bad = k->on_page(items, restart, k->ud) != 0;
        k->in_cb--;
        if (k->cancelled) { /* kube_cancel from on_page: no done callback */
            json_decref(body);
            call_free(k);
            return;
        }
    } else if (!bad) {
        bad = json_array_extend(k->items, items) != 0;
    }
    if (bad) {
        call_finish(k, 0, "list: out of memory", "", 0, NULL);
        json_decref(body);
        return;
    }
    json_decref(body);
    if (k->cont && !k->full_relist) {
        call_schedule(k, 0);
        return;
    }
    json_t *out = json_pack("{s:s, s:s, s:{s:s}, s:O}", "kind", "List", "apiVersion", "v1", "metadata",
                            "resourceVersion", k->list_rv ? k->list_rv : "", "items", k->items);
    call_finish(k, 200, "", "", 0, out);
    json_decref(out);
}

static void http_done(http_request *req, const http_response *resp, void *ud)
{
    (void)req;
    kube_call *k = ud;
    kube_client *c = k->client;
    k->req = NULL;
    k->http_version = resp->http_version;
    int retryable = resp->status == 429 || (resp->status >= 500 && resp->status <= 599);
    if (retryable && resp->retry_after_s >= 0 && k->attempts <= KUBE_MAX_RETRIES) {
        call_schedule(k, resp->retry_after_s);
        return;
    }
    if (resp->status == 401 && (c->cfg.token_file || c->cfg.exec) && !k->retried_401) {
        k->retried_401 = 1;
        /* client-go: a 401 to the credential in use invalidates it once; later 401s to the same
         * credential (requests that were under way) do not run the plugin again */
        if (c->cfg.exec && k->cred_gen == c->cred_gen)
            c->cred_invalid = 1;
        else if (!c->cfg.exec)
            reload_token(c, 1);
        call_schedule(k, 0);
        return;
    }
    if (k->type == CALL_LIST) {
        list_page(k, resp);
        return;
    }
    if (k->type == CALL_WATCH && resp->status >= 200 && resp->status < 300) {
        if (!k->werr[0] && resp->curl_code == 0 && k->line.len) { /* last line without '\n' */
            watch_line(k->line.p, k->line.len, k);
            if (k->cancelled) {
                call_free(k);
                return;
            }
        }
        const char *e = k->werr[0] ? k->werr : resp->error;
        call_finish(k, resp->status, e, "", 0, NULL);
        return;
    }
    json_t *body = parse_json(resp->body, resp->body_len);
    call_finish(k, resp->status, resp->error, resp->body, resp->body_len, body);
    json_decref(body);
}

static void call_send(kube_call *k)
{
    kube_client *c = k->client;
    char err[512] = "";
    if (c->cfg.exec && cred_ready(c, k))
        return;                   /* parked: cred_release sends it */
    char *path = k->type == CALL_LIST ? build_list_path(k) : strdup(k->path);
    size_t ul = strlen(c->cfg.server) + (path ? strlen(path) : 0) + 1;
    char *url = path ? malloc(ul) : NULL;
    if (!url) {
        free(path);
        call_finish(k, 0, "out of memory or query too long", "", 0, NULL);
        return;
    }
    snprintf(url, ul, "%s%s", c->cfg.server, path);
    free(path);
    char ct[256];
    snprintf(ct, sizeof ct, "Content-Type: %s", k->content_type ? k->content_type : "application/json");
    const char *headers[] = {"Accept: application/json", "User-Agent: flink-controller", ct, NULL};
    if (!k->body)
        headers[2] = NULL; /* (with a part, libcurl sets the multipart Content-Type) */
    reload_token(c, 0);
    http_opts o;
    memset(&o, 0, sizeof o);
    o.method = k->method;
    o.url = url;
    o.headers = headers;
    o.body = k->body;
    o.body_len = k->body_len;
    o.part = k->part;
    o.tls = &c->tls;
    o.bearer_token = c->cfg.exec ? c->cred.token : c->token;
    o.proxy = c->proxy;
    o.timeout_ms = (long)(k->timeout_s * 1000);
    o.stream = k->type == CALL_WATCH;
    o.idle_timeout_s = k->type == CALL_WATCH ? c->watch_idle_s : 0;
    o.on_data = watch_data;
    o.on_done = http_done;
    o.ud = k;
    k->attempts++;
    k->line.len = 0;              /* a new attempt: no partial event */
    k->line.oom = 0;
    if (k->line.p)
        k->line.p[0] = '\0';
    k->werr[0] = '\0';
    k->req = http_request_start(c->http, &o, err, sizeof err);
    free(url);
    if (!k->req)
        call_finish(k, 0, err, "", 0, NULL);
}

static kube_call *call_new(kube_client *c, int type, const kube_req *req, kube_done_fn cb, void *ud,
                           char *err, size_t errlen)
{
    if (!c || !req || !req->path || req->path[0] != '/' || !cb) {
        util_set_err(err, errlen, "kube_request: client, a path starting with '/' and a callback are required");
        return NULL;
    }
    kube_call *k = calloc(1, sizeof *k);
    if (!k) {
        util_set_err(err, errlen, "kube_request: out of memory");
        return NULL;
    }
    k->client = c;
    k->type = type;
    k->line.first = 8192;
    k->method = strdup(req->method ? req->method : "GET");
    k->path = strdup(req->path);
    k->content_type = xstrdup(req->content_type);
    k->part = req->part;
    if (req->body) {
        k->body_len = req->body_len ? req->body_len : strlen(req->body);
        k->body = util_memdup(req->body, k->body_len);
    }
    k->timeout_s = req->timeout_s > 0 ? req->timeout_s : 60;
    k->cb = cb;
    k->ud = ud;
    ev_timer_init(&k->wait, wait_cb, 0., 0.);
    k->wait.data = k;
    k->next = c->calls;
    if (c->calls)
        c->calls->prev = k;
    c->calls = k;
    if (!k->method || !k->path || (req->body && !k->body) || (req->content_type && !k->content_type)) {
        call_free(k);
        util_set_err(err, errlen, "kube_request: out of memory");
        return NULL;
    }
    return k;
}

kube_call *kube_request(kube_client *c, const kube_req *req, kube_done_fn cb, void *ud, char *err,
                        size_t errlen)
{
    kube_call *k = call_new(c, CALL_PLAIN, req, cb, ud, err, errlen);
    if (k)
        call_schedule(k, 0);
    return k;
}

kube_call *kube_get(kube_client *c, const char *path, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    kube_req r = {.method = "GET", .path = path};
    return kube_request(c, &r, cb, ud, err, errlen);
}

kube_call *kube_list(kube_client *c, const char *path, const char *label_selector, long limit,
                     kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    return kube_list_paged(c, path, label_selector, limit, NULL, cb, ud, err, errlen);
}

kube_call *kube_list_paged(kube_client *c, const char *path, const char *label_selector, long limit,
                           kube_page_fn on_page, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    return kube_list_paged_rv(c, path, label_selector, limit, NULL, on_page, cb, ud, err, errlen);
}

kube_call *kube_list_paged_rv(kube_client *c, const char *path, const char *label_selector, long limit,
                              const char *resource_version, kube_page_fn on_page, kube_done_fn cb, void *ud,
                              char *err, size_t errlen)
{
    kube_req r = {.method = "GET", .path = path};
    kube_call *k = call_new(c, CALL_LIST, &r, cb, ud, err, errlen);
    if (!k)
        return NULL;
    k->on_page = on_page;
    k->page_restart = 1;
    k->limit = limit > 0 ? limit : 500;
    k->selector = xstrdup(label_selector);
    k->start_rv = resource_version && *resource_version ? xstrdup(resource_version) : NULL;
    k->items = json_array();
    if (!k->items || (label_selector && !k->selector) || (resource_version && *resource_version && !k->start_rv)) {
        call_free(k);
        util_set_err(err, errlen, "kube_list: out of memory");
        return NULL;
    }
    call_schedule(k, 0);
    return k;
}

kube_call *kube_watch(kube_client *c, const char *path, const char *resource_version,
                      const char *label_selector, long timeout_s, kube_event_fn on_event,
                      kube_done_fn done, void *ud, char *err, size_t errlen)
{
    if (!path || !on_event) {
        util_set_err(err, errlen, "kube_watch: path and on_event are required");
        return NULL;
    }
    if (timeout_s <= 0)
        timeout_s = 300;
    char q[4096];
    size_t off = 0;
    int rc = kube_path_append(q, sizeof q, &off, path, 0);
    char tmp[96];
    snprintf(tmp, sizeof tmp, "%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%ld",
             strchr(path, '?') ? "&" : "?", timeout_s);
    rc |= kube_path_append(q, sizeof q, &off, tmp, 0);
    if (resource_version && *resource_version) {
        rc |= kube_path_append(q, sizeof q, &off, "&resourceVersion=", 0);
        rc |= kube_path_append(q, sizeof q, &off, resource_version, 1);
    }
    if (label_selector && *label_selector) {
        rc |= kube_path_append(q, sizeof q, &off, "&labelSelector=", 0);
        rc |= kube_path_append(q, sizeof q, &off, label_selector, 1);
    }
    if (rc) {
        util_set_err(err, errlen, "kube_watch: path and query too long");
        return NULL;
    }
    kube_req r = {.method = "GET", .path = q, .timeout_s = (double)timeout_s + 30};
    kube_call *k = call_new(c, CALL_WATCH, &r, done, ud, err, errlen);
    if (!k)
        return NULL;
    k->on_event = on_event;
    call_schedule(k, 0);
    return k;
}
