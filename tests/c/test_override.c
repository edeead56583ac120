/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/override: a set materialized from a base dir and a plan, its hash, the
 * compile check (the fixtures' child process is covered by the integration case `override`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "override.h"
#include "util.h"
#include "transport_tap.h"

static void put(const char *dir, const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static char *get(const char *dir, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return util_read_file(path, 1 << 20, NULL, NULL, 0);
}

static int exists(const char *dir, const char *rel)
{
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return stat(path, &sb) == 0;
}

int main(void)
{
    char err[512], work[] = "/tmp/test-override-XXXXXX", base[4200], set[4200], set2[4200], h1[16], h2[16], h0[16];
    if (!mkdtemp(work))
        return 1;
    /* a base set: a policy, its spec (not part of a set), a lib, a fixture, a stray file */
    snprintf(base, sizeof base, "%s/base", work);
    mkdir(base, 0755);
    char d[4400];
    snprintf(d, sizeof d, "%s/lib", base);
    mkdir(d, 0755);
    snprintf(d, sizeof d, "%s/testdata", base);
    mkdir(d, 0755);
    snprintf(d, sizeof d, "%s/testdata/cluster", base);
    mkdir(d, 0755);
    snprintf(d, sizeof d, "%s/testdata/cluster/a", base);
    mkdir(d, 0755);
    put(base, "cluster.lua", "return {}\n");
    put(base, "cluster_spec.lua", "error('not copied')\n");
    put(base, "README.md", "not copied\n");
    put(base, "lib/names.lua", "return {}\n");
    put(base, "testdata/cluster/a/input.yaml", "a: 1\n");
    put(base, "testdata/cluster/a/expected.yaml", "[]\n");

    IS_INT(override_hash(base, h0, sizeof h0, err, sizeof err), 0, "hash of the base set");
    IS_INT((int)strlen(h0), OVERRIDE_HASH_LEN, "12 hex digits");

    json_t *plan = json_loads("{\"files\": [{\"path\": \"cluster.lua\", \"text\": \"return {x = 1}\\n\"},"
                              " {\"path\": \"testdata/cluster/a/expected-partial.yaml\", \"text\": \"{}\\n\"},"
                              " {\"path\": \"testdata/job/new/input.yaml\", \"text\": \"hook: x\\n\"}],"
                              " \"remove\": [\"testdata/cluster/a/expected.yaml\"]}",
                              0, NULL);
    IS_INT(override_materialize(base, work, plan, set, sizeof set, err, sizeof err), 0, "materialized");
    OK(strncmp(set, work, strlen(work)) == 0 && strstr(set, "/flink-controller-policies-"), "a fresh dir under the work dir: %s", set);
    char *t = get(set, "cluster.lua");
    IS_STR(t, "return {x = 1}\n", "an override replaces the built-in file");
    free(t);
    t = get(set, "lib/names.lua");
    IS_STR(t, "return {}\n", "built-in files are copied");
    free(t);
    t = get(set, "lib/builtin_cluster.lua");
    IS_STR(t, "return {}\n", "the replaced built-in policy stays as lib/builtin_cluster.lua (per-hook fallback)");
    free(t);
    OK(!exists(set, "lib/builtin_input.yaml") && !exists(set, "lib/builtin_names.lua"),
       "only a replaced top-level policy is kept");
    OK(!exists(set, "cluster_spec.lua") && !exists(set, "README.md"), "specs and other files are not part of a set");
    OK(!exists(set, "testdata/cluster/a/expected.yaml") && exists(set, "testdata/cluster/a/expected-partial.yaml"),
       "the other expectation of a case is removed");
    OK(exists(set, "testdata/job/new/input.yaml"), "new fixture directories are made");
    IS_INT(override_hash(set, h1, sizeof h1, err, sizeof err), 0, "hash of the new set");
    OK(strcmp(h0, h1) != 0, "another set, another hash (%s, %s)", h0, h1);
    IS_INT(override_compile(set, err, sizeof err), 0, "every Lua file compiles");

    /* the same plan again: the same hash; an empty plan: the base's hash */
    IS_INT(override_materialize(base, work, plan, set2, sizeof set2, err, sizeof err), 0, "materialized again");
    OK(strcmp(set, set2) != 0, "in a directory of its own");
    override_hash(set2, h2, sizeof h2, err, sizeof err);
    IS_STR(h2, h1, "the same files hash the same");
    override_remove(set2);
    OK(!exists(set2, ""), "override_remove removes the set");
    json_decref(plan);

    plan = json_loads("{\"files\": [{\"path\": \"lib/names.lua\", \"text\": \"return {\\n  x = ,\\n}\\n\"}]}", 0, NULL);
    IS_INT(override_materialize(base, work, plan, set2, sizeof set2, err, sizeof err), 0, "a set with a broken lib");
    IS_INT(override_compile(set2, err, sizeof err), 1, "refused by the compile check");
    IS_STR(err, "lib/names.lua:2: unexpected symbol near ','", "file:line of the syntax error");
    override_remove(set2);
    json_decref(plan);

    plan = json_loads("{\"files\": [{\"path\": \"../escape.lua\", \"text\": \"\"}]}", 0, NULL);
    IS_INT(override_materialize(base, work, plan, set2, sizeof set2, err, sizeof err), -1, "a path leaving the set");
    IS_STR(err, "plan: a file needs a relative path inside the set and a text", "is refused");
    OK(!exists(work, "escape.lua"), "and nothing is written outside");
    json_decref(plan);

    IS_INT(override_hash("/nonexistent-dir", h2, sizeof h2, err, sizeof err), -1, "a missing dir");
    IS_STR(err, "/nonexistent-dir: No such file or directory", "names the dir");

    override_remove(set);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", work);
    return DONE_TESTING();
}
