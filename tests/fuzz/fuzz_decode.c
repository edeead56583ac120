/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/fuzz/fuzz_decode.c: libFuzzer target for YAML and JSON -> Lua, through the code the
 * controller and `render` use (fc.codec in the production host, core/lhost).  An input is
 * any bytes:
 *   - fc.codec.decode_documents(text) never raises; it returns a list of documents, each
 *     {index = i (1, 2, ... in order), value = <table|string|number|boolean> | nil,
 *     error = <string> | nil}, or nil and "invalid YAML: ..." / "invalid JSON: ...";
 *   - fc.codec.decode_json(text) returns a value or raises "invalid JSON: ..." only;
 *   - every decoded document encodes as YAML (fc.codec.encode_yaml) and decodes back to the
 *     same value (the data rules of docs/contracts.md keep a decoded value encodable).
 * Time per input is libFuzzer's -timeout (tests/run.sh fuzz), memory the Lua heap's growth
 * (fuzz_host.h).
 */
#include <stdint.h>

#include "fuzz_host.h"

/* true when the values at a and b (absolute indices) are equal plain data */
static int same(lua_State *L, int a, int b)
{
    if (lua_type(L, a) != lua_type(L, b))
        return 0;
    if (!lua_istable(L, a))
        return lua_rawequal(L, a, b) || lua_compare(L, a, b, LUA_OPEQ);
    lua_Integer na = 0, nb = 0;
    lua_pushnil(L);
    while (lua_next(L, a)) {
        na++;
        lua_pushvalue(L, -2);
        lua_rawget(L, b);
        int eq = same(L, lua_gettop(L) - 1, lua_gettop(L));
        lua_pop(L, 2);
        if (!eq) {
            lua_pop(L, 1);
            return 0;
        }
    }
    lua_pushnil(L);
    while (lua_next(L, b)) {
        nb++;
        lua_pop(L, 1);
    }
    return na == nb;
}

/* the document table at the top: its shape, and its value through YAML and back */
static void check_document(struct lhost *h, lua_Integer i)
{
    lua_State *L = lhost_state(h);
    int d = lua_gettop(L);
    char err[4096];
    if (lua_getfield(L, d, "index") != LUA_TNUMBER || lua_tointeger(L, -1) != i)
        fuzz_fail("decode_documents", "a document's index is not its position");
    int et = lua_getfield(L, d, "error");
    int vt = lua_getfield(L, d, "value");
    if (et != LUA_TNIL && et != LUA_TSTRING)
        fuzz_fail("decode_documents", "a document's error is not a string");
    if (et == LUA_TSTRING && vt != LUA_TNIL)
        fuzz_fail("decode_documents", "a document has both a value and an error");
    if (vt != LUA_TNIL && vt != LUA_TTABLE && vt != LUA_TSTRING && vt != LUA_TNUMBER && vt != LUA_TBOOLEAN)
        fuzz_fail("decode_documents", lua_typename(L, vt));
    if (vt != LUA_TNIL) {
        int v = lua_gettop(L);
        fuzz_push_fn(h, "fc.codec", "encode_yaml");
        lua_pushvalue(L, v);
        if (lhost_pcall(h, 1, 1, err, sizeof err))
            fuzz_fail("encode_yaml of a decoded document raised", err);
        fuzz_push_fn(h, "fc.codec", "decode_documents");
        lua_insert(L, -2);
        if (lhost_pcall(h, 1, 2, err, sizeof err))
            fuzz_fail("decode_documents of encode_yaml's text raised", err);
        if (!lua_istable(L, -2))
            fuzz_fail("encode_yaml's text does not decode", lua_tostring(L, -1));
        lua_geti(L, -2, 1);
        lua_getfield(L, -1, "value");
        if (!same(L, v, lua_gettop(L)))
            fuzz_fail("round trip", "decode(encode_yaml(v)) differs from v");
        lua_pop(L, 4);
    }
    lua_settop(L, d - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_run run = fuzz_begin();
    struct lhost *h = run.h;
    lua_State *L = run.L;
    char err[4096];

    fuzz_push_fn(h, "fc.codec", "decode_documents");
    lua_pushlstring(L, (const char *)data, size);
    if (lhost_pcall(h, 1, 2, err, sizeof err))
        fuzz_fail("decode_documents raised", err);
    if (lua_istable(L, -2)) {
        lua_Integer n = luaL_len(L, -2);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_geti(L, -2, i);
            if (!lua_istable(L, -1))
                fuzz_fail("decode_documents", "a document is not a table");
            check_document(h, i);
        }
    } else {
        const char *e = lua_tostring(L, -1);
        if (!lua_isnil(L, -2) || !e || (strncmp(e, "invalid YAML: ", 14) != 0 && strncmp(e, "invalid JSON: ", 14) != 0))
            fuzz_fail("decode_documents", "neither documents nor nil, \"invalid YAML|JSON: ...\"");
    }
    lua_pop(L, 2);

    fuzz_push_fn(h, "fc.codec", "decode_json");
    lua_pushlstring(L, (const char *)data, size);
    if (lhost_pcall(h, 1, 1, err, sizeof err)) {
        if (strncmp(err, "invalid JSON: ", 14) != 0)
            fuzz_fail("decode_json raised something else than \"invalid JSON: ...\"", err);
    } else {
        lua_pop(L, 1);
    }
    fuzz_settle(&run);
    return 0;
}
