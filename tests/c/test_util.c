/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/util: error text, the growing buffer, file reading, RFC 3339 times and
 * byte copies, with concrete values. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport_tap.h"
#include "util.h"

static void test_set_err(void)
{
    char err[8];
    util_set_err(err, sizeof err, "%s %d", "abc", 12345);
    IS_STR(err, "abc 123", "set_err: formats and truncates to errlen");
    util_set_err(NULL, 10, "x");
    util_set_err(err, 0, "x");
    IS_STR(err, "abc 123", "set_err: NULL buffer or errlen 0 does nothing");
}

static void test_buf(void)
{
    util_buf b = {.first = 4};
    IS_INT(util_buf_put(&b, "", 0), 0, "buf: an empty put allocates");
    OK(b.p && b.p[0] == '\0' && b.len == 0 && b.cap == 4, "buf: first allocation of `first` bytes");
    IS_INT(util_buf_str(&b, "hello"), 0, "buf: str");
    IS_INT(util_buf_put(&b, " world!!", 6), 0, "buf: put n bytes");
    IS_STR(b.p, "hello world", "buf: contents NUL-terminated");
    IS_INT(b.len, 11, "buf: len");
    IS_INT(b.cap, 16, "buf: capacity doubles from `first` (4 -> 8 -> 16)");
    IS_INT(util_buf_put(&b, "a\0b", 3), 0, "buf: embedded NUL");
    OK(b.len == 14 && memcmp(b.p + 11, "a\0b", 4) == 0, "buf: bytes kept as given");
    b.len = 0;
    b.p[0] = '\0';
    util_buf_str(&b, "again");
    IS_STR(b.p, "again", "buf: reused after len = 0");
    util_buf_free(&b);
    OK(!b.p && b.len == 0 && b.cap == 0 && b.first == 4, "buf: free zeroes, keeps first");

    util_buf d = {0};
    util_buf_str(&d, "x");
    IS_INT(d.cap, 256, "buf: default first allocation 256 bytes");
    d.len = SIZE_MAX - 1;        /* pretend: the next put would overflow size_t */
    IS_INT(util_buf_put(&d, "yz", 2), -1, "buf: size overflow refused");
    IS_INT(d.oom, 1, "buf: oom set");
    d.len = 1;
    IS_INT(util_buf_str(&d, "more"), -1, "buf: puts after oom do nothing");
    IS_STR(d.p, "x", "buf: contents untouched after oom");
    util_buf_free(&d);
}

static void test_read_file(void)
{
    char path[] = "/tmp/fc_test_util_XXXXXX";
    int fd = mkstemp(path);
    OK(fd >= 0, "read_file: temp file");
    if (fd < 0)
        return;
    char big[9000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    OK(write(fd, big, sizeof big) == (ssize_t)sizeof big, "read_file: 9000 bytes written");
    close(fd);
    size_t len = 0;
    char why[64] = "stale";
    char *t = util_read_file(path, 1 << 20, &len, why, sizeof why);
    OK(t && len == 9000 && memcmp(t, big, 9000) == 0 && t[9000] == '\0',
       "read_file: whole file past the first 4 KiB, NUL-terminated");
    IS_STR(why, "", "read_file: why cleared on success");
    free(t);
    t = util_read_file(path, 8192, &len, why, sizeof why);
    OK(!t, "read_file: over max refused");
    IS_STR(why, "larger than 8192 bytes", "read_file: size reason");
    t = util_read_file("/nonexistent/fc-util", 4096, NULL, why, sizeof why);
    OK(!t, "read_file: missing file");
    IS_STR(why, "No such file or directory", "read_file: strerror reason");
    t = util_read_file("/nonexistent/fc-util", 4096, NULL, NULL, 0);
    OK(!t, "read_file: no why buffer needed");
    FILE *f = fopen(path, "rb");
    OK(f && fseek(f, 8990, SEEK_SET) == 0, "read_stream: file opened at byte 8990");
    t = f ? util_read_stream(f, 4096, &len, why, sizeof why) : NULL;
    OK(t && len == 10 && strcmp(t, "uvwxyzabcd") == 0, "read_stream: the rest of an open stream");
    OK(f && ftell(f) == 9000, "read_stream: stream left open at its end");
    free(t);
    if (f)
        fclose(f);
    unlink(path);
}

static void test_format_time(void)
{
    char buf[40];
    double t = 1796022042.1234567;   /* 2026-11-30T07:00:42.1234567Z */
    IS_INT(util_format_time(t, 0, buf, sizeof buf), 0, "time: 0 digits");
    IS_STR(buf, "2026-11-30T07:00:42Z", "time: metav1.Time shape");
    util_format_time(t, 3, buf, sizeof buf);
    IS_STR(buf, "2026-11-30T07:00:42.123Z", "time: milliseconds, truncated");
    util_format_time(t, 6, buf, sizeof buf);
    IS_STR(buf, "2026-11-30T07:00:42.123456Z", "time: microseconds, truncated not rounded");
    util_format_time(0.9999999, 3, buf, sizeof buf);
    IS_STR(buf, "1970-01-01T00:00:00.999Z", "time: 0.9999999 stays in second 0");
    util_format_time(0, 9, buf, sizeof buf);
    IS_STR(buf, "1970-01-01T00:00:00.000000000Z", "time: 9 digits");
    IS_INT(util_format_time(-1, 3, buf, sizeof buf), -1, "time: negative refused");
    IS_INT(util_format_time(NAN, 3, buf, sizeof buf), -1, "time: NaN refused");
    IS_INT(util_format_time(1e300, 3, buf, sizeof buf), -1, "time: beyond time_t refused");
    IS_INT(util_format_time(t, 10, buf, sizeof buf), -1, "time: 10 digits refused");
    IS_INT(util_format_time(t, 6, buf, 27), -1, "time: 27 bytes too small for microseconds");
    IS_INT(util_format_time(t, 6, buf, 28), 0, "time: 28 bytes fit microseconds");
}

static void test_memdup(void)
{
    char *c = util_memdup("ab\0cd", 5);
    OK(c && memcmp(c, "ab\0cd", 5) == 0 && c[5] == '\0', "memdup: bytes with NULs, NUL after");
    free(c);
    c = util_memdup(NULL, 0);
    IS_STR(c, "", "memdup: 0 bytes gives an empty string");
    free(c);
    OK(util_memdup("x", SIZE_MAX) == NULL, "memdup: SIZE_MAX refused");
}

static void test_parse_uint(void)
{
    unsigned long x = 7;
    IS_INT(util_parse_uint("42", 1, 100, &x), 0, "parse_uint: 42 in 1..100");
    IS_INT((int)x, 42, "parse_uint: value 42");
    IS_INT(util_parse_uint("100", 1, 100, &x), 0, "parse_uint: the maximum itself");
    x = 7;
    IS_INT(util_parse_uint("0", 1, 100, &x), -1, "parse_uint: below the minimum");
    IS_INT(util_parse_uint("101", 1, 100, &x), -1, "parse_uint: above the maximum");
    IS_INT(util_parse_uint("1.5", 1, 100, &x), -1, "parse_uint: a fraction");
    IS_INT(util_parse_uint("1e2", 1, 100, &x), -1, "parse_uint: an exponent");
    IS_INT(util_parse_uint("-1", 0, ULONG_MAX, &x), -1, "parse_uint: a sign (strtoul would wrap it)");
    IS_INT(util_parse_uint(" 5", 1, 100, &x), -1, "parse_uint: a leading space");
    IS_INT(util_parse_uint("", 0, 100, &x), -1, "parse_uint: empty");
    IS_INT(util_parse_uint("99999999999999999999999", 0, ULONG_MAX, &x), -1, "parse_uint: overflow");
    IS_INT((int)x, 7, "parse_uint: *out untouched on failure");
}

int main(void)
{
    test_set_err();
    test_buf();
    test_read_file();
    test_format_time();
    test_memdup();
    test_parse_uint();
    return DONE_TESTING();
}
