#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration tests of `flink-controller run` against the real test environment (TAP, plan at
# the end). Uses a running environment at $TESTENV_DIR (default build/testenv-integration: its
# own, because one case stops the API server for 10 s) or brings one up with tests/env/up.sh
# and takes it down at the end (only then). Prints "1..0 # SKIP <reason>" when the environment
# cannot be built here. Each case works in its own namespace int-<pid>-<case>, deleted at the end.
#   tests/integration/run.sh [CASE...]   cases: example scale service invalid policy reject jsonlogs
#                                        flink proxy apiserver watchlistoff terminating sigkill leader rbac execcred namespaced nulstring converge
#                                        rollout steady steady100
#                                        prune stall fence jobupdate held refused undeclared stale shards livediff override render restart
#                                        lost triggerfind restsubmit upgrade (lifecycle.sh), metrics (metrics.sh), native nativequota nativescale
#                                        (native.sh), labelrename (names.sh), faults (faults.sh), churn (churn.sh), gitops (gitops.sh), and on the real node
#                                        (realpods.sh) realjob realjob2 realticker realticker2 savepointhistory savepointhistory2
#                                        autocheckpoint autocheckpoint2 realrest flinkoptions realconfig
#                                        incluster helm quickstart, (reallifecycle.sh) reallifecycle realsubmitfail, (rollback.sh) rollback rollback2, (adopt.sh)
#                                        adopt (the original operator's Running job cluster taken over), (native.sh)
#                                        nativereal nativetimeout, (flinkjob.sh) flinkjob flinkjob2 (FlinkJobs on a session cluster) flinkjobhealth flinkjobhealth2
#                                        (their health policy and savepointRetention), webhookcerts (the webhook's own certificates)
#                                        (default: all, in that order)
# shellcheck source-path=SCRIPTDIR
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export TESTENV_DIR=${TESTENV_DIR:-$ROOT/build/testenv-integration}

if [ ! -x "$ROOT/build/flink-controller" ] && [ -z "${FC_BIN:-}" ]; then
  echo "1..0 # SKIP build/flink-controller not built (make)"
  exit 0
fi
# env_alive: env.sh exists and its API server answers (a crashed run may leave a stale env.sh;
# up.sh then clears it, as nothing of it is alive)
env_alive() {
  # shellcheck source=/dev/null
  [ -f "$TESTENV_DIR/env.sh" ] &&
    (. "$TESTENV_DIR/env.sh" && "$TESTENV_KUBECTL" --kubeconfig="$KUBECONFIG" get --raw /readyz) >/dev/null 2>&1
}
started=0
if ! env_alive; then
  uplog=$(mktemp)
  "$ROOT/tests/env/up.sh" >"$uplog" 2>&1
  rc=$?
  if [ "$rc" -eq 2 ]; then
    echo "1..0 # SKIP $(tail -n 1 "$uplog")"
    rm -f "$uplog"; exit 0
  elif [ "$rc" -ne 0 ]; then
    echo "1..1"
    echo "not ok 1 - tests/env/up.sh (exit $rc)"
    sed 's/^/# /' "$uplog" | tail -n 40
    rm -f "$uplog"; exit 1
  fi
  sed 's/^/# /' "$uplog"; rm -f "$uplog"
  started=1
fi
# shellcheck source=/dev/null
. "$TESTENV_DIR/env.sh"
WORK=$(mktemp -d)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

cleanup() {
  for f in "$WORK"/*.pid; do
    [ -f "$f" ] || continue
    stop_controller "$(basename "$f" .pid)" >/dev/null
  done
  # a stopped API server must not outlive the test
  [ -n "${TESTENV_PID_KUBE_APISERVER:-}" ] && kill -CONT "$TESTENV_PID_KUBE_APISERVER" 2>/dev/null
  if [ -f "$WORK/namespaces" ]; then
    # shellcheck disable=SC2046
    kc delete namespace $(sort -u "$WORK/namespaces") --wait=false >/dev/null 2>&1
  fi
  if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS" && cp "$WORK"/*.log "$KEEP_LOGS"/ 2>/dev/null; fi
  rm -rf "$WORK"
  if [ "$started" -eq 1 ]; then "$ROOT/tests/env/down.sh" >/dev/null 2>&1; fi
}
trap cleanup EXIT

# shellcheck source=cases.sh
. "$HERE/cases.sh"
# shellcheck source=realpods.sh
. "$HERE/realpods.sh"
# shellcheck source=proxy.sh
. "$HERE/proxy.sh"
# shellcheck source=expect.sh
. "$HERE/expect.sh"
# shellcheck source=gate.sh
. "$HERE/gate.sh"
# shellcheck source=authoring.sh
. "$HERE/authoring.sh"
# shellcheck source=lifecycle.sh
. "$HERE/lifecycle.sh"
# shellcheck source=reallifecycle.sh
. "$HERE/reallifecycle.sh"
# shellcheck source=laststate.sh
. "$HERE/laststate.sh"
# shellcheck source=adopt.sh
. "$HERE/adopt.sh"
# shellcheck source=native.sh
. "$HERE/native.sh"
# shellcheck source=names.sh
. "$HERE/names.sh"
# shellcheck source=faults.sh
. "$HERE/faults.sh"
# shellcheck source=churn.sh
. "$HERE/churn.sh"
# shellcheck source=gitops.sh
. "$HERE/gitops.sh"
# shellcheck source=metrics.sh
. "$HERE/metrics.sh"
# shellcheck source=health.sh
. "$HERE/health.sh"
# shellcheck source=shards.sh
. "$HERE/shards.sh"
# shellcheck source=rollback.sh
. "$HERE/rollback.sh"
# shellcheck source=flinkjob.sh
. "$HERE/flinkjob.sh"
cases=("$@")
[ ${#cases[@]} -gt 0 ] ||
  cases=(example scale service invalid policy reject jsonlogs flink proxy apiserver watchlistoff terminating sigkill leader rbac execcred namespaced nulstring converge rollout steady steady100 prune stall fence jobupdate held refused undeclared stale shards livediff override render restart lost triggerfind restsubmit upgrade metrics native nativequota nativescale labelrename faults churn gitops realjob realjob2 realticker realticker2 savepointhistory savepointhistory2 autocheckpoint autocheckpoint2 realrest flinkoptions realconfig reallifecycle realsubmitfail laststate laststate2 haclean jmha healthrestart rollback rollback2 flinkjob flinkjob2 flinkjobhealth flinkjobhealth2 adopt nativereal nativetimeout incluster helm quickstart webhookcerts)
# each case's wall time as a TAP comment ("# case NAME: N s"), what tests/integration/INDEX.md's
# durations are taken from
for c in "${cases[@]}"; do
  t0=$SECONDS
  "case_$c"
  echo "# case $c: $((SECONDS - t0)) s"
done
echo "1..$n"
[ "$failed" -eq 0 ]
