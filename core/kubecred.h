/* SPDX-License-Identifier: Apache-2.0 */
/* core/kubecred: client-go's exec credential plugins (kubeconfig users[].user.exec; the
 * protocol of k8s.io/client-go/plugin/pkg/client/auth/exec and the client.authentication.k8s.io
 * ExecCredential API, v1 and v1beta1).
 *
 * A plugin is a program run without a shell: argv = command + args, the environment ours plus
 * the kubeconfig's env entries (they win over ours) plus KUBERNETES_EXEC_INFO (an
 * ExecCredential with spec.interactive false and, with provideClusterInfo, spec.cluster), stdin
 * /dev/null (we have no terminal), stdout read as one ExecCredential JSON, stderr lines logged
 * (warn, "exec plugin stderr"). A run is bounded by KUBECRED_TIMEOUT_S; past it the plugin is
 * killed (SIGKILL) and the run fails.
 *
 * Two ways to run: kubecred_run_sync() blocks (used once, when the client is made, so that a
 * broken plugin stops the start with its message), kubecred_run_async() runs on a libev loop
 * (pipes watched with ev_io; the exit seen with ev_child on the default loop, whose SIGCHLD
 * handler reaps every child, else by polling waitpid) and reports once through its callback.
 *
 * Errors: 0 / -1 with a message in err that starts with the plugin's place in the kubeconfig
 * (kubecred_exec.where, e.g. "kubeconfig F: users[name=x].user.exec") and names the field of
 * the ExecCredential that is wrong, e.g. "...: ExecCredential status.expirationTimestamp: not
 * an RFC 3339 time: \"soon\"". Nothing aborts.
 */
#ifndef FC_KUBECRED_H
#define FC_KUBECRED_H

#include <stddef.h>
#include <ev.h>

#define KUBECRED_TIMEOUT_S 30.0       /* one plugin run, start to exit */
#define KUBECRED_STDOUT_MAX (1 << 20) /* bytes of ExecCredential accepted */
#define KUBECRED_STDERR_MAX (64 << 10) /* bytes of stderr logged per run */
#define KUBECRED_API_V1 "client.authentication.k8s.io/v1"
#define KUBECRED_API_V1BETA1 "client.authentication.k8s.io/v1beta1"

/* interactiveMode (client-go ExecInteractiveMode). We never have a terminal: Never and
 * IfAvailable run the plugin non-interactively, Always is refused when the kubeconfig loads. */
enum { KUBECRED_NEVER = 0, KUBECRED_IF_AVAILABLE = 1, KUBECRED_ALWAYS = 2 };

/* One users[].user.exec, as kube_config_load_file fills it. Strings are owned (malloc'd). */
typedef struct kubecred_exec {
    char *where;            /* "kubeconfig F: users[name=x].user.exec", the errors' prefix */
    char *api_version;      /* KUBECRED_API_V1 or KUBECRED_API_V1BETA1 */
    char *command;          /* as written; with a '/' it was made absolute against the
                               kubeconfig's directory; without one it is looked up in $PATH
                               at each run (kubectl: exec.LookPath) */
    char **args;            /* nargs strings */
    size_t nargs;
    char **env;             /* nenv "NAME=value" strings */
    size_t nenv;
    int interactive_mode;   /* KUBECRED_NEVER / KUBECRED_IF_AVAILABLE */
    int provide_cluster_info;
    char *install_hint;     /* shown when the command is not found, or NULL */
    /* spec.cluster of KUBERNETES_EXEC_INFO (provideClusterInfo): the context's cluster */
    char *server;
    char *ca_pem;           /* CA bytes (certificate-authority-data, or the file's content) */
    size_t ca_pem_len;
    int insecure;
    char *proxy_url;        /* or NULL */
    char *tls_server_name;  /* or NULL */
} kubecred_exec;

/* Frees what `x` holds and `x` itself. NULL is fine. */
void kubecred_exec_free(kubecred_exec *x);
/* A deep copy, or NULL when out of memory (or `x` NULL). */
kubecred_exec *kubecred_exec_copy(const kubecred_exec *x);

/* A credential a plugin returned. Strings owned; `expiry` Unix seconds (wall clock), 0 when
 * the plugin gave no expirationTimestamp (then it is kept until a 401). */
typedef struct kubecred {
    char *token;            /* status.token, or NULL */
    char *cert_pem;         /* status.clientCertificateData (PEM), or NULL */
    size_t cert_pem_len;
    char *key_pem;          /* status.clientKeyData (PEM), or NULL */
    size_t key_pem_len;
    double expiry;
} kubecred;

/* Frees the strings of `c` and zeroes it. Safe on a zeroed credential. */
void kubecred_clear(kubecred *c);

/* The value of KUBERNETES_EXEC_INFO for `x` (client-go refreshCredsLocked): a malloc'd JSON
 * text {"apiVersion": x->api_version, "kind": "ExecCredential", "spec": {"interactive": false
 * [, "cluster": {"server", "certificate-authority-data" (base64), "insecure-skip-tls-verify",
 * "proxy-url", "tls-server-name"}]}} (cluster only with provideClusterInfo). NULL on OOM. */
char *kubecred_exec_info(const kubecred_exec *x);

/* Parses a plugin's stdout (`len` bytes) as an ExecCredential (client-go exec.go rules): a
 * JSON object whose kind is "ExecCredential" and apiVersion the configured one, with a status
 * holding a token, or clientCertificateData and clientKeyData together (one alone is an error),
 * and an optional expirationTimestamp (RFC 3339). Fills *cred (zeroed first) and returns 0, or
 * -1 with err "<where>: ExecCredential <field>: <reason>". */
int kubecred_parse(const kubecred_exec *x, const char *out, size_t len, kubecred *cred, char *err,
                   size_t errlen);

/* Parses an RFC 3339 time ("2026-12-04T21:00:00Z", fractional seconds and a +hh:mm / -hh:mm
 * offset allowed) into Unix seconds. 0, or -1 when it is anything else. */
int kubecred_parse_time(const char *s, double *out);

/* The program a run executes: `x->command` when it holds a '/', else the first executable
 * regular file <dir>/<command> over the ':' entries of `path_env` ($PATH; an empty entry is
 * the current directory). Writes it into buf (n bytes) and returns 0, or -1 with err
 * "<where>.command: <cmd>: executable not found in $PATH[; <installHint>]" (for a path:
 * "executable not found" or "not an executable file"). */
int kubecred_resolve(const kubecred_exec *x, const char *path_env, char *buf, size_t n, char *err,
                     size_t errlen);

/* Runs the plugin and waits for it (at most `timeout_s` seconds, <= 0: KUBECRED_TIMEOUT_S),
 * then parses its output into *cred. Blocks the calling thread: for start-up only. Errors:
 * kubecred_resolve's, "<where>: <cmd>: exit status N" (or "killed by signal N", "timed out
 * after S s (killed)"), kubecred_parse's. */
int kubecred_run_sync(const kubecred_exec *x, double timeout_s, kubecred *cred, char *err, size_t errlen);

typedef struct kubecred_job kubecred_job;
/* The end of an asynchronous run: rc 0 with `cred` (the callee may take its strings, zeroing
 * them; what is left is freed after the callback), or -1 with `err` (cred NULL). The job is
 * freed when the callback returns. */
typedef void (*kubecred_done_fn)(int rc, kubecred *cred, const char *err, void *ud);

/* Starts the plugin on `loop`; `done` fires once, from the loop, never from inside this call.
 * `x` must outlive the job. Returns the job, or NULL with err filled (not found, spawn failed)
 * and no callback. */
kubecred_job *kubecred_run_async(struct ev_loop *loop, const kubecred_exec *x, double timeout_s,
                                 kubecred_done_fn done, void *ud, char *err, size_t errlen);
/* Stops a job that has not reported (kills the plugin, reaps it); no callback. NULL is fine. */
void kubecred_cancel(kubecred_job *j);

#endif
