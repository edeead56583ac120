/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lhost: the one Lua state of the process, the framework loader and the policy sandbox.
 *
 * The host owns a lua_State built on a counting allocator.  It loads the trusted framework
 * (`<datadir>/lua/fc/NAME.lua`, plain `require`) and runs policies (`<policy_dir>/<name>.lua`)
 * in a sandbox (docs/contracts.md, "Policy sandbox"):
 *   - each policy gets its own environment holding only the allowlisted globals, fresh copies
 *     of `string` (no `dump`), `table`, `math`, `utf8` and `os` = {time, date, clock, difftime};
 *     reading an unknown global or writing any global raises;
 *   - nothing a policy keeps survives its call: each policy file and lib is compiled once,
 *     but every call runs its top level afresh in a new environment (lhost_bind_env gives the
 *     chunk a new _ENV upvalue), so module tables, upvalues, `require`d libs and _ENV are new
 *     in every call and the last call's are garbage; `rawset(_ENV, k, v)` raises like a
 *     global write.  The environment is copied from a template built once per state
 *     (lhost_env_prepare); fc.util, fc.quantity, fc.profile, fc.names and fc.clock (functions only) run
 *     once per policy-set load in an environment of their own and each call gets a shallow
 *     copy of their tables (core/lhost_load.c).  Inputs are copied into the call, results out
 *     of it (plain data), so a hook may change its input and its result shares no table with
 *     the caller's data.  Cost: docs/performance.md, bench/policy_call.lua;
 *   - chunks are text only (mode "t"); policies have no load/loadfile/dofile/collectgarbage/
 *     coroutine/io/debug/package; `require` serves the framework modules listed in
 *     core/lhost_load.c (fc.util, fc.quantity, fc.slots, fc.clock, ...) and lib.<name> (from `<policy_dir>/lib/<name>.lua`), each instance private to the policy;
 *   - every call (and the loading of a policy file) runs under a CPU-time budget and a
 *     memory cap.  Time: a CPU-time timer of the thread (LHOST_TIMER_SIGNAL in core/lhost_budget.c)
 *     arms the count hook for every instruction at the deadline, and the count hook checks the
 *     clock every LHOST_HOOK_EVERY instructions besides (the only check where timers are
 *     refused); once tripped the hook fires before every instruction and raises again, so
 *     pcall/xpcall/handlers/__close cannot swallow it; __gc metamethods are refused by the
 *     sandbox's setmetatable.  Memory: growth beyond `call base + memory cap` trips the call
 *     and arms the same hook; small allocations may overshoot by 1 MiB, larger ones fail at
 *     once; either way the error names the line of the innermost Lua frame of the call when
 *     the cap tripped, e.g. the `s = s .. s` or the `x:rep(n)` line: "rep.lua:3: policy
 *     exceeded its memory cap (64 MiB)".  That position is read in the allocator, at a cost
 *     independent of the depth of the stack (a trip in a 100,000-deep recursion is as quick as
 *     any), which is safe up to Lua 5.4.4 (see core/lhost_budget.c); built against a later release,
 *     a failure that unwinds uncaught names the hook function's first line instead;
 *   - C code that runs long without returning to the VM is bounded where its cost is not
 *     linear in what the memory cap bounds: string.find/match/gmatch/gsub are core/lpattern.c
 *     (the same results and errors as lstrlib, the budget polled every LPATTERN_POLL_STEPS
 *     matcher steps: ("a"):rep(2e4):find(".-.-b") fails at the deadline); table.sort without a
 *     Lua comparator compares through a C comparator that polls the budget every
 *     LHOST_SORT_POLL units (a comparison, plus one per 256 bytes of string compared);
 *     table.move runs in chunks of LHOST_MOVE_CHUNK elements with a poll between them;
 *     string.rep with an empty result returns at once.  Other C functions (string.upper,
 *     utf8.len, string.format "%q", table.concat, ...) are linear in sizes the memory cap
 *     bounds (~100 ms at most on 32 MiB); a loop of them stops at the next instruction after
 *     the deadline (the timer), as does a loop of VM operations on long strings (`a < b`,
 *     `s .. x`).  The polls raise the same time-budget error, naming the Lua line of the call;
 *   - recursion ends on Lua's own limits ("stack overflow" at LUAI_MAXSTACK = 1,000,000 stack
 *     slots, "C stack overflow" at 200 nested C calls) or on the memory cap, whichever first;
 *   - the whole state (framework included) is capped at lhost_opts.hard_mib (default
 *     LHOST_HARD_MIB_DEFAULT = 128 MiB, or $FLINK_CONTROLLER_LUA_MEMORY_MIB); a failed call that
 *     grew the heap by more than 8 MiB gives the freed memory back to the system (malloc_trim),
 *     so that the RSS follows the state's use (deploy/deployment.yaml's limit: 256Mi);
 *   - failures come back as "<policy file>:<line>: <message>", e.g.
 *     "defaults.lua:12: policy exceeded its time budget (200 ms)".
 *
 * The framework sees the sandbox as the Lua module `fc.host` (preloaded; see
 * docs/contracts.md): configure{policy_dir=, timeout_ms=, memory_mib=}, call(policy, hook,
 * input) -> true, result | false, err, and run_chunk(name, text, input) -> true, result |
 * false, err (a text chunk under a fresh sandbox; `...` is the input; used by
 * `flink-controller sandbox-run`).  Under busted the same host is core/lua_sandbox.c's
 * fc.sandbox (an lhost of its own, its fc.host forwarded to).
 *
 * Errors in C: functions return 0 on success, -1 on failure with a message in `err`
 * (NUL-terminated, truncated to errlen).  Nothing aborts on bad input or on a full heap.
 */
#ifndef FC_LHOST_H
#define FC_LHOST_H

#include <stddef.h>
#include <lua.h>

#define LHOST_TIMEOUT_MS_DEFAULT   200u       /* CPU ms per policy call */
#define LHOST_MEMORY_MIB_DEFAULT   64u        /* MiB a policy call may add to the heap */
#define LHOST_HARD_MIB_DEFAULT     128u       /* whole state cap (MiB), see lhost_opts.hard_mib */
#define LHOST_HOOK_EVERY           10000      /* instructions between budget checks */
#define LHOST_MOVE_CHUNK           (1 << 16)  /* table.move elements between budget polls */
#define LHOST_SORT_POLL            4096u      /* sort work units between budget polls */
#define LHOST_POLICY_FILE_MAX      (4u << 20) /* bytes per policy/lib source file */

/* C Lua modules compiled into the binary.  Each core/lua_<name>.c declares its opener here
 * and adds one line to lhost_cmodules[] in core/lhost.c (the marked list). */
int luaopen_fc_host(lua_State *L);
int luaopen_fc_slots(lua_State *L);
/* Not in the binary: core/lua_sandbox.c, this host as a module for busted (fc.sandbox). */
int luaopen_fc_sandbox(lua_State *L);

struct lhost;

struct lhost_opts {
    const char *datadir;     /* NULL: $FLINK_CONTROLLER_HOME, else FC_DATADIR (compiled in) */
    const char *policy_dir;  /* NULL: <datadir>/policies */
    unsigned timeout_ms;     /* 0: LHOST_TIMEOUT_MS_DEFAULT; CPU milliseconds per policy call */
    unsigned memory_mib;     /* 0: LHOST_MEMORY_MIB_DEFAULT; MiB per policy call */
    unsigned hard_mib;       /* 0: $FLINK_CONTROLLER_LUA_MEMORY_MIB (16..65536), else
                              * LHOST_HARD_MIB_DEFAULT; MiB the whole Lua state may hold (at
                              * least memory_mib + 16).  The Deployment's memory limit must
                              * exceed it plus the C caches (deploy/deployment.yaml). */
};

/* Creates the state, opens the standard libraries for the framework, sets package.path to
 * <datadir>/lua first (LUA_PATH is ignored) and preloads the C modules.  NULL on failure. */
struct lhost *lhost_new(const struct lhost_opts *opts, char *err, size_t errlen);

/* Closes the Lua state (running finalizers) and frees the host.  NULL is ignored. */
void lhost_free(struct lhost *h);

/* The state, for C code that drives the framework directly (core/main.c).  Use lhost_pcall
 * for calls so that errors come back with a traceback instead of aborting. */
lua_State *lhost_state(struct lhost *h);

/* Resolved directories (never NULL). */
const char *lhost_datadir(const struct lhost *h);
const char *lhost_policy_dir(const struct lhost *h);

/* Bytes currently allocated by the state, and the peak. */
size_t lhost_mem_used(const struct lhost *h);
size_t lhost_mem_peak(const struct lhost *h);

/* lua_pcall with a traceback message handler: calls the function below `nargs` arguments on
 * the stack, leaves `nresults` results.  On error pops everything it was given, fills err with
 * the message (and traceback) and returns -1. */
int lhost_pcall(struct lhost *h, int nargs, int nresults, char *err, size_t errlen);

/* Calls the trusted framework function `module.fn(value)` where value is `json_in` decoded
 * by fc.codec.decode_json (NULL or "" means nil; null object members are dropped, a null list
 * item is an error, integral numbers become Lua integers), and encodes its first result with
 * fc.codec.encode_json into *json_out (malloc'd, NUL-terminated; the caller frees it; empty
 * tables encode as {}, integers beyond 14 digits are an error: cjson writes %.14g).
 * A Lua error in the function returns -1 with the message in err.  Intended for core/run.c:
 *   char *out = NULL; char err[512];
 *   if (lhost_call_json(h, "fc.reconcile", "step", snapshot_json, &out, err, sizeof err)) ...
 */
int lhost_call_json(struct lhost *h, const char *module, const char *fn, const char *json_in,
                    char **json_out, char *err, size_t errlen);

/* One more JSON text for lhost_call_json_parts: decoded as json_in is, then stored at
 * value[path[0]]...[path[n-1]] (path: 1 to 3 keys, NULL-terminated; the tables on the way are
 * created when absent). `text` is `len` bytes, need not be NUL-terminated. */
struct lhost_part {
    const char *path[4];
    const char *text;
    size_t len;
};

/* lhost_call_json, with `nparts` JSON texts placed into the decoded value before the call: a
 * large input assembled from texts the caller already holds (the reflector's compact cache)
 * without encoding them again. A part that is not JSON, or a path through a non-table, fails
 * the call (-1, err "part <keys>: <reason>"). */
int lhost_call_json_parts(struct lhost *h, const char *module, const char *fn, const char *json_in,
                          const struct lhost_part *parts, size_t nparts, char **json_out, char *err,
                          size_t errlen);

/* Runs the text chunk `text` (len bytes, chunk name `name`, e.g. "evil.lua") under a fresh
 * policy sandbox and the call budgets, with `...` = json_in decoded (NULL: nil).  On success
 * *json_out is the JSON of its first result (malloc'd).  On a policy error returns 1 with
 * "<name>:<line>: <message>" in err; -1 for host errors (bad JSON input, no memory). */
int lhost_run_chunk_json(struct lhost *h, const char *name, const char *text, size_t len,
                         const char *json_in, char **json_out, char *err, size_t errlen);

/* Appends the table key at idx of L to `path` (NUL-terminated, pathlen bytes in all) as the
 * host's error messages name it: a string `k` as ".k" ("k" at the start), an integer as
 * "[3]", a float as "[2.5]".  Returns -1 (path unchanged) for a key of any other type.  Reads
 * only: never raises, allocates nothing. */
int lhost_key_path(lua_State *L, int idx, char *path, size_t pathlen);

#endif
