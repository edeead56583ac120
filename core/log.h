/* SPDX-License-Identifier: Apache-2.0 */
/* core/log: structured logs, one line per record, to stderr (or a FILE set
 * with log_set_output).
 *
 * Formats (`--log-format text|json`):
 *   json  one JSON object per line, keys in this order: "ts" (RFC 3339 UTC
 *         with milliseconds, "2026-11-30T07:00:42.123Z"), "level" ("debug",
 *         "info", "warn", "error"), "msg", then the caller's key/values as
 *         JSON strings. Encoded with jansson (never escaped by hand).
 *   text  `<ts> <level> <msg> k=v k=v`: msg and values are written bare when
 *         they are non-empty and hold only printable ASCII other than space,
 *         '"', '=' and '\\'; otherwise they are double-quoted with \" \\ \n
 *         \r \t and \xNN escapes (a NUL given with its length too, log_kvn;
 *         bytes >= 0x80 pass through inside quotes).
 * A record below the threshold (log_configure) costs one comparison.
 *
 * Keys (stable: dashboards and alerts may select on them; docs/running.md,
 * "Logs", has the table). "msg" is a short constant phrase ("reconcile
 * failed", "flink request failed", "status write failed"): names, ids,
 * codes, durations and error texts are never in it but in keys:
 *   ts, level, msg    every record
 *   cluster           the FlinkCluster's name   } every line about one
 *   namespace         its namespace             } FlinkCluster, both
 *   job               a Flink job id (32 hex digits)
 *   reason            a CamelCase reason (an Event's) or a short cause
 *   error             an error text (an API server's or Flink's message)
 *   duration_ms       how long a pass / call took, milliseconds
 *   retry_in_ms       when a failed key is tried again, milliseconds
 *   wait_ms           how long a pass waits for the cache, milliseconds
 *   http_code         an HTTP status (0: no answer)
 *   method, path      a Flink REST call ("GET", "/jobs/overview")
 *   action            a Kubernetes write ("apply StatefulSet wc-jobmanager",
 *                     "patch status", "create event JobSubmitted")
 *   kind              a Kubernetes kind or resource (a watch)
 *   event_type        an Event's type ("Normal", "Warning"); its reason is
 *                     "reason", its text "message"
 *   attempt, count    small counters
 * and a few of their own in single modules (lease, identity, secret, hash,
 * port, ...; the table lists them). In JSON the values of the numeric keys
 * (log_key_numeric: duration_ms, retry_in_ms, wait_ms, http_code, attempt,
 * count, port, ...) are JSON numbers when the caller's string is a whole
 * decimal number ("12", "-3", "1.5"), else strings like every other key.
 *
 * Keys "ts", "level" and "msg" given by the caller are written as
 * "field.ts", "field.level", "field.msg" so they never clobber the record's
 * own. In log_kv a NULL value is written as JSON null / text `k=<nil>`; in
 * the variadic forms NULL ends the list, so a key left without a value
 * gets "(MISSING)". Invalid UTF-8 in JSON output becomes '?' per byte
 * >= 0x80.
 *
 * The logger is process-wide state (the controller has one loop, no
 * threads). Nothing here aborts: on out-of-memory or an encoding failure
 * the record is dropped.
 */
#ifndef FC_LOG_H
#define FC_LOG_H

#include <stddef.h>
#include <stdio.h>

typedef enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 } log_level;
typedef enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON = 1 } log_format;

/* "text" / "json" -> *out; returns 0, or -1 for anything else. */
int log_parse_format(const char *s, log_format *out);
/* "debug" / "info" / "warn" (or "warning") / "error" -> *out; 0 or -1. */
int log_parse_level(const char *s, log_level *out);
/* "debug", "info", "warn", "error" ("?" when out of range). */
const char *log_level_name(log_level level);

/* Sets the format and the threshold (records below it are dropped).
 * Defaults: text, info. */
void log_configure(log_format format, log_level threshold);
/* Where lines go; NULL restores stderr. Each line is written with one
 * fwrite and flushed. */
void log_set_output(FILE *f);
/* Wall clock for "ts" in Unix seconds (tests); NULL restores the real
 * clock (clock_gettime CLOCK_REALTIME). */
void log_set_clock(double (*now)(void *ud), void *ud);
/* 1 when a record at `level` would be written. */
int log_enabled(log_level level);

/* Formats one record into a malloc'd, NUL-terminated line ending in '\n'
 * (caller frees), whatever the threshold. `kvs` holds 2*npairs strings
 * (key, value, key, value...). Returns NULL on out-of-memory or a NULL msg. */
char *log_format_line(log_format format, double ts, log_level level, const char *msg,
                      size_t npairs, const char *const *kvs);

/* As log_format_line, with lengths: msg is `msglen` bytes and value i (kvs[2*i+1]) lens[i]
 * bytes (lens NULL: each value's strlen). A NUL inside (a JSON string's "\u0000", e.g. in a
 * name or a policy's message) is then written like any control byte -- text `"a\x00b"`, JSON
 * "a\u0000b" -- instead of cutting the line there. */
char *log_format_line_n(log_format format, double ts, log_level level, const char *msg, size_t msglen,
                        size_t npairs, const char *const *kvs, const size_t *lens);

/* 1 when `key` is one of the numeric keys above (JSON numbers), else 0 (NULL too). */
int log_key_numeric(const char *key);

/* Writes one record with `npairs` key/value pairs from `kvs`. */
void log_kv(log_level level, const char *msg, size_t npairs, const char *const *kvs);
/* log_kv with the lengths of log_format_line_n. */
void log_kvn(log_level level, const char *msg, size_t msglen, size_t npairs, const char *const *kvs,
             const size_t *lens);

/* Convenience forms: the variadic arguments are const char * key, value,
 * ..., terminated by NULL:
 *   log_info("reconciled", "cluster", key, "duration_ms", buf, NULL);
 * At most 32 pairs are taken. */
void log_msg(log_level level, const char *msg, ...) __attribute__((sentinel));
void log_debug(const char *msg, ...) __attribute__((sentinel));
void log_info(const char *msg, ...) __attribute__((sentinel));
void log_warn(const char *msg, ...) __attribute__((sentinel));
void log_error(const char *msg, ...) __attribute__((sentinel));

#endif
