/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lhost: the Lua host: the state, its setup (libraries, the guarded string table, package
 * paths, the preloaded C modules) and the C side's calls into the framework (JSON in and out).
 * See lhost.h for the contract.  Its rooms: core/lhost_budget (call windows and their
 * budgets), core/lhost_env (policy environments, plain-data copies), core/lhost_load (policy
 * files, the sandbox's require), core/lua_host (the fc.host table); they share core/lhostctx.h.
 */
#include "lhost.h"
#include "lhost_budget.h"
#include "lhost_env.h"
#include "lhost_load.h"
#include "lhostctx.h"
#include "lpattern.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lualib.h>

#ifndef FC_DATADIR
#define FC_DATADIR "/usr/share/flink-controller"
#endif

/* Registry keys (lhostctx.h). */
char lhost_key_trip;
char lhost_key_pristine;
char lhost_key_policies;
char lhost_key_binder;
char lhost_key_guarded_string;
char lhost_key_env_base;
char lhost_key_env_libs;
char lhost_key_env_meta;
char lhost_key_shared;

/* ---- the marked list of C Lua modules compiled into the binary ---- */
static const luaL_Reg lhost_cmodules[] = {
    {"fc.host", luaopen_fc_host},
    {"fc.slots", luaopen_fc_slots},
    {"fc.yaml", lhost_open_fc_yaml},
    /* core/lua_<name>.c modules: add {"fc.<name>", luaopen_fc_<name>} here */
    {NULL, NULL}
};

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
    lhost_env_prepare(L);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_policies);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lhost_key_shared);
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
