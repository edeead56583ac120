/* SPDX-License-Identifier: Apache-2.0 */
/* core/runctx: the state `flink-controller run` shares between its rooms (core/run the wiring:
 * informers, pass pump, snapshot; core/executor a pass's writes; core/status, core/events,
 * core/expect what those writes need; core/policyset the --policy-configmap sets; core/replica
 * the Leases; core/flinkjob the FlinkJobs' keys; core/admission the webhook). Internal to
 * them: nothing else includes it. One process runs one controller (one struct run_ctx).
 * The helpers declared at the end are core/run.c's.
 */
#ifndef FC_RUNCTX_H
#define FC_RUNCTX_H

#include <stddef.h>

#include <ev.h>
#include <jansson.h>

#include "certsync.h"
#include "clustermetrics.h"
#include "clusterstate.h"
#include "flinkcall.h"
#include "http.h"
#include "kube.h"
#include "leader.h"
#include "lhost.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "override.h"
#include "reflector.h"
#include "server.h"
#include "shard.h"
#include "webhook.h"
#include "workqueue.h"

/* The watched kinds: [0] the FlinkClusters, then the children as lua/fc/kinds.lua declares them
 * (run_load_kinds, at start; one process runs one controller). */
enum { RUN_MAXKINDS = 1 + KUBE_KINDS_DEFINED_MAX };
extern const kube_kind *run_kinds[RUN_MAXKINDS];
extern int run_nkinds; /* kinds in run_kinds */
/* bit k set: kind k's objects belong to a cluster by its `cluster` label, not by ownerReference */
extern unsigned run_by_label;
/* bit k set: kind k is watched without the children's selector (kinds.lua any_labels: the original
 * operator's ControllerRevisions carry the FlinkCluster's labels; run_transform filters them) */
extern unsigned run_any_labels;
/* The children's labels as lua/fc/names.lua declares them (fc.names.watch(), read by
 * run_load_kinds at start): the watches' selector ("app=flink,cluster"), the label whose value
 * names the cluster (the caches' index, the owner key of a pod) and the app label pair a written
 * object must carry for the cache to show it. Never freed: one process runs one controller. */
struct run_label_names {
    char *selector, *cluster, *app_label, *app;
};
extern struct run_label_names run_labels;

struct run_ns {
    char *ns; /* NULL: all namespaces */
    reflector *r[RUN_MAXKINDS];
    reflector *jobs; /* the FlinkJobs (jobs on session clusters; lua/fc/flinkjob.lua) */
};

/* A FlinkJob's workqueue key is "<namespace>/" RUN_FLINKJOB_KEY "<name>" (a Kubernetes name has
 * no ':', so it never meets a FlinkCluster's "<namespace>/<name>"). */
#define RUN_FLINKJOB_KEY "FlinkJob:"
/* The kind of the object a pass is for (an item without one: a FlinkCluster). */
#define RUN_ITEM_KIND(it) ((it)->kind ? (it)->kind : &kube_kind_flinkcluster)


/* The policy set serving and the --policy-configmap watch (docs/policies.md, "Overriding policies in
 * a running controller"). A set is the built-in dir (lhost's policy dir at start) or a
 * directory core/override made from it and the ConfigMap; one check runs at a time. */
struct policyset {
    char ns[254], name[254];     /* the ConfigMap; "" without --policy-configmap */
    reflector *r;
    char builtin_dir[4096], builtin_hash[OVERRIDE_HASH_LEN + 1];
    char active_dir[4096], active_hash[OVERRIDE_HASH_LEN + 1]; /* active_dir "" = built-in */
    char seen_rv[64];            /* the ConfigMap's resourceVersion last taken */
    override_check *check;       /* the check in flight */
    char check_dir[4096], check_hash[OVERRIDE_HASH_LEN + 1];
    json_t *check_cm;            /* the ConfigMap being checked */
    json_t *pending;             /* a newer ConfigMap seen meanwhile: checked next */
    int settled;                 /* the first set is decided: keys may be taken */
};

struct run_item;

struct run_ctx {
    struct ev_loop *loop;
    struct options o;
    struct lhost *host;
    kube_client *kc;
    const kube_ops *ops; /* the writes of the passes: kube_ops_default (a fake in tests) */
    http_client *hc;
    flinkcall_env flink_env;
    workqueue *q;
    struct run_ns *nss;
    size_t nns;
    int inflight;
    int stopping;
    int synced;
    int leading;
    int exit_code;
    /* "ns/name" -> what is kept of that cluster between passes (Flink answers, Event correlator,
     * expectations, status digests, fresh answers, dry runs: core/clusterstate.h) */
    clusterstate_map *clusters;
    struct run_fcall *fcalls; /* Flink calls in flight (they hold no worker) */
    struct run_item *items;
    ev_signal sig_term, sig_int;
    ev_timer stop_timer;
    ev_idle pump_idle;
    ev_timer trim_timer;      /* gives malloc's free pages back after a burst (run_trim_cb) */
    unsigned long activity;   /* passes started and watch events since the last trim */
    double trim_next;         /* ev_now() before which no trim runs (its cost, run_trim_cb) */
    unsigned loop_iter_seen;  /* ev_iteration() at the last scrape (loop_iterations_total) */
    server *srv;
    webhook *wh;
    certsync *cs;
    leader_elector *le;
    shard_set *shards;  /* --shards N > 1: the shard Leases (core/shard.h), else NULL */
    char identity[300]; /* with --shards: this replica's holder identity */
    int releasing;
    metrics_registry *reg;
    metrics_controller m;
    clustermetrics_index *cm_index; /* the FlinkClusters' figures for the metrics, kept by run_on_event */
    struct policyset ov;
    /* counters */
    unsigned long reconciles, reconcile_errors, actions_done, action_errors;
};

enum run_phase { PHASE_ACTIONS, PHASE_STATUS, PHASE_CONTROL, PHASE_HASH, PHASE_EVENTS, PHASE_DONE };

/* The annotation on each FlinkCluster naming the policy set that last reconciled it. */
#define RUN_POLICY_HASH_ANNOTATION "flinkoperator.k8s.io/policy-hash"

/* The kind of write in flight: a failed one becomes an Event with the matching reason. */
/* WRITE_COLLECTION: a delete by label selector (delete_collection), whose answer the next pass
 * waits for in no cache (the objects are not watched) */
enum run_write { WRITE_PATCH, WRITE_APPLY, WRITE_DELETE, WRITE_STATUS, WRITE_DRY_RUN, WRITE_COLLECTION };

struct run_item {
    struct run_ctx *ctx;
    struct run_item *next_item;
    char *key;
    char ns[254];
    char name[254];
    json_t *cluster; /* the FlinkCluster (or FlinkJob) the snapshot was built from */
    const kube_kind *kind; /* its kind: kube_kind_flinkcluster or kube_kind_flinkjob */
    json_t *result;  /* fc.reconcile.run's answer */
    enum run_phase phase;
    size_t next;     /* next action / event index */
    int failed;
    int conflict;
    int status_refused; /* the status write failed or met a 409: the annotation stays */
    int waiting;        /* the cache lacks our last writes: no pass ran */
    int fenced;         /* leadership lost: the rest of the pass was dropped */
    int gone;           /* the status write found no FlinkCluster (404): no Events follow */
    int terminating;    /* a write met a namespace being deleted: the rest dropped, no retry */
    kube_call *call;
    char what[600];   /* the action in flight, for logs */
    enum run_write write;
    const char *verb; /* its HTTP method, for flink_controller_api_requests_total */
    json_t *sent;     /* the status being written */
    char del_uid[64]; /* uid of the object being deleted */
    char status_rv[64]; /* the FlinkCluster's resourceVersion its status write answered ("": none) */
    int del_kind;     /* its index in run_kinds, -1 when not watched */
    char dry_key[300]; /* "<Kind>/<name>" of the object being dry-run applied */
    char dry_hash[80]; /* the applied-hash the framework sent with it */
    json_t *fresh;    /* the Flink answers this pass was run for ({"<METHOD> <path>": true}) */
    json_t *event;    /* the correlator's entry of the Event being written (a reference) */
    double started; /* ev_time() when taken off the queue */
    char policy_hash[OVERRIDE_HASH_LEN + 1]; /* the set the pass ran with ("" when none ran) */
};

/* A Flink REST call in flight for a key; its answer goes into the key's flink state and
 * enqueues the key. */
struct run_fcall {
    struct run_ctx *ctx;
    struct run_fcall *next;
    char *key;
    char sig[600]; /* "<METHOD> <path>": one call per key and signature at a time */
    char id[128];  /* where the answer is recorded (answers[id]) */
    json_t *intent; /* recorded with the answer */
    flinkcall *call;
    /* an upload action: the jar is downloaded first (dl) into a file without a name (jar_fd,
     * util_tmpfile: never whole in memory, freed when closed), then sent from it as the
     * multipart part */
    json_t *action;
    http_request *dl;
    int jar_fd;
    http_part part;
    char filename[256];
};


/* ---- core/run.c's helpers for the other rooms ---------------------------------------------- */

/* The workqueue key "<namespace>/<name>" split for logs: the namespace into `ns` (n bytes, ""
 * without a '/'), the name returned (inside `key`). */
const char *run_key_split(const char *key, char *ns, size_t n);

/* One record through core/log (log.h, "Keys"): `msg` a constant phrase; when `key` is a workqueue
 * key "<namespace>/<name>" the record carries "cluster" = name and "namespace" (NULL: a line
 * about no FlinkCluster); then the caller's key/value pairs, const char *, ended by NULL (at
 * most 22 pairs). */
void run_log(log_level level, const char *key, const char *msg, ...) __attribute__((sentinel));

/* `v` formatted with `fmt` into b (n bytes); returns b. For the macros below. */
const char *run_fmt(char *b, size_t n, const char *fmt, double v);
/* Numbers as log values, in a buffer that lives as long as the enclosing block (a compound
 * literal): RUN_LD(long) "%ld", RUN_MS(seconds) milliseconds "%.1f", RUN_ZU(size_t). */
#define RUN_LD(v) run_fmt((char[32]){0}, 32, "%.0f", (double)(v))
#define RUN_ZU(v) RUN_LD(v)
#define RUN_MS(s) run_fmt((char[32]){0}, 32, "%.1f", (double)(s) * 1000.0)

/* Counts one API request of the controller's own (flink_controller_api_requests_total: `verb`
 * the HTTP method, `status` its HTTP status, 0 for no answer). */
void run_count_request(struct run_ctx *ctx, const char *verb, long status);

/* The watches of namespace `ns` (or the all-namespaces ones), NULL when it is not watched. */
struct run_ns *run_ns_for(struct run_ctx *ctx, const char *ns);

/* A shallow copy of a cached object with apiVersion and kind set (list items of built-in
 * kinds come without them); NULL when out of memory. */
json_t *run_typed(json_t *obj, const kube_kind *k);

/* Counts a watch event of kind `kind` (flink_controller_watch_events_total{kind,event}) and
 * the loop's activity (for run_trim_cb). */
void run_count_watch_event(struct run_ctx *ctx, const char *kind, reflector_event ev);

/* "<namespace>/<name>" of a FlinkCluster object into key (n bytes); 0, or -1 when a name is
 * missing or the key does not fit. */
int run_cluster_key(json_t *obj, char *key, size_t n);

/* Forgets what was kept for workqueue key `key` (its cluster_state, its Flink calls in flight):
 * its FlinkCluster or FlinkJob is gone, or its shard was lost. */
void run_forget_key(struct run_ctx *ctx, const char *key);

/* Enqueues every cached FlinkCluster and FlinkJob of every namespace (a key of a shard this
 * replica does not own is dropped when taken from the queue): what may have changed while this
 * replica did not lead, or what a new policy set may decide otherwise. */
void run_enqueue_all(struct run_ctx *ctx);

/* Starts taking keys once every cache synced and the first policy set is decided. */
void run_check_synced(struct run_ctx *ctx);

/* Stops taking keys (SIGTERM, a lost leader Lease, a webhook that cannot listen): the watches
 * stopped, the loop ends once the keys in flight are done (then the Leases are released,
 * core/replica) or after RUN_STOP_GRACE_S; run_main returns `exit_code`. */
void run_begin_stop(struct run_ctx *ctx, int exit_code);

#endif
