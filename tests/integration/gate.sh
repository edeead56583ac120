# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Issue 8 items 5, 6 and 8 (sourced by tests/integration/run.sh): a bad edit holds changes, not
# supervision (case `held`); an update the API server refuses in a dry run does not start
# (`refused`); a policy that returns a kind the controller does not manage is marked, the rest
# converges (`undeclared`); 100 clusters at steady state write nothing for a minute
# (`steady100`); a pass does not act on a cache that lags behind the controller's own writes
# (`stale`). Uses submit_ticker, job_running, small_cluster and metric_sum of the other files.

# job_cluster NAME: deploy/examples/wordcount.yaml named NAME, savepoints in the test
# environment's directory (the host Flink writes there)
job_cluster() {
  sed "s/name: wordcount/name: $1/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints|" \
    "$ROOT/deploy/examples/wordcount.yaml"
}

# flink_state JID: the host Flink's state of job JID
flink_state() { curl -sf "$FLINK_REST_URL/jobs/$1" | lua5.4 "$ROOT/tests/env/json.lua" state; }

# running_with NS NAME JID: for check: the cluster Running with the host Flink's job JID
running_with() {
  poll 90 is_state "$1" "$2" Running || { echo "state: $(state "$1" "$2")"; return 1; }
  poll 30 job_running "$1" "$2" "$3" || { echo "job: $(jp "$1" "flinkcluster/$2" '{.status.components.job}')"; return 1; }
}

# ready_held NS NAME REASON PATTERN: within 30 s condition Ready=False with REASON, its message
# (printed) matching the shell PATTERN (a case pattern, quoted parts as in `case`), and a Warning
# Event with that reason
ready_held() {
  marked() { [ "$(condition "$1" "$2" Ready)" = "False $3" ]; }
  poll 30 marked "$@" || { echo "Ready: $(condition "$1" "$2" Ready)"; return 1; }
  local msg
  msg=$(jp "$1" "flinkcluster/$2" '{.status.conditions[?(@.type=="Ready")].message}')
  echo "$msg"
  eval "case \$msg in $4) ;; *) echo 'the message does not match: $4'; return 1 ;; esac" || return 1
  poll 10 has_event "$1" "$2" "$3" || { echo "no $3 event"; return 1; }
}

# ticker_case CASE CLUSTER: the start of a case with a running job: namespace `ns` (the caller's
# local) for CASE, the host Flink's Ticker job `jid` (the caller's local), controller CASE, the
# job cluster CLUSTER applied; checks that it is Running with that job.
ticker_case() {
  ns=$(new_ns "$1")
  jid=$(submit_ticker)
  start_controller "$1" --namespace "$ns"
  job_cluster "$2" | kc -n "$ns" apply -f - >/dev/null
  t_ticker_up() { [ -n "$jid" ] || { echo "could not submit the Ticker job"; return 1; }; running_with "$ns" "$1" "$jid"; }
  check "$1: the job cluster Running with the Ticker job" t_ticker_up "$2"
}

# An invalid edit of a job cluster whose job runs: Ready=False InvalidSpec saying changes are
# held, Stalled=True and status.observedGeneration = the edit's generation (seen, and refused:
# kstatus reports Failed, not InProgress); the job is still polled: cancelled in Flink behind the
# controller's back, the status says Cancelled (before, polling stopped with the bad edit).
case_held() {
  local ns jid
  ticker_case held held
  t_held_invalid() {
    # memoryOffHeapMin 2Gi over the 1024Mi limit: valid for the CRD (its CEL rules cannot state
    # it), not for validate.lua (the webhook's rule; no webhook here)
    spec_patch "$ns" held '{"jobManager":{"memoryOffHeapMin":"2Gi"}}' || return 1
    ready_held "$ns" held InvalidSpec \
      '*spec.jobManager.memoryOffHeapMin*"changes held: the last valid spec (revision held-"*") keeps running"' || return 1
    expect "Stalled" "$(condition "$ns" held Stalled)" "True InvalidSpec" || return 1
    expect "status.observedGeneration (the edit's: seen, and refused)" \
      "$(jp "$ns" flinkcluster/held '{.status.observedGeneration}')" "$(jp "$ns" flinkcluster/held '{.metadata.generation}')"
  }
  check "held: an invalid edit: Ready=False InvalidSpec names the field and the revision that keeps running, Stalled=True" \
    t_held_invalid
  t_held_polls() {
    curl -sf -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null || { echo "cannot cancel in Flink"; return 1; }
    seen() { [ "$(jp "$ns" flinkcluster/held '{.status.components.job.state}')" = Cancelled ]; }
    poll 40 seen || { echo "job state: $(jp "$ns" flinkcluster/held '{.status.components.job}')"; return 1; }
    expect "Ready reason (the edit is still held)" "$(condition "$ns" held Ready)" "False InvalidSpec"
  }
  check "held: supervision goes on: the job cancelled in Flink shows as Cancelled while the edit is held" t_held_polls
  stop_controller held >/dev/null
}

# A job cluster whose update the API server refuses (TaskManager cpu request above its limit:
# HTTP 422 for the StatefulSet): no savepoint, no stop, the Flink job and the StatefulSet stay,
# Ready=False UpdateRefused with the server's message and a Warning; a valid edit then updates.
case_refused() {
  local ns jid
  ticker_case refused refd
  t_refused() {
    local uid cur sp
    uid=$(jp "$ns" statefulset/refd-taskmanager '{.metadata.uid}')
    cur=$(jp "$ns" flinkcluster/refd '{.status.currentRevision}')
    sp=$(jp "$ns" flinkcluster/refd '{.status.savepoint.triggerReason}')
    spec_patch "$ns" refd '{"taskManager":{"resources":{"requests":{"cpu":"2"}}}}' || return 1
    ready_held "$ns" refd UpdateRefused \
      '*"refused by the API server: StatefulSet refd-taskmanager: HTTP 422: "*"must be less than or equal to cpu limit"*' ||
      return 1
    sleep 5
    expect "Flink job state" "$(flink_state "$jid")" RUNNING || return 1
    expect "TaskManager StatefulSet uid" "$(jp "$ns" statefulset/refd-taskmanager '{.metadata.uid}')" "$uid" || return 1
    expect "currentRevision" "$(jp "$ns" flinkcluster/refd '{.status.currentRevision}')" "$cur" || return 1
    expect "savepoint trigger reason" "$(jp "$ns" flinkcluster/refd '{.status.savepoint.triggerReason}')" "$sp" || return 1
    expect "job state" "$(jp "$ns" flinkcluster/refd '{.status.components.job.state}')" Running
  }
  check "refused: a 422 on the TaskManager StatefulSet (dry run) stops the update: no savepoint or stop, Ready=False UpdateRefused with the server's message" \
    t_refused
  t_refused_fixed() {
    spec_patch "$ns" refd '{"taskManager":{"resources":{"requests":{"cpu":"100m"}}}}' || return 1
    sp_update() {
      [ "$(jp "$ns" flinkcluster/refd '{.status.savepoint.triggerReason} {.status.savepoint.state}')" = "update Succeeded" ]
    }
    poll 60 sp_update || { echo "savepoint: $(jp "$ns" flinkcluster/refd '{.status.savepoint}')"; return 1; }
    poll 30 eval '[ "$(flink_state "$jid")" = FINISHED ]' || { echo "Flink job: $(flink_state "$jid")"; return 1; }
    [ "$(condition "$ns" refd Ready)" != "False UpdateRefused" ] || { echo "still UpdateRefused"; return 1; }
  }
  check "refused: a valid edit then goes through the update (stop with savepoint, Flink FINISHED)" t_refused_fixed
  stop_controller refused >/dev/null
}

# A policy that adds a PodDisruptionBudget (not in lua/fc/kinds.lua): the cluster converges
# without it, PolicyError=True reason UndeclaredKind names the object, a Warning says so.
case_undeclared() {
  local ns pdir
  ns=$(new_ns undeclared)
  pdir=$(edited_policies pdb "s/^  return { objects = objects, jobmanager = jobmanager[,}].*$/  objects[#objects + 1] = { apiVersion = 'policy\/v1', kind = 'PodDisruptionBudget',\n    metadata = { name = c.metadata.name .. '-pdb' }, spec = { maxUnavailable = 1 } }\n&/" \
    PodDisruptionBudget) || { patch_failed undeclared; return 0; }
  start_controller undeclared --namespace "$ns" --policy-dir "$pdir"
  small_cluster pdb | kc -n "$ns" apply -f - >/dev/null
  t_undeclared() {
    poll 90 is_state "$ns" pdb Running || { echo "state: $(state "$ns" pdb)"; return 1; }
    expect "PolicyError" "$(condition "$ns" pdb PolicyError)" "True UndeclaredKind" || return 1
    jp "$ns" flinkcluster/pdb '{.status.conditions[?(@.type=="PolicyError")].message}' |
      grep -qF 'objects[4] (policy/v1 PodDisruptionBudget pdb-pdb): kind not declared in lua/fc/kinds.lua' ||
      { echo "message: $(jp "$ns" flinkcluster/pdb '{.status.conditions[?(@.type=="PolicyError")].message}')"; return 1; }
    poll 10 has_event "$ns" pdb PolicyError || { echo "no PolicyError event"; return 1; }
    expect "PodDisruptionBudgets" "$(kc -n "$ns" get poddisruptionbudgets -o name | wc -l)" 0 || return 1
    expect "failed passes in the log" "$(grep -c 'reconcile failed' "$WORK/undeclared.log")" 0
  }
  check "undeclared: a PodDisruptionBudget from a policy is left out (PolicyError=True UndeclaredKind, event), the cluster runs" \
    t_undeclared
  stop_controller undeclared >/dev/null
}

# 100 session clusters converge; then a minute with nothing changed, one pass per cluster forced
# halfway through (each FlinkCluster annotated, as a resync would run them): no API write.
case_steady100() {
  local ns i
  ns=$(new_ns steady100)
  start_controller steady100 --namespace "$ns" --metrics-addr 127.0.0.1:0 --health-addr 127.0.0.1:0
  for i in $(seq 1 100); do small_cluster "s$i"; echo "---"; done | kc -n "$ns" apply -f - >/dev/null
  t_steady100() {
    all_running() { [ "$(kc -n "$ns" get flinkclusters -o jsonpath='{range .items[*]}{.status.state}{"\n"}{end}' | grep -c '^Running$')" = 100 ]; }
    poll 300 all_running || { echo "Running: $(kc -n "$ns" get flinkclusters -o jsonpath='{range .items[*]}{.status.state}{"\n"}{end}' | sort | uniq -c | tr '\n' ' ')"; return 1; }
    local w0 w1 r0 r1
    w0=$(quiet steady100 10 120) || { echo "$w0"; return 1; }
    r0=$(metric_sum steady100 flink_controller_reconcile_total)
    sleep 30
    kc -n "$ns" annotate --overwrite flinkclusters --all example.com/poke=1 >/dev/null || return 1
    sleep 30
    w1=$(metric_sum steady100 flink_controller_api_requests_total)
    r1=$(metric_sum steady100 flink_controller_reconcile_total)
    echo "passes $r0 -> $r1, API requests $w0 -> $w1 over 60 s"
    [ "$r1" -ge $((r0 + 100)) ] || { echo "the pokes did not run a pass per cluster"; return 1; }
    expect "API writes over the minute" "$w1" "$w0"
  }
  check "steady100: 100 converged clusters, a minute with a pass each: 0 API writes (/metrics)" t_steady100
  stop_controller steady100 >/dev/null
  kc delete namespace "$ns" --wait=false >/dev/null 2>&1
}

# Every watch lags 3 s behind the API server (watch_lag_proxy.py between the controller and it),
# so each write's answer comes seconds before the watch shows it. A job cluster is brought up and
# a savepoint taken by user control: passes wait for their own writes (logged), the submitter Job
# is applied once and never deleted, the savepoint triggered once, no 409.
case_stale() {
  local ns jid port cluster
  ns=$(new_ns stale)
  jid=$(submit_ticker)
  python3 -u "$HERE/watch_lag_proxy.py" 3 "${KUBE_APISERVER_URL#https://}" "$TESTENV_DIR/pki/ca.crt" \
    "$TESTENV_DIR/pki/admin.crt" "$TESTENV_DIR/pki/admin.key" \
    "$TESTENV_DIR/pki/apiserver.crt" "$TESTENV_DIR/pki/apiserver.key" >"$WORK/lag.port" 2>"$WORK/lag.log" &
  echo $! >"$WORK/lag.pid"
  port_seen() { [ -s "$WORK/lag.port" ]; }
  poll 10 port_seen
  port=$(cat "$WORK/lag.port")
  cp "$KUBECONFIG" "$WORK/lag.kubeconfig"
  cluster=$("$TESTENV_KUBECTL" --kubeconfig "$WORK/lag.kubeconfig" config view -o jsonpath='{.clusters[0].name}')
  "$TESTENV_KUBECTL" --kubeconfig "$WORK/lag.kubeconfig" config set-cluster "$cluster" \
    --server "https://127.0.0.1:$port" >/dev/null
  FC_LOG_LEVEL=debug start_controller stale --kubeconfig "$WORK/lag.kubeconfig" --namespace "$ns"
  job_cluster stale | kc -n "$ns" apply -f - >/dev/null
  t_stale() {
    [ -n "$port" ] || { echo "the proxy did not start: $(cat "$WORK/lag.log")"; return 1; }
    [ -n "$jid" ] || { echo "could not submit the Ticker job"; return 1; }
    running_with "$ns" stale "$jid" || return 1
    kc -n "$ns" annotate flinkcluster stale flinkclusters.flinkoperator.k8s.io/user-control=savepoint >/dev/null ||
      return 1
    sp_done() { [ "$(jp "$ns" flinkcluster/stale '{.status.savepoint.state}')" = Succeeded ]; }
    poll 60 sp_done || { echo "savepoint: $(jp "$ns" flinkcluster/stale '{.status.savepoint}')"; return 1; }
    # the annotation stays, acknowledged: passes that still see it (late) take no second savepoint
    acked() { [ "$(jp "$ns" flinkcluster/stale '{.status.control.state} {.status.control.acknowledged}')" = "Succeeded true" ]; }
    poll 30 acked || { echo "control: $(jp "$ns" flinkcluster/stale '{.status.control}')"; return 1; }
    sleep 5
    local log=$WORK/stale.log
    echo "passes that waited for their own writes: $(grep -c 'waiting for own writes in the cache' "$log")"
    [ "$(grep -c 'waiting for own writes in the cache' "$log")" -ge 1 ] || { echo "no pass waited: the lag did not bite"; return 1; }
    expect "applies of the submitter Job" "$(grep -c 'action="apply Job stale-job-submitter" http_code=2' "$log")" 1 || return 1
    expect "deletes of Jobs" "$(grep -c 'delete Job ' "$log")" 0 || return 1
    expect "savepoint triggers" "$(grep -c "method=POST path=/jobs/$jid/savepoints job=$jid http_code=2" "$log")" 1 || return 1
    expect "409 answers to applies, patches and deletes" "$(grep -c 'http_code=409' "$log")" 0 || return 1
    # the user's annotation is a write the lagging watch shows 3 s late: a status written in
    # between may meet one 409 ("status conflict"), after which the pass waits for the cache to
    # show another version of the FlinkCluster instead of retrying against the stale one
    local conflicts
    conflicts=$(grep -c 'status conflict' "$log")
    echo "status conflicts: $conflicts"
    [ "$conflicts" -le 1 ] || { grep 'status conflict' "$log" | head -5; return 1; }
  }
  check "stale: with every watch 3 s late, no pass acts on a stale cache (one submitter apply, one savepoint trigger, no 409 but one status conflict with the user's write, then a wait)" \
    t_stale
  stop_controller stale >/dev/null
  kill "$(cat "$WORK/lag.pid")" 2>/dev/null
  curl -s -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null 2>&1
}
