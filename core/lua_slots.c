/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fc.slots: the Lua face of core/slots (TaskManager slot accounting).
 *
 *   local slots = require("fc.slots")
 *
 * Resource tables (a slot's profile, or the per-TaskManager maximums):
 *   { cpu_cores = 1.5,          -- cores, number >= 0 (0/absent = unknown)
 *     memory_mib = 2048,        -- MiB, integer >= 0 (0/absent = unknown); includes floating
 *                               -- managed memory
 *     extended = { ["nvidia.com/gpu"] = 1 } }  -- name -> amount >= 0, names ignore case,
 *                                              -- at most 16; zero amounts are dropped
 * Other keys are an error (they are typos).  An extended entry named
 * slots.FLOATING_MEMORY ("floating_managed_memory_mib") never limits slots (it is already in
 * memory_mib) but is part of the resource identity.
 *
 * slots.per_taskmanager(profile, max) -> n
 *   Slots per TaskManager: 1 for an unknown cpu/memory or anything over its maximum, else the
 *   smallest floor(max / requested) over cpu, memory and each extended resource that `max` names.
 *
 * local acct = slots.new{ max = <resources>, max_failed_attempts = 3 (default 100),
 *                         name_prefix = "wordcount-taskmanager-" (default "taskmanager-"),
 *                         max_profiles = 256, max_pods = 4096 }
 * acct:priority(resource) -> priority, slots     stable number per distinct resource (0, 1, ...)
 * acct:find_priority(resource) -> priority | nil  never assigns
 * acct:resource(priority) -> resource | nil       the reverse map (names lowercased)
 * acct:start_worker(resource) -> outcome          one more slot wanted
 *   outcome = { action = "request" | "use_spare" | "stopped", priority = p, slots = n,
 *               spare = n, pod_id = id, pod_name = "<prefix><id>" }  (pod_* only for "request")
 * acct:cancel_worker(resource) -> outcome         one slot no longer wanted
 *   action = "none" | "spare_back" | "cancel" (pod_id/pod_name: the pending pod to delete)
 * acct:replace_worker(priority [, pending_slot_requests]) -> outcome
 *   a new pod for a priority whose unregistered pod went away; "request" | "none" | "stopped"
 * acct:pod_added(name, priority) -> "registered" | "exists" | "stale" (stale: delete that pod)
 * acct:pod_removed(name [, {failed = bool}]) ->
 *   { removed = bool, was = "pending" | "registered" | nil, priority = p | nil,
 *     failed_attempts = n, stopped = bool }
 * acct:recover{ {name = "...", id = 7, priority = 0, phase = "Running", resource = <opt>}, ... }
 *   rebuild from existing pods (phase: Pending, Running, Unknown, Succeeded, Failed); only on a
 *   new accounting; spare slots and failed attempts start at 0.
 * acct:snapshot() -> { pending = {[p] = n}, pending_pods = {[p] = {name, ...}} (oldest first),
 *   registered = {[p] = n}, spare = {[p] = n}, slots = {[p] = n}, failed_attempts = n,
 *   max_failed_attempts = n, stopped = bool, max_pod_id = n, next_priority = n, profiles = n }
 * acct:pod_name(id) -> "<prefix><id>"
 *
 * The controller's pass (slots.h, "The controller's pass", has the rules); new options
 * registration_timeout_seconds (0 = none), start_backoff_seconds (5), start_backoff_max_seconds
 * (300); recover records take created = <unix s>; snapshot adds start_failures,
 * backoff_seconds, wait_until. "pending" = not registered with the JobManager yet.
 * acct:begin_pass(now)
 * acct:observe_pod(name, priority|nil, phase, created) -> "keep" | "stale" | "malformed" |
 *   "terminated" (the last three: delete that pod; nil priority = a malformed label)
 * acct:tm_registered(name) -> bool    the JobManager lists TaskManager `name`
 * acct:add_failed(n)                  failed attempts carried over (a restarted controller)
 * acct:sweep([answered_at]) -> { {kind = "gone" | "start_failed" | "timeout", pod_name,
 *   priority, failed_attempts, stopped, wait_until (start_failed)}, ... }  (timeout: delete it)
 * acct:demand(resource, slots) -> actions, final
 *   actions = { {action = "request" | "cancel", pod_name, pod_id, priority, slots, spare,
 *   was_registered (cancel)}, ... } in order; final = {action = "none" | "stopped" | "wait",
 *   priority, slots, spare, wait_until (wait)}
 *
 * Errors raise "slots.<function>: <reason>" (bad input, unknown priority, limits).
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "slots.h"

#define ACCT_MT "fc.slots.acct"

struct acct_ud {
    struct slots_acct *a;
};

static const char *const ACTIONS[] = {"none", "request", "use_spare", "spare_back", "cancel", "stopped",
                                      "wait"};

/* Reads the resource table at index idx into r (strings stay owned by that table). */
static void read_resources(lua_State *L, int idx, const char *fn, const char *what,
                           struct slots_resources *r)
{
    idx = lua_absindex(L, idx);
    if (!lua_istable(L, idx))
        luaL_error(L, "slots.%s: %s must be a table", fn, what);
    memset(r, 0, sizeof *r);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            luaL_error(L, "slots.%s: %s has a non-string key", fn, what);
        const char *k = lua_tostring(L, -2);
        if (strcmp(k, "cpu_cores") == 0) {
            if (lua_type(L, -1) != LUA_TNUMBER)
                luaL_error(L, "slots.%s: %s.cpu_cores must be a number", fn, what);
            r->cpu_cores = lua_tonumber(L, -1);
        } else if (strcmp(k, "memory_mib") == 0) {
            int ok = 0;
            lua_Integer m = lua_tointegerx(L, -1, &ok);
            if (lua_type(L, -1) != LUA_TNUMBER || !ok)
                luaL_error(L, "slots.%s: %s.memory_mib must be an integer (MiB)", fn, what);
            r->memory_mib = (int64_t)m;
        } else if (strcmp(k, "extended") == 0) {
            if (!lua_istable(L, -1))
                luaL_error(L, "slots.%s: %s.extended must be a table of name = amount", fn, what);
            int t = lua_gettop(L);
            lua_pushnil(L);
            while (lua_next(L, t)) {
                if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TNUMBER)
                    luaL_error(L, "slots.%s: %s.extended must map names to numbers", fn, what);
                if (r->n_extended == SLOTS_MAX_EXTENDED)
                    luaL_error(L, "slots.%s: %s.extended has more than %d entries", fn, what,
                               SLOTS_MAX_EXTENDED);
                struct slots_extended *e = &r->extended[r->n_extended++];
                e->name = lua_tolstring(L, -2, &e->name_len);
                e->amount = lua_tonumber(L, -1);
                lua_pop(L, 1);
            }
        } else {
            luaL_error(L, "slots.%s: %s has an unknown key '%s'", fn, what, k);
        }
        lua_pop(L, 1);
    }
    struct slots_err err;
    if (slots_check(r, &err) != SLOTS_OK)
        luaL_error(L, "slots.%s: %s: %s", fn, what, err.msg);
}

static void push_resources(lua_State *L, const struct slots_resources *r)
{
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, r->cpu_cores);
    lua_setfield(L, -2, "cpu_cores");
    lua_pushinteger(L, (lua_Integer)r->memory_mib);
    lua_setfield(L, -2, "memory_mib");
    lua_createtable(L, 0, (int)r->n_extended);
    for (size_t i = 0; i < r->n_extended; i++) {
        lua_pushlstring(L, r->extended[i].name, r->extended[i].name_len);
        lua_pushnumber(L, r->extended[i].amount);
        lua_settable(L, -3);
    }
    lua_setfield(L, -2, "extended");
}

static struct slots_acct *check_acct(lua_State *L)
{
    struct acct_ud *u = luaL_checkudata(L, 1, ACCT_MT);
    if (!u->a)
        luaL_error(L, "slots: accounting already freed");
    return u->a;
}

static int check_priority(lua_State *L, int idx, const char *fn)
{
    int ok = 0;
    lua_Integer p = lua_tointegerx(L, idx, &ok);
    if (!ok)
        luaL_error(L, "slots.%s: priority must be an integer", fn);
    if (p < 0 || p > SLOTS_MAX_PRIORITY)
        luaL_error(L, "slots.%s: unknown priority %I", fn, (LUAI_UACINT)p);
    return (int)p;
}

static void push_pod_name(lua_State *L, struct slots_acct *a, int64_t id)
{
    char buf[SLOTS_PREFIX_MAX + 24];
    int n = slots_pod_name(a, id, buf, sizeof buf);
    lua_pushlstring(L, buf, n < 0 ? 0 : (size_t)n);
}

static int push_outcome(lua_State *L, struct slots_acct *a, const struct slots_outcome *o)
{
    lua_createtable(L, 0, 6);
    lua_pushstring(L, ACTIONS[o->action]);
    lua_setfield(L, -2, "action");
    if (o->priority >= 0) {
        lua_pushinteger(L, o->priority);
        lua_setfield(L, -2, "priority");
        lua_pushinteger(L, o->slots);
        lua_setfield(L, -2, "slots");
        lua_pushinteger(L, o->spare);
        lua_setfield(L, -2, "spare");
    }
    if (o->pod_id >= 0) {
        lua_pushinteger(L, (lua_Integer)o->pod_id);
        lua_setfield(L, -2, "pod_id");
        push_pod_name(L, a, o->pod_id);
        lua_setfield(L, -2, "pod_name");
    }
    return 1;
}

/* t[k] = v for the table on top of the stack. */
static void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void set_bool(lua_State *L, const char *k, bool v)
{
    lua_pushboolean(L, v);
    lua_setfield(L, -2, k);
}

static int raise_status(lua_State *L, const char *fn, const struct slots_err *err)
{
    return luaL_error(L, "slots.%s: %s", fn, err->msg);
}

static int l_per_taskmanager(lua_State *L)
{
    struct slots_resources p, m;
    read_resources(L, 1, "per_taskmanager", "profile", &p);
    read_resources(L, 2, "per_taskmanager", "max", &m);
    struct slots_err err;
    int n = 0;
    if (slots_per_taskmanager(&p, &m, &n, &err) != SLOTS_OK)
        return raise_status(L, "per_taskmanager", &err);
    lua_pushinteger(L, n);
    return 1;
}

static int opt_int_field(lua_State *L, int t, const char *k, const char *fn, int dflt)
{
    int ty = lua_getfield(L, t, k);
    int v = dflt;
    if (ty != LUA_TNIL) {
        int ok = 0;
        lua_Integer i = lua_tointegerx(L, -1, &ok);
        if (ty != LUA_TNUMBER || !ok || i < 0 || i > 0x7fffffff)
            luaL_error(L, "slots.%s: %s must be a non-negative integer", fn, k);
        v = (int)i;
    }
    lua_pop(L, 1);
    return v;
}

static double opt_seconds_field(lua_State *L, int t, const char *k, const char *fn)
{
    int ty = lua_getfield(L, t, k);
    double v = 0;
    if (ty != LUA_TNIL) {
        v = lua_tonumber(L, -1);
        if (ty != LUA_TNUMBER || !(v >= 0 && v < 1e9))
            luaL_error(L, "slots.%s: %s must be a number of seconds 0..1e9", fn, k);
    }
    lua_pop(L, 1);
    return v;
}

/* An optional unix time argument (number >= 0, or nil -> dflt). */
static double opt_time(lua_State *L, int idx, const char *fn, const char *what, double dflt)
{
    if (lua_isnoneornil(L, idx))
        return dflt;
    if (lua_type(L, idx) != LUA_TNUMBER)
        luaL_error(L, "slots.%s: %s must be a number (unix seconds)", fn, what);
    double v = lua_tonumber(L, idx);
    if (!(v >= 0 && v < 1e12))
        luaL_error(L, "slots.%s: %s must be 0..1e12 (unix seconds)", fn, what);
    return v;
}

static int l_new(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    struct slots_config cfg;
    memset(&cfg, 0, sizeof cfg);
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
        if (strcmp(k, "max") && strcmp(k, "max_failed_attempts") && strcmp(k, "name_prefix") &&
            strcmp(k, "max_profiles") && strcmp(k, "max_pods") && strcmp(k, "registration_timeout_seconds") &&
            strcmp(k, "start_backoff_seconds") && strcmp(k, "start_backoff_max_seconds"))
            luaL_error(L, "slots.new: unknown option '%s'", k);
        lua_pop(L, 1);
    }
    if (lua_getfield(L, 1, "max") == LUA_TNIL)
        luaL_error(L, "slots.new: max (per-TaskManager maximums) is required");
    read_resources(L, -1, "new", "max", &cfg.max); /* stays on the stack while slots_new copies */
    cfg.max_failed_attempts = opt_int_field(L, 1, "max_failed_attempts", "new", 0);
    if (lua_getfield(L, 1, "max_failed_attempts") != LUA_TNIL && cfg.max_failed_attempts == 0)
        luaL_error(L, "slots.new: max_failed_attempts must be >= 1");
    lua_pop(L, 1);
    cfg.max_profiles = opt_int_field(L, 1, "max_profiles", "new", 0);
    cfg.max_pods = opt_int_field(L, 1, "max_pods", "new", 0);
    cfg.registration_timeout_s = opt_seconds_field(L, 1, "registration_timeout_seconds", "new");
    cfg.start_backoff_s = opt_seconds_field(L, 1, "start_backoff_seconds", "new");
    cfg.start_backoff_max_s = opt_seconds_field(L, 1, "start_backoff_max_seconds", "new");
    int ty = lua_getfield(L, 1, "name_prefix");
    if (ty != LUA_TNIL && ty != LUA_TSTRING)
        luaL_error(L, "slots.new: name_prefix must be a string");
    cfg.name_prefix = ty == LUA_TNIL ? NULL : lua_tostring(L, -1);
    cfg.alloc = (slots_alloc_fn)lua_getallocf(L, &cfg.alloc_ud);
    struct acct_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->a = NULL;
    luaL_setmetatable(L, ACCT_MT);
    struct slots_err err;
    u->a = slots_new(&cfg, &err);
    if (!u->a)
        return raise_status(L, "new", &err);
    return 1;
}

static int l_gc(lua_State *L)
{
    struct acct_ud *u = luaL_checkudata(L, 1, ACCT_MT);
    slots_free(u->a);
    u->a = NULL;
    return 0;
}

static int l_priority(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    struct slots_resources r;
    read_resources(L, 2, "priority", "resource", &r);
    struct slots_err err;
    int p, n;
    if (slots_priority(a, &r, &p, &n, &err) != SLOTS_OK)
        return raise_status(L, "priority", &err);
    lua_pushinteger(L, p);
    lua_pushinteger(L, n);
    return 2;
}

static int l_find_priority(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    struct slots_resources r;
    read_resources(L, 2, "find_priority", "resource", &r);
    struct slots_err err;
    int p;
    enum slots_status st = slots_find_priority(a, &r, &p, &err);
    if (st == SLOTS_ENOENT) {
        lua_pushnil(L);
        return 1;
    }
    if (st != SLOTS_OK)
        return raise_status(L, "find_priority", &err);
    lua_pushinteger(L, p);
    return 1;
}

static int l_resource(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    int ok = 0;
    lua_Integer p = lua_tointegerx(L, 2, &ok);
    if (!ok)
        return luaL_error(L, "slots.resource: priority must be an integer");
    const struct slots_resources *r =
        (p < 0 || p > SLOTS_MAX_PRIORITY) ? NULL : slots_resource_of(a, (int)p);
    if (!r)
        lua_pushnil(L);
    else
        push_resources(L, r);
    return 1;
}

static int l_start_worker(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    struct slots_resources r;
    read_resources(L, 2, "start_worker", "resource", &r);
    struct slots_err err;
    struct slots_outcome o;
    if (slots_start_worker(a, &r, &o, &err) != SLOTS_OK)
        return raise_status(L, "start_worker", &err);
    return push_outcome(L, a, &o);
}

static int l_cancel_worker(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    struct slots_resources r;
    read_resources(L, 2, "cancel_worker", "resource", &r);
    struct slots_err err;
    struct slots_outcome o;
    if (slots_cancel_worker(a, &r, &o, &err) != SLOTS_OK)
        return raise_status(L, "cancel_worker", &err);
    return push_outcome(L, a, &o);
}

static int l_replace_worker(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    int p = check_priority(L, 2, "replace_worker");
    lua_Integer req = -1;
    if (!lua_isnoneornil(L, 3)) {
        int ok = 0;
        req = lua_tointegerx(L, 3, &ok);
        if (!ok || req < 0)
            return luaL_error(L, "slots.replace_worker: pending_slot_requests must be an integer >= 0");
    }
    struct slots_err err;
    struct slots_outcome o;
    if (slots_replace_worker(a, p, (int64_t)req, &o, &err) != SLOTS_OK)
        return raise_status(L, "replace_worker", &err);
    return push_outcome(L, a, &o);
}

static int l_pod_added(lua_State *L)
{
    static const char *const RES[] = {"registered", "exists", "stale"};
    struct slots_acct *a = check_acct(L);
    const char *name = luaL_checkstring(L, 2);
    int p = check_priority(L, 3, "pod_added");
    struct slots_err err;
    enum slots_added res;
    if (slots_pod_added(a, name, p, &res, &err) != SLOTS_OK)
        return raise_status(L, "pod_added", &err);
    lua_pushstring(L, RES[res]);
    return 1;
}

static int l_pod_removed(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    const char *name = luaL_checkstring(L, 2);
    bool failed = false;
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        int ty = lua_getfield(L, 3, "failed");
        if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
            return luaL_error(L, "slots.pod_removed: failed must be a boolean");
        failed = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    struct slots_err err;
    struct slots_removal r;
    if (slots_pod_removed(a, name, failed, &r, &err) != SLOTS_OK)
        return raise_status(L, "pod_removed", &err);
    lua_createtable(L, 0, 5);
    set_bool(L, "removed", r.removed);
    if (r.removed) {
        lua_pushstring(L, r.was_pending ? "pending" : "registered");
        lua_setfield(L, -2, "was");
        set_int(L, "priority", r.priority);
    }
    set_int(L, "failed_attempts", r.failed_attempts);
    set_bool(L, "stopped", r.stopped);
    return 1;
}

static int l_recover(lua_State *L)
{
    static const char *const PHASES[] = {"Pending", "Running", "Unknown", "Succeeded", "Failed", NULL};
    struct slots_acct *a = check_acct(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 2);
    if (n < 0 || n > (lua_Integer)SLOTS_PODS_LIMIT)
        return luaL_error(L, "slots.recover: too many pods (%I)", (LUAI_UACINT)n);
    size_t un = (size_t)n;
    /* scratch in userdata: freed by the GC even when a check below raises */
    struct slots_pod_record *recs = lua_newuserdatauv(L, sizeof *recs * (un ? un : 1), 0);
    int nres = 0;
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_geti(L, 2, i) != LUA_TTABLE)
            return luaL_error(L, "slots.recover: pods[%I] must be a table", (LUAI_UACINT)i);
        if (lua_getfield(L, -1, "resource") == LUA_TTABLE)
            nres++;
        lua_pop(L, 2);
    }
    struct slots_resources *res = lua_newuserdatauv(L, sizeof *res * (size_t)(nres ? nres : 1), 0);
    int ri = 0;
    for (lua_Integer i = 1; i <= n; i++) {
        struct slots_pod_record *r = &recs[i - 1];
        memset(r, 0, sizeof *r);
        lua_geti(L, 2, i);
        int t = lua_gettop(L);
        int ok = 0;
        lua_getfield(L, t, "id");
        r->id = (int64_t)lua_tointegerx(L, -1, &ok);
        if (!ok)
            return luaL_error(L, "slots.recover: pods[%I].id must be an integer", (LUAI_UACINT)i);
        lua_getfield(L, t, "priority");
        lua_Integer p = lua_tointegerx(L, -1, &ok);
        if (!ok || p < 0 || p > SLOTS_MAX_PRIORITY)
            return luaL_error(L, "slots.recover: pods[%I].priority must be an integer 0..%d",
                              (LUAI_UACINT)i, SLOTS_MAX_PRIORITY);
        r->priority = (int)p;
        lua_getfield(L, t, "phase");
        const char *ph = lua_tostring(L, -1);
        int k = 0;
        while (ph && PHASES[k] && strcmp(PHASES[k], ph) != 0)
            k++;
        if (!ph || !PHASES[k])
            return luaL_error(L, "slots.recover: pods[%I].phase must be Pending, Running, Unknown, "
                              "Succeeded or Failed", (LUAI_UACINT)i);
        r->phase = (enum slots_phase)k;
        int ty = lua_getfield(L, t, "name");
        if (ty != LUA_TNIL && ty != LUA_TSTRING)
            return luaL_error(L, "slots.recover: pods[%I].name must be a string", (LUAI_UACINT)i);
        r->name = ty == LUA_TSTRING ? lua_tostring(L, -1) : NULL; /* kept alive by pods[i] */
        ty = lua_getfield(L, t, "created");
        if (ty != LUA_TNIL && ty != LUA_TNUMBER)
            return luaL_error(L, "slots.recover: pods[%I].created must be a number (unix seconds)", (LUAI_UACINT)i);
        r->created = lua_tonumber(L, -1);
        if (lua_getfield(L, t, "resource") == LUA_TTABLE) {
            read_resources(L, -1, "recover", "resource", &res[ri]);
            r->resource = &res[ri++];
        }
        lua_settop(L, t - 1);
    }
    struct slots_err err;
    if (slots_recover(a, recs, un, &err) != SLOTS_OK)
        return raise_status(L, "recover", &err);
    return 0;
}

static int l_snapshot(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    struct slots_totals t;
    slots_totals(a, &t);
    lua_createtable(L, 0, 11);
    const char *maps[] = {"pending", "pending_pods", "registered", "spare", "slots"};
    for (int m = 0; m < 5; m++) {
        lua_createtable(L, 0, t.profiles);
        lua_setfield(L, -2, maps[m]);
    }
    int64_t idbuf[64];
    struct slots_priority_info pi;
    for (int i = 0; slots_priority_at(a, i, &pi); i++) {
        int vals[] = {pi.pending, 0, pi.registered, pi.spare, pi.slots};
        for (int m = 0; m < 5; m++) {
            if (m == 1)
                continue;
            lua_getfield(L, -1, maps[m]);
            lua_pushinteger(L, vals[m]);
            lua_rawseti(L, -2, pi.priority);
            lua_pop(L, 1);
        }
        lua_getfield(L, -1, "pending_pods");
        lua_createtable(L, pi.pending, 0);
        /* ids in chunks: the pending list is walked once per chunk of 64 */
        int total = slots_pending_ids(a, pi.priority, idbuf, 64);
        if (total <= 64) {
            for (int k = 0; k < total; k++) {
                push_pod_name(L, a, idbuf[k]);
                lua_rawseti(L, -2, k + 1);
            }
        } else {
            int64_t *all = lua_newuserdatauv(L, sizeof *all * (size_t)total, 0);
            slots_pending_ids(a, pi.priority, all, total);
            for (int k = 0; k < total; k++) {
                push_pod_name(L, a, all[k]);
                lua_rawseti(L, -3, k + 1);
            }
            lua_pop(L, 1);
        }
        lua_rawseti(L, -2, pi.priority);
        lua_pop(L, 1);
    }
    set_int(L, "failed_attempts", t.failed_attempts);
    set_int(L, "max_failed_attempts", t.max_failed_attempts);
    set_bool(L, "stopped", t.stopped);
    set_int(L, "max_pod_id", (lua_Integer)t.max_pod_id);
    set_int(L, "next_priority", t.next_priority);
    set_int(L, "profiles", t.profiles);
    set_int(L, "start_failures", t.start_failures);
    lua_pushnumber(L, t.backoff_s);
    lua_setfield(L, -2, "backoff_seconds");
    lua_pushnumber(L, t.wait_until);
    lua_setfield(L, -2, "wait_until");
    return 1;
}

/* ---- the controller's pass ---------------------------------------------------------------- */

static const char *const PHASE_NAMES[] = {"Pending", "Running", "Unknown", "Succeeded", "Failed", NULL};

static int l_begin_pass(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    slots_begin_pass(a, opt_time(L, 2, "begin_pass", "now", -1));
    return 0;
}

static int l_observe_pod(lua_State *L)
{
    static const char *const VERDICTS[] = {"keep", "stale", "malformed", "terminated"};
    struct slots_acct *a = check_acct(L);
    const char *name = luaL_checkstring(L, 2);
    int prio = -1;
    if (lua_type(L, 3) == LUA_TNUMBER) {
        int ok = 0;
        lua_Integer p = lua_tointegerx(L, 3, &ok);
        prio = ok && p >= 0 && p <= SLOTS_MAX_PRIORITY ? (int)p : -1;
    } else if (!lua_isnoneornil(L, 3)) {
        return luaL_error(L, "slots.observe_pod: priority must be an integer or nil (malformed label)");
    }
    const char *ph = luaL_optstring(L, 4, "Pending");
    int k = 0;
    while (PHASE_NAMES[k] && strcmp(PHASE_NAMES[k], ph) != 0)
        k++;
    if (!PHASE_NAMES[k])
        return luaL_error(L, "slots.observe_pod: phase must be Pending, Running, Unknown, Succeeded or Failed");
    double created = opt_time(L, 5, "observe_pod", "created", 0);
    struct slots_err err;
    enum slots_verdict v;
    if (slots_observe_pod(a, name, prio, (enum slots_phase)k, created, &v, &err) != SLOTS_OK)
        return raise_status(L, "observe_pod", &err);
    lua_pushstring(L, VERDICTS[v]);
    return 1;
}

static int l_add_failed(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    int ok = 0;
    lua_Integer n = lua_tointegerx(L, 2, &ok);
    if (!ok || n < 0 || n > 0x7fffffff)
        return luaL_error(L, "slots.add_failed: n must be an integer 0..2147483647");
    struct slots_err err;
    if (slots_add_failed(a, (int)n, &err) != SLOTS_OK)
        return raise_status(L, "add_failed", &err);
    return 0;
}

static int l_tm_registered(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    lua_pushboolean(L, slots_tm_registered(a, luaL_checkstring(L, 2)));
    return 1;
}

static int l_sweep(lua_State *L)
{
    static const char *const KINDS[] = {"", "gone", "start_failed", "timeout"};
    struct slots_acct *a = check_acct(L);
    double at = opt_time(L, 2, "sweep", "answered_at", -1);
    lua_newtable(L);
    struct slots_event ev;
    for (int n = 1; slots_sweep(a, at, &ev); n++) {
        lua_createtable(L, 0, 6);
        lua_pushstring(L, KINDS[ev.kind]);
        lua_setfield(L, -2, "kind");
        push_pod_name(L, a, ev.pod_id);
        lua_setfield(L, -2, "pod_name");
        set_int(L, "priority", ev.priority);
        set_int(L, "failed_attempts", ev.failed_attempts);
        set_bool(L, "stopped", ev.stopped);
        if (ev.kind == SLOTS_EV_START_FAILED) {
            lua_pushnumber(L, ev.wait_until);
            lua_setfield(L, -2, "wait_until");
        }
        lua_rawseti(L, -2, n);
    }
    return 1;
}

static int l_demand(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    struct slots_resources r;
    read_resources(L, 2, "demand", "resource", &r);
    int ok = 0;
    lua_Integer d = lua_tointegerx(L, 3, &ok);
    if (!ok || d < 0)
        return luaL_error(L, "slots.demand: demand must be an integer >= 0 (slots)");
    lua_newtable(L);
    struct slots_err err;
    struct slots_outcome o;
    for (int n = 1;; n++) {
        if (slots_demand_step(a, &r, (int64_t)d, &o, &err) != SLOTS_OK)
            return raise_status(L, "demand", &err);
        if (o.action != SLOTS_REQUEST && o.action != SLOTS_CANCEL)
            break;
        push_outcome(L, a, &o);
        if (o.action == SLOTS_CANCEL)
            set_bool(L, "was_registered", o.was_registered);
        lua_rawseti(L, -2, n);
    }
    push_outcome(L, a, &o);
    if (o.action == SLOTS_WAIT) {
        lua_pushnumber(L, o.wait_until);
        lua_setfield(L, -2, "wait_until");
    }
    return 2;
}

static int l_pod_name(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    int ok = 0;
    lua_Integer id = lua_tointegerx(L, 2, &ok);
    if (!ok || id < 0 || id > SLOTS_MAX_POD_ID)
        return luaL_error(L, "slots.pod_name: id must be an integer 0..%I", (LUAI_UACINT)SLOTS_MAX_POD_ID);
    push_pod_name(L, a, (int64_t)id);
    return 1;
}

static int l_tostring(lua_State *L)
{
    struct slots_acct *a = check_acct(L);
    struct slots_totals t;
    slots_totals(a, &t);
    lua_pushfstring(L, "fc.slots accounting (%d priorities, %d pending, %d registered)", t.profiles,
                    t.pending, t.registered);
    return 1;
}

int luaopen_fc_slots(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"priority", l_priority},         {"find_priority", l_find_priority},
        {"resource", l_resource},         {"start_worker", l_start_worker},
        {"cancel_worker", l_cancel_worker}, {"replace_worker", l_replace_worker},
        {"pod_added", l_pod_added},       {"pod_removed", l_pod_removed},
        {"recover", l_recover},           {"snapshot", l_snapshot},
        {"pod_name", l_pod_name},         {"begin_pass", l_begin_pass},
        {"observe_pod", l_observe_pod},   {"tm_registered", l_tm_registered},
        {"sweep", l_sweep},               {"demand", l_demand},
        {"add_failed", l_add_failed},
        {NULL, NULL}};
    static const luaL_Reg meta[] = {{"__gc", l_gc}, {"__close", l_gc}, {"__tostring", l_tostring},
                                    {NULL, NULL}};
    if (luaL_newmetatable(L, ACCT_MT)) {
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "__index");
        lua_pushliteral(L, "fc.slots.acct");
        lua_setfield(L, -2, "__metatable");
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 4);
    lua_pushcfunction(L, l_per_taskmanager);
    lua_setfield(L, -2, "per_taskmanager");
    lua_pushcfunction(L, l_new);
    lua_setfield(L, -2, "new");
    lua_pushstring(L, SLOTS_FLOATING_MEMORY);
    lua_setfield(L, -2, "FLOATING_MEMORY");
    return 1;
}
