/* SPDX-License-Identifier: Apache-2.0 */
/* slots_prio: the priority map: `profs`, the priorities in ascending order (new priorities are
 * always the largest so far, recovery sorts), found by binary search; `ptab`, an open-addressing
 * index from a profile's hash to its bound priority.  See slots.h ("slots_priority"). */
#include "slots.h"
#include "slotsctx.h"

#include <string.h>

/* ---- priorities --------------------------------------------------------------------------- */

int slots_prof_index(const struct slots_acct *a, int prio)
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

int slots_ptab_find(const struct slots_acct *a, const struct slots_resources *c, uint64_t h)
{
    if (!a->ptab_cap)
        return -1;
    size_t mask = a->ptab_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        int32_t v = a->ptab[i];
        if (v == 0)
            return -1;
        const struct prof *p = &a->profs[v - 1];
        if (p->hash == h && slots_canon_equal(&p->res, c))
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
enum slots_status slots_reserve_prof(struct slots_acct *a, struct slots_err *err)
{
    if (a->nprofs >= a->max_profiles) {
        slots_set_err(err, "too many distinct TaskManager resources (max_profiles %d)", a->max_profiles);
        return SLOTS_ELIMIT;
    }
    if (a->nprofs == a->cap_profs) {
        int ncap = a->cap_profs ? a->cap_profs * 2 : 8;
        if (ncap > a->max_profiles)
            ncap = a->max_profiles;
        struct prof *np = a->alloc(a->alloc_ud, a->profs, sizeof *np * (size_t)a->cap_profs,
                                   sizeof *np * (size_t)ncap);
        if (!np) {
            slots_set_err(err, "out of memory");
            return SLOTS_ENOMEM;
        }
        a->profs = np;
        a->cap_profs = ncap;
    }
    if ((size_t)(a->nprofs + 1) * 2 > a->ptab_cap) {
        size_t ncap = a->ptab_cap ? a->ptab_cap * 2 : 16;
        int32_t *nt = slots_mem_get(a->alloc, a->alloc_ud, sizeof *nt * ncap);
        if (!nt) {
            slots_set_err(err, "out of memory");
            return SLOTS_ENOMEM;
        }
        slots_mem_put(a->alloc, a->alloc_ud, a->ptab, sizeof *a->ptab * a->ptab_cap);
        a->ptab = nt;
        a->ptab_cap = ncap;
        for (int i = 0; i < a->nprofs; i++)
            if (a->profs[i].bound)
                ptab_put(a, i);
    }
    return SLOTS_OK;
}

void slots_prof_init(struct prof *p, int prio)
{
    memset(p, 0, sizeof *p);
    p->priority = prio;
    p->slots = 1;
    p->head = p->tail = -1;
}

/* Binds prof idx to the canonical shape c (hash h). */
enum slots_status slots_prof_bind(struct slots_acct *a, int idx, const struct slots_resources *c,
                                  uint64_t h, struct slots_err *err)
{
    struct prof *p = &a->profs[idx];
    if (slots_copy_shape(a->alloc, a->alloc_ud, c, &p->res, &p->names, &p->names_size) != SLOTS_OK) {
        slots_set_err(err, "out of memory");
        return SLOTS_ENOMEM;
    }
    p->hash = h;
    p->bound = true;
    p->slots = slots_per_tm(&p->res, &a->max);
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

enum slots_status slots_lookup(struct slots_acct *a, const struct slots_resources *profile,
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
    slots_canon(profile, &c);
    uint64_t h = slots_canon_hash(&c);
    *idx = slots_ptab_find(a, &c, h);
    if (*idx >= 0 || !assign)
        return SLOTS_OK;
    if (a->next_priority > SLOTS_MAX_PRIORITY) {
        slots_set_err(err, "priorities exhausted");
        return SLOTS_ELIMIT;
    }
    st = slots_reserve_prof(a, err);
    if (st != SLOTS_OK)
        return st;
    int i = a->nprofs;
    slots_prof_init(&a->profs[i], a->next_priority);
    st = slots_prof_bind(a, i, &c, h, err);
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
    enum slots_status st = slots_lookup(a, profile, true, &idx, err);
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
    enum slots_status st = slots_lookup(a, profile, false, &idx, err);
    if (st != SLOTS_OK)
        return st;
    if (idx < 0) {
        slots_set_err(err, "no priority for this resource");
        return SLOTS_ENOENT;
    }
    *prio = a->profs[idx].priority;
    return SLOTS_OK;
}

const struct slots_resources *slots_resource_of(const struct slots_acct *a, int prio)
{
    int i = slots_prof_index(a, prio);
    if (i < 0 || !a->profs[i].bound)
        return NULL;
    return &a->profs[i].res;
}
