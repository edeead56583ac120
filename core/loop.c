/* SPDX-License-Identifier: Apache-2.0 */
/* core/loop: see loop.h. */
#include "loop.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void deadline_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    *(int *)w->data = 1;
    ev_break(loop, EVBREAK_ONE);
}

static void check_cb(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)revents;
    if (*(const int *)w->data)
        ev_break(loop, EVBREAK_ONE);
}

int loop_run_until(struct ev_loop *loop, const int *done, double timeout_s)
{
    if (!loop || !done || !(timeout_s > 0))
        return -1;
    int expired = 0;
    ev_timer deadline;
    ev_check check;
    ev_timer_init(&deadline, deadline_cb, timeout_s, 0.);
    deadline.data = &expired;
    ev_check_init(&check, check_cb);
    check.data = (void *)done;
    ev_timer_start(loop, &deadline);
    ev_check_start(loop, &check);
    ev_unref(loop);            /* these two alone do not keep the loop alive */
    ev_unref(loop);
    while (!*done && !expired) {
        if (!ev_run(loop, EVRUN_ONCE) && !*done)
            break;             /* nothing left that could set *done */
    }
    ev_ref(loop);
    ev_ref(loop);
    ev_check_stop(loop, &check);
    ev_timer_stop(loop, &deadline);
    return *done ? 0 : -1;
}

double loop_jitter(void)
{
    static int seeded;
    static unsigned short xsubi[3];
    if (!seeded) {
        unsigned long s = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
        xsubi[0] = (unsigned short)s;
        xsubi[1] = (unsigned short)(s >> 16);
        xsubi[2] = (unsigned short)(s >> 32);
        seeded = 1;
    }
    return erand48(xsubi);
}
