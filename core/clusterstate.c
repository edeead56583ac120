/* SPDX-License-Identifier: Apache-2.0 */
/* core/clusterstate: per-cluster records in a chained hash map (see clusterstate.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clusterstate.h"

struct cs_entry {
    struct cs_entry *next;
    uint64_t hash;
    cluster_state st;
    char key[]; /* "<namespace>/<name>" */
};

struct clusterstate_map {
    struct cs_entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t len;
};

/* FNV-1a, 64 bits */
static uint64_t clusterstate_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

clusterstate_map *clusterstate_new(void)
{
    clusterstate_map *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->nbuckets = 64;
    m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    return m;
}

static void clusterstate_clear(cluster_state *st)
{
    json_decref(st->flink);
    json_decref(st->emitted);
    json_decref(st->expect);
    json_decref(st->fresh);
    json_decref(st->dryruns);
}

void clusterstate_free(clusterstate_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nbuckets; i++)
        for (struct cs_entry *e = m->buckets[i], *next; e; e = next) {
            next = e->next;
            clusterstate_clear(&e->st);
            free(e);
        }
    free(m->buckets);
    free(m);
}

static struct cs_entry **clusterstate_slot(clusterstate_map *m, const char *key, uint64_t h)
{
    struct cs_entry **p = &m->buckets[h & (m->nbuckets - 1)];
    while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0))
        p = &(*p)->next;
    return p;
}

cluster_state *clusterstate_get(clusterstate_map *m, const char *key)
{
    if (!m || !key)
        return NULL;
    struct cs_entry *e = *clusterstate_slot(m, key, clusterstate_hash(key));
    return e ? &e->st : NULL;
}

/* Doubles the buckets when the records outnumber them (a failed allocation keeps the old
 * ones: longer chains, nothing lost). */
static void clusterstate_grow(clusterstate_map *m)
{
    size_t n = m->nbuckets * 2;
    struct cs_entry **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < m->nbuckets; i++)
        for (struct cs_entry *e = m->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

cluster_state *clusterstate_get_or_add(clusterstate_map *m, const char *key)
{
    if (!m || !key)
        return NULL;
    uint64_t h = clusterstate_hash(key);
    struct cs_entry **p = clusterstate_slot(m, key, h);
    if (*p)
        return &(*p)->st;
    size_t kl = strlen(key);
    struct cs_entry *e = calloc(1, sizeof *e + kl + 1);
    if (!e)
        return NULL;
    e->hash = h;
    memcpy(e->key, key, kl + 1);
    *p = e;
    if (++m->len > m->nbuckets)
        clusterstate_grow(m);
    return &e->st;
}

void clusterstate_forget(clusterstate_map *m, const char *key)
{
    if (!m || !key)
        return;
    struct cs_entry **p = clusterstate_slot(m, key, clusterstate_hash(key));
    struct cs_entry *e = *p;
    if (!e)
        return;
    *p = e->next;
    clusterstate_clear(&e->st);
    free(e);
    m->len--;
}

size_t clusterstate_len(const clusterstate_map *m)
{
    return m ? m->len : 0;
}
