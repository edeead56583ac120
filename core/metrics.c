/* SPDX-License-Identifier: Apache-2.0 */
/* core/metrics: counters, gauges and histograms with labels, rendered in the
 * Prometheus text exposition format 0.0.4 (see metrics.h). */
#include "metrics.h"
#include "util.h"
#include "version.h"

#include <dirent.h>
#include <lua.h>
#include <math.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct series {
    char **values;          /* nlabels strings */
    double value;           /* counter, gauge; histogram sum */
    uint64_t count;         /* histogram */
    uint64_t *buckets;      /* histogram, per bucket (not cumulative) */
} series;

struct metrics_family {
    metrics_registry *reg;
    metrics_type type;
    char *name, *help;
    size_t nlabels;
    char *labels[METRICS_MAX_LABELS];
    double *bounds;
    char (*bound_text)[32];    /* the le="..." value of each bound */
    size_t nbounds;
    series *series;
    size_t nseries, cap;
    size_t dropped;
    size_t max_series;         /* 0: the registry's */
    struct metrics_family *next;
};

struct metrics_registry {
    size_t max_series;
    metrics_family *head, *tail;
    metrics_family *dropped;   /* counter {family}, or NULL */
};

static void format_value(double v, char *buf, size_t n);

static void family_free(metrics_family *f)
{
    metrics_clear(f);
    free(f->series);
    for (size_t j = 0; j < f->nlabels; j++) free(f->labels[j]);
    free(f->bounds);
    free(f->bound_text);
    free(f->name);
    free(f->help);
    free(f);
}

metrics_registry *metrics_registry_new(size_t max_series, const char *dropped_name)
{
    metrics_registry *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->max_series = max_series ? max_series : METRICS_DEFAULT_MAX_SERIES;
    if (dropped_name) {
        const char *labels[] = { "family" };
        r->dropped = metrics_register(r, METRICS_COUNTER, dropped_name,
                                      "Label combinations refused because their family reached "
                                      "its series cap.",
                                      1, labels, NULL, 0, NULL, 0);
        if (!r->dropped) {
            metrics_registry_free(r);
            return NULL;
        }
    }
    return r;
}

void metrics_registry_free(metrics_registry *r)
{
    if (!r) return;
    metrics_family *f = r->head;
    while (f) {
        metrics_family *next = f->next;
        family_free(f);
        f = next;
    }
    free(r);
}

static int valid_metric_name(const char *s)
{
    if (!s || !*s) return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(p > s && c >= '0' && c <= '9')) return 0;
    }
    return 1;
}

static int valid_label_name(const char *s)
{
    if (!s || !*s || strncmp(s, "__", 2) == 0) return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(p > s && c >= '0' && c <= '9')) return 0;
    }
    return 1;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF):
 * Prometheus refuses a scrape holding an invalid label value. */
static int valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t n;
        unsigned cp;
        if (c < 0x80) { p++; continue; }
        if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; }
        else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; }
        else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; }
        else return 0;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        p += n + 1;
    }
    return 1;
}

metrics_family *metrics_register(metrics_registry *r, metrics_type type, const char *name,
                                 const char *help, size_t nlabels, const char *const *label_names,
                                 const double *buckets, size_t nbuckets, char *err, size_t errlen)
{
    if (!r) { util_set_err(err, errlen, "metrics_register: no registry"); return NULL; }
    if (type != METRICS_COUNTER && type != METRICS_GAUGE && type != METRICS_HISTOGRAM) {
        util_set_err(err, errlen, "metrics_register: unknown type %d", (int)type);
        return NULL;
    }
    if (!valid_metric_name(name)) {
        util_set_err(err, errlen, "metrics_register: bad metric name \"%s\"", name ? name : "(null)");
        return NULL;
    }
    if (metrics_find(r, name)) {
        util_set_err(err, errlen, "metrics_register: %s: already registered", name);
        return NULL;
    }
    if (nlabels > METRICS_MAX_LABELS || (nlabels && !label_names)) {
        util_set_err(err, errlen, "metrics_register: %s: at most %d labels", name, METRICS_MAX_LABELS);
        return NULL;
    }
    for (size_t i = 0; i < nlabels; i++) {
        if (!valid_label_name(label_names[i]) ||
            (type == METRICS_HISTOGRAM && strcmp(label_names[i], "le") == 0)) {
            util_set_err(err, errlen, "metrics_register: %s: bad label name \"%s\"", name,
                    label_names[i] ? label_names[i] : "(null)");
            return NULL;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(label_names[i], label_names[j]) == 0) {
                util_set_err(err, errlen, "metrics_register: %s: duplicate label \"%s\"", name,
                        label_names[i]);
                return NULL;
            }
    }
    if (type == METRICS_HISTOGRAM) {
        if (!buckets || nbuckets == 0) {
            util_set_err(err, errlen, "metrics_register: %s: a histogram needs buckets", name);
            return NULL;
        }
        for (size_t i = 0; i < nbuckets; i++)
            if (!isfinite(buckets[i]) || (i && buckets[i] <= buckets[i - 1])) {
                util_set_err(err, errlen,
                        "metrics_register: %s: buckets must be finite and strictly increasing",
                        name);
                return NULL;
            }
    }
    metrics_family *f = calloc(1, sizeof *f);
    if (!f) goto oom;
    f->reg = r;
    f->type = type;
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    if (!f->name || !f->help) goto oom;
    for (size_t i = 0; i < nlabels; i++) {
        f->labels[i] = strdup(label_names[i]);
        if (!f->labels[i]) goto oom;
        f->nlabels = i + 1;
    }
    if (type == METRICS_HISTOGRAM) {
        f->bounds = malloc(nbuckets * sizeof *f->bounds);
        if (!f->bounds) goto oom;
        memcpy(f->bounds, buckets, nbuckets * sizeof *f->bounds);
        f->nbounds = nbuckets;
        f->bound_text = malloc(nbuckets * sizeof *f->bound_text);
        if (!f->bound_text) goto oom;
        for (size_t i = 0; i < nbuckets; i++)
            format_value(buckets[i], f->bound_text[i], sizeof f->bound_text[i]);
    }
    if (r->tail) r->tail->next = f;
    else r->head = f;
    r->tail = f;
    return f;
oom:
    if (f) family_free(f);
    util_set_err(err, errlen, "metrics_register: out of memory");
    return NULL;
}

const metrics_family *metrics_find(const metrics_registry *r, const char *name)
{
    if (!r || !name) return NULL;
    for (metrics_family *f = r->head; f; f = f->next)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}

static series *lookup(const metrics_family *f, const char *const *values)
{
    for (size_t i = 0; i < f->nseries; i++) {
        size_t j = 0;
        while (j < f->nlabels && strcmp(f->series[i].values[j], values[j]) == 0) j++;
        if (j == f->nlabels) return &f->series[i];
    }
    return NULL;
}

static int values_ok(const metrics_family *f, const char *const *values)
{
    if (f->nlabels && !values) return 0;
    for (size_t j = 0; j < f->nlabels; j++)
        if (!values[j] || !valid_utf8(values[j])) return 0;
    return 1;
}

void metrics_clear(metrics_family *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->nseries; i++) {
        for (size_t j = 0; j < f->nlabels; j++) free(f->series[i].values[j]);
        free(f->series[i].values);
        free(f->series[i].buckets);
    }
    f->nseries = 0;
}

/* A new series for `values` (checked), when under the cap. */
static series *new_series(metrics_family *f, const char *const *values)
{
    if (f->nseries >= (f->max_series ? f->max_series : f->reg->max_series)) {
        f->dropped++;
        metrics_family *d = f->reg->dropped;
        if (d && d != f) {
            const char *v[] = { f->name };
            metrics_inc(d, v);
        }
        return NULL;
    }
    if (f->nseries == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 4;
        series *ns = realloc(f->series, cap * sizeof *ns);
        if (!ns) return NULL;
        f->series = ns;
        f->cap = cap;
    }
    series n = {0};
    n.values = calloc(f->nlabels ? f->nlabels : 1, sizeof *n.values);
    if (!n.values) return NULL;
    if (f->type == METRICS_HISTOGRAM) {
        n.buckets = calloc(f->nbounds, sizeof *n.buckets);
        if (!n.buckets) { free(n.values); return NULL; }
    }
    for (size_t j = 0; j < f->nlabels; j++) {
        n.values[j] = strdup(values[j]);
        if (!n.values[j]) {
            for (size_t k = 0; k < j; k++) free(n.values[k]);
            free(n.values);
            free(n.buckets);
            return NULL;
        }
    }
    f->series[f->nseries] = n;
    return &f->series[f->nseries++];
}

/* The series for `values`, created when new and under the cap. */
static series *get_series(metrics_family *f, const char *const *values)
{
    if (!values_ok(f, values)) return NULL;
    series *s = lookup(f, values);
    if (s) return s;
    return new_series(f, values);
}

void metrics_set_max_series(metrics_family *f, size_t max_series)
{
    if (f) f->max_series = max_series;
}

int metrics_set_new(metrics_family *f, const char *const *values, double value)
{
    if (!f || f->type != METRICS_GAUGE || !values_ok(f, values)) return -1;
    series *s = new_series(f, values);
    if (!s) return -1;
    s->value = value;
    return 0;
}

int metrics_add(metrics_family *f, const char *const *values, double delta)
{
    if (!f || f->type == METRICS_HISTOGRAM || isnan(delta)) return -1;
    if (f->type == METRICS_COUNTER && delta < 0) return -1;
    series *s = get_series(f, values);
    if (!s) return -1;
    s->value += delta;
    return 0;
}

int metrics_inc(metrics_family *f, const char *const *values) { return metrics_add(f, values, 1); }

int metrics_set(metrics_family *f, const char *const *values, double value)
{
    if (!f || f->type != METRICS_GAUGE) return -1;
    series *s = get_series(f, values);
    if (!s) return -1;
    s->value = value;
    return 0;
}

int metrics_observe(metrics_family *f, const char *const *values, double value)
{
    if (!f || f->type != METRICS_HISTOGRAM || isnan(value)) return -1;
    series *s = get_series(f, values);
    if (!s) return -1;
    for (size_t i = 0; i < f->nbounds; i++)
        if (value <= f->bounds[i]) {
            s->buckets[i]++;
            break;
        }
    s->count++;
    s->value += value;
    return 0;
}

double metrics_get(const metrics_family *f, const char *const *values)
{
    if (!f || !values_ok(f, values)) return NAN;
    const series *s = lookup(f, values);
    if (!s) return NAN;
    return f->type == METRICS_HISTOGRAM ? (double)s->count : s->value;
}

size_t metrics_series(const metrics_family *f) { return f ? f->nseries : 0; }
size_t metrics_dropped(const metrics_family *f) { return f ? f->dropped : 0; }

/* ---- rendering ---------------------------------------------------------- */

/* A sample value or bucket bound as Go's strconv.FormatFloat(v, 'g', -1, 64)
 * would read: integers in full, else the shortest %g that reads back. */
static void format_value(double v, char *buf, size_t n)
{
    if (isnan(v)) { snprintf(buf, n, "NaN"); return; }
    if (isinf(v)) { snprintf(buf, n, v > 0 ? "+Inf" : "-Inf"); return; }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {   /* 2^53 */
        snprintf(buf, n, "%lld", (long long)v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* Label values escape backslash, double quote and newline; HELP text
 * escapes backslash and newline (exposition format 0.0.4). */
static void sb_escaped(util_buf *b, const char *s, int quote)
{
    for (const char *p = s; *p; p++) {
        if (*p == '\\') util_buf_put(b, "\\\\", 2);
        else if (*p == '\n') util_buf_put(b, "\\n", 2);
        else if (quote && *p == '"') util_buf_put(b, "\\\"", 2);
        else util_buf_put(b, p, 1);
    }
}

/* `{l1="v1",...[,le="x"]}` or nothing when there are no labels. */
static void sb_labels(util_buf *b, const metrics_family *f, const series *s, const char *le)
{
    if (!f->nlabels && !le) return;
    util_buf_put(b, "{", 1);
    for (size_t j = 0; j < f->nlabels; j++) {
        if (j) util_buf_put(b, ",", 1);
        util_buf_str(b, f->labels[j]);
        util_buf_put(b, "=\"", 2);
        sb_escaped(b, s->values[j], 1);
        util_buf_put(b, "\"", 1);
    }
    if (le) {
        if (f->nlabels) util_buf_put(b, ",", 1);
        util_buf_str(b, "le=\"");
        util_buf_str(b, le);
        util_buf_put(b, "\"", 1);
    }
    util_buf_put(b, "}", 1);
}

static void sb_sample(util_buf *b, const metrics_family *f, const series *s, const char *suffix,
                      const char *le, double v)
{
    char num[40];
    util_buf_str(b, f->name);
    util_buf_str(b, suffix);
    sb_labels(b, f, s, le);
    util_buf_put(b, " ", 1);
    format_value(v, num, sizeof num);
    util_buf_str(b, num);
    util_buf_put(b, "\n", 1);
}

char *metrics_render(const metrics_registry *r, size_t *len)
{
    static const char *const type_names[] = { "counter", "gauge", "histogram" };
    util_buf b = {.first = 1024};
    util_buf_put(&b, "", 0);
    for (const metrics_family *f = r ? r->head : NULL; f; f = f->next) {
        util_buf_str(&b, "# HELP ");
        util_buf_str(&b, f->name);
        util_buf_put(&b, " ", 1);
        sb_escaped(&b, f->help, 0);
        util_buf_str(&b, "\n# TYPE ");
        util_buf_str(&b, f->name);
        util_buf_put(&b, " ", 1);
        util_buf_str(&b, type_names[f->type]);
        util_buf_put(&b, "\n", 1);
        for (size_t i = 0; i < f->nseries; i++) {
            const series *s = &f->series[i];
            if (f->type != METRICS_HISTOGRAM) {
                sb_sample(&b, f, s, "", NULL, s->value);
                continue;
            }
            uint64_t cum = 0;
            for (size_t k = 0; k < f->nbounds; k++) {
                cum += s->buckets[k];
                sb_sample(&b, f, s, "_bucket", f->bound_text[k], (double)cum);
            }
            sb_sample(&b, f, s, "_bucket", "+Inf", (double)s->count);
            sb_sample(&b, f, s, "_sum", NULL, s->value);
            sb_sample(&b, f, s, "_count", NULL, (double)s->count);
        }
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len) *len = b.len;
    return b.p;
}

/* ---- process metrics ------------------------------------------------------ */

int metrics_register_process(metrics_registry *r, metrics_process *p, char *err, size_t errlen)
{
    metrics_process q = {0};
    if (!p) {
        util_set_err(err, errlen, "metrics_register_process: no families");
        return -1;
    }
#define REG(field, type, name, help) \
    if (!(q.field = metrics_register(r, type, name, help, 0, NULL, NULL, 0, err, errlen))) return -1;
    REG(cpu_seconds_total, METRICS_COUNTER, "process_cpu_seconds_total",
        "Total user and system CPU time spent in seconds.");
    REG(resident_memory_bytes, METRICS_GAUGE, "process_resident_memory_bytes", "Resident memory size in bytes.");
    REG(virtual_memory_bytes, METRICS_GAUGE, "process_virtual_memory_bytes", "Virtual memory size in bytes.");
    REG(start_time_seconds, METRICS_GAUGE, "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.");
    REG(open_fds, METRICS_GAUGE, "process_open_fds", "Number of open file descriptors.");
    REG(max_fds, METRICS_GAUGE, "process_max_fds", "Maximum number of open file descriptors.");
#undef REG
    *p = q;
    metrics_process_update(p);
    return 0;
}

/* The system's boot time (btime of /proc/stat), Unix seconds; -1 when unknown. */
static double boot_time(void)
{
    FILE *f = fopen("/proc/stat", "re");
    if (!f) return -1;
    char line[256];
    double bt = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "btime %llu", &v) == 1) {
            bt = (double)v;
            break;
        }
    }
    fclose(f);
    return bt;
}

int metrics_process_update(const metrics_process *p)
{
    if (!p) return -1;
    int rc = 0;
    /* /proc/self/stat (proc(5)): "pid (comm) state ppid ..." where comm may hold spaces and
     * parentheses: the fields are read after its last ')'. Field 14 utime, 15 stime (clock
     * ticks), 22 starttime (ticks after boot), 23 vsize (bytes), 24 rss (pages). */
    char why[128];
    char *stat = util_read_file("/proc/self/stat", 4096, NULL, why, sizeof why);
    const char *rp = stat ? strrchr(stat, ')') : NULL;
    unsigned long long utime, stime, start, vsize;
    long long rss;
    if (rp && sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
                                "%llu %llu %lld", &utime, &stime, &start, &vsize, &rss) == 5) {
        double tck = (double)sysconf(_SC_CLK_TCK);
        double cpu = (double)(utime + stime) / tck;
        double seen = metrics_get(p->cpu_seconds_total, NULL);
        if (isnan(seen)) seen = 0;
        metrics_add(p->cpu_seconds_total, NULL, cpu > seen ? cpu - seen : 0);
        metrics_set(p->virtual_memory_bytes, NULL, (double)vsize);
        metrics_set(p->resident_memory_bytes, NULL, (double)rss * (double)sysconf(_SC_PAGESIZE));
        double bt = boot_time();
        if (bt >= 0) metrics_set(p->start_time_seconds, NULL, bt + (double)start / tck);
        else rc = -1;
    } else {
        rc = -1;
    }
    free(stat);
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') n++;
        closedir(d);
        metrics_set(p->open_fds, NULL, (double)(n ? n - 1 : 0));   /* without the one reading */
    } else {
        rc = -1;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        metrics_set(p->max_fds, NULL, rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur);
    else
        rc = -1;
    return rc;
}

/* ---- families shared by the controller and the webhook -------------------- */

metrics_family *metrics_register_build_info(metrics_registry *r, char *err, size_t errlen)
{
    const char *build[] = { "version", "commit", "lua" };
    metrics_family *f = metrics_register(r, METRICS_GAUGE, "flink_controller_build_info",
        "1, labelled with the release, the commit and the Lua release the binary was built with.", 3,
        build, NULL, 0, err, errlen);
    const char *build_values[] = { FC_VERSION, FC_COMMIT, LUA_RELEASE };
    if (f && metrics_set(f, build_values, 1)) {
        util_set_err(err, errlen, "metrics_register_build_info: out of memory");
        return NULL;
    }
    return f;
}

metrics_family *metrics_register_admissions(metrics_registry *r, char *err, size_t errlen)
{
    const char *op_result[] = { "operation", "result" };
    return metrics_register(r, METRICS_COUNTER, "flink_controller_webhook_admissions_total",
                            "Admission reviews of FlinkClusters answered by operation (CREATE, UPDATE) "
                            "and result (allowed, denied; error: no review answered).",
                            2, op_result, NULL, 0, err, errlen);
}

/* ---- the controller's families ------------------------------------------ */

int metrics_register_controller(metrics_registry *r, metrics_controller *m, char *err,
                                size_t errlen)
{
    static const double reconcile_buckets[] = METRICS_RECONCILE_BUCKETS;
    const char *result[] = { "result" };
    const char *kind_type[] = { "kind", "type" };
    const char *kind[] = { "kind" };
    const char *code_verb[] = { "code", "verb" };
    const char *policy_kind[] = { "policy", "kind" };
    const char *hash[] = { "hash" };
    const char *state[] = { "state" };
    const char *ns_state[] = { "namespace", "state" };
    const char *ns_cluster[] = { "namespace", "cluster" };
    const char *ns_op_result[] = { "namespace", "operation", "result" };
    const char *method_path_code[] = { "method", "path", "code" };
    const char *method_path[] = { "method", "path" };
    const char *shard[] = { "shard" };
    metrics_controller c = {0};
    if (!r || !m) {
        util_set_err(err, errlen, "metrics_register_controller: no registry");
        return -1;
    }
#define REG(field, type, name, help, n, labels, b, nb) \
    if (!(c.field = metrics_register(r, type, name, help, n, labels, b, nb, err, errlen))) return -1;
    REG(reconcile_total, METRICS_COUNTER, "flink_controller_reconcile_total",
        "Reconciles of FlinkCluster keys by result.", 1, result, NULL, 0);
    REG(reconcile_duration, METRICS_HISTOGRAM, "flink_controller_reconcile_duration_seconds",
        "Time from taking a key off the work queue to its last action's answer, in seconds.", 1,
        result, reconcile_buckets, sizeof reconcile_buckets / sizeof reconcile_buckets[0]);
    REG(workqueue_depth, METRICS_GAUGE, "flink_controller_workqueue_depth",
        "Keys ready in the work queue.", 0, NULL, NULL, 0);
    REG(watch_events_total, METRICS_COUNTER, "flink_controller_watch_events_total",
        "Watch events received by kind and event type.", 2, kind_type, NULL, 0);
    REG(watch_restarts_total, METRICS_COUNTER, "flink_controller_watch_restarts_total",
        "Watches restarted (stream ended, error or 410 relist) by kind.", 1, kind, NULL, 0);
    REG(api_requests_total, METRICS_COUNTER, "flink_controller_api_requests_total",
        "Kubernetes API requests by HTTP status code (0: no response) and verb.", 2, code_verb,
        NULL, 0);
    REG(policy_errors_total, METRICS_COUNTER, "flink_controller_policy_errors_total",
        "Policy calls that failed by policy and kind (error, timeout, nomem, badresult, contract).", 2,
        policy_kind, NULL, 0);
    REG(leader, METRICS_GAUGE, "flink_controller_leader",
        "1 while this replica holds the leader Lease, else 0.", 0, NULL, NULL, 0);
    REG(shard_owned, METRICS_GAUGE, "flink_controller_shard_owned",
        "With --shards N > 1: 1 while this replica holds that shard's Lease (flink-controller-shard-<shard>), else 0.", 1, shard, NULL, 0);
    REG(shard_clusters, METRICS_GAUGE, "flink_controller_shard_clusters",
        "With --shards N > 1: FlinkClusters of each shard in this replica's cache.", 1, shard, NULL, 0);
    REG(policy_reloads_total, METRICS_COUNTER, "flink_controller_policy_reloads_total",
        "Policy sets from --policy-configmap checked (compiled, fixtures run) by result.", 1, result,
        NULL, 0);
    REG(policy_set_info, METRICS_GAUGE, "flink_controller_policy_set_info",
        "1 for the policy set serving, labelled with its hash (sha256 of its files, 12 hex).", 1, hash,
        NULL, 0);
    REG(lua_memory_bytes, METRICS_GAUGE, "flink_controller_lua_memory_bytes",
        "Bytes allocated by the Lua state (framework, policies and their garbage not yet collected).",
        0, NULL, NULL, 0);
    REG(cache_objects, METRICS_GAUGE, "flink_controller_cache_objects",
        "Objects in the watch caches by kind.", 1, kind, NULL, 0);
    REG(cache_bytes, METRICS_GAUGE, "flink_controller_cache_bytes",
        "Bytes the cached objects' compact JSON texts take by kind (zstd-compressed ones as stored).", 1, kind, NULL, 0);
    REG(heap_bytes, METRICS_GAUGE, "flink_controller_heap_bytes",
        "Bytes of the process's malloc heap by state: in_use (allocated, mmapped chunks included) "
        "or free (held by malloc, not given back to the system).", 1, state, NULL, 0);
    REG(loop_iterations_total, METRICS_COUNTER, "flink_controller_loop_iterations_total",
        "Iterations of the event loop: each waits for I/O or a timer, then runs what is ready. "
        "Fast growth with little else moving (watch events, requests) is a busy loop.",
        0, NULL, NULL, 0);
    if (!(c.build_info = metrics_register_build_info(r, err, errlen))) return -1;
    REG(clusters, METRICS_GAUGE, "flink_controller_clusters",
        "FlinkClusters by namespace and status.state (Unknown: no state yet), from the watch cache.",
        2, ns_state, NULL, 0);
    REG(jobs, METRICS_GAUGE, "flink_controller_jobs",
        "Jobs of FlinkClusters by namespace and status.components.job.state (clusters without a "
        "job spec not counted).", 2, ns_state, NULL, 0);
    REG(job_restarts, METRICS_GAUGE, "flink_controller_job_restarts",
        "status.components.job.restartCount of each FlinkCluster with a job.", 2, ns_cluster, NULL, 0);
    REG(job_last_savepoint, METRICS_GAUGE, "flink_controller_job_last_savepoint_timestamp_seconds",
        "Unix time of the last successful savepoint (status.components.job.lastSavepointTime); "
        "absent while a cluster has none.", 2, ns_cluster, NULL, 0);
    REG(savepoints_total, METRICS_COUNTER, "flink_controller_savepoints_total",
        "Savepoints (operation savepoint) and stop-with-savepoints (operation stop) the controller "
        "saw end, by result (success or failure).", 3, ns_op_result, NULL, 0);
    REG(flink_requests_total, METRICS_COUNTER, "flink_controller_flink_requests_total",
        "Flink REST calls by method, route template (ids as :jobid, :triggerid, :jarid) and HTTP "
        "status code (0: no answer from the JobManager).", 3, method_path_code, NULL, 0);
    REG(flink_request_duration, METRICS_HISTOGRAM, "flink_controller_flink_request_duration_seconds",
        "Time of Flink REST calls from start to answer (or failure), in seconds.", 2, method_path,
        reconcile_buckets, sizeof reconcile_buckets / sizeof reconcile_buckets[0]);
#undef REG
    if (!(c.webhook_admissions = metrics_register_admissions(r, err, errlen))) return -1;
    if (metrics_register_process(r, &c.process, err, errlen)) return -1;
    metrics_set_max_series(c.clusters, METRICS_CLUSTER_MAX_SERIES);
    metrics_set_max_series(c.jobs, METRICS_CLUSTER_MAX_SERIES);
    metrics_set_max_series(c.job_restarts, METRICS_CLUSTER_MAX_SERIES);
    metrics_set_max_series(c.job_last_savepoint, METRICS_CLUSTER_MAX_SERIES);
    metrics_set_max_series(c.savepoints_total, METRICS_CLUSTER_MAX_SERIES);
    if (metrics_set(c.workqueue_depth, NULL, 0) || metrics_set(c.leader, NULL, 0) ||
        metrics_set(c.lua_memory_bytes, NULL, 0) || metrics_add(c.loop_iterations_total, NULL, 0)) {
        util_set_err(err, errlen, "metrics_register_controller: out of memory");
        return -1;
    }
    *m = c;
    return 0;
}
