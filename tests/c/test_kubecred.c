/* SPDX-License-Identifier: Apache-2.0 */
/* core/kubecred and the kubeconfig features around it (core/kube): exec credential plugins
 * against tests/c/fake_apiserver.py with a fake plugin (a shell script written here that logs
 * its args, env and KUBERNETES_EXEC_INFO and prints the ExecCredential the test asks for):
 * token used, proactive refresh before expiry, re-run at expiry, 401 -> one re-run, bad output
 * -> the field path, missing command -> installHint, client certificates, a timeout; then
 * --context, a merged $KUBECONFIG list, tokenFile re-read after a change, proxy-url (HTTP
 * CONNECT and SOCKS5 through tests/c/connect_proxy.py) and the environment's proxies. */
#include "transport_tap.h"
#include "transport_server.h"
#include "kube.h"
#include "kubecred.h"
#include "log.h"
#include "loop.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <time.h>

static struct ev_loop *loop;
static char dir[] = "/tmp/fc-kubecred-XXXXXX";
static char kpath[256];
static char logpath[256];
static double fake_now;

static double now_fn(void *ud)
{
    (void)ud;
    return fake_now;
}

typedef struct res {
    int done;
    long status;
    char error[1024];
    json_t *body;
    int attempts;
} res;

static void on_done(const kube_result *r, void *ud)
{
    res *o = ud;
    o->done = 1;
    o->status = r->status;
    snprintf(o->error, sizeof o->error, "%s", r->error);
    json_decref(o->body);
    o->body = json_incref(r->body);
    o->attempts = r->attempts;
}

static void reset(res *o)
{
    json_decref(o->body);
    memset(o, 0, sizeof *o);
}

/* Writes `text` to <dir>/<name>. */
static void put(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The content of <dir>/<name> ("" when absent), in a static buffer. */
static const char *get(const char *name)
{
    static char buf[8192];
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    buf[0] = '\0';
    FILE *f = fopen(p, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

static int runs(void)
{
    return atoi(get("count"));
}

/* Sends GET path and waits for the answer. */
static void get_path(kube_client *c, const char *path, res *o)
{
    char err[512];
    reset(o);
    if (!kube_get(c, path, on_done, o, err, sizeof err)) {
        snprintf(o->error, sizeof o->error, "%s", err);
        return;
    }
    loop_run_until(loop, &o->done, 15);
}

static const char *auth_of(res *o)
{
    const char *a = json_string_value(json_object_get(o->body, "auth"));
    return a ? a : "";
}

static int token_is_flag;
static const char *token_want;
static kube_client *token_client;
static void token_check(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l;
    (void)w;
    (void)revents;
    token_is_flag = strcmp(kube_client_token(token_client), token_want) == 0;
}

/* Runs the loop until the client's token is `want` (a background refresh landed), <= 10 s. */
static int wait_token(kube_client *c, const char *want)
{
    ev_timer t;
    token_client = c;
    token_want = want;
    token_is_flag = 0;
    ev_timer_init(&t, token_check, 0.01, 0.01);
    ev_timer_start(loop, &t);
    loop_run_until(loop, &token_is_flag, 10);
    ev_timer_stop(loop, &t);
    return token_is_flag;
}

/* Sets what the fake plugin prints next: mode (token, noexp, garbage, badexp, cert, fail,
 * sleep), the token and the expirationTimestamp. */
static void plugin_next(const char *mode, const char *token, const char *exp)
{
    put("mode", mode);
    put("token", token);
    put("exp", exp);
}

static void write_plugin(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/plugin.sh", dir);
    FILE *f = fopen(p, "w");
    fputs("#!/bin/sh\n"
          "# fake exec credential plugin of test_kubecred\n"
          "n=$(cat \"$D/count\" 2>/dev/null || echo 0); echo $((n + 1)) >\"$D/count\"\n"
          "printf '%s\\n' \"$@\" >\"$D/args\"\n"
          "printf '%s' \"$FOO\" >\"$D/foo\"\n"
          "printf '%s' \"$KUBERNETES_EXEC_INFO\" >\"$D/info\"\n"
          "echo \"plugin stderr line $((n + 1))\" >&2\n"
          "tok=$(cat \"$D/token\"); exp=$(cat \"$D/exp\")\n"
          "head='{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"'\n"
          "case $(cat \"$D/mode\") in\n"
          "token) printf '%s,\"status\":{\"token\":\"%s\",\"expirationTimestamp\":\"%s\"}}' \"$head\" \"$tok\" \"$exp\" ;;\n"
          "noexp) printf '%s,\"status\":{\"token\":\"%s\"}}' \"$head\" \"$tok\" ;;\n"
          "garbage) printf 'not json' ;;\n"
          "badexp) printf '%s,\"status\":{\"token\":\"x\",\"expirationTimestamp\":\"tomorrow\"}}' \"$head\" ;;\n"
          "onlycert) printf '%s,\"status\":{\"clientCertificateData\":\"x\"}}' \"$head\" ;;\n"
          "cert) c=$(awk '{printf \"%s\\\\n\", $0}' \"$TLS/client.crt\"); k=$(awk '{printf \"%s\\\\n\", $0}' \"$TLS/client.key\")\n"
          "  printf '%s,\"status\":{\"clientCertificateData\":\"%s\",\"clientKeyData\":\"%s\"}}' \"$head\" \"$c\" \"$k\" ;;\n"
          "fail) echo 'no credentials for you' >&2; exit 3 ;;\n"
          "sleep) exec sleep 5 ;;\n"
          "esac\n",
          f);
    fclose(f);
    chmod(p, 0755);
}

/* Writes the kubeconfig of the plugin tests: context main (the fake plugin, relative command,
 * args, env, provideClusterInfo), context other (a command that is not installed). */
static void write_kubeconfig(int port)
{
    char cwd[1024], text[4096];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    snprintf(text, sizeof text,
             "apiVersion: v1\n"
             "kind: Config\n"
             "current-context: main\n"
             "contexts:\n"
             "- {name: main, context: {cluster: fake, user: plugin}}\n"
             "- {name: other, context: {cluster: fake, user: missing-cmd, namespace: other-ns}}\n"
             "clusters:\n"
             "- name: fake\n"
             "  cluster: {server: \"https://127.0.0.1:%d\", certificate-authority: \"%s/" TLS_DIR "/ca.crt\"}\n"
             "users:\n"
             "- name: plugin\n"
             "  user:\n"
             "    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: ./plugin.sh\n"
             "      args: [first arg, --second]\n"
             "      env: [{name: D, value: \"%s\"}, {name: FOO, value: bar}, {name: TLS, value: \"%s/" TLS_DIR "\"}]\n"
             "      interactiveMode: Never\n"
             "      provideClusterInfo: true\n"
             "- name: missing-cmd\n"
             "  user:\n"
             "    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1beta1\n"
             "      command: fc-no-such-plugin\n"
             "      installHint: 'install fc-no-such-plugin with: apt install fc-plugin'\n",
             port, cwd, dir, cwd);
    put("kubeconfig", text);
    snprintf(kpath, sizeof kpath, "%s/kubeconfig", dir);
}

#define T1 1893456000.0 /* 2030-01-01T00:00:00Z */

static void plugin_tests(int port)
{
    char err[2048] = "", want[2048];
    kube_config cfg;
    res o;
    memset(&o, 0, sizeof o);
    write_plugin();
    write_kubeconfig(port);

    /* start-up: the plugin runs once, synchronously */
    plugin_next("token", "tok-1", "2030-01-01T00:00:00Z");
    IS_INT(kube_config_load_file(&cfg, kpath, NULL, err, sizeof err), 0, "exec kubeconfig loads (%s)", err);
    OK(cfg.exec != NULL, "exec parsed");
    if (!cfg.exec)
        return;
    char abs_cmd[512];
    snprintf(abs_cmd, sizeof abs_cmd, "%s/./plugin.sh", dir);
    IS_STR(cfg.exec->command, abs_cmd, "a command with a '/' is relative to the kubeconfig's directory");
    IS_INT(cfg.exec->interactive_mode, KUBECRED_NEVER, "interactiveMode Never");
    cfg.qps = 0;
    kube_client *c = kube_client_new(loop, &cfg, err, sizeof err);
    OK(c != NULL, "kube_client_new runs the plugin (%s)", c ? "" : err);
    kube_config_clear(&cfg);
    if (!c)
        return;
    kube_client_set_clock(c, now_fn, NULL);
    fake_now = T1 - 3600;
    IS_INT(runs(), 1, "one run at start");
    IS_STR(kube_client_token(c), "tok-1", "the plugin's token");
    IS_STR(get("args"), "first arg\n--second\n", "args passed as given (no shell splitting)");
    IS_STR(get("foo"), "bar", "env entries passed");
    json_t *info = json_loads(get("info"), 0, NULL);
    IS_STR(json_string_value(json_object_get(info, "apiVersion")), "client.authentication.k8s.io/v1",
           "KUBERNETES_EXEC_INFO apiVersion");
    IS_STR(json_string_value(json_object_get(info, "kind")), "ExecCredential", "KUBERNETES_EXEC_INFO kind");
    json_t *spec = json_object_get(info, "spec");
    OK(json_is_false(json_object_get(spec, "interactive")), "spec.interactive false (no terminal)");
    char server[64];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", port);
    IS_STR(json_string_value(json_object_get(json_object_get(spec, "cluster"), "server")), server,
           "provideClusterInfo: spec.cluster.server");
    size_t calen = 0;
    char *ca = slurp(TLS_DIR "/ca.crt", &calen);
    unsigned char *b64 = malloc(4 * ((calen + 2) / 3) + 1);
    if (ca && b64)
        EVP_EncodeBlock(b64, (unsigned char *)ca, (int)calen);
    IS_STR(json_string_value(json_object_get(json_object_get(spec, "cluster"), "certificate-authority-data")),
           (char *)b64, "provideClusterInfo: the CA file's bytes as certificate-authority-data");
    free(ca);
    free(b64);
    json_decref(info);

    get_path(c, "/authz?want=tok-1", &o);
    IS_INT(o.status, 200, "request with the plugin's token accepted");
    IS_STR(auth_of(&o), "Bearer tok-1", "Authorization: Bearer tok-1");
    IS_INT(runs(), 1, "cached: no run for a request");

    /* 30 s before expiry (inside the 60 s look-ahead, outside the 10 s margin): the request goes
     * with the token in hand, a run starts in the background */
    plugin_next("token", "tok-2", "2030-01-01T01:00:00Z");
    fake_now = T1 - 30;
    get_path(c, "/echo", &o);
    IS_STR(auth_of(&o), "Bearer tok-1", "near expiry: sent at once with the current token");
    OK(wait_token(c, "tok-2"), "the background run's token replaces it");
    IS_INT(runs(), 2, "one background run");

    /* past expiry less the margin: the request waits for a new run */
    plugin_next("token", "tok-3", "2030-01-01T02:00:00Z");
    fake_now = T1 + 3600 - 5;
    get_path(c, "/echo", &o);
    IS_STR(auth_of(&o), "Bearer tok-3", "expired -> re-run, the request sent with the new token");
    IS_INT(runs(), 3, "a run at expiry");

    /* 401: the credential is invalidated once and the request retried */
    plugin_next("token", "tok-4", "2030-01-01T05:00:00Z");
    get_path(c, "/authz?want=tok-4", &o);
    IS_INT(o.status, 200, "401 -> re-run -> 200");
    IS_INT(o.attempts, 2, "one retry after the 401");
    IS_INT(runs(), 4, "one run for the 401");

    /* two requests answered 401 with the same credential: one run */
    plugin_next("token", "tok-5", "2030-01-01T05:00:00Z");
    res o2;
    memset(&o2, 0, sizeof o2);
    reset(&o);
    kube_get(c, "/authz?want=tok-5", on_done, &o, err, sizeof err);
    kube_get(c, "/authz?want=tok-5", on_done, &o2, err, sizeof err);
    loop_run_until(loop, &o.done, 15);
    loop_run_until(loop, &o2.done, 15);
    OK(o.status == 200 && o2.status == 200, "both 401s retried with the new token (%ld, %ld)", o.status, o2.status);
    IS_INT(runs(), 5, "the 401s of one credential run the plugin once");
    reset(&o2);

    /* a token the server never accepts: one re-run, then the 401 is the answer */
    plugin_next("token", "tok-6", "2030-01-01T05:00:00Z");
    get_path(c, "/authz?want=nobody", &o);
    IS_INT(o.status, 401, "still 401 after one re-run: reported");
    IS_INT(o.attempts, 2, "not retried again");
    IS_INT(runs(), 6, "one run, no loop");

    /* bad output while running: the request fails with the field path */
    plugin_next("badexp", "", "");
    get_path(c, "/authz?want=nobody", &o);
    snprintf(want, sizeof want,
             "kubeconfig %s: users[name=plugin].user.exec: ExecCredential status.expirationTimestamp: not an RFC "
             "3339 time: \"tomorrow\"", kpath);
    IS_INT(o.status, 0, "a failed run fails the waiting request");
    IS_STR(o.error, want, "its error names the ExecCredential field");

    /* the plugin fixed: the next request runs it again */
    plugin_next("noexp", "tok-7", "");
    get_path(c, "/echo", &o);
    IS_STR(auth_of(&o), "Bearer tok-7", "recovered: new run, new token");
    int before = runs();
    fake_now = T1 + 1e6;
    get_path(c, "/echo", &o);
    IS_INT(runs(), before, "no expirationTimestamp: kept whatever the clock says");
    kube_client_free(c);
    reset(&o);

    /* plugin failures at start */
    struct {
        const char *mode, *want;
    } bad[] = {
        {"garbage", "users[name=plugin].user.exec: ExecCredential: not JSON (line 1 column "},
        {"onlycert", "users[name=plugin].user.exec: ExecCredential status.clientKeyData: missing (the plugin "
                     "returned only the certificate)"},
        {"fail", "plugin.sh: exit status 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        plugin_next(bad[i].mode, "", "");
        err[0] = '\0';
        kube_config_load_file(&cfg, kpath, NULL, err, sizeof err);
        c = kube_client_new(loop, &cfg, err, sizeof err);
        OK(c == NULL, "plugin output %s: kube_client_new fails", bad[i].mode);
        OK(strstr(err, bad[i].want) != NULL, "%s: error: %s", bad[i].mode, err);
        kube_client_free(c);
        kube_config_clear(&cfg);
    }

    /* client certificate from the plugin */
    plugin_next("cert", "", "");
    kube_config_load_file(&cfg, kpath, NULL, err, sizeof err);
    c = kube_client_new(loop, &cfg, err, sizeof err);
    OK(c != NULL, "plugin with clientCertificateData/clientKeyData (%s)", c ? "" : err);
    if (c) {
        get_path(c, "/whoami", &o);
        IS_STR(json_string_value(json_object_get(o.body, "cn")), "flink-controller-test",
               "the plugin's client certificate presented");
        IS_STR(kube_client_token(c), "", "no bearer token");
        kube_client_free(c);
    }

    /* a run past its timeout is killed */
    plugin_next("sleep", "", "");
    kubecred cred;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    IS_INT(kubecred_run_sync(cfg.exec, 0.3, &cred, err, sizeof err), -1, "sleeping plugin with a 0.3 s timeout");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    OK(strstr(err, "plugin.sh: timed out after 0.3 s (killed)") != NULL, "timeout error: %s", err);
    OK(took < 2, "returned after %.2f s", took);
    kube_config_clear(&cfg);
    reset(&o);

    /* --context other: its namespace and its user, a command that is not installed */
    IS_INT(kube_config_load_default(&cfg, kpath, "other", err, sizeof err), 0, "--context other (%s)", err);
    IS_STR(cfg.context, "other", "context other selected");
    IS_STR(cfg.namespace, "other-ns", "its namespace");
    c = kube_client_new(loop, &cfg, err, sizeof err);
    snprintf(want, sizeof want,
             "kube_client_new: kubeconfig %s: users[name=missing-cmd].user.exec.command: fc-no-such-plugin: "
             "executable not found in $PATH; install fc-no-such-plugin with: apt install fc-plugin", kpath);
    OK(c == NULL, "missing command: no client");
    IS_STR(err, want, "the error carries the installHint");
    kube_config_clear(&cfg);

    /* the plugin's stderr went to our log */
    const char *logged = "";
    char *lg = slurp(logpath, &calen);
    if (lg)
        logged = lg;
    OK(strstr(logged, "exec plugin stderr") && strstr(logged, "\"plugin stderr line 1\""),
       "plugin stderr lines logged (warn, \"exec plugin stderr\")");
    OK(strstr(logged, "\"no credentials for you\""), "stderr of a failing plugin logged");
    free(lg);
}

/* ---- pure functions ---------------------------------------------------------------------- */

static void parse_tests(void)
{
    double t = 0;
    IS_INT(kubecred_parse_time("2030-01-01T00:00:00Z", &t), 0, "RFC 3339 Z");
    OK(t == T1, "2030-01-01T00:00:00Z = %.0f", t);
    IS_INT(kubecred_parse_time("2030-01-01T02:00:00.5+02:00", &t), 0, "offset and fraction");
    OK(t == T1 + 0.5, "+02:00 taken off, .5 kept (%.3f)", t - T1);
    IS_INT(kubecred_parse_time("2030-01-01 00:00:00Z", &t), -1, "a space instead of T refused");
    IS_INT(kubecred_parse_time("2030-01-01T00:00:00", &t), -1, "no zone refused");
    IS_INT(kubecred_parse_time("tomorrow", &t), -1, "words refused");

    kubecred_exec x = {.where = "kubeconfig K: users[name=u].user.exec", .api_version = KUBECRED_API_V1BETA1};
    kubecred cr;
    char err[1024];
    struct {
        const char *out, *want;
    } cases[] = {
        {"[1]", "kubeconfig K: users[name=u].user.exec: ExecCredential: not a JSON object"},
        {"{\"kind\":\"Secret\"}", "kubeconfig K: users[name=u].user.exec: ExecCredential kind: want ExecCredential, got Secret"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":{}}",
         "kubeconfig K: users[name=u].user.exec: ExecCredential apiVersion: the kubeconfig says "
         "client.authentication.k8s.io/v1beta1, the plugin returned client.authentication.k8s.io/v1"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\"}",
         "kubeconfig K: users[name=u].user.exec: ExecCredential status: missing"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"status\":{\"token\":5}}",
         "kubeconfig K: users[name=u].user.exec: ExecCredential status.token: not a string"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"status\":{}}",
         "kubeconfig K: users[name=u].user.exec: ExecCredential status: neither token nor clientCertificateData "
         "and clientKeyData"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = '\0';
        IS_INT(kubecred_parse(&x, cases[i].out, strlen(cases[i].out), &cr, err, sizeof err), -1, "bad ExecCredential %zu", i);
        IS_STR(err, cases[i].want, "bad ExecCredential %zu: field named", i);
    }
    const char *good = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                       "\"status\":{\"token\":\"abc\",\"expirationTimestamp\":\"2030-01-01T00:00:00Z\"}}";
    IS_INT(kubecred_parse(&x, good, strlen(good), &cr, err, sizeof err), 0, "good ExecCredential");
    OK(cr.token && strcmp(cr.token, "abc") == 0 && cr.expiry == T1, "token and expiry read");
    kubecred_clear(&cr);

    char *info = kubecred_exec_info(&x);
    IS_STR(info, "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}",
           "KUBERNETES_EXEC_INFO without provideClusterInfo: no cluster");
    free(info);
    x.provide_cluster_info = 1;
    x.server = "https://k:6443";
    x.insecure = 1;
    x.proxy_url = "socks5://p:1080";
    info = kubecred_exec_info(&x);
    IS_STR(info, "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"spec\":{"
                 "\"interactive\":false,\"cluster\":{\"server\":\"https://k:6443\",\"insecure-skip-tls-verify\":true,"
                 "\"proxy-url\":\"socks5://p:1080\"}}}",
           "with provideClusterInfo: spec.cluster");
    free(info);

    char buf[512];
    x.command = "sh";
    IS_INT(kubecred_resolve(&x, "/nonexistent:/bin:/usr/bin", buf, sizeof buf, err, sizeof err), 0, "sh found in PATH");
    IS_STR(buf, "/bin/sh", "first PATH entry that has it");
    x.command = "fc-nope";
    x.install_hint = "get it at example.com";
    IS_INT(kubecred_resolve(&x, "/bin", buf, sizeof buf, err, sizeof err), -1, "not in PATH");
    IS_STR(err, "kubeconfig K: users[name=u].user.exec.command: fc-nope: executable not found in $PATH; get it at example.com",
           "installHint in the error");
    char plain[512];
    put("plain", "not a program\n");
    snprintf(plain, sizeof plain, "%s/plain", dir);
    chmod(plain, 0644);
    x.command = plain;
    IS_INT(kubecred_resolve(&x, "/bin", buf, sizeof buf, err, sizeof err), -1, "a path that is not executable");
    OK(strstr(err, "/plain: not an executable file; get it at example.com") != NULL, "%s", err);
}

/* Loads a kubeconfig whose users[0] (name u) is `user` (YAML flow mapping); returns the rc. */
static int load_user(const char *user, kube_config *cfg, char *err, size_t errlen)
{
    char text[2048];
    snprintf(text, sizeof text,
             "apiVersion: v1\ncurrent-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
             "clusters: [{name: c, cluster: {server: 'https://k:6443'}}]\nusers: [{name: u, user: %s}]\n", user);
    put("u.yaml", text);
    char p[512];
    snprintf(p, sizeof p, "%s/u.yaml", dir);
    return kube_config_load_file(cfg, p, NULL, err, errlen);
}

static void config_tests(void)
{
    kube_config cfg;
    char err[1024], want[1024], p[512];
    snprintf(p, sizeof p, "%s/u.yaml", dir);
    struct {
        const char *user, *want;
    } bad[] = {
        {"{exec: {apiVersion: client.authentication.k8s.io/v1, command: x}}",
         "users[name=u].user.exec.interactiveMode: missing (client.authentication.k8s.io/v1 needs Never, IfAvailable or Always)"},
        {"{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: Always}}",
         "users[name=u].user.exec.interactiveMode: Always needs a terminal and flink-controller has none (Never or IfAvailable)"},
        {"{exec: {apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: Sometimes}}",
         "users[name=u].user.exec.interactiveMode: Sometimes: not Never, IfAvailable or Always"},
        {"{exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}",
         "users[name=u].user.exec.apiVersion: client.authentication.k8s.io/v1alpha1: not supported "
         "(client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1)"},
        {"{exec: {apiVersion: client.authentication.k8s.io/v1beta1}}", "users[name=u].user.exec.command: missing"},
        {"{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, args: one}}",
         "users[name=u].user.exec.args: not a list"},
        {"{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, env: [{name: A}]}}",
         "users[name=u].user.exec.env[0].value: missing"},
        {"{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, env: [{value: A}]}}",
         "users[name=u].user.exec.env[0].name: missing"},
        {"{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, provideClusterInfo: yes}}",
         "users[name=u].user.exec.provideClusterInfo: not true or false"},
        {"{auth-provider: {name: gcp}}",
         "users[name=u].user.auth-provider: not supported (kubectl dropped the gcp and azure providers in 1.26: use their "
         "exec plugins, gke-gcloud-auth-plugin or kubelogin)"},
        {"{username: a, password: b}",
         "users[name=u].user.username: basic auth is not supported (the API server dropped it in 1.19)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        IS_INT(load_user(bad[i].user, &cfg, err, sizeof err), -1, "refused: %s", bad[i].user);
        snprintf(want, sizeof want, "kubeconfig %s: %s", p, bad[i].want);
        IS_STR(err, want, "error names the field");
    }
    IS_INT(load_user("{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, args: [eks, get-token]}}",
                     &cfg, err, sizeof err), 0, "v1beta1 without interactiveMode (%s)", err);
    OK(cfg.exec && cfg.exec->interactive_mode == KUBECRED_IF_AVAILABLE && cfg.exec->nargs == 2 &&
       strcmp(cfg.exec->command, "aws") == 0, "defaults to IfAvailable; a bare command kept for $PATH");
    kube_config_clear(&cfg);
    IS_INT(load_user("{token: static, exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws}}", &cfg, err,
                     sizeof err), 0, "token and exec");
    OK(cfg.exec == NULL && strcmp(cfg.token, "static") == 0, "the token wins, the plugin is dropped (client-go)");
    kube_config_clear(&cfg);

    /* proxy-url */
    put("p.yaml", "apiVersion: v1\ncurrent-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                  "clusters: [{name: c, cluster: {server: 'https://k:6443', proxy-url: 'ftp://p:21'}}]\n");
    snprintf(p, sizeof p, "%s/p.yaml", dir);
    IS_INT(kube_config_load_file(&cfg, p, NULL, err, sizeof err), -1, "proxy-url ftp:// refused");
    snprintf(want, sizeof want,
             "kubeconfig %s: clusters[name=c].cluster.proxy-url: ftp://p:21: not an http://, https:// or socks5:// URL", p);
    IS_STR(err, want, "proxy-url error");
}

/* $KUBECONFIG with several files, merged as kubectl merges them. */
static void merge_tests(void)
{
    kube_config cfg;
    char err[1024], want[2048], a[512], b[512], env[2048];
    put("a.yaml", "apiVersion: v1\ncurrent-context: ctx-a\n"
                  "contexts: [{name: ctx-a, context: {cluster: shared, user: ua, namespace: from-a}}]\n"
                  "users: [{name: ua, user: {token: token-a}}]\n");
    char bdir[512];
    snprintf(bdir, sizeof bdir, "%s/b", dir);
    mkdir(bdir, 0700);
    put("b/ca.crt", "not checked here\n");
    put("b/b.yaml", "apiVersion: v1\ncurrent-context: ctx-b\n"
                    "contexts: [{name: ctx-a, context: {cluster: other}}, {name: ctx-b, context: {cluster: shared, user: ub}}]\n"
                    "clusters: [{name: shared, cluster: {server: 'https://b:6443', certificate-authority: ca.crt}}]\n"
                    "users: [{name: ua, user: {token: token-b}}, {name: ub, user: {token: token-ub}}]\n");
    snprintf(a, sizeof a, "%s/a.yaml", dir);
    snprintf(b, sizeof b, "%s/b/b.yaml", dir);
    snprintf(env, sizeof env, "%s/missing.yaml:%s::%s:%s", dir, a, b, a);
    setenv("KUBECONFIG", env, 1);
    IS_INT(kube_config_load_default(&cfg, NULL, NULL, err, sizeof err), 0, "KUBECONFIG list loads (%s)", err);
    IS_STR(cfg.context, "ctx-a", "current-context of the first file that sets it");
    IS_STR(cfg.namespace, "from-a", "context ctx-a from the first file that has it");
    IS_STR(cfg.token, "token-a", "user ua from the first file");
    IS_STR(cfg.server, "https://b:6443", "cluster only in the second file");
    snprintf(want, sizeof want, "%s/b/ca.crt", dir);
    IS_STR(cfg.ca_file, want, "its relative path resolved against the second file's directory");
    kube_config_clear(&cfg);
    IS_INT(kube_config_load_default(&cfg, NULL, "ctx-b", err, sizeof err), 0, "--context ctx-b over the list");
    IS_STR(cfg.token, "token-ub", "ctx-b's user");
    kube_config_clear(&cfg);
    IS_INT(kube_config_load_default(&cfg, NULL, "nope", err, sizeof err), -1, "unknown context");
    snprintf(want, sizeof want, "kubeconfig %s:%s: contexts[name=nope]: not found", a, b);
    IS_STR(err, want, "error names the merged files");
    snprintf(env, sizeof env, "%s/missing.yaml", dir);
    setenv("KUBECONFIG", env, 1);
    IS_INT(kube_config_load_default(&cfg, NULL, NULL, err, sizeof err), -1, "only missing files");
    snprintf(want, sizeof want, "kubeconfig %s/missing.yaml: No such file or directory", dir);
    IS_STR(err, want, "names the first");
    unsetenv("KUBECONFIG");
}

/* tokenFile (and the in-cluster token, kept as a token file) re-read at most every 60 s. */
static void token_file_tests(void)
{
    char err[512], tok[512];
    put("tok", "first\n");
    snprintf(tok, sizeof tok, "%s/tok", dir);
    kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = "https://fc-test.invalid:1";
    cfg.token_file = tok;
    kube_client *c = kube_client_new(loop, &cfg, err, sizeof err);
    OK(c != NULL, "client with a token file");
    if (!c)
        return;
    double t0 = ev_now(loop); /* the clock of the first read, in kube_client_new */
    fake_now = t0;
    kube_client_set_clock(c, now_fn, NULL);
    IS_STR(kube_client_token(c), "first", "first read");
    put("tok", "second\n");
    fake_now = t0 + 30;
    IS_STR(kube_client_token(c), "first", "30 s later: not re-read yet");
    fake_now = t0 + 61;
    IS_STR(kube_client_token(c), "second", "after KUBE_TOKEN_RELOAD_S: the rotated token");
    put("tok", "");
    fake_now = t0 + 200;
    IS_STR(kube_client_token(c), "second", "an empty file keeps the last good token");
    kube_client_free(c);
}

static pid_t proxy_pid;

static int proxy_start(const char *logfile)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    proxy_pid = fork();
    if (proxy_pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execlp("python3", "python3", "tests/c/connect_proxy.py", logfile, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[32] = "";
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    return n > 0 ? atoi(buf) : -1;
}

static void proxy_tests(int port)
{
    char plog[512], err[512], server[128], purl[128], want[128];
    snprintf(plog, sizeof plog, "%s/proxy.log", dir);
    int pport = proxy_start(plog);
    OK(pport > 0, "connect_proxy.py started");
    if (pport <= 0)
        return;
    res o;
    memset(&o, 0, sizeof o);
    kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(server, sizeof server, "https://127.0.0.1:%d", port);
    cfg.server = server;
    cfg.ca_file = TLS_DIR "/ca.crt";
    const char *schemes[] = {"http", "socks5"};
    const char *logged[] = {"CONNECT", "SOCKS5"};
    for (int i = 0; i < 2; i++) {
        put("proxy.log", "");
        snprintf(purl, sizeof purl, "%s://127.0.0.1:%d", schemes[i], pport);
        cfg.proxy_url = purl;
        kube_client *c = kube_client_new(loop, &cfg, err, sizeof err);
        get_path(c, "/hello", &o);
        IS_INT(o.status, 200, "proxy-url %s://: request answered", schemes[i]);
        snprintf(want, sizeof want, "%s 127.0.0.1:%d\n", logged[i], port);
        IS_STR(get("proxy.log"), want, "went through the proxy (%s)", logged[i]);
        kube_client_free(c);
    }
    cfg.proxy_url = NULL;

    /* the environment's proxy, as Go's ProxyFromEnvironment: not for a loopback server */
    snprintf(purl, sizeof purl, "http://127.0.0.1:%d", pport);
    setenv("HTTPS_PROXY", purl, 1);
    put("proxy.log", "");
    kube_client *c = kube_client_new(loop, &cfg, err, sizeof err);
    get_path(c, "/hello", &o);
    IS_INT(o.status, 200, "HTTPS_PROXY set, loopback server: answered");
    IS_STR(get("proxy.log"), "", "loopback: not through the proxy");
    kube_client_free(c);
    snprintf(server, sizeof server, "https://fc-test.invalid:%d", port);
    cfg.insecure = 1; /* the test certificate names localhost */
    c = kube_client_new(loop, &cfg, err, sizeof err);
    get_path(c, "/hello", &o);
    IS_INT(o.status, 200, "HTTPS_PROXY: a name only the proxy can reach answered");
    snprintf(want, sizeof want, "CONNECT fc-test.invalid:%d\n", port);
    IS_STR(get("proxy.log"), want, "through HTTPS_PROXY (libcurl reads the environment)");
    setenv("NO_PROXY", "fc-test.invalid", 1);
    put("proxy.log", "");
    get_path(c, "/hello", &o);
    IS_INT(o.status, 0, "NO_PROXY: direct, and the name does not resolve");
    IS_STR(get("proxy.log"), "", "NO_PROXY honoured");
    kube_client_free(c);
    unsetenv("NO_PROXY");
    unsetenv("HTTPS_PROXY");
    reset(&o);
    kill(proxy_pid, SIGTERM);
    waitpid(proxy_pid, NULL, 0);
}

static void net_tests(int port)
{
    plugin_tests(port);
    proxy_tests(port);
}

int main(void)
{
    loop = ev_default_loop(EVFLAG_AUTO); /* as `run`: libev's SIGCHLD handler reaps children */
    unsetenv("KUBECONFIG");
    unsetenv("HTTPS_PROXY");
    unsetenv("https_proxy");
    unsetenv("NO_PROXY");
    unsetenv("no_proxy");
    if (!mkdtemp(dir)) {
        printf("1..1\nnot ok 1 - mkdtemp\n");
        return 1;
    }
    snprintf(logpath, sizeof logpath, "%s/log.txt", dir);
    FILE *lf = fopen(logpath, "w");
    log_set_output(lf);
    parse_tests();
    config_tests();
    merge_tests();
    token_file_tests();
    SERVER_RUN(net_tests);
    log_set_output(NULL);
    if (lf)
        fclose(lf);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        OK(0, "temp dir removed");
    return DONE_TESTING();
}
