# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# Job lifecycle cases (issue 9) on the real node: real JobManager and TaskManager pods of
# flink:1.20.5, the controller outside the cluster reaching each JobManager through the API
# server's service proxy (sourced by tests/integration/run.sh after realpods.sh: real_node_ready,
# skip, job_field, is_job, jm_get, jget, why, all_vertices_running).
#   reallifecycle  REST submission of the test jar served by a loopback HTTP server; a
#                  controller killed with a savepoint in flight finds it by its trigger id; an
#                  update after a restore takes a fresh savepoint; a job that fails at once is
#                  restarted on the schedule and Failed at the limit
#   realsubmitfail a submitter that fails: its termination message is the job's failureReason

# jm_post NS NAME PATH JSON: POST PATH with a JSON body to the cluster's JobManager through the
# API server's service proxy; prints the answer
jm_post() {
  printf '%s' "$4" >"$WORK/post.json"
  kc create --raw "/api/v1/namespaces/$1/services/$2-jobmanager:ui/proxy$3" -f "$WORK/post.json"
}

case_reallifecycle() {
  local desc="real pods: lifecycle"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  local ns spdir dir port srv pdir
  ns=$(new_ns reallife real)
  spdir=$TESTENV_DIR/savepoints/$ns
  mkdir -p "$spdir"
  # the jar over HTTP on the loopback (the controller runs on this host and downloads it)
  dir=$WORK/realjars
  mkdir -p "$dir" && cp "$TESTENV_FLINK_JOBS_JAR" "$dir/testenv-jobs.jar"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m http.server --bind 127.0.0.1 --directory "$dir" "$port" >"$WORK/realjars.log" 2>&1 &
  srv=$!
  # the restart schedule of a policy copy that changes only settings.lua's RESTART_* (4 s, x2, at
  # most 2 restarts), as an operator would
  pdir=$(fast_restart_policies reallife 2) || { patch_failed reallifecycle; kill "$srv"; return 0; }
  FLINK_DIRECT=1 start_controller reallife1 --namespace "$ns" --policy-dir "$pdir"
  ticker_cluster life "$spdir" | sed "s|jarFile: .*|jarFile: http://127.0.0.1:$port/testenv-jobs.jar\\n    args: [\"100\"]|" |
    sed 's/\\n/\n/g' | kc -n "$ns" apply -f - >/dev/null
  job() { job_field "$ns" life "$1"; }
  sp() { jp "$ns" flinkcluster/life "{.status.savepoint.$1}"; }
  tasks_running() { jm_get "$ns" life "/jobs/$(job id)" | all_vertices_running; }
  t_life_rest() {
    poll 240 is_job "$ns" life Running || { why "$ns" life; tail -n 15 "$WORK/reallife1.log"; return 1; }
    local id
    id=$(job id)
    expect "job id = the submission's" "$id" "$(job submission.jobID)" || return 1
    # our Running includes Flink's INITIALIZING and CREATED (job.FLINK_STATES): Flink's own
    # RUNNING may come a few polls later on a busy node
    jm_job_running "$ns" life "$id" || return 1
    ! kc -n "$ns" get job life-job-submitter >/dev/null 2>&1 || { echo "a submitter Job was created"; return 1; }
    expect "jar downloads" "$(grep -c 'GET /testenv-jobs.jar' "$WORK/realjars.log")" 1 || return 1
    poll 60 tasks_running || { echo "tasks of $id not all RUNNING"; return 1; }
  }
  check "$desc: jarFile http://127.0.0.1:<port>/testenv-jobs.jar -> downloaded, uploaded and run through the API server proxy with our job id; Running, no submitter Job" t_life_rest
  t_life_killed() {
    local id tid before after loc
    id=$(job id)
    stop_controller reallife1 KILL >/dev/null
    tid=$(printf '%08x%024x' "$(date +%s)" 7)
    before=$(find "$spdir" -maxdepth 1 -name 'savepoint-*' | wc -l)
    # the dead controller had written the trigger id and Flink had taken its trigger
    kc -n "$ns" patch flinkcluster life --subresource=status --type=merge -p "{\"status\":{\"savepoint\":{
      \"state\":\"InProgress\",\"triggerID\":\"$tid\",\"jobID\":\"$id\",\"triggerReason\":\"scheduled\",
      \"triggerTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"requestTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}}}" >/dev/null ||
      return 1
    jm_post "$ns" life "/jobs/$id/savepoints" \
      "{\"target-directory\":\"file:///savepoints\",\"cancel-job\":false,\"triggerId\":\"$tid\"}" | grep -q "$tid" ||
      { echo "Flink did not take the trigger"; return 1; }
    FC_LOG_LEVEL=debug FLINK_DIRECT=1 start_controller reallife2 --namespace "$ns" --policy-dir "$pdir"
    poll 90 eval '[ "$(sp state)" = Succeeded ]' || { echo "savepoint: $(sp state) $(sp message)"; return 1; }
    expect "trigger id" "$(sp triggerID)" "$tid" || return 1
    loc=$(job savepointLocation)
    expect "location = Flink's for that id" "$loc" \
      "$(jm_get "$ns" life "/jobs/$id/savepoints/$tid" | jget operation.location)" || return 1
    [ -s "$spdir/${loc#file:/savepoints/}/_metadata" ] || { echo "no _metadata for $loc"; return 1; }
    sleep 3
    after=$(find "$spdir" -maxdepth 1 -name 'savepoint-*' | wc -l)
    expect "savepoints written" "$((after - before))" 1 || return 1
    grep -q "method=GET path=/jobs/$id/savepoints/$tid" "$WORK/reallife2.log" || { echo "no lookup by the trigger id"; return 1; }
    ! grep -q "method=POST path=/jobs/$id/savepoints" "$WORK/reallife2.log" || { echo "triggered again"; return 1; }
  }
  check "$desc: controller killed (SIGKILL) with a savepoint in flight: the next one finds it by its trigger id (Succeeded, one savepoint, no second trigger)" t_life_killed
  t_life_update() {
    local old_id restored from
    old_id=$(job id)
    restored=$(job savepointLocation)
    # a fresh restore first: JobManager restarts are tested by realticker; here the job is
    # resubmitted from `restored` by an update, then updated again at once
    kc -n "$ns" patch flinkcluster life --type=merge -p '{"spec":{"job":{"args":["50"]}}}' >/dev/null || return 1
    newer() { local i; i=$(job id); [ -n "$i" ] && [ "$i" != "$old_id" ] && is_job "$ns" life Running; }
    poll 240 newer || { why "$ns" life; return 1; }
    from=$(job fromSavepoint)
    [ -n "$from" ] && [ "$from" != "$restored" ] || { echo "update restored from '$from', the older '$restored'"; return 1; }
    expect "the update's savepoint was a stop" "$(sp triggerReason)/$(sp stop)" "update/true" || return 1
    expect "Flink: the old job FINISHED (stopped, not cancelled)" "$(jm_get "$ns" life "/jobs/$old_id" | jget state)" FINISHED ||
      return 1
    poll 60 tasks_running || { echo "tasks not running after the update"; return 1; }
    # updated again right after that restore: a fresh stop-with-savepoint, not the one restored from
    local second_old second_from
    second_old=$(job id)
    kc -n "$ns" patch flinkcluster life --type=merge -p '{"spec":{"job":{"args":["40"]}}}' >/dev/null || return 1
    newer2() { local i; i=$(job id); [ -n "$i" ] && [ "$i" != "$second_old" ] && is_job "$ns" life Running; }
    poll 240 newer2 || { why "$ns" life; return 1; }
    second_from=$(job fromSavepoint)
    [ -n "$second_from" ] && [ "$second_from" != "$from" ] ||
      { echo "the second update restored from '$second_from', the savepoint the job was restored from"; return 1; }
    [ -s "$spdir/${second_from#file:/savepoints/}/_metadata" ] || { echo "no _metadata for $second_from"; return 1; }
  }
  check "$desc: an update right after a restore stops the job with a fresh savepoint and resubmits from it (never the one it was restored from)" t_life_update
  t_life_restart() {
    local t0 id
    kc -n "$ns" patch flinkcluster life --type=merge -p '{"spec":{"job":{"args":["-1"]}}}' >/dev/null || return 1
    # the update resubmits a Ticker whose source throws at once (Thread.sleep(-1))
    failed_once() { [ "$(job state)" = Failed ] && [ -n "$(job nextRestartTime)" ]; }
    poll 240 failed_once || { why "$ns" life; return 1; }
    t0=$(date +%s)
    # Flink's cause (GET /jobs/<id>/exceptions, asked when FAILED is seen) follows in the pass its
    # answer starts, so within a second or so, and always before the restart
    local rc0
    rc0=$(job restartCount)
    cause_shown() {
      case "$(job failureReason)" in
        *"FAILED: Caused by: java.lang.IllegalArgumentException: timeout value is negative"*) return 0 ;;
      esac
      return 1
    }
    poll 10 cause_shown || { echo "failureReason: $(job failureReason)"; return 1; }
    expect "restarts before the cause was shown" "$(job restartCount)" "$rc0" || return 1
    poll 120 eval '[ "$(job restartCount)" -ge 1 ]' || { echo "no restart: $(job state)"; return 1; }
    [ $(($(date +%s) - t0)) -ge 3 ] || { echo "restarted before the 4 s delay"; return 1; }
    poll 240 has_event "$ns" life RestartLimitReached || { why "$ns" life; return 1; }
    id=$(job id)
    sleep 12
    expect "after the limit" "$(job state)/$(job restartCount)/$(job id)" "Failed/2/$id" || return 1
    expect "Flink's state of the last job" "$(jm_get "$ns" life "/jobs/$id" | jget state)" FAILED || return 1
    expect "JobRestarted Events" \
      "$(kc -n "$ns" get events --field-selector involvedObject.name=life,reason=JobRestarted -o name | wc -l)" 2
  }
  check "$desc: a job that fails at once on real Flink: Failed with the cause, restarted on the schedule (4 s, 8 s), Failed for good at the limit (2)" t_life_restart
  kill "$srv" 2>/dev/null
  real_done reallife2 "$ns" life "$spdir"
}

case_realsubmitfail() {
  local desc="real pods: a submitter that fails (no such jar): its termination message is the job's failureReason"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  local ns; ns=$(new_ns realsubfail real)
  FLINK_DIRECT=1 start_controller realsubfail --namespace "$ns"
  ticker_cluster nojar "$TESTENV_DIR/savepoints/$ns" | sed 's|jarFile: .*|jarFile: /opt/flink/usrlib/missing.jar|' |
    kc -n "$ns" apply -f - >/dev/null
  t_realsubmitfail() {
    poll 240 is_job "$ns" nojar Failed || { why "$ns" nojar; tail -n 15 "$WORK/realsubfail.log"; return 1; }
    local reason msg
    reason=$(job_field "$ns" nojar failureReason)
    msg=$(kc -n "$ns" get pods -l job-name=nojar-job-submitter \
      -o 'jsonpath={.items[0].status.containerStatuses[0].state.terminated.message}')
    [ -n "$msg" ] || { echo "no termination message"; return 1; }
    case "$reason" in "submission failed: "*) ;; *) echo "failureReason: $reason"; return 1 ;; esac
    printf '%s' "$msg" | grep -qF "${reason#submission failed: }" ||
      { echo "failureReason '$reason' is not from the termination message: $msg"; return 1; }
    echo "failureReason: $reason"
    warning_says "$ns" nojar JobStateChanged "$reason" ||
      { echo "no Warning JobStateChanged with the reason"; return 1; }
  }
  check "$desc" t_realsubmitfail
  real_done realsubfail "$ns" nojar "${TESTENV_DIR:?}/savepoints/$ns"
}
