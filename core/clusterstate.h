/* SPDX-License-Identifier: Apache-2.0 */
/* core/clusterstate: what the controller keeps per FlinkCluster between passes, one typed record
 * per cluster in a hash map keyed by the workqueue key "<namespace>/<name>" (in place of six
 * string-keyed JSON maps). Each field is NULL (or has_kept 0) until its room first keeps
 * something; the record goes when the cluster is deleted (clusterstate_forget).
 */
#ifndef FC_CLUSTERSTATE_H
#define FC_CLUSTERSTATE_H

#include <stddef.h>

#include <jansson.h>

typedef struct cluster_state {
    /* core/snapshot: the Flink answers {answers={...}, since=<unix s>} (snapshot_flink_state) */
    json_t *flink;
    /* core/events: the correlator's entries {"<type>\x1f<reason>\x1f<message>": {time, count, name}} */
    json_t *emitted;
    /* core/expect: {"deadline": unix s, "objects": {"<kind index>/<name>": want}} */
    json_t *expect;
    /* core/executor: {"<METHOD> <path>": true}, the Flink answers the next pass is run for */
    json_t *fresh;
    /* core/executor: {"<Kind>/<name>": {hash, status, message}}, dry-run answers */
    json_t *dryruns;
    /* core/status: the digests (status_digest) of the status last written and of the one the
     * server answered with; valid when has_kept */
    int has_kept;
    char sent[65], kept[65];
} cluster_state;

typedef struct clusterstate_map clusterstate_map;

/* An empty map; NULL when out of memory. */
clusterstate_map *clusterstate_new(void);

/* Frees the map and every record (their JSON values decref'd). NULL is ignored. */
void clusterstate_free(clusterstate_map *m);

/* The record of `key`, or NULL when none is kept. */
cluster_state *clusterstate_get(clusterstate_map *m, const char *key);

/* The record of `key`, made (all fields empty) when missing; NULL when out of memory. Valid
 * until clusterstate_forget of that key or clusterstate_free. */
cluster_state *clusterstate_get_or_add(clusterstate_map *m, const char *key);

/* Drops the record of `key` (its JSON values decref'd); nothing when there is none. */
void clusterstate_forget(clusterstate_map *m, const char *key);

/* Records kept. */
size_t clusterstate_len(const clusterstate_map *m);

#endif
