/* SPDX-License-Identifier: Apache-2.0 */
/* core/webhook: the admission webhook over libmicrohttpd's TLS (see webhook.h). */
#include "webhook.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>
#include <openssl/evp.h>

#include "lhost.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "util.h"

/* One libmicrohttpd daemon serving one certificate pair on a dup of the listening socket. */
typedef struct wh_daemon {
    struct webhook *w;
    server_mhd mhd;
    char *cert, *key;    /* PEM, kept for the daemon's lifetime (MHD does not copy them) */
} wh_daemon;

struct webhook {
    struct ev_loop *loop;
    struct lhost *host;
    int fd, port;
    char *cert_file, *key_file;
    struct stat cert_st, key_st;    /* of the files the current pair was read from */
    wh_daemon *cur, *old;           /* old: quiesced after a reload, finishing its connections */
    ev_timer reload, drain;
    size_t max_body;
    metrics_family *admissions;     /* or NULL */
    unsigned timeout_s;
    unsigned generation;
    unsigned drain_ticks;           /* seconds the old daemon has been draining */
};

/* The body of one request, collected before it is answered. */
typedef struct wh_req {
    util_buf body;
    int too_big;
} wh_req;

/* ---- requests ------------------------------------------------------------------------------ */

static enum MHD_Result wh_respond(struct MHD_Connection *conn, unsigned status, const char *ctype,
                                  char *body, size_t len, int owned)
{
    return server_respond(conn, status, ctype, body, len, owned, "POST");
}

static enum MHD_Result wh_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    return wh_respond(conn, status, "text/plain; charset=utf-8", (char *)text, strlen(text), 0);
}

/* Counts one review in admissions{operation, result}: the operation from the request body's
 * request.operation ("" when it has none), result "allowed"/"denied" from `allowed` (1/0) or
 * "error" (-1: no review answered). */
static void wh_count(webhook *w, const wh_req *r, int allowed)
{
    if (!w->admissions)
        return;
    json_t *body = r->body.p ? json_loadb(r->body.p, r->body.len, 0, NULL) : NULL;
    const char *op = json_string_value(json_object_get(json_object_get(body, "request"), "operation"));
    const char *v[] = {op ? op : "", allowed < 0 ? "error" : allowed ? "allowed" : "denied"};
    metrics_inc(w->admissions, v);
    json_decref(body);
}

/* The AdmissionReview to send: fc.admission's {review, patch} with `patch` (a list of JSON
 * Patch ops) encoded as JSON, then base64 (OpenSSL), into review.response.patch; *allowed gets
 * response.allowed (1/0). NULL with err on a malformed result. */
static char *wh_finish(const char *result, int *allowed, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loads(result, JSON_ALLOW_NUL, &je); /* a name "a\u0000b" is refused, not a 500 */
    json_t *review = root ? json_object_get(root, "review") : NULL;
    json_t *response = review ? json_object_get(review, "response") : NULL;
    if (!json_is_object(response)) {
        util_set_err(err, errlen, "fc.admission returned no review.response");
        json_decref(root);
        return NULL;
    }
    *allowed = json_is_true(json_object_get(response, "allowed"));
    json_t *patch = json_object_get(root, "patch");
    if (json_is_array(patch) && json_array_size(patch) > 0) {
        char *text = json_dumps(patch, JSON_COMPACT);
        size_t n = text ? strlen(text) : 0;
        unsigned char *b64 = text ? malloc(4 * ((n + 2) / 3) + 1) : NULL;
        if (!b64) {
            free(text);
            json_decref(root);
            util_set_err(err, errlen, "out of memory");
            return NULL;
        }
        EVP_EncodeBlock(b64, (const unsigned char *)text, (int)n);
        json_object_set_new(response, "patch", json_string((const char *)b64));
        json_object_set_new(response, "patchType", json_string("JSONPatch"));
        free(b64);
        free(text);
    }
    char *out = json_dumps(review, JSON_COMPACT);
    json_decref(root);
    if (!out) util_set_err(err, errlen, "out of memory");
    return out;
}

static enum MHD_Result wh_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **req_cls)
{
    wh_daemon *dm = cls;
    webhook *w = dm->w;
    (void)version;
    const char *fn = strcmp(url, "/validate") == 0 ? "validate" : strcmp(url, "/mutate") == 0 ? "mutate" : NULL;
    if (!*req_cls) {   /* headers only */
        if (strcmp(url, "/healthz") == 0 && strcmp(method, "GET") == 0) return wh_text(conn, MHD_HTTP_OK, "ok\n");
        if (!fn) return wh_text(conn, MHD_HTTP_NOT_FOUND, "404 page not found\n");
        if (strcmp(method, "POST") != 0) return wh_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
        wh_req *r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->body.first = 16384;
        *req_cls = r;
        return MHD_YES;
    }
    wh_req *r = *req_cls;
    if (*upload_data_size) {
        if (!r->too_big && r->body.len + *upload_data_size > w->max_body) {
            r->too_big = 1;
            util_buf_free(&r->body);
        }
        if (!r->too_big && util_buf_put(&r->body, upload_data, *upload_data_size)) return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->too_big) {
        wh_count(w, r, -1);
        char msg[96];
        snprintf(msg, sizeof msg, "request body over %zu bytes\n", w->max_body);
        return wh_text(conn, MHD_HTTP_CONTENT_TOO_LARGE, msg);
    }
    if (!r->body.p || !r->body.len) {
        wh_count(w, r, -1);
        return wh_text(conn, MHD_HTTP_BAD_REQUEST, "empty body: an AdmissionReview was expected\n");
    }
    char err[1024];
    char *result = NULL;
    if (lhost_call_json(w->host, "fc.admission", fn, r->body.p, &result, err, sizeof err)) {
        log_warn("admission review failed", "path", url, "error", err, NULL);
        wh_count(w, r, -1);
        char msg[1100];
        snprintf(msg, sizeof msg, "%s\n", err);
        /* the body is not JSON or not an object: the caller's mistake */
        unsigned code = strstr(err, "JSON") || strstr(err, "json") ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_INTERNAL_SERVER_ERROR;
        return wh_text(conn, code, msg);
    }
    int allowed = 0;
    char *out = wh_finish(result, &allowed, err, sizeof err);
    free(result);
    wh_count(w, r, out ? allowed : -1);
    if (!out) {
        log_warn("admission review failed", "path", url, "error", err, NULL);
        return wh_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "admission: malformed result\n");
    }
    return wh_respond(conn, MHD_HTTP_OK, "application/json", out, strlen(out), 1);
}

static void wh_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                            enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    wh_req *r = *req_cls;
    if (r) {
        util_buf_free(&r->body);
        free(r);
        *req_cls = NULL;
    }
}

static void wh_mhd_log(void *cls, const char *fmt, va_list ap)
{
    wh_daemon *dm = cls;
    char msg[512], port[16];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    snprintf(port, sizeof port, "%d", dm->w->port);
    log_warn("webhook server", "port", port, "error", msg, NULL);
}

/* ---- daemons on the loop (core/server.c's server_mhd) --------------------------------------- */

static void wh_daemon_free(wh_daemon *dm)
{
    if (!dm) return;
    server_mhd_detach(&dm->mhd);
    free(dm->cert);
    free(dm->key);
    free(dm);
}

/* Starts a daemon serving the PEM pair `cert`, `key` (taken: freed on failure too) on a dup of
 * the listening socket; `what` names the pair in errors. */
static wh_daemon *wh_daemon_start(webhook *w, char *cert, char *key, const char *what, char *err, size_t errlen)
{
    char why[128];
    wh_daemon *dm = calloc(1, sizeof *dm);
    if (!dm) {
        free(cert);
        free(key);
        util_set_err(err, errlen, "webhook: out of memory");
        return NULL;
    }
    dm->w = w;
    dm->cert = cert;
    dm->key = key;
    int fd = dup(w->fd);
    if (fd < 0) {
        util_set_err(err, errlen, "webhook: dup: %s", strerror(errno));
        wh_daemon_free(dm);
        return NULL;
    }
    /* the logger first (see core/server.c) */
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_TLS | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                            wh_on_request, dm,
                                            MHD_OPTION_EXTERNAL_LOGGER, wh_mhd_log, dm,
                                            MHD_OPTION_LISTEN_SOCKET, fd,
                                            MHD_OPTION_HTTPS_MEM_CERT, dm->cert,
                                            MHD_OPTION_HTTPS_MEM_KEY, dm->key,
                                            MHD_OPTION_HTTPS_PRIORITIES, WEBHOOK_TLS_PRIORITIES,
                                            MHD_OPTION_CONNECTION_LIMIT, 64u,
                                            MHD_OPTION_CONNECTION_TIMEOUT, w->timeout_s,
                                            MHD_OPTION_NOTIFY_COMPLETED, wh_on_completed, dm,
                                            MHD_OPTION_END);
    if (!d) {
        close(fd);
        util_set_err(err, errlen, "webhook: cannot start TLS with %s", what);
        wh_daemon_free(dm);
        return NULL;
    }
    if (server_mhd_attach(&dm->mhd, w->loop, d, why, sizeof why)) {
        util_set_err(err, errlen, "webhook: %s", why);
        wh_daemon_free(dm);
        return NULL;
    }
    return dm;
}

/* Reads the pair from the files and starts a daemon with it. */
static wh_daemon *wh_daemon_new(webhook *w, struct stat *cert_st, struct stat *key_st, char *err, size_t errlen)
{
    char why[128], what[1024];
    char *cert = NULL, *key = NULL;
    /* stat before reading: a change after the stat is seen by the next check */
    if (stat(w->cert_file, cert_st) != 0) snprintf(why, sizeof why, "%s", strerror(errno));
    else cert = util_read_file(w->cert_file, WEBHOOK_CERT_MAX, NULL, why, sizeof why);
    if (!cert) {
        util_set_err(err, errlen, "webhook: cert-file %s: %s", w->cert_file, why);
        return NULL;
    }
    if (stat(w->key_file, key_st) != 0) snprintf(why, sizeof why, "%s", strerror(errno));
    else key = util_read_file(w->key_file, WEBHOOK_CERT_MAX, NULL, why, sizeof why);
    if (!key) {
        util_set_err(err, errlen, "webhook: key-file %s: %s", w->key_file, why);
        free(cert);
        return NULL;
    }
    snprintf(what, sizeof what, "%s and %s", w->cert_file, w->key_file);
    return wh_daemon_start(w, cert, key, what, err, errlen);
}

static int wh_same(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The quiesced daemon: stopped once it has no connection left, or after the idle timeout
 * (checked every second). */
static void wh_on_drain(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    webhook *w = t->data;
    if (!w->old) {
        ev_timer_stop(w->loop, t);
        return;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(w->old->mhd.d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    if (!info || info->num_connections == 0 || ++w->drain_ticks > w->timeout_s + 1) {
        wh_daemon_free(w->old);
        w->old = NULL;
        ev_timer_stop(w->loop, t);
    }
}

/* `dm` takes over: the current daemon stops accepting and drains (wh_on_drain). */
static void wh_swap(webhook *w, wh_daemon *dm)
{
    MHD_socket s = MHD_quiesce_daemon(w->cur->mhd.d);
    if (s != MHD_INVALID_SOCKET) close(s);
    w->old = w->cur;
    w->cur = dm;
    w->generation++;
    w->drain_ticks = 0;
    ev_timer_again(w->loop, &w->drain);
}

static void wh_on_reload(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    webhook *w = t->data;
    struct stat cs, ks;
    if (stat(w->cert_file, &cs) != 0 || stat(w->key_file, &ks) != 0) return;   /* mid-swap: next time */
    if (wh_same(&cs, &w->cert_st) && wh_same(&ks, &w->key_st)) return;
    if (w->old) return;   /* still draining the previous one: next time */
    char err[512];
    wh_daemon *dm = wh_daemon_new(w, &cs, &ks, err, sizeof err);
    if (!dm) {
        log_warn("webhook certificates not reloaded, keeping the previous ones", "error", err, NULL);
        /* remember the bad pair: retried when the files change again */
        w->cert_st = cs;
        w->key_st = ks;
        return;
    }
    wh_swap(w, dm);
    w->cert_st = cs;
    w->key_st = ks;
    char gen[16];
    snprintf(gen, sizeof gen, "%u", w->generation);
    log_info("webhook certificates reloaded", "cert_file", w->cert_file, "generation", gen, NULL);
}

int webhook_set_pair(webhook *w, const char *cert_pem, const char *key_pem, char *err, size_t errlen)
{
    if (!w || !cert_pem || !key_pem || w->cert_file) {
        util_set_err(err, errlen, "webhook: a pair is set only on a webhook started with one in memory");
        return -1;
    }
    if (w->old) {
        /* a second pair while the previous old daemon drains: stop it now */
        wh_daemon_free(w->old);
        w->old = NULL;
    }
    char *cert = strdup(cert_pem), *key = strdup(key_pem);
    if (!cert || !key) {
        free(cert);
        free(key);
        util_set_err(err, errlen, "webhook: out of memory");
        return -1;
    }
    wh_daemon *dm = wh_daemon_start(w, cert, key, "the certificate pair given", err, errlen);
    if (!dm) return -1;
    wh_swap(w, dm);
    return 0;
}

webhook *webhook_start(struct ev_loop *loop, const webhook_opts *o, char *err, size_t errlen)
{
    int files = o && o->cert_file && o->key_file, mem = o && o->cert_pem && o->key_pem;
    if (!loop || !o || !o->addr || files == mem || !o->host) {
        util_set_err(err, errlen, "webhook: an address, a cert-file and a key-file or a pair in memory, and a Lua host are needed");
        return NULL;
    }
    webhook *w = calloc(1, sizeof *w);
    if (!w) {
        util_set_err(err, errlen, "webhook: out of memory");
        return NULL;
    }
    w->loop = loop;
    w->host = o->host;
    w->max_body = o->max_body ? o->max_body : WEBHOOK_MAX_BODY;
    w->admissions = o->admissions;
    w->timeout_s = o->timeout_s ? o->timeout_s : WEBHOOK_TIMEOUT_S;
    w->cert_file = files ? strdup(o->cert_file) : NULL;
    w->key_file = files ? strdup(o->key_file) : NULL;
    w->fd = -1;
    if (files && (!w->cert_file || !w->key_file)) {
        util_set_err(err, errlen, "webhook: out of memory");
        webhook_stop(w);
        return NULL;
    }
    w->fd = server_listen("webhook-addr", o->addr, &w->port, err, errlen);
    if (w->fd < 0) {
        webhook_stop(w);
        return NULL;
    }
    if (files) {
        w->cur = wh_daemon_new(w, &w->cert_st, &w->key_st, err, errlen);
    } else {
        char *cert = strdup(o->cert_pem), *key = strdup(o->key_pem);
        w->cur = cert && key ? wh_daemon_start(w, cert, key, "the certificate pair given", err, errlen) : NULL;
        if (!cert || !key) {
            free(cert);
            free(key);
            util_set_err(err, errlen, "webhook: out of memory");
        }
    }
    if (!w->cur) {
        webhook_stop(w);
        return NULL;
    }
    w->generation = 1;
    double every = o->reload_s > 0 ? o->reload_s : WEBHOOK_RELOAD_S;
    ev_timer_init(&w->reload, wh_on_reload, every, every);
    w->reload.data = w;
    if (files) ev_timer_start(loop, &w->reload);
    ev_init(&w->drain, wh_on_drain);
    w->drain.repeat = 1.0;
    w->drain.data = w;
    return w;
}

int webhook_port(const webhook *w) { return w ? w->port : 0; }

unsigned webhook_generation(const webhook *w) { return w ? w->generation : 0; }

void webhook_stop(webhook *w)
{
    if (!w) return;
    ev_timer_stop(w->loop, &w->reload);
    ev_timer_stop(w->loop, &w->drain);
    wh_daemon_free(w->old);
    wh_daemon_free(w->cur);
    if (w->fd >= 0) close(w->fd);
    free(w->cert_file);
    free(w->key_file);
    free(w);
}

/* ---- `flink-controller webhook` ----------------------------------------------------------- */

static void wh_on_signal(struct ev_loop *loop, ev_signal *s, int revents)
{
    (void)s;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static void wh_usage(FILE *out)
{
    fprintf(out,
            "usage: flink-controller webhook --addr A --cert-file F --key-file F [--policy-dir D]\n"
            "         [--policy-timeout-ms N] [--policy-memory-mib N] [--log-format text|json]\n"
            "         [--cert-check-seconds N] [--metrics-addr A]\n"
            "Serves only the FlinkCluster admission webhook over TLS (POST /validate, /mutate:\n"
            "AdmissionReview v1) with the policies, until SIGTERM; no API server is contacted.\n"
            "The certificate files are re-read when they change. `run --webhook-addr` serves the\n"
            "same inside the controller. --metrics-addr HOST:PORT: also GET /metrics (plain HTTP;\n"
            "\":9090\" is loopback only, \"0.0.0.0:9090\" every interface).\n");
}

enum { WO_ADDR = 400, WO_CERT, WO_KEY, WO_POLICY_DIR, WO_TIMEOUT, WO_MEMORY, WO_LOG_FORMAT, WO_CHECK, WO_METRICS };

/* The webhook process's own metrics, brought up to date at each scrape. */
static void wh_on_scrape(void *ud)
{
    metrics_process_update(ud);
}

int webhook_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"addr", required_argument, NULL, WO_ADDR},
        {"cert-file", required_argument, NULL, WO_CERT},
        {"key-file", required_argument, NULL, WO_KEY},
        {"policy-dir", required_argument, NULL, WO_POLICY_DIR},
        {"policy-timeout-ms", required_argument, NULL, WO_TIMEOUT},
        {"policy-memory-mib", required_argument, NULL, WO_MEMORY},
        {"log-format", required_argument, NULL, WO_LOG_FORMAT},
        {"cert-check-seconds", required_argument, NULL, WO_CHECK},
        {"metrics-addr", required_argument, NULL, WO_METRICS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    webhook_opts wo = {0};
    struct lhost_opts ho = {0};
    log_format fmt = LOG_FORMAT_TEXT;
    const char *metrics_addr = NULL;
    unsigned long n;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            wh_usage(stdout);
            return 0;
        case WO_ADDR: wo.addr = optarg; break;
        case WO_CERT: wo.cert_file = optarg; break;
        case WO_KEY: wo.key_file = optarg; break;
        case WO_POLICY_DIR: ho.policy_dir = optarg; break;
        case WO_METRICS: metrics_addr = optarg; break;
        case WO_TIMEOUT:
        case WO_MEMORY:
            if (util_parse_uint(optarg, 1, c == WO_TIMEOUT ? 3600000 : 65536, &n)) {
                fprintf(stderr, "webhook: %s: expected a positive integer, got '%s'\n", argv[optind - 1], optarg);
                return 2;
            }
            if (c == WO_TIMEOUT) ho.timeout_ms = (unsigned)n;
            else ho.memory_mib = (unsigned)n;
            break;
        case WO_CHECK:
            if (util_parse_uint(optarg, 1, 3600, &n)) {
                fprintf(stderr, "webhook: --cert-check-seconds: expected an integer 1..3600, got '%s'\n", optarg);
                return 2;
            }
            wo.reload_s = (double)n;
            break;
        case WO_LOG_FORMAT:
            if (log_parse_format(optarg, &fmt)) {
                fprintf(stderr, "webhook: --log-format: expected text or json, got '%s'\n", optarg);
                return 2;
            }
            break;
        default:
            fprintf(stderr, "webhook: bad or incomplete option '%s' (see --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc || !wo.addr || !wo.cert_file || !wo.key_file) {
        fprintf(stderr, "webhook: --addr, --cert-file and --key-file are required\n");
        wh_usage(stderr);
        return 2;
    }
    log_configure(fmt, LOG_INFO);
    signal(SIGPIPE, SIG_IGN);
    char err[1024], port[16];
    struct lhost *h = lhost_new(&ho, err, sizeof err);
    if (!h) {
        log_error("lua host", "error", err, NULL);
        return 1;
    }
    struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
    wo.host = h;
    metrics_registry *reg = metrics_registry_new(0, "flink_controller_metrics_dropped_total");
    metrics_process proc;
    server *srv = NULL;
    if (!reg || !metrics_register_build_info(reg, err, sizeof err) ||
        !(wo.admissions = metrics_register_admissions(reg, err, sizeof err)) ||
        metrics_register_process(reg, &proc, err, sizeof err)) {
        log_error("metrics", "error", reg ? err : "out of memory", NULL);
        metrics_registry_free(reg);
        lhost_free(h);
        return 1;
    }
    if (metrics_addr && *metrics_addr) {
        server_opts so = {.metrics_addr = metrics_addr, .metrics = reg, .on_scrape = wh_on_scrape, .scrape_ud = &proc};
        srv = server_start(loop, &so, err, sizeof err);
        if (!srv) {
            log_error("cannot serve metrics", "error", err, NULL);
            metrics_registry_free(reg);
            lhost_free(h);
            return 1;
        }
        server_set_ready(srv, 1, NULL);
        snprintf(port, sizeof port, "%d", server_metrics_port(srv));
        log_info("serving metrics", "port", port, NULL);
    }
    webhook *w = webhook_start(loop, &wo, err, sizeof err);
    if (!w) {
        log_error("cannot serve the webhook", "error", err, NULL);
        server_stop(srv);
        metrics_registry_free(reg);
        lhost_free(h);
        return 1;
    }
    snprintf(port, sizeof port, "%d", webhook_port(w));
    log_info("serving the admission webhook", "port", port, "policies", lhost_policy_dir(h), NULL);
    ev_signal sterm, sint;
    ev_signal_init(&sterm, wh_on_signal, SIGTERM);
    ev_signal_init(&sint, wh_on_signal, SIGINT);
    ev_signal_start(loop, &sterm);
    ev_signal_start(loop, &sint);
    ev_run(loop, 0);
    ev_signal_stop(loop, &sterm);
    ev_signal_stop(loop, &sint);
    webhook_stop(w);
    server_stop(srv);
    metrics_registry_free(reg);
    lhost_free(h);
    log_info("webhook stopped", NULL);
    return 0;
}
