/* SPDX-License-Identifier: Apache-2.0 */
/* lhost_load: loading policies and the modules they may require: policy files and libs read
 * (bounded) and compiled once into the registry's cache, the sandbox's `require` (the allowed
 * framework modules as private copies, lib.<name> from the policy dir's lib/), and the trusted
 * fc.yaml module.  See lhost_load.h. */
#include "lhost_load.h"
#include "lhost_budget.h"
#include "lhost_env.h"
#include "lhostctx.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

/* Modules a policy may require from the framework (pure Lua or C, private copy each). */
static const char *const lhost_policy_modules[] = {"fc.util", "fc.quantity", "fc.slots",    "fc.profile",   "fc.yaml",
                                                    "fc.crd",  "fc.names",    "fc.clock", "fc.trigger", "fc.restsubmit", NULL};

/* Framework modules of plain Lua whose tables hold only functions and scalars, and whose
 * functions keep no table a caller could reach: run once per policy-set load in an environment
 * of their own (no policy reaches it) and shared; each policy call gets a shallow copy of the
 * module table, as for a C module, so what a policy writes into its copy stays in its call.
 * fc.crd (nested schema tables a policy could change) runs afresh in every call. */
static const char *const lhost_shared_modules[] = {"fc.util", "fc.quantity", "fc.profile", "fc.names", "fc.clock",
                                                    "fc.trigger", NULL};

/* ---- policy files and modules ---- */

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
int lhost_open_fc_yaml(lua_State *L)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/lua/fc/yaml.lua", lhost_of(L)->datadir);
    if (luaL_loadfilex(L, path, "t") != LUA_OK)
        return lua_error(L);
    lua_pushliteral(L, "fc.yaml");
    lua_call(L, 1, 1);
    return 1;
}

/* A policy file beside the caller's: `name` a Lua name (not <x>_spec) of a regular file
 * <policy dir>/<name>.lua (e.g. settings, restart); its path into `path` (n bytes). */
static int lhost_sibling_policy(const struct lhost *h, const char *name, char *path, size_t n)
{
    size_t len = strlen(name);
    struct stat st;
    if (!lhost_is_name(name, 0) || (len > 5 && strcmp(name + len - 5, "_spec") == 0))
        return 0;
    int w = snprintf(path, n, "%s/%s.lua", h->policy_dir, name);
    return w > 0 && (size_t)w < n && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* require inside the sandbox.  Runs within the caller's call window (its budgets). */
int lhost_sb_require(lua_State *L)
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
    } else if (lhost_sibling_policy(h, name, path, sizeof path)) {
        /* another policy of the set (cluster.lua requires "taskmanager", job.lua "submit",
         * "restart" and "settings"): a private instance, as a lib's */
        snprintf(chunk, sizeof chunk, "@%s.lua", name);
    } else {
        return luaL_error(L, "require: module '%s' is not available to policies (allowed: "
                             "fc.util, fc.quantity, fc.slots, fc.profile, fc.yaml, fc.crd, fc.names, fc.clock, "
                             "fc.trigger, fc.restsubmit, lib.<name>, <a policy of the set>)",
                          name);
    }
    int shared = 0;
    for (int i = 0; allowed && lhost_shared_modules[i]; i++)
        shared |= strcmp(name, lhost_shared_modules[i]) == 0;
    if (shared) {
        /* the shared instance, loaded on first use in the shared environment */
        lua_rawgetp(L, LUA_REGISTRYINDEX, &lhost_key_shared);
        int cache = lua_gettop(L);
        if (lua_getfield(L, cache, name) == LUA_TTABLE) {
            lhost_shallow_copy(L, -1);
            goto done;
        }
        lua_pop(L, 1);
        if (lua_rawgeti(L, cache, 1) != LUA_TTABLE) {
            lua_pop(L, 1);
            lhost_push_env(L, "fc");
            lua_pushvalue(L, -1);
            lua_rawseti(L, cache, 1);
        }
        int env = lua_gettop(L);
        if (lhost_push_compiled(L, path, chunk, err, sizeof err))
            return luaL_error(L, "require: %s", lua_tostring(L, -1));
        lhost_bind_env(L, -1, env);
        lua_pushstring(L, name);
        lua_call(L, 1, 1);
        if (!lua_istable(L, -1))
            return luaL_error(L, "require: module '%s' did not return a table", name);
        lua_pushvalue(L, -1);
        lua_setfield(L, cache, name);
        lhost_shallow_copy(L, -1);
        goto done;
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

/* Pushes the compiled chunk of policy `name` (cached, load failures too); on failure returns -1
 * with the message pushed instead. */
int lhost_push_policy(struct lhost *h, lua_State *L, const char *name)
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
