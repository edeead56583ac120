#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Starts the test environment on loopback, every port chosen free at start:
#   etcd -> kube-apiserver (TLS, client-certificate authn, RBAC) ->
#   kube-controller-manager (GC, StatefulSet, Job, ... controllers) ->
#   kube-scheduler -> kwok (plays the kubelet of the fake node testenv-node-0,
#   tainted: only pods tolerating kwok.x-k8s.io/node go there) and, when this
#   machine can (root, containerd, ...; TESTENV_REAL_NODE=auto|1|0), the real
#   node testenv-real-0 (tests/env/node/node.sh: containerd, kubelet,
#   kube-proxy, CoreDNS; the API server then also listens on the node IP)
#   and a Flink session cluster: JobManager (REST + web submission) and one
#   TaskManager with 4 slots, as plain `java` processes.
# Then applies deploy/crd.yaml, waits for it to be Established and for the
# TaskManager to register, and writes $TESTENV_DIR/env.sh (source it):
#   KUBECONFIG, FLINK_REST_URL, KUBE_APISERVER_URL, TESTENV_DIR, TESTENV_KUBECTL, TESTENV_HELM,
#   TESTENV_FLINK_JOBS_JAR, TESTENV_PIDS ("name=pid ...") and TESTENV_PID_<NAME>,
#   TESTENV_NODE (the real node; empty without one), TESTENV_NODE_IP,
#   TESTENV_KWOK_NODE, TESTENV_KWOK_TOLERATION, TESTENV_KWOK_NS_ANNOTATIONS.
# TESTENV_DIR defaults to build/testenv; logs go to $TESTENV_DIR/logs/.
# TESTENV_K8S: the component of the control plane, k8s (default: K8S_VERSION, the oldest
# Kubernetes claimed) or k8s-newest (K8S_NEWEST_VERSION, the newest; docs/versions.md): kwok's
# node only (the real node's kubelet is K8S_VERSION's), and only the components it needs built.
# Exit: 0 ready; 1 already running / failed (then everything it started is
# stopped again; logs stay); 2 cannot be built here (toolchain missing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$TESTENV_SRC/proc.sh"
. "$TESTENV_SRC/node/node.sh"
ROOT=$(cd "$TESTENV_SRC/../.." && pwd)
TESTENV_DIR=${TESTENV_DIR:-$ROOT/build/testenv}
K8S_COMP=${TESTENV_K8S:-k8s}
case $K8S_COMP in
  k8s) COMPONENTS=() NODE_COMPONENTS=(node coredns pause) ;;  # () is all (build.sh's default)
  k8s-newest) COMPONENTS=(etcd kwok k8s-newest flink) NODE_COMPONENTS=() ;;
  *) echo "testenv: TESTENV_K8S=$K8S_COMP: k8s or k8s-newest" >&2; exit 1 ;;
esac
CRD=${TESTENV_CRD:-$ROOT/deploy/crd.yaml}
PIDS=$TESTENV_DIR/pids
LOGS=$TESTENV_DIR/logs
T0=$SECONDS

mkdir -p "$TESTENV_DIR"
# one up/down at a time; fd 9 is closed for every process started below
exec 9>"$TESTENV_DIR/.lock"
flock -n 9 || { echo "testenv: another testenv-up/down is running on $TESTENV_DIR" >&2; exit 1; }

running=$(pids_running "$PIDS")
if [ -n "$running" ]; then
  echo "testenv: already running in $TESTENV_DIR (source $TESTENV_DIR/env.sh;" \
    "make testenv-down to stop):" >&2
  echo "$running" | sed 's/^/  /' >&2
  exit 1
fi
# leftovers of a crashed run: nothing of ours is alive, so clear them
find "$TESTENV_DIR" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +
mkdir -p "$LOGS" "$TESTENV_DIR/pki" "$TESTENV_DIR/data"

# need TOOL WHY: exit 2 (the caller may skip) when TOOL is missing
need() { command -v "$1" >/dev/null || { echo "testenv: $1 not found ($2)" >&2; exit 2; }; }
for tool in java openssl curl flock lua5.4; do need "$tool" "needed to run the test environment"; done
for c in etcd kwok "$K8S_COMP" "${NODE_COMPONENTS[@]}"; do
  [ -f "$(component_dir "$c")/.done" ] || need go "needed to build $c; not cached"
done
[ -f "$(component_dir flink)/.done" ] || need mvn "needed to resolve the Flink jars; not cached"
"$TESTENV_SRC/build.sh" "${COMPONENTS[@]}" || { echo "testenv: build failed" >&2; exit 1; }
log "binaries ready (+$((SECONDS - T0)) s)"
K8S=$(component_dir "$K8S_COMP")/bin ETCD=$(component_dir etcd)/bin/etcd
KWOK=$(component_dir kwok)/bin/kwok FLINK=$(component_dir flink)
KUBECTL=$K8S/kubectl KC=$TESTENV_DIR/kubeconfig PKI=$TESTENV_DIR/pki

# --- the real node: TESTENV_REAL_NODE=auto (default: when this machine can),
# 1 (fail without it) or 0 (only the kwok node)
REAL=${TESTENV_REAL_NODE:-auto} NODE_IP=""
if [ "$K8S_COMP" != k8s ]; then
  [ "$REAL" != 1 ] || { echo "testenv: TESTENV_REAL_NODE=1 needs TESTENV_K8S=k8s (the node's release)" >&2; exit 1; }
  REAL=0
fi
if [ "$REAL" != 0 ]; then
  why=$(node_unusable)
  [ -n "$why" ] || node_claim || why="another environment claimed the real node"
  if [ -z "$why" ]; then
    REAL=1 NODE_IP=$(node_ip)
  elif [ "$REAL" = 1 ]; then
    echo "testenv: TESTENV_REAL_NODE=1 but no real node here: $why" >&2; exit 1
  else
    log "no real node: $why (only the kwok node)"; REAL=0
  fi
fi

done_ok=0
on_exit() {
  if [ "$done_ok" -ne 1 ]; then
    echo "testenv: start-up failed after $((SECONDS - T0)) s; stopping what was started (logs: $LOGS)" >&2
    if [ "$REAL" = 1 ]; then node_teardown "$KUBECTL" "$KC" >&2 || true; fi
    pids_stop "$PIDS" >&2 || true
    find "$TESTENV_DIR" -mindepth 1 -maxdepth 1 ! -name logs ! -name .lock -exec rm -rf {} +
  fi
}
trap on_exit EXIT
trap 'exit 1' INT TERM

# fail MSG [LOG]: reports, shows the end of LOG, exits (on_exit cleans up).
fail() {
  echo "testenv: $1" >&2
  if [ -n "${2:-}" ] && [ -f "$LOGS/$2.log" ]; then tail -n 25 "$LOGS/$2.log" | sed "s/^/  $2: /" >&2; fi
  exit 1
}

# free_port: a TCP port no socket on this machine uses (per /proc/net/tcp*)
# and not handed out before by this script, below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range): a port inside it can be taken as the local end
# of some outgoing connection between the choice and the component's bind
# (seen: kube-controller-manager's "bind: address already in use").
CHOSEN=" "
EPHEMERAL_LOW=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "${EPHEMERAL_LOW:-0}" -gt 12000 ] || EPHEMERAL_LOW=32768
free_port() {
  local used p _sl local_addr _rest
  used=" "
  while read -r _sl local_addr _rest; do
    [ "$_sl" = sl ] && continue
    used+="$((16#${local_addr##*:})) "
  done < <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  while :; do
    p=$((10000 + (RANDOM * 32768 + RANDOM) % (EPHEMERAL_LOW - 10000)))
    case "$used$CHOSEN" in *" $p "*) continue ;; esac
    CHOSEN+="$p "; echo "$p"; return 0
  done
}

# start NAME CMD...: runs CMD in the background (stdin /dev/null, output to
# logs/NAME.log) and records it in the pid file.
start() {
  local name=$1; shift
  "$@" </dev/null >"$LOGS/$name.log" 2>&1 9>&- &
  local pid=$!
  echo "$name $pid $(proc_start "$pid")" >>"$PIDS"
}

# alive NAME: fails with its log when the process NAME has exited.
alive() {
  local pid start
  read -r _ pid start < <(grep "^$1 " "$PIDS")
  proc_ours "$pid" "$start" || fail "$1 exited during start-up" "$1"
}

# wait_for NAME SECONDS CMD...: retries CMD every 0.2 s until it succeeds.
wait_for() {
  local name=$1 limit=$2 n=0; shift 2
  until "$@" >/dev/null 2>&1; do
    alive "$name"
    n=$((n + 1)); [ "$n" -le $((limit * 5)) ] || fail "$name not ready after ${limit} s" "$name"
    sleep 0.2
  done
}

ETCD_PORT=$(free_port) ETCD_PEER=$(free_port) API_PORT=$(free_port)
KCM_PORT=$(free_port) SCHED_PORT=$(free_port) REST_PORT=$(free_port) RPC_PORT=$(free_port)

# --- PKI: one CA signs the API server's serving cert and the admin client
# cert (CN testenv-admin, O system:masters: cluster-admin through RBAC's
# bootstrap binding); a separate EC key pair signs service-account tokens.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 30 \
  -subj /CN=flink-controller-testenv-ca -addext basicConstraints=critical,CA:TRUE \
  -addext keyUsage=critical,keyCertSign,cRLSign 2>"$LOGS/openssl.log"
# sign NAME SUBJECT EXTENSIONS
sign() {
  openssl req "${ec[@]}" -keyout "$PKI/$1.key" -out "$PKI/$1.csr" -subj "$2" 2>>"$LOGS/openssl.log"
  openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 30 -out "$PKI/$1.crt" -extfile <(printf '%s\n' "$3") 2>>"$LOGS/openssl.log"
}
sign apiserver /CN=kube-apiserver "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:10.96.0.1${NODE_IP:+,IP:$NODE_IP},DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature,keyEncipherment"
sign admin "/O=system:masters/CN=testenv-admin" "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature,keyEncipherment"
# the API server's client cert towards kubelets (the kubelet authorizes any
# cert of this CA)
sign kubelet-client /CN=kube-apiserver-kubelet-client "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature,keyEncipherment"
openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/sa.key" 2>>"$LOGS/openssl.log"
openssl ec -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>>"$LOGS/openssl.log"

kc() { "$KUBECTL" --kubeconfig="$KC" "$@"; }
kc config set-cluster testenv --server="https://127.0.0.1:$API_PORT" \
  --certificate-authority="$PKI/ca.crt" --embed-certs=true >/dev/null
kc config set-credentials testenv-admin --client-certificate="$PKI/admin.crt" \
  --client-key="$PKI/admin.key" --embed-certs=true >/dev/null
kc config set-context testenv --cluster=testenv --user=testenv-admin --namespace=default >/dev/null
kc config use-context testenv >/dev/null

# containerd starts now and imports the images while the control plane starts
if [ "$REAL" = 1 ]; then node_start_runtime; fi

# --- Flink: config, then the JobManager at once (it starts in parallel with
# the control plane); the TaskManager needs its memory pre-resolved by
# BashJavaUtils (what bin/taskmanager.sh does) and retries the JM until up.
FCONF=$TESTENV_DIR/flink/conf FDATA=$TESTENV_DIR/flink
mkdir -p "$FCONF" "$FDATA/upload" "$FDATA/tmp" "$FDATA/savepoints" "$FDATA/checkpoints"
cp "$TESTENV_SRC/testdata/log4j-console.properties" "$FCONF/"
cat >"$FCONF/config.yaml" <<EOF
# generated by tests/env/up.sh
jobmanager.rpc.address: 127.0.0.1
jobmanager.rpc.port: $RPC_PORT
jobmanager.bind-host: 127.0.0.1
jobmanager.memory.process.size: 1024m
taskmanager.host: 127.0.0.1
taskmanager.bind-host: 127.0.0.1
taskmanager.numberOfTaskSlots: 4
taskmanager.memory.process.size: 1536m
taskmanager.memory.managed.size: 128m
rest.address: 127.0.0.1
rest.bind-address: 127.0.0.1
rest.port: $REST_PORT
web.submit.enable: true
web.cancel.enable: true
web.upload.dir: $FDATA/upload
io.tmp.dirs: $FDATA/tmp
execution.checkpointing.savepoint-dir: file://$FDATA/savepoints
execution.checkpointing.dir: file://$FDATA/checkpoints
EOF
CP=$(printf '%s\n' "$FLINK"/lib/*.jar | sort | paste -sd: -)
# Java 17 module flags from Flink's dist config (env.java.opts.all)
OPENS=(-XX:+IgnoreUnrecognizedVMOptions
  --add-exports=java.base/sun.net.util=ALL-UNNAMED --add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED --add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED --add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED)
for m in java.lang java.net java.io java.nio sun.nio.ch java.lang.reflect java.text java.time \
  java.util java.util.concurrent java.util.concurrent.atomic java.util.concurrent.locks; do
  OPENS+=("--add-opens=java.base/$m=ALL-UNNAMED")
done
LOG4J=(-Dlog4j.configurationFile="file:$FCONF/log4j-console.properties" -Dlog.file="$LOGS/flink.log")
# resources WHAT: the two result lines of BashJavaUtils GET_<WHAT>_RESOURCE_PARAMS
resources() {
  java -cp "$CP" org.apache.flink.runtime.util.bash.BashJavaUtils "GET_$1_RESOURCE_PARAMS" \
    --configDir "$FCONF" 2>>"$LOGS/bash-java-utils.log" | sed -n 's/^BASH_JAVA_UTILS_EXEC_RESULT://p'
}
resources JM >"$FDATA/jm.params" & RJM=$!
resources TM >"$FDATA/tm.params" & RTM=$!

# --- control plane
start etcd "$ETCD" --name=testenv --data-dir="$TESTENV_DIR/data/etcd" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER" \
  --initial-cluster="testenv=http://127.0.0.1:$ETCD_PEER" --unsafe-no-fsync=true \
  --quota-backend-bytes=$((1024 * 1024 * 1024)) --auto-compaction-retention=1

wait "$RJM" && wait "$RTM" || fail "BashJavaUtils failed" bash-java-utils
[ "$(wc -l <"$FDATA/tm.params")" -eq 2 ] && [ "$(wc -l <"$FDATA/jm.params")" -eq 2 ] ||
  fail "BashJavaUtils gave no memory parameters" bash-java-utils
read -r -a JM_JVM < <(sed -n 1p "$FDATA/jm.params")
read -r -a JM_DYN < <(sed -n 2p "$FDATA/jm.params")
read -r -a TM_JVM < <(sed -n 1p "$FDATA/tm.params")
read -r -a TM_DYN < <(sed -n 2p "$FDATA/tm.params")
start flink-jobmanager java "${OPENS[@]}" "${JM_JVM[@]}" "${LOG4J[@]}" -cp "$CP" \
  org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint --configDir "$FCONF" "${JM_DYN[@]}"
start flink-taskmanager java "${OPENS[@]}" "${TM_JVM[@]}" "${LOG4J[@]}" -cp "$CP" \
  org.apache.flink.runtime.taskexecutor.TaskManagerRunner --configDir "$FCONF" "${TM_DYN[@]}"

wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
log "etcd ready (+$((SECONDS - T0)) s)"

# with the real node, pods reach the API server at the node IP (the
# `kubernetes` Service's endpoint, kept by the lease reconciler)
API_NET=(--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --endpoint-reconciler-type=none)
if [ "$REAL" = 1 ]; then
  API_NET=(--bind-address=0.0.0.0 --advertise-address="$NODE_IP" --endpoint-reconciler-type=lease)
fi
start kube-apiserver "$K8S/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  "${API_NET[@]}" --secure-port="$API_PORT" \
  --cert-dir="$PKI" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" --authorization-mode=Node,RBAC --anonymous-auth=false \
  --enable-admission-plugins=NodeRestriction,PodNodeSelector,PodTolerationRestriction \
  --kubelet-client-certificate="$PKI/kubelet-client.crt" --kubelet-client-key="$PKI/kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --service-cluster-ip-range="$NODE_SERVICE_CIDR" --allow-privileged=true \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --profiling=false
curl_api() { curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://127.0.0.1:$API_PORT$1"; }
wait_for kube-apiserver 90 curl_api /readyz
log "kube-apiserver ready (+$((SECONDS - T0)) s)"

# The controller-manager's and scheduler's own client limits (defaults 20/30 and 50/100) raised,
# so that the StatefulSet controller's pods and status updates do not bound a benchmark of
# 1,000 clusters (bench/converge) before the API server does.
start kube-controller-manager "$K8S/kube-controller-manager" --kubeconfig="$KC" \
  --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
  --leader-elect=false --controllers='*' --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" --profiling=false \
  --kube-api-qps=300 --kube-api-burst=600 --concurrent-statefulset-syncs=20
start kube-scheduler "$K8S/kube-scheduler" --kubeconfig="$KC" \
  --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
  --leader-elect=false --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --profiling=false \
  --kube-api-qps=300 --kube-api-burst=600
: >"$TESTENV_DIR/kwok.yaml"
start kwok "$KWOK" --kubeconfig="$KC" --config="$TESTENV_DIR/kwok.yaml" \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake --node-ip=127.0.0.1 --cidr=10.244.0.1/24 \
  --node-lease-duration-seconds=40

kc apply -f "$TESTENV_SRC/testdata/node.yaml" >"$LOGS/apply-node.log" 2>&1 || fail "cannot create the fake node" apply-node
if [ "$REAL" = 1 ]; then node_start; fi
[ -f "$CRD" ] || fail "no CRD at $CRD"
kc apply -f "$CRD" >"$LOGS/apply-crd.log" 2>&1 || fail "cannot apply $CRD" apply-crd
CRD_NAMES=$(kc apply -f "$CRD" --dry-run=server -o name 2>>"$LOGS/apply-crd.log" | grep customresourcedefinition || true)
for c in $CRD_NAMES; do
  kc wait --for=condition=Established --timeout=30s "$c" >>"$LOGS/apply-crd.log" 2>&1 || fail "$c not Established" apply-crd
done
log "CRD Established (+$((SECONDS - T0)) s)"
kc wait --for=condition=Ready --timeout=60s node/testenv-node-0 >"$LOGS/node-ready.log" 2>&1 ||
  fail "fake node not Ready (kwok)" kwok
wait_for kube-controller-manager 30 curl -skf "https://127.0.0.1:$KCM_PORT/healthz"
wait_for kube-scheduler 30 curl -skf "https://127.0.0.1:$SCHED_PORT/healthz"
log "node Ready, controller-manager and scheduler healthy (+$((SECONDS - T0)) s)"
if [ "$REAL" = 1 ]; then
  node_wait
  log "real node $NODE_NAME Ready ($NODE_IP), kube-proxy synced, CoreDNS ready (+$((SECONDS - T0)) s)"
fi

# --- Flink: REST up and the TaskManager registered with its slots
flink_ready() {
  local n
  n=$(curl -sf "http://127.0.0.1:$REST_PORT/overview" | lua5.4 "$TESTENV_SRC/json.lua" taskmanagers) &&
    [ "$n" -ge 1 ]
}
wait_for flink-jobmanager 90 flink_ready
alive flink-taskmanager
log "Flink TaskManager registered (+$((SECONDS - T0)) s)"

# --- env.sh (written last, atomically: its presence means "ready")
# kubectl of the pinned release first on PATH, so `kubectl get flinkclusters -A` works after
# sourcing env.sh on a machine that has none (or another version)
mkdir -p "$TESTENV_DIR/bin"
ln -sf "$KUBECTL" "$TESTENV_DIR/bin/kubectl"
{
  echo "# generated by tests/env/up.sh at $(date -u +%FT%TZ); source me"
  printf 'export TESTENV_DIR=%q\n' "$TESTENV_DIR"
  printf 'export KUBECONFIG=%q\n' "$KC"
  printf 'export KUBE_APISERVER_URL=%q\n' "https://127.0.0.1:$API_PORT"
  printf 'export FLINK_REST_URL=%q\n' "http://127.0.0.1:$REST_PORT"
  printf 'export TESTENV_KUBECTL=%q\n' "$KUBECTL"
  printf 'export TESTENV_K8S=%q\n' "$K8S_COMP"
  # the Helm CLI of the chart's tests, when its component is built (up does not need it)
  HELM_BIN=$(component_dir helm)/bin/helm
  if [ -x "$HELM_BIN" ]; then printf 'export TESTENV_HELM=%q\n' "$HELM_BIN"; fi
  printf 'export PATH=%q:"$PATH"\n' "$TESTENV_DIR/bin"
  printf 'export TESTENV_FLINK_JOBS_JAR=%q\n' "$FLINK/jobs.jar"
  printf 'export TESTENV_FLINK_CONF_DIR=%q\n' "$FCONF"
  printf 'export TESTENV_NODE=%q\n' "$([ "$REAL" = 1 ] && echo "$NODE_NAME")"
  printf 'export TESTENV_NODE_IP=%q\n' "$NODE_IP"
  printf 'export TESTENV_KWOK_NODE=%q\n' "$KWOK_NODE"
  printf 'export TESTENV_KWOK_TOLERATION=%q\n' "$KWOK_TOLERATION"
  printf 'export TESTENV_KWOK_NS_ANNOTATIONS=%q\n' "$KWOK_NS_ANNOTATIONS"
  all=""
  while read -r name pid _; do
    printf 'export TESTENV_PID_%s=%s\n' "$(echo "$name" | tr a-z- A-Z_)" "$pid"
    all+="$name=$pid "
  done <"$PIDS"
  printf 'export TESTENV_PIDS=%q\n' "${all% }"
} >"$TESTENV_DIR/env.sh.tmp"
mv "$TESTENV_DIR/env.sh.tmp" "$TESTENV_DIR/env.sh"
done_ok=1
echo "testenv: up in $((SECONDS - T0)) s: API https://127.0.0.1:$API_PORT, Flink REST http://127.0.0.1:$REST_PORT"
echo "testenv: source $TESTENV_DIR/env.sh"
