#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The controller end to end on the test environment's real node (docs/testenv.md):
#   1. `make testenv-up` (unless one already runs at $TESTENV_DIR, default build/testenv);
#   2. `flink-controller run` against it from outside the cluster, as on a laptop: it reaches each
#      JobManager through the API server's service proxy (no --flink-base-url)
#      (log: build/demo/controller.log);
#   3. applies deploy/examples/wordcount-local.yaml (or $DEMO_EXAMPLE) in a fresh namespace: real
#      JobManager and TaskManager pods of the Flink image built here, the submitter Job runs
#      `flink run`; one progress line while the job goes Running -> Succeeded and the cluster is
#      cleaned up (cleanupPolicy afterJobSucceeds: DeleteCluster);
#   4. a job still running after $DEMO_RUN_SECONDS (default 30; a jar that runs until cancelled) is
#      stopped with a savepoint through the user-control annotation (job-cancel) and the savepoint
#      location is shown;
#   5. prints what the controller made and its Events, then stops what this script started (the
#      controller, the namespace and, when it started it, the test environment).
# Exit 0 when the job reached Succeeded (or was cancelled with a savepoint) within
# $DEMO_TIMEOUT seconds (default 300), else 1.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
export TESTENV_DIR=${TESTENV_DIR:-$ROOT/build/testenv}
TIMEOUT=${DEMO_TIMEOUT:-300}
RUN_SECONDS=${DEMO_RUN_SECONDS:-30}
EXAMPLE=${DEMO_EXAMPLE:-deploy/examples/wordcount-local.yaml}
NS=demo-$$
OUT=$ROOT/build/demo
mkdir -p "$OUT"
say() { printf '[demo] %s\n' "$*"; }

[ -x build/flink-controller ] || { say "building"; make -s all || exit 1; }
started_env=0
# running = env.sh present and its API server answering (a crashed run can leave a stale env.sh)
env_alive() {
  # shellcheck source=/dev/null
  [ -f "$TESTENV_DIR/env.sh" ] &&
    (. "$TESTENV_DIR/env.sh" && "$TESTENV_KUBECTL" --kubeconfig="$KUBECONFIG" get --raw /readyz) >/dev/null 2>&1
}
if env_alive; then
  say "using the test environment running at $TESTENV_DIR"
else
  say "starting the test environment (make testenv-up; the first run builds it, later runs take under 30 s)"
  make -s testenv-up TESTENV_DIR="$TESTENV_DIR" || { say "the test environment did not start"; exit 1; }
  started_env=1
fi
# shellcheck source=/dev/null
. "$TESTENV_DIR/env.sh"
K=("$TESTENV_KUBECTL" --kubeconfig="$KUBECONFIG")
if [ -z "${TESTENV_NODE:-}" ]; then
  say "this test environment has no real node (it needs root, and only one environment per machine"
  say "holds it: stop the other one with make testenv-down TESTENV_DIR=...); pods could not run"
  exit 1
fi
NAME=$("${K[@]}" create --dry-run=client -f "$EXAMPLE" -o 'jsonpath={.metadata.name}') || exit 1

ctl=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  printf '\n'
  if [ -n "$ctl" ] && kill -0 "$ctl" 2>/dev/null; then
    say "stopping the controller (SIGTERM)"
    kill -TERM "$ctl"; wait "$ctl"
  fi
  "${K[@]}" delete namespace "$NS" --wait=false >/dev/null 2>&1 && say "namespace $NS deleted"
  if [ "$started_env" -eq 1 ]; then say "stopping the test environment"; make -s testenv-down >/dev/null; fi
  say "done"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"${K[@]}" create namespace "$NS" >/dev/null || exit 1
say "starting: flink-controller run --namespace $NS (log: $OUT/controller.log)"
build/flink-controller run --kubeconfig "$KUBECONFIG" --namespace "$NS" \
  --health-addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 >"$OUT/controller.log" 2>&1 &
ctl=$!
say "applying $EXAMPLE"
"${K[@]}" -n "$NS" apply -f "$EXAMPLE" || exit 1

field() { "${K[@]}" -n "$NS" get "$1" -o "jsonpath=$2" 2>/dev/null; }
t0=$SECONDS
state="" job="" seen_running=0 cancel_sent=0 result="" done_at=0
while [ $((SECONDS - t0)) -lt "$TIMEOUT" ]; do
  kill -0 "$ctl" 2>/dev/null || { printf '\n'; say "the controller exited:"; tail -n 20 "$OUT/controller.log"; exit 1; }
  state=$(field "flinkcluster/$NAME" '{.status.state}')
  job=$(field "flinkcluster/$NAME" '{.status.components.job.state}')
  pods=$(field pods '{range .items[*]}{.metadata.name}{"="}{.status.phase}{" "}{end}' | sed "s/$NAME-//g")
  printf '\r\033[K[demo] %3d s  cluster=%-12s job=%-10s pods: %s' "$((SECONDS - t0))" "${state:--}" "${job:--}" \
    "${pods:--}"
  [ "$job" = Running ] && [ "$seen_running" -eq 0 ] && { seen_running=$SECONDS; printf '\n'; say "job Running"; }
  case "$job" in
    Succeeded | Cancelled | Failed)
      [ -n "$result" ] || { result=$job; done_at=$SECONDS; printf '\n'; say "job $job; the controller applies the cleanup policy"; }
      # the cleanup policy has acted once the cluster reports Stopped; a policy that keeps the
      # cluster (KeepCluster) leaves it as it is: stop watching after 60 s
      [ "$state" = Stopped ] || [ $((SECONDS - done_at)) -ge 60 ] && break
      ;;
  esac
  if [ "$job" = Running ] && [ "$cancel_sent" -eq 0 ] && [ $((SECONDS - seen_running)) -ge "$RUN_SECONDS" ]; then
    printf '\n'; say "job still running after $RUN_SECONDS s: stopping it with a savepoint (user-control job-cancel)"
    "${K[@]}" -n "$NS" annotate flinkcluster "$NAME" flinkclusters.flinkoperator.k8s.io/user-control=job-cancel \
      >/dev/null && cancel_sent=1
  fi
  sleep 1
done
printf '\n'
if [ -z "$result" ] || [ "$result" = Failed ]; then
  say "the job did not finish within $TIMEOUT s (job=${job:--}, cluster=${state:--}); controller log:"
  tail -n 30 "$OUT/controller.log"
  "${K[@]}" -n "$NS" get pods -o wide 2>/dev/null
  exit 1
fi
say "job $result after $((SECONDS - t0)) s; cluster $state. The FlinkCluster and what is left of its objects:"
"${K[@]}" -n "$NS" get flinkcluster "$NAME"
"${K[@]}" -n "$NS" get statefulsets,services,configmaps,jobs,pods -l "cluster=$NAME" 2>/dev/null
sp=$(field "flinkcluster/$NAME" '{.status.components.job.savepointLocation}')
[ -z "$sp" ] || say "savepoint: $sp"
# in the order written, by resourceVersion (one etcd counts it up); lastTimestamp has
# whole seconds, so two Events of one second would come in any order
say "events:"
"${K[@]}" -n "$NS" get events --field-selector "involvedObject.kind=FlinkCluster" --sort-by=.metadata.resourceVersion \
  -o custom-columns=TYPE:.type,REASON:.reason,COUNT:.count,MESSAGE:.message
exit 0
