/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slots: TaskManager slot accounting.  See slots.h for the rules and their sources.
 *
 * Layout: `profs` is an array of priorities in ascending priority order (new priorities are
 * always the largest so far, recovery sorts), found by binary search; `ptab` is an
 * open-addressing index from a profile hash to a bound priority; pods live in a slab with a
 * free list, indexed by id in an open-addressing map (linear probing, backward-shift delete);
 * each priority's pending pods form a FIFO threaded through the slab.
 */
#include "slots.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RATIO_TOLERANCE 1e-9

enum pod_state { POD_FREE = 0, POD_PENDING, POD_REGISTERED };

struct pod {
    int64_t id;
    double deadline;    /* registration deadline (unix s) while pending; 0: none */
    uint32_t mark;      /* the pass that last listed (or requested) it */
    uint32_t req_pass;  /* the pass that requested it (0: recovered) */
    int32_t prof;       /* index into profs */
    int32_t prev, next; /* pending FIFO links, or free-list link in `next` */
    uint8_t state;
    uint8_t seen;       /* listed by some pass (or recovered) */
};

struct prof {
    int priority;
    int slots;
    int spare;
    int pending;
    int registered;
    bool bound;
    int32_t head, tail;           /* pending FIFO (slab indices), -1 when empty */
    uint64_t hash;
    struct slots_resources res;   /* names point into `names` */
    char *names;
    size_t names_size;
};

struct slots_acct {
    slots_alloc_fn alloc;
    void *alloc_ud;
    struct slots_resources max;   /* canonical, names lowercased in max_names */
    char *max_names;
    size_t max_names_size;
    char prefix[SLOTS_PREFIX_MAX + 1];
    size_t prefix_len;
    int max_failed;
    int max_profiles;
    int max_pods;

    struct prof *profs;
    int nprofs, cap_profs;
    int32_t *ptab;                /* profile hash index: prof index + 1, 0 = empty */
    size_t ptab_cap;              /* power of two */

    struct pod *pods;
    int32_t cap_pods, free_pod, npods;
    int64_t *pmap_keys;           /* id map: key, slab index + 1 in pmap_vals (0 = empty) */
    int32_t *pmap_vals;
    size_t pmap_cap;

    int next_priority;
    int64_t max_pod_id;
    int failed;
    int pending_total, registered_total;

    /* the controller's pass */
    double timeout, backoff_first, backoff_max;
    double now;           /* slots_begin_pass */
    uint32_t pass;
    int32_t sweep;        /* next slab index slots_sweep looks at */
    double backoff;       /* the last cool-down (0: none) */
    int last_prof;        /* profile index lookup found last (-1: none), see same_as_last */
    double wait_until;
    int start_failures;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static void set_err(struct slots_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct slots_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

static void *mem_get(slots_alloc_fn f, void *ud, size_t n)
{
    void *p = f(ud, NULL, 0, n);
    if (p)
        memset(p, 0, n);
    return p;
}

static void mem_put(slots_alloc_fn f, void *ud, void *p, size_t n)
{
    if (p)
        f(ud, p, n, 0);
}

static unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static int ci_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = lower((unsigned char)a[i]), y = lower((unsigned char)b[i]);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return al == bl ? 0 : (al < bl ? -1 : 1);
}

static bool is_floating(const struct slots_extended *e)
{
    return ci_cmp(e->name, e->name_len, SLOTS_FLOATING_MEMORY, strlen(SLOTS_FLOATING_MEMORY)) == 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* ---- resource shapes --------------------------------------------------------------------- */

enum slots_status slots_check(const struct slots_resources *r, struct slots_err *err)
{
    if (!r) {
        set_err(err, "no resources");
        return SLOTS_EINVAL;
    }
    if (!isfinite(r->cpu_cores) || r->cpu_cores < 0) {
        set_err(err, "cpu_cores must be a finite number >= 0, got %g", r->cpu_cores);
        return SLOTS_EINVAL;
    }
    if (r->memory_mib < 0) {
        set_err(err, "memory_mib must be >= 0, got %lld", (long long)r->memory_mib);
        return SLOTS_EINVAL;
    }
    if (r->n_extended > SLOTS_MAX_EXTENDED) {
        set_err(err, "at most %d extended resources, got %zu", SLOTS_MAX_EXTENDED, r->n_extended);
        return SLOTS_EINVAL;
    }
    for (size_t i = 0; i < r->n_extended; i++) {
        const struct slots_extended *e = &r->extended[i];
        if (!e->name || e->name_len == 0 || e->name_len > SLOTS_NAME_MAX) {
            set_err(err, "extended resource name must be 1..%d bytes", SLOTS_NAME_MAX);
            return SLOTS_EINVAL;
        }
        for (size_t k = 0; k < e->name_len; k++) {
            unsigned char c = (unsigned char)e->name[k];
            if (c <= 0x20 || c >= 0x7f) {
                set_err(err, "extended resource name has a byte 0x%02x that is not printable ASCII", c);
                return SLOTS_EINVAL;
            }
        }
        if (!isfinite(e->amount) || e->amount < 0) {
            set_err(err, "extended resource '%.*s' must be a finite number >= 0, got %g",
                    (int)(e->name_len > 64 ? 64 : e->name_len), e->name, e->amount);
            return SLOTS_EINVAL;
        }
        for (size_t k = 0; k < i; k++) {
            if (ci_cmp(e->name, e->name_len, r->extended[k].name, r->extended[k].name_len) == 0) {
                set_err(err, "extended resource '%.*s' given twice (names ignore case)",
                        (int)(e->name_len > 64 ? 64 : e->name_len), e->name);
                return SLOTS_EINVAL;
            }
        }
    }
    return SLOTS_OK;
}

/* Canonical form of a checked shape: zero amounts dropped, names sorted ignoring case, -0 -> 0. */
static void canon(const struct slots_resources *in, struct slots_resources *out)
{
    out->cpu_cores = in->cpu_cores == 0 ? 0.0 : in->cpu_cores;
    out->memory_mib = in->memory_mib;
    out->n_extended = 0;
    for (size_t i = 0; i < in->n_extended; i++) {
        if (in->extended[i].amount == 0)
            continue;
        size_t j = out->n_extended++;
        while (j > 0 && ci_cmp(in->extended[i].name, in->extended[i].name_len,
                               out->extended[j - 1].name, out->extended[j - 1].name_len) < 0) {
            out->extended[j] = out->extended[j - 1];
            j--;
        }
        out->extended[j] = in->extended[i];
    }
}

static uint64_t canon_hash(const struct slots_resources *c)
{
    uint64_t h = 14695981039346656037ULL;
    h = fnv(h, &c->cpu_cores, sizeof c->cpu_cores);
    h = fnv(h, &c->memory_mib, sizeof c->memory_mib);
    for (size_t i = 0; i < c->n_extended; i++) {
        for (size_t k = 0; k < c->extended[i].name_len; k++) {
            unsigned char b = lower((unsigned char)c->extended[i].name[k]);
            h = fnv(h, &b, 1);
        }
        unsigned char sep = 0;
        h = fnv(h, &sep, 1);
        h = fnv(h, &c->extended[i].amount, sizeof c->extended[i].amount);
    }
    return h;
}

static bool canon_equal(const struct slots_resources *a, const struct slots_resources *b)
{
    if (a->cpu_cores != b->cpu_cores || a->memory_mib != b->memory_mib ||
        a->n_extended != b->n_extended)
        return false;
    for (size_t i = 0; i < a->n_extended; i++) {
        if (a->extended[i].amount != b->extended[i].amount ||
            ci_cmp(a->extended[i].name, a->extended[i].name_len,
                   b->extended[i].name, b->extended[i].name_len) != 0)
            return false;
    }
    return true;
}

static int ratio_floor(double max, double req)
{
    double r = max / req;
    if (r >= SLOTS_MAX_PER_TM)
        return SLOTS_MAX_PER_TM;
    return (int)(r + RATIO_TOLERANCE);
}

/* The slot rule on checked shapes (canonical or not). */
static int per_tm(const struct slots_resources *p, const struct slots_resources *m)
{
    if (p->cpu_cores <= 0 || p->memory_mib <= 0)
        return 1;
    if (p->cpu_cores > m->cpu_cores || p->memory_mib > m->memory_mib)
        return 1;
    int slots = ratio_floor(m->cpu_cores, p->cpu_cores);
    int64_t by_mem = m->memory_mib / p->memory_mib;
    if (by_mem < slots)
        slots = (int)by_mem;
    for (size_t i = 0; i < p->n_extended; i++) {
        const struct slots_extended *e = &p->extended[i];
        if (e->amount == 0 || is_floating(e))
            continue;
        for (size_t k = 0; k < m->n_extended; k++) {
            const struct slots_extended *lim = &m->extended[k];
            if (ci_cmp(e->name, e->name_len, lim->name, lim->name_len) != 0)
                continue;
            if (e->amount > lim->amount)
                return 1;
            int n = ratio_floor(lim->amount, e->amount);
            if (n < slots)
                slots = n;
            break;
        }
    }
    return slots < 1 ? 1 : slots;
}

enum slots_status slots_per_taskmanager(const struct slots_resources *profile,
                                        const struct slots_resources *max, int *out,
                                        struct slots_err *err)
{
    struct slots_err e2;
    if (slots_check(profile, err) != SLOTS_OK)
        return SLOTS_EINVAL;
    if (slots_check(max, &e2) != SLOTS_OK) {
        set_err(err, "max: %s", e2.msg);
        return SLOTS_EINVAL;
    }
    *out = per_tm(profile, max);
    return SLOTS_OK;
}

/* Copies a canonical shape with lowercased names into one owned buffer. */
static enum slots_status copy_shape(slots_alloc_fn f, void *ud, const struct slots_resources *c,
                                    struct slots_resources *dst, char **buf, size_t *bufsize)
{
    size_t total = 0;
    for (size_t i = 0; i < c->n_extended; i++)
        total += c->extended[i].name_len + 1;
    char *b = NULL;
    if (total) {
        b = mem_get(f, ud, total);
        if (!b)
            return SLOTS_ENOMEM;
    }
    *dst = *c;
    size_t off = 0;
    for (size_t i = 0; i < c->n_extended; i++) {
        for (size_t k = 0; k < c->extended[i].name_len; k++)
            b[off + k] = (char)lower((unsigned char)c->extended[i].name[k]);
        b[off + c->extended[i].name_len] = 0;
        dst->extended[i].name = b + off;
        off += c->extended[i].name_len + 1;
    }
    *buf = b;
    *bufsize = total;
    return SLOTS_OK;
}

/* ---- accounting: lifecycle ---------------------------------------------------------------- */

static bool prefix_ok(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return false;
    }
    return true;
}

struct slots_acct *slots_new(const struct slots_config *cfg, struct slots_err *err)
{
    struct slots_err e2;
    if (!cfg) {
        set_err(err, "no config");
        return NULL;
    }
    if (slots_check(&cfg->max, &e2) != SLOTS_OK) {
        set_err(err, "max: %s", e2.msg);
        return NULL;
    }
    int max_failed = cfg->max_failed_attempts ? cfg->max_failed_attempts : SLOTS_FAILED_DEFAULT;
    if (max_failed < 1) {
        set_err(err, "max_failed_attempts must be >= 1, got %d", cfg->max_failed_attempts);
        return NULL;
    }
    int max_profiles = cfg->max_profiles ? cfg->max_profiles : SLOTS_PROFILES_DEFAULT;
    if (max_profiles < 1 || max_profiles > SLOTS_PROFILES_LIMIT) {
        set_err(err, "max_profiles must be 1..%d, got %d", SLOTS_PROFILES_LIMIT, cfg->max_profiles);
        return NULL;
    }
    if (!(cfg->registration_timeout_s >= 0 && cfg->registration_timeout_s < 1e9) ||
        !(cfg->start_backoff_s >= 0 && cfg->start_backoff_s < 1e9) ||
        !(cfg->start_backoff_max_s >= 0 && cfg->start_backoff_max_s < 1e9)) {
        set_err(err, "registration_timeout_s, start_backoff_s and start_backoff_max_s must be 0..1e9");
        return NULL;
    }
    int max_pods = cfg->max_pods ? cfg->max_pods : SLOTS_PODS_DEFAULT;
    if (max_pods < 1 || max_pods > SLOTS_PODS_LIMIT) {
        set_err(err, "max_pods must be 1..%d, got %d", SLOTS_PODS_LIMIT, cfg->max_pods);
        return NULL;
    }
    const char *prefix = cfg->name_prefix ? cfg->name_prefix : "taskmanager-";
    size_t plen = strnlen(prefix, SLOTS_PREFIX_MAX + 1);
    if (plen > SLOTS_PREFIX_MAX || !prefix_ok(prefix, plen)) {
        set_err(err, "name_prefix must be at most %d of [a-z0-9.-]", SLOTS_PREFIX_MAX);
        return NULL;
    }
    slots_alloc_fn f = cfg->alloc ? cfg->alloc : default_alloc;
    struct slots_acct *a = mem_get(f, cfg->alloc_ud, sizeof *a);
    if (!a) {
        set_err(err, "out of memory");
        return NULL;
    }
    a->alloc = f;
    a->alloc_ud = cfg->alloc_ud;
    struct slots_resources c;
    canon(&cfg->max, &c);
    if (copy_shape(f, a->alloc_ud, &c, &a->max, &a->max_names, &a->max_names_size) != SLOTS_OK) {
        mem_put(f, a->alloc_ud, a, sizeof *a);
        set_err(err, "out of memory");
        return NULL;
    }
    memcpy(a->prefix, prefix, plen);
    a->prefix[plen] = 0;
    a->prefix_len = plen;
    a->max_failed = max_failed;
    a->max_profiles = max_profiles;
    a->max_pods = max_pods;
    a->free_pod = -1;
    a->last_prof = -1;
    a->timeout = cfg->registration_timeout_s;
    a->backoff_first = cfg->start_backoff_s > 0 ? cfg->start_backoff_s : 5;
    a->backoff_max = cfg->start_backoff_max_s > 0 ? cfg->start_backoff_max_s : 300;
    if (a->backoff_max < a->backoff_first)
        a->backoff_max = a->backoff_first;
    return a;
}

/* Frees what the accounting holds besides the struct and its config. */
static void release_state(struct slots_acct *a)
{
    for (int i = 0; i < a->nprofs; i++)
        mem_put(a->alloc, a->alloc_ud, a->profs[i].names, a->profs[i].names_size);
    mem_put(a->alloc, a->alloc_ud, a->profs, sizeof *a->profs * (size_t)a->cap_profs);
    mem_put(a->alloc, a->alloc_ud, a->ptab, sizeof *a->ptab * a->ptab_cap);
    mem_put(a->alloc, a->alloc_ud, a->pods, sizeof *a->pods * (size_t)a->cap_pods);
    mem_put(a->alloc, a->alloc_ud, a->pmap_keys, sizeof *a->pmap_keys * a->pmap_cap);
    mem_put(a->alloc, a->alloc_ud, a->pmap_vals, sizeof *a->pmap_vals * a->pmap_cap);
}

void slots_free(struct slots_acct *a)
{
    if (!a)
        return;
    release_state(a);
    mem_put(a->alloc, a->alloc_ud, a->max_names, a->max_names_size);
    mem_put(a->alloc, a->alloc_ud, a, sizeof *a);
}

/* ---- priorities --------------------------------------------------------------------------- */

static int prof_index(const struct slots_acct *a, int prio)
{
    int lo = 0, hi = a->nprofs - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int p = a->profs[mid].priority;
        if (p == prio)
            return mid;
        if (p < prio)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int ptab_find(const struct slots_acct *a, const struct slots_resources *c, uint64_t h)
{
    if (!a->ptab_cap)
        return -1;
    size_t mask = a->ptab_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        int32_t v = a->ptab[i];
        if (v == 0)
            return -1;
        const struct prof *p = &a->profs[v - 1];
        if (p->hash == h && canon_equal(&p->res, c))
            return v - 1;
    }
}

static void ptab_put(struct slots_acct *a, int idx)
{
    size_t mask = a->ptab_cap - 1;
    size_t i = (size_t)a->profs[idx].hash & mask;
    while (a->ptab[i] != 0)
        i = (i + 1) & mask;
    a->ptab[i] = idx + 1;
}

/* Room for one more priority: profs array and a hash index at most half full. */
static enum slots_status reserve_prof(struct slots_acct *a, struct slots_err *err)
{
    if (a->nprofs >= a->max_profiles) {
        set_err(err, "too many distinct TaskManager resources (max_profiles %d)", a->max_profiles);
        return SLOTS_ELIMIT;
    }
    if (a->nprofs == a->cap_profs) {
        int ncap = a->cap_profs ? a->cap_profs * 2 : 8;
        if (ncap > a->max_profiles)
            ncap = a->max_profiles;
        struct prof *np = a->alloc(a->alloc_ud, a->profs, sizeof *np * (size_t)a->cap_profs,
                                   sizeof *np * (size_t)ncap);
        if (!np) {
            set_err(err, "out of memory");
            return SLOTS_ENOMEM;
        }
        a->profs = np;
        a->cap_profs = ncap;
    }
    if ((size_t)(a->nprofs + 1) * 2 > a->ptab_cap) {
        size_t ncap = a->ptab_cap ? a->ptab_cap * 2 : 16;
        int32_t *nt = mem_get(a->alloc, a->alloc_ud, sizeof *nt * ncap);
        if (!nt) {
            set_err(err, "out of memory");
            return SLOTS_ENOMEM;
        }
        mem_put(a->alloc, a->alloc_ud, a->ptab, sizeof *a->ptab * a->ptab_cap);
        a->ptab = nt;
        a->ptab_cap = ncap;
        for (int i = 0; i < a->nprofs; i++)
            if (a->profs[i].bound)
                ptab_put(a, i);
    }
    return SLOTS_OK;
}

static void prof_init(struct prof *p, int prio)
{
    memset(p, 0, sizeof *p);
    p->priority = prio;
    p->slots = 1;
    p->head = p->tail = -1;
}

/* Binds prof idx to the canonical shape c (hash h). */
static enum slots_status prof_bind(struct slots_acct *a, int idx, const struct slots_resources *c,
                                   uint64_t h, struct slots_err *err)
{
    struct prof *p = &a->profs[idx];
    if (copy_shape(a->alloc, a->alloc_ud, c, &p->res, &p->names, &p->names_size) != SLOTS_OK) {
        set_err(err, "out of memory");
        return SLOTS_ENOMEM;
    }
    p->hash = h;
    p->bound = true;
    p->slots = per_tm(&p->res, &a->max);
    ptab_put(a, idx);
    return SLOTS_OK;
}

/* Priority index for a checked profile; assigns one when `assign`.  -1 when not found. */
static enum slots_status lookup_slow(struct slots_acct *a, const struct slots_resources *profile,
                                     bool assign, int *idx, struct slots_err *err);

/* The fast path of lookup: `profile` is exactly (same order, same bytes) the canonical resource
 * of the profile found last, the common case of a caller asking for one profile again and again. */
static bool same_as_last(const struct slots_acct *a, const struct slots_resources *in)
{
    if (a->last_prof < 0 || a->last_prof >= a->nprofs)
        return false;
    const struct slots_resources *c = &a->profs[a->last_prof].res;
    if (!a->profs[a->last_prof].bound || in->cpu_cores != c->cpu_cores || in->memory_mib != c->memory_mib ||
        in->n_extended != c->n_extended)
        return false;
    for (size_t i = 0; i < in->n_extended; i++)
        if (in->extended[i].amount != c->extended[i].amount || in->extended[i].name_len != c->extended[i].name_len ||
            memcmp(in->extended[i].name, c->extended[i].name, c->extended[i].name_len) != 0)
            return false;
    return true;
}

static enum slots_status lookup(struct slots_acct *a, const struct slots_resources *profile,
                                bool assign, int *idx, struct slots_err *err)
{
    if (profile && same_as_last(a, profile)) {
        *idx = a->last_prof;
        return SLOTS_OK;
    }
    enum slots_status st = lookup_slow(a, profile, assign, idx, err);
    if (st == SLOTS_OK && *idx >= 0)
        a->last_prof = *idx;
    return st;
}

static enum slots_status lookup_slow(struct slots_acct *a, const struct slots_resources *profile,
                                     bool assign, int *idx, struct slots_err *err)
{
    enum slots_status st = slots_check(profile, err);
    if (st != SLOTS_OK)
        return st;
    struct slots_resources c;
    canon(profile, &c);
    uint64_t h = canon_hash(&c);
    *idx = ptab_find(a, &c, h);
    if (*idx >= 0 || !assign)
        return SLOTS_OK;
    if (a->next_priority > SLOTS_MAX_PRIORITY) {
        set_err(err, "priorities exhausted");
        return SLOTS_ELIMIT;
    }
    st = reserve_prof(a, err);
    if (st != SLOTS_OK)
        return st;
    int i = a->nprofs;
    prof_init(&a->profs[i], a->next_priority);
    st = prof_bind(a, i, &c, h, err);
    if (st != SLOTS_OK)
        return st;
    a->nprofs++;
    a->next_priority++;
    *idx = i;
    return SLOTS_OK;
}

enum slots_status slots_priority(struct slots_acct *a, const struct slots_resources *profile,
                                 int *prio, int *slots, struct slots_err *err)
{
    int idx;
    enum slots_status st = lookup(a, profile, true, &idx, err);
    if (st != SLOTS_OK)
        return st;
    *prio = a->profs[idx].priority;
    if (slots)
        *slots = a->profs[idx].slots;
    return SLOTS_OK;
}

enum slots_status slots_find_priority(struct slots_acct *a, const struct slots_resources *profile,
                                      int *prio, struct slots_err *err)
{
    int idx;
    enum slots_status st = lookup(a, profile, false, &idx, err);
    if (st != SLOTS_OK)
        return st;
    if (idx < 0) {
        set_err(err, "no priority for this resource");
        return SLOTS_ENOENT;
    }
    *prio = a->profs[idx].priority;
    return SLOTS_OK;
}

const struct slots_resources *slots_resource_of(const struct slots_acct *a, int prio)
{
    int i = prof_index(a, prio);
    if (i < 0 || !a->profs[i].bound)
        return NULL;
    return &a->profs[i].res;
}

/* ---- pods: slab + id map ------------------------------------------------------------------ */

static size_t id_slot(int64_t id, size_t mask)
{
    uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15ULL;
    return (size_t)(x >> 17) & mask;
}

static int32_t pmap_get(const struct slots_acct *a, int64_t id)
{
    if (!a->pmap_cap)
        return -1;
    size_t mask = a->pmap_cap - 1;
    for (size_t i = id_slot(id, mask);; i = (i + 1) & mask) {
        if (a->pmap_vals[i] == 0)
            return -1;
        if (a->pmap_keys[i] == id)
            return a->pmap_vals[i] - 1;
    }
}

static void pmap_put(struct slots_acct *a, int64_t id, int32_t v)
{
    size_t mask = a->pmap_cap - 1;
    size_t i = id_slot(id, mask);
    while (a->pmap_vals[i] != 0)
        i = (i + 1) & mask;
    a->pmap_keys[i] = id;
    a->pmap_vals[i] = v + 1;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void pmap_del(struct slots_acct *a, int64_t id)
{
    size_t mask = a->pmap_cap - 1;
    size_t i = id_slot(id, mask);
    while (a->pmap_vals[i] != 0 && a->pmap_keys[i] != id)
        i = (i + 1) & mask;
    if (a->pmap_vals[i] == 0)
        return;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (a->pmap_vals[j] == 0)
            break;
        size_t home = id_slot(a->pmap_keys[j], mask);
        /* move j into the hole i unless its home lies cyclically in (i, j] */
        bool stays = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        a->pmap_keys[i] = a->pmap_keys[j];
        a->pmap_vals[i] = a->pmap_vals[j];
        i = j;
    }
    a->pmap_vals[i] = 0;
}

/* Room for one more pod: a slab slot and an id map at most half full. */
static enum slots_status reserve_pod(struct slots_acct *a, struct slots_err *err)
{
    if (a->npods >= a->max_pods) {
        set_err(err, "too many pods (max_pods %d)", a->max_pods);
        return SLOTS_ELIMIT;
    }
    if (a->free_pod < 0) {
        int32_t ncap = a->cap_pods ? a->cap_pods * 2 : 16;
        if (ncap > a->max_pods)
            ncap = a->max_pods;
        struct pod *np = a->alloc(a->alloc_ud, a->pods, sizeof *np * (size_t)a->cap_pods,
                                  sizeof *np * (size_t)ncap);
        if (!np) {
            set_err(err, "out of memory");
            return SLOTS_ENOMEM;
        }
        for (int32_t i = ncap - 1; i >= a->cap_pods; i--) {
            np[i].state = POD_FREE;
            np[i].next = a->free_pod;
            a->free_pod = i;
        }
        a->pods = np;
        a->cap_pods = ncap;
    }
    if ((size_t)(a->npods + 1) * 2 > a->pmap_cap) {
        size_t ncap = a->pmap_cap ? a->pmap_cap * 2 : 32;
        int64_t *nk = mem_get(a->alloc, a->alloc_ud, sizeof *nk * ncap);
        int32_t *nv = mem_get(a->alloc, a->alloc_ud, sizeof *nv * ncap);
        if (!nk || !nv) {
            mem_put(a->alloc, a->alloc_ud, nk, sizeof *nk * ncap);
            mem_put(a->alloc, a->alloc_ud, nv, sizeof *nv * ncap);
            set_err(err, "out of memory");
            return SLOTS_ENOMEM;
        }
        int64_t *ok = a->pmap_keys;
        int32_t *ov = a->pmap_vals;
        size_t ocap = a->pmap_cap;
        a->pmap_keys = nk;
        a->pmap_vals = nv;
        a->pmap_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (ov[i])
                pmap_put(a, ok[i], ov[i] - 1);
        mem_put(a->alloc, a->alloc_ud, ok, sizeof *ok * ocap);
        mem_put(a->alloc, a->alloc_ud, ov, sizeof *ov * ocap);
    }
    return SLOTS_OK;
}

/* Adds a pod (room reserved) as pending (appended to its FIFO) or registered. */
static void pod_insert(struct slots_acct *a, int64_t id, int prof, bool pending)
{
    int32_t s = a->free_pod;
    struct pod *pd = &a->pods[s];
    a->free_pod = pd->next;
    pd->id = id;
    pd->prof = prof;
    pd->prev = pd->next = -1;
    pd->deadline = 0;
    pd->mark = pd->req_pass = a->pass;
    pd->seen = 0;
    struct prof *p = &a->profs[prof];
    if (pending) {
        pd->state = POD_PENDING;
        pd->prev = p->tail;
        if (p->tail >= 0)
            a->pods[p->tail].next = s;
        else
            p->head = s;
        p->tail = s;
        p->pending++;
        a->pending_total++;
    } else {
        pd->state = POD_REGISTERED;
        p->registered++;
        a->registered_total++;
    }
    pmap_put(a, id, s);
    a->npods++;
}

static void unlink_pending(struct slots_acct *a, int32_t s)
{
    struct pod *pd = &a->pods[s];
    struct prof *p = &a->profs[pd->prof];
    if (pd->prev >= 0)
        a->pods[pd->prev].next = pd->next;
    else
        p->head = pd->next;
    if (pd->next >= 0)
        a->pods[pd->next].prev = pd->prev;
    else
        p->tail = pd->prev;
    pd->prev = pd->next = -1;
    p->pending--;
    a->pending_total--;
}

static void pod_drop(struct slots_acct *a, int32_t s)
{
    struct pod *pd = &a->pods[s];
    if (pd->state == POD_PENDING) {
        unlink_pending(a, s);
    } else {
        a->profs[pd->prof].registered--;
        a->registered_total--;
    }
    pmap_del(a, pd->id);
    pd->state = POD_FREE;
    pd->next = a->free_pod;
    a->free_pod = s;
    a->npods--;
}

/* Parses prefix + canonical decimal id (no sign, no leading zero). */
static bool parse_name(const struct slots_acct *a, const char *name, int64_t *id)
{
    if (!name || strncmp(name, a->prefix, a->prefix_len) != 0)
        return false;
    const char *d = name + a->prefix_len;
    size_t n = strnlen(d, 20);
    if (n == 0 || n > 18 || (n > 1 && d[0] == '0'))
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9')
            return false;
        v = v * 10 + (d[i] - '0');
    }
    *id = v;
    return true;
}

static enum slots_status name_to_id(const struct slots_acct *a, const char *name, int64_t *id,
                                    struct slots_err *err)
{
    if (!parse_name(a, name, id)) {
        set_err(err, "pod name '%.80s' is not '%s' followed by a decimal id", name ? name : "(null)",
                a->prefix);
        return SLOTS_EINVAL;
    }
    return SLOTS_OK;
}

int slots_pod_name(const struct slots_acct *a, int64_t id, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s%lld", a->prefix, (long long)id);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

/* ---- start / cancel / replace ------------------------------------------------------------- */

static void outcome_init(struct slots_outcome *o, enum slots_action act, const struct prof *p)
{
    o->was_registered = false;
    o->wait_until = 0;
    o->action = act;
    o->priority = p ? p->priority : -1;
    o->slots = p ? p->slots : 0;
    o->spare = p ? p->spare : 0;
    o->pod_id = -1;
}

/* Requests a new pending pod for prof idx (room checked here). */
static enum slots_status request_pod(struct slots_acct *a, int idx, int64_t *id, struct slots_err *err)
{
    if (a->max_pod_id >= SLOTS_MAX_POD_ID) {
        set_err(err, "pod ids exhausted");
        return SLOTS_ELIMIT;
    }
    enum slots_status st = reserve_pod(a, err);
    if (st != SLOTS_OK)
        return st;
    *id = ++a->max_pod_id;
    pod_insert(a, *id, idx, true);
    return SLOTS_OK;
}

enum slots_status slots_start_worker(struct slots_acct *a, const struct slots_resources *profile,
                                     struct slots_outcome *out, struct slots_err *err)
{
    int idx;
    enum slots_status st = lookup(a, profile, true, &idx, err);
    if (st != SLOTS_OK)
        return st;
    struct prof *p = &a->profs[idx];
    if (a->failed >= a->max_failed) {
        outcome_init(out, SLOTS_STOPPED, p);
        return SLOTS_OK;
    }
    if (p->spare > 0) {
        p->spare--;
        outcome_init(out, SLOTS_USE_SPARE, p);
        return SLOTS_OK;
    }
    int64_t id;
    st = request_pod(a, idx, &id, err);
    if (st != SLOTS_OK)
        return st;
    p = &a->profs[idx];
    p->spare = p->slots - 1;
    outcome_init(out, SLOTS_REQUEST, p);
    out->pod_id = id;
    return SLOTS_OK;
}

enum slots_status slots_cancel_worker(struct slots_acct *a, const struct slots_resources *profile,
                                      struct slots_outcome *out, struct slots_err *err)
{
    int idx;
    enum slots_status st = lookup(a, profile, false, &idx, err);
    if (st != SLOTS_OK)
        return st;
    if (idx < 0) {
        outcome_init(out, SLOTS_NONE, NULL);
        return SLOTS_OK;
    }
    struct prof *p = &a->profs[idx];
    if (p->pending == 0) {
        outcome_init(out, SLOTS_NONE, p);
        return SLOTS_OK;
    }
    if (p->slots > 1 && p->spare < p->slots - 1) {
        p->spare++;
        outcome_init(out, SLOTS_SPARE_BACK, p);
        return SLOTS_OK;
    }
    p->spare = 0;
    int32_t s = p->head;
    int64_t id = a->pods[s].id;
    pod_drop(a, s);
    outcome_init(out, SLOTS_CANCEL, p);
    out->pod_id = id;
    return SLOTS_OK;
}

enum slots_status slots_replace_worker(struct slots_acct *a, int prio, int64_t pending_slot_requests,
                                       struct slots_outcome *out, struct slots_err *err)
{
    int idx = prof_index(a, prio);
    if (idx < 0) {
        set_err(err, "unknown priority %d", prio);
        return SLOTS_ENOENT;
    }
    struct prof *p = &a->profs[idx];
    if (!p->bound) {
        outcome_init(out, SLOTS_NONE, p);
        return SLOTS_OK;
    }
    if (a->failed >= a->max_failed) {
        outcome_init(out, SLOTS_STOPPED, p);
        return SLOTS_OK;
    }
    if (pending_slot_requests >= 0 &&
        pending_slot_requests <= (int64_t)p->pending * p->slots) {
        outcome_init(out, SLOTS_NONE, p);
        return SLOTS_OK;
    }
    int64_t id;
    enum slots_status st = request_pod(a, idx, &id, err);
    if (st != SLOTS_OK)
        return st;
    outcome_init(out, SLOTS_REQUEST, &a->profs[idx]);
    out->pod_id = id;
    return SLOTS_OK;
}

/* ---- pod events --------------------------------------------------------------------------- */

enum slots_status slots_pod_added(struct slots_acct *a, const char *name, int prio,
                                  enum slots_added *res, struct slots_err *err)
{
    int64_t id;
    enum slots_status st = name_to_id(a, name, &id, err);
    if (st != SLOTS_OK)
        return st;
    int idx = prof_index(a, prio);
    if (idx < 0) {
        set_err(err, "unknown priority %d", prio);
        return SLOTS_ENOENT;
    }
    int32_t s = pmap_get(a, id);
    if (s >= 0 && a->pods[s].state == POD_REGISTERED) {
        *res = SLOTS_ADDED_EXISTS;
        return SLOTS_OK;
    }
    if (s >= 0 && a->pods[s].prof == idx) {
        unlink_pending(a, s);
        a->pods[s].state = POD_REGISTERED;
        a->profs[idx].registered++;
        a->registered_total++;
        *res = SLOTS_ADDED_REGISTERED;
        return SLOTS_OK;
    }
    if (id > a->max_pod_id)
        a->max_pod_id = id;
    *res = SLOTS_ADDED_STALE;
    return SLOTS_OK;
}

enum slots_status slots_pod_removed(struct slots_acct *a, const char *name, bool failed,
                                    struct slots_removal *out, struct slots_err *err)
{
    int64_t id;
    enum slots_status st = name_to_id(a, name, &id, err);
    if (st != SLOTS_OK)
        return st;
    int32_t s = pmap_get(a, id);
    out->removed = s >= 0;
    out->was_pending = s >= 0 && a->pods[s].state == POD_PENDING;
    out->priority = s >= 0 ? a->profs[a->pods[s].prof].priority : -1;
    if (s >= 0) {
        pod_drop(a, s);
        if (failed && a->failed < INT_MAX)
            a->failed++;
    }
    out->failed_attempts = a->failed;
    out->stopped = a->failed >= a->max_failed;
    return SLOTS_OK;
}

/* ---- recovery ----------------------------------------------------------------------------- */

struct rec_ref {
    int64_t key;
    size_t idx;
};

static int cmp_ref(const void *x, const void *y)
{
    const struct rec_ref *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : (a->idx > b->idx);
}

/* Fills the empty accounting t from the records; t is discarded by the caller on error. */
static enum slots_status recover_into(struct slots_acct *t, const struct slots_pod_record *pods,
                                      size_t n, struct rec_ref *refs, struct slots_err *err)
{
    char nb[SLOTS_PREFIX_MAX + 24];
    struct slots_err e2;
    for (size_t i = 0; i < n; i++) {
        const struct slots_pod_record *r = &pods[i];
        if (r->id < 0 || r->id > SLOTS_MAX_POD_ID) {
            set_err(err, "pods[%zu]: id must be 0..%lld", i + 1, (long long)SLOTS_MAX_POD_ID);
            return SLOTS_EINVAL;
        }
        if (r->priority < 0 || r->priority > SLOTS_MAX_PRIORITY) {
            set_err(err, "pods[%zu]: priority must be 0..%d", i + 1, SLOTS_MAX_PRIORITY);
            return SLOTS_EINVAL;
        }
        if ((int)r->phase < SLOTS_PHASE_PENDING || r->phase > SLOTS_PHASE_FAILED) {
            set_err(err, "pods[%zu]: bad phase", i + 1);
            return SLOTS_EINVAL;
        }
        if (r->name) {
            slots_pod_name(t, r->id, nb, sizeof nb);
            if (strcmp(nb, r->name) != 0) {
                set_err(err, "pods[%zu]: name '%.80s' does not match id %lld (want '%s')", i + 1,
                        r->name, (long long)r->id, nb);
                return SLOTS_EINVAL;
            }
        }
        if (!(r->created >= 0 && r->created < 1e12)) {
            set_err(err, "pods[%zu]: created must be 0..1e12 (unix seconds)", i + 1);
            return SLOTS_EINVAL;
        }
        if (r->resource && slots_check(r->resource, &e2) != SLOTS_OK) {
            set_err(err, "pods[%zu].resource: %s", i + 1, e2.msg);
            return SLOTS_EINVAL;
        }
    }
    /* distinct priorities, ascending */
    for (size_t i = 0; i < n; i++)
        refs[i] = (struct rec_ref){pods[i].priority, i};
    if (n > 0) /* qsort wants a non-NULL array even for 0 elements */
        qsort(refs, n, sizeof *refs, cmp_ref);
    enum slots_status st;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && refs[i].key == refs[i - 1].key)
            continue;
        if ((st = reserve_prof(t, err)) != SLOTS_OK)
            return st;
        prof_init(&t->profs[t->nprofs++], (int)refs[i].key);
        t->next_priority = (int)refs[i].key + 1;
    }
    /* bind resources */
    for (size_t i = 0; i < n; i++) {
        const struct slots_pod_record *r = &pods[i];
        if (!r->resource)
            continue;
        struct slots_resources c;
        canon(r->resource, &c);
        uint64_t h = canon_hash(&c);
        int idx = prof_index(t, r->priority);
        int other = ptab_find(t, &c, h);
        if (other >= 0 && other != idx) {
            set_err(err, "pods[%zu]: resource already has priority %d, not %d", i + 1,
                    t->profs[other].priority, r->priority);
            return SLOTS_EINVAL;
        }
        if (t->profs[idx].bound) {
            if (other != idx) {
                set_err(err, "pods[%zu]: priority %d has two different resources", i + 1, r->priority);
                return SLOTS_EINVAL;
            }
            continue;
        }
        if ((st = prof_bind(t, idx, &c, h, err)) != SLOTS_OK)
            return st;
    }
    /* pods, ascending id so each pending FIFO is oldest first */
    for (size_t i = 0; i < n; i++)
        refs[i] = (struct rec_ref){pods[i].id, i};
    if (n > 0) /* qsort wants a non-NULL array even for 0 elements */
        qsort(refs, n, sizeof *refs, cmp_ref);
    for (size_t i = 0; i < n; i++) {
        const struct slots_pod_record *r = &pods[refs[i].idx];
        if (i > 0 && refs[i].key == refs[i - 1].key) {
            set_err(err, "pods[%zu]: pod id %lld given twice", refs[i].idx + 1, (long long)r->id);
            return SLOTS_EINVAL;
        }
        if (r->id > t->max_pod_id)
            t->max_pod_id = r->id;
        if (r->phase == SLOTS_PHASE_SUCCEEDED || r->phase == SLOTS_PHASE_FAILED) {
            if (t->failed < INT_MAX)
                t->failed++;
            continue;
        }
        if ((st = reserve_pod(t, err)) != SLOTS_OK)
            return st;
        int32_t s = t->free_pod;
        pod_insert(t, r->id, prof_index(t, r->priority), r->phase == SLOTS_PHASE_PENDING);
        t->pods[s].seen = 1;
        t->pods[s].req_pass = 0;
        if (r->phase == SLOTS_PHASE_PENDING && t->timeout > 0)
            t->pods[s].deadline = (r->created > 0 ? r->created : t->now) + t->timeout;
    }
    return SLOTS_OK;
}

enum slots_status slots_recover(struct slots_acct *a, const struct slots_pod_record *pods,
                                size_t n, struct slots_err *err)
{
    if (a->nprofs != 0 || a->npods != 0 || a->max_pod_id != 0 || a->next_priority != 0) {
        set_err(err, "the accounting is not new (recover before any other call)");
        return SLOTS_ESTATE;
    }
    if (n > (size_t)SLOTS_PODS_LIMIT * 4) {
        set_err(err, "too many pod records (%zu)", n);
        return SLOTS_ELIMIT;
    }
    if (n > 0 && !pods) {
        set_err(err, "no pod records");
        return SLOTS_EINVAL;
    }
    struct slots_acct t = *a;   /* same config; fresh state */
    t.profs = NULL;
    t.cap_profs = t.nprofs = 0;
    t.ptab = NULL;
    t.ptab_cap = 0;
    t.pods = NULL;
    t.cap_pods = t.npods = 0;
    t.free_pod = -1;
    t.pmap_keys = NULL;
    t.pmap_vals = NULL;
    t.pmap_cap = 0;
    struct rec_ref *refs = NULL;
    if (n > 0) {
        refs = mem_get(a->alloc, a->alloc_ud, sizeof *refs * n);
        if (!refs) {
            set_err(err, "out of memory");
            return SLOTS_ENOMEM;
        }
    }
    enum slots_status st = recover_into(&t, pods, n, refs, err);
    mem_put(a->alloc, a->alloc_ud, refs, sizeof *refs * n);
    if (st != SLOTS_OK) {
        release_state(&t);
        return st;
    }
    release_state(a);
    *a = t;
    return SLOTS_OK;
}

/* ---- inspection --------------------------------------------------------------------------- */

void slots_totals(const struct slots_acct *a, struct slots_totals *out)
{
    out->profiles = a->nprofs;
    out->next_priority = a->next_priority;
    out->max_pod_id = a->max_pod_id;
    out->pending = a->pending_total;
    out->registered = a->registered_total;
    out->failed_attempts = a->failed;
    out->max_failed_attempts = a->max_failed;
    out->stopped = a->failed >= a->max_failed;
    out->start_failures = a->start_failures;
    out->backoff_s = a->backoff;
    out->wait_until = a->wait_until;
}

bool slots_priority_at(const struct slots_acct *a, int i, struct slots_priority_info *out)
{
    if (i < 0 || i >= a->nprofs)
        return false;
    const struct prof *p = &a->profs[i];
    out->priority = p->priority;
    out->slots = p->slots;
    out->spare = p->spare;
    out->pending = p->pending;
    out->registered = p->registered;
    out->bound = p->bound;
    return true;
}

int slots_pending_ids(const struct slots_acct *a, int prio, int64_t *ids, int cap)
{
    int idx = prof_index(a, prio);
    if (idx < 0)
        return -1;
    int n = 0;
    for (int32_t s = a->profs[idx].head; s >= 0; s = a->pods[s].next, n++)
        if (n < cap && ids)
            ids[n] = a->pods[s].id;
    return n;
}

/* ---- the controller's pass ---------------------------------------------------------------- */

void slots_begin_pass(struct slots_acct *a, double now)
{
    a->now = now;
    a->pass++;
    if (a->pass == 0) /* wrapped: 0 is "recovered"; marks of older passes stay older */
        a->pass = 1;
    a->sweep = 0;
}

enum slots_status slots_add_failed(struct slots_acct *a, int n, struct slots_err *err)
{
    if (n < 0) {
        set_err(err, "failed attempts must be >= 0, got %d", n);
        return SLOTS_EINVAL;
    }
    a->failed = n > INT_MAX - a->failed ? INT_MAX : a->failed + n;
    return SLOTS_OK;
}

enum slots_status slots_observe_pod(struct slots_acct *a, const char *name, int prio,
                                    enum slots_phase phase, double created,
                                    enum slots_verdict *verdict, struct slots_err *err)
{
    if (!name) {
        set_err(err, "no pod name");
        return SLOTS_EINVAL;
    }
    int64_t id;
    if (!parse_name(a, name, &id) || prio < 0 || prio > SLOTS_MAX_PRIORITY) {
        *verdict = SLOTS_DELETE_MALFORMED;
        if (parse_name(a, name, &id) && id > a->max_pod_id)
            a->max_pod_id = id;
        return SLOTS_OK;
    }
    int32_t s = pmap_get(a, id);
    if (s < 0 || a->profs[a->pods[s].prof].priority != prio) {
        if (id > a->max_pod_id)
            a->max_pod_id = id;
        *verdict = SLOTS_DELETE_STALE;
        return SLOTS_OK;
    }
    struct pod *pd = &a->pods[s];
    if (phase == SLOTS_PHASE_SUCCEEDED || phase == SLOTS_PHASE_FAILED) {
        pod_drop(a, s);
        if (a->failed < INT_MAX)
            a->failed++;
        *verdict = SLOTS_DELETE_TERMINATED;
        return SLOTS_OK;
    }
    if (!pd->seen) {
        /* a start succeeded: the cool-down starts from the beginning next time */
        pd->seen = 1;
        a->backoff = 0;
        a->start_failures = 0;
        if (pd->state == POD_PENDING && a->timeout > 0 && created > 0)
            pd->deadline = created + a->timeout;
    }
    pd->mark = a->pass;
    *verdict = SLOTS_KEEP;
    return SLOTS_OK;
}

bool slots_tm_registered(struct slots_acct *a, const char *name)
{
    int64_t id;
    if (!parse_name(a, name, &id))
        return false;
    int32_t s = pmap_get(a, id);
    if (s < 0 || a->pods[s].state != POD_PENDING)
        return false;
    unlink_pending(a, s);
    a->pods[s].state = POD_REGISTERED;
    a->pods[s].deadline = 0;
    a->profs[a->pods[s].prof].registered++;
    a->registered_total++;
    return true;
}

static void count_failed(struct slots_acct *a)
{
    if (a->failed < INT_MAX)
        a->failed++;
}

bool slots_sweep(struct slots_acct *a, double answered_at, struct slots_event *ev)
{
    for (; a->sweep < a->cap_pods; a->sweep++) {
        int32_t s = a->sweep;
        struct pod *pd = &a->pods[s];
        if (pd->state == POD_FREE)
            continue;
        enum slots_event_kind kind = 0;
        if (pd->mark != a->pass && pd->seen)
            kind = SLOTS_EV_GONE;
        else if (pd->mark != a->pass && pd->req_pass != a->pass)
            kind = SLOTS_EV_START_FAILED;
        else if (pd->mark == a->pass && pd->state == POD_PENDING && pd->deadline > 0 && answered_at >= 0 &&
                 answered_at >= pd->deadline)
            kind = SLOTS_EV_TIMEOUT;
        if (!kind)
            continue;
        ev->kind = kind;
        ev->pod_id = pd->id;
        ev->priority = a->profs[pd->prof].priority;
        ev->wait_until = 0;
        pod_drop(a, s);
        if (kind == SLOTS_EV_START_FAILED) {
            a->backoff = a->backoff > 0 ? a->backoff * 2 : a->backoff_first;
            if (a->backoff > a->backoff_max)
                a->backoff = a->backoff_max;
            a->wait_until = a->now + a->backoff;
            if (a->start_failures < INT_MAX)
                a->start_failures++;
            ev->wait_until = a->wait_until;
        } else {
            count_failed(a);
        }
        ev->failed_attempts = a->failed;
        ev->stopped = a->failed >= a->max_failed;
        a->sweep++;
        return true;
    }
    return false;
}

/* The newest registered pod of prof idx (slab index), -1 when none. */
static int32_t newest_registered(const struct slots_acct *a, int idx)
{
    int32_t best = -1;
    for (int32_t s = 0; s < a->cap_pods; s++)
        if (a->pods[s].state == POD_REGISTERED && a->pods[s].prof == idx &&
            (best < 0 || a->pods[s].id > a->pods[best].id))
            best = s;
    return best;
}

/* Cancels one pod of prof idx: the oldest pending, else the newest registered. */
static void cancel_one(struct slots_acct *a, int idx, struct slots_outcome *out)
{
    struct prof *p = &a->profs[idx];
    int32_t s = p->head >= 0 ? p->head : newest_registered(a, idx);
    bool reg = a->pods[s].state == POD_REGISTERED;
    int64_t id = a->pods[s].id;
    pod_drop(a, s);
    outcome_init(out, SLOTS_CANCEL, p);
    out->pod_id = id;
    out->was_registered = reg;
}

enum slots_status slots_demand_step(struct slots_acct *a, const struct slots_resources *profile,
                                    int64_t demand, struct slots_outcome *out, struct slots_err *err)
{
    if (demand < 0 || demand > (int64_t)SLOTS_PODS_LIMIT * SLOTS_MAX_PER_TM) {
        set_err(err, "demand must be 0..%lld slots", (long long)SLOTS_PODS_LIMIT * SLOTS_MAX_PER_TM);
        return SLOTS_EINVAL;
    }
    int idx;
    enum slots_status st = lookup(a, profile, true, &idx, err);
    if (st != SLOTS_OK)
        return st;
    /* pods of other priorities (an older profile) are no longer wanted */
    for (int j = 0; j < a->nprofs; j++)
        if (j != idx && a->profs[j].pending + a->profs[j].registered > 0) {
            cancel_one(a, j, out);
            return SLOTS_OK;
        }
    struct prof *p = &a->profs[idx];
    int64_t want = (demand + p->slots - 1) / p->slots;
    int64_t have = (int64_t)p->pending + p->registered;
    if (have > want) {
        cancel_one(a, idx, out);
        return SLOTS_OK;
    }
    if (have == want) {
        p->spare = (int)(want * p->slots - demand);
        outcome_init(out, SLOTS_NONE, p);
        return SLOTS_OK;
    }
    if (a->failed >= a->max_failed) {
        outcome_init(out, SLOTS_STOPPED, p);
        return SLOTS_OK;
    }
    if (a->now < a->wait_until) {
        outcome_init(out, SLOTS_WAIT, p);
        out->wait_until = a->wait_until;
        return SLOTS_OK;
    }
    int64_t id;
    if ((st = request_pod(a, idx, &id, err)) != SLOTS_OK)
        return st;
    p = &a->profs[idx];
    int32_t s = pmap_get(a, id);
    if (a->timeout > 0)
        a->pods[s].deadline = a->now + a->timeout;
    outcome_init(out, SLOTS_REQUEST, p);
    out->pod_id = id;
    return SLOTS_OK;
}
