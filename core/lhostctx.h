/* SPDX-License-Identifier: Apache-2.0 */
/* core/lhostctx: the state the Lua host's rooms share (core/lhost the state and its C API,
 * core/lhost_budget the call windows' budgets, core/lhost_env what a policy's environment
 * holds, core/lhost_load the loading of policies and modules, core/lua_host the fc.host table).
 * Internal to them: nothing else includes it. One struct lhost is the allocator's ud, so every
 * C function running on the state reaches it with lhost_of(L).
 */
#ifndef FC_LHOSTCTX_H
#define FC_LHOSTCTX_H

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include <lua.h>

#include "lhost.h"
#include "lpattern.h"

#define LHOST_MIB ((size_t)1 << 20)
#define LHOST_ENV_LIBS 5 /* string, table, math, utf8, os (core/lhost_env.c) */

enum lhost_trip { LHOST_TRIP_NONE = 0, LHOST_TRIP_TIME, LHOST_TRIP_MEMORY };

struct lhost {
    lua_State *L;
    size_t used, peak;
    size_t hard_cap, call_cap, call_base, call_peak;
    volatile sig_atomic_t in_call; /* read by the timer's signal handler */
    int tripped;
    const char *fail_kind; /* of the last failed call: "error", "timeout" or "nomem" */
    lua_State *volatile call_L;
    int has_timer;
    timer_t timer;                 /* CPU-time timer of the thread that made the host */
    struct lpattern_budget budget; /* lhost_poll, for the sandbox's pattern functions */
    unsigned sort_cost;            /* comparisons (weighted by length) since the last poll */
    int env_n;                      /* fields of a policy environment (lhost_env_prepare) */
    int env_lib_n[LHOST_ENV_LIBS];  /* fields of each of its library tables */
    int call_depth; /* frames on call_L when the window opened (the host's, not the policy's) */
    struct timespec deadline;
    unsigned timeout_ms, memory_mib;
    char where[256];
    char datadir[PATH_MAX];
    char policy_dir[PATH_MAX];
};

/* Registry keys: the addresses of these (distinct, writable, so never merged) chars, defined in
 * core/lhost.c. trip: the error object of a tripped call (a light userdata); pristine: copies
 * of the globals policies get; policies: name -> compiled policy chunk | load error, path ->
 * lib chunk; binder: the closure maker of lhost_bind_env; guarded_string: the string table
 * behind string methods; env_base, env_libs, env_meta: what every policy environment is copied
 * from, built once per state (core/lhost_env.c, lhost_env_prepare); shared: the shared
 * framework modules (core/lhost_load.c: name -> module table, [1] their environment), emptied by
 * fc.host.configure{policy_dir=}. */
extern char lhost_key_trip;
extern char lhost_key_pristine;
extern char lhost_key_policies;
extern char lhost_key_binder;
extern char lhost_key_guarded_string;
extern char lhost_key_env_base;
extern char lhost_key_env_libs;
extern char lhost_key_env_meta;
extern char lhost_key_shared;

static inline struct lhost *lhost_of(lua_State *L)
{
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return ud;
}

static inline void lhost_copy_str(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return;
    snprintf(dst, n, "%s", src ? src : "");
}

#endif
