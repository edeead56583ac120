/* SPDX-License-Identifier: Apache-2.0 */
/* core/lhost_load: policies and the modules they may require (docs/contracts.md, "Policy
 * sandbox"): files read (at most LHOST_POLICY_FILE_MAX bytes, text only) and compiled once into
 * the registry's cache, the sandbox's `require` and the trusted fc.yaml module. A room of
 * core/lhost (core/lhostctx.h).
 */
#ifndef FC_LHOST_LOAD_H
#define FC_LHOST_LOAD_H

#include <lua.h>

struct lhost;

/* package.preload["fc.yaml"]: loads <datadir>/lua/fc/yaml.lua with the host's own globals and
 * returns its table (raises when the file cannot be loaded). */
int lhost_open_fc_yaml(lua_State *L);

/* `require` inside the sandbox (upvalue 1 the policy's environment, upvalue 2 its private
 * `loaded`): fc.util, fc.quantity, fc.slots, fc.profile, fc.yaml, fc.crd, fc.names, fc.clock (a
 * private shallow copy of a preloaded module's table or of a shared one's (fc.util, fc.quantity,
 * fc.profile, fc.names, fc.clock: loaded once per policy-set load, registry's lhost_key_shared), else
 * (fc.crd, fc.restsubmit) the framework file run in the environment), lib.<name>
 * (<policy_dir>/lib/<name>.lua) and another policy of the set by its name (<policy_dir>/<name>.lua,
 * when that file exists: cluster.lua requires "taskmanager"); anything else raises "require: module '<name>'
 * is not available to policies (...)". Runs within the caller's call window. */
int lhost_sb_require(lua_State *L);

/* Pushes the compiled chunk of policy `name` (<policy_dir>/<name>.lua, name [A-Za-z0-9_-],
 * 1..64 bytes; cached, load failures too). Returns 0, or -1 with the message pushed instead
 * ("<name>.lua:<line>: <syntax error>", "<name>.lua: cannot open ...",
 * "fc.host: invalid policy name '<name>'"). */
int lhost_push_policy(struct lhost *h, lua_State *L, const char *name);

#endif
