/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube_config: where and how to reach the API server: a kubeconfig file (YAML, parsed with
 * libyaml), the files of $KUBECONFIG merged as kubectl merges them, the in-cluster service
 * account, and the order controller-runtime tries them in. core/kube's client copies the
 * config it is given (kube_client_new).
 *
 * Errors: functions returning int give 0 on success and -1 with a message in `err` naming the
 * file and the field (never abort on bad input).
 */
#ifndef FC_KUBE_CONFIG_H
#define FC_KUBE_CONFIG_H

#include <stddef.h>

#include "kubecred.h"

#define KUBE_DEFAULT_QPS 5.0    /* client-go rest.DefaultQPS */
#define KUBE_DEFAULT_BURST 10   /* client-go rest.DefaultBurst */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_CONFIG_FILES_MAX 16 /* files of a $KUBECONFIG list */

/* ---- configuration --------------------------------------------------- */

/* Where and how to reach the API server. Strings are owned (malloc'd) and
 * freed by kube_config_clear(). TLS material is either a file path or PEM
 * bytes (`*_pem`, `*_pem_len` bytes, decoded from kubeconfig `*-data`). */
typedef struct kube_config {
    char *server;            /* "https://host:port", no trailing slash */
    char *ca_file;
    char *ca_pem;
    size_t ca_pem_len;
    char *cert_file;
    char *cert_pem;
    size_t cert_pem_len;
    char *key_file;
    char *key_pem;
    size_t key_pem_len;
    char *token;             /* static bearer token (kubeconfig user.token) */
    char *token_file;        /* bearer token file, re-read every
                                KUBE_TOKEN_RELOAD_S seconds and on a 401;
                                when set it wins over `token` */
    int insecure;            /* insecure-skip-tls-verify */
    char *namespace;         /* context namespace, in-cluster namespace file,
                                else "default" */
    char *context;           /* context name used (kubeconfig), or "in-cluster" */
    double qps;              /* client-side rate limit, requests/second; <= 0:
                                unlimited. Default KUBE_DEFAULT_QPS */
    int burst;               /* token bucket size, default KUBE_DEFAULT_BURST */
    char *proxy_url;         /* clusters[].cluster.proxy-url (http://, https://, socks5://), or
                                NULL: then libcurl's environment proxies (https_proxy,
                                HTTPS_PROXY, no_proxy, NO_PROXY; http_proxy for http://), not
                                for a loopback server (Go's ProxyFromEnvironment) */
    kubecred_exec *exec;     /* users[].user.exec, or NULL (core/kubecred.h) */
} kube_config;

/* Loads a kubeconfig file (YAML, parsed with libyaml). `context` NULL uses
 * `current-context` (kubectl --context). Resolves contexts[].context.{cluster,user,namespace},
 * clusters[].cluster.{server, certificate-authority(-data), insecure-skip-tls-verify,
 * proxy-url} and users[].user.{client-certificate(-data), client-key(-data), token, tokenFile,
 * exec}; relative file paths (and an exec command with a '/') are relative to the
 * kubeconfig's directory (as client-go does). exec: apiVersion client.authentication.k8s.io/v1
 * or v1beta1, command, args, env [{name, value}], interactiveMode (v1: required; Always is
 * refused: no terminal), provideClusterInfo, installHint; a token, tokenFile or client
 * certificate of the same user wins and the plugin is dropped (client-go). `auth-provider` and
 * basic auth (username/password) are refused. Errors name the file and the field, e.g.
 * "kubeconfig /x: users[name=dev].user.client-key-data: invalid base64",
 * "kubeconfig /x: users[name=eks].user.exec.command: missing". */
int kube_config_load_file(kube_config *cfg, const char *path, const char *context,
                          char *err, size_t errlen);

/* kube_config_load_file over several files merged as kubectl merges $KUBECONFIG: the first
 * file that sets current-context wins, and a context, cluster or user is taken whole from the
 * first file that has its name; relative paths resolve against the file that holds the entry.
 * With n > 1 a missing or empty file is skipped (at least one must exist); with n == 1 it is an
 * error as in kube_config_load_file. At most KUBE_CONFIG_FILES_MAX files. An error about the
 * whole set ("contexts[name=x]: not found") names the files joined with ':'. */
int kube_config_load_files(kube_config *cfg, const char *const *paths, size_t n, const char *context,
                           char *err, size_t errlen);

/* In-cluster config as client-go InClusterConfig(): needs env
 * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (IPv6 hosts get
 * brackets), CA `<sa_dir>/ca.crt`, token file `<sa_dir>/token` (kept as a
 * token_file so rotation is picked up), namespace from `<sa_dir>/namespace`.
 * `sa_dir` NULL means KUBE_SA_DIR. */
int kube_config_load_incluster(kube_config *cfg, const char *sa_dir, char *err, size_t errlen);

/* The order controller-runtime uses: `path` if given, else $KUBECONFIG (a ':' list, merged
 * by kube_config_load_files), else in-cluster when KUBERNETES_SERVICE_HOST is set, else
 * ~/.kube/config (also when in-cluster fails and it exists). `context` (kubectl --context;
 * NULL: current-context) selects the kubeconfig's context; with a context the in-cluster
 * config is not tried. */
int kube_config_load_default(kube_config *cfg, const char *path, const char *context, char *err,
                             size_t errlen);

/* Frees the strings of `cfg` and zeroes it. Safe on a zeroed config. */
void kube_config_clear(kube_config *cfg);

/* Reads the token file `path` (at most 64 KiB), surrounding whitespace trimmed: a malloc'd
 * string the caller frees, or NULL with the reason in `why` (the read error, "empty token").
 * The in-cluster token and namespace files; core/kube re-reads a kube_config.token_file with
 * it. */
char *kube_config_read_token(const char *path, char *why, size_t whylen);

#endif
