/* core/webhook: the validating and mutating admission webhook for FlinkClusters, served over
 * TLS by GNU libmicrohttpd on the one libev loop (as core/server.c: MHD_USE_EPOLL, its epoll
 * fd watched by an ev_io, MHD_run on readiness, an ev_timer from MHD_get_timeout). TLS is
 * libmicrohttpd's own, which Debian builds with GnuTLS (libmicrohttpd-dev depends on
 * libgnutls28-dev): no TLS or HTTP code here. AdmissionReview admission.k8s.io/v1:
 *
 *   POST /validate   fc.admission.validate (policies/validate.lua, the old object on UPDATE)
 *   POST /mutate     fc.admission.mutate (policies/defaults.lua), answered with a JSON Patch
 *                    (response.patch, base64, patchType JSONPatch) only when something changes
 *   GET  /healthz    200 "ok"
 *   other paths 404, other methods 405; a body over max_body bytes 413; a body that is not
 *   an AdmissionReview, or a framework failure, 400/500 with the reason as text/plain.
 *
 * Certificates: PEM files (a mounted Secret: tls.crt, tls.key), read at start and checked every
 * reload_s seconds; when either file changes (inode, size, mtime or ctime: a Secret update
 * swaps a symlink) a new daemon with the new pair takes over the listening socket and the old
 * one stops accepting, finishes its connections and is stopped (at most after the connection
 * timeout). A pair that cannot be read or loaded is logged and the old one kept.
 * Each connection idles out after timeout_s; each policy call has the host's budgets.
 */
#ifndef FC_WEBHOOK_H
#define FC_WEBHOOK_H

#include <stddef.h>
#include <ev.h>

struct lhost;

#define WEBHOOK_MAX_BODY ((size_t)8 << 20) /* bytes: object + oldObject of 3 MiB each, and more */
#define WEBHOOK_TIMEOUT_S 10u               /* idle connection timeout */
#define WEBHOOK_RELOAD_S 10.0               /* certificate files checked this often */
#define WEBHOOK_CERT_MAX ((size_t)1 << 20)  /* bytes per PEM file */

typedef struct webhook webhook;

typedef struct webhook_opts {
    const char *addr;       /* host:port as server_listen ("0.0.0.0:9443", "127.0.0.1:0") */
    const char *cert_file;  /* PEM certificate chain */
    const char *key_file;   /* PEM private key */
    struct lhost *host;     /* runs fc.admission and the policies (not owned) */
    size_t max_body;        /* 0: WEBHOOK_MAX_BODY */
    unsigned timeout_s;     /* 0: WEBHOOK_TIMEOUT_S */
    double reload_s;        /* 0: WEBHOOK_RELOAD_S */
} webhook_opts;

/* Binds, loads the certificate pair and starts serving on `loop`. NULL with err filled
 * ("webhook: cert-file /x: No such file or directory", "webhook: 127.0.0.1:80: bind: ...",
 * "webhook: cannot start TLS with /x and /y") on failure. */
webhook *webhook_start(struct ev_loop *loop, const webhook_opts *o, char *err, size_t errlen);

/* The bound port (useful after ":0"). */
int webhook_port(const webhook *w);

/* Certificate pairs loaded since start (1 after start; +1 per successful reload). */
unsigned webhook_generation(const webhook *w);

/* Stops listening, closes connections and frees; not from inside an MHD callback. NULL: no-op. */
void webhook_stop(webhook *w);

/* `flink-controller webhook --addr A --cert-file F --key-file F [--policy-dir D]
 * [--policy-timeout-ms N] [--policy-memory-mib N] [--log-format text|json] [--cert-check-seconds N]`:
 * serves only the
 * webhook (no API server connection) until SIGTERM/SIGINT; exit 0, 1 when it cannot start,
 * 2 for usage errors. The controller serves the same with `run --webhook-addr ...`. */
int webhook_main(int argc, char **argv);

#endif
