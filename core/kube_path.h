/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube_path: the resource kinds the controller knows (built in, and defined at start from
 * lua/fc/kinds.lua) and the API server paths of their collections, objects and subresources,
 * queries, and the service proxy. Pure functions on caller buffers, no I/O.
 */
#ifndef FC_KUBE_PATH_H
#define FC_KUBE_PATH_H

#include <stddef.h>

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

/* Appends `s` to buf (n bytes in all) at *off, percent-escaped (curl_easy_escape) when
 * `escape`, and advances *off; buf stays NUL-terminated. Returns 0, or -1 (buf unchanged) when
 * it does not fit or escaping runs out of memory. The building block of the paths above and of
 * core/kube's list and watch queries. */
int kube_path_append(char *buf, size_t n, size_t *off, const char *s, int escape);

#endif
