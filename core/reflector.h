/* SPDX-License-Identifier: Apache-2.0 */
/* core/reflector: keeps a local cache of one kind in step with the API
 * server, the way client-go's reflector does:
 *   LIST (paginated, resourceVersion unset: a consistent read, so pages form
 *   one snapshot; with reflector_opts.list_from_cache the first list asks
 *   resourceVersion=0, the watch cache's state in one page; with
 *   reflector_opts.watch_list a watch-list instead: a watch with
 *   sendInitialEvents=true, objects cached as their ADDED events come, the
 *   list complete at the BOOKMARK annotated k8s.io/initial-events-end, the
 *   watch going on from there) -> replace the cache (synthesising ADDED/MODIFIED/DELETED
 *   against what was cached) -> WATCH from the list's resourceVersion with
 *   allowWatchBookmarks and a random timeoutSeconds in [min, max).
 *   Every event's and bookmark's resourceVersion becomes the resume point.
 *   Clean end of a watch -> watch again from that point (no relist).
 *   410 Gone / "Expired" (HTTP status or ERROR event) or 504 -> full relist.
 *   Transport errors and other failures -> retry after a jittered
 *   exponential backoff (initial 0.8 s, doubling, capped at 30 s; reset
 *   after a watch that delivered events or ended cleanly).
 *   Optional periodic resync re-delivers every cached object.
 * Cached objects have metadata.managedFields removed and are indexed by
 * "namespace/name", by the uid of their controller ownerReference and, with
 * reflector_opts.cluster_label, by "namespace/<value of that label>".
 * Compact mode (reflector_opts.compact) keeps each object as its compact JSON
 * text beside its index keys and resourceVersion, about a tenth of a jansson
 * tree's memory (a StatefulSet: ~2 KiB of text against ~23 KiB in 270
 * allocations); objects are decoded only when read as trees.
 */
#ifndef FC_REFLECTOR_H
#define FC_REFLECTOR_H

#include <stddef.h>
#include <jansson.h>
#include "kube.h"

/* A list (all its pages) that took this many seconds or more is logged at info ("slow list"),
 * a faster one at debug ("listed"). */
#define REFLECTOR_SLOW_LIST_S 1.0

typedef struct reflector reflector;

typedef enum {
    REFLECTOR_ADDED,
    REFLECTOR_MODIFIED,
    REFLECTOR_DELETED,
    REFLECTOR_RESYNC
} reflector_event;

/* Called for each change: `obj` is the cached object (for DELETED the last
 * known state), `old` the previous cached state for MODIFIED (the same as obj
 * for RESYNC, NULL otherwise; always NULL for MODIFIED in compact mode, which
 * keeps no tree of it). Both borrowed: json_incref to keep; do not modify.
 * reflector_stop() may be called from here. */
typedef void (*reflector_event_fn)(reflector *r, reflector_event ev, json_t *obj, json_t *old, void *ud);
/* Called on each listed or watched object of the reflector's `kind` before it is cached, with a
 * private copy the cache will keep (metadata.managedFields already removed): it may delete
 * members in place, as client-go's informer TransformFunc does, to keep the cache to what its
 * users read. Returns 1 to cache nothing of the object (it is then absent: one cached before is
 * removed with a DELETED event), 0 to cache it. `ud` is reflector_start's. */
typedef int (*reflector_transform_fn)(reflector *r, const kube_kind *kind, json_t *obj, void *ud);
/* Called after each successful (re)list has been applied to the cache. */
typedef void (*reflector_synced_fn)(reflector *r, void *ud);
/* Called for each list/watch failure that leads to a retry (for logs). */
typedef void (*reflector_error_fn)(reflector *r, const char *what, void *ud);

typedef struct reflector_opts {
    const char *namespace;        /* NULL or "" = all namespaces */
    const char *label_selector;   /* NULL or "" = everything */
    const char *cluster_label;    /* the label whose value indexes objects by cluster
                                     (reflector_by_cluster; the controller's: fc.names'
                                     CLUSTER_LABEL); NULL or "" = no such index */
    const char *field_selector;   /* NULL or "" = everything; e.g. "metadata.name=x" (one
                                     object: what RBAC resourceNames allows to list/watch) */
    double resync_s;              /* periodic resync period, seconds; 0 = off */
    long watch_timeout_min_s;     /* default 300 */
    long watch_timeout_max_s;     /* default 600 (exclusive) */
    double backoff_initial_s;     /* default 0.8 */
    double backoff_max_s;         /* default 30 */
    long page_limit;              /* list page size, default 500 */
    reflector_transform_fn transform; /* NULL: objects cached whole (but managedFields) */
    int compact;                  /* 1: objects kept as compact JSON text (see the top) */
    int list_from_cache;          /* 1: the first list asks resourceVersion=0, as client-go's
                                     informers: served from the API server's watch cache as it
                                     is (no wait for that cache to catch up with etcd), in ONE
                                     page whatever page_limit (the cache ignores limit: the
                                     whole list's body and trees at once, so only for kinds of
                                     few or small objects). A relist after the watch's history
                                     expired, and the list after one from the cache failed, are
                                     consistent reads. 0: every list consistent. */
    int watch_list;               /* 1: each (re)list is a watch-list (a watch with
                                     sendInitialEvents=true, Kubernetes' streaming list):
                                     objects cached one by one as they come, never the whole
                                     list's body or trees at once; the first from the watch
                                     cache as it is with list_from_cache. A server that refuses
                                     it (the WatchList feature off) or ignores it (before 1.27)
                                     gets paged lists as above from then on. */
    reflector_synced_fn on_synced;
    reflector_error_fn on_error;
} reflector_opts;

/* Starts list+watch of `kind` on the client's loop. `opts` may be NULL (all
 * defaults); its strings are copied. Returns NULL with err on bad arguments.
 * Callbacks never run inside reflector_start. */
reflector *reflector_start(kube_client *c, const kube_kind *kind, const reflector_opts *opts,
                           reflector_event_fn on_event, void *ud, char *err, size_t errlen);
/* Stops (cancels the running call and timers) and frees the cache. Safe
 * from inside the reflector's own callbacks (freed when they return). */
void reflector_stop(reflector *r);

/* 1 once a list has been applied to the cache. */
int reflector_has_synced(const reflector *r);
/* The last resourceVersion seen (list, event or bookmark), "" before. */
const char *reflector_resource_version(const reflector *r);
/* Number of lists done (1 after the first; counts relists). */
unsigned reflector_list_count(const reflector *r);

/* Cached object or NULL (borrowed). `ns` NULL/"" for cluster-scoped kinds. Always NULL in
 * compact mode, which keeps no trees: use reflector_get_copy. */
json_t *reflector_get(const reflector *r, const char *ns, const char *name);
/* Cached object or NULL, as a new reference (compact mode: decoded from its text; else the
 * cached tree itself, which must not be modified). json_decref when done. */
json_t *reflector_get_copy(const reflector *r, const char *ns, const char *name);
size_t reflector_len(const reflector *r);
/* Bytes of the cached objects' texts in compact mode (0 otherwise). */
size_t reflector_bytes(const reflector *r);
/* Calls fn for every cached object / the ones whose controller
 * ownerReference has `uid` / the ones in `ns` whose reflector_opts.cluster_label
 * is <cluster> (none without that option).
 * Returns how many. fn must not stop the reflector. `obj` is borrowed for the
 * call only (in compact mode a tree decoded for it). */
typedef void (*reflector_each_fn)(json_t *obj, void *ud);
size_t reflector_foreach(const reflector *r, reflector_each_fn fn, void *ud);
size_t reflector_by_owner_uid(const reflector *r, const char *uid, reflector_each_fn fn, void *ud);
size_t reflector_by_cluster(const reflector *r, const char *ns, const char *cluster, reflector_each_fn fn,
                            void *ud);
/* The same two walks handing each object's compact JSON text (`len` bytes, not
 * NUL-terminated, borrowed for the call) and its metadata.name: in compact mode
 * the cached text itself, with no decoding; else the tree encoded for the call. */
typedef void (*reflector_each_text_fn)(const char *name, const char *text, size_t len, void *ud);
size_t reflector_texts_by_owner_uid(const reflector *r, const char *uid, reflector_each_text_fn fn, void *ud);
size_t reflector_texts_by_cluster(const reflector *r, const char *ns, const char *cluster,
                                  reflector_each_text_fn fn, void *ud);

/* The work-queue key of the FlinkCluster an object belongs to: its
 * controller ownerReference when that has kind `owner_kind` (e.g.
 * "FlinkCluster") -> "namespace/ownerName"; else the value of its label
 * `cluster_label` (NULL: none) -> "namespace/<value>"; for an object of kind `owner_kind` itself, its own
 * "namespace/name". Returns 1 and writes buf (n bytes), or 0 when none. */
int reflector_owner_key(json_t *obj, const char *owner_kind, const char *cluster_label, char *buf, size_t n);

#endif
