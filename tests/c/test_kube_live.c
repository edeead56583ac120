/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube + core/reflector against a REAL kube-apiserver (the test
 * environment of tests/env: `make testenv-up`). Uses
 * $TESTENV_DIR/kubeconfig (default build/testenv) when env.sh is there;
 * skips (1..0) otherwise. Works in its own namespace fc-transport-<pid>, deleted at the
 * end: server-side apply (create + update), reflector events, paginated list,
 * status patch of a FlinkCluster, Event create, DELETE with propagation. */
#include "transport_tap.h"
#include "kube.h"
#include "loop.h"
#include "reflector.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static struct ev_loop *loop;
static kube_client *c;

typedef struct res {
    int done;
    long status, version;
    int attempts;
    char reason[64], message[512];
    json_t *body;
} res;

static void on_done(const kube_result *r, void *ud)
{
    res *o = ud;
    o->done = 1;
    o->status = r->status;
    o->version = r->http_version;
    o->attempts = r->attempts;
    snprintf(o->reason, sizeof o->reason, "%s", r->reason);
    snprintf(o->message, sizeof o->message, "%s", r->message);
    o->body = json_incref(r->body);
}

/* Waits for a call started by `start` (which returns the kube_call). */
#define CALL(o, expr) do { memset(&(o), 0, sizeof(o)); char e_[256] = ""; \
    if (!(expr)) { snprintf((o).message, sizeof (o).message, "%s", e_); } \
    else loop_run_until(loop, &(o).done, 30); } while (0)
#define E e_, sizeof e_

static char events[4096];
static int n_events;
static void on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)r;
    (void)old;
    (void)ud;
    static const char *names[] = {"ADDED", "MODIFIED", "DELETED", "RESYNC"};
    size_t n = strlen(events);
    snprintf(events + n, sizeof events - n, "%s:%s ", names[ev],
             json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
    n_events++;
}

static void count_each(json_t *obj, void *ud)
{
    (void)obj;
    (*(int *)ud)++;
}

static int synced;
static void on_synced(reflector *r, void *ud)
{
    (void)r;
    (void)ud;
    synced = 1;
}

static void wait_events(int n)
{
    for (int i = 0; i < 300 && n_events < n; i++) {
        int never = 0;
        loop_run_until(loop, &never, 0.1);
    }
}

/* Bearer token from a rotating token file, against the real server: a
 * ServiceAccount token from `kubectl create token` (needs TESTENV_KUBECTL). */
static void token_tests(const char *ns)
{
    const char *kubectl = getenv("TESTENV_KUBECTL");
    const char *kc = getenv("KUBECONFIG");
    if (!kubectl || !kc) {
        printf("# no TESTENV_KUBECTL/KUBECONFIG: token tests skipped\n");
        return;
    }
    char cmd[2048], token[4096] = "";
    snprintf(cmd, sizeof cmd,
             "'%s' --kubeconfig='%s' -n %s create serviceaccount reader >/dev/null && "
             "'%s' --kubeconfig='%s' -n %s create rolebinding reader --clusterrole=view "
             "--serviceaccount=%s:reader >/dev/null && '%s' --kubeconfig='%s' -n %s create token reader",
             kubectl, kc, ns, kubectl, kc, ns, ns, kubectl, kc, ns);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(token, 1, sizeof token - 1, p) : 0;
    if (p)
        pclose(p);
    token[n] = '\0';
    OK(n > 100, "kubectl create token: a %zu-byte service-account token", n);
    char dir[] = "/tmp/fc-live-token-XXXXXX", tokfile[64];
    if (!mkdtemp(dir))
        return;
    snprintf(tokfile, sizeof tokfile, "%s/token", dir);
    FILE *f = fopen(tokfile, "w");
    fputs("not-a-valid-token", f);
    fclose(f);
    kube_config full, cfg;
    char err[512];
    kube_config_load_default(&full, kc, NULL, err, sizeof err);
    memset(&cfg, 0, sizeof cfg);
    cfg.server = full.server;             /* server and CA only: no client cert */
    cfg.ca_pem = full.ca_pem;
    cfg.ca_pem_len = full.ca_pem_len;
    cfg.token_file = tokfile;
    kube_client *tc = kube_client_new(loop, &cfg, err, sizeof err);
    f = fopen(tokfile, "w");              /* rotated before the first call */
    fputs(token, f);
    fclose(f);
    char path[256];
    kube_path(path, sizeof path, &kube_kind_configmap, ns, NULL, NULL);
    res o;
    CALL(o, kube_list(tc, path, NULL, 0, on_done, &o, E));
    IS_INT(o.status, 200, "list as the service account after rotation (%s)", o.message);
    json_decref(o.body);
    CALL(o, kube_get(tc, "/api/v1/namespaces/kube-system/secrets", on_done, &o, E));
    IS_INT(o.status, 403, "RBAC applies to the token's identity (%s)", o.reason);
    json_decref(o.body);
    f = fopen(tokfile, "w");
    fputs("garbage", f);
    fclose(f);
    CALL(o, kube_list(tc, path, NULL, 0, on_done, &o, E));
    IS_INT(o.status, 200, "a good token is cached for up to a minute after the file changes");
    json_decref(o.body);
    kube_client_free(tc);
    tc = kube_client_new(loop, &cfg, err, sizeof err);
    CALL(o, kube_list(tc, path, NULL, 0, on_done, &o, E));
    OK(o.status == 401 && o.attempts == 2, "a bad token: re-read once on 401, then reported (%ld after %d attempts)",
       o.status, o.attempts);
    json_decref(o.body);
    kube_client_free(tc);
    kube_config_clear(&full);
    unlink(tokfile);
    rmdir(dir);
}

int main(void)
{
    /* only ever the test environment, never whatever $KUBECONFIG points at */
    const char *tdir = getenv("TESTENV_DIR");
    char kcbuf[1024], envsh[1024];
    struct stat st;
    snprintf(envsh, sizeof envsh, "%s/env.sh", tdir && *tdir ? tdir : "build/testenv");
    snprintf(kcbuf, sizeof kcbuf, "%s/kubeconfig", tdir && *tdir ? tdir : "build/testenv");
    const char *kc = stat(envsh, &st) == 0 ? kcbuf : NULL;
    if (!kc) {
        printf("1..0 # SKIP no test environment (make testenv-up; . build/testenv/env.sh)\n");
        return 0;
    }
    setenv("KUBECONFIG", kc, 1);          /* for kubectl in token_tests */
    char err[512] = "";
    kube_config cfg;
    loop = ev_loop_new(EVFLAG_AUTO);
    IS_INT(kube_config_load_default(&cfg, kc, NULL, err, sizeof err), 0, "kubeconfig %s loads %s", kc, err);
    cfg.qps = 50;
    cfg.burst = 100;
    c = kube_client_new(loop, &cfg, err, sizeof err);
    kube_config_clear(&cfg);
    OK(c != NULL, "client %s", err);
    if (!c)
        return DONE_TESTING();

    res o;
    CALL(o, kube_get(c, "/version", on_done, &o, E));
    IS_INT(o.status, 200, "GET /version over verified TLS with the kubeconfig's credentials");
    OK(json_string_value(json_object_get(o.body, "gitVersion")) != NULL, "gitVersion %s",
       json_string_value(json_object_get(o.body, "gitVersion")));
    IS_INT(o.version, 2, "HTTP/2 negotiated with the apiserver (ALPN)");
    json_decref(o.body);

    char ns[64], buf[2048];
    snprintf(ns, sizeof ns, "fc-transport-%d", (int)getpid());
    snprintf(buf, sizeof buf, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    CALL(o, kube_apply(c, buf, on_done, &o, E));
    IS_INT(o.status, 201, "namespace created by server-side apply (%s)", o.message);
    json_decref(o.body);

    reflector_opts ro = {.namespace = ns, .label_selector = "test=transport", .cluster_label = "cluster",
                         .page_limit = 2, .on_synced = on_synced};
    reflector *r = reflector_start(c, &kube_kind_configmap, &ro, on_event, NULL, err, sizeof err);
    loop_run_until(loop, &synced, 30);
    OK(synced && reflector_len(r) == 0, "reflector synced on an empty namespace");

    for (int i = 1; i <= 3; i++) {
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm%d\",\"namespace\":\"%s\","
                 "\"labels\":{\"test\":\"transport\",\"cluster\":\"fc1\"}},\"data\":{\"k\":\"v%d\"}}",
                 i, ns, i);
        CALL(o, kube_apply(c, buf, on_done, &o, E));
        IS_INT(o.status, 201, "apply creates cm%d", i);
        OK(json_object_get(json_object_get(o.body, "metadata"), "managedFields") != NULL,
           "the server records managedFields for flink-controller");
        json_decref(o.body);
    }
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm1\",\"namespace\":\"%s\","
             "\"labels\":{\"test\":\"transport\",\"cluster\":\"fc1\"}},\"data\":{\"k\":\"changed\"}}", ns);
    CALL(o, kube_apply(c, buf, on_done, &o, E));
    IS_INT(o.status, 200, "apply updates cm1");
    json_decref(o.body);
    CALL(o, kube_delete(c, &kube_kind_configmap, ns, "cm3", "Background", on_done, &o, E));
    IS_INT(o.status, 200, "DELETE with propagationPolicy Background");
    json_decref(o.body);
    wait_events(5);
    IS_STR(events, "ADDED:cm1 ADDED:cm2 ADDED:cm3 MODIFIED:cm1 DELETED:cm3 ", "reflector saw the watch events");
    IS_INT(reflector_len(r), 2, "cache: cm1, cm2");
    json_t *cm1 = reflector_get(r, ns, "cm1");
    IS_STR(json_string_value(json_object_get(json_object_get(cm1, "data"), "k")), "changed", "cache has the update");
    OK(json_object_get(json_object_get(cm1, "metadata"), "managedFields") == NULL, "cache without managedFields");
    int seen = 0;
    IS_INT(reflector_by_cluster(r, ns, "fc1", count_each, &seen), 2, "label index: cluster=fc1 -> 2 objects");

    char path[512];
    kube_path(path, sizeof path, &kube_kind_configmap, ns, NULL, NULL);
    CALL(o, kube_list(c, path, "test=transport", 1, on_done, &o, E));
    IS_INT(json_array_size(json_object_get(o.body, "items")), 2, "paginated list (limit 1): 2 items");
    json_decref(o.body);

    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"flinkoperator.k8s.io/v1beta1\",\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"fc1\","
             "\"namespace\":\"%s\"},\"spec\":{\"image\":{\"name\":\"flink:1.20.1\"},\"taskManager\":{\"replicas\":1}}}",
             ns);
    CALL(o, kube_apply(c, buf, on_done, &o, E));
    OK(o.status == 201, "FlinkCluster created (%ld %s)", o.status, o.message);
    json_t *fc = o.body;
    CALL(o, kube_patch_status(c, &kube_kind_flinkcluster, ns, "fc1",
                              "{\"status\":{\"observedGeneration\":1,\"state\":\"Creating\"}}", on_done, &o, E));
    IS_INT(o.status, 200, "status patch on /status (%s)", o.message);
    json_t *stj = json_object_get(o.body, "status");
    IS_INT(json_integer_value(json_object_get(stj, "observedGeneration")), 1, "status.observedGeneration stored");
    json_decref(o.body);
    if (fc) {
        CALL(o, kube_event_create(c, fc, "Normal", "TransportTest", "hello from test_kube_live", on_done, &o, E));
        IS_INT(o.status, 201, "Event created (%s)", o.message);
        json_decref(o.body);
    }
    json_decref(fc);

    token_tests(ns);

    reflector_stop(r);
    CALL(o, kube_delete(c, &kube_kind_namespace, NULL, ns, "Background", on_done, &o, E));
    IS_INT(o.status, 200, "namespace deleted");
    json_decref(o.body);
    kube_client_free(c);
    ev_loop_destroy(loop);
    return DONE_TESTING();
}
