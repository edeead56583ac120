/* SPDX-License-Identifier: Apache-2.0 */
/* C-level tests of core/slots: bad input, the pod id map under churn, allocator failures. TAP. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slots.h"

static int n_test;
static int n_fail;

static void ok(int cond, const char *what)
{
    n_test++;
    if (!cond)
        n_fail++;
    printf("%s %d - %s\n", cond ? "ok" : "not ok", n_test, what);
}

static struct slots_resources res(double cpu, int64_t mem, const char *ext, double amount)
{
    struct slots_resources r;
    memset(&r, 0, sizeof r);
    r.cpu_cores = cpu;
    r.memory_mib = mem;
    if (ext) {
        r.n_extended = 1;
        r.extended[0].name = ext;
        r.extended[0].name_len = strlen(ext);
        r.extended[0].amount = amount;
    }
    return r;
}

/* Counting allocator that can be told to fail after `budget` successful (re)allocations. */
struct counter {
    long live_bytes;
    long budget;   /* < 0: never fail */
};

static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct counter *c = ud;
    if (nsize == 0) {
        if (ptr)
            c->live_bytes -= (long)osize;
        free(ptr);
        return NULL;
    }
    if (c->budget == 0)
        return NULL;
    if (c->budget > 0)
        c->budget--;
    void *p = realloc(ptr, nsize);
    if (p)
        c->live_bytes += (long)nsize - (ptr ? (long)osize : 0);
    return p;
}

static void test_per_taskmanager(void)
{
    struct slots_resources max = res(4, 8192, "gpu", 2);
    struct slots_resources p = res(1, 2048, "GPU", 1);
    struct slots_err err;
    int n = -1;
    ok(slots_per_taskmanager(&p, &max, &n, &err) == SLOTS_OK && n == 2,
       "per_taskmanager: {4 cores, 8192 MiB, gpu 2} / {1, 2048, GPU 1} = 2");

    p = res(NAN, 2048, NULL, 0);
    ok(slots_per_taskmanager(&p, &max, &n, &err) == SLOTS_EINVAL &&
           strstr(err.msg, "cpu_cores must be a finite number") != NULL,
       "per_taskmanager: NaN cpu is SLOTS_EINVAL with a message");

    ok(slots_per_taskmanager(NULL, &max, &n, &err) == SLOTS_EINVAL, "per_taskmanager: NULL profile");

    p = res(1, 1, "", 1);
    ok(slots_per_taskmanager(&p, &max, &n, NULL) == SLOTS_EINVAL,
       "per_taskmanager: empty extended name rejected (NULL err is fine)");

    p = res(1, 1, "g\x01u", 1);
    ok(slots_check(&p, &err) == SLOTS_EINVAL && strstr(err.msg, "0x01") != NULL,
       "check: control byte in a name rejected");

    p = res(1, 1, NULL, 0);
    p.n_extended = SLOTS_MAX_EXTENDED + 1;
    ok(slots_check(&p, &err) == SLOTS_EINVAL, "check: too many extended entries");

    p = res(1, 1, "gpu", INFINITY);
    ok(slots_check(&p, &err) == SLOTS_EINVAL, "check: infinite extended amount");

    p = res(-0.0, 10, NULL, 0);
    ok(slots_per_taskmanager(&p, &max, &n, &err) == SLOTS_OK && n == 1, "per_taskmanager: -0 cores is unknown -> 1");
}

static void test_config(void)
{
    struct slots_err err;
    ok(slots_new(NULL, &err) == NULL && strcmp(err.msg, "no config") == 0, "new: NULL config");
    struct slots_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max = res(4, 8192, NULL, 0);
    cfg.name_prefix = "UPPER-";
    ok(slots_new(&cfg, &err) == NULL && strstr(err.msg, "name_prefix") != NULL, "new: bad prefix");
    cfg.name_prefix = "tm-";
    cfg.max_failed_attempts = -1;
    ok(slots_new(&cfg, &err) == NULL, "new: negative max_failed_attempts");
    cfg.max_failed_attempts = 0;
    cfg.max_profiles = SLOTS_PROFILES_LIMIT + 1;
    ok(slots_new(&cfg, &err) == NULL, "new: max_profiles over the hard cap");
    cfg.max_profiles = 0;
    cfg.max.memory_mib = -1;
    ok(slots_new(&cfg, &err) == NULL && strncmp(err.msg, "max: ", 5) == 0, "new: negative max memory");
    slots_free(NULL);
    ok(1, "free(NULL) is a no-op");
}

static void test_churn(void)
{
    struct slots_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max = res(4, 8192, NULL, 0);
    cfg.name_prefix = "tm-";
    cfg.max_pods = 10000;
    struct slots_err err;
    struct slots_acct *a = slots_new(&cfg, &err);
    struct slots_resources one = res(4, 8192, NULL, 0);   /* 1 slot per pod */
    struct slots_outcome o;
    int bad = 0;
    for (int i = 0; i < 5000; i++)
        if (slots_start_worker(a, &one, &o, &err) != SLOTS_OK || o.pod_id != i + 1)
            bad++;
    ok(bad == 0, "churn: 5000 requests get ids 1..5000");
    char name[64];
    struct slots_removal rm;
    for (int i = 1; i <= 5000; i += 2) {
        slots_pod_name(a, i, name, sizeof name);
        if (slots_pod_removed(a, name, false, &rm, &err) != SLOTS_OK || !rm.removed || !rm.was_pending)
            bad++;
    }
    ok(bad == 0, "churn: odd pods removed while pending");
    enum slots_added ad;
    for (int i = 1; i <= 5000; i++) {
        slots_pod_name(a, i, name, sizeof name);
        if (slots_pod_added(a, name, 0, &ad, &err) != SLOTS_OK ||
            ad != (i % 2 ? SLOTS_ADDED_STALE : SLOTS_ADDED_REGISTERED))
            bad++;
    }
    ok(bad == 0, "churn: id map finds every even pod and none of the odd ones (backward-shift delete)");
    struct slots_totals t;
    slots_totals(a, &t);
    ok(t.pending == 0 && t.registered == 2500 && t.max_pod_id == 5000, "churn: 0 pending, 2500 registered");
    int64_t ids[4];
    ok(slots_pending_ids(a, 0, ids, 4) == 0 && slots_pending_ids(a, 7, ids, 4) == -1,
       "pending_ids: empty list, unknown priority -1");
    ok(slots_pod_name(a, 12345, name, 6) == -1, "pod_name: -1 when the buffer is too small");
    ok(slots_pod_added(a, NULL, 0, &ad, &err) == SLOTS_EINVAL, "pod_added: NULL name is SLOTS_EINVAL");
    ok(slots_pod_added(a, "tm-99999999999999999999", 0, &ad, &err) == SLOTS_EINVAL,
       "pod_added: 20-digit id is SLOTS_EINVAL");
    ok(slots_replace_worker(a, 3, -1, &o, &err) == SLOTS_ENOENT, "replace_worker: unknown priority");

    struct slots_pod_record rec = {NULL, 1, 0, (enum slots_phase)99, NULL, 0};
    ok(slots_recover(a, &rec, 1, &err) == SLOTS_ESTATE, "recover: used accounting is SLOTS_ESTATE");
    slots_free(a);

    a = slots_new(&cfg, &err);
    ok(slots_recover(a, &rec, 1, &err) == SLOTS_EINVAL && strstr(err.msg, "bad phase"), "recover: bad phase enum");
    ok(slots_recover(a, NULL, 3, &err) == SLOTS_EINVAL, "recover: NULL records");
    slots_totals(a, &t);
    ok(t.profiles == 0 && t.max_pod_id == 0, "recover: failed calls leave the accounting new");
    slots_free(a);
}

/* Runs a fixed workload; every call must be OK or SLOTS_ENOMEM.  Returns calls that were neither. */
static int workload(struct slots_acct *a, int *enomem)
{
    struct slots_err err;
    struct slots_outcome o;
    int odd = 0;
    for (int i = 0; i < 300; i++) {
        struct slots_resources r = res(0.25 + (i % 40) * 0.25 / 40, 256 + i % 40, i % 3 ? "gpu" : NULL, 1);
        enum slots_status st = slots_start_worker(a, &r, &o, &err);
        if (st == SLOTS_ENOMEM)
            (*enomem)++;
        else if (st != SLOTS_OK)
            odd++;
        if (i % 7 == 0) {
            st = slots_cancel_worker(a, &r, &o, &err);
            if (st != SLOTS_OK)
                odd++;
        }
    }
    return odd;
}

static void test_allocator(void)
{
    struct counter c = {0, -1};
    struct slots_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max = res(4, 8192, "gpu", 2);
    cfg.alloc = counting_alloc;
    cfg.alloc_ud = &c;
    struct slots_err err;
    struct slots_acct *a = slots_new(&cfg, &err);
    int enomem = 0;
    ok(a && workload(a, &enomem) == 0 && enomem == 0 && c.live_bytes > 0, "allocator: workload runs, memory counted");
    struct slots_totals t;
    slots_totals(a, &t);
    ok(t.profiles == 80, "allocator: 80 distinct profiles (40 cpu/memory x with or without gpu)");
    slots_free(a);
    ok(c.live_bytes == 0, "allocator: slots_free returns every byte");

    int odd = 0, leaks = 0, refused = 0;
    for (long budget = 0; budget < 60; budget++) {
        struct counter f = {0, budget};
        cfg.alloc_ud = &f;
        a = slots_new(&cfg, &err);
        if (a) {
            enomem = 0;
            odd += workload(a, &enomem);
            refused += enomem;
            struct slots_pod_record recs[2] = {{NULL, 4, 0, SLOTS_PHASE_RUNNING, NULL, 0},
                                               {NULL, 5, 1, SLOTS_PHASE_PENDING, NULL, 0}};
            struct slots_acct *b = slots_new(&cfg, &err);
            if (b) {
                enum slots_status st = slots_recover(b, recs, 2, &err);
                if (st != SLOTS_OK && st != SLOTS_ENOMEM)
                    odd++;
                slots_free(b);
            }
            slots_free(a);
        }
        if (f.live_bytes != 0)
            leaks++;
    }
    ok(odd == 0, "allocator: under failing allocations every call is OK or SLOTS_ENOMEM");
    ok(refused > 0, "allocator: failures were actually injected");
    ok(leaks == 0, "allocator: no leak after any failure point");
}

/* Runs slots_demand_step to the end; counts requests and cancels; returns the final action. */
static enum slots_action demand_all(struct slots_acct *a, const struct slots_resources *p, int64_t d,
                                    int *req, int *can, struct slots_outcome *last)
{
    struct slots_err err;
    *req = *can = 0;
    for (int i = 0; i < 100000; i++) {
        if (slots_demand_step(a, p, d, last, &err) != SLOTS_OK)
            return (enum slots_action)-1;
        if (last->action == SLOTS_REQUEST)
            (*req)++;
        else if (last->action == SLOTS_CANCEL)
            (*can)++;
        else
            return last->action;
    }
    return (enum slots_action)-1;
}

/* The controller's pass: demand, listing, registration, sweep events, cool-down, recovery. */
static void test_pass(void)
{
    struct slots_err err;
    struct slots_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max = res(2, 4096, NULL, 0);
    cfg.name_prefix = "c-taskmanager-";
    cfg.max_failed_attempts = 3;
    cfg.registration_timeout_s = 60;
    cfg.start_backoff_s = 5;
    cfg.start_backoff_max_s = 15;
    struct slots_acct *a = slots_new(&cfg, &err);
    struct slots_resources p = res(1, 2048, NULL, 0); /* 2 slots per TaskManager */
    struct slots_outcome o;
    struct slots_event ev;
    struct slots_totals t;
    enum slots_verdict v;
    int req, can;
    char name[64];

    slots_begin_pass(a, 1000);
    ok(demand_all(a, &p, 7, &req, &can, &o) == SLOTS_NONE && req == 4 && can == 0 && o.spare == 1,
       "pass: 7 slots at 2 per pod request 4 pods, 1 spare slot");
    slots_begin_pass(a, 1001);
    for (int id = 1; id <= 4; id++) {
        slots_pod_name(a, id, name, sizeof name);
        slots_observe_pod(a, name, 0, SLOTS_PHASE_RUNNING, 1000, &v, &err);
        ok(v == SLOTS_KEEP, "pass: a requested pod listed is kept");
    }
    ok(!slots_sweep(a, -1, &ev), "pass: nothing to sweep when every pod is listed");
    ok(demand_all(a, &p, 7, &req, &can, &o) == SLOTS_NONE && req == 0 && can == 0,
       "pass: the same demand again changes nothing");
    ok(slots_tm_registered(a, "c-taskmanager-1") && !slots_tm_registered(a, "c-taskmanager-1") &&
           !slots_tm_registered(a, "c-taskmanager-9") && !slots_tm_registered(a, "other-1"),
       "pass: tm_registered is true once per pending pod of ours");
    ok(demand_all(a, &p, 3, &req, &can, &o) == SLOTS_NONE && req == 0 && can == 2 && o.spare == 1,
       "pass: demand 7 -> 3 cancels 2 pods, 4 slots for 3");
    slots_totals(a, &t);
    ok(t.pending == 1 && t.registered == 1, "pass: the pending pods went first, the registered one stays");
    ok(demand_all(a, &p, 0, &req, &can, &o) == SLOTS_NONE && can == 2, "pass: demand 0 cancels all");
    ok(demand_all(a, &p, 4, &req, &can, &o) == SLOTS_NONE && req == 2, "pass: demand 4 requests 2 again");

    /* ids 5 and 6 requested in pass 2; pass 3 lists only 5: 6 failed to start */
    slots_begin_pass(a, 1010);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_PENDING, 1005, &v, &err);
    slots_observe_pod(a, "c-taskmanager-2", 0, SLOTS_PHASE_RUNNING, 1000, &v, &err);
    ok(v == SLOTS_DELETE_STALE, "pass: a cancelled pod still listed is stale");
    slots_observe_pod(a, "c-taskmanager-x", 0, SLOTS_PHASE_RUNNING, 0, &v, &err);
    ok(v == SLOTS_DELETE_MALFORMED, "pass: a malformed name is deleted");
    slots_observe_pod(a, "c-taskmanager-0", -1, SLOTS_PHASE_RUNNING, 0, &v, &err);
    ok(v == SLOTS_DELETE_MALFORMED, "pass: a malformed priority label is deleted");
    ok(slots_sweep(a, -1, &ev) && ev.kind == SLOTS_EV_START_FAILED && ev.pod_id == 6 && ev.wait_until == 1015 &&
           ev.failed_attempts == 0,
       "pass: a requested pod never listed failed to start: 5 s cool-down, no failed attempt");
    ok(!slots_sweep(a, -1, &ev), "pass: one event only");
    ok(demand_all(a, &p, 4, &req, &can, &o) == SLOTS_WAIT && req == 0 && o.wait_until == 1015,
       "pass: no new pod during the cool-down");
    slots_begin_pass(a, 1015);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_PENDING, 1005, &v, &err);
    ok(demand_all(a, &p, 4, &req, &can, &o) == SLOTS_NONE && req == 1, "pass: after the cool-down a pod is requested");
    ok(o.priority == 0, "pass: the same priority");
    slots_begin_pass(a, 1016);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_PENDING, 1005, &v, &err);
    ok(slots_sweep(a, -1, &ev) && ev.kind == SLOTS_EV_START_FAILED && ev.wait_until == 1026,
       "pass: a second failed start doubles the cool-down (10 s)");
    slots_totals(a, &t);
    ok(t.start_failures == 2 && t.backoff_s == 10, "pass: totals show 2 start failures, backoff 10 s");
    slots_begin_pass(a, 1030);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_PENDING, 1005, &v, &err);
    demand_all(a, &p, 4, &req, &can, &o);
    slots_begin_pass(a, 1031);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_PENDING, 1005, &v, &err);
    slots_sweep(a, -1, &ev);
    ok(ev.wait_until == 1031 + 15, "pass: the cool-down stops doubling at start_backoff_max (15 s)");
    slots_begin_pass(a, 1050);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_PENDING, 1005, &v, &err);
    ok(demand_all(a, &p, 4, &req, &can, &o) == SLOTS_NONE && req == 1, "pass: a pod is requested after the cool-down");
    slots_totals(a, &t);
    ok(t.max_pod_id == 9, "pass: it is pod 9 (ids never reused)");
    slots_begin_pass(a, 1051);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_PENDING, 1005, &v, &err);
    slots_observe_pod(a, "c-taskmanager-9", 0, SLOTS_PHASE_PENDING, 1050, &v, &err);
    slots_totals(a, &t);
    ok(t.start_failures == 0 && t.backoff_s == 0, "pass: a pod seen resets the cool-down");

    /* registration timeout: pod 5 created at 1005, deadline 1065 */
    slots_begin_pass(a, 1070);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_RUNNING, 1005, &v, &err);
    slots_observe_pod(a, "c-taskmanager-9", 0, SLOTS_PHASE_RUNNING, 1050, &v, &err);
    ok(!slots_sweep(a, -1, &ev), "pass: no timeout without a JobManager answer");
    slots_begin_pass(a, 1071);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_RUNNING, 1005, &v, &err);
    slots_observe_pod(a, "c-taskmanager-9", 0, SLOTS_PHASE_RUNNING, 1050, &v, &err);
    ok(!slots_sweep(a, 1060, &ev), "pass: an answer from before the deadline times nobody out");
    slots_begin_pass(a, 1072);
    slots_observe_pod(a, "c-taskmanager-5", 0, SLOTS_PHASE_RUNNING, 1005, &v, &err);
    slots_observe_pod(a, "c-taskmanager-9", 0, SLOTS_PHASE_RUNNING, 1050, &v, &err);
    ok(slots_sweep(a, 1070, &ev) && ev.kind == SLOTS_EV_TIMEOUT && ev.pod_id == 5 && ev.failed_attempts == 1,
       "pass: pod 5 did not register by its deadline: timed out, failed attempts 1");
    ok(!slots_sweep(a, 1070, &ev), "pass: pod 9 (deadline 1110) is not timed out");
    /* pod 9 deleted by someone (seen before, no longer listed) */
    slots_begin_pass(a, 1080);
    slots_observe_pod(a, "c-taskmanager-1", 0, SLOTS_PHASE_RUNNING, 1000, &v, &err);
    ok(slots_sweep(a, -1, &ev) && ev.kind == SLOTS_EV_GONE && ev.pod_id == 9 && ev.failed_attempts == 2,
       "pass: a pod that disappeared counts as failed");
    ok(v == SLOTS_DELETE_STALE, "pass: pod 1 (cancelled earlier) is stale");
    ok(demand_all(a, &p, 4, &req, &can, &o) == SLOTS_NONE && req == 2, "pass: pods 5 and 9 are replaced by demand");
    slots_begin_pass(a, 1081);
    slots_observe_pod(a, "c-taskmanager-10", 0, SLOTS_PHASE_FAILED, 1080, &v, &err);
    ok(v == SLOTS_DELETE_TERMINATED, "pass: a terminated pod is deleted");
    slots_totals(a, &t);
    ok(t.failed_attempts == 3 && t.stopped, "pass: third failure reaches the maximum");
    ok(slots_sweep(a, -1, &ev) && ev.kind == SLOTS_EV_START_FAILED && ev.pod_id == 11,
       "pass: pod 11 never listed: a start failure");
    slots_begin_pass(a, 2000);
    ok(demand_all(a, &p, 4, &req, &can, &o) == SLOTS_STOPPED && req == 0, "pass: stopped: no new pod");
    ok(slots_demand_step(a, &p, -1, &o, &err) == SLOTS_EINVAL, "pass: negative demand is SLOTS_EINVAL");
    slots_free(a);

    /* recovery: pods listed after a restart; terminated ones are counted */
    a = slots_new(&cfg, &err);
    struct slots_resources bound = p;
    struct slots_pod_record recs[3] = {{"c-taskmanager-3", 3, 0, SLOTS_PHASE_PENDING, &bound, 900},
                                       {"c-taskmanager-4", 4, 0, SLOTS_PHASE_PENDING, &bound, 950},
                                       {"c-taskmanager-2", 2, 0, SLOTS_PHASE_FAILED, &bound, 800}};
    slots_begin_pass(a, 1000);
    ok(slots_recover(a, recs, 3, &err) == SLOTS_OK, "recover: with created times");
    slots_totals(a, &t);
    ok(t.failed_attempts == 1 && t.max_pod_id == 4, "recover: a Failed pod counts as a failed attempt");
    ok(demand_all(a, &p, 4, &req, &can, &o) == SLOTS_NONE && req == 0 && can == 0,
       "recover: the recovered pods serve the demand: nothing created");
    struct slots_acct *e = slots_new(&cfg, &err);
    ok(slots_recover(e, NULL, 0, &err) == SLOTS_OK, "recover: no pods at all (a new cluster) is fine");
    ok(slots_add_failed(e, -1, &err) == SLOTS_EINVAL, "add_failed: a negative count is SLOTS_EINVAL");
    slots_add_failed(e, 2, &err);
    slots_add_failed(e, 2147483647, &err);
    slots_totals(e, &t);
    ok(t.failed_attempts == 2147483647 && t.stopped, "add_failed: carried over, saturating at INT_MAX");
    slots_free(e);
    struct slots_pod_record bad = {NULL, 1, 0, SLOTS_PHASE_RUNNING, NULL, -5};
    struct slots_acct *b = slots_new(&cfg, &err);
    ok(slots_recover(b, &bad, 1, &err) == SLOTS_EINVAL, "recover: a negative created time is SLOTS_EINVAL");
    slots_free(b);
    slots_free(a);
}

int main(void)
{
    test_pass();
    test_per_taskmanager();
    test_config();
    test_churn();
    test_allocator();
    printf("1..%d\n", n_test);
    return n_fail ? 1 : 0;
}
