#!/usr/bin/env bash
# The controller end to end on the test environment (README.md, "The test environment"):
#   1. `make testenv-up` (unless one already runs at $TESTENV_DIR, default build/testenv);
#   2. `flink-controller run` against it (log: build/demo/controller.log);
#   3. applies deploy/examples/wordcount.yaml in a fresh namespace and shows one progress line
#      while the FlinkCluster goes to Running (pods get Ready through kwok's fake node);
#   4. prints what the controller made, then stops what this script started (the controller,
#      the namespace and, when it started it, the test environment).
# Exit 0 when the cluster reached Running within $DEMO_TIMEOUT seconds (default 180), else 1.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
export TESTENV_DIR=${TESTENV_DIR:-$ROOT/build/testenv}
TIMEOUT=${DEMO_TIMEOUT:-180}
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
  say "starting the test environment (make testenv-up; the first run builds it, later runs ~30 s)"
  make -s testenv-up TESTENV_DIR="$TESTENV_DIR" || { say "the test environment did not start"; exit 1; }
  started_env=1
fi
# shellcheck source=/dev/null
. "$TESTENV_DIR/env.sh"
K=("$TESTENV_KUBECTL" --kubeconfig="$KUBECONFIG")

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
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"${K[@]}" create namespace "$NS" >/dev/null || exit 1
say "starting: flink-controller run --namespace $NS (log: $OUT/controller.log)"
# the JobManager REST API of the demo cluster is the test environment's Flink session cluster
build/flink-controller run --kubeconfig "$KUBECONFIG" --namespace "$NS" --flink-base-url "$FLINK_REST_URL" \
  --health-addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 >"$OUT/controller.log" 2>&1 &
ctl=$!
say "applying deploy/examples/wordcount.yaml"
"${K[@]}" -n "$NS" apply -f deploy/examples/wordcount.yaml || exit 1

field() { "${K[@]}" -n "$NS" get "$1" -o "jsonpath=$2" 2>/dev/null; }
t0=$SECONDS
state=""
while [ $((SECONDS - t0)) -lt "$TIMEOUT" ]; do
  kill -0 "$ctl" 2>/dev/null || { printf '\n'; say "the controller exited:"; tail -n 20 "$OUT/controller.log"; exit 1; }
  state=$(field flinkcluster/wordcount '{.status.state}')
  jm=$(field statefulset/wordcount-jobmanager '{.status.readyReplicas}/{.spec.replicas}')
  tm=$(field statefulset/wordcount-taskmanager '{.status.readyReplicas}/{.spec.replicas}')
  job=$(field flinkcluster/wordcount '{.status.components.job.state}')
  printf '\r[demo] %3d s  state=%-12s jobmanager=%-5s taskmanager=%-5s job=%-10s' "$((SECONDS - t0))" \
    "${state:--}" "${jm:--}" "${tm:--}" "${job:--}"
  [ "$state" = Running ] && break
  sleep 1
done
printf '\n'
if [ "$state" != Running ]; then
  say "not Running after $TIMEOUT s; controller log:"; tail -n 30 "$OUT/controller.log"; exit 1
fi
say "wordcount is Running after $((SECONDS - t0)) s. What the controller made:"
"${K[@]}" -n "$NS" get statefulsets,services,configmaps,jobs,controllerrevisions -l 'app=flink' 2>/dev/null
"${K[@]}" -n "$NS" get flinkcluster wordcount
say "events:"
"${K[@]}" -n "$NS" get events --field-selector involvedObject.kind=FlinkCluster \
  -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message
exit 0
