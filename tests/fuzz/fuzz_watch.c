/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/fuzz/fuzz_watch.c: libFuzzer target for the watch-stream framing (core/kube.c,
 * kube_watch_feed and kube_watch_event, what kube_watch does with libcurl's chunks).  An
 * input is: one byte k, then k bytes of chunk sizes (each byte + 1), then the stream, fed in
 * chunks of those sizes in turn.  Checked against a model of the stream:
 *   - the lines handed over are exactly the stream's '\n'-separated lines, in order, and what
 *     stays pending after each chunk is the unfinished rest;
 *   - each line parses to an event with a string type and an object, or is blank, or is
 *     refused with "watch: bad event: ..."; an event of type "ERROR" stops the stream (as a
 *     watcher that stops on it), and nothing of that chunk is handed over after it;
 *   - the unfinished last line is parsed at the end, as kube.c does when the stream ends.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"

struct model {
    const char *stream; /* the whole stream */
    size_t next;        /* where the next line must start */
    size_t fed;         /* bytes fed so far */
};

static void fail(const char *why)
{
    fprintf(stderr, "fuzz_watch: %s\n", why);
    abort();
}

/* 1 to stop (an ERROR event), 0 to go on */
static int parse(const char *line, size_t len)
{
    json_t *ev;
    const char *type;
    json_t *obj;
    char err[256] = "";
    int rc = kube_watch_event(line, len, &ev, &type, &obj, err, sizeof err);
    if (rc < 0) {
        if (strncmp(err, "watch: bad event: ", 18) != 0)
            fail("a refused line without \"watch: bad event: \"");
        return 0;
    }
    if (rc > 0)
        return 0;
    if (!type || !json_is_object(obj))
        fail("an event without a string type or an object");
    int stop = strcmp(type, "ERROR") == 0;
    json_decref(ev);
    return stop;
}

static int on_line(const char *line, size_t len, void *ud)
{
    struct model *m = ud;
    const char *nl = memchr(m->stream + m->next, '\n', m->fed - m->next);
    if (!nl || (size_t)(nl - (m->stream + m->next)) != len || memcmp(line, m->stream + m->next, len) != 0)
        fail("a line that is not the stream's next line");
    m->next += len + 1;
    return parse(line, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size < 1u + data[0])
        return 0;
    size_t k = data[0];
    const uint8_t *sizes = data + 1;
    struct model m = {(const char *)data + 1 + k, 0, 0};
    size_t len = size - 1 - k;
    util_buf pending = {0};
    char err[256];
    int stopped = 0;
    for (size_t c = 0; m.fed < len && !stopped; c++) {
        size_t n = k ? (size_t)sizes[c % k] + 1 : len;
        if (n > len - m.fed)
            n = len - m.fed;
        m.fed += n;
        int rc = kube_watch_feed(&pending, m.stream + m.fed - n, n, on_line, &m, err, sizeof err);
        if (rc < 0)
            fail(err);
        stopped = rc != 0;
        if (!stopped && (pending.len != m.fed - m.next || memcmp(pending.p, m.stream + m.next, pending.len) != 0))
            fail("what is pending is not the unfinished rest of the stream");
        if (!stopped && memchr(pending.p, '\n', pending.len))
            fail("a finished line left pending");
    }
    if (!stopped && pending.len)
        parse(pending.p, pending.len);
    util_buf_free(&pending);
    return 0;
}
