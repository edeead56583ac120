/* SPDX-License-Identifier: Apache-2.0 */
/* core/clusterstate: the per-cluster records by "<namespace>/<name>": made on demand, found
 * again after the map grows, forgotten one by one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clusterstate.h"
#include "transport_tap.h"

int main(void)
{
    clusterstate_map *m = clusterstate_new();
    OK(m != NULL, "a map");
    OK(clusterstate_get(m, "ns/a") == NULL, "nothing kept for an unknown key");
    cluster_state *a = clusterstate_get_or_add(m, "ns/a");
    OK(a && !a->flink && !a->emitted && !a->expect && !a->fresh && !a->dryruns && !a->has_kept,
       "a new record is empty");
    a->flink = json_pack("{s:{}}", "answers");
    OK(clusterstate_get(m, "ns/a") == a, "the same record found by its key");
    OK(clusterstate_get_or_add(m, "ns/a") == a, "and not made twice");
    OK(clusterstate_get(m, "ns/b") == NULL && clusterstate_get(m, "ns2/a") == NULL, "other keys are other records");
    IS_INT(clusterstate_len(m), 1, "one record");

    /* 2,000 clusters: the buckets grow, every record stays where its key finds it */
    char key[64];
    int found = 0;
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof key, "team-%d/cluster-%d", i % 7, i);
        cluster_state *s = clusterstate_get_or_add(m, key);
        if (s)
            s->expect = json_integer(i);
    }
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof key, "team-%d/cluster-%d", i % 7, i);
        cluster_state *s = clusterstate_get(m, key);
        found += s && json_integer_value(s->expect) == i;
    }
    IS_INT(found, 2000, "every record found after the map grew");
    IS_INT(clusterstate_len(m), 2001, "2,001 records");
    a = clusterstate_get(m, "ns/a");
    OK(a && json_is_object(json_object_get(a->flink, "answers")), "the first record kept its value across growth");

    for (int i = 0; i < 2000; i += 2) {
        snprintf(key, sizeof key, "team-%d/cluster-%d", i % 7, i);
        clusterstate_forget(m, key);
    }
    IS_INT(clusterstate_len(m), 1001, "forgotten records go");
    OK(clusterstate_get(m, "team-0/cluster-0") == NULL, "a forgotten key finds nothing");
    cluster_state *odd = clusterstate_get(m, "team-1/cluster-1");
    IS_INT(odd ? json_integer_value(odd->expect) : -1, 1, "the others stay");
    clusterstate_forget(m, "no/such");
    IS_INT(clusterstate_len(m), 1001, "forgetting an unknown key changes nothing");
    clusterstate_free(m);
    clusterstate_free(NULL);
    OK(clusterstate_get(NULL, "ns/a") == NULL && clusterstate_get_or_add(NULL, "ns/a") == NULL,
       "a NULL map keeps nothing");
    return DONE_TESTING();
}
