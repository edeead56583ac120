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

    struct slots_pod_record rec = {NULL, 1, 0, (enum slots_phase)99, NULL};
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
            struct slots_pod_record recs[2] = {{NULL, 4, 0, SLOTS_PHASE_RUNNING, NULL},
                                               {NULL, 5, 1, SLOTS_PHASE_PENDING, NULL}};
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

int main(void)
{
    test_per_taskmanager();
    test_config();
    test_churn();
    test_allocator();
    printf("1..%d\n", n_test);
    return n_fail ? 1 : 0;
}
