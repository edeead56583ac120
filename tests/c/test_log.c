/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/log: both formats byte for byte with a fixed clock,
 * quoting, reserved keys, thresholds and the variadic forms. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "transport_tap.h"

static double fixed_clock(void *ud) { return *(double *)ud; }

/* Reads what was written to the tmpfile since the last call. */
static char *drain(FILE *f)
{
    static long pos;
    fflush(f);
    long end = ftell(f);
    char *buf = calloc(1, (size_t)(end - pos) + 1);
    fseek(f, pos, SEEK_SET);
    size_t got = fread(buf, 1, (size_t)(end - pos), f);
    buf[got] = '\0';
    fseek(f, end, SEEK_SET);
    pos = end;
    return buf;
}

int main(void)
{
    /* 2026-11-30T07:00:42.123Z */
    double t = 1796022042.1234;
    char *line;
    json_t *o;

    line = log_format_line(LOG_FORMAT_TEXT, t, LOG_INFO, "reconciled", 2,
                           (const char *[]){ "cluster", "default/wc", "duration_ms", "12" });
    IS_STR(line, "2026-11-30T07:00:42.123Z info reconciled cluster=default/wc duration_ms=12\n",
           "text: bare words");
    free(line);

    line = log_format_line(LOG_FORMAT_TEXT, t, LOG_WARN, "apply failed", 3,
                           (const char *[]){ "err", "a \"b\"\\c\nd", "empty", "", "eq", "a=b" });
    IS_STR(line,
           "2026-11-30T07:00:42.123Z warn \"apply failed\" err=\"a \\\"b\\\"\\\\c\\nd\" empty=\"\" "
           "eq=\"a=b\"\n",
           "text: quoting of msg and values");
    free(line);

    line = log_format_line(LOG_FORMAT_TEXT, 0.9999, LOG_ERROR, "x", 2,
                           (const char *[]){ "ctl", "\x01\t", "nil", NULL });
    IS_STR(line, "1970-01-01T00:00:00.999Z error x ctl=\"\\x01\\t\" nil=<nil>\n",
           "text: control bytes, NULL value, ms truncated not rounded");
    free(line);

    line = log_format_line(LOG_FORMAT_TEXT, t, LOG_DEBUG, "m", 2,
                           (const char *[]){ "msg", "shadow", "bad key", "v" });
    IS_STR(line, "2026-11-30T07:00:42.123Z debug m field.msg=shadow bad_key=v\n",
           "text: reserved key prefixed, unsafe key bytes replaced");
    free(line);

    line = log_format_line(LOG_FORMAT_JSON, t, LOG_INFO, "reconciled", 2,
                           (const char *[]){ "cluster", "default/wc", "duration_ms", "12" });
    IS_STR(line,
           "{\"ts\":\"2026-11-30T07:00:42.123Z\",\"level\":\"info\",\"msg\":\"reconciled\","
           "\"cluster\":\"default/wc\",\"duration_ms\":12}\n",
           "json: one compact object per line, keys in order, duration_ms a number");
    free(line);

    /* the stable keys (log.h, "Keys"): numeric ones are JSON numbers when the value is one whole
     * decimal number, strings otherwise; every other key stays a string */
    OK(log_key_numeric("duration_ms") && log_key_numeric("retry_in_ms") && log_key_numeric("wait_ms") &&
           log_key_numeric("http_code") && log_key_numeric("attempt") && log_key_numeric("count"),
       "numeric keys: duration_ms retry_in_ms wait_ms http_code attempt count");
    OK(!log_key_numeric("cluster") && !log_key_numeric("namespace") && !log_key_numeric("job") &&
           !log_key_numeric("reason") && !log_key_numeric("error") && !log_key_numeric("msg") &&
           !log_key_numeric(NULL),
       "string keys: cluster namespace job reason error msg (and NULL)");
    line = log_format_line(LOG_FORMAT_JSON, t, LOG_WARN, "flink request failed", 9,
                           (const char *[]){ "cluster", "wc", "namespace", "team-a", "job",
                                             "0123456789abcdef0123456789abcdef", "http_code", "503",
                                             "retry_in_ms", "12.5", "duration_ms", "5.1", "attempt", "3x",
                                             "count", " 4", "wait_ms", "nan" });
    IS_STR(line,
           "{\"ts\":\"2026-11-30T07:00:42.123Z\",\"level\":\"warn\",\"msg\":\"flink request failed\","
           "\"cluster\":\"wc\",\"namespace\":\"team-a\",\"job\":\"0123456789abcdef0123456789abcdef\","
           "\"http_code\":503,\"retry_in_ms\":12.5,\"duration_ms\":5.1,\"attempt\":\"3x\",\"count\":\" 4\","
           "\"wait_ms\":\"nan\"}\n",
           "json: numeric keys as numbers (integer, real as written: 5.1), strings when not one whole number");
    free(line);
    line = log_format_line(LOG_FORMAT_JSON, t, LOG_INFO, "m", 3,
                           (const char *[]){ "http_code", "99999999999999999999999", "duration_ms", "",
                                             "count", NULL });
    o = line ? json_loads(line, 0, NULL) : NULL;
    OK(json_is_real(json_object_get(o, "http_code")), "json: an integer past json_int_t is a real");
    IS_STR(json_string_value(json_object_get(o, "duration_ms")), "", "json: an empty numeric value is \"\"");
    OK(json_is_null(json_object_get(o, "count")), "json: a NULL numeric value is null");
    json_decref(o);
    free(line);
    line = log_format_line(LOG_FORMAT_TEXT, t, LOG_INFO, "reconciled", 3,
                           (const char *[]){ "cluster", "wc", "namespace", "team-a", "duration_ms", "1.5" });
    IS_STR(line, "2026-11-30T07:00:42.123Z info reconciled cluster=wc namespace=team-a duration_ms=1.5\n",
           "text: the same keys, msg then key=value");
    free(line);

    line = log_format_line(LOG_FORMAT_JSON, t, LOG_ERROR, "quote \" and \n", 3,
                           (const char *[]){ "level", "x", "bad", "\xff\xfe ok", "nil", NULL });
    json_error_t jerr;
    o = line ? json_loads(line, 0, &jerr) : NULL;
    OK(o != NULL, "json: line parses back");
    IS_STR(json_string_value(json_object_get(o, "msg")), "quote \" and \n", "json: msg round-trips");
    IS_STR(json_string_value(json_object_get(o, "level")), "error", "json: level not clobbered");
    IS_STR(json_string_value(json_object_get(o, "field.level")), "x", "json: caller's level kept aside");
    IS_STR(json_string_value(json_object_get(o, "bad")), "?? ok", "json: invalid UTF-8 made lossy");
    OK(json_is_null(json_object_get(o, "nil")), "json: NULL value is null");
    OK(line && strchr(line, '\n') == line + strlen(line) - 1, "json: exactly one newline, at the end");
    json_decref(o);
    free(line);

    OK(log_format_line(LOG_FORMAT_TEXT, t, LOG_INFO, NULL, 0, NULL) == NULL, "NULL msg refused");

    /* a NUL inside a message or a value (a name "a\u0000b" from JSON), given with its length:
     * escaped, and the rest of the line is there */
    static const char nul_msg[] = "event Warning SpecInvalid: a\0b: metadata.name: bad";
    static const char nul_name[] = "team-a/a\0b";
    const size_t nul_lens[] = { sizeof nul_name - 1, 2 };
    line = log_format_line_n(LOG_FORMAT_TEXT, t, LOG_WARN, nul_msg, sizeof nul_msg - 1, 2,
                             (const char *[]){ "cluster", nul_name, "n", "42" }, nul_lens);
    IS_STR(line, "2026-11-30T07:00:42.123Z warn \"event Warning SpecInvalid: a\\x00b: metadata.name: bad\" "
           "cluster=\"team-a/a\\x00b\" n=42\n", "text: a NUL is \\x00, nothing after it is lost");
    free(line);
    line = log_format_line_n(LOG_FORMAT_JSON, t, LOG_WARN, nul_msg, sizeof nul_msg - 1, 2,
                             (const char *[]){ "cluster", nul_name, "n", "42" }, nul_lens);
    IS_STR(line, "{\"ts\":\"2026-11-30T07:00:42.123Z\",\"level\":\"warn\","
           "\"msg\":\"event Warning SpecInvalid: a\\u0000b: metadata.name: bad\","
           "\"cluster\":\"team-a/a\\u0000b\",\"n\":\"42\"}\n", "json: a NUL is \\u0000, nothing after it is lost");
    free(line);

    log_format fmt;
    log_level lvl;
    OK(log_parse_format("json", &fmt) == 0 && fmt == LOG_FORMAT_JSON, "parse format json");
    OK(log_parse_format("text", &fmt) == 0 && fmt == LOG_FORMAT_TEXT, "parse format text");
    OK(log_parse_format("xml", &fmt) == -1, "parse format refuses xml");
    OK(log_parse_level("warning", &lvl) == 0 && lvl == LOG_WARN, "parse level warning");
    OK(log_parse_level("debug", &lvl) == 0 && lvl == LOG_DEBUG, "parse level debug");
    OK(log_parse_level("trace", &lvl) == -1, "parse level refuses trace");

    /* the process logger */
    FILE *f = tmpfile();
    log_set_output(f);
    log_set_clock(fixed_clock, &t);
    log_configure(LOG_FORMAT_TEXT, LOG_INFO);
    log_debug("hidden", "k", "v", NULL);
    OK(!log_enabled(LOG_DEBUG) && log_enabled(LOG_WARN), "threshold info: debug off, warn on");
    char *out = drain(f);
    IS_STR(out, "", "debug below threshold writes nothing");
    free(out);
    log_info("cache synced", "kind", "StatefulSet", "objects", "3", NULL);
    log_warn("odd", "cluster", "ns/a", "dangling", NULL);
    out = drain(f);
    IS_STR(out,
           "2026-11-30T07:00:42.123Z info \"cache synced\" kind=StatefulSet objects=3\n"
           "2026-11-30T07:00:42.123Z warn odd cluster=ns/a dangling=(MISSING)\n",
           "variadic forms, missing value");
    free(out);
    log_configure(LOG_FORMAT_JSON, LOG_DEBUG);
    log_debug("d", NULL);
    log_msg(LOG_ERROR, "e", "cluster", "ns/b", NULL);
    out = drain(f);
    IS_STR(out,
           "{\"ts\":\"2026-11-30T07:00:42.123Z\",\"level\":\"debug\",\"msg\":\"d\"}\n"
           "{\"ts\":\"2026-11-30T07:00:42.123Z\",\"level\":\"error\",\"msg\":\"e\",\"cluster\":\"ns/b\"}\n",
           "json through the process logger");
    free(out);
    /* more than 32 pairs: the first 32 are kept */
    log_info("many", "k0", "0", "k1", "1", "k2", "2", "k3", "3", "k4", "4", "k5", "5", "k6", "6",
             "k7", "7", "k8", "8", "k9", "9", "k10", "10", "k11", "11", "k12", "12", "k13", "13",
             "k14", "14", "k15", "15", "k16", "16", "k17", "17", "k18", "18", "k19", "19", "k20",
             "20", "k21", "21", "k22", "22", "k23", "23", "k24", "24", "k25", "25", "k26", "26",
             "k27", "27", "k28", "28", "k29", "29", "k30", "30", "k31", "31", "k32", "32", "k33",
             "33", NULL);
    out = drain(f);
    o = json_loads(out, 0, &jerr);
    IS_INT(json_object_size(o), 3 + 32, "33 pairs: 32 kept");
    IS_STR(json_string_value(json_object_get(o, "k31")), "31", "last kept pair");
    OK(json_object_get(o, "k32") == NULL, "33rd pair dropped");
    json_decref(o);
    free(out);
    log_set_output(NULL);
    log_set_clock(NULL, NULL);
    fclose(f);
    return DONE_TESTING();
}
