/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lpattern: a budgeted Lua pattern matcher (see lpattern.h), written from the semantics of
 * the Lua 5.4 manual, section 6.4.1:
 *   single character classes  x . %a %c %d %g %l %p %s %u %w %x (upper case: complement),
 *                             %z (NUL; no longer in the manual, still in lstrlib 5.4)
 *                             %<non-alphanumeric> [set] [^set]
 *   pattern items             class, class*, class+, class- (shortest), class?, %1..%9,
 *                             %bxy (balanced), %f[set] (frontier)
 *   patterns                  a leading ^ anchors (find, match, gsub), a trailing $ anchors
 *                             at the end; (...) captures, () captures the position.
 * The matcher is a recursive descent over the pattern: lpattern_do walks items that need no
 * choice in a loop and recurses where a choice may have to be undone (quantifiers, captures).
 */
#include "lpattern.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include <lauxlib.h>

#define LPATTERN_UNCLOSED (-1)
#define LPATTERN_POSITION (-2)
#define LPATTERN_SPECIALS "^$*+?.([%-"

struct lpattern_state {
    const char *src, *src_end; /* the subject */
    const char *pat_end;
    lua_State *L;
    struct lpattern_budget *budget;
    unsigned steps;
    int depth; /* matcher calls still allowed below this one */
    int level; /* captures opened so far */
    struct {
        const char *init;
        ptrdiff_t len; /* bytes, or LPATTERN_UNCLOSED / LPATTERN_POSITION */
    } cap[LPATTERN_MAXCAPTURES];
};

static const char *lpattern_do(struct lpattern_state *ms, const char *s, const char *p);

/* Counts n steps; calls the host's poll function every LPATTERN_POLL_STEPS of them. */
static void lpattern_step(struct lpattern_state *ms, size_t n)
{
    if (n >= LPATTERN_POLL_STEPS - ms->steps) {
        ms->steps = 0;
        ms->budget->poll(ms->L, ms->budget->ud);
    } else {
        ms->steps += (unsigned)n;
    }
}

/* Does byte c belong to class %<cl>?  (cl | 0x20 lowers an ASCII letter and maps no other
 * byte to one; the C locale's classes, as the host never calls setlocale.) */
static int lpattern_class(int c, int cl)
{
    int in;
    switch (cl | 0x20) {
    case 'a': in = isalpha(c); break;
    case 'c': in = iscntrl(c); break;
    case 'd': in = isdigit(c); break;
    case 'g': in = isgraph(c); break;
    case 'l': in = islower(c); break;
    case 'p': in = ispunct(c); break;
    case 's': in = isspace(c); break;
    case 'u': in = isupper(c); break;
    case 'w': in = isalnum(c); break;
    case 'x': in = isxdigit(c); break;
    case 'z': in = c == 0; break; /* the NUL byte: deprecated since 5.2, still in 5.4 */
    default: return cl == c; /* an escaped character stands for itself */
    }
    if (cl <= 'Z')
        in = !in;
    return in != 0;
}

/* Does byte c belong to the set that starts at '[' (p) and ends at its ']' (close)? */
static int lpattern_set(int c, const char *p, const char *close)
{
    int negated = 0;
    p++;
    if (*p == '^') {
        negated = 1;
        p++;
    }
    while (p < close) {
        if (*p == '%' && p + 1 < close) {
            if (lpattern_class(c, (unsigned char)p[1]))
                return !negated;
            p += 2;
        } else if (p + 2 < close && p[1] == '-') {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2])
                return !negated;
            p += 3;
        } else {
            if ((unsigned char)*p == c)
                return !negated;
            p++;
        }
    }
    return negated;
}

/* The end of the single character class that starts at p. */
static const char *lpattern_class_end(struct lpattern_state *ms, const char *p)
{
    const char *end = ms->pat_end;
    char c = *p++;
    if (c == '%') {
        if (p >= end)
            luaL_error(ms->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (c != '[')
        return p;
    if (p < end && *p == '^')
        p++;
    /* the first character of a set is never its end: "[]]" is the set of ']' */
    do {
        if (p >= end)
            luaL_error(ms->L, "malformed pattern (missing ']')");
        c = *p++;
        if (c == '%') {
            if (p >= end)
                luaL_error(ms->L, "malformed pattern (missing ']')");
            p++;
        }
    } while (p >= end || *p != ']');
    return p + 1;
}

/* Does the class p..ep match the subject byte at s (none at the end)? */
static int lpattern_single(const struct lpattern_state *ms, const char *s, const char *p,
                           const char *ep)
{
    if (s >= ms->src_end)
        return 0;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.': return 1;
    case '%': return lpattern_class(c, (unsigned char)p[1]);
    case '[': return lpattern_set(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

/* class* (and class+ after its first match): the longest run first, then shorter ones. */
static const char *lpattern_longest(struct lpattern_state *ms, const char *s, const char *p,
                                    const char *ep)
{
    size_t n = 0;
    while (lpattern_single(ms, s + n, p, ep))
        if ((++n & (LPATTERN_POLL_STEPS - 1)) == 0)
            lpattern_step(ms, LPATTERN_POLL_STEPS);
    lpattern_step(ms, n & (LPATTERN_POLL_STEPS - 1));
    for (;;) {
        const char *r = lpattern_do(ms, s + n, ep + 1);
        if (r)
            return r;
        if (n == 0)
            return NULL;
        n--;
    }
}

/* class-: the shortest run first, one more byte at a time. */
static const char *lpattern_shortest(struct lpattern_state *ms, const char *s, const char *p,
                                     const char *ep)
{
    for (;;) {
        const char *r = lpattern_do(ms, s, ep + 1);
        if (r)
            return r;
        if (!lpattern_single(ms, s, p, ep))
            return NULL;
        s++;
    }
}

/* %bxy at s (p at x): the end of the balanced run, or NULL. */
static const char *lpattern_balance(struct lpattern_state *ms, const char *s, const char *p)
{
    if (p + 1 >= ms->pat_end)
        luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= ms->src_end || *s != p[0])
        return NULL;
    const char *start = s;
    int open = 1;
    while (++s < ms->src_end) {
        if (((size_t)(s - start) & (LPATTERN_POLL_STEPS - 1)) == 0)
            lpattern_step(ms, LPATTERN_POLL_STEPS);
        if (*s == p[1]) {
            if (--open == 0)
                return s + 1;
        } else if (*s == p[0]) {
            open++;
        }
    }
    return NULL;
}

/* %1..%9 at s: the end of a copy of that capture, or NULL. */
static const char *lpattern_backref(struct lpattern_state *ms, const char *s, int digit)
{
    int i = digit - '1';
    if (i < 0 || i >= ms->level || ms->cap[i].len == LPATTERN_UNCLOSED)
        luaL_error(ms->L, "invalid capture index %%%d", i + 1);
    ptrdiff_t len = ms->cap[i].len;
    if (len == LPATTERN_POSITION || ms->src_end - s < len)
        return NULL;
    lpattern_step(ms, (size_t)len);
    return memcmp(ms->cap[i].init, s, (size_t)len) == 0 ? s + len : NULL;
}

static const char *lpattern_open(struct lpattern_state *ms, const char *s, const char *p,
                                 ptrdiff_t what)
{
    if (ms->level >= LPATTERN_MAXCAPTURES)
        luaL_error(ms->L, "too many captures");
    ms->cap[ms->level].init = s;
    ms->cap[ms->level].len = what;
    ms->level++;
    const char *r = lpattern_do(ms, s, p);
    if (!r)
        ms->level--;
    return r;
}

static const char *lpattern_close(struct lpattern_state *ms, const char *s, const char *p)
{
    int i = ms->level - 1;
    while (i >= 0 && ms->cap[i].len != LPATTERN_UNCLOSED)
        i--;
    if (i < 0)
        luaL_error(ms->L, "invalid pattern capture");
    ms->cap[i].len = s - ms->cap[i].init;
    const char *r = lpattern_do(ms, s, p);
    if (!r)
        ms->cap[i].len = LPATTERN_UNCLOSED;
    return r;
}

/* Matches pattern p (to ms->pat_end) at subject position s: the end of the match or NULL. */
static const char *lpattern_do(struct lpattern_state *ms, const char *s, const char *p)
{
    const char *r = NULL;
    if (ms->depth-- == 0)
        luaL_error(ms->L, "pattern too complex");
    for (;;) {
        lpattern_step(ms, 1);
        if (p >= ms->pat_end) {
            r = s;
            break;
        }
        if (*p == '(') {
            if (p + 1 < ms->pat_end && p[1] == ')')
                r = lpattern_open(ms, s, p + 2, LPATTERN_POSITION);
            else
                r = lpattern_open(ms, s, p + 1, LPATTERN_UNCLOSED);
            break;
        }
        if (*p == ')') {
            r = lpattern_close(ms, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == ms->pat_end) {
            r = s == ms->src_end ? s : NULL;
            break;
        }
        if (*p == '%' && p + 1 < ms->pat_end) {
            if (p[1] == 'b') {
                s = lpattern_balance(ms, s, p + 2);
                if (!s)
                    break;
                p += 4;
                continue;
            }
            if (p[1] == 'f') {
                p += 2;
                if (p >= ms->pat_end || *p != '[')
                    luaL_error(ms->L, "missing '[' after '%%f' in pattern");
                const char *ep = lpattern_class_end(ms, p);
                int before = s == ms->src ? 0 : (unsigned char)s[-1];
                int here = s < ms->src_end ? (unsigned char)*s : 0;
                if (lpattern_set(before, p, ep - 1) || !lpattern_set(here, p, ep - 1))
                    break;
                p = ep;
                continue;
            }
            if (isdigit((unsigned char)p[1])) {
                s = lpattern_backref(ms, s, (unsigned char)p[1]);
                if (!s)
                    break;
                p += 2;
                continue;
            }
        }
        const char *ep = lpattern_class_end(ms, p);
        int ok = lpattern_single(ms, s, p, ep);
        char q = ep < ms->pat_end ? *ep : '\0';
        if (q == '?') {
            if (ok && (r = lpattern_do(ms, s + 1, ep + 1)) != NULL)
                break;
            p = ep + 1;
            continue;
        }
        if (q == '+') {
            r = ok ? lpattern_longest(ms, s + 1, p, ep) : NULL;
            break;
        }
        if (q == '*') {
            r = lpattern_longest(ms, s, p, ep);
            break;
        }
        if (q == '-') {
            r = lpattern_shortest(ms, s, p, ep);
            break;
        }
        if (!ok)
            break;
        s++;
        p = ep;
    }
    ms->depth++;
    return r;
}

/* ---- the Lua functions ---- */

static void lpattern_init(struct lpattern_state *ms, lua_State *L, const char *s, size_t ls,
                          const char *p, size_t lp)
{
    ms->L = L;
    ms->budget = lua_touserdata(L, lua_upvalueindex(1));
    ms->src = s;
    ms->src_end = s + ls;
    ms->pat_end = p + lp;
    ms->steps = 0;
}

/* Ready for a new attempt (captures and depth reset; the step count goes on). */
static void lpattern_reset(struct lpattern_state *ms)
{
    ms->level = 0;
    ms->depth = LPATTERN_MAXDEPTH;
}

/* Pushes capture i of a match s..e (the whole match for i == 0 when there are none). */
static void lpattern_push_capture(struct lpattern_state *ms, int i, const char *s, const char *e)
{
    if (i >= ms->level) {
        if (i != 0)
            luaL_error(ms->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(ms->L, s, (size_t)(e - s));
        return;
    }
    ptrdiff_t len = ms->cap[i].len;
    if (len == LPATTERN_UNCLOSED)
        luaL_error(ms->L, "unfinished capture");
    if (len == LPATTERN_POSITION)
        lua_pushinteger(ms->L, (lua_Integer)(ms->cap[i].init - ms->src) + 1);
    else
        lua_pushlstring(ms->L, ms->cap[i].init, (size_t)len);
}

/* Pushes every capture (or the whole match when whole and there are none); their number. */
static int lpattern_push_captures(struct lpattern_state *ms, const char *s, const char *e,
                                  int whole)
{
    int n = ms->level == 0 && whole ? 1 : ms->level;
    luaL_checkstack(ms->L, n, "too many captures");
    for (int i = 0; i < n; i++)
        lpattern_push_capture(ms, i, s, e);
    return n;
}

/* The 0-based start of argument `arg` (an initial position, default 1), as string.find:
 * negative counts from the end, before the start is 1. */
static size_t lpattern_start(lua_State *L, int arg, size_t len)
{
    lua_Integer pos = luaL_optinteger(L, arg, 1);
    if (pos > 0)
        return (size_t)pos - 1;
    if (pos == 0 || pos < -(lua_Integer)len)
        return 0;
    return len + (size_t)pos;
}

static int lpattern_has_specials(const char *p, size_t lp)
{
    for (size_t i = 0; i < lp; i++)
        if (strchr(LPATTERN_SPECIALS, p[i]) && p[i] != '\0')
            return 1;
    return 0;
}

static int lpattern_find_aux(lua_State *L, int find)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = lpattern_start(L, 3, ls);
    if (init > ls) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || !lpattern_has_specials(p, lp))) {
        const char *at = lp == 0 ? s + init : memmem(s + init, ls - init, p, lp);
        if (!at) {
            luaL_pushfail(L);
            return 1;
        }
        lua_pushinteger(L, (lua_Integer)(at - s) + 1);
        lua_pushinteger(L, (lua_Integer)(at - s) + (lua_Integer)lp);
        return 2;
    }
    struct lpattern_state ms;
    int anchor = lp > 0 && *p == '^';
    if (anchor) {
        p++;
        lp--;
    }
    lpattern_init(&ms, L, s, ls, p, lp);
    const char *at = s + init;
    for (;;) {
        lpattern_reset(&ms);
        const char *e = lpattern_do(&ms, at, p);
        if (e) {
            if (!find)
                return lpattern_push_captures(&ms, at, e, 1);
            lua_pushinteger(L, (lua_Integer)(at - s) + 1);
            lua_pushinteger(L, (lua_Integer)(e - s));
            return lpattern_push_captures(&ms, NULL, NULL, 0) + 2;
        }
        if (anchor || at >= ms.src_end)
            break;
        at++;
    }
    luaL_pushfail(L);
    return 1;
}

static int lpattern_find(lua_State *L) { return lpattern_find_aux(L, 1); }
static int lpattern_match(lua_State *L) { return lpattern_find_aux(L, 0); }

/* The state of one gmatch iteration (a userdata, upvalue 3 of the iterator). */
struct lpattern_gmatch {
    size_t next; /* offset where the next search starts */
    size_t last; /* end offset of the last match, or (size_t)-1 */
};

static int lpattern_gmatch_next(lua_State *L)
{
    size_t ls, lp;
    const char *s = lua_tolstring(L, lua_upvalueindex(2), &ls);
    const char *p = lua_tolstring(L, lua_upvalueindex(3), &lp);
    struct lpattern_gmatch *g = lua_touserdata(L, lua_upvalueindex(4));
    struct lpattern_state ms;
    lpattern_init(&ms, L, s, ls, p, lp);
    for (size_t at = g->next; at <= ls; at++) {
        lpattern_reset(&ms);
        const char *e = lpattern_do(&ms, s + at, p);
        if (e && (size_t)(e - s) != g->last) {
            g->next = g->last = (size_t)(e - s);
            return lpattern_push_captures(&ms, s + at, e, 1);
        }
    }
    g->next = ls + 1;
    return 0;
}

/* string.gmatch(s, pattern [, init]): a '^' is a plain character here (no anchor). */
static int lpattern_gmatch(lua_State *L)
{
    size_t ls;
    luaL_checklstring(L, 1, &ls);
    luaL_checkstring(L, 2);
    size_t init = lpattern_start(L, 3, ls);
    lua_settop(L, 2);
    struct lpattern_gmatch *g = lua_newuserdatauv(L, sizeof *g, 0);
    g->next = init > ls ? ls + 1 : init;
    g->last = (size_t)-1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_pushcclosure(L, lpattern_gmatch_next, 4);
    return 1;
}

/* Adds the replacement string (argument 3) for the match s..e, with %0..%9 and %%. */
static void lpattern_add_string(struct lpattern_state *ms, luaL_Buffer *b, const char *s,
                                const char *e)
{
    size_t lr;
    const char *r = lua_tolstring(ms->L, 3, &lr);
    const char *end = r + lr;
    while (r < end) {
        const char *esc = memchr(r, '%', (size_t)(end - r));
        if (!esc) {
            luaL_addlstring(b, r, (size_t)(end - r));
            return;
        }
        luaL_addlstring(b, r, (size_t)(esc - r));
        r = esc + 1;
        if (r < end && *r == '%') {
            luaL_addchar(b, '%');
        } else if (r < end && isdigit((unsigned char)*r)) {
            if (*r == '0') {
                luaL_addlstring(b, s, (size_t)(e - s));
            } else {
                lpattern_push_capture(ms, *r - '1', s, e);
                luaL_tolstring(ms->L, -1, NULL);
                lua_remove(ms->L, -2);
                luaL_addvalue(b);
            }
        } else {
            luaL_error(ms->L, "invalid use of '%%' in replacement string");
        }
        r++;
    }
}

/* Adds the replacement for the match s..e: the string, or the value of the table or function
 * (the match itself when that is false or nil). */
static void lpattern_add_value(struct lpattern_state *ms, luaL_Buffer *b, const char *s,
                               const char *e, int type)
{
    lua_State *L = ms->L;
    if (type == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = lpattern_push_captures(ms, s, e, 1);
        lua_call(L, n, 1);
    } else if (type == LUA_TTABLE) {
        lpattern_push_capture(ms, 0, s, e);
        lua_gettable(L, 3);
    } else {
        lpattern_add_string(ms, b, s, e);
        return;
    }
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
    } else if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    } else {
        luaL_addvalue(b);
    }
}

static int lpattern_gsub(lua_State *L)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int type = lua_type(L, 3);
    lua_Integer max = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
    luaL_argexpected(L, type == LUA_TNUMBER || type == LUA_TSTRING || type == LUA_TFUNCTION ||
                            type == LUA_TTABLE, 3, "string/function/table");
    int anchor = lp > 0 && *p == '^';
    if (anchor) {
        p++;
        lp--;
    }
    struct lpattern_state ms;
    lpattern_init(&ms, L, s, ls, p, lp);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    const char *at = s, *last = NULL;
    lua_Integer n = 0;
    while (n < max) {
        lpattern_reset(&ms);
        const char *e = lpattern_do(&ms, at, p);
        if (e && e != last) {
            n++;
            lpattern_add_value(&ms, &b, at, e, type);
            at = last = e;
        } else if (at < ms.src_end) {
            luaL_addchar(&b, *at++);
        } else {
            break;
        }
        if (anchor)
            break;
    }
    if (n == 0) {
        lua_pushvalue(L, 1);
    } else {
        luaL_addlstring(&b, at, (size_t)(ms.src_end - at));
        luaL_pushresult(&b);
    }
    lua_pushinteger(L, n);
    return 2;
}

void lpattern_register(lua_State *L, struct lpattern_budget *budget)
{
    static const luaL_Reg fns[] = {
        {"find", lpattern_find},
        {"match", lpattern_match},
        {"gmatch", lpattern_gmatch},
        {"gsub", lpattern_gsub},
        {NULL, NULL}};
    lua_pushlightuserdata(L, budget);
    luaL_setfuncs(L, fns, 1);
}
