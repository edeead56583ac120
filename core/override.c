/* SPDX-License-Identifier: Apache-2.0 */
/* core/override: a policy set checked before use (see override.h). */
#include "override.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <openssl/evp.h>

#include "util.h"

extern char **environ;

/* ---- the files of a set ------------------------------------------------------------------- */

typedef struct ov_list {
    char **paths;
    size_t n, cap;
} ov_list;

static void ov_list_free(ov_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
    l->paths = NULL;
    l->n = l->cap = 0;
}

static int ov_list_add(ov_list *l, const char *path)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->paths, cap * sizeof *p);
        if (!p)
            return -1;
        l->paths = p;
        l->cap = cap;
    }
    if (!(l->paths[l->n] = strdup(path)))
        return -1;
    l->n++;
    return 0;
}

static int ov_ends(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a > b && strcmp(s + a - b, suffix) == 0;
}

/* Adds to l the entries of `<root>/<rel>` (rel "" = root itself) of type `dirs` (1: directories,
 * 0: regular files ending in `suffix`, not in `_spec.lua`), as "<rel>/<name>" ("<name>" at the
 * root). A missing directory adds nothing. */
static int ov_scan(const char *root, const char *rel, int dirs, const char *suffix, ov_list *l, char *err,
                   size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d) {
        if (errno == ENOENT && *rel)
            return 0;
        util_set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char child[4096], full[8192];
        snprintf(child, sizeof child, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, child);
        struct stat sb;
        if (stat(full, &sb) != 0)
            continue;
        int want = dirs ? S_ISDIR(sb.st_mode)
                        : S_ISREG(sb.st_mode) && ov_ends(e->d_name, suffix) && !ov_ends(e->d_name, "_spec.lua");
        if (want && ov_list_add(l, child)) {
            util_set_err(err, errlen, "out of memory");
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}

static int ov_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The relative paths of the set in `dir`, in byte order. */
static int ov_files(const char *dir, ov_list *out, char *err, size_t errlen)
{
    ov_list policies = {0}, cases = {0};
    int rc = ov_scan(dir, "", 0, ".lua", out, err, errlen) || ov_scan(dir, "lib", 0, ".lua", out, err, errlen) ||
             ov_scan(dir, "testdata", 1, NULL, &policies, err, errlen);
    for (size_t i = 0; !rc && i < policies.n; i++)
        rc = ov_scan(dir, policies.paths[i], 1, NULL, &cases, err, errlen);
    for (size_t i = 0; !rc && i < cases.n; i++)
        rc = ov_scan(dir, cases.paths[i], 0, ".yaml", out, err, errlen);
    ov_list_free(&policies);
    ov_list_free(&cases);
    if (rc)
        ov_list_free(out);
    else
        qsort(out->paths, out->n, sizeof *out->paths, ov_cmp);
    return rc ? -1 : 0;
}

static char *ov_read(const char *dir, const char *rel, size_t *len, char *err, size_t errlen)
{
    char path[8192], why[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *text = util_read_file(path, OVERRIDE_FILE_MAX, len, why, sizeof why);
    if (!text)
        util_set_err(err, errlen, "%s: %s", path, why);
    return text;
}

/* Writes `<dir>/<rel>` (parent directories made as needed). */
static int ov_write(const char *dir, const char *rel, const char *text, size_t len, char *err, size_t errlen)
{
    char path[8192];
    int w = snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (w < 0 || (size_t)w >= sizeof path) {
        util_set_err(err, errlen, "%s: path too long", rel);
        return -1;
    }
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
        *p = '/';
        if (bad) {
            util_set_err(err, errlen, "%s: %s", path, strerror(errno));
            return -1;
        }
    }
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(text, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        util_set_err(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
    return ok ? 0 : -1;
}

/* A plan's path must stay inside the set: relative, no "..", no empty part. */
static int ov_safe(const char *rel)
{
    if (!rel || !*rel || rel[0] == '/' || strstr(rel, "//") || ov_ends(rel, "/"))
        return 0;
    for (const char *p = rel; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
        if (strncmp(p, "..", 2) == 0 && (p[2] == '/' || p[2] == '\0'))
            return 0;
    return 1;
}

/* Removes the tree at `path` (depth first; files and directories). */
static void ov_rmtree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char child[8192];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            struct stat sb;
            if (lstat(child, &sb) == 0 && S_ISDIR(sb.st_mode))
                ov_rmtree(child);
            else
                unlink(child);
        }
        closedir(d);
    }
    rmdir(path);
}

void override_remove(const char *dir)
{
    if (!dir || !*dir)
        return;
    char out[8192];
    snprintf(out, sizeof out, "%s.out", dir);
    unlink(out);
    ov_rmtree(dir);
}

/* Before a plan file replaces the built-in policy `<policy>.lua` (top level) of the set in `dir`,
 * keeps the built-in as lib/builtin_<policy>.lua, so that an override can replace one hook and
 * leave the others to the built-in: `local job = require("lib.builtin_job")`, change
 * `job.decide`, `return job`. Other paths, or no such built-in: nothing to do. 0, or -1 (err). */
static int ov_keep_builtin(const char *dir, const char *rel, char *err, size_t errlen)
{
    size_t l = strlen(rel);
    if (strchr(rel, '/') || !ov_ends(rel, ".lua") || l > 200)
        return 0;
    char path[8192], keep[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (access(path, F_OK) != 0)
        return 0;
    snprintf(keep, sizeof keep, "lib/builtin_%s", rel);
    size_t len;
    char *text = ov_read(dir, rel, &len, err, errlen);
    int rc = !text || ov_write(dir, keep, text, len, err, errlen) ? -1 : 0;
    free(text);
    return rc;
}

int override_materialize(const char *base_dir, const char *work_dir, json_t *plan, char *out, size_t n, char *err,
                         size_t errlen)
{
    char dir[4096];
    int w = snprintf(dir, sizeof dir, "%s/flink-controller-policies-XXXXXX", work_dir && *work_dir ? work_dir : "/tmp");
    if (w < 0 || (size_t)w >= sizeof dir || (size_t)w >= n) {
        util_set_err(err, errlen, "work dir path too long");
        return -1;
    }
    if (!mkdtemp(dir)) {
        util_set_err(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    ov_list base = {0};
    int rc = ov_files(base_dir, &base, err, errlen);
    for (size_t i = 0; !rc && i < base.n; i++) {
        size_t len;
        char *text = ov_read(base_dir, base.paths[i], &len, err, errlen);
        rc = !text || ov_write(dir, base.paths[i], text, len, err, errlen);
        free(text);
    }
    ov_list_free(&base);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(plan, "remove"), i, v)
    {
        const char *rel = json_string_value(v);
        char path[8192];
        if (rc)
            break;
        if (!ov_safe(rel)) {
            util_set_err(err, errlen, "plan: bad path to remove");
            rc = 1;
            break;
        }
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        if (unlink(path) != 0 && errno != ENOENT) {
            util_set_err(err, errlen, "%s: %s", path, strerror(errno));
            rc = 1;
        }
    }
    json_array_foreach(json_object_get(plan, "files"), i, v)
    {
        const char *rel = json_string_value(json_object_get(v, "path"));
        json_t *text = json_object_get(v, "text");
        if (rc)
            break;
        if (!ov_safe(rel) || !json_is_string(text)) {
            util_set_err(err, errlen, "plan: a file needs a relative path inside the set and a text");
            rc = 1;
            break;
        }
        rc = ov_keep_builtin(dir, rel, err, errlen) || ov_write(dir, rel, json_string_value(text),
                                                               json_string_length(text), err, errlen)
                 ? 1
                 : 0;
    }
    if (rc) {
        override_remove(dir);
        return -1;
    }
    snprintf(out, n, "%s", dir);
    return 0;
}

int override_hash(const char *dir, char *out, size_t n, char *err, size_t errlen)
{
    if (n < OVERRIDE_HASH_LEN + 1) {
        util_set_err(err, errlen, "override_hash: buffer too small");
        return -1;
    }
    ov_list l = {0};
    if (ov_files(dir, &l, err, errlen))
        return -1;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int rc = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 ? 0 : -1;
    if (rc)
        util_set_err(err, errlen, "sha256: cannot start");
    for (size_t i = 0; !rc && i < l.n; i++) {
        size_t len;
        char *text = ov_read(dir, l.paths[i], &len, err, errlen);
        char size[32];
        int sl = snprintf(size, sizeof size, "%zu", len) + 1;
        rc = !text || EVP_DigestUpdate(md, l.paths[i], strlen(l.paths[i]) + 1) != 1 ||
             EVP_DigestUpdate(md, size, (size_t)sl) != 1 || EVP_DigestUpdate(md, text, len) != 1;
        free(text);
    }
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned sum_len = 0;
    if (!rc && EVP_DigestFinal_ex(md, sum, &sum_len) != 1)
        rc = 1;
    EVP_MD_CTX_free(md);
    ov_list_free(&l);
    if (rc)
        return -1;
    for (int i = 0; i < OVERRIDE_HASH_LEN / 2; i++)
        snprintf(out + 2 * i, 3, "%02x", sum[i]);
    return 0;
}

int override_compile(const char *dir, char *err, size_t errlen)
{
    ov_list l = {0};
    if (ov_files(dir, &l, err, errlen))
        return -1;
    lua_State *L = luaL_newstate();
    int rc = L ? 0 : -1;
    if (!L)
        util_set_err(err, errlen, "out of memory");
    for (size_t i = 0; !rc && i < l.n; i++) {
        if (!ov_ends(l.paths[i], ".lua"))
            continue;
        size_t len;
        char *text = ov_read(dir, l.paths[i], &len, err, errlen);
        char name[4200];
        snprintf(name, sizeof name, "=%s", l.paths[i]);
        if (!text) {
            rc = -1;
        } else if (luaL_loadbufferx(L, text, len, name, "t") != LUA_OK) {
            util_set_err(err, errlen, "%s", lua_tostring(L, -1));
            rc = 1;
        }
        lua_settop(L, 0);
        free(text);
    }
    if (L)
        lua_close(L);
    ov_list_free(&l);
    return rc;
}

/* ---- the fixtures, in a child process -------------------------------------------------------- */

struct override_check {
    struct ev_loop *loop;
    ev_child child;
    ev_timer limit;
    pid_t pid;
    int killed;
    char out[4200];
    override_done_fn done;
    void *ud;
};

static void ov_check_free(override_check *c)
{
    ev_child_stop(c->loop, &c->child);
    ev_timer_stop(c->loop, &c->limit);
    free(c);
}

static void ov_check_report(override_check *c, int status)
{
    size_t len = 0;
    char *text = util_read_file(c->out, OVERRIDE_FILE_MAX, &len, NULL, 0);
    if (c->killed && status == -1) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s\nthe fixtures did not finish within %.0f s\n", text ? text : "",
                 OVERRIDE_CHECK_LIMIT_S);
        c->done(status, msg, c->ud);
    } else {
        c->done(status, text ? text : "", c->ud);
    }
    free(text);
    ov_check_free(c);
}

static void ov_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
    (void)loop;
    (void)revents;
    override_check *c = w->data;
    int st = w->rstatus;
    ov_check_report(c, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void ov_limit_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    override_check *c = w->data;
    c->killed = 1;
    kill(c->pid, SIGKILL); /* the child watcher reports it */
}

override_check *override_check_start(struct ev_loop *loop, const char *dir, unsigned timeout_ms,
                                     unsigned memory_mib, override_done_fn done, void *ud, char *err,
                                     size_t errlen)
{
    if (!loop || !dir || !done) {
        util_set_err(err, errlen, "override_check_start: loop, dir and done are required");
        return NULL;
    }
    override_check *c = calloc(1, sizeof *c);
    if (!c) {
        util_set_err(err, errlen, "out of memory");
        return NULL;
    }
    c->loop = loop;
    c->done = done;
    c->ud = ud;
    snprintf(c->out, sizeof c->out, "%s.out", dir);
    char tmo[16], mem[16];
    snprintf(tmo, sizeof tmo, "%u", timeout_ms ? timeout_ms : 200u);
    snprintf(mem, sizeof mem, "%u", memory_mib ? memory_mib : 64u);
    char *argv[] = {"flink-controller", "test", "--policy-dir", (char *)dir, "--policy-timeout-ms", tmo,
                    "--policy-memory-mib", mem, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, c->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    int rc = posix_spawn(&c->pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        util_set_err(err, errlen, "cannot start flink-controller test: %s", strerror(rc));
        free(c);
        return NULL;
    }
    ev_child_init(&c->child, ov_child_cb, c->pid, 0);
    c->child.data = c;
    ev_child_start(loop, &c->child);
    ev_timer_init(&c->limit, ov_limit_cb, OVERRIDE_CHECK_LIMIT_S, 0);
    c->limit.data = c;
    ev_timer_start(loop, &c->limit);
    return c;
}

void override_check_cancel(override_check *c)
{
    if (!c)
        return;
    kill(c->pid, SIGKILL);
    ov_check_free(c);
}
