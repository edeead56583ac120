/* SPDX-License-Identifier: Apache-2.0 */
/* core/util: see util.h. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void util_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- growing buffer ------------------------------------------------------ */

int util_buf_put(util_buf *b, const void *s, size_t n)
{
    if (b->oom)
        return -1;
    if (n > SIZE_MAX - 1 - b->len) {
        b->oom = 1;
        return -1;
    }
    size_t need = b->len + n + 1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : (b->first ? b->first : 256);
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return -1;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int util_buf_str(util_buf *b, const char *s)
{
    return util_buf_put(b, s, strlen(s));
}

void util_buf_free(util_buf *b)
{
    size_t first = b->first;
    free(b->p);
    memset(b, 0, sizeof *b);
    b->first = first;
}

/* ---- files --------------------------------------------------------------- */

char *util_read_stream(FILE *f, size_t max, size_t *len_out, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = '\0';
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            if (cap >= max) {
                util_set_err(why, whylen, "larger than %zu bytes", max);
                free(buf);
                buf = NULL;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        errno = 0;
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                util_set_err(why, whylen, "%s", errno ? strerror(errno) : "read error");
                free(buf);
                buf = NULL;
            }
            break;
        }
    }
    if (buf) {
        buf[len] = '\0';
        if (len_out)
            *len_out = len;
    } else if (why && whylen && !*why) {
        util_set_err(why, whylen, "out of memory");
    }
    return buf;
}

char *util_read_file(const char *path, size_t max, size_t *len_out, char *why, size_t whylen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        util_set_err(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    char *buf = util_read_stream(f, max, len_out, why, whylen);
    fclose(f);
    return buf;
}

/* ---- time ------------------------------------------------------------------ */

int util_format_time(double t, int digits, char *buf, size_t n)
{
    static const double scale[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    /* 9e18: below INT64_MAX, so the time_t conversion is defined; gmtime_r refuses
     * what its year cannot hold */
    if (!buf || !n || !isfinite(t) || t < 0 || t >= 9e18 || digits < 0 || digits > 9)
        return -1;
    time_t sec = (time_t)floor(t);
    struct tm tm;
    if (!gmtime_r(&sec, &tm))
        return -1;
    char base[64];
    if (!strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm))
        return -1;
    int w;
    if (digits == 0) {
        w = snprintf(buf, n, "%sZ", base);
    } else {
        long long frac = (long long)floor((t - (double)sec) * scale[digits]);
        long long top = (long long)scale[digits] - 1;
        if (frac > top)
            frac = top;
        if (frac < 0)
            frac = 0;
        w = snprintf(buf, n, "%s.%0*lldZ", base, digits, frac);
    }
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

/* ---- memory ------------------------------------------------------------------ */

char *util_memdup(const void *p, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *c = malloc(n + 1);
    if (!c)
        return NULL;
    if (n)
        memcpy(c, p, n);
    c[n] = '\0';
    return c;
}

int util_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long x = strtoul(s, &end, 10);
    if (errno || *end || x < min || x > max)
        return -1;
    *out = x;
    return 0;
}

int util_tmpfile(char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/fc-XXXXXX", dir) >= (int)sizeof path) {
            errno = ENAMETOOLONG;
        } else if ((fd = mkostemp(path, O_CLOEXEC)) >= 0 && unlink(path) != 0) {
            int e = errno;
            close(fd);
            fd = -1;
            errno = e;
        }
    }
    if (fd < 0)
        util_set_err(err, errlen, "temporary file in %s: %s", dir, strerror(errno));
    return fd;
}
