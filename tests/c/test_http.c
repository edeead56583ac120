/* SPDX-License-Identifier: Apache-2.0 */
/* core/http against tests/c/fake_apiserver.py over TLS on 127.0.0.1:
 * verification, CA/client cert from files and blobs, bearer token, bodies,
 * streaming across arbitrary chunk splits, cancel, timeouts, body cap, a body saved to a
 * file and a multipart part read from one (util_tmpfile). */
#include "transport_tap.h"
#include "transport_server.h"
#include "http.h"
#include "loop.h"

#include "util.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static struct ev_loop *loop;
static http_client *hc;
static int port;

typedef struct result {
    int done;
    long status;
    int curl_code;
    char error[256];
    char body[8192];
    size_t body_len;
    double retry_after;
    char content_type[64];
    long version;
    /* streaming */
    char stream[4096];
    size_t stream_len;
    int data_calls;
    int cancel_in_data;
    http_request *self;
} result;

static void on_done(http_request *req, const http_response *r, void *ud)
{
    (void)req;
    result *res = ud;
    res->done++;
    res->status = r->status;
    res->curl_code = r->curl_code;
    snprintf(res->error, sizeof res->error, "%s", r->error);
    snprintf(res->body, sizeof res->body, "%s", r->body);
    res->body_len = r->body_len;
    res->retry_after = r->retry_after_s;
    snprintf(res->content_type, sizeof res->content_type, "%s", r->content_type);
    res->version = r->http_version;
}

static int on_data(http_request *req, const char *d, size_t n, void *ud)
{
    result *res = ud;
    res->data_calls++;
    if (res->stream_len + n < sizeof res->stream) {
        memcpy(res->stream + res->stream_len, d, n);
        res->stream_len += n;
    }
    if (res->cancel_in_data) {
        http_request_cancel(req);
        res->done = -1;            /* mark: loop may stop */
    }
    return 0;
}

static void url(char *buf, size_t n, const char *path)
{
    snprintf(buf, n, "https://127.0.0.1:%d%s", port, path);
}

static http_request *get(result *res, const char *path, const http_tls *tls)
{
    char u[256];
    url(u, sizeof u, path);
    memset(res, 0, sizeof *res);
    http_opts o = {.url = u, .tls = tls, .on_done = on_done, .ud = res};
    return http_request_start(hc, &o, NULL, 0);
}

static void run(result *res)
{
    loop_run_until(loop, &res->done, 10);
}

static json_t *body_json(result *res)
{
    return json_loads(res->body, 0, NULL);
}

int main(void)
{
    char err[256];
    loop = ev_loop_new(EVFLAG_AUTO);
    hc = http_client_new(loop, err, sizeof err);
    OK(hc != NULL, "http_client_new");

    /* bad input: clear errors, nothing started */
    http_opts bad = {.url = NULL, .on_done = on_done};
    OK(http_request_start(hc, &bad, err, sizeof err) == NULL, "no url -> NULL");
    IS_STR(err, "http_request_start: url is required", "no url -> error text");
    bad.url = "ftp://127.0.0.1/x";
    OK(http_request_start(hc, &bad, err, sizeof err) == NULL && strstr(err, "http:// or https://"),
       "ftp url refused: %s", err);
    bad.url = "https://127.0.0.1/x";
    bad.on_done = NULL;
    OK(http_request_start(hc, &bad, err, sizeof err) == NULL && strstr(err, "on_done"), "missing on_done refused");
    IS_INT(http_client_active(hc), 0, "nothing active after refused starts");
    OK(http_client_new(NULL, err, sizeof err) == NULL, "http_client_new(NULL loop) fails");

    port = server_start();
    if (port <= 0) {
        printf("# cannot start tests/c/fake_apiserver.py\n");
        OK(0, "fake apiserver started");
        return DONE_TESTING();
    }
    printf("# fake apiserver pid %d port %d\n", (int)server_pid, port);
    result r;
    http_tls tls_ca = {.ca_file = TLS_DIR "/ca.crt"};
    get(&r, "/hello", &tls_ca);
    run(&r);
    IS_INT(r.status, 200, "GET /hello with the CA from a file: 200 (%s)", r.error);
    json_t *j = body_json(&r);
    IS_STR(json_string_value(json_object_get(j, "hello")), "world", "body parsed");
    json_decref(j);
    IS_INT(r.version, 1, "HTTP/1.1 (the test server offers no h2)");
    IS_STR(r.content_type, "application/json", "content type");
    IS_INT((long)r.retry_after, -1, "no Retry-After -> -1");

    size_t ca_len = 0, cert_len = 0, key_len = 0;
    char *ca_pem = slurp(TLS_DIR "/ca.crt", &ca_len);
    char *cert_pem = slurp(TLS_DIR "/client.crt", &cert_len);
    char *key_pem = slurp(TLS_DIR "/client.key", &key_len);
    http_tls tls_blob = {.ca_pem = ca_pem, .ca_pem_len = ca_len};
    get(&r, "/hello", &tls_blob);
    run(&r);
    IS_INT(r.status, 200, "CA as an in-memory blob: 200");

    http_tls tls_other = {.ca_file = TLS_DIR "/other-ca.crt"};
    get(&r, "/hello", &tls_other);
    run(&r);
    OK(r.status == 0 && r.curl_code == 60, "unrelated CA: verification fails (curl %d: %s)", r.curl_code, r.error);
    get(&r, "/hello", NULL);
    run(&r);
    OK(r.status == 0 && r.curl_code != 0, "no CA given: system bundle does not trust the test CA (curl %d)",
       r.curl_code);
    http_tls tls_insecure = {.insecure_skip_verify = 1};
    get(&r, "/hello", &tls_insecure);
    run(&r);
    IS_INT(r.status, 200, "insecure_skip_verify: 200");

    get(&r, "/whoami", &tls_ca);
    run(&r);
    j = body_json(&r);
    IS_STR(json_string_value(json_object_get(j, "cn")), "", "no client cert -> no peer CN");
    json_decref(j);
    http_tls tls_files = {.ca_file = TLS_DIR "/ca.crt", .cert_file = TLS_DIR "/client.crt",
                          .key_file = TLS_DIR "/client.key"};
    get(&r, "/whoami", &tls_files);
    run(&r);
    j = body_json(&r);
    IS_STR(json_string_value(json_object_get(j, "cn")), "flink-controller-test", "client cert+key from files");
    json_decref(j);
    http_tls tls_blobs = {.ca_pem = ca_pem, .ca_pem_len = ca_len, .cert_pem = cert_pem, .cert_pem_len = cert_len,
                          .key_pem = key_pem, .key_pem_len = key_len};
    get(&r, "/whoami", &tls_blobs);
    run(&r);
    j = body_json(&r);
    IS_STR(json_string_value(json_object_get(j, "cn")), "flink-controller-test", "client cert+key from blobs");
    json_decref(j);

    /* method, headers, body, bearer token */
    {
        char u[256];
        url(u, sizeof u, "/echo");
        const char *hdrs[] = {"Content-Type: application/apply-patch+yaml", NULL};
        memset(&r, 0, sizeof r);
        http_opts o = {.method = "PATCH", .url = u, .headers = hdrs, .body = "{\"a\":1}", .body_len = 7,
                       .tls = &tls_ca, .bearer_token = "tok-123", .on_done = on_done, .ud = &r};
        OK(http_request_start(hc, &o, err, sizeof err) != NULL, "PATCH started");
        run(&r);
        j = body_json(&r);
        IS_STR(json_string_value(json_object_get(j, "method")), "PATCH", "method PATCH");
        IS_STR(json_string_value(json_object_get(j, "body")), "{\"a\":1}", "body sent");
        IS_STR(json_string_value(json_object_get(j, "contentType")), "application/apply-patch+yaml", "header sent");
        IS_STR(json_string_value(json_object_get(j, "auth")), "Bearer tok-123", "bearer token sent");
        json_decref(j);
    }

    /* streaming: three lines cut at arbitrary points */
    {
        char u[256];
        url(u, sizeof u, "/stream");
        memset(&r, 0, sizeof r);
        http_opts o = {.url = u, .tls = &tls_ca, .stream = 1, .on_data = on_data, .on_done = on_done, .ud = &r};
        http_request_start(hc, &o, NULL, 0);
        run(&r);
        IS_INT(r.status, 200, "stream: 200");
        OK(r.data_calls >= 3, "stream: data arrived in %d pieces", r.data_calls);
        int lines = 0;
        for (size_t i = 0; i < r.stream_len; i++)
            lines += r.stream[i] == '\n';
        IS_INT(lines, 3, "stream: three newline-terminated events");
        OK(strstr(r.stream, "\"DELETED\"") != NULL, "stream: last event present");
        IS_INT(r.body_len, 0, "stream: nothing buffered");
    }

    /* cancel from inside on_data: no on_done */
    {
        char u[256];
        url(u, sizeof u, "/slow");
        memset(&r, 0, sizeof r);
        r.cancel_in_data = 1;
        http_opts o = {.url = u, .tls = &tls_ca, .stream = 1, .on_data = on_data, .on_done = on_done, .ud = &r};
        http_request_start(hc, &o, NULL, 0);
        run(&r);
        IS_INT(r.done, -1, "cancelled from on_data, on_done not called");
        IS_INT(http_client_active(hc), 0, "cancelled request freed");
        /* cancel before anything happened */
        result r2;
        http_request *q = get(&r2, "/hello", &tls_ca);
        http_request_cancel(q);
        IS_INT(http_client_active(hc), 0, "cancel right after start frees it");
        get(&r, "/hello", &tls_ca);
        run(&r);
        IS_INT(r2.done, 0, "no callback for the request cancelled at once");
    }

    /* timeout and body cap */
    {
        char u[256];
        url(u, sizeof u, "/slow");
        memset(&r, 0, sizeof r);
        http_opts o = {.url = u, .tls = &tls_ca, .timeout_ms = 300, .on_done = on_done, .ud = &r};
        http_request_start(hc, &o, NULL, 0);
        run(&r);
        IS_INT(r.curl_code, 28, "timeout_ms 300 on a stalled stream -> CURLE_OPERATION_TIMEDOUT");
        url(u, sizeof u, "/big");
        memset(&r, 0, sizeof r);
        http_opts o2 = {.url = u, .tls = &tls_ca, .max_body = 1000, .on_done = on_done, .ud = &r};
        http_request_start(hc, &o2, NULL, 0);
        run(&r);
        OK(r.curl_code == 23 && strstr(r.error, "over 1000 bytes"), "body cap: %s", r.error);
    }

    /* util_tmpfile: a file without a name; a missing $TMPDIR is a clear error */
    {
        int fd = util_tmpfile(err, sizeof err);
        OK(fd >= 0, "util_tmpfile: a descriptor (%s)", fd < 0 ? err : "");
        struct stat st;
        OK(fd >= 0 && fstat(fd, &st) == 0 && st.st_nlink == 0 && (st.st_mode & 0777) == 0600,
           "util_tmpfile: no link to it anywhere, mode 0600");
        if (fd >= 0)
            close(fd);
        const char *old = getenv("TMPDIR");
        char *keep = old ? strdup(old) : NULL;
        setenv("TMPDIR", "/nonexistent-fc-dir", 1);
        fd = util_tmpfile(err, sizeof err);
        OK(fd < 0, "util_tmpfile in a missing directory fails");
        IS_STR(err, "temporary file in /nonexistent-fc-dir: No such file or directory", "with the directory and why");
        if (keep)
            setenv("TMPDIR", keep, 1);
        else
            unsetenv("TMPDIR");
        free(keep);
    }

    /* save: a 2xx body written to a file as it arrives, capped; other statuses buffered */
    {
        char u[256];
        url(u, sizeof u, "/big");
        int fd = util_tmpfile(err, sizeof err);
        memset(&r, 0, sizeof r);
        http_opts o = {.url = u, .tls = &tls_ca, .save = 1, .save_fd = fd, .on_done = on_done, .ud = &r};
        OK(http_request_start(hc, &o, err, sizeof err) != NULL, "save: started (%s)", err);
        run(&r);
        IS_INT(r.status, 200, "save: 200 (%s)", r.error);
        struct stat st;
        fstat(fd, &st);
        OK(r.body_len > 200000 && (size_t)st.st_size == r.body_len, "save: body_len %zu = the file's %lld bytes",
           r.body_len, (long long)st.st_size);
        IS_STR(r.body, "", "save: nothing buffered");
        char head[16] = "", tail[8] = "";
        pread(fd, head, 10, 0);
        pread(fd, tail, 4, st.st_size - 4);
        IS_STR(head, "{\"x\": \"yyy", "save: the body's first bytes in the file");
        IS_STR(tail, "yy\"}", "save: and its last");
        close(fd);

        fd = util_tmpfile(err, sizeof err);
        memset(&r, 0, sizeof r);
        o.save_fd = fd;
        o.max_body = 1000;
        http_request_start(hc, &o, NULL, 0);
        run(&r);
        fstat(fd, &st);
        OK(r.curl_code == 23 && strcmp(r.error, "response body over 1000 bytes") == 0,
           "save: the cap on the file: %s", r.error);
        OK(st.st_size <= 1000, "save: no more than the cap written (%lld bytes)", (long long)st.st_size);
        close(fd);

        int ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
        memset(&r, 0, sizeof r);
        o.save_fd = ro;
        o.max_body = 0;
        http_request_start(hc, &o, NULL, 0);
        run(&r);
        OK(r.curl_code == 23 && strcmp(r.error, "writing the body: Bad file descriptor") == 0,
           "save: a failed write fails the transfer with why: %s", r.error);
        close(ro);

        fd = util_tmpfile(err, sizeof err);
        url(u, sizeof u, "/retry429?id=save");
        memset(&r, 0, sizeof r);
        o.save_fd = fd;
        http_request_start(hc, &o, NULL, 0);
        run(&r);
        fstat(fd, &st);
        OK(r.status == 429 && r.body_len > 0 && st.st_size == 0, "save: a 429's body is buffered (%zu bytes), "
           "the file stays empty", r.body_len);
        close(fd);

        http_opts both = {.url = u, .stream = 1, .on_data = on_data, .save = 1, .save_fd = 1, .on_done = on_done};
        OK(http_request_start(hc, &both, err, sizeof err) == NULL && strstr(err, "stream and save exclude"),
           "stream and save together refused: %s", err);
        http_opts nofd = {.url = u, .save = 1, .save_fd = -1, .on_done = on_done};
        OK(http_request_start(hc, &nofd, err, sizeof err) == NULL, "save to fd -1 refused");
    }

    /* a multipart part read from a file: the bytes at offsets 0..len-1, whatever the
     * descriptor's own offset; a file shorter than len fails the transfer */
    {
        char u[256], text[3000];
        url(u, sizeof u, "/echo");
        for (size_t i = 0; i < sizeof text; i++)
            text[i] = (char)('a' + i % 26);
        int fd = util_tmpfile(err, sizeof err);
        OK(fd >= 0 && write(fd, text, sizeof text) == (ssize_t)sizeof text, "part: file written");
        http_part part = {.name = "jarfile", .filename = "app.jar", .type = "application/x-java-archive",
                          .from_fd = 1, .fd = fd, .len = sizeof text};
        memset(&r, 0, sizeof r);
        http_opts o = {.method = "POST", .url = u, .tls = &tls_ca, .part = &part, .on_done = on_done, .ud = &r};
        OK(http_request_start(hc, &o, err, sizeof err) != NULL, "part from a file: started (%s)", err);
        run(&r);
        IS_INT(r.status, 200, "part from a file: 200 (%s)", r.error);
        j = body_json(&r);
        const char *ct = json_string_value(json_object_get(j, "contentType"));
        const char *sent = json_string_value(json_object_get(j, "body"));
        OK(ct && strncmp(ct, "multipart/form-data; boundary=", 30) == 0, "part from a file: multipart (%s)", ct);
        char want[sizeof text + 1];
        memcpy(want, text, sizeof text);
        want[sizeof text] = '\0';
        OK(sent && strstr(sent, "Content-Disposition: form-data; name=\"jarfile\"; filename=\"app.jar\"") &&
               strstr(sent, "Content-Type: application/x-java-archive"),
           "part from a file: its name, file name (not the descriptor's) and type");
        const char *at = sent ? strstr(sent, "\r\n\r\n") : NULL;
        OK(at && strncmp(at + 4, want, sizeof text) == 0 && strncmp(at + 4 + sizeof text, "\r\n--", 4) == 0,
           "part from a file: exactly the file's %zu bytes", sizeof text);
        json_decref(j);

        memset(&r, 0, sizeof r);
        part.len = sizeof text + 100;
        http_request_start(hc, &o, NULL, 0);
        run(&r);
        OK(r.status != 200 && r.curl_code == 42 &&
               strcmp(r.error, "reading the part: the file ends at 3000 of 3100 bytes") == 0,
           "part from a file shorter than len: the transfer fails with why (curl %d: %s)", r.curl_code, r.error);
        close(fd);
        part.fd = -1;
        OK(http_request_start(hc, &o, err, sizeof err) == NULL && strstr(err, "open descriptors"),
           "a part from fd -1 refused: %s", err);
    }

    get(&r, "/retry429?id=http", &tls_ca);
    run(&r);
    IS_INT(r.status, 429, "429 passed through at this layer");
    OK(r.retry_after == 0, "Retry-After: 0 parsed");
    IS_STR(r.content_type, "text/plain", "429 body is plain text");

    /* many at once on one loop */
    {
        result many[20];
        int all = 0;
        for (int i = 0; i < 20; i++)
            get(&many[i], "/hello", &tls_ca);
        for (int tries = 0; tries < 200 && all < 20; tries++) {
            ev_run(loop, EVRUN_ONCE);
            all = 0;
            for (int i = 0; i < 20; i++)
                all += many[i].done == 1 && many[i].status == 200;
        }
        IS_INT(all, 20, "20 concurrent requests all answered 200");
    }

    /* connection refused */
    memset(&r, 0, sizeof r);
    http_opts o = {.url = "https://127.0.0.1:1/x", .on_done = on_done, .ud = &r};
    http_request_start(hc, &o, NULL, 0);
    run(&r);
    OK(r.status == 0 && r.curl_code == 7, "connection refused -> status 0, CURLE_COULDNT_CONNECT (%d)", r.curl_code);

    /* freeing the client with requests in flight */
    get(&r, "/slow", &tls_ca);
    http_client_free(hc);
    OK(1, "http_client_free with a request in flight");
    free(ca_pem);
    free(cert_pem);
    free(key_pem);
    server_stop();
    ev_loop_destroy(loop);
    return DONE_TESTING();
}
