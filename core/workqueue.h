/* SPDX-License-Identifier: Apache-2.0 */
/* core/workqueue: the controller's queue of keys ("namespace/name"), ported
 * from the idea of client-go's workqueue:
 *   - a key waiting in the queue is queued once however often it is added;
 *   - a key being processed is never handed out again until workqueue_done():
 *     adds meanwhile mark it dirty and it is queued again by done;
 *   - workqueue_add_rate_limited() requeues after base * 2^failures seconds
 *     (capped), workqueue_forget() resets the failure count;
 *   - workqueue_add_after() requeues after a delay (libev timer; with a NULL
 *     loop the caller drives time with workqueue_tick(), as the tests do).
 * Keys are copied. Order is FIFO among ready keys.
 */
#ifndef FC_WORKQUEUE_H
#define FC_WORKQUEUE_H

#include <stddef.h>
#include <ev.h>

typedef struct workqueue workqueue;

typedef struct workqueue_opts {
    double base_delay_s;   /* first failure backoff, default 0.005 s (client-go) */
    double max_delay_s;    /* backoff cap, default 1000 s (client-go) */
    /* clock in seconds; NULL = ev_now(loop) (or 0 without a loop) */
    double (*now)(void *ud);
    void *now_ud;
    /* called when a key becomes ready to be taken with workqueue_get() (from
     * add, done, or a delay expiring), so the runner can start a worker */
    void (*on_ready)(workqueue *q, void *ud);
    void *ready_ud;
} workqueue_opts;

/* `loop` may be NULL (no timers: call workqueue_tick). opts may be NULL. */
workqueue *workqueue_new(struct ev_loop *loop, const workqueue_opts *opts);
void workqueue_free(workqueue *q);

/* Queues `key` now unless already queued. Returns 0, -1 on a NULL/empty key
 * or out of memory, or after workqueue_shutdown. */
int workqueue_add(workqueue *q, const char *key);
/* Queues `key` after `delay_s` seconds (<= 0: now). A key already waiting
 * keeps the earlier of the two times. */
int workqueue_add_after(workqueue *q, const char *key, double delay_s);
/* Queues `key` after its per-key backoff: base * 2^failures, capped at
 * max_delay; each call counts one failure. Returns the delay used (seconds)
 * or -1 on error. */
double workqueue_add_rate_limited(workqueue *q, const char *key);
/* Forgets the failures of `key` (call after a successful reconcile). */
void workqueue_forget(workqueue *q, const char *key);
/* Failures counted for `key`. */
int workqueue_failures(const workqueue *q, const char *key);

/* Takes the next ready key and marks it processing; NULL when none is
 * ready. The returned string stays valid until workqueue_done(q, key). */
const char *workqueue_get(workqueue *q);
/* Ends processing of `key` (the pointer from get, or an equal string); a
 * key added meanwhile is queued again. */
void workqueue_done(workqueue *q, const char *key);

/* Moves the delayed keys due at `now` (seconds) into the queue; returns how
 * many. Timers call this; tests call it with a fake clock. */
size_t workqueue_tick(workqueue *q, double now);

size_t workqueue_len(const workqueue *q);        /* ready keys */
size_t workqueue_waiting(const workqueue *q);    /* delayed keys */
size_t workqueue_processing(const workqueue *q); /* keys being processed */
int workqueue_is_processing(const workqueue *q, const char *key);
/* Refuses further adds; get keeps returning what is queued. */
void workqueue_shutdown(workqueue *q);

#endif
