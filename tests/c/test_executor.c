/* SPDX-License-Identifier: Apache-2.0 */
/* core/executor: a pass's result written against a fake kube client (kube_ops): the calls made
 * and their order, the expectations and status digests recorded, the Events and their
 * correlator, and what each error answer does to the rest of the pass and to the key (a 409 on
 * the status, a 404 on it and on a delete, a 403 NamespaceTerminating, a 422 refusal, a request
 * that cannot start, a replica that may not write). */
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <jansson.h>

#include "clusterstate.h"
#include "executor.h"
#include "kube.h"
#include "log.h"
#include "metrics.h"
#include "runctx.h"
#include "status.h"
#include "transport_tap.h"

/* ---- the fake kube client: every write recorded, answered by the test ---------------------- */

#define FAKE_MAX 32
static struct fake_call {
    char what[512]; /* "<op> <Kind> <name>" (event: "event <type> <reason>") */
    char *body;     /* the JSON text sent, or the Event's message */
    kube_done_fn cb;
    void *ud;
    int cancelled;
} calls[FAKE_MAX];
static int ncalls, answered;
static int refuse_next; /* the next request fails to start (as kube.c on bad JSON) */

static kube_call *fake_record(const char *what, const char *body, kube_done_fn cb, void *ud, char *err,
                              size_t errlen)
{
    if (refuse_next || ncalls == FAKE_MAX) {
        refuse_next = 0;
        snprintf(err, errlen, "fake: refused to start");
        return NULL;
    }
    struct fake_call *c = &calls[ncalls];
    snprintf(c->what, sizeof c->what, "%s", what);
    c->body = strdup(body ? body : "");
    c->cb = cb;
    c->ud = ud;
    ncalls++;
    return (kube_call *)c;
}

static const char *obj_what(const char *op, const char *json, char *buf, size_t n)
{
    json_t *o = json_loads(json, 0, NULL);
    snprintf(buf, n, "%s %s %s", op, json_string_value(json_object_get(o, "kind")) ?: "?",
             json_string_value(json_object_get(json_object_get(o, "metadata"), "name")) ?: "?");
    json_decref(o);
    return buf;
}

static kube_call *fake_apply(kube_client *kc, const char *json, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    (void)kc;
    char w[512];
    return fake_record(obj_what("apply", json, w, sizeof w), json, cb, ud, err, errlen);
}

static kube_call *fake_apply_dry_run(kube_client *kc, const char *json, kube_done_fn cb, void *ud, char *err,
                                     size_t errlen)
{
    (void)kc;
    char w[512];
    return fake_record(obj_what("dry-run", json, w, sizeof w), json, cb, ud, err, errlen);
}

static kube_call *fake_patch(kube_client *kc, const kube_kind *k, const char *ns, const char *name,
                             const char *subresource, const char *content_type, const char *patch, kube_done_fn cb,
                             void *ud, char *err, size_t errlen)
{
    (void)kc;
    (void)content_type;
    char w[512];
    snprintf(w, sizeof w, "patch%s%s %s %s/%s", subresource ? "/" : "", subresource ? subresource : "", k->kind, ns,
             name);
    return fake_record(w, patch, cb, ud, err, errlen);
}

static kube_call *fake_patch_status(kube_client *kc, const kube_kind *k, const char *ns, const char *name,
                                    const char *patch, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    (void)kc;
    char w[512];
    snprintf(w, sizeof w, "status %s %s/%s", k->kind, ns, name);
    return fake_record(w, patch, cb, ud, err, errlen);
}

static kube_call *fake_delete(kube_client *kc, const kube_kind *k, const char *ns, const char *name,
                              const char *propagation, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    (void)kc;
    char w[512];
    snprintf(w, sizeof w, "delete %s %s/%s %s", k->kind, ns, name, propagation ? propagation : "-");
    return fake_record(w, NULL, cb, ud, err, errlen);
}

static kube_call *fake_delete_collection(kube_client *kc, const kube_kind *k, const char *ns, const char *selector,
                                         const char *propagation, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    (void)kc;
    char w[512];
    snprintf(w, sizeof w, "deletecollection %s %s -l %s %s", k->kind, ns, selector, propagation ? propagation : "-");
    return fake_record(w, NULL, cb, ud, err, errlen);
}

static kube_call *fake_event_create(kube_client *kc, json_t *involved, const char *type, const char *reason,
                                    const char *message, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    (void)kc;
    char w[512];
    snprintf(w, sizeof w, "event %s %s about %s", type, reason,
             json_string_value(json_object_get(json_object_get(involved, "metadata"), "name")) ?: "?");
    return fake_record(w, message, cb, ud, err, errlen);
}

static void fake_cancel(kube_call *call)
{
    ((struct fake_call *)call)->cancelled = 1;
}

static const kube_ops fake_ops = {.apply = fake_apply,
                                  .apply_dry_run = fake_apply_dry_run,
                                  .patch = fake_patch,
                                  .patch_status = fake_patch_status,
                                  .delete = fake_delete,
                                  .delete_collection = fake_delete_collection,
                                  .event_create = fake_event_create,
                                  .cancel = fake_cancel};

/* Answers the oldest call not answered yet with `status`, `body` (JSON text or NULL) and the
 * Status message `message`. 0, or -1 when no call waits. */
static int answer(long status, const char *body, const char *message)
{
    if (answered >= ncalls)
        return -1;
    struct fake_call *c = &calls[answered++];
    json_t *b = body ? json_loads(body, 0, NULL) : NULL;
    kube_result r = {.status = status,
                     .error = "",
                     .reason = "",
                     .message = message ? message : "",
                     .body = b,
                     .raw = body ? body : "",
                     .raw_len = body ? strlen(body) : 0,
                     .attempts = 1};
    c->cb(&r, c->ud);
    json_decref(b);
    return 0;
}

static void fake_reset(void)
{
    for (int i = 0; i < ncalls; i++)
        free(calls[i].body);
    memset(calls, 0, sizeof calls);
    ncalls = answered = refuse_next = 0;
}

/* ---- a controller context with nothing but what the executor touches ----------------------- */

static struct run_ctx ctx;
static metrics_registry *reg;

static void noop_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    ev_idle_stop(loop, w);
}

static void ctx_init(void)
{
    char err[256];
    memset(&ctx, 0, sizeof ctx);
    ctx.loop = ev_loop_new(EVFLAG_AUTO);
    ctx.ops = &fake_ops;
    ctx.q = workqueue_new(NULL, NULL);
    reg = metrics_registry_new(0, "dropped_total");
    if (metrics_register_controller(reg, &ctx.m, err, sizeof err))
        fprintf(stderr, "metrics: %s\n", err);
    ev_idle_init(&ctx.pump_idle, noop_idle);
    ctx.clusters = clusterstate_new();
}

static void ctx_free(void)
{
    workqueue_free(ctx.q);
    metrics_registry_free(reg);
    clusterstate_free(ctx.clusters);
    ev_loop_destroy(ctx.loop);
}

#define CLUSTER                                                                                               \
    "{\"apiVersion\":\"flinkoperator.k8s.io/v1beta1\",\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\"," \
    "\"namespace\":\"ns1\",\"uid\":\"u-1\",\"resourceVersion\":\"100\"},\"status\":{\"state\":\"Creating\"}}"

/* Starts the pass of cluster c1 in ns1 whose fc.reconcile.run answered `result` (JSON text): the
 * key taken off the queue as run_process takes it, the item at PHASE_ACTIONS. */
static struct run_item *start_kind(const char *key, const char *name, const kube_kind *kind, const char *obj,
                                   const char *result)
{
    struct run_item *it = calloc(1, sizeof *it);
    it->ctx = &ctx;
    it->key = strdup(key);
    it->kind = kind;
    snprintf(it->ns, sizeof it->ns, "ns1");
    snprintf(it->name, sizeof it->name, "%s", name);
    it->cluster = json_loads(obj, 0, NULL);
    it->result = json_loads(result, 0, NULL);
    it->started = 1;
    it->phase = PHASE_ACTIONS;
    it->next_item = ctx.items;
    ctx.items = it;
    ctx.inflight++;
    workqueue_add(ctx.q, it->key);
    workqueue_get(ctx.q);
    executor_step(it);
    return it;
}

static struct run_item *start(const char *result)
{
    return start_kind("ns1/c1", "c1", NULL, CLUSTER, result);
}

static const char *what(int i)
{
    return i < ncalls ? calls[i].what : "(no call)";
}

/* the record of ns1/c1 (NULL when none) */
static cluster_state *c1(void)
{
    return clusterstate_get(ctx.clusters, "ns1/c1");
}

static json_t *expected(const char *id)
{
    return json_object_get(json_object_get(c1() ? c1()->expect : NULL, "objects"), id);
}

/* what is expected of ns1/c1 dropped, as between the cases */
static void expect_clear(void)
{
    if (c1()) {
        json_decref(c1()->expect);
        c1()->expect = NULL;
    }
}

#define CM_OURS                                                                                                \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c1-config\",\"namespace\":\"ns1\"," \
    "\"resourceVersion\":\"201\",\"labels\":{\"app\":\"flink\",\"cluster\":\"c1\"}}}"
#define APPLY_CM                                                                                               \
    "{\"op\":\"apply\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"       \
    "\"c1-config\",\"labels\":{\"app\":\"flink\",\"cluster\":\"c1\"}}}}"
#define TERMINATING                                                                                            \
    "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"details\":{\"causes\":[{\"reason\":" \
    "\"NamespaceTerminating\"}]}}"

static void test_in_order(void)
{
    fake_reset();
    struct run_item *it = start(
        "{\"actions\":[" APPLY_CM ",{\"op\":\"patch_annotations\",\"remove\":[\"flinkoperator.k8s.io/user-control\"]},"
        "{\"op\":\"delete\",\"kind\":\"Service\",\"name\":\"c1-old\"}],"
        "\"status\":{\"state\":\"Running\"},"
        "\"events\":[{\"type\":\"Normal\",\"reason\":\"Started\",\"message\":\"cluster started\"}]}");
    (void)it;
    IS_STR(what(0), "apply ConfigMap c1-config", "the first action is applied first");
    IS_INT(ncalls, 1, "one write in flight at a time");
    OK(strstr(calls[0].body, "\"namespace\":\"ns1\"") != NULL, "a child without namespace gets the cluster's");
    answer(200, CM_OURS, NULL);
    IS_STR(what(1), "delete Service ns1/c1-old Background", "then the delete (the control action waits)");
    answer(404, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}", "services \"c1-old\" not found");
    IS_STR(what(2), "status FlinkCluster ns1/c1", "then the status: a 404 on a delete is done, not failed");
    IS_STR(calls[2].body, "{\"metadata\":{\"resourceVersion\":\"100\"},\"status\":{\"state\":\"Running\"}}",
           "the status merge patch carries the resourceVersion the pass read");
    answer(200,
           "{\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"202\"},"
           "\"status\":{\"state\":\"Running\"}}",
           NULL);
    IS_STR(what(3), "patch FlinkCluster ns1/c1", "then the user-control annotation's removal, after the status");
    IS_STR(calls[3].body, "{\"metadata\":{\"annotations\":{\"flinkoperator.k8s.io/user-control\":null}}}",
           "a merge patch removing the annotation");
    answer(200, "{\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"203\"}}", NULL);
    IS_STR(what(4), "event Normal Started about c1", "the Events last");
    answer(201, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"c1.17a\"}}", NULL);
    IS_INT(ncalls, 5, "five writes, no more");
    OK(ctx.items == NULL && ctx.inflight == 0, "the item finished and was freed");
    IS_INT(ctx.actions_done, 5, "five writes done");
    IS_INT(ctx.action_errors, 0, "none failed");
    IS_STR(json_string_value(json_object_get(expected("1/c1-config"), "rv")), "201",
           "the applied ConfigMap is expected at the resourceVersion answered");
    IS_STR(json_string_value(json_object_get(expected("0/c1"), "rv")), "203",
           "the FlinkCluster at its last write's resourceVersion");
    OK(json_object_size(json_object_get(c1()->expect, "objects")) == 2,
       "a deleted object not watched expects nothing");
    OK(c1()->has_kept && strlen(c1()->sent) == 64 && strlen(c1()->kept) == 64, "the status digests are kept");
    json_t *em = c1()->emitted;
    const char *id;
    json_t *e, *first = NULL;
    json_object_foreach(em, id, e) first = e;
    IS_STR(json_string_value(json_object_get(first, "name")), "c1.17a", "the correlator knows the Event's name");
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 0, "the key is forgotten");
    IS_INT(workqueue_processing(ctx.q), 0, "and done");

    /* the same Event again: counted on the existing object */
    fake_reset();
    start("{\"actions\":[],\"events\":[{\"type\":\"Normal\",\"reason\":\"Started\",\"message\":\"cluster started\"}]}");
    IS_STR(what(0), "patch Event ns1/c1.17a", "a repeat within the window patches the same Event");
    OK(strstr(calls[0].body, "\"count\":2") != NULL, "with its count raised: %s", calls[0].body);
    answer(200, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"c1.17a\"}}", NULL);
    OK(ctx.items == NULL, "finished");

}

static void test_status_conflict(void)
{
    fake_reset();
    expect_clear();
    start("{\"actions\":[{\"op\":\"patch_annotations\",\"remove\":[\"a\"]}],\"status\":{\"state\":\"Running\"},"
          "\"events\":[{\"type\":\"Normal\",\"reason\":\"Conflicted\",\"message\":\"x\"}]}");
    IS_STR(what(0), "status FlinkCluster ns1/c1", "the status first (the control action waits for it)");
    answer(409, "{\"kind\":\"Status\",\"reason\":\"Conflict\"}", "the object has been modified");
    IS_STR(what(1), "event Normal Conflicted about c1", "409: the Events still go, the annotation does not");
    answer(201, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"c1.18b\"}}", NULL);
    IS_INT(ncalls, 2, "two writes");
    IS_STR(json_string_value(json_object_get(expected("0/c1"), "not_rv")), "100",
           "the next pass waits for a version other than the one read");
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 1, "the key is requeued with backoff");
    IS_INT(ctx.action_errors, 0, "a conflict is not a failed write");
    OK(ctx.items == NULL, "finished");
    workqueue_forget(ctx.q, "ns1/c1");
}

static void test_status_gone(void)
{
    fake_reset();
    start("{\"actions\":[],\"status\":{\"state\":\"Running\"},"
          "\"events\":[{\"type\":\"Normal\",\"reason\":\"Gone\",\"message\":\"y\"}]}");
    answer(404, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}", "not found");
    IS_INT(ncalls, 1, "404 on the status: the cluster is gone, no Event about it");
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 0, "and no retry");
    OK(ctx.items == NULL, "finished");
}

static void test_terminating(void)
{
    fake_reset();
    expect_clear();
    unsigned long errs = ctx.action_errors;
    start("{\"actions\":[" APPLY_CM ",{\"op\":\"delete\",\"kind\":\"Service\",\"name\":\"s\"}],"
          "\"status\":{\"state\":\"Running\"},\"events\":[{\"type\":\"Normal\",\"reason\":\"R\",\"message\":\"z\"}]}");
    answer(403, TERMINATING, "namespace ns1 is being terminated");
    IS_INT(ncalls, 1, "403 NamespaceTerminating: the rest of the pass is dropped (no delete, status, Event)");
    IS_INT(ctx.action_errors, errs + 1, "counted as a failed write");
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 0, "not retried");
    OK(c1()->expect == NULL, "nothing expected");
    OK(ctx.items == NULL, "finished");

    /* a 403 without that cause is an ordinary failure */
    fake_reset();
    start("{\"actions\":[" APPLY_CM "]}");
    answer(403, "{\"kind\":\"Status\",\"reason\":\"Forbidden\"}", "forbidden");
    IS_STR(what(1), "event Warning ApplyFailed about c1", "a plain 403: failed, a Warning Event");
    answer(201, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"c1.19\"}}", NULL);
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 1, "retried with backoff");
    workqueue_forget(ctx.q, "ns1/c1");
}

static void test_refused(void)
{
    fake_reset();
    expect_clear();
    unsigned long errs = ctx.action_errors;
    start("{\"actions\":[" APPLY_CM ",{\"op\":\"delete\",\"kind\":\"Service\",\"name\":\"s\"}],"
          "\"status\":{\"state\":\"Running\"}}");
    answer(422, "{\"kind\":\"Status\",\"reason\":\"Invalid\"}", "data: Too long");
    IS_STR(what(1), "delete Service ns1/s Background", "422: the next action still runs");
    answer(200, "{\"kind\":\"Status\",\"status\":\"Success\"}", NULL);
    IS_STR(what(2), "status FlinkCluster ns1/c1", "then the status");
    answer(200, "{\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"300\"}}", NULL);
    IS_STR(what(3), "event Warning ApplyFailed about c1", "then a Warning Event for the refused write");
    IS_STR(calls[3].body, "apply ConfigMap c1-config: HTTP 422: data: Too long", "naming the write and the refusal");
    answer(201, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"c1.20\"}}", NULL);
    IS_INT(ctx.action_errors, errs + 1, "one failed write");
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 1, "the key is retried with backoff");
    OK(expected("1/c1-config") == NULL, "a refused apply expects nothing");
    OK(ctx.items == NULL, "finished");
    workqueue_forget(ctx.q, "ns1/c1");

    /* a dry run's refusal is an answer for the next pass, not a failure */
    fake_reset();
    start("{\"actions\":[{\"op\":\"dry_run\",\"hash\":\"h1\",\"object\":{\"apiVersion\":\"apps/v1\","
          "\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"c1-tm\"}}}]}");
    IS_STR(what(0), "dry-run StatefulSet c1-tm", "a dry-run apply");
    answer(422, "{\"kind\":\"Status\"}", "spec: Forbidden");
    json_t *d = json_object_get(c1()->dryruns, "StatefulSet/c1-tm");
    IS_INT(json_integer_value(json_object_get(d, "status")), 422, "its status kept for the next pass");
    IS_STR(json_string_value(json_object_get(d, "hash")), "h1", "with the hash it was made for");
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 0, "not a failed key");

    /* a write that cannot start: failed at once, the pass goes on */
    fake_reset();
    refuse_next = 1;
    start("{\"actions\":[" APPLY_CM "]}");
    IS_STR(what(0), "event Warning ApplyFailed about c1", "a write not started: its Warning Event");
    OK(strstr(calls[0].body, "HTTP 0: fake: refused to start") != NULL, "status 0 and the reason: %s",
       calls[0].body);
    answer(201, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"c1.21\"}}", NULL);
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 1, "retried with backoff");
    workqueue_forget(ctx.q, "ns1/c1");
}

static void test_status_kept(void)
{
    /* the server kept {"state":"Creating"} of the last {"state":"Running"} written (a status
     * schema without that field): writing it again could only be pruned again */
    fake_reset();
    json_t *sent = json_pack("{s:s}", "state", "Running"), *kept = json_pack("{s:s}", "state", "Creating");
    cluster_state *cs = clusterstate_get_or_add(ctx.clusters, "ns1/c1");
    status_digest(sent, 1, cs->sent);
    status_digest(kept, 0, cs->kept);
    cs->has_kept = 1;
    start("{\"actions\":[],\"status\":{\"state\":\"Running\",\"lastUpdateTime\":\"2026-01-01T00:00:00Z\"}}");
    IS_INT(ncalls, 0, "the status the server already kept of the same write is not written again");
    OK(ctx.items == NULL, "finished");
    char want[65];
    memcpy(want, cs->sent, sizeof want);
    c1()->has_kept = 0;
    memset(c1()->sent, 0, sizeof c1()->sent);
    start("{\"actions\":[],\"status\":{\"state\":\"Running\",\"lastUpdateTime\":\"2026-01-01T00:00:00Z\"}}");
    IS_STR(what(0), "status FlinkCluster ns1/c1", "nothing kept: written");
    answer(200, "{\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"400\"}}", NULL);
    OK(c1()->has_kept, "kept again after the write");
    IS_STR(c1()->sent, want, "the digest of what was sent, without the stamp");
    IS_STR(c1()->kept, "", "and of the status answered (none here)");
    json_decref(sent);
    json_decref(kept);
}

static void test_fenced(void)
{
    fake_reset();
    ctx.o.leader_elect = 1;
    ctx.leading = 0;
    start("{\"actions\":[" APPLY_CM "],\"status\":{\"state\":\"Running\"}}");
    IS_INT(ncalls, 0, "a replica that may not write writes nothing");
    OK(ctx.items == NULL, "the item finished");
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 0, "nothing requeued by this replica");
    ctx.o.leader_elect = 0;
    ctx.leading = 1;
}

/* fc.haclean's actions: the HA ConfigMaps deleted by selector (nothing expected of the cache),
 * then the finalizer's removal after the status, and only when every write went through */
#define HA_ACTIONS                                                                                             \
    "{\"actions\":[{\"op\":\"delete_collection\",\"kind\":\"ConfigMap\",\"selector\":"                    \
    "\"app=c1,configmap-type=high-availability\"},{\"op\":\"patch_finalizers\",\"finalizers\":[\"x/keep\"],"   \
    "\"resourceVersion\":\"100\",\"after_status\":true,\"unless_failed\":true}]}"

static void test_ha_cleanup(void)
{
    fake_reset();
    expect_clear();
    start(HA_ACTIONS);
    IS_STR(what(0), "deletecollection ConfigMap ns1 -l app=c1,configmap-type=high-availability Background",
           "the HA ConfigMaps by label selector, in the cluster's namespace");
    answer(200, "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"300\"},\"items\":[]}", NULL);
    IS_STR(what(1), "patch FlinkCluster ns1/c1", "then the finalizers");
    IS_STR(calls[1].body, "{\"metadata\":{\"finalizers\":[\"x/keep\"],\"resourceVersion\":\"100\"}}",
           "a merge patch of the whole list at the resourceVersion read");
    answer(200, "{\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"301\"}}", NULL);
    IS_INT(ncalls, 2, "two writes");
    IS_STR(json_string_value(json_object_get(expected("0/c1"), "rv")), "301", "the cluster is expected at its patch");
    IS_INT((int)json_object_size(json_object_get(c1()->expect, "objects")), 1,
           "and nothing else: the list the deletion answered is in no cache");
    OK(ctx.items == NULL, "finished");

    /* the deletion fails: the finalizer stays, the key is retried */
    fake_reset();
    expect_clear();
    int errors = ctx.action_errors;
    start(HA_ACTIONS);
    answer(500, "{\"kind\":\"Status\",\"reason\":\"InternalError\"}", "etcd timeout");
    IS_INT(ncalls, 2, "no finalizer patch after a failed deletion (the second write is its Warning Event)");
    IS_STR(what(1), "event Warning DeleteFailed about c1", "the failure's Event: DeleteFailed");
    answer(201, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"c1.19c\"}}", NULL);
    IS_INT(ctx.action_errors, errors + 1, "one failed write");
    IS_INT(workqueue_failures(ctx.q, "ns1/c1"), 1, "the key is requeued with backoff");
    OK(ctx.items == NULL, "finished");
    workqueue_forget(ctx.q, "ns1/c1");

    /* after the pass's own status write: at the resourceVersion that write answered */
    fake_reset();
    expect_clear();
    start("{\"actions\":[{\"op\":\"patch_finalizers\",\"finalizers\":[\"flinkoperator.k8s.io/ha-configmaps\"],"
          "\"resourceVersion\":\"100\",\"after_status\":true}],\"status\":{\"state\":\"Creating\"}}");
    IS_STR(what(0), "status FlinkCluster ns1/c1", "the status first");
    answer(200, "{\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"555\"},"
                "\"status\":{\"state\":\"Creating\"}}", NULL);
    IS_STR(calls[1].body,
           "{\"metadata\":{\"finalizers\":[\"flinkoperator.k8s.io/ha-configmaps\"],\"resourceVersion\":\"555\"}}",
           "then the finalizer, at the version the status write made (not a conflict with it)");
    answer(200, "{\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"556\"}}", NULL);
    OK(ctx.items == NULL, "finished");

    /* the last finalizer (an empty Lua table comes as {}): the field removed */
    fake_reset();
    expect_clear();
    start("{\"actions\":[{\"op\":\"patch_finalizers\",\"finalizers\":{},\"resourceVersion\":\"7\"}]}");
    IS_STR(calls[0].body, "{\"metadata\":{\"finalizers\":null,\"resourceVersion\":\"7\"}}", "null: none left");
    answer(200, "{\"kind\":\"FlinkCluster\",\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"8\"}}", NULL);
    OK(ctx.items == NULL, "finished");
}

/* A FlinkJob's pass (it->kind): its finalizers, status and Events are the FlinkJob's. */
static void test_flinkjob(void)
{
    fake_reset();
    expect_clear();
    unsigned long errors0 = ctx.action_errors;
    start_kind("ns1/" RUN_FLINKJOB_KEY "j1", "j1", &kube_kind_flinkjob,
               "{\"apiVersion\":\"flinkoperator.k8s.io/v1beta1\",\"kind\":\"FlinkJob\",\"metadata\":"
               "{\"name\":\"j1\",\"namespace\":\"ns1\",\"uid\":\"u-j\",\"resourceVersion\":\"7\"}}",
               /* an empty list comes from Lua as {} */
               "{\"actions\":[{\"op\":\"patch_finalizers\",\"finalizers\":{},\"resourceVersion\":\"7\"},"
               "{\"op\":\"patch_finalizers\",\"finalizers\":[\"a/b\"],\"resourceVersion\":\"8\"},"
               "{\"op\":\"patch_finalizers\",\"finalizers\":\"x\",\"resourceVersion\":\"9\"}],"
               "\"status\":{\"state\":\"Running\"},"
               "\"events\":[{\"type\":\"Normal\",\"reason\":\"JobRunning\",\"message\":\"m\"}]}");
    IS_STR(what(0), "patch FlinkJob ns1/j1", "the finalizers of the FlinkJob, not of a FlinkCluster");
    IS_STR(calls[0].body, "{\"metadata\":{\"finalizers\":null,\"resourceVersion\":\"7\"}}",
           "{} is the empty list (the field removed); with the resourceVersion read (a conflict, not an overwrite)");
    answer(200, "{\"kind\":\"FlinkJob\",\"metadata\":{\"name\":\"j1\",\"resourceVersion\":\"8\"}}", NULL);
    IS_STR(calls[1].body, "{\"metadata\":{\"finalizers\":[\"a/b\"],\"resourceVersion\":\"8\"}}", "a list as given");
    answer(200, "{\"kind\":\"FlinkJob\",\"metadata\":{\"name\":\"j1\",\"resourceVersion\":\"9\"}}", NULL);
    IS_STR(what(2), "status FlinkJob ns1/j1", "a finalizers value that is no list is not sent; the status is the FlinkJob's");
    answer(200, "{\"kind\":\"FlinkJob\",\"metadata\":{\"name\":\"j1\",\"resourceVersion\":\"10\"},"
                "\"status\":{\"state\":\"Running\"}}", NULL);
    IS_STR(what(3), "event Normal JobRunning about j1", "its Events are about the FlinkJob");
    answer(201, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"j1.1\"}}", NULL);
    IS_STR(what(4), "event Warning PatchFailed about j1", "the refused action too");
    answer(201, "{\"kind\":\"Event\",\"metadata\":{\"name\":\"j1.2\"}}", NULL);
    IS_INT(ctx.action_errors, errors0 + 1, "the bad action counted");
    OK(ctx.items == NULL, "finished");
    workqueue_forget(ctx.q, "ns1/" RUN_FLINKJOB_KEY "j1");
}

int main(void)
{
    FILE *devnull = fopen("/dev/null", "w");
    log_set_output(devnull); /* the executor's log lines are not what is tested here */
    run_labels.cluster = "cluster";
    run_labels.app_label = "app";
    run_labels.app = "flink";
    run_kinds[1] = &kube_kind_configmap;
    run_nkinds = 2;
    ctx_init();
    test_in_order();
    test_status_conflict();
    test_status_gone();
    test_terminating();
    test_refused();
    test_status_kept();
    test_fenced();
    test_ha_cleanup();
    test_flinkjob();
    fake_reset();
    ctx_free();
    log_set_output(NULL);
    if (devnull)
        fclose(devnull);
    return DONE_TESTING();
}
