/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/shard's pure parts (the hash, a key's shard, the preferred shard, the
 * campaign delay, the Lease name), the takeover decision on a shard's Lease (core/leader's
 * leader_decide, as a standby replica sees a dead replica's Lease) and the --shards /
 * --shard-index options. */
#include <stdio.h>
#include <string.h>

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

int main(void)
{
    FILE *devnull = fopen("/dev/null", "w");
    log_set_output(devnull);
    test_hash();
    test_of_key();
    test_preferred();
    test_delay_and_takeover();
    test_options();
    log_set_output(NULL);
    fclose(devnull);
    return DONE_TESTING();
}
