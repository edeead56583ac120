/* SPDX-License-Identifier: Apache-2.0 */
/* core/reflector against the scripted "refl" namespace of
 * tests/c/fake_apiserver.py: paginated list, watch from the list RV, events
 * cut across chunks, bookmarks, clean end -> rewatch from the last RV, ERROR
 * 410 event -> relist with synthesised deletes, dropped stream -> backoff and
 * resume, HTTP 410 -> relist; then the cache and its indexes, resync and
 * stopping from inside a callback. The server answers 400 to a watch from any
 * other resourceVersion than the expected one. */
#include "transport_tap.h"
#include "transport_server.h"
#include "reflector.h"
#include "loop.h"

static struct ev_loop *loop;
static char events[2048];
static char errors[2048];
static int synced_count, synced3, managed_fields_seen;

static void on_event(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)r;
    (void)ud;
    static const char *names[] = {"ADDED", "MODIFIED", "DELETED", "RESYNC"};
    json_t *meta = json_object_get(obj, "metadata");
    if (json_object_get(meta, "managedFields"))
        managed_fields_seen++;
    size_t n = strlen(events);
    snprintf(events + n, sizeof events - n, "%s:%s:%s%s ", names[ev], json_string_value(json_object_get(meta, "name")),
             json_string_value(json_object_get(meta, "resourceVersion")),
             ev == REFLECTOR_MODIFIED && old ? "(old ok)" : "");
}

static void on_synced(reflector *r, void *ud)
{
    (void)r;
    (void)ud;
    synced_count++;
    if (synced_count == 3)
        synced3 = 1;
}

static void on_error(reflector *r, const char *what, void *ud)
{
    (void)r;
    (void)ud;
    size_t n = strlen(errors);
    snprintf(errors + n, sizeof errors - n, "%s\n", what);
}

static char each_names[256];
static void collect(json_t *obj, void *ud)
{
    (void)ud;
    size_t n = strlen(each_names);
    snprintf(each_names + n, sizeof each_names - n, "%s ",
             json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
}

static int resyncs, stop_seen, stopped_flag;
static void on_event_resync(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)r;
    (void)obj;
    (void)ud;
    if (ev == REFLECTOR_RESYNC && obj == old)
        resyncs++;
}

static void on_event_stop(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)ev;
    (void)obj;
    (void)old;
    (void)ud;
    stop_seen++;
    reflector_stop(r);
    stopped_flag = 1;
}

/* a transform: p3 is not cached, every other object loses its `data` */
static int transform_calls;
static int transform(reflector *r, const kube_kind *kind, json_t *obj, void *ud)
{
    (void)r;
    (void)ud;
    transform_calls += kind == &kube_kind_configmap;
    if (strcmp(json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")), "p3") == 0)
        return 1;
    json_object_del(obj, "data");
    return 0;
}
static int transformed_with_data, transformed_p3;
static void on_event_transformed(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud)
{
    (void)r;
    (void)ev;
    (void)old;
    (void)ud;
    transformed_with_data += json_object_get(obj, "data") != NULL;
    transformed_p3 += strcmp(json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")), "p3") == 0;
}
static int transformed_synced;
static void on_synced_transformed(reflector *r, void *ud)
{
    (void)r;
    (void)ud;
    transformed_synced = 1;
}

typedef struct res {
    int done;
    json_t *body;
} res;
static void on_done(const kube_result *r, void *ud)
{
    res *o = ud;
    o->done = 1;
    o->body = json_incref(r->body);
}

/* reflector_get_copy, the references kept until the scenario ends (the tests compare them) */
static json_t *got[32];
static int ngot;
static json_t *get(reflector *r, const char *ns, const char *name)
{
    json_t *o = reflector_get_copy(r, ns, name);
    if (o && ngot < 32)
        got[ngot++] = o;
    return o;
}

/* each text's name, and "=same" when ud is given and the text decodes equal to it */
static char text_names[256];
static void collect_text(const char *name, const char *text, size_t len, void *ud)
{
    json_t *obj = json_loadb(text, len, 0, NULL);
    size_t n = strlen(text_names);
    snprintf(text_names + n, sizeof text_names - n, "%s%s ", name, ud && json_equal(obj, ud) ? "=same" : "");
    json_decref(obj);
}

/* The "refl" scenario on a fresh fake API server, the cache kept as trees or (compact) as text;
 * with from_cache, reflector_opts.list_from_cache: the first list asks resourceVersion=0 (its
 * second page only the continue token), the relists after the 410s are consistent. */
static void refl_scenario(int compact, int from_cache)
{
    char err[256];
    int port = server_start();
    if (port <= 0) {
        OK(0, "fake apiserver started");
        return;
    }
    char server[64];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", port);
    kube_config cfg = {.server = server, .ca_file = TLS_DIR "/ca.crt", .qps = 0};
    kube_client *c = kube_client_new(loop, &cfg, err, sizeof err);
    OK(c != NULL, "client");
    events[0] = errors[0] = '\0';
    synced_count = synced3 = managed_fields_seen = 0;
    reflector_opts o = {.namespace = "refl", .cluster_label = "cluster", .page_limit = 2,
                        .backoff_initial_s = 0.05, .backoff_max_s = 0.2, .watch_timeout_min_s = 60,
                        .watch_timeout_max_s = 90, .on_synced = on_synced,
                        .on_error = on_error};
    o.compact = compact;
    o.list_from_cache = from_cache;
    reflector *r = reflector_start(c, &kube_kind_configmap, &o, on_event, NULL, err, sizeof err);
    OK(r != NULL, "reflector_start");
    OK(!reflector_has_synced(r) && reflector_len(r) == 0 && strcmp(events, "") == 0,
       "nothing happens inside reflector_start");
    OK(loop_run_until(loop, &synced3, 20) == 0, "three lists done");
    int settle = 0;
    loop_run_until(loop, &settle, 0.3);   /* let the last watch start */

    IS_STR(events,
           compact ? "ADDED:a:10 ADDED:b:11 ADDED:c:12 MODIFIED:a:101 ADDED:d:151 DELETED:c:160 ADDED:e:170 "
                     "DELETED:b:11 MODIFIED:e:201 "
                   : "ADDED:a:10 ADDED:b:11 ADDED:c:12 MODIFIED:a:101(old ok) ADDED:d:151 DELETED:c:160 "
                     "ADDED:e:170 DELETED:b:11 MODIFIED:e:201(old ok) ",
           "events: list, watch (split event, bookmark), rewatch, 410 relist diff, drop + resume, 410 relist "
           "(compact mode: no old object for MODIFIED)");
    IS_INT(managed_fields_seen, 0, "no object handed out with managedFields");
    IS_INT(reflector_list_count(r), 3, "list count 3");
    OK(reflector_has_synced(r), "synced");
    IS_STR(reflector_resource_version(r), "300", "RV from the last list/bookmark");
    IS_INT(reflector_len(r), 3, "cache holds a, d, e");
    json_t *a = get(r, "refl", "a");
    IS_STR(json_string_value(json_object_get(json_object_get(a, "metadata"), "resourceVersion")), "101",
           "a at RV 101");
    OK(json_object_get(json_object_get(a, "metadata"), "managedFields") == NULL, "managedFields stripped in the cache");
    OK(get(r, "refl", "b") == NULL && get(r, "refl", "c") == NULL, "b and c gone");
    if (compact) {
        OK(reflector_get(r, "refl", "a") == NULL, "compact: reflector_get hands out no tree");
        size_t sum = 0;
        const char *names[] = {"a", "d", "e"};
        for (int i = 0; i < 3; i++) {
            char *t = json_dumps(get(r, "refl", names[i]), JSON_COMPACT);
            sum += t ? strlen(t) : 0;
            free(t);
        }
        /* each over 256 bytes, so zstd frames against the first object's text as dictionary */
        OK(reflector_bytes(r) > 0 && reflector_bytes(r) * 4 < sum,
           "compact: the three texts (%zu bytes) kept compressed in %zu bytes", sum, reflector_bytes(r));
    } else {
        IS_INT((int)reflector_bytes(r), 0, "trees: reflector_bytes is 0");
    }
    if (compact) {
        text_names[0] = '\0';
        IS_INT(reflector_texts_by_owner_uid(r, "uid-fc1", collect_text, a), 1, "compact: one text owned by uid-fc1");
        IS_STR(text_names, "a=same ", "it is a, the same object as reflector_get_copy decodes");
        text_names[0] = '\0';
        IS_INT(reflector_texts_by_cluster(r, "refl", "fc2", collect_text, NULL), 1, "compact: one text labelled fc2");
        IS_STR(text_names, "d ", "it is d");
    }
    each_names[0] = '\0';
    IS_INT(reflector_by_owner_uid(r, "uid-fc1", collect, NULL), 1, "one object owned by uid-fc1");
    IS_STR(each_names, "a ", "it is a");
    each_names[0] = '\0';
    IS_INT(reflector_by_cluster(r, "refl", "fc2", collect, NULL), 1, "one object labelled cluster=fc2 (b was deleted)");
    IS_STR(each_names, "d ", "it is d");
    IS_INT(reflector_by_cluster(r, "other", "fc2", collect, NULL), 0, "label index is per namespace");
    IS_INT(reflector_foreach(r, collect, NULL), 3, "foreach visits 3");

    char key[128];
    IS_INT(reflector_owner_key(a, "FlinkCluster", "cluster", key, sizeof key), 1, "a has an owner key");
    IS_STR(key, "refl/fc1", "owner key from the controller ownerReference");
    IS_INT(reflector_owner_key(get(r, "refl", "d"), "FlinkCluster", "cluster", key, sizeof key), 1, "d has one");
    IS_STR(key, "refl/fc2", "owner key from the cluster label");
    IS_INT(reflector_owner_key(get(r, "refl", "d"), "FlinkCluster", "example.com/cluster", key, sizeof key), 0,
           "d has none by another cluster label key");
    IS_INT(reflector_owner_key(get(r, "refl", "d"), "FlinkCluster", NULL, key, sizeof key), 0,
           "d has none without a cluster label key");
    IS_INT(reflector_owner_key(get(r, "refl", "e"), "FlinkCluster", "cluster", key, sizeof key), 0, "e has none");
    json_t *fc = json_pack("{s:s,s:{s:s,s:s}}", "kind", "FlinkCluster", "metadata", "name", "fc9", "namespace", "n");
    IS_INT(reflector_owner_key(fc, "FlinkCluster", "cluster", key, sizeof key), 1, "a FlinkCluster keys itself");
    IS_STR(key, "n/fc9", "its own namespace/name");
    json_decref(fc);

    OK(strstr(errors, "error event 410 Expired") != NULL, "ERROR event reported");
    OK(strstr(errors, "watch /api/v1/namespaces/refl/configmaps: status 200:") != NULL, "dropped stream reported");
    OK(strstr(errors, "status 400") == NULL, "no watch from an unexpected resourceVersion");

    res cnt = {0};
    kube_get(c, "/count", on_done, &cnt, err, sizeof err);
    loop_run_until(loop, &cnt.done, 10);
    IS_INT(json_integer_value(json_object_get(cnt.body, "refl-list")), 3, "server saw 3 lists");
    IS_INT(json_integer_value(json_object_get(cnt.body, "refl-watch")), 5, "server saw 5 watches");
    json_decref(cnt.body);
    res lg = {0};
    kube_get(c, "/log?ns=refl", on_done, &lg, err, sizeof err);
    loop_run_until(loop, &lg.done, 10);
    size_t i;
    json_t *e;
    int bookmarks_on = 0, watches = 0, timeout_ok = 0, pages = 0, lists = 0, rv0_lists = 0, rv_pages = 0;
    int rv0_first = 0;
    json_array_foreach(json_object_get(lg.body, "log"), i, e) {
        json_t *q = json_object_get(e, "q");
        const char *qrv = json_string_value(json_object_get(q, "resourceVersion"));
        if (!json_object_get(q, "watch") && !json_object_get(q, "continue")) {
            lists++;
            rv0_lists += qrv && strcmp(qrv, "0") == 0;
            rv0_first += lists == 1 && qrv && strcmp(qrv, "0") == 0;
        }
        if (json_object_get(q, "watch")) {
            watches++;
            const char *ab = json_string_value(json_object_get(q, "allowWatchBookmarks"));
            bookmarks_on += ab && strcmp(ab, "true") == 0;
            long t = atol(json_string_value(json_object_get(q, "timeoutSeconds")));
            timeout_ok += t >= 60 && t < 90;
        } else if (json_object_get(q, "continue")) {
            pages++;
            rv_pages += qrv != NULL;
        }
    }
    json_decref(lg.body);
    OK(watches == 5 && bookmarks_on == 5, "every watch asks for bookmarks");
    IS_INT(timeout_ok, 5, "timeoutSeconds drawn in [60, 90)");
    IS_INT(pages, 3, "each list of 3 took a second page (limit 2)");
    IS_INT(lists, 3, "3 first pages");
    IS_INT(rv0_lists, from_cache ? 1 : 0, from_cache ? "one list from the cache (resourceVersion=0)"
                                                     : "no list from the cache");
    IS_INT(rv0_first, from_cache, "the list from the cache is the first one (the relists are consistent)");
    IS_INT(rv_pages, 0, "no continued page carries a resourceVersion");
    reflector_stop(r);
    for (int i = 0; i < ngot; i++)
        json_decref(got[i]);
    ngot = 0;
    kube_client_free(c);
    server_stop();
}

/* the requests the fake server logged for namespace ns: lists (no watch), watch-lists
 * (sendInitialEvents=true) and plain watches */
static void count_requests(kube_client *c, const char *ns, int *lists, int *watch_lists, int *watches)
{
    char err[256], path[64];
    snprintf(path, sizeof path, "/log?ns=%s", ns);
    res lg = {0};
    kube_get(c, path, on_done, &lg, err, sizeof err);
    loop_run_until(loop, &lg.done, 10);
    *lists = *watch_lists = *watches = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(lg.body, "log"), i, e) {
        json_t *q = json_object_get(e, "q");
        if (!json_object_get(q, "watch"))
            (*lists)++;
        else if (json_object_get(q, "sendInitialEvents"))
            (*watch_lists)++;
        else
            (*watches)++;
    }
    json_decref(lg.body);
}

/* reflector_opts.watch_list against the fake server's "wl" (streams lists: the initial events,
 * then the end bookmark; a 410 later, the watch-list again, consistent), "wlno" (refuses it:
 * 422) and "wlold" (ignores it: a bookmark without the end annotation) */
static void watch_list_scenarios(kube_client *c)
{
    char err[256];
    events[0] = errors[0] = '\0';
    synced_count = 0;
    reflector_opts o = {.namespace = "wl", .cluster_label = "cluster", .backoff_initial_s = 0.05,
                        .backoff_max_s = 0.2, .watch_timeout_min_s = 60, .watch_timeout_max_s = 90,
                        .compact = 1, .list_from_cache = 1, .watch_list = 1, .on_synced = on_synced,
                        .on_error = on_error};
    reflector *r = reflector_start(c, &kube_kind_configmap, &o, on_event, NULL, err, sizeof err);
    int two = 0;
    for (int t = 0; t < 400 && synced_count < 2; t++)
        ev_run(loop, EVRUN_ONCE);
    two = synced_count == 2;
    OK(two, "watch-list: synced at each end bookmark (the first, then after the 410)");
    int settle = 0;
    loop_run_until(loop, &settle, 0.3);
    /* the end of the second watch-list removes b and c (in the store's order) */
    const char *first = "ADDED:b:12 ADDED:a:10 ADDED:c:11 MODIFIED:a:101 ADDED:d:150 DELETED:";
    OK(strncmp(events, first, strlen(first)) == 0 &&
           strstr(events, "DELETED:b:12 ") && strstr(events, "DELETED:c:11 "),
       "watch-list events: the initial ADDED, a MODIFIED after the end, then the relist's d and deletions: %s",
       events);
    IS_STR(reflector_resource_version(r), "200", "the resourceVersion of the second end bookmark");
    IS_INT(reflector_list_count(r), 2, "two lists, both streamed");
    IS_INT((int)reflector_len(r), 2, "a and d cached");
    each_names[0] = '\0';
    IS_INT(reflector_by_cluster(r, "wl", "fc2", collect, NULL), 1, "the index holds d alone");
    OK(strstr(errors, "status 400") == NULL && strstr(errors, "error event 410 Expired") != NULL,
       "only the 410 reported: %s", errors);
    int lists, wls, watches;
    count_requests(c, "wl", &lists, &wls, &watches);
    OK(lists == 0 && wls == 2 && watches >= 1, "no list request; 2 watch-lists, a plain watch between (%d, %d, %d)",
       lists, wls, watches);
    reflector_stop(r);

    const char *nss[] = {"wlno", "wlold"};
    for (int k = 0; k < 2; k++) {
        events[0] = errors[0] = '\0';
        synced_count = 0;
        o.namespace = nss[k];
        r = reflector_start(c, &kube_kind_configmap, &o, on_event_resync, NULL, err, sizeof err);
        for (int t = 0; t < 400 && synced_count < 1; t++)
            ev_run(loop, EVRUN_ONCE);
        IS_INT(synced_count, 1, "%s: synced by a list", nss[k]);
        IS_INT((int)reflector_len(r), 5, "%s: the list's 5 objects cached (wlold's x removed)", nss[k]);
        OK(reflector_get_copy(r, nss[k], "x") == NULL, "%s: nothing of the watch-list left", nss[k]);
        IS_STR(reflector_resource_version(r), "500", "%s: the list's resourceVersion", nss[k]);
        OK(strstr(errors, "paged lists from now on") != NULL, "%s: the fallback reported", nss[k]);
        loop_run_until(loop, &settle, 0.3);
        count_requests(c, nss[k], &lists, &wls, &watches);
        OK(wls == 1 && lists == 1 && watches == 1, "%s: one watch-list, then a list and a plain watch (%d, %d, %d)",
           nss[k], wls, lists, watches);
        reflector_stop(r);
    }
}

int main(void)
{
    char err[256];
    loop = ev_loop_new(EVFLAG_AUTO);
    refl_scenario(0, 0);
    refl_scenario(1, 0);
    refl_scenario(1, 1);
    int settle = 0;
    int port = server_start();
    if (port <= 0) {
        OK(0, "fake apiserver started");
        return DONE_TESTING();
    }
    char server[64];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", port);
    kube_config cfg = {.server = server, .ca_file = TLS_DIR "/ca.crt", .qps = 0};
    kube_client *c = kube_client_new(loop, &cfg, err, sizeof err);
    OK(c != NULL, "client");

    OK(reflector_start(NULL, &kube_kind_configmap, NULL, on_event, NULL, err, sizeof err) == NULL,
       "reflector_start without a client fails");
    IS_STR(err, "reflector_start: client, kind and on_event are required", "error text");


    /* resync re-delivers every cached object */
    reflector_opts ro = {.namespace = "pages", .resync_s = 0.1, .backoff_initial_s = 0.05, .backoff_max_s = 0.1};
    reflector *r2 = reflector_start(c, &kube_kind_configmap, &ro, on_event_resync, NULL, err, sizeof err);
    int five = 0;
    for (int t = 0; t < 400 && resyncs < 5; t++)
        ev_run(loop, EVRUN_ONCE);
    five = resyncs >= 5;
    OK(five, "resync delivered each of the 5 objects (obj == old)");
    reflector_stop(r2);

    /* a transform trims what is cached, or keeps an object out of the cache */
    reflector_opts to = {.namespace = "pages", .backoff_initial_s = 0.05, .backoff_max_s = 0.1,
                         .transform = transform, .on_synced = on_synced_transformed};
    reflector *rt = reflector_start(c, &kube_kind_configmap, &to, on_event_transformed, NULL, err, sizeof err);
    OK(loop_run_until(loop, &transformed_synced, 10) == 0, "transformed list synced");
    IS_INT(transform_calls, 5, "the transform saw each of the 5 listed objects");
    IS_INT((int)reflector_len(rt), 4, "the one it refused is not cached");
    OK(reflector_get(rt, "pages", "p3") == NULL && transformed_p3 == 0, "p3: neither cached nor handed out");
    OK(reflector_get(rt, "pages", "p1") && !json_object_get(reflector_get(rt, "pages", "p1"), "data") &&
           transformed_with_data == 0, "the others cached and handed out without `data`");
    reflector_stop(rt);

    /* a server refusing resourceVersion=0: the reflector lists consistently after the refusal */
    errors[0] = '\0';
    transformed_synced = 0;
    reflector_opts no0 = {.namespace = "norv0", .backoff_initial_s = 0.05, .backoff_max_s = 0.1,
                          .list_from_cache = 1, .on_synced = on_synced_transformed, .on_error = on_error};
    reflector *rn = reflector_start(c, &kube_kind_configmap, &no0, on_event_resync, NULL, err, sizeof err);
    OK(loop_run_until(loop, &transformed_synced, 10) == 0, "refused resourceVersion=0: synced all the same");
    IS_INT((int)reflector_len(rn), 5, "with the 5 objects of a consistent list");
    OK(strstr(errors, "list /api/v1/namespaces/norv0/configmaps (resourceVersion=0): status 400") != NULL,
       "the refusal reported: %s", errors);
    reflector_stop(rn);

    watch_list_scenarios(c);

    /* stop from inside the event callback */
    reflector *r3 = reflector_start(c, &kube_kind_configmap, &ro, on_event_stop, NULL, err, sizeof err);
    (void)r3;
    loop_run_until(loop, &stopped_flag, 10);
    settle = 0;
    loop_run_until(loop, &settle, 0.2);
    IS_INT(stop_seen, 1, "no event after reflector_stop from the callback");

    kube_client_free(c);
    server_stop();
    ev_loop_destroy(loop);
    return DONE_TESTING();
}
