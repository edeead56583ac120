/* SPDX-License-Identifier: Apache-2.0 */
/* core/metrics: a small Prometheus registry (counters, gauges, histograms
 * with labels) rendered in the text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/):
 *   # HELP <name> <help, with \\ and \n escaped>
 *   # TYPE <name> counter|gauge|histogram
 *   <name>{l1="v1",l2="v2"} <value>
 * Label values escape \\, \" and \n. Histograms write cumulative
 * <name>_bucket{...,le="<bound>"} lines ending with le="+Inf", then
 * <name>_sum and <name>_count. Families render in registration order,
 * series in first-use order. Values print as the shortest %g that reads
 * back exactly; +Inf, -Inf, NaN as Prometheus spells them.
 *
 * Each family has fixed label names (given at registration) and a cap on
 * label combinations (series). An update that would create a series beyond
 * the cap is dropped (returns -1) and counted; the registry then renders
 * `<dropped_name>{family="<name>"}` (a counter) when a dropped name was set.
 *
 * Memory: families and series are malloc'd and live until
 * metrics_registry_free. No threads: callers are on the one loop.
 */
#ifndef FC_METRICS_H
#define FC_METRICS_H

#include <stddef.h>

#define METRICS_MAX_LABELS 8
#define METRICS_DEFAULT_MAX_SERIES 200   /* per family */

typedef enum metrics_type {
    METRICS_COUNTER = 0,
    METRICS_GAUGE = 1,
    METRICS_HISTOGRAM = 2
} metrics_type;

typedef struct metrics_registry metrics_registry;
typedef struct metrics_family metrics_family;

/* `max_series` per family (0 = METRICS_DEFAULT_MAX_SERIES). `dropped_name`:
 * the counter family counting refused series per family, NULL for none.
 * Returns NULL on out-of-memory. */
metrics_registry *metrics_registry_new(size_t max_series, const char *dropped_name);
void metrics_registry_free(metrics_registry *r);

/* Registers a family. `name` and label names must match
 * [a-zA-Z_:][a-zA-Z0-9_:]* (labels: no ':', not starting "__"); histogram
 * label names may not include "le". `nlabels` <= METRICS_MAX_LABELS.
 * Histogram `buckets`: `nbuckets` finite upper bounds, strictly increasing
 * (+Inf is implicit). A duplicate name, a bad name or bad buckets fail:
 * NULL with the reason in err. The family belongs to the registry. */
metrics_family *metrics_register(metrics_registry *r, metrics_type type, const char *name,
                                 const char *help, size_t nlabels, const char *const *label_names,
                                 const double *buckets, size_t nbuckets, char *err, size_t errlen);

/* Updates; `values` holds one string per label name (NULL when the family
 * has no labels). Return 0, or -1 on a NULL family, a NULL label value, a
 * wrong type (add to a histogram, observe on a counter, set on a counter),
 * a negative or NaN counter increment, or the series cap. */
int metrics_inc(metrics_family *f, const char *const *values);                 /* +1 */
int metrics_add(metrics_family *f, const char *const *values, double delta);   /* counter: delta >= 0 */
int metrics_set(metrics_family *f, const char *const *values, double value);   /* gauge only */
int metrics_observe(metrics_family *f, const char *const *values, double value); /* histogram */

/* A family's own series cap instead of the registry's (0: the registry's again), for families
 * with one series per FlinkCluster. No-op on NULL. */
void metrics_set_max_series(metrics_family *f, size_t max_series);

/* Sets a gauge series the caller knows is absent (e.g. right after metrics_clear, each label
 * combination once): no lookup among the existing series, so filling n series is O(n), not
 * O(n^2). A label combination set twice this way renders twice: use metrics_set when unsure.
 * Returns as metrics_set. */
int metrics_set_new(metrics_family *f, const char *const *values, double value);

/* Drops every series of a family (an info gauge whose label value changed: the old value must
 * no longer render). No-op on NULL. */
void metrics_clear(metrics_family *f);

/* Reads back (tests, and the run command's own decisions): a counter's or
 * gauge's value, a histogram's count; NaN when the series does not exist. */
double metrics_get(const metrics_family *f, const char *const *values);
/* Number of series of a family; refused updates because of the cap. */
size_t metrics_series(const metrics_family *f);
size_t metrics_dropped(const metrics_family *f);
const metrics_family *metrics_find(const metrics_registry *r, const char *name);

/* Renders the whole registry; returns a malloc'd NUL-terminated text (the
 * caller frees) and its length in *len (may be NULL), or NULL on OOM. */
char *metrics_render(const metrics_registry *r, size_t *len);

/* ---- process metrics (/proc/self), as Prometheus' client libraries export them ---------- */

typedef struct metrics_process {
    metrics_family *cpu_seconds_total;      /* counter: user + system CPU time, seconds */
    metrics_family *resident_memory_bytes;  /* gauge: resident set size, bytes */
    metrics_family *virtual_memory_bytes;   /* gauge: virtual memory size, bytes */
    metrics_family *start_time_seconds;     /* gauge: process start, Unix seconds */
    metrics_family *open_fds;               /* gauge: open file descriptors */
    metrics_family *max_fds;                /* gauge: RLIMIT_NOFILE soft limit */
} metrics_process;

/* Registers process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_start_time_seconds, process_open_fds and process_max_fds
 * in `r` and fills `p` (values read once at once). 0, or -1 with err. */
int metrics_register_process(metrics_registry *r, metrics_process *p, char *err, size_t errlen);

/* Reads /proc/self/stat (utime+stime, starttime, vsize, rss), /proc/stat (btime),
 * /proc/self/fd and getrlimit(RLIMIT_NOFILE) into the families (the CPU counter is moved up to
 * the new total; it never goes down). Called at scrape. 0, or -1 when /proc could not be read
 * (the families keep their last values). */
int metrics_process_update(const metrics_process *p);

/* flink_controller_build_info{version,commit,lua} = 1 (core/version.h); NULL with err. */
metrics_family *metrics_register_build_info(metrics_registry *r, char *err, size_t errlen);

/* flink_controller_webhook_admissions_total{operation,result}: admission reviews answered,
 * operation "CREATE"|"UPDATE" (as the AdmissionReview's request.operation; "" unknown), result
 * "allowed"|"denied"|"error" (no review answered: a body that is not one, a framework failure).
 * NULL with err. */
metrics_family *metrics_register_admissions(metrics_registry *r, char *err, size_t errlen);

/* ---- the controller's families, registered in one place ---------------- */

/* Series cap of the families with one series per FlinkCluster (or per namespace and state). */
#define METRICS_CLUSTER_MAX_SERIES 100000

/* Upper bounds (seconds) of flink_controller_reconcile_duration_seconds:
 * Prometheus' DefBuckets (client_golang) plus 30 and 60. */
#define METRICS_RECONCILE_BUCKETS \
    { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 }

typedef struct metrics_controller {
    metrics_family *reconcile_total;        /* counter {result}: "success"|"error"|"requeue"|... */
    metrics_family *reconcile_duration;     /* histogram {result}, seconds */
    metrics_family *workqueue_depth;        /* gauge, keys ready in the queue */
    metrics_family *watch_events_total;     /* counter {kind,type}: kind "StatefulSet",
                                               type "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR" */
    metrics_family *watch_restarts_total;   /* counter {kind} */
    metrics_family *api_requests_total;     /* counter {code,verb}: code "200".."599" or "0"
                                               (no response), verb "GET"|"PATCH"|... */
    metrics_family *policy_errors_total;    /* counter {policy, kind}: "job", "timeout" (fc.contract) */
    metrics_family *leader;                 /* gauge 0/1: this replica leads */
    metrics_family *shard_owned;            /* gauge {shard} 0/1: this replica holds that shard's
                                               Lease (run --shards N > 1 only) */
    metrics_family *shard_clusters;         /* gauge {shard}: FlinkClusters of that shard in the
                                               cache (run --shards N > 1 only) */
    metrics_family *policy_reloads_total;   /* counter {result}: "accepted"|"refused" policy sets
                                               of --policy-configmap */
    metrics_family *policy_set_info;        /* gauge {hash}: 1 for the policy set serving
                                               (one series) */
    metrics_family *lua_memory_bytes;       /* gauge: bytes the Lua state holds (framework,
                                               policies, the last pass's garbage) */
    metrics_family *cache_objects;          /* gauge {kind}: objects in the watch caches */
    metrics_family *cache_bytes;            /* gauge {kind}: bytes of the compact caches' texts */
    metrics_family *heap_bytes;             /* gauge {state}: "in_use"|"free" bytes of malloc's
                                               heap (glibc mallinfo2) */
    metrics_family *loop_iterations_total;  /* counter: event loop iterations (libev
                                               ev_iteration), brought up to date at scrape */
    metrics_family *build_info;             /* gauge {version,commit,lua}: 1, the build
                                               (core/version.h), as Prometheus' own *_build_info */
    /* the Flink clusters (core/clustermetrics.h fills them) */
    metrics_family *clusters;               /* gauge {namespace,state}: FlinkClusters by
                                               status.state ("Unknown" without one) */
    metrics_family *jobs;                   /* gauge {namespace,state}: jobs by
                                               status.components.job.state */
    metrics_family *job_restarts;           /* gauge {namespace,cluster}: restartCount */
    metrics_family *job_last_savepoint;     /* gauge {namespace,cluster}: Unix seconds of
                                               status.components.job.lastSavepointTime */
    metrics_family *savepoints_total;       /* counter {namespace,operation,result}: operation
                                               "savepoint"|"stop", result "success"|"failure" */
    metrics_family *flink_requests_total;   /* counter {method,path,code}: Flink REST calls, path
                                               the route template, code "0" without an answer */
    metrics_family *flink_request_duration; /* histogram {method,path}, seconds */
    metrics_family *webhook_admissions;     /* counter {operation,result} (run --webhook-addr) */
    metrics_process process;                /* process_* */
} metrics_controller;

/* Registers the families above in `r` (names flink_controller_*) and
 * fills `m`; the unlabelled gauges start at 0 so they render at once.
 * Returns 0, or -1 with err (e.g. already registered). */
int metrics_register_controller(metrics_registry *r, metrics_controller *m, char *err,
                                size_t errlen);

#endif
