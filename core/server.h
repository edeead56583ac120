/* SPDX-License-Identifier: Apache-2.0 */
/* core/server: the controller's HTTP endpoints, served by GNU libmicrohttpd
 * (Debian libmicrohttpd-dev; no HTTP/1.1 written here) on the one libev loop
 * without threads: MHD_USE_EPOLL, the daemon's epoll fd
 * (MHD_DAEMON_INFO_EPOLL_FD) watched by an ev_io, MHD_run on readiness and
 * an ev_timer armed from MHD_get_timeout.
 *
 *   GET|HEAD /healthz  200 "ok": the process and its loop are alive (the
 *                      answer itself comes from the loop).
 *   GET|HEAD /readyz   200 "ok" once server_set_ready(s, 1, ...); before,
 *                      503 with the reason as text/plain ("not ready: <reason>").
 *                      Independent of leadership (contracts: Deployment).
 *   GET|HEAD /metrics  200, Content-Type "text/plain; version=0.0.4;
 *                      charset=utf-8", metrics_render() of the registry
 *                      (after the on_scrape hook).
 *   anything else      404; another method on a known path: 405 with Allow.
 * /healthz and /readyz are served on health_addr, /metrics on metrics_addr;
 * when both addresses are equal (and the port is not 0) one listener serves
 * all three.
 *
 * Addresses (`--health-addr`, `--metrics-addr`; as Go's net.Listen but for the empty host):
 *   ":8081"          loopback only, as "127.0.0.1:8081": nothing is reachable from other
 *                    hosts unless asked for by name (the Deployment does, for the kubelet's
 *                    probes and Prometheus)
 *   "0.0.0.0:8081"   every IPv4 interface; "[::]:8081" every interface (IPv6 dual-stack)
 *   "127.0.0.1:0"    loopback, the kernel picks a free port (server_*_port)
 *   "[::1]:8080", "localhost:8080", "10.0.0.5:8081"   (names resolved once at start)
 *   NULL, "" or "0"  that listener is disabled (as controller-runtime's "0")
 * server_listen alone keeps Go's meaning of ":port" (every interface): the webhook's
 * `--addr :9443` is reached by the API server through a Service.
 */
#ifndef FC_SERVER_H
#define FC_SERVER_H

#include <stddef.h>
#include <ev.h>
#include <microhttpd.h>
#include "metrics.h"

typedef struct server server;

typedef struct server_opts {
    const char *health_addr;          /* /healthz, /readyz */
    const char *metrics_addr;         /* /metrics */
    metrics_registry *metrics;        /* rendered on /metrics; NULL = empty body */
    /* called before each /metrics render, e.g. to set the workqueue depth
     * gauge; may be NULL */
    void (*on_scrape)(void *ud);
    void *scrape_ud;
    unsigned connection_limit;        /* per listener, default 64 */
    unsigned connection_timeout_s;    /* idle connection timeout, default 10 s */
} server_opts;

/* Binds the listeners and starts serving on `loop`. Returns NULL with
 * err filled (e.g. "server: health-addr 127.0.0.1:80: bind: Permission
 * denied", "server: metrics-addr x: want host:port") when an address is
 * malformed or cannot be bound. Starts not ready, reason "starting". */
server *server_start(struct ev_loop *loop, const server_opts *opts, char *err, size_t errlen);

/* Sets readiness; `reason` (copied, may be NULL) is what /readyz reports
 * while not ready, e.g. "caches not synced". */
void server_set_ready(server *s, int ready, const char *reason);
int server_ready(const server *s);

/* The bound TCP ports (useful after ":0"); 0 when that listener is
 * disabled. With one shared listener both return the same port. */
int server_health_port(const server *s);
int server_metrics_port(const server *s);

/* A bound, listening, non-blocking (close-on-exec) TCP socket for `addr` (the forms above,
 * but ":port" is every interface, IPv6 dual-stack when available, and none is disabled);
 * *port_out gets the bound port. -1 with err ("server: <what> <addr>:
 * bind: ...") on failure. Also used by core/webhook.c. */
int server_listen(const char *what, const char *addr, int *port_out, char *err, size_t errlen);

/* A libmicrohttpd daemon started with MHD_USE_EPOLL, driven by `loop` (also core/webhook.c):
 * its epoll fd watched by an ev_io, MHD_run on readiness and an ev_timer armed from
 * MHD_get_timeout. server_mhd_attach returns 0, or -1 with err (the daemon is then stopped);
 * server_mhd_detach stops the watchers and the daemon (not from inside an MHD callback). */
typedef struct server_mhd {
    struct ev_loop *loop;
    struct MHD_Daemon *d;
    ev_io io;
    ev_timer timer;
    int started;
} server_mhd;
int server_mhd_attach(server_mhd *m, struct ev_loop *loop, struct MHD_Daemon *d, char *err, size_t errlen);
void server_mhd_detach(server_mhd *m);

/* Queues a response: `body` (len bytes) copied, or taken over and freed when `owned`, with
 * Content-Type `ctype`; a 405 gets `Allow: allow`. MHD_NO when it cannot. */
enum MHD_Result server_respond(struct MHD_Connection *conn, unsigned status, const char *ctype, char *body,
                               size_t len, int owned, const char *allow);

/* Stops listening, closes connections and frees. Not from inside an MHD
 * callback (call it from a loop callback or after the loop). NULL is a no-op. */
void server_stop(server *s);

#endif
