/* SPDX-License-Identifier: Apache-2.0 */
/* A REST submission's jar of 200 MiB through the transport the controller uses for it
 * (core/executor.c run_fcall: GET into util_tmpfile with http_opts.save, then core/flinkcall.c flinkcall_start's
 * POST /jars/upload with a part read from that file), between two loopback endpoints of a
 * libmicrohttpd daemon in this process: GET /app.jar generates the bytes, POST /jars/upload
 * checks every byte of the multipart part. The process's peak RSS (VmHWM) must stay far below
 * the jar's size: the jar is never in memory. */
#include "transport_tap.h"
#include "http.h"
#include "loop.h"
#include "flinkcall.h"
#include "run.h"
#include "util.h"

#include <jansson.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#define JAR_BYTES ((uint64_t)200 << 20)
#define RSS_SLACK_KIB (64L << 10) /* 64 MiB over the baseline */

/* the jar's byte at offset i: not a repeating block, so a shifted or repeated chunk shows */
static unsigned char jar_byte(uint64_t i)
{
    return (unsigned char)((i % 251) ^ (i >> 12));
}

static ssize_t gen_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)cls;
    if (pos >= JAR_BYTES)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = JAR_BYTES - pos < max ? (size_t)(JAR_BYTES - pos) : max;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)jar_byte(pos + i);
    return (ssize_t)n;
}

/* the upload as it arrives: headers of the part up to the blank line, then the jar's bytes */
typedef struct upload {
    int header_match;  /* characters of "\r\n\r\n" matched so far */
    int in_body;
    uint64_t got;      /* jar bytes compared */
    uint64_t bad;      /* of them different from jar_byte */
    uint64_t total;    /* raw bytes of the request body */
    char head[512];    /* the part's first bytes (its headers) */
    size_t head_len;
} upload;

static void upload_feed(upload *u, const char *p, size_t n)
{
    u->total += n;
    for (size_t i = 0; i < n; i++) {
        if (!u->in_body) {
            if (u->head_len + 1 < sizeof u->head)
                u->head[u->head_len++] = p[i];
            u->header_match = p[i] == "\r\n\r\n"[u->header_match] ? u->header_match + 1 : (p[i] == '\r');
            u->in_body = u->header_match == 4;
        } else if (u->got < JAR_BYTES) {
            u->bad += (unsigned char)p[i] != jar_byte(u->got);
            u->got++;
        }
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *data, size_t *data_size, void **con_cls)
{
    (void)cls;
    (void)version;
    struct MHD_Response *resp;
    enum MHD_Result ret;
    if (strcmp(method, "GET") == 0 && strcmp(url, "/app.jar") == 0) {
        resp = MHD_create_response_from_callback(JAR_BYTES, 64 * 1024, gen_cb, NULL, NULL);
        ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    if (strcmp(method, "POST") != 0 || strcmp(url, "/jars/upload") != 0) {
        resp = MHD_create_response_from_buffer(2, (void *)"{}", MHD_RESPMEM_PERSISTENT);
        ret = MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    upload *u = *con_cls;
    if (!u) {
        *con_cls = calloc(1, sizeof(upload));
        return *con_cls ? MHD_YES : MHD_NO;
    }
    if (*data_size) {
        upload_feed(u, data, *data_size);
        *data_size = 0;
        return MHD_YES;
    }
    json_t *j = json_pack("{s:I, s:I, s:I, s:s#}", "got", (json_int_t)u->got, "bad", (json_int_t)u->bad, "total",
                          (json_int_t)u->total, "head", u->head, u->head_len);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode t)
{
    (void)cls;
    (void)conn;
    (void)t;
    free(*con_cls);
    *con_cls = NULL;
}

/* VmHWM (peak resident set) or VmRSS of this process, KiB; -1 when unreadable */
static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

typedef struct dl_result {
    int done;
    long status;
    char error[256];
    size_t len;
} dl_result;

static void dl_done(http_request *req, const http_response *r, void *ud)
{
    (void)req;
    dl_result *d = ud;
    d->done = 1;
    d->status = r->status;
    snprintf(d->error, sizeof d->error, "%s", r->error);
    d->len = r->body_len;
}

typedef struct up_result {
    int done;
    long status;
    char error[256];
    json_t *body;
} up_result;

static void up_done(long status, const char *body, const char *error, void *ud)
{
    up_result *u = ud;
    u->done = 1;
    u->status = status;
    snprintf(u->error, sizeof u->error, "%s", error);
    u->body = json_loads(body, 0, NULL);
}

static json_int_t jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

int main(void)
{
    char err[512] = "";
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL,
                                            on_request, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                                            MHD_OPTION_SOCK_ADDR,
                                            (struct sockaddr *)&(struct sockaddr_in){.sin_family = AF_INET,
                                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)},
                                            MHD_OPTION_END);
    OK(d != NULL, "loopback daemon started");
    if (!d)
        return DONE_TESTING();
    int port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    http_client *hc = http_client_new(loop, err, sizeof err);
    OK(hc != NULL, "http client (%s)", err);

    long base_hwm = status_kib("VmHWM"), base_rss = status_kib("VmRSS");
    printf("# before: VmRSS %ld KiB, VmHWM %ld KiB; jar %llu MiB\n", base_rss, base_hwm,
           (unsigned long long)(JAR_BYTES >> 20));

    /* the download, as run_start_fcall starts it */
    int fd = util_tmpfile(err, sizeof err);
    OK(fd >= 0, "util_tmpfile (%s)", err);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/app.jar", port);
    dl_result dl = {0};
    http_opts ho = {.url = url, .timeout_ms = 60000, .max_body = (size_t)1 << 30, .save = 1, .save_fd = fd,
                    .proxy = "", .on_done = dl_done, .ud = &dl};
    OK(http_request_start(hc, &ho, err, sizeof err) != NULL, "download started (%s)", err);
    loop_run_until(loop, &dl.done, 60);
    IS_INT(dl.status, 200, "download: 200 (%s)", dl.error);
    IS_INT(dl.len, JAR_BYTES, "download: every byte saved");
    struct stat st;
    OK(fstat(fd, &st) == 0 && (uint64_t)st.st_size == JAR_BYTES && st.st_nlink == 0,
       "download: the file holds it and has no name");
    long dl_hwm = status_kib("VmHWM");
    printf("# after the download: VmHWM %ld KiB (+%ld KiB)\n", dl_hwm, dl_hwm - base_hwm);

    /* the upload, as flinkcall_downloaded sends it */
    http_part part = {.name = "jarfile", .filename = "app.jar", .type = "application/x-java-archive",
                      .from_fd = 1, .fd = fd, .len = dl.len};
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
    flinkcall_env env = {.access = FLINKCALL_SERVICE, .base_url = base, .hc = hc};
    json_t *act = json_pack("{s:s, s:s, s:i}", "method", "POST", "path", "/jars/upload", "timeout_ms", 60000);
    up_result up = {0};
    flinkcall *call = flinkcall_start(&env, act, &part, up_done, &up, err, sizeof err);
    OK(call != NULL, "upload started (%s)", err);
    if (call)
        loop_run_until(loop, &up.done, 60);
    IS_INT(up.status, 200, "upload: 200 (%s)", up.error);
    IS_INT(jint(up.body, "got"), JAR_BYTES, "upload: the part carried every byte of the jar");
    IS_INT(jint(up.body, "bad"), 0, "upload: all of them right, in order");
    OK(jint(up.body, "total") > (json_int_t)JAR_BYTES && jint(up.body, "total") < (json_int_t)JAR_BYTES + 1024,
       "upload: one part and its framing (%lld bytes)", (long long)jint(up.body, "total"));
    OK(strstr(json_string_value(json_object_get(up.body, "head")) ?: "",
              "name=\"jarfile\"; filename=\"app.jar\"") != NULL, "upload: the part's name and file name");

    long hwm = status_kib("VmHWM");
    printf("# after the upload: VmHWM %ld KiB (+%ld KiB over the baseline; the jar is %llu KiB)\n", hwm,
           hwm - base_hwm, (unsigned long long)(JAR_BYTES >> 10));
    OK(base_hwm > 0 && hwm > 0 && hwm - base_hwm < RSS_SLACK_KIB,
       "peak RSS grew by %ld KiB moving a %llu MiB jar: under %ld MiB", hwm - base_hwm,
       (unsigned long long)(JAR_BYTES >> 20), RSS_SLACK_KIB >> 10);

    json_decref(up.body);
    json_decref(act);
    close(fd);
    http_client_free(hc);
    ev_loop_destroy(loop);
    MHD_stop_daemon(d);
    return DONE_TESTING();
}
