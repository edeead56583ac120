/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/server: the server on 127.0.0.1:0 inside the test,
 * fetched with libcurl (core/http, the multi interface on the same loop, so
 * one thread serves and fetches). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "http.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "server.h"
#include "transport_tap.h"

static struct ev_loop *loop;

/* 1 when a TCP connection to ip:port is accepted, else 0 (blocking, refused at once). */
static int can_connect(const char *ip, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    inet_pton(AF_INET, ip, &sa.sin_addr);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0) close(fd);
    return ok;
}
static http_client *hc;

typedef struct fetch {
    int done;
    long status;
    char body[8192];
    char ctype[128];
    char error[256];
} fetch;

static void on_done(http_request *req, const http_response *resp, void *ud)
{
    (void)req;
    fetch *f = ud;
    f->status = resp->status;
    snprintf(f->body, sizeof f->body, "%s", resp->body ? resp->body : "");
    snprintf(f->ctype, sizeof f->ctype, "%s", resp->content_type ? resp->content_type : "");
    snprintf(f->error, sizeof f->error, "%s", resp->error ? resp->error : "");
    f->done = 1;
}

static void start(fetch *f, const char *method, int port, const char *path)
{
    char url[256], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    memset(f, 0, sizeof *f);
    http_opts o = { .method = method, .url = url, .timeout_ms = 5000, .on_done = on_done, .ud = f };
    if (!http_request_start(hc, &o, err, sizeof err)) {
        snprintf(f->error, sizeof f->error, "%s", err);
        f->done = 1;
    }
}

static fetch *get(const char *method, int port, const char *path)
{
    static fetch f;
    start(&f, method, port, path);
    loop_run_until(loop, &f.done, 5);
    return &f;
}

static int scrapes;
static metrics_family *depth;
static void on_scrape(void *ud)
{
    (void)ud;
    scrapes++;
    metrics_set(depth, NULL, 40 + scrapes);
}

static void stop_cb(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l;
    (void)revents;
    server_stop(w->data);
}

/* HEAD with libcurl's easy interface (CURLOPT_NOBODY) in a child process
 * while this process serves from the loop. Returns the status class (2 for
 * 2xx, 5 for 5xx: an exit code cannot hold the status), or -1 when a body
 * came back or the transfer failed. */
static int child_status = -2;
static void on_child(struct ev_loop *l, ev_child *w, int revents)
{
    (void)revents;
    ev_child_stop(l, w);
    child_status = WIFEXITED(w->rstatus) ? WEXITSTATUS(w->rstatus) : -1;
}
static size_t count_body(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += sz * n;
    return sz * n;
}
static int head_in_child(int port, const char *path)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    pid_t pid = fork();
    if (pid == 0) {
        CURL *c = curl_easy_init();
        size_t body = 0;
        long code = 0;
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, count_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
        CURLcode rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(c);
        _exit(rc == CURLE_OK && body == 0 ? (int)(code / 100) : 0);
    }
    ev_child w;
    ev_child_init(&w, on_child, pid, 0);
    ev_child_start(loop, &w);
    child_status = -2;
    while (child_status == -2) ev_run(loop, EVRUN_ONCE);
    return child_status > 0 ? child_status : -1;
}

int main(void)
{
    char err[256];
    loop = ev_default_loop(0);
    hc = http_client_new(loop, err, sizeof err);
    FILE *logf = tmpfile(); /* the log, checked for a quiet start */
    log_set_output(logf);

    metrics_registry *reg = metrics_registry_new(0, NULL);
    metrics_controller mc;
    metrics_register_controller(reg, &mc, err, sizeof err);
    depth = mc.workqueue_depth;
    metrics_inc(mc.reconcile_total, (const char *[]){ "success" });

    server_opts so = { .health_addr = "127.0.0.1:0", .metrics_addr = "127.0.0.1:0",
                       .metrics = reg, .on_scrape = on_scrape };
    server *s = server_start(loop, &so, err, sizeof err);
    OK(s != NULL, "server on two free loopback ports (%s)", s ? "" : err);
    /* libmicrohttpd 0.9.75 warns "MHD_OPTION_EXTERNAL_LOGGER is not the first option" through
     * that logger unless it is the first option parsed; MHD_USE_ERROR_LOG keeps its errors */
    fflush(logf);
    IS_INT(ftell(logf), 0, "a quiet start: nothing logged by MHD or the server");
    int hp = server_health_port(s), mp = server_metrics_port(s);
    OK(hp > 0 && mp > 0 && hp != mp, "two ports reported: %d, %d", hp, mp);

    fetch *f = get("GET", hp, "/healthz");
    IS_INT(f->status, 200, "/healthz 200");
    IS_STR(f->body, "ok\n", "/healthz body");
    f = get("GET", hp, "/readyz");
    IS_INT(f->status, 503, "/readyz 503 before ready");
    IS_STR(f->body, "not ready: starting\n", "/readyz says why (initial reason)");
    OK(!server_ready(s), "server_ready 0");
    server_set_ready(s, 0, "caches not synced");
    f = get("GET", hp, "/readyz");
    IS_STR(f->body, "not ready: caches not synced\n", "/readyz reason set by the caller");
    server_set_ready(s, 1, NULL);
    f = get("GET", hp, "/readyz");
    IS_INT(f->status, 200, "/readyz 200 once ready");
    IS_STR(f->body, "ok\n", "/readyz body ok");
    server_set_ready(s, 0, "shutting down");
    f = get("GET", hp, "/readyz");
    IS_INT(f->status, 503, "/readyz 503 again");

    f = get("GET", mp, "/metrics");
    IS_INT(f->status, 200, "/metrics 200");
    IS_STR(f->ctype, "text/plain; version=0.0.4; charset=utf-8", "/metrics content type");
    OK(strstr(f->body, "\nflink_controller_reconcile_total{result=\"success\"} 1\n") != NULL,
       "/metrics carries the registry");
    OK(strstr(f->body, "\nflink_controller_workqueue_depth 41\n") != NULL,
       "on_scrape ran before the render");
    IS_INT(scrapes, 1, "one scrape");

    f = get("GET", hp, "/metrics");
    IS_INT(f->status, 404, "/metrics not on the health port");
    f = get("GET", mp, "/healthz");
    IS_INT(f->status, 404, "/healthz not on the metrics port");
    f = get("GET", hp, "/nope");
    IS_INT(f->status, 404, "unknown path 404");
    f = get("GET", hp, "/healthz/x");
    IS_INT(f->status, 404, "no prefix match");
    f = get("POST", hp, "/healthz");
    IS_INT(f->status, 405, "POST /healthz 405");
    IS_INT(head_in_child(hp, "/healthz"), 2, "HEAD /healthz 2xx without a body (curl easy, CURLOPT_NOBODY)");
    IS_INT(head_in_child(hp, "/readyz"), 5, "HEAD /readyz 5xx (not ready) without a body");

    /* a POST with a body on an unknown path is read and answered */
    {
        static fetch pf;
        char url[128];
        snprintf(url, sizeof url, "http://127.0.0.1:%d/upload", hp);
        static char big[100000];
        memset(big, 'x', sizeof big);
        memset(&pf, 0, sizeof pf);
        http_opts o = { .method = "POST", .url = url, .body = big, .body_len = sizeof big,
                        .timeout_ms = 5000, .on_done = on_done, .ud = &pf };
        http_request_start(hc, &o, err, sizeof err);
        loop_run_until(loop, &pf.done, 5);
        IS_INT(pf.status, 404, "POST with a 100 kB body answered 404");
    }

    /* many at once */
    {
        static fetch many[40];
        for (int i = 0; i < 40; i++) start(&many[i], "GET", i % 2 ? hp : mp, i % 2 ? "/healthz" : "/metrics");
        int ok = 0;
        for (int i = 0; i < 40; i++) {
            loop_run_until(loop, &many[i].done, 5);
            ok += many[i].status == 200;
        }
        IS_INT(ok, 40, "40 concurrent requests all 200");
    }

    /* an idle raw connection does not block the others, and stop closes it */
    int raw = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)hp) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    OK(connect(raw, (struct sockaddr *)&sa, sizeof sa) == 0, "raw connection opened");
    (void)!write(raw, "GET /hea", 8);
    f = get("GET", hp, "/healthz");
    IS_INT(f->status, 200, "served while another connection sends half a request");

    /* a port in use is an error with a reason */
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", hp);
    server_opts busy = { .health_addr = addr };
    OK(server_start(loop, &busy, err, sizeof err) == NULL && strstr(err, "bind: Address already in use"),
       "port in use refused: %s", err);
    server_opts bad = { .health_addr = "8081" };
    OK(server_start(loop, &bad, err, sizeof err) == NULL && strstr(err, "want host:port"),
       "address without colon refused: %s", err);
    bad.health_addr = "127.0.0.1:99999";
    OK(server_start(loop, &bad, err, sizeof err) == NULL, "port out of range refused");
    bad.health_addr = "::1:80";
    OK(server_start(loop, &bad, err, sizeof err) == NULL, "unbracketed IPv6 refused");
    bad.health_addr = "127.0.0.1:x";
    OK(server_start(loop, &bad, err, sizeof err) == NULL, "non-numeric port refused");

    /* stop from a loop callback while the raw connection is open */
    ev_timer st;
    ev_timer_init(&st, stop_cb, 0, 0);
    st.data = s;
    ev_timer_start(loop, &st);
    ev_run(loop, EVRUN_ONCE);
    char c;
    ssize_t n = read(raw, &c, 1);
    IS_INT(n, 0, "server_stop closed the open connection (EOF)");
    close(raw);
    f = get("GET", hp, "/healthz");
    IS_INT(f->status, 0, "nothing listens after stop");

    /* ":port" is loopback only; "0.0.0.0:port" every interface (when the host has an address
     * other than loopback, connecting to it tells them apart) */
    char other[INET_ADDRSTRLEN] = "";
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i && !other[0]; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !(i->ifa_flags & IFF_LOOPBACK))
                inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, other, sizeof other);
        freeifaddrs(ifs);
    }
    const struct { const char *addr; int everywhere; } reach[] = { { ":0", 0 }, { "0.0.0.0:0", 1 } };
    for (size_t r = 0; r < 2; r++) {
        server_opts ro = { .health_addr = reach[r].addr };
        s = server_start(loop, &ro, err, sizeof err);
        OK(s != NULL, "\"%s\" binds (%s)", reach[r].addr, s ? "" : err);
        hp = server_health_port(s);
        IS_INT(can_connect("127.0.0.1", hp), 1, "\"%s\" answers on loopback", reach[r].addr);
        if (other[0])
            IS_INT(can_connect(other, hp), reach[r].everywhere, "\"%s\" %s on %s", reach[r].addr,
                   reach[r].everywhere ? "answers" : "is not reachable", other);
        else
            printf("# no address but loopback here: the other-interface check is skipped\n");
        server_stop(s);
    }

    /* one shared listener, loopback, on a port found free just now */
    int tmp = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in ta = { .sin_family = AF_INET };
    socklen_t tl = sizeof ta;
    bind(tmp, (struct sockaddr *)&ta, sizeof ta);
    getsockname(tmp, (struct sockaddr *)&ta, &tl);
    close(tmp);
    snprintf(addr, sizeof addr, ":%d", ntohs(ta.sin_port));
    server_opts one = { .health_addr = addr, .metrics_addr = addr, .metrics = reg };
    s = server_start(loop, &one, err, sizeof err);
    OK(s != NULL, "\"%s\" binds loopback (%s)", addr, s ? "" : err);
    hp = server_health_port(s);
    IS_INT(hp, ntohs(ta.sin_port), "the port asked for");
    IS_INT(server_metrics_port(s), hp, "one listener for equal addresses");
    f = get("GET", hp, "/metrics");
    IS_INT(f->status, 200, "/metrics on the shared port");
    f = get("GET", hp, "/healthz");
    IS_INT(f->status, 200, "/healthz on the shared port");
    server_stop(s);

    /* IPv6 loopback, when the host has it */
    server_opts v6 = { .health_addr = "[::1]:0" };
    s = server_start(loop, &v6, err, sizeof err);
    if (s) {
        static fetch f6;
        char url[64];
        snprintf(url, sizeof url, "http://[::1]:%d/healthz", server_health_port(s));
        memset(&f6, 0, sizeof f6);
        http_opts o = { .url = url, .timeout_ms = 5000, .on_done = on_done, .ud = &f6 };
        http_request_start(hc, &o, err, sizeof err);
        loop_run_until(loop, &f6.done, 5);
        IS_INT(f6.status, 200, "[::1]:0 serves /healthz over IPv6");
        server_stop(s);
    } else {
        printf("# no IPv6 loopback here (%s)\n", err);
    }

    /* metrics disabled */
    server_opts nom = { .health_addr = "127.0.0.1:0", .metrics_addr = "0" };
    s = server_start(loop, &nom, err, sizeof err);
    OK(s && server_metrics_port(s) == 0 && server_health_port(s) > 0, "metrics-addr \"0\" disables /metrics");
    server_stop(s);
    server_stop(NULL);

    http_client_free(hc);
    metrics_registry_free(reg);
    log_set_output(NULL);
    fclose(logf);
    ev_loop_destroy(loop);
    return DONE_TESTING();
}
