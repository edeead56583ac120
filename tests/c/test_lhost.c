/* SPDX-License-Identifier: Apache-2.0 */
/* core/lhost C API: data directories, lhost_call_json (the entry point core/run.c will use),
 * lhost_run_chunk_json under the budgets, memory given back after a capped call, and
 * lhost_pcall errors, the whole state's hard cap (option and environment).  Prints TAP; run from the repository root (FC_DATADIR is compiled in). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lhost.h"

static int tests_run, tests_failed;

static void ok(int cond, const char *name, const char *detail)
{
    tests_run++;
    if (cond) {
        printf("ok %d - %s\n", tests_run, name);
    } else {
        tests_failed++;
        printf("not ok %d - %s\n# %s\n", tests_run, name, detail ? detail : "");
    }
}

static int streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static char rep_err[256];

/* string.rep('x', mib MiB) in the framework's state (no call window; it holds twice that for
 * a moment: the buffer and the string): 0, or -1 with the message in rep_err. */
static int test_rep(struct lhost *h, int mib)
{
    lua_State *L = lhost_state(h);
    lua_getglobal(L, "string");
    lua_getfield(L, -1, "rep");
    lua_remove(L, -2);
    lua_pushliteral(L, "x");
    lua_pushinteger(L, (lua_Integer)mib << 20);
    int rc = lhost_pcall(h, 2, 0, rep_err, sizeof rep_err);
    lua_gc(L, LUA_GCCOLLECT, 0);
    return rc;
}

int main(void)
{
    printf("1..22\n");
    char err[1024] = "";
    unsetenv("FLINK_CONTROLLER_HOME");
    struct lhost_opts o = {.timeout_ms = 50, .memory_mib = 8};
    struct lhost *h = lhost_new(&o, err, sizeof err);
    ok(h != NULL, "lhost_new with defaults", err);
    if (!h)
        return 1;
    ok(streq(lhost_datadir(h), FC_DATADIR), "datadir is FC_DATADIR", lhost_datadir(h));
    char want[4096];
    snprintf(want, sizeof want, "%s/policies", FC_DATADIR);
    ok(streq(lhost_policy_dir(h), want), "policy dir defaults to <datadir>/policies",
       lhost_policy_dir(h));

    lua_State *S = lhost_state(h);
    lua_getglobal(S, "package");
    lua_getfield(S, -1, "path");
    lua_getfield(S, -2, "cpath");
    const char *path = lua_tostring(S, -2), *cpath = lua_tostring(S, -1);
    snprintf(want, sizeof want, "%s/lua/?.lua;%s/lua/?/init.lua;", FC_DATADIR, FC_DATADIR);
    ok(path && cpath && strncmp(path, want, strlen(want)) == 0 && !strstr(path, "./?") &&
           !strstr(cpath, "./?"),
       "package.path starts with <datadir>/lua, no current-directory entries", path);
    lua_pop(S, 3);

    char *out = NULL;
    int rc = lhost_call_json(h, "fc.util", "sorted_keys", "{\"b\":1,\"a\":2,\"c\":3}", &out, err,
                             sizeof err);
    ok(rc == 0 && streq(out, "[\"a\",\"b\",\"c\"]"), "lhost_call_json fc.util.sorted_keys",
       out ? out : err);
    free(out);
    out = NULL;

    rc = lhost_call_json(h, "fc.util", "sorted_keys", "{nope", &out, err, sizeof err);
    ok(rc == -1 && out == NULL && strstr(err, "invalid JSON") != NULL,
       "lhost_call_json refuses bad JSON", err);

    /* parts: texts placed into the decoded input (the compact cache's children), one not
     * NUL-terminated, one whose path's tables are created on the way */
    const char *buf = "{\"kind\":\"StatefulSet\",\"n\":[1,2]}TRAILING";
    struct lhost_part parts[] = {
        {{"children", "StatefulSet", "a", NULL}, buf, strlen(buf) - strlen("TRAILING")},
        {{"children", "Pod", "p", NULL}, "{\"phase\":\"Running\",\"gone\":null}", 32},
    };
    rc = lhost_call_json_parts(h, "fc.revision", "canonical", "{\"children\":{\"StatefulSet\":{}},\"x\":1}",
                               parts, 2, &out, err, sizeof err);
    ok(rc == 0 && streq(out, "\"{\\\"children\\\":{\\\"Pod\\\":{\\\"p\\\":{\\\"phase\\\":\\\"Running\\\"}},"
                             "\\\"StatefulSet\\\":{\\\"a\\\":{\\\"kind\\\":\\\"StatefulSet\\\",\\\"n\\\":[1,2]}}},"
                             "\\\"x\\\":1}\""),
       "lhost_call_json_parts places each text at its path (nulls dropped as in json_in)", out ? out : err);
    free(out);
    out = NULL;
    struct lhost_part bad[] = {{{"x", "y", NULL, NULL}, "{}", 2}};
    rc = lhost_call_json_parts(h, "fc.revision", "canonical", "{\"x\":1}", bad, 1, &out, err, sizeof err);
    ok(rc == -1 && out == NULL && streq(err, "part x.y: not a table on the way"),
       "lhost_call_json_parts refuses a path through a non-table", err);
    struct lhost_part notjson[] = {{{"x", NULL, NULL, NULL}, "{nope", 5}};
    rc = lhost_call_json_parts(h, "fc.revision", "canonical", "{}", notjson, 1, &out, err, sizeof err);
    ok(rc == -1 && out == NULL && strncmp(err, "part x: ", 8) == 0 && strstr(err, "invalid JSON") != NULL,
       "lhost_call_json_parts names a part that is not JSON", err);

    rc = lhost_call_json(h, "fc.nosuchmodule", "fn", NULL, &out, err, sizeof err);
    ok(rc == -1 && strstr(err, "module 'fc.nosuchmodule' not found") != NULL,
       "lhost_call_json names a missing module", err);

    rc = lhost_call_json(h, "fc.util", "nosuchfn", NULL, &out, err, sizeof err);
    ok(rc == -1 && streq(err, "fc.util.nosuchfn: not a function"),
       "lhost_call_json names a missing function", err);

    const char *sum = "local t = ... local s = 0 for _, v in ipairs(t) do s = s + v end "
                      "return {sum = s}";
    rc = lhost_run_chunk_json(h, "sum.lua", sum, strlen(sum), "[1,2,3.0]", &out, err, sizeof err);
    ok(rc == 0 && streq(out, "{\"sum\":6}"), "lhost_run_chunk_json returns JSON", out ? out : err);
    free(out);
    out = NULL;

    const char *loop = "local n = 0\nwhile true do n = n + 1 end";
    rc = lhost_run_chunk_json(h, "loop.lua", loop, strlen(loop), NULL, &out, err, sizeof err);
    ok(rc == 1 && streq(err, "loop.lua:2: policy exceeded its time budget (50 ms)"),
       "an endless chunk fails with its position and the budget", err);

    size_t before = lhost_mem_used(h);
    const char *hog = "local t, mib = {}, string.rep(string.rep('x', 1024), 1024)\n"
                      "for i = 1, 1e9 do t[i] = mib .. i end";
    rc = lhost_run_chunk_json(h, "hog.lua", hog, strlen(hog), NULL, &out, err, sizeof err);
    ok(rc == 1 && streq(err, "hog.lua:2: policy exceeded its memory cap (8 MiB)"),
       "a table of 1 MiB strings fails at the memory cap", err);
    char detail[128];
    snprintf(detail, sizeof detail, "before %zu after %zu peak %zu", before, lhost_mem_used(h),
             lhost_mem_peak(h));
    ok(lhost_mem_used(h) < before + ((size_t)1 << 20) && lhost_mem_peak(h) >= ((size_t)8 << 20),
       "the memory of a failed call is given back", detail);

    lua_State *L = lhost_state(h);
    lua_getglobal(L, "error");
    lua_pushliteral(L, "framework bug");
    rc = lhost_pcall(h, 1, 0, err, sizeof err);
    ok(rc == -1 && strncmp(err, "framework bug", 13) == 0 && strstr(err, "stack traceback") != NULL &&
           lua_gettop(L) == 0,
       "lhost_pcall returns the message with a traceback and cleans the stack", err);
    lhost_free(h);

    setenv("FLINK_CONTROLLER_HOME", "/tmp/fc-home/", 1);
    struct lhost_opts o2 = {.policy_dir = "/tmp/elsewhere"};
    h = lhost_new(&o2, err, sizeof err);
    ok(h && streq(lhost_datadir(h), "/tmp/fc-home") && streq(lhost_policy_dir(h), "/tmp/elsewhere"),
       "FLINK_CONTROLLER_HOME and policy_dir override the defaults", h ? lhost_datadir(h) : err);
    rc = h ? lhost_call_json(h, "fc.util", "sorted_keys", "{}", &out, err, sizeof err) : -1;
    ok(rc == -1 && strstr(err, "/tmp/fc-home/lua/fc/util.lua") != NULL,
       "the framework is looked up under the data directory", err);
    lhost_free(h);
    unsetenv("FLINK_CONTROLLER_HOME");

    /* the hard cap holds for the framework too (outside any call window) */
    struct lhost_opts o3 = {.memory_mib = 8, .hard_mib = 32};
    h = lhost_new(&o3, err, sizeof err);
    ok(h && test_rep(h, 8) == 0 && test_rep(h, 40) == -1 && strstr(rep_err, "not enough memory"),
       "hard_mib caps the whole state: 8 MiB fits, 40 MiB does not", rep_err);
    lhost_free(h);
    setenv("FLINK_CONTROLLER_LUA_MEMORY_MIB", "24", 1);
    struct lhost_opts o4 = {.memory_mib = 8};
    h = lhost_new(&o4, err, sizeof err);
    ok(h && test_rep(h, 6) == 0 && test_rep(h, 30) == -1,
       "FLINK_CONTROLLER_LUA_MEMORY_MIB sets the hard cap", err);
    lhost_free(h);
    setenv("FLINK_CONTROLLER_LUA_MEMORY_MIB", "12x", 1);
    h = lhost_new(&o4, err, sizeof err);
    ok(!h && streq(err, "FLINK_CONTROLLER_LUA_MEMORY_MIB: expected an integer 16..65536, got '12x'"),
       "a bad FLINK_CONTROLLER_LUA_MEMORY_MIB is refused", err);
    lhost_free(h);
    unsetenv("FLINK_CONTROLLER_LUA_MEMORY_MIB");
    struct lhost_opts o5 = {.memory_mib = 100, .hard_mib = 16};
    h = lhost_new(&o5, err, sizeof err);
    ok(h && test_rep(h, 50) == 0, "the hard cap is at least one call's cap + 16 MiB", rep_err);
    lhost_free(h);
    return tests_failed ? 1 : 0;
}
