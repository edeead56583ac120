/* SPDX-License-Identifier: Apache-2.0 */
/* core/certsync: the webhook certificates' Secret and caBundle (see certsync.h). */
#include "certsync.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "log.h"
#include "util.h"

static const kube_kind cs_kind_validating = {"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
                                             "validatingwebhookconfigurations", 0};
static const kube_kind cs_kind_mutating = {"admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration",
                                           "mutatingwebhookconfigurations", 0};

/* the Secret's keys, in certs_set's order */
static const char *const cs_keys[4] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};

struct certsync {
    struct ev_loop *loop;
    kube_client *kc;
    char secret_ns[254], secret_name[254];
    char *configuration;
    char *names[CERTS_MAX_NAMES];
    size_t nnames;
    double validity_s;
    int (*may_write)(void *ud);
    void (*on_pair)(const char *cert_pem, const char *key_pem, void *ud);
    void *ud;
    ev_timer tick;
    kube_call *call;
    char *served_cert, *served_key;   /* the pair last handed to on_pair */
    /* one pass */
    json_t *secret;                   /* the Secret read; NULL when there is none */
    certs_set cur, next;
    int plan;                         /* certs_plan's mask this pass */
    int config;                       /* 0: the validating configuration, 1: the mutating one */
    char *bundle_b64;                 /* the caBundle wanted this pass */
    json_t *vcfg;                     /* the ValidatingWebhookConfiguration read this pass */
    unsigned writes, patches;
    int warned_missing, warned_injected;
};

/* ---- names --------------------------------------------------------------------------------- */

/* Splits "NS/NAME" into ns and name (each < 254 bytes). */
static int cs_split(const char *v, char *ns, char *name)
{
    const char *slash = v ? strchr(v, '/') : NULL;
    if (!slash || slash == v || !slash[1] || strchr(slash + 1, '/') || slash - v > 253 || strlen(slash + 1) > 253)
        return -1;
    snprintf(ns, 254, "%.*s", (int)(slash - v), v);
    snprintf(name, 254, "%s", slash + 1);
    return 0;
}

/* Adds `name` (len bytes) unless already there. */
static int cs_add_name(char **names, size_t *n, size_t max, const char *name, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen(names[i]) == len && strncasecmp(names[i], name, len) == 0) return 0;
    if (*n >= max) return -1;
    names[*n] = strndup(name, len);
    if (!names[*n]) return -1;
    (*n)++;
    return 0;
}

void certsync_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(names[i]);
        names[i] = NULL;
    }
}

int certsync_names(const char *service, const char *hosts, char **names, size_t max, char *err, size_t errlen)
{
    size_t n = 0;
    int rc = 0;
    if (max > CERTS_MAX_NAMES) max = CERTS_MAX_NAMES;
    if (service) {
        char ns[254], name[254], full[600];
        if (cs_split(service, ns, name)) {
            util_set_err(err, errlen, "--webhook-service: expected NAMESPACE/NAME, got '%s'", service);
            return -1;
        }
        const char *forms[] = {"%s.%s.svc", "%s.%s.svc.cluster.local", "%s.%s"};
        for (size_t i = 0; !rc && i < 3; i++) {
            snprintf(full, sizeof full, forms[i], name, ns);
            rc = cs_add_name(names, &n, max, full, strlen(full));
        }
    }
    for (const char *p = hosts; !rc && p && *p;) {
        size_t len = strcspn(p, ",");
        if (len > 253) {
            util_set_err(err, errlen, "--webhook-host: a name over 253 characters");
            certsync_names_free(names, n);
            return -1;
        }
        if (len) rc = cs_add_name(names, &n, max, p, len);
        p += len + (p[len] == ',');
    }
    if (rc) {
        util_set_err(err, errlen, "over %zu names", max);
        certsync_names_free(names, n);
        return -1;
    }
    if (!n) {
        util_set_err(err, errlen, "no names: --webhook-service or --webhook-host is needed");
        return -1;
    }
    return (int)n;
}

/* ---- base64 (OpenSSL) ---------------------------------------------------------------------- */

static char *cs_b64(const char *s)
{
    size_t n = strlen(s);
    unsigned char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (out) EVP_EncodeBlock(out, (const unsigned char *)s, (int)n);
    return (char *)out;
}

/* The text of a Secret's data value; NULL when absent or not base64. */
static char *cs_unb64(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n % 4) return NULL;
    unsigned char *out = malloc(n / 4 * 3 + 1);
    int len = out ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)n) : -1;
    if (len < 0) {
        free(out);
        return NULL;
    }
    len -= (s[n - 1] == '=') + (s[n - 2] == '=');   /* EVP_DecodeBlock counts the padding */
    out[len] = '\0';
    return (char *)out;
}

/* ---- a pass -------------------------------------------------------------------------------- */

static void cs_end(certsync *s)
{
    s->call = NULL;
    json_decref(s->secret);
    s->secret = NULL;
    certs_set_clear(&s->cur);
    certs_set_clear(&s->next);
    free(s->bundle_b64);
    s->bundle_b64 = NULL;
    json_decref(s->vcfg);
    s->vcfg = NULL;
    s->plan = 0;
}

static void cs_warn(certsync *s, const char *what, const kube_result *res)
{
    char status[16];
    snprintf(status, sizeof status, "%ld", res->status);
    log_warn("webhook certificates", "step", what, "secret", s->secret_name, "http_code", status, "error",
             *res->message ? res->message : res->error, NULL);
}

/* Hands cert/key to on_pair when they differ from the last pair (and belong together). */
static void cs_serve(certsync *s, const char *cert, const char *key)
{
    if (!cert || !key || (s->served_cert && strcmp(cert, s->served_cert) == 0 && strcmp(key, s->served_key) == 0))
        return;
    if (!certs_key_matches(cert, key)) {
        log_warn("webhook certificates: the Secret's tls.key does not match tls.crt; not served", "secret",
                 s->secret_name, NULL);
        return;
    }
    char *c = strdup(cert), *k = strdup(key);
    if (!c || !k) {
        free(c);
        free(k);
        return;
    }
    free(s->served_cert);
    free(s->served_key);
    s->served_cert = c;
    s->served_key = k;
    certs_info info;
    char e[64];
    if (certs_inspect(cert, &info, e, sizeof e) == 0) {
        char until[32];
        util_format_time(info.not_after, 0, until, sizeof until);
        log_info("webhook serving certificate", "serial", info.serial, "not_after", until, NULL);
    }
    if (s->on_pair) s->on_pair(c, k, s->ud);
}

static void cs_write_secret(certsync *s);
static void cs_config_step(certsync *s);

static void cs_on_secret_written(const kube_result *res, void *ud)
{
    certsync *s = ud;
    s->call = NULL;
    if (res->status == 200 || res->status == 201) {
        s->writes++;
        log_info("webhook certificates written", "secret", s->secret_name, NULL);
        cs_serve(s, s->next.cert, s->next.key);
    } else {
        cs_warn(s, res->status == 409 ? "write Secret (changed meanwhile: next check)" : "write Secret", res);
    }
    cs_end(s);
}

static void cs_write_secret(certsync *s)
{
    char path[600], err[256];
    json_t *obj, *data = json_object();
    const char *vals[4] = {s->next.ca_bundle, s->next.ca_key, s->next.cert, s->next.key};
    for (int i = 0; i < 4; i++) {
        char *b = cs_b64(vals[i]);
        json_object_set_new(data, cs_keys[i], b ? json_string(b) : json_null());
        free(b);
    }
    int create = s->secret == NULL;
    if (create) {
        obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:s, s:o}", "apiVersion", "v1", "kind", "Secret",
                        "metadata", "name", s->secret_name, "namespace", s->secret_ns, "labels",
                        "app.kubernetes.io/name", "flink-controller", "app.kubernetes.io/component", "webhook", "type",
                        "kubernetes.io/tls", "data", data);
    } else {
        obj = json_incref(s->secret);   /* the object read: its resourceVersion guards the PUT */
        json_t *old = json_object_get(obj, "data");
        if (json_is_object(old)) json_object_update(old, data);
        else json_object_set(obj, "data", data);
        json_decref(data);
        json_object_del(json_object_get(obj, "metadata"), "managedFields");
    }
    char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (!body) snprintf(err, sizeof err, "out of memory");
    kube_path(path, sizeof path, &kube_kind_secret, s->secret_ns, create ? NULL : s->secret_name, NULL);
    kube_req req = {.method = create ? "POST" : "PUT", .path = path, .body = body};
    s->call = body ? kube_request(s->kc, &req, cs_on_secret_written, s, err, sizeof err) : NULL;
    free(body);
    if (!s->call) {
        log_warn("webhook certificates", "step", "write Secret", "error", err, NULL);
        cs_end(s);
    }
}

/* After the configurations: write the Secret when the set is new, else the pass ends. */
static void cs_configs_done(certsync *s, int ok)
{
    if (!s->plan) {
        cs_end(s);
        return;
    }
    if (!ok && (s->plan & CERTS_NEW_CA) && s->secret) {
        /* a CA the API server does not trust yet: serve nothing it signed */
        log_warn("webhook certificates: the new CA is not in every caBundle; Secret not written", "secret",
                 s->secret_name, NULL);
        cs_end(s);
        return;
    }
    cs_write_secret(s);
}

static void cs_on_patched(const kube_result *res, void *ud)
{
    certsync *s = ud;
    s->call = NULL;
    if (res->status != 200) {
        cs_warn(s, "patch caBundle", res);
        cs_configs_done(s, 0);
        return;
    }
    s->patches++;
    log_info("webhook caBundle patched", "kind", s->config ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration",
             "name", s->configuration, NULL);
    s->config++;
    cs_config_step(s);
}

/* The JSON Patch setting every webhook's clientConfig.caBundle that differs from `want`,
 * after a test of the resourceVersion read; NULL when none differs. */
static char *cs_bundle_patch(json_t *cfg, const char *want)
{
    json_t *ops = json_array(), *hooks = json_object_get(cfg, "webhooks");
    const char *rv = json_string_value(json_object_get(json_object_get(cfg, "metadata"), "resourceVersion"));
    json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "test", "path", "/metadata/resourceVersion", "value",
                                         rv ? rv : ""));
    size_t i;
    json_t *h;
    json_array_foreach(hooks, i, h) {
        const char *have = json_string_value(json_object_get(json_object_get(h, "clientConfig"), "caBundle"));
        if (have && strcmp(have, want) == 0) continue;
        char p[64];
        snprintf(p, sizeof p, "/webhooks/%zu/clientConfig/caBundle", i);
        json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "add", "path", p, "value", want));
    }
    char *out = json_array_size(ops) > 1 ? json_dumps(ops, JSON_COMPACT) : NULL;
    json_decref(ops);
    return out;
}

/* A configuration's answer (status, body): patches its caBundle when it differs, then the next. */
static void cs_config_answer(certsync *s, const kube_result *res)
{
    const kube_kind *k = s->config ? &cs_kind_mutating : &cs_kind_validating;
    if (res->status == 404) {   /* no MutatingWebhookConfiguration of that name: none to keep */
        s->config++;
        cs_config_step(s);
        return;
    }
    if (res->status != 200 || !json_is_object(res->body)) {
        cs_warn(s, s->config ? "get MutatingWebhookConfiguration" : "get ValidatingWebhookConfiguration", res);
        cs_configs_done(s, 0);
        return;
    }
    char *patch = cs_bundle_patch(res->body, s->bundle_b64);
    if (!patch) {
        s->config++;
        cs_config_step(s);
        return;
    }
    char err[256];
    s->call = kube_patch(s->kc, k, NULL, s->configuration, NULL, "application/json-patch+json", patch, cs_on_patched,
                         s, err, sizeof err);
    free(patch);
    if (!s->call) {
        log_warn("webhook certificates", "step", "patch caBundle", "error", err, NULL);
        cs_configs_done(s, 0);
    }
}

static void cs_on_config(const kube_result *res, void *ud)
{
    certsync *s = ud;
    s->call = NULL;
    cs_config_answer(s, res);
}

/* GETs configuration `s->config` (0 validating, 1 mutating); after both, cs_configs_done. */
static void cs_config_step(certsync *s)
{
    if (!s->configuration || s->config > 1 || !s->bundle_b64) {
        cs_configs_done(s, 1);
        return;
    }
    if (s->config == 0 && s->vcfg) {   /* read before the decision */
        kube_result res = {.status = 200, .error = "", .reason = "", .message = "", .body = s->vcfg, .raw = ""};
        cs_config_answer(s, &res);
        return;
    }
    char path[600], err[256];
    kube_path(path, sizeof path, s->config ? &cs_kind_mutating : &cs_kind_validating, NULL, s->configuration, NULL);
    s->call = kube_get(s->kc, path, cs_on_config, s, err, sizeof err);
    if (!s->call) {
        log_warn("webhook certificates", "step", "get configuration", "error", err, NULL);
        cs_configs_done(s, 0);
    }
}

static void cs_decide(certsync *s);

/* The ValidatingWebhookConfiguration before the decision: one that cert-manager's cainjector
 * fills (annotation cert-manager.io/inject-ca-from) leaves the Secret and the caBundle to
 * cert-manager; this replica only serves the Secret's pair. */
static void cs_on_first_config(const kube_result *res, void *ud)
{
    certsync *s = ud;
    s->call = NULL;
    if (res->status == 200 && json_is_object(res->body)) {
        json_t *ann = json_object_get(json_object_get(res->body, "metadata"), "annotations");
        const char *from = json_string_value(json_object_get(ann, CERTSYNC_INJECT_ANNOTATION));
        if (from) {
            if (!s->warned_injected)
                log_info("webhook certificates: cert-manager injects the CA; the Secret is cert-manager's", "from",
                         from, NULL);
            s->warned_injected = 1;
            cs_end(s);
            return;
        }
        s->warned_injected = 0;
        s->vcfg = json_incref(res->body);
    } else if (res->status == 404) {
        /* not (yet) applied: whether cert-manager is to fill it is not known; wait */
        if (!s->warned_missing)
            log_warn("webhook certificates: no ValidatingWebhookConfiguration of that name yet; no certificate is "
                     "made until there is one", "name", s->configuration, NULL);
        s->warned_missing = 1;
        cs_end(s);
        return;
    } else {
        cs_warn(s, "get ValidatingWebhookConfiguration", res);
        cs_end(s);
        return;
    }
    s->warned_missing = 0;
    cs_decide(s);
}

static void cs_on_secret(const kube_result *res, void *ud)
{
    certsync *s = ud;
    s->call = NULL;
    if (res->status == 200 && json_is_object(res->body)) {
        const char *type = json_string_value(json_object_get(res->body, "type"));
        if (!type || strcmp(type, "kubernetes.io/tls") != 0) {
            log_warn("webhook certificates: the Secret is not of type kubernetes.io/tls (delete it and the controller "
                     "makes one)", "secret", s->secret_name, "type", type ? type : "", NULL);
            cs_end(s);
            return;
        }
        s->secret = json_incref(res->body);
        json_t *data = json_object_get(res->body, "data");
        char **vals[4] = {&s->cur.ca_bundle, &s->cur.ca_key, &s->cur.cert, &s->cur.key};
        for (int i = 0; i < 4; i++) *vals[i] = cs_unb64(json_string_value(json_object_get(data, cs_keys[i])));
        cs_serve(s, s->cur.cert, s->cur.key);
    } else if (res->status != 404) {
        cs_warn(s, "get Secret", res);
        cs_end(s);
        return;
    }
    if (s->may_write && !s->may_write(s->ud)) {
        cs_end(s);
        return;
    }
    if (!s->configuration) {
        cs_decide(s);
        return;
    }
    char path[600], err[256];
    kube_path(path, sizeof path, &cs_kind_validating, NULL, s->configuration, NULL);
    s->call = kube_get(s->kc, path, cs_on_first_config, s, err, sizeof err);
    if (!s->call) {
        log_warn("webhook certificates", "step", "get ValidatingWebhookConfiguration", "error", err, NULL);
        cs_end(s);
    }
}

/* Plans, makes a new set when due, then keeps the caBundle and writes the Secret. */
static void cs_decide(certsync *s)
{
    char why[256], err[256];
    double now = floor(ev_time());
    s->plan = certs_plan(&s->cur, (const char *const *)s->names, s->nnames, now, s->validity_s, why, sizeof why);
    if (s->plan) {
        if (certs_issue(&s->cur, s->plan, (const char *const *)s->names, s->nnames, now, s->validity_s, &s->next, err,
                        sizeof err)) {
            log_error("webhook certificates not made", "error", err, NULL);
            cs_end(s);
            return;
        }
        log_info(s->plan & CERTS_NEW_CA ? "webhook CA and serving certificate made" : "webhook serving certificate renewed",
                 "reason", why, "secret", s->secret_name, NULL);
    }
    const char *bundle = s->plan ? s->next.ca_bundle : s->cur.ca_bundle;
    s->bundle_b64 = bundle ? cs_b64(bundle) : NULL;
    s->config = 0;
    cs_config_step(s);
}

static void cs_on_tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    certsync *s = t->data;
    if (s->call) return;   /* the previous pass is still under way */
    char path[600], err[256];
    kube_path(path, sizeof path, &kube_kind_secret, s->secret_ns, s->secret_name, NULL);
    s->call = kube_get(s->kc, path, cs_on_secret, s, err, sizeof err);
    if (!s->call) log_warn("webhook certificates", "step", "get Secret", "error", err, NULL);
}

/* ---- lifetime ------------------------------------------------------------------------------ */

certsync *certsync_start(struct ev_loop *loop, kube_client *kc, const certsync_opts *o, char *err, size_t errlen)
{
    if (!loop || !kc || !o) {
        util_set_err(err, errlen, "certsync: a loop, a client and options are needed");
        return NULL;
    }
    certsync *s = calloc(1, sizeof *s);
    if (!s) {
        util_set_err(err, errlen, "out of memory");
        return NULL;
    }
    if (cs_split(o->secret, s->secret_ns, s->secret_name)) {
        util_set_err(err, errlen, "--webhook-cert-secret: expected NAMESPACE/NAME, got '%s'", o->secret ? o->secret : "");
        free(s);
        return NULL;
    }
    int n = certsync_names(o->service, o->hosts, s->names, CERTS_MAX_NAMES, err, errlen);
    if (n < 0) {
        free(s);
        return NULL;
    }
    s->nnames = (size_t)n;
    s->configuration = o->configuration && *o->configuration ? strdup(o->configuration) : NULL;
    s->loop = loop;
    s->kc = kc;
    s->validity_s = o->validity_s > 0 ? o->validity_s : CERTS_DEFAULT_VALIDITY_S;
    s->may_write = o->may_write;
    s->on_pair = o->on_pair;
    s->ud = o->ud;
    double every = o->check_s > 0 ? o->check_s
                                  : fmax(CERTSYNC_CHECK_MIN_S, fmin(CERTSYNC_CHECK_MAX_S, floor(s->validity_s / 30)));
    ev_timer_init(&s->tick, cs_on_tick, 0.0, every);
    s->tick.data = s;
    ev_timer_start(loop, &s->tick);
    return s;
}

void certsync_check_now(certsync *s)
{
    if (!s || s->call) return;
    ev_timer_stop(s->loop, &s->tick);
    ev_timer_set(&s->tick, 0.0, s->tick.repeat);
    ev_timer_start(s->loop, &s->tick);
}

unsigned certsync_secret_writes(const certsync *s) { return s ? s->writes : 0; }

unsigned certsync_bundle_patches(const certsync *s) { return s ? s->patches : 0; }

void certsync_free(certsync *s)
{
    if (!s) return;
    ev_timer_stop(s->loop, &s->tick);
    if (s->call) kube_cancel(s->call);
    cs_end(s);
    certsync_names_free(s->names, s->nnames);
    free(s->configuration);
    free(s->served_cert);
    free(s->served_key);
    free(s);
}
