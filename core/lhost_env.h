/* SPDX-License-Identifier: Apache-2.0 */
/* core/lhost_env: a policy's environment (docs/contracts.md, "Policy sandbox"): the allowlisted
 * globals, guarded copies of string/table/math/utf8/os, strict globals, a fresh environment per
 * call bound to a compiled chunk; and the plain-data copies in which inputs and results cross
 * into and out of a call. A room of core/lhost (core/lhostctx.h). Functions that push leave
 * one value on top of L.
 */
#ifndef FC_LHOST_ENV_H
#define FC_LHOST_ENV_H

#include <stddef.h>

#include <lua.h>

/* Pushes a plain-data copy of the value at idx: nil, booleans, finite numbers, strings, tables
 * of those with string or number keys (no metamethod runs: raw access), at most 100 levels
 * deep. Returns 0, or -1 with err "<path>: <what>" (e.g. "spec.x: function value is not
 * allowed", "a: NaN is not a JSON number") and nothing pushed. */
int lhost_copy(lua_State *L, int idx, char *err, size_t errlen);

/* string.rep in the sandbox (upvalue 1 the original): an empty result returns at once. */
int lhost_guard_rep(lua_State *L);

/* Replaces field `name` of the table on top by `fn` closed over the original. */
void lhost_wrap(lua_State *L, const char *name, lua_CFunction fn);

/* Pushes a shallow copy of the table at idx (raw). */
void lhost_shallow_copy(lua_State *L, int idx);

/* Builds once per state what every policy environment is copied from (the allowlisted
 * globals, the guarded functions and library tables, the strict metatable); lhost_setup calls
 * it after the pristine globals and the guarded string table are in the registry. */
void lhost_env_prepare(lua_State *L);

/* Pushes a fresh policy environment (a copy of lhost_env_prepare's, private library tables); `label` names the policy in print output ("policy
 * <label>: ..."). Its `require` is lhost_sb_require (core/lhost_load) with a private `loaded`. */
void lhost_push_env(lua_State *L, const char *label);

/* Loads the text chunk on top of the stack (a string) as `chunkname` with the environment at
 * env_idx; replaces the string with the function (0), or with an error message (-1). */
int lhost_load_in_env(lua_State *L, int env_idx, const char *chunkname);

/* Gives the Lua function at fn_idx (a compiled chunk) a new _ENV upvalue holding the table at
 * env_idx, never shared with an earlier run of the same chunk. */
void lhost_bind_env(lua_State *L, int fn_idx, int env_idx);

#endif
