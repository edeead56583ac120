/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slots: TaskManager slot accounting for native TaskManager pods.
 *
 * Pure bookkeeping: no I/O, no Lua, no clock.  The rules follow the ideas of Flink's old
 * Kubernetes resource manager (shared/seeds/KubernetesResourceManager.java.txt:
 * calculateSlotNumber, generatePriority, startNewWorker, cancelNewWorker, addWorkerNode,
 * removeWorkerNode, internalRequestContainer, the failed-attempt counter and
 * getWorkerNodesFromPreviousAttempts), written anew with our own shapes.
 *
 * Units: CPU in cores (double, as Flink's ResourceProfile), memory in MiB (integer),
 * extended resources in the resource's own unit (double, e.g. GPUs).
 *
 * Errors: every fallible function returns an enum slots_status and, when `err` is not NULL,
 * fills err->msg with "<reason>" (no function prefix; the Lua binding adds "slots.<fn>: ").
 * Nothing aborts; on error the counts are left unchanged (a resource seen for the first time
 * keeps the priority it was given even when the pod request then fails on a limit).
 */
#ifndef FC_SLOTS_H
#define FC_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds (ours, not Flink's): they keep memory bounded for any input. */
#define SLOTS_MAX_EXTENDED      16         /* extended resources per profile / maximums */
#define SLOTS_NAME_MAX          253        /* extended resource name length (k8s qualified name) */
#define SLOTS_PREFIX_MAX        200        /* pod name prefix length */
#define SLOTS_MAX_PER_TM        1000000    /* slot count cap for absurd ratios (e.g. 1e-9 cores) */
#define SLOTS_PROFILES_DEFAULT  256        /* distinct priorities, default */
#define SLOTS_PROFILES_LIMIT    65536      /* distinct priorities, hard cap */
#define SLOTS_PODS_DEFAULT      4096       /* pending + registered pods, default */
#define SLOTS_PODS_LIMIT        (1 << 20)  /* pending + registered pods, hard cap */
#define SLOTS_MAX_POD_ID        999999999999999999LL  /* ids keep pod names <= prefix + 18 digits */
#define SLOTS_MAX_PRIORITY      2147483646 /* priorities are 0..this (a label value) */
#define SLOTS_FAILED_DEFAULT    100        /* max_failed_attempts when 0 is given (ours) */

/*
 * Floating managed memory.  Flink's profile carries it as an extended resource that is already
 * added into the memory figure, so the slot rule skips it.  In our shape `memory_mib` is the total
 * TaskManager memory including floating managed memory; an extended entry with this name
 * (compared case-insensitively) is informational: part of the resource identity (priority) but
 * never a limit, even when the maximums name it.
 */
#define SLOTS_FLOATING_MEMORY   "floating_managed_memory_mib"

enum slots_status {
    SLOTS_OK = 0,
    SLOTS_EINVAL,   /* bad input: negative, NaN/inf, malformed name, duplicate, ... */
    SLOTS_ENOENT,   /* unknown priority */
    SLOTS_ELIMIT,   /* a bound above was hit (profiles, pods, ids) */
    SLOTS_ESTATE,   /* call not valid in this state (e.g. recover on a used accounting) */
    SLOTS_ENOMEM    /* the allocator refused */
};

struct slots_err {
    char msg[200];
};

/* One extended resource: name (not NUL-terminated necessarily: name_len bytes) -> amount. */
struct slots_extended {
    const char *name;
    size_t name_len;
    double amount;     /* >= 0, finite */
};

/*
 * A resource shape, used both for a TaskManager resource profile (what one slot asks for) and
 * for the per-TaskManager maximums.  cpu_cores >= 0 and finite, memory_mib >= 0; 0 means
 * "unknown" for a profile (Flink's UNKNOWN profile uses -1; our shape rejects negatives).
 * Extended names are compared case-insensitively; duplicates (ignoring case) are an error.
 * The caller owns the name strings; the accounting copies what it keeps.
 */
struct slots_resources {
    double cpu_cores;
    int64_t memory_mib;
    size_t n_extended;
    struct slots_extended extended[SLOTS_MAX_EXTENDED];
};

/*
 * Optional allocator, same contract as lua_Alloc: nsize == 0 frees and returns NULL, otherwise
 * (re)allocates.  NULL in slots_config means realloc/free.  The Lua binding passes the state's
 * allocator so the sandbox's memory cap counts the accounting too.
 */
typedef void *(*slots_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

struct slots_config {
    struct slots_resources max;      /* per-TaskManager maximums */
    int max_failed_attempts;         /* >= 1; 0 -> SLOTS_FAILED_DEFAULT */
    const char *name_prefix;         /* pod name = prefix + id; [a-z0-9.-]*, NULL -> "taskmanager-" */
    int max_profiles;                /* 0 -> default; 1..SLOTS_PROFILES_LIMIT */
    int max_pods;                    /* 0 -> default; 1..SLOTS_PODS_LIMIT */
    slots_alloc_fn alloc;            /* NULL -> realloc/free */
    void *alloc_ud;
    /* the controller's pass (slots_begin_pass ... slots_demand_step), seconds: */
    double registration_timeout_s;   /* from a pod's creation to its registration; 0 -> none */
    double start_backoff_s;          /* first cool-down after a failed start; 0 -> 5 */
    double start_backoff_max_s;      /* doubling stops here; 0 -> 300 */
};

struct slots_acct;

/*
 * Checks a resource shape (both profile and maximums): finite, non-negative amounts, names
 * 1..SLOTS_NAME_MAX bytes, no duplicates ignoring case, at most SLOTS_MAX_EXTENDED entries.
 * Returns SLOTS_OK or SLOTS_EINVAL.
 */
enum slots_status slots_check(const struct slots_resources *r, struct slots_err *err);

/*
 * Slots per TaskManager for a profile against maximums (seed: calculateSlotNumber).
 *   - profile cpu_cores <= 0 or memory_mib <= 0 ("unknown")       -> 1
 *   - profile cpu or memory over its maximum                       -> 1
 *   - any limited extended resource over its maximum               -> 1
 *   - else min over floor(max/requested) for cpu, memory (integer division) and every extended
 *     resource that the maximums name (case-insensitive); a profile resource the maximums do not
 *     name, a zero amount, and SLOTS_FLOATING_MEMORY are skipped.
 * The ratio uses a 1e-9 tolerance so 0.3 / 0.1 cores gives 3 (plain doubles give 2), and the
 * result is capped at SLOTS_MAX_PER_TM.  The result is always >= 1.
 * *out gets the count.  Errors: SLOTS_EINVAL (see slots_check).
 */
enum slots_status slots_per_taskmanager(const struct slots_resources *profile,
                                        const struct slots_resources *max, int *out,
                                        struct slots_err *err);

/* A new, empty accounting.  NULL on bad config (SLOTS_EINVAL text in err) or no memory. */
struct slots_acct *slots_new(const struct slots_config *cfg, struct slots_err *err);

/* Frees the accounting and everything it holds.  NULL is fine. */
void slots_free(struct slots_acct *a);

/*
 * Stable priority of a TaskManager resource (seed: generatePriority): the same profile (same
 * cpu, memory and extended set ignoring name case and zero amounts) gets the same number; a new
 * profile gets the next number (0, 1, ...; after recovery, max recovered + 1).
 * *prio gets the priority, *slots (may be NULL) the slots per TaskManager for it.
 * Errors: SLOTS_EINVAL, SLOTS_ELIMIT (more distinct profiles than max_profiles), SLOTS_ENOMEM.
 */
enum slots_status slots_priority(struct slots_acct *a, const struct slots_resources *profile,
                                 int *prio, int *slots, struct slots_err *err);

/* Like slots_priority but never assigns: SLOTS_ENOENT when the profile has no priority yet. */
enum slots_status slots_find_priority(struct slots_acct *a, const struct slots_resources *profile,
                                      int *prio, struct slots_err *err);

/*
 * The reverse map: the profile of a priority, names lowercased and sorted, zero amounts dropped.
 * NULL for an unknown priority or one recovered without a resource.  Valid until the next call
 * that changes the accounting.
 */
const struct slots_resources *slots_resource_of(const struct slots_acct *a, int prio);

enum slots_action {
    SLOTS_NONE = 0,     /* nothing to do */
    SLOTS_REQUEST,      /* create pod `pod_id` (name from slots_pod_name) with label `priority` */
    SLOTS_USE_SPARE,    /* a spare slot of a pending pod serves the request */
    SLOTS_SPARE_BACK,   /* a cancelled slot went back to the spare count */
    SLOTS_CANCEL,       /* delete pending pod `pod_id`: all its slots are now unneeded */
    SLOTS_STOPPED,      /* failed attempts reached the maximum: no new pods */
    SLOTS_WAIT          /* a start failed recently: no new pod before `wait_until` */
};

struct slots_outcome {
    enum slots_action action;
    int priority;       /* -1 when none */
    int slots;          /* slots per TaskManager of that priority */
    int spare;          /* spare slots of that priority after the call */
    int64_t pod_id;     /* SLOTS_REQUEST / SLOTS_CANCEL, else -1 */
    bool was_registered; /* SLOTS_CANCEL by slots_demand_step: the pod had registered */
    double wait_until;  /* SLOTS_WAIT: unix seconds */
};

/*
 * One more slot of `profile` is wanted (seed: startNewWorker).  A spare slot of that priority
 * is used when there is one (SLOTS_USE_SPARE, spare - 1); otherwise a new pod is requested
 * (SLOTS_REQUEST, next pod id, added to the priority's pending pods) and its other slots - 1
 * slots become spare.  After the failed-attempt maximum: SLOTS_STOPPED, nothing changes.
 * Errors: as slots_priority, SLOTS_ELIMIT when pods or ids run out.
 */
enum slots_status slots_start_worker(struct slots_acct *a, const struct slots_resources *profile,
                                     struct slots_outcome *out, struct slots_err *err);

/*
 * One slot of `profile` is no longer wanted (seed: cancelNewWorker).  Nothing happens
 * (SLOTS_NONE) when the profile has no priority or no pending pod.  With 1 slot per TaskManager
 * the oldest pending pod is cancelled.  Otherwise the slot goes to the spare count
 * (SLOTS_SPARE_BACK) while spare < slots - 1; once all slots of a pending pod would be spare,
 * the spare count drops to 0 and the oldest pending pod is cancelled (SLOTS_CANCEL).
 * Errors: SLOTS_EINVAL.
 */
enum slots_status slots_cancel_worker(struct slots_acct *a, const struct slots_resources *profile,
                                      struct slots_outcome *out, struct slots_err *err);

/*
 * A replacement pod for `prio` without touching the spare count (seed: internalRequestContainer
 * after an unregistered TaskManager's pod went away).  pending_slot_requests < 0 skips the check;
 * otherwise a pod is requested only when pending_slot_requests > pending pods * slots (the seed's
 * weak check), else SLOTS_NONE.  SLOTS_NONE too for a priority recovered without a resource.
 * Errors: SLOTS_ENOENT (unknown priority), SLOTS_ELIMIT.
 */
enum slots_status slots_replace_worker(struct slots_acct *a, int prio, int64_t pending_slot_requests,
                                       struct slots_outcome *out, struct slots_err *err);

enum slots_added {
    SLOTS_ADDED_REGISTERED = 0, /* was pending under that priority, now registered */
    SLOTS_ADDED_EXISTS,         /* already registered: nothing changes */
    SLOTS_ADDED_STALE           /* not pending under that priority (cancelled, foreign): delete it */
};

/*
 * A pod of ours was observed (seed: addWorkerNode with the pending check).  `name` must be
 * prefix + decimal id.  A stale pod's id still raises the id counter so no new pod reuses it.
 * Errors: SLOTS_EINVAL (name), SLOTS_ENOENT (priority never assigned).
 */
enum slots_status slots_pod_added(struct slots_acct *a, const char *name, int prio,
                                  enum slots_added *res, struct slots_err *err);

struct slots_removal {
    bool removed;           /* false: the pod was not known (nothing counted) */
    bool was_pending;       /* it had not been observed yet (was pending) */
    int priority;           /* its priority, -1 when not removed */
    int failed_attempts;    /* the counter after the call (never reset; saturates at INT_MAX) */
    bool stopped;           /* failed_attempts >= max_failed_attempts (seed: >=, then stop) */
};

/*
 * A pod went away (seed: removeWorkerNode).  A pending or registered pod is dropped; when
 * `failed` the failed-attempt counter goes up (only for a known pod, as in the seed).  Whether
 * to replace it is the caller's choice (slots_replace_worker).
 * Errors: SLOTS_EINVAL (name).
 */
enum slots_status slots_pod_removed(struct slots_acct *a, const char *name, bool failed,
                                    struct slots_removal *out, struct slots_err *err);

enum slots_phase {      /* Kubernetes pod phases (core/v1 PodStatus.phase) */
    SLOTS_PHASE_PENDING = 0,    /* -> pending (requested, not observed running) */
    SLOTS_PHASE_RUNNING,        /* -> registered */
    SLOTS_PHASE_UNKNOWN,        /* -> registered (node unreachable; the pod still exists) */
    SLOTS_PHASE_SUCCEEDED,      /* -> not tracked, id still counts */
    SLOTS_PHASE_FAILED          /* -> not tracked, id still counts */
};

struct slots_pod_record {
    const char *name;                        /* NULL or must equal prefix + id */
    int64_t id;                              /* 0..SLOTS_MAX_POD_ID */
    int priority;                            /* 0..SLOTS_MAX_PRIORITY */
    enum slots_phase phase;
    const struct slots_resources *resource;  /* NULL, or binds priority <-> resource */
    double created;                          /* unix seconds of creation; 0: unknown (now) */
};

/*
 * Rebuilds the state from existing pods (seed: getWorkerNodesFromPreviousAttempts): pending and
 * registered pods per priority, max pod id = max recovered id, next priority = max recovered
 * priority + 1, and the priority <-> resource map for records that carry a resource.  Spare
 * slots start at 0 (they are not recorded in pods; Flink's job master re-requests its slots after
 * a failover).  Failed attempts start at the number of Succeeded/Failed records: a TaskManager
 * pod that ended while no controller watched is counted on start (ours; the seed lost them).
 * Pending records stay pending with a registration deadline of created + timeout (the
 * controller's pass passes every live pod as Pending: whether it registered is known from the
 * JobManager's next answer); recovered pods count as seen.  Only on an accounting with no pod and
 * no priority.
 * Errors: SLOTS_ESTATE, SLOTS_EINVAL (duplicate id, name/id mismatch, a priority bound to two
 * resources or a resource to two priorities), SLOTS_ELIMIT, SLOTS_ENOMEM.  All or nothing.
 */
enum slots_status slots_recover(struct slots_acct *a, const struct slots_pod_record *pods,
                                size_t n, struct slots_err *err);

/* Pod name for an id: prefix + decimal id.  Returns the length, or -1 if it did not fit. */
int slots_pod_name(const struct slots_acct *a, int64_t id, char *buf, size_t len);

struct slots_totals {
    int profiles;               /* priorities known (bound or recovered) */
    int next_priority;
    int64_t max_pod_id;
    int pending;                /* pods, all priorities */
    int registered;
    int failed_attempts;
    int max_failed_attempts;
    bool stopped;
    int start_failures;         /* starts that failed since the last pod was seen */
    double backoff_s;           /* the cool-down the last failed start began (0: none) */
    double wait_until;          /* no new pod before this (unix seconds); 0: none */
};

void slots_totals(const struct slots_acct *a, struct slots_totals *out);

struct slots_priority_info {
    int priority;
    int slots;                  /* slots per TaskManager (1 when recovered without resource) */
    int spare;
    int pending;
    int registered;
    bool bound;                 /* has a resource */
};

/*
 * The i-th known priority (0 <= i < totals.profiles), in ascending priority order.  Returns
 * false when i is out of range.
 */
bool slots_priority_at(const struct slots_acct *a, int i, struct slots_priority_info *out);

/*
 * Pending pod ids of a priority, oldest first, at most `cap` into ids.  Returns how many there
 * are in total (may exceed cap), or -1 for an unknown priority.
 */
int slots_pending_ids(const struct slots_acct *a, int prio, int64_t *ids, int cap);

/*
 * ---- The controller's pass -------------------------------------------------------------------
 * One pass per reconcile of a Native cluster, on an accounting that lives as long as the
 * controller (or is rebuilt by slots_recover after a restart).  Here "pending" means requested
 * and not yet registered with the JobManager, "registered" that the JobManager lists its
 * TaskManager (resource id = pod name).  A pass is:
 *   slots_begin_pass(now)
 *   slots_observe_pod(...) for every TaskManager pod listed (the cache)
 *   slots_tm_registered(name) for every TaskManager the JobManager lists (when it answered)
 *   slots_sweep(...) until false: what happened to pods that were not listed, or timed out
 *   slots_demand_step(...) until SLOTS_NONE / SLOTS_STOPPED / SLOTS_WAIT: pods to create/delete
 * Rules (seed: addWorkerNode, removeWorkerNode, checkTMRegistered, startNewWorker,
 * cancelNewWorker; item 4 of issue 10 for the start cool-down and per-priority demand):
 *   - a listed pod we do not track, or whose priority label differs: delete (stale); one with a
 *     malformed name or priority label: delete (malformed); ids still raise the id counter;
 *   - a tracked pod in phase Succeeded/Failed: dropped, failed attempts + 1, delete it;
 *   - a tracked pod seen before and no longer listed (deleted by someone): failed attempts + 1;
 *   - a requested pod never listed by the next pass: its create failed (e.g. HTTP 403 exceeded
 *     quota): dropped without a failed attempt, and no pod is requested for a cool-down of
 *     start_backoff_s, doubled per failure up to start_backoff_max_s, reset once a pod is seen;
 *   - a pending pod whose deadline (creation + registration timeout) is not after the time the
 *     JobManager answered without listing it: dropped, failed attempts + 1, delete it (a
 *     JobManager that did not answer times nobody out);
 *   - demand: pods for the priority of `profile` = ceil(demand / slots per TaskManager), every
 *     other priority 0; missing pods are requested (unless stopped or cooling down), excess pods
 *     cancelled, pending ones first (oldest first), then registered ones (newest first).
 * Failed and missing pods need no separate replacement: the next demand step requests them.
 */
void slots_begin_pass(struct slots_acct *a, double now);

/*
 * Failed attempts carried over from an earlier accounting of the same cluster (the count a
 * previous controller wrote into the FlinkCluster's status): added to the count, which
 * saturates at INT_MAX, so a restart does not lift the maxFailedAttempts stop.  n < 0 is
 * SLOTS_EINVAL.
 */
enum slots_status slots_add_failed(struct slots_acct *a, int n, struct slots_err *err);

enum slots_verdict {
    SLOTS_KEEP = 0,
    SLOTS_DELETE_STALE,       /* not tracked (cancelled, a previous owner's, foreign) */
    SLOTS_DELETE_MALFORMED,   /* name not prefix + id, or priority label not 0..max */
    SLOTS_DELETE_TERMINATED   /* tracked, ended (Succeeded/Failed): counted as failed */
};

/*
 * A TaskManager pod listed in this pass: `prio` its priority label (-1 when missing or not a
 * number), `created` its creation time (unix s, 0 unknown).  *verdict: keep or delete.
 * Never fails on a bad pod (that is a verdict); errors only for a NULL name (SLOTS_EINVAL).
 */
enum slots_status slots_observe_pod(struct slots_acct *a, const char *name, int prio,
                                    enum slots_phase phase, double created,
                                    enum slots_verdict *verdict, struct slots_err *err);

/* The JobManager lists the TaskManager `name`: a pending pod becomes registered (true); false
 * when it is not a pending pod of ours (already registered, unknown, malformed). */
bool slots_tm_registered(struct slots_acct *a, const char *name);

enum slots_event_kind {
    SLOTS_EV_GONE = 1,        /* seen before, no longer listed: counted as failed */
    SLOTS_EV_START_FAILED,    /* requested, never listed: cool-down started */
    SLOTS_EV_TIMEOUT          /* not registered in time: counted as failed, delete it */
};

struct slots_event {
    enum slots_event_kind kind;
    int64_t pod_id;
    int priority;
    int failed_attempts;      /* after the event */
    bool stopped;
    double wait_until;        /* SLOTS_EV_START_FAILED: end of the cool-down */
};

/*
 * The next event of this pass (see the rules above) into *ev; false when there is none left.
 * `answered_at`: when the JobManager's TaskManager list used by slots_tm_registered was
 * fetched (unix s); < 0 when there is none (no timeouts then).
 */
bool slots_sweep(struct slots_acct *a, double answered_at, struct slots_event *ev);

/*
 * One step toward `demand` slots of `profile` (>= 0): SLOTS_REQUEST (pod_id), SLOTS_CANCEL
 * (pod_id, was_registered), SLOTS_STOPPED, SLOTS_WAIT (wait_until) or SLOTS_NONE (done; spare
 * is then pods x slots - demand).  Call until it returns one of the last three.
 * Errors: as slots_priority, SLOTS_EINVAL for a negative demand, SLOTS_ELIMIT.
 */
enum slots_status slots_demand_step(struct slots_acct *a, const struct slots_resources *profile,
                                    int64_t demand, struct slots_outcome *out, struct slots_err *err);

#endif
