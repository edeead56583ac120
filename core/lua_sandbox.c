/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fc.sandbox: the production policy host (core/lhost.c) as a Lua C module for a plain Lua
 * interpreter (busted under lua5.4), so that the specs run policies in the very sandbox of the
 * binary.  tests/support/busted_helper.lua makes `require("fc.host")` return this module.
 *
 *   local host = require("fc.sandbox")   -- build/lib/fc/sandbox.so
 *
 * The interpreter's state does not run on lhost's counting allocator, so the module owns an
 * inner host (lhost_new: its own lua_State, allocator, budgets and caches) for the life of the
 * interpreter, and every function forwards to the inner state's `fc.host` (luaopen_fc_host of
 * core/lhost.c, the module the binary's framework calls):
 *   host.configure{policy_dir=, timeout_ms=, memory_mib=}
 *   host.call(policy, hook, input) -> true, result[, contract] | false, "<file>:<line>: <message>", kind
 *   host.run_chunk(name, text, input) -> true, result | false, err, kind
 *   host.info() -> {policy_dir=, datadir=, timeout_ms=, memory_mib=, used=, peak=, call_peak=,
 *                    hard_cap=}
 *   host.sandboxed = true
 * Arguments are copied into the inner state and results out of it as plain data: nil,
 * booleans, integers and floats (kept apart), strings and tables with string or number keys
 * (metatables are not copied).  Anything else raises "<fn>: <argument>: <path>: <what>", e.g.
 * "call: input: spec.f: function value is not allowed", "call: input: a.b: cycle (a table that
 * contains itself)"; so does a table nested deeper than SANDBOX_DEPTH levels.  The inner
 * host's own errors (a bad option, a bad input) are raised with its message.
 * The inner datadir is $FC_ROOT when set (tests/run.sh), else lhost_new's default
 * ($FLINK_CONTROLLER_HOME, then the compiled-in FC_DATADIR); its policy dir <datadir>/policies.
 */
#include "lhost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#define SANDBOX_DEPTH 100
#define SANDBOX_MT "fc.sandbox.host"

struct sandbox {
    struct lhost *h;
    int module_ref; /* the inner fc.host table in the inner registry */
};

/* What the inner protected call needs: the outer state and its arguments 1..nargs. */
struct sandbox_args {
    lua_State *from;
    int nargs;
    const char *fn;
};

static const char *sandbox_arg_name(int i, char *buf, size_t n)
{
    if (i == 3)
        return "input";
    snprintf(buf, n, "argument #%d", i);
    return buf;
}

/* Raises in the inner state IL: "<fn>: <arg>: <path>: <what>". */
static int sandbox_copy_error(lua_State *IL, const struct sandbox_args *a, int arg,
                              const char *path, const char *what)
{
    char buf[32];
    return luaL_error(IL, "%s: %s: %s%s%s", a->fn, sandbox_arg_name(arg, buf, sizeof buf), path,
                      path[0] ? ": " : "", what);
}

/* Pushes onto IL a copy of the value at `idx` of the outer state (runs inside a protected
 * call of IL; reads the outer state without ever raising there).  `seen` (an IL index) holds
 * the outer tables on the current path, keyed by their address. */
static void sandbox_copy_in(lua_State *IL, const struct sandbox_args *a, int arg, int idx,
                            int seen, int depth, char *path, size_t pathlen)
{
    lua_State *L = a->from;
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        lua_pushnil(IL);
        return;
    case LUA_TBOOLEAN:
        lua_pushboolean(IL, lua_toboolean(L, idx));
        return;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            lua_pushinteger(IL, lua_tointeger(L, idx));
        else
            lua_pushnumber(IL, lua_tonumber(L, idx));
        return;
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        lua_pushlstring(IL, s, n);
        return;
    }
    case LUA_TTABLE:
        break;
    default: {
        char what[64];
        snprintf(what, sizeof what, "%s value is not allowed", luaL_typename(L, idx));
        sandbox_copy_error(IL, a, arg, path, what);
        return;
    }
    }
    idx = lua_absindex(L, idx);
    const void *self = lua_topointer(L, idx);
    if (lua_rawgetp(IL, seen, self) != LUA_TNIL)
        sandbox_copy_error(IL, a, arg, path, "cycle (a table that contains itself)");
    lua_pop(IL, 1);
    if (depth >= SANDBOX_DEPTH)
        sandbox_copy_error(IL, a, arg, path, "nested deeper than 100 levels");
    if (!lua_checkstack(L, 3))
        sandbox_copy_error(IL, a, arg, path, "Lua stack exhausted");
    luaL_checkstack(IL, 4, "fc.sandbox: copy");
    lua_pushboolean(IL, 1);
    lua_rawsetp(IL, seen, self);
    lua_newtable(IL);
    size_t base = strlen(path);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lhost_key_path(L, -2, path, pathlen)) {
            char what[64];
            snprintf(what, sizeof what, "%s key is not allowed", luaL_typename(L, -2));
            lua_pop(L, 2);
            sandbox_copy_error(IL, a, arg, path, what);
        }
        sandbox_copy_in(IL, a, arg, -2, seen, depth + 1, path, pathlen); /* the key */
        sandbox_copy_in(IL, a, arg, -1, seen, depth + 1, path, pathlen); /* the value */
        lua_rawset(IL, -3);
        lua_pop(L, 1);
        path[base] = '\0';
    }
    lua_pushnil(IL);
    lua_rawsetp(IL, seen, self);
}

/* The inner protected call: host[fn](copies of the outer arguments) -> its results. */
static int sandbox_inner(lua_State *IL)
{
    const struct sandbox_args *a = lua_touserdata(IL, 1);
    int ref = (int)lua_tointeger(IL, 2);
    lua_settop(IL, 0);
    lua_rawgeti(IL, LUA_REGISTRYINDEX, ref);
    lua_getfield(IL, 1, a->fn);
    lua_newtable(IL); /* seen */
    luaL_checkstack(IL, a->nargs + 4, "fc.sandbox: arguments");
    for (int i = 1; i <= a->nargs; i++) {
        char path[512] = "";
        sandbox_copy_in(IL, a, i, i, 3, 0, path, sizeof path);
    }
    lua_remove(IL, 3);
    lua_call(IL, a->nargs, LUA_MULTRET);
    return lua_gettop(IL) - 1;
}

/* Pushes onto the outer state L a copy of the inner value at idx (plain data: what the inner
 * host returns).  Returns -1 (nothing pushed) for anything else. */
static int sandbox_copy_out(lua_State *L, lua_State *IL, int idx, int depth)
{
    switch (lua_type(IL, idx)) {
    case LUA_TNIL:
        lua_pushnil(L);
        return 0;
    case LUA_TBOOLEAN:
        lua_pushboolean(L, lua_toboolean(IL, idx));
        return 0;
    case LUA_TNUMBER:
        if (lua_isinteger(IL, idx))
            lua_pushinteger(L, lua_tointeger(IL, idx));
        else
            lua_pushnumber(L, lua_tonumber(IL, idx));
        return 0;
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(IL, idx, &n);
        lua_pushlstring(L, s, n);
        return 0;
    }
    case LUA_TTABLE:
        break;
    default:
        return -1;
    }
    if (depth >= SANDBOX_DEPTH || !lua_checkstack(IL, 3))
        return -1;
    luaL_checkstack(L, 4, "fc.sandbox: copy");
    idx = lua_absindex(IL, idx);
    lua_newtable(L);
    lua_pushnil(IL);
    while (lua_next(IL, idx)) {
        if (sandbox_copy_out(L, IL, -2, depth + 1)) {
            lua_pop(IL, 2);
            lua_pop(L, 1);
            return -1;
        }
        if (sandbox_copy_out(L, IL, -1, depth + 1)) {
            lua_pop(IL, 2);
            lua_pop(L, 2);
            return -1;
        }
        lua_rawset(L, -3);
        lua_pop(IL, 1);
    }
    return 0;
}

/* host.<fn>(...): upvalue 1 the sandbox userdata, upvalue 2 the function's name. */
static int sandbox_forward(lua_State *L)
{
    struct sandbox *s = lua_touserdata(L, lua_upvalueindex(1));
    struct sandbox_args a = {L, lua_gettop(L), lua_tostring(L, lua_upvalueindex(2))};
    lua_State *IL = lhost_state(s->h);
    lua_settop(IL, 0);
    lua_pushcfunction(IL, sandbox_inner);
    lua_pushlightuserdata(IL, &a);
    lua_pushinteger(IL, s->module_ref);
    if (lua_pcall(IL, 2, LUA_MULTRET, 0) != LUA_OK) {
        const char *m = lua_tostring(IL, -1);
        lua_pushstring(L, m ? m : "fc.sandbox: error without a message");
        lua_settop(IL, 0);
        return lua_error(L);
    }
    int n = lua_gettop(IL);
    luaL_checkstack(L, n, "fc.sandbox: results");
    for (int i = 1; i <= n; i++) {
        if (sandbox_copy_out(L, IL, i, 0)) {
            lua_settop(IL, 0);
            return luaL_error(L, "%s: result %d is not plain data", a.fn, i);
        }
    }
    lua_settop(IL, 0);
    return n;
}

static int sandbox_gc(lua_State *L)
{
    struct sandbox *s = lua_touserdata(L, 1);
    lhost_free(s->h);
    s->h = NULL;
    return 0;
}

int luaopen_fc_sandbox(lua_State *L)
{
    static const char *const fns[] = {"configure", "call", "run_chunk", "info", NULL};
    struct sandbox *s = lua_newuserdatauv(L, sizeof *s, 0);
    s->h = NULL;
    if (luaL_newmetatable(L, SANDBOX_MT)) {
        lua_pushcfunction(L, sandbox_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    char err[1024];
    const char *root = getenv("FC_ROOT");
    struct lhost_opts opts = {.datadir = root && *root ? root : NULL};
    s->h = lhost_new(&opts, err, sizeof err);
    if (!s->h)
        return luaL_error(L, "fc.sandbox: %s", err);
    lua_State *IL = lhost_state(s->h);
    lua_getglobal(IL, "require");
    lua_pushliteral(IL, "fc.host");
    if (lhost_pcall(s->h, 1, 1, err, sizeof err))
        return luaL_error(L, "fc.sandbox: require(\"fc.host\"): %s", err);
    s->module_ref = luaL_ref(IL, LUA_REGISTRYINDEX);
    lua_newtable(L);
    for (int i = 0; fns[i]; i++) {
        lua_pushvalue(L, -2);
        lua_pushstring(L, fns[i]);
        lua_pushcclosure(L, sandbox_forward, 2);
        lua_setfield(L, -2, fns[i]);
    }
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "sandboxed");
    /* the userdata lives as long as the module table: the last upvalue reference */
    lua_pushvalue(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, SANDBOX_MT ".state");
    return 1;
}
