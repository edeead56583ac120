/* SPDX-License-Identifier: Apache-2.0 */
/* core/util: small helpers that several C modules share (error text, a growing string
 * buffer, reading a file, RFC 3339 timestamps, copying bytes).
 *
 * Plain C and libc only (no libev, curl, jansson or Lua), so that any object, including the
 * Lua C modules built as .so files (build/lib/fc/<name>.so), may link util.o. Nothing here
 * aborts: failures are return values. */
#ifndef FC_UTIL_H
#define FC_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* printf-formats into err (errlen bytes, truncated, always NUL-terminated). Does nothing when
 * err is NULL or errlen is 0, so callers may pass a NULL error buffer. */
void util_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A growing NUL-terminated byte buffer. Zero-initialise it (optionally with `first`), put
 * bytes, take `p` (malloc'd, the caller frees it) and `len`.
 *   p      the bytes, NUL-terminated after the first put (even of 0 bytes); NULL before
 *   len    bytes in p, without the NUL
 *   cap    bytes allocated
 *   first  bytes of the first allocation (0: 256); it then doubles as needed
 *   oom    set when an allocation failed (or the size would overflow): from then on every
 *          put does nothing and returns -1, so a caller may check once at the end
 * Callers may lower `len` themselves (to drop a consumed prefix after moving the rest down,
 * or 0 to reuse the buffer) as long as they write p[len] = '\0' when p is set. */
typedef struct util_buf {
    char *p;
    size_t len, cap, first;
    int oom;
} util_buf;

/* Appends n bytes of s (s may be NULL when n is 0). 0, or -1 when out of memory. */
int util_buf_put(util_buf *b, const void *s, size_t n);
/* Appends the NUL-terminated string s. 0 or -1 as util_buf_put. */
int util_buf_str(util_buf *b, const char *s);
/* Frees b->p and zeroes the buffer (keeping `first`). */
void util_buf_free(util_buf *b);

/* Reads a whole file into a malloc'd NUL-terminated buffer; *len_out (optional) gets its
 * length in bytes. The buffer starts at 4 KiB and doubles; a file that fills it once it has
 * reached `max` bytes (the NUL counts) is refused, so with max a power of two >= 4096 the
 * limit is max - 2 bytes of content. NULL on failure with `why`
 * (optional, whylen bytes) set to strerror(errno) when it cannot be opened, "larger than <max>
 * bytes", strerror(errno) of a failed read ("Is a directory", say; "read error" without errno)
 * or "out of memory". */
char *util_read_file(const char *path, size_t max, size_t *len_out, char *why, size_t whylen);
/* The same for an open stream (stdin, say), read to its end; the stream stays open. Reasons:
 * "larger than <max> bytes", the read error, "out of memory". */
char *util_read_stream(FILE *f, size_t max, size_t *len_out, char *why, size_t whylen);

/* Formats t (Unix seconds, UTC) as RFC 3339 with `digits` (0..9) fractional digits, truncated
 * (not rounded), and 'Z': digits 0 "2026-11-30T07:00:42Z" (Kubernetes metav1.Time), 3
 * "2026-11-30T07:00:42.123Z", 6 "2026-11-30T07:00:42.123456Z" (metav1.MicroTime). Needs
 * 21 + digits (+1 for the dot when digits > 0) bytes with the NUL. Returns 0, or -1 (buf
 * untouched unless the output did not fit) when t is not finite, negative or beyond what
 * gmtime_r can represent, digits is out of range, or n is too small. */
int util_format_time(double t, int digits, char *buf, size_t n);

/* A malloc'd copy of n bytes of p plus a NUL after them (p may hold NULs itself; p may be
 * NULL when n is 0). NULL when out of memory. */
char *util_memdup(const void *p, size_t n);

/* Parses s as a whole decimal integer in min..max (no sign, no spaces, no fraction, no
 * exponent) into *out (untouched on failure). 0, or -1 when s is anything else. */
int util_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/* A new empty file without a name, open for reading and writing (mode 0600, close-on-exec),
 * in $TMPDIR (or /tmp when unset or empty): O_TMPFILE|O_EXCL, so it can never be linked and
 * nothing else can open it; where the file system has no O_TMPFILE, a mkostemp file (O_EXCL,
 * a random name) unlinked at once. Its space is freed when the descriptor is closed, even
 * when the process dies. Returns the descriptor, or -1 with err set to "temporary file in
 * <dir>: <strerror>". */
int util_tmpfile(char *err, size_t errlen);

#endif
