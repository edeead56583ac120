/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lhost_budget: the call windows of the Lua host, their CPU-time and memory budgets, and the
 * messages of failed calls.  See lhost_budget.h; the design notes that matter for safety are
 * here, next to the code they explain.
 *
 * Budgets.  One struct lhost is the allocator's ud, so the hook, the allocator and every
 * C function reach it through lua_getallocf.  A policy call ("call window") sets in_call,
 * records call_base = bytes in use and a CPU-time deadline, installs a count hook on the
 * calling thread and arms the host's CPU-time timer for the deadline (its signal handler
 * re-arms the hook with count 1, so the hook runs at the very next instruction however long
 * each instruction or C call between count hooks is).  Long C loops poll the same deadline
 * (lhost_poll: lpattern's matcher, the sort comparator, chunked table.move).  When the
 * deadline passes, or when the allocator refused memory inside the
 * window, `tripped` is set and the hook is re-armed with count 1: from then on every Lua
 * instruction raises (a light userdata, so raising needs no memory), which makes pcall,
 * xpcall, message handlers and __close methods unable to run any code; the error unwinds to
 * the host's lua_pcall and the message comes from `tripped` and `where`, not from whatever
 * error object survived.  The Lua runtime runs __gc without hooks, so the sandbox's
 * setmetatable refuses metatables that carry __gc.
 */
#include "lhost_budget.h"
#include "lhostctx.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

/* The signal of the call windows' CPU-time timer (see lhost_on_timer). */
#define LHOST_TIMER_SIGNAL (SIGRTMIN + 7)
/* A failed call that grew the heap by more than this gives the freed memory back (malloc_trim). */
#define LHOST_TRIM_ABOVE ((size_t)8 << 20)

/* ---- budgets ---- */

static void lhost_now(struct timespec *ts)
{
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts) != 0)
        clock_gettime(CLOCK_MONOTONIC, ts);
}

/* True once the call window's CPU-time deadline has passed. */
static int lhost_deadline_passed(const struct lhost *h)
{
    struct timespec now;
    lhost_now(&now);
    return now.tv_sec > h->deadline.tv_sec ||
           (now.tv_sec == h->deadline.tv_sec && now.tv_nsec >= h->deadline.tv_nsec);
}

static void lhost_hook(lua_State *L, lua_Debug *ar);

static void lhost_arm_every_instruction(struct lhost *h)
{
    if (h->call_L)
        lua_sethook(h->call_L, lhost_hook, LUA_MASKCOUNT, 1);
}

/* Number of active frames on L (lua_getstack levels). */
static int lhost_stack_depth(lua_State *L)
{
    lua_Debug ar;
    int depth = 0;
    while (lua_getstack(L, depth, &ar))
        depth++;
    return depth;
}

/* Memory trips record the position in the allocator: a refused allocation unwinds with
 * LUA_ERRMEM, which runs no message handler and no hook, so afterwards the policy's frames
 * are gone.  Walking the stack from inside the allocator needs every CallInfo to point into
 * a valid stack: true up to Lua 5.4.4 (luaD_reallocstack allocates the new stack while the
 * old one stays in use), not from 5.4.5 (the stack pointers are offsets while the stack is
 * reallocated).  Newer releases keep the hook's position (or the fallback). */
#if LUA_VERSION_NUM == 504 && LUA_VERSION_RELEASE_NUM <= 50404
#define LHOST_WHERE_FROM_ALLOC 1
#else
#define LHOST_WHERE_FROM_ALLOC 0
#endif

/* Levels looked at, from the top of the stack, for the position of an error. */
#define LHOST_WHERE_LEVELS 16

/* Writes "<file>:<line>" of the innermost Lua frame of the call window on L, from `level` up,
 * into out; -1 when none of the LHOST_WHERE_LEVELS levels from the top is one.  C frames
 * (string.rep, table.concat, ...) are skipped, frames of the host below the window never
 * named.  The cost does not grow with the policy's depth: lua_getstack(L, n) walks n frames,
 * so the levels looked at are bounded, and "level is the window's" is tested as "a frame
 * exists call_depth levels above it" (the host's frames below the window are call_depth),
 * not by counting every frame (which made a memory trip in a 100,000-deep recursion walk the
 * stack once per frame).  Reads debug info only: allocates nothing. */
static int lhost_window_position(const struct lhost *h, lua_State *L, int level, char *out,
                                 size_t n)
{
    lua_Debug ar, probe;
    for (; level < LHOST_WHERE_LEVELS; level++) {
        if (!lua_getstack(L, h->call_depth + level, &probe) || !lua_getstack(L, level, &ar))
            return -1;
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
            snprintf(out, n, "%s:%d", ar.short_src, ar.currentline);
            return 0;
        }
    }
    return -1;
}

/* Sets `where` (once per window) to the position of the innermost Lua frame of the window. */
static void lhost_note_position(struct lhost *h)
{
    if (!h->where[0] && h->call_L)
        lhost_window_position(h, h->call_L, 0, h->where, sizeof h->where);
}

/* Raises the budget error of a tripped call from C code (a pattern search, a sort): the
 * position is the innermost Lua frame, the hook is armed for every instruction. */
static int lhost_raise_trip(struct lhost *h, lua_State *L)
{
    lhost_note_position(h);
    lhost_arm_every_instruction(h);
    lua_pushlightuserdata(L, &lhost_key_trip);
    return lua_error(L);
}

/* The poll of long C loops inside a call window (lpattern's budget, the sort comparator,
 * chunked table.move): raises once the call is tripped or past its deadline. */
void lhost_poll(lua_State *L, void *ud)
{
    struct lhost *h = ud;
    if (!h->in_call)
        return;
    if (!h->tripped && lhost_deadline_passed(h))
        h->tripped = LHOST_TRIP_TIME;
    if (h->tripped)
        lhost_raise_trip(h, L);
}

/* The CPU-time timer's signal: at the deadline of a call window it arms the hook for every
 * instruction (lua_sethook may be called asynchronously, lua.h), so the call stops at its next
 * instruction, whatever one VM instruction or C function between count hooks costs: a loop of
 * string.upper on 20 MiB, or `s .. "x"` on a 16 MiB s, overruns by one instruction, not by
 * LHOST_HOOK_EVERY of them.  The hook itself reads the clock and raises. */
static void lhost_on_timer(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    (void)uctx;
    struct lhost *h = si->si_value.sival_ptr;
    if (si->si_code == SI_TIMER && h && h->in_call && h->call_L)
        lua_sethook(h->call_L, lhost_hook, LUA_MASKCOUNT, 1);
}

/* Creates the host's CPU-time timer (signal LHOST_TIMER_SIGNAL to this thread); without one
 * (an old kernel, a sandbox refusing timers) the count hook alone keeps the budget. */
void lhost_timer_init(struct lhost *h)
{
    static int installed;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = lhost_on_timer;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(LHOST_TIMER_SIGNAL, &sa, NULL) != 0)
            return;
        installed = 1;
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = LHOST_TIMER_SIGNAL;
    sev.sigev_value.sival_ptr = h;
    sev._sigev_un._tid = gettid();
    h->has_timer = timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &h->timer) == 0;
}

/* Arms the timer to fire at the window's deadline (ms from now), or disarms it (0). */
static void lhost_timer_set(struct lhost *h, unsigned ms)
{
    if (!h->has_timer)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = ms / 1000;
    its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
    timer_settime(h->timer, 0, &its, NULL);
}

static void lhost_hook(lua_State *L, lua_Debug *ar)
{
    struct lhost *h = lhost_of(L);
    if (!h->in_call)
        return;
    if (!h->tripped) {
        if (!lhost_deadline_passed(h))
            return;
        h->tripped = LHOST_TRIP_TIME;
    }
    if (!h->where[0] && lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
        snprintf(h->where, sizeof h->where, "%s:%d", ar->short_src, ar->currentline);
    lhost_arm_every_instruction(h);
    lua_pushlightuserdata(L, &lhost_key_trip);
    lua_error(L);
}

/* The counting allocator.  Growth beyond the hard cap always fails.  Inside a call window,
 * growth beyond call_base + call_cap trips the call and arms the hook; the allocation itself
 * still succeeds while the overshoot stays within LHOST_MEM_SLACK, so that the hook raises at
 * the very next instruction with the exact file:line (an allocation failure unwinds without
 * any position).  Larger requests fail at once.  Shrinking never fails. */
#define LHOST_MEM_SLACK ((size_t)1 << 20)

void *lhost_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct lhost *h = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        h->used -= old;
        /* the base follows the heap down: garbage from before the call that the collector
         * frees during the call does not enlarge the policy's allowance */
        if (h->in_call && h->used < h->call_base)
            h->call_base = h->used;
        return NULL;
    }
    if (nsize > old) {
        size_t grow = nsize - old;
        if (h->in_call && h->used + grow > h->call_base + h->call_cap) {
            if (!h->tripped) {
                h->tripped = LHOST_TRIP_MEMORY;
                if (LHOST_WHERE_FROM_ALLOC)
                    lhost_note_position(h);
            }
            lhost_arm_every_instruction(h);
            if (h->used + grow > h->call_base + h->call_cap + LHOST_MEM_SLACK)
                return NULL;
        }
        if (h->used + grow > h->hard_cap)
            return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p)
        return NULL;
    h->used = h->used - old + nsize;
    if (h->used > h->peak)
        h->peak = h->used;
    if (h->in_call) {
        if (h->used < h->call_base)
            h->call_base = h->used;
        else if (h->used - h->call_base > h->call_peak)
            h->call_peak = h->used - h->call_base;
    }
    return p;
}

struct lhost_window {
    lua_Hook old_hook;
    int old_mask, old_count;
};

static void lhost_window_open(struct lhost *h, lua_State *L, struct lhost_window *w)
{
    w->old_hook = lua_gethook(L);
    w->old_mask = lua_gethookmask(L);
    w->old_count = lua_gethookcount(L);
    h->in_call = 1;
    h->tripped = LHOST_TRIP_NONE;
    h->where[0] = '\0';
    h->call_L = L;
    h->call_depth = lhost_stack_depth(L);
    h->call_base = h->used;
    h->call_peak = 0;
    h->sort_cost = 0;
    lhost_now(&h->deadline);
    h->deadline.tv_sec += h->timeout_ms / 1000;
    h->deadline.tv_nsec += (long)(h->timeout_ms % 1000) * 1000000L;
    if (h->deadline.tv_nsec >= 1000000000L) {
        h->deadline.tv_sec += 1;
        h->deadline.tv_nsec -= 1000000000L;
    }
    lua_sethook(L, lhost_hook, LUA_MASKCOUNT, LHOST_HOOK_EVERY);
    lhost_timer_set(h, h->timeout_ms);
}

static void lhost_window_close(struct lhost *h, lua_State *L, const struct lhost_window *w)
{
    lhost_timer_set(h, 0);
    h->in_call = 0;
    h->call_L = NULL;
    lua_sethook(L, w->old_hook, w->old_mask, w->old_count);
}

/* ---- error messages ---- */

/* True when msg starts with "<something>:<digits>: ". */
int lhost_has_position(const char *msg)
{
    const char *c = strchr(msg, ':');
    if (!c || c == msg)
        return 0;
    const char *d = c + 1;
    if (*d < '0' || *d > '9')
        return 0;
    while (*d >= '0' && *d <= '9')
        d++;
    return d[0] == ':' && d[1] == ' ';
}

/* Message handler for policy calls: a string message keeps its position or gets the one of
 * the innermost Lua frame; other error objects are described without calling metamethods. */
static int lhost_policy_msgh(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    if (h->tripped)
        return 1;
    const char *msg;
    if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER)
        msg = lua_tostring(L, 1);
    else
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    if (lhost_has_position(msg))
        return 1;
    /* only the frames of the call window: never the host's below it */
    char where[256];
    if (lhost_window_position(h, L, 1, where, sizeof where) == 0)
        lua_pushfstring(L, "%s: %s", where, msg);
    else
        lua_pushstring(L, msg);
    return 1;
}

/* After a failed call window: leaves the error string on top (replacing the error object).
 * `fallback` names the file:line to use when nothing better is known. */
static void lhost_push_failure(struct lhost *h, lua_State *L, int status, const char *fallback)
{
    const char *where = h->where[0] ? h->where : fallback;
    h->fail_kind = h->tripped == LHOST_TRIP_TIME ? "timeout"
                   : (h->tripped == LHOST_TRIP_MEMORY || status == LUA_ERRMEM) ? "nomem"
                                                                                 : "error";
    if (h->tripped == LHOST_TRIP_TIME) {
        lua_pop(L, 1);
        lua_pushfstring(L, "%s: policy exceeded its time budget (%d ms)", where,
                        (int)h->timeout_ms);
    } else if (h->tripped == LHOST_TRIP_MEMORY || status == LUA_ERRMEM) {
        lua_pop(L, 1);
        lua_pushfstring(L, "%s: policy exceeded its memory cap (%d MiB)", where,
                        (int)h->memory_mib);
    } else if (status == LUA_ERRERR || lua_type(L, -1) != LUA_TSTRING) {
        char what[64];
        snprintf(what, sizeof what, "(error object is a %s value)", luaL_typename(L, -1));
        lua_pop(L, 1);
        lua_pushfstring(L, "%s: %s", fallback,
                        status == LUA_ERRERR ? "error in error handling" : what);
    }
    h->tripped = LHOST_TRIP_NONE;
    /* give back what the failed call left behind, to the process (the collection) and to the
     * system (malloc keeps freed blocks below its dynamic mmap threshold, up to 32 MiB each:
     * without the trim, hostile calls one after the other left the RSS at 176 MiB, beyond
     * the state's 128 MiB cap) */
    lua_gc(L, LUA_GCCOLLECT, 0);
    if (h->call_peak > LHOST_TRIM_ABOVE)
        malloc_trim(0);
}

/* ---- running sandboxed functions ---- */

/* Calls the function below `nargs` arguments under a call window, one result.  On success
 * returns 0 with the raw result on top; on failure 1 with the error message on top. */
int lhost_sandboxed_call(struct lhost *h, lua_State *L, int nargs, const char *fallback)
{
    if (h->in_call) {
        lua_pop(L, nargs + 1);
        lua_pushstring(L, "fc.host: nested policy calls are not allowed");
        return 1;
    }
    int fn = lua_gettop(L) - nargs;
    lua_pushcfunction(L, lhost_policy_msgh);
    lua_insert(L, fn);
    struct lhost_window w;
    lhost_window_open(h, L, &w);
    int st = lua_pcall(L, nargs, 1, fn);
    lhost_window_close(h, L, &w);
    lua_remove(L, fn);
    if (st == LUA_OK && !h->tripped) {
        /* a long C call (a pattern search, say) may end after the deadline without the
         * hook getting a chance: the budget holds all the same */
        if (!lhost_deadline_passed(h))
            return 0;
        h->tripped = LHOST_TRIP_TIME;
    }
    lhost_push_failure(h, L, st == LUA_OK ? LUA_ERRRUN : st, fallback);
    return 1;
}
