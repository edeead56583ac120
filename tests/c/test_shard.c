/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/shard's pure parts (the hash, a key's shard, the preferred shard, the
 * campaign delay, the Lease name), the takeover decision on a shard's Lease (core/leader's
 * leader_decide, as a standby replica sees a dead replica's Lease) and the --shards /
 * --shard-index options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <jansson.h>

#include "leader.h"
#include "log.h"
#include "options.h"
#include "shard.h"
#include "transport_tap.h"

static void test_hash(void)
{
    /* the FNV-1a 32-bit test vectors (Fowler/Noll/Vo) */
    IS_INT(shard_hash("", 0), 0x811c9dc5u, "fnv1a32('') is the offset basis");
    IS_INT(shard_hash("a", 1), 0xe40c292cu, "fnv1a32('a')");
    IS_INT(shard_hash("foobar", 6), 0xbf9cf968u, "fnv1a32('foobar')");
    IS_INT(shard_hash("default/s1", 10), 0x1a657893u, "fnv1a32('default/s1')");
    /* bytes above 0x7f are taken unsigned */
    IS_INT(shard_hash("\xff", 1), (0x811c9dc5u ^ 0xffu) * 16777619u, "a byte 0xff counts as 255");
}

static void test_of_key(void)
{
    IS_INT(shard_of_key("default/s1", 3), 0x1a657893u % 3, "default/s1 of 3: hash mod 3 (1)");
    IS_INT(shard_of_key("default/s1", 3), 1, "default/s1 is in shard 1 of 3");
    IS_INT(shard_of_key("shards/c1", 3), 0, "shards/c1 is in shard 0 of 3");
    IS_INT(shard_of_key("shards/c2", 7), 3, "shards/c2 is in shard 3 of 7");
    IS_INT(shard_of_key("ns/x", 3), 2, "ns/x is in shard 2 of 3");
    IS_INT(shard_of_key("ns/x", 1), 0, "one shard: always 0");
    IS_INT(shard_of_key("ns/x", 0), 0, "no shards given: 0");
    IS_INT(shard_of_key(NULL, 3), 0, "no key: 0");
    /* the namespace is part of the key: the same name elsewhere may be in another shard */
    int spread[3] = {0};
    char key[64];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "shards/c%d", i);
        spread[shard_of_key(key, 3)]++;
    }
    OK(spread[0] > 70 && spread[1] > 70 && spread[2] > 70,
       "300 keys spread over 3 shards (%d %d %d), none under 70", spread[0], spread[1], spread[2]);
}

static void test_preferred(void)
{
    IS_INT(shard_ordinal("flink-controller-2"), 2, "StatefulSet ordinal 2");
    IS_INT(shard_ordinal("flink-controller-0"), 0, "ordinal 0");
    IS_INT(shard_ordinal("web-12"), 12, "ordinal 12");
    IS_INT(shard_ordinal("flink-controller-7d9f8c6b5-x2x7k"), -1, "a Deployment pod's suffix is no ordinal");
    IS_INT(shard_ordinal("flink-controller-"), -1, "a trailing '-' is no ordinal");
    IS_INT(shard_ordinal("myhost"), -1, "no '-': no ordinal");
    IS_INT(shard_ordinal("a-1234567890"), -1, "more than 9 digits: no ordinal");
    IS_INT(shard_ordinal(NULL), -1, "NULL: no ordinal");
    IS_INT(shard_preferred(2, "flink-controller-0", 3), 2, "--shard-index wins over the ordinal");
    IS_INT(shard_preferred(-1, "flink-controller-1", 3), 1, "the ordinal when below N");
    IS_INT(shard_preferred(-1, "flink-controller-5", 3), shard_hash("flink-controller-5", 18) % 3,
           "an ordinal >= N: the hash of the name");
    IS_INT(shard_preferred(-1, "flink-controller-7d9f8c6b5-x2x7k", 3), 2, "no ordinal: fnv1a32(name) mod N (2)");
    IS_INT(shard_preferred(-1, "myhost", 3), 2, "a host name: fnv1a32 mod N (2)");
    IS_INT(shard_preferred(-1, "", 3), -1, "no name: no preference");
    IS_INT(shard_preferred(-1, NULL, 3), -1, "NULL name: no preference");
}

static void test_delay_and_takeover(void)
{
    IS_INT((long)shard_campaign_delay(1, 1, 15), 0, "the preferred shard: at once");
    IS_INT((long)shard_campaign_delay(0, 1, 15), 15, "another shard: after the standby delay");
    IS_INT((long)shard_campaign_delay(2, -1, 15), 0, "no preference: every shard at once");
    char name[64];
    IS_INT(shard_lease_name(2, name, sizeof name), 0, "lease name fits");
    IS_STR(name, "flink-controller-shard-2", "shard 2's Lease");
    IS_INT(shard_lease_name(12, name, 24), -1, "a buffer too small is an error");

    /* the takeover: replica B campaigns for shard 0 (not its own) after the standby delay and
     * sees replica A's Lease; while A renews it waits; once the record has not changed for the
     * Lease's duration (A died) it acquires; A, alive, renews its own */
    leader_lease l = {.exists = 1, .duration_s = 15};
    snprintf(l.holder, sizeof l.holder, "replica-a_1");
    snprintf(l.resource_version, sizeof l.resource_version, "10");
    IS_INT(leader_decide(&l, 100.0, 114.9, "replica-b_2"), LEADER_WAIT, "A's shard Lease live: B waits");
    IS_INT(leader_decide(&l, 100.0, 115.0, "replica-b_2"), LEADER_ACQUIRE,
           "unchanged for 15 s by B's clock: B takes A's shard");
    IS_INT(leader_decide(&l, 100.0, 200.0, "replica-a_1"), LEADER_RENEW, "A itself renews");
    leader_lease none = {0};
    IS_INT(leader_decide(&none, 0, 0, "replica-b_2"), LEADER_CREATE, "no Lease yet: created");
    leader_lease released = l;
    released.holder[0] = '\0';
    IS_INT(leader_decide(&released, 100.0, 100.0, "replica-b_2"), LEADER_ACQUIRE,
           "a released shard (SIGTERM) is taken at the next try");
}

static int parse(struct options *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    FILE *old = stderr;
    stderr = fopen("/dev/null", "w");
    int rc = options_parse(argc, argv, o);
    fclose(stderr);
    stderr = old;
    return rc;
}

static void test_options(void)
{
    struct options o;
    char *a1[] = {"run", "--shards", "3", "--shard-index", "2", NULL};
    IS_INT(parse(&o, 5, a1), 0, "--shards 3 --shard-index 2 parses");
    IS_INT(o.shards, 3, "shards 3");
    IS_INT(o.shard_index, 2, "shard index 2");
    IS_INT(o.shard_index_set, 1, "index given");
    char *a2[] = {"run", NULL};
    IS_INT(parse(&o, 1, a2), 0, "no --shards parses");
    IS_INT(o.shards, 0, "no --shards: 0 (one shard, the single-leader behaviour)");
    char *a3[] = {"run", "--shards", "3", "--shard-index", "3", NULL};
    IS_INT(parse(&o, 5, a3), -1, "--shard-index not below --shards is an error");
    char *a4[] = {"run", "--shards", "2", "--leader-elect", NULL};
    IS_INT(parse(&o, 4, a4), -1, "--shards with --leader-elect is an error");
    char *a5[] = {"run", "--shards", "0", NULL};
    IS_INT(parse(&o, 3, a5), -1, "--shards 0 is an error");
    char *a6[] = {"run", "--shards", "257", NULL};
    IS_INT(parse(&o, 3, a6), -1, "--shards above SHARD_MAX is an error");
    char *a7[] = {"run", "--shards", "1", "--leader-elect", NULL};
    IS_INT(parse(&o, 4, a7), 0, "--shards 1 with --leader-elect: today's single leader");
}

/* ---- the shard set on a loop, with a fake Lease API ---------------------------------------- */

typedef struct fk_req {
    leader_elector *e;
    char method[8];
    int shard;           /* from the path, or the body's metadata.name for a POST */
    json_t *body;
    int live;
} fk_req;
static fk_req reqs[32];
static int acquired[2], lost[2], released_done;

static int name_shard(const char *name)
{
    const char *p = name ? strstr(name, SHARD_LEASE_PREFIX) : NULL;
    return p ? atoi(p + strlen(SHARD_LEASE_PREFIX)) : -1;
}

static int fk_request(void *ud, leader_elector *e, const char *method, const char *path, const char *body)
{
    (void)ud;
    for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++)
        if (!reqs[i].live) {
            fk_req *r = &reqs[i];
            r->e = e;
            snprintf(r->method, sizeof r->method, "%s", method);
            json_decref(r->body);
            r->body = body ? json_loads(body, 0, NULL) : NULL;
            r->shard = strcmp(method, "POST") == 0
                           ? name_shard(json_string_value(json_object_get(json_object_get(r->body, "metadata"), "name")))
                           : name_shard(strrchr(path, '/'));
            r->live = 1;
            return 0;
        }
    return -1;
}

static void fk_cancel(void *ud, leader_elector *e)
{
    (void)ud;
    for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++)
        if (reqs[i].e == e)
            reqs[i].live = 0;
}
static const leader_api fk_api = {fk_request, fk_cancel};

static void on_acq(int shard, void *ud) { (void)ud; acquired[shard]++; }
static void on_lost(int shard, void *ud) { (void)ud; lost[shard]++; }
static void on_released(void *ud) { (void)ud; released_done++; }
static void tick_cb(struct ev_loop *l, ev_timer *w, int rev) { (void)l; (void)w; (void)rev; }

/* The Lease held by "other", a new resourceVersion each time (a live holder renewing), or the
 * same record when `rv` is given (a dead one). */
static char *other_lease(int shard, const char *rv)
{
    static int n = 100;
    char name[64], v[16];
    shard_lease_name(shard, name, sizeof name);
    snprintf(v, sizeof v, "%d", n++);
    json_t *o = json_pack("{s:{s:s,s:s,s:s},s:{s:s,s:i,s:i,s:s,s:s}}", "metadata", "name", name, "namespace", "ns",
                          "resourceVersion", rv ? rv : v, "spec", "holderIdentity", "other", "leaseDurationSeconds", 1,
                          "leaseTransitions", 0, "acquireTime", "2026-01-01T00:00:00.000000Z", "renewTime",
                          "2026-01-01T00:00:00.000000Z");
    char *t = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return t;
}

/* Answers request r: `status` with `text` (NULL: the request's own body echoed, a new
 * resourceVersion). */
static void answer(fk_req *r, long status, const char *text)
{
    char *own = NULL;
    if (!text && r->body) {
        static int rv = 1;
        char v[16];
        snprintf(v, sizeof v, "%d", rv++);
        json_object_set_new(json_object_get(r->body, "metadata"), "resourceVersion", json_string(v));
        own = json_dumps(r->body, JSON_COMPACT);
    }
    r->live = 0;
    leader_answer(r->e, status, text ? text : own);
    free(own);
}

/* Runs the loop until a live request of `shard` with `method` is there (at most 3 s); the other
 * shard's GETs are answered meanwhile as `others` says: 1 a live "other" holder, 0 left alone. */
static fk_req *wait_req(struct ev_loop *loop, int shard, const char *method, int others)
{
    double t0 = ev_time();
    while (ev_time() - t0 < 3) {
        for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++) {
            fk_req *r = &reqs[i];
            if (!r->live)
                continue;
            if (r->shard == shard && strcmp(r->method, method) == 0)
                return r;
            if (r->shard != shard && others && strcmp(r->method, "GET") == 0) {
                char *t = other_lease(r->shard, NULL);
                answer(r, 200, t);
                free(t);
            }
        }
        ev_run(loop, EVRUN_ONCE);
    }
    return NULL;
}

static void test_set(void)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    ev_timer tick;
    ev_timer_init(&tick, tick_cb, 0.005, 0.005);
    ev_timer_start(loop, &tick);
    char err[256];
    shard_opts so = {.nshards = 2, .preferred = 0, .namespace = "ns", .identity = "me_1",
                     .standby_delay_s = 0.3, .lease_duration_s = 1.0, .renew_deadline_s = 0.6,
                     .retry_period_s = 0.2, .api = &fk_api, .on_acquired = on_acq, .on_lost = on_lost};
    shard_opts bad = so;
    bad.preferred = 2;
    OK(!shard_start(loop, NULL, &bad, err, sizeof err), "a preferred shard >= N is refused: %s", err);
    bad = so;
    bad.nshards = 1;
    OK(!shard_start(loop, NULL, &bad, err, sizeof err), "one shard is no shard set: %s", err);
    ev_now_update(loop);
    double t0 = ev_now(loop); /* the timers run on the loop's clock */
    shard_set *s = shard_start(loop, NULL, &so, err, sizeof err);
    OK(s != NULL, "shard_start: %s", s ? "ok" : err);
    if (!s)
        return;
    /* the preferred shard at once: no Lease -> created, owned */
    fk_req *r = wait_req(loop, 0, "GET", 0);
    int shard1_early = 0;
    for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++)
        shard1_early |= reqs[i].live && reqs[i].shard == 1;
    OK(r && !shard1_early, "shard 0 (preferred): a GET at once, none yet for shard 1");
    if (!r)
        return;
    answer(r, 404, NULL);
    r = wait_req(loop, 0, "POST", 0);
    OK(r != NULL, "shard 0: no Lease -> POST");
    if (!r)
        return;
    IS_STR(json_string_value(json_object_get(json_object_get(r->body, "spec"), "holderIdentity")), "me_1",
           "the Lease created holds our identity");
    answer(r, 201, NULL);
    IS_INT(acquired[0], 1, "on_acquired(0) once");
    IS_INT(shard_owned(s, 0), 1, "shard 0 owned");
    IS_INT(shard_may_write(s, 0), 1, "shard 0 may write");
    IS_INT(shard_owned(s, 1), 0, "shard 1 not owned");
    IS_INT(shard_count_owned(s), 1, "one shard owned");
    /* the other shard after the standby delay, held by a live replica: waits */
    r = wait_req(loop, 1, "GET", 0);
    double dt = ev_time() - t0;
    /* (10 ms of slack: the loop's monotonic clock against ev_time's wall clock) */
    OK(r && dt >= 0.29, "shard 1: its first GET after the standby delay, 0.3 s (%.2f s)", dt);
    if (!r)
        return;
    char *t = other_lease(1, "50");
    answer(r, 200, t);
    free(t);
    IS_INT(shard_owned(s, 1), 0, "shard 1 held by another: not owned");
    /* shard 1's holder dies (the record no longer changes): taken over after the lease duration;
     * shard 0 renews meanwhile */
    double t1 = ev_time();
    for (;;) {
        r = NULL;
        for (size_t i = 0; i < sizeof reqs / sizeof *reqs && !r; i++)
            if (reqs[i].live)
                r = &reqs[i];
        if (r && r->shard == 1 && strcmp(r->method, "GET") == 0) {
            t = other_lease(1, "50");
            answer(r, 200, t);
            free(t);
        } else if (r) {
            answer(r, 200, NULL); /* shard 0's renewals, shard 1's takeover */
        }
        if (acquired[1] || ev_time() - t1 > 3)
            break;
        ev_run(loop, EVRUN_ONCE);
    }
    dt = ev_time() - t1;
    IS_INT(acquired[1], 1, "shard 1 taken over once its record was unchanged for the lease duration");
    OK(dt >= 0.8, "taken over %.2f s after the holder's last change, not before the lease duration (1 s)", dt);
    IS_INT(shard_count_owned(s), 2, "two shards owned");
    /* shard 0 lost: a renewal refused, then the Lease seen with another holder -> on_lost at
     * once, the fence closed, and a new campaign as a candidate */
    r = wait_req(loop, 0, "PUT", 0);
    OK(r != NULL, "shard 0 renews");
    if (!r)
        return;
    answer(r, 409, "{}");
    r = wait_req(loop, 0, "GET", 0);
    OK(r != NULL, "after the refused renewal a GET");
    if (!r)
        return;
    t = other_lease(0, NULL);
    answer(r, 200, t);
    free(t);
    IS_INT(lost[0], 1, "on_lost(0) once");
    IS_INT(shard_owned(s, 0), 0, "shard 0 no longer owned");
    IS_INT(shard_may_write(s, 0), 0, "shard 0's fence closed");
    IS_INT(shard_owned(s, 1), 1, "shard 1 still owned");
    r = wait_req(loop, 0, "GET", 0);
    OK(r != NULL, "shard 0: campaigning again (a new GET)");
    if (r) {
        t = other_lease(0, NULL);
        answer(r, 200, t);
        free(t);
    }
    IS_INT(acquired[0], 1, "shard 0 not taken back while its new holder renews");
    /* SIGTERM: every Lease held released (holder "", 1 s), then done from the loop */
    IS_INT(shard_release_all(s, on_released, NULL), 0, "release_all started");
    IS_INT(released_done, 0, "done not called inside shard_release_all");
    IS_INT(shard_release_all(s, on_released, NULL), -1, "a second release_all is refused");
    r = wait_req(loop, 1, "PUT", 0);
    OK(r != NULL, "shard 1: a release PUT");
    if (r) {
        json_t *spec = json_object_get(r->body, "spec");
        IS_STR(json_string_value(json_object_get(spec, "holderIdentity")), "", "released: holder empty");
        IS_INT(json_integer_value(json_object_get(spec, "leaseDurationSeconds")), 1, "released: duration 1 s");
        answer(r, 200, NULL);
    }
    double t2 = ev_time();
    while (!released_done && ev_time() - t2 < 2)
        ev_run(loop, EVRUN_ONCE);
    IS_INT(released_done, 1, "done called once every release is answered");
    IS_INT(lost[1], 1, "on_lost(1) at the release");
    IS_INT(shard_count_owned(s), 0, "nothing owned after the release");
    shard_free(s);
    for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++)
        json_decref(reqs[i].body);
    ev_timer_stop(loop, &tick);
    ev_loop_destroy(loop);
}

int main(void)
{
    FILE *devnull = fopen("/dev/null", "w");
    log_set_output(devnull);
    test_hash();
    test_of_key();
    test_preferred();
    test_delay_and_takeover();
    test_options();
    test_set();
    log_set_output(NULL);
    fclose(devnull);
    return DONE_TESTING();
}
