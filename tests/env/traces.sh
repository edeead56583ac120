#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lists what a real node of the test environment (tests/env/node/node.sh)
# left on this host, one line per trace: processes (containerd shims, or any
# process running from $TESTENV_DIR/node), iptables/ip6tables rules and
# chains KUBE-*/CNI-*, the CNI bridge, cni-* network namespaces, kubepods
# cgroups, mounts, the fixed host directories, the host mark.
# Usage: tests/env/traces.sh [SYSCTLS]          list traces
#        tests/env/traces.sh --tap [SYSCTLS]    the same as a one-check TAP test
#        tests/env/traces.sh --save SYSCTLS     write the host sysctls the node
#                                               changes (to compare with later);
#                                               while a node's mark is on the
#                                               host (running, or left by a
#                                               killed run) the values it saved
#                                               before its kubelet changed them
# SYSCTLS: a file from --save; when given, each sysctl differing from it is a
# trace too.  TESTENV_DIR (default build/testenv) selects the environment.
# Exit: 0 nothing left (or saved); 1 traces listed (with --tap: "not ok").
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$TESTENV_SRC/proc.sh"
. "$TESTENV_SRC/node/node.sh"
ROOT=$(cd "$TESTENV_SRC/../.." && pwd)
TESTENV_DIR=${TESTENV_DIR:-$ROOT/build/testenv}

if [ "${1:-}" = --save ]; then
  : "${2:?usage: traces.sh --save FILE}"
  if [ -s "$NODE_MARK/sysctls" ]; then cp "$NODE_MARK/sysctls" "$2"; else node_sysctls >"$2"; fi
  exit 0
fi

traces() {
  local p cmd ipt d s v now
  for p in /proc/[0-9]*; do
    cmd=$(tr "\\0" " " 2>/dev/null <"$p/cmdline") || continue
    case $cmd in
      *containerd-shim*|*"$TESTENV_DIR/node/"*) echo "process ${p#/proc/}: $cmd" ;;
    esac
  done
  for ipt in iptables ip6tables; do
    "$ipt-save" 2>/dev/null | grep -E '(KUBE|CNI)-' | sed "s/^/$ipt: /"
  done
  ip link show "$NODE_BRIDGE" >/dev/null 2>&1 && echo "link $NODE_BRIDGE"
  for d in /run/netns/cni-*; do [ -e "$d" ] && echo "netns $d"; done
  for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do [ -d "$d" ] && echo "cgroup $d"; done
  node_mounts | sed 's/^/mount /'
  for d in "${NODE_HOST_DIRS[@]}" "$NODE_MARK"; do [ -e "$d" ] && echo "path $d"; done
  if [ -n "${1:-}" ]; then
    while read -r s v; do
      now=$(sysctl -n "$s" 2>/dev/null)
      [ "$now" = "$v" ] || echo "sysctl $s = $now (was $v)"
    done <"$1"
  fi
  return 0
}

tap=0
if [ "${1:-}" = --tap ]; then tap=1; shift; echo 1..1; fi
out=$(traces "${1:-}")
what="no host trace of a real node left (tests/env/traces.sh)"
if [ -z "$out" ]; then
  [ "$tap" -eq 0 ] || echo "ok 1 - $what"
  exit 0
fi
if [ "$tap" -eq 1 ]; then echo "not ok 1 - $what"; echo "$out" | sed 's/^/# /'; else echo "$out"; fi
exit 1
