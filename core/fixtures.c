/* SPDX-License-Identifier: Apache-2.0 */
/* fixtures: see fixtures.h. */
#include "fixtures.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "lhost_json.h"
#include "util.h"

#define FIXTURES_FILE_MAX ((size_t)16 << 20) /* bytes of one fixture file */

/* Sorted names in `dir` that `keep(dir, name)` accepts; NULL (errno set) when unreadable.
 * *n gets the count; free with fixtures_free_names. */
static char **fixtures_names(const char *dir, int (*keep)(const char *, const char *), size_t *n)
{
    struct dirent **list = NULL;
    int got = scandir(dir, &list, NULL, alphasort);
    *n = 0;
    if (got < 0)
        return NULL;
    char **out = calloc((size_t)got + 1, sizeof *out);
    for (int i = 0; i < got; i++) {
        if (out && list[i]->d_name[0] != '.' && keep(dir, list[i]->d_name))
            out[(*n)++] = strdup(list[i]->d_name);
        free(list[i]);
    }
    free(list);
    return out;
}

static void fixtures_free_names(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

/* dir/name into path (4096 bytes); -1 when it does not fit */
static int fixtures_join(char path[4096], const char *dir, const char *name)
{
    int n = snprintf(path, 4096, "%s/%s", dir, name);
    return n < 0 || n >= 4096 ? -1 : 0;
}

static int fixtures_is_dir(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    return fixtures_join(path, dir, name) == 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* a policy file: <name>.lua, not <name>_spec.lua, a regular file */
static int fixtures_is_policy(const char *dir, const char *name)
{
    size_t len = strlen(name);
    char path[4096];
    struct stat st;
    if (len <= 4 || strcmp(name + len - 4, ".lua") != 0)
        return 0;
    if (len > 9 && strcmp(name + len - 9, "_spec.lua") == 0)
        return 0;
    return fixtures_join(path, dir, name) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The text of dir/file as a JSON string, or JSON null when the file does not exist. */
static json_t *fixtures_file(const char *dir, const char *file)
{
    char path[4096], why[128];
    size_t len = 0;
    char *text = fixtures_join(path, dir, file) ? NULL : util_read_file(path, FIXTURES_FILE_MAX, &len, why, sizeof why);
    if (!text)
        return json_null();
    json_t *s = json_stringn(text, len);
    free(text);
    return s ? s : json_null();
}

/* Runs one case; returns 1 when it passed. Rewrites expected.yaml first when `update`. */
static int fixtures_case(struct lhost *h, const char *policy, const char *dir, const char *casename, int update,
                         FILE *out)
{
    json_t *in = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "policy", policy, "name", casename, "input",
                           fixtures_file(dir, "input.yaml"), "old", fixtures_file(dir, "old.yaml"), "expected",
                           fixtures_file(dir, "expected.yaml"), "partial", fixtures_file(dir, "expected-partial.yaml"));
    char err[4096] = "";
    json_t *res = NULL;
    int passed = 0;
    if (json_is_null(json_object_get(in, "input"))) {
        fprintf(out, "FAIL %s/%s: no input.yaml\n", policy, casename);
        goto done;
    }
    if (!(res = lhost_json_call(h, "fc.fixtures", "run_case", in, 0, err, sizeof err))) {
        fprintf(out, "FAIL %s/%s: %s\n", policy, casename, *err ? err : "out of memory");
        goto done;
    }
    const char *output = json_string_value(json_object_get(res, "output"));
    if (update && output) {
        char path[4096];
        FILE *f = fixtures_join(path, dir, "expected.yaml") ? NULL : fopen(path, "w");
        if (f && fputs(output, f) >= 0 && fclose(f) == 0) {
            fprintf(out, "updated %s\n", path);
            passed = 1;
        } else {
            if (f)
                fclose(f);
            fprintf(out, "FAIL %s/%s: cannot write %s\n", policy, casename, path);
        }
    } else if (json_is_true(json_object_get(res, "ok"))) {
        fprintf(out, "ok %s/%s\n", policy, casename);
        passed = 1;
    } else {
        const char *why = json_string_value(json_object_get(res, "message"));
        fprintf(out, "FAIL %s/%s: %s\n", policy, casename, why ? why : "?");
    }
    json_decref(res);
done:
    json_decref(in);
    return passed;
}

int fixtures_run(struct lhost *h, const char *pattern, const char *update, FILE *out, char *err, size_t errlen)
{
    const char *pdir = lhost_policy_dir(h);
    size_t np = 0, passed = 0, failed = 0;
    int updated = 0;
    char **policies = fixtures_names(pdir, fixtures_is_policy, &np);
    if (!policies) {
        util_set_err(err, errlen, "%s: cannot read the policy directory", pdir);
        return -1;
    }
    for (size_t i = 0; i < np; i++) {
        char policy[256], tdir[4096];
        int pl = snprintf(policy, sizeof policy, "%.*s", (int)(strlen(policies[i]) - 4), policies[i]);
        int tl = snprintf(tdir, sizeof tdir, "%s/testdata/%s", pdir, policy);
        size_t nc = 0;
        char **cases = pl < (int)sizeof policy && tl < (int)sizeof tdir ? fixtures_names(tdir, fixtures_is_dir, &nc)
                                                                      : NULL;
        if (nc == 0) {
            /* every policy is tested: one without cases fails, whatever the pattern */
            fprintf(out, "FAIL %s: no fixtures (no case directory in testdata/%s/)\n", policy, policy);
            failed++;
        }
        for (size_t j = 0; j < nc; j++) {
            char id[600], cdir[4096];
            int il = snprintf(id, sizeof id, "%s/%s", policy, cases[j]);
            int is_update = update && strcmp(update, id) == 0;
            if (!is_update && pattern && !strstr(id, pattern))
                continue;
            if (il >= (int)sizeof id || fixtures_join(cdir, tdir, cases[j])) {
                fprintf(out, "FAIL %s/%s: path too long\n", policy, cases[j]);
                failed++;
                continue;
            }
            updated |= is_update;
            if (fixtures_case(h, policy, cdir, cases[j], is_update, out))
                passed++;
            else
                failed++;
        }
        fixtures_free_names(cases, nc);
    }
    fixtures_free_names(policies, np);
    if (update && !updated) {
        fprintf(out, "FAIL --update %s: no such case (<policy>/<case>)\n", update);
        failed++;
    }
    fprintf(out, "%zu passed, %zu failed\n", passed, failed);
    return failed ? 1 : 0;
}
