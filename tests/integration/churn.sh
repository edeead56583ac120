# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Issue 14 item 4 (sourced by tests/integration/run.sh): churn with kill -9 (case `churn`).
# 100 FlinkClusters (session clusters, job clusters with a submitter Job, and c100 whose job the
# controller submits through the host Flink's REST API) are created, updated (TaskManager
# replicas, flinkProperties, image, pod labels) and deleted on a seeded schedule (churn.py
# drive) while the controller is SIGKILLed at random moments CHURN_KILLS (100) times and started
# again at once; then one controller runs until it writes nothing for 10 s and churn.py sweep
# counts, against `render` of each live cluster and its status: missing, extra and orphaned
# children, duplicate submitter Jobs, more Flink jobs not ended than REST clusters (or one no
# cluster follows, or c100's job not Running), observedGeneration != generation, children that
# do not match the current spec. Each count must be 0; and no instance may exit by itself or log an error. CHURN_SEED=<n>
# repeats a schedule and the kill intervals (the seed is printed; the interleaving of the two
# with the controller's own timing is not replayed exactly); CHURN_SECONDS (120) is the length
# of the schedule, the kills are spread over it. Half the clusters have recreateOnUpdate false.
# Garbage collection of deleted clusters' children is the kube-controller-manager's; the sweep
# is repeated for up to 60 s until it passes.

case_churn() {
  local ns seed=${CHURN_SEED:-$((($(date +%s%N) / 1000) % 1000000))} kills=${CHURN_KILLS:-100}
  local secs=${CHURN_SECONDS:-120} port dir jarpid
  ns=$(new_ns churn)
  echo "# churn: CHURN_SEED=$seed CHURN_KILLS=$kills CHURN_SECONDS=$secs"
  dir=$WORK/churn-jars
  mkdir -p "$dir" && cp "$TESTENV_FLINK_JOBS_JAR" "$dir/testenv-jobs.jar"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m http.server --bind 127.0.0.1 --directory "$dir" "$port" >"$WORK/churn-jarserver.log" 2>&1 &
  jarpid=$!
  local t0 t1 t2 t3
  t0=$(date +%s)
  local since=$((t0 * 1000))
  start_controller churn-0 --namespace "$ns"
  python3 "$HERE/churn.py" drive --seed "$seed" --ns "$ns" --seconds "$secs" \
    --rest-jar "http://127.0.0.1:$port/testenv-jobs.jar" --savepoints "file://$TESTENV_DIR/flink/savepoints" \
    >"$WORK/churn-drive.log" 2>&1 &
  local drive=$! i rc crashed=0 mean_ms ms
  # the kills: at random moments (0.1 s to twice the mean apart, the mean spreading them over
  # the schedule), the next controller started at once; an instance that had exited before its
  # kill (status other than 137) counts as a crash
  RANDOM=$seed
  # (a stop and a start take about 0.4 s of the interval here)
  mean_ms=$((secs * 1000 / kills - 400 > 100 ? secs * 1000 / kills - 400 : 100))
  for i in $(seq 1 "$kills"); do
    ms=$((100 + RANDOM % (2 * mean_ms - 100)))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    rc=$(stop_controller "churn-$((i - 1))" KILL)
    [ "$rc" = 137 ] || { crashed=$((crashed + 1)); echo "# churn: controller churn-$((i - 1)) had exited: status $rc"; }
    start_controller "churn-$i" --namespace "$ns"
  done
  wait "$drive"
  t1=$(date +%s)
  rc=$(stop_controller "churn-$kills" KILL)
  [ "$rc" = 137 ] || crashed=$((crashed + 1))
  start_controller churn-quiet --namespace "$ns" --metrics-addr 127.0.0.1:0 --health-addr 127.0.0.1:0
  local calm
  # at most 120 s: pods the StatefulSet controller keeps replacing after the churn's quick
  # re-creations under the same names (kubernetes/kubernetes#131284) keep statuses moving
  # between Running and Reconciling, honestly written; the sweep below decides
  calm=$(quiet churn-quiet 10 120) || echo "# churn: $calm (status writes continue while pods are replaced)"
  t2=$(date +%s)
  # garbage collection of deleted clusters' children is the kube-controller-manager's: the
  # sweep is repeated (for at most 60 s) until it passes, the last one is reported
  local sweep=$WORK/churn-sweep.txt
  until python3 "$HERE/churn.py" sweep --ns "$ns" --bin "$FC_BIN" --flink "$FLINK_REST_URL" --since "$since" \
    >"$sweep" 2>&1 ||
    [ $(($(date +%s) - t2)) -ge 60 ]; do sleep 2; done
  t3=$(date +%s)
  grep -E '^# (Flink jobs since|[0-9]+ live clusters)' "$sweep" | sed 's/^# /# churn sweep: /'
  grep -v '^#' "$sweep" | tr '\n' ' ' | sed 's/ \([a-z]\)/, \1/g; s/^/# churn sweep: /; s/ *$/\n/'
  echo "# churn: schedule + $kills kills $((t1 - t0)) s, quiet after $((t2 - t1)) s, sweep $((t3 - t2)) s; $(tail -n 1 "$WORK/churn-drive.log")"
  t_churn_ops() {
    grep -q '^operations: ' "$WORK/churn-drive.log" || { tail -n 20 "$WORK/churn-drive.log"; return 1; }
    ! grep 'FAILED' "$WORK/churn-drive.log" || return 1
    expect "controllers that exited before their kill" "$crashed" 0 || return 1
    # an error in any instance's log (a write refused other than by a conflict, a failed pass)
    local errs
    errs=$(cat "$WORK"/churn-[0-9]*.log "$WORK/churn-quiet.log" | grep -c '^[^ ]* error ')
    [ "$errs" = 0 ] || { grep -h '^[^ ]* error ' "$WORK"/churn-[0-9]*.log "$WORK/churn-quiet.log" | head -n 10; return 1; }
  }
  check "churn (CHURN_SEED=$seed): the schedule ran, $kills SIGKILLs, no controller exited by itself or logged an error" \
    t_churn_ops
  t_churn_sweep() {
    cat "$sweep"
    local k v
    for k in missing extra orphaned duplicate_submitters duplicate_flink_jobs rest_job_not_running generation_lag \
      spec_mismatch render_failed; do
      v=$(awk -v k="$k" '$1 == k { print $2 }' "$sweep")
      expect "$k" "$v" 0 || return 1
    done
  }
  check "churn (CHURN_SEED=$seed): sweep: no missing, extra or orphaned child, no duplicate submitter or Flink job, the REST job runs, observedGeneration = generation, children match the spec" \
    t_churn_sweep
  stop_controller churn-quiet >/dev/null
  kill "$jarpid" 2>/dev/null
  # the REST cluster's job stops with the namespace; stop whatever still runs in the host Flink
  local jid
  for jid in $(curl -sf "$FLINK_REST_URL/jobs/overview" | python3 -c 'import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if j["state"] not in ("FINISHED", "CANCELED", "FAILED"): print(j["jid"])'); do
    curl -s -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null 2>&1
  done
  kc delete namespace "$ns" --wait=false >/dev/null 2>&1
}
