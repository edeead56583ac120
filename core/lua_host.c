/* SPDX-License-Identifier: Apache-2.0 */
/* core/lua_host: the Lua namespace `fc.host` (docs/contracts.md, "fc.host"), the framework's
 * side of the policy sandbox: call(policy, hook, input), run_chunk(name, text, input),
 * configure{...}, info(), sandboxed = true.  luaopen_fc_host builds the table; lhost_cmodules[]
 * in core/lhost.c preloads it.  Not built as build/lib/fc/host.so: under busted fc.host is
 * fc.sandbox's (core/lua_sandbox.c).
 *
 * Results: call and run_chunk return `true, <plain-data copy of the result>` or `false,
 * "<file>:<line>: <message>", <kind>` (kind "error", "timeout", "nomem", "badresult"); a bad
 * input raises "<fn>: input: <what>".
 */
#include "lhost.h"
#include "lhost_budget.h"
#include "lhost_env.h"
#include "lhost_load.h"
#include "lhostctx.h"

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

/* ---- running sandboxed functions ---- */

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

/* Puts `false` below the error message on top and the failure's kind ("error", "timeout",
 * "nomem") above it; returns 3 (the Lua results false, message, kind). */
static int lhost_return_failure(struct lhost *h, lua_State *L)
{
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    lua_pushstring(L, h->fail_kind ? h->fail_kind : "error");
    h->fail_kind = NULL;
    return 3;
}

/* The common end of fc.host.call and run_chunk: calls the function `nargs` below the top with
 * those arguments and a plain-data copy of the value at `input` under a call window, and
 * returns the Lua results `true, <copy of the result>` or `false, "<file>:<line>: <message>",
 * <kind>` (kind "error", "timeout" (the time budget), "nomem" (the memory cap) or "badresult"
 * (a result that is not plain data)).
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
        return lhost_return_failure(h, L);
    if (lhost_copy(L, -1, err, sizeof err)) {
        lua_pushboolean(L, 0);
        if (hook)
            lua_pushfstring(L, "%s: %s returned a bad result: %s", fallback, hook, err);
        else
            lua_pushfstring(L, "%s: bad result: %s", fallback, err);
        lua_pushliteral(L, "badresult");
        return 3;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -2);
    return 2;
}

/* One policy call, inside its call window. */
struct lhost_hook_call {
    const char *policy, *hook;
    char position[128]; /* "<file>:<line>" of the hook once known, else "<policy>.lua:1" */
    char contract[96];  /* the module's `contract` string (the hook contract it declares), or "" */
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
    lua_pushliteral(L, "contract");
    int ct = lua_rawget(L, -2);
    if (ct == LUA_TSTRING)
        snprintf(hc->contract, sizeof hc->contract, "%s", lua_tostring(L, -1));
    else if (ct != LUA_TNIL)
        return luaL_error(L, "%s.lua: contract must be a string (the hook contract's version), got %s",
                          hc->policy, luaL_typename(L, -1));
    lua_pop(L, 1);
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

/* fc.host.call(policy, hook, input) -> true, result[, contract] | false, "<file>:<line>: <message>",
 * kind (kind: "error" | "timeout" | "nomem" | "badresult", as lhost_call_copied; contract: the
 * policy module's `contract` string when it declares one, compared by fc.contract).
 * Nothing carries over from one call to the next: the policy's compiled chunk runs its top
 * level afresh in a new environment for every call (new module table, upvalues, requires). */
static int lhost_l_call(lua_State *L)
{
    struct lhost *h = lhost_of(L);
    struct lhost_hook_call hc = {luaL_checkstring(L, 1), luaL_checkstring(L, 2), "", ""};
    h->fail_kind = NULL;
    lua_settop(L, 3);
    snprintf(hc.position, sizeof hc.position, "%s.lua:1", hc.policy);
    if (lhost_push_policy(h, L, hc.policy))
        return lhost_return_failure(h, L);
    lua_pushcfunction(L, lhost_run_hook);
    lua_pushlightuserdata(L, &hc);
    lua_pushvalue(L, -3);
    lhost_push_env(L, hc.policy);
    lhost_bind_env(L, -2, -1);
    lua_pop(L, 1); /* the env: held by the chunk's new upvalue */
    int n = lhost_call_copied(h, L, 2, 3, "call", hc.position, hc.hook);
    if (n == 2 && lua_toboolean(L, -2) && hc.contract[0]) {
        lua_pushstring(L, hc.contract);
        n = 3;
    }
    return n;
}

/* fc.host.run_chunk(name, text, input) -> true, result | false, err, kind: runs a text chunk under
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
        return lhost_return_failure(h, L);
    return lhost_call_copied(h, L, 0, 3, "run_chunk", fallback, NULL);
}

/* fc.host.configure{policy_dir=DIR, timeout_ms=N, memory_mib=N}: a new policy_dir drops the
 * loaded policies and the shared framework modules (a policy-set load). */
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
        lua_newtable(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_shared);
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
