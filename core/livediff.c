/* SPDX-License-Identifier: Apache-2.0 */
/* livediff: see livediff.h. */
#include "livediff.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "kube.h"
#include "lhost.h"
#include "lhost_json.h"
#include "util.h"

enum { LIVEDIFF_MAXKINDS = 16 };

struct livediff {
    struct ev_loop *loop;
    kube_client *kc;
    struct lhost *h;
    const kube_kind *kinds[LIVEDIFF_MAXKINDS];
    int by_label[LIVEDIFF_MAXKINDS];
    int any_labels[LIVEDIFF_MAXKINDS]; /* listed without the children's selector (kinds.lua) */
    int nkinds;
    int errors;
};

/* one call run to its end on the loop */
struct livediff_wait {
    int done;
    long status;
    json_t *body;
    char message[1024];
};

static void livediff_done(const kube_result *res, void *ud)
{
    struct livediff_wait *w = ud;
    w->done = 1;
    w->status = res->status;
    w->body = res->body ? json_incref(res->body) : NULL;
    snprintf(w->message, sizeof w->message, "%.1000s", *res->message ? res->message : res->error);
}

/* Runs the loop until the call `c` answered (c NULL: it could not start, err says why). */
static int livediff_run(struct livediff *d, kube_call *c, struct livediff_wait *w, const char *err)
{
    if (!c) {
        snprintf(w->message, sizeof w->message, "%.1000s", err);
        return -1;
    }
    while (!w->done)
        ev_run(d->loop, EVRUN_ONCE);
    return w->status >= 200 && w->status < 300 ? 0 : -1;
}

/* The child kinds of lua/fc/kinds.lua (kinds.watched()). */
static int livediff_kinds(struct livediff *d, char *err, size_t errlen)
{
    char *out = NULL;
    if (lhost_call_json(d->h, "fc.kinds", "watched", NULL, &out, err, errlen))
        return -1;
    json_t *list = json_loads(out, 0, NULL);
    free(out);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if (d->nkinds >= LIVEDIFF_MAXKINDS)
            break;
        const kube_kind *k = kube_kind_define(json_string_value(json_object_get(e, "apiVersion")),
                                              json_string_value(json_object_get(e, "kind")),
                                              json_string_value(json_object_get(e, "resource")), 1, err, errlen);
        if (!k) {
            json_decref(list);
            return -1;
        }
        d->by_label[d->nkinds] = json_is_true(json_object_get(e, "by_label"));
        d->any_labels[d->nkinds] = json_is_true(json_object_get(e, "any_labels"));
        d->kinds[d->nkinds++] = k;
    }
    json_decref(list);
    return 0;
}

/* obj with apiVersion and kind set (list items come without them) */
static void livediff_type(json_t *obj, const kube_kind *k)
{
    if (!json_is_string(json_object_get(obj, "apiVersion")))
        json_object_set_new(obj, "apiVersion", json_string(k->api_version));
    if (!json_is_string(json_object_get(obj, "kind")))
        json_object_set_new(obj, "kind", json_string(k->kind));
}

/* The label selector of the children of the cluster named `name`, as the controller watches
 * them (lua/fc/names.lua, names.selector(name): "app=flink,cluster=<name>") into sel (n bytes).
 * -1 with err (errlen bytes) when the framework fails or the selector does not fit. */
static int livediff_selector(struct livediff *d, const char *name, char *sel, size_t n, char *err, size_t errlen)
{
    json_t *arg = json_string(name);
    json_t *v = lhost_json_call(d->h, "fc.names", "selector", arg, JSON_DECODE_ANY, err, errlen);
    json_decref(arg);
    if (!v)
        return -1;
    int rc = json_is_string(v) && snprintf(sel, n, "%s", json_string_value(v)) < (int)n ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "names.selector(\"%s\") must return a string of fewer than %zu bytes", name, n);
    json_decref(v);
    return rc;
}

/* {<kind>: {<name>: obj}}: the children of `cluster` as the controller's caches hold them
 * (its labels, and its ownerReference uid except for kinds found by label). */
static json_t *livediff_children(struct livediff *d, json_t *cluster)
{
    json_t *meta = json_object_get(cluster, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    json_t *children = json_object();
    char sel[512], path[1024], err[512];
    if (livediff_selector(d, name, sel, sizeof sel, err, sizeof err)) {
        fprintf(stderr, "diff: %s/%s: fc.names: %s\n", ns, name, err);
        d->errors++;
        return children;
    }
    for (int k = 0; k < d->nkinds; k++) {
        json_t *by_name = json_object();
        json_object_set_new(children, d->kinds[k]->kind, by_name);
        struct livediff_wait w = {0};
        if (kube_path(path, sizeof path, d->kinds[k], ns, NULL, NULL) ||
            livediff_run(d, kube_list(d->kc, path, d->any_labels[k] ? NULL : sel, 0, livediff_done, &w, err, sizeof err),
                         &w, err)) {
            fprintf(stderr, "diff: %s/%s: list %s: HTTP %ld: %s\n", ns, name, d->kinds[k]->plural, w.status, w.message);
            d->errors++;
            json_decref(w.body);
            continue;
        }
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(w.body, "items"), i, item)
        {
            int mine = d->by_label[k];
            size_t j;
            json_t *ref;
            json_array_foreach(json_object_get(json_object_get(item, "metadata"), "ownerReferences"), j, ref)
            {
                const char *ruid = json_string_value(json_object_get(ref, "uid"));
                mine |= uid && ruid && strcmp(uid, ruid) == 0;
            }
            const char *n = json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
            if (mine && n) {
                livediff_type(item, d->kinds[k]);
                json_object_set(by_name, n, item);
            }
        }
        json_decref(w.body);
    }
    return children;
}

/* Calls fc.livediff.<fn>(in) and returns its result (NULL after a message on stderr). */
static json_t *livediff_lua(struct livediff *d, const char *fn, json_t *in, const char *what)
{
    char err[4096];
    json_t *res = lhost_json_call(d->h, "fc.livediff", fn, in, 0, err, sizeof err);
    if (!res)
        fprintf(stderr, "diff: %s: %s\n", what, err);
    return res;
}

static int livediff_write(const char *dir, const char *name, const char *text)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0 ? -1 : 0;
    return fclose(f) || rc ? -1 : 0;
}

/* One cluster: its snapshot, the plan, the dry runs, the files under tmp/LIVE and tmp/MERGED. */
static void livediff_cluster(struct livediff *d, json_t *cluster, const char *tmp)
{
    livediff_type(cluster, &kube_kind_flinkcluster);
    json_t *meta = json_object_get(cluster, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    char what[600], err[512], dir[4096];
    snprintf(what, sizeof what, "%s/%s", ns ? ns : "", name ? name : "");
    json_t *children = livediff_children(d, cluster);
    json_t *snap = json_pack("{s:O, s:O, s:{}, s:I, s:{}}", "cluster", cluster, "children", children, "flink", "now",
                             (json_int_t)time(NULL), "dry_runs");
    json_t *plan = livediff_lua(d, "plan", snap, what);
    json_decref(snap);
    if (!plan) {
        d->errors++;
        json_decref(children);
        return;
    }
    json_t *applies = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(plan, "applies"), i, a)
    {
        json_t *obj = json_object_get(a, "object");
        json_t *m = json_object_get(obj, "metadata");
        if (json_is_object(m) && !json_object_get(m, "namespace"))
            json_object_set_new(m, "namespace", json_string(ns));
        char *text = json_dumps(obj, JSON_COMPACT);
        struct livediff_wait w = {0};
        int rc = livediff_run(d, text ? kube_apply_dry_run(d->kc, text, livediff_done, &w, err, sizeof err) : NULL, &w,
                              text ? err : "out of memory");
        free(text);
        if (rc) {
            fprintf(stderr, "diff: %s: %s %s: the API server refuses it: HTTP %ld: %s\n", what,
                    json_string_value(json_object_get(a, "kind")), json_string_value(json_object_get(a, "name")),
                    w.status, w.message);
            d->errors++;
        } else {
            json_array_append_new(applies, json_pack("{s:O, s:O, s:O}", "kind", json_object_get(a, "kind"), "name",
                                                     json_object_get(a, "name"), "merged", w.body));
        }
        json_decref(w.body);
    }
    json_t *in = json_pack("{s:O, s:O, s:o, s:O, s:O?}", "cluster", cluster, "children", children, "applies", applies,
                           "deletes", json_object_get(plan, "deletes"), "status", json_object_get(plan, "status"));
    json_t *files = livediff_lua(d, "files", in, what);
    json_decref(in);
    json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *fname = json_string_value(json_object_get(f, "name"));
        const char *sides[2] = {"LIVE", "MERGED"}, *keys[2] = {"live", "merged"};
        for (int s = 0; fname && s < 2; s++) {
            const char *text = json_string_value(json_object_get(f, keys[s]));
            snprintf(dir, sizeof dir, "%s/%s", tmp, sides[s]);
            if (text && livediff_write(dir, fname, text)) {
                fprintf(stderr, "diff: %s/%s: %s\n", dir, fname, strerror(errno));
                d->errors++;
            }
        }
    }
    if (!files)
        d->errors++;
    json_decref(files);
    json_decref(plan);
    json_decref(children);
}

/* `diff -u -N -r LIVE MERGED` in tmp: its exit status (0 same, 1 differ, 2 trouble). */
static int livediff_exec(const char *tmp)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(tmp) == 0)
            execlp("diff", "diff", "-u", "-N", "-r", "LIVE", "MERGED", (char *)NULL);
        fprintf(stderr, "diff: cannot run diff -u -N: %s\n", strerror(errno));
        _exit(2);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return 2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

static void livediff_usage(FILE *out)
{
    fprintf(out,
            "usage: flink-controller diff [--kubeconfig F] [--context NAME] [--policy-dir DIR]\n"
            "                             [--policy-timeout-ms N] [--policy-memory-mib N] (NAMESPACE/NAME | -A)\n"
            "Shows what the policies of DIR (default: the built-in ones) would change in live\n"
            "FlinkClusters: one reconcile pass each (no Flink answers), every object it would apply\n"
            "dry-run by the API server, as `diff -u` of LIVE/ and MERGED/ (like kubectl diff).\n"
            "Writes nothing. Exit status: 0 no change, 1 changes, 2 error.\n");
}

int livediff_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"kubeconfig", required_argument, NULL, 'k'},
                                             {"context", required_argument, NULL, 'c'},
                                             {"policy-dir", required_argument, NULL, 'p'},
                                             {"policy-timeout-ms", required_argument, NULL, 't'},
                                             {"policy-memory-mib", required_argument, NULL, 'm'},
                                             {"all-namespaces", no_argument, NULL, 'A'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct lhost_opts o = {0};
    const char *kubeconfig = NULL, *context = NULL;
    int all = 0, c;
    unsigned long num;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "Ah", longopts, NULL)) != -1) {
        switch (c) {
        case 'k': kubeconfig = optarg; break;
        case 'c': context = optarg; break;
        case 'p': o.policy_dir = optarg; break;
        case 'A': all = 1; break;
        case 'h': livediff_usage(stdout); return 0;
        case 't':
        case 'm':
            if (util_parse_uint(optarg, 1, c == 't' ? 3600000 : 65536, &num)) {
                fprintf(stderr, "diff: %s: expected a positive integer, got '%s'\n", argv[optind - 1], optarg);
                return 2;
            }
            *(c == 't' ? &o.timeout_ms : &o.memory_mib) = (unsigned)num;
            break;
        default:
            fprintf(stderr, "diff: bad or incomplete option '%s' (see --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    const char *target = optind < argc ? argv[optind] : NULL;
    const char *slash = target ? strchr(target, '/') : NULL;
    if (all == (target != NULL) || optind + (target != NULL) < argc || (target && (!slash || slash == target || !slash[1]))) {
        fprintf(stderr, "diff: give NAMESPACE/NAME or -A (see --help)\n");
        return 2;
    }
    char err[4096], path[1024];
    struct livediff d = {0};
    kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    int code = 2;
    char tmp[] = "/tmp/flink-controller-diff-XXXXXX";
    int have_tmp = 0;
    d.loop = ev_loop_new(EVFLAG_AUTO);
    d.h = lhost_new(&o, err, sizeof err);
    if (!d.loop || !d.h) {
        fprintf(stderr, "diff: %s\n", d.h ? "no event loop" : err);
        goto out;
    }
    if (kube_config_load_default(&cfg, kubeconfig, context, err, sizeof err) ||
        !(d.kc = kube_client_new(d.loop, &cfg, err, sizeof err)) || livediff_kinds(&d, err, sizeof err)) {
        fprintf(stderr, "diff: %s\n", err);
        goto out;
    }
    struct livediff_wait w = {0};
    char ns[256];
    snprintf(ns, sizeof ns, "%.*s", target ? (int)(slash - target) : 0, target ? target : "");
    if (kube_path(path, sizeof path, &kube_kind_flinkcluster, target ? ns : NULL, target ? slash + 1 : NULL, NULL) ||
        livediff_run(&d,
                     target ? kube_get(d.kc, path, livediff_done, &w, err, sizeof err)
                            : kube_list(d.kc, path, NULL, 0, livediff_done, &w, err, sizeof err),
                     &w, err)) {
        fprintf(stderr, "diff: %s: HTTP %ld: %s\n", target ? target : "flinkclusters", w.status, w.message);
        json_decref(w.body);
        goto out;
    }
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "diff: %s: %s\n", tmp, strerror(errno));
        json_decref(w.body);
        goto out;
    }
    have_tmp = 1;
    char sub[64];
    snprintf(sub, sizeof sub, "%s/LIVE", tmp);
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/MERGED", tmp);
    mkdir(sub, 0700);
    if (target) {
        livediff_cluster(&d, w.body, tmp);
    } else {
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(w.body, "items"), i, item) livediff_cluster(&d, item, tmp);
    }
    json_decref(w.body);
    code = livediff_exec(tmp);
    if (d.errors && code < 2)
        code = 2;
out:
    if (have_tmp) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0)
            fprintf(stderr, "diff: could not remove %s\n", tmp);
    }
    if (d.kc)
        kube_client_free(d.kc);
    kube_config_clear(&cfg);
    if (d.h)
        lhost_free(d.h);
    if (d.loop)
        ev_loop_destroy(d.loop);
    return code;
}
