/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main: the flink-controller command line.
 *
 *   flink-controller render -f FILE|DIR|- [-f ...] [-o yaml|json] [--validate=strict|warn|ignore]
 *                           [--policy-dir DIR]
 *                           [--policy-timeout-ms N] [--policy-memory-mib N]
 *   flink-controller sandbox-run FILE... [--input JSON] [--policy-dir DIR] [budgets]
 *   flink-controller test [--policy-dir DIR] [--update POLICY/CASE] [budgets] [PATTERN]
 *   flink-controller diff [--kubeconfig F] [--context NAME] [--policy-dir DIR] [budgets] (NS/NAME | -A)
 *   flink-controller reconcile -f|--snapshot FILE|- [--policy-dir DIR] [budgets]
 *   flink-controller run [options]            (core/run.c)
 *   flink-controller webhook [options]        (core/webhook.c)
 *   flink-controller version
 *   flink-controller --help
 *
 * Exit codes: 0 ok; 1 invalid input or a policy failure (messages on stderr, stdout empty);
 * 2 usage or I/O errors.  A subcommand is one line in `commands` below: `int fn(argc, argv)`
 * gets argv[0] = the subcommand name and returns the exit code.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>

#include "fixtures.h"
#include "lhost.h"
#include "lhost_json.h"
#include "livediff.h"
#include "run.h"
#include "util.h"
#include "version.h"
#include "webhook.h"

#define MAIN_INPUT_MAX ((size_t)64 << 20) /* bytes of render input, all files together */
#define MAIN_RENDER_FILES_MAX 4096         /* files one render reads (-f and the directories' files) */

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 2 };

static int cmd_render(int argc, char **argv);
static int cmd_sandbox_run(int argc, char **argv);
static int cmd_test(int argc, char **argv);
static int cmd_reconcile(int argc, char **argv);
static int cmd_version(int argc, char **argv);

struct main_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct main_command commands[] = {
    {"render", cmd_render, "print the objects a FlinkCluster manifest becomes (no cluster needed)"},
    {"sandbox-run", cmd_sandbox_run, "run Lua chunks under the policy sandbox (debugging)"},
    {"test", cmd_test, "run every policy's fixtures in the production sandbox"},
    {"diff", livediff_main, "show what a policy directory would change in live FlinkClusters"},
    {"reconcile", cmd_reconcile, "replay one reconcile pass from a recorded snapshot (offline)"},
    {"version", cmd_version, "print the version"},
    {"run", run_main, "run the controller (watch FlinkClusters, reconcile, apply)"},
    {"webhook", webhook_main, "serve only the admission webhook over TLS (no API server needed)"},
    {NULL, NULL, NULL}};

static void main_usage(FILE *out)
{
    fprintf(out, "usage: flink-controller <command> [options]\n\ncommands:\n");
    for (const struct main_command *c = commands; c->name; c++)
        fprintf(out, "  %-12s %s\n", c->name, c->summary);
    fprintf(out, "\nenvironment: FLINK_CONTROLLER_HOME overrides the data directory (%s)\n",
            FC_DATADIR);
}

/* Reads a whole file ("-" is stdin) into a malloc'd buffer; NULL with a message on stderr. */
static char *main_read(const char *cmd, const char *path, size_t *len)
{
    char why[128];
    char *buf = strcmp(path, "-") == 0
                    ? util_read_stream(stdin, MAIN_INPUT_MAX, len, why, sizeof why)
                    : util_read_file(path, MAIN_INPUT_MAX, len, why, sizeof why);
    if (!buf)
        fprintf(stderr, "%s: %s: %s\n", cmd, path, why);
    return buf;
}

static int main_parse_uint(const char *cmd, const char *flag, const char *v, unsigned max,
                           unsigned *out)
{
    unsigned long x;
    if (util_parse_uint(v, 1, max, &x)) {
        fprintf(stderr, "%s: %s: expected an integer 1..%u, got '%s'\n", cmd, flag, max, v);
        return -1;
    }
    *out = (unsigned)x;
    return 0;
}

static int main_check_dir(const char *cmd, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "%s: --policy-dir: %s: %s\n", cmd, dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: --policy-dir: %s: not a directory\n", cmd, dir);
        return -1;
    }
    return 0;
}

enum { OPT_POLICY_DIR = 256, OPT_TIMEOUT, OPT_MEMORY, OPT_INPUT };

/* Options shared by the commands that run policies; returns 0, or -1 after a message. */
static int main_host_option(const char *cmd, int c, struct lhost_opts *o)
{
    switch (c) {
    case OPT_POLICY_DIR:
        o->policy_dir = optarg;
        return 0;
    case OPT_TIMEOUT:
        return main_parse_uint(cmd, "--policy-timeout-ms", optarg, 3600000, &o->timeout_ms);
    case OPT_MEMORY:
        return main_parse_uint(cmd, "--policy-memory-mib", optarg, 65536, &o->memory_mib);
    default:
        return -1;
    }
}

static void main_bad_option(const char *cmd, char **argv)
{
    if (optopt)
        fprintf(stderr, "%s: bad or incomplete option '-%c' (see --help)\n", cmd, optopt);
    else
        fprintf(stderr, "%s: bad or incomplete option '%s' (see --help)\n", cmd, argv[optind - 1]);
}

/* Parses the options of a command that runs policies: the host options (--policy-dir and the
 * budgets), -h/--help (prints `usage` to stdout) and one more string option `extra` (its value
 * into *extra_value; also `-<extra_short>` when extra_short is not 0). Returns 0 with optind at
 * the first operand, 1 after --help, -1 after a message on a bad option. */
static int main_parse_host_command(const char *cmd, int argc, char **argv, const char *extra, char extra_short,
                                   const char **extra_value, void (*usage)(FILE *), struct lhost_opts *o)
{
    const struct option longopts[] = {
        {extra, required_argument, NULL, OPT_INPUT},
        {"policy-dir", required_argument, NULL, OPT_POLICY_DIR},
        {"policy-timeout-ms", required_argument, NULL, OPT_TIMEOUT},
        {"policy-memory-mib", required_argument, NULL, OPT_MEMORY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    char shortopts[4] = "h";
    if (extra_short)
        snprintf(shortopts, sizeof shortopts, "h%c:", extra_short);
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        } else if (c == OPT_INPUT || (extra_short && c == extra_short)) {
            *extra_value = optarg;
        } else if (c == '?' || c == ':') {
            main_bad_option(cmd, argv);
            return -1;
        } else if (main_host_option(cmd, c, o)) {
            return -1;
        }
    }
    return 0;
}

static void render_usage(FILE *out)
{
    fprintf(out,
            "usage: flink-controller render -f FILE|DIR|- [-f ...] [-o yaml|json]\n"
            "                               [--validate=strict|warn|ignore] [--policy-dir DIR]\n"
            "                               [--policy-timeout-ms N] [--policy-memory-mib N]\n"
            "Prints the objects each FlinkCluster document becomes, in apply order, as a YAML\n"
            "stream (or a v1 List with -o json).  A directory stands for its *.yaml, *.yml and\n"
            "*.json files (not its subdirectories), in name order; there documents of other kinds\n"
            "are skipped.  --validate (kubectl's): strict (default, also true) refuses fields the\n"
            "CRD does not know, warn reports them, ignore (also false) says nothing (the API\n"
            "server prunes them).  Exit 1 when a document is invalid or a policy fails (stdout\n"
            "stays empty), 2 for usage or I/O errors.\n");
}

/* One input of render: its name for messages, its text, whether it was found in a directory. */
struct main_input {
    char *source;
    char *text;
    size_t len;
    int from_dir;
};

struct main_inputs {
    struct main_input v[MAIN_RENDER_FILES_MAX];
    size_t n;
    size_t bytes; /* all texts together, at most MAIN_INPUT_MAX */
};

static void main_inputs_free(struct main_inputs *in)
{
    for (size_t i = 0; i < in->n; i++) {
        free(in->v[i].source);
        free(in->v[i].text);
    }
    in->n = 0;
}

/* Reads the file (or "-": stdin) `path` into the next input; 0, or -1 after a message. */
static int main_inputs_read(struct main_inputs *in, const char *path, int from_dir)
{
    if (in->n == MAIN_RENDER_FILES_MAX) {
        fprintf(stderr, "render: more than %d input files\n", MAIN_RENDER_FILES_MAX);
        return -1;
    }
    struct main_input *x = &in->v[in->n];
    char why[128];
    x->text = strcmp(path, "-") == 0
                  ? util_read_stream(stdin, MAIN_INPUT_MAX - in->bytes, &x->len, why, sizeof why)
                  : util_read_file(path, MAIN_INPUT_MAX - in->bytes, &x->len, why, sizeof why);
    if (!x->text) {
        fprintf(stderr, "render: %s: %s%s\n", path, why,
                in->bytes ? " (the limit is for all input files together)" : "");
        return -1;
    }
    x->source = strdup(strcmp(path, "-") == 0 ? "<stdin>" : path);
    if (!x->source) {
        free(x->text);
        fprintf(stderr, "render: out of memory\n");
        return -1;
    }
    x->from_dir = from_dir;
    in->bytes += x->len;
    in->n++;
    return 0;
}

/* A directory's entry render reads: a name ending .yaml, .yml or .json (kubectl's list). */
static int main_manifest_name(const struct dirent *e)
{
    static const char *const exts[] = {".yaml", ".yml", ".json"};
    size_t n = strlen(e->d_name);
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        size_t m = strlen(exts[i]);
        if (n > m && strcmp(e->d_name + n - m, exts[i]) == 0)
            return 1;
    }
    return 0;
}

/* Byte order of names, as Go's filepath.Walk (kubectl) visits them, whatever the locale. */
static int main_name_order(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Reads `arg` of -f: "-", a file, or a directory's manifests (regular files only, no
 * recursion, like kubectl without -R). 0, or -1 after a message. */
static int main_inputs_add(struct main_inputs *in, const char *arg)
{
    struct stat st;
    if (strcmp(arg, "-") == 0 || stat(arg, &st) != 0 || !S_ISDIR(st.st_mode))
        return main_inputs_read(in, arg, 0);
    struct dirent **names = NULL;
    int n = scandir(arg, &names, main_manifest_name, main_name_order);
    if (n < 0) {
        fprintf(stderr, "render: %s: %s\n", arg, strerror(errno));
        return -1;
    }
    int rc = 0, found = 0;
    size_t dlen = strlen(arg);
    int slash = dlen > 0 && arg[dlen - 1] == '/';
    for (int i = 0; i < n; i++) {
        if (rc == 0) {
            char *path = NULL;
            if (asprintf(&path, "%s%s%s", arg, slash ? "" : "/", names[i]->d_name) < 0) {
                fprintf(stderr, "render: out of memory\n");
                rc = -1;
            } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                found++;
                rc = main_inputs_read(in, path, 1);
            }
            free(path);
        }
        free(names[i]);
    }
    free(names);
    if (rc == 0 && found == 0) {
        fprintf(stderr, "render: %s: no .yaml, .yml or .json files in this directory\n", arg);
        rc = -1;
    }
    return rc;
}

enum { OPT_VALIDATE = 300 };

static int cmd_render(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"file", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"validate", required_argument, NULL, OPT_VALIDATE},
        {"policy-dir", required_argument, NULL, OPT_POLICY_DIR},
        {"policy-timeout-ms", required_argument, NULL, OPT_TIMEOUT},
        {"policy-memory-mib", required_argument, NULL, OPT_MEMORY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct lhost_opts o = {0};
    const char *files[MAIN_RENDER_FILES_MAX];
    size_t nfiles = 0;
    int stdin_files = 0;
    const char *output = "yaml", *validate = "strict";
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
        if (c == 'f') {
            if (nfiles == MAIN_RENDER_FILES_MAX) {
                fprintf(stderr, "render: more than %d -f options\n", MAIN_RENDER_FILES_MAX);
                return EXIT_USAGE;
            }
            stdin_files += strcmp(optarg, "-") == 0;
            files[nfiles++] = optarg;
        } else if (c == 'o') {
            output = optarg;
        } else if (c == OPT_VALIDATE) {
            validate = optarg;
        } else if (c == 'h') {
            render_usage(stdout);
            return EXIT_OK;
        } else if (c == '?' || c == ':') {
            main_bad_option("render", argv);
            return EXIT_USAGE;
        } else if (main_host_option("render", c, &o)) {
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "render: unexpected argument '%s' (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (nfiles == 0) {
        fprintf(stderr, "render: -f FILE is required (- for stdin)\n");
        render_usage(stderr);
        return EXIT_USAGE;
    }
    if (stdin_files > 1) {
        fprintf(stderr, "render: -f -: stdin can be read once\n");
        return EXIT_USAGE;
    }
    if (strcmp(output, "yaml") != 0 && strcmp(output, "json") != 0) {
        fprintf(stderr, "render: -o: expected yaml or json, got '%s'\n", output);
        return EXIT_USAGE;
    }
    /* kubectl's values: strict|true, warn, ignore|false */
    if (strcmp(validate, "true") == 0)
        validate = "strict";
    else if (strcmp(validate, "false") == 0)
        validate = "ignore";
    if (strcmp(validate, "strict") != 0 && strcmp(validate, "warn") != 0 && strcmp(validate, "ignore") != 0) {
        fprintf(stderr, "render: --validate: expected strict, warn or ignore (true, false), got '%s'\n", validate);
        return EXIT_USAGE;
    }
    if (o.policy_dir && main_check_dir("render", o.policy_dir))
        return EXIT_USAGE;
    static struct main_inputs in; /* 4096 entries: not on the stack */
    in.n = 0;
    in.bytes = 0;
    int name_files = nfiles > 1;
    for (size_t i = 0; i < nfiles; i++) {
        if (main_inputs_add(&in, files[i])) {
            main_inputs_free(&in);
            return EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < in.n; i++)
        name_files |= in.v[i].from_dir;
    char err[4096];
    struct lhost *h = lhost_new(&o, err, sizeof err);
    if (!h) {
        fprintf(stderr, "render: %s\n", err);
        main_inputs_free(&in);
        return EXIT_USAGE;
    }
    if (!o.policy_dir && main_check_dir("render", lhost_policy_dir(h))) {
        lhost_free(h);
        main_inputs_free(&in);
        return EXIT_USAGE;
    }
    lua_State *L = lhost_state(h);
    int code = EXIT_INVALID;
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fc.render");
    if (lhost_pcall(h, 1, 1, err, sizeof err)) {
        fprintf(stderr, "render: cannot load the framework: %s\n", err);
        goto out;
    }
    lua_getfield(L, -1, "run");
    lua_remove(L, -2);
    lua_createtable(L, 0, 5);
    lua_createtable(L, (int)in.n, 0);
    for (size_t i = 0; i < in.n; i++) {
        lua_createtable(L, 0, 3);
        lua_pushlstring(L, in.v[i].text, in.v[i].len);
        lua_setfield(L, -2, "text");
        lua_pushstring(L, in.v[i].source);
        lua_setfield(L, -2, "source");
        lua_pushboolean(L, in.v[i].from_dir);
        lua_setfield(L, -2, "from_dir");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
        /* the Lua string is the copy from now on */
        free(in.v[i].text);
        in.v[i].text = NULL;
    }
    lua_setfield(L, -2, "inputs");
    lua_pushboolean(L, name_files);
    lua_setfield(L, -2, "name_files");
    if (nfiles == 1) {
        lua_pushstring(L, strcmp(files[0], "-") == 0 ? "<stdin>" : files[0]);
        lua_setfield(L, -2, "source");
    }
    lua_pushstring(L, output);
    lua_setfield(L, -2, "output");
    lua_pushstring(L, validate);
    lua_setfield(L, -2, "validate");
    lua_pushstring(L, lhost_policy_dir(h));
    lua_setfield(L, -2, "policy_dir");
    if (lhost_pcall(h, 1, 1, err, sizeof err)) {
        fprintf(stderr, "render: internal error: %s\n", err);
        goto out;
    }
    /* {stdout=string, stderr={lines}, code=int} */
    lua_getfield(L, -1, "stderr");
    if (lua_istable(L, -1)) {
        lua_Integer n = luaL_len(L, -1);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_geti(L, -1, i);
            const char *line = lua_tostring(L, -1);
            if (line)
                fprintf(stderr, "%s\n", line);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    lua_getfield(L, -1, "code");
    code = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (code == EXIT_OK) {
        size_t n = 0;
        lua_getfield(L, -1, "stdout");
        const char *s = lua_tolstring(L, -1, &n);
        if (s && fwrite(s, 1, n, stdout) != n) {
            fprintf(stderr, "render: writing stdout: %s\n", strerror(errno));
            code = EXIT_USAGE;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
out:
    lhost_free(h);
    main_inputs_free(&in);
    if (fflush(stdout) != 0 && code == EXIT_OK) {
        fprintf(stderr, "render: writing stdout: %s\n", strerror(errno));
        code = EXIT_USAGE;
    }
    return code;
}

static void sandbox_usage(FILE *out)
{
    fprintf(out,
            "usage: flink-controller sandbox-run FILE... [--input JSON] [--policy-dir DIR]\n"
            "                                    [--policy-timeout-ms N] [--policy-memory-mib N]\n"
            "Runs each text chunk under the policy sandbox and budgets (`...` is the decoded\n"
            "input) and prints its result as one JSON line; errors go to stderr, exit 1.\n");
}

static int cmd_sandbox_run(int argc, char **argv)
{
    struct lhost_opts o = {0};
    const char *input = NULL;
    int p = main_parse_host_command("sandbox-run", argc, argv, "input", 0, &input, sandbox_usage, &o);
    if (p)
        return p > 0 ? EXIT_OK : EXIT_USAGE;
    if (optind >= argc) {
        fprintf(stderr, "sandbox-run: a FILE is required\n");
        sandbox_usage(stderr);
        return EXIT_USAGE;
    }
    char err[4096];
    struct lhost *h = lhost_new(&o, err, sizeof err);
    if (!h) {
        fprintf(stderr, "sandbox-run: %s\n", err);
        return EXIT_USAGE;
    }
    int code = EXIT_OK;
    for (int i = optind; i < argc; i++) {
        size_t len = 0;
        char *text = main_read("sandbox-run", argv[i], &len);
        if (!text) {
            code = EXIT_USAGE;
            break;
        }
        const char *base = strrchr(argv[i], '/');
        base = base ? base + 1 : argv[i];
        char *out = NULL;
        int rc = lhost_run_chunk_json(h, base, text, len, input, &out, err, sizeof err);
        free(text);
        if (rc == 0) {
            printf("%s\n", out);
            fflush(stdout);
        } else {
            fprintf(stderr, "%s\n", err);
            if (rc < 0) {
                code = EXIT_USAGE;
                break;
            }
            code = EXIT_INVALID;
        }
        free(out);
    }
    lhost_free(h);
    return code;
}

static void test_usage(FILE *out)
{
    fprintf(out,
            "usage: flink-controller test [--policy-dir DIR] [--update POLICY/CASE]\n"
            "                             [--policy-timeout-ms N] [--policy-memory-mib N] [PATTERN]\n"
            "Runs the fixture cases of every policy of DIR (default: the built-in policies) in the\n"
            "sandbox and budgets the controller uses: DIR/testdata/<policy>/<case>/input.yaml against\n"
            "expected.yaml (formats: lua/fc/fixtures.lua). A policy without cases fails. PATTERN keeps\n"
            "the cases whose <policy>/<case> contains it. --update writes that case's expected.yaml\n"
            "from the policy's output (review the diff: the fixtures are the contract).\n"
            "Exit status: 0 all passed; 1 a case failed; 2 usage or I/O error.\n");
}

static int cmd_test(int argc, char **argv)
{
    struct lhost_opts o = {0};
    const char *update = NULL, *pattern = NULL;
    int p = main_parse_host_command("test", argc, argv, "update", 0, &update, test_usage, &o);
    if (p)
        return p > 0 ? EXIT_OK : EXIT_USAGE;
    if (optind < argc)
        pattern = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "test: unexpected argument '%s' (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (o.policy_dir && main_check_dir("test", o.policy_dir))
        return EXIT_USAGE;
    char err[4096];
    struct lhost *h = lhost_new(&o, err, sizeof err);
    if (!h) {
        fprintf(stderr, "test: %s\n", err);
        return EXIT_USAGE;
    }
    int rc = fixtures_run(h, pattern, update, stdout, err, sizeof err);
    lhost_free(h);
    if (rc < 0) {
        fprintf(stderr, "test: %s\n", err);
        return EXIT_USAGE;
    }
    return rc ? EXIT_INVALID : EXIT_OK;
}

static void reconcile_usage(FILE *out)
{
    fprintf(out,
            "usage: flink-controller reconcile -f|--snapshot FILE|- [--policy-dir DIR]\n"
            "                                  [--policy-timeout-ms N] [--policy-memory-mib N]\n"
            "Runs the whole reconcile of one FlinkCluster from a recorded snapshot (JSON or YAML:\n"
            "{cluster, children, flink, now, dry_runs}, as `run --debug-snapshot-dir` writes them),\n"
            "offline, and prints the actions, status, events and requeue_after it decides, as YAML.\n"
            "Exit status: 0 decided (a policy failure is a decision: PolicyError); 1 not a snapshot;\n"
            "2 usage or I/O error.\n");
}

static int cmd_reconcile(int argc, char **argv)
{
    struct lhost_opts o = {0};
    const char *file = NULL;
    int p = main_parse_host_command("reconcile", argc, argv, "snapshot", 'f', &file, reconcile_usage, &o);
    if (p)
        return p > 0 ? EXIT_OK : EXIT_USAGE;
    if (optind < argc || !file) {
        fprintf(stderr, "reconcile: --snapshot FILE is required, and nothing else (see --help)\n");
        return EXIT_USAGE;
    }
    if (o.policy_dir && main_check_dir("reconcile", o.policy_dir))
        return EXIT_USAGE;
    size_t len = 0;
    char *text = main_read("reconcile", file, &len);
    if (!text)
        return EXIT_USAGE;
    char err[4096];
    struct lhost *h = lhost_new(&o, err, sizeof err);
    json_t *in = json_pack("{s:s%, s:s}", "text", text, len, "source", file);
    free(text);
    int code = EXIT_USAGE;
    json_t *res = NULL;
    if (!h)
        fprintf(stderr, "reconcile: %s\n", err);
    else if (!(res = lhost_json_call(h, "fc.replay", "run", in, 0, err, sizeof err)))
        fprintf(stderr, "reconcile: %s\n", err);
    else {
        size_t i;
        json_t *line;
        json_array_foreach(json_object_get(res, "stderr"), i, line) fprintf(stderr, "%s\n", json_string_value(line));
        fputs(json_string_value(json_object_get(res, "stdout")) ?: "", stdout);
        code = json_integer_value(json_object_get(res, "code")) == 0 ? EXIT_OK : EXIT_INVALID;
        json_decref(res);
    }
    json_decref(in);
    if (h)
        lhost_free(h);
    return code;
}

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("flink-controller %s (commit %s, %s)\n", FC_VERSION, FC_COMMIT, LUA_RELEASE);
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        main_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(argc - 1, argv + 1);
    for (const struct main_command *c = commands; c->name; c++)
        if (strcmp(argv[1], c->name) == 0)
            return c->run(argc - 1, argv + 1);
    fprintf(stderr, "flink-controller: unknown command '%s'\n", argv[1]);
    main_usage(stderr);
    return EXIT_USAGE;
}
