/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube: Kubernetes client configuration and asynchronous API calls on
 * top of core/http. JSON goes through jansson (libjansson): the C side must
 * read watch events and list pages (type, metadata.resourceVersion, names,
 * owner references, labels) to keep the reflector's cache, so a C JSON
 * library is linked instead of shipping raw lines to Lua.
 *
 * Errors: functions returning int give 0 on success and -1 with a message in
 * `err` (never abort on bad input). Asynchronous calls report through their
 * callback exactly once, unless cancelled with kube_cancel().
 */
#ifndef FC_KUBE_H
#define FC_KUBE_H

#include <stddef.h>
#include <ev.h>
#include <jansson.h>

#include "http.h"
#include "kubecred.h"
#include "util.h"

#define KUBE_FIELD_MANAGER "flink-controller"
#define KUBE_DEFAULT_QPS 5.0    /* client-go rest.DefaultQPS */
#define KUBE_DEFAULT_BURST 10   /* client-go rest.DefaultBurst */
#define KUBE_MAX_RETRIES 10     /* client-go request.go maxRetries for 429/5xx + Retry-After */
#define KUBE_TOKEN_RELOAD_S 60  /* client-go NewCachedFileTokenSource period */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_CONFIG_FILES_MAX 16 /* files of a $KUBECONFIG list */
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

/* ---- configuration --------------------------------------------------- */

/* Where and how to reach the API server. Strings are owned (malloc'd) and
 * freed by kube_config_clear(). TLS material is either a file path or PEM
 * bytes (`*_pem`, `*_pem_len` bytes, decoded from kubeconfig `*-data`). */
typedef struct kube_config {
    char *server;            /* "https://host:port", no trailing slash */
    char *ca_file;
    char *ca_pem;
    size_t ca_pem_len;
    char *cert_file;
    char *cert_pem;
    size_t cert_pem_len;
    char *key_file;
    char *key_pem;
    size_t key_pem_len;
    char *token;             /* static bearer token (kubeconfig user.token) */
    char *token_file;        /* bearer token file, re-read every
                                KUBE_TOKEN_RELOAD_S seconds and on a 401;
                                when set it wins over `token` */
    int insecure;            /* insecure-skip-tls-verify */
    char *namespace;         /* context namespace, in-cluster namespace file,
                                else "default" */
    char *context;           /* context name used (kubeconfig), or "in-cluster" */
    double qps;              /* client-side rate limit, requests/second; <= 0:
                                unlimited. Default KUBE_DEFAULT_QPS */
    int burst;               /* token bucket size, default KUBE_DEFAULT_BURST */
    char *proxy_url;         /* clusters[].cluster.proxy-url (http://, https://, socks5://), or
                                NULL: then libcurl's environment proxies (https_proxy,
                                HTTPS_PROXY, no_proxy, NO_PROXY; http_proxy for http://), not
                                for a loopback server (Go's ProxyFromEnvironment) */
    kubecred_exec *exec;     /* users[].user.exec, or NULL (core/kubecred.h) */
} kube_config;

/* Loads a kubeconfig file (YAML, parsed with libyaml). `context` NULL uses
 * `current-context` (kubectl --context). Resolves contexts[].context.{cluster,user,namespace},
 * clusters[].cluster.{server, certificate-authority(-data), insecure-skip-tls-verify,
 * proxy-url} and users[].user.{client-certificate(-data), client-key(-data), token, tokenFile,
 * exec}; relative file paths (and an exec command with a '/') are relative to the
 * kubeconfig's directory (as client-go does). exec: apiVersion client.authentication.k8s.io/v1
 * or v1beta1, command, args, env [{name, value}], interactiveMode (v1: required; Always is
 * refused: no terminal), provideClusterInfo, installHint; a token, tokenFile or client
 * certificate of the same user wins and the plugin is dropped (client-go). `auth-provider` and
 * basic auth (username/password) are refused. Errors name the file and the field, e.g.
 * "kubeconfig /x: users[name=dev].user.client-key-data: invalid base64",
 * "kubeconfig /x: users[name=eks].user.exec.command: missing". */
int kube_config_load_file(kube_config *cfg, const char *path, const char *context,
                          char *err, size_t errlen);

/* kube_config_load_file over several files merged as kubectl merges $KUBECONFIG: the first
 * file that sets current-context wins, and a context, cluster or user is taken whole from the
 * first file that has its name; relative paths resolve against the file that holds the entry.
 * With n > 1 a missing or empty file is skipped (at least one must exist); with n == 1 it is an
 * error as in kube_config_load_file. At most KUBE_CONFIG_FILES_MAX files. An error about the
 * whole set ("contexts[name=x]: not found") names the files joined with ':'. */
int kube_config_load_files(kube_config *cfg, const char *const *paths, size_t n, const char *context,
                           char *err, size_t errlen);

/* In-cluster config as client-go InClusterConfig(): needs env
 * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (IPv6 hosts get
 * brackets), CA `<sa_dir>/ca.crt`, token file `<sa_dir>/token` (kept as a
 * token_file so rotation is picked up), namespace from `<sa_dir>/namespace`.
 * `sa_dir` NULL means KUBE_SA_DIR. */
int kube_config_load_incluster(kube_config *cfg, const char *sa_dir, char *err, size_t errlen);

/* The order controller-runtime uses: `path` if given, else $KUBECONFIG (a ':' list, merged
 * by kube_config_load_files), else in-cluster when KUBERNETES_SERVICE_HOST is set, else
 * ~/.kube/config (also when in-cluster fails and it exists). `context` (kubectl --context;
 * NULL: current-context) selects the kubeconfig's context; with a context the in-cluster
 * config is not tried. */
int kube_config_load_default(kube_config *cfg, const char *path, const char *context, char *err,
                             size_t errlen);

/* Frees the strings of `cfg` and zeroes it. Safe on a zeroed config. */
void kube_config_clear(kube_config *cfg);

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

/* ---- resource kinds and paths --------------------------------------- */

typedef struct kube_kind {
    const char *api_version;   /* "v1", "apps/v1", "flinkoperator.k8s.io/v1beta1" */
    const char *kind;          /* "StatefulSet" */
    const char *plural;        /* "statefulsets" */
    int namespaced;            /* 1 for namespaced resources */
} kube_kind;

extern const kube_kind kube_kind_flinkcluster, kube_kind_flinkjob, kube_kind_statefulset, kube_kind_service,
    kube_kind_configmap, kube_kind_ingress, kube_kind_job, kube_kind_pod, kube_kind_event,
    kube_kind_lease, kube_kind_namespace, kube_kind_controllerrevision, kube_kind_deployment,
    kube_kind_secret;

/* Looks a kind up by apiVersion + kind among the kube_kind_* above and those defined with
 * kube_kind_define (`api_version` NULL: by kind alone, first match); NULL when unknown. */
const kube_kind *kube_kind_find(const char *api_version, const char *kind);

enum { KUBE_KINDS_DEFINED_MAX = 16 };

/* Defines a kind at run time (the declaration in lua/fc/kinds.lua, read by core/run.c at
 * start): returns the kube_kind_* above of that apiVersion and kind when there is one (its
 * plural must then match), else a new kind with copies of the strings, kept until exit, that
 * kube_kind_find finds from then on. NULL with a message in err ("kube_kind_define: <reason>")
 * for an empty string, a plural that contradicts a known kind, more than
 * KUBE_KINDS_DEFINED_MAX new kinds, or no memory. Not thread-safe (the loop's thread only). */
const kube_kind *kube_kind_define(const char *api_version, const char *kind, const char *plural,
                                  int namespaced, char *err, size_t errlen);

/* Writes the URL path of a collection (name NULL) or an object, with an
 * optional subresource ("status"), into buf: e.g.
 * "/apis/apps/v1/namespaces/ns/statefulsets/x/status". `ns` NULL or "" for a
 * namespaced kind means all namespaces. Names are percent-escaped. Returns 0,
 * or -1 when buf (n bytes) is too small or a name is empty. */
int kube_path(char *buf, size_t n, const kube_kind *k, const char *ns, const char *name,
              const char *subresource);

/* Appends the query parameter `param`=`value` (value percent-escaped) to the path in buf
 * ("?" first, "&" once the path has a query), e.g. "...?fieldSelector=metadata.name%3Dx".
 * Returns 0, or -1 (buf unchanged) when it does not fit in n bytes or an argument is missing. */
int kube_path_query(char *buf, size_t n, const char *param, const char *value);

/* Writes the API server path of a request through a Service's proxy subresource into buf:
 * "/api/v1/namespaces/<ns>/services/<scheme>:<service>:<port>/proxy<path>", e.g.
 * "/api/v1/namespaces/ns/services/http:x-jobmanager:8081/proxy/jobs/overview". `scheme` is
 * "http" or "https" (how the API server talks to the endpoint), `port` a Service port name or
 * number as text (a number is mapped to its port name by the API server), `path` begins with
 * '/' and may carry a query (passed on as given). `ns` and `service` are percent-escaped. Send
 * it with kube_request(): the client's credentials, TLS and rate limit apply. RBAC: the verb
 * on `services/proxy` is the method's (GET get, POST create, PATCH patch, PUT update, DELETE
 * delete). Returns 0, or -1 (buf left "") when buf (n bytes) is too small or an argument is
 * empty or invalid. */
int kube_service_proxy_path(char *buf, size_t n, const char *ns, const char *scheme, const char *service,
                            const char *port, const char *path);

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

/* Server-side apply of a whole object given as JSON text: PATCH to its
 * object path with Content-Type application/apply-patch+yaml (JSON is YAML),
 * fieldManager=flink-controller and force=true. The path comes from the
 * object's apiVersion, kind (one of the kube_kind_* list), metadata.name and
 * metadata.namespace. Bad JSON or an unknown kind fails at once (NULL, err). */
kube_call *kube_apply(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err,
                      size_t errlen);

/* kube_apply with dryRun=All: the API server runs admission and validation (a 422, a webhook's
 * refusal, a quota's 403) and answers the object it would store, writing nothing (Kubernetes
 * API conventions, "Dry-run"). Same arguments and errors. */
kube_call *kube_apply_dry_run(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err,
                              size_t errlen);

/* PATCH of an object (`subresource` NULL) or of a subresource ("status")
 * with `content_type` "application/merge-patch+json" (RFC 7386: null
 * deletes a key, lists are replaced whole), "application/json-patch+json"
 * (RFC 6902) or "application/apply-patch+yaml" (then fieldManager and force
 * are added to the query). `patch_json` is sent as given. */
kube_call *kube_patch(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                      const char *subresource, const char *content_type, const char *patch_json,
                      kube_done_fn cb, void *ud, char *err, size_t errlen);

/* PATCH of the /status subresource with an RFC 7386 merge patch (JSON text,
 * e.g. {"status":{...}}); keep observedGeneration in it. */
kube_call *kube_patch_status(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                             const char *merge_patch_json, kube_done_fn cb, void *ud, char *err,
                             size_t errlen);

/* DELETE with a DeleteOptions body carrying `propagation` ("Background",
 * "Foreground", "Orphan"; NULL = server default). 200 and 202 both mean
 * accepted; 404 means already gone. */
kube_call *kube_delete(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                       const char *propagation, kube_done_fn cb, void *ud, char *err,
                       size_t errlen);

/* Creates a core/v1 Event in the object's namespace about `involved` (an
 * object with apiVersion, kind, metadata.name/namespace/uid): `type` "Normal"
 * or "Warning", `reason` CamelCase, `message` free text (truncated to 1024
 * bytes, never inside a UTF-8 sequence). source.component is "flink-controller". */
kube_call *kube_event_create(kube_client *c, json_t *involved, const char *type, const char *reason,
                             const char *message, kube_done_fn cb, void *ud, char *err,
                             size_t errlen);

/* Stops a call that has not reported yet; its callback will not run. Must
 * not be called after the callback ran. */
void kube_cancel(kube_call *call);

/* The writes of a pass as a table of the functions above, for core/executor (and its Events and
 * status writes): kube_ops_default calls them; a test hands a fake one (tests/c/test_executor.c)
 * that records the calls and answers them. Same arguments, results and errors as the functions
 * they stand for. */
typedef struct kube_ops {
    kube_call *(*apply)(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err, size_t errlen);
    kube_call *(*apply_dry_run)(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err,
                                size_t errlen);
    kube_call *(*patch)(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                        const char *subresource, const char *content_type, const char *patch_json,
                        kube_done_fn cb, void *ud, char *err, size_t errlen);
    kube_call *(*patch_status)(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                               const char *merge_patch_json, kube_done_fn cb, void *ud, char *err,
                               size_t errlen);
    kube_call *(*delete)(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                         const char *propagation, kube_done_fn cb, void *ud, char *err, size_t errlen);
    kube_call *(*event_create)(kube_client *c, json_t *involved, const char *type, const char *reason,
                               const char *message, kube_done_fn cb, void *ud, char *err, size_t errlen);
    void (*cancel)(kube_call *call);
} kube_ops;

/* kube_apply, kube_apply_dry_run, kube_patch, kube_patch_status, kube_delete, kube_event_create,
 * kube_cancel. */
extern const kube_ops kube_ops_default;

/* 1 when `body` is a metav1.Status whose details.causes hold one with reason `cause`, else 0
 * (NULL or any other JSON: 0). As apimachinery's errors.HasStatusCause; for example
 * "NamespaceTerminating" (k8s.io/api/core/v1 NamespaceTerminatingCause), which the API server
 * sets on the 403 for a create in a namespace being deleted. */
int kube_status_has_cause(const json_t *body, const char *cause);

#endif
