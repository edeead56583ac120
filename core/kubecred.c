/* SPDX-License-Identifier: Apache-2.0 */
/* core/kubecred: exec credential plugins. See kubecred.h. */
#include "kubecred.h"
#include "log.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- configuration and credentials ----------------------------------- */

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void kubecred_exec_free(kubecred_exec *x)
{
    if (!x)
        return;
    free(x->where);
    free(x->api_version);
    free(x->command);
    free_list(x->args, x->nargs);
    free_list(x->env, x->nenv);
    free(x->install_hint);
    free(x->server);
    free(x->ca_pem);
    free(x->proxy_url);
    free(x->tls_server_name);
    free(x);
}

static char **copy_list(char *const *v, size_t n, int *bad)
{
    if (!n)
        return NULL;
    char **r = calloc(n, sizeof *r);
    if (!r) {
        *bad = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!(r[i] = strdup(v[i])))
            *bad = 1;
    return r;
}

kubecred_exec *kubecred_exec_copy(const kubecred_exec *x)
{
    if (!x)
        return NULL;
    kubecred_exec *y = calloc(1, sizeof *y);
    if (!y)
        return NULL;
    int bad = 0;
#define DUP(f) do { if (x->f && !(y->f = strdup(x->f))) bad = 1; } while (0)
    DUP(where);
    DUP(api_version);
    DUP(command);
    DUP(install_hint);
    DUP(server);
    DUP(proxy_url);
    DUP(tls_server_name);
#undef DUP
    y->args = copy_list(x->args, x->nargs, &bad);
    y->nargs = y->args ? x->nargs : 0;
    y->env = copy_list(x->env, x->nenv, &bad);
    y->nenv = y->env ? x->nenv : 0;
    if (x->ca_pem && !(y->ca_pem = util_memdup(x->ca_pem, x->ca_pem_len)))
        bad = 1;
    y->ca_pem_len = x->ca_pem_len;
    y->interactive_mode = x->interactive_mode;
    y->provide_cluster_info = x->provide_cluster_info;
    y->insecure = x->insecure;
    if (bad) {
        kubecred_exec_free(y);
        return NULL;
    }
    return y;
}

void kubecred_clear(kubecred *c)
{
    if (!c)
        return;
    free(c->token);
    free(c->cert_pem);
    free(c->key_pem);
    memset(c, 0, sizeof *c);
}

char *kubecred_exec_info(const kubecred_exec *x)
{
    json_t *spec = json_pack("{s:b}", "interactive", 0);
    json_t *root = json_pack("{s:s, s:s, s:o}", "apiVersion", x->api_version ? x->api_version : "", "kind",
                             "ExecCredential", "spec", spec);
    if (!root)
        return NULL;
    if (x->provide_cluster_info) {
        json_t *cl = json_pack("{s:s}", "server", x->server ? x->server : "");
        if (cl && x->ca_pem && x->ca_pem_len) {
            size_t n = 4 * ((x->ca_pem_len + 2) / 3) + 1;
            unsigned char *b = malloc(n);
            if (b) {
                EVP_EncodeBlock(b, (const unsigned char *)x->ca_pem, (int)x->ca_pem_len);
                json_object_set_new(cl, "certificate-authority-data", json_string((char *)b));
            }
            free(b);
        }
        if (cl && x->insecure)
            json_object_set_new(cl, "insecure-skip-tls-verify", json_true());
        if (cl && x->proxy_url)
            json_object_set_new(cl, "proxy-url", json_string(x->proxy_url));
        if (cl && x->tls_server_name)
            json_object_set_new(cl, "tls-server-name", json_string(x->tls_server_name));
        json_object_set_new(spec, "cluster", cl);
    }
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

/* ---- ExecCredential --------------------------------------------------- */

int kubecred_parse_time(const char *s, double *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = s && strlen(s) >= 19 ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!p || p - s != 19)
        return -1;
    double frac = 0;
    if (*p == '.') {
        double scale = 0.1;
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p)) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
               p[3] == ':' && isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5])) {
        off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L + ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
        if (*p == '-')
            off = -off;
        p += 6;
    } else {
        return -1;
    }
    if (*p)
        return -1;
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return -1;
    *out = (double)t - (double)off + frac;
    return 0;
}

int kubecred_parse(const kubecred_exec *x, const char *out, size_t len, kubecred *cred, char *err,
                   size_t errlen)
{
    memset(cred, 0, sizeof *cred);
    const char *where = x->where ? x->where : "exec";
    json_error_t je;
    json_t *root = json_loadb(out, len, 0, &je);
    if (!json_is_object(root)) {
        if (root)
            util_set_err(err, errlen, "%s: ExecCredential: not a JSON object", where);
        else
            util_set_err(err, errlen, "%s: ExecCredential: not JSON (line %d column %d: %s)", where, je.line,
                         je.column, je.text);
        json_decref(root);
        return -1;
    }
    const char *kind = json_string_value(json_object_get(root, "kind"));
    const char *av = json_string_value(json_object_get(root, "apiVersion"));
    json_t *st = json_object_get(root, "status");
    json_t *tok = json_object_get(st, "token"), *crt = json_object_get(st, "clientCertificateData"),
           *key = json_object_get(st, "clientKeyData"), *exp = json_object_get(st, "expirationTimestamp");
    int rc = -1;
    if (!kind || strcmp(kind, "ExecCredential") != 0) {
        util_set_err(err, errlen, "%s: ExecCredential kind: want ExecCredential, got %s", where,
                     kind ? kind : "none");
    } else if (!av || strcmp(av, x->api_version ? x->api_version : "") != 0) {
        util_set_err(err, errlen, "%s: ExecCredential apiVersion: the kubeconfig says %s, the plugin returned %s",
                     where, x->api_version ? x->api_version : "none", av ? av : "none");
    } else if (!json_is_object(st)) {
        util_set_err(err, errlen, "%s: ExecCredential status: %s", where, st ? "not an object" : "missing");
    } else if ((tok && !json_is_string(tok)) || (crt && !json_is_string(crt)) || (key && !json_is_string(key)) ||
               (exp && !json_is_string(exp) && !json_is_null(exp))) {
        util_set_err(err, errlen, "%s: ExecCredential status.%s: not a string", where,
                     tok && !json_is_string(tok)   ? "token"
                     : crt && !json_is_string(crt) ? "clientCertificateData"
                     : key && !json_is_string(key) ? "clientKeyData"
                                                   : "expirationTimestamp");
    } else if ((json_string_length(crt) > 0) != (json_string_length(key) > 0)) {
        util_set_err(err, errlen, "%s: ExecCredential status.%s: missing (the plugin returned only the %s)", where,
                     json_string_length(crt) ? "clientKeyData" : "clientCertificateData",
                     json_string_length(crt) ? "certificate" : "key");
    } else if (!json_string_length(tok) && !json_string_length(crt)) {
        util_set_err(err, errlen, "%s: ExecCredential status: neither token nor clientCertificateData and clientKeyData",
                     where);
    } else if (json_is_string(exp) && kubecred_parse_time(json_string_value(exp), &cred->expiry) != 0) {
        util_set_err(err, errlen, "%s: ExecCredential status.expirationTimestamp: not an RFC 3339 time: \"%s\"", where,
                     json_string_value(exp));
    } else {
        rc = 0;
        if (json_string_length(tok) && !(cred->token = strdup(json_string_value(tok))))
            rc = -1;
        if (json_string_length(crt)) {
            cred->cert_pem_len = json_string_length(crt);
            cred->key_pem_len = json_string_length(key);
            cred->cert_pem = util_memdup(json_string_value(crt), cred->cert_pem_len);
            cred->key_pem = util_memdup(json_string_value(key), cred->key_pem_len);
            if (!cred->cert_pem || !cred->key_pem)
                rc = -1;
        }
        if (rc)
            util_set_err(err, errlen, "%s: out of memory", where);
    }
    if (rc)
        kubecred_clear(cred);
    json_decref(root);
    return rc;
}

/* ---- running the plugin ---------------------------------------------- */

int kubecred_resolve(const kubecred_exec *x, const char *path_env, char *buf, size_t n, char *err,
                     size_t errlen)
{
    const char *where = x->where ? x->where : "exec";
    const char *cmd = x->command ? x->command : "";
    const char *hint = x->install_hint && *x->install_hint ? x->install_hint : NULL;
    struct stat st;
    if (strchr(cmd, '/')) {
        if (stat(cmd, &st) == 0 && S_ISREG(st.st_mode) && access(cmd, X_OK) == 0 && strlen(cmd) < n) {
            snprintf(buf, n, "%s", cmd);
            return 0;
        }
        util_set_err(err, errlen, "%s.command: %s: %s%s%s", where, cmd,
                     stat(cmd, &st) == 0 ? "not an executable file" : "executable not found", hint ? "; " : "",
                     hint ? hint : "");
        return -1;
    }
    const char *p = path_env ? path_env : "";
    while (*cmd) {
        const char *colon = strchr(p, ':');
        size_t dl = colon ? (size_t)(colon - p) : strlen(p);
        int w = dl ? snprintf(buf, n, "%.*s/%s", (int)dl, p, cmd) : snprintf(buf, n, "./%s", cmd);
        if (w > 0 && (size_t)w < n && stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return 0;
        if (!colon)
            break;
        p = colon + 1;
    }
    if (n)
        buf[0] = '\0';
    util_set_err(err, errlen, "%s.command: %s: executable not found in $PATH%s%s", where, *cmd ? cmd : "(empty)",
                 hint ? "; " : "", hint ? hint : "");
    return -1;
}

/* A running plugin: its pid, the read ends of its stdout and stderr, what came so far. */
typedef struct proc {
    pid_t pid;
    int out_fd, err_fd;     /* -1 once at EOF (closed) */
    util_buf out;           /* stdout */
    util_buf eline;         /* stderr bytes of a line not yet ended */
    size_t err_total;
    int exited, status;     /* waitpid status once exited */
    int too_big;
    char cmd[4096];
} proc;

/* The environment of a run: ours without the names the kubeconfig sets, then its env entries,
 * then KUBERNETES_EXEC_INFO (os/exec keeps the last of duplicates; this drops the earlier).
 * The entries are borrowed but the last (KUBERNETES_EXEC_INFO=..., malloc'd). */
static char **build_env(const kubecred_exec *x)
{
    char *info = kubecred_exec_info(x);
    if (!info)
        return NULL;
    size_t ne = 0;
    while (environ && environ[ne])
        ne++;
    char **v = calloc(ne + x->nenv + 2, sizeof *v);
    char *infov = malloc(strlen(info) + sizeof "KUBERNETES_EXEC_INFO=");
    if (!v || !infov) {
        free(v);
        free(infov);
        free(info);
        return NULL;
    }
    sprintf(infov, "KUBERNETES_EXEC_INFO=%s", info);
    free(info);
    size_t k = 0;
    for (size_t i = 0; i < ne; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int drop = nl == strlen("KUBERNETES_EXEC_INFO") && strncmp(environ[i], "KUBERNETES_EXEC_INFO", nl) == 0;
        for (size_t j = 0; j < x->nenv && !drop; j++)
            drop = strncmp(x->env[j], environ[i], nl) == 0 && x->env[j][nl] == '=';
        if (!drop)
            v[k++] = environ[i];
    }
    for (size_t j = 0; j < x->nenv; j++)
        v[k++] = x->env[j];
    v[k++] = infov;
    v[k] = NULL;
    return v;
}

/* Starts the plugin: stdin /dev/null, stdout and stderr to pipes (read ends non-blocking). */
static int proc_start(const kubecred_exec *x, proc *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->out_fd = p->err_fd = -1;
    p->out.first = 4096;
    if (kubecred_resolve(x, getenv("PATH"), p->cmd, sizeof p->cmd, err, errlen) != 0)
        return -1;
    const char *where = x->where ? x->where : "exec";
    int o[2] = {-1, -1}, e[2] = {-1, -1};
    if (pipe2(o, O_CLOEXEC) != 0 || pipe2(e, O_CLOEXEC) != 0) {
        util_set_err(err, errlen, "%s: %s: pipe: %s", where, p->cmd, strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (o[i] >= 0)
                close(o[i]);
            if (e[i] >= 0)
                close(e[i]);
        }
        return -1;
    }
    char **argv = calloc(x->nargs + 2, sizeof *argv);
    char **envp = build_env(x);
    int rc = -1;
    if (!argv || !envp) {
        util_set_err(err, errlen, "%s: out of memory", where);
    } else {
        argv[0] = p->cmd;
        for (size_t i = 0; i < x->nargs; i++)
            argv[i + 1] = x->args[i];
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, o[1], 1);
        posix_spawn_file_actions_adddup2(&fa, e[1], 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* our sockets are not the plugin's */
        posix_spawnattr_t at;
        posix_spawnattr_init(&at);
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&at, &none);     /* the loop may block signals */
        posix_spawnattr_setsigdefault(&at, &all);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        int e2 = posix_spawn(&p->pid, p->cmd, &fa, &at, argv, envp);
        posix_spawnattr_destroy(&at);
        posix_spawn_file_actions_destroy(&fa);
        if (e2 != 0)
            util_set_err(err, errlen, "%s: %s: %s", where, p->cmd, strerror(e2));
        else
            rc = 0;
    }
    if (envp) {
        size_t i = 0;
        while (envp[i + 1])
            i++;
        free(envp[i]);
    }
    free(envp);
    free(argv);
    close(o[1]);
    close(e[1]);
    if (rc) {
        close(o[0]);
        close(e[0]);
        return -1;
    }
    fcntl(o[0], F_SETFL, O_NONBLOCK);
    fcntl(e[0], F_SETFL, O_NONBLOCK);
    p->out_fd = o[0];
    p->err_fd = e[0];
    return 0;
}

/* Logs one stderr line of the plugin. */
static void log_stderr_line(proc *p, const char *s, size_t n)
{
    if (n && s[n - 1] == '\r')
        n--;
    const char *kvs[] = {"command", p->cmd, "line", s};
    size_t lens[] = {strlen(p->cmd), n};
    log_kvn(LOG_WARN, "exec plugin stderr", strlen("exec plugin stderr"), 2, kvs, lens);
}

/* Reads what is there on `fd` (p->out_fd or p->err_fd); closes it at EOF or a read error. */
static void proc_read(proc *p, int *fd)
{
    char b[8192];
    for (;;) {
        ssize_t r = read(*fd, b, sizeof b);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r <= 0) {
            if (fd == &p->err_fd && p->eline.len)
                log_stderr_line(p, p->eline.p, p->eline.len);
            p->eline.len = 0;
            close(*fd);
            *fd = -1;
            return;
        }
        if (fd == &p->out_fd) {
            if (p->out.len + (size_t)r > KUBECRED_STDOUT_MAX)
                p->too_big = 1;
            else
                util_buf_put(&p->out, b, (size_t)r);
            continue;
        }
        for (ssize_t i = 0; i < r; i++) {
            if (p->err_total++ >= KUBECRED_STDERR_MAX)
                break;
            if (b[i] == '\n') {
                log_stderr_line(p, p->eline.p ? p->eline.p : "", p->eline.len);
                p->eline.len = 0;
            } else {
                util_buf_put(&p->eline, b + i, 1);
            }
        }
    }
}

static void proc_close(proc *p)
{
    if (p->out_fd >= 0)
        close(p->out_fd);
    if (p->err_fd >= 0)
        close(p->err_fd);
    p->out_fd = p->err_fd = -1;
    if (p->pid > 0 && !p->exited) {
        kill(p->pid, SIGKILL);
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    p->exited = 1;
    util_buf_free(&p->out);
    util_buf_free(&p->eline);
}

/* The outcome of a finished run (both pipes at EOF, exit status known, or `timed_out`). */
static int proc_result(const kubecred_exec *x, proc *p, int timed_out, double timeout_s, kubecred *cred,
                       char *err, size_t errlen)
{
    const char *where = x->where ? x->where : "exec";
    int rc = -1;
    if (timed_out)
        util_set_err(err, errlen, "%s: %s: timed out after %g s (killed)", where, p->cmd, timeout_s);
    else if (WIFSIGNALED(p->status))
        util_set_err(err, errlen, "%s: %s: killed by signal %d", where, p->cmd, WTERMSIG(p->status));
    else if (!WIFEXITED(p->status) || WEXITSTATUS(p->status) != 0)
        util_set_err(err, errlen, "%s: %s: exit status %d", where, p->cmd, WEXITSTATUS(p->status));
    else if (p->too_big)
        util_set_err(err, errlen, "%s: ExecCredential: more than %d bytes", where, KUBECRED_STDOUT_MAX);
    else if (p->out.oom)
        util_set_err(err, errlen, "%s: out of memory", where);
    else
        rc = kubecred_parse(x, p->out.p ? p->out.p : "", p->out.len, cred, err, errlen);
    proc_close(p);
    return rc;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int kubecred_run_sync(const kubecred_exec *x, double timeout_s, kubecred *cred, char *err, size_t errlen)
{
    memset(cred, 0, sizeof *cred);
    if (!(timeout_s > 0))
        timeout_s = KUBECRED_TIMEOUT_S;
    proc p;
    if (proc_start(x, &p, err, errlen) != 0)
        return -1;
    double deadline = mono_now() + timeout_s;
    int timed_out = 0;
    while (p.out_fd >= 0 || p.err_fd >= 0 || !p.exited) {
        if (!p.exited) {
            int st;
            pid_t w = waitpid(p.pid, &st, WNOHANG);
            if (w == p.pid) {
                p.exited = 1;
                p.status = st;
            } else if (w < 0 && errno == ECHILD) {
                p.exited = 1;     /* reaped elsewhere: status unknown, taken as 0 */
            }
        }
        double left = deadline - mono_now();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd fds[2];
        nfds_t nf = 0;
        if (p.out_fd >= 0)
            fds[nf++] = (struct pollfd){.fd = p.out_fd, .events = POLLIN};
        if (p.err_fd >= 0)
            fds[nf++] = (struct pollfd){.fd = p.err_fd, .events = POLLIN};
        if (!nf) {
            if (!p.exited) {  /* pipes closed, not exited yet: wait a little */
                struct timespec ts = {0, 5 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        int ms = (int)(left * 1000) + 1;
        if (poll(fds, nf, ms) < 0 && errno != EINTR)
            break;
        if (p.out_fd >= 0)
            proc_read(&p, &p.out_fd);
        if (p.err_fd >= 0)
            proc_read(&p, &p.err_fd);
    }
    return proc_result(x, &p, timed_out, timeout_s, cred, err, errlen);
}

/* ---- asynchronous runs ------------------------------------------------ */

struct kubecred_job {
    struct ev_loop *loop;
    const kubecred_exec *x;     /* the caller's, outlives the job */
    proc p;
    double timeout_s;
    ev_io out_w, err_w;
    ev_timer deadline, reap;    /* reap: polls waitpid on a loop that is not the default one */
    ev_child child;
    int use_child;
    kubecred_done_fn done;
    void *ud;
};

static void job_stop(kubecred_job *j)
{
    ev_io_stop(j->loop, &j->out_w);
    ev_io_stop(j->loop, &j->err_w);
    ev_timer_stop(j->loop, &j->deadline);
    ev_timer_stop(j->loop, &j->reap);
    if (j->use_child)
        ev_child_stop(j->loop, &j->child);
}

static void job_finish(kubecred_job *j, int timed_out)
{
    job_stop(j);
    char err[1024] = "";
    kubecred cred;
    memset(&cred, 0, sizeof cred);
    int rc = proc_result(j->x, &j->p, timed_out, j->timeout_s, &cred, err, sizeof err);
    j->done(rc, rc == 0 ? &cred : NULL, rc == 0 ? "" : err, j->ud);
    kubecred_clear(&cred);
    free(j);
}

static void job_check(kubecred_job *j)
{
    if (j->p.out_fd < 0 && j->p.err_fd < 0 && j->p.exited)
        job_finish(j, 0);
    else if (j->p.out_fd < 0 && j->p.err_fd < 0 && !j->use_child && !ev_is_active(&j->reap))
        ev_timer_start(j->loop, &j->reap);
}

static void job_io(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    kubecred_job *j = w->data;
    int *fd = w == &j->out_w ? &j->p.out_fd : &j->p.err_fd;
    proc_read(&j->p, fd);
    if (*fd < 0)
        ev_io_stop(j->loop, w);
    job_check(j);
}

static void job_child(struct ev_loop *loop, ev_child *w, int revents)
{
    (void)loop;
    (void)revents;
    kubecred_job *j = w->data;
    j->p.exited = 1;
    j->p.status = w->rstatus;
    ev_child_stop(j->loop, w);
    job_check(j);
}

static void job_reap(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    kubecred_job *j = w->data;
    int st;
    pid_t r = waitpid(j->p.pid, &st, WNOHANG);
    if (r == j->p.pid || (r < 0 && errno == ECHILD)) {
        j->p.exited = 1;
        j->p.status = r == j->p.pid ? st : 0;
        ev_timer_stop(j->loop, w);
        job_check(j);
    }
}

static void job_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    job_finish(w->data, 1);
}

kubecred_job *kubecred_run_async(struct ev_loop *loop, const kubecred_exec *x, double timeout_s,
                                 kubecred_done_fn done, void *ud, char *err, size_t errlen)
{
    kubecred_job *j = calloc(1, sizeof *j);
    if (!j) {
        util_set_err(err, errlen, "%s: out of memory", x->where ? x->where : "exec");
        return NULL;
    }
    if (proc_start(x, &j->p, err, errlen) != 0) {
        free(j);
        return NULL;
    }
    j->loop = loop;
    j->x = x;
    j->timeout_s = timeout_s > 0 ? timeout_s : KUBECRED_TIMEOUT_S;
    j->done = done;
    j->ud = ud;
    ev_io_init(&j->out_w, job_io, j->p.out_fd, EV_READ);
    ev_io_init(&j->err_w, job_io, j->p.err_fd, EV_READ);
    ev_timer_init(&j->deadline, job_deadline, j->timeout_s, 0.);
    ev_timer_init(&j->reap, job_reap, 0.01, 0.01);
    j->out_w.data = j->err_w.data = j->deadline.data = j->reap.data = j;
    ev_io_start(loop, &j->out_w);
    ev_io_start(loop, &j->err_w);
    ev_timer_start(loop, &j->deadline);
    /* the default loop's SIGCHLD handler reaps every child (waitpid(-1)): only ev_child sees
     * the status there; it is started before the loop runs again, so no exit is missed */
    j->use_child = ev_is_default_loop(loop);
    if (j->use_child) {
        ev_child_init(&j->child, job_child, j->p.pid, 0);
        j->child.data = j;
        ev_child_start(loop, &j->child);
    }
    return j;
}

void kubecred_cancel(kubecred_job *j)
{
    if (!j)
        return;
    job_stop(j);
    proc_close(&j->p);
    free(j);
}
