/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube: kube client config, rate limit and API calls. See kube.h. */
#include "kube.h"
#include "util.h"
#include "http.h"
#include "log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <yaml.h>

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Reads a token file, trimming surrounding whitespace. */
static char *read_token(const char *path, char *why, size_t whylen)
{
    char *t = util_read_file(path, 64 << 10, NULL, why, whylen);
    if (!t)
        return NULL;
    char *s = t;
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    if (!n) {
        util_set_err(why, whylen, "empty token");
        free(t);
        return NULL;
    }
    memmove(t, s, n + 1);
    return t;
}

/* ---- configuration --------------------------------------------------- */

void kube_config_clear(kube_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->ca_file);
    free(cfg->ca_pem);
    free(cfg->cert_file);
    free(cfg->cert_pem);
    free(cfg->key_file);
    free(cfg->key_pem);
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->namespace);
    free(cfg->context);
    free(cfg->proxy_url);
    kubecred_exec_free(cfg->exec);
    memset(cfg, 0, sizeof *cfg);
}

static yaml_node_t *ymap_get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strlen(key) == k->data.scalar.length &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

/* The string value of a scalar node; NULL for absent/null/non-scalar. */
static const char *yscalar(yaml_node_t *n)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        return NULL;
    const char *v = (const char *)n->data.scalar.value;
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (strcmp(v, "null") == 0 || strcmp(v, "~") == 0 || *v == '\0'))
        return NULL;
    return v;
}

/* The item of a `[{name: X, <field>: {...}}]` list whose name is `name`. */
static yaml_node_t *ynamed(yaml_document_t *d, yaml_node_t *seq, const char *name)
{
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top; i++) {
        yaml_node_t *item = yaml_document_get_node(d, *i);
        const char *n = yscalar(ymap_get(d, item, "name"));
        if (n && strcmp(n, name) == 0)
            return item;
    }
    return NULL;
}

static int b64_decode(const char *in, char **out, size_t *out_len)
{
    size_t n = strlen(in);
    unsigned char *buf = malloc(n / 4 * 3 + 4);
    if (!buf)
        return -1;
    EVP_ENCODE_CTX *ctx = EVP_ENCODE_CTX_new();
    if (!ctx) {
        free(buf);
        return -1;
    }
    int len = 0, fin = 0;
    EVP_DecodeInit(ctx);
    int rc = EVP_DecodeUpdate(ctx, buf, &len, (const unsigned char *)in, (int)n);
    if (rc >= 0)
        rc = EVP_DecodeFinal(ctx, buf + len, &fin);
    EVP_ENCODE_CTX_free(ctx);
    if (rc < 0 || len + fin == 0) {
        free(buf);
        return -1;
    }
    buf[len + fin] = '\0';
    *out = (char *)buf;
    *out_len = (size_t)(len + fin);
    return 0;
}

/* A path from the kubeconfig, made absolute against its directory. */
static char *resolve_path(const char *kubeconfig, const char *p)
{
    if (p[0] == '/')
        return strdup(p);
    const char *slash = strrchr(kubeconfig, '/');
    if (!slash)
        return strdup(p);
    size_t dl = (size_t)(slash - kubeconfig);
    char *r = malloc(dl + strlen(p) + 2);
    if (!r)
        return NULL;
    memcpy(r, kubeconfig, dl);
    r[dl] = '/';
    strcpy(r + dl + 1, p);
    return r;
}

/* Fills (*pem,*len) from `<field>-data` or (*file) from `<field>`. */
static int tls_field(yaml_document_t *d, yaml_node_t *map, const char *field, const char *where,
                     const char *path, char **file, char **pem, size_t *pem_len, char *err,
                     size_t errlen)
{
    char dkey[64];
    snprintf(dkey, sizeof dkey, "%s-data", field);
    const char *data = yscalar(ymap_get(d, map, dkey));
    const char *fpath = yscalar(ymap_get(d, map, field));
    if (data) {
        if (b64_decode(data, pem, pem_len) != 0) {
            util_set_err(err, errlen, "kubeconfig %s: %s.%s: invalid base64", path, where, dkey);
            return -1;
        }
        return 0;
    }
    if (fpath) {
        *file = resolve_path(path, fpath);
        struct stat st;
        if (!*file || stat(*file, &st) != 0) {
            util_set_err(err, errlen, "kubeconfig %s: %s.%s: cannot read %s", path, where, field,
                    *file ? *file : fpath);
            return -1;
        }
    }
    return 0;
}

/* The documents of a kubeconfig: one file, or the files of $KUBECONFIG in order. */
typedef struct kc_set {
    size_t n;
    const char *path[KUBE_CONFIG_FILES_MAX];
    yaml_document_t doc[KUBE_CONFIG_FILES_MAX];
    char label[4096];   /* the paths joined with ':' (errors about the whole set) */
} kc_set;

/* The first file's `list` item (contexts, clusters, users) called `name` (kubectl's merge:
 * the first file that sets a name wins, whole); *which gets the file's index. */
static yaml_node_t *kc_named(kc_set *s, const char *list, const char *name, size_t *which)
{
    for (size_t i = 0; i < s->n; i++) {
        yaml_document_t *d = &s->doc[i];
        yaml_node_t *item = ynamed(d, ymap_get(d, yaml_document_get_root_node(d), list), name);
        if (item) {
            *which = i;
            return item;
        }
    }
    return NULL;
}

/* A scalar that must be "true" or "false" (absent: 0). -1 for anything else. */
static int ybool(yaml_node_t *n)
{
    const char *v = yscalar(n);
    if (!v)
        return n && n->type != YAML_SCALAR_NODE ? -1 : 0;
    return strcmp(v, "true") == 0 ? 1 : strcmp(v, "false") == 0 ? 0 : -1;
}

static yaml_node_t ylist_bad; /* ylist's error */

/* The sequence under `key` of `map` with its length in *n: NULL (n 0) when absent or null,
 * &ylist_bad with err "<where>.<key>: not a list" when it is something else. */
static yaml_node_t *ylist(yaml_document_t *d, yaml_node_t *map, const char *key, const char *where, size_t *n,
                          char *err, size_t errlen)
{
    yaml_node_t *l = ymap_get(d, map, key);
    *n = 0;
    if (!l || (l->type == YAML_SCALAR_NODE && !yscalar(l)))
        return NULL;
    if (l->type != YAML_SEQUENCE_NODE) {
        util_set_err(err, errlen, "%s.%s: not a list", where, key);
        return &ylist_bad;
    }
    *n = (size_t)(l->data.sequence.items.top - l->data.sequence.items.start);
    return l;
}

/* users[name=U].user.exec -> cfg->exec. `where` is "users[name=U].user". */
static int load_exec(kube_config *cfg, yaml_document_t *d, yaml_node_t *ex, const char *path, const char *where,
                     char *err, size_t errlen)
{
    kubecred_exec *x = calloc(1, sizeof *x);
    if (!x)
        goto oom;
    cfg->exec = x;
    char w[400];
    snprintf(w, sizeof w, "kubeconfig %s: %s.exec", path, where);
    if (!(x->where = strdup(w)))
        goto oom;
    if (ex->type != YAML_MAPPING_NODE) {
        util_set_err(err, errlen, "%s: not a mapping", w);
        return -1;
    }
    const char *av = yscalar(ymap_get(d, ex, "apiVersion"));
    if (!av) {
        util_set_err(err, errlen, "%s.apiVersion: missing", w);
        return -1;
    }
    if (strcmp(av, KUBECRED_API_V1) != 0 && strcmp(av, KUBECRED_API_V1BETA1) != 0) {
        util_set_err(err, errlen, "%s.apiVersion: %s: not supported (%s or %s)", w, av, KUBECRED_API_V1,
                     KUBECRED_API_V1BETA1);
        return -1;
    }
    const char *cmd = yscalar(ymap_get(d, ex, "command"));
    if (!cmd) {
        util_set_err(err, errlen, "%s.command: missing", w);
        return -1;
    }
    /* a command with a '/' is a path relative to the kubeconfig (client-go ResolvePaths) */
    x->api_version = strdup(av);
    x->command = strchr(cmd, '/') ? resolve_path(path, cmd) : strdup(cmd);
    const char *hint = yscalar(ymap_get(d, ex, "installHint"));
    if (!x->api_version || !x->command || (hint && !(x->install_hint = strdup(hint))))
        goto oom;
    size_t n;
    yaml_node_t *args = ylist(d, ex, "args", w, &n, err, errlen);
    if (args == &ylist_bad)
        return -1;
    if (n && !(x->args = calloc(n, sizeof *x->args)))
        goto oom;
    if (args) {
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *a = yaml_document_get_node(d, args->data.sequence.items.start[i]);
            if (!a || a->type != YAML_SCALAR_NODE) {
                util_set_err(err, errlen, "%s.args[%zu]: not a string", w, i);
                return -1;
            }
            if (!(x->args[x->nargs++] = strdup((const char *)a->data.scalar.value)))
                goto oom;
        }
    }
    yaml_node_t *env = ylist(d, ex, "env", w, &n, err, errlen);
    if (env == &ylist_bad)
        return -1;
    if (n && !(x->env = calloc(n, sizeof *x->env)))
        goto oom;
    if (env) {
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *e = yaml_document_get_node(d, env->data.sequence.items.start[i]);
            const char *name = yscalar(ymap_get(d, e, "name"));
            yaml_node_t *vn = ymap_get(d, e, "value");
            const char *value = vn && vn->type == YAML_SCALAR_NODE ? (const char *)vn->data.scalar.value : NULL;
            if (!name || strchr(name, '=')) {
                util_set_err(err, errlen, "%s.env[%zu].name: %s", w, i, name ? "holds '='" : "missing");
                return -1;
            }
            if (!value) {
                util_set_err(err, errlen, "%s.env[%zu].value: missing", w, i);
                return -1;
            }
            size_t l = strlen(name) + strlen(value) + 2;
            if (!(x->env[x->nenv] = malloc(l)))
                goto oom;
            snprintf(x->env[x->nenv++], l, "%s=%s", name, value);
        }
    }
    /* client-go clientcmd: v1beta1 defaults to IfAvailable, v1 must say (SetDefaults_ExecConfig,
     * validateAuthInfo) */
    const char *im = yscalar(ymap_get(d, ex, "interactiveMode"));
    if (!im && strcmp(av, KUBECRED_API_V1) == 0) {
        util_set_err(err, errlen, "%s.interactiveMode: missing (%s needs Never, IfAvailable or Always)", w, av);
        return -1;
    }
    if (!im || strcmp(im, "IfAvailable") == 0) {
        x->interactive_mode = KUBECRED_IF_AVAILABLE;
    } else if (strcmp(im, "Never") == 0) {
        x->interactive_mode = KUBECRED_NEVER;
    } else if (strcmp(im, "Always") == 0) {
        util_set_err(err, errlen, "%s.interactiveMode: Always needs a terminal and flink-controller has none "
                     "(Never or IfAvailable)", w);
        return -1;
    } else {
        util_set_err(err, errlen, "%s.interactiveMode: %s: not Never, IfAvailable or Always", w, im);
        return -1;
    }
    int pci = ybool(ymap_get(d, ex, "provideClusterInfo"));
    if (pci < 0) {
        util_set_err(err, errlen, "%s.provideClusterInfo: not true or false", w);
        return -1;
    }
    x->provide_cluster_info = pci;
    return 0;
oom:
    util_set_err(err, errlen, "kubeconfig %s: out of memory", path);
    return -1;
}

/* The cluster's part of KUBERNETES_EXEC_INFO (provideClusterInfo): server, CA bytes (from the
 * file when the kubeconfig names one), insecure, proxy-url, tls-server-name. */
static int exec_cluster_info(kube_config *cfg, const char *tls_server_name, char *err, size_t errlen)
{
    kubecred_exec *x = cfg->exec;
    char why[256] = "";
    if (!(x->server = strdup(cfg->server)) || (cfg->proxy_url && !(x->proxy_url = strdup(cfg->proxy_url))) ||
        (tls_server_name && !(x->tls_server_name = strdup(tls_server_name)))) {
        util_set_err(err, errlen, "%s: out of memory", x->where);
        return -1;
    }
    x->insecure = cfg->insecure;
    if (cfg->ca_pem) {
        x->ca_pem = util_memdup(cfg->ca_pem, cfg->ca_pem_len);
        x->ca_pem_len = cfg->ca_pem_len;
    } else if (cfg->ca_file) {
        x->ca_pem = util_read_file(cfg->ca_file, 4 << 20, &x->ca_pem_len, why, sizeof why);
        if (!x->ca_pem) {
            util_set_err(err, errlen, "%s.provideClusterInfo: %s: %s", x->where, cfg->ca_file, why);
            return -1;
        }
    }
    return 0;
}

static int load_doc(kube_config *cfg, kc_set *s, const char *want_ctx, char *err, size_t errlen)
{
    const char *ctx_name = want_ctx && *want_ctx ? want_ctx : NULL;
    for (size_t i = 0; i < s->n && !ctx_name; i++)
        ctx_name = yscalar(ymap_get(&s->doc[i], yaml_document_get_root_node(&s->doc[i]), "current-context"));
    if (!ctx_name) {
        util_set_err(err, errlen, "kubeconfig %s: current-context: missing", s->label);
        return -1;
    }
    size_t fi = 0;
    yaml_node_t *ctx_item = kc_named(s, "contexts", ctx_name, &fi);
    if (!ctx_item) {
        util_set_err(err, errlen, "kubeconfig %s: contexts[name=%s]: not found", s->label, ctx_name);
        return -1;
    }
    yaml_document_t *d = &s->doc[fi];
    const char *path = s->path[fi];
    yaml_node_t *ctx = ymap_get(d, ctx_item, "context");
    const char *cluster_name = yscalar(ymap_get(d, ctx, "cluster"));
    const char *user_name = yscalar(ymap_get(d, ctx, "user"));
    const char *ns = yscalar(ymap_get(d, ctx, "namespace"));
    if (!cluster_name) {
        util_set_err(err, errlen, "kubeconfig %s: contexts[name=%s].context.cluster: missing", path, ctx_name);
        return -1;
    }
    yaml_node_t *cl_item = kc_named(s, "clusters", cluster_name, &fi);
    if (!cl_item) {
        util_set_err(err, errlen, "kubeconfig %s: clusters[name=%s]: not found", s->label, cluster_name);
        return -1;
    }
    d = &s->doc[fi];
    path = s->path[fi];
    char where[300];
    snprintf(where, sizeof where, "clusters[name=%s].cluster", cluster_name);
    yaml_node_t *cl = ymap_get(d, cl_item, "cluster");
    const char *server = yscalar(ymap_get(d, cl, "server"));
    if (!server) {
        util_set_err(err, errlen, "kubeconfig %s: %s.server: missing", path, where);
        return -1;
    }
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0) {
        util_set_err(err, errlen, "kubeconfig %s: %s.server: not an http(s) URL: %s", path, where, server);
        return -1;
    }
    cfg->server = strdup(server);
    size_t sl = strlen(cfg->server);
    while (sl > 8 && cfg->server[sl - 1] == '/')
        cfg->server[--sl] = '\0';
    const char *insecure = yscalar(ymap_get(d, cl, "insecure-skip-tls-verify"));
    cfg->insecure = insecure && strcmp(insecure, "true") == 0;
    if (tls_field(d, cl, "certificate-authority", where, path, &cfg->ca_file, &cfg->ca_pem,
                  &cfg->ca_pem_len, err, errlen) != 0)
        return -1;
    const char *proxy = yscalar(ymap_get(d, cl, "proxy-url"));
    /* client-go clientcmd parseProxyURL: http, https or socks5 */
    if (proxy && strncmp(proxy, "http://", 7) != 0 && strncmp(proxy, "https://", 8) != 0 &&
        strncmp(proxy, "socks5://", 9) != 0) {
        util_set_err(err, errlen, "kubeconfig %s: %s.proxy-url: %s: not an http://, https:// or socks5:// URL", path,
                     where, proxy);
        return -1;
    }
    if (proxy && !(cfg->proxy_url = strdup(proxy)))
        goto oom;
    const char *tls_server_name = yscalar(ymap_get(d, cl, "tls-server-name"));
    if (user_name) {
        yaml_node_t *u_item = kc_named(s, "users", user_name, &fi);
        if (!u_item) {
            util_set_err(err, errlen, "kubeconfig %s: users[name=%s]: not found", s->label, user_name);
            return -1;
        }
        d = &s->doc[fi];
        path = s->path[fi];
        snprintf(where, sizeof where, "users[name=%s].user", user_name);
        yaml_node_t *u = ymap_get(d, u_item, "user");
        if (ymap_get(d, u, "auth-provider")) {
            util_set_err(err, errlen, "kubeconfig %s: %s.auth-provider: not supported (kubectl dropped the gcp and "
                         "azure providers in 1.26: use their exec plugins, gke-gcloud-auth-plugin or kubelogin)",
                         path, where);
            return -1;
        }
        if (ymap_get(d, u, "username") || ymap_get(d, u, "password")) {
            util_set_err(err, errlen, "kubeconfig %s: %s.username: basic auth is not supported (the API server "
                         "dropped it in 1.19)", path, where);
            return -1;
        }
        if (tls_field(d, u, "client-certificate", where, path, &cfg->cert_file, &cfg->cert_pem,
                      &cfg->cert_pem_len, err, errlen) != 0 ||
            tls_field(d, u, "client-key", where, path, &cfg->key_file, &cfg->key_pem,
                      &cfg->key_pem_len, err, errlen) != 0)
            return -1;
        int has_cert = cfg->cert_file || cfg->cert_pem, has_key = cfg->key_file || cfg->key_pem;
        if (has_cert != has_key) {
            util_set_err(err, errlen, "kubeconfig %s: %s.%s: missing (client certificate and key go together)",
                    path, where, has_cert ? "client-key" : "client-certificate");
            return -1;
        }
        const char *token = yscalar(ymap_get(d, u, "token"));
        const char *token_file = yscalar(ymap_get(d, u, "tokenFile"));
        /* both may be set: the file's last good read wins (client-go rest.Config) */
        if (token)
            cfg->token = strdup(token);
        if (token_file)
            cfg->token_file = resolve_path(path, token_file);
        yaml_node_t *ex = ymap_get(d, u, "exec");
        if (ex && load_exec(cfg, d, ex, path, where, err, errlen) != 0)
            return -1;
        /* a token or a client certificate of the kubeconfig wins over the plugin, which is then
         * never run (client-go exec Authenticator.UpdateTransportConfig) */
        if (cfg->exec && (token || token_file || has_cert)) {
            kubecred_exec_free(cfg->exec);
            cfg->exec = NULL;
        }
    }
    cfg->namespace = strdup(ns ? ns : "default");
    cfg->context = strdup(ctx_name);
    if (!cfg->server || !cfg->namespace || !cfg->context)
        goto oom;
    if (cfg->exec && cfg->exec->provide_cluster_info && exec_cluster_info(cfg, tls_server_name, err, errlen) != 0)
        return -1;
    return 0;
oom:
    util_set_err(err, errlen, "kubeconfig %s: out of memory", s->label);
    return -1;
}

/* Reads and parses s->path[i] into s->doc[i]. 1 when the file is absent and `skip_missing`
 * (a $KUBECONFIG entry, which kubectl skips), 0 when loaded, -1 on an error. */
static int kc_read(kc_set *s, size_t i, int skip_missing, char *err, size_t errlen)
{
    const char *path = s->path[i];
    char why[256] = "";
    size_t len = 0;
    struct stat st;
    if (skip_missing && stat(path, &st) != 0 && errno == ENOENT)
        return 1;
    char *text = util_read_file(path, 16 << 20, &len, why, sizeof why);
    if (!text) {
        util_set_err(err, errlen, "kubeconfig %s: %s", path, why);
        return -1;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        free(text);
        util_set_err(err, errlen, "kubeconfig %s: out of memory", path);
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rc = 0;
    if (!yaml_parser_load(&parser, &s->doc[i])) {
        util_set_err(err, errlen, "kubeconfig %s: line %zu: %s", path, parser.problem_mark.line + 1,
                parser.problem ? parser.problem : "YAML error");
        rc = -1;
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&s->doc[i]);
        if (root && root->type != YAML_MAPPING_NODE) {
            util_set_err(err, errlen, "kubeconfig %s: top level is not a mapping", path);
            rc = -1;
        } else if (!root && !skip_missing) {
            util_set_err(err, errlen, "kubeconfig %s: empty document", path);
            rc = -1;
        }
        if (rc)
            yaml_document_delete(&s->doc[i]);
    }
    yaml_parser_delete(&parser);
    free(text);
    return rc;
}

int kube_config_load_files(kube_config *cfg, const char *const *paths, size_t n, const char *context,
                           char *err, size_t errlen)
{
    if (!cfg || !paths || !n) {
        util_set_err(err, errlen, "kube_config_load_files: config and paths are required");
        return -1;
    }
    memset(cfg, 0, sizeof *cfg);
    if (n > KUBE_CONFIG_FILES_MAX) {
        util_set_err(err, errlen, "kubeconfig: more than %d files", KUBE_CONFIG_FILES_MAX);
        return -1;
    }
    kc_set *s = calloc(1, sizeof *s);
    if (!s) {
        util_set_err(err, errlen, "kubeconfig %s: out of memory", paths[0]);
        return -1;
    }
    int rc = 0;
    size_t off = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        s->path[s->n] = paths[i];
        int r = kc_read(s, s->n, n > 1, err, errlen);
        if (r < 0)
            rc = -1;
        else if (r == 0) {
            int w = snprintf(s->label + off, sizeof s->label - off, "%s%s", s->n ? ":" : "", paths[i]);
            off += w > 0 && (size_t)w < sizeof s->label - off ? (size_t)w : 0;
            s->n++;
        }
    }
    if (rc == 0 && s->n == 0) {
        util_set_err(err, errlen, "kubeconfig %s: No such file or directory", paths[0]);
        rc = -1;
    }
    if (rc == 0)
        rc = load_doc(cfg, s, context, err, errlen);
    for (size_t i = 0; i < s->n; i++)
        yaml_document_delete(&s->doc[i]);
    free(s);
    if (rc != 0) {
        kube_config_clear(cfg);
        return -1;
    }
    cfg->qps = KUBE_DEFAULT_QPS;
    cfg->burst = KUBE_DEFAULT_BURST;
    return 0;
}

int kube_config_load_file(kube_config *cfg, const char *path, const char *context, char *err,
                          size_t errlen)
{
    if (!cfg || !path) {
        util_set_err(err, errlen, "kube_config_load_file: config and path are required");
        return -1;
    }
    return kube_config_load_files(cfg, &path, 1, context, err, errlen);
}

int kube_config_load_incluster(kube_config *cfg, const char *sa_dir, char *err, size_t errlen)
{
    if (!cfg) {
        util_set_err(err, errlen, "kube_config_load_incluster: config is required");
        return -1;
    }
    memset(cfg, 0, sizeof *cfg);
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port) {
        util_set_err(err, errlen, "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
        return -1;
    }
    const char *dir = sa_dir && *sa_dir ? sa_dir : KUBE_SA_DIR;
    char p[4096], why[256] = "";
    int v6 = strchr(host, ':') != NULL && host[0] != '[';
    size_t n = strlen(host) + strlen(port) + 16;
    cfg->server = malloc(n);
    if (!cfg->server)
        goto oom;
    snprintf(cfg->server, n, v6 ? "https://[%s]:%s" : "https://%s:%s", host, port);
    snprintf(p, sizeof p, "%s/token", dir);
    char *tok = read_token(p, why, sizeof why);
    if (!tok) {
        util_set_err(err, errlen, "in-cluster config: %s: %s", p, why);
        kube_config_clear(cfg);
        return -1;
    }
    free(tok);
    cfg->token_file = strdup(p);
    snprintf(p, sizeof p, "%s/ca.crt", dir);
    struct stat st;
    if (stat(p, &st) != 0) {
        util_set_err(err, errlen, "in-cluster config: %s: %s", p, strerror(errno));
        kube_config_clear(cfg);
        return -1;
    }
    cfg->ca_file = strdup(p);
    snprintf(p, sizeof p, "%s/namespace", dir);
    char *ns = read_token(p, why, sizeof why);
    cfg->namespace = ns ? ns : strdup("default");
    cfg->context = strdup("in-cluster");
    if (!cfg->token_file || !cfg->ca_file || !cfg->namespace || !cfg->context)
        goto oom;
    cfg->qps = KUBE_DEFAULT_QPS;
    cfg->burst = KUBE_DEFAULT_BURST;
    return 0;
oom:
    kube_config_clear(cfg);
    util_set_err(err, errlen, "in-cluster config: out of memory");
    return -1;
}

int kube_config_load_default(kube_config *cfg, const char *path, const char *context, char *err,
                             size_t errlen)
{
    if (path && *path)
        return kube_config_load_file(cfg, path, context, err, errlen);
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        /* kubectl's precedence list: ':'-separated, empty entries and repeats dropped */
        char *list = strdup(env);
        const char *paths[KUBE_CONFIG_FILES_MAX];
        size_t n = 0;
        int rc = -1;
        if (!list) {
            util_set_err(err, errlen, "kubeconfig: out of memory");
            return -1;
        }
        for (char *save = NULL, *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
            int dup = 0;
            for (size_t i = 0; i < n && !dup; i++)
                dup = strcmp(paths[i], p) == 0;
            if (dup)
                continue;
            if (n == KUBE_CONFIG_FILES_MAX) {
                util_set_err(err, errlen, "KUBECONFIG: more than %d files", KUBE_CONFIG_FILES_MAX);
                n = 0;
                break;
            }
            paths[n++] = p;
        }
        if (n)
            rc = kube_config_load_files(cfg, paths, n, context, err, errlen);
        else if (!err || !*err)
            util_set_err(err, errlen, "KUBECONFIG: no file named");
        free(list);
        return rc;
    }
    char home_cfg[4096] = "";
    const char *home = getenv("HOME");
    struct stat st;
    if (home && *home) {
        snprintf(home_cfg, sizeof home_cfg, "%s/.kube/config", home);
        if (stat(home_cfg, &st) != 0)
            home_cfg[0] = '\0';
    }
    /* a context names a kubeconfig entry: with one, the in-cluster config is not a candidate */
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (!(context && *context) && ((host && *host) || !home_cfg[0])) {
        int rc = kube_config_load_incluster(cfg, NULL, err, errlen);
        if (rc == 0 || !home_cfg[0])
            return rc;
    }
    if (!home_cfg[0]) {
        util_set_err(err, errlen, "kubeconfig: --context %s given but no kubeconfig ($KUBECONFIG, ~/.kube/config)",
                     context);
        return -1;
    }
    return kube_config_load_file(cfg, home_cfg, context, err, errlen);
}

/* ---- rate limit ------------------------------------------------------ */

void kube_limiter_init(kube_limiter *l, double qps, int burst, double now)
{
    l->qps = qps;
    l->burst = burst >= 1 ? burst : 1;
    l->tokens = l->burst;
    l->last = now;
}

double kube_limiter_reserve(kube_limiter *l, double now)
{
    if (!(l->qps > 0))
        return 0;
    if (now > l->last) {
        l->tokens += (now - l->last) * l->qps;
        if (l->tokens > l->burst)
            l->tokens = l->burst;
        l->last = now;
    }
    l->tokens -= 1;
    return l->tokens >= 0 ? 0 : -l->tokens / l->qps;
}

/* ---- kinds and paths ------------------------------------------------- */

const kube_kind kube_kind_flinkcluster = {"flinkoperator.k8s.io/v1beta1", "FlinkCluster", "flinkclusters", 1};
const kube_kind kube_kind_flinkjob = {"flinkoperator.k8s.io/v1beta1", "FlinkJob", "flinkjobs", 1};
const kube_kind kube_kind_statefulset = {"apps/v1", "StatefulSet", "statefulsets", 1};
const kube_kind kube_kind_service = {"v1", "Service", "services", 1};
const kube_kind kube_kind_configmap = {"v1", "ConfigMap", "configmaps", 1};
const kube_kind kube_kind_ingress = {"networking.k8s.io/v1", "Ingress", "ingresses", 1};
const kube_kind kube_kind_job = {"batch/v1", "Job", "jobs", 1};
const kube_kind kube_kind_pod = {"v1", "Pod", "pods", 1};
const kube_kind kube_kind_event = {"v1", "Event", "events", 1};
const kube_kind kube_kind_lease = {"coordination.k8s.io/v1", "Lease", "leases", 1};
const kube_kind kube_kind_namespace = {"v1", "Namespace", "namespaces", 0};
const kube_kind kube_kind_controllerrevision = {"apps/v1", "ControllerRevision", "controllerrevisions", 1};
const kube_kind kube_kind_deployment = {"apps/v1", "Deployment", "deployments", 1};
const kube_kind kube_kind_secret = {"v1", "Secret", "secrets", 1};

static const kube_kind *const all_kinds[] = {
    &kube_kind_flinkcluster, &kube_kind_statefulset, &kube_kind_service, &kube_kind_configmap,
    &kube_kind_ingress, &kube_kind_job, &kube_kind_pod, &kube_kind_event, &kube_kind_lease,
    &kube_kind_namespace, &kube_kind_controllerrevision, &kube_kind_deployment, &kube_kind_secret,
};

/* kinds defined at run time (kube_kind_define) */
static kube_kind defined_kinds[KUBE_KINDS_DEFINED_MAX];
static size_t n_defined_kinds;

static int kind_matches(const kube_kind *k, const char *api_version, const char *kind)
{
    return (!api_version || strcmp(k->api_version, api_version) == 0) && strcmp(k->kind, kind) == 0;
}

const kube_kind *kube_kind_find(const char *api_version, const char *kind)
{
    if (!kind)
        return NULL;
    for (size_t i = 0; i < sizeof all_kinds / sizeof all_kinds[0]; i++)
        if (kind_matches(all_kinds[i], api_version, kind))
            return all_kinds[i];
    for (size_t i = 0; i < n_defined_kinds; i++)
        if (kind_matches(&defined_kinds[i], api_version, kind))
            return &defined_kinds[i];
    return NULL;
}

const kube_kind *kube_kind_define(const char *api_version, const char *kind, const char *plural,
                                  int namespaced, char *err, size_t errlen)
{
    if (!api_version || !*api_version || !kind || !*kind || !plural || !*plural) {
        util_set_err(err, errlen, "kube_kind_define: apiVersion, kind and resource must be non-empty");
        return NULL;
    }
    const kube_kind *k = kube_kind_find(api_version, kind);
    if (k) {
        if (strcmp(k->plural, plural) != 0 || k->namespaced != (namespaced != 0)) {
            util_set_err(err, errlen, "kube_kind_define: %s %s: resource %s (namespaced %d) contradicts %s (%d)",
                         api_version, kind, plural, namespaced != 0, k->plural, k->namespaced);
            return NULL;
        }
        return k;
    }
    if (n_defined_kinds >= KUBE_KINDS_DEFINED_MAX) {
        util_set_err(err, errlen, "kube_kind_define: %s %s: more than %d kinds defined", api_version, kind,
                     (int)KUBE_KINDS_DEFINED_MAX);
        return NULL;
    }
    kube_kind *d = &defined_kinds[n_defined_kinds];
    char *av = strdup(api_version), *kd = strdup(kind), *pl = strdup(plural);
    if (!av || !kd || !pl) {
        free(av), free(kd), free(pl);
        util_set_err(err, errlen, "kube_kind_define: out of memory");
        return NULL;
    }
    d->api_version = av;
    d->kind = kd;
    d->plural = pl;
    d->namespaced = namespaced != 0;
    n_defined_kinds++;
    return d;
}

/* Appends `s` percent-escaped (curl_easy_escape) to buf at *off. */
static int append(char *buf, size_t n, size_t *off, const char *s, int escape)
{
    char *e = escape ? curl_easy_escape(NULL, s, 0) : NULL;
    const char *v = escape ? e : s;
    if (!v)
        return -1;
    size_t l = strlen(v);
    int rc = 0;
    if (*off + l + 1 > n)
        rc = -1;
    else {
        memcpy(buf + *off, v, l + 1);
        *off += l;
    }
    curl_free(e);
    return rc;
}

int kube_path_query(char *buf, size_t n, const char *param, const char *value)
{
    if (!buf || !param || !*param || !value)
        return -1;
    size_t off = strlen(buf);
    size_t start = off;
    int rc = append(buf, n, &off, strchr(buf, '?') ? "&" : "?", 0);
    rc |= append(buf, n, &off, param, 0);
    rc |= append(buf, n, &off, "=", 0);
    rc |= append(buf, n, &off, value, 1);
    if (rc)
        buf[start] = '\0';
    return rc ? -1 : 0;
}

int kube_path(char *buf, size_t n, const kube_kind *k, const char *ns, const char *name,
              const char *subresource)
{
    if (!buf || !n || !k)
        return -1;
    size_t off = 0;
    buf[0] = '\0';
    int rc = append(buf, n, &off, strchr(k->api_version, '/') ? "/apis/" : "/api/", 0);
    rc |= append(buf, n, &off, k->api_version, 0);
    if (k->namespaced && ns && *ns) {
        rc |= append(buf, n, &off, "/namespaces/", 0);
        rc |= append(buf, n, &off, ns, 1);
    }
    rc |= append(buf, n, &off, "/", 0);
    rc |= append(buf, n, &off, k->plural, 0);
    if (name) {
        if (!*name)
            return -1;
        rc |= append(buf, n, &off, "/", 0);
        rc |= append(buf, n, &off, name, 1);
        if (subresource && *subresource) {
            rc |= append(buf, n, &off, "/", 0);
            rc |= append(buf, n, &off, subresource, 0);
        }
    }
    return rc ? -1 : 0;
}

int kube_service_proxy_path(char *buf, size_t n, const char *ns, const char *scheme, const char *service,
                            const char *port, const char *path)
{
    if (!buf || !n)
        return -1;
    buf[0] = '\0';
    if (!ns || !*ns || !service || !*service || !port || !*port || strchr(port, '/') || !path || path[0] != '/' ||
        !scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
        return -1;
    size_t off = 0;
    int rc = append(buf, n, &off, "/api/v1/namespaces/", 0);
    rc |= append(buf, n, &off, ns, 1);
    rc |= append(buf, n, &off, "/services/", 0);
    rc |= append(buf, n, &off, scheme, 0);
    rc |= append(buf, n, &off, ":", 0);
    rc |= append(buf, n, &off, service, 1);
    rc |= append(buf, n, &off, ":", 0);
    rc |= append(buf, n, &off, port, 1);
    rc |= append(buf, n, &off, "/proxy", 0);
    rc |= append(buf, n, &off, path, 0);
    if (rc)
        buf[0] = '\0';
    return rc ? -1 : 0;
}

/* ---- client ---------------------------------------------------------- */

enum { CALL_PLAIN, CALL_LIST, CALL_WATCH };

struct kube_call {
    kube_client *client;
    int type;
    char *method, *path, *content_type, *body;
    size_t body_len;
    const http_part *part; /* the caller's (kube_req.part) */
    double timeout_s;
    kube_done_fn cb;
    void *ud;
    ev_timer wait;            /* rate limiter or Retry-After delay */
    http_request *req;
    int attempts, retried_401, in_cb, cancelled, done;
    long http_version;
    unsigned cred_gen;        /* the exec credential the last attempt was sent with */
    int cred_wait;            /* 1: parked until the exec plugin answers (2: being resent) */
    int cred_fresh;           /* send with the credential just fetched, whatever its expiry */
    /* list */
    char *selector;
    long limit;
    json_t *items;
    char *list_rv;
    char *cont;
    int full_relist;
    kube_page_fn on_page;     /* kube_list_paged: each page to the caller, nothing merged */
    int page_restart;         /* the next page starts the list over (the first, or after a 410) */
    /* watch */
    kube_event_fn on_event;
    util_buf line;            /* bytes of a watch event not yet ended by '\n' */
    int stopped;
    char werr[256];
    kube_call *next, *prev;
};

struct kube_client {
    struct ev_loop *loop;
    http_client *http;
    kube_config cfg;
    http_tls tls;
    kube_limiter limiter;
    char *token;
    double token_loaded;
    char *proxy;              /* CURLOPT_PROXY of every request, or NULL (kube_config.proxy_url) */
    kubecred cred;            /* the exec plugin's credential (cfg.exec) */
    unsigned cred_gen;        /* bumped with each credential */
    int cred_invalid;         /* a 401 answered a request sent with it */
    kubecred_job *cred_job;   /* a plugin run under way */
    double cred_retry_at;     /* no background refresh before this (after a failed one) */
    long watch_idle_s;        /* kube_client_set_watch_idle */
    double (*now_fn)(void *);
    void *now_ud;
    kube_call *calls;
};

static double client_now(kube_client *c)
{
    return c->now_fn ? c->now_fn(c->now_ud) : ev_now(c->loop);
}

static int reload_token(kube_client *c, int force)
{
    if (!c->cfg.token_file)
        return 0;
    double now = client_now(c);
    if (!force && c->token && now - c->token_loaded < KUBE_TOKEN_RELOAD_S)
        return 0;
    char why[256] = "";
    char *t = read_token(c->cfg.token_file, why, sizeof why);
    c->token_loaded = now;
    if (!t)
        return c->token ? 0 : -1;     /* keep the last good token */
    free(c->token);
    c->token = t;
    return 0;
}

/* 1 when the host of `url` (http(s)://host[:port]/...) is "localhost" or a loopback address;
 * the host is taken by libcurl's URL parser (IPv6 literals come back in brackets). */
static int loopback_host(const char *url)
{
    CURLU *u = curl_url();
    char *host = NULL;
    int lo = 0;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
        unsigned char a[16];
        size_t n = strlen(host);
        if (strcasecmp(host, "localhost") == 0) {
            lo = 1;
        } else if (inet_pton(AF_INET, host, a) == 1) {
            lo = a[0] == 127;
        } else if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
            host[n - 1] = '\0';
            lo = inet_pton(AF_INET6, host + 1, a) == 1 &&
                 memcmp(a, (const unsigned char[16]){[15] = 1}, 16) == 0;
        }
    }
    curl_free(host);
    curl_url_cleanup(u);
    return lo;
}

/* The proxy of the client's requests (client-go: proxy-url for every request; else Go's
 * ProxyFromEnvironment, which never proxies a loopback host). socks5:// becomes socks5h://:
 * Go's SOCKS5 dialer hands the host name to the proxy, libcurl's socks5:// would resolve it. */
static int set_proxy(kube_client *c)
{
    const char *p = c->cfg.proxy_url;
    if (p && strncmp(p, "socks5://", 9) == 0) {
        size_t n = strlen(p) + 2;
        if ((c->proxy = malloc(n)))
            snprintf(c->proxy, n, "socks5h://%s", p + 9);
    } else if (p) {
        c->proxy = strdup(p);
    } else if (loopback_host(c->cfg.server)) {
        c->proxy = strdup("");
    } else {
        return 0;
    }
    return c->proxy ? 0 : -1;
}

/* Makes c->cred the credential in use: its token, and its client certificate for TLS. */
static void cred_apply(kube_client *c)
{
    c->cred_gen++;
    c->cred_invalid = 0;
    if (c->cred.cert_pem) {
        c->tls.cert_file = c->tls.key_file = NULL;
        c->tls.cert_pem = c->cred.cert_pem;
        c->tls.cert_pem_len = c->cred.cert_pem_len;
        c->tls.key_pem = c->cred.key_pem;
        c->tls.key_pem_len = c->cred.key_pem_len;
    } else {
        c->tls.cert_pem = c->tls.key_pem = NULL;
        c->tls.cert_pem_len = c->tls.key_pem_len = 0;
    }
}

static void call_send(kube_call *k);
static void call_finish(kube_call *k, long status, const char *error, const char *raw, size_t raw_len,
                        json_t *body);

/* Sends (ok) or fails (error) the calls parked for the plugin's credential. A call that parks
 * again meanwhile is left for the next answer. */
static void cred_release(kube_client *c, const char *error)
{
    for (kube_call *k = c->calls; k; k = k->next)
        if (k->cred_wait == 1)
            k->cred_wait = 2;
    for (;;) {
        kube_call *k = c->calls;
        while (k && k->cred_wait != 2)
            k = k->next;
        if (!k)
            break;
        k->cred_wait = 0;
        if (error) {
            call_finish(k, 0, error, "", 0, NULL);
        } else {
            k->cred_fresh = 1;
            call_send(k);
        }
    }
}

static void cred_done(int rc, kubecred *cred, const char *error, void *ud)
{
    kube_client *c = ud;
    c->cred_job = NULL;
    if (rc == 0) {
        kubecred_clear(&c->cred);
        c->cred = *cred;
        memset(cred, 0, sizeof *cred);   /* taken */
        cred_apply(c);
        log_info("exec plugin credential refreshed", "command", c->cfg.exec->command, NULL);
        cred_release(c, NULL);
        return;
    }
    c->cred_retry_at = client_now(c) + KUBE_EXEC_RETRY_S;
    log_warn("exec plugin failed", "error", error, NULL);
    cred_release(c, error);
}

/* Starts a plugin run unless one is under way. A run that cannot start fails the parked calls. */
static void cred_refresh(kube_client *c)
{
    if (c->cred_job)
        return;
    char err[1024] = "";
    c->cred_job = kubecred_run_async(c->loop, c->cfg.exec, KUBECRED_TIMEOUT_S, cred_done, c, err, sizeof err);
    if (!c->cred_job) {
        c->cred_retry_at = client_now(c) + KUBE_EXEC_RETRY_S;
        log_warn("exec plugin failed", "error", err, NULL);
        cred_release(c, err);
    }
}

/* Before an attempt of `k` with an exec plugin: 0 to send now (with c->cred), 1 when `k` is
 * parked until the plugin answers (the credential is missing, past its expiry less
 * KUBE_EXEC_EXPIRY_MARGIN_S, or refused by a 401). Within KUBE_EXEC_REFRESH_AHEAD_S of that,
 * a run starts in the background while requests go on with the credential in hand. */
static int cred_ready(kube_client *c, kube_call *k)
{
    double now = client_now(c);
    double exp = c->cred.expiry;
    int have = (c->cred.token || c->cred.cert_pem) && !c->cred_invalid;
    if (k->cred_fresh || (have && (exp == 0 || now < exp - KUBE_EXEC_EXPIRY_MARGIN_S))) {
        k->cred_fresh = 0;
        k->cred_gen = c->cred_gen;
        if (exp != 0 && now >= exp - KUBE_EXEC_EXPIRY_MARGIN_S - KUBE_EXEC_REFRESH_AHEAD_S &&
            now >= c->cred_retry_at)
            cred_refresh(c);
        return 0;
    }
    k->cred_wait = 1;
    cred_refresh(c);
    return 1;
}

static int copy_cfg(kube_config *dst, const kube_config *s)
{
    memset(dst, 0, sizeof *dst);
#define DUP(f) do { if (s->f && !(dst->f = strdup(s->f))) return -1; } while (0)
#define DUPB(f, l) do { if (s->f) { if (!(dst->f = util_memdup(s->f, s->l))) return -1; \
        dst->l = s->l; } } while (0)
    DUP(server);
    DUP(ca_file);
    DUPB(ca_pem, ca_pem_len);
    DUP(cert_file);
    DUPB(cert_pem, cert_pem_len);
    DUP(key_file);
    DUPB(key_pem, key_pem_len);
    DUP(token);
    DUP(token_file);
    DUP(namespace);
    DUP(context);
    DUP(proxy_url);
#undef DUP
    if (s->exec && !(dst->exec = kubecred_exec_copy(s->exec)))
        return -1;
#undef DUPB
    dst->insecure = s->insecure;
    dst->qps = s->qps;
    dst->burst = s->burst;
    return 0;
}

kube_client *kube_client_new(struct ev_loop *loop, const kube_config *cfg, char *err, size_t errlen)
{
    if (!loop || !cfg || !cfg->server || !*cfg->server) {
        util_set_err(err, errlen, "kube_client_new: loop and config with server are required");
        return NULL;
    }
    kube_client *c = calloc(1, sizeof *c);
    if (!c) {
        util_set_err(err, errlen, "kube_client_new: out of memory");
        return NULL;
    }
    c->loop = loop;
    if (copy_cfg(&c->cfg, cfg) != 0) {
        kube_config_clear(&c->cfg);
        free(c);
        util_set_err(err, errlen, "kube_client_new: out of memory");
        return NULL;
    }
    c->http = http_client_new(loop, err, errlen);
    if (!c->http) {
        kube_config_clear(&c->cfg);
        free(c);
        return NULL;
    }
    c->tls.ca_file = c->cfg.ca_file;
    c->tls.ca_pem = c->cfg.ca_pem;
    c->tls.ca_pem_len = c->cfg.ca_pem_len;
    c->tls.cert_file = c->cfg.cert_file;
    c->tls.cert_pem = c->cfg.cert_pem;
    c->tls.cert_pem_len = c->cfg.cert_pem_len;
    c->tls.key_file = c->cfg.key_file;
    c->tls.key_pem = c->cfg.key_pem;
    c->tls.key_pem_len = c->cfg.key_pem_len;
    c->tls.insecure_skip_verify = c->cfg.insecure;
    if (c->cfg.token)
        c->token = strdup(c->cfg.token);
    if (c->cfg.token_file && reload_token(c, 1) != 0) {
        util_set_err(err, errlen, "kube_client_new: cannot read token file %s", c->cfg.token_file);
        kube_client_free(c);
        return NULL;
    }
    if (set_proxy(c) != 0) {
        util_set_err(err, errlen, "kube_client_new: out of memory");
        kube_client_free(c);
        return NULL;
    }
    /* the first credential is fetched here, blocking for at most KUBECRED_TIMEOUT_S: a plugin
     * that fails stops the start with its message; later runs are asynchronous (cred_ready) */
    if (c->cfg.exec) {
        char why[1024] = "";
        if (kubecred_run_sync(c->cfg.exec, KUBECRED_TIMEOUT_S, &c->cred, why, sizeof why) != 0) {
            util_set_err(err, errlen, "kube_client_new: %s", why);
            kube_client_free(c);
            return NULL;
        }
        cred_apply(c);
    }
    kube_limiter_init(&c->limiter, c->cfg.qps, c->cfg.burst, client_now(c));
    c->watch_idle_s = KUBE_WATCH_IDLE_S;
    return c;
}

static void call_free(kube_call *k)
{
    kube_client *c = k->client;
    if (k->prev)
        k->prev->next = k->next;
    else if (c->calls == k)
        c->calls = k->next;
    if (k->next)
        k->next->prev = k->prev;
    ev_timer_stop(c->loop, &k->wait);
    if (k->req)
        http_request_cancel(k->req);
    free(k->method);
    free(k->path);
    free(k->content_type);
    free(k->body);
    free(k->selector);
    free(k->list_rv);
    free(k->cont);
    util_buf_free(&k->line);
    json_decref(k->items);
    free(k);
}

void kube_client_free(kube_client *c)
{
    if (!c)
        return;
    while (c->calls)
        call_free(c->calls);
    kubecred_cancel(c->cred_job);
    http_client_free(c->http);
    kube_config_clear(&c->cfg);
    kubecred_clear(&c->cred);
    free(c->token);
    free(c->proxy);
    free(c);
}

void kube_client_set_clock(kube_client *c, double (*now)(void *ud), void *ud)
{
    c->now_fn = now;
    c->now_ud = ud;
}

void kube_client_set_watch_idle(kube_client *c, long seconds)
{
    c->watch_idle_s = seconds > 0 ? seconds : 0;
}

void kube_client_set_rate_limit(kube_client *c, double qps, int burst)
{
    kube_limiter_init(&c->limiter, qps, burst, client_now(c));
}

const kube_config *kube_client_config(const kube_client *c)
{
    return &c->cfg;
}

struct ev_loop *kube_client_loop(const kube_client *c)
{
    return c->loop;
}

const char *kube_client_token(kube_client *c)
{
    if (c->cfg.exec)
        return c->cred.token && !c->cred_invalid ? c->cred.token : "";
    reload_token(c, 0);
    return c->token ? c->token : "";
}

int kube_status_has_cause(const json_t *body, const char *cause)
{
    json_t *causes = json_object_get(json_object_get(body, "details"), "causes");
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c)
    {
        const char *r = json_string_value(json_object_get(c, "reason"));
        if (r && strcmp(r, cause) == 0)
            return 1;
    }
    return 0;
}

void kube_cancel(kube_call *k)
{
    if (!k || k->cancelled || k->done)
        return;
    k->cancelled = 1;
    if (k->req) {
        http_request_cancel(k->req);
        k->req = NULL;
    }
    ev_timer_stop(k->client->loop, &k->wait);
    if (!k->in_cb)
        call_free(k);
}

/* Reports the result and frees the call. */
static void call_finish(kube_call *k, long status, const char *error, const char *raw, size_t raw_len,
                        json_t *body)
{
    kube_result res;
    memset(&res, 0, sizeof res);
    res.status = status;
    res.error = error ? error : "";
    res.raw = raw ? raw : "";
    res.raw_len = raw ? raw_len : 0;
    res.body = body;
    res.attempts = k->attempts;
    res.http_version = k->http_version;
    res.reason = "";
    res.message = res.error;
    const char *kind = json_string_value(json_object_get(body, "kind"));
    if (kind && strcmp(kind, "Status") == 0) {
        const char *r = json_string_value(json_object_get(body, "reason"));
        const char *m = json_string_value(json_object_get(body, "message"));
        if (r)
            res.reason = r;
        if (m)
            res.message = m;
    }
    k->done = 1;
    k->cb(&res, k->ud);
    call_free(k);
}


static void wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    call_send((kube_call *)w->data);
}

/* Waits `delay` seconds plus what the rate limiter asks, then sends. */
static void call_schedule(kube_call *k, double delay)
{
    kube_client *c = k->client;
    double wait = kube_limiter_reserve(&c->limiter, client_now(c) + delay);
    ev_timer_stop(c->loop, &k->wait);
    ev_timer_set(&k->wait, delay + wait, 0.);
    ev_timer_start(c->loop, &k->wait);
}

static json_t *parse_json(const char *raw, size_t len)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)raw[i]))
        i++;
    if (i == len || (raw[i] != '{' && raw[i] != '['))
        return NULL;
    return json_loadb(raw, len, JSON_ALLOW_NUL, NULL);
}

int kube_watch_event(const char *line, size_t len, json_t **event, const char **type, json_t **object, char *err,
                     size_t errlen)
{
    *event = NULL;
    *type = NULL;
    *object = NULL;
    size_t i = 0;
    while (i < len && isspace((unsigned char)line[i]))
        i++;
    if (i == len)
        return 1;
    json_error_t je;
    /* a string with a NUL ("\u0000" is valid JSON, and the API server stores it in a spec)
     * is data of that object, not a broken watch for every object */
    json_t *ev = json_loadb(line, len, JSON_ALLOW_NUL, &je);
    const char *t = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!t || !json_is_object(obj)) {
        snprintf(err, errlen, "watch: bad event: %s", ev ? "no type or object" : je.text);
        json_decref(ev);
        return -1;
    }
    *event = ev;
    *type = t;
    *object = obj;
    return 0;
}

int kube_watch_feed(util_buf *pending, const char *data, size_t len, kube_line_fn on_line, void *ud, char *err,
                    size_t errlen)
{
    if (pending->len + len + 1 > KUBE_WATCH_PENDING_MAX) {
        snprintf(err, errlen, "watch: event over %zu MiB", KUBE_WATCH_PENDING_MAX >> 20);
        return -1;
    }
    if (util_buf_put(pending, data, len) != 0) {
        snprintf(err, errlen, "watch: out of memory");
        return -1;
    }
    size_t start = 0;
    int rc = 0;
    for (size_t i = pending->len - len; i < pending->len; i++) {
        if (pending->p[i] != '\n')
            continue;
        rc = on_line(pending->p + start, i - start, ud);
        start = i + 1;
        if (rc != 0)
            break;
    }
    memmove(pending->p, pending->p + start, pending->len - start);
    pending->len -= start;
    pending->p[pending->len] = '\0';
    return rc;
}

static int watch_line(const char *line, size_t len, void *ud)
{
    kube_call *k = ud;
    json_t *ev;
    const char *type;
    json_t *obj;
    int rc = kube_watch_event(line, len, &ev, &type, &obj, k->werr, sizeof k->werr);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    k->in_cb++;
    int stop = k->on_event(type, obj, k->ud);
    k->in_cb--;
    json_decref(ev);
    if (stop && !k->werr[0])
        snprintf(k->werr, sizeof k->werr, "stopped");
    /* kube_cancel from on_event defers the free to watch_data: stop reading */
    return stop || k->cancelled ? -1 : 0;
}

static int watch_data(http_request *req, const char *data, size_t len, void *ud)
{
    (void)req;
    kube_call *k = ud;
    int rc = kube_watch_feed(&k->line, data, len, watch_line, k, k->werr, sizeof k->werr);
    if (k->cancelled) {
        call_free(k);      /* kube_cancel from on_event deferred the free */
        return 1;
    }
    return rc ? 1 : 0;
}

static char *build_list_path(kube_call *k)
{
    char q[2048] = "";
    size_t off = 0;
    int rc = 0;
    const char *sep = strchr(k->path, '?') ? "&" : "?";
    if (k->limit > 0 && !k->full_relist) {
        char lim[64];
        snprintf(lim, sizeof lim, "%slimit=%ld", sep, k->limit);
        rc |= append(q, sizeof q, &off, lim, 0);
        sep = "&";
        if (k->cont) {
            rc |= append(q, sizeof q, &off, "&continue=", 0);
            rc |= append(q, sizeof q, &off, k->cont, 1);
        }
    }
    if (k->selector && *k->selector) {
        rc |= append(q, sizeof q, &off, sep, 0);
        rc |= append(q, sizeof q, &off, "labelSelector=", 0);
        rc |= append(q, sizeof q, &off, k->selector, 1);
    }
    if (rc)
        return NULL;
    size_t n = strlen(k->path) + strlen(q) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s", k->path, q);
    return p;
}

static void list_page(kube_call *k, const http_response *resp)
{
    json_t *body = parse_json(resp->body, resp->body_len);
    if (resp->status == 410 && k->cont && !k->full_relist) {
        /* continue token expired: one full list instead (client-go pager) */
        json_decref(body);
        free(k->cont);
        k->cont = NULL;
        json_array_clear(k->items);
        k->page_restart = 1;
        free(k->list_rv);
        k->list_rv = NULL;
        k->full_relist = 1;
        call_schedule(k, 0);
        return;
    }
    json_t *items = json_object_get(body, "items");
    if (resp->status != 200 || !json_is_array(items)) {
        call_finish(k, resp->status, resp->status == 200 ? "list: response without items" : resp->error,
                    resp->body, resp->body_len, body);
        json_decref(body);
        return;
    }
    json_t *meta = json_object_get(body, "metadata");
    if (!k->list_rv) {
        const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
        k->list_rv = strdup(rv ? rv : "");
    }
    const char *cont = json_string_value(json_object_get(meta, "continue"));
    free(k->cont);
    k->cont = cont && *cont ? strdup(cont) : NULL;
    /* a lost continue token would end the list early: a partial list read as a whole one */
    int bad = !k->list_rv || (cont && *cont && !k->cont);
    if (!bad && k->on_page) {
        int restart = k->page_restart;
        k->page_restart = 0;
        k->in_cb++;
        bad = k->on_page(items, restart, k->ud) != 0;
        k->in_cb--;
        if (k->cancelled) { /* kube_cancel from on_page: no done callback */
            json_decref(body);
            call_free(k);
            return;
        }
    } else if (!bad) {
        bad = json_array_extend(k->items, items) != 0;
    }
    if (bad) {
        call_finish(k, 0, "list: out of memory", "", 0, NULL);
        json_decref(body);
        return;
    }
    json_decref(body);
    if (k->cont && !k->full_relist) {
        call_schedule(k, 0);
        return;
    }
    json_t *out = json_pack("{s:s, s:s, s:{s:s}, s:O}", "kind", "List", "apiVersion", "v1", "metadata",
                            "resourceVersion", k->list_rv ? k->list_rv : "", "items", k->items);
    call_finish(k, 200, "", "", 0, out);
    json_decref(out);
}

static void http_done(http_request *req, const http_response *resp, void *ud)
{
    (void)req;
    kube_call *k = ud;
    kube_client *c = k->client;
    k->req = NULL;
    k->http_version = resp->http_version;
    int retryable = resp->status == 429 || (resp->status >= 500 && resp->status <= 599);
    if (retryable && resp->retry_after_s >= 0 && k->attempts <= KUBE_MAX_RETRIES) {
        call_schedule(k, resp->retry_after_s);
        return;
    }
    if (resp->status == 401 && (c->cfg.token_file || c->cfg.exec) && !k->retried_401) {
        k->retried_401 = 1;
        /* client-go: a 401 to the credential in use invalidates it once; later 401s to the same
         * credential (requests that were under way) do not run the plugin again */
        if (c->cfg.exec && k->cred_gen == c->cred_gen)
            c->cred_invalid = 1;
        else if (!c->cfg.exec)
            reload_token(c, 1);
        call_schedule(k, 0);
        return;
    }
    if (k->type == CALL_LIST) {
        list_page(k, resp);
        return;
    }
    if (k->type == CALL_WATCH && resp->status >= 200 && resp->status < 300) {
        if (!k->werr[0] && resp->curl_code == 0 && k->line.len) { /* last line without '\n' */
            watch_line(k->line.p, k->line.len, k);
            if (k->cancelled) {
                call_free(k);
                return;
            }
        }
        const char *e = k->werr[0] ? k->werr : resp->error;
        call_finish(k, resp->status, e, "", 0, NULL);
        return;
    }
    json_t *body = parse_json(resp->body, resp->body_len);
    call_finish(k, resp->status, resp->error, resp->body, resp->body_len, body);
    json_decref(body);
}

static void call_send(kube_call *k)
{
    kube_client *c = k->client;
    char err[512] = "";
    if (c->cfg.exec && cred_ready(c, k))
        return;                   /* parked: cred_release sends it */
    char *path = k->type == CALL_LIST ? build_list_path(k) : strdup(k->path);
    size_t ul = strlen(c->cfg.server) + (path ? strlen(path) : 0) + 1;
    char *url = path ? malloc(ul) : NULL;
    if (!url) {
        free(path);
        call_finish(k, 0, "out of memory or query too long", "", 0, NULL);
        return;
    }
    snprintf(url, ul, "%s%s", c->cfg.server, path);
    free(path);
    char ct[256];
    snprintf(ct, sizeof ct, "Content-Type: %s", k->content_type ? k->content_type : "application/json");
    const char *headers[] = {"Accept: application/json", "User-Agent: flink-controller", ct, NULL};
    if (!k->body)
        headers[2] = NULL; /* (with a part, libcurl sets the multipart Content-Type) */
    reload_token(c, 0);
    http_opts o;
    memset(&o, 0, sizeof o);
    o.method = k->method;
    o.url = url;
    o.headers = headers;
    o.body = k->body;
    o.body_len = k->body_len;
    o.part = k->part;
    o.tls = &c->tls;
    o.bearer_token = c->cfg.exec ? c->cred.token : c->token;
    o.proxy = c->proxy;
    o.timeout_ms = (long)(k->timeout_s * 1000);
    o.stream = k->type == CALL_WATCH;
    o.idle_timeout_s = k->type == CALL_WATCH ? c->watch_idle_s : 0;
    o.on_data = watch_data;
    o.on_done = http_done;
    o.ud = k;
    k->attempts++;
    k->line.len = 0;              /* a new attempt: no partial event */
    k->line.oom = 0;
    if (k->line.p)
        k->line.p[0] = '\0';
    k->werr[0] = '\0';
    k->req = http_request_start(c->http, &o, err, sizeof err);
    free(url);
    if (!k->req)
        call_finish(k, 0, err, "", 0, NULL);
}

static kube_call *call_new(kube_client *c, int type, const kube_req *req, kube_done_fn cb, void *ud,
                           char *err, size_t errlen)
{
    if (!c || !req || !req->path || req->path[0] != '/' || !cb) {
        util_set_err(err, errlen, "kube_request: client, a path starting with '/' and a callback are required");
        return NULL;
    }
    kube_call *k = calloc(1, sizeof *k);
    if (!k) {
        util_set_err(err, errlen, "kube_request: out of memory");
        return NULL;
    }
    k->client = c;
    k->type = type;
    k->line.first = 8192;
    k->method = strdup(req->method ? req->method : "GET");
    k->path = strdup(req->path);
    k->content_type = xstrdup(req->content_type);
    k->part = req->part;
    if (req->body) {
        k->body_len = req->body_len ? req->body_len : strlen(req->body);
        k->body = util_memdup(req->body, k->body_len);
    }
    k->timeout_s = req->timeout_s > 0 ? req->timeout_s : 60;
    k->cb = cb;
    k->ud = ud;
    ev_timer_init(&k->wait, wait_cb, 0., 0.);
    k->wait.data = k;
    k->next = c->calls;
    if (c->calls)
        c->calls->prev = k;
    c->calls = k;
    if (!k->method || !k->path || (req->body && !k->body) || (req->content_type && !k->content_type)) {
        call_free(k);
        util_set_err(err, errlen, "kube_request: out of memory");
        return NULL;
    }
    return k;
}

kube_call *kube_request(kube_client *c, const kube_req *req, kube_done_fn cb, void *ud, char *err,
                        size_t errlen)
{
    kube_call *k = call_new(c, CALL_PLAIN, req, cb, ud, err, errlen);
    if (k)
        call_schedule(k, 0);
    return k;
}

kube_call *kube_get(kube_client *c, const char *path, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    kube_req r = {.method = "GET", .path = path};
    return kube_request(c, &r, cb, ud, err, errlen);
}

kube_call *kube_list(kube_client *c, const char *path, const char *label_selector, long limit,
                     kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    return kube_list_paged(c, path, label_selector, limit, NULL, cb, ud, err, errlen);
}

kube_call *kube_list_paged(kube_client *c, const char *path, const char *label_selector, long limit,
                           kube_page_fn on_page, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    kube_req r = {.method = "GET", .path = path};
    kube_call *k = call_new(c, CALL_LIST, &r, cb, ud, err, errlen);
    if (!k)
        return NULL;
    k->on_page = on_page;
    k->page_restart = 1;
    k->limit = limit > 0 ? limit : 500;
    k->selector = xstrdup(label_selector);
    k->items = json_array();
    if (!k->items || (label_selector && !k->selector)) {
        call_free(k);
        util_set_err(err, errlen, "kube_list: out of memory");
        return NULL;
    }
    call_schedule(k, 0);
    return k;
}

kube_call *kube_watch(kube_client *c, const char *path, const char *resource_version,
                      const char *label_selector, long timeout_s, kube_event_fn on_event,
                      kube_done_fn done, void *ud, char *err, size_t errlen)
{
    if (!path || !on_event) {
        util_set_err(err, errlen, "kube_watch: path and on_event are required");
        return NULL;
    }
    if (timeout_s <= 0)
        timeout_s = 300;
    char q[4096];
    size_t off = 0;
    int rc = append(q, sizeof q, &off, path, 0);
    char tmp[96];
    snprintf(tmp, sizeof tmp, "%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%ld",
             strchr(path, '?') ? "&" : "?", timeout_s);
    rc |= append(q, sizeof q, &off, tmp, 0);
    if (resource_version && *resource_version) {
        rc |= append(q, sizeof q, &off, "&resourceVersion=", 0);
        rc |= append(q, sizeof q, &off, resource_version, 1);
    }
    if (label_selector && *label_selector) {
        rc |= append(q, sizeof q, &off, "&labelSelector=", 0);
        rc |= append(q, sizeof q, &off, label_selector, 1);
    }
    if (rc) {
        util_set_err(err, errlen, "kube_watch: path and query too long");
        return NULL;
    }
    kube_req r = {.method = "GET", .path = q, .timeout_s = (double)timeout_s + 30};
    kube_call *k = call_new(c, CALL_WATCH, &r, done, ud, err, errlen);
    if (!k)
        return NULL;
    k->on_event = on_event;
    call_schedule(k, 0);
    return k;
}

#define APPLY_PATCH "application/apply-patch+yaml"

/* The path a PATCH of `content_type` goes to: the object's (kube_path), and for a server-side
 * apply the query fieldManager=flink-controller&force=true (force: our fields win conflicts,
 * as controllers do). The object's path must leave 64 of the n bytes free (room for that
 * query). 0, or -1 when it does not fit. */
static int patch_path(char *path, size_t n, const kube_kind *k, const char *ns, const char *name,
                      const char *subresource, const char *content_type)
{
    if (n <= 64 || kube_path(path, n - 64, k, ns, name, subresource) != 0)
        return -1;
    if (strcmp(content_type, APPLY_PATCH) == 0)
        strcat(path, "?fieldManager=" KUBE_FIELD_MANAGER "&force=true");
    return 0;
}

static kube_call *apply_object(kube_client *c, const char *json, int dry_run, kube_done_fn cb, void *ud,
                               char *err, size_t errlen);

kube_call *kube_apply(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    return apply_object(c, json, 0, cb, ud, err, errlen);
}

kube_call *kube_apply_dry_run(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err,
                              size_t errlen)
{
    return apply_object(c, json, 1, cb, ud, err, errlen);
}

static kube_call *apply_object(kube_client *c, const char *json, int dry_run, kube_done_fn cb, void *ud,
                               char *err, size_t errlen)
{
    json_error_t je;
    json_t *obj = json ? json_loads(json, JSON_ALLOW_NUL, &je) : NULL;
    if (!json_is_object(obj)) {
        util_set_err(err, errlen, "kube_apply: not a JSON object: %s", obj ? "wrong type" : (json ? je.text : "NULL"));
        json_decref(obj);
        return NULL;
    }
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const kube_kind *k = kube_kind_find(av, kind);
    char path[1024];
    kube_call *call = NULL;
    if (!k)
        util_set_err(err, errlen, "kube_apply: unknown apiVersion/kind: %s/%s", av ? av : "?", kind ? kind : "?");
    else if (!name || !*name)
        util_set_err(err, errlen, "kube_apply: metadata.name: missing");
    else if (strlen(name) != json_string_length(json_object_get(meta, "name")))
        util_set_err(err, errlen, "kube_apply: metadata.name: holds a NUL");
    else if (k->namespaced && (!ns || !*ns))
        util_set_err(err, errlen, "kube_apply: metadata.namespace: missing");
    else if (ns && strlen(ns) != json_string_length(json_object_get(meta, "namespace")))
        util_set_err(err, errlen, "kube_apply: metadata.namespace: holds a NUL");
    else if (patch_path(path, sizeof path, k, ns, name, NULL, APPLY_PATCH) != 0)
        util_set_err(err, errlen, "kube_apply: path too long");
    else {
        if (dry_run) /* patch_path keeps 64 bytes free for the query */
            strcat(path, "&dryRun=All");
        kube_req r = {.method = "PATCH", .path = path, .content_type = APPLY_PATCH, .body = json};
        call = kube_request(c, &r, cb, ud, err, errlen);
    }
    json_decref(obj);
    return call;
}

kube_call *kube_patch(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                      const char *subresource, const char *content_type, const char *patch_json,
                      kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    char path[1024];
    if (!k || !name || !*name || !patch_json || !content_type ||
        patch_path(path, sizeof path, k, ns, name, subresource, content_type) != 0) {
        util_set_err(err, errlen, "kube_patch: kind, name, content type and patch are required");
        return NULL;
    }
    kube_req r = {.method = "PATCH", .path = path, .content_type = content_type, .body = patch_json};
    return kube_request(c, &r, cb, ud, err, errlen);
}

kube_call *kube_patch_status(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                             const char *merge_patch_json, kube_done_fn cb, void *ud, char *err,
                             size_t errlen)
{
    return kube_patch(c, k, ns, name, "status", "application/merge-patch+json", merge_patch_json, cb, ud, err,
                      errlen);
}

kube_call *kube_delete(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                       const char *propagation, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    char path[1024];
    if (!k || !name || !*name || kube_path(path, sizeof path, k, ns, name, NULL) != 0) {
        util_set_err(err, errlen, "kube_delete: kind and name are required");
        return NULL;
    }
    json_t *opts = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
    if (propagation && *propagation)
        json_object_set_new(opts, "propagationPolicy", json_string(propagation));
    char *body = json_dumps(opts, JSON_COMPACT);
    json_decref(opts);
    if (!body) {
        util_set_err(err, errlen, "kube_delete: out of memory or bad propagation policy");
        return NULL;
    }
    kube_req r = {.method = "DELETE", .path = path, .body = body};
    kube_call *call = kube_request(c, &r, cb, ud, err, errlen);
    free(body);
    return call;
}

kube_call *kube_event_create(kube_client *c, json_t *involved, const char *type, const char *reason,
                             const char *message, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    json_t *meta = json_object_get(involved, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *av = json_string_value(json_object_get(involved, "apiVersion"));
    const char *kind = json_string_value(json_object_get(involved, "kind"));
    if (!name || !ns || !av || !kind || !type || !reason || !message) {
        util_set_err(err, errlen, "kube_event_create: involved object needs apiVersion, kind, metadata.name and "
                             "metadata.namespace; type, reason and message are required");
        return NULL;
    }
    char ts[32];
    if (util_format_time((double)time(NULL), 0, ts, sizeof ts) != 0)
        snprintf(ts, sizeof ts, "1970-01-01T00:00:00Z");
    char msg[1025];
    snprintf(msg, sizeof msg, "%s", message);
    size_t ml = strlen(msg);
    if (ml == sizeof msg - 1) {           /* truncated: do not cut a UTF-8 sequence */
        while (ml > 0 && ((unsigned char)message[ml] & 0xC0) == 0x80)
            ml--;                         /* message[ml] would start the next part */
        msg[ml] = '\0';
    }
    char gen[300];
    snprintf(gen, sizeof gen, "%.240s.", name);
    json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s},"
                           " s:s, s:s, s:i}",
                           "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen, "namespace", ns,
                           "involvedObject", "apiVersion", av, "kind", kind, "name", name, "namespace", ns,
                           "type", type, "reason", reason, "message", msg, "source", "component",
                           KUBE_FIELD_MANAGER, "firstTimestamp", ts, "lastTimestamp", ts, "count", 1);
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (ev && uid)
        json_object_set_new(json_object_get(ev, "involvedObject"), "uid", json_string(uid));
    char *body = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    char path[1024];
    if (!body || kube_path(path, sizeof path, &kube_kind_event, ns, NULL, NULL) != 0) {
        free(body);
        util_set_err(err, errlen, "kube_event_create: cannot build the event (non-UTF-8 text?)");
        return NULL;
    }
    kube_req r = {.method = "POST", .path = path, .body = body};
    kube_call *call = kube_request(c, &r, cb, ud, err, errlen);
    free(body);
    return call;
}

const kube_ops kube_ops_default = {.apply = kube_apply,
                                   .apply_dry_run = kube_apply_dry_run,
                                   .patch = kube_patch,
                                   .patch_status = kube_patch_status,
                                   .delete = kube_delete,
                                   .event_create = kube_event_create,
                                   .cancel = kube_cancel};
