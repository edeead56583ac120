/* core/run: the pure helpers (status merge patch, recording Flink REST answers, where a Flink
 * call goes) and the command's usage errors; Flink calls through the API server's service proxy
 * against tests/c/fake_apiserver.py (path form, credentials, POST body, error mapping). The
 * controller itself is tested against the real test environment (tests/integration/). */
#include <stdlib.h>

#include <jansson.h>

#include "loop.h"
#include "run.h"
#include "transport_tap.h"
#include "transport_server.h"

static char *dump(json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static void is_patch(const char *old, const char *new, const char *want, const char *what)
{
    json_t *o = old ? json_loads(old, 0, NULL) : NULL, *n = json_loads(new, 0, NULL);
    json_t *p = run_merge_patch(o, n);
    char *got = dump(p);
    IS_STR(got, want, "merge patch: %s", what);
    free(got);
    json_decref(p);
    json_decref(o);
    json_decref(n);
}

/* records one answer into a fresh state and returns the JSON of savepoint_triggers or the state */
static char *record(const char *result, const char *job, const char *path, long status, const char *body,
                    const char *error, const char *field)
{
    json_t *st = json_pack("{s:b, s:[], s:{}}", "reachable", 1, "jobs", "savepoint_triggers");
    json_array_append_new(json_object_get(st, "jobs"), json_pack("{s:s}", "jid", "old"));
    int rc = run_flink_record(st, result, job, path, status, body, error, 1700000000.0);
    char *s = rc ? NULL : dump(field ? json_object_get(st, field) : st);
    json_decref(st);
    return s;
}

static void is_location(run_flink_access access, const char *base, const char *target, const char *path,
                        const char *want, const char *what)
{
    json_t *t = target ? json_loads(target, 0, NULL) : NULL;
    char buf[512] = "junk";
    int rc = run_flink_location(buf, sizeof buf, access, base, t, path);
    IS_INT(rc, *want ? 0 : -1, "location rc: %s", what);
    IS_STR(buf, want, "location: %s", what);
    json_decref(t);
}

#define JM "{\"scheme\":\"http\",\"namespace\":\"team-a\",\"service\":\"wc-jobmanager\",\"port\":18081}"

static void location_tests(void)
{
    run_flink_access a = RUN_FLINK_PROXY;
    IS_INT(run_flink_access_parse("service", &a), 0, "--flink-access service parses");
    IS_INT(a, RUN_FLINK_SERVICE, "service");
    IS_INT(run_flink_access_parse("auto", &a), 0, "--flink-access auto parses");
    IS_INT(a, RUN_FLINK_AUTO, "auto");
    IS_INT(run_flink_access_parse("direct", &a), -1, "--flink-access direct is refused");
    IS_INT(run_flink_access_resolve(RUN_FLINK_AUTO, "in-cluster"), RUN_FLINK_SERVICE,
           "auto with the service-account config: service DNS");
    IS_INT(run_flink_access_resolve(RUN_FLINK_AUTO, "kind-dev"), RUN_FLINK_PROXY, "auto with a kubeconfig: proxy");
    IS_INT(run_flink_access_resolve(RUN_FLINK_AUTO, NULL), RUN_FLINK_PROXY, "auto without a context: proxy");
    IS_INT(run_flink_access_resolve(RUN_FLINK_PROXY, "in-cluster"), RUN_FLINK_PROXY, "proxy stays proxy in a pod");
    IS_INT(run_flink_access_resolve(RUN_FLINK_SERVICE, "kind-dev"), RUN_FLINK_SERVICE, "service stays service");

    is_location(RUN_FLINK_SERVICE, NULL, JM, "/jobs/overview", "http://wc-jobmanager.team-a.svc:18081/jobs/overview",
                "service: cluster DNS name and the ui port");
    is_location(RUN_FLINK_PROXY, NULL, JM, "/jobs/overview",
                "/api/v1/namespaces/team-a/services/http:wc-jobmanager:18081/proxy/jobs/overview",
                "proxy: the API server's service proxy path, port by number");
    is_location(RUN_FLINK_PROXY, NULL, JM, "/jobs/ab?mode=cancel",
                "/api/v1/namespaces/team-a/services/http:wc-jobmanager:18081/proxy/jobs/ab?mode=cancel",
                "proxy: the query passes");
    is_location(RUN_FLINK_PROXY, "http://127.0.0.1:8081/", JM, "/jobs/overview", "http://127.0.0.1:8081/jobs/overview",
                "--flink-base-url wins over proxy (trailing / dropped)");
    is_location(RUN_FLINK_SERVICE, "http://fl:1", NULL, "/x", "http://fl:1/x", "--flink-base-url needs no target");
    is_location(RUN_FLINK_PROXY, NULL, "{\"scheme\":\"http\",\"namespace\":\"n\",\"service\":\"s\",\"port\":8081.0}",
                "/x", "/api/v1/namespaces/n/services/http:s:8081/proxy/x", "a whole real port (from Lua) is a port");
    is_location(RUN_FLINK_SERVICE, NULL, "{\"scheme\":\"http\",\"namespace\":\"n\",\"service\":\"s\"}", "/x", "",
                "a target without port is refused");
    is_location(RUN_FLINK_SERVICE, NULL, "{\"scheme\":\"ftp\",\"namespace\":\"n\",\"service\":\"s\",\"port\":1}",
                "/x", "", "scheme ftp is refused");
    is_location(RUN_FLINK_SERVICE, NULL, "{\"scheme\":\"http\",\"namespace\":\"n\",\"service\":\"s\",\"port\":70000}",
                "/x", "", "port 70000 is refused");
    is_location(RUN_FLINK_AUTO, NULL, JM, "/x", "", "auto must be resolved first");
    is_location(RUN_FLINK_SERVICE, NULL, JM, "x", "", "a path without / is refused");
    char small[20];
    json_t *t = json_loads(JM, 0, NULL);
    IS_INT(run_flink_location(small, sizeof small, RUN_FLINK_SERVICE, NULL, t, "/jobs/overview"), -1,
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
static void call(const run_flink_env *env, const char *action, struct answer *a)
{
    json_decref(a->body);
    memset(a, 0, sizeof *a);
    json_t *act = json_loads(action, 0, NULL);
    char err[512] = "";
    run_flink_call *c = run_flink_start(env, act, on_flink, a, err, sizeof err);
    OK(c != NULL, "run_flink_start (%s)", err);
    OK(!a->done, "the callback does not run inside run_flink_start");
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
    run_flink_env env = {.access = RUN_FLINK_PROXY, .kc = tok, .hc = hc};
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
    call(&env, "{\"method\":\"GET\",\"path\":\"/jobs/ab12/savepoints/1\"," TARGET("flinkerr") "}", &a);
    IS_INT(a.status, 404, "Flink's own 404 passes as Flink's answer");
    IS_STR(a.error, "", "without an error");
    OK(json_is_array(json_object_get(a.body, "errors")), "with Flink's errors list");

    /* what run_flink_record makes of the mapped answers */
    json_t *st = json_pack("{s:b, s:[], s:{}}", "reachable", 1, "jobs", "savepoint_triggers");
    run_flink_record(st, "jobs", NULL, "/jobs/overview", 0, "",
                     "JobManager unreachable through the API server: HTTP 503: no endpoints", 1700000000.0);
    OK(json_is_false(json_object_get(st, "reachable")), "an unreachable JobManager through the proxy: reachable=false");
    json_decref(st);

    /* --flink-base-url wins: plain HTTP to it, a refused connection is a transport error */
    run_flink_env base = {.access = RUN_FLINK_PROXY, .base_url = "http://127.0.0.1:1", .kc = tok, .hc = hc};
    call(&base, "{\"method\":\"GET\",\"path\":\"/jobs/overview\"}", &a);
    IS_INT(a.status, 0, "base URL, nothing listening: status 0");
    OK(a.error[0] != '\0', "with the transport error (%s)", a.error);

    json_t *nopath = json_pack("{s:s}", "method", "GET");
    OK(run_flink_start(&env, nopath, on_flink, &a, err, sizeof err) == NULL, "an action without path is refused at once");
    IS_STR(err, "flink action needs method and path", "and says why");
    json_decref(nopath);
    json_decref(a.body);
    http_client_free(hc);
    kube_client_free(tok);
    kube_client_free(certc);
}

int main(void)
{
    /* ---- run_merge_patch (RFC 7386) ---- */
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

    /* ---- run_rv_at_least (resourceVersion expectations) ---- */
    OK(run_rv_at_least("120", "120"), "the same resourceVersion is seen");
    OK(run_rv_at_least("121", "120"), "a newer one is seen");
    OK(!run_rv_at_least("119", "120"), "an older one is not");
    OK(run_rv_at_least("1000", "999"), "compared as numbers, not as text");
    OK(!run_rv_at_least("999", "1000"), "999 < 1000 although '9' > '1'");
    OK(run_rv_at_least("0120", "120"), "leading zeros ignored");
    OK(!run_rv_at_least("abc", "120"), "not a number: only equality counts");
    OK(run_rv_at_least("x7", "x7"), "equal opaque versions are seen");
    OK(!run_rv_at_least(NULL, "1"), "nothing cached: not seen");

    /* ---- run_flink_record ---- */
    char *s;
    s = record("jobs", NULL, "/jobs/overview", 200,
               "{\"jobs\":[{\"jid\":\"ab\",\"state\":\"RUNNING\",\"start-time\":1}]}", "", NULL);
    IS_STR(s, "{\"jobs\":[{\"jid\":\"ab\",\"start-time\":1,\"state\":\"RUNNING\"}],\"reachable\":true,"
              "\"savepoint_triggers\":{}}", "jobs overview 200: reachable, jobs replaced");
    free(s);
    s = record("jobs", NULL, "/jobs/overview", 0, NULL, "Couldn't connect to server", NULL);
    IS_STR(s, "{\"jobs\":[{\"jid\":\"old\"}],\"reachable\":false,\"savepoint_triggers\":{}}",
           "jobs overview without an answer: unreachable, last jobs kept");
    free(s);
    s = record("jobs", NULL, "/jobs/overview", 503,
               "{\"errors\":[\"Service temporarily unavailable due to an ongoing leader election.\"]}", "", "reachable");
    IS_STR(s, "false", "jobs overview 503 (leader election): unreachable");
    free(s);
    s = record("savepoint_trigger", "ab12", "/jobs/ab12/savepoints", 202, "{\"request-id\":\"77\"}", "",
               "savepoint_triggers");
    IS_STR(s, "{\"ab12\":{\"request_id\":\"77\",\"status\":\"IN_PROGRESS\",\"time\":1700000000}}",
           "savepoint trigger 202: request_id, IN_PROGRESS, time");
    free(s);
    s = record("savepoint_trigger", "ab12", "/jobs/ab12/savepoints", 404, "{\"errors\":[\"Job not found\",\"x\"]}",
               "", "savepoint_triggers");
    IS_STR(s, "{\"ab12\":{\"error\":\"HTTP 404: Job not found; x\",\"time\":1700000000}}",
           "savepoint trigger 404: error with the Flink errors");
    free(s);
    s = record("savepoint_status", "ab12", "/jobs/ab12/savepoints/77", 200,
               "{\"status\":{\"id\":\"COMPLETED\"},\"operation\":{\"location\":\"file:/sp/savepoint-1\"}}", "",
               "savepoint_triggers");
    IS_STR(s, "{\"ab12\":{\"location\":\"file:/sp/savepoint-1\",\"request_id\":\"77\",\"status\":\"COMPLETED\","
              "\"time\":1700000000}}", "savepoint poll COMPLETED: location, request id from the path");
    free(s);
    s = record("savepoint_status", "ab12", "/jobs/ab12/savepoints/77", 200,
               "{\"status\":{\"id\":\"COMPLETED\"},\"operation\":{\"failure-cause\":{\"class\":\"java.lang.Ex\","
               "\"stack-trace\":\"java.lang.Ex: disk full\\n\\tat x\"}}}", "", "savepoint_triggers");
    IS_STR(s, "{\"ab12\":{\"failure\":\"java.lang.Ex: disk full\",\"request_id\":\"77\",\"status\":\"COMPLETED\","
              "\"time\":1700000000}}", "savepoint poll COMPLETED with failure-cause: its first line");
    free(s);
    s = record("savepoint_status", "ab12", "/jobs/ab12/savepoints/77", 200,
               "{\"status\":{\"id\":\"IN_PROGRESS\"},\"operation\":null}", "", "savepoint_triggers");
    IS_STR(s, "{\"ab12\":{\"request_id\":\"77\",\"status\":\"IN_PROGRESS\",\"time\":1700000000}}",
           "savepoint poll IN_PROGRESS");
    free(s);
    s = record("savepoint_status", "ab12", "/jobs/ab12/savepoints/77", 0, NULL, "Operation timed out",
               "savepoint_triggers");
    IS_STR(s, "{\"ab12\":{\"error\":\"Operation timed out\",\"request_id\":\"77\",\"time\":1700000000}}",
           "savepoint poll without an answer: transport error");
    free(s);
    s = record("exceptions", "ab12", "/jobs/ab12/exceptions?maxExceptions=1", 200,
               "{\"root-exception\":\"old\",\"exceptionHistory\":{\"entries\":[{\"exceptionName\":"
               "\"org.apache.flink.runtime.JobException\",\"stacktrace\":\"JobException: Recovery is suppressed\\n"
               "Caused by: java.lang.IllegalArgumentException: timeout value is negative\",\"timestamp\":1}],"
               "\"truncated\":false}}", "", "exceptions");
    IS_STR(s, "{\"ab12\":{\"name\":\"org.apache.flink.runtime.JobException\",\"stacktrace\":\"JobException: "
              "Recovery is suppressed\\nCaused by: java.lang.IllegalArgumentException: timeout value is negative\","
              "\"time\":1700000000}}", "exceptions 200: the newest entry's name and stack trace");
    free(s);
    {
        char big[RUN_FLINK_EXCEPTION_MAX + 64], body[RUN_FLINK_EXCEPTION_MAX + 128];
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = 0;
        memcpy(big + RUN_FLINK_EXCEPTION_MAX - 1, "\xc3\xa9", 2); /* an e-acute across the bound */
        snprintf(body, sizeof body, "{\"root-exception\":\"%s\"}", big);
        s = record("exceptions", "ab12", "/jobs/ab12/exceptions", 200, body, "", "exceptions");
        OK(s && strlen(s) == strlen("{\"ab12\":{\"stacktrace\":\"\",\"time\":1700000000}}") + RUN_FLINK_EXCEPTION_MAX - 1,
           "exceptions: no history, root-exception cut before the UTF-8 sequence that crosses the bound");
        free(s);
    }
    s = record("exceptions", "ab12", "/jobs/ab12/exceptions", 404, "{\"errors\":[\"Job not found\"]}", "",
               "exceptions");
    IS_STR(s, "{\"ab12\":{\"error\":\"HTTP 404: Job not found\",\"time\":1700000000}}", "exceptions 404: error");
    free(s);
    s = record("", NULL, "/jobs/ab12?mode=cancel", 202, "", "", NULL);
    IS_STR(s, "{\"jobs\":[{\"jid\":\"old\"}],\"reachable\":true,\"savepoint_triggers\":{}}",
           "an action without result (cancel) records nothing");
    free(s);
    s = record("jobs", NULL, "/jobs/overview", 200, "not json", "", "reachable");
    IS_STR(s, "false", "jobs overview 200 with a body that is not JSON: unreachable");
    free(s);
    s = record("taskmanagers", NULL, "/taskmanagers", 200,
               "{\"taskmanagers\":[{\"id\":\"wc-taskmanager-1\",\"slotsNumber\":2},{\"id\":\"wc-taskmanager-3\"},"
               "{\"noid\":1}]}", "", "taskmanagers");
    IS_STR(s, "{\"ids\":[\"wc-taskmanager-1\",\"wc-taskmanager-3\"],\"time\":1700000000}",
           "taskmanagers 200: the registered resource ids and when");
    free(s);
    s = record("taskmanagers", NULL, "/taskmanagers", 503, "{\"errors\":[\"x\"]}", "", NULL);
    IS_STR(s, "{\"jobs\":[{\"jid\":\"old\"}],\"reachable\":true,\"savepoint_triggers\":{}}",
           "taskmanagers 503: nothing recorded (no registration is judged from it)");
    free(s);
    IS_INT(run_flink_record(NULL, "jobs", NULL, "/jobs/overview", 200, "{}", "", 0), -1, "NULL state refused");

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

    location_tests();
    loop = ev_loop_new(EVFLAG_AUTO);
    SERVER_RUN(proxy_tests);
    ev_loop_destroy(loop);
    return DONE_TESTING();
}
