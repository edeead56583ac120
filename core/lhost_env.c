/* SPDX-License-Identifier: Apache-2.0 */
/* lhost_env: what a policy's environment holds: the allowlisted globals and the guarded
 * library functions (print, xpcall, setmetatable, rawset, string.rep, table.move, table.sort),
 * a fresh environment per call bound to a compiled chunk, and the plain-data copies that cross
 * into and out of a call.  See lhost_env.h. */
#include "lhost_env.h"
#include "lhost_budget.h"
#include "lhost_load.h"
#include "lhostctx.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#define LHOST_COPY_DEPTH 100

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
int lhost_copy(lua_State *L, int idx, char *err, size_t errlen)
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

/* rawset in the sandbox: upvalue 1 the original; refuses a policy environment (a table whose
 * metatable is the environments' shared one, lhost_key_env_meta, which no policy can reach:
 * its __metatable hides it), whose __newindex already refuses plain writes. */
static int lhost_sb_rawset(lua_State *L)
{
    if (lua_getmetatable(L, 1)) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_env_meta);
        int env = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
        if (env)
            return luaL_error(L, "rawset: policies cannot write globals (the environment is read-only)");
    }
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

int lhost_guard_rep(lua_State *L)
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
void lhost_wrap(lua_State *L, const char *name, lua_CFunction fn)
{
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, -2, name);
}

/* Pushes a shallow copy of the table at idx. */
void lhost_shallow_copy(lua_State *L, int idx)
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

/* The library tables every environment gets a private copy of, in this order (struct lhost's
 * env_lib_n counts their fields). */
static const char *const lhost_env_libs[LHOST_ENV_LIBS] = {"string", "table", "math", "utf8", "os"};

/* Pushes a copy of the table at idx presized for n fields (raw). */
static void lhost_copy_sized(lua_State *L, int idx, int n)
{
    idx = lua_absindex(L, idx);
    lua_createtable(L, 0, n);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
    }
}

static int lhost_count_fields(lua_State *L, int idx)
{
    int n = 0;
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        n++;
    }
    return n;
}

/* Builds, once per state, what every policy environment starts from (the registry's
 * lhost_key_env_base, lhost_key_env_libs and lhost_key_env_meta): the allowlisted globals and
 * the guarded xpcall, setmetatable and rawset; the guarded library tables (string without
 * dump, table with the polled move and sort, math, utf8, os = {time, date, clock, difftime});
 * the environments' shared metatable (strict globals).  None of these tables is ever handed to
 * a policy: lhost_push_env copies them. */
void lhost_env_prepare(lua_State *L)
{
    static const char *const base[] = {
        "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
        "rawlen", "select", "getmetatable", "tonumber", "tostring", "type", "_VERSION", NULL};
    static const char *const os_fns[] = {"time", "date", "clock", "difftime", NULL};
    struct lhost *h = lhost_of(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_pristine);
    int pristine = lua_gettop(L);
    lua_newtable(L);
    int env = lua_gettop(L);
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
    lua_pushcclosure(L, lhost_sb_rawset, 1);
    lua_setfield(L, env, "rawset");
    /* the fields lhost_push_env adds: the libraries, print and require */
    h->env_n = lhost_count_fields(L, env) + LHOST_ENV_LIBS + 2;
    lua_createtable(L, LHOST_ENV_LIBS, 0);
    int libs = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_guarded_string);
    lhost_shallow_copy(L, -1);
    lua_rawseti(L, libs, 1);
    lua_pop(L, 1);
    for (int i = 1; i <= 3; i++) {
        lua_getfield(L, pristine, lhost_env_libs[i]);
        lhost_shallow_copy(L, -1);
        if (i == 1) {
            lhost_wrap(L, "move", lhost_guard_move);
            lhost_wrap(L, "sort", lhost_guard_sort);
        }
        lua_rawseti(L, libs, i + 1);
        lua_pop(L, 1);
    }
    lua_newtable(L);
    lua_getfield(L, pristine, "os");
    for (int i = 0; os_fns[i]; i++) {
        lua_getfield(L, -1, os_fns[i]);
        lua_setfield(L, -3, os_fns[i]);
    }
    lua_pop(L, 1);
    lua_rawseti(L, libs, 5);
    for (int i = 0; i < LHOST_ENV_LIBS; i++) {
        lua_rawgeti(L, libs, i + 1);
        h->env_lib_n[i] = lhost_count_fields(L, -1);
        lua_pop(L, 1);
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_env_libs);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_env_base);
    lua_pop(L, 1); /* pristine */
    /* strict globals */
    lua_createtable(L, 0, 3);
    lua_pushcfunction(L, lhost_sb_undefined);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, lhost_sb_readonly);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_env_meta);
}

/* Pushes a fresh policy environment; `label` names the policy in print output.  A copy of
 * what lhost_env_prepare built: the same globals and guarded functions, private copies of the
 * library tables (a policy's `math.pi = 3` stays in its call), its own print and require, the
 * shared strict metatable. */
void lhost_push_env(lua_State *L, const char *label)
{
    struct lhost *h = lhost_of(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_env_base);
    lhost_copy_sized(L, -1, h->env_n);
    lua_remove(L, -2);
    int env = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_env_libs);
    for (int i = 0; i < LHOST_ENV_LIBS; i++) {
        lua_rawgeti(L, -1, i + 1);
        lhost_copy_sized(L, -1, h->env_lib_n[i]);
        lua_setfield(L, env, lhost_env_libs[i]);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_pushstring(L, label);
    lua_pushcclosure(L, lhost_sb_print, 1);
    lua_setfield(L, env, "print");
    /* require: upvalues are the env itself and its private `loaded` table */
    lua_pushvalue(L, env);
    lua_newtable(L);
    lua_pushcclosure(L, lhost_sb_require, 2);
    lua_setfield(L, env, "require");
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_env_meta);
    lua_setmetatable(L, env);
}

/* Loads the text chunk on top of the stack (a string) as `chunkname` with the environment at
 * env_idx; replaces the string with the function, or returns -1 leaving an error message. */
int lhost_load_in_env(lua_State *L, int env_idx, const char *chunkname)
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
void lhost_bind_env(lua_State *L, int fn_idx, int env_idx)
{
    fn_idx = lua_absindex(L, fn_idx);
    env_idx = lua_absindex(L, env_idx);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_binder);
    lua_pushvalue(L, env_idx);
    lua_call(L, 1, 1);
    lua_upvaluejoin(L, fn_idx, 1, -1, 1);
    lua_pop(L, 1);
}
