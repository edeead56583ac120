/* SPDX-License-Identifier: Apache-2.0 */
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
 * TLS: 1.2 and 1.3 only (WEBHOOK_TLS_PRIORITIES, a GnuTLS priority string: GnuTLS 3.7's NORMAL
 * still offers TLS 1.0 and 1.1; the API server's client asks for 1.2 or later anyway).
 *
 * Certificates, one of two ways:
 *  - in memory (webhook_opts.cert_pem/key_pem, then webhook_set_pair): core/certsync hands over
 *    the pair of the Secret it manages (--webhook-cert-secret); each new pair starts a new
 *    daemon as a file change does below;
 *  - PEM files (a mounted Secret: tls.crt, tls.key), read at start and checked every
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
struct metrics_family;

#define WEBHOOK_MAX_BODY ((size_t)8 << 20) /* bytes: object + oldObject of 3 MiB each, and more */
#define WEBHOOK_TIMEOUT_S 10u               /* idle connection timeout */
#define WEBHOOK_RELOAD_S 10.0               /* certificate files checked this often */
#define WEBHOOK_CERT_MAX ((size_t)1 << 20)  /* bytes per PEM file */
/* GnuTLS priorities (gnutls_priority_init, "Priority strings" in the GnuTLS manual): the
 * defaults without any protocol version, then TLS 1.3 and 1.2 */
#define WEBHOOK_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

typedef struct webhook webhook;

typedef struct webhook_opts {
    const char *addr;       /* host:port as server_listen ("0.0.0.0:9443", "127.0.0.1:0") */
    const char *cert_file;  /* PEM certificate chain */
    const char *key_file;   /* PEM private key */
    const char *cert_pem;   /* or the chain and key as PEM texts (copied), without files */
    const char *key_pem;
    struct lhost *host;     /* runs fc.admission and the policies (not owned) */
    size_t max_body;        /* 0: WEBHOOK_MAX_BODY */
    unsigned timeout_s;     /* 0: WEBHOOK_TIMEOUT_S */
    double reload_s;        /* 0: WEBHOOK_RELOAD_S */
    /* NULL, or flink_controller_webhook_admissions_total (metrics_register_admissions): each
     * review of /validate and /mutate counted by request.operation and response.allowed */
    struct metrics_family *admissions;
} webhook_opts;

/* Binds, loads the certificate pair and starts serving on `loop`. NULL with err filled
 * ("webhook: cert-file /x: No such file or directory", "webhook: 127.0.0.1:80: bind: ...",
 * "webhook: cannot start TLS with /x and /y") on failure. */
webhook *webhook_start(struct ev_loop *loop, const webhook_opts *o, char *err, size_t errlen);

/* Serves `cert_pem`, `key_pem` (PEM texts, copied) from now on, on a webhook started with a
 * pair in memory: a new daemon takes the listening socket, the previous one drains its
 * connections. 0, or -1 with err ("webhook: cannot start TLS with the certificate pair
 * given" for a pair GnuTLS refuses; the previous pair keeps serving). */
int webhook_set_pair(webhook *w, const char *cert_pem, const char *key_pem, char *err, size_t errlen);

/* The bound port (useful after ":0"). */
int webhook_port(const webhook *w);

/* Certificate pairs loaded since start (1 after start; +1 per successful reload). */
unsigned webhook_generation(const webhook *w);

/* Stops listening, closes connections and frees; not from inside an MHD callback. NULL: no-op. */
void webhook_stop(webhook *w);

/* `flink-controller webhook --addr A --cert-file F --key-file F [--policy-dir D]
 * [--policy-timeout-ms N] [--policy-memory-mib N] [--log-format text|json] [--cert-check-seconds N]
 * [--metrics-addr A]`: serves only the
 * webhook (no API server connection) until SIGTERM/SIGINT; exit 0, 1 when it cannot start,
 * 2 for usage errors. --metrics-addr (core/server.h's address forms) also serves GET /metrics
 * over plain HTTP: build_info, webhook_admissions_total and process_*. The controller serves the
 * same with `run --webhook-addr ...`. */
int webhook_main(int argc, char **argv);

#endif
