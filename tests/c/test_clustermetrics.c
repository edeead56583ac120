/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/clustermetrics: Flink REST route templates, the collector over FlinkCluster
 * objects (states, restart counts, savepoint times, stale series), savepoint ends counted once,
 * Flink request counts; and the process_* metrics of core/metrics read from /proc/self. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clustermetrics.h"
#include "metrics.h"
#include "transport_tap.h"

static void route_is(const char *path, const char *want)
{
    char buf[256];
    int rc = clustermetrics_route(path, buf, sizeof buf);
    OK(rc == 0 && strcmp(buf, want) == 0, "route %s -> %s", path, want);
    if (rc || strcmp(buf, want) != 0)
        printf("#   got \"%s\" (rc %d)\n", buf, rc);
}

static json_t *cluster(const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    if (!o)
        printf("# bad test JSON: %s\n", je.text);
    return o;
}

/* The value of `name`'s series {l1=v1,l2=v2} in the registry's text, NAN when absent. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && (p = strstr(p, series)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return NAN;
}

int main(void)
{
    /* ---- routes -------------------------------------------------------------------------- */
    const char *jid = "3f1c2b4a5d6e7f8091a2b3c4d5e6f708";
    const char *tid = "9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d";
    char path[512], buf[64];
    route_is("/jobs/overview", "/jobs/overview");
    snprintf(path, sizeof path, "/jobs/%s/exceptions?maxExceptions=1", jid);
    route_is(path, "/jobs/:jobid/exceptions");
    snprintf(path, sizeof path, "/jobs/%s/savepoints", jid);
    route_is(path, "/jobs/:jobid/savepoints");
    snprintf(path, sizeof path, "/jobs/%s/savepoints/%s", jid, tid);
    route_is(path, "/jobs/:jobid/savepoints/:triggerid");
    snprintf(path, sizeof path, "/jobs/%s/stop", jid);
    route_is(path, "/jobs/:jobid/stop");
    snprintf(path, sizeof path, "/jobs/%s?mode=cancel", jid);
    route_is(path, "/jobs/:jobid");
    route_is("/jars/upload", "/jars/upload");
    route_is("/jars/7d2e9c1a-55b0-4c4e-a7a4-1f0e2d3c4b5a_ticker.jar/run?entry-class=x.Y", "/jars/:jarid/run");
    route_is("/taskmanagers", "/taskmanagers");
    route_is("/taskmanagers/10.1.2.3:6122-abcdef/logs", "/taskmanagers/:taskmanagerid/logs");
    snprintf(path, sizeof path, "/jobs/%s/vertices/%s/backpressure", jid, tid);
    route_is(path, "/jobs/:jobid/vertices/:vertexid/backpressure");
    snprintf(path, sizeof path, "/jobs/%s/checkpoints/details/42", jid);
    route_is(path, "/jobs/:jobid/checkpoints/details/:id");
    /* a triggered checkpoint's status (fc.checkpoints): Flink's /jobs/:jobid/checkpoints/:triggerid */
    snprintf(path, sizeof path, "/jobs/%s/checkpoints/%s", jid, tid);
    route_is(path, "/jobs/:jobid/checkpoints/:triggerid");
    snprintf(path, sizeof path, "/jobs/%s/checkpoints/config", jid);
    route_is(path, "/jobs/:jobid/checkpoints/config");
    snprintf(path, sizeof path, "/savepoint-disposal/%s", tid);
    route_is(path, "/savepoint-disposal/:triggerid");
    snprintf(path, sizeof path, "/other/%s", tid);
    route_is(path, "/other/:id");
    route_is("/config", "/config");
    IS_INT(clustermetrics_route("/jobs/overview/and/a/long/tail/beyond/sixty/four/bytes/xxxxxxxxxxxx", buf, sizeof buf),
           -1, "a template that does not fit: -1");
    IS_STR(buf, "", "  and buf empty");
    IS_INT(clustermetrics_route(NULL, buf, sizeof buf), -1, "NULL path: -1");

    char err[256];
    metrics_registry *r = metrics_registry_new(0, "test_dropped_total");
    metrics_controller m;
    IS_INT(metrics_register_controller(r, &m, err, sizeof err), 0, "controller families");

    /* ---- Flink requests ------------------------------------------------------------------- */
    snprintf(path, sizeof path, "/jobs/%s/savepoints/%s", jid, tid);
    clustermetrics_flink_request(&m, "GET", path, 200, 0.03);
    snprintf(path, sizeof path, "/jobs/%s/savepoints/%s", tid, jid);
    clustermetrics_flink_request(&m, "GET", path, 200, 0.2);
    clustermetrics_flink_request(&m, "GET", "/jobs/overview", 0, 10.0);
    const char *sp_route[] = {"GET", "/jobs/:jobid/savepoints/:triggerid", "200"};
    OK(metrics_get(m.flink_requests_total, sp_route) == 2, "two jobs' savepoint polls: one series, count 2");
    IS_INT(metrics_series(m.flink_requests_total), 2, "two series in all (bounded by routes)");
    OK(metrics_get(m.flink_request_duration, sp_route) == 2, "duration histogram count 2");
    const char *none[] = {"GET", "/jobs/overview", "0"};
    OK(metrics_get(m.flink_requests_total, none) == 1, "no answer: code 0");

    /* ---- the collector -------------------------------------------------------------------- */
    json_t *running = cluster(
        "{\"metadata\":{\"namespace\":\"a\",\"name\":\"run\"},\"spec\":{\"job\":{\"jarFile\":\"x.jar\"}},"
        "\"status\":{\"state\":\"Running\",\"components\":{\"job\":{\"state\":\"Running\",\"restartCount\":3,"
        "\"lastSavepointTime\":\"2026-12-05T10:00:00Z\"}}}}");
    json_t *failing = cluster(
        "{\"metadata\":{\"namespace\":\"a\",\"name\":\"fail\"},\"spec\":{\"job\":{\"jarFile\":\"x.jar\"}},"
        "\"status\":{\"state\":\"Running\",\"components\":{\"job\":{\"state\":\"Failed\",\"restartCount\":1,"
        "\"lastSavepointTime\":\"2026-12-05T11:30:15.5+01:00\"}}}}");
    json_t *session = cluster(
        "{\"metadata\":{\"namespace\":\"b\",\"name\":\"session\"},\"spec\":{},\"status\":{\"state\":\"Running\"}}");
    json_t *fresh = cluster("{\"metadata\":{\"namespace\":\"b\",\"name\":\"new\"},\"spec\":{\"job\":{}}}");
    json_t *badtime = cluster(
        "{\"metadata\":{\"namespace\":\"b\",\"name\":\"badtime\"},\"spec\":{\"job\":{}},"
        "\"status\":{\"state\":\"Creating\",\"components\":{\"job\":{\"state\":\"Pending\","
        "\"lastSavepointTime\":\"yesterday\"}}}}");
    json_t *nameless = cluster("{\"metadata\":{\"namespace\":\"b\"}}");
    clustermetrics_begin(&m);
    IS_INT(clustermetrics_add(&m, running), 0, "add a running job cluster");
    IS_INT(clustermetrics_add(&m, failing), 0, "add a failed job's cluster");
    IS_INT(clustermetrics_add(&m, session), 0, "add a session cluster");
    IS_INT(clustermetrics_add(&m, fresh), 0, "add a cluster without status");
    IS_INT(clustermetrics_add(&m, badtime), 0, "add a cluster with a bad savepoint time");
    IS_INT(clustermetrics_add(&m, nameless), -1, "no name: -1");
    char *text = metrics_render(r, NULL);
    OK(sample(text, "flink_controller_clusters{namespace=\"a\",state=\"Running\"}") == 2, "clusters a/Running 2");
    OK(sample(text, "flink_controller_clusters{namespace=\"b\",state=\"Running\"}") == 1, "clusters b/Running 1");
    OK(sample(text, "flink_controller_clusters{namespace=\"b\",state=\"Unknown\"}") == 1,
       "clusters b/Unknown 1 (no status yet)");
    OK(sample(text, "flink_controller_clusters{namespace=\"b\",state=\"Creating\"}") == 1, "clusters b/Creating 1");
    IS_INT(metrics_series(m.clusters), 4, "four cluster series");
    OK(sample(text, "flink_controller_jobs{namespace=\"a\",state=\"Running\"}") == 1, "jobs a/Running 1");
    OK(sample(text, "flink_controller_jobs{namespace=\"a\",state=\"Failed\"}") == 1, "jobs a/Failed 1");
    OK(sample(text, "flink_controller_jobs{namespace=\"b\",state=\"Unknown\"}") == 1, "jobs b/Unknown 1");
    OK(sample(text, "flink_controller_jobs{namespace=\"b\",state=\"Pending\"}") == 1, "jobs b/Pending 1");
    IS_INT(metrics_series(m.jobs), 4, "session cluster: no job counted");
    OK(sample(text, "flink_controller_job_restarts{namespace=\"a\",cluster=\"run\"}") == 3, "restarts 3");
    OK(sample(text, "flink_controller_job_restarts{namespace=\"a\",cluster=\"fail\"}") == 1, "restarts 1");
    OK(sample(text, "flink_controller_job_restarts{namespace=\"b\",cluster=\"new\"}") == 0, "restarts absent: 0");
    OK(isnan(sample(text, "flink_controller_job_restarts{namespace=\"b\",cluster=\"session\"}")),
       "no restarts series for a session cluster");
    /* 2026-12-05T10:00:00Z = 1796464800; 11:30:15.5+01:00 = 10:30:15.5Z */
    OK(sample(text, "flink_controller_job_last_savepoint_timestamp_seconds{namespace=\"a\",cluster=\"run\"}") ==
           1796464800.0,
       "last savepoint time: RFC 3339 Z -> Unix seconds");
    OK(sample(text, "flink_controller_job_last_savepoint_timestamp_seconds{namespace=\"a\",cluster=\"fail\"}") ==
           1796464800.0 + 1815.5,
       "last savepoint time with an offset and a fraction");
    IS_INT(metrics_series(m.job_last_savepoint), 2, "no savepoint series for none or an unparsable time");
    free(text);

    /* the next scrape: "fail" deleted, "run" restarted */
    json_object_set_new(json_object_get(json_object_get(json_object_get(running, "status"), "components"), "job"),
                        "restartCount", json_integer(4));
    clustermetrics_begin(&m);
    clustermetrics_add(&m, running);
    text = metrics_render(r, NULL);
    OK(sample(text, "flink_controller_clusters{namespace=\"a\",state=\"Running\"}") == 1, "next scrape: a/Running 1");
    OK(isnan(sample(text, "flink_controller_jobs{namespace=\"a\",state=\"Failed\"}")), "deleted cluster's job state gone");
    OK(isnan(sample(text, "flink_controller_job_restarts{namespace=\"a\",cluster=\"fail\"}")),
       "deleted cluster's restarts series gone");
    OK(isnan(sample(text, "flink_controller_job_last_savepoint_timestamp_seconds{namespace=\"a\",cluster=\"fail\"}")),
       "deleted cluster's savepoint series gone");
    OK(sample(text, "flink_controller_job_restarts{namespace=\"a\",cluster=\"run\"}") == 4, "restarts now 4");
    IS_INT(metrics_series(m.clusters) + metrics_series(m.jobs) + metrics_series(m.job_restarts), 3,
           "one series each left");
    free(text);

    /* ---- the index kept from watch events ---------------------------------------------------- */
    clustermetrics_index *x = clustermetrics_index_new();
    OK(x != NULL, "index");
    IS_INT(clustermetrics_index_put(x, running), 0, "ADDED run");
    IS_INT(clustermetrics_index_put(x, failing), 0, "ADDED fail");
    IS_INT(clustermetrics_index_put(x, session), 0, "ADDED session");
    IS_INT(clustermetrics_index_put(x, nameless), -1, "no name: not indexed");
    IS_INT(clustermetrics_index_len(x), 3, "three indexed");
    clustermetrics_collect(&m, x);
    OK(metrics_get(m.clusters, (const char *[]){"a", "Running"}) == 2, "collect: a/Running 2");
    OK(metrics_get(m.job_restarts, (const char *[]){"a", "fail"}) == 1, "collect: fail restarts 1");
    OK(metrics_get(m.job_last_savepoint, (const char *[]){"a", "run"}) == 1796464800.0, "collect: run savepoint time");
    /* MODIFIED: run restarted once more and Failed; DELETED: fail */
    json_t *rjob = json_object_get(json_object_get(json_object_get(running, "status"), "components"), "job");
    json_object_set_new(rjob, "restartCount", json_integer(5));
    json_object_set_new(rjob, "state", json_string("Failed"));
    IS_INT(clustermetrics_index_put(x, running), 0, "MODIFIED run");
    clustermetrics_index_delete(x, failing);
    IS_INT(clustermetrics_index_len(x), 2, "two indexed after a delete");
    clustermetrics_collect(&m, x);
    OK(metrics_get(m.job_restarts, (const char *[]){"a", "run"}) == 5, "collect: run restarts 5 (the change)");
    OK(metrics_get(m.jobs, (const char *[]){"a", "Failed"}) == 1, "collect: one Failed job (run's)");
    OK(isnan(metrics_get(m.jobs, (const char *[]){"a", "Running"})), "collect: no Running job left");
    OK(isnan(metrics_get(m.job_restarts, (const char *[]){"a", "fail"})), "collect: deleted cluster's series gone");
    OK(metrics_get(m.clusters, (const char *[]){"b", "Running"}) == 1, "collect: session cluster kept");
    IS_INT(metrics_series(m.job_restarts), 1, "collect: one restarts series");
    clustermetrics_index_free(x);

    /* ---- savepoint ends -------------------------------------------------------------------- */
    json_t *in_progress = cluster("{\"savepoint\":{\"state\":\"InProgress\",\"triggerID\":\"t1\"}}");
    json_t *succeeded = cluster("{\"savepoint\":{\"state\":\"Succeeded\",\"triggerID\":\"t1\"}}");
    json_t *stop_failed = cluster("{\"savepoint\":{\"state\":\"Failed\",\"triggerID\":\"t2\",\"stop\":true}}");
    json_t *trigger_failed = cluster("{\"savepoint\":{\"state\":\"TriggerFailed\",\"triggerID\":\"t3\"}}");
    IS_INT(clustermetrics_savepoint_ended(&m, "a", in_progress, succeeded), 1, "InProgress -> Succeeded counted");
    IS_INT(clustermetrics_savepoint_ended(&m, "a", succeeded, succeeded), 0, "the next pass's same status: not again");
    IS_INT(clustermetrics_savepoint_ended(&m, "a", in_progress, in_progress), 0, "in progress: not counted");
    IS_INT(clustermetrics_savepoint_ended(&m, "a", NULL, NULL), 0, "no savepoint: not counted");
    IS_INT(clustermetrics_savepoint_ended(&m, "a", succeeded, stop_failed), 1, "a stop that failed, new id: counted");
    IS_INT(clustermetrics_savepoint_ended(&m, "a", stop_failed, trigger_failed), 1, "Failed then TriggerFailed (new id)");
    const char *ok_sp[] = {"a", "savepoint", "success"}, *bad_stop[] = {"a", "stop", "failure"},
               *bad_sp[] = {"a", "savepoint", "failure"};
    OK(metrics_get(m.savepoints_total, ok_sp) == 1, "savepoints_total{savepoint,success} 1");
    OK(metrics_get(m.savepoints_total, bad_stop) == 1, "savepoints_total{stop,failure} 1");
    OK(metrics_get(m.savepoints_total, bad_sp) == 1, "savepoints_total{savepoint,failure} 1");

    /* ---- process metrics ------------------------------------------------------------------- */
    volatile double spin = 0;
    for (long i = 0; i < 30000000L; i++)
        spin += (double)i;
    IS_INT(metrics_process_update(&m.process), 0, "process metrics read from /proc");
    text = metrics_render(r, NULL);
    double rss = sample(text, "process_resident_memory_bytes"), vsz = sample(text, "process_virtual_memory_bytes");
    double start = sample(text, "process_start_time_seconds"), cpu = sample(text, "process_cpu_seconds_total");
    double fds = sample(text, "process_open_fds"), maxfds = sample(text, "process_max_fds");
    OK(rss > 1e5 && rss < 1e10, "resident memory %.0f bytes", rss);
    OK(vsz >= rss, "virtual %.0f >= resident", vsz);
    double now = (double)time(NULL);
    OK(start > now - 600 && start <= now + 1, "started %.0f s ago", now - start);
    OK(cpu > 0 && cpu < 600, "cpu %.2f s (after a busy loop)", cpu);
    OK(fds >= 3 && fds < 1000, "open fds %.0f", fds);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    OK(maxfds == (double)rl.rlim_cur, "max fds = RLIMIT_NOFILE soft limit %.0f", maxfds);
    free(text);
    FILE *extra = fopen("/proc/self/stat", "r");
    metrics_process_update(&m.process);
    OK(metrics_get(m.process.open_fds, NULL) == fds + 1, "one more file open: open fds + 1");
    fclose(extra);
    OK(metrics_get(m.process.cpu_seconds_total, NULL) >= cpu, "cpu counter never goes down");

    /* the webhook process's registry */
    metrics_registry *w = metrics_registry_new(0, NULL);
    metrics_process wp;
    metrics_family *adm = metrics_register_admissions(w, err, sizeof err);
    OK(adm && metrics_register_build_info(w, err, sizeof err) && metrics_register_process(w, &wp, err, sizeof err) == 0,
       "webhook registry: admissions, build_info, process");
    metrics_inc(adm, (const char *[]){"CREATE", "denied"});
    text = metrics_render(w, NULL);
    OK(sample(text, "flink_controller_webhook_admissions_total{operation=\"CREATE\",result=\"denied\"}") == 1,
       "admissions counted");
    OK(sample(text, "process_resident_memory_bytes") > 0, "webhook registry renders process metrics");
    free(text);
    metrics_registry_free(w);

    json_decref(running);
    json_decref(failing);
    json_decref(session);
    json_decref(fresh);
    json_decref(badtime);
    json_decref(nameless);
    json_decref(in_progress);
    json_decref(succeeded);
    json_decref(stop_failed);
    json_decref(trigger_failed);
    metrics_registry_free(r);
    return DONE_TESTING();
}
