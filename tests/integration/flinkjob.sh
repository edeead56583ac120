# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# cases flinkjob and flinkjob2 (issue 29 item 5): jobs on a session cluster as their own objects
# (FlinkJob, lua/fc/flinkjob.lua) on the real node, Flink 1.20.5 (flinkjob) and Flink 2.3.0
# (flinkjob2, with the jobs jar built against Flink 2): one session cluster (pods of 200m CPU
# requests), two FlinkJobs running testenv.Ticker submitted through the JobManager's REST API (the
# test jobs jar served to the controller by a loopback HTTP server, as case restsubmit); both
# Running with distinct job ids in Flink; one updated (args) by stop-with-savepoint and resumed from
# that savepoint while the other keeps its id RUNNING; a deleted FlinkJob's job cancelled in Flink
# before the object goes (finalizer).
# cases flinkjobhealth and flinkjobhealth2 (issue 29 item 5, the job cluster's lifecycle for
# FlinkJobs): on one session cluster (Flink's fixed-delay restart strategy in its flinkProperties),
# a FlinkJob whose Ticker throws at once (Flink restarts it for ever) is judged by the health
# policy (policies/health.lua through fc.health.pass: cancelled in Flink, Failed, Warning
# JobUnhealthy), while a FlinkJob with savepointRetention.maxCount 1 takes three savepoints and
# keeps only the newest: the two older disposed through Flink (POST /savepoint-disposal), their
# directories gone from the host. Helpers from lib.sh and realpods.sh.

# fj_session_cluster NAME HOSTDIR VERSION: a session cluster (no spec.job) of flink:VERSION, its
# savepoints in HOSTDIR on the host (hostPath at /savepoints on the JobManager and TaskManager), 2 slots.
fj_session_cluster() {
  local res='resources: {requests: {memory: "1024Mi", cpu: "200m"}, limits: {memory: "1024Mi", cpu: "500m"}}'
  local vol="
    volumes: [{name: savepoints, hostPath: {path: $2, type: DirectoryOrCreate}}]
    volumeMounts: [{name: savepoints, mountPath: /savepoints}]"
  cat <<EOF
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: $1
spec:
  image: {name: "flink:$3"}
  jobManager:
    $res$vol
  taskManager:
    replicas: 1
    $res$vol
  flinkProperties:
    taskmanager.numberOfTaskSlots: "2"
EOF
}

# flink_job NAME CLUSTER JAR_URL ARGS [JOB_LINE]: a FlinkJob running the Ticker with ARGS (a YAML
# list), and JOB_LINE (one more field of spec.job) when given.
flink_job() {
  cat <<EOF
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkJob
metadata:
  name: $1
spec:
  clusterRef: {name: $2}
  job:
    jarFile: $3
    className: testenv.Ticker
    args: $4
    parallelism: 1
    savepointsDir: file:///savepoints
EOF
  [ -z "${5:-}" ] || echo "    $5"
}

# The FlinkJob helpers of the cases below (NS: the caller's `ns`): fj NAME FIELD: the FlinkJob's
# status.FIELD; fj_running NAME; fj_flink_state ID: Flink's state of job ID on the session
# cluster; fj_no_jars: the session cluster holds no uploaded jar (GET /jars); fj_why NAME: its
# status, for a failure.
fj() { jp "$ns" "flinkjob/$1" "{.status.$2}"; }
fj_running() { [ "$(fj "$1" state)" = Running ]; }
fj_flink_state() { jm_get "$ns" session "/jobs/$1" | jget state; }
fj_no_jars() { [ "$(jm_get "$ns" session /jars | jget files.#)" = 0 ]; }
fj_why() { echo "$1: $(kc -n "$ns" get flinkjob "$1" -o jsonpath='{.status}' 2>&1 | head -c 1500)"; }

# fj_start CASE VERSION DESC: the start of a FlinkJob case: status 1 (a TAP skip of DESC) without
# a real node, the image or the jobs jar; else sets the caller's `ns`, `spdir` (the host directory
# of the savepoints), `jar_dir`, `jar_pid` and `jar_url` (the test jobs jar served to the
# controller by a loopback HTTP server, the one built against Flink 2 for 2.x) and starts the
# controller once the earlier cases' Flink pods left the real node.
fj_start() {
  local c=$1 version=$2 desc=$3 jar=$TESTENV_FLINK_JOBS_JAR port
  real_node_ready || { skip "$desc" "no real node in this environment"; return 1; }
  node_has_image "docker.io/library/flink:$version" || { skip "$desc" "no flink:$version image on the node"; return 1; }
  # Flink 2 runs the jobs jar built against it (tests/env/jobs/flink2: its Ticker has no SourceFunction)
  case $version in 1.*) ;; *) jar=$(. "$ROOT/tests/env/lib.sh" && component_dir flink2)/jobs.jar ;; esac
  [ -s "$jar" ] || { skip "$desc" "no jobs jar $jar"; return 1; }
  ns=$(new_ns "$c" real)
  spdir=$TESTENV_DIR/savepoints/$ns
  mkdir -p "$spdir"
  jar_dir=$WORK/$c-jars
  mkdir -p "$jar_dir" && cp "$jar" "$jar_dir/testenv-jobs.jar"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m http.server --bind 127.0.0.1 --directory "$jar_dir" "$port" >"$WORK/$c-jars.log" 2>&1 &
  jar_pid=$!
  jar_url=http://127.0.0.1:$port/testenv-jobs.jar
  # the earlier cases' Flink pods gone from the real node first: ours need its room
  real_node_free
  FLINK_DIRECT=1 start_controller "$c" --namespace "$ns"
}

# fj_done CASE: the end of a FlinkJob case (the caller's ns, spdir, jar_dir, jar_pid): the
# FlinkJobs deleted (their jobs cancelled), the controller and the jar server stopped, the node's
# room back (the session cluster and its pods gone), the savepoints removed.
fj_done() {
  kc -n "$ns" delete flinkjobs --all --wait=true --timeout=60s >/dev/null 2>&1
  stop_controller "$1" >/dev/null
  kill "$jar_pid" 2>/dev/null
  wait "$jar_pid" 2>/dev/null
  # a FlinkJob left (its deletion failed above) would hold the namespace's deletion: let it go
  local o
  for o in $(kc -n "$ns" get flinkjobs -o name 2>/dev/null); do
    kc -n "$ns" patch "$o" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  done
  real_cleanup "$ns" "$spdir"
  rm -rf "$jar_dir"
}

# flinkjob_case CASE VERSION: the FlinkJob case on the image of Flink VERSION (CASE names the
# controller, its log and the namespace)
flinkjob_case() {
  local c=$1 version=$2
  local desc="real pods, Flink $version: FlinkJobs on a session cluster"
  local ns spdir jar_dir jar_pid jar_url a_id b_id
  fj_start "$c" "$version" "$desc" || return 0
  fj_session_cluster session "$spdir" "$version" | kc -n "$ns" apply -f - >/dev/null
  flink_job ticker-a session "$jar_url" '["100"]' | kc -n "$ns" apply -f - >/dev/null
  flink_job ticker-b session "$jar_url" '["100"]' | kc -n "$ns" apply -f - >/dev/null
  t_fj_running() {
    poll 240 fj_running ticker-a || { fj_why ticker-a; why "$ns" session; tail -n 15 "$WORK/$c.log"; return 1; }
    poll 60 fj_running ticker-b || { fj_why ticker-b; tail -n 15 "$WORK/$c.log"; return 1; }
    a_id=$(fj ticker-a jobID)
    b_id=$(fj ticker-b jobID)
    [ -n "$a_id" ] && [ -n "$b_id" ] && [ "$a_id" != "$b_id" ] || { echo "job ids '$a_id' and '$b_id'"; return 1; }
    jm_job_running "$ns" session "$a_id" || return 1
    jm_job_running "$ns" session "$b_id" || return 1
    # the session cluster itself is a session cluster still: no job of its own, Running
    expect "session cluster state" "$(state "$ns" session)" Running || return 1
    expect "session cluster job" "$(jp "$ns" flinkcluster/session '{.status.components.job}')" "" || return 1
    # the printer columns, the finalizer, the conditions
    expect "kubectl get flinkjob ticker-a (Cluster, State, Job ID)" \
      "$(kc -n "$ns" get flinkjob ticker-a --no-headers | awk '{print $2, $3, $4}')" "session Running $a_id" || return 1
    expect "ticker-a's finalizers" "$(jp "$ns" flinkjob/ticker-a '{.metadata.finalizers}')" '["flinkoperator.k8s.io/job"]' ||
      return 1
    expect "ticker-a Ready" "$(fj ticker-a 'conditions[?(@.type=="Ready")].status')" True || return 1
    expect "ticker-a observedGeneration" "$(fj ticker-a observedGeneration)" 1 || return 1
    # both uploaded jars deleted from the session cluster once Flink ran them (DELETE /jars/<id>)
    poll 30 fj_no_jars || { echo "jars on the session cluster: $(jm_get "$ns" session /jars)"; return 1; }
    # a job is RUNNING before its tasks are: the savepoint of the update needs them running
    tasks_running() { jm_get "$ns" session "/jobs/$a_id" | all_vertices_running; }
    poll 60 tasks_running || { echo "tasks of $a_id not all RUNNING"; return 1; }
    echo "ticker-a $a_id, ticker-b $b_id"
  }
  check "$desc: two FlinkJobs Running with distinct job ids RUNNING in Flink (REST submission), printer columns, finalizer, Ready, no jar left on the session cluster" \
    t_fj_running
  t_fj_upgrade() {
    local id loc
    # (each check runs in a subshell: the ids are read again)
    a_id=$(fj ticker-a jobID)
    b_id=$(fj ticker-b jobID)
    [ -n "$a_id" ] && [ -n "$b_id" ] || { echo "job ids '$a_id' '$b_id'"; return 1; }
    kc -n "$ns" patch flinkjob ticker-a --type merge -p '{"spec":{"job":{"args":["50"]}}}' >/dev/null || return 1
    resumed() {
      id=$(fj ticker-a jobID)
      [ -n "$id" ] && [ "$id" != "$a_id" ] && fj_running ticker-a
    }
    poll 180 resumed || { fj_why ticker-a; tail -n 15 "$WORK/$c.log"; return 1; }
    loc=$(fj ticker-a job.savepointLocation)
    case "$loc" in file:/savepoints/*) ;; *) echo "savepoint location '$loc' is not under /savepoints"; return 1 ;; esac
    [ -s "$spdir/${loc#file:/savepoints/}/_metadata" ] || { echo "no _metadata in $spdir for $loc"; return 1; }
    expect "savepoint trigger" "$(fj ticker-a savepoint.triggerReason) $(fj ticker-a savepoint.stop)" "update true" || return 1
    # GET /jobs/<id> answers from Flink's cache of the job (web.refresh-interval, 3 s) for a while
    fj_state_is() { [ "$(fj_flink_state "$1")" = "$2" ]; }
    poll 30 fj_state_is "$a_id" FINISHED ||
      { echo "Flink's state of the old job $a_id (stopped with a savepoint): $(fj_flink_state "$a_id"), want FINISHED"
        echo "savepoint: $(fj ticker-a savepoint)"; jm_get "$ns" session /jobs/overview; echo; return 1; }
    job_restored_from "$ns" session "$id" "$loc" || return 1
    expect "restored from a savepoint" "$(jm_get "$ns" session "/jobs/$id/checkpoints" | jget latest.restored.is_savepoint)" \
      true || return 1
    expect "ticker-a observedGeneration" "$(fj ticker-a observedGeneration)" 2 || return 1
    expect "ticker-a nextRevision (update done)" "$(fj ticker-a nextRevision)" "" || return 1
    # the other FlinkJob untouched: the same job, RUNNING
    expect "ticker-b's job id" "$(fj ticker-b jobID)" "$b_id" || return 1
    expect "Flink's state of ticker-b's job $b_id" "$(fj_flink_state "$b_id")" RUNNING || return 1
    # the resubmission's jar deleted too
    poll 30 fj_no_jars || { echo "jars on the session cluster: $(jm_get "$ns" session /jars)"; return 1; }
    echo "ticker-a now $id from $loc"
  }
  check "$desc: spec.job.args of one -> stop-with-savepoint, resubmitted restored from that savepoint; the other keeps its job RUNNING" \
    t_fj_upgrade
  t_fj_delete() {
    a_id=$(fj ticker-a jobID)
    b_id=$(fj ticker-b jobID)
    [ -n "$a_id" ] && [ -n "$b_id" ] || { echo "job ids '$a_id' '$b_id'"; return 1; }
    kc -n "$ns" delete flinkjob ticker-b --wait=true --timeout=60s >/dev/null ||
      { echo "ticker-b not deleted: $(jp "$ns" flinkjob/ticker-b '{.metadata}')"; tail -n 15 "$WORK/$c.log"; return 1; }
    fj_state_is() { [ "$(fj_flink_state "$1")" = "$2" ]; }
    poll 30 fj_state_is "$b_id" CANCELED ||
      { echo "Flink's state of the deleted FlinkJob's job $b_id: $(fj_flink_state "$b_id"), want CANCELED"; return 1; }
    expect "Flink's state of ticker-a's job $a_id" "$(fj_flink_state "$a_id")" RUNNING || return 1
    expect "ticker-a state" "$(fj ticker-a state)" Running
  }
  check "$desc: a deleted FlinkJob's job is cancelled in Flink before the object goes; the other runs on" t_fj_delete
  fj_done "$c"
}
case_flinkjob() { flinkjob_case flinkjob 1.20.5; }
case_flinkjob2() { flinkjob_case flinkjob2 2.3.0; }

# fjhealth_case CASE VERSION: the health policy and savepointRetention of FlinkJobs on the image
# of Flink VERSION (one session cluster, pods of 200m CPU requests, two FlinkJobs)
fjhealth_case() {
  local c=$1 version=$2
  local desc="real pods, Flink $version: FlinkJob health and savepointRetention"
  local ns spdir jar_dir jar_pid jar_url
  fj_start "$c" "$version" "$desc" || return 0
  # Flink restarts a failing job 1000 times, 1 s apart (flinkProperties is the session cluster's last key)
  { fj_session_cluster session "$spdir" "$version"
    printf '    %s\n' 'restart-strategy.type: fixed-delay' 'restart-strategy.fixed-delay.attempts: "1000"' \
      'restart-strategy.fixed-delay.delay: 1 s'; } | kc -n "$ns" apply -f - >/dev/null
  # looping: the Ticker with a negative pause, whose source throws at once
  flink_job looping session "$jar_url" '["-1"]' | kc -n "$ns" apply -f - >/dev/null
  flink_job kept session "$jar_url" '["100"]' 'savepointRetention: {maxCount: 1}' | kc -n "$ns" apply -f - >/dev/null
  t_fj_unhealthy() {
    local id reason n
    fj_failed() { [ "$(fj looping state)" = Failed ]; }
    poll 180 fj_failed || { fj_why looping; why "$ns" session; tail -n 15 "$WORK/$c.log"; return 1; }
    id=$(fj looping jobID)
    reason=$(fj looping job.failureReason)
    case "$reason" in
      "job $id restarted "*" times within 5m (more than 5)") ;;
      *) echo "failureReason '$reason' is not the health policy's"; fj_why looping; return 1 ;;
    esac
    expect "looping's job.health.failed.reason" "$(fj looping job.health.failed.reason)" "$reason" || return 1
    # Flink counted more than 5 restarts of it, and cancels it
    n=$(jm_get "$ns" session "/jobs/$id/metrics?get=numRestarts" | lua5.4 -e \
      'for _, m in ipairs(require("cjson").decode(io.read("a"))) do print(m.value) end')
    [ "${n:-0}" -gt 5 ] || { echo "Flink's numRestarts of $id: '$n', want > 5"; return 1; }
    fj_state_is() { [ "$(fj_flink_state "$1")" = "$2" ]; }
    poll 30 fj_state_is "$id" CANCELED || { echo "Flink's state of $id: $(fj_flink_state "$id"), want CANCELED"; return 1; }
    warning_says "$ns" looping JobUnhealthy "$reason: cancelled, job Failed" || { echo "no Warning JobUnhealthy"; return 1; }
    # still Failed once Flink cancelled it (not Cancelled), Ready False
    expect "looping's state after the cancel" "$(fj looping state)" Failed || return 1
    expect "looping's Ready" "$(fj looping 'conditions[?(@.type=="Ready")].reason')" JobFailed || return 1
    echo "looping $id: $reason"
  }
  check "$desc: a FlinkJob whose job Flink restarts in a loop -> cancelled in Flink, Failed with the health policy's reason, Warning JobUnhealthy" \
    t_fj_unhealthy
  t_fj_retention() {
    local id g loc locs=() d
    poll 120 fj_running kept || { fj_why kept; tail -n 15 "$WORK/$c.log"; return 1; }
    id=$(fj kept jobID)
    tasks_running() { jm_get "$ns" session "/jobs/$id" | all_vertices_running; }
    poll 60 tasks_running || { echo "tasks of $id not all RUNNING"; return 1; }
    for g in 1 2 3; do
      kc -n "$ns" patch flinkjob kept --type merge -p "{\"spec\":{\"job\":{\"savepointGeneration\":$g}}}" >/dev/null ||
        return 1
      # the request is consumed once its savepoint succeeded
      taken() { [ "$(fj kept job.savepointGeneration)" = "$g" ]; }
      poll 60 taken || { echo "savepoint $g: $(fj kept savepoint)"; return 1; }
      loc=$(fj kept job.savepointLocation)
      [ -s "$spdir/${loc#file:/savepoints/}/_metadata" ] || { echo "no _metadata for $loc"; return 1; }
      locs+=("$loc")
    done
    # the two older disposed through Flink (one at a time), the newest kept
    history() { fj kept 'job.savepointHistory[*].location'; }
    on_host() { find "$spdir" -mindepth 1 -maxdepth 1 -name 'savepoint-*' | wc -l; }
    disposed() { [ "$(history)" = "${locs[2]}" ] && [ "$(on_host)" = 1 ]; }
    poll 60 disposed || {
      echo "history: $(history), want ${locs[2]}"; ls -l "$spdir"; fj kept job.savepointHistory; echo
      tail -n 15 "$WORK/$c.log"; return 1
    }
    [ -s "$spdir/${locs[2]#file:/savepoints/}/_metadata" ] || { echo "kept ${locs[2]} has no _metadata"; return 1; }
    for loc in "${locs[0]}" "${locs[1]}"; do
      d="$spdir/${loc#file:/savepoints/}"
      [ ! -e "$d" ] || { echo "disposed $loc still on the host"; ls -lR "$d"; return 1; }
      expect "Events SavepointDisposed of kept for $loc" "$(kc -n "$ns" get events \
        --field-selector involvedObject.name=kept,reason=SavepointDisposed \
        -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}' | grep -cF "savepoint $loc (manual,")" 1 || return 1
    done
    # the job ran on, untouched
    expect "kept's job id" "$(fj kept jobID)" "$id" || return 1
    expect "Flink's state of kept's job $id" "$(fj_flink_state "$id")" RUNNING || return 1
    echo "kept ${locs[2]}, disposed ${locs[0]} ${locs[1]}"
  }
  check "$desc: savepointRetention.maxCount 1, 3 savepoints by savepointGeneration -> the newest kept, the 2 older disposed through Flink (directories gone from the host, Events), the job Running" \
    t_fj_retention
  fj_done "$c"
}
case_flinkjobhealth() { fjhealth_case flinkjobhealth 1.20.5; }
case_flinkjobhealth2() { fjhealth_case flinkjobhealth2 2.3.0; }
