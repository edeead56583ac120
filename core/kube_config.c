/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube_config: where and how to reach the API server (kubeconfig files, $KUBECONFIG,
 * in-cluster). See kube_config.h. */
#include "kube_config.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

char *kube_config_read_token(const char *path, char *why, size_t whylen)
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
    char *tok = kube_config_read_token(p, why, sizeof why);
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
    char *ns = kube_config_read_token(p, why, sizeof why);
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
