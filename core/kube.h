/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube: the Kubernetes API client: asynchronous calls on top of core/http (credentials,
 * TLS, proxy, rate limit, retries, paginated lists, watch streams). JSON goes through jansson
 * (libjansson): the C side must read watch events and list pages (type,
 * metadata.resourceVersion, names, owner references, labels) to keep the reflector's cache, so
 * a C JSON library is linked instead of shipping raw lines to Lua.
 *
 * Errors: functions returning int give 0 on success and -1 with a message in
 * `err` (never abort on bad input). Asynchronous calls report through their
 * callback exactly once, unless cancelled with kube_cancel().
 *
 * The family: core/kube_config (where the API server is, credentials' sources), core/kube_path
 * (kinds and paths), this file (the client and its calls), core/kube_ops (the object writes);
 * kube.h includes their headers.
 */
#ifndef FC_KUBE_H
#define FC_KUBE_H

#include <stddef.h>
#include <ev.h>
#include <jansson.h>

#include "http.h"
#include "kube_config.h"
#include "kube_path.h"
#include "kubecred.h"
#include "util.h"

#define KUBE_MAX_RETRIES 10     /* client-go request.go maxRetries for 429/5xx + Retry-After */
#define KUBE_TOKEN_RELOAD_S 60  /* client-go NewCachedFileTokenSource period */
/* An exec plugin's credential counts as expired this long before its expirationTimestamp (a
 * request under way, clocks apart), and a new one is fetched in the background from this long
 * before that, so that requests do not wait for the plugin. */
#define KUBE_EXEC_EXPIRY_MARGIN_S 10
#define KUBE_EXEC_REFRESH_AHEAD_S 60
#define KUBE_EXEC_RETRY_S 10     /* after a failed background refresh, the next one waits */
/* A watch stream silent this long is taken for dead (a half-closed connection: the socket open,
 * nothing sent) and ends with an error: the API server sends a BOOKMARK at least every minute to
 * a watch with allowWatchBookmarks (apiserver cacher's bookmarkFrequency, 1 min; seen on
 * kube-apiserver 1.34), so a live watch is never this quiet. */
#define KUBE_WATCH_IDLE_S 90

/* ---- client-side rate limit: a token bucket (pure logic) -------------- */

/* Tokens refill at `qps` per second up to `burst`; each request takes one.
 * Reservations may drive the bucket negative, so waiting callers queue up in
 * order (as golang.org/x/time/rate Reserve does, which client-go uses). */
typedef struct kube_limiter {
    double qps;      /* tokens per second; <= 0 disables the limit */
    double burst;    /* capacity, >= 1 */
    double tokens;   /* current tokens (may be negative) */
    double last;     /* clock (seconds) of the last update */
} kube_limiter;

/* Starts full (`burst` tokens) at time `now` (seconds, any monotonic clock). */
void kube_limiter_init(kube_limiter *l, double qps, int burst, double now);
/* Takes one token at `now`; returns how long (seconds, >= 0) the caller must
 * wait before sending. */
double kube_limiter_reserve(kube_limiter *l, double now);

/* ---- client and calls ------------------------------------------------ */

typedef struct kube_client kube_client;
typedef struct kube_call kube_call;

/* The outcome of a call; pointers are valid during the callback only
 * (json_incref `body` to keep it). */
typedef struct kube_result {
    long status;           /* HTTP status of the last attempt; 0 = no response */
    const char *error;     /* transport or local error, "" when none */
    const char *reason;    /* metav1.Status reason ("Expired", "Conflict", ...) or "" */
    const char *message;   /* metav1.Status message, else error, else "" */
    json_t *body;          /* parsed JSON body, NULL when not JSON; for
                              kube_list the merged list (all pages) */
    const char *raw;       /* raw body bytes (NUL-terminated), "" for lists */
    size_t raw_len;
    int attempts;          /* HTTP attempts made (retries + 1) */
    long http_version;     /* of the last attempt: 1 (HTTP/1.x), 2 (HTTP/2), 0 */
} kube_result;

typedef void (*kube_done_fn)(const kube_result *res, void *ud);

/* A generic request. `path` starts with '/' and may carry a query. */
typedef struct kube_req {
    const char *method;        /* "GET", "POST", "PATCH", "PUT", "DELETE" */
    const char *path;
    const char *content_type;  /* for the body, default "application/json" */
    const char *body;          /* or NULL */
    size_t body_len;           /* bytes; strlen(body) when 0 */
    double timeout_s;          /* whole request, default 60 s; 0 = default */
    const http_part *part;     /* a multipart/form-data body instead of `body` (the
                                  struct and its data must outlive the call) */
} kube_req;

/* Copies `cfg`; `cfg->server` is required. Returns NULL with err filled. */
kube_client *kube_client_new(struct ev_loop *loop, const kube_config *cfg, char *err, size_t errlen);
/* Cancels all calls (no callbacks) and frees. Not from inside a callback. */
void kube_client_free(kube_client *c);
/* Overrides the clock used by the rate limiter and token reload (tests);
 * NULL restores ev_now(loop). */
void kube_client_set_clock(kube_client *c, double (*now)(void *ud), void *ud);
/* Sets the idle limit of the client's watches: a stream over which no byte came for `seconds`
 * ends with an error (the caller watches again). Default KUBE_WATCH_IDLE_S; 0 = none (tests). */
void kube_client_set_watch_idle(kube_client *c, long seconds);
/* Sets the rate limit (qps <= 0: unlimited) starting with a full bucket. */
void kube_client_set_rate_limit(kube_client *c, double qps, int burst);
const kube_config *kube_client_config(const kube_client *c);
/* The loop the client runs on. */
struct ev_loop *kube_client_loop(const kube_client *c);
/* The token that will be sent next ("" when none). */
const char *kube_client_token(kube_client *c);

/* Sends `req` through the rate limiter. Retries (up to KUBE_MAX_RETRIES)
 * when the answer is 429, or a 5xx carrying Retry-After, after waiting
 * Retry-After seconds (client-go with_retry.go); on a 401 with a token file
 * the token is re-read at once and the request retried once. Returns a
 * handle for kube_cancel(), or NULL with err filled (cb not called). */
kube_call *kube_request(kube_client *c, const kube_req *req, kube_done_fn cb, void *ud,
                        char *err, size_t errlen);

/* GET of one object: `path` as from kube_path(). */
kube_call *kube_get(kube_client *c, const char *path, kube_done_fn cb, void *ud, char *err,
                    size_t errlen);

/* LIST of a collection path, `limit` items a page (0 = 500), following
 * metadata.continue; all pages share the first page's resourceVersion. A 410
 * on a continue token (expired) restarts with one full, unpaginated list.
 * `label_selector` NULL or "" for all. The result body is
 * {"kind":"List","metadata":{"resourceVersion":RV},"items":[...]}. */
kube_call *kube_list(kube_client *c, const char *path, const char *label_selector, long limit,
                     kube_done_fn cb, void *ud, char *err, size_t errlen);

/* A page of a kube_list_paged: `items` (borrowed: json_incref to keep any) of one page;
 * `restart` is 1 on the list's first page and on the first page after a restart (a 410 on a
 * continue token: what earlier pages delivered is to be forgotten). Non-zero: stop the list
 * (the done callback then reports "list: out of memory"). */
typedef int (*kube_page_fn)(json_t *items, int restart, void *ud);

/* kube_list, each page handed to `on_page` as it arrives instead of merged: the caller keeps
 * what it needs of 500 objects at a time, not the whole list's trees (a restart's lists of
 * 10,000 clusters' children: 2.8 GiB of trees at once). The done callback's body has
 * "items": [] then. */
kube_call *kube_list_paged(kube_client *c, const char *path, const char *label_selector, long limit,
                           kube_page_fn on_page, kube_done_fn cb, void *ud, char *err, size_t errlen);

/* kube_list_paged whose first page asks for `resource_version` (NULL or "": a consistent read,
 * as kube_list_paged). "0" is client-go's informers' first list: any version the server has,
 * served from the API server's watch cache as it is, without the wait a consistent read may
 * make for that cache to catch up with etcd; the watch cache then ignores `limit` and answers
 * with one page of everything (the pages and continue tokens are followed all the same when a
 * server does page). The pages after the first carry the continue token only (the server
 * refuses a resourceVersion beside it); a restart after an expired token is a consistent,
 * unpaginated list. */
kube_call *kube_list_paged_rv(kube_client *c, const char *path, const char *label_selector, long limit,
                              const char *resource_version, kube_page_fn on_page, kube_done_fn cb, void *ud,
                              char *err, size_t errlen);

/* WATCH of a collection path from `resource_version` (NULL/"" = server's
 * "most recent" with synthetic ADDEDs), with allowWatchBookmarks=true and
 * timeoutSeconds = `timeout_s` (server side; the client gives up 30 s
 * later, or after the client's watch idle limit without a byte: the
 * error is then libcurl's "Operation too slow"). The newline-delimited
 * event stream is split on '\n' regardless of chunk boundaries and each
 * line parsed; `on_event(type, object)` gets
 * "ADDED", "MODIFIED", "DELETED", "BOOKMARK" or "ERROR" (object a
 * metav1.Status) with a borrowed object. Returning non-zero from on_event
 * stops the watch (done then reports error "stopped"). `done` fires once
 * when the stream ends: status 200 and error "" for a clean end. A line that
 * is not a JSON event ends the watch with error "watch: bad event: ...". */
typedef int (*kube_event_fn)(const char *type, json_t *object, void *ud);
kube_call *kube_watch(kube_client *c, const char *path, const char *resource_version,
                      const char *label_selector, long timeout_s, kube_event_fn on_event,
                      kube_done_fn done, void *ud, char *err, size_t errlen);

/* The framing of a watch stream (kube_watch's; tests/fuzz/fuzz_watch.c feeds it arbitrary
 * chunks). A line is the bytes before a '\n', without it (it may be blank or hold NULs);
 * on_line returns non-zero to stop. */
#define KUBE_WATCH_PENDING_MAX ((size_t)64 << 20) /* bytes of a pending line plus one chunk */
typedef int (*kube_line_fn)(const char *line, size_t len, void *ud);

/* Appends `len` bytes of `data` (one chunk, as libcurl hands it over) to `pending` (the
 * bytes of a line not yet ended, from earlier chunks; zeroed before the first) and calls
 * on_line for each line the chunk completes, in order, then keeps only the unfinished rest in
 * pending (NUL-terminated). Returns 0, on_line's non-zero value (the lines after it are
 * dropped), or -1 with err "watch: event over 64 MiB" (pending plus the chunk would pass
 * KUBE_WATCH_PENDING_MAX) or "watch: out of memory". */
int kube_watch_feed(util_buf *pending, const char *data, size_t len, kube_line_fn on_line, void *ud, char *err,
                    size_t errlen);

/* Parses one line of a watch stream (len bytes, not NUL-terminated) as an event
 * {"type": T, "object": {...}}. Returns 1 for a blank line (no event), 0 with *event a new
 * reference (the caller json_decref's it) and *type, *object borrowed from it, or -1 with
 * err "watch: bad event: <jansson's reason | no type or object>". */
int kube_watch_event(const char *line, size_t len, json_t **event, const char **type, json_t **object, char *err,
                     size_t errlen);

/* Stops a call that has not reported yet; its callback will not run. Must
 * not be called after the callback ran. */
void kube_cancel(kube_call *call);

/* 1 when `body` is a metav1.Status whose details.causes hold one with reason `cause`, else 0
 * (NULL or any other JSON: 0). As apimachinery's errors.HasStatusCause; for example
 * "NamespaceTerminating" (k8s.io/api/core/v1 NamespaceTerminatingCause), which the API server
 * sets on the 403 for a create in a namespace being deleted. */
int kube_status_has_cause(const json_t *body, const char *cause);

/* the object writes (core/kube_ops), declared after the client's types they take */
#include "kube_ops.h"

#endif
