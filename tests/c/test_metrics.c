/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/metrics: registration rules, updates, the series cap and
 * the exact text exposition (format 0.0.4) of every metric type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "version.h"
#include <lua.h>
#include "transport_tap.h"

int main(void)
{
    char err[256];
    metrics_registry *r = metrics_registry_new(3, "test_dropped_series_total");
    OK(r != NULL, "registry with a cap of 3 series per family");

    const char *code_verb[] = { "code", "verb" };
    metrics_family *req = metrics_register(r, METRICS_COUNTER, "test_requests_total",
                                           "Requests.\nBy code \\ verb.", 2, code_verb, NULL, 0,
                                           err, sizeof err);
    OK(req != NULL, "counter with two labels");
    metrics_family *depth = metrics_register(r, METRICS_GAUGE, "test_depth", "Depth.", 0, NULL,
                                             NULL, 0, err, sizeof err);
    OK(depth != NULL, "gauge without labels");
    const double b[] = { 0.1, 0.5, 2.5 };
    const char *res[] = { "result" };
    metrics_family *dur = metrics_register(r, METRICS_HISTOGRAM, "test_duration_seconds",
                                           "Duration.", 1, res, b, 3, err, sizeof err);
    OK(dur != NULL, "histogram with buckets");

    /* registration errors */
    OK(metrics_register(r, METRICS_GAUGE, "test_depth", "", 0, NULL, NULL, 0, err, sizeof err) == NULL
           && strstr(err, "already registered"), "duplicate name refused: %s", err);
    OK(metrics_register(r, METRICS_GAUGE, "1bad", "", 0, NULL, NULL, 0, err, sizeof err) == NULL,
       "name starting with a digit refused");
    OK(metrics_register(r, METRICS_GAUGE, "bad-name", "", 0, NULL, NULL, 0, err, sizeof err) == NULL,
       "name with '-' refused");
    const char *le[] = { "le" };
    OK(metrics_register(r, METRICS_HISTOGRAM, "h_le", "", 1, le, b, 3, err, sizeof err) == NULL,
       "histogram label le refused");
    const char *dunder[] = { "__x" };
    OK(metrics_register(r, METRICS_COUNTER, "c_dunder", "", 1, dunder, NULL, 0, err, sizeof err) == NULL,
       "label starting with __ refused");
    const char *dup[] = { "a", "a" };
    OK(metrics_register(r, METRICS_COUNTER, "c_dup", "", 2, dup, NULL, 0, err, sizeof err) == NULL,
       "duplicate label refused");
    const double unsorted[] = { 1, 0.5 };
    OK(metrics_register(r, METRICS_HISTOGRAM, "h_uns", "", 0, NULL, unsorted, 2, err, sizeof err) == NULL,
       "unsorted buckets refused");
    const double inf[] = { 1, INFINITY };
    OK(metrics_register(r, METRICS_HISTOGRAM, "h_inf", "", 0, NULL, inf, 2, err, sizeof err) == NULL,
       "explicit +Inf bucket refused");

    /* updates */
    IS_INT(metrics_inc(req, (const char *[]){ "200", "GET" }), 0, "inc");
    IS_INT(metrics_add(req, (const char *[]){ "200", "GET" }, 2), 0, "add 2");
    IS_INT(metrics_inc(req, (const char *[]){ "409", "PUT" }), 0, "second series");
    IS_INT(metrics_add(req, (const char *[]){ "200", "GET" }, -1), -1, "negative counter add refused");
    IS_INT(metrics_add(req, (const char *[]){ "200", "GET" }, NAN), -1, "NaN counter add refused");
    IS_INT(metrics_set(req, (const char *[]){ "200", "GET" }, 5), -1, "set on a counter refused");
    IS_INT(metrics_observe(req, (const char *[]){ "200", "GET" }, 5), -1, "observe on a counter refused");
    IS_INT(metrics_inc(req, (const char *[]){ "200", NULL }), -1, "NULL label value refused");
    IS_INT(metrics_inc(req, (const char *[]){ "\xc3\x28", "GET" }), -1, "invalid UTF-8 label refused");
    IS_INT(metrics_inc(NULL, NULL), -1, "NULL family refused");
    OK(metrics_get(req, (const char *[]){ "200", "GET" }) == 3.0, "counter reads 3");
    OK(isnan(metrics_get(req, (const char *[]){ "500", "GET" })), "absent series reads NaN");
    IS_INT(metrics_set(depth, NULL, 7), 0, "gauge set");
    IS_INT(metrics_add(depth, NULL, -2.5), 0, "gauge add negative");
    OK(metrics_get(depth, NULL) == 4.5, "gauge reads 4.5");

    IS_INT(metrics_observe(dur, (const char *[]){ "success" }, 0.1), 0, "observe on a bound");
    metrics_observe(dur, (const char *[]){ "success" }, 0.3);
    metrics_observe(dur, (const char *[]){ "success" }, 7);
    metrics_observe(dur, (const char *[]){ "error" }, 0.05);
    IS_INT(metrics_add(dur, (const char *[]){ "success" }, 1), -1, "add on a histogram refused");
    OK(metrics_get(dur, (const char *[]){ "success" }) == 3.0, "histogram count 3");

    /* the cap: 3 series per family */
    metrics_inc(req, (const char *[]){ "a\"b\\c\nd", "PATCH" });
    IS_INT(metrics_series(req), 3, "three series");
    IS_INT(metrics_inc(req, (const char *[]){ "500", "GET" }), -1, "fourth series refused");
    IS_INT(metrics_inc(req, (const char *[]){ "501", "GET" }), -1, "fifth series refused");
    IS_INT(metrics_inc(req, (const char *[]){ "200", "GET" }), 0, "existing series still counts");
    IS_INT(metrics_dropped(req), 2, "two refused updates counted");
    /* a family's own cap, and series set without a lookup */
    metrics_family *own = metrics_register(r, METRICS_GAUGE, "test_own_cap", "Own cap.", 1, res, NULL, 0,
                                           err, sizeof err);
    metrics_set_max_series(own, 5);
    for (int i = 0; i < 6; i++) {
        char v[8];
        snprintf(v, sizeof v, "k%d", i);
        IS_INT(metrics_set_new(own, (const char *[]){ v }, i), i < 5 ? 0 : -1,
               "metrics_set_new %s under a family cap of 5 (registry's: 3)", v);
    }
    OK(metrics_get(own, (const char *[]){ "k4" }) == 4.0, "metrics_set_new's value reads back");
    IS_INT(metrics_set_new(req, (const char *[]){ "1", "GET" }, 1), -1, "metrics_set_new on a counter refused");
    IS_INT(metrics_set_new(own, (const char *[]){ NULL }, 1), -1, "metrics_set_new: NULL label refused");
    metrics_clear(own);
    IS_INT(metrics_series(own), 0, "cleared");

    size_t len = 0;
    char *text = metrics_render(r, &len);
    const char *want =
        "# HELP test_dropped_series_total Label combinations refused because their family "
        "reached its series cap.\n"
        "# TYPE test_dropped_series_total counter\n"
        "test_dropped_series_total{family=\"test_requests_total\"} 2\n"
        "test_dropped_series_total{family=\"test_own_cap\"} 1\n"
        "# HELP test_requests_total Requests.\\nBy code \\\\ verb.\n"
        "# TYPE test_requests_total counter\n"
        "test_requests_total{code=\"200\",verb=\"GET\"} 4\n"
        "test_requests_total{code=\"409\",verb=\"PUT\"} 1\n"
        "test_requests_total{code=\"a\\\"b\\\\c\\nd\",verb=\"PATCH\"} 1\n"
        "# HELP test_depth Depth.\n"
        "# TYPE test_depth gauge\n"
        "test_depth 4.5\n"
        "# HELP test_duration_seconds Duration.\n"
        "# TYPE test_duration_seconds histogram\n"
        "test_duration_seconds_bucket{result=\"success\",le=\"0.1\"} 1\n"
        "test_duration_seconds_bucket{result=\"success\",le=\"0.5\"} 2\n"
        "test_duration_seconds_bucket{result=\"success\",le=\"2.5\"} 2\n"
        "test_duration_seconds_bucket{result=\"success\",le=\"+Inf\"} 3\n"
        "test_duration_seconds_sum{result=\"success\"} 7.4\n"
        "test_duration_seconds_count{result=\"success\"} 3\n"
        "test_duration_seconds_bucket{result=\"error\",le=\"0.1\"} 1\n"
        "test_duration_seconds_bucket{result=\"error\",le=\"0.5\"} 1\n"
        "test_duration_seconds_bucket{result=\"error\",le=\"2.5\"} 1\n"
        "test_duration_seconds_bucket{result=\"error\",le=\"+Inf\"} 1\n"
        "test_duration_seconds_sum{result=\"error\"} 0.05\n"
        "test_duration_seconds_count{result=\"error\"} 1\n"
        "# HELP test_own_cap Own cap.\n"
        "# TYPE test_own_cap gauge\n";
    IS_STR(text, want, "exposition text");
    IS_INT(len, strlen(want), "reported length");
    free(text);

    /* special values */
    metrics_set(depth, NULL, INFINITY);
    text = metrics_render(r, NULL);
    OK(text && strstr(text, "\ntest_depth +Inf\n"), "+Inf gauge");
    free(text);
    metrics_set(depth, NULL, NAN);
    text = metrics_render(r, NULL);
    OK(text && strstr(text, "\ntest_depth NaN\n"), "NaN gauge");
    free(text);
    metrics_set(depth, NULL, 1e21);
    text = metrics_render(r, NULL);
    OK(text && strstr(text, "\ntest_depth 1e+21\n"), "large value in exponent form");
    free(text);
    metrics_set(depth, NULL, 1234567);
    text = metrics_render(r, NULL);
    OK(text && strstr(text, "\ntest_depth 1234567\n"), "integer printed in full");
    free(text);
    metrics_registry_free(r);

    /* the controller's families */
    r = metrics_registry_new(0, NULL);
    metrics_controller m;
    IS_INT(metrics_register_controller(r, &m, err, sizeof err), 0, "controller families");
    IS_INT(metrics_register_controller(r, &m, err, sizeof err), -1, "twice refused");
    metrics_inc(m.reconcile_total, (const char *[]){ "success" });
    metrics_observe(m.reconcile_duration, (const char *[]){ "success" }, 0.02);
    metrics_inc(m.watch_events_total, (const char *[]){ "StatefulSet", "ADDED" });
    metrics_inc(m.watch_restarts_total, (const char *[]){ "Pod" });
    metrics_inc(m.api_requests_total, (const char *[]){ "201", "POST" });
    metrics_inc(m.policy_errors_total, (const char *[]){ "job" });
    metrics_set(m.leader, NULL, 1);
    metrics_set(m.workqueue_depth, NULL, 2);
    metrics_inc(m.policy_reloads_total, (const char *[]){ "refused" });
    metrics_set(m.policy_set_info, (const char *[]){ "0123456789ab" }, 1);
    metrics_clear(m.policy_set_info);
    metrics_set(m.policy_set_info, (const char *[]){ "ba9876543210" }, 1);
    IS_INT((int)metrics_series(m.policy_set_info), 1, "metrics_clear: one series left after a switch");
    text = metrics_render(r, NULL);
    OK(text && strstr(text, "\nflink_controller_policy_reloads_total{result=\"refused\"} 1\n"), "policy_reloads_total");
    OK(text && strstr(text, "# TYPE flink_controller_policy_set_info gauge\n"
                            "flink_controller_policy_set_info{hash=\"ba9876543210\"} 1\n"),
       "policy_set_info: only the active hash renders");
    OK(text && strstr(text, "\nflink_controller_reconcile_total{result=\"success\"} 1\n"), "reconcile_total");
    OK(text && strstr(text, "\nflink_controller_reconcile_duration_seconds_bucket{result=\"success\",le=\"0.01\"} 0\n"
                            "flink_controller_reconcile_duration_seconds_bucket{result=\"success\",le=\"0.025\"} 1\n"),
       "reconcile_duration buckets");
    OK(text && strstr(text, "le=\"60\"} 1\nflink_controller_reconcile_duration_seconds_bucket{result=\"success\",le=\"+Inf\"} 1\n"),
       "reconcile_duration last buckets");
    OK(text && strstr(text, "\nflink_controller_workqueue_depth 2\n"), "workqueue_depth");
    OK(text && strstr(text, "\nflink_controller_watch_events_total{kind=\"StatefulSet\",type=\"ADDED\"} 1\n"), "watch_events_total");
    OK(text && strstr(text, "\nflink_controller_watch_restarts_total{kind=\"Pod\"} 1\n"), "watch_restarts_total");
    OK(text && strstr(text, "\nflink_controller_api_requests_total{code=\"201\",verb=\"POST\"} 1\n"), "api_requests_total");
    OK(text && strstr(text, "\nflink_controller_policy_errors_total{policy=\"job\"} 1\n"), "policy_errors_total");
    OK(text && strstr(text, "# TYPE flink_controller_leader gauge\nflink_controller_leader 1\n"), "leader gauge");
    free(text);
    metrics_registry_free(r);

    r = metrics_registry_new(0, NULL);
    metrics_register_controller(r, &m, err, sizeof err);
    text = metrics_render(r, NULL);
    OK(text && strstr(text, "\nflink_controller_leader 0\n") && strstr(text, "\nflink_controller_workqueue_depth 0\n") &&
           strstr(text, "# TYPE flink_controller_lua_memory_bytes gauge\nflink_controller_lua_memory_bytes 0\n"),
       "unlabelled gauges render 0 from the start");
    OK(text && strstr(text, "# TYPE flink_controller_loop_iterations_total counter\nflink_controller_loop_iterations_total 0\n"),
       "loop_iterations_total renders 0 from the start");
    {
        /* the build, as the Makefile compiled it in (core/version.h) */
        char want[256];
        snprintf(want, sizeof want,
                 "# TYPE flink_controller_build_info gauge\n"
                 "flink_controller_build_info{version=\"%s\",commit=\"%s\",lua=\"%s\"} 1\n",
                 FC_VERSION, FC_COMMIT, LUA_RELEASE);
        OK(text && strstr(text, want), "build_info: 1 with the version, the commit and the Lua release");
        OK(strcmp(FC_VERSION, "0.0.0") != 0 && strcmp(FC_COMMIT, "unknown") != 0,
           "build_info: the Makefile passed a release and a commit (git checkout)");
    }
    metrics_add(m.loop_iterations_total, NULL, 41);
    metrics_add(m.loop_iterations_total, NULL, 1);
    free(text);
    text = metrics_render(r, NULL);
    OK(text && strstr(text, "\nflink_controller_loop_iterations_total 42\n"), "loop_iterations_total adds what each scrape brings");
    const char *sts[] = {"StatefulSet"};
    metrics_set(m.cache_bytes, sts, 2048);
    metrics_set(m.cache_objects, sts, 1);
    free(text);
    text = metrics_render(r, NULL);
    OK(text && strstr(text, "\nflink_controller_cache_bytes{kind=\"StatefulSet\"} 2048\n") &&
           strstr(text, "\nflink_controller_cache_objects{kind=\"StatefulSet\"} 1\n"),
       "cache gauges by kind");
    free(text);
    metrics_registry_free(r);
    return DONE_TESTING();
}
