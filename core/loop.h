/* SPDX-License-Identifier: Apache-2.0 */
/* core/loop: small helpers around the one libev loop the controller runs on. */
#ifndef FC_LOOP_H
#define FC_LOOP_H

#include <ev.h>

/* Runs `loop` until `*done` becomes non-zero or `timeout_s` seconds (loop
 * time, > 0) have passed. For startup steps that must finish before the
 * controller goes on (and for tests); never call it from a loop callback.
 * Returns 0 when *done was set, -1 on timeout or bad arguments. */
int loop_run_until(struct ev_loop *loop, const int *done, double timeout_s);

/* A uniformly distributed double in [0, 1), from a per-process generator
 * seeded once from the clock and pid: jitter for backoffs and watch
 * timeouts, not for anything secret. */
double loop_jitter(void);

#endif
