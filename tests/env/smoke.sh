#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smoke test of the test environment (TAP).  Uses a running environment
# ($TESTENV_DIR/env.sh, default build/testenv) or brings one up itself with
# tests/env/up.sh and takes it down again at the end (only then).  Prints
# "1..0 # SKIP <reason>" when the environment cannot be built here (say, no
# go and nothing cached).  Everything it creates lives in a namespace
# smoke-<pid> that it deletes at the end.  up.sh decides what is missing:
# its exit status 2 (a tool needed to build an uncached part) means SKIP.
# The real-node checks (12-16) SKIP when the environment has no real node
# (16 also without the Flink image); the host-trace check after down (17)
# SKIPs unless this test started the environment.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TESTENV_DIR=${TESTENV_DIR:-$ROOT/build/testenv}
export TESTENV_DIR
PLAN=17

for tool in curl lua5.4; do
  if ! command -v "$tool" >/dev/null; then
    echo "1..0 # SKIP $tool not found: the test environment cannot be built here"
    exit 0
  fi
done

started=0
SYSCTLS=$(mktemp)
if [ ! -f "$TESTENV_DIR/env.sh" ]; then
  # the host values the real node changes, compared after down (16)
  "$HERE/traces.sh" --save "$SYSCTLS"
  uplog=$(mktemp)
  "$HERE/up.sh" >"$uplog" 2>&1
  rc=$?
  if [ "$rc" -eq 2 ]; then
    echo "1..0 # SKIP $(tail -n 1 "$uplog")"
    rm -f "$uplog"
    exit 0
  elif [ "$rc" -ne 0 ]; then
    echo "1..$PLAN"
    echo "not ok 1 - tests/env/up.sh (exit $rc)"
    sed 's/^/# /' "$uplog" | tail -n 40
    rm -f "$uplog"
    exit 1
  fi
  sed 's/^/# /' "$uplog"
  rm -f "$uplog"
  started=1
fi
# shellcheck source=/dev/null
. "$TESTENV_DIR/env.sh"
K=("$TESTENV_KUBECTL" --kubeconfig="$KUBECONFIG")
NS=smoke-$$
TMP=$(mktemp -d)
cleanup() {
  "${K[@]}" delete namespace "$NS" --wait=false >/dev/null 2>&1
  rm -rf "$TMP" "$SYSCTLS"
  if [ "$started" -eq 1 ]; then "$HERE/down.sh" >/dev/null 2>&1; fi
}
trap cleanup EXIT

n=0
failed=0
# check DESCRIPTION CMD...: one TAP line; on failure CMD's output as comments.
check() {
  local desc=$1 out; shift
  n=$((n + 1))
  if out=$("$@" 2>&1); then
    echo "ok $n - $desc"
  else
    echo "not ok $n - $desc"
    printf '%s\n' "$out" | tail -n 20 | sed 's/^/# /'
    failed=$((failed + 1))
  fi
}
# expect WHAT GOT WANT: fails showing both unless equal.
expect() {
  [ "$2" = "$3" ] || { echo "$1: got '$2', want '$3'"; return 1; }
}
# poll SECONDS CMD...: retries CMD every 0.5 s until it succeeds.
poll() {
  local limit=$(($1 * 2)) i=0; shift
  until "$@"; do
    i=$((i + 1)); [ "$i" -lt "$limit" ] || return 1
    sleep 0.5
  done
}
jget() { lua5.4 "$HERE/json.lua" "$@"; }
kget() { "${K[@]}" -n "$NS" get "$@"; }

echo "1..$PLAN"

# 1: the CRD from deploy/ is installed and Established
t_crd() {
  "${K[@]}" apply -f "$ROOT/deploy/crd.yaml" >/dev/null || return 1
  local st
  st=$("${K[@]}" get crd flinkclusters.flinkoperator.k8s.io \
    -o jsonpath='{.status.conditions[?(@.type=="Established")].status}') || return 1
  expect "Established" "$st" True
}
check "kubectl apply deploy/crd.yaml: flinkclusters.flinkoperator.k8s.io Established" t_crd

"${K[@]}" create namespace "$NS" >/dev/null

# 2: the example FlinkCluster applies and reads back as written
t_example() {
  "${K[@]}" -n "$NS" apply -f "$ROOT/deploy/examples/wordcount.yaml" || return 1
  kget flinkcluster wordcount -o json >"$TMP/wc.json" || return 1
  local got
  got=$(jget spec.taskManager.replicas spec.job.className spec.jobManager.ports.ui <"$TMP/wc.json" | paste -sd' ')
  expect "replicas className ui" "$got" "1 org.apache.flink.streaming.examples.wordcount.WordCount 8081"
}
check "kubectl apply deploy/examples/wordcount.yaml reads back" t_example

# 3: the schema refuses an enum value it does not list
t_bogus() {
  local out
  if out=$("${K[@]}" -n "$NS" apply -f "$HERE/testdata/flinkcluster-bogus.yaml" 2>&1); then
    echo "accepted: $out"; return 1
  fi
  echo "$out"
  [[ $out == *'spec.jobManager.accessScope: Unsupported value: "Bogus"'* ]] || return 1
  ! kget flinkcluster bogus-scope >/dev/null 2>&1
}
check "FlinkCluster with accessScope: Bogus refused by the CRD schema" t_bogus

# 4: the garbage collector deletes a ConfigMap owned by the FlinkCluster
t_gc() {
  local uid
  uid=$(kget flinkcluster wordcount -o jsonpath='{.metadata.uid}') || return 1
  "${K[@]}" -n "$NS" create configmap wordcount-owned --from-literal=k=v >/dev/null || return 1
  "${K[@]}" -n "$NS" patch configmap wordcount-owned --type=merge -p \
    "{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"flinkoperator.k8s.io/v1beta1\",\"kind\":\"FlinkCluster\",\"name\":\"wordcount\",\"uid\":\"$uid\",\"controller\":true,\"blockOwnerDeletion\":true}]}}" \
    >/dev/null || return 1
  kget configmap wordcount-owned >/dev/null || return 1
  "${K[@]}" -n "$NS" delete flinkcluster wordcount --wait=true --timeout=30s || return 1
  gone() { ! kget configmap wordcount-owned >/dev/null 2>&1; }
  # the garbage collector learns a new CRD kind only when its discovery resyncs (seen: ~27 s)
  poll 90 gone || { echo "owned ConfigMap still there 90 s after its owner was deleted"; return 1; }
}
check "deleting a FlinkCluster garbage-collects its owned ConfigMap" t_gc

# 5: StatefulSet pods are scheduled onto the fake node and become Ready
t_sts() {
  "${K[@]}" -n "$NS" apply -f "$HERE/testdata/statefulset.yaml" >/dev/null || return 1
  "${K[@]}" -n "$NS" rollout status statefulset/smoke-sts --timeout=90s || return 1
  local got
  got=$(kget pod smoke-sts-0 -o jsonpath='{.spec.nodeName} {.status.phase} {.status.conditions[?(@.type=="Ready")].status}')
  expect "pod smoke-sts-0" "$got" "testenv-node-0 Running True" || return 1
  got=$(kget statefulset smoke-sts -o jsonpath='{.status.readyReplicas}')
  expect "readyReplicas" "$got" 2
}
check "StatefulSet pods (tolerating the kwok taint) Running and Ready on the fake node (kwok)" t_sts

# 6: a Job's pod completes and the Job controller marks it Complete
t_job() {
  "${K[@]}" -n "$NS" apply -f "$HERE/testdata/job.yaml" >/dev/null || return 1
  "${K[@]}" -n "$NS" wait --for=condition=Complete --timeout=60s job/smoke-job || return 1
  local got
  got=$(kget job smoke-job -o jsonpath='{.status.succeeded}')
  expect "succeeded" "$got" 1
}
check "Job completes (kwok pod-complete + Job controller)" t_job

# 7: the API server refuses a client without a certificate (authn on)
t_authn() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TESTENV_DIR/pki/ca.crt" \
    "$KUBE_APISERVER_URL/api/v1/namespaces")
  expect "HTTP status without client cert" "$code" 401
}
check "kube-apiserver refuses anonymous requests (401)" t_authn

# 8: Flink's /overview is real JSON with a registered TaskManager
t_overview() {
  curl -sf "$FLINK_REST_URL/overview" >"$TMP/overview.json" || return 1
  local tm slots ver
  read -r tm slots ver < <(jget taskmanagers slots-total flink-version <"$TMP/overview.json" | paste -sd' ')
  cat "$TMP/overview.json"; echo
  [ "${tm:-0}" -ge 1 ] && [ "${slots:-0}" -ge 1 ] || return 1
  expect "flink-version" "$ver" "$(. "$HERE/versions.env"; echo "$FLINK_VERSION")"
}
check "Flink /overview: taskmanagers >= 1, slots-total >= 1" t_overview

# upload_jar: POST /jars/upload; prints the jar id (basename of filename)
upload_jar() {
  curl -sf -X POST -F "jarfile=@$TESTENV_FLINK_JOBS_JAR;type=application/x-java-archive" \
    "$FLINK_REST_URL/jars/upload" >"$TMP/upload.json" || return 1
  [ "$(jget status <"$TMP/upload.json")" = success ] || return 1
  basename "$(jget filename <"$TMP/upload.json")"
}
# job_state JOBID: prints the job's state
job_state() { curl -sf "$FLINK_REST_URL/jobs/$1" | jget state; }

# 9: WordCount over REST reaches FINISHED
t_wordcount() {
  local jar jid
  jar=$(upload_jar) || return 1
  curl -sf -X POST -H 'Content-Type: application/json' -d '{"entryClass":"testenv.WordCount","parallelism":1}' \
    "$FLINK_REST_URL/jars/$jar/run" >"$TMP/run.json" || { cat "$TMP/run.json"; return 1; }
  jid=$(jget jobid <"$TMP/run.json") || return 1
  finished() { [ "$(job_state "$jid")" = FINISHED ]; }
  poll 60 finished || { echo "job $jid state: $(job_state "$jid")"; return 1; }
}
check "WordCount uploaded (POST /jars/upload), run (POST /jars/<id>/run), FINISHED" t_wordcount

# 10+11: the unbounded Ticker job runs, and stop-with-savepoint writes one
# (check runs each test in a subshell: the job id goes through a file)
t_ticker_runs() {
  local jar jid
  jar=$(upload_jar) || return 1
  curl -sf -X POST -H 'Content-Type: application/json' -d '{"entryClass":"testenv.Ticker","parallelism":2}' \
    "$FLINK_REST_URL/jars/$jar/run" >"$TMP/run2.json" || return 1
  jid=$(jget jobid <"$TMP/run2.json") || return 1
  echo "$jid" >"$TMP/ticker.jid"
  running() {
    curl -sf "$FLINK_REST_URL/jobs/$jid" >"$TMP/job2.json" &&
      [ "$(jget state <"$TMP/job2.json")" = RUNNING ] &&
      [ "$(jget vertices.1.status <"$TMP/job2.json")" = RUNNING ] &&
      [ "$(jget vertices.2.status <"$TMP/job2.json")" = RUNNING ]
  }
  poll 60 running || { echo "job $jid state: $(job_state "$jid")"; return 1; }
}
check "Ticker (unbounded) job RUNNING with all tasks running" t_ticker_runs

t_savepoint() {
  local tid jid
  jid=$(cat "$TMP/ticker.jid" 2>/dev/null)
  [ -n "$jid" ] || { echo "no Ticker job"; return 1; }
  curl -sf -X POST -H 'Content-Type: application/json' -d '{"drain":false}' \
    "$FLINK_REST_URL/jobs/$jid/stop" >"$TMP/stop.json" || return 1
  tid=$(jget request-id <"$TMP/stop.json") || return 1
  done_sp() {
    curl -sf "$FLINK_REST_URL/jobs/$jid/savepoints/$tid" >"$TMP/sp.json" &&
      [ "$(jget status.id <"$TMP/sp.json")" = COMPLETED ]
  }
  poll 60 done_sp || { cat "$TMP/sp.json"; return 1; }
  local loc
  loc=$(jget operation.location <"$TMP/sp.json")
  echo "savepoint: $loc"
  [[ $loc == file:"$TESTENV_DIR"/flink/savepoints/savepoint-* ]] || return 1
  [ -f "${loc#file:}/_metadata" ] || { echo "no _metadata in $loc"; return 1; }
  finished() { [ "$(job_state "$jid")" = FINISHED ]; }
  poll 30 finished || { echo "job state after stop: $(job_state "$jid")"; return 1; }
}
check "stop-with-savepoint of the Ticker job: COMPLETED, _metadata written, job FINISHED" t_savepoint

# --- the real node (12-16); skipped without one
# skip DESCRIPTION REASON: one TAP line "ok N # SKIP".
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# real_check DESCRIPTION CMD...: check, or skip when there is no real node.
real_check() {
  if [ -n "${TESTENV_NODE:-}" ]; then check "$@"; else skip "$1" "no real node in this environment"; fi
}
# run_pod NAME IMAGE CMD...: a pod running CMD of the (imported) IMAGE on
# the default node; waits until it ended; prints "NODE PHASE", then its log.
run_pod() {
  local name=$1 image=$2 a args=""; shift 2
  for a in "$@"; do args+="\"$a\", "; done
  "${K[@]}" -n "$NS" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  containers:
    - {name: main, image: $image, imagePullPolicy: Never, command: [${args%, }]}
EOF
  ended() { [[ $(kget pod "$name" -o jsonpath='{.status.phase}') == @(Succeeded|Failed) ]]; }
  poll 60 ended || true
  kget pod "$name" -o jsonpath='{.spec.nodeName} {.status.phase}{"\n"}'
  "${K[@]}" -n "$NS" logs "$name"
}
# probe_pod NAME ARGS...: run_pod with the pause image's /probe ARGS.
probe_pod() { local name=$1; shift; run_pod "$name" localhost/pause:testenv /probe "$@"; }

# 12: the real node is Ready, kwok's is tainted, the API server's endpoint is the node IP
t_node() {
  local got
  got=$("${K[@]}" get node "$TESTENV_NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
  expect "$TESTENV_NODE Ready" "$got" True || return 1
  got=$("${K[@]}" get node "$TESTENV_KWOK_NODE" -o jsonpath='{.spec.taints[0].key}')
  expect "$TESTENV_KWOK_NODE taint" "$got" kwok.x-k8s.io/node || return 1
  got=$("${K[@]}" -n default get endpointslice -l kubernetes.io/service-name=kubernetes \
    -o jsonpath='{.items[0].endpoints[0].addresses[0]}')
  expect "kubernetes Service endpoint" "$got" "$TESTENV_NODE_IP"
}
real_check "real node Ready, kwok node tainted, the kubernetes Service's endpoint is the node IP" t_node

# 13: a pod without node selection runs on the real node and Succeeds (kubectl logs via the kubelet)
t_pod() {
  local out
  out=$(probe_pod smoke-echo echo hello from a pod); echo "$out"
  expect "node phase" "$(head -n 1 <<<"$out")" "$TESTENV_NODE Succeeded" || return 1
  expect "log" "$(tail -n 1 <<<"$out")" "hello from a pod"
}
real_check "a pod runs a command on the real node and Succeeds (kubectl logs)" t_pod

# 14: pod -> Service ClusterIP (kube-proxy) -> a server pod
t_service() {
  "${K[@]}" -n "$NS" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata: {name: smoke-web, labels: {app: smoke-web}}
spec:
  containers:
    - name: main
      image: localhost/pause:testenv
      imagePullPolicy: Never
      command: [/probe, serve, ":8080", hello from smoke-web]
      readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: smoke-web}
spec:
  selector: {app: smoke-web}
  ports: [{port: 80, targetPort: 8080}]
EOF
  "${K[@]}" -n "$NS" wait --for=condition=Ready pod/smoke-web --timeout=60s || return 1
  local ip out
  ip=$(kget service smoke-web -o jsonpath='{.spec.clusterIP}')
  out=$(probe_pod smoke-get get "http://$ip/"); echo "$out"
  expect "node phase" "$(head -n 1 <<<"$out")" "$TESTENV_NODE Succeeded" || return 1
  expect "answer" "$(tail -n 1 <<<"$out")" "hello from smoke-web"
}
real_check "pod -> Service ClusterIP -> pod on the real node" t_service

# 15: cluster DNS (CoreDNS) from inside a pod: the API's Service and ours, by full and short name
t_dns() {
  local out
  out=$(probe_pod smoke-dns dns kubernetes.default.svc.cluster.local "smoke-web.$NS.svc.cluster.local" smoke-web)
  echo "$out"
  expect "node phase" "$(head -n 1 <<<"$out")" "$TESTENV_NODE Succeeded" || return 1
  grep -qx "kubernetes.default.svc.cluster.local 10.96.0.1" <<<"$out" || return 1
  grep -qx "smoke-web $(kget service smoke-web -o jsonpath='{.spec.clusterIP}')" <<<"$out"
}
real_check "cluster DNS in a pod resolves kubernetes.default.svc.cluster.local and a Service name" t_dns

# 16: the Flink image (build.sh flink-image, imported at up) runs its JVM on the real node
FLINK_IMAGE=docker.io/library/flink:$(. "$HERE/versions.env"; echo "$FLINK_VERSION")
t_flink_image() {
  local out
  out=$(run_pod smoke-java "$FLINK_IMAGE" java -version); echo "$out"
  expect "node phase" "$(head -n 1 <<<"$out")" "$TESTENV_NODE Succeeded" || return 1
  grep -q '^openjdk version' <<<"$out"
}
if [ -n "${TESTENV_NODE:-}" ] && ! "${K[@]}" get node "$TESTENV_NODE" -o jsonpath='{.status.images[*].names}' |
  grep -qF "$FLINK_IMAGE"; then
  skip "the Flink image runs java on the real node" "$FLINK_IMAGE not imported (build.sh flink-image)"
else
  real_check "the Flink image runs java on the real node" t_flink_image
fi

# 17: after down, the real node left nothing on the host (only when this test started the environment)
if [ "$started" -eq 1 ] && [ -n "${TESTENV_NODE:-}" ]; then
  t_traces() {
    "${K[@]}" delete namespace "$NS" --wait=false >/dev/null 2>&1
    "$HERE/down.sh" || return 1
    "$HERE/traces.sh" "$SYSCTLS"
  }
  check "down.sh stops the real node and leaves no host trace (tests/env/traces.sh)" t_traces
else
  skip "down.sh leaves no host trace" "environment not started by this test, or no real node"
fi

[ "$n" -eq "$PLAN" ] || echo "# ran $n of $PLAN"
[ "$failed" -eq 0 ]
