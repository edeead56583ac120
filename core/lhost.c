/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lhost: the Lua host and the policy sandbox.  See lhost.h for the contract; the design notes
 * that matter for safety are here, next to the code they explain.
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
#include "lhost.h"
#include "lpattern.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <malloc.h>

#include <lauxlib.h>
#include <lualib.h>

#ifndef FC_DATADIR
#define FC_DATADIR "/usr/share/flink-controller"
#endif

#define LHOST_MIB ((size_t)1 << 20)
/* The signal of the call windows' CPU-time timer (see lhost_on_timer). */
#define LHOST_TIMER_SIGNAL (SIGRTMIN + 7)
#define LHOST_COPY_DEPTH 100
/* A failed call that grew the heap by more than this gives the freed memory back (malloc_trim). */
#define LHOST_TRIM_ABOVE ((size_t)8 << 20)

enum lhost_trip { LHOST_TRIP_NONE = 0, LHOST_TRIP_TIME, LHOST_TRIP_MEMORY };

struct lhost {
    lua_State *L;
    size_t used, peak;
    size_t hard_cap, call_cap, call_base, call_peak;
    volatile sig_atomic_t in_call; /* read by the timer's signal handler */
    int tripped;
    lua_State *volatile call_L;
    int has_timer;
    timer_t timer;                 /* CPU-time timer of the thread that made the host */
    struct lpattern_budget budget; /* lhost_poll, for the sandbox's pattern functions */
    unsigned sort_cost;            /* comparisons (weighted by length) since the last poll */
    int call_depth; /* frames on call_L when the window opened (the host's, not the policy's) */
    struct timespec deadline;
    unsigned timeout_ms, memory_mib;
    char where[256];
    char datadir[PATH_MAX];
    char policy_dir[PATH_MAX];
};

/* Registry keys: the addresses of these (distinct, writable, so never merged) statics. */
static char lhost_key_trip;
static char lhost_key_pristine;
static char lhost_key_policies; /* name -> compiled policy chunk | load error; path -> lib chunk */
static char lhost_key_binder;
static char lhost_key_guarded_string;

static int lhost_open_fc_yaml(lua_State *L);

/* ---- the marked list of C Lua modules compiled into the binary ---- */
static const luaL_Reg lhost_cmodules[] = {
    {"fc.host", luaopen_fc_host},
    {"fc.slots", luaopen_fc_slots},
    {"fc.yaml", lhost_open_fc_yaml},
    /* core/lua_<name>.c modules: add {"fc.<name>", luaopen_fc_<name>} here */
    {NULL, NULL}
};

/* Modules a policy may require from the framework (pure Lua or C, private copy each). */
static const char *const lhost_policy_modules[] = {"fc.util", "fc.quantity", "fc.slots", "fc.profile", "fc.yaml",
                                                    "fc.crd", "fc.names", NULL};

static struct lhost *lhost_of(lua_State *L)
{
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return ud;
}

static void lhost_copy_str(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return;
    snprintf(dst, n, "%s", src ? src : "");
}

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
static void lhost_poll(lua_State *L, void *ud)
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
static void lhost_timer_init(struct lhost *h)
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

static void *lhost_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
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
static int lhost_has_position(const char *msg)
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

/* ---- plain-data copies (raw access: no metamethod of a policy ever runs here) ---- */

int lhost_key_path(lua_State *L, int idx, char *path, size_t pathlen)
{
    size_t base = strlen(path);
    if (lua_type(L, idx) == LUA_TSTRING)
        snprintf(path + base, pathlen - base, "%s%s", base ? "." : "", lua_tostring(L, idx));
    else if (lua_isinteger(L, idx))
        snprintf(path + base, pathlen - base, "[%lld]", (long long)lua_tointeger(L, idx));
    else if (lua_type(L, idx) == LUA_TNUMBER)
        snprintf(path + base, pathlen - base, "[%g]", lua_tonumber(L, idx));
    else
        return -1;
    return 0;
}

/* 0 when the value at idx is no number or a finite one; else -1 with err "<path>: NaN is not a
 * JSON number" (or inf, -inf): JSON (RFC 8259, section 6) has no such numbers, so a policy's NaN
 * would fail the whole pass where it is encoded, far from the policy that made it. */
static int lhost_check_finite(lua_State *L, int idx, const char *path, char *err, size_t errlen)
{
    if (lua_type(L, idx) != LUA_TNUMBER || lua_isinteger(L, idx))
        return 0;
    lua_Number x = lua_tonumber(L, idx);
    if (isfinite(x))
        return 0;
    snprintf(err, errlen, "%s: %s is not a JSON number", path[0] ? path : "value",
             isnan(x) ? "NaN" : x > 0 ? "inf" : "-inf");
    return -1;
}

/* Pushes a copy of the table at idx.  Only string and number keys; values may be booleans,
 * finite numbers, strings and tables.  Returns -1 with err filled on a bad value or depth. */
static int lhost_copy_table(lua_State *L, int idx, int depth, char *err, size_t errlen,
                            char *path, size_t pathlen)
{
    idx = lua_absindex(L, idx);
    if (depth > LHOST_COPY_DEPTH) {
        snprintf(err, errlen, "%s: nested deeper than %d levels (a cycle?)",
                 path[0] ? path : "value", LHOST_COPY_DEPTH);
        return -1;
    }
    if (!lua_checkstack(L, 4)) {
        snprintf(err, errlen, "%s: Lua stack exhausted", path[0] ? path : "value");
        return -1;
    }
    lua_newtable(L);
    size_t base = strlen(path);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lhost_key_path(L, -2, path, pathlen)) {
            snprintf(err, errlen, "%s: %s key is not allowed", base ? path : "value",
                     luaL_typename(L, -2));
            lua_pop(L, 3);
            return -1;
        }
        int vt = lua_type(L, -1);
        if (lhost_check_finite(L, -2, path, err, errlen) || lhost_check_finite(L, -1, path, err, errlen)) {
            lua_pop(L, 3);
            return -1;
        }
        if (vt == LUA_TTABLE) {
            if (lhost_copy_table(L, -1, depth + 1, err, errlen, path, pathlen)) {
                lua_pop(L, 3);
                return -1;
            }
        } else if (vt == LUA_TSTRING || vt == LUA_TNUMBER || vt == LUA_TBOOLEAN) {
            lua_pushvalue(L, -1);
        } else {
            snprintf(err, errlen, "%s: %s value is not allowed", path, luaL_typename(L, -1));
            lua_pop(L, 3);
            return -1;
        }
        /* stack: copy, key, value, valuecopy */
        lua_pushvalue(L, -3);
        lua_insert(L, -2);
        lua_rawset(L, -5);
        lua_pop(L, 1);
        path[base] = '\0';
    }
    return 0;
}

/* Pushes a plain-data copy of the value at idx (see lhost_copy_table); -1 on error
 * (nothing pushed). */
static int lhost_copy(lua_State *L, int idx, char *err, size_t errlen)
{
    char path[512] = "";
    int t = lua_type(L, idx);
    if (t == LUA_TTABLE)
        return lhost_copy_table(L, idx, 0, err, errlen, path, sizeof path);
    if (t == LUA_TNIL || t == LUA_TSTRING || t == LUA_TNUMBER || t == LUA_TBOOLEAN) {
        if (lhost_check_finite(L, idx, path, err, errlen))
            return -1;
        lua_pushvalue(L, idx);
        return 0;
    }
    snprintf(err, errlen, "value: %s value is not allowed", lua_typename(L, t));
    return -1;
}

/* ---- sandbox library wrappers ---- */

static int lhost_sb_print(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "policy ");
    luaL_addstring(&b, lua_tostring(L, lua_upvalueindex(1)));
    luaL_addstring(&b, ":");
    for (int i = 1; i <= n; i++) {
        luaL_addchar(&b, i == 1 ? ' ' : '\t');
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    return 0;
}

/* Calls upvalue 1 (the original library function, a policy's handler or comparator) with the
 * current arguments; returns the number of its results (nresults, or all for LUA_MULTRET). */
static int lhost_forward_n(lua_State *L, int nresults)
{
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, nresults);
    return lua_gettop(L);
}

static int lhost_forward(lua_State *L) { return lhost_forward_n(L, LUA_MULTRET); }

static int lhost_sb_setmetatable(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L, "setmetatable: __gc metamethods are not allowed in policies");
        lua_pop(L, 1);
    }
    return lhost_forward(L);
}

/* The message handler of the sandbox's xpcall: runs the policy's handler (upvalue 1) only
 * while the call is not tripped.  An error raised by the budget hook calls message handlers
 * with hooks disabled (the hook is still "running"), so a looping handler could never be
 * interrupted: skipping it is the only safe choice. */
static int lhost_sb_xpcall_msgh(lua_State *L)
{
    if (lhost_of(L)->tripped)
        return 1;
    return lhost_forward_n(L, 1);
}

static int lhost_sb_xpcall(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_checkany(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, lhost_sb_xpcall_msgh, 1);
    lua_replace(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

/* rawset in the sandbox: upvalue 1 the original, upvalue 2 the policy's environment, which it
 * refuses (the environment's __newindex already refuses plain writes). */
static int lhost_sb_rawset(lua_State *L)
{
    if (lua_rawequal(L, 1, lua_upvalueindex(2)))
        return luaL_error(L, "rawset: policies cannot write globals (the environment is read-only)");
    return lhost_forward(L);
}

static int lhost_sb_undefined(lua_State *L)
{
    return luaL_error(L, "undefined global '%s' (not available to policies)",
                      luaL_optstring(L, 2, "?"));
}

static int lhost_sb_readonly(lua_State *L)
{
    return luaL_error(L, "assignment to global '%s': policies cannot write globals",
                      lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?");
}

static int lhost_guard_rep(lua_State *L)
{
    size_t l = 0, lsep = 0;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    /* the C loop runs n times even when every copy is empty */
    if (n > 0 && l == 0 && lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    return lhost_forward(L);
}

/* table.move in chunks of LHOST_MOVE_CHUNK elements (the original on each), the budget
 * polled between them: the C loop of one call over 2^50 elements ends at the deadline like a
 * Lua loop.  The chunks go in the order that keeps an overlapping move right (downwards when
 * the destination starts inside the source of the same table); the argument checks are the
 * original's, made here once for the whole range. */
static int lhost_guard_move(lua_State *L)
{
    lua_Integer f = luaL_checkinteger(L, 2);
    lua_Integer e = luaL_checkinteger(L, 3);
    lua_Integer t = luaL_checkinteger(L, 4);
    int dst = lua_isnoneornil(L, 5) ? 1 : 5;
    if (e < f || e - f < LHOST_MOVE_CHUNK)
        return lhost_forward(L);
    luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
    lua_Integer n = e - f + 1;
    luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4, "destination wrap around");
    int down = t > f && t <= e && (dst == 1 || lua_rawequal(L, 1, 5));
    struct lhost *h = lhost_of(L);
    for (lua_Integer done = 0; done < n; done += LHOST_MOVE_CHUNK) {
        lua_Integer len = n - done < LHOST_MOVE_CHUNK ? n - done : LHOST_MOVE_CHUNK;
        lua_Integer cf = down ? e - done - len + 1 : f + done;
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_pushvalue(L, 1);
        lua_pushinteger(L, cf);
        lua_pushinteger(L, cf + len - 1);
        lua_pushinteger(L, t + (cf - f));
        lua_pushvalue(L, dst);
        lua_call(L, 5, 0);
        lhost_poll(L, h);
    }
    lua_pushvalue(L, dst);
    return 1;
}

/* The comparator of table.sort without a Lua one: `<` (or the C function given, upvalue 1),
 * polling the budget every LHOST_SORT_POLL units of work (a comparison, plus one per 256
 * bytes of the shorter string compared), so that the C sort of a million elements, or of
 * long equal strings, ends at the deadline. */
static int lhost_sort_less(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    size_t la = 0, lb = 0;
    unsigned cost = 1;
    if (lua_type(L, 1) == LUA_TSTRING && lua_type(L, 2) == LUA_TSTRING) {
        lua_tolstring(L, 1, &la);
        lua_tolstring(L, 2, &lb);
        size_t shorter = la < lb ? la : lb;
        cost += shorter > ((size_t)UINT_MAX >> 9) ? UINT_MAX >> 1 : (unsigned)(shorter >> 8);
    }
    if (cost >= LHOST_SORT_POLL - h->sort_cost) {
        h->sort_cost = 0;
        lhost_poll(L, h);
    } else {
        h->sort_cost += cost;
    }
    if (lua_isnil(L, lua_upvalueindex(1))) {
        lua_pushboolean(L, lua_compare(L, 1, 2, LUA_OPLT));
        return 1;
    }
    return lhost_forward_n(L, 1);
}

/* table.sort runs in C; a Lua comparator is seen by the hook, any other sort gets
 * lhost_sort_less. */
static int lhost_guard_sort(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    if (lua_type(L, 2) != LUA_TFUNCTION || lua_iscfunction(L, 2)) {
        if (!lua_isnoneornil(L, 2))
            luaL_checktype(L, 2, LUA_TFUNCTION);
        lua_settop(L, 2);
        lua_pushcclosure(L, lhost_sort_less, 1);
    }
    return lhost_forward(L);
}

/* Replaces field `name` of the table on top by `fn` closed over the original. */
static void lhost_wrap(lua_State *L, const char *name, lua_CFunction fn)
{
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, -2, name);
}

/* Pushes a shallow copy of the table at idx. */
static void lhost_shallow_copy(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
    }
}

/* ---- policy environments ---- */

static int lhost_sb_require(lua_State *L);

/* Pushes a fresh policy environment; `label` names the policy in print output. */
static void lhost_push_env(lua_State *L, const char *label)
{
    static const char *const base[] = {
        "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
        "rawlen", "select", "getmetatable", "tonumber", "tostring", "type", "_VERSION", NULL};
    static const char *const os_fns[] = {"time", "date", "clock", "difftime", NULL};
    lua_newtable(L);
    int env = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_pristine);
    int pristine = lua_gettop(L);
    for (int i = 0; base[i]; i++) {
        lua_getfield(L, pristine, base[i]);
        lua_setfield(L, env, base[i]);
    }
    lua_getfield(L, pristine, "xpcall");
    lua_pushcclosure(L, lhost_sb_xpcall, 1);
    lua_setfield(L, env, "xpcall");
    lua_getfield(L, pristine, "setmetatable");
    lua_pushcclosure(L, lhost_sb_setmetatable, 1);
    lua_setfield(L, env, "setmetatable");
    lua_getfield(L, pristine, "rawset");
    lua_pushvalue(L, env);
    lua_pushcclosure(L, lhost_sb_rawset, 2);
    lua_setfield(L, env, "rawset");
    lua_pushstring(L, label);
    lua_pushcclosure(L, lhost_sb_print, 1);
    lua_setfield(L, env, "print");
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_guarded_string);
    lhost_shallow_copy(L, -1);
    lua_setfield(L, env, "string");
    lua_pop(L, 1);
    static const char *const libs[] = {"table", "math", "utf8", NULL};
    for (int i = 0; libs[i]; i++) {
        lua_getfield(L, pristine, libs[i]);
        lhost_shallow_copy(L, -1);
        if (i == 0) {
            lhost_wrap(L, "move", lhost_guard_move);
            lhost_wrap(L, "sort", lhost_guard_sort);
        }
        lua_setfield(L, env, libs[i]);
        lua_pop(L, 1);
    }
    lua_newtable(L);
    lua_getfield(L, pristine, "os");
    for (int i = 0; os_fns[i]; i++) {
        lua_getfield(L, -1, os_fns[i]);
        lua_setfield(L, -3, os_fns[i]);
    }
    lua_pop(L, 1);
    lua_setfield(L, env, "os");
    lua_pop(L, 1); /* pristine */
    /* require: upvalues are the env itself and its private `loaded` table */
    lua_pushvalue(L, env);
    lua_newtable(L);
    lua_pushcclosure(L, lhost_sb_require, 2);
    lua_setfield(L, env, "require");
    /* strict globals */
    lua_newtable(L);
    lua_pushcfunction(L, lhost_sb_undefined);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, lhost_sb_readonly);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, env);
}

/* Reads a whole file into a Lua string (pushed); -1 with err on failure.  The buffer is a
 * userdata allocated before the file is opened, so that a memory error (which unwinds) can
 * never leave a FILE open. */
static int lhost_push_file(lua_State *L, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot open %s: not a regular file", path);
        return -1;
    }
    if ((unsigned long long)st.st_size > LHOST_POLICY_FILE_MAX) {
        snprintf(err, errlen, "%s: larger than %u bytes", path, LHOST_POLICY_FILE_MAX);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    char *buf = lua_newuserdatauv(L, size + 1, 0);
    FILE *f = fopen(path, "rb");
    if (!f) {
        lua_pop(L, 1);
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(buf, 1, size + 1, f);
    int bad = ferror(f) || n > size;
    fclose(f);
    if (bad) {
        lua_pop(L, 1);
        snprintf(err, errlen, "cannot read %s%s", path, n > size ? ": it changed while read" : "");
        return -1;
    }
    lua_pushlstring(L, buf, n);
    lua_remove(L, -2);
    return 0;
}

/* Loads the text chunk on top of the stack (a string) as `chunkname` with the environment at
 * env_idx; replaces the string with the function, or returns -1 leaving an error message. */
static int lhost_load_in_env(lua_State *L, int env_idx, const char *chunkname)
{
    env_idx = lua_absindex(L, env_idx);
    size_t len;
    const char *src = lua_tolstring(L, -1, &len);
    int st = luaL_loadbufferx(L, src, len, chunkname, "t");
    lua_remove(L, -2);
    if (st != LUA_OK)
        return -1;
    lua_pushvalue(L, env_idx);
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
    return 0;
}

/* Gives the Lua function at fn_idx (a compiled chunk) a new _ENV upvalue holding the table at
 * env_idx.  The upvalue is a fresh one (lua_upvaluejoin with a closure of the binder, made per
 * call), never the one an earlier run of the same chunk closed over: the closures of that run
 * keep their own environment, nothing of it reaches this one. */
static void lhost_bind_env(lua_State *L, int fn_idx, int env_idx)
{
    fn_idx = lua_absindex(L, fn_idx);
    env_idx = lua_absindex(L, env_idx);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_binder);
    lua_pushvalue(L, env_idx);
    lua_call(L, 1, 1);
    lua_upvaluejoin(L, fn_idx, 1, -1, 1);
    lua_pop(L, 1);
}

/* Pushes the compiled chunk of file `path` (chunk name `chunkname`) from the cache of the
 * registry's policies table, compiling it (text only) on first use.  Returns -1 with the
 * message pushed instead when the file cannot be read or compiled (nothing is cached then). */
static int lhost_push_compiled(lua_State *L, const char *path, const char *chunkname, char *err,
                               size_t errlen)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_policies);
    if (lua_getfield(L, -1, path) == LUA_TFUNCTION) {
        lua_remove(L, -2);
        return 0;
    }
    lua_pop(L, 1);
    if (lhost_push_file(L, path, err, errlen)) {
        lua_pop(L, 1);
        lua_pushstring(L, err);
        return -1;
    }
    size_t len;
    const char *src = lua_tolstring(L, -1, &len);
    int st = luaL_loadbufferx(L, src, len, chunkname, "t");
    lua_remove(L, -2);
    if (st != LUA_OK) {
        lua_remove(L, -2);
        return -1;
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, path);
    lua_remove(L, -2);
    return 0;
}

static int lhost_is_name(const char *s, int allow_dash)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || (allow_dash && c == '-');
        if (!ok)
            return 0;
    }
    return 1;
}

/* "fc.util.lua" -> "fc/util.lua": every '.' of a module name in s becomes '/', all but the
 * one that starts a trailing ".lua". */
static void lhost_module_path(char *s)
{
    for (char *c = s; *c; c++)
        if (*c == '.' && strcmp(c, ".lua") != 0)
            *c = '/';
}

/* package.preload["fc.yaml"]: the trusted Lua module <datadir>/lua/fc/yaml.lua (YAML text
 * through lyaml, which the sandbox cannot reach), loaded with the host's own globals and
 * require.  The sandbox's require gets a private shallow copy of its table, like a C module's;
 * its functions run under the calling policy's budgets. */
static int lhost_open_fc_yaml(lua_State *L)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/lua/fc/yaml.lua", lhost_of(L)->datadir);
    if (luaL_loadfilex(L, path, "t") != LUA_OK)
        return lua_error(L);
    lua_pushliteral(L, "fc.yaml");
    lua_call(L, 1, 1);
    return 1;
}

/* require inside the sandbox.  Runs within the caller's call window (its budgets). */
static int lhost_sb_require(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    const char *name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    char path[PATH_MAX + 64], chunk[96], err[PATH_MAX + 128];
    int allowed = 0;
    for (int i = 0; lhost_policy_modules[i]; i++)
        if (strcmp(name, lhost_policy_modules[i]) == 0)
            allowed = 1;
    if (allowed) {
        /* preloaded (C, or trusted Lua as fc.yaml): the host's own module, loaded once by the
         * host's require; the policy gets a private shallow copy of its table */
        lua_getglobal(L, "package");
        lua_getfield(L, -1, "preload");
        if (lua_getfield(L, -1, name) == LUA_TFUNCTION) {
            lua_pop(L, 3);
            lua_getglobal(L, "require");
            lua_pushstring(L, name);
            lua_call(L, 1, 1);
            if (!lua_istable(L, -1))
                return luaL_error(L, "require: module '%s' did not return a table", name);
            lhost_shallow_copy(L, -1);
            goto done;
        }
        lua_pop(L, 3);
        snprintf(path, sizeof path, "%s/lua/%s.lua", h->datadir, name);
        lhost_module_path(path + strlen(h->datadir) + 5);
        snprintf(chunk, sizeof chunk, "@%s.lua", name);
        lhost_module_path(chunk + 1);
    } else if (strncmp(name, "lib.", 4) == 0 && lhost_is_name(name + 4, 0)) {
        snprintf(path, sizeof path, "%s/lib/%s.lua", h->policy_dir, name + 4);
        snprintf(chunk, sizeof chunk, "@lib/%s.lua", name + 4);
    } else {
        return luaL_error(L, "require: module '%s' is not available to policies (allowed: "
                             "fc.util, fc.quantity, fc.slots, fc.profile, fc.yaml, fc.crd, fc.names, "
                             "lib.<name>)",
                          name);
    }
    if (lhost_push_compiled(L, path, chunk, err, sizeof err)) {
        if (lhost_has_position(lua_tostring(L, -1)))
            return lua_error(L); /* a syntax error: "lib/x.lua:3: ..." */
        return luaL_error(L, "require: %s", lua_tostring(L, -1));
    }
    lhost_bind_env(L, -1, lua_upvalueindex(1));
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
done:
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, lua_upvalueindex(2));
    return 1;
}

/* ---- running sandboxed functions ---- */

/* Calls the function below `nargs` arguments under a call window, one result.  On success
 * returns 0 with the raw result on top; on failure 1 with the error message on top. */
static int lhost_sandboxed_call(struct lhost *h, lua_State *L, int nargs, const char *fallback)
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

/* Pushes the compiled chunk of policy `name` (cached, load failures too); on failure returns -1
 * with the message pushed instead. */
static int lhost_push_policy(struct lhost *h, lua_State *L, const char *name)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_policies);
    int t = lua_getfield(L, -1, name);
    lua_remove(L, -2);
    if (t == LUA_TFUNCTION)
        return 0;
    if (t == LUA_TSTRING) /* a cached load failure */
        return -1;
    lua_pop(L, 1);
    if (!lhost_is_name(name, 1)) {
        lua_pushfstring(L, "fc.host: invalid policy name '%s'", name);
        return -1;
    }
    char path[PATH_MAX + 80], chunk[100], err[PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s.lua", h->policy_dir, name);
    snprintf(chunk, sizeof chunk, "@%s.lua", name);
    int rc = lhost_push_compiled(L, path, chunk, err, sizeof err);
    if (rc && !lhost_has_position(lua_tostring(L, -1))) {
        lua_pop(L, 1);
        lua_pushfstring(L, "%s: %s", chunk + 1, err);
    }
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_policies);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
    return rc;
}

/* Pushes "<file>:<line>" of the Lua function on top (for errors without a position). */
static void lhost_fn_position(lua_State *L, const char *file, char *out, size_t n)
{
    lua_Debug ar;
    lua_pushvalue(L, -1);
    if (lua_getinfo(L, ">S", &ar) && ar.linedefined > 0)
        snprintf(out, n, "%s:%d", ar.short_src, ar.linedefined);
    else
        snprintf(out, n, "%s:1", file);
}

/* Puts `false` below the error message on top; returns 2 (the Lua results false, message). */
static int lhost_return_failure(lua_State *L)
{
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/* The common end of fc.host.call and run_chunk: calls the function `nargs` below the top with
 * those arguments and a plain-data copy of the value at `input` under a call window, and
 * returns the Lua results `true, <copy of the result>` or `false, "<file>:<line>: <message>"`.
 * A bad input raises "<fn>: input: <what>"; a bad result reads "<fallback>: <hook> returned a
 * bad result: <what>" (or "<fallback>: bad result: <what>" when hook is NULL); `fallback` is
 * read after the call (the call may set it). */
static int lhost_call_copied(struct lhost *h, lua_State *L, int nargs, int input, const char *fn,
                             const char *fallback, const char *hook)
{
    char err[768];
    if (lhost_copy(L, input, err, sizeof err))
        return luaL_error(L, "%s: input: %s", fn, err);
    if (lhost_sandboxed_call(h, L, nargs + 1, fallback))
        return lhost_return_failure(L);
    if (lhost_copy(L, -1, err, sizeof err)) {
        lua_pushboolean(L, 0);
        if (hook)
            lua_pushfstring(L, "%s: %s returned a bad result: %s", fallback, hook, err);
        else
            lua_pushfstring(L, "%s: bad result: %s", fallback, err);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -2);
    return 2;
}

/* One policy call, inside its call window. */
struct lhost_hook_call {
    const char *policy, *hook;
    char position[128]; /* "<file>:<line>" of the hook once known, else "<policy>.lua:1" */
};

/* lhost_run_hook(hc, chunk, input): runs the policy's top level (the chunk, bound to a fresh
 * environment) and then its hook on input; the hook's result. */
static int lhost_run_hook(lua_State *L)
{
    struct lhost_hook_call *hc = lua_touserdata(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 0, 1);
    if (!lua_istable(L, -1))
        return luaL_error(L, "%s.lua: must return a table of hooks, got %s", hc->policy,
                          luaL_typename(L, -1));
    lua_pushstring(L, hc->hook);
    if (lua_rawget(L, -2) != LUA_TFUNCTION)
        return luaL_error(L, "%s.lua: hook '%s' is not a function", hc->policy, hc->hook);
    char file[96];
    snprintf(file, sizeof file, "%s.lua", hc->policy);
    lhost_fn_position(L, file, hc->position, sizeof hc->position);
    lua_pushvalue(L, 3);
    lua_call(L, 1, 1);
    return 1;
}

/* fc.host.call(policy, hook, input) -> true, result | false, "<file>:<line>: <message>".
 * Nothing carries over from one call to the next: the policy's compiled chunk runs its top
 * level afresh in a new environment for every call (new module table, upvalues, requires). */
static int lhost_l_call(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    struct lhost_hook_call hc = {luaL_checkstring(L, 1), luaL_checkstring(L, 2), ""};
    lua_settop(L, 3);
    snprintf(hc.position, sizeof hc.position, "%s.lua:1", hc.policy);
    if (lhost_push_policy(h, L, hc.policy))
        return lhost_return_failure(L);
    lua_pushcfunction(L, lhost_run_hook);
    lua_pushlightuserdata(L, &hc);
    lua_pushvalue(L, -3);
    lhost_push_env(L, hc.policy);
    lhost_bind_env(L, -2, -1);
    lua_pop(L, 1); /* the env: held by the chunk's new upvalue */
    return lhost_call_copied(h, L, 2, 3, "call", hc.position, hc.hook);
}

/* fc.host.run_chunk(name, text, input) -> true, result | false, err: runs a text chunk under
 * a fresh sandbox with `...` = a copy of input. */
static int lhost_l_run_chunk(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    const char *name = luaL_checkstring(L, 1);
    luaL_checkstring(L, 2);
    lua_settop(L, 3);
    char chunk[300], fallback[300];
    snprintf(chunk, sizeof chunk, "@%s", name);
    snprintf(fallback, sizeof fallback, "%s:1", name);
    lhost_push_env(L, name);
    lua_pushvalue(L, 2);
    if (lhost_load_in_env(L, -2, chunk))
        return lhost_return_failure(L);
    return lhost_call_copied(h, L, 0, 3, "run_chunk", fallback, NULL);
}

/* fc.host.configure{policy_dir=DIR, timeout_ms=N, memory_mib=N}: a new policy_dir drops the
 * loaded policies. */
static int lhost_l_configure(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    if (lua_getfield(L, 1, "policy_dir") != LUA_TNIL) {
        const char *dir = luaL_checkstring(L, -1);
        if (strlen(dir) >= sizeof h->policy_dir)
            return luaL_error(L, "configure: policy_dir too long");
        lhost_copy_str(h->policy_dir, sizeof h->policy_dir, dir);
        lua_newtable(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_policies);
    }
    if (lua_getfield(L, 1, "timeout_ms") != LUA_TNIL) {
        lua_Integer v = luaL_checkinteger(L, -1);
        if (v < 1 || v > 3600000)
            return luaL_error(L, "configure: timeout_ms must be 1..3600000");
        h->timeout_ms = (unsigned)v;
    }
    if (lua_getfield(L, 1, "memory_mib") != LUA_TNIL) {
        lua_Integer v = luaL_checkinteger(L, -1);
        if (v < 1 || v > 65536)
            return luaL_error(L, "configure: memory_mib must be 1..65536");
        h->memory_mib = (unsigned)v;
        h->call_cap = (size_t)v * LHOST_MIB;
    }
    return 0;
}

/* fc.host.info() -> {policy_dir=, datadir=, timeout_ms=, memory_mib=, used=bytes, peak=bytes,
 *   call_peak=bytes (the last call window's most above its base), hard_cap=bytes} */
static int lhost_l_info(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    lua_createtable(L, 0, 8);
    lua_pushstring(L, h->policy_dir);
    lua_setfield(L, -2, "policy_dir");
    lua_pushstring(L, h->datadir);
    lua_setfield(L, -2, "datadir");
    lua_pushinteger(L, h->timeout_ms);
    lua_setfield(L, -2, "timeout_ms");
    lua_pushinteger(L, h->memory_mib);
    lua_setfield(L, -2, "memory_mib");
    lua_pushinteger(L, (lua_Integer)h->used);
    lua_setfield(L, -2, "used");
    lua_pushinteger(L, (lua_Integer)h->peak);
    lua_setfield(L, -2, "peak");
    lua_pushinteger(L, (lua_Integer)h->call_peak);
    lua_setfield(L, -2, "call_peak");
    lua_pushinteger(L, (lua_Integer)h->hard_cap);
    lua_setfield(L, -2, "hard_cap");
    return 1;
}

int luaopen_fc_host(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"call", lhost_l_call},
        {"run_chunk", lhost_l_run_chunk},
        {"configure", lhost_l_configure},
        {"info", lhost_l_info},
        {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "sandboxed");
    return 1;
}

/* ---- state setup ---- */

static int lhost_setup(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV"); /* ignore LUA_PATH / LUA_CPATH */
    luaL_openlibs(L);
    /* string.dump is gone for everyone: nothing here needs bytecode */
    lua_getglobal(L, "string");
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    /* the table behind string methods ("x"):rep(...) is a guarded copy; the metatable is
     * protected so that policies cannot reach or change it */
    lhost_shallow_copy(L, -1);
    lhost_wrap(L, "rep", lhost_guard_rep);
    lpattern_register(L, &h->budget);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_guarded_string);
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "string");
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 4);
    /* pristine copies of the globals policies get */
    lua_pushglobaltable(L);
    lhost_shallow_copy(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_pristine);
    lua_pop(L, 1);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_policies);
    /* the binder of lhost_bind_env: each call returns a closure over a new upvalue */
    if (luaL_loadstring(L, "local e = ... return function() return e end") != LUA_OK)
        return lua_error(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_binder);
    /* package.path: the framework first, then the compiled-in system paths, never the
     * current directory (./?.lua, ./?.so) */
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    luaL_gsub(L, lua_tostring(L, -1), ";./?.lua;./?/init.lua", "");
    lua_pushfstring(L, "%s/lua/?.lua;%s/lua/?/init.lua;%s", h->datadir, h->datadir,
                    lua_tostring(L, -1));
    lua_setfield(L, -4, "path");
    lua_pop(L, 2);
    lua_getfield(L, -1, "cpath");
    luaL_gsub(L, lua_tostring(L, -1), ";./?.so", "");
    lua_setfield(L, -3, "cpath");
    lua_pop(L, 1);
    lua_getfield(L, -1, "preload");
    for (const luaL_Reg *m = lhost_cmodules; m->name; m++) {
        lua_pushcfunction(L, m->func);
        lua_setfield(L, -2, m->name);
    }
    lua_pop(L, 2);
    return 0;
}

static int lhost_resolve_dir(char *dst, size_t n, const char *src, const char *what, char *err,
                             size_t errlen)
{
    if (strlen(src) >= n) {
        snprintf(err, errlen, "%s too long: %s", what, src);
        return -1;
    }
    lhost_copy_str(dst, n, src);
    size_t len = strlen(dst);
    while (len > 1 && dst[len - 1] == '/')
        dst[--len] = '\0';
    return 0;
}

struct lhost *lhost_new(const struct lhost_opts *opts, char *err, size_t errlen)
{
    struct lhost *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "lhost_new: out of memory");
        return NULL;
    }
    const char *datadir = opts ? opts->datadir : NULL;
    if (!datadir || !*datadir)
        datadir = getenv("FLINK_CONTROLLER_HOME");
    if (!datadir || !*datadir)
        datadir = FC_DATADIR;
    if (lhost_resolve_dir(h->datadir, sizeof h->datadir, datadir, "datadir", err, errlen))
        goto fail;
    if (opts && opts->policy_dir && *opts->policy_dir) {
        if (lhost_resolve_dir(h->policy_dir, sizeof h->policy_dir, opts->policy_dir,
                              "policy dir", err, errlen))
            goto fail;
    } else {
        snprintf(h->policy_dir, sizeof h->policy_dir, "%.*s/policies",
                 (int)(sizeof h->policy_dir - 10), h->datadir);
    }
    h->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : LHOST_TIMEOUT_MS_DEFAULT;
    h->memory_mib = opts && opts->memory_mib ? opts->memory_mib : LHOST_MEMORY_MIB_DEFAULT;
    h->call_cap = (size_t)h->memory_mib * LHOST_MIB;
    unsigned hard_mib = opts && opts->hard_mib ? opts->hard_mib : LHOST_HARD_MIB_DEFAULT;
    const char *env = getenv("FLINK_CONTROLLER_LUA_MEMORY_MIB");
    if ((!opts || !opts->hard_mib) && env && *env) {
        char *end;
        unsigned long v = strtoul(env, &end, 10);
        if (*end || v < 16 || v > 65536) {
            snprintf(err, errlen, "FLINK_CONTROLLER_LUA_MEMORY_MIB: expected an integer 16..65536, "
                                  "got '%s'", env);
            goto fail;
        }
        hard_mib = (unsigned)v;
    }
    size_t hard = (size_t)hard_mib * LHOST_MIB;
    /* one call's cap and its slack above what the framework holds */
    h->hard_cap = hard > h->call_cap + 16 * LHOST_MIB ? hard : h->call_cap + 16 * LHOST_MIB;
    h->budget.poll = lhost_poll;
    h->budget.ud = h;
    lhost_timer_init(h);
    h->L = lua_newstate(lhost_alloc, h);
    if (!h->L) {
        snprintf(err, errlen, "lhost_new: cannot create the Lua state");
        goto fail;
    }
    lua_pushcfunction(h->L, lhost_setup);
    if (lua_pcall(h->L, 0, 0, 0) != LUA_OK) {
        snprintf(err, errlen, "lhost_new: %s", lua_tostring(h->L, -1));
        goto fail;
    }
    return h;
fail:
    lhost_free(h);
    return NULL;
}

void lhost_free(struct lhost *h)
{
    if (!h)
        return;
    if (h->L)
        lua_close(h->L);
    if (h->has_timer)
        timer_delete(h->timer);
    free(h);
}

lua_State *lhost_state(struct lhost *h) { return h->L; }
const char *lhost_datadir(const struct lhost *h) { return h->datadir; }
const char *lhost_policy_dir(const struct lhost *h) { return h->policy_dir; }
size_t lhost_mem_used(const struct lhost *h) { return h->used; }
size_t lhost_mem_peak(const struct lhost *h) { return h->peak; }

static int lhost_traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg)
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int lhost_pcall(struct lhost *h, int nargs, int nresults, char *err, size_t errlen)
{
    lua_State *L = h->L;
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, lhost_traceback);
    lua_insert(L, base);
    int st = lua_pcall(L, nargs, nresults, base);
    if (st != LUA_OK) {
        const char *m = lua_tostring(L, -1);
        snprintf(err, errlen, "%s", m ? m : "error (no message)");
        lua_settop(L, base - 1);
        return -1;
    }
    lua_remove(L, base);
    return 0;
}

/* Pushes require(module)[fn]; -1 with err. */
static int lhost_push_fn(struct lhost *h, const char *module, const char *fn, char *err,
                         size_t errlen)
{
    lua_State *L = h->L;
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (lhost_pcall(h, 1, 1, err, errlen))
        return -1;
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        snprintf(err, errlen, "%s: not a module table", module);
        return -1;
    }
    lua_getfield(L, -1, fn);
    lua_remove(L, -2);
    if (!lua_isfunction(L, -1)) {
        lua_pop(L, 1);
        snprintf(err, errlen, "%s.%s: not a function", module, fn);
        return -1;
    }
    return 0;
}

/* Pushes the decoded JSON (nil for NULL/empty); -1 with err. */
static int lhost_push_json(struct lhost *h, const char *json, char *err, size_t errlen)
{
    if (!json || !*json) {
        lua_pushnil(h->L);
        return 0;
    }
    if (lhost_push_fn(h, "fc.codec", "decode_json", err, errlen))
        return -1;
    lua_pushstring(h->L, json);
    return lhost_pcall(h, 1, 1, err, errlen);
}

/* Encodes the value on top (popping it) into *out. */
static int lhost_pop_json(struct lhost *h, char **out, char *err, size_t errlen)
{
    lua_State *L = h->L;
    if (lhost_push_fn(h, "fc.codec", "encode_json", err, errlen)) {
        lua_pop(L, 1);
        return -1;
    }
    lua_insert(L, -2);
    if (lhost_pcall(h, 1, 1, err, errlen))
        return -1;
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    if (!s) {
        lua_pop(L, 1);
        snprintf(err, errlen, "fc.codec.encode_json: did not return a string");
        return -1;
    }
    *out = util_memdup(s, n);
    if (!*out) {
        lua_pop(L, 1);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    lua_pop(L, 1);
    return 0;
}

/* Places parts[i] into the table on top of h->L (see struct lhost_part). */
static int lhost_place_parts(struct lhost *h, const struct lhost_part *parts, size_t nparts, char *err,
                             size_t errlen)
{
    lua_State *L = h->L;
    for (size_t i = 0; i < nparts; i++) {
        const struct lhost_part *p = &parts[i];
        int n = 0;
        while (n < 3 && p->path[n])
            n++;
        char where[256];
        snprintf(where, sizeof where, "part %s%s%s%s%s", n > 0 ? p->path[0] : "?", n > 1 ? "." : "",
                 n > 1 ? p->path[1] : "", n > 2 ? "." : "", n > 2 ? p->path[2] : "");
        if (n == 0 || !lua_checkstack(L, n + 4)) {
            snprintf(err, errlen, "%s: no path or no stack", where);
            return -1;
        }
        lua_pushvalue(L, -1);
        for (int k = 0; k < n - 1; k++) {
            if (!lua_istable(L, -1)) {
                lua_settop(L, lua_gettop(L) - k - 1);
                snprintf(err, errlen, "%s: not a table on the way", where);
                return -1;
            }
            if (lua_getfield(L, -1, p->path[k]) == LUA_TNIL) {
                lua_pop(L, 1);
                lua_newtable(L);
                lua_pushvalue(L, -1);
                lua_setfield(L, -3, p->path[k]);
            }
        }
        if (!lua_istable(L, -1)) {
            lua_settop(L, lua_gettop(L) - n);
            snprintf(err, errlen, "%s: not a table on the way", where);
            return -1;
        }
        char why[512];
        if (lhost_push_fn(h, "fc.codec", "decode_json", why, sizeof why) == 0) {
            lua_pushlstring(L, p->text ? p->text : "", p->text ? p->len : 0);
            if (lhost_pcall(h, 1, 1, why, sizeof why) == 0) {
                lua_setfield(L, -2, p->path[n - 1]);
                lua_pop(L, n);
                continue;
            }
        }
        lua_pop(L, n);
        snprintf(err, errlen, "%s: %s", where, why);
        return -1;
    }
    return 0;
}

int lhost_call_json_parts(struct lhost *h, const char *module, const char *fn, const char *json_in,
                          const struct lhost_part *parts, size_t nparts, char **json_out, char *err,
                          size_t errlen)
{
    *json_out = NULL;
    int top = lua_gettop(h->L);
    if (lhost_push_fn(h, module, fn, err, errlen))
        return -1;
    if (lhost_push_json(h, json_in, err, errlen) || (nparts && lhost_place_parts(h, parts, nparts, err, errlen))) {
        lua_settop(h->L, top);
        return -1;
    }
    if (lhost_pcall(h, 1, 1, err, errlen)) {
        lua_settop(h->L, top);
        return -1;
    }
    int rc = lhost_pop_json(h, json_out, err, errlen);
    lua_settop(h->L, top);
    return rc;
}

int lhost_call_json(struct lhost *h, const char *module, const char *fn, const char *json_in,
                    char **json_out, char *err, size_t errlen)
{
    return lhost_call_json_parts(h, module, fn, json_in, NULL, 0, json_out, err, errlen);
}

int lhost_run_chunk_json(struct lhost *h, const char *name, const char *text, size_t len,
                         const char *json_in, char **json_out, char *err, size_t errlen)
{
    lua_State *L = h->L;
    *json_out = NULL;
    int top = lua_gettop(L);
    if (lhost_push_fn(h, "fc.host", "run_chunk", err, errlen))
        return -1;
    lua_pushstring(L, name);
    lua_pushlstring(L, text, len);
    if (lhost_push_json(h, json_in, err, errlen)) {
        lua_settop(L, top);
        return -1;
    }
    if (lhost_pcall(h, 3, 2, err, errlen)) {
        lua_settop(L, top);
        return -1;
    }
    if (!lua_toboolean(L, -2)) {
        snprintf(err, errlen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
        lua_settop(L, top);
        return 1;
    }
    /* a result JSON cannot hold (NaN, an integer beyond 14 digits) is the chunk's error, named
     * by its path, like any other wrong result of a policy */
    if (lhost_push_fn(h, "fc.codec", "unencodable", err, errlen)) {
        lua_settop(L, top);
        return -1;
    }
    lua_pushvalue(L, -2);
    if (lhost_pcall(h, 1, 1, err, errlen)) {
        lua_settop(L, top);
        return -1;
    }
    if (lua_type(L, -1) == LUA_TSTRING) {
        snprintf(err, errlen, "%s: result: %s", name, lua_tostring(L, -1));
        lua_settop(L, top);
        return 1;
    }
    lua_pop(L, 1);
    int rc = lhost_pop_json(h, json_out, err, errlen);
    lua_settop(L, top);
    return rc;
}
