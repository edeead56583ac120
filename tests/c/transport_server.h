/* SPDX-License-Identifier: Apache-2.0 */
/* Starts and stops tests/c/fake_apiserver.py for the transport tests; the
 * certificates come from tests/c/gen_test_certs.sh under build/tests/tls. */
#ifndef TRANSPORT_SERVER_H
#define TRANSPORT_SERVER_H
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TLS_DIR "build/tests/tls"

static pid_t server_pid;

/* Returns the port, or -1 (the caller then skips the network tests). */
static inline int server_start(void)
{
    if (system("bash tests/c/gen_test_certs.sh " TLS_DIR) != 0)
        return -1;
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    server_pid = fork();
    if (server_pid < 0)
        return -1;
    if (server_pid == 0) {
        dup2(fds[1], 1);
        int devnull = getenv("FAKE_APISERVER_STDERR") ? -1 : open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);   /* the server's tracebacks for dropped clients */
        close(fds[0]);
        close(fds[1]);
        execlp("python3", "python3", "tests/c/fake_apiserver.py", TLS_DIR, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[32] = "";
    size_t got = 0;
    while (got < sizeof buf - 1 && !strchr(buf, '\n')) {
        ssize_t n = read(fds[0], buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    if (!strchr(buf, '\n'))
        return -1;
    return atoi(buf);
}

static inline void server_stop(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGTERM);
        waitpid(server_pid, NULL, 0);
        server_pid = 0;
    }
}

/* Starts the fake API server, runs `tests(port)` against it and stops it; a server that does
 * not start is one failed TAP line (OK comes from transport_tap.h). */
#define SERVER_RUN(tests) do { int port_ = server_start(); \
    if (port_ > 0) { tests(port_); } else { OK(0, "fake apiserver started"); } \
    server_stop(); } while (0)

/* Reads a whole file into a malloc'd buffer (for PEM blobs). */
static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = '\0';
        *len = (size_t)n;
    }
    return b;
}
#endif
