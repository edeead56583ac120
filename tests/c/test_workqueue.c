/* SPDX-License-Identifier: Apache-2.0 */
/* core/workqueue: dedup, one worker per key, per-key backoff and delayed
 * requeue, all on a fake clock (no loop). */
#include "transport_tap.h"
#include "workqueue.h"

static double fake_now;
static double clock_fn(void *ud) { (void)ud; return fake_now; }
static int ready_calls;
static void on_ready(workqueue *q, void *ud) { (void)q; (void)ud; ready_calls++; }

int main(void)
{
    workqueue_opts o = {.base_delay_s = 0.005, .max_delay_s = 1000, .now = clock_fn, .on_ready = on_ready};
    workqueue *q = workqueue_new(NULL, &o);
    OK(q != NULL, "workqueue_new without a loop");

    /* dedup */
    IS_INT(workqueue_add(q, "ns/a"), 0, "add ns/a");
    IS_INT(workqueue_add(q, "ns/a"), 0, "add ns/a again");
    IS_INT(workqueue_add(q, "ns/b"), 0, "add ns/b");
    IS_INT(workqueue_len(q), 2, "two keys queued though ns/a was added twice");
    IS_INT(ready_calls, 2, "on_ready once per newly queued key");
    IS_INT(workqueue_add(q, ""), -1, "empty key refused");
    IS_INT(workqueue_add(q, NULL), -1, "NULL key refused");

    /* FIFO + processing */
    const char *k1 = workqueue_get(q);
    IS_STR(k1, "ns/a", "first get returns the first key added");
    OK(workqueue_is_processing(q, "ns/a"), "ns/a is processing");
    IS_INT(workqueue_add(q, "ns/a"), 0, "add ns/a while it is processing");
    IS_INT(workqueue_len(q), 1, "ns/a not queued again while processing");
    const char *k2 = workqueue_get(q);
    IS_STR(k2, "ns/b", "second get is ns/b, never ns/a again");
    OK(workqueue_get(q) == NULL, "nothing else ready");
    IS_INT(workqueue_processing(q), 2, "two keys processing");
    workqueue_done(q, k1);
    IS_INT(workqueue_len(q), 1, "done(ns/a) requeues it since it was added meanwhile");
    workqueue_done(q, k2);
    IS_INT(workqueue_len(q), 1, "done(ns/b) without add does not requeue");
    const char *k3 = workqueue_get(q);
    IS_STR(k3, "ns/a", "ns/a comes back");
    workqueue_done(q, k3);
    IS_INT(workqueue_len(q) + workqueue_processing(q), 0, "queue empty");

    /* per-key exponential backoff */
    double d1 = workqueue_add_rate_limited(q, "ns/c");
    double d2 = workqueue_add_rate_limited(q, "ns/c");
    double d3 = workqueue_add_rate_limited(q, "ns/c");
    OK(d1 == 0.005 && d2 == 0.01 && d3 == 0.02, "backoff 5 ms, 10 ms, 20 ms (got %g %g %g)", d1, d2, d3);
    IS_INT(workqueue_failures(q, "ns/c"), 3, "three failures counted");
    IS_INT(workqueue_waiting(q), 1, "one waiting entry for ns/c (earliest kept)");
    IS_INT(workqueue_len(q), 0, "not ready before its delay");
    IS_INT(workqueue_tick(q, 0.004), 0, "nothing due at 4 ms");
    IS_INT(workqueue_tick(q, 0.005), 1, "ns/c due at 5 ms (the earliest of the three)");
    IS_INT(workqueue_tick(q, 1.0), 0, "superseded heap entries do not requeue it twice");
    IS_STR(workqueue_get(q), "ns/c", "ns/c ready");
    workqueue_done(q, "ns/c");
    workqueue_forget(q, "ns/c");
    IS_INT(workqueue_failures(q, "ns/c"), 0, "forget resets failures");
    OK(workqueue_add_rate_limited(q, "ns/c") == 0.005, "backoff starts again at 5 ms");
    for (int i = 0; i < 40; i++)
        workqueue_add_rate_limited(q, "ns/d");
    OK(workqueue_add_rate_limited(q, "ns/d") == 1000, "backoff capped at 1000 s");

    /* delayed requeue ordering */
    fake_now = 10;
    workqueue_tick(q, 10);
    while ((k1 = workqueue_get(q)))
        workqueue_done(q, k1);
    workqueue_add_after(q, "ns/late", 5);
    workqueue_add_after(q, "ns/early", 1);
    workqueue_add_after(q, "ns/late", 2);
    IS_INT(workqueue_tick(q, 11), 1, "ns/early due at +1 s");
    IS_INT(workqueue_tick(q, 12), 1, "ns/late moved up to +2 s");
    IS_STR(workqueue_get(q), "ns/early", "delayed keys come out in due order");
    IS_STR(workqueue_get(q), "ns/late", "then the later one");
    workqueue_done(q, "ns/early");
    workqueue_done(q, "ns/late");
    IS_INT(workqueue_add_after(q, "ns/now", 0), 0, "add_after(0) queues now");
    IS_INT(workqueue_len(q), 1, "queued at once");

    /* a delayed key that is processing when it comes due waits for done */
    IS_STR(workqueue_get(q), "ns/now", "take ns/now");
    workqueue_add_after(q, "ns/now", 1);
    workqueue_tick(q, 14);
    IS_INT(workqueue_len(q), 0, "due while processing: not handed out twice");
    workqueue_done(q, "ns/now");
    IS_INT(workqueue_len(q), 1, "queued after done");

    workqueue_shutdown(q);
    IS_INT(workqueue_add(q, "ns/x"), -1, "add after shutdown refused");
    workqueue_free(q);

    /* with a loop: the timer fires the delayed add */
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    ready_calls = 0;
    workqueue_opts lo = {.on_ready = on_ready};
    q = workqueue_new(loop, &lo);
    workqueue_add_after(q, "ns/timer", 0.01);
    ev_run(loop, 0);
    IS_INT(workqueue_len(q), 1, "libev timer moved the delayed key into the queue");
    IS_INT(ready_calls, 1, "on_ready called from the timer");
    workqueue_free(q);
    ev_loop_destroy(loop);
    return DONE_TESTING();
}
