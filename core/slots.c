/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slots: TaskManager slot accounting.  See slots.h for the rules and their sources.
 *
 * This file: the accounting's lifecycle, the pods (a slab with a free list, indexed by id in an
 * open-addressing map: linear probing, backward-shift delete; each priority's pending pods a
 * FIFO threaded through the slab), start/cancel/replace, pod events, recovery and inspection.
 * Its rooms: core/slots_shape, core/slots_prio, core/slots_pass (core/slotsctx.h).
 */
#include "slots.h"
#include "slotsctx.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---------------------------------------------------------------------- */

void slots_set_err(struct slots_err *err, const char *fmt, ...)
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

void *slots_mem_get(slots_alloc_fn f, void *ud, size_t n)
{
    void *p = f(ud, NULL, 0, n);
    if (p)
        memset(p, 0, n);
    return p;
}

void slots_mem_put(slots_alloc_fn f, void *ud, void *p, size_t n)
{
    if (p)
        f(ud, p, n, 0);
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
        slots_set_err(err, "no config");
        return NULL;
    }
    if (slots_check(&cfg->max, &e2) != SLOTS_OK) {
        slots_set_err(err, "max: %s", e2.msg);
        return NULL;
    }
    int max_failed = cfg->max_failed_attempts ? cfg->max_failed_attempts : SLOTS_FAILED_DEFAULT;
    if (max_failed < 1) {
        slots_set_err(err, "max_failed_attempts must be >= 1, got %d", cfg->max_failed_attempts);
        return NULL;
    }
    int max_profiles = cfg->max_profiles ? cfg->max_profiles : SLOTS_PROFILES_DEFAULT;
    if (max_profiles < 1 || max_profiles > SLOTS_PROFILES_LIMIT) {
        slots_set_err(err, "max_profiles must be 1..%d, got %d", SLOTS_PROFILES_LIMIT, cfg->max_profiles);
        return NULL;
    }
    if (!(cfg->registration_timeout_s >= 0 && cfg->registration_timeout_s < 1e9) ||
        !(cfg->start_backoff_s >= 0 && cfg->start_backoff_s < 1e9) ||
        !(cfg->start_backoff_max_s >= 0 && cfg->start_backoff_max_s < 1e9)) {
        slots_set_err(err, "registration_timeout_s, start_backoff_s and start_backoff_max_s must be 0..1e9");
        return NULL;
    }
    int max_pods = cfg->max_pods ? cfg->max_pods : SLOTS_PODS_DEFAULT;
    if (max_pods < 1 || max_pods > SLOTS_PODS_LIMIT) {
        slots_set_err(err, "max_pods must be 1..%d, got %d", SLOTS_PODS_LIMIT, cfg->max_pods);
        return NULL;
    }
    const char *prefix = cfg->name_prefix ? cfg->name_prefix : "taskmanager-";
    size_t plen = strnlen(prefix, SLOTS_PREFIX_MAX + 1);
    if (plen > SLOTS_PREFIX_MAX || !prefix_ok(prefix, plen)) {
        slots_set_err(err, "name_prefix must be at most %d of [a-z0-9.-]", SLOTS_PREFIX_MAX);
        return NULL;
    }
    slots_alloc_fn f = cfg->alloc ? cfg->alloc : default_alloc;
    struct slots_acct *a = slots_mem_get(f, cfg->alloc_ud, sizeof *a);
    if (!a) {
        slots_set_err(err, "out of memory");
        return NULL;
    }
    a->alloc = f;
    a->alloc_ud = cfg->alloc_ud;
    struct slots_resources c;
    slots_canon(&cfg->max, &c);
    if (slots_copy_shape(f, a->alloc_ud, &c, &a->max, &a->max_names, &a->max_names_size) != SLOTS_OK) {
        slots_mem_put(f, a->alloc_ud, a, sizeof *a);
        slots_set_err(err, "out of memory");
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
        slots_mem_put(a->alloc, a->alloc_ud, a->profs[i].names, a->profs[i].names_size);
    slots_mem_put(a->alloc, a->alloc_ud, a->profs, sizeof *a->profs * (size_t)a->cap_profs);
    slots_mem_put(a->alloc, a->alloc_ud, a->ptab, sizeof *a->ptab * a->ptab_cap);
    slots_mem_put(a->alloc, a->alloc_ud, a->pods, sizeof *a->pods * (size_t)a->cap_pods);
    slots_mem_put(a->alloc, a->alloc_ud, a->pmap_keys, sizeof *a->pmap_keys * a->pmap_cap);
    slots_mem_put(a->alloc, a->alloc_ud, a->pmap_vals, sizeof *a->pmap_vals * a->pmap_cap);
}

void slots_free(struct slots_acct *a)
{
    if (!a)
        return;
    release_state(a);
    slots_mem_put(a->alloc, a->alloc_ud, a->max_names, a->max_names_size);
    slots_mem_put(a->alloc, a->alloc_ud, a, sizeof *a);
}

/* ---- pods: slab + id map ------------------------------------------------------------------ */

static size_t id_slot(int64_t id, size_t mask)
{
    uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15ULL;
    return (size_t)(x >> 17) & mask;
}

int32_t slots_pmap_get(const struct slots_acct *a, int64_t id)
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
        slots_set_err(err, "too many pods (max_pods %d)", a->max_pods);
        return SLOTS_ELIMIT;
    }
    if (a->free_pod < 0) {
        int32_t ncap = a->cap_pods ? a->cap_pods * 2 : 16;
        if (ncap > a->max_pods)
            ncap = a->max_pods;
        struct pod *np = a->alloc(a->alloc_ud, a->pods, sizeof *np * (size_t)a->cap_pods,
                                  sizeof *np * (size_t)ncap);
        if (!np) {
            slots_set_err(err, "out of memory");
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
        int64_t *nk = slots_mem_get(a->alloc, a->alloc_ud, sizeof *nk * ncap);
        int32_t *nv = slots_mem_get(a->alloc, a->alloc_ud, sizeof *nv * ncap);
        if (!nk || !nv) {
            slots_mem_put(a->alloc, a->alloc_ud, nk, sizeof *nk * ncap);
            slots_mem_put(a->alloc, a->alloc_ud, nv, sizeof *nv * ncap);
            slots_set_err(err, "out of memory");
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
        slots_mem_put(a->alloc, a->alloc_ud, ok, sizeof *ok * ocap);
        slots_mem_put(a->alloc, a->alloc_ud, ov, sizeof *ov * ocap);
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

void slots_unlink_pending(struct slots_acct *a, int32_t s)
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

void slots_pod_drop(struct slots_acct *a, int32_t s)
{
    struct pod *pd = &a->pods[s];
    if (pd->state == POD_PENDING) {
        slots_unlink_pending(a, s);
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
bool slots_parse_name(const struct slots_acct *a, const char *name, int64_t *id)
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
    if (!slots_parse_name(a, name, id)) {
        slots_set_err(err, "pod name '%.80s' is not '%s' followed by a decimal id", name ? name : "(null)",
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

void slots_outcome_init(struct slots_outcome *o, enum slots_action act, const struct prof *p)
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
enum slots_status slots_request_pod(struct slots_acct *a, int idx, int64_t *id, struct slots_err *err)
{
    if (a->max_pod_id >= SLOTS_MAX_POD_ID) {
        slots_set_err(err, "pod ids exhausted");
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
    enum slots_status st = slots_lookup(a, profile, true, &idx, err);
    if (st != SLOTS_OK)
        return st;
    struct prof *p = &a->profs[idx];
    if (a->failed >= a->max_failed) {
        slots_outcome_init(out, SLOTS_STOPPED, p);
        return SLOTS_OK;
    }
    if (p->spare > 0) {
        p->spare--;
        slots_outcome_init(out, SLOTS_USE_SPARE, p);
        return SLOTS_OK;
    }
    int64_t id;
    st = slots_request_pod(a, idx, &id, err);
    if (st != SLOTS_OK)
        return st;
    p = &a->profs[idx];
    p->spare = p->slots - 1;
    slots_outcome_init(out, SLOTS_REQUEST, p);
    out->pod_id = id;
    return SLOTS_OK;
}

enum slots_status slots_cancel_worker(struct slots_acct *a, const struct slots_resources *profile,
                                      struct slots_outcome *out, struct slots_err *err)
{
    int idx;
    enum slots_status st = slots_lookup(a, profile, false, &idx, err);
    if (st != SLOTS_OK)
        return st;
    if (idx < 0) {
        slots_outcome_init(out, SLOTS_NONE, NULL);
        return SLOTS_OK;
    }
    struct prof *p = &a->profs[idx];
    if (p->pending == 0) {
        slots_outcome_init(out, SLOTS_NONE, p);
        return SLOTS_OK;
    }
    if (p->slots > 1 && p->spare < p->slots - 1) {
        p->spare++;
        slots_outcome_init(out, SLOTS_SPARE_BACK, p);
        return SLOTS_OK;
    }
    p->spare = 0;
    int32_t s = p->head;
    int64_t id = a->pods[s].id;
    slots_pod_drop(a, s);
    slots_outcome_init(out, SLOTS_CANCEL, p);
    out->pod_id = id;
    return SLOTS_OK;
}

enum slots_status slots_replace_worker(struct slots_acct *a, int prio, int64_t pending_slot_requests,
                                       struct slots_outcome *out, struct slots_err *err)
{
    int idx = slots_prof_index(a, prio);
    if (idx < 0) {
        slots_set_err(err, "unknown priority %d", prio);
        return SLOTS_ENOENT;
    }
    struct prof *p = &a->profs[idx];
    if (!p->bound) {
        slots_outcome_init(out, SLOTS_NONE, p);
        return SLOTS_OK;
    }
    if (a->failed >= a->max_failed) {
        slots_outcome_init(out, SLOTS_STOPPED, p);
        return SLOTS_OK;
    }
    if (pending_slot_requests >= 0 &&
        pending_slot_requests <= (int64_t)p->pending * p->slots) {
        slots_outcome_init(out, SLOTS_NONE, p);
        return SLOTS_OK;
    }
    int64_t id;
    enum slots_status st = slots_request_pod(a, idx, &id, err);
    if (st != SLOTS_OK)
        return st;
    slots_outcome_init(out, SLOTS_REQUEST, &a->profs[idx]);
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
    int idx = slots_prof_index(a, prio);
    if (idx < 0) {
        slots_set_err(err, "unknown priority %d", prio);
        return SLOTS_ENOENT;
    }
    int32_t s = slots_pmap_get(a, id);
    if (s >= 0 && a->pods[s].state == POD_REGISTERED) {
        *res = SLOTS_ADDED_EXISTS;
        return SLOTS_OK;
    }
    if (s >= 0 && a->pods[s].prof == idx) {
        slots_unlink_pending(a, s);
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
    int32_t s = slots_pmap_get(a, id);
    out->removed = s >= 0;
    out->was_pending = s >= 0 && a->pods[s].state == POD_PENDING;
    out->priority = s >= 0 ? a->profs[a->pods[s].prof].priority : -1;
    if (s >= 0) {
        slots_pod_drop(a, s);
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
            slots_set_err(err, "pods[%zu]: id must be 0..%lld", i + 1, (long long)SLOTS_MAX_POD_ID);
            return SLOTS_EINVAL;
        }
        if (r->priority < 0 || r->priority > SLOTS_MAX_PRIORITY) {
            slots_set_err(err, "pods[%zu]: priority must be 0..%d", i + 1, SLOTS_MAX_PRIORITY);
            return SLOTS_EINVAL;
        }
        if ((int)r->phase < SLOTS_PHASE_PENDING || r->phase > SLOTS_PHASE_FAILED) {
            slots_set_err(err, "pods[%zu]: bad phase", i + 1);
            return SLOTS_EINVAL;
        }
        if (r->name) {
            slots_pod_name(t, r->id, nb, sizeof nb);
            if (strcmp(nb, r->name) != 0) {
                slots_set_err(err, "pods[%zu]: name '%.80s' does not match id %lld (want '%s')", i + 1,
                              r->name, (long long)r->id, nb);
                return SLOTS_EINVAL;
            }
        }
        if (!(r->created >= 0 && r->created < 1e12)) {
            slots_set_err(err, "pods[%zu]: created must be 0..1e12 (unix seconds)", i + 1);
            return SLOTS_EINVAL;
        }
        if (r->resource && slots_check(r->resource, &e2) != SLOTS_OK) {
            slots_set_err(err, "pods[%zu].resource: %s", i + 1, e2.msg);
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
        if ((st = slots_reserve_prof(t, err)) != SLOTS_OK)
            return st;
        slots_prof_init(&t->profs[t->nprofs++], (int)refs[i].key);
        t->next_priority = (int)refs[i].key + 1;
    }
    /* bind resources */
    for (size_t i = 0; i < n; i++) {
        const struct slots_pod_record *r = &pods[i];
        if (!r->resource)
            continue;
        struct slots_resources c;
        slots_canon(r->resource, &c);
        uint64_t h = slots_canon_hash(&c);
        int idx = slots_prof_index(t, r->priority);
        int other = slots_ptab_find(t, &c, h);
        if (other >= 0 && other != idx) {
            slots_set_err(err, "pods[%zu]: resource already has priority %d, not %d", i + 1,
                          t->profs[other].priority, r->priority);
            return SLOTS_EINVAL;
        }
        if (t->profs[idx].bound) {
            if (other != idx) {
                slots_set_err(err, "pods[%zu]: priority %d has two different resources", i + 1, r->priority);
                return SLOTS_EINVAL;
            }
            continue;
        }
        if ((st = slots_prof_bind(t, idx, &c, h, err)) != SLOTS_OK)
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
            slots_set_err(err, "pods[%zu]: pod id %lld given twice", refs[i].idx + 1, (long long)r->id);
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
        pod_insert(t, r->id, slots_prof_index(t, r->priority), r->phase == SLOTS_PHASE_PENDING);
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
        slots_set_err(err, "the accounting is not new (recover before any other call)");
        return SLOTS_ESTATE;
    }
    if (n > (size_t)SLOTS_PODS_LIMIT * 4) {
        slots_set_err(err, "too many pod records (%zu)", n);
        return SLOTS_ELIMIT;
    }
    if (n > 0 && !pods) {
        slots_set_err(err, "no pod records");
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
        refs = slots_mem_get(a->alloc, a->alloc_ud, sizeof *refs * n);
        if (!refs) {
            slots_set_err(err, "out of memory");
            return SLOTS_ENOMEM;
        }
    }
    enum slots_status st = recover_into(&t, pods, n, refs, err);
    slots_mem_put(a->alloc, a->alloc_ud, refs, sizeof *refs * n);
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
    int idx = slots_prof_index(a, prio);
    if (idx < 0)
        return -1;
    int n = 0;
    for (int32_t s = a->profs[idx].head; s >= 0; s = a->pods[s].next, n++)
        if (n < cap && ids)
            ids[n] = a->pods[s].id;
    return n;
}
