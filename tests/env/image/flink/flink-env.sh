# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by /docker-entrypoint.sh and /opt/flink/bin/flink of the test
# environment's Flink image (not run).  Defines:
#   FLINK_HOME (/opt/flink), FLINK_CONF_DIR (/opt/flink/conf; exported: the CLI
#   reads it), FLINK_CP (the jars of $FLINK_HOME/lib, sorted), FLINK_JAVA_OPTS
#   (array: the JDK 17 module flags of Flink's own env.java.opts.all default)
#   conf_get KEY: the value of a top-level "KEY: value" line of the mounted
#   configuration (config.yaml when present, else the legacy flink-conf.yaml,
#   the order Flink 1.20 reads them in); nothing and status 1 when absent.
FLINK_HOME=${FLINK_HOME:-/opt/flink}
FLINK_CONF_DIR=${FLINK_CONF_DIR:-$FLINK_HOME/conf}
export FLINK_HOME FLINK_CONF_DIR
FLINK_CP=$(printf '%s\n' "$FLINK_HOME"/lib/*.jar | sort | paste -sd: -)

FLINK_JAVA_OPTS=(-XX:+IgnoreUnrecognizedVMOptions)
for _x in java.base/sun.net.util java.rmi/sun.rmi.registry java.security.jgss/sun.security.krb5; do
  FLINK_JAVA_OPTS+=("--add-exports=$_x=ALL-UNNAMED")
done
for _x in lang net io nio lang.reflect text time util util.concurrent util.concurrent.atomic \
  util.concurrent.locks; do
  FLINK_JAVA_OPTS+=("--add-opens=java.base/java.$_x=ALL-UNNAMED")
done
FLINK_JAVA_OPTS+=("--add-opens=java.base/sun.nio.ch=ALL-UNNAMED")
unset _x

conf_get() {
  local f=$FLINK_CONF_DIR/config.yaml
  [ -f "$f" ] || f=$FLINK_CONF_DIR/flink-conf.yaml
  [ -f "$f" ] || return 1
  # "key: value" (value unquoted, trailing comment dropped); the last one wins
  awk -v k="$1" '
    { line = $0; sub(/^[ \t]+/, "", line) }
    index(line, k ":") == 1 && $0 !~ /^[ \t]/ {
      v = substr(line, length(k) + 2); sub(/[ \t]+#.*$/, "", v); gsub(/^[ \t]+|[ \t]+$/, "", v)
      gsub(/^["\047]|["\047]$/, "", v); found = 1; val = v }
    END { if (!found) exit 1; print val }' "$f"
}
