# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# The integration cases (sourced by tests/integration/run.sh, helpers in lib.sh). Each case_X
# runs its checks; cases that need the wordcount example set it up through ensure_example.

EX_NS=""
CHILDREN=(configmap/wordcount-configmap statefulset/wordcount-jobmanager service/wordcount-jobmanager
  statefulset/wordcount-taskmanager job/wordcount-job-submitter)

# The example namespace with a controller "main" watching it and wordcount applied.
ensure_example() {
  [ -n "$EX_NS" ] && return 0
  EX_NS=$(new_ns example)
  start_controller main --namespace "$EX_NS" --health-addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0
  kc -n "$EX_NS" apply -f "$ROOT/deploy/examples/wordcount.yaml" >/dev/null
}

case_example() {
  ensure_example
  local ns=$EX_NS
  t_children() {
    local uid c rev
    uid=$(jp "$ns" flinkcluster/wordcount '{.metadata.uid}')
    [ -n "$uid" ] || { echo "no FlinkCluster"; return 1; }
    for c in "${CHILDREN[@]}"; do
      poll 60 jp "$ns" "$c" '{.metadata.name}' || { echo "$c not created in 60 s"; return 1; }
      [ -n "$(jp "$ns" "$c" '{.metadata.name}')" ] || { echo "$c missing"; return 1; }
      owned_by "$ns" "$c" "$uid" || return 1
    done
    rev=$(jp "$ns" flinkcluster/wordcount '{.status.currentRevision}')
    [ -n "$rev" ] || { echo "no status.currentRevision"; return 1; }
    owned_by "$ns" "controllerrevision/$rev" "$uid"
  }
  check "wordcount: ConfigMap, JM/TM StatefulSets, JM Service, submitter Job, ControllerRevision owned by the cluster" t_children
  t_running() {
    poll 90 sts_ready "$ns" wordcount-jobmanager || { echo "JM StatefulSet not ready"; return 1; }
    poll 90 sts_ready "$ns" wordcount-taskmanager || { echo "TM StatefulSet not ready"; return 1; }
    poll 30 is_state "$ns" wordcount Running || { echo "state: $(state "$ns" wordcount)"; return 1; }
    local og gen
    og=$(jp "$ns" flinkcluster/wordcount '{.status.observedGeneration}')
    gen=$(jp "$ns" flinkcluster/wordcount '{.metadata.generation}')
    expect "observedGeneration" "$og" "$gen" || return 1
    # a job cluster is Ready once its job runs (policies/status.lua); kwok completes the submitter
    # pod without the job id in a termination message, so the job stays Pending here
    expect "Ready condition" "$(condition "$ns" wordcount Ready)" "False JobPending" || return 1
    expect "Reconciling condition" "$(condition "$ns" wordcount Reconciling)" "True SubmittingJob" || return 1
    poll 10 has_event "$ns" wordcount StateChanged || { echo "no StateChanged event"; return 1; }
  }
  check "wordcount: status Running (observedGeneration, Ready=False JobPending with Reconciling=True while the job is not submitted, StateChanged event) once the StatefulSets are ready" \
    t_running
  t_endpoints() {
    local line hp mp m
    line=$(grep -o 'health_port=[0-9]* metrics_port=[0-9]*' "$WORK/main.log" | head -n1)
    hp=$(echo "$line" | sed -n 's/^health_port=\([0-9]*\) .*/\1/p') mp=${line##*=}
    if [ -z "$hp" ] || [ -z "$mp" ]; then echo "no 'serving health' line in the log"; return 1; fi
    expect "/healthz" "$(curl -s "http://127.0.0.1:$hp/healthz")" ok || return 1
    expect "/readyz" "$(curl -s "http://127.0.0.1:$hp/readyz")" ok || return 1
    m=$(curl -s "http://127.0.0.1:$mp/metrics") || return 1
    echo "$m" | grep -qE '^flink_controller_reconcile_total\{result="(success|requeue)"\} [1-9]' || { echo "$m"; return 1; }
    echo "$m" | grep -qE '^flink_controller_api_requests_total\{code="201",verb="PATCH"\} [1-9]' || { echo "$m"; return 1; }
    echo "$m" | grep -qE '^flink_controller_watch_events_total\{kind="StatefulSet",type="(ADDED|MODIFIED)"\} [1-9]' ||
      { echo "$m"; return 1; }
    echo "$m" | grep -qE '^flink_controller_loop_iterations_total [1-9]' || { echo "$m"; return 1; }
    # every line the controller wrote about the cluster carries its name and namespace
    ! grep 'wordcount' "$WORK/main.log" | grep -vE "cluster=wordcount namespace=$ns( |\$)" | grep -q . ||
      { grep 'wordcount' "$WORK/main.log" | grep -vE "cluster=wordcount namespace=$ns( |\$)" | head -5; return 1; }
  }
  check "/healthz and /readyz ok, /metrics counts reconciles, API writes, watch events and loop turns; log lines carry cluster= and namespace=" t_endpoints
}

case_scale() {
  ensure_example
  local ns=$EX_NS
  t_scale() {
    poll 60 jp "$ns" statefulset/wordcount-taskmanager '{.metadata.name}' || return 1
    kc -n "$ns" patch flinkcluster wordcount --type merge -p '{"spec":{"taskManager":{"replicas":2}}}' >/dev/null ||
      return 1
    has2() { [ "$(jp "$ns" statefulset/wordcount-taskmanager '{.spec.replicas}')" = 2 ]; }
    poll 30 has2 || { echo "TM replicas: $(jp "$ns" statefulset/wordcount-taskmanager '{.spec.replicas}')"; return 1; }
    poll 90 sts_ready "$ns" wordcount-taskmanager || { echo "TM pods not ready"; return 1; }
    expect "taskmanager pods" "$(kc -n "$ns" get pods -l cluster=wordcount,component=taskmanager -o name | wc -l)" 2
  }
  check "taskManager.replicas 1 -> 2 scales the TaskManager StatefulSet (2 ready pods)" t_scale
}

case_service() {
  ensure_example
  local ns=$EX_NS
  t_service() {
    local old new
    poll 60 jp "$ns" service/wordcount-jobmanager '{.metadata.uid}' || return 1
    old=$(jp "$ns" service/wordcount-jobmanager '{.metadata.uid}')
    kc -n "$ns" delete service wordcount-jobmanager --wait=true >/dev/null || return 1
    back() { new=$(jp "$ns" service/wordcount-jobmanager '{.metadata.uid}'); [ -n "$new" ] && [ "$new" != "$old" ]; }
    poll 30 back || { echo "JM Service not recreated in 30 s"; return 1; }
    new=$(jp "$ns" service/wordcount-jobmanager '{.metadata.uid}')
    owned_by "$ns" service/wordcount-jobmanager "$(jp "$ns" flinkcluster/wordcount '{.metadata.uid}')"
  }
  check "deleting the JobManager Service brings it back (new uid, owned by the cluster)" t_service
}

case_invalid() {
  local ns
  ns=$(new_ns invalid)
  start_controller invalid --namespace "$ns"
  session_cluster good | kc -n "$ns" apply -f - >/dev/null
  # memoryOffHeapMin 2Gi over the 1024Mi limit: valid for the CRD (no CEL rule: too costly),
  # not for validate.lua (the webhook's rule; no webhook here)
  session_cluster bad | sed 's/^  jobManager:$/  jobManager:\n    memoryOffHeapMin: 2Gi/' | kc -n "$ns" apply -f - >/dev/null
  t_invalid() {
    bad_marked() { [ "$(condition "$ns" bad Ready)" = "False InvalidSpec" ]; }
    poll 30 bad_marked || { echo "bad Ready condition: $(condition "$ns" bad Ready)"; return 1; }
    jp "$ns" flinkcluster/bad '{.status.conditions[?(@.type=="Ready")].message}' | grep -q 'spec.jobManager.memoryOffHeapMin' ||
      { echo "condition message does not name the field"; return 1; }
    poll 10 has_event "$ns" bad InvalidSpec || { echo "no InvalidSpec event"; return 1; }
    expect "objects of the invalid cluster" "$(kc -n "$ns" get statefulsets,services,configmaps -l cluster=bad -o name | wc -l)" 0
  }
  check "invalid spec: Warning InvalidSpec event, Ready=False InvalidSpec naming the field, no objects" t_invalid
  t_valid_beside() {
    poll 90 is_state "$ns" good Running || { echo "good: $(state "$ns" good)"; return 1; }
    expect "bad state stays unset" "$(state "$ns" bad)" ""
  }
  check "a valid cluster beside it converges to Running" t_valid_beside
}

case_policy() {
  local ns pdir
  ns=$(new_ns policy)
  # cluster.lua errors for the cluster named "broken" only, and runs a cubic pattern search (minutes
  # of C without the sandbox's own matcher) for the one named "hostile"
  pdir=$(edited_policies broken 's/^function cluster_policy.desired(input)$/&\n  if input.cluster.metadata.name == "broken" then error("refusing broken on purpose") end\n  if input.cluster.metadata.name == "hostile" then return ("a"):rep(2e4):find(".-.-b") end/' \
    'refusing broken on purpose') || { patch_failed policy; return 0; }
  start_controller policy --namespace "$ns" --policy-dir "$pdir" --metrics-addr 127.0.0.1:0 --health-addr 127.0.0.1:0
  session_cluster broken | kc -n "$ns" apply -f - >/dev/null
  session_cluster hostile | kc -n "$ns" apply -f - >/dev/null
  session_cluster fine | kc -n "$ns" apply -f - >/dev/null
  t_policy() {
    marked() { [ "$(condition "$ns" broken PolicyError)" = "True PolicyFailed" ]; }
    poll 30 marked || { echo "broken PolicyError: $(condition "$ns" broken PolicyError)"; return 1; }
    jp "$ns" flinkcluster/broken '{.status.conditions[?(@.type=="PolicyError")].message}' |
      grep -q 'cluster.lua:[0-9]*: refusing broken on purpose' || { echo "message without file:line"; return 1; }
    poll 10 has_event "$ns" broken PolicyError || { echo "no PolicyError event"; return 1; }
    hostile_marked() { [ "$(condition "$ns" hostile PolicyError)" = "True PolicyFailed" ]; }
    poll 30 hostile_marked || { echo "hostile PolicyError: $(condition "$ns" hostile PolicyError)"; return 1; }
    jp "$ns" flinkcluster/hostile '{.status.conditions[?(@.type=="PolicyError")].message}' |
      grep -q 'cluster.lua:[0-9]*: policy exceeded its time budget (200 ms)' ||
      { echo "hostile: $(jp "$ns" flinkcluster/hostile '{.status.conditions[?(@.type=="PolicyError")].message}')"; return 1; }
    poll 90 is_state "$ns" fine Running || { echo "fine: $(state "$ns" fine)"; return 1; }
    expect "fine PolicyError" "$(condition "$ns" fine PolicyError)" "False PoliciesSucceeded" || return 1
    expect "objects of the broken cluster" "$(kc -n "$ns" get statefulsets,services -l cluster=broken -o name | wc -l)" 0
    ctl_alive policy || { echo "controller exited"; return 1; }
    # the typed failures (fc.contract) counted by kind: the error and the spent time budget
    local m
    m=$(scrape_metrics policy) || { echo "no /metrics"; return 1; }
    echo "$m" | grep -qE '^flink_controller_policy_errors_total\{policy="cluster",kind="error"\} [1-9]' &&
      echo "$m" | grep -qE '^flink_controller_policy_errors_total\{policy="cluster",kind="timeout"\} [1-9]' ||
      { echo "$m" | grep policy_errors; return 1; }
  }
  check "a policy failing for one cluster (an error, a hostile pattern past its budget) marks only that one (PolicyError=True with file:line, event, policy_errors_total by kind error and timeout); the other runs" t_policy
}

# The API server refuses an object of one cluster (a policy copy gives its ConfigMap an invalid
# label key): that key is retried with growing backoff and says why; its other objects and a
# cluster beside it are applied.
# policies_rejecting NAME DIR: a copy of policies/ in DIR whose first object of the cluster NAME
# carries a label key the API server refuses (422 on apply); status 1 when the edit failed
policies_rejecting() {
  cp -r "$ROOT/policies" "$2"
  edit_policy "$2/cluster.lua" \
    's/^  return { objects = objects, jobmanager = jobmanager[,}].*$/  if c.metadata.name == "'"$1"'" then objects[1].metadata.labels["bad key!"] = "x" end\n&/' \
    'bad key!'
}

case_reject() {
  local ns pdir
  ns=$(new_ns reject)
  pdir=$WORK/policies-reject
  policies_rejecting rejected "$pdir" || { patch_failed reject; return 0; }
  start_controller reject --namespace "$ns" --policy-dir "$pdir"
  session_cluster rejected | kc -n "$ns" apply -f - >/dev/null
  session_cluster accepted | kc -n "$ns" apply -f - >/dev/null
  t_reject() {
    poll 60 is_state "$ns" accepted Running || { echo "accepted: $(state "$ns" accepted)"; return 1; }
    poll 30 has_event "$ns" rejected ApplyFailed || { echo "no ApplyFailed event"; return 1; }
    kc -n "$ns" get events --field-selector involvedObject.name=rejected,reason=ApplyFailed \
      -o jsonpath='{.items[0].message}' | grep -q 'apply ConfigMap rejected-configmap: HTTP 422' ||
      { echo "event message does not name the object and the 422"; return 1; }
    [ -n "$(jp "$ns" statefulset/rejected-jobmanager '{.metadata.name}')" ] || { echo "its StatefulSet was not applied"; return 1; }
    retries() { [ "$(grep "cluster=rejected namespace=$ns " "$WORK/reject.log" | grep -c 'retry_in_ms=[0-9]')" -ge 4 ]; }
    poll 60 retries || { echo "fewer than 4 retries in 60 s"; return 1; }
    local delays
    delays=$(grep "cluster=rejected namespace=$ns " "$WORK/reject.log" | grep -o 'retry_in_ms=[0-9.]*' | cut -d= -f2 | head -n 4)
    echo "retry delays: $(echo "$delays" | paste -sd' ')"
    [ "$(echo "$delays" | wc -l)" -ge 3 ] || { echo "fewer than 3 retries"; return 1; }
    # each retry waits at least as long as the one before (per-key exponential backoff)
    echo "$delays" | sort -g -c || { echo "delays do not grow"; return 1; }
    # every retry fails the same way: one Event, its count raised each time (client-go's
    # EventCorrelator), neither a new object per retry nor a repeat dropped
    local sel=involvedObject.name=rejected,reason=ApplyFailed count
    expect "ApplyFailed Event objects" "$(kc -n "$ns" get events --field-selector "$sel" -o name | wc -l)" 1 || return 1
    counted() { count=$(kc -n "$ns" get events --field-selector "$sel" -o jsonpath='{.items[0].count}'); [ "${count:-0}" -ge 3 ]; }
    poll 20 counted || { echo "ApplyFailed count ${count:-none} after 4 retries"; return 1; }
    echo "ApplyFailed count: $count"
    ctl_alive reject || { echo "controller exited"; return 1; }
  }
  check "an object the API server refuses (422): ApplyFailed event counted per retry, growing backoff, the rest applied, the other cluster Running" t_reject
}

# Case jsonlogs (issue 31): `--log-format json --log-level debug` with one cluster that reaches
# Running and one whose ConfigMap the API server refuses (422, retried): every line is one JSON
# object with ts, level and msg; a line about a cluster carries cluster and namespace apart; a pass
# its duration_ms, a refused write its http_code, a retry its retry_in_ms (numbers); msg is a
# constant phrase: a small set, no digits, no names.
case_jsonlogs() {
  local ns pdir log=$WORK/jsonlogs.log
  ns=$(new_ns jsonlogs)
  pdir=$WORK/policies-jsonlogs
  policies_rejecting jlbad "$pdir" || { patch_failed jsonlogs; return 0; }
  FC_LOG_LEVEL=debug start_controller jsonlogs --log-format json --namespace "$ns" --policy-dir "$pdir"
  session_cluster jlgood | kc -n "$ns" apply -f - >/dev/null
  session_cluster jlbad | kc -n "$ns" apply -f - >/dev/null
  # q FILTER: FILTER over all the log's records (an array)
  q() { jq -s -r --arg ns "$ns" "$1" "$log"; }
  t_jsonlogs() {
    poll 60 is_state "$ns" jlgood Running || { echo "jlgood: $(state "$ns" jlgood)"; return 1; }
    retried() { [ "$(jq -R 'fromjson? | select(.msg == "reconcile failed" and .cluster == "jlbad")' "$log" | grep -c retry_in_ms)" -ge 2 ]; }
    poll 60 retried || { echo "jlbad: fewer than 2 failed passes in 60 s"; tail -n 5 "$log"; return 1; }
    expect "exit status" "$(stop_controller jsonlogs)" 0 || return 1
    local bad
    # each line one JSON object with the string keys ts, level, msg
    bad=$(jq -R -r '. as $l | try (fromjson | if type == "object" and (.ts | type) == "string" and
      (.level | type) == "string" and (.msg | type) == "string" then empty else $l end) catch $l' "$log" | head -n 3)
    [ -z "$bad" ] || { echo "not a JSON record with ts, level, msg: $bad"; return 1; }
    expect "ts RFC 3339 UTC with ms, level a known one (lines that are not)" "$(q '[.[] | select((.ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{3}Z$") | not)
      or (.level | IN("debug", "info", "warn", "error") | not))] | length')" 0 || return 1
    echo "$(wc -l <"$log") lines, levels: $(q 'group_by(.level) | map("\(.[0].level) \(length)") | join(", ")')"
    # a line that names a cluster anywhere carries it as cluster (the name alone) and namespace
    expect "lines naming a cluster without cluster=<name>, namespace=<ns>" "$(q '[.[] | select(tostring | test("jlgood|jlbad"))
      | select((.cluster | IN("jlgood", "jlbad") | not) or .namespace != $ns)] | length')" 0 || return 1
    expect "lines with cluster but no namespace" "$(q '[.[] | select(has("cluster") and (has("namespace") | not))] | length')" 0 || return 1
    # a pass: duration_ms (a number); a refused write: http_code 422, its action and error; a retry: retry_in_ms
    expect "passes of jlgood (> 0) without a numeric duration_ms" "$(q '[.[] | select(.msg == "reconciled" and .cluster == "jlgood")]
      | "\(length > 0) \(map(select(.duration_ms | type != "number")) | length)"')" "true 0" || return 1
    expect "refused writes of jlbad (> 0) without http_code 422, action, error" "$(q '[.[] | select(.msg == "write failed" and .cluster == "jlbad")]
      | "\(length > 0) \(map(select(.http_code != 422 or (.action | type) != "string" or (.error | type) != "string")) | length)"')" "true 0" || return 1
    expect "failed passes of jlbad without a numeric retry_in_ms" "$(q '[.[] | select(.msg == "reconcile failed" and .cluster == "jlbad")
      | select(.reason != "Stopping") | select(.retry_in_ms | type != "number")] | length')" 0 || return 1
    expect "its Warning Event's line" "$(q '[.[] | select(.msg == "event" and .cluster == "jlbad" and .event_type == "Warning"
      and .reason == "ApplyFailed")] | length > 0')" true || return 1
    expect "Flink calls without method, path, http_code" "$(q '[.[] | select(.msg | startswith("flink request"))
      | select((.method | type) != "string" or (.path | type) != "string")] | length')" 0 || return 1
    expect "the stop line's counts" "$(q '[.[] | select(.msg == "stopped") | (.reconciles | type)] | join(",")')" number || return 1
    # msg: a constant phrase
    local msgs
    msgs=$(q '[.[].msg] | unique | join("|")')
    echo "msg values: $msgs"
    expect "distinct msg values <= 30" "$(q '[.[].msg] | unique | length <= 30')" true || return 1
    expect "msg values with digits, a cluster's or the namespace's name" "$(q '[.[].msg | select(test("[0-9]|jlgood|jlbad|int-"))] | unique | join("|")')" "" || return 1
  }
  check "jsonlogs: every line a JSON object (ts, level, msg); cluster and namespace apart; duration_ms, http_code, retry_in_ms numbers; msg a small set of constant phrases" t_jsonlogs
}

# Flink REST against the test environment's real JobManager (--flink-base-url): a Ticker job
# submitted over REST stands for the cluster's job (its id written into the status, as the
# submitter's termination message would under a kubelet); the controller polls /jobs/overview,
# takes a user-requested savepoint (trigger + poll) and cancels with a savepoint.
# submit_ticker [PAUSE_MS]: uploads the test jobs jar to the host Flink and runs testenv.Ticker
# (unbounded; a PAUSE_MS of -1 makes its source throw at once: Thread.sleep(-1), so Flink, with no
# checkpointing and thus no restart strategy, reports the job FAILED within a second); prints its
# job id
submit_ticker() {
  local jar args=''
  [ -n "${1:-}" ] && args=",\"programArgsList\":[\"$1\"]"
  jar=$(curl -sf -X POST -F "jarfile=@$TESTENV_FLINK_JOBS_JAR;type=application/x-java-archive" \
    "$FLINK_REST_URL/jars/upload" | lua5.4 "$ROOT/tests/env/json.lua" filename) || return 1
  curl -sf -X POST -H 'Content-Type: application/json' -d "{\"entryClass\":\"testenv.Ticker\",\"parallelism\":1$args}" \
    "$FLINK_REST_URL/jars/$(basename "$jar")/run" | lua5.4 "$ROOT/tests/env/json.lua" jobid
}

case_flink() {
  local ns jid
  ns=$(new_ns flink)
  jget() { lua5.4 "$ROOT/tests/env/json.lua" "$@"; }
  jid=$(submit_ticker)
  echo "$jid" >"$WORK/flink.jid"
  FC_LOG_LEVEL=debug start_controller flink --namespace "$ns"
  sed "s/name: wordcount/name: ticker/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints|" \
    "$ROOT/deploy/examples/wordcount.yaml" | kc -n "$ns" apply -f - >/dev/null
  job() { jp "$ns" flinkcluster/ticker "{.status.components.job.$1}"; }
  t_flink_running() {
    [ -n "$jid" ] || { echo "could not submit the Ticker job"; return 1; }
    poll 60 is_state "$ns" ticker Running || { echo "state: $(state "$ns" ticker)"; return 1; }
    poll 30 job_running "$ns" ticker "$jid" || { echo "job: $(job id) $(job state)"; return 1; }
    sleep 12 # one more /jobs/overview poll (every 10 s while the job runs): still Running, not Lost
    expect "job state after a poll" "$(job state)" Running || return 1
    expect "JobRunning condition" "$(condition "$ns" ticker JobRunning | cut -d' ' -f1)" True
  }
  check "flink: GET /jobs/overview of the real JobManager keeps the job Running" t_flink_running
  t_flink_savepoint() {
    savepoint_generation "$ns" ticker || return 1
    expect "savepointGeneration" "$(job savepointGeneration)" 1 || return 1
    poll 10 has_event "$ns" ticker SavepointStateChanged || { echo "no SavepointStateChanged event"; return 1; }
  }
  check "flink: savepointGeneration 1 -> POST /jobs/<id>/savepoints, poll, Succeeded with _metadata on disk" t_flink_savepoint
  t_flink_fresh() {
    # the pass that asked uses the answer: Flink's COMPLETED answer to the savepoint poll and
    # the Succeeded status (its Event, sent after the status write) come within a second, not
    # one poll (5 s while a savepoint is in flight) later
    local log=$WORK/flink.log ev ans
    ev=$(grep -m1 'event_type=Normal reason=SavepointStateChanged message="*savepoint Succeeded' "$log" | cut -d' ' -f1)
    [ -n "$ev" ] || { echo "no SavepointStateChanged Succeeded in the log"; return 1; }
    ans=$(grep "method=GET path=/jobs/$jid/savepoints/[^ ]* job=$jid http_code=200" "$log" | awk -v ev="$ev" '$1 <= ev' | tail -n1 | cut -d' ' -f1)
    [ -n "$ans" ] || { echo "no savepoint status answer before $ev"; return 1; }
    local ms=$(( $(date -d "$ev" +%s%3N) - $(date -d "$ans" +%s%3N) ))
    echo "answer $ans -> Succeeded $ev: $ms ms"
    [ "$ms" -ge 0 ] && [ "$ms" -lt 1000 ]
  }
  check "flink: the savepoint's COMPLETED answer is used in the pass it starts (status Succeeded < 1 s after it)" t_flink_fresh
  ann() { jp "$ns" flinkcluster/ticker '{.metadata.annotations.flinkclusters\.flinkoperator\.k8s\.io/user-control}'; }
  ctl() { jp "$ns" flinkcluster/ticker '{.status.control.name} {.status.control.state} {.status.control.acknowledged}'; }
  sp_posts() { grep -c "method=POST path=/jobs/$jid/savepoints job=$jid http_code=" "$WORK/flink.log"; }
  t_flink_control() {
    local first
    first=$(job savepointLocation)
    kc -n "$ns" annotate flinkcluster ticker flinkclusters.flinkoperator.k8s.io/user-control=savepoint >/dev/null ||
      return 1
    control_done() { [ "$(ctl)" = "savepoint Succeeded true" ]; }
    poll 60 control_done || { echo "control: $(jp "$ns" flinkcluster/ticker '{.status.control}')"; return 1; }
    [ "$(job savepointLocation)" != "$first" ] || { echo "no new savepoint"; return 1; }
    expect "annotation (kept, acknowledged)" "$(ann)" savepoint || return 1
    poll 10 has_event "$ns" ticker UserControl || { echo "no UserControl event"; return 1; }
  }
  check "flink: user-control annotation 'savepoint' -> a new savepoint, control Succeeded, the annotation kept and acknowledged in status.control" t_flink_control
  t_flink_control_git() {
    # as Git would: the annotation removed, then the manifest with it applied twice (kubectl
    # apply, a label changed by the second sync so that the object is written again)
    local loc0 posts0 manifest=$WORK/ticker-git.yaml
    kc -n "$ns" annotate flinkcluster ticker flinkclusters.flinkoperator.k8s.io/user-control- >/dev/null || return 1
    cleared() { [ "$(ctl)" = "savepoint Succeeded " ]; }
    poll 30 cleared || { echo "control: $(ctl)"; return 1; }
    loc0=$(job savepointLocation) posts0=$(sp_posts)
    sed "s/name: wordcount/name: ticker/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints|; s|^metadata:$|metadata:\n  annotations: {flinkclusters.flinkoperator.k8s.io/user-control: savepoint}\n  labels: {sync: one}|" \
      "$ROOT/deploy/examples/wordcount.yaml" >"$manifest"
    kc -n "$ns" apply -f "$manifest" >/dev/null || return 1
    one_more() { [ "$(job savepointLocation)" != "$loc0" ] && [ "$(ctl)" = "savepoint Succeeded true" ]; }
    poll 60 one_more || { echo "savepointLocation $(job savepointLocation) (was $loc0), control $(ctl)"; return 1; }
    loc0=$(job savepointLocation)
    sed -i 's/sync: one/sync: two/' "$manifest"
    kc -n "$ns" apply -f "$manifest" >/dev/null || return 1
    expect "label of the second sync" "$(jp "$ns" flinkcluster/ticker '{.metadata.labels.sync}')" two || return 1
    sleep 15 # a /jobs/overview poll (10 s) and more: passes that see the annotation again
    expect "savepoint POSTs by the two syncs" "$(( $(sp_posts) - posts0 ))" 1 || return 1
    expect "savepointLocation after the second sync" "$(job savepointLocation)" "$loc0" || return 1
    expect "annotation" "$(ann)" savepoint || return 1
    expect "control" "$(ctl)" "savepoint Succeeded true"
  }
  check "flink: the user-control annotation applied by kubectl apply twice (as Git syncs) takes exactly one savepoint; the annotation stays, acknowledged" \
    t_flink_control_git
  t_flink_cancel() {
    kc -n "$ns" patch flinkcluster ticker --type=merge -p '{"spec":{"job":{"cancelRequested":true}}}' >/dev/null ||
      return 1
    stopped() { is_state "$ns" ticker Stopped; }
    poll 60 stopped || { echo "state $(state "$ns" ticker), job $(job state)"; return 1; }
    expect "job state (stopped by us: not Succeeded)" "$(job state)" Cancelled || return 1
    expect "Flink job state" "$(curl -sf "$FLINK_REST_URL/jobs/$jid" | jget state)" FINISHED || return 1
    expect "savepoint reason, state, stop" \
      "$(jp "$ns" flinkcluster/ticker '{.status.savepoint.triggerReason}/{.status.savepoint.state}/{.status.savepoint.stop}')" \
      "job cancel/Succeeded/true" || return 1
    local loc
    loc=$(job savepointLocation)
    echo "stopped with savepoint $loc"
    [ -f "${loc#file:}/_metadata" ] || { echo "no _metadata under $loc"; return 1; }
  }
  check "flink: cancelRequested -> POST /jobs/<id>/stop (stop-with-savepoint): _metadata on disk, Flink FINISHED, job Cancelled, cluster Stopped" t_flink_cancel
  curl -s -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null 2>&1
}

# set_job NS NAME ID STATE: the job id and state written into the FlinkCluster's status, as the
# submitter's termination message would bring them under a kubelet (kwok's pods never run)
set_job() {
  kc -n "$1" patch flinkcluster "$2" --subresource=status --type=merge \
    -p "{\"status\":{\"components\":{\"job\":{\"id\":\"$3\",\"state\":\"$4\"}}}}" >/dev/null
}

# case restart (issue 9 item 4) on the host Flink: a job that fails at once (Ticker -1) under
# restartPolicy FromSavepointOnFailure, with the schedule of a policy copy that changes only the
# RESTART_* tunables of settings.lua (4 s, x2, at most 2 restarts: the operator's way to change it).
# The test plays the submitter (its pod is kwok's and never runs): after each restart it submits
# another failing Ticker and writes its id into the status. Each failure is shown Failed with
# Flink's reason before the restart (its root cause from GET /jobs/<id>/exceptions in the Event), which comes no sooner than the schedule says; each restart is
# an Event naming its attempt (none dropped as a duplicate); after the limit the job stays Failed
# and afterJobFails (DeleteTaskManager) applies.
case_restart() {
  local ns pdir
  ns=$(new_ns restart)
  pdir=$(fast_restart_policies restart 2) || { patch_failed restart; return 0; }
  start_controller restart --namespace "$ns" --policy-dir "$pdir"
  sed "s/name: wordcount/name: crash/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints\\n    restartPolicy: FromSavepointOnFailure\\n    fromSavepoint: file://$TESTENV_DIR/flink/savepoints/none\\n    cleanupPolicy: {afterJobFails: DeleteTaskManager}|" \
    "$ROOT/deploy/examples/wordcount.yaml" | sed 's/\\n/\n/g' | kc -n "$ns" apply -f - >/dev/null
  job() { jp "$ns" flinkcluster/crash "{.status.components.job.$1}"; }
  # fail_once N DELAY: a failing job becomes the cluster's; Failed with Flink's reason; restart N
  # no sooner than DELAY s after the failure was shown
  fail_once() {
    local jid t0 t1 n=$1
    poll 60 is_state "$ns" crash Running || { echo "cluster: $(state "$ns" crash)"; return 1; }
    poll 30 eval '[ "$(job state)" = Pending ] && [ -z "$(job id)" ]' || { echo "job: $(job state) $(job id)"; return 1; }
    jid=$(submit_ticker -1) && [ -n "$jid" ] || { echo "could not submit the failing Ticker"; return 1; }
    set_job "$ns" crash "$jid" Running || return 1
    poll 40 eval '[ "$(job state)" = Failed ]' || { echo "job: $(job state) $(job id)"; return 1; }
    t0=$(date +%s)
    case "$(job failureReason)" in "Flink reports job $jid FAILED"*) ;; *) echo "failureReason: $(job failureReason)"; return 1 ;; esac
    [ -n "$(job nextRestartTime)" ] || { echo "no nextRestartTime"; return 1; }
    poll 60 eval '[ "$(job restartCount)" = "$n" ]' || { echo "restartCount $(job restartCount)"; return 1; }
    t1=$(date +%s)
    echo "job $jid Failed, restart $1 after $((t1 - t0)) s (schedule: $2 s)"
    [ $((t1 - t0)) -ge $(($2 - 1)) ] || { echo "restarted too soon"; return 1; }
    # Events go out after the status write that showed the restart: poll for it
    restarted_event() {
      kc -n "$ns" get events --field-selector involvedObject.name=crash,reason=JobRestarted \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
        grep -qF "restart $n of 2: job $jid Failed (Flink reports job $jid FAILED: Caused by: java.lang.IllegalArgumentException: timeout value is negative)"
    }
    poll 10 restarted_event || { echo "no JobRestarted event for attempt $n with Flink's cause"; return 1; }
  }
  t_restart_1() { fail_once 1 4; }
  check "restart: a job that fails at once (Ticker -1) is shown Failed with Flink's reason, restarted 4 s later (JobRestarted 1 of 2 with the cause from /jobs/<id>/exceptions)" t_restart_1
  t_restart_2() { fail_once 2 8; }
  check "restart: it fails again: restarted 8 s later (backoff x2), a second JobRestarted Event" t_restart_2
  t_restart_limit() {
    local jid
    poll 30 eval '[ "$(job state)" = Pending ] && [ -z "$(job id)" ]' || { echo "job: $(job state) $(job id)"; return 1; }
    jid=$(submit_ticker -1) && [ -n "$jid" ] || return 1
    set_job "$ns" crash "$jid" Running || return 1
    poll 40 has_event "$ns" crash RestartLimitReached || { echo "no RestartLimitReached; job $(job state)"; return 1; }
    poll 30 eval '! kc -n "$ns" get statefulset crash-taskmanager >/dev/null 2>&1' ||
      { echo "TaskManager StatefulSet kept"; return 1; }
    sleep 12
    expect "job state after the limit" "$(job state)/$(job restartCount)/$(job id)" "Failed/2/$jid" || return 1
    expect "cluster state" "$(state "$ns" crash)" PartiallyStopped || return 1
    expect "JobRestarted Events" "$(kc -n "$ns" get events --field-selector involvedObject.name=crash,reason=JobRestarted -o name | wc -l)" 2
  }
  check "restart: the third failure is not restarted (RestartLimitReached): Failed for good, afterJobFails DeleteTaskManager" t_restart_limit
  stop_controller restart >/dev/null
}

# case lost (issue 9 item 5) on the host Flink: a job id the JobManager never lists (one the
# submitter would have reported, written into the status here) is not Pending for ever: after
# settings.JOB_LOST_AFTER_SECONDS (30 s) of answers without it the job is Lost, with the reason in the
# status and a Warning Event, and Lost counts as failed: afterJobFails (DeleteTaskManager) applies.
case_lost() {
  local ns ghost=00000000000000000000000000000bad
  ns=$(new_ns lost)
  start_controller lost --namespace "$ns"
  sed "s/name: wordcount/name: ghost/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints\\n    cleanupPolicy: {afterJobFails: DeleteTaskManager}|" \
    "$ROOT/deploy/examples/wordcount.yaml" | sed 's/\\n/\n/g' | kc -n "$ns" apply -f - >/dev/null
  job() { jp "$ns" flinkcluster/ghost "{.status.components.job.$1}"; }
  t_lost() {
    local t0
    poll 60 is_state "$ns" ghost Running || { echo "cluster: $(state "$ns" ghost)"; return 1; }
    set_job "$ns" ghost "$ghost" Pending || return 1
    t0=$(date +%s)
    poll 20 eval '[ -n "$(job missingSince)" ]' || { echo "no missingSince: $(job state)"; return 1; }
    expect "job state during the grace" "$(job state)" Pending || return 1
    poll 60 eval '[ "$(job state)" = Lost ]' || { echo "job: $(job state)"; return 1; }
    echo "Lost after $(($(date +%s) - t0)) s"
    [ $(($(date +%s) - t0)) -ge 29 ] || { echo "Lost before the 30 s grace"; return 1; }
    case "$(job failureReason)" in "job $ghost not listed by the JobManager for "*) ;;
      *) echo "failureReason: $(job failureReason)"; return 1 ;; esac
    warning_says "$ns" ghost JobStateChanged "job state Pending -> Lost (job $ghost): job $ghost not listed" ||
      { echo "no Warning JobStateChanged with the reason"; return 1; }
    poll 30 eval '! kc -n "$ns" get statefulset ghost-taskmanager >/dev/null 2>&1' ||
      { echo "TaskManager StatefulSet kept: Lost did not count as failed"; return 1; }
    expect "cluster state" "$(state "$ns" ghost)" PartiallyStopped
  }
  check "lost: an id the JobManager never lists: Pending through the 30 s grace, then Lost with the reason (status, Warning Event), afterJobFails DeleteTaskManager" t_lost
  stop_controller lost >/dev/null
}

case_apiserver() {
  local ns pid
  ns=$(new_ns apiserver)
  start_controller apiserver --namespace "$ns"
  session_cluster s1 | kc -n "$ns" apply -f - >/dev/null
  t_apiserver() {
    poll 90 is_state "$ns" s1 Running || { echo "s1 not Running before the stop: $(state "$ns" s1)"; return 1; }
    pid=$(ctl_pid apiserver)
    kill -STOP "$TESTENV_PID_KUBE_APISERVER" || return 1
    sleep 10
    kill -CONT "$TESTENV_PID_KUBE_APISERVER" || return 1
    poll 30 kc get --raw /readyz || { echo "API server not ready after SIGCONT"; return 1; }
    kc -n "$ns" patch flinkcluster s1 --type merge -p '{"spec":{"taskManager":{"replicas":2}}}' >/dev/null || return 1
    kc -n "$ns" delete service s1-jobmanager --wait=true >/dev/null || return 1
    has2() { [ "$(jp "$ns" statefulset/s1-taskmanager '{.spec.replicas}')" = 2 ]; }
    poll 60 has2 || { echo "TM replicas: $(jp "$ns" statefulset/s1-taskmanager '{.spec.replicas}')"; return 1; }
    poll 60 jp "$ns" service/s1-jobmanager '{.metadata.name}' || { echo "JM Service not back"; return 1; }
    [ -n "$(jp "$ns" service/s1-jobmanager '{.metadata.name}')" ] || { echo "JM Service not back"; return 1; }
    expect "controller pid" "$(ctl_pid apiserver)" "$pid" || return 1
    ctl_alive apiserver || { echo "controller exited"; return 1; }
  }
  check "API server stopped 10 s (SIGSTOP/SIGCONT): the same controller process recovers and converges" t_apiserver
}

# case watchlistoff: the FlinkClusters' watch-list (sendInitialEvents=true, core/reflector.c)
# against a real API server with the WatchList feature off, as Kubernetes 1.33 ships it: a second
# kube-apiserver on the same etcd, the first one's command line on another loopback port with
# --feature-gates=WatchList=false. Its answer to the watch-list makes the controller list in
# pages from then on; it converges and follows changes (the watch after the paged list). The
# controller on the first API server (the feature on) streams the same list.
case_watchlistoff() {
  local ns port kcfg pid a args=() wl=()
  ns=$(new_ns watchlistoff)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mapfile -d '' args <"/proc/$TESTENV_PID_KUBE_APISERVER/cmdline"
  for a in "${args[@]}"; do
    case $a in
      --secure-port=*) a=--secure-port=$port ;;
      --bind-address=*) a=--bind-address=127.0.0.1 ;;
      --advertise-address=*) a=--advertise-address=127.0.0.1 ;;
      --endpoint-reconciler-type=*) a=--endpoint-reconciler-type=none ;;
    esac
    wl+=("$a")
  done
  "${wl[@]}" --feature-gates=WatchList=false >"$WORK/apiserver-wloff.log" 2>&1 &
  pid=$!
  kcfg=$WORK/wloff.kubeconfig
  sed "s|server: https://127.0.0.1:[0-9]*|server: https://127.0.0.1:$port|" "$KUBECONFIG" >"$kcfg"
  session_cluster wl1 | kc -n "$ns" apply -f - >/dev/null
  session_cluster wl2 | kc -n "$ns" apply -f - >/dev/null
  t_wloff() {
    kc_off() { "$TESTENV_KUBECTL" --kubeconfig "$kcfg" "$@"; }
    poll 60 kc_off get --raw /readyz || { echo "second API server not ready:"; tail -n 5 "$WORK/apiserver-wloff.log"; return 1; }
    # the gate is off there: a watch with sendInitialEvents is refused (what the controller meets)
    local refused
    refused=$(kc_off get --raw "/apis/flinkoperator.k8s.io/v1beta1/namespaces/$ns/flinkclusters?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1" 2>&1) &&
      { echo "the second API server streamed the list: $refused"; return 1; }
    FC_LOG_LEVEL=debug KUBECONFIG=$kcfg start_controller wloff --namespace "$ns"
    poll 60 grep -q "paged lists from now on" "$WORK/wloff.log" ||
      { echo "no fallback logged"; grep -i "watch" "$WORK/wloff.log" | head -5; return 1; }
    grep "paged lists from now on" "$WORK/wloff.log" | head -n 1 | grep -o 'status [0-9]*: [^"]*' | head -c 300; echo
    poll 90 is_state "$ns" wl1 Running || { echo "wl1: $(state "$ns" wl1)"; return 1; }
    poll 30 is_state "$ns" wl2 Running || { echo "wl2: $(state "$ns" wl2)"; return 1; }
    grep -q 'path=[^ ]*flinkclusters.*by=list\|"by":"list"' "$WORK/wloff.log" ||
      { echo "no paged list of the FlinkClusters logged"; grep -i "listed" "$WORK/wloff.log" | head -5; return 1; }
    # the watch after the paged list: a change reaches the controller
    kc -n "$ns" patch flinkcluster wl1 --type merge -p '{"spec":{"taskManager":{"replicas":2}}}' >/dev/null || return 1
    has2() { [ "$(jp "$ns" statefulset/wl1-taskmanager '{.spec.replicas}')" = 2 ]; }
    poll 30 has2 || { echo "TM replicas: $(jp "$ns" statefulset/wl1-taskmanager '{.spec.replicas}')"; return 1; }
    ctl_alive wloff || { echo "controller exited"; tail -n 10 "$WORK/wloff.log"; return 1; }
  }
  check "watch-list refused by a real API server (WatchList=false, as 1.33): paged lists instead, clusters Running, a change followed" t_wloff
  stop_controller wloff >/dev/null
  t_wlon() {
    FC_LOG_LEVEL=debug start_controller wlon --namespace "$ns"
    poll 30 grep -q 'flinkclusters.*by=watch-list\|"by":"watch-list"' "$WORK/wlon.log" ||
      { echo "no watch-list logged"; grep -i "listed\|watch" "$WORK/wlon.log" | head -5; return 1; }
    ! grep -q "paged lists from now on" "$WORK/wlon.log" || { echo "fell back on the first API server"; return 1; }
  }
  check "watch-list on the first API server (the feature on): the FlinkClusters streamed, no fallback" t_wlon
  stop_controller wlon >/dev/null
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

# codes403 CONTROLLER: the controller's API requests answered 403 (all verbs), from /metrics.
codes403() {
  scrape_metrics "$1" |
    awk 'index($1, "flink_controller_api_requests_total{code=\"403\"") == 1 { s += $2 } END { print s + 0 }'
}

case_terminating() {
  local ns
  ns=$(new_ns terminating)
  start_controller terminating --namespace "$ns" --metrics-addr 127.0.0.1:0 --health-addr 127.0.0.1:0
  t_terminating_held() {
    session_cluster t1 | kc -n "$ns" apply -f - >/dev/null || return 1
    poll 60 jp "$ns" configmap/t1-configmap '{.metadata.name}' || { echo "no ConfigMap"; return 1; }
    poll 60 jp "$ns" flinkcluster/t1 '{.status.state}' || { echo "no status"; return 1; }
    # the namespace controller (in kube-controller-manager) paused: the namespace stays
    # Terminating with the FlinkCluster in it, as while a large namespace is being emptied
    kill -STOP "$TESTENV_PID_KUBE_CONTROLLER_MANAGER" || return 1
    kc delete namespace "$ns" --wait=false >/dev/null || return 1
    kc -n "$ns" delete configmap t1-configmap --wait=true >/dev/null || return 1
    # the controller's re-create is refused (403, cause NamespaceTerminating) ...
    poll 30 grep -qE "namespace terminating, pass not written\" cluster=[^ ]* namespace=$ns " "$WORK/terminating.log" ||
      { echo "no 'being terminated' line"; tail -n 20 "$WORK/terminating.log"; return 1; }
    local n0 n1
    n0=$(codes403 terminating) || { echo "no /metrics"; return 1; }
    sleep 10
    n1=$(codes403 terminating)
    # ... and neither retried with backoff nor followed by Warning Events (refused the same way)
    expect "403 answers in the 10 s after the first" "$((n1 - n0))" 0 || return 1
    expect "403 answers in all" "$n1" 1 || return 1
    ! grep -q "ApplyFailed\|reconcile failed" "$WORK/terminating.log" ||
      { grep "ApplyFailed\|reconcile failed" "$WORK/terminating.log" | head -3; return 1; }
    ctl_alive terminating || { echo "controller exited"; return 1; }
  }
  t_terminating() {
    local rc=0
    t_terminating_held || rc=1
    kill -CONT "$TESTENV_PID_KUBE_CONTROLLER_MANAGER"
    [ "$rc" -eq 0 ] || return 1
    gone_ns() { ! kc get namespace "$ns" >/dev/null 2>&1; }
    poll 90 gone_ns || { echo "namespace $ns not gone after the controller-manager resumed"; return 1; }
    ctl_alive terminating || { echo "controller exited"; return 1; }
  }
  check "namespace being deleted: a refused re-create (NamespaceTerminating) is not retried, no Events; the namespace goes" t_terminating
  stop_controller terminating >/dev/null
}

case_sigkill() {
  local ns
  ns=$(new_ns sigkill)
  t_sigkill() {
    start_controller sigkill1 --namespace "$ns"
    kc -n "$ns" apply -f "$ROOT/deploy/examples/wordcount.yaml" >/dev/null || return 1
    # killed while it writes the children
    poll 30 jp "$ns" configmap/wordcount-configmap '{.metadata.name}'
    stop_controller sigkill1 KILL >/dev/null
    start_controller sigkill2 --namespace "$ns"
    poll 90 is_state "$ns" wordcount Running || { echo "state: $(state "$ns" wordcount)"; return 1; }
    # the Events go out after the status write (a kill in between loses them, as client-go's
    # recorder does on exit): killed once its Running Event is written, the third must not repeat it
    running_event() {
      kc -n "$ns" get events --field-selector involvedObject.name=wordcount,reason=StateChanged \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -q -- 'Running$'
    }
    poll 30 running_event || { echo "no StateChanged Event to Running within 30 s of the status"; return 1; }
    stop_controller sigkill2 KILL >/dev/null
    start_controller sigkill3 --namespace "$ns"
    sleep 5
    local uid kind want got
    uid=$(jp "$ns" flinkcluster/wordcount '{.metadata.uid}')
    for want in "configmaps 1" "statefulsets 2" "services 1" "jobs 1" "controllerrevisions 1"; do
      kind=${want% *}
      got=$(kc -n "$ns" get "$kind" -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].uid}{"\n"}{end}' |
        grep -c "^$uid$")
      expect "$kind owned by the cluster" "$got" "${want#* }" || return 1
      # nothing labelled for the cluster without a controller owner
      got=$(kc -n "$ns" get "$kind" -l cluster=wordcount \
        -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.ownerReferences[0].uid}{"\n"}{end}' | awk 'NF < 2')
      expect "orphaned $kind" "$got" "" || return 1
    done
    local msgs
    msgs=$(kc -n "$ns" get events --field-selector involvedObject.name=wordcount,reason=StateChanged \
      -o jsonpath='{range .items[*]}{.message} (count {.count}){"\n"}{end}')
    expect "events about wordcount StateChanged to Running" "$(echo "$msgs" | grep -c -- ' Running (')" 1 || {
      echo "StateChanged events: $msgs"
      grep -h 'StateChanged\|event' "$WORK"/sigkill[123].log | tail -n 12
      return 1
    }
  }
  check "SIGKILL while creating, start again (twice): no duplicate or orphaned objects, one Running transition" t_sigkill
  stop_controller sigkill3 >/dev/null
}

case_leader() {
  local ns
  ns=$(new_ns leader)
  t_leader() {
    start_controller leaderA --namespace "$ns" --leader-elect --leader-election-namespace "$ns"
    sleep 3
    start_controller leaderB --namespace "$ns" --leader-elect --leader-election-namespace "$ns"
    session_cluster l1 | kc -n "$ns" apply -f - >/dev/null
    poll 90 is_state "$ns" l1 Running || { echo "l1: $(state "$ns" l1)"; return 1; }
    local holder first second
    holder=$(jp "$ns" lease/flink-controller '{.spec.holderIdentity}')
    [ -n "$holder" ] || { echo "no lease holder"; return 1; }
    # the one that reconciled is the holder; the other did not write anything
    if grep -q 'cluster=.*l1' "$WORK/leaderA.log"; then first=leaderA second=leaderB; else first=leaderB second=leaderA; fi
    if grep -q 'cluster=.*l1' "$WORK/$second.log"; then echo "both reconciled"; return 1; fi
    stop_controller "$first" KILL >/dev/null
    local t0 took
    t0=$(date +%s%N)
    kc -n "$ns" patch flinkcluster l1 --type merge -p '{"spec":{"taskManager":{"replicas":2}}}' >/dev/null || return 1
    new_holder() { local h; h=$(jp "$ns" lease/flink-controller '{.spec.holderIdentity}'); [ -n "$h" ] && [ "$h" != "$holder" ]; }
    poll 40 new_holder || { echo "the standby did not take the Lease within 40 s"; return 1; }
    took=$((($(date +%s%N) - t0) / 1000000))
    echo "Lease taken over after $took ms"
    # client-go's rule: the record unchanged for leaseDurationSeconds (15) by the standby's clock.
    # The standby's clock starts when it first sees the last renewal, at its next try after it
    # (retry period 2 s, jittered up to x2.2 = 4.4 s), and it takes over at its first try after
    # the 15 s (up to 4.4 s more): at most 15 + 2 x 4.4 s after the kill, plus 1.5 s of polling
    [ "$took" -le 25300 ] || { echo "took over after more than lease duration + two jittered retries"; return 1; }
    has2() { [ "$(jp "$ns" statefulset/l1-taskmanager '{.spec.replicas}')" = 2 ]; }
    poll 15 has2 || { echo "the new leader did not scale the TaskManagers"; return 1; }
  }
  check "two controllers with --leader-elect: one acts; the other takes over within the lease duration after SIGKILL" t_leader
  t_sigterm() {
    local who t0 rc
    for who in leaderA leaderB; do ctl_alive "$who" && break; done
    ctl_alive "$who" || { echo "no controller left running"; return 1; }
    # work in flight while the signal arrives
    kc -n "$ns" patch flinkcluster l1 --type merge -p '{"spec":{"taskManager":{"replicas":3}}}' >/dev/null
    t0=$(date +%s%N)
    rc=$(stop_controller "$who" TERM)
    local took_ms=$((($(date +%s%N) - t0) / 1000000))
    echo "exit $rc after $took_ms ms"
    expect "exit status" "$rc" 0 || return 1
    [ "$took_ms" -lt 10000 ] || { echo "took $took_ms ms"; return 1; }
    expect "lease holder after release" "$(jp "$ns" lease/flink-controller '{.spec.holderIdentity}')" "" || return 1
    grep -q 'leader lease released' "$WORK/$who.log" || { echo "no release logged"; return 1; }
  }
  check "SIGTERM: the leader finishes, releases the Lease and exits 0 within 10 s" t_sigterm
}

# The controller as the flink-controller ServiceAccount of deploy/rbac.yaml: the rules are enough
# for everything it does (watch, apply, delete, status, Events, the Lease), nothing is refused.
# sa_runs NAME KUBECONFIG NS: the controller NAME with that kubeconfig's token, watching NS, the
# Lease in flink-system: wordcount applied there is Running with a StateChanged Event, no request
# was refused, it led, and it exits 0
sa_runs() {
  local name=$1 ns=$3
  start_controller "$name" --kubeconfig "$2" --namespace "$ns" --leader-elect --leader-election-namespace flink-system
  kc -n "$ns" apply -f "$ROOT/deploy/examples/wordcount.yaml" >/dev/null || return 1
  poll 90 is_state "$ns" wordcount Running || { echo "state: $(state "$ns" wordcount)"; tail -n 20 "$WORK/$name.log"; return 1; }
  poll 10 has_event "$ns" wordcount StateChanged || { echo "no StateChanged event"; return 1; }
  if grep -E 'http_code=403|forbidden' "$WORK/$name.log"; then return 1; fi
  grep -q ' leading identity=' "$WORK/$name.log" || { echo "never led"; return 1; }
  expect "exit status" "$(stop_controller "$name")" 0
}
case_rbac() {
  local ns
  ns=$(new_ns rbac)
  t_rbac() {
    local sakc="$WORK/sa.kubeconfig"
    sa_kubeconfig "$sakc" || return 1
    sa_runs rbac "$sakc" "$ns"
  }
  check "as the ServiceAccount of deploy/rbac.yaml (token): Lease, watches, apply, status, Events, nothing forbidden" t_rbac
}

# The controller with a kubeconfig whose user is an exec credential plugin (as EKS, GKE and AKS
# kubeconfigs are): a shell script that, like `aws eks get-token`, prints an ExecCredential with
# a token of the flink-controller ServiceAccount from `kubectl create token` and its expiry. Its
# first answer is a token the API server refuses: the 401s to it invalidate the credential once
# and the plugin runs again (client-go's rule), so it runs exactly twice; then as case_rbac.
case_execcred() {
  local ns
  ns=$(new_ns execcred)
  t_execcred() {
    local ekc=$WORK/exec.kubeconfig plugin=$WORK/exec-plugin.sh runs=$WORK/exec-plugin.runs
    kc apply -f "$ROOT/deploy/namespace.yaml" -f "$ROOT/deploy/rbac.yaml" >/dev/null || return 1
    cat >"$plugin" <<'PLUGIN'
#!/bin/sh
# an exec credential plugin: a client.authentication.k8s.io/v1 ExecCredential on stdout
echo run >>"$RUNS"
if [ "$(wc -l <"$RUNS")" -eq 1 ]; then
  tok=not-a-valid-token
else
  tok=$("$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" -n flink-system create token flink-controller --duration=1h) || exit 1
fi
echo "exec plugin run $(wc -l <"$RUNS")" >&2
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' \
  "$tok" "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)"
PLUGIN
    chmod +x "$plugin"
    : >"$runs"
    cat >"$ekc" <<KUBECONFIG
apiVersion: v1
kind: Config
current-context: execcred
contexts:
- {name: execcred, context: {cluster: testenv, user: plugin, namespace: flink-system}}
clusters:
- name: testenv
  cluster: {server: "$KUBE_APISERVER_URL", certificate-authority: "$TESTENV_DIR/pki/ca.crt"}
users:
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./exec-plugin.sh
      env:
      - {name: RUNS, value: "$runs"}
      - {name: KUBECTL, value: "$TESTENV_KUBECTL"}
      - {name: ADMIN_KUBECONFIG, value: "$KUBECONFIG"}
      interactiveMode: Never
      installHint: "the test writes exec-plugin.sh beside this kubeconfig"
KUBECONFIG
    sa_runs execcred "$ekc" "$ns" || return 1
    grep -q 'context=execcred' "$WORK/execcred.log" || { echo "not the exec kubeconfig's context"; return 1; }
    expect "plugin runs (start, then once after the 401s)" "$(wc -l <"$runs")" 2 || return 1
    grep -q 'exec plugin credential refreshed' "$WORK/execcred.log" || { echo "no refresh logged"; return 1; }
    grep -q 'exec plugin run 1' "$WORK/execcred.log" || { echo "plugin stderr not logged"; return 1; }
  }
  check "exec credential plugin kubeconfig: the plugin's token used, a 401 re-runs it once, FlinkCluster Running" t_execcred
}

# deploy/namespaced as a user applies it: an overlay of deploy/ with the Component, retargeted to
# the test's namespace (patches of the Role's and RoleBinding's namespace and of the env
# WATCH_NAMESPACE that --namespace takes), every name prefixed so that its ServiceAccount is not
# the one deploy/rbac.yaml binds cluster-wide for other cases. Its RBAC objects are applied (not
# the Deployment: the controller runs here, with that ServiceAccount's token and the Deployment's
# --namespace).
case_namespaced() {
  local ns other
  ns=$(new_ns nsrbac)
  other=$(new_ns nsother)
  t_namespaced() {
    local ov=$WORK/namespaced-overlay out=$WORK/namespaced.yaml sakc=$WORK/ns-sa.kubeconfig rel
    mkdir -p "$ov" || return 1
    rel=$(realpath --relative-to="$ov" "$ROOT")
    cat >"$ov/kustomization.yaml" <<EOF
resources: [$rel/deploy]
components: [$rel/deploy/namespaced]
namePrefix: nsrbac-
patches:
  - target: {kind: Role, name: flink-controller}
    patch: '[{"op": "replace", "path": "/metadata/namespace", "value": "$ns"}]'
  - target: {kind: RoleBinding, name: flink-controller}
    patch: '[{"op": "replace", "path": "/metadata/namespace", "value": "$ns"}]'
  - patch: |-
      {"apiVersion": "apps/v1", "kind": "Deployment",
       "metadata": {"name": "flink-controller", "namespace": "flink-system"},
       "spec": {"template": {"spec": {"containers": [{"name": "controller",
         "env": [{"name": "WATCH_NAMESPACE", "value": "$ns"}]}]}}}}
EOF
    kc kustomize "$ov" >"$out" || return 1
    expect "cluster-scoped RBAC in the build" "$(grep -c '^kind: Cluster' "$out")" 0 || return 1
    kc create --dry-run=client -f "$out" -o json >"$out.json" || return 1
    # the Deployment's last arguments and WATCH_NAMESPACE, and the RBAC objects alone
    expect "the Deployment's last arguments" "$(python3 -c '
import json, sys
text, items, dec, i = open(sys.argv[1]).read(), [], json.JSONDecoder(), 0
while text[i:].strip():
    o, i = dec.raw_decode(text, i + len(text[i:]) - len(text[i:].lstrip()))
    items.append(o)
dep = [o for o in items if o["kind"] == "Deployment"][0]
c = dep["spec"]["template"]["spec"]["containers"][0]
env = {e["name"]: e.get("value") for e in c["env"]}
print(" ".join(c["args"][-2:]), env.get("WATCH_NAMESPACE"))
items = [o for o in items if o["kind"] in ("ServiceAccount", "Role", "RoleBinding")]
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[2], "w"))' "$out.json" "$out.rbac.json")" \
      "--namespace \$(WATCH_NAMESPACE) $ns" || return 1
    # the ServiceAccount lives in flink-system (deploy/namespace.yaml), whichever case ran before
    kc apply -f "$ROOT/deploy/namespace.yaml" >/dev/null && kc apply -f "$out.rbac.json" >/dev/null || return 1
    sa_kubeconfig "$sakc" nsrbac-flink-controller || return 1
    local skc=("$TESTENV_KUBECTL" --kubeconfig="$sakc")
    can() { "${skc[@]}" auth can-i "$@" 2>/dev/null; }
    expect "can list FlinkClusters in $ns" "$(can list flinkclusters.flinkoperator.k8s.io -n "$ns")" yes || return 1
    expect "can list FlinkClusters in $other" "$(can list flinkclusters.flinkoperator.k8s.io -n "$other")" no || return 1
    expect "can list FlinkClusters everywhere" "$(can list flinkclusters.flinkoperator.k8s.io -A)" no || return 1
    expect "can patch StatefulSets in $other" "$(can patch statefulsets.apps -n "$other")" no || return 1
    local got
    got=$("${skc[@]}" -n "$other" get flinkclusters 2>&1)
    [[ $got == *Forbidden* ]] || { echo "read $other: $got"; return 1; }
    kc -n "$other" apply -f "$ROOT/deploy/examples/wordcount.yaml" >/dev/null || return 1
    sa_runs namespaced "$sakc" "$ns" || return 1
    # the same token for the other namespace: refused by the API server, nothing written there
    start_controller namespaced2 --kubeconfig "$sakc" --namespace "$other"
    refused() { grep -qE '403|forbidden' "$WORK/namespaced2.log"; }
    poll 20 refused || { echo "no 403 for $other"; tail -n 5 "$WORK/namespaced2.log"; return 1; }
    stop_controller namespaced2 >/dev/null
    expect "status in $other" "$(state "$other" wordcount)" "" || return 1
    expect "children in $other" "$(kc -n "$other" get statefulsets -o name | wc -l)" 0
  }
  check "deploy/namespaced: a Role in the watched namespace, no ClusterRole; Running there, another namespace forbidden" t_namespaced
}

# A string with a NUL (JSON "\u0000", which the API server stores) in one FlinkCluster's spec:
# that cluster is reconciled like any other, and so is its neighbour (the whole list of the
# namespace was refused before: no FlinkCluster of it was seen).
case_nulstring() {
  local ns
  ns=$(new_ns nulstring)
  t_nulstring() {
    start_controller nulstring --namespace "$ns"
    kc -n "$ns" apply -f "$ROOT/deploy/examples/wordcount.yaml" >/dev/null || return 1
    printf '%s' '{"apiVersion": "flinkoperator.k8s.io/v1beta1", "kind": "FlinkCluster", "metadata": {"name": "nul"},
      "spec": {"image": {"name": "flink:1.20.0\u0000x"}, "jobManager": {}, "taskManager": {"replicas": 1}}}' |
      kc -n "$ns" apply -f - >/dev/null || return 1
    expect "stored image" "$(kc -n "$ns" get flinkcluster nul -o json | grep -o '"name": "flink:[^"]*"')" \
      '"name": "flink:1.20.0\u0000x"' || return 1
    poll 60 is_state "$ns" wordcount Running || { echo "wordcount: $(state "$ns" wordcount)"; tail -n 5 "$WORK/nulstring.log"; return 1; }
    has_jm() { [ -n "$(jp "$ns" statefulset/nul-jobmanager '{.metadata.uid}')" ]; }
    poll 30 has_jm || { echo "no nul-jobmanager"; tail -n 5 "$WORK/nulstring.log"; return 1; }
    if grep -E 'response without items|bad event' "$WORK/nulstring.log"; then return 1; fi
    expect "exit status" "$(stop_controller nulstring)" 0
  }
  check "a NUL in one FlinkCluster's spec: it and its neighbour are reconciled, the list and watch hold" t_nulstring
}

# --- Convergence (issue 8): what the spec no longer says leaves the children, configuration
# changes roll the pods that read it, and a pass with nothing to do writes nothing.

# conv_cluster NAME RECREATE: a session FlinkCluster with every field the removal checks take
# away (recreateOnUpdate RECREATE: false keeps the StatefulSets, so that a removal is seen on the
# same object, applied in place).
conv_cluster() {
  session_cluster "$1" "  recreateOnUpdate: $2
  flinkProperties:
    taskmanager.numberOfTaskSlots: \"1\"
  logConfig:
    extra.properties: \"a = 1\"" |
    sed -e 's/^  jobManager:$/&\n    accessScope: VPC\n    nodeSelector: {type: kwok}\n    ingress: {hostFormat: "{{$clusterName}}.example.com", useTls: true}/' \
      -e 's|^  taskManager:$|&\n    podAnnotations: {example.com/team: data, example.com/keep: "yes"}|'
}
# spec_patch NS NAME JSON: merge patch of the FlinkCluster's spec (null removes a field)
spec_patch() { kc -n "$1" patch flinkcluster "$2" --type merge -p "{\"spec\":$3}" >/dev/null; }
# metric_sum CONTROLLER FAMILY: the sum of a family's samples on that controller's /metrics
# quiet CONTROLLER N MAX: waits until the controller's flink_controller_api_requests_total stayed
# the same for N seconds in a row (at most MAX seconds); prints that count, or why not (status 1)
quiet() {
  local w prev=-1 same=0 i
  for i in $(seq 1 "$3"); do
    w=$(metric_sum "$1" flink_controller_api_requests_total) || { echo "no /metrics"; return 1; }
    if [ "$w" = "$prev" ]; then same=$((same + 1)); else same=0; fi
    prev=$w
    [ "$same" -ge "$2" ] && { echo "$w"; return 0; }
    sleep 1
  done
  echo "still writing after $3 s"
  return 1
}
metric_sum() {
  scrape_metrics "$1" | awk -v f="$2" '$1 == f || index($1, f "{") == 1 { s += $2 } END { print s + 0 }'
}
CONFIG_HASH='{.spec.template.metadata.annotations.flinkoperator\.k8s\.io/config-hash}'

case_converge() {
  local ns
  ns=$(new_ns converge)
  start_controller converge --namespace "$ns"
  conv_cluster conv false | kc -n "$ns" apply -f - >/dev/null
  # t_removed PATCH KIND/NAME JSONPATH: the field is set; after PATCH the object exists without it
  t_removed() {
    local obj=$2 path=$3
    set_now() { [ -n "$(jp "$ns" "$obj" "$path")" ]; }
    poll 60 set_now || { echo "$obj: $path never set"; return 1; }
    spec_patch "$ns" conv "$1" || return 1
    gone() { [ -n "$(jp "$ns" "$obj" '{.metadata.uid}')" ] && [ -z "$(jp "$ns" "$obj" "$path")" ]; }
    poll 30 gone || { echo "$obj: $path still '$(jp "$ns" "$obj" "$path")' 30 s after the patch"; return 1; }
  }
  t_annotation() {
    t_removed '{"taskManager":{"podAnnotations":{"example.com/team":null}}}' \
      statefulset/conv-taskmanager '{.spec.template.metadata.annotations.example\.com/team}' || return 1
    expect "the podAnnotations key still in the spec" \
      "$(jp "$ns" statefulset/conv-taskmanager '{.spec.template.metadata.annotations.example\.com/keep}')" yes
  }
  check "converge: a podAnnotations key removed from the spec leaves the TaskManager pod template, the other stays" \
    t_annotation
  check "converge: the jobManager nodeSelector removed leaves the JobManager pod template" \
    t_removed '{"jobManager":{"nodeSelector":null}}' statefulset/conv-jobmanager '{.spec.template.spec.nodeSelector}'
  check "converge: a logConfig file removed leaves the ConfigMap" \
    t_removed '{"logConfig":null}' configmap/conv-configmap '{.data.extra\.properties}'
  check "converge: ingress.useTls turned off leaves the Ingress without tls" \
    t_removed '{"jobManager":{"ingress":{"useTls":false}}}' ingress/conv-jobmanager '{.spec.tls}'
  t_vpc() {
    t_removed '{"jobManager":{"accessScope":"External"}}' service/conv-jobmanager \
      '{.metadata.annotations.networking\.gke\.io/load-balancer-type}' || return 1
    expect "the original operator's annotation" \
      "$(jp "$ns" service/conv-jobmanager '{.metadata.annotations.cloud\.google\.com/load-balancer-type}')" ""
  }
  check "converge: accessScope VPC -> External drops both internal load balancer annotations of the Service" t_vpc
  t_headless() {
    local ip
    spec_patch "$ns" conv '{"jobManager":{"accessScope":"Headless"}}' || return 1
    headless() { [ "$(jp "$ns" service/conv-jobmanager '{.spec.clusterIP}')" = None ]; }
    poll 30 headless || { echo "clusterIP '$(jp "$ns" service/conv-jobmanager '{.spec.clusterIP}')', want None"; return 1; }
    spec_patch "$ns" conv '{"jobManager":{"accessScope":"Cluster"}}' || return 1
    with_ip() { ip=$(jp "$ns" service/conv-jobmanager '{.spec.clusterIP}'); [ -n "$ip" ] && [ "$ip" != None ]; }
    poll 30 with_ip || { echo "clusterIP '$(jp "$ns" service/conv-jobmanager '{.spec.clusterIP}')' 30 s after"; return 1; }
    expect "Service type" "$(jp "$ns" service/conv-jobmanager '{.spec.type}')" ClusterIP
  }
  check "converge: accessScope Headless -> Cluster gives the Service a cluster IP (recreated)" t_headless
}

# A flinkProperties change changes the config hash of both Flink pod templates: with
# recreateOnUpdate (default) the StatefulSets are created again, without it they roll in place.
case_rollout() {
  local ns
  ns=$(new_ns rollout)
  start_controller rollout --namespace "$ns"
  conv_cluster recreated true | kc -n "$ns" apply -f - >/dev/null
  conv_cluster inplace false | kc -n "$ns" apply -f - >/dev/null
  # t_rolled NAME RECREATE: patch flinkProperties, then the new hash on both templates, the
  # StatefulSet uid new (RECREATE true) or the same, and the ConfigMap with the new value
  t_rolled() {
    local n=$1 h1 u1 h2 u2 jm
    hashed() { [ -n "$(jp "$ns" "statefulset/$n-taskmanager" "$CONFIG_HASH")" ]; }
    poll 60 hashed || { echo "no config hash on $n-taskmanager's template"; return 1; }
    # an update is a change from a recorded revision: wait for the first one
    has_rev() { [ -n "$(jp "$ns" "flinkcluster/$n" '{.status.currentRevision}')" ]; }
    poll 30 has_rev || { echo "no status.currentRevision"; return 1; }
    h1=$(jp "$ns" "statefulset/$n-taskmanager" "$CONFIG_HASH")
    u1=$(jp "$ns" "statefulset/$n-taskmanager" '{.metadata.uid}')
    expect "JobManager's hash" "$(jp "$ns" "statefulset/$n-jobmanager" "$CONFIG_HASH")" "$h1" || return 1
    spec_patch "$ns" "$n" '{"flinkProperties":{"taskmanager.numberOfTaskSlots":"4"}}' || return 1
    moved() { h2=$(jp "$ns" "statefulset/$n-taskmanager" "$CONFIG_HASH"); [ -n "$h2" ] && [ "$h2" != "$h1" ]; }
    poll 60 moved || { echo "TaskManager hash still '$h2'"; return 1; }
    jm_moved() { jm=$(jp "$ns" "statefulset/$n-jobmanager" "$CONFIG_HASH"); [ "$jm" = "$h2" ]; }
    poll 30 jm_moved || { echo "JobManager hash '$jm', want '$h2'"; return 1; }
    expect "the ConfigMap's taskmanager.numberOfTaskSlots" "$(cm_option "$ns" "$n" taskmanager.numberOfTaskSlots)" 4 ||
      return 1
    u2=$(jp "$ns" "statefulset/$n-taskmanager" '{.metadata.uid}')
    if [ "$2" = true ]; then
      [ "$u2" != "$u1" ] || { echo "recreateOnUpdate: the TaskManager StatefulSet kept uid $u1"; return 1; }
    else
      expect "TaskManager StatefulSet uid (updated in place)" "$u2" "$u1" || return 1
    fi
    echo "config hash $h1 -> $h2"
  }
  check "rollout: flinkProperties change -> new config hash on both templates, StatefulSets recreated (recreateOnUpdate)" \
    t_rolled recreated true
  check "rollout: flinkProperties change -> new config hash on both templates, updated in place (recreateOnUpdate false)" \
    t_rolled inplace false
  t_pod_rolled() {
    local want
    want=$(jp "$ns" statefulset/inplace-taskmanager "$CONFIG_HASH")
    [ -n "$want" ] || { echo "no config hash on the template"; return 1; }
    pod_new() { [ "$(jp "$ns" pod/inplace-taskmanager-0 '{.metadata.annotations.flinkoperator\.k8s\.io/config-hash}')" = "$want" ]; }
    poll 90 pod_new || { echo "pod inplace-taskmanager-0 hash '$(jp "$ns" pod/inplace-taskmanager-0 \
      '{.metadata.annotations.flinkoperator\.k8s\.io/config-hash}')', want '$want'"; return 1; }
  }
  check "rollout: the StatefulSet controller replaces the TaskManager pod with one of the new hash" t_pod_rolled
}

# Once a removal and a configuration change converged (the StatefulSets recreated), passes with
# nothing to do (the FlinkCluster touched without a spec change, as a resync does) write nothing:
# no apply, delete, status or Event (flink_controller_api_requests_total).
case_steady() {
  local ns
  ns=$(new_ns steady)
  start_controller steady --namespace "$ns" --metrics-addr 127.0.0.1:0 --health-addr 127.0.0.1:0
  conv_cluster still true | kc -n "$ns" apply -f - >/dev/null
  t_steady() {
    local w0 w1 r0 r1 i
    local h0 h1
    hashed() { h0=$(jp "$ns" statefulset/still-taskmanager "$CONFIG_HASH"); [ -n "$h0" ]; }
    poll 60 hashed || { echo "no TaskManager StatefulSet with a config hash"; return 1; }
    spec_patch "$ns" still '{"logConfig":null,"flinkProperties":{"taskmanager.numberOfTaskSlots":"2"}}' || return 1
    converged() {
      h1=$(jp "$ns" statefulset/still-taskmanager "$CONFIG_HASH")
      [ -n "$h1" ] && [ "$h1" != "$h0" ] && [ "$(jp "$ns" statefulset/still-jobmanager "$CONFIG_HASH")" = "$h1" ] &&
        [ -z "$(jp "$ns" configmap/still-configmap '{.data.extra\.properties}')" ]
    }
    poll 60 converged || { echo "the change did not converge: hash '$h1' (was '$h0')"; return 1; }
    # settled: no write for 6 s in a row (at most 60 s)
    w0=$(quiet steady 6 60) || { echo "$w0"; return 1; }
    r0=$(metric_sum steady flink_controller_reconcile_total)
    for i in 1 2 3 4 5; do
      kc -n "$ns" annotate --overwrite flinkcluster still "example.com/poke=$i" >/dev/null || return 1
      sleep 1
    done
    sleep 3
    w1=$(metric_sum steady flink_controller_api_requests_total)
    r1=$(metric_sum steady flink_controller_reconcile_total)
    echo "passes $r0 -> $r1, writes $w0 -> $w1"
    [ "$r1" -ge $((r0 + 3)) ] || { echo "the pokes did not run passes"; return 1; }
    expect "API writes over the passes" "$w1" "$w0"
  }
  check "steady state: after a converged change, 5 passes with nothing changed write nothing (/metrics api_requests_total)" \
    t_steady
}

# A job cluster whose job runs (the host Flink's Ticker): a policy edit that changes the Flink pod
# templates waits (Warning TemplateChangeHeld); a flinkProperties change then goes through the
# update flow: savepoint, the job cancelled in Flink, the StatefulSets created again with the new
# config hash (and the held template), a new submitter, currentRevision = nextRevision.
case_jobupdate() {
  local ns jid pdir
  ns=$(new_ns jobupdate)
  # the edit: every StatefulSet's pod template gets one more annotation
  pdir=$(edited_policies template 's/^  return { objects = objects, jobmanager = jobmanager[,}].*$/  for _, o in ipairs(objects) do\n    if o.kind == "StatefulSet" then\n      local m = o.spec.template.metadata\n      m.annotations = util.merge(m.annotations, { ["example.com\/policy"] = "v2" })\n    end\n  end\n&/' \
    'example.com/policy') || { patch_failed jobupdate; return 0; }
  jid=$(submit_ticker)
  start_controller jobupdate --namespace "$ns"
  sed "s/name: wordcount/name: upd/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints|" \
    "$ROOT/deploy/examples/wordcount.yaml" | kc -n "$ns" apply -f - >/dev/null
  local policy_ann='{.spec.template.metadata.annotations.example\.com/policy}'
  t_job_up() {
    [ -n "$jid" ] || { echo "could not submit the Ticker job"; return 1; }
    poll 90 is_state "$ns" upd Running || { echo "state: $(state "$ns" upd)"; return 1; }
    poll 30 job_running "$ns" upd "$jid" || { echo "job: $(jp "$ns" flinkcluster/upd '{.status.components.job}')"; return 1; }
  }
  check "jobupdate: the job cluster Running with the Ticker job" t_job_up
  t_held() {
    local uid
    uid=$(jp "$ns" statefulset/upd-taskmanager '{.metadata.uid}')
    stop_controller jobupdate >/dev/null
    start_controller jobupdate2 --namespace "$ns" --policy-dir "$pdir"
    poll 30 has_event "$ns" upd TemplateChangeHeld || { echo "no TemplateChangeHeld event"; return 1; }
    sleep 2
    expect "TaskManager template annotation of the edited policy" "$(jp "$ns" statefulset/upd-taskmanager "$policy_ann")" "" ||
      return 1
    expect "TaskManager StatefulSet uid" "$(jp "$ns" statefulset/upd-taskmanager '{.metadata.uid}')" "$uid" || return 1
    expect "job state" "$(jp "$ns" flinkcluster/upd '{.status.components.job.state}')" Running || return 1
    expect "Flink job state" "$(curl -sf "$FLINK_REST_URL/jobs/$jid" | lua5.4 "$ROOT/tests/env/json.lua" state)" RUNNING
  }
  check "jobupdate: a policy edit of the pod templates waits while the job runs (TemplateChangeHeld, StatefulSets untouched)" \
    t_held
  t_config_update() {
    local h1 u1 h2 s1
    s1=$(jp "$ns" job/upd-job-submitter '{.metadata.uid}')
    h1=$(jp "$ns" statefulset/upd-taskmanager "$CONFIG_HASH")
    u1=$(jp "$ns" statefulset/upd-taskmanager '{.metadata.uid}')
    [ -n "$h1" ] || { echo "no config hash on the TaskManager template"; return 1; }
    spec_patch "$ns" upd '{"flinkProperties":{"taskmanager.numberOfTaskSlots":"2"}}' || return 1
    sp_done() {
      [ "$(jp "$ns" flinkcluster/upd '{.status.savepoint.triggerReason} {.status.savepoint.state}')" = "update Succeeded" ]
    }
    poll 60 sp_done || { echo "savepoint: $(jp "$ns" flinkcluster/upd '{.status.savepoint}')"; return 1; }
    expect "the update's savepoint stopped the job" "$(jp "$ns" flinkcluster/upd '{.status.savepoint.stop}')" true ||
      return 1
    local loc
    loc=$(jp "$ns" flinkcluster/upd '{.status.components.job.savepointLocation}')
    [ -f "${loc#file:}/_metadata" ] || { echo "no _metadata under $loc"; return 1; }
    finished() { [ "$(curl -sf "$FLINK_REST_URL/jobs/$jid" | lua5.4 "$ROOT/tests/env/json.lua" state)" = FINISHED ]; }
    poll 60 finished || { echo "the Flink job did not stop (FINISHED)"; return 1; }
    renewed() {
      h2=$(jp "$ns" statefulset/upd-taskmanager "$CONFIG_HASH")
      [ -n "$h2" ] && [ "$h2" != "$h1" ] && [ "$(jp "$ns" statefulset/upd-taskmanager '{.metadata.uid}')" != "$u1" ] &&
        [ "$(jp "$ns" statefulset/upd-jobmanager "$CONFIG_HASH")" = "$h2" ]
    }
    poll 60 renewed || { echo "TaskManager StatefulSet: hash '$h2' (was '$h1'), uid $(jp "$ns" statefulset/upd-taskmanager '{.metadata.uid}') (was $u1)"; return 1; }
    expect "the held template annotation, now applied" "$(jp "$ns" statefulset/upd-taskmanager "$policy_ann")" v2 || return 1
    resubmitted() {
      local s2
      s2=$(jp "$ns" job/upd-job-submitter '{.metadata.uid}')
      [ -n "$s2" ] && [ "$s2" != "$s1" ] &&
        [ "$(jp "$ns" flinkcluster/upd '{.status.currentRevision}')" = "$(jp "$ns" flinkcluster/upd '{.status.nextRevision}')" ]
    }
    poll 90 resubmitted || { echo "no new submitter or revision not current: $(jp "$ns" flinkcluster/upd '{.status.currentRevision} {.status.nextRevision}')"; return 1; }
    # the resubmission restores from the savepoint of the job it stopped
    kc -n "$ns" get job upd-job-submitter -o jsonpath='{.spec.template.spec.containers[0].args}' |
      grep -qF -- "\"--fromSavepoint\",\"$loc\"" || { echo "the submitter's args do not restore from $loc"; return 1; }
    echo "config hash $h1 -> $h2"
  }
  check "jobupdate: a flinkProperties change: stop-with-savepoint (_metadata, Flink FINISHED), StatefulSets recreated with the new hash, resubmitted from that savepoint" \
    t_config_update
  stop_controller jobupdate2 >/dev/null
  curl -s -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null 2>&1
}

# The webhook's certificates kept by the controller (--webhook-cert-secret, docs/webhook.md)
# against the real API server: the webhook on 127.0.0.1 (the API server runs on this host), two
# configurations of deploy/webhook/webhook.yaml with a url clientConfig and an empty caBundle,
# limited to this case's namespace by a label. The controller makes the CA and the serving pair
# (SANs of --webhook-service and --webhook-host), writes the Secret, patches both caBundles; the
# API server then admits through it. Restarted with --webhook-cert-validity 90s it renews at once
# (the pair outlives a 90 s one) and again after 2/3 of 90 s, serving each new pair; TLS 1.1 is
# refused, 1.2 and 1.3 served.
wh_secret_field() { kc -n "$1" get secret "$2" -o "jsonpath={.data.${3//./\\.}}" 2>/dev/null; }
wh_secret_serial() { wh_secret_field "$1" "$2" tls.crt | base64 -d 2>/dev/null | openssl x509 -noout -serial 2>/dev/null; }
# wh_served_serial PORT [VERSION]: the serial of the certificate served on 127.0.0.1:PORT
wh_served_serial() {
  echo | timeout 5 openssl s_client -connect "127.0.0.1:$1" "-${2:-tls1_2}" 2>/dev/null | openssl x509 -noout -serial 2>/dev/null
}
# wh_cluster NAME [TASKMANAGER_MEMORY_LIMIT]: a FlinkCluster as JSON (a limit of 512Mi is under the
# default memoryOffHeapMin of 600M: a rule only policies/validate.lua knows)
wh_cluster() {
  local res=""
  [ -n "${2:-}" ] && res=",\"resources\":{\"limits\":{\"memory\":\"$2\"}}"
  printf '{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"name":"%s"},%s}\n' "$1" \
    "\"spec\":{\"image\":{\"name\":\"flink:1.20.1\"},\"taskManager\":{\"replicas\":1$res}}"
}
case_webhookcerts() {
  local ns cfg port tag secret=fc-webhook svc args
  ns=$(new_ns whcerts)
  tag="whcerts-$$"
  cfg="flink-controller-int-$$"
  kc label namespace "$ns" "flink-controller-test=$tag" >/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # the two configurations, pointed at 127.0.0.1:$port, caBundle empty (the controller fills it)
  python3 - "$ROOT/deploy/webhook/webhook.yaml" "$cfg" "$port" "$tag" >"$WORK/whcerts-configs.json" <<'PY' || return 1
import json, sys, yaml
path, name, port, tag = sys.argv[1:]
items = []
for d in yaml.safe_load_all(open(path)):
    if d and d["kind"].endswith("WebhookConfiguration"):
        d["metadata"] = {"name": name}
        for h in d["webhooks"]:
            h["clientConfig"] = {"url": "https://127.0.0.1:%s%s" % (port, h["clientConfig"]["service"]["path"]), "caBundle": ""}
            h["namespaceSelector"] = {"matchLabels": {"flink-controller-test": tag}}
            h["failurePolicy"] = "Fail"
        items.append(d)
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
  kc apply -f "$WORK/whcerts-configs.json" >/dev/null || { echo "# configurations not created"; return 1; }
  svc="$ns/flink-controller-webhook"
  args=(--namespace "$ns" --webhook-addr "127.0.0.1:$port" --webhook-cert-secret "$ns/$secret" --webhook-service "$svc"
    --webhook-host 127.0.0.1 --webhook-configuration "$cfg")
  start_controller whcerts "${args[@]}"
  local serial1="" ca1=""
  t_secret() {
    poll 30 wh_secret_serial "$ns" "$secret" || { echo "no Secret with a tls.crt in 30 s"; tail -n 20 "$WORK/whcerts.log"; return 1; }
    expect "type" "$(kc -n "$ns" get secret "$secret" -o jsonpath='{.type}')" kubernetes.io/tls || return 1
    local k
    for k in tls.crt tls.key ca.crt ca.key; do [ -n "$(wh_secret_field "$ns" "$secret" "$k")" ] || { echo "no $k"; return 1; }; done
    local crt="$WORK/whcerts-tls.crt" ca="$WORK/whcerts-ca.crt"
    wh_secret_field "$ns" "$secret" tls.crt | base64 -d >"$crt"
    wh_secret_field "$ns" "$secret" ca.crt | base64 -d >"$ca"
    expect "subjectAltName" "$(openssl x509 -in "$crt" -noout -ext subjectAltName | tail -n 1 | sed 's/^ *//')" \
      "DNS:flink-controller-webhook.$ns.svc, DNS:flink-controller-webhook.$ns.svc.cluster.local, DNS:flink-controller-webhook.$ns, IP Address:127.0.0.1" || return 1
    openssl verify -CAfile "$ca" -purpose sslserver "$crt" | grep -q ': OK$' || { echo "tls.crt does not verify against ca.crt"; return 1; }
    local nb na
    nb=$(date -d "$(openssl x509 -in "$crt" -noout -startdate | cut -d= -f2)" +%s)
    na=$(date -d "$(openssl x509 -in "$crt" -noout -enddate | cut -d= -f2)" +%s)
    expect "serving lifetime (s)" "$((na - nb))" $((90 * 86400 + 60)) || return 1
    na=$(date -d "$(openssl x509 -in "$ca" -noout -enddate | cut -d= -f2)" +%s)
    [ $((na - $(date +%s))) -gt $((3649 * 86400)) ] || { echo "CA expires $(openssl x509 -in "$ca" -noout -enddate)"; return 1; }
  }
  check "webhookcerts: the controller creates the Secret (kubernetes.io/tls; tls.crt, tls.key, ca.crt, ca.key), SANs of the Service and 127.0.0.1, 90 days, a 10-year CA" t_secret
  serial1=$(wh_secret_serial "$ns" "$secret")
  ca1=$(wh_secret_field "$ns" "$secret" ca.crt)
  t_bundle() {
    bundles() {
      local v m
      v=$(kc get validatingwebhookconfiguration "$cfg" -o jsonpath='{.webhooks[*].clientConfig.caBundle}')
      m=$(kc get mutatingwebhookconfiguration "$cfg" -o jsonpath='{.webhooks[*].clientConfig.caBundle}')
      [ "$v" = "$ca1" ] && [ "$m" = "$ca1" ]
    }
    poll 20 bundles || { echo "caBundle not the Secret's ca.crt"; return 1; }
    grep -c 'webhook caBundle patched' "$WORK/whcerts.log" | grep -qx 2 || { grep caBundle "$WORK/whcerts.log"; return 1; }
  }
  check "webhookcerts: both configurations' caBundle patched to the Secret's ca.crt (once each)" t_bundle
  t_admit() {
    local out
    refused() {
      out=$(wh_cluster small 512Mi | kc -n "$ns" apply -f - 2>&1)
      echo "$out" | grep -qF 'admission webhook "validate.flinkclusters.flinkoperator.k8s.io" denied the request: small: spec.taskManager.memoryOffHeapMin: must be <= resources.limits.memory (600M > 512Mi)'
    }
    poll 20 refused || { echo "invalid cluster: $out"; return 1; }
    out=$(wh_cluster good | kc -n "$ns" apply -f - 2>&1) || { echo "valid cluster: $out"; return 1; }
    # the mutating webhook ran: the pull policy only defaults.lua sets
    expect "pullPolicy" "$(jp "$ns" flinkcluster/good '{.spec.image.pullPolicy}')" IfNotPresent
  }
  check "webhookcerts: the API server admits through the webhook: an invalid FlinkCluster refused with the policy's message, a valid one stored with the defaults" t_admit
  t_tls() {
    local v
    for v in tls1_2 tls1_3; do
      expect "served serial over $v" "$(wh_served_serial "$port" "$v")" "$serial1" || return 1
    done
    echo | timeout 5 openssl s_client -connect "127.0.0.1:$port" -tls1_2 -CAfile "$WORK/whcerts-ca.crt" \
      -verify_ip 127.0.0.1 -verify_return_error >/dev/null 2>&1 || { echo "TLS 1.2 with ca.crt does not verify"; return 1; }
    local hs
    for v in tls1 tls1_1; do
      # OpenSSL 3 offers TLS 1.0/1.1 only at security level 0
      hs=$(echo | timeout 5 openssl s_client -connect "127.0.0.1:$port" "-$v" -cipher 'DEFAULT@SECLEVEL=0' 2>&1)
      if echo "$hs" | grep -q 'BEGIN CERTIFICATE' || ! echo "$hs" | grep -q 'Cipher is (NONE)'; then
        echo "$v handshake not refused:"; echo "$hs" | head -n 20; return 1
      fi
    done
  }
  check "webhookcerts: the Secret's pair served over TLS 1.2 and 1.3 (verifies with ca.crt for 127.0.0.1); TLS 1.0 and 1.1 refused" t_tls
  expect "exit status" "$(stop_controller whcerts)" 0 >/dev/null
  # restarted with a 90 s validity: the 90-day pair is replaced at once, then after 2/3 of 90 s
  start_controller whcerts "${args[@]}" --webhook-cert-validity 90s
  local serial2="" issued2=0
  t_renew() {
    changed() { local s; s=$(wh_secret_serial "$ns" "$secret") && [ -n "$s" ] && [ "$s" != "$serial1" ]; }
    poll 20 changed || { echo "serial still $serial1"; tail -n 20 "$WORK/whcerts.log"; return 1; }
    serial2=$(wh_secret_serial "$ns" "$secret")
    expect "ca.crt" "$(wh_secret_field "$ns" "$secret" ca.crt)" "$ca1" || return 1
    grep -q 'reason="serving certificate outlives a new one (validity shortened)"' "$WORK/whcerts.log" ||
      { grep 'renewed' "$WORK/whcerts.log"; return 1; }
    served() { [ "$(wh_served_serial "$port")" = "$serial2" ]; }
    poll 10 served || { echo "served $(wh_served_serial "$port"), Secret $serial2"; return 1; }
  }
  check "webhookcerts: --webhook-cert-validity 90s renews the 90-day pair at start (same CA) and the new one is served" t_renew
  # (checks run in a subshell: what they saw is read again here) issued 9 s after its notBefore
  serial2=$(wh_secret_serial "$ns" "$secret")
  [ "$serial2" != "$serial1" ] || serial2=""
  issued2=$(($(date -d "$(wh_secret_field "$ns" "$secret" tls.crt | base64 -d | openssl x509 -noout -startdate |
    cut -d= -f2)" +%s) + 9))
  t_renew2() {
    [ -n "$serial2" ] || { echo "no first renewal"; return 1; }
    changed2() { local s; s=$(wh_secret_serial "$ns" "$secret") && [ -n "$s" ] && [ "$s" != "$serial2" ]; }
    poll 90 changed2 || { echo "serial still $serial2 after 90 s"; return 1; }
    local took=$(($(date +%s) - issued2)) serial3
    echo "renewed again ${took} s after the first renewal"
    # 2/3 of [issue - 9 s, issue + 90 s] is 57 s after issue, seen within a 3 s check
    [ "$took" -ge 55 ] && [ "$took" -le 64 ] || { echo "renewal after $took s, want 57-61"; return 1; }
    grep -q 'reason="serving certificate past 2/3 of its lifetime"' "$WORK/whcerts.log" || return 1
    serial3=$(wh_secret_serial "$ns" "$secret")
    served3() { [ "$(wh_served_serial "$port")" = "$serial3" ]; }
    poll 10 served3 || { echo "served $(wh_served_serial "$port"), Secret $serial3"; return 1; }
    local out
    out=$(wh_cluster small 512Mi | kc -n "$ns" apply -f - 2>&1)
    echo "$out" | grep -qF 'denied the request: small: spec.taskManager.memoryOffHeapMin' || { echo "invalid: $out"; return 1; }
    out=$(wh_cluster good2 | kc -n "$ns" apply -f - 2>&1) || { echo "valid: $out"; return 1; }
    expect "caBundle patches" "$(grep -c 'webhook caBundle patched' "$WORK/whcerts.log")" 2 || return 1
    ! grep -E ' warn |"level":"warn"' "$WORK/whcerts.log" | grep 'webhook certificate' || return 1
    ctl_alive whcerts || { echo "controller exited"; return 1; }
  }
  check "webhookcerts: renewed again after 2/3 of 90 s and served; the API server still admits and refuses; no caBundle change, no webhook warning" t_renew2
  expect "exit status" "$(stop_controller whcerts)" 0 >/dev/null
  # two replicas with --leader-elect (the second on another port): only the leader writes, both
  # serve what the Secret holds
  local port2 le=(--leader-elect --leader-election-namespace "$ns" --webhook-cert-validity 90s)
  port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  start_controller wha "${args[@]}" "${le[@]}"
  start_controller whb "${args[@]/127.0.0.1:$port/127.0.0.1:$port2}" "${le[@]}"
  t_replicas() {
    local before s
    before=$(wh_secret_serial "$ns" "$secret")
    changed3() { s=$(wh_secret_serial "$ns" "$secret") && [ -n "$s" ] && [ "$s" != "$before" ]; }
    poll 90 changed3 || { echo "serial still $before after 90 s"; return 1; }
    both() { [ "$(wh_served_serial "$port")" = "$s" ] && [ "$(wh_served_serial "$port2")" = "$s" ]; }
    poll 10 both || { echo "served $(wh_served_serial "$port") and $(wh_served_serial "$port2"), Secret $s"; return 1; }
    local leader other
    if grep -q ' leading identity=' "$WORK/wha.log"; then leader=wha other=whb; else leader=whb other=wha; fi
    grep -q ' leading identity=' "$WORK/$leader.log" || { echo "no replica leads"; return 1; }
    grep -q 'webhook certificates written' "$WORK/$leader.log" || { echo "the leader $leader wrote nothing"; return 1; }
    ! grep -q 'webhook certificates written\|webhook caBundle patched' "$WORK/$other.log" ||
      { echo "the standby $other wrote"; return 1; }
    grep -q 'webhook serving the certificate from the Secret' "$WORK/$other.log" ||
      { echo "the standby $other did not take the new pair"; return 1; }
  }
  check "webhookcerts: two replicas with --leader-elect: the leader renews, the standby never writes, both serve the Secret's new pair" t_replicas
  stop_controller wha >/dev/null
  stop_controller whb >/dev/null
  kc delete validatingwebhookconfiguration "$cfg" --ignore-not-found >/dev/null 2>&1
  kc delete mutatingwebhookconfiguration "$cfg" --ignore-not-found >/dev/null 2>&1
}
