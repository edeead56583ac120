#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the configuration keys a Flink classpath declares (ListConfigKeys.java): one
# "KEY<TAB>origin" line per key, sorted.
# Usage: tests/env/flink/config-keys.sh LIBDIR      (a folder of jars, e.g. the cache's
#          flink-<hash>/lib or flink2-<hash>/lib)
#        tests/env/flink/config-keys.sh --removed OLD_LIBDIR NEW_LIBDIR
#          keys OLD declares and NEW does not (policies/lib/flinkremoved.lua is this for
#          Flink 1.20.5 -> 2.3.0, without "class" and hidden.*)
# Needs a JDK (javac) on PATH.  Exit 1 on a missing folder or a failed compile.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
keys() {
  [ -d "$1" ] || { echo "config-keys: no folder $1" >&2; exit 1; }
  local cp; cp=$(printf '%s\n' "$1"/*.jar | paste -sd: -)
  [ -f "$tmp/ListConfigKeys.class" ] || javac -d "$tmp" "$here/ListConfigKeys.java"
  java -cp "$tmp:$cp" ListConfigKeys "$1"/flink-*.jar 2>/dev/null
}
if [ "${1:-}" = --removed ]; then
  [ $# -eq 3 ] || { echo "usage: $0 --removed OLD_LIBDIR NEW_LIBDIR" >&2; exit 2; }
  keys "$2" | cut -f1 | sort >"$tmp/old"
  keys "$3" | cut -f1 | sort >"$tmp/new"
  comm -23 "$tmp/old" "$tmp/new"
else
  [ $# -eq 1 ] || { echo "usage: $0 LIBDIR | --removed OLD NEW" >&2; exit 2; }
  keys "$1"
fi
