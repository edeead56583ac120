/* SPDX-License-Identifier: Apache-2.0 */
/* core/reflector: list, then watch, into an indexed cache. See reflector.h. */
#include "reflector.h"
#include "util.h"
#include "loop.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

struct reflector {
    kube_client *client;
    struct ev_loop *loop;
    const kube_kind *kind;
    char *ns, *selector, *index_label; /* index_label: reflector_opts.cluster_label, NULL: none */
    reflector_opts o;
    reflector_event_fn on_event;
    void *ud;
    char path[1024];
    json_t *store;        /* "ns/name" -> object */
    json_t *by_owner;     /* controller owner uid -> set of "ns/name" (index_set) */
    json_t *by_cluster;   /* "ns/cluster" -> set of "ns/name" */
    char *rv;
    size_t bytes;         /* compact mode: the texts' bytes in `store` */
    kube_call *call;
    ev_timer retry, resync, kick;
    double backoff;
    int retry_relist, relist_needed, synced, stopped, depth, watch_events;
    int list_rv0;          /* the list under way asks resourceVersion=0 (reflector_opts.list_from_cache) */
    int rv0_refused;       /* the last list with resourceVersion=0 failed: the next one is consistent */
    int wl_active;         /* the watch under way is a watch-list still sending its initial
                              events (reflector_opts.watch_list): they fill list_seen */
    int wl_refused;        /* the server does not stream lists: paged lists from now on */
    double list_t0;       /* ev_time() when the current list began (its pages included) */
    json_t *list_seen;    /* the keys the current list's pages held so far (replace_page) */
    unsigned lists;
    char *zdict;          /* compact mode: the first object's text of ZDICT_MIN bytes or more (its
                             first ZDICT_MAX bytes), the zstd raw-content dictionary of every entry
                             from it on (entry_put_text); kept for the reflector's life */
    size_t zdict_len;
};

static void destroy(reflector *r)
{
    if (r->call)
        kube_cancel(r->call);
    ev_timer_stop(r->loop, &r->retry);
    ev_timer_stop(r->loop, &r->resync);
    ev_timer_stop(r->loop, &r->kick);
    json_decref(r->store);
    json_decref(r->by_owner);
    json_decref(r->by_cluster);
    json_decref(r->list_seen);
    free(r->zdict);
    free(r->ns);
    free(r->selector);
    free(r->index_label);
    free(r->rv);
    free(r);
}

void reflector_stop(reflector *r)
{
    if (!r || r->stopped)
        return;
    r->stopped = 1;
    if (r->call) {
        kube_cancel(r->call);
        r->call = NULL;
    }
    ev_timer_stop(r->loop, &r->retry);
    ev_timer_stop(r->loop, &r->resync);
    ev_timer_stop(r->loop, &r->kick);
    if (r->depth == 0)
        destroy(r);
}

/* Runs the user callback; returns -1 when the reflector was stopped (and,
 * at the outermost level, freed) meanwhile. */
static int emit(reflector *r, reflector_event ev, json_t *obj, json_t *old)
{
    r->depth++;
    r->on_event(r, ev, obj, old, r->ud);
    r->depth--;
    if (r->stopped) {
        if (r->depth == 0)
            destroy(r);
        return -1;
    }
    return 0;
}

static void set_rv(reflector *r, const char *rv)
{
    if (!rv || !*rv)
        return;
    char *n = strdup(rv);
    if (n) {
        free(r->rv);
        r->rv = n;
    }
}

static const char *obj_rv(json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

static int obj_key(json_t *obj, char *buf, size_t n)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (!name || !*name)
        return -1;
    int w = ns && *ns ? snprintf(buf, n, "%s/%s", ns, name) : snprintf(buf, n, "%s", name);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

static const char *controller_uid(json_t *obj, const char **kind, const char **name)
{
    json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
    size_t i;
    json_t *ref;
    json_array_foreach(refs, i, ref) {
        if (json_is_true(json_object_get(ref, "controller"))) {
            if (kind)
                *kind = json_string_value(json_object_get(ref, "kind"));
            if (name)
                *name = json_string_value(json_object_get(ref, "name"));
            return json_string_value(json_object_get(ref, "uid"));
        }
    }
    return NULL;
}

/* The value of obj's label `label` (NULL when label is NULL or obj has no such string label). */
static const char *cluster_label(json_t *obj, const char *label)
{
    return label ? json_string_value(
                       json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), label))
                 : NULL;
}

/* An index set is one JSON string of its members' cache keys, each ended by '\0', in the order
 * they were added: ~150 bytes less a set than a jansson object of `true`s (its hashtable and
 * a pair for each member). Sets are small (a cluster's children, a StatefulSet's pods), so a
 * scan on add and remove costs less than a hash. A change makes a new string, so a walker that
 * holds a reference to the old one (each_in_set) keeps valid memory. */
static const char *set_find(json_t *set, const char *key, size_t kl)
{
    const char *p = json_string_value(set), *end = p + json_string_length(set);
    for (; p < end; p += strlen(p) + 1)
        if (strlen(p) == kl && memcmp(p, key, kl) == 0)
            return p;
    return NULL;
}

static void index_set(json_t *index, const char *ikey, const char *key, int add)
{
    json_t *set = json_object_get(index, ikey);
    size_t kl = strlen(key), sl = set ? json_string_length(set) : 0;
    const char *old = set ? json_string_value(set) : NULL, *at = set ? set_find(set, key, kl) : NULL;
    if (add ? at != NULL : at == NULL)
        return;
    if (!add && sl == kl + 1) {
        json_object_del(index, ikey);
        return;
    }
    size_t nl = add ? sl + kl + 1 : sl - kl - 1;
    char *buf = malloc(nl + 1);
    if (!buf)
        return;
    if (add) {
        if (sl)
            memcpy(buf, old, sl);
        memcpy(buf + sl, key, kl + 1);
    } else {
        size_t off = (size_t)(at - old);
        memcpy(buf, old, off);
        memcpy(buf + off, at + kl + 1, sl - off - kl - 1);
    }
    buf[nl] = '\0';
    json_object_set_new(index, ikey, json_stringn_nocheck(buf, nl));
    free(buf);
}

/* The label index's key "ns/<cluster label>" of obj into ck (n bytes); 0 when it has none. */
static int cluster_index_key(const reflector *r, json_t *obj, char *ck, size_t n)
{
    const char *cl = cluster_label(obj, r->index_label);
    if (!cl)
        return 0;
    const char *ns = json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));
    int w = snprintf(ck, n, "%s/%s", ns ? ns : "", cl);
    return w > 0 && (size_t)w < n;
}

static void index_keys(reflector *r, const char *uid, const char *ck, const char *key, int add)
{
    if (uid)
        index_set(r->by_owner, uid, key, add);
    if (ck)
        index_set(r->by_cluster, ck, key, add);
}

static void index_obj(reflector *r, json_t *obj, const char *key, int add)
{
    char ck[600];
    index_keys(r, controller_uid(obj, NULL, NULL), cluster_index_key(r, obj, ck, sizeof ck) ? ck : NULL, key, add);
}

/* Compact mode's cache entry: one JSON string holding "rv\0uid\0ck\0" (resourceVersion,
 * controller owner uid, label index key, each "" when absent), then the object's compact JSON
 * encoding behind a one-byte mark: 'j' the text as it is, 'z' the text as one zstd frame
 * compressed against the reflector's dictionary (r->zdict). One string instead of an array of
 * four saves ~300 bytes an object (the array, its table and three strings). Objects of one kind
 * differ mostly in names, uids, versions and times, so against another object of the kind as
 * a raw-content dictionary a 2 KiB StatefulSet takes ~300 bytes (3.5 KiB ConfigMap: ~110). */
enum { ENTRY_RV, ENTRY_UID, ENTRY_CK, ENTRY_TEXT };

#define ZDICT_MIN 256          /* smaller objects are kept as they are; none becomes the dictionary */
#define ZDICT_MAX 16384        /* the dictionary: at most this much of that first text (each frame
                                  loads it: a MiB-sized first ConfigMap must not slow every write) */
#define ZSTD_LEVEL 3           /* zstd's default level */
#define ZTEXT_MAX (64u << 20)  /* a frame that claims more is refused (a corrupt entry) */

/* One compression and one decompression context for the process (the loop is single-threaded). */
static ZSTD_CCtx *zcctx;
static ZSTD_DCtx *zdctx;

/* Writes the entry's text field for `text` (tl bytes) at dst (room for 1 + ZSTD_compressBound(tl)
 * bytes): the mark, then the text compressed when the reflector has a dictionary and the frame
 * is smaller, else the text as it is. Returns the bytes written. */
static size_t entry_put_text(reflector *r, char *dst, const char *text, size_t tl)
{
    if (!r->zdict && tl >= ZDICT_MIN) {
        size_t dl = tl < ZDICT_MAX ? tl : ZDICT_MAX;
        if ((r->zdict = malloc(dl)) != NULL) {
            memcpy(r->zdict, text, dl);
            r->zdict_len = dl;
        }
    }
    if (r->zdict && !zcctx)
        zcctx = ZSTD_createCCtx();
    if (r->zdict && zcctx) {
        size_t c = ZSTD_compress_usingDict(zcctx, dst + 1, ZSTD_compressBound(tl), text, tl, r->zdict,
                                           r->zdict_len, ZSTD_LEVEL);
        if (!ZSTD_isError(c) && c < tl) {
            dst[0] = 'z';
            return 1 + c;
        }
    }
    dst[0] = 'j';
    memcpy(dst + 1, text, tl);
    return 1 + tl;
}

static json_t *entry_new(reflector *r, json_t *obj)
{
    char *text = json_dumps(obj, JSON_COMPACT);
    if (!text)
        return NULL;
    char ck[600];
    const char *rv = obj_rv(obj), *uid = controller_uid(obj, NULL, NULL);
    const char *head[3] = {rv ? rv : "", uid ? uid : "", cluster_index_key(r, obj, ck, sizeof ck) ? ck : ""};
    size_t n = 0, tl = strlen(text);
    for (int i = 0; i < 3; i++)
        n += strlen(head[i]) + 1;
    char *buf = malloc(n + 1 + ZSTD_compressBound(tl) + 1);
    json_t *e = NULL;
    if (buf) {
        char *p = buf;
        for (int i = 0; i < 3; i++) {
            size_t l = strlen(head[i]) + 1;
            memcpy(p, head[i], l);
            p += l;
        }
        size_t tn = entry_put_text(r, p, text, tl);
        p[tn] = '\0';
        e = json_stringn_nocheck(buf, n + tn);
    }
    free(buf);
    free(text);
    return e;
}

/* Field `which` (ENTRY_*) of the packed entry v; *len (may be NULL) its length. NULL for an
 * empty rv, uid or ck. ENTRY_TEXT is the stored field, mark included (entry_text decodes it). */
static const char *entry_field(json_t *v, int which, size_t *len)
{
    const char *p = json_string_value(v), *end = p + json_string_length(v);
    for (int i = 0; i < which; i++)
        p += strlen(p) + 1;
    size_t l = which == ENTRY_TEXT ? (size_t)(end - p) : strlen(p);
    if (len)
        *len = l;
    return l || which == ENTRY_TEXT ? p : NULL;
}

/* The compact JSON text of entry v (*len bytes, not NUL-terminated): borrowed from the entry
 * ('j'), or decompressed into a new buffer that *owned is set to (free it). NULL when the entry
 * cannot be decoded (logged) or on out of memory. */
static const char *entry_text(const reflector *r, json_t *v, size_t *len, char **owned)
{
    size_t fl;
    const char *f = entry_field(v, ENTRY_TEXT, &fl);
    *owned = NULL;
    if (fl >= 1 && f[0] == 'j') {
        *len = fl - 1;
        return f + 1;
    }
    if (fl < 1 || f[0] != 'z' || !r->zdict)
        return NULL;
    if (!zdctx && !(zdctx = ZSTD_createDCtx()))
        return NULL;
    unsigned long long want = ZSTD_getFrameContentSize(f + 1, fl - 1);
    if (want == ZSTD_CONTENTSIZE_UNKNOWN || want == ZSTD_CONTENTSIZE_ERROR || want > ZTEXT_MAX)
        return NULL;
    char *out = malloc(want ? (size_t)want : 1);
    if (!out)
        return NULL;
    size_t d = ZSTD_decompress_usingDict(zdctx, out, (size_t)want, f + 1, fl - 1, r->zdict, r->zdict_len);
    if (ZSTD_isError(d) || d != want) {
        log_msg(LOG_ERROR, "cache entry cannot be decompressed", "kind", r->kind->kind, "error",
                ZSTD_isError(d) ? ZSTD_getErrorName(d) : "short frame", NULL);
        free(out);
        return NULL;
    }
    *len = d;
    *owned = out;
    return out;
}

/* The cached value v as a tree: a new reference (decoded in compact mode). */
static json_t *entry_tree(const reflector *r, json_t *v)
{
    if (!v)
        return NULL;
    if (!r->o.compact)
        return json_incref(v);
    size_t len;
    char *owned;
    const char *t = entry_text(r, v, &len, &owned);
    json_t *tree = t ? json_loadb(t, len, JSON_ALLOW_NUL, NULL) : NULL;
    free(owned);
    return tree;
}

static const char *entry_rv(const reflector *r, json_t *v)
{
    return r->o.compact ? entry_field(v, ENTRY_RV, NULL) : obj_rv(v);
}

/* Bytes the entry's text takes in the cache (compressed or not, without its mark). */
static size_t entry_bytes(const reflector *r, json_t *v)
{
    size_t len = 0;
    if (r->o.compact)
        entry_field(v, ENTRY_TEXT, &len);
    return len ? len - 1 : 0;
}

static void index_entry(reflector *r, json_t *v, const char *key, int add)
{
    if (r->o.compact)
        index_keys(r, entry_field(v, ENTRY_UID, NULL), entry_field(v, ENTRY_CK, NULL), key, add);
    else
        index_obj(r, v, key, add);
}

static int remove_key(reflector *r, const char *key, json_t *last);

/* A copy of obj as the cache keeps it: without metadata.managedFields, through the transform.
 * NULL when out of memory; *refused (may be NULL) is set when the transform keeps nothing of it
 * (the copy is still returned, trimmed as far as the transform went). */
static json_t *cache_copy(reflector *r, json_t *obj, int *refused)
{
    json_t *copy = json_deep_copy(obj);
    if (!copy)
        return NULL;
    json_object_del(json_object_get(copy, "metadata"), "managedFields");
    int no = r->o.transform && r->o.transform(r, r->kind, copy, r->ud);
    if (refused)
        *refused = no;
    return copy;
}

/* Stores obj (a borrowed reference); emits ADDED or MODIFIED unless
 * `only_if_changed` and the resourceVersion is the cached one. */
static int upsert(reflector *r, json_t *obj, int only_if_changed)
{
    char key[600];
    if (!json_is_object(obj) || obj_key(obj, key, sizeof key) != 0)
        return 0;
    int refused = 0;
    json_t *copy = cache_copy(r, obj, &refused);
    if (!copy)
        return 0;
    if (refused) {
        json_decref(copy);
        return remove_key(r, key, NULL);
    }
    json_t *old = json_object_get(r->store, key);
    if (old && only_if_changed) {
        /* before the entry is made: a relist's unchanged objects are not encoded again */
        const char *orv = entry_rv(r, old), *nrv = obj_rv(copy);
        if (orv && nrv && strcmp(orv, nrv) == 0) {
            json_decref(copy);
            return 0;
        }
    }
    json_t *entry = r->o.compact ? entry_new(r, copy) : json_incref(copy);
    if (!entry) {
        json_decref(copy);
        return 0;
    }
    if (old) {
        json_incref(old);
        index_entry(r, old, key, 0);
        r->bytes -= entry_bytes(r, old);
    }
    r->bytes += entry_bytes(r, entry);
    json_object_set_new(r->store, key, entry);
    index_obj(r, copy, key, 1);
    int rc = emit(r, old ? REFLECTOR_MODIFIED : REFLECTOR_ADDED, copy, r->o.compact ? NULL : old);
    json_decref(old);
    json_decref(copy);
    return rc;
}

static int remove_key(reflector *r, const char *key, json_t *last)
{
    json_t *old = json_object_get(r->store, key);
    if (!old)
        return 0;
    json_incref(old);
    index_entry(r, old, key, 0);
    r->bytes -= entry_bytes(r, old);
    json_object_del(r->store, key);
    /* shown as the cache would have kept it: the server's last state, else the cached one */
    json_t *shown = last ? cache_copy(r, last, NULL) : NULL;
    if (!shown)
        shown = entry_tree(r, old);
    int rc = shown ? emit(r, REFLECTOR_DELETED, shown, NULL) : 0;
    json_decref(shown);
    json_decref(old);
    return rc;
}

/* An object of the list under way (a page's item or a watch-list's initial event): its key noted
 * in r->list_seen, the object cached (its event when it changed). Nonzero when a callback stopped
 * the reflector. */
static int list_item(reflector *r, json_t *obj)
{
    char key[600];
    if (obj_key(obj, key, sizeof key) == 0)
        json_object_set_new(r->list_seen, key, json_true());
    return upsert(r, obj, 1);
}

/* One page of a list into the cache: each item upserted (with its event) and its key noted in
 * r->list_seen, so that the end of the list (replace_finish) removes what the list no longer
 * holds. Pages arrive one by one and only the compact entries stay (the page's trees are freed
 * with it). During a relist a pass may see the pages so far beside older entries: nothing is
 * removed before the whole list is in, so a pass never sees an existing child missing. */
static int replace_page(json_t *items, int restart, void *ud)
{
    reflector *r = ud;
    if (restart || !r->list_seen) {
        json_decref(r->list_seen);
        r->list_seen = json_object();
        if (!r->list_seen)
            return -1;
    }
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        if (list_item(r, it) != 0)
            return -1;
    }
    return 0;
}

/* The end of a list: the cached objects it did not hold are removed (DELETED events). */
static int replace_finish(reflector *r)
{
    json_t *seen = r->list_seen ? r->list_seen : json_object();
    r->list_seen = NULL;
    /* collect first: emitting while iterating the store is not safe */
    json_t *gone = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(r->store, key, v) {
        if (!json_object_get(seen, key))
            json_array_append_new(gone, json_string(key));
    }
    json_decref(seen);
    int rc = 0;
    size_t i;
    json_t *it;
    json_array_foreach(gone, i, it) {
        if ((rc = remove_key(r, json_string_value(it), NULL)) != 0)
            break;
    }
    json_decref(gone);
    return rc;
}

static void do_list(reflector *r);
static void do_watch(reflector *r);

/* A watch's timeoutSeconds: drawn in [watch_timeout_min_s, watch_timeout_max_s), so that the
 * watches of many replicas do not all end at once (client-go draws its own the same way). */
static long watch_timeout(const reflector *r)
{
    long span = r->o.watch_timeout_max_s - r->o.watch_timeout_min_s;
    return r->o.watch_timeout_min_s + (span > 0 ? (long)(loop_jitter() * (double)span) : 0);
}
static int watch_event(const char *type, json_t *obj, void *ud);
static void watch_done(const kube_result *res, void *ud);

static void report(reflector *r, const char *fmt, ...)
{
    if (!r->o.on_error)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->o.on_error(r, msg, r->ud);
}

/* Retries after the current backoff (times a jitter in [1, 1.5)), doubling it. */
static void backoff_retry(reflector *r, int relist)
{
    double d = r->backoff * (1.0 + 0.5 * loop_jitter());
    r->backoff *= 2;
    if (r->backoff > r->o.backoff_max_s)
        r->backoff = r->o.backoff_max_s;
    r->retry_relist = relist;
    ev_timer_set(&r->retry, d, 0.);
    ev_timer_start(r->loop, &r->retry);
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    reflector *r = w->data;
    if (r->retry_relist)
        do_list(r);
    else
        do_watch(r);
}

/* The end of a list (or of a watch-list's initial events, `how` "watch-list"): logged, what it
 * did not hold removed, its resourceVersion the watch's start, synced. -1 when a callback
 * stopped the reflector (freed when at the outermost level). */
static int list_complete(reflector *r, const char *rv, const char *how)
{
    r->lists++;
    r->relist_needed = 0;
    /* a list's time, at info when slow (client-go traces a reflector's list over 10 s; at
     * start every pass waits for every kind's list, so 1 s is already worth a line) */
    double dt = ev_time() - r->list_t0;
    char n[32], secs[32];
    snprintf(n, sizeof n, "%zu", json_object_size(r->list_seen)); /* the pages' keys (replace_page) */
    snprintf(secs, sizeof secs, "%.1f", dt * 1000.0);
    log_msg(dt >= REFLECTOR_SLOW_LIST_S ? LOG_INFO : LOG_DEBUG, dt >= REFLECTOR_SLOW_LIST_S ? "slow list" : "listed",
            "path", r->path, "objects", n, "duration_ms", secs, "resource_version", r->list_rv0 ? "0" : "",
            "by", how, NULL);
    r->depth++;                      /* keep r alive across the callbacks */
    int rc = replace_finish(r);
    if (rc == 0) {
        set_rv(r, rv);
        r->synced = 1;
        if (r->o.on_synced)
            r->o.on_synced(r, r->ud);
    }
    r->depth--;
    if (r->stopped) {
        if (r->depth == 0)
            destroy(r);
        return -1;
    }
    r->backoff = r->o.backoff_initial_s;
    return 0;
}

static void list_done(const kube_result *res, void *ud)
{
    reflector *r = ud;
    r->call = NULL;
    json_t *items = json_object_get(res->body, "items");
    if (res->status != 200 || !json_is_array(items)) {
        report(r, "list %s%s: status %ld: %s", r->path, r->list_rv0 ? " (resourceVersion=0)" : "", res->status,
               res->message);
        /* a server that cannot answer from its cache gets a consistent list next */
        if (r->list_rv0)
            r->rv0_refused = 1;
        backoff_retry(r, 1);
        return;
    }
    if (list_complete(r, json_string_value(json_object_get(json_object_get(res->body, "metadata"), "resourceVersion")),
                      "list") != 0)
        return;
    do_watch(r);
}

/* A watch-list (Kubernetes' streaming list, KEP-3157; the WatchList feature is on by default in
 * 1.32 and from 1.34, off in 1.33, which answers 422): one watch
 * with sendInitialEvents=true whose first events are the objects as they are (ADDED, each cached
 * as it comes: nothing holds the whole list), then a BOOKMARK annotated
 * k8s.io/initial-events-end with the list's resourceVersion, then the watch goes on. The first
 * asks resourceVersion=0 with list_from_cache (the watch cache as it is), the relists none (a
 * consistent read, resourceVersionMatch=NotOlderThan as the protocol requires). */
static void do_watch_list(reflector *r)
{
    char err[256] = "out of memory", path[sizeof r->path + 64];
    snprintf(path, sizeof path, "%s%csendInitialEvents=true&resourceVersionMatch=NotOlderThan", r->path,
             strchr(r->path, '?') ? '&' : '?');
    json_decref(r->list_seen);
    r->list_seen = json_object();
    r->watch_events = 0;
    r->call = r->list_seen ? kube_watch(r->client, path, r->list_rv0 ? "0" : NULL, r->selector, watch_timeout(r),
                                        watch_event, watch_done, r, err, sizeof err)
                           : NULL;
    r->wl_active = r->call != NULL;
    if (!r->call) {
        report(r, "watch-list %s: %s", r->path, err);
        backoff_retry(r, 1);
    }
}

static void do_list(reflector *r)
{
    char err[256];
    r->list_t0 = ev_time();
    /* client-go's rule: the first list (never synced) from the watch cache, as it is; a relist
     * (the watch's history expired) consistent, never older than what was seen; a consistent
     * one too after a list from the cache failed */
    r->list_rv0 = r->o.list_from_cache && !r->synced && !r->rv0_refused;
    if (r->o.watch_list && !r->wl_refused) {
        do_watch_list(r);
        return;
    }
    r->call = kube_list_paged_rv(r->client, r->path, r->selector, r->o.page_limit, r->list_rv0 ? "0" : NULL,
                                 replace_page, list_done, r, err, sizeof err);
    if (!r->call) {
        report(r, "list %s: %s", r->path, err);
        backoff_retry(r, 1);
    }
}

/* An event of a watch-list before its end: the objects go to the cache and list_seen (no
 * resourceVersion kept: the initial events come in no order of it); the end bookmark completes
 * the list; a bookmark without the end annotation is a server that ignored sendInitialEvents
 * (before 1.27): paged lists from now on. 1 stops the stream. */
static int watch_list_event(reflector *r, const char *type, json_t *obj)
{
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
        r->watch_events++;
        return list_item(r, obj) != 0;
    }
    if (strcmp(type, "DELETED") == 0) {
        char key[600];
        r->watch_events++;
        if (obj_key(obj, key, sizeof key) != 0)
            return 0;
        json_object_del(r->list_seen, key);
        return remove_key(r, key, obj) != 0;
    }
    if (strcmp(type, "BOOKMARK") == 0) {
        json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
        const char *end = json_string_value(json_object_get(ann, "k8s.io/initial-events-end"));
        if (end && strcmp(end, "true") == 0) {
            r->wl_active = 0;
            return list_complete(r, obj_rv(obj), "watch-list") != 0;
        }
        r->wl_refused = 1;
        report(r, "watch-list %s: a bookmark before the initial events' end (the server does not stream lists): "
                  "paged lists from now on", r->path);
        return 1;
    }
    return -1; /* ERROR: the caller's */
}

static int watch_event(const char *type, json_t *obj, void *ud)
{
    reflector *r = ud;
    const char *rv = obj_rv(obj);
    int rc = 0;
    if (r->wl_active && (rc = watch_list_event(r, type, obj)) >= 0)
        return rc;
    rc = 0;
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
        set_rv(r, rv);
        r->watch_events++;
        rc = upsert(r, obj, 0);
    } else if (strcmp(type, "DELETED") == 0) {
        char key[600];
        set_rv(r, rv);
        r->watch_events++;
        if (obj_key(obj, key, sizeof key) == 0)
            rc = remove_key(r, key, obj);
    } else if (strcmp(type, "BOOKMARK") == 0) {
        set_rv(r, rv);
    } else if (strcmp(type, "ERROR") == 0) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *reason = json_string_value(json_object_get(obj, "reason"));
        const char *msg = json_string_value(json_object_get(obj, "message"));
        if (code == 410 || (reason && (strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0)))
            r->relist_needed = 1;
        report(r, "watch %s: error event %lld %s: %s", r->path, (long long)code, reason ? reason : "",
               msg ? msg : "");
        return 1;                  /* the server closes the stream after it */
    }
    return rc != 0 ? 1 : 0;        /* stopped from a callback */
}

static void watch_done(const kube_result *res, void *ud)
{
    reflector *r = ud;
    r->call = NULL;
    if (r->wl_active) {
        /* ended before the initial events' end: a server that refuses the parameters (400, or
         * 422 with the WatchList feature off) gets paged lists from now on; any other end (a
         * dropped stream, 403, 429, 5xx) the watch-list again after the backoff */
        r->wl_active = 0;
        r->relist_needed = 0;
        if (res->status == 400 || res->status == 422)
            r->wl_refused = 1;
        report(r, "watch-list %s%s: status %ld: %s%s", r->path, r->list_rv0 ? " (resourceVersion=0)" : "",
               res->status, res->message, r->wl_refused ? ": paged lists from now on" : "");
        if (r->wl_refused) {
            do_list(r);
            return;
        }
        backoff_retry(r, 1);
        return;
    }
    if (r->relist_needed || res->status == 410 || res->status == 504) {
        /* history compacted: drop the resume point, list again now */
        r->relist_needed = 0;
        free(r->rv);
        r->rv = NULL;
        do_list(r);
        return;
    }
    if (res->status == 200 && !*res->error) {
        r->backoff = r->o.backoff_initial_s;
        do_watch(r);                 /* clean end (timeoutSeconds): resume */
        return;
    }
    if (r->watch_events > 0)
        r->backoff = r->o.backoff_initial_s;
    report(r, "watch %s: status %ld: %s", r->path, res->status, res->message);
    backoff_retry(r, 0);
}

static void do_watch(reflector *r)
{
    char err[256];
    r->watch_events = 0;
    r->call = kube_watch(r->client, r->path, r->rv, r->selector, watch_timeout(r), watch_event, watch_done, r, err,
                         sizeof err);
    if (!r->call) {
        report(r, "watch %s: %s", r->path, err);
        backoff_retry(r, 0);
    }
}

static void resync_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    reflector *r = w->data;
    if (!r->synced)
        return;
    json_t *snapshot = json_copy(r->store);   /* shallow: same objects */
    const char *key;
    json_t *v;
    r->depth++;
    json_object_foreach(snapshot, key, v) {
        json_t *obj = entry_tree(r, v);
        if (obj)
            r->on_event(r, REFLECTOR_RESYNC, obj, obj, r->ud);
        json_decref(obj);
        if (r->stopped)
            break;
    }
    r->depth--;
    json_decref(snapshot);
    if (r->stopped && r->depth == 0)
        destroy(r);
}

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    do_list((reflector *)w->data);
}

reflector *reflector_start(kube_client *c, const kube_kind *kind, const reflector_opts *opts,
                           reflector_event_fn on_event, void *ud, char *err, size_t errlen)
{
    if (!c || !kind || !on_event) {
        util_set_err(err, errlen, "reflector_start: client, kind and on_event are required");
        return NULL;
    }
    reflector *r = calloc(1, sizeof *r);
    if (!r) {
        util_set_err(err, errlen, "reflector_start: out of memory");
        return NULL;
    }
    if (opts)
        r->o = *opts;
    if (r->o.watch_timeout_min_s <= 0)
        r->o.watch_timeout_min_s = 300;
    if (r->o.watch_timeout_max_s < r->o.watch_timeout_min_s)
        r->o.watch_timeout_max_s = r->o.watch_timeout_min_s == 300 ? 600 : r->o.watch_timeout_min_s;
    if (!(r->o.backoff_initial_s > 0))
        r->o.backoff_initial_s = 0.8;
    if (!(r->o.backoff_max_s > 0))
        r->o.backoff_max_s = 30;
    if (r->o.page_limit <= 0)
        r->o.page_limit = 500;
    r->client = c;
    r->loop = NULL;
    r->kind = kind;
    r->on_event = on_event;
    r->ud = ud;
    r->backoff = r->o.backoff_initial_s;
    r->ns = opts && opts->namespace && *opts->namespace ? strdup(opts->namespace) : NULL;
    r->selector = opts && opts->label_selector && *opts->label_selector ? strdup(opts->label_selector) : NULL;
    r->index_label = opts && opts->cluster_label && *opts->cluster_label ? strdup(opts->cluster_label) : NULL;
    r->o.namespace = r->ns;
    r->o.label_selector = r->selector;
    r->o.cluster_label = r->index_label;
    r->store = json_object();
    r->by_owner = json_object();
    r->by_cluster = json_object();
    /* a namespace or selector lost to a failed strdup would widen the watch to everything */
    int lost = (opts && opts->namespace && *opts->namespace && !r->ns) ||
               (opts && opts->label_selector && *opts->label_selector && !r->selector) ||
               (opts && opts->cluster_label && *opts->cluster_label && !r->index_label);
    if (lost || kube_path(r->path, sizeof r->path, kind, r->ns, NULL, NULL) != 0 ||
        (opts && opts->field_selector && *opts->field_selector &&
         kube_path_query(r->path, sizeof r->path, "fieldSelector", opts->field_selector) != 0) || !r->store ||
        !r->by_owner || !r->by_cluster) {
        util_set_err(err, errlen, "reflector_start: bad namespace or out of memory");
        json_decref(r->store);
        json_decref(r->by_owner);
        json_decref(r->by_cluster);
        free(r->ns);
        free(r->selector);
        free(r->index_label);
        free(r);
        return NULL;
    }
    r->loop = kube_client_loop(c);
    ev_timer_init(&r->retry, retry_cb, 0., 0.);
    r->retry.data = r;
    ev_timer_init(&r->kick, kick_cb, 0., 0.);
    r->kick.data = r;
    ev_timer_start(r->loop, &r->kick);
    ev_timer_init(&r->resync, resync_cb, r->o.resync_s, r->o.resync_s);
    r->resync.data = r;
    if (r->o.resync_s > 0)
        ev_timer_start(r->loop, &r->resync);
    return r;
}

int reflector_has_synced(const reflector *r)
{
    return r && r->synced;
}

const char *reflector_resource_version(const reflector *r)
{
    return r && r->rv ? r->rv : "";
}

unsigned reflector_list_count(const reflector *r)
{
    return r ? r->lists : 0;
}

static json_t *store_get(const reflector *r, const char *ns, const char *name)
{
    if (!r || !name)
        return NULL;
    char key[600];
    if (ns && *ns)
        snprintf(key, sizeof key, "%s/%s", ns, name);
    else
        snprintf(key, sizeof key, "%s", name);
    return json_object_get(r->store, key);
}

json_t *reflector_get(const reflector *r, const char *ns, const char *name)
{
    return r && !r->o.compact ? store_get(r, ns, name) : NULL;
}

json_t *reflector_get_copy(const reflector *r, const char *ns, const char *name)
{
    return entry_tree(r, store_get(r, ns, name));
}

size_t reflector_len(const reflector *r)
{
    return r ? json_object_size(r->store) : 0;
}

size_t reflector_bytes(const reflector *r)
{
    return r ? r->bytes : 0;
}

/* fn on the cached value v as a tree (decoded for the call in compact mode); 1 when called. */
static int each_tree(const reflector *r, json_t *v, reflector_each_fn fn, void *ud)
{
    json_t *obj = entry_tree(r, v);
    if (!obj)
        return 0;
    fn(obj, ud);
    json_decref(obj);
    return 1;
}

size_t reflector_foreach(const reflector *r, reflector_each_fn fn, void *ud)
{
    const char *key;
    json_t *v;
    size_t n = 0;
    json_object_foreach(r->store, key, v)
        n += (size_t)each_tree(r, v, fn, ud);
    return n;
}

/* fn on the cached value v (its cache key `key`, "ns/name" or "name") as text. */
static int each_text(const reflector *r, const char *key, json_t *v, reflector_each_text_fn fn, void *ud)
{
    const char *slash = strchr(key, '/');
    const char *name = slash ? slash + 1 : key;
    if (r->o.compact) {
        size_t len;
        char *owned;
        const char *t = entry_text(r, v, &len, &owned);
        if (!t)
            return 0;
        fn(name, t, len, ud);
        free(owned);
        return 1;
    }
    char *text = json_dumps(v, JSON_COMPACT);
    if (!text)
        return 0;
    fn(name, text, strlen(text), ud);
    free(text);
    return 1;
}

/* Visits the cached objects whose keys are the members of `set` (an index entry): as trees
 * with fn, or as text with tfn. */
static size_t each_in_set(const reflector *r, json_t *set, reflector_each_fn fn, reflector_each_text_fn tfn,
                          void *ud)
{
    if (!set)
        return 0;
    json_incref(set);
    const char *p = json_string_value(set), *end = p + json_string_length(set);
    size_t n = 0;
    for (; p < end; p += strlen(p) + 1) {
        json_t *obj = json_object_get(r->store, p);
        if (obj)
            n += (size_t)(fn ? each_tree(r, obj, fn, ud) : each_text(r, p, obj, tfn, ud));
    }
    json_decref(set);
    return n;
}

static json_t *cluster_set(const reflector *r, const char *ns, const char *cluster)
{
    char ck[600];
    snprintf(ck, sizeof ck, "%s/%s", ns ? ns : "", cluster);
    return json_object_get(r->by_cluster, ck);
}

size_t reflector_by_owner_uid(const reflector *r, const char *uid, reflector_each_fn fn, void *ud)
{
    return r && uid ? each_in_set(r, json_object_get(r->by_owner, uid), fn, NULL, ud) : 0;
}

size_t reflector_by_cluster(const reflector *r, const char *ns, const char *cluster, reflector_each_fn fn,
                            void *ud)
{
    return r && cluster ? each_in_set(r, cluster_set(r, ns, cluster), fn, NULL, ud) : 0;
}

size_t reflector_texts_by_owner_uid(const reflector *r, const char *uid, reflector_each_text_fn fn, void *ud)
{
    return r && uid ? each_in_set(r, json_object_get(r->by_owner, uid), NULL, fn, ud) : 0;
}

size_t reflector_texts_by_cluster(const reflector *r, const char *ns, const char *cluster,
                                  reflector_each_text_fn fn, void *ud)
{
    return r && cluster ? each_in_set(r, cluster_set(r, ns, cluster), NULL, fn, ud) : 0;
}

int reflector_owner_key(json_t *obj, const char *owner_kind, const char *cluster_label_key, char *buf, size_t n)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *name = NULL, *okind = NULL, *oname = NULL;
    int w = -1;
    if (!ns)
        ns = "";
    if (owner_kind && kind && strcmp(kind, owner_kind) == 0 &&
        (name = json_string_value(json_object_get(meta, "name"))))
        w = snprintf(buf, n, "%s/%s", ns, name);
    else if (controller_uid(obj, &okind, &oname), okind && oname && owner_kind && strcmp(okind, owner_kind) == 0)
        w = snprintf(buf, n, "%s/%s", ns, oname);
    else if ((name = cluster_label(obj, cluster_label_key)) && *name)
        w = snprintf(buf, n, "%s/%s", ns, name);
    return w > 0 && (size_t)w < n ? 1 : 0;
}
