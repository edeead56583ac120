/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/fuzz/fuzz_host.h: the production Lua host (core/lhost) for the libFuzzer targets that
 * drive the framework (fuzz_decode.c, fuzz_render.c): one host for the whole run, made on
 * first use with the controller's defaults (datadir FC_DATADIR: this checkout's lua/ and
 * policies/), and what a target does when the code under test breaks its contract: print why
 * and abort(), which libFuzzer reports as a crash and keeps the input of.
 */
#ifndef FC_FUZZ_HOST_H
#define FC_FUZZ_HOST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lua.h>
#include <lauxlib.h>

#include "lhost.h"

/* Prints "fuzz: <what>: <detail>" and aborts (a finding). */
static void fuzz_fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* The host, created on the first call. */
static struct lhost *fuzz_host(void)
{
    static struct lhost *h;
    if (!h) {
        struct lhost_opts o = {0};
        char err[1024];
        h = lhost_new(&o, err, sizeof err);
        if (!h)
            fuzz_fail("lhost_new", err);
    }
    return h;
}

/* Pushes require(module)[fn] of the trusted framework. */
static void fuzz_push_fn(struct lhost *h, const char *module, const char *fn)
{
    lua_State *L = lhost_state(h);
    char err[1024];
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (lhost_pcall(h, 1, 1, err, sizeof err))
        fuzz_fail(module, err);
    lua_getfield(L, -1, fn);
    lua_remove(L, -2);
    if (!lua_isfunction(L, -1))
        fuzz_fail(fn, "not a function");
}

/* Bytes one input may add to the Lua heap at its peak (docs/reliability.md: every
 * document is decoded and rendered in 64 MiB). The process's RSS is not that bound: under
 * ASan it starts at about 60 MB (shadow memory, quarantine); tests/run.sh gives libFuzzer's
 * -rss_limit_mb a backstop above it and -malloc_limit_mb=64. */
#define FUZZ_HEAP_MAX ((size_t)64 << 20)

/* One input's run: the host, its state, the stack top and the heap the input starts from. */
struct fuzz_run {
    struct lhost *h;
    lua_State *L;
    int top;
    size_t heap;
};

/* Before an input. */
static struct fuzz_run fuzz_begin(void)
{
    struct fuzz_run r;
    r.h = fuzz_host();
    r.L = lhost_state(r.h);
    r.top = lua_gettop(r.L);
    r.heap = lhost_mem_used(r.h);
    return r;
}

/* After an input: nothing left on the stack, the heap's peak within FUZZ_HEAP_MAX of where
 * the input started, and the garbage collected (so that the next input starts from the
 * host's own memory). */
static void fuzz_settle(const struct fuzz_run *r)
{
    if (lua_gettop(r->L) != r->top)
        fuzz_fail("stack", "the target left values on the Lua stack");
    size_t peak = lhost_mem_peak(r->h);
    if (peak > r->heap + FUZZ_HEAP_MAX) {
        char why[128];
        snprintf(why, sizeof why, "the Lua heap grew by %zu MiB (bound %zu MiB)", (peak - r->heap) >> 20,
                 FUZZ_HEAP_MAX >> 20);
        fuzz_fail("memory", why);
    }
    lua_gc(r->L, LUA_GCCOLLECT, 0);
}

#endif
