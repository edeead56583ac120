/* SPDX-License-Identifier: Apache-2.0 */
/* core/options: the command line of `flink-controller run` (docs/running.md): parsing into
 * struct options and the usage text. No defaults are set here: the caller fills them in before
 * options_parse (core/run: qps, burst, workers, log level). The strings point into argv.
 */
#ifndef FC_OPTIONS_H
#define FC_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "flinkcall.h"
#include "lhost.h"
#include "log.h"

/* What `run` was given (each NULL / 0 when absent unless the caller set a default). */
struct options {
    const char *kubeconfig;
    const char *context; /* --context: the kubeconfig's context (NULL: current-context) */
    const char **namespaces;
    size_t nns;
    const char *metrics_addr;
    const char *health_addr;
    const char *webhook_addr, *webhook_cert, *webhook_key;
    /* self-managed webhook certificates (core/certsync.h) */
    const char *webhook_secret, *webhook_service, *webhook_config, *webhook_hosts;
    double webhook_validity_s;
    int leader_elect;
    const char *leader_ns;
    int shards;          /* --shards N (0 or 1: one shard, as without the flag) */
    long shard_index;    /* --shard-index I, when shard_index_set */
    int shard_index_set;
    double qps;
    int burst;
    int json_logs;
    log_level log_level;
    int workers;
    const char *flink_base;
    const char *debug_snapshot_dir; /* --debug-snapshot-dir: each pass's snapshot, by cluster */
    flinkcall_access flink_access; /* as given; ctx->flink_env.access holds the resolved one */
    const char *policy_configmap;  /* --policy-configmap NS/NAME: policy overrides, or NULL */
    const char *policy_work_dir;   /* --policy-work-dir: where override sets are made */
    struct lhost_opts host;
};

/* The usage text of `flink-controller run` to `out`. */
void options_usage(FILE *out);

/* Parses `argv` (argv[0] "run", getopt_long; `argc` entries) into `o`, whose defaults the caller
 * set. --namespace grows o->namespaces (realloc'd, the caller frees it). Returns 0; 1 after
 * --help (the usage on stdout); -1 on a usage error after a message "run: <flag>: ..." on
 * stderr (bad number or range, unknown value, bad NAMESPACE/NAME, webhook options that
 * exclude or need each other). */
int options_parse(int argc, char **argv, struct options *o);

#endif
