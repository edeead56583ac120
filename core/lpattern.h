/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lpattern: Lua 5.4 patterns (reference manual, section 6.4.1) with a step budget.
 *
 * The policy sandbox's string.find, string.match, string.gmatch and string.gsub (and the
 * string methods of every string, through the string metatable) are these functions instead
 * of lstrlib's: same arguments, results and error messages, but the matcher counts its steps
 * (one per attempt of a pattern item at a subject position, one per subject byte a
 * quantifier, %b or a back reference walks over) and every LPATTERN_POLL_STEPS steps calls
 * the host's poll function, which may raise (longjmp out of the matcher: the matcher holds no
 * resource, so unwinding from any step is safe).  That makes backtracking of any order
 * (("a"):rep(2e4):find(".-.-b"), nested `?`, `%b()` over a large subject) interruptible at the
 * call's CPU deadline instead of running to completion in C.
 *
 * Plain searches (find with plain = true, or a pattern without any of ^$*+?.([%-) use
 * memmem (glibc's two-way search: linear in subject + pattern).
 *
 * Errors are Lua errors raised with lstrlib's messages ("malformed pattern (missing ']')",
 * "invalid capture index %2", "pattern too complex", ...), so a policy sees the behaviour of
 * the reference implementation; tests/host_spec.lua compares the two on many cases.
 */
#ifndef FC_LPATTERN_H
#define FC_LPATTERN_H

#include <lua.h>

#define LPATTERN_POLL_STEPS  8192   /* matcher steps between calls of the poll function */
#define LPATTERN_MAXCAPTURES 32     /* as LUA_MAXCAPTURES */
#define LPATTERN_MAXDEPTH    200    /* nested matcher calls before "pattern too complex" */

/* The host's budget: poll(L, ud) is called every LPATTERN_POLL_STEPS steps of a match; it
 * returns normally to go on, or raises a Lua error to stop the call.  The struct must outlive
 * every closure lpattern_register made with it. */
struct lpattern_budget {
    void (*poll)(lua_State *L, void *ud);
    void *ud;
};

/* Sets fields find, match, gmatch and gsub of the table on top of L's stack to the budgeted
 * functions (closures over `budget`, a light userdata).  Raises only on a memory error. */
void lpattern_register(lua_State *L, struct lpattern_budget *budget);

#endif
