# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# case healthrestart (issue 29, item 3): the health policy (policies/health.lua, shipped
# tunables: more than 5 restarts within 5m) on real Flink 1.20 pods. Two job clusters side by
# side: `looping` runs the Ticker with a negative pause, whose source throws at once, under
# Flink's own fixed-delay restart strategy (1000 attempts, 1 s apart), so Flink keeps it
# RUNNING/RESTARTING for ever; `steady` runs the Ticker as is. The controller reads each job's
# numRestarts (GET /jobs/<id>/metrics?get=numRestarts), cancels `looping` and marks it Failed
# with a Warning JobUnhealthy; `steady` keeps running, the same job, untouched. Then the same
# loop on Flink 2.3.0 (`looping2`, once `looping` is gone): the metric is read alike. Sourced by
# tests/integration/run.sh after realpods.sh (ticker_cluster, real_node_ready, node_has_image,
# job_field, is_job, jm_get, jget, why).

# health_cluster NAME ARGS-YAML VERSION SAVEPOINT-DIR: realpods.sh's Ticker job cluster with these
# args and Flink's fixed-delay restart strategy (flinkProperties is its last key). Its
# FromSavepointOnFailure needs a savepoint to restart from: the looping job never has one, so
# once Failed it stays Failed.
# Its pods request 200m CPU (limit 500m): four of them and the submitters fit on the real node's two
# cores beside the node's own pods (at 500m each, the third cluster pod already waited).
health_cluster() {
  ticker_cluster "$1" "$4" "$3" | sed -e "s/^    className: testenv.Ticker$/&\n    args: $2/" | small_requests
  printf '    %s\n' 'restart-strategy.type: fixed-delay' 'restart-strategy.fixed-delay.attempts: "1000"' \
    'restart-strategy.fixed-delay.delay: 1 s'
}

case_healthrestart() {
  local desc="real pods, Flink 1.20.5: health policy"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  node_has_image "docker.io/library/flink:1.20.5" || { skip "$desc" "no flink:1.20.5 image on the node"; return 0; }
  local ns steady_id spdir
  ns=$(new_ns healthrestart real)
  spdir=$TESTENV_DIR/savepoints/$ns
  mkdir -p "$spdir"
  # the node holds about four Flink pods of 500m: wait for the earlier cases' pods to go
  real_node_free
  FLINK_DIRECT=1 start_controller healthrestart --namespace "$ns"
  health_cluster looping '["-1"]' 1.20.5 "$spdir" | kc -n "$ns" apply -f - >/dev/null
  health_cluster steady '["100"]' 1.20.5 "$spdir" | kc -n "$ns" apply -f - >/dev/null
  # health_judged CLUSTER: CLUSTER's looping job judged, cancelled, Failed, told
  health_judged() {
    local c=$1 id reason n
    # its id known while Flink restarts it (state Running), then judged
    poll 150 is_job "$ns" "$c" Failed || { why "$ns" "$c"; tail -n 15 "$WORK/healthrestart.log"; return 1; }
    id=$(job_field "$ns" "$c" id)
    reason=$(job_field "$ns" "$c" failureReason)
    case "$reason" in
      "job $id restarted "*" times within 5m (more than 5)") ;;
      *) echo "failureReason '$reason' is not the health policy's"; return 1 ;;
    esac
    expect "job.health.failed.reason" "$(job_field "$ns" "$c" health.failed.reason)" "$reason" || return 1
    # Flink counted at least that many restarts, and the job is cancelled there
    n=$(jm_get "$ns" "$c" "/jobs/$id/metrics?get=numRestarts" | lua5.4 -e \
      'for _, m in ipairs(require("cjson").decode(io.read("a"))) do print(m.value) end')
    [ "${n:-0}" -gt 5 ] || { echo "Flink's numRestarts of $id: '$n', want > 5"; return 1; }
    cancelled() { [ "$(jm_get "$ns" "$c" "/jobs/$id" | jget state)" = CANCELED ]; }
    poll 30 cancelled || { echo "Flink's state of $id: $(jm_get "$ns" "$c" "/jobs/$id" | jget state)"; return 1; }
    warning_says "$ns" "$c" JobUnhealthy "$reason: cancelled, job Failed" || return 1
    # still Failed once Flink cancelled it (not Cancelled)
    expect "job state after the cancel" "$(job_field "$ns" "$c" state)" Failed
  }
  check "$desc: a job Flink restarts in a loop -> cancelled in Flink, job Failed with the policy's reason, Warning JobUnhealthy" \
    health_judged looping
  t_health_steady() {
    poll 120 is_job "$ns" steady Running || { why "$ns" steady; return 1; }
    steady_id=$(job_field "$ns" steady id)
    # its samples are kept (numRestarts 0) and nothing was judged
    expect "steady's job.health.jobID" "$(job_field "$ns" steady health.jobID)" "$steady_id" || return 1
    expect "steady's restart samples" "$(job_field "$ns" steady 'health.restarts[*].count')" 0 || return 1
    expect "steady's job.health.failed" "$(job_field "$ns" steady health.failed)" "" || return 1
    jm_job_running "$ns" steady "$steady_id" || return 1
    ! has_event "$ns" steady JobUnhealthy || { echo "a JobUnhealthy Event about steady"; return 1; }
  }
  check "$desc: the healthy job beside it keeps running, untouched (samples kept, no Event)" t_health_steady
  if node_has_image "docker.io/library/flink:2.3.0"; then
    # looping's pods gone first: with steady's, looping2's would not fit on the node
    real_delete "$ns" looping
    health_cluster looping2 '["-1"]' 2.3.0 "$spdir" | kc -n "$ns" apply -f - >/dev/null
    check "real pods, Flink 2.3.0: health policy: the same loop -> cancelled, Failed, Warning JobUnhealthy" \
      health_judged looping2
  else
    skip "real pods, Flink 2.3.0: health policy" "no flink:2.3.0 image on the node"
  fi
  stop_controller healthrestart >/dev/null
  real_cleanup "$ns" "$spdir"
}
