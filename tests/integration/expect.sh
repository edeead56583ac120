# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Issue 8 items 3 and 4 (sourced by tests/integration/run.sh): a pass acts only on what has been
# seen and writes no status the server cannot keep (case `prune`); a hung JobManager holds no
# worker (case `stall`). Uses host_ip, forward's idea and proxy_policies of proxy.sh.

CRD_NAME=flinkclusters.flinkoperator.k8s.io

# status_writes CONTROLLER: how many status patches the controller logged (--log-level debug)
status_writes() { grep -c 'action="patch status" http_code=' "$WORK/$1.log"; }

# The FlinkCluster CRD with a status schema that lacks `components` and keeps no unknown field
# (as a CRD of another version or fork would): the API server prunes what the controller
# writes there. deploy/crd.yaml is applied again at the end.
case_prune() {
  local ns
  ns=$(new_ns prune)
  t_prune() {
    local base=/spec/versions/0/schema/openAPIV3Schema/properties/status w0 w1 r0 r1 i
    # (the root CEL rules go too: the savepointGeneration rule reads status.components)
    kc patch crd "$CRD_NAME" --type json -p "[
      {\"op\": \"remove\", \"path\": \"$base/x-kubernetes-preserve-unknown-fields\"},
      {\"op\": \"remove\", \"path\": \"$base/properties/components\"},
      {\"op\": \"remove\", \"path\": \"/spec/versions/0/schema/openAPIV3Schema/x-kubernetes-validations\"}]" \
      >/dev/null || return 1
    pruned_crd() { [ -z "$(kc get crd "$CRD_NAME" -o "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.components}")" ]; }
    poll 10 pruned_crd || { echo "the CRD still has status.components"; return 1; }
    FC_LOG_LEVEL=debug start_controller prune --namespace "$ns" --metrics-addr 127.0.0.1:0
    session_cluster p1 | kc -n "$ns" apply -f - >/dev/null || return 1
    poll 90 is_state "$ns" p1 Running || { echo "p1: $(state "$ns" p1)"; return 1; }
    expect "status.components as the server kept it" "$(jp "$ns" flinkcluster/p1 '{.status.components}')" "" ||
      return 1
    sleep 5 # the StatefulSets' last status changes
    w0=$(status_writes prune)
    r0=$(metric_sum prune flink_controller_api_requests_total) || { echo "no /metrics"; return 1; }
    # passes with nothing to change: a poke every 5 s (as polls and resyncs would run them)
    for i in $(seq 1 12); do
      kc -n "$ns" annotate --overwrite flinkcluster p1 "example.com/poke=$i" >/dev/null || return 1
      sleep 5
    done
    w1=$(status_writes prune)
    r1=$(metric_sum prune flink_controller_api_requests_total)
    echo "status writes $w0 -> $w1, API writes $r0 -> $r1 over 60 s"
    expect "status writes over a minute of steady state" "$w1" "$w0" || return 1
    expect "API writes over a minute of steady state" "$r1" "$r0"
  }
  check "prune: a CRD whose status schema drops components: Running, then 0 status writes over 60 s of passes" t_prune
  stop_controller prune >/dev/null
  kc apply -f "$ROOT/deploy/crd.yaml" >/dev/null 2>&1
  restored() { [ -n "$(kc get crd "$CRD_NAME" -o "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.components}")" ]; }
  poll 10 restored || echo "# warning: deploy/crd.yaml not restored"
  t_control() {
    local ctl n0 conflicts pdir=$WORK/policies-remove
    # the original's removal of the annotation (cookbook remove-annotation; by default it is kept)
    cp -r "$ROOT/policies" "$pdir" || return 1
    patch -s -p1 -d "$pdir" <"$ROOT/docs/cookbook/remove-annotation.patch" ||
      { echo "could not apply remove-annotation.patch"; return 1; }
    start_controller control --namespace "$ns" --policy-dir "$pdir"
    sed "s/name: wordcount/name: c1/" "$ROOT/deploy/examples/wordcount.yaml" | kc -n "$ns" apply -f - >/dev/null ||
      return 1
    has_state() { [ -n "$(state "$ns" c1)" ]; }
    poll 60 has_state || { echo "c1 has no status"; return 1; }
    sleep 5 # settled: a write of the user that meets a pass in flight is a genuine conflict
    n0=$(wc -l <"$WORK/control.log")
    # no job runs yet: the control finishes (Failed, "job is not running") in the pass that takes it
    kc -n "$ns" annotate --overwrite flinkcluster c1 "$CRD_NAME/user-control=savepoint" >/dev/null || return 1
    gone() { [ -z "$(jp "$ns" flinkcluster/c1 '{.metadata.annotations.flinkclusters\.flinkoperator\.k8s\.io/user-control}')" ]; }
    poll 30 gone || { echo "the user-control annotation stayed"; return 1; }
    ctl=$(jp "$ns" flinkcluster/c1 '{.status.control.name} {.status.control.state}')
    echo "status.control: $ctl"
    expect "status.control" "$ctl" "savepoint Failed" || return 1
    conflicts=$(tail -n +"$((n0 + 1))" "$WORK/control.log" | grep 'status conflict')
    expect "status conflicts after the annotation" "$conflicts" ""
  }
  check "control: with the cookbook's removal, a finished user control goes into the status first, then the annotation is removed: no 409" t_control
  stop_controller control >/dev/null
}

# hung_server IP: a TCP listener on IP:<free port> that accepts and never answers (a hung
# JobManager); writes how many connections are open at once into $WORK/hung.open (a client
# that gives up closes its own) and how many were accepted into $WORK/hung.accepted; prints
# the port.
hung_server() {
  python3 -u - "$1" "$WORK/hung" >"$WORK/hung.port" 2>"$WORK/hung.log" <<'EOF' &
import select, socket, sys
lis = socket.socket()
lis.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lis.bind((sys.argv[1], 0))
lis.listen(64)
print(lis.getsockname()[1], flush=True)
held, accepted = [], 0
def put(name, v):
    with open(sys.argv[2] + "." + name, "w") as f:
        f.write(str(v))
while True:
    ready, _, _ = select.select([lis] + held, [], [])
    for s in ready:
        if s is lis:
            c, _ = lis.accept()
            held.append(c)
            accepted += 1
            put("accepted", accepted)
        elif not s.recv(65536):
            held.remove(s)
            s.close()
    put("open", len(held))
EOF
  listener_port hung $!
}

# small_cluster NAME: a session cluster whose pods ask for 300Mi and 100m (the kwok node has 1Ti,
# 256 CPUs and room for 2,000 pods: tests/env/testdata/node.yaml)
small_cluster() {
  session_cluster "$1" | sed -e 's/1024Mi/300Mi/' -e 's/200m/100m/' -e 's/^  \(jobManager\|taskManager\):$/&\n    memoryOffHeapMin: 100M/'
}

# Two job clusters whose JobManager Service leads (through the API server's service proxy) to a
# listener that never answers, and 50 session clusters: with 2 workers, the Flink polls of the
# hung two hold none, so a cluster created while both calls hang gets its children at once and
# the 50 reach Running.
case_stall() {
  local ns ip port pdir="$WORK/stall-policies"
  ns=$(new_ns stall)
  ip=$(host_ip)
  t_stall_setup() {
    [ -n "$ip" ] || { echo "no global IPv4 address on this machine"; return 1; }
    # a lean cluster for the measurement: the namespaces of the cases before go first
    local others
    others=$(grep -vx "$ns" "$WORK/namespaces" | sort -u)
    # shellcheck disable=SC2086
    [ -z "$others" ] || kc delete namespace $others --timeout=120s >/dev/null 2>&1
    port=$(hung_server "$ip")
    [ -n "$port" ] || { echo "hung server did not start: $(cat "$WORK/hung.log")"; return 1; }
    standin_pod "$ns" hung-jm-standin "$ip" || return 1
    proxy_policies "$pdir"
    FLINK_DIRECT=1 start_controller stall --namespace "$ns" --flink-access proxy --policy-dir "$pdir" \
      --workers 2 --qps 100 --burst 200
    local h
    for h in h1 h2; do
      sed "s/name: wordcount/name: $h/; s/ui: 8081/ui: $port/" "$ROOT/deploy/examples/wordcount.yaml" |
        kc -n "$ns" apply -f - >/dev/null || return 1
      kc -n "$ns" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Endpoints
metadata: {name: $h-jobmanager}
subsets:
  - addresses: [{ip: "$ip", targetRef: {kind: Pod, namespace: "$ns", name: hung-jm-standin}}]
    ports: [{name: ui, port: $port}]
EOF
    done
    # both clusters' calls in flight at once (each cluster has at most one)
    hanging() { [ "$(cat "$WORK/hung.open" 2>/dev/null || echo 0)" -ge 2 ]; }
    poll 90 hanging || { echo "the hung JobManagers were not called: $(grep 'method=GET' "$WORK/stall.log" | tail -3)"; return 1; }
  }
  check "stall: two job clusters whose /jobs/overview hangs (a listener on $ip that never answers)" t_stall_setup
  t_stall_other() {
    local t0 took
    t0=$(date +%s%N)
    small_cluster s0 | kc -n "$ns" apply -f - >/dev/null || return 1
    poll 5 jp "$ns" configmap/s0-configmap '{.metadata.name}' || { echo "s0 got no ConfigMap while the calls hang"; return 1; }
    took=$((($(date +%s%N) - t0) / 1000000))
    echo "s0's ConfigMap after $took ms (a hung call would hold a worker for 10 s)"
  }
  check "stall: while both Flink calls hang, a new cluster's pass runs (--workers 2)" t_stall_other
  t_stall_50() {
    local i running
    for i in $(seq 1 50); do small_cluster "s$i"; echo ---; done | kc -n "$ns" apply -f - >/dev/null || return 1
    all_running() {
      running=$(kc -n "$ns" get flinkclusters -o jsonpath='{range .items[*]}{.metadata.name}={.status.state}{"\n"}{end}' |
        grep -c '^s[0-9]*=Running$')
      [ "$running" -ge 51 ]
    }
    poll 240 all_running || { echo "Running: $running of 51"; return 1; }
    echo "51 session clusters Running; hung calls accepted: $(cat "$WORK/hung.accepted")"
    # the hung clusters go on being polled, one call at a time each: a call gives up after its
    # timeout (10 s), the next poll follows (the 51 may be Running before the first timeout)
    repolled() { [ "$(cat "$WORK/hung.accepted")" -ge 4 ]; }
    poll 40 repolled || { echo "the hung JobManagers were not polled again: $(cat "$WORK/hung.accepted") calls"; return 1; }
  }
  check "stall: 50 more session clusters reach Running while the two JobManagers hang" t_stall_50
  stop_controller stall >/dev/null
  kill "$(cat "$WORK/hung.pid")" 2>/dev/null
  # its ~100 pods would slow the cases after it
  kc delete namespace "$ns" --timeout=180s >/dev/null 2>&1
}

# Issue 8 item 7: the leader that loses its Lease (another holder written into it while 20
# clusters are being created) writes nothing after it saw the loss, and exits 1.
case_fence() {
  local ns
  ns=$(new_ns fence)
  t_fence() {
    local now after rc i
    FC_LOG_LEVEL=debug start_controller fence --namespace "$ns" --leader-elect --leader-election-namespace "$ns"
    poll 30 grep -q ' leading identity=' "$WORK/fence.log" || { echo "never led"; return 1; }
    for i in $(seq 1 20); do small_cluster "f$i"; echo ---; done | kc -n "$ns" apply -f - >/dev/null || return 1
    poll 30 grep -q 'action="apply [^"]*" http_code=2' "$WORK/fence.log" || { echo "no write"; return 1; }
    now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
    kc -n "$ns" patch lease flink-controller --type merge \
      -p "{\"spec\":{\"holderIdentity\":\"another-replica\",\"renewTime\":\"$now\",\"leaseDurationSeconds\":60}}" \
      >/dev/null || return 1
    poll 20 grep -q 'leader election stopped' "$WORK/fence.log" || { echo "the loss was not seen"; return 1; }
    # it stops by itself (no signal: a signal would cut short what it still writes)
    poll 15 test -f "$WORK/fence.rc" || { echo "still running 15 s after the loss"; return 1; }
    rc=$(stop_controller fence)
    # every write logs action="<what>" http_code=<code> at debug; none may follow the loss
    after=$(sed -n '/leader election stopped/,$p' "$WORK/fence.log" |
      grep -E 'action="(apply|delete|patch status|patch annotation|create event|count event)[^"]*" http_code=[0-9]+' | head -3)
    echo "exit $rc; writes after the loss: ${after:-none}"
    expect "exit status after the loss" "$rc" 1 || return 1
    expect "writes after the loss" "$after" ""
  }
  check "fence: a leader whose Lease another replica took writes nothing after it saw the loss" t_fence
  kc delete namespace "$ns" --timeout=180s >/dev/null 2>&1
}
