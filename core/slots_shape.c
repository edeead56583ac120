/* SPDX-License-Identifier: Apache-2.0 */
/* slots_shape: resource shapes (checked, canonical, hashed, copied) and the slot rule: how many
 * slots of a profile fit one TaskManager.  See slots.h ("slots_check", "slots_per_taskmanager"). */
#include "slots.h"
#include "slotsctx.h"

#include <math.h>
#include <string.h>

#define RATIO_TOLERANCE 1e-9

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
        slots_set_err(err, "no resources");
        return SLOTS_EINVAL;
    }
    if (!isfinite(r->cpu_cores) || r->cpu_cores < 0) {
        slots_set_err(err, "cpu_cores must be a finite number >= 0, got %g", r->cpu_cores);
        return SLOTS_EINVAL;
    }
    if (r->memory_mib < 0) {
        slots_set_err(err, "memory_mib must be >= 0, got %lld", (long long)r->memory_mib);
        return SLOTS_EINVAL;
    }
    if (r->n_extended > SLOTS_MAX_EXTENDED) {
        slots_set_err(err, "at most %d extended resources, got %zu", SLOTS_MAX_EXTENDED, r->n_extended);
        return SLOTS_EINVAL;
    }
    for (size_t i = 0; i < r->n_extended; i++) {
        const struct slots_extended *e = &r->extended[i];
        if (!e->name || e->name_len == 0 || e->name_len > SLOTS_NAME_MAX) {
            slots_set_err(err, "extended resource name must be 1..%d bytes", SLOTS_NAME_MAX);
            return SLOTS_EINVAL;
        }
        for (size_t k = 0; k < e->name_len; k++) {
            unsigned char c = (unsigned char)e->name[k];
            if (c <= 0x20 || c >= 0x7f) {
                slots_set_err(err, "extended resource name has a byte 0x%02x that is not printable ASCII", c);
                return SLOTS_EINVAL;
            }
        }
        if (!isfinite(e->amount) || e->amount < 0) {
            slots_set_err(err, "extended resource '%.*s' must be a finite number >= 0, got %g",
                          (int)(e->name_len > 64 ? 64 : e->name_len), e->name, e->amount);
            return SLOTS_EINVAL;
        }
        for (size_t k = 0; k < i; k++) {
            if (ci_cmp(e->name, e->name_len, r->extended[k].name, r->extended[k].name_len) == 0) {
                slots_set_err(err, "extended resource '%.*s' given twice (names ignore case)",
                              (int)(e->name_len > 64 ? 64 : e->name_len), e->name);
                return SLOTS_EINVAL;
            }
        }
    }
    return SLOTS_OK;
}

/* Canonical form of a checked shape: zero amounts dropped, names sorted ignoring case, -0 -> 0. */
void slots_canon(const struct slots_resources *in, struct slots_resources *out)
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

uint64_t slots_canon_hash(const struct slots_resources *c)
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

bool slots_canon_equal(const struct slots_resources *a, const struct slots_resources *b)
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
int slots_per_tm(const struct slots_resources *p, const struct slots_resources *m)
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
        slots_set_err(err, "max: %s", e2.msg);
        return SLOTS_EINVAL;
    }
    *out = slots_per_tm(profile, max);
    return SLOTS_OK;
}

/* Copies a canonical shape with lowercased names into one owned buffer. */
enum slots_status slots_copy_shape(slots_alloc_fn f, void *ud, const struct slots_resources *c,
                                   struct slots_resources *dst, char **buf, size_t *bufsize)
{
    size_t total = 0;
    for (size_t i = 0; i < c->n_extended; i++)
        total += c->extended[i].name_len + 1;
    char *b = NULL;
    if (total) {
        b = slots_mem_get(f, ud, total);
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
