/* SPDX-License-Identifier: Apache-2.0 */
/* core/options: the options of `flink-controller run` (see options.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs.h"
#include "certsync.h"
#include "flinkcall.h"
#include "log.h"
#include "options.h"
#include "shard.h"
#include "util.h"

void options_usage(FILE *out)
{
    fprintf(out,
            "usage: flink-controller run [--kubeconfig F] [--context NAME] [--namespace NS]... [--policy-dir D]\n"
            "         [--metrics-addr A] [--health-addr A] [--leader-elect]\n"
            "         [--leader-election-namespace NS] [--shards N [--shard-index I]]\n"
            "         [--qps N --burst N] [--log-format text|json]\n"
            "         [--log-level debug|info|warn|error]\n"
            "         [--workers N] [--flink-access auto|service|proxy] [--flink-base-url URL]\n"
            "         [--policy-timeout-ms N] [--policy-memory-mib N]\n"
            "         [--webhook-addr A --webhook-cert-file F --webhook-key-file F]\n"
            "         [--webhook-addr A --webhook-cert-secret NS/NAME --webhook-service NS/NAME\n"
            "          [--webhook-configuration NAME] [--webhook-cert-validity D] [--webhook-host H,...]]\n"
            "         [--debug-snapshot-dir DIR] [--policy-configmap NS/NAME [--policy-work-dir DIR]]\n"
            "Runs the controller: watches FlinkClusters and their children, reconciles each cluster\n"
            "through the policies and applies the result.  SIGTERM/SIGINT stop it (exit 0).\n"
            "--flink-access: how Flink REST calls reach a JobManager: service (its Service's cluster\n"
            "DNS name), proxy (the API server's service proxy, with the kubeconfig's credentials),\n"
            "auto (default: service in a pod with the service-account config, else proxy).\n"
            "--flink-base-url (testing) replaces the JobManager REST base of every cluster.\n"
            "--metrics-addr/--health-addr: HOST:PORT of /metrics and of /healthz, /readyz; none\n"
            "unless given; \":8081\" (no host) is loopback only, as 127.0.0.1:8081; every interface\n"
            "is asked for by name: 0.0.0.0:8081, or [::]:8081 (IPv6 and IPv4); \"0\" disables.\n"
            "--shards N: split the FlinkClusters into N shards (FNV-1a of namespace/name mod N), each\n"
            "with its own Lease flink-controller-shard-<i>; a replica reconciles the shards it holds\n"
            "(docs/sharding.md). --shard-index I: the shard preferred (default: the StatefulSet\n"
            "ordinal of POD_NAME, else a hash of it). Not with --leader-elect.\n"
            "--qps/--burst: a client-side limit of API requests (token bucket); default none (0):\n"
            "the API server's priority and fairness and its 429 Retry-After answers pace the writes.\n"
            "--webhook-addr: also serve the admission webhook (POST /validate, /mutate) over TLS\n"
            "with that certificate pair, re-read when the files change (core/webhook.h), or with\n"
            "the pair the controller keeps in the Secret --webhook-cert-secret (kubernetes.io/tls;\n"
            "made, renewed after 2/3 of --webhook-cert-validity (default 90d), the CA's caBundle\n"
            "kept in the webhook configurations --webhook-configuration; docs/webhook.md).\n"
            "--policy-configmap: overrides of the policy files from that ConfigMap (keys <policy>.lua,\n"
            "lib.<name>.lua, testdata.<policy>.<case>.<file>), compiled and their fixtures run before\n"
            "use; a bad set is refused and the last good one serves. Sets are made under\n"
            "--policy-work-dir (default $TMPDIR, else /tmp).\n");
}

enum {
    RO_CONTEXT = 299, RO_KUBECONFIG = 300, RO_NAMESPACE, RO_POLICY_DIR, RO_METRICS, RO_HEALTH, RO_LEADER, RO_LEADER_NS, RO_QPS,
    RO_BURST, RO_LOG_FORMAT, RO_WORKERS, RO_FLINK_BASE, RO_TIMEOUT, RO_MEMORY, RO_LOG_LEVEL,
    RO_FLINK_ACCESS, RO_WEBHOOK_ADDR, RO_WEBHOOK_CERT, RO_WEBHOOK_KEY, RO_DEBUG_SNAPSHOT, RO_POLICY_CM,
    RO_POLICY_WORK, RO_WEBHOOK_SECRET, RO_WEBHOOK_SERVICE, RO_WEBHOOK_CONFIG, RO_WEBHOOK_VALIDITY, RO_WEBHOOK_HOST,
    RO_SHARDS, RO_SHARD_INDEX
};

/* The webhook options' combinations: files or a Secret for --webhook-addr, the Secret's
 * options only with it, and its names well formed. 0, or -1 after a message on stderr. */
static int options_check_webhook(const struct options *o)
{
    int files = o->webhook_cert || o->webhook_key, secret = o->webhook_secret != NULL;
    if (files && secret) {
        fprintf(stderr, "run: --webhook-cert-file/--webhook-key-file and --webhook-cert-secret exclude each other\n");
        return -1;
    }
    if (o->webhook_addr && *o->webhook_addr && !secret && (!o->webhook_cert || !o->webhook_key)) {
        fprintf(stderr, "run: --webhook-addr needs --webhook-cert-file and --webhook-key-file, or --webhook-cert-secret\n");
        return -1;
    }
    if (!secret && (o->webhook_service || o->webhook_config || o->webhook_hosts || o->webhook_validity_s > 0)) {
        fprintf(stderr, "run: --webhook-service, --webhook-configuration, --webhook-host and --webhook-cert-validity "
                        "need --webhook-cert-secret\n");
        return -1;
    }
    if (secret) {
        char *names[CERTS_MAX_NAMES], err[256], ns[254];
        const char *slash = strchr(o->webhook_secret, '/');
        if (!slash || slash == o->webhook_secret || !slash[1] || strchr(slash + 1, '/') ||
            snprintf(ns, sizeof ns, "%.*s", (int)(slash - o->webhook_secret), o->webhook_secret) >= (int)sizeof ns) {
            fprintf(stderr, "run: --webhook-cert-secret: expected NAMESPACE/NAME, got '%s'\n", o->webhook_secret);
            return -1;
        }
        int n = certsync_names(o->webhook_service, o->webhook_hosts, names, CERTS_MAX_NAMES, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "run: %s\n", err);
            return -1;
        }
        certsync_names_free(names, (size_t)n);
    }
    return 0;
}

static int options_parse_num(const char *flag, const char *v, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || x < min || x > max) {
        fprintf(stderr, "run: %s: expected a number %g..%g, got '%s'\n", flag, min, max, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* The integer flags (--burst, --workers, the policy budgets): as render's, no fraction. */
static int options_parse_int(const char *flag, const char *v, unsigned long min, unsigned long max, unsigned long *out)
{
    if (util_parse_uint(v, min, max, out)) {
        fprintf(stderr, "run: %s: expected an integer %lu..%lu, got '%s'\n", flag, min, max, v);
        return -1;
    }
    return 0;
}

int options_parse(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, RO_KUBECONFIG},
        {"context", required_argument, NULL, RO_CONTEXT},
        {"namespace", required_argument, NULL, RO_NAMESPACE},
        {"policy-dir", required_argument, NULL, RO_POLICY_DIR},
        {"metrics-addr", required_argument, NULL, RO_METRICS},
        {"health-addr", required_argument, NULL, RO_HEALTH},
        {"leader-elect", no_argument, NULL, RO_LEADER},
        {"leader-election-namespace", required_argument, NULL, RO_LEADER_NS},
        {"shards", required_argument, NULL, RO_SHARDS},
        {"shard-index", required_argument, NULL, RO_SHARD_INDEX},
        {"qps", required_argument, NULL, RO_QPS},
        {"burst", required_argument, NULL, RO_BURST},
        {"log-format", required_argument, NULL, RO_LOG_FORMAT},
        {"log-level", required_argument, NULL, RO_LOG_LEVEL},
        {"workers", required_argument, NULL, RO_WORKERS},
        {"flink-base-url", required_argument, NULL, RO_FLINK_BASE},
        {"flink-access", required_argument, NULL, RO_FLINK_ACCESS},
        {"debug-snapshot-dir", required_argument, NULL, RO_DEBUG_SNAPSHOT},
        {"policy-timeout-ms", required_argument, NULL, RO_TIMEOUT},
        {"policy-memory-mib", required_argument, NULL, RO_MEMORY},
        {"webhook-addr", required_argument, NULL, RO_WEBHOOK_ADDR},
        {"webhook-cert-file", required_argument, NULL, RO_WEBHOOK_CERT},
        {"webhook-key-file", required_argument, NULL, RO_WEBHOOK_KEY},
        {"webhook-cert-secret", required_argument, NULL, RO_WEBHOOK_SECRET},
        {"webhook-service", required_argument, NULL, RO_WEBHOOK_SERVICE},
        {"webhook-configuration", required_argument, NULL, RO_WEBHOOK_CONFIG},
        {"webhook-cert-validity", required_argument, NULL, RO_WEBHOOK_VALIDITY},
        {"webhook-host", required_argument, NULL, RO_WEBHOOK_HOST},
        {"policy-configmap", required_argument, NULL, RO_POLICY_CM},
        {"policy-work-dir", required_argument, NULL, RO_POLICY_WORK},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;
    unsigned long n;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            options_usage(stdout);
            return 1;
        case RO_KUBECONFIG:
            o->kubeconfig = optarg;
            break;
        case RO_CONTEXT:
            o->context = optarg;
            break;
        case RO_NAMESPACE: {
            const char **n = realloc(o->namespaces, (o->nns + 1) * sizeof *n);
            if (!n)
                return -1;
            o->namespaces = n;
            o->namespaces[o->nns++] = optarg;
            break;
        }
        case RO_POLICY_DIR:
            o->host.policy_dir = optarg;
            break;
        case RO_METRICS:
            o->metrics_addr = optarg;
            break;
        case RO_HEALTH:
            o->health_addr = optarg;
            break;
        case RO_LEADER:
            o->leader_elect = 1;
            break;
        case RO_LEADER_NS:
            o->leader_ns = optarg;
            break;
        case RO_SHARDS:
            if (options_parse_int("--shards", optarg, 1, SHARD_MAX, &n))
                return -1;
            o->shards = (int)n;
            break;
        case RO_SHARD_INDEX:
            if (options_parse_int("--shard-index", optarg, 0, SHARD_MAX - 1, &n))
                return -1;
            o->shard_index = (long)n;
            o->shard_index_set = 1;
            break;
        case RO_QPS:
            if (options_parse_num("--qps", optarg, 0, 1e6, &o->qps))
                return -1;
            break;
        case RO_BURST:
            if (options_parse_int("--burst", optarg, 1, 1000000, &n))
                return -1;
            o->burst = (int)n;
            break;
        case RO_LOG_FORMAT:
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                fprintf(stderr, "run: --log-format: expected text or json, got '%s'\n", optarg);
                return -1;
            }
            o->json_logs = strcmp(optarg, "json") == 0;
            break;
        case RO_LOG_LEVEL:
            if (log_parse_level(optarg, &o->log_level)) {
                fprintf(stderr, "run: --log-level: expected debug, info, warn or error, got '%s'\n", optarg);
                return -1;
            }
            break;
        case RO_WORKERS:
            if (options_parse_int("--workers", optarg, 1, 1024, &n))
                return -1;
            o->workers = (int)n;
            break;
        case RO_FLINK_BASE:
            if (strncmp(optarg, "http://", 7) != 0 && strncmp(optarg, "https://", 8) != 0) {
                fprintf(stderr, "run: --flink-base-url: expected http:// or https://, got '%s'\n", optarg);
                return -1;
            }
            o->flink_base = optarg;
            break;
        case RO_DEBUG_SNAPSHOT:
            o->debug_snapshot_dir = optarg;
            break;
        case RO_FLINK_ACCESS:
            if (flinkcall_access_parse(optarg, &o->flink_access)) {
                fprintf(stderr, "run: --flink-access: expected auto, service or proxy, got '%s'\n", optarg);
                return -1;
            }
            break;
        case RO_TIMEOUT:
            if (options_parse_int("--policy-timeout-ms", optarg, 1, 3600000, &n))
                return -1;
            o->host.timeout_ms = (unsigned)n;
            break;
        case RO_MEMORY:
            if (options_parse_int("--policy-memory-mib", optarg, 1, 65536, &n))
                return -1;
            o->host.memory_mib = (unsigned)n;
            break;
        case RO_WEBHOOK_ADDR:
            o->webhook_addr = optarg;
            break;
        case RO_WEBHOOK_CERT:
            o->webhook_cert = optarg;
            break;
        case RO_WEBHOOK_KEY:
            o->webhook_key = optarg;
            break;
        case RO_WEBHOOK_SECRET:
            o->webhook_secret = optarg;
            break;
        case RO_WEBHOOK_SERVICE:
            o->webhook_service = optarg;
            break;
        case RO_WEBHOOK_CONFIG:
            o->webhook_config = optarg;
            break;
        case RO_WEBHOOK_HOST:
            o->webhook_hosts = optarg;
            break;
        case RO_WEBHOOK_VALIDITY: {
            char why[128];
            if (certs_parse_validity(optarg, &o->webhook_validity_s, why, sizeof why)) {
                fprintf(stderr, "run: --webhook-cert-validity: %s\n", why);
                return -1;
            }
            break;
        }
        case RO_POLICY_CM: {
            const char *slash = strchr(optarg, '/');
            if (!slash || slash == optarg || !slash[1] || strchr(slash + 1, '/') || slash - optarg > 253 ||
                strlen(slash + 1) > 253) {
                fprintf(stderr, "run: --policy-configmap: expected NAMESPACE/NAME, got '%s'\n", optarg);
                return -1;
            }
            o->policy_configmap = optarg;
            break;
        }
        case RO_POLICY_WORK:
            o->policy_work_dir = optarg;
            break;
        default:
            if (optopt)
                fprintf(stderr, "run: bad or incomplete option '-%c' (see --help)\n", optopt);
            else
                fprintf(stderr, "run: bad or incomplete option '%s' (see --help)\n", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "run: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (options_check_webhook(o))
        return -1;
    if (o->shards > 1 && o->leader_elect) {
        fprintf(stderr, "run: --shards: not with --leader-elect (each shard has its own Lease)\n");
        return -1;
    }
    if (o->shard_index_set && o->shard_index >= (o->shards > 1 ? o->shards : 1)) {
        fprintf(stderr, "run: --shard-index: %ld is not below --shards %d\n", o->shard_index,
                o->shards > 1 ? o->shards : 1);
        return -1;
    }
    return 0;
}

