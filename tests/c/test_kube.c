/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube: kubeconfig and in-cluster config from fixtures, the token
 * bucket on a fake clock, paths; then calls against
 * tests/c/fake_apiserver.py: 429 + Retry-After retries, 401 -> token file
 * re-read, apply/status/delete/event requests, paginated list with an
 * expired continue token, watch event parsing, a silent watch stream's idle limit. */
#include "transport_tap.h"
#include "transport_server.h"
#include "kube.h"
#include "loop.h"

#include <sys/stat.h>

#define KDIR "tests/testdata/kube/"

static struct ev_loop *loop;

typedef struct res {
    int done;
    long status;
    char error[256], reason[64], message[256];
    json_t *body;
    int attempts;
} res;

static char page_log[256];

/* kube_page_fn of the paged list cases: logs "<items>[r] " per page. */
static int on_page(json_t *items, int restart, void *ud)
{
    (void)ud;
    size_t l = strlen(page_log);
    snprintf(page_log + l, sizeof page_log - l, "%zu%s ", json_array_size(items), restart ? "r" : "");
    return 0;
}

static void on_done(const kube_result *r, void *ud)
{
    res *o = ud;
    o->done = 1;
    o->status = r->status;
    snprintf(o->error, sizeof o->error, "%s", r->error);
    snprintf(o->reason, sizeof o->reason, "%s", r->reason);
    snprintf(o->message, sizeof o->message, "%s", r->message);
    json_decref(o->body);
    o->body = json_incref(r->body);
    o->attempts = r->attempts;
}

static void reset(res *o)
{
    json_decref(o->body);
    memset(o, 0, sizeof *o);
}

static const char *jstr(json_t *j, const char *k)
{
    return json_string_value(json_object_get(j, k));
}

static void config_tests(void)
{
    kube_config cfg;
    char err[512] = "";
    IS_INT(kube_config_load_file(&cfg, KDIR "data.yaml", NULL, err, sizeof err), 0, "data.yaml loads (%s)", err);
    IS_STR(cfg.server, "https://127.0.0.1:6443", "server, trailing slash dropped");
    IS_STR(cfg.context, "dev", "current-context");
    IS_STR(cfg.namespace, "flink", "context namespace");
    OK(cfg.ca_pem && strstr(cfg.ca_pem, "FAKECA") && cfg.ca_pem_len == 61, "certificate-authority-data decoded (%zu bytes)",
       cfg.ca_pem_len);
    OK(cfg.cert_pem && strstr(cfg.cert_pem, "FAKECERT"), "client-certificate-data decoded");
    OK(cfg.key_pem && strstr(cfg.key_pem, "FAKEKEY"), "client-key-data decoded");
    OK(cfg.ca_file == NULL && cfg.token == NULL && cfg.token_file == NULL && !cfg.insecure, "nothing else set");
    OK(cfg.qps == 5 && cfg.burst == 10, "client-go default QPS 5 / burst 10");
    kube_config_clear(&cfg);
    OK(cfg.server == NULL, "clear zeroes");

    IS_INT(kube_config_load_file(&cfg, KDIR "data.yaml", "other", err, sizeof err), 0, "context override");
    IS_STR(cfg.server, "https://[::1]:8443", "quoted IPv6 server");
    IS_STR(cfg.ca_file, KDIR "ca.crt", "relative certificate-authority resolved against the kubeconfig dir");
    IS_STR(cfg.token_file, KDIR "token", "tokenFile resolved");
    OK(cfg.insecure == 1, "insecure-skip-tls-verify: true");
    IS_STR(cfg.namespace, "default", "namespace defaults to default");
    kube_config_clear(&cfg);

    IS_INT(kube_config_load_file(&cfg, KDIR "token.yaml", NULL, err, sizeof err), 0, "token.yaml (flow style)");
    IS_STR(cfg.token, "abc.def", "static token");
    IS_STR(cfg.server, "http://127.0.0.1:8080", "http server accepted");
    kube_config_clear(&cfg);

    IS_INT(kube_config_load_file(&cfg, KDIR "both-tokens.yaml", NULL, err, sizeof err), 0, "both-tokens.yaml");
    OK(strcmp(cfg.token, "static") == 0 && strcmp(cfg.token_file, KDIR "token") == 0, "token and tokenFile both kept");
    {
        kube_client *bc = kube_client_new(loop, &cfg, err, sizeof err);
        IS_STR(kube_client_token(bc), "file-token-1", "the token file wins over the static token");
        kube_client_free(bc);
    }
    kube_config_clear(&cfg);

    struct { const char *file, *ctx, *want; } bad[] = {
        {"bad-base64.yaml", NULL, "kubeconfig " KDIR "bad-base64.yaml: users[name=dev].user.client-key-data: invalid base64"},
        {"missing-server.yaml", NULL, "kubeconfig " KDIR "missing-server.yaml: clusters[name=c].cluster.server: missing"},
        {"exec.yaml", NULL, "kubeconfig " KDIR "exec.yaml: users[name=cloud].user.exec.interactiveMode: missing "
                            "(client.authentication.k8s.io/v1 needs Never, IfAvailable or Always)"},
        {"missing-user.yaml", NULL, "kubeconfig " KDIR "missing-user.yaml: users[name=nobody]: not found"},
        {"missing-file.yaml", NULL, "kubeconfig " KDIR "missing-file.yaml: clusters[name=c].cluster.certificate-authority: cannot read " KDIR "does-not-exist.crt"},
        {"data.yaml", "nope", "kubeconfig " KDIR "data.yaml: contexts[name=nope]: not found"},
        {"empty.yaml", NULL, "kubeconfig " KDIR "empty.yaml: empty document"},
        {"list.yaml", NULL, "kubeconfig " KDIR "list.yaml: top level is not a mapping"},
        {"no-such-file.yaml", NULL, "kubeconfig " KDIR "no-such-file.yaml: No such file or directory"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, KDIR "%s", bad[i].file);
        err[0] = '\0';
        int rc = kube_config_load_file(&cfg, path, bad[i].ctx, err, sizeof err);
        IS_INT(rc, -1, "%s%s%s fails", bad[i].file, bad[i].ctx ? " --context " : "", bad[i].ctx ? bad[i].ctx : "");
        IS_STR(err, bad[i].want, "%s: error names the field", bad[i].file);
        OK(cfg.server == NULL, "%s: nothing left allocated in cfg", bad[i].file);
    }
    err[0] = '\0';
    IS_INT(kube_config_load_file(&cfg, KDIR "not-yaml.yaml", NULL, err, sizeof err), -1, "not-yaml.yaml fails");
    OK(strstr(err, "kubeconfig " KDIR "not-yaml.yaml: line ") == err, "YAML error with a line: %s", err);

    /* in-cluster */
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    IS_INT(kube_config_load_incluster(&cfg, KDIR "serviceaccount", err, sizeof err), -1, "in-cluster without env");
    IS_STR(err, "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set", "env error");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    IS_INT(kube_config_load_incluster(&cfg, KDIR "serviceaccount", err, sizeof err), 0, "in-cluster loads");
    IS_STR(cfg.server, "https://10.96.0.1:443", "in-cluster server");
    IS_STR(cfg.token_file, KDIR "serviceaccount/token", "token kept as a file (rotation)");
    IS_STR(cfg.ca_file, KDIR "serviceaccount/ca.crt", "service-account CA");
    IS_STR(cfg.namespace, "flink-system", "namespace file, newline trimmed");
    IS_STR(cfg.context, "in-cluster", "context name");
    kube_config_clear(&cfg);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    kube_config_load_incluster(&cfg, KDIR "serviceaccount", err, sizeof err);
    IS_STR(cfg.server, "https://[fd00::1]:443", "IPv6 host bracketed");
    kube_config_clear(&cfg);
    IS_INT(kube_config_load_incluster(&cfg, KDIR "nonexistent", err, sizeof err), -1, "missing token file");
    IS_STR(err, "in-cluster config: " KDIR "nonexistent/token: No such file or directory", "token error names the path");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");

    setenv("KUBECONFIG", KDIR "token.yaml:" KDIR "data.yaml", 1);
    IS_INT(kube_config_load_default(&cfg, NULL, NULL, err, sizeof err), 0, "default: $KUBECONFIG, merged (the first file's current-context)");
    IS_STR(cfg.token, "abc.def", "loaded token.yaml");
    kube_config_clear(&cfg);
    IS_INT(kube_config_load_default(&cfg, KDIR "data.yaml", NULL, err, sizeof err), 0, "explicit path wins");
    IS_STR(cfg.context, "dev", "loaded data.yaml");
    kube_config_clear(&cfg);
    unsetenv("KUBECONFIG");

    char home[] = "/tmp/fc-kube-home-XXXXXX";
    OK(mkdtemp(home) != NULL, "empty HOME");
    setenv("HOME", home, 1);
    IS_INT(kube_config_load_default(&cfg, NULL, NULL, err, sizeof err), -1, "nothing configured");
    IS_STR(err, "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set",
           "then the in-cluster error is reported");
    char kdir[128], kfile[160];
    snprintf(kdir, sizeof kdir, "%s/.kube", home);
    snprintf(kfile, sizeof kfile, "%s/config", kdir);
    mkdir(kdir, 0700);
    FILE *f = fopen(kfile, "w");
    fputs("apiVersion: v1\ncurrent-context: h\ncontexts: [{name: h, context: {cluster: c}}]\n"
          "clusters: [{name: c, cluster: {server: 'https://home:6443'}}]\n", f);
    fclose(f);
    IS_INT(kube_config_load_default(&cfg, NULL, NULL, err, sizeof err), 0, "~/.kube/config used outside a cluster");
    IS_STR(cfg.server, "https://home:6443", "home kubeconfig server");
    kube_config_clear(&cfg);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    IS_INT(kube_config_load_default(&cfg, NULL, NULL, err, sizeof err), 0, "in a pod without a token: falls back to home");
    IS_STR(cfg.server, "https://home:6443", "home kubeconfig after the in-cluster failure");
    kube_config_clear(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unlink(kfile);
    rmdir(kdir);
    rmdir(home);
}

/* Mutated copies of data.yaml (fixed seed): each load either succeeds or
 * fails with a "kubeconfig <path>: ..." message; never a crash (run under
 * ASan/valgrind to check memory). */
static void mutation_tests(void)
{
    size_t len = 0;
    char *orig = slurp(KDIR "data.yaml", &len);
    char path[] = "/tmp/fc-kube-mut-XXXXXX";
    int fd = mkstemp(path);
    OK(orig && fd >= 0, "fixture and temp file");
    if (!orig || fd < 0)
        return;
    close(fd);
    unsigned seed = 12345;
    int loaded = 0, failed_ok = 0, total = 300;
    char *buf = malloc(len + 64);
    const char pool[] = ":-[]{}\"'#&*!|>% \n\t\x00\xff";
    for (int i = 0; i < total; i++) {
        memcpy(buf, orig, len);
        size_t n = len;
        for (int m = 0; m < 1 + i % 4; m++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % n;
            seed = seed * 1103515245u + 12345u;
            char ch = pool[(seed >> 8) % (sizeof pool - 1)];
            if (i % 3 == 0)
                buf[at] = ch;                                  /* replace */
            else if (i % 3 == 1 && n + 1 < len + 64) {
                memmove(buf + at + 1, buf + at, n - at);       /* insert */
                buf[at] = ch;
                n++;
            } else if (n > 1) {
                memmove(buf + at, buf + at + 1, n - at - 1);   /* delete */
                n--;
            }
        }
        FILE *f = fopen(path, "wb");
        fwrite(buf, 1, n, f);
        fclose(f);
        kube_config cfg;
        char err[512] = "";
        if (kube_config_load_file(&cfg, path, NULL, err, sizeof err) == 0) {
            loaded += cfg.server != NULL;
            kube_config_clear(&cfg);
        } else {
            failed_ok += strncmp(err, "kubeconfig /tmp/fc-kube-mut-", 28) == 0 && cfg.server == NULL;
        }
    }
    IS_INT(loaded + failed_ok, total, "300 mutated kubeconfigs: each loads or fails with a message (%d loaded)", loaded);
    OK(failed_ok > 0, "some mutations are rejected (%d)", failed_ok);
    free(buf);
    free(orig);
    unlink(path);
}

static void limiter_tests(void)
{
    kube_limiter l;
    kube_limiter_init(&l, 5, 10, 100.0);
    int immediate = 0;
    for (int i = 0; i < 10; i++)
        immediate += kube_limiter_reserve(&l, 100.0) == 0;
    IS_INT(immediate, 10, "burst 10: ten requests go at once");
    double w = kube_limiter_reserve(&l, 100.0);
    OK(w > 0.199 && w < 0.201, "11th waits 1/qps = 0.2 s (got %g)", w);
    w = kube_limiter_reserve(&l, 100.0);
    OK(w > 0.399 && w < 0.401, "12th queues behind it: 0.4 s (got %g)", w);
    w = kube_limiter_reserve(&l, 101.0);
    OK(w == 0, "after 1 s, 5 tokens refilled minus 3 owed: no wait (got %g)", w);
    kube_limiter_init(&l, 5, 10, 0);
    for (int i = 0; i < 10; i++)
        kube_limiter_reserve(&l, 0);
    w = kube_limiter_reserve(&l, 1000);
    OK(w == 0 && l.tokens == 9, "refill capped at burst (tokens %g)", l.tokens);
    kube_limiter_init(&l, 0, 1, 0);
    for (int i = 0; i < 100; i++)
        w += kube_limiter_reserve(&l, 0);
    OK(w == 0, "qps 0 = unlimited");
}

static void path_tests(void)
{
    char p[256];
    IS_INT(kube_path(p, sizeof p, &kube_kind_statefulset, "ns", "x", "status"), 0, "path ok");
    IS_STR(p, "/apis/apps/v1/namespaces/ns/statefulsets/x/status", "apps/v1 object status path");
    kube_path(p, sizeof p, &kube_kind_configmap, NULL, NULL, NULL);
    IS_STR(p, "/api/v1/configmaps", "core all-namespaces collection");
    kube_path(p, sizeof p, &kube_kind_flinkcluster, "a b", "c/d", NULL);
    IS_STR(p, "/apis/flinkoperator.k8s.io/v1beta1/namespaces/a%20b/flinkclusters/c%2Fd", "names escaped");
    kube_path(p, sizeof p, &kube_kind_namespace, "ignored", "n1", NULL);
    IS_STR(p, "/api/v1/namespaces/n1", "cluster-scoped kind ignores the namespace");
    IS_INT(kube_path(p, 10, &kube_kind_statefulset, "ns", "x", NULL), -1, "too small buffer -> -1");
    kube_path(p, sizeof p, &kube_kind_configmap, "ns", NULL, NULL);
    IS_INT(kube_path_query(p, sizeof p, "fieldSelector", "metadata.name=a b"), 0, "query appended");
    IS_STR(p, "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da%20b", "query value escaped, '?' first");
    IS_INT(kube_path_query(p, sizeof p, "limit", "5"), 0, "second query parameter");
    IS_STR(p, "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da%20b&limit=5", "then '&'");
    IS_INT(kube_path_query(p, 70, "x", "yyyyyyyyyyyy"), -1, "no room -> -1");
    IS_STR(p, "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da%20b&limit=5", "path unchanged on -1");
    IS_INT(kube_path(p, sizeof p, &kube_kind_pod, "ns", "", NULL), -1, "empty name -> -1");
    IS_INT(kube_service_proxy_path(p, sizeof p, "ns", "http", "wc-jobmanager", "8081", "/jobs/overview"), 0,
           "service proxy path ok");
    IS_STR(p, "/api/v1/namespaces/ns/services/http:wc-jobmanager:8081/proxy/jobs/overview",
           "service proxy path: scheme:name:port, then /proxy and the path");
    kube_service_proxy_path(p, sizeof p, "a b", "https", "svc", "ui", "/jobs/ab?mode=cancel");
    IS_STR(p, "/api/v1/namespaces/a%20b/services/https:svc:ui/proxy/jobs/ab?mode=cancel",
           "service proxy path: namespace escaped, port name, query kept");
    IS_INT(kube_service_proxy_path(p, sizeof p, "ns", "ftp", "svc", "1", "/"), -1, "proxy scheme ftp -> -1");
    IS_INT(kube_service_proxy_path(p, sizeof p, "ns", "http", "", "1", "/"), -1, "proxy without service -> -1");
    IS_INT(kube_service_proxy_path(p, sizeof p, "ns", "http", "svc", "1", "jobs"), -1, "proxy path without / -> -1");
    IS_INT(kube_service_proxy_path(p, 40, "ns", "http", "svc", "8081", "/jobs/overview"), -1,
           "proxy path, buffer too small -> -1");
    IS_STR(p, "", "a short buffer is left empty, not with a partial path");
    /* the API server's 403 for a create in a namespace being deleted (k8s 1.19+) */
    json_t *st = json_loads("{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"code\":403,"
                            "\"details\":{\"name\":\"c\",\"kind\":\"configmaps\",\"causes\":[{\"reason\":\"FieldValueInvalid\"},"
                            "{\"reason\":\"NamespaceTerminating\",\"field\":\"metadata.namespace\"}]}}",
                            0, NULL);
    IS_INT(kube_status_has_cause(st, "NamespaceTerminating"), 1, "status cause found (the second of two)");
    IS_INT(kube_status_has_cause(st, "Namespace"), 0, "status cause: whole reason only");
    json_object_del(json_object_get(st, "details"), "causes");
    IS_INT(kube_status_has_cause(st, "NamespaceTerminating"), 0, "status without causes -> 0");
    json_decref(st);
    IS_INT(kube_status_has_cause(NULL, "NamespaceTerminating"), 0, "no body -> 0");
    OK(kube_kind_find("networking.k8s.io/v1", "Ingress") == &kube_kind_ingress, "kind lookup");
    OK(kube_kind_find("v1", "Nope") == NULL, "unknown kind -> NULL");
    OK(kube_kind_find(NULL, "ControllerRevision") == &kube_kind_controllerrevision, "lookup by kind alone");

    /* kinds defined at run time (lua/fc/kinds.lua through core/run.c) */
    char kerr[256] = "";
    OK(kube_kind_define("apps/v1", "StatefulSet", "statefulsets", 1, kerr, sizeof kerr) == &kube_kind_statefulset,
       "define a known kind -> the built-in one");
    OK(kube_kind_define("apps/v1", "StatefulSet", "sts", 1, kerr, sizeof kerr) == NULL, "define with another plural -> NULL");
    IS_STR(kerr, "kube_kind_define: apps/v1 StatefulSet: resource sts (namespaced 1) contradicts statefulsets (1)",
           "the contradiction is named");
    const kube_kind *pdb = kube_kind_define("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", 1, kerr,
                                            sizeof kerr);
    OK(pdb && strcmp(pdb->plural, "poddisruptionbudgets") == 0 && pdb->namespaced == 1, "define a new kind");
    OK(kube_kind_find("policy/v1", "PodDisruptionBudget") == pdb, "a defined kind is found");
    OK(kube_kind_define("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", 1, kerr, sizeof kerr) == pdb,
       "defining it again returns the same");
    kube_path(p, sizeof p, pdb, "team-a", "wc-pdb", NULL);
    IS_STR(p, "/apis/policy/v1/namespaces/team-a/poddisruptionbudgets/wc-pdb", "path of a defined kind");
    OK(kube_kind_define("", "X", "xs", 1, kerr, sizeof kerr) == NULL, "empty apiVersion -> NULL");
    IS_STR(kerr, "kube_kind_define: apiVersion, kind and resource must be non-empty", "empty string named");
}

static int watch_events;
static char watch_log[1024];
static size_t watch_big_len;      /* length of data.big in the last event that had it */
static size_t watch_nul_len;      /* length of data.nul ("a\0b") in the last event that had it */
static int on_event(const char *type, json_t *obj, void *ud)
{
    (void)ud;
    watch_events++;
    json_t *big = json_object_get(json_object_get(obj, "data"), "big");
    if (big)
        watch_big_len = json_string_length(big);
    json_t *nul = json_object_get(json_object_get(obj, "data"), "nul");
    if (nul)
        watch_nul_len = json_string_length(nul);
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    size_t n = strlen(watch_log);
    snprintf(watch_log + n, sizeof watch_log - n, "%s:%s%s ", type, rv ? rv : "",
             strcmp(type, "ERROR") == 0 ? jstr(obj, "reason") : "");
    return 0;
}

static void wait_done(res *o)
{
    loop_run_until(loop, &o->done, 15);
}

static void net_tests(int port)
{
    char err[512], dir[] = "/tmp/fc-kube-test-XXXXXX";
    kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    char server[64];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", port);
    OK(mkdtemp(dir) != NULL, "temp dir for a token file");
    char tokpath[128];
    snprintf(tokpath, sizeof tokpath, "%s/token", dir);
    FILE *f = fopen(tokpath, "w");
    fputs("first-token\n", f);
    fclose(f);
    cfg.server = server;
    cfg.ca_file = TLS_DIR "/ca.crt";
    cfg.token_file = tokpath;
    cfg.qps = 0;
    kube_client *c = kube_client_new(loop, &cfg, err, sizeof err);
    OK(c != NULL, "kube_client_new (%s)", c ? "" : err);
    IS_STR(kube_client_token(c), "first-token", "token read from file, trimmed");

    res o;
    memset(&o, 0, sizeof o);
    kube_get(c, "/retry429?id=kube", on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_INT(o.status, 200, "429 with Retry-After retried until 200");
    IS_INT(o.attempts, 3, "three attempts (two 429s)");
    IS_INT(json_integer_value(json_object_get(o.body, "attempts")), 3, "server saw three");

    reset(&o);
    kube_get(c, "/fail503", on_done, &o, err, sizeof err);
    wait_done(&o);
    OK(o.status == 503 && o.attempts == 1, "503 without Retry-After not retried");
    IS_STR(o.reason, "ServiceUnavailable", "Status reason parsed");

    /* token rotation: the file changes, the cached token is stale, 401 -> re-read */
    f = fopen(tokpath, "w");
    fputs("rotated-token", f);
    fclose(f);
    reset(&o);
    kube_get(c, "/auth", on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_INT(o.status, 200, "401 -> token file re-read -> 200");
    IS_INT(o.attempts, 2, "one retry after the 401");
    IS_STR(kube_client_token(c), "rotated-token", "new token in use");

    /* writes */
    reset(&o);
    OK(kube_apply(c, "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"jm\","
                     "\"namespace\":\"echo\"},\"spec\":{\"replicas\":1}}", on_done, &o, err, sizeof err) != NULL,
       "kube_apply started");
    wait_done(&o);
    IS_STR(jstr(o.body, "method"), "PATCH", "apply: PATCH");
    IS_STR(jstr(o.body, "path"), "/apis/apps/v1/namespaces/echo/statefulsets/jm", "apply: object path");
    IS_STR(jstr(o.body, "contentType"), "application/apply-patch+yaml", "apply: SSA content type");
    json_t *q = json_object_get(o.body, "query");
    IS_STR(jstr(q, "fieldManager"), "flink-controller", "apply: fieldManager");
    IS_STR(jstr(q, "force"), "true", "apply: force");
    IS_STR(jstr(o.body, "auth"), "Bearer rotated-token", "apply: bearer token");
    OK(strstr(jstr(o.body, "body"), "\"replicas\":1") != NULL, "apply: body sent as given");
    OK(kube_apply(c, "{\"apiVersion\":\"v1\",\"kind\":\"Nope\",\"metadata\":{\"name\":\"x\"}}", on_done, &o, err,
                  sizeof err) == NULL, "apply of an unknown kind refused");
    IS_STR(err, "kube_apply: unknown apiVersion/kind: v1/Nope", "apply error text");
    OK(kube_apply(c, "{not json", on_done, &o, err, sizeof err) == NULL && strstr(err, "kube_apply: not a JSON object"),
       "apply of bad JSON refused: %s", err);
    OK(kube_apply(c, "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"x\"}}", on_done, &o, err,
                  sizeof err) == NULL, "namespaced object without namespace refused");
    IS_STR(err, "kube_apply: metadata.namespace: missing", "namespace error text");
    /* a NUL in the name would cut the request path at "jm": another object */
    OK(kube_apply(c, "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"jm\\u0000x\","
                  "\"namespace\":\"a\"}}", on_done, &o, err, sizeof err) == NULL, "name with a NUL refused");
    IS_STR(err, "kube_apply: metadata.name: holds a NUL", "NUL name error text");

    reset(&o);
    kube_patch_status(c, &kube_kind_flinkcluster, "echo", "fc1", "{\"status\":{\"observedGeneration\":3}}", on_done, &o,
                      err, sizeof err);
    wait_done(&o);
    IS_STR(jstr(o.body, "path"), "/apis/flinkoperator.k8s.io/v1beta1/namespaces/echo/flinkclusters/fc1/status",
           "status: /status subresource");
    IS_STR(jstr(o.body, "contentType"), "application/merge-patch+json", "status: merge patch");

    reset(&o);
    kube_patch(c, &kube_kind_flinkcluster, "echo", "fc1", NULL, "application/merge-patch+json",
               "{\"metadata\":{\"annotations\":{\"x\":null}}}", on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_STR(jstr(o.body, "path"), "/apis/flinkoperator.k8s.io/v1beta1/namespaces/echo/flinkclusters/fc1",
           "patch: main resource");
    IS_STR(jstr(o.body, "body"), "{\"metadata\":{\"annotations\":{\"x\":null}}}", "patch: body as given");
    OK(kube_patch(c, &kube_kind_pod, "echo", NULL, NULL, "application/merge-patch+json", "{}", on_done, &o, err,
                  sizeof err) == NULL, "patch without a name refused");
    OK(kube_delete(c, &kube_kind_pod, "echo", NULL, NULL, on_done, &o, err, sizeof err) == NULL,
       "delete without a name refused (never a collection delete)");

    reset(&o);
    kube_delete(c, &kube_kind_pod, "echo", "tm-1", "Foreground", on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_STR(jstr(o.body, "method"), "DELETE", "delete: DELETE");
    json_t *b = json_loads(jstr(o.body, "body"), 0, NULL);
    IS_STR(jstr(b, "propagationPolicy"), "Foreground", "delete: propagationPolicy in DeleteOptions");
    IS_STR(jstr(b, "kind"), "DeleteOptions", "delete: DeleteOptions body");
    json_decref(b);

    reset(&o);
    kube_delete_collection(c, &kube_kind_configmap, "echo", "app=hac,configmap-type=high-availability", "Background",
                           on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_STR(jstr(o.body, "method"), "DELETE", "delete collection: DELETE");
    IS_STR(jstr(o.body, "path"), "/api/v1/namespaces/echo/configmaps", "delete collection: the collection's path");
    IS_STR(jstr(json_object_get(o.body, "query"), "labelSelector"), "app=hac,configmap-type=high-availability",
           "delete collection: the label selector, intact");
    b = json_loads(jstr(o.body, "body"), 0, NULL);
    IS_STR(jstr(b, "propagationPolicy"), "Background", "delete collection: propagationPolicy");
    json_decref(b);
    OK(kube_delete_collection(c, &kube_kind_configmap, "echo", "", NULL, on_done, &o, err, sizeof err) == NULL &&
           kube_delete_collection(c, &kube_kind_configmap, "echo", NULL, NULL, on_done, &o, err, sizeof err) == NULL,
       "delete collection without a selector refused (never every object of the kind)");

    reset(&o);
    json_t *inv = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "flinkoperator.k8s.io/v1beta1", "kind",
                            "FlinkCluster", "metadata", "name", "fc1", "namespace", "echo", "uid", "u-1");
    kube_event_create(c, inv, "Warning", "PolicyError", "cluster.lua:12: boom", on_done, &o, err, sizeof err);
    json_decref(inv);
    wait_done(&o);
    IS_STR(jstr(o.body, "path"), "/api/v1/namespaces/echo/events", "event: POST to events");
    b = json_loads(jstr(o.body, "body"), 0, NULL);
    json_t *io = json_object_get(b, "involvedObject");
    OK(b && strcmp(jstr(b, "reason"), "PolicyError") == 0 && strcmp(jstr(b, "type"), "Warning") == 0 &&
           strcmp(jstr(io, "uid"), "u-1") == 0 && strcmp(jstr(io, "kind"), "FlinkCluster") == 0 &&
           strcmp(jstr(json_object_get(b, "metadata"), "generateName"), "fc1.") == 0,
       "event body: reason, type, involvedObject, generateName");
    json_decref(b);

    {
        char longmsg[1400] = "x";              /* 1 byte, then 2-byte characters: 1024 cuts one */
        for (int i = 0; i < 600; i++)
            strcat(longmsg, "\xc3\xa9");
        json_t *inv2 = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name",
                                 "p", "namespace", "echo");
        reset(&o);
        OK(kube_event_create(c, inv2, "Normal", "Long", longmsg, on_done, &o, err, sizeof err) != NULL,
           "event with a 1201-byte UTF-8 message accepted");
        json_decref(inv2);
        wait_done(&o);
        json_t *eb = json_loads(jstr(o.body, "body"), 0, NULL);
        IS_INT(strlen(jstr(eb, "message") ? jstr(eb, "message") : ""), 1023,
               "message cut to 1023 bytes at a character boundary");
        json_decref(eb);
    }

    /* list: pages, selector, expired continue */
    reset(&o);
    kube_list(c, "/api/v1/namespaces/pages/configmaps", NULL, 2, on_done, &o, err, sizeof err);
    wait_done(&o);
    json_t *items = json_object_get(o.body, "items");
    IS_INT(json_array_size(items), 5, "list: 5 items over 3 pages of 2");
    IS_STR(jstr(json_object_get(o.body, "metadata"), "resourceVersion"), "500", "list: RV of the first page");
    IS_STR(jstr(json_object_get(json_array_get(items, 4), "metadata"), "name"), "p5", "list: order kept");
    reset(&o);
    kube_list(c, "/api/v1/namespaces/pagesexpire/configmaps", "app=flink,component in (jm)", 2, on_done, &o, err,
              sizeof err);
    wait_done(&o);
    IS_INT(json_array_size(json_object_get(o.body, "items")), 4,
           "expired continue -> one full list (selector kept: 4 of 5 items)");
    IS_STR(jstr(json_object_get(o.body, "metadata"), "resourceVersion"), "600", "RV of the full relist");
    reset(&o);
    kube_get(c, "/log?ns=pagesexpire", on_done, &o, err, sizeof err);
    wait_done(&o);
    json_t *log = json_object_get(o.body, "log");
    IS_INT(json_array_size(log), 3, "pagesexpire: page 1, expired page 2, full list");
    json_t *q3 = json_object_get(json_array_get(log, 2), "q");
    OK(json_object_get(q3, "limit") == NULL && json_object_get(q3, "continue") == NULL,
       "full relist has neither limit nor continue");
    IS_STR(jstr(q3, "labelSelector"), "app=flink,component in (jm)", "label selector escaped and decoded intact");

    /* paged list: each page to the callback, restart on the first page and after the 410 */
    reset(&o);
    page_log[0] = '\0';
    kube_list_paged(c, "/api/v1/namespaces/pages/configmaps", NULL, 2, on_page, on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_STR(page_log, "2r 2 1 ", "paged list: pages of 2, 2 and 1, the first marked restart");
    IS_INT(json_array_size(json_object_get(o.body, "items")), 0, "paged list: nothing merged into the body");
    IS_STR(jstr(json_object_get(o.body, "metadata"), "resourceVersion"), "500", "paged list: RV of the first page");
    reset(&o);
    page_log[0] = '\0';
    kube_list_paged(c, "/api/v1/namespaces/pagesexpire/configmaps", NULL, 2, on_page, on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_STR(page_log, "2r 5r ", "paged list: the full list after an expired continue starts over (restart)");
    IS_STR(jstr(json_object_get(o.body, "metadata"), "resourceVersion"), "600", "paged list: RV of the full relist");

    /* watch */
    reset(&o);
    kube_watch(c, "/api/v1/namespaces/w/configmaps", "7", NULL, 42, on_event, on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_INT(watch_events, 4, "watch: 4 events across 50-byte chunks");
    IS_STR(watch_log, "ADDED:8 BOOKMARK:9 MODIFIED:10 ERROR:Expired ", "watch: types and RVs in order");
    OK(o.status == 200 && o.error[0] == 0, "watch: clean end");
    reset(&o);
    kube_get(c, "/log?ns=w", on_done, &o, err, sizeof err);
    wait_done(&o);
    json_t *wq = json_object_get(json_array_get(json_object_get(o.body, "log"), 0), "q");
    OK(strcmp(jstr(wq, "watch"), "1") == 0 && strcmp(jstr(wq, "allowWatchBookmarks"), "true") == 0 &&
           strcmp(jstr(wq, "resourceVersion"), "7") == 0 && strcmp(jstr(wq, "timeoutSeconds"), "42") == 0,
       "watch query: watch=1, allowWatchBookmarks=true, resourceVersion=7, timeoutSeconds=42");
    reset(&o);
    watch_events = 0;
    watch_log[0] = '\0';
    kube_watch(c, "/api/v1/namespaces/wbig/configmaps", "", NULL, 0, on_event, on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_INT(watch_events, 2, "watch: a 100 kB event over 3000-byte chunks, then a small one");
    IS_INT(watch_big_len, 100000, "watch: the large event arrives whole");
    IS_STR(watch_log, "ADDED:20 MODIFIED:21 ", "watch: large event then the next, in order");
    IS_INT(watch_nul_len, 3, "watch: a string holding a NUL (\\u0000) arrives whole, not as a bad event");
    OK(o.status == 200 && o.error[0] == 0, "watch: clean end after a large event");
    reset(&o);
    watch_events = 0;
    kube_watch(c, "/api/v1/namespaces/wbad/configmaps", "", NULL, 0, on_event, on_done, &o, err, sizeof err);
    wait_done(&o);
    IS_INT(watch_events, 1, "bad line: the event before it was delivered");
    OK(strstr(o.error, "watch: bad event:") == o.error, "bad line ends the watch: %s", o.error);
    /* a stream that goes silent on an open socket ends after the idle limit (2 s here) */
    reset(&o);
    watch_events = 0;
    kube_client_set_watch_idle(c, 2);
    double t0 = ev_time();
    kube_watch(c, "/api/v1/namespaces/wsilent/configmaps", "", NULL, 0, on_event, on_done, &o, err, sizeof err);
    loop_run_until(loop, &o.done, 25);
    double took = ev_time() - t0;
    IS_INT(watch_events, 1, "silent stream: its one event delivered");
    /* (libcurl averages the speed over 5 s: the limit counts from then) */
    OK(o.done && o.status == 200 && o.error[0] && took >= 2 && took < 20,
       "silent stream ends with an error after the 2 s idle limit, not the server's 30 s (%.1f s: %s)", took, o.error);
    kube_client_set_watch_idle(c, KUBE_WATCH_IDLE_S);

    /* cancel a call waiting in the rate limiter */
    kube_client_set_rate_limit(c, 1, 1);
    res a, z;
    memset(&a, 0, sizeof a);
    memset(&z, 0, sizeof z);
    kube_get(c, "/hello", on_done, &a, err, sizeof err);
    kube_call *k2 = kube_get(c, "/hello", on_done, &z, err, sizeof err);
    kube_cancel(k2);
    wait_done(&a);
    IS_INT(a.status, 200, "first call passes the bucket");
    IS_INT(z.done, 0, "cancelled call never reports");
    kube_get(c, "/slow", on_done, &z, err, sizeof err);   /* left in flight for kube_client_free */
    kube_client_free(c);
    reset(&o);
    reset(&a);
    reset(&z);
    unlink(tokpath);
    rmdir(dir);

    cfg.token_file = "/nonexistent/token";
    OK(kube_client_new(loop, &cfg, err, sizeof err) == NULL, "unreadable token file at start -> error");
    IS_STR(err, "kube_client_new: cannot read token file /nonexistent/token", "token error text");
}

int main(void)
{
    loop = ev_loop_new(EVFLAG_AUTO);
    config_tests();
    mutation_tests();
    limiter_tests();
    path_tests();
    SERVER_RUN(net_tests);
    ev_loop_destroy(loop);
    return DONE_TESTING();
}
