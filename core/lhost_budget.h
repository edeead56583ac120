/* SPDX-License-Identifier: Apache-2.0 */
/* core/lhost_budget: the call windows of the Lua host (docs/contracts.md, "Policy sandbox"): a
 * policy call runs under a CPU-time budget (a thread CPU-time timer plus the count hook) and a
 * memory cap (the counting allocator); once either trips, every instruction raises until the
 * call unwinds to the host, and the failure comes back as "<file>:<line>: <message>" with its
 * kind in struct lhost's fail_kind. A room of core/lhost (core/lhostctx.h).
 */
#ifndef FC_LHOST_BUDGET_H
#define FC_LHOST_BUDGET_H

#include <stddef.h>

#include <lua.h>

struct lhost;

/* The state's allocator (lua_newstate(lhost_alloc, h), ud the host): counts the bytes in use
 * (h->used, h->peak); growth beyond h->hard_cap fails; inside a call window growth beyond the
 * window's base + h->call_cap trips the call (memory) and arms the hook, the allocation still
 * succeeding within 1 MiB of slack so that the hook names the exact line. Shrinking never fails. */
void *lhost_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* Creates the host's CPU-time timer (CLOCK_THREAD_CPUTIME_ID of the calling thread, signal
 * SIGRTMIN+7, its handler installed once per process); without one (an old kernel, a sandbox
 * refusing timers) h->has_timer stays 0 and the count hook alone keeps the budget. */
void lhost_timer_init(struct lhost *h);

/* The poll of long C loops inside a call window (lpattern's budget, the sort comparator,
 * chunked table.move; ud the host): raises the budget error once the call is tripped or past
 * its deadline; nothing outside a window. */
void lhost_poll(lua_State *L, void *ud);

/* 1 when msg starts with "<something>:<digits>: " (a message that names its position). */
int lhost_has_position(const char *msg);

/* Calls the function below `nargs` arguments on L under a call window (h->timeout_ms CPU
 * milliseconds, h->call_cap bytes above the heap at the start), one result. Returns 0 with the
 * raw result on top, or 1 with the error message on top ("<file>:<line>: <message>", the
 * position from the trip, the error, else `fallback`) and h->fail_kind "error", "timeout" or
 * "nomem". A call from inside a window fails ("fc.host: nested policy calls are not allowed"). */
int lhost_sandboxed_call(struct lhost *h, lua_State *L, int nargs, const char *fallback);

#endif
