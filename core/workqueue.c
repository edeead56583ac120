/* SPDX-License-Identifier: Apache-2.0 */
/* core/workqueue: see workqueue.h. Sets and maps are jansson objects (a
 * string-keyed hash table we already link); delayed keys sit in a binary
 * min-heap on ready time with lazy deletion of superseded entries. */
#include "workqueue.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct delayed {
    double t;
    char *key;
} delayed;

struct workqueue {
    struct ev_loop *loop;
    workqueue_opts o;
    ev_timer timer;
    char **ring;              /* FIFO of ready keys */
    size_t head, count, cap;
    json_t *dirty;            /* keys that need processing (queued or re-added) */
    json_t *processing;       /* keys handed out by get */
    json_t *failures;         /* key -> integer */
    json_t *waiting;          /* key -> ready time (real) */
    delayed *heap;
    size_t heap_len, heap_cap;
    int shut;
};

static double now_of(workqueue *q)
{
    if (q->o.now)
        return q->o.now(q->o.now_ud);
    return q->loop ? ev_now(q->loop) : 0;
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

workqueue *workqueue_new(struct ev_loop *loop, const workqueue_opts *opts)
{
    workqueue *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    if (opts)
        q->o = *opts;
    if (!(q->o.base_delay_s > 0))
        q->o.base_delay_s = 0.005;
    if (!(q->o.max_delay_s > 0))
        q->o.max_delay_s = 1000;
    q->loop = loop;
    q->dirty = json_object();
    q->processing = json_object();
    q->failures = json_object();
    q->waiting = json_object();
    if (!q->dirty || !q->processing || !q->failures || !q->waiting) {
        workqueue_free(q);
        return NULL;
    }
    ev_timer_init(&q->timer, timer_cb, 0., 0.);
    q->timer.data = q;
    return q;
}

void workqueue_free(workqueue *q)
{
    if (!q)
        return;
    if (q->loop)
        ev_timer_stop(q->loop, &q->timer);
    for (size_t i = 0; i < q->count; i++)
        free(q->ring[(q->head + i) % q->cap]);
    free(q->ring);
    for (size_t i = 0; i < q->heap_len; i++)
        free(q->heap[i].key);
    free(q->heap);
    json_decref(q->dirty);
    json_decref(q->processing);
    json_decref(q->failures);
    json_decref(q->waiting);
    free(q);
}

static int ring_push(workqueue *q, const char *key)
{
    if (q->count == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 16;
        char **nr = malloc(cap * sizeof *nr);
        if (!nr)
            return -1;
        for (size_t i = 0; i < q->count; i++)
            nr[i] = q->ring[(q->head + i) % q->cap];
        free(q->ring);
        q->ring = nr;
        q->cap = cap;
        q->head = 0;
    }
    char *k = strdup(key);
    if (!k)
        return -1;
    q->ring[(q->head + q->count) % q->cap] = k;
    q->count++;
    return 0;
}

static void notify(workqueue *q)
{
    if (q->o.on_ready)
        q->o.on_ready(q, q->o.ready_ud);
}

static int add_now(workqueue *q, const char *key, int do_notify)
{
    if (json_object_get(q->dirty, key))
        return 0;
    if (json_object_set_new(q->dirty, key, json_true()) != 0)
        return -1;
    if (json_object_get(q->processing, key))
        return 0;                 /* done() queues it again */
    if (ring_push(q, key) != 0) {
        json_object_del(q->dirty, key);
        return -1;
    }
    if (do_notify)
        notify(q);
    return 0;
}

int workqueue_add(workqueue *q, const char *key)
{
    if (!q || !key || !*key || q->shut)
        return -1;
    return add_now(q, key, 1);
}

static void heap_swap(delayed *a, delayed *b)
{
    delayed t = *a;
    *a = *b;
    *b = t;
}

static void arm(workqueue *q)
{
    if (!q->loop)
        return;
    ev_timer_stop(q->loop, &q->timer);
    if (q->heap_len) {
        double d = q->heap[0].t - now_of(q);
        ev_timer_set(&q->timer, d > 0 ? d : 0, 0.);
        ev_timer_start(q->loop, &q->timer);
    }
}

int workqueue_add_after(workqueue *q, const char *key, double delay_s)
{
    if (!q || !key || !*key || q->shut)
        return -1;
    if (!(delay_s > 0))
        return add_now(q, key, 1);
    double t = now_of(q) + delay_s;
    json_t *w = json_object_get(q->waiting, key);
    if (w && json_real_value(w) <= t)
        return 0;
    if (q->heap_len == q->heap_cap) {
        size_t cap = q->heap_cap ? q->heap_cap * 2 : 16;
        delayed *nh = realloc(q->heap, cap * sizeof *nh);
        if (!nh)
            return -1;
        q->heap = nh;
        q->heap_cap = cap;
    }
    char *k = strdup(key);
    if (!k || json_object_set_new(q->waiting, key, json_real(t)) != 0) {
        free(k);
        return -1;
    }
    size_t i = q->heap_len++;
    q->heap[i].t = t;
    q->heap[i].key = k;
    while (i > 0 && q->heap[(i - 1) / 2].t > q->heap[i].t) {
        heap_swap(&q->heap[(i - 1) / 2], &q->heap[i]);
        i = (i - 1) / 2;
    }
    if (i == 0)
        arm(q);
    return 0;
}

static delayed heap_pop(workqueue *q)
{
    delayed top = q->heap[0];
    q->heap[0] = q->heap[--q->heap_len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->heap_len && q->heap[l].t < q->heap[m].t)
            m = l;
        if (r < q->heap_len && q->heap[r].t < q->heap[m].t)
            m = r;
        if (m == i)
            break;
        heap_swap(&q->heap[i], &q->heap[m]);
        i = m;
    }
    return top;
}

size_t workqueue_tick(workqueue *q, double now)
{
    size_t moved = 0;
    while (q->heap_len && q->heap[0].t <= now) {
        delayed d = heap_pop(q);
        json_t *w = json_object_get(q->waiting, d.key);
        if (w && json_real_value(w) == d.t) {     /* not superseded */
            json_object_del(q->waiting, d.key);
            if (!q->shut && add_now(q, d.key, 0) == 0)
                moved++;
        }
        free(d.key);
    }
    arm(q);
    if (moved)
        notify(q);
    return moved;
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    workqueue *q = w->data;
    workqueue_tick(q, now_of(q));
}

double workqueue_add_rate_limited(workqueue *q, const char *key)
{
    if (!q || !key || !*key || q->shut)
        return -1;
    json_int_t n = json_integer_value(json_object_get(q->failures, key));
    json_object_set_new(q->failures, key, json_integer(n + 1));
    double d = q->o.base_delay_s * pow(2.0, (double)(n > 1000 ? 1000 : n));
    if (!(d < q->o.max_delay_s))
        d = q->o.max_delay_s;
    return workqueue_add_after(q, key, d) == 0 ? d : -1;
}

void workqueue_forget(workqueue *q, const char *key)
{
    if (q && key)
        json_object_del(q->failures, key);
}

int workqueue_failures(const workqueue *q, const char *key)
{
    return q && key ? (int)json_integer_value(json_object_get(q->failures, key)) : 0;
}

const char *workqueue_get(workqueue *q)
{
    if (!q || q->count == 0)
        return NULL;
    char *k = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    json_object_del(q->dirty, k);
    if (json_object_set_new(q->processing, k, json_true()) != 0) {
        free(k);
        return NULL;
    }
    /* hand out the hash table's own copy of the key: stable until done */
    void *it = json_object_iter_at(q->processing, k);
    free(k);
    return it ? json_object_iter_key(it) : NULL;
}

void workqueue_done(workqueue *q, const char *key)
{
    if (!q || !key || !json_object_get(q->processing, key))
        return;
    /* queue it again first (ring_push copies the key): `key` may be the processing table's own
     * copy, freed by the delete below */
    int again = 0;
    if (json_object_get(q->dirty, key)) {
        again = ring_push(q, key) == 0;
        if (!again)
            json_object_del(q->dirty, key); /* out of memory: the next add queues it */
    }
    json_object_del(q->processing, key);
    if (again)
        notify(q);
}

size_t workqueue_len(const workqueue *q)
{
    return q ? q->count : 0;
}

size_t workqueue_waiting(const workqueue *q)
{
    return q ? json_object_size(q->waiting) : 0;
}

size_t workqueue_processing(const workqueue *q)
{
    return q ? json_object_size(q->processing) : 0;
}

int workqueue_is_processing(const workqueue *q, const char *key)
{
    return q && key && json_object_get(q->processing, key) != NULL;
}

void workqueue_shutdown(workqueue *q)
{
    if (q)
        q->shut = 1;
}
