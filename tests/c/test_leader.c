/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/leader: the pure decision functions, then the elector's
 * state machine driven by a fake clock and a fake API (no loop, no network).
 * Against a real kube-apiserver when the test environment is up
 * (build/testenv/env.sh + kubeconfig): two electors on one Lease. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leader.h"
#include "log.h"
#include "loop.h"
#include "transport_tap.h"

/* ---- fakes ---- */
static double clock_now;
static double fake_clock(void *ud) { (void)ud; return clock_now; }
static double fake_jitter(void *ud) { (void)ud; return 0.5; }

typedef struct fake {
    int requests, cancels;
    char method[16], path[256];
    json_t *body;      /* last request body */
} fake;

static int fake_request(void *ud, leader_elector *e, const char *method, const char *path,
                        const char *body)
{
    (void)e;
    fake *f = ud;
    f->requests++;
    snprintf(f->method, sizeof f->method, "%s", method);
    snprintf(f->path, sizeof f->path, "%s", path);
    json_decref(f->body);
    f->body = body ? json_loads(body, 0, NULL) : NULL;
    return 0;
}
static void fake_cancel(void *ud, leader_elector *e) { (void)e; ((fake *)ud)->cancels++; }
static const leader_api fake_api = { fake_request, fake_cancel };

static int started, stopped_n, new_leaders;
static char last_new_leader[256];
static void on_started(void *ud) { (void)ud; started++; }
static void on_stopped(void *ud) { (void)ud; stopped_n++; }
static void on_new(const char *id, void *ud) { (void)ud; new_leaders++; snprintf(last_new_leader, sizeof last_new_leader, "%s", id); }
static int release_calls, release_ok = -1;
static void on_released(int ok, void *ud) { (void)ud; release_calls++; release_ok = ok; }

static const char *spec_str(json_t *o, const char *k) { return json_string_value(json_object_get(json_object_get(o, "spec"), k)); }
static long spec_int(json_t *o, const char *k) { return (long)json_integer_value(json_object_get(json_object_get(o, "spec"), k)); }
static const char *rv_of(json_t *o) { return json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion")); }

/* The server's answer to a write: the body with a new resourceVersion. */
static char *server_echo(json_t *body, const char *rv)
{
    json_t *c = json_deep_copy(body);
    json_object_set_new(json_object_get(c, "metadata"), "resourceVersion", json_string(rv));
    char *s = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return s;
}

static char *lease_json(const char *holder, long dur, const char *renew, long transitions, const char *rv)
{
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:I, s:s, s:s, s:I}}",
                          "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
                          "metadata", "name", "flink-controller", "namespace", "flink-system",
                          "resourceVersion", rv,
                          "spec", "holderIdentity", holder, "leaseDurationSeconds", (json_int_t)dur,
                          "acquireTime", "2026-01-01T00:00:00.000000Z", "renewTime", renew,
                          "leaseTransitions", (json_int_t)transitions);
    json_object_set_new(json_object_get(o, "metadata"), "labels", json_pack("{s:s}", "team", "data"));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static void answer_text(leader_elector *e, long status, char *text)
{
    leader_answer(e, status, text);
    free(text);
}

static leader_opts base_opts(fake *f, const char *id)
{
    leader_opts o = { .namespace = "flink-system", .identity = id, .now = fake_clock,
                      .jitter = fake_jitter, .api = &fake_api, .api_ud = f,
                      .on_started_leading = on_started, .on_stopped_leading = on_stopped,
                      .on_new_leader = on_new };
    return o;
}

static void test_pure(void)
{
    leader_lease l = {0};
    IS_INT(leader_decide(&l, 0, 100, "me"), LEADER_CREATE, "no lease: create");
    l.exists = 1;
    snprintf(l.holder, sizeof l.holder, "other");
    l.duration_s = 15;
    IS_INT(leader_decide(&l, 100, 114.9, "me"), LEADER_WAIT, "held, observed 14.9 s ago: wait");
    IS_INT(leader_decide(&l, 100, 115, "me"), LEADER_ACQUIRE, "held, observed 15 s ago: expired, acquire");
    IS_INT(leader_decide(&l, 100, 101, "other"), LEADER_RENEW, "ours: renew");
    l.holder[0] = '\0';
    IS_INT(leader_decide(&l, 100, 101, "me"), LEADER_ACQUIRE, "released (empty holder): acquire at once");

    char buf[40];
    IS_INT(leader_format_microtime(1796022042.123456, buf, sizeof buf), 0, "microtime");
    IS_STR(buf, "2026-11-30T07:00:42.123456Z", "microtime has six fractional digits");
    leader_format_microtime(0, buf, sizeof buf);
    IS_STR(buf, "1970-01-01T00:00:00.000000Z", "microtime at the epoch");
    IS_INT(leader_format_microtime(1, buf, 10), -1, "short buffer refused");

    char *t = lease_json("other", 15, "2026-01-01T00:00:10.000000Z", 3, "42");
    json_t *obs = json_loads(t, 0, NULL);
    free(t);
    json_object_set_new(json_object_get(obs, "metadata"), "managedFields", json_array());
    json_object_set_new(json_object_get(obs, "spec"), "preferredHolder", json_string("x"));
    char err[256];
    leader_lease p;
    IS_INT(leader_lease_parse(obs, &p, err, sizeof err), 0, "parse a lease");
    OK(p.exists && strcmp(p.holder, "other") == 0 && p.duration_s == 15 && p.transitions == 3 &&
       strcmp(p.resource_version, "42") == 0 && strcmp(p.renew_time, "2026-01-01T00:00:10.000000Z") == 0,
       "parsed fields");
    json_t *bad = json_pack("{s:{s:i}}", "spec", "holderIdentity", 3);
    IS_INT(leader_lease_parse(bad, &p, err, sizeof err), -1, "holderIdentity as a number refused");
    IS_STR(err, "lease: spec.holderIdentity: want a string", "error names the field");
    json_decref(bad);
    bad = json_pack("{s:{s:s}}", "spec", "leaseDurationSeconds", "15");
    IS_INT(leader_lease_parse(bad, &p, err, sizeof err), -1, "duration as a string refused");
    json_decref(bad);
    bad = json_pack("[]");
    IS_INT(leader_lease_parse(bad, &p, err, sizeof err), -1, "an array refused");
    json_decref(bad);
    bad = json_pack("{s:{s:n}}", "spec", "holderIdentity");
    IS_INT(leader_lease_parse(bad, &p, err, sizeof err), 0, "null holder reads as empty");
    json_decref(bad);

    json_t *u = leader_lease_update(obs, "flink-system", "flink-controller", LEADER_ACQUIRE, "me", 15, 1796022042.5);
    IS_STR(spec_str(u, "holderIdentity"), "me", "acquire: holder");
    IS_INT(spec_int(u, "leaseTransitions"), 4, "acquire: transitions + 1");
    IS_STR(spec_str(u, "acquireTime"), "2026-11-30T07:00:42.500000Z", "acquire: new acquireTime");
    IS_STR(spec_str(u, "renewTime"), "2026-11-30T07:00:42.500000Z", "acquire: renewTime");
    IS_INT(spec_int(u, "leaseDurationSeconds"), 15, "acquire: duration");
    IS_STR(rv_of(u), "42", "acquire: resourceVersion kept (optimistic concurrency)");
    IS_STR(spec_str(u, "preferredHolder"), "x", "unknown spec fields kept");
    IS_STR(json_string_value(json_object_get(json_object_get(json_object_get(u, "metadata"), "labels"), "team")), "data", "labels kept");
    OK(json_object_get(json_object_get(u, "metadata"), "managedFields") == NULL, "managedFields dropped");
    json_t *r = leader_lease_update(u, "flink-system", "flink-controller", LEADER_RENEW, "me", 15, 1796022044.25);
    IS_STR(spec_str(r, "acquireTime"), "2026-11-30T07:00:42.500000Z", "renew: acquireTime kept");
    IS_STR(spec_str(r, "renewTime"), "2026-11-30T07:00:44.250000Z", "renew: renewTime moves");
    IS_INT(spec_int(r, "leaseTransitions"), 4, "renew: transitions kept");
    json_t *rel = leader_lease_update(r, "flink-system", "flink-controller", LEADER_RELEASE, "me", 15, 1796022045);
    IS_STR(spec_str(rel, "holderIdentity"), "", "release: holder cleared");
    IS_INT(spec_int(rel, "leaseDurationSeconds"), 1, "release: duration 1");
    IS_INT(spec_int(rel, "leaseTransitions"), 4, "release: transitions kept");
    json_t *rel2 = leader_lease_update(rel, "flink-system", "flink-controller", LEADER_ACQUIRE, "next", 15, 1796022046);
    IS_INT(spec_int(rel2, "leaseTransitions"), 5, "acquire after a release counts a transition");
    json_t *c = leader_lease_update(NULL, "ns1", "flink-controller", LEADER_CREATE, "me", 15, 1796022042);
    IS_STR(json_string_value(json_object_get(c, "apiVersion")), "coordination.k8s.io/v1", "create: apiVersion");
    IS_STR(json_string_value(json_object_get(json_object_get(c, "metadata"), "namespace")), "ns1", "create: namespace");
    IS_INT(spec_int(c, "leaseTransitions"), 0, "create: transitions 0");
    OK(rv_of(c) == NULL, "create: no resourceVersion");
    json_decref(u); json_decref(r); json_decref(rel); json_decref(rel2); json_decref(c); json_decref(obs);

    setenv("POD_NAME", "flink-controller-7d9f-abcde", 1);
    char id1[300], id2[300];
    IS_INT(leader_default_identity(id1, sizeof id1), 0, "identity");
    leader_default_identity(id2, sizeof id2);
    OK(strncmp(id1, "flink-controller-7d9f-abcde_", 28) == 0 && strlen(id1) == 28 + 16, "identity is <POD_NAME>_<16 hex>: %s", id1);
    OK(strcmp(id1, id2) != 0, "two identities differ");
    IS_INT(leader_default_identity(id1, 10), -1, "short buffer refused");
    unsetenv("POD_NAME");
    setenv("POD_NAMESPACE", "flink-system", 1);
    leader_default_namespace("dev", id1, sizeof id1);
    IS_STR(id1, "flink-system", "namespace from POD_NAMESPACE");
    unsetenv("POD_NAMESPACE");
    struct stat st;
    if (stat(KUBE_SA_DIR "/namespace", &st) != 0) {
        leader_default_namespace("dev", id1, sizeof id1);
        IS_STR(id1, "dev", "namespace falls back to the kubeconfig's");
        leader_default_namespace(NULL, id1, sizeof id1);
        IS_STR(id1, "default", "namespace falls back to default");
    }
}

static void test_options(void)
{
    fake f = {0};
    char err[256];
    leader_opts o = base_opts(&f, "me");
    o.renew_deadline_s = 15;
    OK(leader_start(NULL, NULL, &o, err, sizeof err) == NULL && strstr(err, "lease duration (15s) > renew deadline (15s)"),
       "renew deadline >= lease duration refused: %s", err);
    o.renew_deadline_s = 2.4;
    OK(leader_start(NULL, NULL, &o, err, sizeof err) == NULL, "renew deadline <= 1.2 x retry refused");
    o = base_opts(&f, "");
    OK(leader_start(NULL, NULL, &o, err, sizeof err) == NULL, "empty identity refused");
    o = base_opts(&f, "me");
    o.namespace = NULL;
    OK(leader_start(NULL, NULL, &o, err, sizeof err) == NULL, "missing namespace refused");
    o = base_opts(&f, "me");
    o.api = NULL;
    OK(leader_start(NULL, NULL, &o, err, sizeof err) == NULL, "no client and no api refused");
}

/* create -> lead -> renew fast path -> 409 -> GET -> failures -> lost */
static void test_create_renew_lose(void)
{
    fake f = {0};
    char err[256];
    started = stopped_n = new_leaders = 0;
    clock_now = 1000;
    leader_opts o = base_opts(&f, "me_1");
    leader_elector *e = leader_start(NULL, NULL, &o, err, sizeof err);
    OK(e != NULL, "elector started");
    IS_INT(f.requests, 0, "nothing sent inside leader_start");
    leader_step(e);
    IS_STR(f.method, "GET", "first attempt GETs");
    IS_STR(f.path, "/apis/coordination.k8s.io/v1/namespaces/flink-system/leases/flink-controller", "lease path, name flink-controller");
    leader_answer(e, 404, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
    IS_STR(f.method, "POST", "404: create");
    IS_STR(f.path, "/apis/coordination.k8s.io/v1/namespaces/flink-system/leases", "create on the collection");
    IS_STR(spec_str(f.body, "holderIdentity"), "me_1", "create holds it");
    IS_INT(spec_int(f.body, "leaseDurationSeconds"), 15, "create: 15 s");
    OK(!leader_is_leader(e), "not leader before the answer");
    answer_text(e, 201, server_echo(f.body, "1"));
    OK(leader_is_leader(e), "leader after 201");
    OK(leader_may_write(e), "a fresh leader may write");
    IS_INT(started, 1, "on_started_leading once");
    IS_INT(new_leaders, 1, "on_new_leader for ourselves");
    IS_STR(leader_holder(e), "me_1", "holder observed");

    double d = leader_step(e);
    OK(fabs(d - 2) < 1e-9, "next renew in the retry period (2 s): %g", d);
    int before = f.requests;
    clock_now = 1001.9;
    leader_step(e);
    IS_INT(f.requests, before, "nothing before the retry period");
    clock_now = 1002;
    leader_step(e);
    IS_STR(f.method, "PUT", "renew without a GET (our last write)");
    IS_STR(rv_of(f.body), "1", "renew carries the resourceVersion we wrote");
    IS_STR(spec_str(f.body, "renewTime"), "1970-01-01T00:16:42.000000Z", "renewTime from the clock");
    IS_STR(spec_str(f.body, "acquireTime"), "1970-01-01T00:16:40.000000Z", "acquireTime kept");
    answer_text(e, 200, server_echo(f.body, "2"));
    clock_now = 1004;
    leader_step(e);
    IS_STR(f.method, "PUT", "second renew");
    IS_STR(rv_of(f.body), "2", "with the new resourceVersion");
    leader_answer(e, 409, "{\"kind\":\"Status\",\"reason\":\"Conflict\"}");
    OK(leader_is_leader(e), "one 409 does not lose leadership");
    clock_now = 1006;
    leader_step(e);
    IS_STR(f.method, "GET", "after a failed renew: GET first");
    char *cur = lease_json("me_1", 15, "2026-01-01T00:00:10.000000Z", 0, "7");
    leader_answer(e, 200, cur);
    free(cur);
    IS_STR(f.method, "PUT", "still ours: renew");
    IS_STR(rv_of(f.body), "7", "with the resourceVersion just read");
    leader_answer(e, 500, NULL);
    clock_now = 1008;
    leader_step(e);
    IS_STR(f.method, "GET", "retry");
    int cancels = f.cancels;
    clock_now = 1011.5;   /* the GET of 1008 has no answer yet */
    leader_step(e);
    IS_INT(f.cancels, cancels, "request timeout (5 s) not reached");
    OK(leader_is_leader(e), "still leader at 1011.5 (last renew 1002)");
    OK(leader_may_write(e), "writes allowed at 1011.5 (the renew deadline is 1012)");
    clock_now = 1012;
    OK(leader_is_leader(e), "at the deadline, before any step: still flagged leader");
    OK(!leader_may_write(e), "but the fence is closed at the renew deadline without waiting for a step");
    clock_now = 1011.5;
    d = leader_step(e);
    OK(fabs(d - 0.5) < 1e-9, "next due: the renew deadline in 0.5 s (%g)", d);
    clock_now = 1012;
    d = leader_step(e);
    OK(!leader_is_leader(e) && leader_stopped(e), "renew deadline (10 s) passed: leadership lost");
    IS_INT(f.cancels, cancels + 1, "the hanging GET is cancelled");
    IS_INT(stopped_n, 1, "on_stopped_leading once");
    OK(d < 0, "stopped: step returns -1");
    before = f.requests;
    clock_now = 1100;
    leader_step(e);
    IS_INT(f.requests, before, "a stopped elector sends nothing");
    leader_free(e);
    json_decref(f.body);
}

/* a live lease held by another; expiry by our own clock; 409 on takeover */
static void test_takeover(void)
{
    fake f = {0};
    char err[256];
    started = stopped_n = new_leaders = 0;
    clock_now = 5000;
    leader_opts o = base_opts(&f, "me_2");
    leader_elector *e = leader_start(NULL, NULL, &o, err, sizeof err);
    leader_step(e);
    /* renewTime far in the past by our clock: ignored (skew-safe) */
    char *held = lease_json("other_9", 15, "2000-01-01T00:00:00.000000Z", 3, "50");
    leader_answer(e, 200, held);
    IS_INT(f.requests, 1, "held by another, just observed: no write");
    IS_INT(new_leaders, 1, "on_new_leader(other)");
    IS_STR(last_new_leader, "other_9", "new leader's identity");
    double d = leader_step(e);
    OK(fabs(d - 3.2) < 1e-9, "candidate retry jittered: 2 x (1 + 1.2 x 0.5) = 3.2 s (%g)", d);
    clock_now = 5003.2;
    leader_step(e);
    IS_STR(f.method, "GET", "retry GET");
    leader_answer(e, 200, held);
    IS_INT(f.requests, 2, "same record 3.2 s later: wait");
    /* a GET without an answer: cancelled after the request timeout (5 s) */
    clock_now = 5006.4;
    leader_step(e);
    IS_INT(f.requests, 3, "GET at 5006.4");
    int c0 = f.cancels;
    clock_now = 5011.3;
    leader_step(e);
    IS_INT(f.cancels, c0, "4.9 s: still waiting for the answer");
    clock_now = 5011.4;
    d = leader_step(e);
    IS_INT(f.cancels, c0 + 1, "5 s: cancelled");
    OK(fabs(d - 3.2) < 1e-9, "and retried after the jittered period (%g)", d);
    leader_answer(e, 200, held);
    IS_INT(f.requests, 3, "a late answer after the cancel is ignored");
    /* the holder renews: the record changes, observed time moves */
    clock_now = 5014.6;
    leader_step(e);
    IS_STR(f.method, "GET", "GET at 5014.6");
    char *renewed = lease_json("other_9", 15, "2000-01-01T00:00:08.000000Z", 3, "51");
    leader_answer(e, 200, renewed);
    IS_INT(f.requests, 4, "renewed by its holder: wait");
    clock_now = 5024.6;   /* 24.6 s after the first sight but 10 s after the change */
    leader_step(e);
    leader_answer(e, 200, renewed);
    IS_INT(f.requests, 5, "10 s after the last change: still wait");
    clock_now = 5029.6;
    leader_step(e);
    leader_answer(e, 200, renewed);
    IS_STR(f.method, "PUT", "15 s without change: take over");
    IS_STR(rv_of(f.body), "51", "PUT with the read resourceVersion");
    IS_INT(spec_int(f.body, "leaseTransitions"), 4, "leaseTransitions 3 -> 4");
    IS_STR(spec_str(f.body, "holderIdentity"), "me_2", "holder me");
    leader_answer(e, 409, "{\"kind\":\"Status\",\"reason\":\"Conflict\"}");
    OK(!leader_is_leader(e), "409: lost the race");
    IS_INT(started, 0, "not started");
    clock_now = 5033;
    leader_step(e);
    IS_STR(f.method, "GET", "after 409: GET");
    char *winner = lease_json("third_3", 15, "2026-01-01T00:00:00.000000Z", 4, "52");
    leader_answer(e, 200, winner);
    IS_STR(leader_holder(e), "third_3", "the winner is observed");
    IS_INT(new_leaders, 2, "on_new_leader(third)");
    int before = f.requests;
    clock_now = 5037;
    leader_step(e);
    /* the winner releases: empty holder, duration 1 -> acquire at once */
    char *released = lease_json("", 1, "2026-01-01T00:00:01.000000Z", 4, "53");
    leader_answer(e, 200, released);
    IS_INT(f.requests, before + 2, "released lease: PUT at once");
    IS_INT(spec_int(f.body, "leaseTransitions"), 5, "transition counted");
    answer_text(e, 200, server_echo(f.body, "54"));
    OK(leader_is_leader(e), "leader after the release of the previous holder");
    IS_INT(started, 1, "on_started_leading");

    /* another holder seen while leading (after a failed renew): stop at once */
    clock_now = 5039;
    leader_step(e);
    leader_answer(e, 409, NULL);
    clock_now = 5041;
    leader_step(e);
    IS_STR(f.method, "GET", "GET after the 409");
    char *stolen = lease_json("thief_1", 15, "2026-01-01T00:00:00.000000Z", 6, "60");
    leader_answer(e, 200, stolen);
    OK(!leader_is_leader(e) && leader_stopped(e), "another holder while leading: lost at once");
    IS_INT(stopped_n, 1, "on_stopped_leading");
    free(held); free(renewed); free(winner); free(released); free(stolen);
    leader_free(e);
    json_decref(f.body);
}

static void test_release(void)
{
    fake f = {0};
    char err[256];
    started = stopped_n = 0;
    release_calls = 0;
    clock_now = 100;
    leader_opts o = base_opts(&f, "me_3");
    leader_elector *e = leader_start(NULL, NULL, &o, err, sizeof err);
    leader_step(e);
    leader_answer(e, 404, NULL);
    answer_text(e, 201, server_echo(f.body, "9"));
    OK(leader_is_leader(e), "leading");
    clock_now = 101;
    IS_INT(leader_release(e, on_released, NULL), 0, "release started");
    IS_INT(release_calls, 0, "done not called inside leader_release");
    IS_STR(f.method, "PUT", "release PUTs");
    IS_STR(spec_str(f.body, "holderIdentity"), "", "holder cleared");
    IS_INT(spec_int(f.body, "leaseDurationSeconds"), 1, "leaseDurationSeconds 1");
    IS_STR(rv_of(f.body), "9", "with our resourceVersion");
    IS_INT(leader_release(e, on_released, NULL), -1, "second release refused");
    answer_text(e, 200, server_echo(f.body, "10"));
    IS_INT(release_calls, 1, "done once");
    IS_INT(release_ok, 1, "released ok");
    IS_INT(stopped_n, 1, "on_stopped_leading after the release");
    OK(!leader_is_leader(e) && leader_stopped(e), "stopped");
    leader_free(e);

    /* a renew cancelled at the stop reached the server anyway: the release meets a 409, reads the
     * Lease again and releases that version */
    release_calls = 0;
    stopped_n = 0;
    clock_now = 100;
    e = leader_start(NULL, NULL, &o, err, sizeof err);
    leader_step(e);
    leader_answer(e, 404, NULL);
    json_t *ours = json_deep_copy(f.body); /* the Lease as we hold it */
    answer_text(e, 201, server_echo(f.body, "20"));
    OK(leader_is_leader(e), "leading (409 case)");
    clock_now = 101;
    IS_INT(leader_release(e, on_released, NULL), 0, "release started (409 case)");
    leader_answer(e, 409, "{\"kind\":\"Status\",\"reason\":\"Conflict\"}");
    IS_STR(f.method, "GET", "a 409 on the release: the Lease is read again");
    IS_INT(release_calls, 0, "not done yet");
    answer_text(e, 200, server_echo(ours, "21"));
    IS_STR(f.method, "PUT", "still ours: released again");
    IS_STR(rv_of(f.body), "21", "with the resourceVersion just read");
    IS_STR(spec_str(f.body, "holderIdentity"), "", "holder cleared (second PUT)");
    answer_text(e, 200, server_echo(f.body, "22"));
    IS_INT(release_calls, 1, "done once (409 case)");
    IS_INT(release_ok, 1, "released ok after the re-read");
    json_decref(ours);
    leader_free(e);

    /* a candidate has nothing to release: done from the next step */
    release_calls = 0;
    e = leader_start(NULL, NULL, &o, err, sizeof err);
    leader_step(e);   /* GET in flight */
    int cancels = f.cancels;
    IS_INT(leader_release(e, on_released, NULL), 0, "candidate release");
    IS_INT(f.cancels, cancels + 1, "in-flight GET cancelled");
    IS_INT(release_calls, 0, "not inside the call");
    leader_step(e);
    IS_INT(release_calls, 1, "done from the next step");
    IS_INT(release_ok, 1, "ok");
    IS_INT(stopped_n, 1, "no on_stopped_leading for a candidate");
    leader_free(e);
    json_decref(f.body);
}

/* ---- live: two electors against the test environment's apiserver ---- */
static int live_started[2], live_stopped[2];
static void live_on_started(void *ud) { live_started[*(int *)ud]++; }
static void live_on_stopped(void *ud) { live_stopped[*(int *)ud]++; }
static void live_done(int ok, void *ud) { *(int *)ud = ok ? 1 : 2; }

typedef struct res { int done; long status; json_t *body; } res;
static void on_res(const kube_result *r, void *ud) { res *o = ud; o->done = 1; o->status = r->status; o->body = json_incref(r->body); }

static void test_live(void)
{
    const char *dir = getenv("TESTENV_DIR") ? getenv("TESTENV_DIR") : "build/testenv";
    char envsh[512], kcfg[512];
    snprintf(envsh, sizeof envsh, "%s/env.sh", dir);
    snprintf(kcfg, sizeof kcfg, "%s/kubeconfig", dir);
    struct stat st;
    if (stat(envsh, &st) != 0 || stat(kcfg, &st) != 0) {
        printf("# live: no test environment (%s), skipped\n", envsh);
        return;
    }
    char err[256];
    struct ev_loop *loop = ev_default_loop(0);
    kube_config cfg = {0};
    if (kube_config_load_file(&cfg, kcfg, NULL, err, sizeof err) != 0) {
        printf("# live: %s, skipped\n", err);
        return;
    }
    kube_client *kc = kube_client_new(loop, &cfg, err, sizeof err);
    kube_config_clear(&cfg);
    if (!kc) { printf("# live: %s, skipped\n", err); return; }
    /* probe the apiserver */
    res pr = {0};
    char e_[256];
    kube_get(kc, "/version", on_res, &pr, e_, sizeof e_);
    loop_run_until(loop, &pr.done, 10);
    json_decref(pr.body);
    if (pr.status != 200) {
        printf("# live: apiserver not answering (status %ld), skipped\n", pr.status);
        kube_client_free(kc);
        return;
    }
    char lease[64];
    snprintf(lease, sizeof lease, "fc-leader-test-%d", (int)getpid());
    int ids[2] = { 0, 1 };
    leader_elector *el[2];
    for (int i = 0; i < 2; i++) {
        char id[64];
        snprintf(id, sizeof id, "live-%d", i);
        leader_opts o = { .namespace = "default", .name = lease, .identity = id,
                          .lease_duration_s = 30, .renew_deadline_s = 2, .retry_period_s = 0.5,
                          .on_started_leading = live_on_started, .on_stopped_leading = live_on_stopped,
                          .ud = &ids[i] };
        el[i] = leader_start(loop, kc, &o, err, sizeof err);
    }
    OK(el[0] && el[1], "live: two electors on lease default/%s", lease);
    int one = 0;
    for (int t = 0; t < 100 && !one; t++) {
        ev_run(loop, EVRUN_ONCE);
        one = live_started[0] + live_started[1] > 0;
    }
    OK(one, "live: one of them acquired");
    /* 2 s more: several renew rounds of the leader, retries of the other */
    double until = ev_now(loop) + 2;
    while (ev_now(loop) < until) { ev_run(loop, EVRUN_ONCE); ev_now_update(loop); }
    int leader = leader_is_leader(el[0]) ? 0 : 1;
    OK(leader_is_leader(el[leader]) && !leader_is_leader(el[1 - leader]), "live: exactly one leader (live-%d)", leader);
    IS_STR(leader_holder(el[1 - leader]), leader_identity(el[leader]), "live: the other sees the holder");
    int rdone = 0;
    double t0 = ev_now(loop);
    leader_release(el[leader], live_done, &rdone);
    loop_run_until(loop, &rdone, 10);
    IS_INT(rdone, 1, "live: released");
    int took = 0;
    while (!took && ev_now(loop) - t0 < 10) {
        ev_run(loop, EVRUN_ONCE);
        ev_now_update(loop);
        took = leader_is_leader(el[1 - leader]);
    }
    double waited = ev_now(loop) - t0;
    /* the lease lasts 30 s and we waited at most 10: only the release lets it in */
    OK(took, "live: the successor took over after the release, before the 30 s lease ran out");
    printf("# live: takeover %.2f s after the release started\n", waited);
    res lr = {0};
    char path[256];
    kube_path(path, sizeof path, &kube_kind_lease, "default", lease, NULL);
    kube_get(kc, path, on_res, &lr, e_, sizeof e_);
    loop_run_until(loop, &lr.done, 10);
    IS_STR(spec_str(lr.body, "holderIdentity"), leader_identity(el[1 - leader]), "live: lease names the successor");
    IS_INT(spec_int(lr.body, "leaseTransitions"), 1, "live: one transition");
    /* an intruder overwrites the lease: the leader's next renew gets a 409, its GET shows
     * another holder, and it stops */
    json_t *steal = lr.body ? json_deep_copy(lr.body) : json_object();
    json_object_set_new(json_object_get(steal, "spec"), "holderIdentity", json_string("intruder"));
    char *stext = json_dumps(steal, JSON_COMPACT);
    res pw = {0};
    kube_req preq = { .method = "PUT", .path = path, .body = stext };
    kube_request(kc, &preq, on_res, &pw, e_, sizeof e_);
    loop_run_until(loop, &pw.done, 10);
    IS_INT(pw.status, 200, "live: intruder PUT accepted");
    int lost = 0;
    t0 = ev_now(loop);
    while (!lost && ev_now(loop) - t0 < 10) {
        ev_run(loop, EVRUN_ONCE);
        ev_now_update(loop);
        lost = leader_stopped(el[1 - leader]);
    }
    OK(lost && !leader_is_leader(el[1 - leader]), "live: the leader stopped on seeing another holder");
    IS_INT(live_stopped[1 - leader], 1, "live: its on_stopped_leading ran");
    IS_STR(leader_holder(el[1 - leader]), "intruder", "live: it saw the intruder");
    free(stext);
    json_decref(steal);
    json_decref(pw.body);
    json_decref(lr.body);
    for (int i = 0; i < 2; i++) leader_free(el[i]);
    res dr = {0};
    kube_delete(kc, &kube_kind_lease, "default", lease, NULL, on_res, &dr, e_, sizeof e_);
    loop_run_until(loop, &dr.done, 10);
    json_decref(dr.body);
    kube_client_free(kc);
}

int main(void)
{
    FILE *devnull = fopen("/dev/null", "w");
    log_set_output(devnull);
    test_pure();
    test_options();
    test_create_renew_lose();
    test_takeover();
    test_release();
    test_live();
    log_set_output(NULL);
    fclose(devnull);
    return DONE_TESTING();
}
