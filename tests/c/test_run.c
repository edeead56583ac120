/* core/run: the pure helpers (status merge patch, recording Flink REST answers) and the
 * command's usage errors. The controller itself is tested against the real test environment
 * (tests/integration/). */
#include <stdlib.h>

#include <jansson.h>

#include "run.h"
#include "transport_tap.h"

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
    s = record("", NULL, "/jobs/ab12?mode=cancel", 202, "", "", NULL);
    IS_STR(s, "{\"jobs\":[{\"jid\":\"old\"}],\"reachable\":true,\"savepoint_triggers\":{}}",
           "an action without result (cancel) records nothing");
    free(s);
    s = record("jobs", NULL, "/jobs/overview", 200, "not json", "", "reachable");
    IS_STR(s, "false", "jobs overview 200 with a body that is not JSON: unreachable");
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
    return DONE_TESTING();
}
