/* SPDX-License-Identifier: Apache-2.0 */
/* core/server: /healthz, /readyz and /metrics over GNU libmicrohttpd, driven
 * by the libev loop (see server.h). */
#include "server.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

#define SERVER_LISTEN_BACKLOG 64

typedef struct listener {
    struct server *srv;
    server_mhd mhd;
    int port;
    int health, metrics;       /* which paths it serves */
} listener;

struct server {
    struct ev_loop *loop;
    listener l[2];
    size_t nl;
    metrics_registry *metrics;
    void (*on_scrape)(void *ud);
    void *scrape_ud;
    int ready;
    char reason[256];
};

static int addr_disabled(const char *a) { return !a || !*a || strcmp(a, "0") == 0; }

/* Splits "host:port" / "[v6]:port" / ":port". Returns 0 or -1. */
static int split_addr(const char *addr, char *host, size_t hn, char *port, size_t pn)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1]) return -1;
    const char *h = addr;
    size_t hl = (size_t)(colon - addr);
    if (hl && addr[0] == '[') {
        if (addr[hl - 1] != ']') return -1;
        h = addr + 1;
        hl -= 2;
    } else if (memchr(addr, ':', hl)) {
        return -1;   /* a bare IPv6 address needs brackets */
    }
    if (hl >= hn) return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    size_t plen = strlen(colon + 1);
    if (plen >= pn || plen > 5) return -1;
    long p = 0;
    for (const char *c = colon + 1; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        p = p * 10 + (*c - '0');
    }
    if (p > 65535) return -1;
    memcpy(port, colon + 1, plen + 1);
    return 0;
}

int server_listen(const char *what, const char *addr, int *port_out, char *err, size_t errlen)
{
    char host[256], port[8];
    if (split_addr(addr, host, sizeof host, port, sizeof port) != 0) {
        util_set_err(err, errlen, "server: %s %s: want host:port", what, addr);
        return -1;
    }
    /* all interfaces: IPv6 dual-stack first, IPv4 when there is no IPv6 */
    int families[2] = { AF_UNSPEC, AF_UNSPEC };
    int nfam = 1;
    if (!*host) {
        families[0] = AF_INET6;
        families[1] = AF_INET;
        nfam = 2;
    }
    char last[200] = "no address";
    for (int fi = 0; fi < nfam; fi++) {
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_family = families[fi];
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        int rc = getaddrinfo(*host ? host : NULL, port, &hints, &res);
        if (rc != 0) {
            snprintf(last, sizeof last, "resolve: %s", gai_strerror(rc));
            continue;
        }
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                            ai->ai_protocol);
            if (fd < 0) {
                snprintf(last, sizeof last, "socket: %s", strerror(errno));
                continue;
            }
            int one = 1, zero = 0;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (ai->ai_family == AF_INET6 && !*host)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
                snprintf(last, sizeof last, "bind: %s", strerror(errno));
                close(fd);
                continue;
            }
            if (listen(fd, SERVER_LISTEN_BACKLOG) != 0) {
                snprintf(last, sizeof last, "listen: %s", strerror(errno));
                close(fd);
                continue;
            }
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            int bound = 0;
            if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
                if (ss.ss_family == AF_INET)
                    bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
                else if (ss.ss_family == AF_INET6)
                    bound = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
            }
            freeaddrinfo(res);
            *port_out = bound;
            return fd;
        }
        freeaddrinfo(res);
    }
    util_set_err(err, errlen, "server: %s %s: %s", what, addr, last);
    return -1;
}

/* ---- requests ------------------------------------------------------------ */

enum MHD_Result server_respond(struct MHD_Connection *conn, unsigned status, const char *ctype, char *body,
                               size_t len, int owned, const char *allow)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
    if (!r) {
        if (owned) free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED && allow) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *ctype,
                               char *body, size_t len, int owned)
{
    return server_respond(conn, status, ctype, body, len, owned, "GET, HEAD");
}

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    return respond(conn, status, "text/plain; charset=utf-8", (char *)text, strlen(text), 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    static int marker;
    listener *l = cls;
    server *s = l->srv;
    (void)version;
    (void)upload_data;
    if (!*req_cls) {           /* headers only: answer once the body is in */
        *req_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size) {   /* a body we do not want: discard it */
        *upload_data_size = 0;
        return MHD_YES;
    }
    int health = l->health && (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0);
    int metrics = l->metrics && strcmp(url, "/metrics") == 0;
    if (!health && !metrics) return respond_text(conn, MHD_HTTP_NOT_FOUND, "404 page not found\n");
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    if (strcmp(url, "/healthz") == 0) return respond_text(conn, MHD_HTTP_OK, "ok\n");
    if (strcmp(url, "/readyz") == 0) {
        if (s->ready) return respond_text(conn, MHD_HTTP_OK, "ok\n");
        char buf[300];
        snprintf(buf, sizeof buf, "not ready: %s\n", s->reason);
        return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, buf);
    }
    if (s->on_scrape) s->on_scrape(s->scrape_ud);
    size_t len = 0;
    char *text = s->metrics ? metrics_render(s->metrics, &len) : strdup("");
    if (!text) return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    return respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    listener *l = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    char port[16];
    snprintf(port, sizeof port, "%d", l->port);
    log_warn("http server", "port", port, "error", msg, NULL);
}

/* ---- the loop ---------------------------------------------------------------- */

static void mhd_schedule(server_mhd *m)
{
    MHD_UNSIGNED_LONG_LONG ms = 0;
    ev_timer_stop(m->loop, &m->timer);
    if (MHD_get_timeout(m->d, &ms) == MHD_YES) {
        ev_timer_set(&m->timer, (double)ms / 1000.0, 0.);
        ev_timer_start(m->loop, &m->timer);
    }
}

static void mhd_drive(server_mhd *m)
{
    MHD_run(m->d);
    mhd_schedule(m);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    mhd_drive(w->data);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    mhd_drive(w->data);
}

int server_mhd_attach(server_mhd *m, struct ev_loop *loop, struct MHD_Daemon *d, char *err, size_t errlen)
{
    m->loop = loop;
    m->d = d;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info || info->epoll_fd < 0) {
        MHD_stop_daemon(d);
        m->d = NULL;
        util_set_err(err, errlen, "no epoll fd");
        return -1;
    }
    ev_io_init(&m->io, on_io, info->epoll_fd, EV_READ);
    m->io.data = m;
    ev_init(&m->timer, on_timer);
    m->timer.data = m;
    ev_io_start(loop, &m->io);
    m->started = 1;
    mhd_schedule(m);
    return 0;
}

void server_mhd_detach(server_mhd *m)
{
    if (!m->started) return;
    ev_io_stop(m->loop, &m->io);
    ev_timer_stop(m->loop, &m->timer);
    MHD_stop_daemon(m->d);   /* closes its listen socket (unless quiesced) and connections */
    m->started = 0;
}

static int listener_start(server *s, listener *l, int fd, const server_opts *o, char *err,
                          size_t errlen)
{
    l->srv = s;
    unsigned limit = o->connection_limit ? o->connection_limit : 64;
    unsigned timeout = o->connection_timeout_s ? o->connection_timeout_s : 10;
    /* The logger must be the first option: libmicrohttpd (0.9.75) counts the options as it
     * parses them and, when EXTERNAL_LOGGER is not number 1, reports "MHD_OPTION_EXTERNAL_LOGGER
     * is not the first option" (through the new logger) since earlier options could have
     * written to stderr.  MHD_USE_ERROR_LOG is what lets any message reach the logger at all
     * (without it a bad listen socket fails start-up silently). */
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, l,
                                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, l,
                                            MHD_OPTION_LISTEN_SOCKET, fd,
                                            MHD_OPTION_CONNECTION_LIMIT, limit,
                                            MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                                            MHD_OPTION_END);
    if (!d) {   /* the fd is not closed: MHD may have done it */
        util_set_err(err, errlen, "server: port %d: MHD_start_daemon failed", l->port);
        return -1;
    }
    char why[64];
    if (server_mhd_attach(&l->mhd, s->loop, d, why, sizeof why)) {
        util_set_err(err, errlen, "server: port %d: %s", l->port, why);
        return -1;
    }
    return 0;
}

typedef struct plan_item {
    const char *what, *addr;
    int h, m;
} plan_item;

server *server_start(struct ev_loop *loop, const server_opts *opts, char *err, size_t errlen)
{
    if (!loop || !opts) {
        util_set_err(err, errlen, "server: no loop or options");
        return NULL;
    }
    server *s = calloc(1, sizeof *s);
    if (!s) {
        util_set_err(err, errlen, "server: out of memory");
        return NULL;
    }
    s->loop = loop;
    s->metrics = opts->metrics;
    s->on_scrape = opts->on_scrape;
    s->scrape_ud = opts->scrape_ud;
    snprintf(s->reason, sizeof s->reason, "starting");
    int want_h = !addr_disabled(opts->health_addr), want_m = !addr_disabled(opts->metrics_addr);
    /* ":8081" (no host) is loopback here: every interface is asked for by name */
    char haddr[300], maddr[300];
    snprintf(haddr, sizeof haddr, "%s%s", want_h && opts->health_addr[0] == ':' ? "127.0.0.1" : "",
             want_h ? opts->health_addr : "");
    snprintf(maddr, sizeof maddr, "%s%s", want_m && opts->metrics_addr[0] == ':' ? "127.0.0.1" : "",
             want_m ? opts->metrics_addr : "");
    /* equal addresses share one listener, unless the port is 0 (each its own) */
    size_t hl = strlen(haddr);
    int shared = want_h && want_m && strcmp(haddr, maddr) == 0 &&
                 !(hl >= 2 && strcmp(haddr + hl - 2, ":0") == 0);
    plan_item plan[2];
    size_t np = 0;
    if (shared) {
        plan[np++] = (plan_item){ "health-addr", haddr, 1, 1 };
    } else {
        if (want_h) plan[np++] = (plan_item){ "health-addr", haddr, 1, 0 };
        if (want_m) plan[np++] = (plan_item){ "metrics-addr", maddr, 0, 1 };
    }
    int fds[2] = { -1, -1 };
    for (size_t i = 0; i < np; i++) {
        fds[i] = server_listen(plan[i].what, plan[i].addr, &s->l[i].port, err, errlen);
        if (fds[i] < 0) {
            for (size_t j = 0; j < i; j++) close(fds[j]);
            free(s);
            return NULL;
        }
        s->l[i].health = plan[i].h;
        s->l[i].metrics = plan[i].m;
    }
    for (size_t i = 0; i < np; i++) {
        if (listener_start(s, &s->l[i], fds[i], opts, err, errlen) != 0) {
            for (size_t j = i + 1; j < np; j++) close(fds[j]);
            s->nl = i;
            server_stop(s);
            return NULL;
        }
        s->nl = i + 1;
    }
    return s;
}

void server_set_ready(server *s, int ready, const char *reason)
{
    if (!s) return;
    s->ready = ready ? 1 : 0;
    snprintf(s->reason, sizeof s->reason, "%s", reason ? reason : "");
}

int server_ready(const server *s) { return s ? s->ready : 0; }

static int port_of(const server *s, int health)
{
    if (!s) return 0;
    for (size_t i = 0; i < s->nl; i++)
        if (health ? s->l[i].health : s->l[i].metrics) return s->l[i].port;
    return 0;
}

int server_health_port(const server *s) { return port_of(s, 1); }
int server_metrics_port(const server *s) { return port_of(s, 0); }

void server_stop(server *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nl; i++) {
        server_mhd_detach(&s->l[i].mhd);
    }
    free(s);
}
