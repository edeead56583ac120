/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube_path: resource kinds and API server paths. See kube_path.h. */
#include "kube_path.h"
#include "util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const kube_kind kube_kind_flinkcluster = {"flinkoperator.k8s.io/v1beta1", "FlinkCluster", "flinkclusters", 1};
const kube_kind kube_kind_flinkjob = {"flinkoperator.k8s.io/v1beta1", "FlinkJob", "flinkjobs", 1};
const kube_kind kube_kind_statefulset = {"apps/v1", "StatefulSet", "statefulsets", 1};
const kube_kind kube_kind_service = {"v1", "Service", "services", 1};
const kube_kind kube_kind_configmap = {"v1", "ConfigMap", "configmaps", 1};
const kube_kind kube_kind_ingress = {"networking.k8s.io/v1", "Ingress", "ingresses", 1};
const kube_kind kube_kind_job = {"batch/v1", "Job", "jobs", 1};
const kube_kind kube_kind_pod = {"v1", "Pod", "pods", 1};
const kube_kind kube_kind_event = {"v1", "Event", "events", 1};
const kube_kind kube_kind_lease = {"coordination.k8s.io/v1", "Lease", "leases", 1};
const kube_kind kube_kind_namespace = {"v1", "Namespace", "namespaces", 0};
const kube_kind kube_kind_controllerrevision = {"apps/v1", "ControllerRevision", "controllerrevisions", 1};
const kube_kind kube_kind_deployment = {"apps/v1", "Deployment", "deployments", 1};
const kube_kind kube_kind_secret = {"v1", "Secret", "secrets", 1};

static const kube_kind *const all_kinds[] = {
    &kube_kind_flinkcluster, &kube_kind_statefulset, &kube_kind_service, &kube_kind_configmap,
    &kube_kind_ingress, &kube_kind_job, &kube_kind_pod, &kube_kind_event, &kube_kind_lease,
    &kube_kind_namespace, &kube_kind_controllerrevision, &kube_kind_deployment, &kube_kind_secret,
};

/* kinds defined at run time (kube_kind_define) */
static kube_kind defined_kinds[KUBE_KINDS_DEFINED_MAX];
static size_t n_defined_kinds;

static int kind_matches(const kube_kind *k, const char *api_version, const char *kind)
{
    return (!api_version || strcmp(k->api_version, api_version) == 0) && strcmp(k->kind, kind) == 0;
}

const kube_kind *kube_kind_find(const char *api_version, const char *kind)
{
    if (!kind)
        return NULL;
    for (size_t i = 0; i < sizeof all_kinds / sizeof all_kinds[0]; i++)
        if (kind_matches(all_kinds[i], api_version, kind))
            return all_kinds[i];
    for (size_t i = 0; i < n_defined_kinds; i++)
        if (kind_matches(&defined_kinds[i], api_version, kind))
            return &defined_kinds[i];
    return NULL;
}

const kube_kind *kube_kind_define(const char *api_version, const char *kind, const char *plural,
                                  int namespaced, char *err, size_t errlen)
{
    if (!api_version || !*api_version || !kind || !*kind || !plural || !*plural) {
        util_set_err(err, errlen, "kube_kind_define: apiVersion, kind and resource must be non-empty");
        return NULL;
    }
    const kube_kind *k = kube_kind_find(api_version, kind);
    if (k) {
        if (strcmp(k->plural, plural) != 0 || k->namespaced != (namespaced != 0)) {
            util_set_err(err, errlen, "kube_kind_define: %s %s: resource %s (namespaced %d) contradicts %s (%d)",
                         api_version, kind, plural, namespaced != 0, k->plural, k->namespaced);
            return NULL;
        }
        return k;
    }
    if (n_defined_kinds >= KUBE_KINDS_DEFINED_MAX) {
        util_set_err(err, errlen, "kube_kind_define: %s %s: more than %d kinds defined", api_version, kind,
                     (int)KUBE_KINDS_DEFINED_MAX);
        return NULL;
    }
    kube_kind *d = &defined_kinds[n_defined_kinds];
    char *av = strdup(api_version), *kd = strdup(kind), *pl = strdup(plural);
    if (!av || !kd || !pl) {
        free(av), free(kd), free(pl);
        util_set_err(err, errlen, "kube_kind_define: out of memory");
        return NULL;
    }
    d->api_version = av;
    d->kind = kd;
    d->plural = pl;
    d->namespaced = namespaced != 0;
    n_defined_kinds++;
    return d;
}

int kube_path_append(char *buf, size_t n, size_t *off, const char *s, int escape)
{
    char *e = escape ? curl_easy_escape(NULL, s, 0) : NULL;
    const char *v = escape ? e : s;
    if (!v)
        return -1;
    size_t l = strlen(v);
    int rc = 0;
    if (*off + l + 1 > n)
        rc = -1;
    else {
        memcpy(buf + *off, v, l + 1);
        *off += l;
    }
    curl_free(e);
    return rc;
}

int kube_path_query(char *buf, size_t n, const char *param, const char *value)
{
    if (!buf || !param || !*param || !value)
        return -1;
    size_t off = strlen(buf);
    size_t start = off;
    int rc = kube_path_append(buf, n, &off, strchr(buf, '?') ? "&" : "?", 0);
    rc |= kube_path_append(buf, n, &off, param, 0);
    rc |= kube_path_append(buf, n, &off, "=", 0);
    rc |= kube_path_append(buf, n, &off, value, 1);
    if (rc)
        buf[start] = '\0';
    return rc ? -1 : 0;
}

int kube_path(char *buf, size_t n, const kube_kind *k, const char *ns, const char *name,
              const char *subresource)
{
    if (!buf || !n || !k)
        return -1;
    size_t off = 0;
    buf[0] = '\0';
    int rc = kube_path_append(buf, n, &off, strchr(k->api_version, '/') ? "/apis/" : "/api/", 0);
    rc |= kube_path_append(buf, n, &off, k->api_version, 0);
    if (k->namespaced && ns && *ns) {
        rc |= kube_path_append(buf, n, &off, "/namespaces/", 0);
        rc |= kube_path_append(buf, n, &off, ns, 1);
    }
    rc |= kube_path_append(buf, n, &off, "/", 0);
    rc |= kube_path_append(buf, n, &off, k->plural, 0);
    if (name) {
        if (!*name)
            return -1;
        rc |= kube_path_append(buf, n, &off, "/", 0);
        rc |= kube_path_append(buf, n, &off, name, 1);
        if (subresource && *subresource) {
            rc |= kube_path_append(buf, n, &off, "/", 0);
            rc |= kube_path_append(buf, n, &off, subresource, 0);
        }
    }
    return rc ? -1 : 0;
}

int kube_service_proxy_path(char *buf, size_t n, const char *ns, const char *scheme, const char *service,
                            const char *port, const char *path)
{
    if (!buf || !n)
        return -1;
    buf[0] = '\0';
    if (!ns || !*ns || !service || !*service || !port || !*port || strchr(port, '/') || !path || path[0] != '/' ||
        !scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
        return -1;
    size_t off = 0;
    int rc = kube_path_append(buf, n, &off, "/api/v1/namespaces/", 0);
    rc |= kube_path_append(buf, n, &off, ns, 1);
    rc |= kube_path_append(buf, n, &off, "/services/", 0);
    rc |= kube_path_append(buf, n, &off, scheme, 0);
    rc |= kube_path_append(buf, n, &off, ":", 0);
    rc |= kube_path_append(buf, n, &off, service, 1);
    rc |= kube_path_append(buf, n, &off, ":", 0);
    rc |= kube_path_append(buf, n, &off, port, 1);
    rc |= kube_path_append(buf, n, &off, "/proxy", 0);
    rc |= kube_path_append(buf, n, &off, path, 0);
    if (rc)
        buf[0] = '\0';
    return rc ? -1 : 0;
}
