/* SPDX-License-Identifier: Apache-2.0 */
/* core/leader: leader election on a coordination.k8s.io/v1 Lease, after
 * client-go's tools/leaderelection (LeaseLock):
 *   - the Lease is `LEADER_LEASE_NAME` in the controller's namespace
 *     (contracts: Deployment; RBAC grants get/update on that name, create);
 *   - a candidate GETs the Lease every retry period (jittered up to x2.2 as
 *     wait.JitterUntil with JitterFactor 1.2): absent (404) -> create it
 *     holding it; held by another whose record has not changed for
 *     leaseDurationSeconds *by our own clock* (observed time, clock-skew
 *     safe) or with an empty holder -> take over with a PUT carrying the read
 *     resourceVersion (optimistic concurrency: 409 means another won),
 *     leaseTransitions + 1 and a new acquireTime;
 *   - the leader renews every retry period (PUT with the resourceVersion of
 *     its last write; after a failure it GETs again first) and loses
 *     leadership when no renewal has succeeded for the renew deadline, or
 *     at once when a GET shows another holder: it calls on_stopped_leading
 *     and stops for good (client-go's processes exit there; the callback
 *     decides; a new leader_start campaigns again);
 *   - leader_release() on clean shutdown writes holderIdentity "" and
 *     leaseDurationSeconds 1 (ReleaseOnCancel) so a successor takes over at
 *     its next try.
 * Times in the Lease are MicroTime, "2006-01-02T15:04:05.000000Z" (exactly
 * six fractional digits, meta/v1 micro_time.go).
 *
 * The decision logic is pure (leader_decide, leader_lease_parse,
 * leader_lease_update); the elector adds timers and API calls. Both the
 * clock and the API are injectable so tests drive it with a fake clock and
 * fake answers and no loop.
 */
#ifndef FC_LEADER_H
#define FC_LEADER_H

#include <stddef.h>
#include <ev.h>
#include <jansson.h>
#include "kube.h"

#define LEADER_LEASE_NAME "flink-controller"
#define LEADER_LEASE_DURATION_S 15.0   /* client-go "core clients default" */
#define LEADER_RENEW_DEADLINE_S 10.0
#define LEADER_RETRY_PERIOD_S 2.0
#define LEADER_JITTER_FACTOR 1.2       /* client-go JitterFactor */

/* ---- pure logic -------------------------------------------------------- */

/* The fields of a Lease the election reads. */
typedef struct leader_lease {
    int exists;                 /* 0: the GET answered 404 */
    char holder[254];           /* spec.holderIdentity ("" when unset) */
    long duration_s;            /* spec.leaseDurationSeconds (0 when unset) */
    long transitions;           /* spec.leaseTransitions */
    char acquire_time[40];      /* spec.acquireTime, as written */
    char renew_time[40];        /* spec.renewTime, as written */
    char resource_version[64];  /* metadata.resourceVersion */
} leader_lease;

/* Reads a Lease object (JSON as the API returns it). Returns 0, or -1 with
 * err when `obj` is not an object or a field has the wrong JSON type or is
 * too long. Missing fields read as "" / 0. */
int leader_lease_parse(json_t *obj, leader_lease *out, char *err, size_t errlen);

/* 1 when two observations are the same record (holder, renewTime,
 * acquireTime, duration, transitions, resourceVersion): the observed time
 * only moves on when the record changes (client-go observedRawRecord). */
int leader_lease_same(const leader_lease *a, const leader_lease *b);

typedef enum leader_decision {
    LEADER_WAIT = 0,     /* someone else holds a live lease */
    LEADER_CREATE = 1,   /* no Lease: POST one holding it */
    LEADER_ACQUIRE = 2,  /* expired or released: PUT taking it over */
    LEADER_RENEW = 3     /* we hold it: PUT a new renewTime */
} leader_decision;

/* What to do given the observed Lease (`lease->exists` 0 for a 404),
 * `observed_at`: our clock (seconds) when this record was first seen,
 * `now`: our clock, and our identity. Expired means
 * observed_at + leaseDurationSeconds <= now. An empty holder counts as
 * released. */
leader_decision leader_decide(const leader_lease *lease, double observed_at, double now,
                              const char *identity);

/* Writes a MicroTime for Unix time `t` (seconds) into buf (>= 28 bytes);
 * returns 0 or -1. */
int leader_format_microtime(double t, char *buf, size_t n);

/* Builds the Lease to send for `d` (CREATE, ACQUIRE, RENEW; or RELEASE with
 * `d` = LEADER_WAIT meaning "release"): a new json_t (caller decrefs).
 * `observed` is the Lease object as read (NULL for CREATE): it is copied so
 * labels and unknown spec fields survive, metadata.resourceVersion kept and
 * managedFields dropped. Sets spec.holderIdentity = identity ("" to release),
 * leaseDurationSeconds = duration_s (1 to release), renewTime = now_wall,
 * acquireTime = now_wall unless renewing, leaseTransitions = old + 1 on
 * ACQUIRE when the previous holder is not us (an empty, released holder
 * included, as client-go), kept otherwise, 0 on create. NULL on OOM or a bad
 * `observed`. */
json_t *leader_lease_update(json_t *observed, const char *ns, const char *name, leader_decision d,
                            const char *identity, long duration_s, double now_wall);
#define LEADER_RELEASE LEADER_WAIT

/* ---- identity and namespace ------------------------------------------- */

/* "<POD_NAME or hostname>_<16 random hex digits>" (controller-runtime's
 * hostname_uuid idea: a restarted process never mistakes the previous
 * holder for itself). Returns 0, -1 when buf (n bytes) is too small. */
int leader_default_identity(char *buf, size_t n);
/* The namespace of the Lease: env POD_NAMESPACE, else
 * <KUBE_SA_DIR>/namespace, else `fallback` (the kubeconfig's namespace),
 * else "default". Returns 0, -1 when buf is too small. */
int leader_default_namespace(const char *fallback, char *buf, size_t n);

/* ---- the elector --------------------------------------------------------- */

typedef struct leader_elector leader_elector;

/* The API the elector talks to. Default (opts.api NULL): kube_request on
 * `kc`. A fake starts the request, returns 0 (or -1: then the elector counts
 * the attempt as failed), and later, never inside this call, answers with
 * leader_answer(). At most one request is in flight. `body` is JSON text or
 * NULL. */
typedef struct leader_api {
    int (*request)(void *api_ud, leader_elector *e, const char *method, const char *path,
                   const char *body);
    void (*cancel)(void *api_ud, leader_elector *e);   /* drop the in-flight request */
} leader_api;

typedef struct leader_opts {
    const char *namespace;           /* required */
    const char *name;                /* NULL = LEADER_LEASE_NAME */
    const char *identity;            /* required, <= 253 bytes */
    double lease_duration_s;         /* 0 = 15; must be > renew deadline */
    double renew_deadline_s;         /* 0 = 10; must be > 1.2 x retry period */
    double retry_period_s;           /* 0 = 2 */
    double request_timeout_s;        /* per API call, 0 = renew deadline / 2 */
    /* clock in Unix seconds; NULL = ev_now(loop) (then also the wall clock
     * written into the Lease) */
    double (*now)(void *ud);
    void *now_ud;
    /* jitter source in [0,1); NULL = loop_jitter() */
    double (*jitter)(void *ud);
    const leader_api *api;           /* NULL: the kube client */
    void *api_ud;
    /* callbacks (any may be NULL); they may call leader_free/leader_release
     * only through a deferred step, never directly */
    void (*on_started_leading)(void *ud);
    void (*on_stopped_leading)(void *ud);       /* lost (renew deadline passed,
                                                   or another holder seen while
                                                   leading) or released */
    void (*on_new_leader)(const char *identity, void *ud);  /* observed holder changed */
    void *ud;
} leader_opts;

/* Starts campaigning at once (first attempt from a zero-delay timer).
 * `loop` NULL: no timers, the caller drives time with leader_step() (tests);
 * `kc` may be NULL when opts.api is given. Options are copied. Returns NULL
 * with err on bad options (missing namespace/identity, durations that break
 * lease > renew > 1.2 x retry). */
leader_elector *leader_start(struct ev_loop *loop, kube_client *kc, const leader_opts *opts,
                             char *err, size_t errlen);

/* Runs what is due at the current clock: the renew-deadline check, then an
 * attempt (GET/POST/PUT) when one is due and none is in flight. Returns the
 * delay (seconds) until the next thing due, or -1 once stopped. The timer
 * calls it; tests call it after moving their clock. */
double leader_step(leader_elector *e);

/* The answer to the in-flight request from a fake API: HTTP `status` (0 =
 * no response), `body` JSON text or NULL. */
void leader_answer(leader_elector *e, long status, const char *body);

int leader_is_leader(const leader_elector *e);
/* The write fence: 1 while leading AND the last successful renewal is younger than the renew
 * deadline by the elector's clock read now; 0 otherwise (never led, lost, released, or the
 * deadline already passed although no timer has run leader_step yet, e.g. a busy loop; with
 * the loop clock it reads ev_time(), not the cached ev_now()).
 * client-go stops leading at the renew deadline (leaderelection.go renew: "failed to renew
 * lease ... timed out"); callers check this right before each write so nothing is written
 * once the deadline passed, not only after on_stopped_leading ran. */
int leader_may_write(leader_elector *e);
/* The holder last observed ("" when none or unknown). */
const char *leader_holder(const leader_elector *e);
const char *leader_identity(const leader_elector *e);
/* 1 once the elector stopped (lost, released or failed release). */
int leader_stopped(const leader_elector *e);

/* Clean shutdown: stops campaigning; when leading, writes the release
 * (holder "", leaseDurationSeconds 1) and calls on_stopped_leading, then
 * `done(ok, ud)` (ok 1 when released or nothing to release). `done` runs
 * from the loop (or from leader_answer with a fake API), never inside this
 * call. Stop acting as leader before calling it (client-go releases after
 * the leader's context is cancelled). on_stopped_leading runs when the
 * release is answered (or at once when the PUT cannot even be sent).
 * Returns 0, -1 when a release is already running. */
int leader_release(leader_elector *e, void (*done)(int ok, void *ud), void *ud);

/* Cancels everything (no callbacks) and frees. Not from inside a callback
 * of this elector. NULL is a no-op. */
void leader_free(leader_elector *e);

#endif
