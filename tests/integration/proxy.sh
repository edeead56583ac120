# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Flink REST through the real kube-apiserver's service proxy (`run --flink-access proxy`, the
# default out of cluster; sourced by tests/integration/run.sh, case `proxy`).
#
# The test environment's JobManager is a host process on 127.0.0.1, and the API server proxies
# a Service only to an Endpoints address that (a) is not loopback (Endpoints validation) and
# (b) is in the status.podIPs of the Pod its targetRef names (the service proxy's
# isValidAddress). So: a TCP forwarder on the host's first non-loopback IPv4 address to the
# host Flink, a never-scheduled Pod (schedulerName none) whose status says it has that IP, and
# the Service's Endpoints written by the test. The Service must have no selector (else the
# endpoints controller rewrites its Endpoints): the controller runs with a policy dir whose
# cluster.lua wraps the real one and drops the JobManager Service's selector.

# sa_kubeconfig FILE [SA]: applies deploy/rbac.yaml and writes a kubeconfig with a 1 h token of its
# ServiceAccount flink-system/flink-controller (also used by case_rbac); with SA, only the token
# of flink-system/SA, whose RBAC the caller applied (case_namespaced)
sa_kubeconfig() {
  [ -n "${2:-}" ] || kc apply -f "$ROOT/deploy/namespace.yaml" -f "$ROOT/deploy/rbac.yaml" >/dev/null || return 1
  local token skc=("$TESTENV_KUBECTL" --kubeconfig="$1")
  token=$(kc -n flink-system create token "${2:-flink-controller}" --duration=1h) || return 1
  "${skc[@]}" config set-cluster testenv --server="$KUBE_APISERVER_URL" \
    --certificate-authority="$TESTENV_DIR/pki/ca.crt" --embed-certs=true >/dev/null &&
    "${skc[@]}" config set-credentials sa --token="$token" >/dev/null &&
    "${skc[@]}" config set-context sa --cluster=testenv --user=sa --namespace=flink-system >/dev/null &&
    "${skc[@]}" config use-context sa >/dev/null
}

# savepoint_generation NS NAME: spec.job.savepointGeneration 1 -> within 60 s savepoint Succeeded
# with a _metadata file at the job's savepointLocation (printed); also used by case_flink
savepoint_generation() {
  kc -n "$1" patch flinkcluster "$2" --type=merge -p '{"spec":{"job":{"savepointGeneration":1}}}' >/dev/null ||
    return 1
  sp_state() { [ "$(jp "$1" "flinkcluster/$2" '{.status.savepoint.state}')" = Succeeded ]; }
  poll 60 sp_state "$1" "$2" || { echo "savepoint: $(jp "$1" "flinkcluster/$2" '{.status.savepoint}')"; return 1; }
  local loc
  loc=$(jp "$1" "flinkcluster/$2" '{.status.components.job.savepointLocation}')
  echo "savepoint at $loc"
  [ -f "${loc#file:}/_metadata" ] || { echo "no _metadata under $loc"; return 1; }
}

# job_running NS NAME JID: the status names Flink job JID Running (written into the status when
# it is not: the submitter's termination message would, under a kubelet); for poll
job_running() {
  local got
  got=$(jp "$1" "flinkcluster/$2" '{.status.components.job.id}')
  [ "$got" = "$3" ] ||
    kc -n "$1" patch flinkcluster "$2" --subresource=status --type=merge \
      -p "{\"status\":{\"components\":{\"job\":{\"id\":\"$3\",\"state\":\"Running\"}}}}" >/dev/null
  [ "$(jp "$1" "flinkcluster/$2" '{.status.components.job.id} {.status.components.job.state}')" = "$3 Running" ]
}

# host_ip: the first global IPv4 address of this machine
host_ip() { ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}'; }

# forward LISTEN_IP TARGET_PORT: a TCP forwarder LISTEN_IP:<free port> -> 127.0.0.1:TARGET_PORT
# in the background (pid in $WORK/forward.pid, killed by the case); prints the port.
forward() {
  python3 -u - "$1" "$2" >"$WORK/forward.port" 2>"$WORK/forward.log" <<'EOF' &
import socket, sys, threading
lis = socket.socket()
lis.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lis.bind((sys.argv[1], 0))
lis.listen(16)
print(lis.getsockname()[1], flush=True)
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
while True:
    c, _ = lis.accept()
    u = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
EOF
  listener_port forward $!
}

# listener_port NAME PID: records the pid of a background listener in $WORK/NAME.pid, waits (5 s
# at most) for the port it prints into $WORK/NAME.port and prints it
listener_port() {
  echo "$2" >"$WORK/$1.pid"
  local i=0
  while [ ! -s "$WORK/$1.port" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  cat "$WORK/$1.port"
}

# standin_pod NS NAME IP: a never-scheduled Pod whose status says it has IP (the API server's
# service proxy dials only an Endpoints address that a Pod's status.podIPs holds)
standin_pod() {
  kc -n "$1" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata: {name: $2}
spec:
  schedulerName: none-such-scheduler
  containers: [{name: jm, image: none}]
EOF
  kc -n "$1" patch pod "$2" --subresource=status --type=merge \
    -p "{\"status\":{\"podIP\":\"$3\",\"podIPs\":[{\"ip\":\"$3\"}]}}" >/dev/null
}

# proxy_policies DIR: policies/ with a cluster.lua whose JobManager Service has no selector
proxy_policies() {
  cp -r "$ROOT/policies" "$1"
  mv "$1/cluster.lua" "$1/lib/real_cluster.lua"
  cat >"$1/cluster.lua" <<'EOF'
-- The real cluster policy, but the JobManager Service selects nothing: its Endpoints are the
-- test's (tests/integration/proxy.sh).
local real = require("lib.real_cluster")
return {
  desired = function(input)
    local out = real.desired(input)
    for _, o in ipairs(out.objects) do
      if o.kind == "Service" and o.metadata.name:match("%-jobmanager$") then o.spec.selector = nil end
    end
    return out
  end,
}
EOF
}

case_proxy() {
  local ns ip port jid rest_port raw
  ns=$(new_ns proxy)
  ip=$(host_ip)
  rest_port=${FLINK_REST_URL##*:}
  jget() { lua5.4 "$ROOT/tests/env/json.lua" "$@"; }
  t_proxy_setup() {
    [ -n "$ip" ] || { echo "no global IPv4 address on this machine"; return 1; }
    port=$(forward "$ip" "$rest_port")
    [ -n "$port" ] || { echo "forwarder did not start: $(cat "$WORK/forward.log")"; return 1; }
    curl -sf "http://$ip:$port/overview" | grep -q flink-version || { echo "forwarder does not reach Flink"; return 1; }
    # the Endpoints API refuses a loopback address (so the host Flink cannot be named directly)
    raw=$(kc -n "$ns" create -f - 2>&1 <<EOF
apiVersion: v1
kind: Endpoints
metadata: {name: loopback}
subsets: [{addresses: [{ip: 127.0.0.1}], ports: [{name: ui, port: $rest_port}]}]
EOF
    ) && { echo "Endpoints with 127.0.0.1 accepted"; return 1; }
    echo "$raw" | grep -q loopback || { echo "refused, but not for loopback: $raw"; return 1; }
    standin_pod "$ns" pf-jm-standin "$ip" || return 1
  }
  check "proxy: a forwarder on $ip to the host Flink; Endpoints refuse 127.0.0.1; a stand-in Pod with that IP" t_proxy_setup
  [ -n "${port:-}" ] || port=$(cat "$WORK/forward.port" 2>/dev/null)

  local pdir="$WORK/proxy-policies"
  proxy_policies "$pdir"
  jar=$(curl -sf -X POST -F "jarfile=@$TESTENV_FLINK_JOBS_JAR;type=application/x-java-archive" \
    "$FLINK_REST_URL/jars/upload" | jget filename)
  jid=$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"entryClass":"testenv.Ticker","parallelism":1}' \
    "$FLINK_REST_URL/jars/$(basename "$jar")/run" | jget jobid)
  [ -z "$jar" ] || curl -sf -X DELETE "$FLINK_REST_URL/jars/$(basename "$jar")" >/dev/null
  # as the ServiceAccount of deploy/rbac.yaml: its services/proxy grants (get, create, patch,
  # delete) must do
  sa_kubeconfig "$WORK/proxy-sa.kubeconfig"
  FLINK_DIRECT=1 start_controller proxy --kubeconfig "$WORK/proxy-sa.kubeconfig" --namespace "$ns" \
    --flink-access proxy --policy-dir "$pdir"
  sed "s/name: wordcount/name: pf/; s/ui: 8081/ui: $port/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints|" \
    "$ROOT/deploy/examples/wordcount.yaml" | kc -n "$ns" apply -f - >/dev/null
  job() { jp "$ns" flinkcluster/pf "{.status.components.job.$1}"; }
  # endpoints [addresses|notReadyAddresses]: the Service's Endpoints: the stand-in Pod's IP, ready
  # (default) or not
  endpoints() {
    kc -n "$ns" apply -f - >/dev/null 2>&1 <<EOF
apiVersion: v1
kind: Endpoints
metadata: {name: pf-jobmanager}
subsets:
  - ${1:-addresses}: [{ip: "$ip", targetRef: {kind: Pod, namespace: "$ns", name: pf-jm-standin}}]
    ports: [{name: ui, port: $port}]
EOF
  }
  t_proxy_get() {
    [ -n "$jid" ] || { echo "could not submit the Ticker job"; return 1; }
    poll 60 jp "$ns" service/pf-jobmanager '{.metadata.name}' || { echo "no Service pf-jobmanager"; return 1; }
    expect "Service selector (the wrapped policy drops it)" "$(jp "$ns" service/pf-jobmanager '{.spec.selector}')" "" ||
      return 1
    endpoints || return 1
    # before the Endpoints (and, with no client-side rate limit, before the Service) exist the
    # proxy answers 404/503, which the controller logs as an unreachable JobManager: only the
    # lines after this point must have none
    local from
    from=$(wc -l <"$WORK/proxy.log")
    # the path form the controller sends: services/http:<name>:<port number>/proxy/<path>
    raw=$(kc get --raw "/api/v1/namespaces/$ns/services/http:pf-jobmanager:$port/proxy/jobs/overview") ||
      { echo "kubectl get --raw through the proxy: $raw"; return 1; }
    echo "$raw" | grep -q "$jid" || { echo "overview through the proxy without the job: $raw"; return 1; }
    poll 60 job_running "$ns" pf "$jid" || { echo "job: $(job id) $(job state)"; return 1; }
    sleep 12 # one more /jobs/overview poll through the API server: still Running, not Lost
    expect "job state after a poll" "$(job state)" Running || return 1
    grep -q "flink_rest=\"the API server's service proxy\"" "$WORK/proxy.log" || { echo "no route log line"; return 1; }
    ! tail -n +"$((from + 1))" "$WORK/proxy.log" | grep -q "unreachable" ||
      { tail -n +"$((from + 1))" "$WORK/proxy.log" | grep unreachable | tail -3; return 1; }
  }
  check "proxy: the controller's GET /jobs/overview through the real API server's service proxy keeps the job Running" t_proxy_get
  check "proxy: savepointGeneration 1 -> POST /jobs/<id>/savepoints (JSON body) and the poll through the proxy: Succeeded" \
    savepoint_generation "$ns" pf
  # unreachable CODE REGEX: the controller logged an API server error CODE as an unreachable
  # JobManager (the log escapes the quotes of the API server's message)
  unreachable() { grep -q "JobManager unreachable through the API server: HTTP $1: $2" "$WORK/proxy.log"; }
  t_proxy_noep() {
    # Endpoints without a ready address: 503 "no endpoints available"; no Endpoints object at all:
    # 404 naming the Service (kube-apiserver 1.34)
    endpoints notReadyAddresses || return 1
    poll 30 unreachable 503 "no endpoints available for service .*http:pf-jobmanager:$port" ||
      { echo "log: $(grep 'method=GET' "$WORK/proxy.log" | tail -3)"; return 1; }
    kc -n "$ns" delete endpoints pf-jobmanager >/dev/null 2>&1 || return 1
    poll 30 unreachable 404 "services .*pf-jobmanager.* not found" ||
      { echo "log: $(grep 'method=GET' "$WORK/proxy.log" | tail -3)"; return 1; }
    expect "job state while the JobManager is unreachable" "$(job state)" Running || return 1
    ctl_alive proxy || { echo "controller exited"; return 1; }
  }
  check "proxy: Endpoints without a ready address (503) or none (404): the API server's Status is an unreachable JobManager, not a Flink answer" t_proxy_noep
  t_proxy_cancel() {
    endpoints || return 1
    kc -n "$ns" patch flinkcluster pf --type=merge -p '{"spec":{"job":{"cancelRequested":true}}}' >/dev/null || return 1
    stopped() { is_state "$ns" pf Stopped; }
    poll 60 stopped || { echo "state $(state "$ns" pf), job $(job state)"; return 1; }
    expect "Flink job state (stop-with-savepoint)" "$(curl -sf "$FLINK_REST_URL/jobs/$jid" | jget state)" FINISHED || return 1
    expect "job state" "$(job state)" Cancelled || return 1
    if grep -E 'http_code=403|forbidden' "$WORK/proxy.log"; then return 1; fi
  }
  check "proxy: Endpoints back, cancelRequested -> POST /jobs/<id>/stop through the proxy: Flink FINISHED, job Cancelled, cluster Stopped; nothing forbidden to the deploy/ ServiceAccount" t_proxy_cancel
  stop_controller proxy >/dev/null
  curl -s -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null 2>&1
  kill "$(cat "$WORK/forward.pid" 2>/dev/null)" 2>/dev/null
}
