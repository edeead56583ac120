/* SPDX-License-Identifier: Apache-2.0 */
/* core/slotsctx: what the slot accounting's rooms share (core/slots the accounting and its
 * pods, core/slots_shape resource shapes and the slot rule, core/slots_prio the priority map,
 * core/slots_pass the controller's pass). Internal to them: the public contract is slots.h.
 *
 * Layout: `profs` is an array of priorities in ascending priority order (new priorities are
 * always the largest so far, recovery sorts), found by binary search; `ptab` is an
 * open-addressing index from a profile hash to a bound priority; pods live in a slab with a
 * free list, indexed by id in an open-addressing map (linear probing, backward-shift delete);
 * each priority's pending pods form a FIFO threaded through the slab.
 */
#ifndef FC_SLOTSCTX_H
#define FC_SLOTSCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slots.h"

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

/* ---- core/slots.c: helpers, pods ---- */

/* Fills err->msg (when err is not NULL) from the printf format. */
void slots_set_err(struct slots_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n zeroed bytes from the accounting's allocator f (ud), or NULL. */
void *slots_mem_get(slots_alloc_fn f, void *ud, size_t n);
/* Gives back p (n bytes; NULL ignored). */
void slots_mem_put(slots_alloc_fn f, void *ud, void *p, size_t n);
/* Slab index of pod `id`, -1 when not held. */
int32_t slots_pmap_get(const struct slots_acct *a, int64_t id);
/* Takes pending pod s out of its priority's FIFO and the pending counts. */
void slots_unlink_pending(struct slots_acct *a, int32_t s);
/* Forgets pod s (pending or registered): counts, FIFO, id map, slab. */
void slots_pod_drop(struct slots_acct *a, int32_t s);
/* true with *id when name is the prefix followed by a canonical decimal id. */
bool slots_parse_name(const struct slots_acct *a, const char *name, int64_t *id);
/* *o = {act, priority and slots of p (or none when p is NULL)}. */
void slots_outcome_init(struct slots_outcome *o, enum slots_action act, const struct prof *p);
/* A new pending pod of priority index idx with the next id (*id); SLOTS_ELIMIT/ENOMEM. */
enum slots_status slots_request_pod(struct slots_acct *a, int idx, int64_t *id, struct slots_err *err);

/* ---- core/slots_shape.c: resource shapes ---- */

/* Canonical form of a checked shape: zero amounts dropped, names sorted ignoring case, -0 -> 0. */
void slots_canon(const struct slots_resources *in, struct slots_resources *out);
/* FNV-1a of a canonical shape (names lowercased). */
uint64_t slots_canon_hash(const struct slots_resources *c);
/* true when two canonical shapes are the same (names ignoring case). */
bool slots_canon_equal(const struct slots_resources *a, const struct slots_resources *b);
/* The slot rule (slots_per_taskmanager) on checked shapes, canonical or not: >= 1. */
int slots_per_tm(const struct slots_resources *p, const struct slots_resources *m);
/* Copies a canonical shape with lowercased names into one owned buffer (*buf, *bufsize bytes
 * from f); SLOTS_ENOMEM. */
enum slots_status slots_copy_shape(slots_alloc_fn f, void *ud, const struct slots_resources *c,
                                   struct slots_resources *dst, char **buf, size_t *bufsize);

/* ---- core/slots_prio.c: the priority map ---- */

/* Index into a->profs of priority prio (binary search), -1 when none. */
int slots_prof_index(const struct slots_acct *a, int prio);
/* Index of the bound priority of canonical shape c (hash h), -1 when none. */
int slots_ptab_find(const struct slots_acct *a, const struct slots_resources *c, uint64_t h);
/* Room for one more priority (profs and the hash index); SLOTS_ELIMIT (max_profiles)/ENOMEM. */
enum slots_status slots_reserve_prof(struct slots_acct *a, struct slots_err *err);
/* An unbound priority record: 1 slot, empty FIFO. */
void slots_prof_init(struct prof *p, int prio);
/* Binds prof idx to the canonical shape c (hash h): its copy, its slots, the hash index. */
enum slots_status slots_prof_bind(struct slots_acct *a, int idx, const struct slots_resources *c, uint64_t h,
                                  struct slots_err *err);
/* Priority index of a profile (checked here); assigns the next priority when `assign`, else
 * *idx -1 when the profile has none. SLOTS_EINVAL, SLOTS_ELIMIT, SLOTS_ENOMEM. */
enum slots_status slots_lookup(struct slots_acct *a, const struct slots_resources *profile, bool assign, int *idx,
                               struct slots_err *err);

#endif
