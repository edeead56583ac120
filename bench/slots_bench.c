/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark of core/slots hot paths: priority lookup, start/cancel across many profiles, pod
 * add/remove churn and the slot rule; then the controller's accounting at scale: CLUSTERS
 * accountings of WORKERS TaskManagers each (default 10,000 x 100, issue 10 item 5): start/cancel
 * operations per second on one core, a whole pass (begin, observe every pod, sweep, demand) per
 * pod, and the bytes each worker costs (a counting allocator).  Prints ns/op per case.
 * Run with `make bench`.
 * Usage: slots_bench [profiles [clusters [workers]]]   (default 1000 10000 100)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slots.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static const char *const EXT[] = {"nvidia.com/gpu", "example.com/fpga", "ephemeral-storage-mib"};

/* Profile i: distinct cpu/memory, two extended resources (names in mixed case on odd i). */
static struct slots_resources profile(int i)
{
    struct slots_resources r;
    memset(&r, 0, sizeof r);
    r.cpu_cores = 0.25 + (double)(i % 16) * 0.125;
    r.memory_mib = 512 + i;
    r.n_extended = 2;
    r.extended[0].name = (i & 1) ? "NVIDIA.com/GPU" : EXT[0];
    r.extended[0].name_len = strlen(r.extended[0].name);
    r.extended[0].amount = 1 + i % 2;
    r.extended[1].name = EXT[1 + i % 2];
    r.extended[1].name_len = strlen(r.extended[1].name);
    r.extended[1].amount = 1;
    return r;
}

static volatile long sink;

/* Counting allocator (lua_Alloc contract): the bytes the accountings hold. */
static long live_bytes;
static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    if (nsize == 0) {
        if (ptr)
            live_bytes -= (long)osize;
        free(ptr);
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p)
        live_bytes += (long)nsize - (ptr ? (long)osize : 0);
    return p;
}

static void report(const char *name, long ops, double ns)
{
    printf("%-44s %9ld ops %9.1f ns/op\n", name, ops, ns / (double)ops);
}

/* The controller's accounting at scale: `nc` clusters of `nw` workers (1 slot each). */
static int clusters_bench(long nc, long nw)
{
    if (nc < 1 || nw < 1 || nw > SLOTS_PODS_LIMIT / 2) {
        fprintf(stderr, "clusters and workers must be >= 1 (workers <= %d)\n", SLOTS_PODS_LIMIT / 2);
        return 2;
    }
    struct slots_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max.cpu_cores = 4;
    cfg.max.memory_mib = 16384;
    cfg.max.n_extended = 1;
    cfg.max.extended[0] = (struct slots_extended){"nvidia.com/gpu", 14, 1};
    cfg.name_prefix = "wordcount-taskmanager-";
    cfg.max_pods = (int)(nw * 2);
    cfg.registration_timeout_s = 300;
    cfg.alloc = count_alloc;
    struct slots_resources p;
    memset(&p, 0, sizeof p);
    p.cpu_cores = 4;            /* one slot per TaskManager: a worker is a pod */
    p.memory_mib = 8192;
    p.n_extended = 1;
    p.extended[0] = (struct slots_extended){"nvidia.com/gpu", 14, 1};
    struct slots_acct **as = calloc((size_t)nc, sizeof *as);
    struct slots_err err;
    struct slots_outcome o;
    if (!as)
        return 1;
    printf("accounting at scale: %ld clusters x %ld workers\n", nc, nw);
    long before = live_bytes;
    double t0 = now_ns();
    for (long c = 0; c < nc; c++) {
        if (!(as[c] = slots_new(&cfg, &err))) {
            fprintf(stderr, "slots_new: %s\n", err.msg);
            return 1;
        }
        slots_begin_pass(as[c], 1000);
        for (long w = 0; w < nw; w++)
            if (slots_start_worker(as[c], &p, &o, &err) != SLOTS_OK || o.action != SLOTS_REQUEST) {
                fprintf(stderr, "start_worker: %s\n", err.msg);
                return 1;
            }
    }
    double dt = now_ns() - t0;
    report("new + start_worker to the workers", nc * nw, dt);
    printf("%-44s %9.1f bytes/worker (%.1f MiB in all)\n", "memory held", (double)(live_bytes - before) / (double)(nc * nw),
           (double)(live_bytes - before) / 1048576.0);

    /* start then cancel one worker, clusters round robin (each op touches another accounting) */
    long ops = 4000000;
    t0 = now_ns();
    for (long k = 0; k < ops / 2; k++) {
        struct slots_acct *a = as[(k * 7919) % nc];
        if (slots_start_worker(a, &p, &o, &err) != SLOTS_OK || slots_cancel_worker(a, &p, &o, &err) != SLOTS_OK) {
            fprintf(stderr, "start/cancel: %s\n", err.msg);
            return 1;
        }
    }
    dt = now_ns() - t0;
    report("start_worker / cancel_worker, each on another", ops, dt);
    printf("%-44s %9.2f M ops/s\n", "", (double)ops / dt * 1e3);

    /* the same operations as a pass does them: a run of 100 on one cluster, then the next */
    t0 = now_ns();
    for (long k = 0; k < ops / 200; k++) {
        struct slots_acct *a = as[(k * 7919) % nc];
        for (int r = 0; r < 100; r++)
            if (slots_start_worker(a, &p, &o, &err) != SLOTS_OK || slots_cancel_worker(a, &p, &o, &err) != SLOTS_OK) {
                fprintf(stderr, "start/cancel: %s\n", err.msg);
                return 1;
            }
    }
    dt = now_ns() - t0;
    report("start_worker / cancel_worker, 100 per cluster", ops, dt);
    printf("%-44s %9.2f M ops/s\n", "", (double)ops / dt * 1e3);

    /* whole passes: every pod listed and registered, nothing to do (the steady state) */
    char name[64];
    enum slots_verdict v;
    struct slots_event ev;
    long passes = nc < 1000 ? nc : 1000;
    int64_t *pids = malloc(sizeof *pids * (size_t)nw * (size_t)passes);
    if (!pids)
        return 1;
    for (long c = 0; c < passes; c++)
        if (slots_pending_ids(as[c], 0, pids + c * nw, (int)nw) != nw) {
            fprintf(stderr, "cluster %ld: not %ld pending pods\n", c, nw);
            return 1;
        }
    t0 = now_ns();
    for (long c = 0; c < passes; c++) {
        struct slots_acct *a = as[c];
        slots_begin_pass(a, 1001);
        for (long w = 0; w < nw; w++) {
            slots_pod_name(a, pids[c * nw + w], name, sizeof name);
            slots_observe_pod(a, name, 0, SLOTS_PHASE_RUNNING, 1000, &v, &err);
            slots_tm_registered(a, name);
        }
        while (slots_sweep(a, 1001, &ev))
            sink++;
        if (slots_demand_step(a, &p, nw, &o, &err) != SLOTS_OK || o.action != SLOTS_NONE) {
            fprintf(stderr, "demand_step: %s (action %d)\n", err.msg, o.action);
            return 1;
        }
    }
    dt = now_ns() - t0;
    report("pass (observe + registered + sweep + demand)", passes * nw, dt);
    printf("%-44s %9.1f us per cluster of %ld\n", "", dt / (double)passes / 1e3, nw);
    for (long c = 0; c < nc; c++)
        slots_free(as[c]);
    free(as);
    free(pids);
    return 0;
}

int main(int argc, char **argv)
{
    int nprof = argc > 1 ? atoi(argv[1]) : 1000;
    if (nprof < 1 || nprof > SLOTS_PROFILES_LIMIT) {
        fprintf(stderr, "profiles must be 1..%d\n", SLOTS_PROFILES_LIMIT);
        return 2;
    }
    struct slots_resources *profs = calloc((size_t)nprof, sizeof *profs);
    if (!profs)
        return 1;
    for (int i = 0; i < nprof; i++)
        profs[i] = profile(i);

    struct slots_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max.cpu_cores = 16;
    cfg.max.memory_mib = 65536;
    cfg.max.n_extended = 1;
    cfg.max.extended[0] = (struct slots_extended){"nvidia.com/gpu", 14, 4};
    cfg.max_profiles = nprof;
    cfg.max_pods = SLOTS_PODS_LIMIT;
    cfg.name_prefix = "bench-taskmanager-";
    struct slots_err err;
    struct slots_acct *a = slots_new(&cfg, &err);
    if (!a) {
        fprintf(stderr, "slots_new: %s\n", err.msg);
        return 1;
    }
    printf("slots bench: %d profiles\n", nprof);

    /* assign every priority once */
    int prio, slots;
    double t0 = now_ns();
    for (int i = 0; i < nprof; i++)
        if (slots_priority(a, &profs[i], &prio, &slots, &err) != SLOTS_OK) {
            fprintf(stderr, "priority: %s\n", err.msg);
            return 1;
        }
    report("priority: assign new", nprof, now_ns() - t0);

    long ops = 2000000;
    t0 = now_ns();
    for (long k = 0; k < ops; k++) {
        slots_priority(a, &profs[k % nprof], &prio, &slots, &err);
        sink += prio;
    }
    report("priority: lookup existing", ops, now_ns() - t0);

    t0 = now_ns();
    for (long k = 0; k < ops; k++) {
        slots_per_taskmanager(&profs[k % nprof], &cfg.max, &slots, &err);
        sink += slots;
    }
    report("per_taskmanager", ops, now_ns() - t0);

    /* start then cancel one slot per profile, round robin: pods are requested and cancelled */
    struct slots_outcome o;
    ops = 1000000;
    t0 = now_ns();
    for (long k = 0; k < ops; k++) {
        const struct slots_resources *r = &profs[k % nprof];
        if (slots_start_worker(a, r, &o, &err) != SLOTS_OK ||
            slots_cancel_worker(a, r, &o, &err) != SLOTS_OK) {
            fprintf(stderr, "start/cancel: %s\n", err.msg);
            return 1;
        }
    }
    report("start_worker + cancel_worker (pair)", ops, now_ns() - t0);

    /* build up 100000 pending pods across profiles, then register and remove them */
    long npods = 100000;
    int64_t *ids = malloc(sizeof *ids * (size_t)npods);
    int *prios = malloc(sizeof *prios * (size_t)npods);
    long got = 0;
    t0 = now_ns();
    for (long k = 0; got < npods; k++) {
        if (slots_start_worker(a, &profs[k % nprof], &o, &err) != SLOTS_OK) {
            fprintf(stderr, "start: %s\n", err.msg);
            return 1;
        }
        if (o.action == SLOTS_REQUEST) {
            ids[got] = o.pod_id;
            prios[got++] = o.priority;
        }
    }
    report("start_worker up to 100000 pending pods", got, now_ns() - t0);

    char name[64];
    enum slots_added ad;
    t0 = now_ns();
    for (long k = 0; k < npods; k++) {
        slots_pod_name(a, ids[k], name, sizeof name);
        slots_pod_added(a, name, prios[k], &ad, &err);
        sink += ad;
    }
    report("pod_added (pending -> registered)", npods, now_ns() - t0);

    struct slots_removal rm;
    t0 = now_ns();
    for (long k = 0; k < npods; k++) {
        slots_pod_name(a, ids[k], name, sizeof name);
        slots_pod_removed(a, name, false, &rm, &err);
        sink += rm.removed;
    }
    report("pod_removed", npods, now_ns() - t0);

    struct slots_totals tot;
    slots_totals(a, &tot);
    printf("end state: %d priorities, %d pending, %d registered, max pod id %lld\n", tot.profiles,
           tot.pending, tot.registered, (long long)tot.max_pod_id);
    slots_free(a);
    free(ids);
    free(prios);
    free(profs);
    return clusters_bench(argc > 2 ? atol(argv[2]) : 10000, argc > 3 ? atol(argv[3]) : 100);
}
