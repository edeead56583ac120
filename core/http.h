/* SPDX-License-Identifier: Apache-2.0 */
/* core/http: asynchronous HTTP(S) client, libcurl's multi interface driven by
 * a libev loop (curl's multi-socket model: CURLMOPT_SOCKETFUNCTION gives the
 * sockets to watch, CURLMOPT_TIMERFUNCTION the one timeout; both are turned
 * into ev_io / ev_timer watchers and fed back with curl_multi_socket_action).
 * One thread, nothing blocks.
 *
 * Defaults: TLS peer and host verification on, HTTP/2 when the server offers
 * it over TLS (ALPN, CURL_HTTP_VERSION_2TLS, streams multiplexed on one
 * connection), TCP keepalive (idle 30 s, interval 15 s) so that a dead path
 * under a quiet watch is noticed, connect timeout 10 s, no total timeout.
 *
 * Lifetime: a request lives from http_request_start() until its on_done
 * callback returns (then it is freed), or until http_request_cancel().
 * Callbacks run from inside the loop, never from inside http_request_start().
 */
#ifndef FC_HTTP_H
#define FC_HTTP_H

#include <stddef.h>
#include <ev.h>

typedef struct http_client http_client;
typedef struct http_request http_request;

/* TLS material. Each of CA, client certificate and key is either a file path
 * (`*_file`) or PEM bytes in memory (`*_pem` + `*_pem_len`, handed to libcurl
 * as a blob: no temporary files); when both are set the blob wins. With a CA
 * set only that CA is trusted; without one, the system bundle is.
 * `insecure_skip_verify` turns verification off (kubeconfig
 * `insecure-skip-tls-verify`). All strings are copied by libcurl at start. */
typedef struct http_tls {
    const char *ca_file;
    const char *ca_pem;
    size_t ca_pem_len;
    const char *cert_file;
    const char *cert_pem;
    size_t cert_pem_len;
    const char *key_file;
    const char *key_pem;
    size_t key_pem_len;
    int insecure_skip_verify;
} http_tls;

/* What on_done sees. All pointers are valid only during the callback. */
typedef struct http_response {
    long status;              /* HTTP status code; 0 when no response arrived */
    int curl_code;            /* CURLcode, 0 when the transfer completed */
    const char *error;        /* transport error text, "" when none */
    const char *body;         /* buffered body, NUL-terminated ("" when streamed
                                 or saved with a 2xx status: the bytes went to
                                 on_data or to save_fd) */
    size_t body_len;          /* bytes (saved with a 2xx status: the bytes written
                                 to save_fd) */
    double retry_after_s;     /* Retry-After in seconds (delta or HTTP-date,
                                 RFC 9110 10.2.3); -1 when absent */
    const char *content_type; /* "" when absent */
    long http_version;        /* 1 for HTTP/1.x, 2 for HTTP/2, 0 unknown */
} http_response;

/* Streaming body callback: `data` holds `len` bytes as they arrive (chunk
 * boundaries are arbitrary). Only called for 2xx responses; other statuses
 * are buffered and given to on_done. Return 0 to go on, non-zero to abort the
 * transfer (on_done then reports curl_code CURLE_WRITE_ERROR). */
typedef int (*http_data_fn)(http_request *req, const char *data, size_t len, void *ud);
/* Completion callback, called exactly once unless the request was cancelled.
 * It may start new requests and cancel other ones; it must not free the
 * client. The request is freed when it returns. */
typedef void (*http_done_fn)(http_request *req, const http_response *resp, void *ud);

/* One file part of a multipart/form-data POST (RFC 7578) built by libcurl's mime API:
 * `name` the form field, `filename` and `type` (Content-Type of the part) as sent, and `len`
 * bytes: `data` (copied by libcurl at start), or with `from_fd` 1 the bytes at offsets
 * 0..len-1 of the open file `fd`, read (pread, 64 KiB at a time: never whole in memory) as
 * they are sent and again when libcurl rewinds; `fd` must stay open until on_done ran or the
 * request was cancelled. A file shorter than `len` or a failed read fails the transfer
 * ("reading the part: <why>"). */
typedef struct http_part {
    const char *name;
    const char *filename;
    const char *type;
    const char *data;
    size_t len;
    int from_fd;
    int fd;
} http_part;

typedef struct http_opts {
    const char *method;          /* "GET" when NULL; any token, e.g. "PATCH" */
    const char *url;             /* required, http:// or https:// only */
    const char *const *headers;  /* NULL-terminated "Name: value" list, or NULL */
    const char *body;            /* request body (copied), or NULL */
    const http_part *part;       /* a multipart/form-data body of this one part
                                    (instead of `body`; no Content-Type header of
                                    the caller's: libcurl sets the boundary) */
    size_t body_len;             /* bytes */
    const http_tls *tls;         /* NULL: verify against the system CA bundle */
    const char *bearer_token;    /* sent as "Authorization: Bearer <token>" */
    const char *proxy;           /* CURLOPT_PROXY: "http://h:p", "https://h:p",
                                    "socks5h://h:p" ...; "" = no proxy at all; NULL =
                                    libcurl's default, the environment's (https_proxy,
                                    HTTPS_PROXY, http_proxy, no_proxy, NO_PROXY) */
    long connect_timeout_ms;     /* default 10000 when 0 */
    long timeout_ms;             /* whole transfer incl. streaming; 0 = none */
    long idle_timeout_s;         /* fail the transfer when less than 1 byte a second
                                    arrived over this many seconds (libcurl's
                                    LOW_SPEED_LIMIT/TIME: a stream gone silent on
                                    an open socket); 0 = never */
    int stream;                  /* 1: 2xx body goes to on_data, not buffered */
    int save;                    /* 1: a 2xx body is written to the open file
                                    save_fd as it arrives (not buffered; at most
                                    max_body bytes); a failed write fails the
                                    transfer ("writing the body: <why>"). Other
                                    statuses are buffered as usual */
    int save_fd;
    size_t max_body;             /* buffered (or saved) body cap in bytes, default
                                    64 MiB; over it the transfer fails ("response
                                    body over <max_body> bytes") */
    int http1_only;              /* 1: never negotiate HTTP/2 */
    http_data_fn on_data;        /* required when stream = 1 */
    http_done_fn on_done;        /* required */
    void *ud;                    /* passed to the callbacks */
} http_opts;

/* Creates a client bound to `loop` (calls curl_global_init once per process).
 * Returns NULL and fills err on failure. */
http_client *http_client_new(struct ev_loop *loop, char *err, size_t errlen);
/* Cancels every request still running (their on_done is not called) and
 * frees the client. Must not be called from inside a callback of its own. */
void http_client_free(http_client *c);
/* Number of requests started and not yet done or cancelled. */
size_t http_client_active(const http_client *c);

/* Starts a request. Returns NULL and fills err (e.g. "http_request_start:
 * url is required") on bad options; on_done is then not called. */
http_request *http_request_start(http_client *c, const http_opts *o, char *err, size_t errlen);
/* Stops a request that has not completed: no callback fires for it after
 * this returns. Safe from any callback, including the request's own on_data.
 * Must not be called after its on_done ran (it is freed by then). */
void http_request_cancel(http_request *r);

#endif
