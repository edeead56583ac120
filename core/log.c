/* SPDX-License-Identifier: Apache-2.0 */
/* core/log: structured logs (see log.h for the formats). */
#include "log.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_MAX_PAIRS 32

static struct {
    log_format format;
    log_level threshold;
    FILE *out;                       /* NULL = stderr */
    double (*now)(void *ud);
    void *now_ud;
} g_log = { LOG_FORMAT_TEXT, LOG_INFO, NULL, NULL, NULL };

static const char *const level_names[] = { "debug", "info", "warn", "error" };

int log_parse_format(const char *s, log_format *out)
{
    if (!s || !out) return -1;
    if (strcmp(s, "text") == 0) { *out = LOG_FORMAT_TEXT; return 0; }
    if (strcmp(s, "json") == 0) { *out = LOG_FORMAT_JSON; return 0; }
    return -1;
}

int log_parse_level(const char *s, log_level *out)
{
    if (!s || !out) return -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(s, level_names[i]) == 0) { *out = (log_level)i; return 0; }
    if (strcmp(s, "warning") == 0) { *out = LOG_WARN; return 0; }
    return -1;
}

const char *log_level_name(log_level level)
{
    return ((int)level >= 0 && (int)level < 4) ? level_names[level] : "?";
}

void log_configure(log_format format, log_level threshold)
{
    g_log.format = format == LOG_FORMAT_JSON ? LOG_FORMAT_JSON : LOG_FORMAT_TEXT;
    g_log.threshold = threshold;
}

void log_set_output(FILE *f) { g_log.out = f; }

void log_set_clock(double (*now)(void *ud), void *ud)
{
    g_log.now = now;
    g_log.now_ud = ud;
}

int log_enabled(log_level level) { return level >= g_log.threshold; }

static double wall_now(void)
{
    if (g_log.now) return g_log.now(g_log.now_ud);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* "2026-11-30T07:00:42.123Z" (RFC 3339, UTC, milliseconds, truncated); a time that is not
 * finite or negative is written as the epoch. */
static void format_ts(double t, char *buf, size_t n)
{
    if (!isfinite(t) || t < 0) t = 0;
    if (util_format_time(t, 3, buf, n) != 0)
        snprintf(buf, n, "1970-01-01T00:00:00.000Z");
}

/* ---- text format (built in a util_buf) ----------------------------- */

static int needs_quotes(const char *s, size_t n)
{
    if (!n) return 1;
    for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)s + n; p++)
        if (*p <= ' ' || *p >= 0x7f || *p == '"' || *p == '=' || *p == '\\') return 1;
    return 0;
}

/* A msg or value of n bytes in the text format: bare when safe, else quoted (a NUL inside is
 * \x00 like any other control byte). */
static void sb_text_value(util_buf *b, const char *s, size_t n)
{
    if (!s) { util_buf_str(b, "<nil>"); return; }
    if (!needs_quotes(s, n)) { util_buf_put(b, s, n); return; }
    util_buf_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)s + n; p++) {
        char esc[8];
        switch (*p) {
        case '"': util_buf_put(b, "\\\"", 2); break;
        case '\\': util_buf_put(b, "\\\\", 2); break;
        case '\n': util_buf_put(b, "\\n", 2); break;
        case '\r': util_buf_put(b, "\\r", 2); break;
        case '\t': util_buf_put(b, "\\t", 2); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                snprintf(esc, sizeof esc, "\\x%02x", *p);
                util_buf_str(b, esc);
            } else {
                util_buf_put(b, (const char *)p, 1);
            }
        }
    }
    util_buf_put(b, "\"", 1);
}

/* A key in the text format: keys are the caller's identifiers; anything
 * unsafe in one is replaced by '_' so `k=v` stays parseable. */
static void sb_text_key(util_buf *b, const char *k)
{
    if (!*k) { util_buf_str(b, "_"); return; }
    for (const unsigned char *p = (const unsigned char *)k; *p; p++) {
        char c = (*p <= ' ' || *p >= 0x7f || *p == '"' || *p == '=' || *p == '\\') ? '_' : (char)*p;
        util_buf_put(b, &c, 1);
    }
}

/* The keys whose values are numbers (log.h, "Keys"). */
static const char *const numeric_keys[] = {
    "duration_ms", "retry_in_ms", "wait_ms", "http_code", "attempt", "count", "port", "health_port",
    "metrics_port", "generation", "workers", "signal", "in_flight", "objects", "actions", "events",
    "reconciles", "reconciles_failed", "writes", "writes_failed",
};

int log_key_numeric(const char *key)
{
    if (!key) return 0;
    for (size_t i = 0; i < sizeof numeric_keys / sizeof *numeric_keys; i++)
        if (strcmp(key, numeric_keys[i]) == 0) return 1;
    return 0;
}

/* The n bytes at s as a JSON number when they are one whole decimal number (an integer when
 * there is no '.', 'e' or 'E' and it fits json_int_t); NULL otherwise. */
static json_t *json_number_of(const char *s, size_t n)
{
    char buf[64];
    if (!n || n >= sizeof buf) return NULL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!strchr("-0123456789", buf[0])) return NULL;   /* no " 1", "+1", "nan", "inf" */
    char *end;
    if (!strpbrk(buf, ".eE")) {
        errno = 0;
        long long v = strtoll(buf, &end, 10);
        if (*end == '\0' && errno == 0) return json_integer((json_int_t)v);
    }
    errno = 0;
    double d = strtod(buf, &end);
    if (*end != '\0' || errno != 0 || !isfinite(d)) return NULL;
    return json_real(d);
}

static int reserved_key(const char *k)
{
    return strcmp(k, "ts") == 0 || strcmp(k, "level") == 0 || strcmp(k, "msg") == 0;
}

/* The length of value i: lens[i], else its strlen (0 for NULL). */
static size_t value_len(const char *const *kvs, const size_t *lens, size_t i)
{
    const char *v = kvs[2 * i + 1];
    return !v ? 0 : lens ? lens[i] : strlen(v);
}

static char *format_text(const char *ts, log_level level, const char *msg, size_t msglen, size_t npairs,
                         const char *const *kvs, const size_t *lens)
{
    util_buf b = {.first = 128};
    util_buf_str(&b, ts);
    util_buf_put(&b, " ", 1);
    util_buf_str(&b, log_level_name(level));
    util_buf_put(&b, " ", 1);
    sb_text_value(&b, msg, msglen);
    for (size_t i = 0; i < npairs; i++) {
        const char *k = kvs[2 * i] ? kvs[2 * i] : "(MISSING)";
        util_buf_put(&b, " ", 1);
        if (reserved_key(k)) util_buf_str(&b, "field.");
        sb_text_key(&b, k);
        util_buf_put(&b, "=", 1);
        sb_text_value(&b, kvs[2 * i + 1], value_len(kvs, lens, i));
    }
    util_buf_put(&b, "\n", 1);
    if (b.oom) { free(b.p); return NULL; }
    return b.p;
}

/* A JSON string of the n bytes at s (a NUL among them is kept: json_dumps writes \u0000);
 * invalid UTF-8 (which jansson refuses) becomes a copy with every byte >= 0x80 replaced by '?'.
 * NULL on OOM. */
static json_t *json_string_lossy(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    if (j) return j;
    char *c = malloc(n + 1);
    if (!c) return NULL;
    for (size_t i = 0; i < n; i++) c[i] = ((unsigned char)s[i] >= 0x80) ? '?' : s[i];
    c[n] = '\0';
    j = json_stringn(c, n);
    free(c);
    return j;
}

static char *format_json(const char *ts, log_level level, const char *msg, size_t msglen, size_t npairs,
                         const char *const *kvs, const size_t *lens)
{
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "ts", json_string(ts));
    bad |= json_object_set_new(o, "level", json_string(log_level_name(level)));
    bad |= json_object_set_new(o, "msg", json_string_lossy(msg, msglen));
    for (size_t i = 0; i < npairs && !bad; i++) {
        const char *k = kvs[2 * i] ? kvs[2 * i] : "(MISSING)";
        const char *v = kvs[2 * i + 1];
        char key[256];
        snprintf(key, sizeof key, "%s%s", reserved_key(k) ? "field." : "", k);
        json_t *jk = json_string_lossy(key, strlen(key));   /* a valid UTF-8 key */
        if (!jk) { bad = 1; break; }
        size_t vn = value_len(kvs, lens, i);
        json_t *jv = !v ? json_null() : log_key_numeric(key) ? json_number_of(v, vn) : NULL;
        if (!jv) jv = json_string_lossy(v, vn);
        bad |= json_object_set_new(o, json_string_value(jk), jv);
        json_decref(jk);
    }
    /* 15 significant digits: a value written as "5.1" is printed 5.1, not 5.0999999999999996 */
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(o);
    if (!text) return NULL;
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) { free(text); return NULL; }
    line[n] = '\n';
    line[n + 1] = '\0';
    return line;
}

char *log_format_line_n(log_format format, double ts, log_level level, const char *msg, size_t msglen,
                        size_t npairs, const char *const *kvs, const size_t *lens)
{
    if (!msg || (npairs && !kvs)) return NULL;
    char tsbuf[40];
    format_ts(ts, tsbuf, sizeof tsbuf);
    return format == LOG_FORMAT_JSON ? format_json(tsbuf, level, msg, msglen, npairs, kvs, lens)
                                     : format_text(tsbuf, level, msg, msglen, npairs, kvs, lens);
}

char *log_format_line(log_format format, double ts, log_level level, const char *msg,
                      size_t npairs, const char *const *kvs)
{
    return log_format_line_n(format, ts, level, msg, msg ? strlen(msg) : 0, npairs, kvs, NULL);
}

void log_kvn(log_level level, const char *msg, size_t msglen, size_t npairs, const char *const *kvs,
             const size_t *lens)
{
    if (!log_enabled(level)) return;
    char *line = log_format_line_n(g_log.format, wall_now(), level, msg, msglen, npairs, kvs, lens);
    if (!line) return;
    FILE *out = g_log.out ? g_log.out : stderr;
    fwrite(line, 1, strlen(line), out);   /* escaped: the line itself holds no NUL */
    fflush(out);
    free(line);
}

void log_kv(log_level level, const char *msg, size_t npairs, const char *const *kvs)
{
    log_kvn(level, msg, msg ? strlen(msg) : 0, npairs, kvs, NULL);
}

static void log_va(log_level level, const char *msg, va_list ap)
{
    if (!log_enabled(level)) return;
    const char *kvs[2 * LOG_MAX_PAIRS];
    size_t n = 0;
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k) break;
        if (n / 2 >= LOG_MAX_PAIRS) continue;   /* drain the rest, keep the first 32 */
        kvs[n++] = k;
        const char *v = va_arg(ap, const char *);
        if (!v) { kvs[n++] = "(MISSING)"; break; }
        kvs[n++] = v;
    }
    log_kv(level, msg, n / 2, kvs);
}

void log_msg(log_level level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    log_va(level, msg, ap);
    va_end(ap);
}

#define LOG_LEVEL_FN(fn, lvl) \
    void fn(const char *msg, ...) \
    { \
        va_list ap; \
        va_start(ap, msg); \
        log_va(lvl, msg, ap); \
        va_end(ap); \
    }

LOG_LEVEL_FN(log_debug, LOG_DEBUG)
LOG_LEVEL_FN(log_info, LOG_INFO)
LOG_LEVEL_FN(log_warn, LOG_WARN)
LOG_LEVEL_FN(log_error, LOG_ERROR)
