# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# Issue 14 item 3 (sourced by tests/integration/run.sh, case `faults`): the controller talks to
# the API server and to the JobManagers through fault_proxy.py, which injects, one phase at a
# time, each fault bounded in count and time: dropped, half-closed and 410 watch streams, 429 with
# Retry-After, 500/503, 409 on writes, added latency, and a JobManager answering invalid JSON or
# hanging. Under each phase a change to all 50 session clusters converges (every child there,
# Running, observedGeneration == generation), the controller process is the same, and no cluster
# keeps an error once the faults stopped; lost, duplicate and orphaned objects are counted (0).
# Uses small_cluster (expect.sh), job_cluster/running_with (gate.sh), submit_ticker (cases.sh).

FAULT_N=50

# fault_url PROXY: the control endpoint's base of the proxy (api: TLS, jm: plain HTTP)
fault_url() { echo "$([ "$1" = api ] && echo https || echo http)://127.0.0.1:$(cat "$WORK/fp-$1.port")/_fault"; }
# fault_rules PROXY JSON: adds rules to the proxy (api or jm) through its control endpoint
fault_rules() {
  curl -sfk -X POST "$(fault_url "$1")/rules" -d "$2" | grep -q '"ids"' ||
    { echo "the $1 proxy refused the rules: $2"; return 1; }
}
# fault_stats PROXY EXPR: a field of the proxy's /_fault/stats (a Python expression over `s`)
fault_stats() {
  curl -sfk "$(fault_url "$1")/stats" | python3 -c 'import json, sys; s = json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}
# injected PROXY FAULT: how many times the proxy injected FAULT
injected() { fault_stats "$1" "s['injected'].get('$2', 0)"; }
# fault_note TEXT: a line for the TAP comments printed after the check (checks run in a subshell
# and show their output only when they fail; the counts are wanted either way)
fault_note() { echo "$*" >>"$WORK/faults.notes"; }
fault_notes() { [ -f "$WORK/faults.notes" ] && sed 's/^/# /' "$WORK/faults.notes" && rm -f "$WORK/faults.notes"; }
# fault_cut: closes every watch the api proxy relays (the next ones meet its rules); prints how many
fault_cut() { curl -sfk -X POST "$(fault_url api)/cut" | python3 -c 'import json, sys; print(json.load(sys.stdin)["cut"])'; }

# fault_census NS: prints "lost L duplicate D orphaned O" for the FAULT_N session clusters f1..fN
# of NS and the job clusters j*: lost = an expected child (ConfigMap, JobManager and TaskManager
# StatefulSets, JobManager Service) missing; duplicate = more objects of a kind labelled for the
# cluster than it should have (of these kinds, and submitter Jobs: one for a job cluster, none for
# a session cluster); orphaned = an object labelled for a cluster whose controller owner
# is not that live FlinkCluster
fault_census() {
  kc -n "$1" get flinkclusters,configmaps,statefulsets,services,jobs -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
uid = {o["metadata"]["name"]: o["metadata"]["uid"] for o in items if o["kind"] == "FlinkCluster"}
want = {"ConfigMap": ["%s-configmap"], "StatefulSet": ["%s-jobmanager", "%s-taskmanager"],
        "Service": ["%s-jobmanager"]}
have, lost, dup, orphan = {}, [], [], []
for o in items:
    m = o["metadata"]
    c = (m.get("labels") or {}).get("cluster")
    if o["kind"] == "FlinkCluster" or c is None:
        continue
    have.setdefault((o["kind"], c), []).append(m["name"])
    owner = [r["uid"] for r in m.get("ownerReferences", []) if r.get("controller")]
    if owner != [uid.get(c)]:
        orphan.append("%s/%s" % (o["kind"], m["name"]))
for c in uid:
    for kind, names in want.items():
        got = have.get((kind, c), [])
        lost += ["%s/%s" % (kind, n % c) for n in names if n % c not in got]
        if len(got) > len(names):
            dup += ["%s/%s" % (kind, n) for n in got]
    jobs = have.get(("Job", c), [])
    if len(jobs) > (1 if c.startswith("j") else 0):  # a job cluster has one submitter Job
        dup += ["Job/%s" % n for n in jobs]
print("lost %d duplicate %d orphaned %d" % (len(lost), len(dup), len(orphan)))
for what, l in (("lost", lost), ("duplicate", dup), ("orphaned", orphan)):
    if l:
        print("  %s: %s" % (what, " ".join(sorted(l)[:8])))
'
}

# fault_converged NS REPLICAS: every cluster Running with observedGeneration == generation, Ready
# (and JobRunning) True, no other condition True (PolicyError, TaskManagersStopped), and each
# f-cluster's TaskManager StatefulSet at REPLICAS; prints what is not
fault_converged() {
  local bad
  bad=$(kc -n "$1" get flinkclusters,statefulsets -o json | python3 -c '
import json, sys
want = sys.argv[1]
items = json.load(sys.stdin)["items"]
sts = {o["metadata"]["name"]: o for o in items if o["kind"] == "StatefulSet"}
bad = []
for o in items:
    if o["kind"] != "FlinkCluster":
        continue
    n, st = o["metadata"]["name"], o.get("status") or {}
    why = []
    if st.get("state") != "Running":
        why.append("state %s" % st.get("state"))
    if st.get("observedGeneration") != o["metadata"]["generation"]:
        why.append("observedGeneration %s of %s" % (st.get("observedGeneration"), o["metadata"]["generation"]))
    for c in st.get("conditions", []):
        # Ready and JobRunning say True when all is well; PolicyError, TaskManagersStopped ... False
        if (c["type"] in ("Ready", "JobRunning")) != (c["status"] == "True"):
            why.append("%s=%s %s: %s" % (c["type"], c["status"], c.get("reason"), c.get("message", "")[:120]))
    tm = sts.get(n + "-taskmanager")
    if n.startswith("f") and (not tm or str(tm["spec"]["replicas"]) != want):
        why.append("taskmanager replicas %s" % (tm and tm["spec"]["replicas"]))
    if why:
        bad.append("%s: %s" % (n, "; ".join(why)))
print("\n".join(bad))
' "$2")
  [ -z "$bad" ] || { echo "$bad" | head -5; echo "($(echo "$bad" | wc -l) not converged)"; return 1; }
}

# fault_phase NAME REPLICAS SECONDS: patches the TaskManager replicas of all f-clusters to REPLICAS
# (a write to each cluster's StatefulSet and status under the faults), then polls SECONDS for
# convergence; prints the time it took
fault_phase() {
  local ns=$FAULT_NS t0 i
  t0=$SECONDS
  for i in $(seq 1 "$FAULT_N"); do
    kc -n "$ns" patch flinkcluster "f$i" --type merge -p "{\"spec\":{\"taskManager\":{\"replicas\":$2}}}" >/dev/null ||
      return 1
  done
  poll "$3" fault_converged "$ns" "$2" || { fault_converged "$ns" "$2"; return 1; }
  fault_note "$1: converged $((SECONDS - t0)) s after the patches"
}

# fault_clean: the controller process is the one started, and the census is all zero
fault_clean() {
  local got
  expect "controller pid" "$(ctl_pid faults)" "$FAULT_PID" || return 1
  ctl_alive faults || { echo "controller exited: $(tail -3 "$WORK/faults.log")"; return 1; }
  got=$(fault_census "$FAULT_NS")
  fault_note "$got"
  expect "census" "$(echo "$got" | head -1)" "lost 0 duplicate 0 orphaned 0"
}

case_faults() {
  local ns pki=$TESTENV_DIR/pki cluster jid
  ns=$(new_ns faults)
  FAULT_NS=$ns
  # the controller starts, and the clusters are created, under dropped watches (some cut in the
  # middle of an event) and 410s: each watch of the controller is cut after one event, answered
  # 410, or ended by an ERROR 410 event, for 60 s at most (rules given on the command line, so
  # that the first watches meet them)
  python3 -u "$HERE/fault_proxy.py" api "${KUBE_APISERVER_URL#https://}" "$pki/ca.crt" "$pki/admin.crt" \
    "$pki/admin.key" --tls "$pki/apiserver.crt" "$pki/apiserver.key" --log "$WORK/fp-api.log" \
    --rule '{"fault": "drop", "match": {"watch": true}, "count": 30, "seconds": 60, "after_events": 1}' \
    --rule '{"fault": "drop", "match": {"watch": true}, "count": 10, "seconds": 60, "after_events": 2, "partial": true}' \
    --rule '{"fault": "gone_event", "match": {"watch": true}, "count": 10, "seconds": 60, "after_events": 2}' \
    --rule '{"fault": "gone", "match": {"watch": true, "target": "resourceVersion="}, "count": 10, "seconds": 60}' \
    >"$WORK/fp-api.port" 2>"$WORK/fp-api.err" &
  listener_port fp-api $! >/dev/null
  python3 -u "$HERE/fault_proxy.py" jm "${FLINK_REST_URL#http://}" --log "$WORK/fp-jm.log" \
    >"$WORK/fp-jm.port" 2>"$WORK/fp-jm.err" &
  listener_port fp-jm $! >/dev/null
  # (listener_port waits 5 s; Python's start on a busy machine may take longer)
  ports_seen() { [ -s "$WORK/fp-api.port" ] && [ -s "$WORK/fp-jm.port" ]; }
  poll 20 ports_seen
  cp "$KUBECONFIG" "$WORK/fp.kubeconfig"
  cluster=$("$TESTENV_KUBECTL" --kubeconfig "$WORK/fp.kubeconfig" config view -o jsonpath='{.clusters[0].name}')
  "$TESTENV_KUBECTL" --kubeconfig "$WORK/fp.kubeconfig" config set-cluster "$cluster" \
    --server "https://127.0.0.1:$(cat "$WORK/fp-api.port")" >/dev/null
  jid=$(submit_ticker)
  FLINK_REST_URL="http://127.0.0.1:$(cat "$WORK/fp-jm.port")" \
    start_controller faults --kubeconfig "$WORK/fp.kubeconfig" --namespace "$ns" --metrics-addr 127.0.0.1:0
  FAULT_PID=$(ctl_pid faults)

  t_faults_up() {
    local i
    [ -s "$WORK/fp-api.port" ] && [ -s "$WORK/fp-jm.port" ] ||
      { echo "a proxy did not start: $(cat "$WORK"/fp-*.err)"; return 1; }
    [ -n "$jid" ] || { echo "could not submit the Ticker job"; return 1; }
    for i in $(seq 1 "$FAULT_N"); do small_cluster "f$i"; echo ---; done | kc -n "$ns" apply -f - >/dev/null || return 1
    for i in 1 2; do job_cluster "j$i" | kc -n "$ns" apply -f - >/dev/null || return 1; done
    for i in 1 2; do running_with "$ns" "j$i" "$jid" || return 1; done
    poll 180 fault_converged "$ns" 1 || { fault_converged "$ns" 1; return 1; }
    fault_note "injected: drop $(injected api drop) ($(grep '"event": "inject"' "$WORK/fp-api.log" | grep -c '"partial": true') in an event), gone_event $(injected api gone_event), gone $(injected api gone)"
    [ "$(injected api drop)" -ge 10 ] && [ "$(injected api gone_event)" -ge 1 ] && [ "$(injected api gone)" -ge 1 ] ||
      { echo "the watch faults were not all injected"; return 1; }
    fault_clean
  }
  check "faults: 50 session and 2 job clusters created while watches are dropped, 410'd and ERROR-410'd: all converge, none lost, duplicated or orphaned" \
    t_faults_up
  fault_notes
  t_faults_429() {
    # 429 with Retry-After 2 s on the controller's next 40 writes, for 30 s at most; and its
    # watches cut, answered 410 when they resume, and the relists answered 429 with Retry-After 1 s
    fault_rules api '[{"fault": "status", "code": 429, "retry_after": 2, "match": {"method": "PATCH|POST|DELETE"}, "count": 40, "seconds": 30},
      {"fault": "gone", "match": {"watch": true, "target": "resourceVersion="}, "count": 8, "seconds": 30},
      {"fault": "status", "code": 429, "retry_after": 1, "match": {"method": "GET", "watch": false, "target": "limit="}, "count": 8, "seconds": 30}]' ||
      return 1
    fault_cut >/dev/null || return 1
    fault_phase 429 2 120 || return 1
    local early honoured lists
    early=$(fault_stats api "len(s['early'])") honoured=$(fault_stats api "s['honoured']")
    lists=$(grep '"event": "inject"' "$WORK/fp-api.log" | grep '"code": 429' | grep -c 'limit=')
    fault_note "injected 429: $(injected api status) ($lists to relists); came back after the Retry-After: $honoured, earlier: $early"
    [ "$(injected api status)" -ge 20 ] && [ "$lists" -ge 1 ] || { echo "fewer than 20 429s injected, or none to a list"; return 1; }
    [ "$honoured" -ge 20 ] || { echo "fewer than 20 requests came back after a Retry-After"; return 1; }
    expect "requests back before their Retry-After" "$early" 0 || { fault_stats api "s['early'][:3]"; return 1; }
    fault_clean
  }
  check "faults: 429 with Retry-After on 40 writes and lists: no request back before its Retry-After, all converge" t_faults_429
  fault_notes
  t_faults_5xx() {
    local before
    before=$(injected api status)
    fault_rules api '[{"fault": "status", "code": 500, "match": {"method": "PATCH"}, "count": 25, "seconds": 30},
      {"fault": "status", "code": 503, "match": {"method": "PATCH|POST|GET"}, "count": 25, "seconds": 30},
      {"fault": "status", "code": 409, "match": {"method": "PATCH", "target": "fieldManager"}, "count": 25, "seconds": 30},
      {"fault": "latency", "delay": 1, "count": 150, "seconds": 30}]' || return 1
    fault_phase 5xx 1 150 || return 1
    fault_note "injected 500/503/409: $(($(injected api status) - before)), latency: $(injected api latency)"
    [ "$(($(injected api status) - before))" -ge 30 ] && [ "$(injected api latency)" -ge 50 ] ||
      { echo "the faults were not all injected"; return 1; }
    fault_clean
  }
  check "faults: 500, 503 and 409 answers to writes and 1 s added latency: all converge, no error left in status" t_faults_5xx
  fault_notes
  t_faults_halfclose() {
    # every watch is cut, and the next one of each kind goes silent with its socket open (for
    # 150 s at most), and then all clusters are changed: they converge only once the controller
    # noticed the silence itself (KUBE_WATCH_IDLE_S, 90 s) and watched again; meanwhile the
    # JobManager answers invalid JSON, then hangs
    local kinds t0 i gave_up took
    fault_rules api '[{"fault": "halfclose", "match": {"watch": true}, "count": 16, "seconds": 40, "hold": 150}]' || return 1
    fault_rules jm '[{"fault": "garbage", "count": 4, "seconds": 120}, {"fault": "hang", "count": 2, "seconds": 120, "hold": 40}]' ||
      return 1
    kinds=$(fault_cut)
    t0=$SECONDS
    sleep 5 # the watches back, silent
    fault_phase halfclose 2 200 || return 1
    halfclosed() { [ "$(grep -c '"event": "inject", "fault": "halfclose"' "$WORK/fp-api.log")" -ge "$kinds" ]; }
    poll 150 halfclosed || { echo "$kinds watches cut, $(injected api halfclose) half-closed ones ended"; return 1; }
    gave_up=$(grep '"event": "inject", "fault": "halfclose"' "$WORK/fp-api.log" | grep -vc '"client_gave_up_after_s": null')
    took=$(grep '"event": "inject", "fault": "halfclose"' "$WORK/fp-api.log" |
      python3 -c 'import json, sys; print(max([json.loads(l)["client_gave_up_after_s"] or 0 for l in sys.stdin] or [0]))')
    fault_note "$kinds watches cut; half-closed: $(injected api halfclose), given up by the controller: $gave_up (the last $took s after the answer's head)"
    expect "half-closed watches the controller gave up on" "$gave_up" "$(injected api halfclose)" || return 1
    jm_faulted() { [ "$(injected jm hang)" -ge 2 ]; }
    poll 90 jm_faulted || { echo "JobManager faults injected: $(fault_stats jm "s['injected']")"; return 1; }
    fault_note "JobManager: $(injected jm garbage) invalid JSON answers, $(injected jm hang) hung calls ($((SECONDS - t0)) s)"
    for i in 1 2; do running_with "$ns" "j$i" "$jid" || return 1; done
    fault_clean
  }
  check "faults: half-closed watches (the controller gives up on each), a JobManager answering invalid JSON or hanging: all converge, the jobs stay Running" \
    t_faults_halfclose
  fault_notes
  stop_controller faults >/dev/null
  kill "$(cat "$WORK/fp-api.pid")" "$(cat "$WORK/fp-jm.pid")" 2>/dev/null
  curl -s -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null 2>&1
  kc delete namespace "$ns" --wait=false >/dev/null 2>&1
}
