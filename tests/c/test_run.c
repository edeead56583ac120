/* SPDX-License-Identifier: Apache-2.0 */
/* core/run: the pure helpers (status merge patch, recording Flink REST answers, where a Flink
 * call goes) and the command's usage errors; Flink calls through the API server's service proxy
 * against tests/c/fake_apiserver.py (path form, credentials, POST body, error mapping). The
 * controller itself is tested against the real test environment (tests/integration/). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"
#include "loop.h"
#include "flinkcall.h"
#include "expect.h"
#include "run.h"
#include "status.h"
#include "transport_tap.h"
#include "transport_server.h"
#include "util.h"

#include <unistd.h>

static char *dump(json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static void is_patch(const char *old, const char *new, const char *want, const char *what)
{
    json_t *o = old ? json_loads(old, 0, NULL) : NULL, *n = json_loads(new, 0, NULL);
    json_t *p = status_merge_patch(o, n);
    char *got = dump(p);
    IS_STR(got, want, "merge patch: %s", what);
    free(got);
    json_decref(p);
    json_decref(o);
    json_decref(n);
}

/* records one answer into a state that holds an old one and returns the JSON of answers[id] */
static char *record(const char *id, const char *intent, long status, const char *body, const char *error)
{
    json_t *st = json_pack("{s:{s:{s:s, s:I}}}", "answers", "old", "body", "x", "time", (json_int_t)1699990000);
    json_t *in = intent ? json_loads(intent, 0, NULL) : NULL;
    int rc = flinkcall_record(st, id, in, status, body, error, 1700000000.0);
    json_decref(in);
    json_t *a = json_object_get(json_object_get(st, "answers"), id ? id : "");
    char *s = rc ? NULL : a ? dump(a) : strdup("none");
    json_decref(st);
    return s;
}

static void is_location(flinkcall_access access, const char *base, const char *target, const char *path,
                        const char *want, const char *what)
{
    json_t *t = target ? json_loads(target, 0, NULL) : NULL;
    char buf[512] = "junk";
    int rc = flinkcall_location(buf, sizeof buf, access, base, t, path);
    IS_INT(rc, *want ? 0 : -1, "location rc: %s", what);
    IS_STR(buf, want, "location: %s", what);
    json_decref(t);
}

#define JM "{\"scheme\":\"http\",\"namespace\":\"team-a\",\"service\":\"wc-jobmanager\",\"port\":18081}"

static void location_tests(void)
{
    flinkcall_access a = FLINKCALL_PROXY;
    IS_INT(flinkcall_access_parse("service", &a), 0, "--flink-access service parses");
    IS_INT(a, FLINKCALL_SERVICE, "service");
    IS_INT(flinkcall_access_parse("auto", &a), 0, "--flink-access auto parses");
    IS_INT(a, FLINKCALL_AUTO, "auto");
    IS_INT(flinkcall_access_parse("direct", &a), -1, "--flink-access direct is refused");
    IS_INT(flinkcall_access_resolve(FLINKCALL_AUTO, "in-cluster"), FLINKCALL_SERVICE,
           "auto with the service-account config: service DNS");
    IS_INT(flinkcall_access_resolve(FLINKCALL_AUTO, "kind-dev"), FLINKCALL_PROXY, "auto with a kubeconfig: proxy");
    IS_INT(flinkcall_access_resolve(FLINKCALL_AUTO, NULL), FLINKCALL_PROXY, "auto without a context: proxy");
    IS_INT(flinkcall_access_resolve(FLINKCALL_PROXY, "in-cluster"), FLINKCALL_PROXY, "proxy stays proxy in a pod");
    IS_INT(flinkcall_access_resolve(FLINKCALL_SERVICE, "kind-dev"), FLINKCALL_SERVICE, "service stays service");

    is_location(FLINKCALL_SERVICE, NULL, JM, "/jobs/overview", "http://wc-jobmanager.team-a.svc:18081/jobs/overview",
                "service: cluster DNS name and the ui port");
    is_location(FLINKCALL_PROXY, NULL, JM, "/jobs/overview",
                "/api/v1/namespaces/team-a/services/http:wc-jobmanager:18081/proxy/jobs/overview",
                "proxy: the API server's service proxy path, port by number");
    is_location(FLINKCALL_PROXY, NULL, JM, "/jobs/ab?mode=cancel",
                "/api/v1/namespaces/team-a/services/http:wc-jobmanager:18081/proxy/jobs/ab?mode=cancel",
                "proxy: the query passes");
    is_location(FLINKCALL_PROXY, "http://127.0.0.1:8081/", JM, "/jobs/overview", "http://127.0.0.1:8081/jobs/overview",
                "--flink-base-url wins over proxy (trailing / dropped)");
    is_location(FLINKCALL_SERVICE, "http://fl:1", NULL, "/x", "http://fl:1/x", "--flink-base-url needs no target");
    is_location(FLINKCALL_PROXY, NULL, "{\"scheme\":\"http\",\"namespace\":\"n\",\"service\":\"s\",\"port\":8081.0}",
                "/x", "/api/v1/namespaces/n/services/http:s:8081/proxy/x", "a whole real port (from Lua) is a port");
    is_location(FLINKCALL_SERVICE, NULL, "{\"scheme\":\"http\",\"namespace\":\"n\",\"service\":\"s\"}", "/x", "",
                "a target without port is refused");
    is_location(FLINKCALL_SERVICE, NULL, "{\"scheme\":\"ftp\",\"namespace\":\"n\",\"service\":\"s\",\"port\":1}",
                "/x", "", "scheme ftp is refused");
    is_location(FLINKCALL_SERVICE, NULL, "{\"scheme\":\"http\",\"namespace\":\"n\",\"service\":\"s\",\"port\":70000}",
                "/x", "", "port 70000 is refused");
    is_location(FLINKCALL_AUTO, NULL, JM, "/x", "", "auto must be resolved first");
    is_location(FLINKCALL_SERVICE, NULL, JM, "x", "", "a path without / is refused");
    char small[20];
    json_t *t = json_loads(JM, 0, NULL);
    IS_INT(flinkcall_location(small, sizeof small, FLINKCALL_SERVICE, NULL, t, "/jobs/overview"), -1,
           "a location longer than the buffer is refused");
    IS_STR(small, "", "and the buffer left empty");
    json_decref(t);
}

/* ---- Flink calls through the fake API server's service proxy ---- */

static struct ev_loop *loop;

struct answer {
    int done;
    long status;
    char error[512];
    json_t *body;
};

static void on_flink(long status, const char *body, const char *error, void *ud)
{
    struct answer *a = ud;
    a->done = 1;
    a->status = status;
    snprintf(a->error, sizeof a->error, "%s", error);
    a->body = json_loads(body, 0, NULL);
}

static const char *jstr(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "(none)";
}

/* Runs the flink action `action` (JSON) with env; fills *a. */
static void call(const flinkcall_env *env, const char *action, struct answer *a)
{
    json_decref(a->body);
    memset(a, 0, sizeof *a);
    json_t *act = json_loads(action, 0, NULL);
    char err[512] = "";
    flinkcall *c = flinkcall_start(env, act, NULL, on_flink, a, err, sizeof err);
    OK(c != NULL, "flinkcall_start (%s)", err);
    OK(!a->done, "the callback does not run inside flinkcall_start");
    if (c)
        loop_run_until(loop, &a->done, 20);
    json_decref(act);
}

#define TARGET(ns) "\"target\":{\"scheme\":\"http\",\"namespace\":\"" ns "\",\"service\":\"wc-jobmanager\",\"port\":8081}"

static void proxy_tests(int port)
{
    char server[64], err[512] = "";
    snprintf(server, sizeof server, "https://127.0.0.1:%d", port);
    kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = server;
    cfg.ca_file = TLS_DIR "/ca.crt";
    cfg.token = "proxy-token";
    kube_client *tok = kube_client_new(loop, &cfg, err, sizeof err);
    cfg.token = NULL;
    cfg.cert_file = TLS_DIR "/client.crt";
    cfg.key_file = TLS_DIR "/client.key";
    kube_client *certc = kube_client_new(loop, &cfg, err, sizeof err);
    http_client *hc = http_client_new(loop, err, sizeof err);
    OK(tok && certc && hc, "clients (%s)", err);
    if (!tok || !certc || !hc)
        return;
    flinkcall_env env = {.access = FLINKCALL_PROXY, .kc = tok, .hc = hc};
    struct answer a = {0};

    call(&env, "{\"method\":\"GET\",\"path\":\"/jobs/overview\"," TARGET("team-a") "}", &a);
    IS_INT(a.status, 200, "proxied GET: the JobManager's 200");
    IS_STR(a.error, "", "no error");
    IS_STR(jstr(a.body, "ns"), "team-a", "to the cluster's namespace");
    IS_STR(jstr(a.body, "service"), "http:wc-jobmanager:8081", "service as scheme:name:port");
    IS_STR(jstr(a.body, "path"), "/jobs/overview", "the Flink path after /proxy");
    IS_STR(jstr(a.body, "auth"), "Bearer proxy-token", "with the kubeconfig's bearer token");

    call(&env, "{\"method\":\"POST\",\"path\":\"/jobs/ab12/savepoints\",\"body\":{\"cancel-job\":false,"
               "\"target-directory\":\"/sp\"}," TARGET("team-a") "}", &a);
    IS_INT(a.status, 200, "proxied POST answered");
    IS_STR(jstr(a.body, "method"), "POST", "method POST passes");
    IS_STR(jstr(a.body, "body"), "{\"cancel-job\":false,\"target-directory\":\"/sp\"}", "the POST body passes whole");
    IS_STR(jstr(a.body, "contentType"), "application/json", "as JSON");

    call(&env, "{\"method\":\"PATCH\",\"path\":\"/jobs/ab12?mode=cancel\"," TARGET("team-a") "}", &a);
    IS_STR(jstr(a.body, "method"), "PATCH", "cancel: PATCH passes");
    IS_STR(jstr(json_object_get(a.body, "query"), "mode"), "cancel", "cancel: the query passes");

    env.kc = certc;
    call(&env, "{\"method\":\"GET\",\"path\":\"/jobs/overview\"," TARGET("team-a") "}", &a);
    IS_STR(jstr(a.body, "cn"), "flink-controller-test", "with the kubeconfig's client certificate");
    IS_STR(jstr(a.body, "auth"), "", "and no token then");

    call(&env, "{\"method\":\"GET\",\"path\":\"/jobs/overview\"," TARGET("noep") "}", &a);
    IS_INT(a.status, 0, "API server 503 (no endpoints): no answer from Flink");
    IS_STR(a.error, "JobManager unreachable through the API server: HTTP 503: no endpoints available for service "
                    "\"http:wc-jobmanager:8081\"", "503 Status -> unreachable, with the API server's reason");
    call(&env, "{\"method\":\"GET\",\"path\":\"/jobs/overview\"," TARGET("nosvc") "}", &a);
    IS_INT(a.status, 0, "API server 404 (no such Service): no answer from Flink");
    IS_STR(a.error, "JobManager unreachable through the API server: HTTP 404: services \"wc-jobmanager\" not found",
           "404 Status -> unreachable");
    {
        /* a jar upload (POST /jars/upload) through the proxy: one multipart/form-data part */
        static const char jar[] = "PK\x03\x04 not really a jar";
        http_part part = {.name = "jarfile", .filename = "testenv-jobs.jar", .type = "application/x-java-archive",
                          .data = jar, .len = sizeof jar - 1};
        json_t *act = json_loads("{\"method\":\"POST\",\"path\":\"/jars/upload\",\"body\":{\"ignored\":1},"
                                 TARGET("team-a") "}", 0, NULL);
        json_decref(a.body);
        memset(&a, 0, sizeof a);
        flinkcall *up = flinkcall_start(&env, act, &part, on_flink, &a, err, sizeof err);
        OK(up != NULL, "flinkcall_start with a part (%s)", err);
        if (up)
            loop_run_until(loop, &a.done, 20);
        IS_INT(a.status, 200, "upload: the JobManager's answer");
        OK(strncmp(jstr(a.body, "contentType"), "multipart/form-data; boundary=", 30) == 0,
           "upload: multipart/form-data with libcurl's boundary (got %s)", jstr(a.body, "contentType"));
        const char *sent = jstr(a.body, "body");
        OK(strstr(sent, "Content-Disposition: form-data; name=\"jarfile\"; filename=\"testenv-jobs.jar\"") &&
               strstr(sent, "Content-Type: application/x-java-archive") && strstr(sent, "not really a jar") &&
               !strstr(sent, "ignored"),
           "upload: the part's name, file name, type and bytes, no JSON body");
        /* the same from a file (as core/executor.c sends a downloaded jar), through the proxy */
        int fd = util_tmpfile(err, sizeof err);
        OK(fd >= 0 && write(fd, jar, sizeof jar - 1) == (ssize_t)(sizeof jar - 1), "a jar in a temporary file");
        http_part fpart = {.name = "jarfile", .filename = "testenv-jobs.jar", .type = "application/x-java-archive",
                           .from_fd = 1, .fd = fd, .len = sizeof jar - 1};
        json_decref(a.body);
        memset(&a, 0, sizeof a);
        up = flinkcall_start(&env, act, &fpart, on_flink, &a, err, sizeof err);
        OK(up != NULL, "flinkcall_start with a part from a file (%s)", err);
        if (up)
            loop_run_until(loop, &a.done, 20);
        IS_INT(a.status, 200, "upload from a file: the JobManager's answer");
        sent = jstr(a.body, "body");
        OK(strstr(sent, "filename=\"testenv-jobs.jar\"") && strstr(sent, "\r\n\r\nPK\x03\x04 not really a jar\r\n--"),
           "upload from a file: the file's bytes as the part");
        close(fd);
        json_decref(act);
    }
    call(&env, "{\"method\":\"GET\",\"path\":\"/jobs/ab12/savepoints/1\"," TARGET("flinkerr") "}", &a);
    IS_INT(a.status, 404, "Flink's own 404 passes as Flink's answer");
    IS_STR(a.error, "", "without an error");
    OK(json_is_array(json_object_get(a.body, "errors")), "with Flink's errors list");

    /* an unreachable JobManager through the proxy is recorded as no answer (status 0) */
    json_t *st = json_object();
    flinkcall_record(st, "list_jobs", NULL, 0, "",
                     "JobManager unreachable through the API server: HTTP 503: no endpoints", 1700000000.0);
    IS_INT(json_integer_value(json_object_get(json_object_get(json_object_get(st, "answers"), "list_jobs"), "status")),
           0, "an unreachable JobManager through the proxy: status 0 with the reason");
    json_decref(st);

    /* --flink-base-url wins: plain HTTP to it, a refused connection is a transport error */
    flinkcall_env base = {.access = FLINKCALL_PROXY, .base_url = "http://127.0.0.1:1", .kc = tok, .hc = hc};
    call(&base, "{\"method\":\"GET\",\"path\":\"/jobs/overview\"}", &a);
    IS_INT(a.status, 0, "base URL, nothing listening: status 0");
    OK(a.error[0] != '\0', "with the transport error (%s)", a.error);

    json_t *nopath = json_pack("{s:s}", "method", "GET");
    OK(flinkcall_start(&env, nopath, NULL, on_flink, &a, err, sizeof err) == NULL, "an action without path is refused at once");
    IS_STR(err, "flink action needs method and path", "and says why");
    json_decref(nopath);
    json_decref(a.body);
    http_client_free(hc);
    kube_client_free(tok);
    kube_client_free(certc);
}

int main(void)
{
    /* ---- status_merge_patch (RFC 7386) ---- */
    is_patch("{\"a\":1,\"b\":{\"c\":1,\"d\":2}}", "{\"a\":1,\"b\":{\"c\":1,\"d\":2}}", "{}", "equal -> {}");
    is_patch("{\"state\":\"Creating\",\"x\":1}", "{\"state\":\"Running\",\"x\":1}", "{\"state\":\"Running\"}",
             "a changed scalar only");
    is_patch("{\"a\":1,\"gone\":{\"b\":1}}", "{\"a\":1}", "{\"gone\":null}", "a removed key becomes null");
    is_patch("{\"c\":{\"job\":{\"id\":\"x\",\"state\":\"Running\"}}}", "{\"c\":{\"job\":{\"id\":\"x\"}}}",
             "{\"c\":{\"job\":{\"state\":null}}}", "nested removal is nested");
    is_patch("{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}",
             "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}",
             "{\"conditions\":[{\"status\":\"True\",\"type\":\"Ready\"}]}", "lists are replaced whole");
    is_patch(NULL, "{\"state\":\"Creating\"}", "{\"state\":\"Creating\"}", "no old status: the whole status");
    is_patch("{\"a\":{\"b\":1}}", "{\"a\":5}", "{\"a\":5}", "object replaced by a scalar");

    /* ---- expect_rv_at_least (resourceVersion expectations) ---- */
    OK(expect_rv_at_least("120", "120"), "the same resourceVersion is seen");
    OK(expect_rv_at_least("121", "120"), "a newer one is seen");
    OK(!expect_rv_at_least("119", "120"), "an older one is not");
    OK(expect_rv_at_least("1000", "999"), "compared as numbers, not as text");
    OK(!expect_rv_at_least("999", "1000"), "999 < 1000 although '9' > '1'");
    OK(expect_rv_at_least("0120", "120"), "leading zeros ignored");
    OK(!expect_rv_at_least("abc", "120"), "not a number: only equality counts");
    OK(expect_rv_at_least("x7", "x7"), "equal opaque versions are seen");
    OK(!expect_rv_at_least(NULL, "1"), "nothing cached: not seen");

    /* ---- flinkcall_record: raw answers under the action's id, nothing parsed ---- */
    char *s;
    s = record("list_jobs", "{\"kind\":\"list_jobs\"}", 200, "{\"jobs\":[]}", "");
    IS_STR(s, "{\"body\":\"{\\\"jobs\\\":[]}\",\"error\":\"\",\"intent\":{\"kind\":\"list_jobs\"},"
              "\"status\":200,\"time\":1700000000}", "an answer: the intent, status, body text, error, time");
    free(s);
    s = record("6553f164000000000000000000000000", NULL, 0, NULL, "Couldn't connect to server");
    IS_STR(s, "{\"body\":\"\",\"error\":\"Couldn't connect to server\",\"intent\":null,\"status\":0,"
              "\"time\":1700000000}", "no answer: status 0, the transport error");
    free(s);
    s = record("x", NULL, 404, "not json at all", "");
    IS_STR(s, "{\"body\":\"not json at all\",\"error\":\"\",\"intent\":null,\"status\":404,"
              "\"time\":1700000000}", "a body that is not JSON is kept as text (the framework decodes)");
    free(s);
    s = record("x", NULL, 200, "\xff\xfe", "");
    IS_STR(s, "{\"body\":\"\",\"error\":\"answer is not UTF-8\",\"intent\":null,\"status\":0,"
              "\"time\":1700000000}", "a body that is not UTF-8: no answer, with why");
    free(s);
    {
        size_t n = FLINKCALL_ANSWER_MAX + 1;
        char *big = malloc(n + 1);
        memset(big, 'x', n);
        big[n] = 0;
        s = record("x", NULL, 200, big, "");
        IS_STR(s, "{\"body\":\"\",\"error\":\"answer larger than RUN_FLINK_ANSWER_MAX bytes\",\"intent\":null,"
                  "\"status\":0,\"time\":1700000000}", "an answer over FLINKCALL_ANSWER_MAX: not kept");
        free(s);
        free(big);
    }
    s = record("old", NULL, 200, "{}", "");
    OK(s && strstr(s, "\"time\":1700000000"), "the same id again: the newer answer replaces it");
    free(s);
    {
        json_t *st2 = json_pack("{s:{s:{s:I}, s:{s:I}}}", "answers", "stale", "time", (json_int_t)1700000000 - 3601,
                                "recent", "time", (json_int_t)1700000000 - 60);
        flinkcall_record(st2, "new", NULL, 200, "{}", "", 1700000000.0);
        json_t *ans = json_object_get(st2, "answers");
        OK(!json_object_get(ans, "stale") && json_object_get(ans, "recent") && json_object_get(ans, "new"),
           "answers older than FLINKCALL_ANSWER_TTL_S are dropped, newer ones kept");
        json_decref(st2);
    }
    s = record("", NULL, 202, "", "");
    IS_STR(s, "none", "an action without id records nothing");
    free(s);
    IS_INT(flinkcall_record(NULL, "list_jobs", NULL, 200, "{}", "", 0), -1, "NULL state refused");

    /* ---- usage errors (exit 2, before any connection) ---- */
    char *a1[] = {"run", "--workers", "0", NULL};
    IS_INT(run_main(3, a1), 2, "--workers 0 is a usage error");
    char *a2[] = {"run", "--log-format", "xml", NULL};
    IS_INT(run_main(3, a2), 2, "--log-format xml is a usage error");
    char *a3[] = {"run", "--flink-base-url", "ftp://x", NULL};
    IS_INT(run_main(3, a3), 2, "--flink-base-url must be http(s)");
    char *a4[] = {"run", "--policy-dir", "/nonexistent/policies", NULL};
    IS_INT(run_main(3, a4), 2, "--policy-dir that does not exist is a usage error");
    char *a5[] = {"run", "extra", NULL};
    IS_INT(run_main(2, a5), 2, "an unexpected argument is a usage error");
    char *a6[] = {"run", "--workers", "1.5", NULL};
    IS_INT(run_main(3, a6), 2, "--workers 1.5 is a usage error (an integer, as render's flags)");
    char *a7[] = {"run", "--policy-memory-mib", "1e3", NULL};
    IS_INT(run_main(3, a7), 2, "--policy-memory-mib 1e3 is a usage error");
    char *a8[] = {"run", "--flink-access", "direct", NULL};
    IS_INT(run_main(3, a8), 2, "--flink-access direct is a usage error");
    char *a9[] = {"run", "--policy-configmap", "no-namespace", NULL};
    IS_INT(run_main(3, a9), 2, "--policy-configmap without NAMESPACE/ is a usage error");
    char *a10[] = {"run", "--policy-configmap", "ns/a/b", NULL};
    IS_INT(run_main(3, a10), 2, "--policy-configmap with two slashes is a usage error");

    /* --log-format json: a startup failure is one JSON line with the constant msg and the
     * step and error as keys (log.h, "Keys") */
    FILE *lf = tmpfile();
    log_set_output(lf);
    setenv("KUBECONFIG", "/nonexistent/kubeconfig", 1);
    char *a11[] = {"run", "--log-format", "json", NULL};
    IS_INT(run_main(3, a11), 1, "a kubeconfig that does not exist: exit 1");
    unsetenv("KUBECONFIG");
    log_set_output(NULL);
    log_configure(LOG_FORMAT_TEXT, LOG_INFO);
    char lbuf[4096] = "";
    rewind(lf);
    size_t ln = fread(lbuf, 1, sizeof lbuf - 1, lf);
    lbuf[ln] = '\0';
    fclose(lf);
    char *nl = strchr(lbuf, '\n');
    OK(nl && nl[1] == '\0', "one line written: %s", lbuf);
    json_t *rec = json_loads(lbuf, 0, NULL);
    IS_STR(json_string_value(json_object_get(rec, "msg")), "startup failed", "msg: a constant phrase");
    IS_STR(json_string_value(json_object_get(rec, "level")), "error", "level error");
    IS_STR(json_string_value(json_object_get(rec, "step")), "kubernetes config", "step: the part that failed");
    OK(strstr(json_string_value(json_object_get(rec, "error")) ?: "", "/nonexistent/kubeconfig") != NULL,
       "error: names the file");
    OK(json_is_string(json_object_get(rec, "ts")) && json_object_size(rec) == 5, "ts, level, msg, step, error");
    json_decref(rec);

    location_tests();
    loop = ev_loop_new(EVFLAG_AUTO);
    SERVER_RUN(proxy_tests);
    ev_loop_destroy(loop);
    return DONE_TESTING();
}
