#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Entrypoint (/docker-entrypoint.sh) of the test environment's Flink image: the
# part of the official flink image's contract that flink-controller's rendered
# objects use, with Flink's jars from Maven Central and no flink-dist scripts.
# Input:
#   $1  jobmanager -> StandaloneSessionClusterEntrypoint (session cluster: JobManager + REST)
#       taskmanager -> TaskManagerRunner
#       anything else is run as given (exec "$@"), as the official image does;
#       no argument: usage, exit 2
#   /opt/flink/conf (FLINK_CONF_DIR), usually the FlinkCluster's ConfigMap mounted
#       read-only: flink-conf.yaml (or config.yaml: Flink 1.20 reads the legacy
#       flink-conf.yaml only when config.yaml is absent) and log4j-console.properties
#   env (all optional): JOB_MANAGER_RPC_ADDRESS (as in the official image),
#       POD_IP (downward API; else the address of `hostname -i`)
# Dynamic options (-D, they override the file) added only when the
# configuration lacks the key, because the ConfigMap replaces the image's whole
# conf/ (the official image patches its own config file to the same effect):
#   JobManager:  jobmanager.bind-host=0.0.0.0 (RPC + blob server on every
#                interface: TaskManagers and the submitter come through a
#                Service), rest.bind-address=0.0.0.0 (REST/UI, same reason),
#                jobmanager.rpc.address=$JOB_MANAGER_RPC_ADDRESS when set
#   TaskManager: taskmanager.bind-host=0.0.0.0, taskmanager.host=<pod IP> (the
#                address the JobManager and other TaskManagers connect back to;
#                without one Flink picks the interface that reaches the JobManager)
# Memory: BashJavaUtils GET_JM/TM_RESOURCE_PARAMS from the configuration (what
# flink-dist's jobmanager.sh/taskmanager.sh do): JVM heap/metaspace flags plus
# the derived memory options as -D.  Logging: log4j2 to stdout with the
# configuration's log4j-console.properties, or the image's own when that file
# is missing or in log4j 1 syntax (ConfigMaps rendered for old Flink images).
# Output: the JVM in the foreground (exec).  Errors: exit 1 with a message on
# stderr when BashJavaUtils gives no memory parameters.
set -euo pipefail
. "${FLINK_HOME:-/opt/flink}/bin/flink-env.sh"

# pod_ip: $POD_IP, else the first non-loopback IPv4 address of this host name
# (the kubelet writes the pod IP for it into /etc/hosts).
pod_ip() {
  local a
  for a in ${POD_IP:-} $(hostname -i 2>/dev/null || true); do
    case $a in 127.*|*:*) ;; *) echo "$a"; return 0 ;; esac
  done
  return 1
}

# log4j_conf: the log4j2 properties file to use
log4j_conf() {
  local f=$FLINK_CONF_DIR/log4j-console.properties
  if [ -f "$f" ] && ! grep -Eq '^[[:space:]]*log4j\.(rootLogger|rootCategory|appender)' "$f"; then
    echo "$f"
  else
    echo "$FLINK_HOME/image/log4j-console.properties"
  fi
}

# resource_params JM|TM: the two BASH_JAVA_UTILS_EXEC_RESULT lines (JVM flags,
# dynamic options)
resource_params() {
  local out
  out=$(java -cp "$FLINK_CP" -Dlog4j.configurationFile="file:$FLINK_HOME/image/log4j-cli.properties" \
    org.apache.flink.runtime.util.bash.BashJavaUtils "GET_$1_RESOURCE_PARAMS" \
    --configDir "$FLINK_CONF_DIR" 2>&1) || true
  local r; r=$(printf '%s\n' "$out" | sed -n 's/^BASH_JAVA_UTILS_EXEC_RESULT://p')
  if [ "$(printf '%s\n' "$r" | grep -c .)" -ne 2 ]; then
    printf '%s\n' "$out" >&2
    echo "docker-entrypoint: BashJavaUtils gave no $1 memory parameters (see above)" >&2
    return 1
  fi
  printf '%s\n' "$r"
}

# add_unless_set KEY VALUE: appends -DKEY=VALUE to extra when the configuration lacks KEY
extra=()
add_unless_set() { conf_get "$1" >/dev/null || extra+=("-D$1=$2"); }

case ${1:-} in
  jobmanager)
    what=JM main=org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint
    add_unless_set jobmanager.bind-host 0.0.0.0
    add_unless_set rest.bind-address 0.0.0.0
    if [ -n "${JOB_MANAGER_RPC_ADDRESS:-}" ]; then
      add_unless_set jobmanager.rpc.address "$JOB_MANAGER_RPC_ADDRESS"
    fi ;;
  taskmanager)
    what=TM main=org.apache.flink.runtime.taskexecutor.TaskManagerRunner
    add_unless_set taskmanager.bind-host 0.0.0.0
    if ip=$(pod_ip); then add_unless_set taskmanager.host "$ip"; fi ;;
  '') echo "usage: /docker-entrypoint.sh jobmanager|taskmanager|COMMAND [ARG...]" >&2; exit 2 ;;
  *) exec "$@" ;;
esac
role=$1; shift

params=$(resource_params "$what")
read -r -a jvm <<<"$(sed -n 1p <<<"$params")"
read -r -a dyn <<<"$(sed -n 2p <<<"$params")"
# env.java.opts.all (or its old name env.java.opts) and env.java.opts.<role> of
# the configuration, as flink-dist's config.sh adds them
opts_all=$(conf_get env.java.opts.all || conf_get env.java.opts || true)
opts_role=$(conf_get "env.java.opts.$role" || true)
read -r -a user_opts <<<"$opts_all $opts_role"
log4j=$(log4j_conf)
echo "docker-entrypoint: $main, configuration $FLINK_CONF_DIR, log4j $log4j," \
  "options ${extra[*]:-(none added)}" >&2
exec java "${FLINK_JAVA_OPTS[@]}" "${jvm[@]}" "${user_opts[@]}" \
  -Dlog4j.configurationFile="file:$log4j" -cp "$FLINK_CP" "$main" \
  --configDir "$FLINK_CONF_DIR" "${dyn[@]}" "${extra[@]}" "$@"
