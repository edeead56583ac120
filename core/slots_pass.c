/* SPDX-License-Identifier: Apache-2.0 */
/* slots_pass: the controller's pass over the accounting (slots.h, "The controller's pass"):
 * pods observed, registrations, timeouts and failed starts swept with their back-off, and the
 * demand turned into requests and cancellations. */
#include "slots.h"
#include "slotsctx.h"

#include <limits.h>
#include <math.h>

/* ---- the controller's pass ---------------------------------------------------------------- */

void slots_begin_pass(struct slots_acct *a, double now)
{
    a->now = now;
    a->pass++;
    if (a->pass == 0) /* wrapped: 0 is "recovered"; marks of older passes stay older */
        a->pass = 1;
    a->sweep = 0;
}

enum slots_status slots_add_failed(struct slots_acct *a, int n, struct slots_err *err)
{
    if (n < 0) {
        slots_set_err(err, "failed attempts must be >= 0, got %d", n);
        return SLOTS_EINVAL;
    }
    a->failed = n > INT_MAX - a->failed ? INT_MAX : a->failed + n;
    return SLOTS_OK;
}

enum slots_status slots_observe_pod(struct slots_acct *a, const char *name, int prio,
                                    enum slots_phase phase, double created,
                                    enum slots_verdict *verdict, struct slots_err *err)
{
    if (!name) {
        slots_set_err(err, "no pod name");
        return SLOTS_EINVAL;
    }
    int64_t id;
    if (!slots_parse_name(a, name, &id) || prio < 0 || prio > SLOTS_MAX_PRIORITY) {
        *verdict = SLOTS_DELETE_MALFORMED;
        if (slots_parse_name(a, name, &id) && id > a->max_pod_id)
            a->max_pod_id = id;
        return SLOTS_OK;
    }
    int32_t s = slots_pmap_get(a, id);
    if (s < 0 || a->profs[a->pods[s].prof].priority != prio) {
        if (id > a->max_pod_id)
            a->max_pod_id = id;
        *verdict = SLOTS_DELETE_STALE;
        return SLOTS_OK;
    }
    struct pod *pd = &a->pods[s];
    if (phase == SLOTS_PHASE_SUCCEEDED || phase == SLOTS_PHASE_FAILED) {
        slots_pod_drop(a, s);
        if (a->failed < INT_MAX)
            a->failed++;
        *verdict = SLOTS_DELETE_TERMINATED;
        return SLOTS_OK;
    }
    if (!pd->seen) {
        /* a start succeeded: the cool-down starts from the beginning next time */
        pd->seen = 1;
        a->backoff = 0;
        a->start_failures = 0;
        if (pd->state == POD_PENDING && a->timeout > 0 && created > 0)
            pd->deadline = created + a->timeout;
    }
    pd->mark = a->pass;
    *verdict = SLOTS_KEEP;
    return SLOTS_OK;
}

bool slots_tm_registered(struct slots_acct *a, const char *name)
{
    int64_t id;
    if (!slots_parse_name(a, name, &id))
        return false;
    int32_t s = slots_pmap_get(a, id);
    if (s < 0 || a->pods[s].state != POD_PENDING)
        return false;
    slots_unlink_pending(a, s);
    a->pods[s].state = POD_REGISTERED;
    a->pods[s].deadline = 0;
    a->profs[a->pods[s].prof].registered++;
    a->registered_total++;
    return true;
}

static void count_failed(struct slots_acct *a)
{
    if (a->failed < INT_MAX)
        a->failed++;
}

bool slots_sweep(struct slots_acct *a, double answered_at, struct slots_event *ev)
{
    for (; a->sweep < a->cap_pods; a->sweep++) {
        int32_t s = a->sweep;
        struct pod *pd = &a->pods[s];
        if (pd->state == POD_FREE)
            continue;
        enum slots_event_kind kind = 0;
        if (pd->mark != a->pass && pd->seen)
            kind = SLOTS_EV_GONE;
        else if (pd->mark != a->pass && pd->req_pass != a->pass)
            kind = SLOTS_EV_START_FAILED;
        else if (pd->mark == a->pass && pd->state == POD_PENDING && pd->deadline > 0 && answered_at >= 0 &&
                 answered_at >= pd->deadline)
            kind = SLOTS_EV_TIMEOUT;
        if (!kind)
            continue;
        ev->kind = kind;
        ev->pod_id = pd->id;
        ev->priority = a->profs[pd->prof].priority;
        ev->wait_until = 0;
        slots_pod_drop(a, s);
        if (kind == SLOTS_EV_START_FAILED) {
            a->backoff = a->backoff > 0 ? a->backoff * 2 : a->backoff_first;
            if (a->backoff > a->backoff_max)
                a->backoff = a->backoff_max;
            a->wait_until = a->now + a->backoff;
            if (a->start_failures < INT_MAX)
                a->start_failures++;
            ev->wait_until = a->wait_until;
        } else {
            count_failed(a);
        }
        ev->failed_attempts = a->failed;
        ev->stopped = a->failed >= a->max_failed;
        a->sweep++;
        return true;
    }
    return false;
}

/* The newest registered pod of prof idx (slab index), -1 when none. */
static int32_t newest_registered(const struct slots_acct *a, int idx)
{
    int32_t best = -1;
    for (int32_t s = 0; s < a->cap_pods; s++)
        if (a->pods[s].state == POD_REGISTERED && a->pods[s].prof == idx &&
            (best < 0 || a->pods[s].id > a->pods[best].id))
            best = s;
    return best;
}

/* Cancels one pod of prof idx: the oldest pending, else the newest registered. */
static void cancel_one(struct slots_acct *a, int idx, struct slots_outcome *out)
{
    struct prof *p = &a->profs[idx];
    int32_t s = p->head >= 0 ? p->head : newest_registered(a, idx);
    bool reg = a->pods[s].state == POD_REGISTERED;
    int64_t id = a->pods[s].id;
    slots_pod_drop(a, s);
    slots_outcome_init(out, SLOTS_CANCEL, p);
    out->pod_id = id;
    out->was_registered = reg;
}

enum slots_status slots_demand_step(struct slots_acct *a, const struct slots_resources *profile,
                                    int64_t demand, struct slots_outcome *out, struct slots_err *err)
{
    if (demand < 0 || demand > (int64_t)SLOTS_PODS_LIMIT * SLOTS_MAX_PER_TM) {
        slots_set_err(err, "demand must be 0..%lld slots", (long long)SLOTS_PODS_LIMIT * SLOTS_MAX_PER_TM);
        return SLOTS_EINVAL;
    }
    int idx;
    enum slots_status st = slots_lookup(a, profile, true, &idx, err);
    if (st != SLOTS_OK)
        return st;
    /* pods of other priorities (an older profile) are no longer wanted */
    for (int j = 0; j < a->nprofs; j++)
        if (j != idx && a->profs[j].pending + a->profs[j].registered > 0) {
            cancel_one(a, j, out);
            return SLOTS_OK;
        }
    struct prof *p = &a->profs[idx];
    int64_t want = (demand + p->slots - 1) / p->slots;
    int64_t have = (int64_t)p->pending + p->registered;
    if (have > want) {
        cancel_one(a, idx, out);
        return SLOTS_OK;
    }
    if (have == want) {
        p->spare = (int)(want * p->slots - demand);
        slots_outcome_init(out, SLOTS_NONE, p);
        return SLOTS_OK;
    }
    if (a->failed >= a->max_failed) {
        slots_outcome_init(out, SLOTS_STOPPED, p);
        return SLOTS_OK;
    }
    if (a->now < a->wait_until) {
        slots_outcome_init(out, SLOTS_WAIT, p);
        out->wait_until = a->wait_until;
        return SLOTS_OK;
    }
    int64_t id;
    if ((st = slots_request_pod(a, idx, &id, err)) != SLOTS_OK)
        return st;
    p = &a->profs[idx];
    int32_t s = slots_pmap_get(a, id);
    if (a->timeout > 0)
        a->pods[s].deadline = a->now + a->timeout;
    slots_outcome_init(out, SLOTS_REQUEST, p);
    out->pod_id = id;
    return SLOTS_OK;
}
