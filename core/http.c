/* SPDX-License-Identifier: Apache-2.0 */
/* core/http: libcurl multi on a libev loop. See http.h. */
#include "http.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct http_request {
    http_client *client;
    CURL *easy;
    struct curl_slist *headers;
    curl_mime *mime;                  /* multipart body, or NULL */
    http_data_fn on_data;
    http_done_fn on_done;
    void *ud;
    int stream;
    int save;                         /* 2xx body to save_fd (http_opts.save) */
    int save_fd;
    size_t saved;                     /* bytes written to save_fd */
    int part_fd;                      /* a part from a file: its descriptor, */
    size_t part_len;                  /* length */
    size_t part_off;                  /* and the next offset to send */
    int cancelled;
    util_buf body;                    /* the response body (not streamed) */
    size_t max_body;
    char errbuf[CURL_ERROR_SIZE];
    char overbuf[160];                /* set when the body cap was hit or a
                                         file read/write failed */
    http_request *next, *prev;        /* active list */
    http_request *reap_next;          /* cancelled while curl was running */
};

struct http_client {
    struct ev_loop *loop;
    CURLM *multi;
    ev_timer timer;
    int in_curl;                      /* depth of curl_multi_socket_action */
    http_request *active;
    http_request *reap;
    size_t n_active;
};

/* One libev io watcher per socket curl asks us to watch. */
typedef struct http_sock {
    ev_io io;
    http_client *client;
    curl_socket_t fd;
} http_sock;

static void request_free(http_request *r)
{
    http_client *c = r->client;
    if (r->prev)
        r->prev->next = r->next;
    else if (c->active == r)
        c->active = r->next;
    if (r->next)
        r->next->prev = r->prev;
    c->n_active--;
    curl_multi_remove_handle(c->multi, r->easy);
    curl_easy_cleanup(r->easy);
    curl_mime_free(r->mime);
    curl_slist_free_all(r->headers);
    util_buf_free(&r->body);
    free(r);
}

static void reap_cancelled(http_client *c)
{
    while (c->reap) {
        http_request *r = c->reap;
        c->reap = r->reap_next;
        request_free(r);
    }
}

static double parse_retry_after(CURL *e)
{
    struct curl_header *h = NULL;
    if (curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h)
        return -1;
    const char *v = h->value;
    char *end = NULL;
    double d = strtod(v, &end);
    if (end != v && d >= 0) {
        while (*end == ' ' || *end == '\t')
            end++;
        if (*end == '\0')
            return d;
    }
    time_t t = curl_getdate(v, NULL);
    if (t < 0)
        return -1;
    double delta = difftime(t, time(NULL));
    return delta > 0 ? delta : 0;
}

static void finish(http_request *r, CURLcode code)
{
    http_response resp;
    memset(&resp, 0, sizeof resp);
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &resp.status);
    resp.curl_code = (int)code;
    resp.error = code == CURLE_OK ? "" : r->overbuf[0] ? r->overbuf
                                       : (r->errbuf[0] ? r->errbuf : curl_easy_strerror(code));
    resp.body = r->body.p ? r->body.p : "";
    resp.body_len = r->save && resp.status >= 200 && resp.status < 300 ? r->saved : r->body.len;
    resp.retry_after_s = resp.status ? parse_retry_after(r->easy) : -1;
    char *ct = NULL;
    curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
    resp.content_type = ct ? ct : "";
    long ver = 0;
    curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &ver);
    resp.http_version = ver == CURL_HTTP_VERSION_2_0 ? 2 : (ver ? 1 : 0);
    r->on_done(r, &resp, r->ud);
}

static void check_multi_info(http_client *c)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        http_request *r = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode code = msg->data.result;
        if (!r || r->cancelled)
            continue;               /* freed by reap_cancelled */
        /* detach before the callback so it may start/cancel others */
        curl_multi_remove_handle(c->multi, r->easy);
        r->cancelled = 1;           /* a cancel from on_done is a no-op */
        finish(r, code);
        request_free(r);
    }
    reap_cancelled(c);
}

static void socket_action(http_client *c, curl_socket_t fd, int ev_bitmask)
{
    int running = 0;
    c->in_curl++;
    curl_multi_socket_action(c->multi, fd, ev_bitmask, &running);
    c->in_curl--;
    if (c->in_curl == 0)
        check_multi_info(c);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    socket_action((http_client *)w->data, CURL_SOCKET_TIMEOUT, 0);
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    http_sock *s = (http_sock *)w;
    int action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) |
                 ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    socket_action(s->client, s->fd, action);
}

/* CURLMOPT_TIMERFUNCTION: -1 stops the timer, 0 means "call me now" (done
 * through a zero-delay ev_timer, never re-entering curl from here). */
static int multi_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    http_client *c = userp;
    ev_timer_stop(c->loop, &c->timer);
    if (timeout_ms >= 0) {
        ev_timer_set(&c->timer, (double)timeout_ms / 1000.0, 0.);
        ev_timer_start(c->loop, &c->timer);
    }
    return 0;
}

/* CURLMOPT_SOCKETFUNCTION: keep one ev_io per socket in step with `what`. */
static int multi_sock_cb(CURL *e, curl_socket_t fd, int what, void *userp, void *sockp)
{
    (void)e;
    http_client *c = userp;
    http_sock *s = sockp;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            ev_io_stop(c->loop, &s->io);
            free(s);
            curl_multi_assign(c->multi, fd, NULL);
        }
        return 0;
    }
    int events = ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            return -1;
        s->client = c;
        s->fd = fd;
        curl_multi_assign(c->multi, fd, s);
    } else {
        ev_io_stop(c->loop, &s->io);
    }
    ev_io_init(&s->io, io_cb, fd, events);
    ev_io_start(c->loop, &s->io);
    return 0;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    http_request *r = ud;
    size_t n = size * nmemb;
    if (r->cancelled)
        return 0;
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (r->stream && status >= 200 && status < 300) {
        if (r->on_data(r, ptr, n, r->ud) != 0 || r->cancelled)
            return 0;
        return n;
    }
    if (r->save && status >= 200 && status < 300) {
        if (n > r->max_body - r->saved) {
            snprintf(r->overbuf, sizeof r->overbuf, "response body over %zu bytes", r->max_body);
            return 0;
        }
        for (size_t off = 0; off < n;) {
            ssize_t w = write(r->save_fd, ptr + off, n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                snprintf(r->overbuf, sizeof r->overbuf, "writing the body: %s", w < 0 ? strerror(errno) : "no progress");
                return 0;
            }
            off += (size_t)w;
        }
        r->saved += n;
        return n;
    }
    if (r->body.len + n + 1 > r->max_body) {
        snprintf(r->overbuf, sizeof r->overbuf, "response body over %zu bytes", r->max_body);
        return 0;
    }
    return util_buf_put(&r->body, ptr, n) == 0 ? n : 0;
}

/* curl_mime_data_cb's read callback of a part from a file: the next bytes at part_off. */
static size_t part_read(char *buf, size_t size, size_t nitems, void *arg)
{
    http_request *r = arg;
    size_t want = size * nitems, left = r->part_len - r->part_off;
    if (left == 0)
        return 0;
    if (want > left)
        want = left;
    ssize_t n;
    do
        n = pread(r->part_fd, buf, want, (off_t)r->part_off);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        if (n < 0)
            snprintf(r->overbuf, sizeof r->overbuf, "reading the part: %s", strerror(errno));
        else
            snprintf(r->overbuf, sizeof r->overbuf, "reading the part: the file ends at %zu of %zu bytes",
                     r->part_off, r->part_len);
        return CURL_READFUNC_ABORT;
    }
    r->part_off += (size_t)n;
    return (size_t)n;
}

/* Its seek callback: libcurl rewinds a part to send it again (a redirect, an auth retry). */
static int part_seek(void *arg, curl_off_t offset, int origin)
{
    http_request *r = arg;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > r->part_len)
        return CURL_SEEKFUNC_FAIL;
    r->part_off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* Sets the part's bytes: a copy of data, or a file read as it is sent. */
static int part_body(http_request *r, curl_mimepart *mp, const http_part *p)
{
    if (!p->from_fd)
        return curl_mime_data(mp, p->data ? p->data : "", p->len) != CURLE_OK;
    r->part_fd = p->fd;
    r->part_len = p->len;
    r->part_off = 0;
    return curl_mime_data_cb(mp, (curl_off_t)p->len, part_read, part_seek, NULL, r) != CURLE_OK;
}

http_client *http_client_new(struct ev_loop *loop, char *err, size_t errlen)
{
    static int global_done;
    if (!loop) {
        util_set_err(err, errlen, "http_client_new: loop is required");
        return NULL;
    }
    if (!global_done) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            util_set_err(err, errlen, "http_client_new: curl_global_init failed");
            return NULL;
        }
        global_done = 1;
    }
    http_client *c = calloc(1, sizeof *c);
    if (!c) {
        util_set_err(err, errlen, "http_client_new: out of memory");
        return NULL;
    }
    c->loop = loop;
    c->multi = curl_multi_init();
    if (!c->multi) {
        free(c);
        util_set_err(err, errlen, "http_client_new: curl_multi_init failed");
        return NULL;
    }
    ev_timer_init(&c->timer, timer_cb, 0., 0.);
    c->timer.data = c;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, multi_sock_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, multi_timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    return c;
}

void http_client_free(http_client *c)
{
    if (!c)
        return;
    while (c->active) {
        c->active->cancelled = 1;
        request_free(c->active);
    }
    c->reap = NULL;
    /* curl_multi_cleanup calls multi_sock_cb(REMOVE) for sockets it still
     * holds, which frees their watchers. */
    curl_multi_cleanup(c->multi);
    ev_timer_stop(c->loop, &c->timer);
    free(c);
}

size_t http_client_active(const http_client *c)
{
    return c ? c->n_active : 0;
}

static void set_blob(CURL *e, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob b;
    b.data = (void *)data;
    b.len = len;
    b.flags = CURL_BLOB_COPY;
    curl_easy_setopt(e, opt, &b);
}

static int apply_tls(CURL *e, const http_tls *t)
{
    int rc = 0;
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!t)
        return 0;
    if (t->insecure_skip_verify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (t->ca_pem && t->ca_pem_len) {
        set_blob(e, CURLOPT_CAINFO_BLOB, t->ca_pem, t->ca_pem_len);
        curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
    } else if (t->ca_file && *t->ca_file) {
        rc |= curl_easy_setopt(e, CURLOPT_CAINFO, t->ca_file);
        curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
    }
    if (t->cert_pem && t->cert_pem_len) {
        set_blob(e, CURLOPT_SSLCERT_BLOB, t->cert_pem, t->cert_pem_len);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (t->cert_file && *t->cert_file) {
        rc |= curl_easy_setopt(e, CURLOPT_SSLCERT, t->cert_file);
    }
    if (t->key_pem && t->key_pem_len) {
        set_blob(e, CURLOPT_SSLKEY_BLOB, t->key_pem, t->key_pem_len);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (t->key_file && *t->key_file) {
        rc |= curl_easy_setopt(e, CURLOPT_SSLKEY, t->key_file);
    }
    return rc;
}

/* Appends header line h to r's list; -1 when out of memory (the list stays as it was). */
static int add_header(http_request *r, const char *h)
{
    struct curl_slist *n = curl_slist_append(r->headers, h);
    if (!n)
        return -1;
    r->headers = n;
    return 0;
}

http_request *http_request_start(http_client *c, const http_opts *o, char *err, size_t errlen)
{
    if (!c || !o) {
        util_set_err(err, errlen, "http_request_start: client and options are required");
        return NULL;
    }
    if (!o->url || !*o->url) {
        util_set_err(err, errlen, "http_request_start: url is required");
        return NULL;
    }
    if (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0) {
        util_set_err(err, errlen, "http_request_start: url must start with http:// or https://: %s", o->url);
        return NULL;
    }
    if (!o->on_done || (o->stream && !o->on_data)) {
        util_set_err(err, errlen, "http_request_start: on_done (and on_data when streaming) are required");
        return NULL;
    }
    if ((o->stream && o->save) || (o->save && o->save_fd < 0) || (o->part && o->part->from_fd && o->part->fd < 0)) {
        util_set_err(err, errlen, "http_request_start: stream and save exclude each other; save_fd and a part's "
                                  "fd must be open descriptors");
        return NULL;
    }
    http_request *r = calloc(1, sizeof *r);
    if (!r) {
        util_set_err(err, errlen, "http_request_start: out of memory");
        return NULL;
    }
    r->client = c;
    r->on_data = o->on_data;
    r->on_done = o->on_done;
    r->ud = o->ud;
    r->stream = o->stream;
    r->save = o->save;
    r->save_fd = o->save_fd;
    r->max_body = o->max_body ? o->max_body : (size_t)64 << 20;
    r->body.first = 4096;
    r->easy = curl_easy_init();
    if (!r->easy) {
        free(r);
        util_set_err(err, errlen, "http_request_start: curl_easy_init failed");
        return NULL;
    }
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, o->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     o->http1_only ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000L);
    if (o->timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms);
    if (o->idle_timeout_s > 0) {
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, o->idle_timeout_s);
    }
    const char *method = o->method && *o->method ? o->method : "GET";
    if (strcmp(method, "GET") != 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (o->part) {
        curl_mimepart *mp = NULL;
        r->mime = curl_mime_init(e);
        if (!r->mime || !(mp = curl_mime_addpart(r->mime)) || curl_mime_name(mp, o->part->name) ||
            curl_mime_filename(mp, o->part->filename) || curl_mime_type(mp, o->part->type) ||
            part_body(r, mp, o->part) ||
            curl_easy_setopt(e, CURLOPT_MIMEPOST, r->mime)) {
            curl_mime_free(r->mime);
            curl_easy_cleanup(e);
            free(r);
            util_set_err(err, errlen, "http_request_start: multipart part rejected by libcurl");
            return NULL;
        }
    } else if (o->body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
        strcmp(method, "PATCH") == 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(o->body ? o->body_len : 0));
        curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, o->body ? o->body : "");
    }
    if (apply_tls(e, o->tls) != 0) {
        curl_easy_cleanup(e);
        curl_mime_free(r->mime);
        free(r);
        util_set_err(err, errlen, "http_request_start: TLS options rejected by libcurl");
        return NULL;
    }
    /* without CURLOPT_PROXY libcurl takes the environment's proxies; "" turns them off */
    if (o->proxy)
        curl_easy_setopt(e, CURLOPT_PROXY, o->proxy);
    if (o->bearer_token && *o->bearer_token) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, o->bearer_token);
    }
    int oom = 0;
    for (const char *const *h = o->headers; h && *h && !oom; h++)
        oom = add_header(r, *h);
    /* no "Expect: 100-continue" round trip for bodies */
    if (oom || add_header(r, "Expect:")) {
        curl_slist_free_all(r->headers);
        curl_easy_cleanup(e);
        curl_mime_free(r->mime);
        free(r);
        util_set_err(err, errlen, "http_request_start: out of memory");
        return NULL;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);

    r->next = c->active;
    if (c->active)
        c->active->prev = r;
    c->active = r;
    c->n_active++;
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        r->cancelled = 1;
        request_free(r);
        util_set_err(err, errlen, "http_request_start: curl_multi_add_handle failed");
        return NULL;
    }
    return r;
}

void http_request_cancel(http_request *r)
{
    if (!r || r->cancelled)
        return;
    r->cancelled = 1;
    http_client *c = r->client;
    if (c->in_curl) {
        r->reap_next = c->reap;
        c->reap = r;
    } else {
        request_free(r);
    }
}
