/*
 * Benchmark of core/slots hot paths: priority lookup, start/cancel across many profiles, pod
 * add/remove churn and the slot rule.  Prints ns/op per case.  Run with `make bench`.
 * Usage: slots_bench [profiles]   (default 1000)
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

static void report(const char *name, long ops, double ns)
{
    printf("%-44s %9ld ops %9.1f ns/op\n", name, ops, ns / (double)ops);
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
    return 0;
}
