/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/fuzz/fuzz_render.c: libFuzzer target for `flink-controller render` of an arbitrary
 * document: fc.render.run in the production host (core/lhost) with the repository's policies
 * under their budgets, as core/main.c's cmd_render calls it.  An input is the text; its
 * first byte's low bit picks -o json over -o yaml.  render.run never raises; it returns
 * {code = 0 | 1, stdout = <string>, stderr = {<lines>}}: code 0 with the objects on stdout,
 * or code 1 with stdout "" and at least one line on stderr; every stderr line is one
 * printable line (no control characters: render.printable).
 */
#include <stdint.h>

#include "fuzz_host.h"

static void check_result(lua_State *L, int r)
{
    if (!lua_istable(L, r))
        fuzz_fail("render.run", "did not return a table");
    lua_getfield(L, r, "code");
    lua_Integer code = lua_tointeger(L, -1);
    if (!lua_isinteger(L, -1) || (code != 0 && code != 1))
        fuzz_fail("render.run", "code is not 0 or 1");
    size_t out_len = 0;
    lua_getfield(L, r, "stdout");
    if (!lua_tolstring(L, -1, &out_len))
        fuzz_fail("render.run", "stdout is not a string");
    if (lua_getfield(L, r, "stderr") != LUA_TTABLE)
        fuzz_fail("render.run", "stderr is not a list");
    lua_Integer n = luaL_len(L, -1);
    if (code == 1 && (out_len != 0 || n == 0))
        fuzz_fail("render.run", "code 1 with output or without an error line");
    if (code == 0 && out_len == 0)
        fuzz_fail("render.run", "code 0 without output");
    for (lua_Integer i = 1; i <= n; i++) {
        size_t len;
        lua_geti(L, -1, i);
        const char *line = lua_tolstring(L, -1, &len);
        if (!line)
            fuzz_fail("render.run", "a stderr line is not a string");
        for (size_t j = 0; j < len; j++)
            if ((unsigned char)line[j] < 32 || line[j] == 127)
                fuzz_fail("render.run: a stderr line holds a control character", line);
        lua_pop(L, 1);
    }
    lua_pop(L, 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_run run = fuzz_begin();
    struct lhost *h = run.h;
    lua_State *L = run.L;
    char err[4096];
    fuzz_push_fn(h, "fc.render", "run");
    lua_createtable(L, 0, 4);
    lua_pushlstring(L, (const char *)data, size);
    lua_setfield(L, -2, "text");
    lua_pushliteral(L, "<fuzz>");
    lua_setfield(L, -2, "source");
    lua_pushstring(L, size > 0 && (data[0] & 1) ? "json" : "yaml");
    lua_setfield(L, -2, "output");
    lua_pushstring(L, lhost_policy_dir(h));
    lua_setfield(L, -2, "policy_dir");
    if (lhost_pcall(h, 1, 1, err, sizeof err))
        fuzz_fail("render.run raised", err);
    check_result(L, lua_gettop(L));
    lua_pop(L, 1);
    fuzz_settle(&run);
    return 0;
}
