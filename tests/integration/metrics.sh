# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# case metrics (issue #31): the Flink-level metrics on the controller's /metrics against the
# test environment's real JobManager (--flink-base-url, as case flink and case restart): a
# Ticker job Running and savepointed (spec.job.savepointGeneration), a job that fails at once
# (Ticker -1) restarted once and then Failed for good (a policy copy: 4 s, at most 1 restart).
# Each figure is compared with what kubectl shows of the FlinkClusters (sourced by
# tests/integration/run.sh after cases.sh and proxy.sh: submit_ticker, set_job, job_running,
# savepoint_generation).

# mx_scrape NAME: the controller NAME's /metrics (its port from the log)
mx_scrape() { scrape_metrics "$1"; }
# mx_value FILE SERIES: the value of the sample whose name{labels} is exactly SERIES (status 1
# and nothing printed when absent)
mx_value() { awk -v s="$2" '$1 == s { print $2; f = 1 } END { exit !f }' "$1"; }
# mx_by_state FILE FAMILY NS: "state=count" lines of FAMILY{namespace=NS,state=...}, sorted
mx_by_state() {
  awk -v f="$2{namespace=\"$3\",state=\"" 'index($1, f) == 1 { s = substr($1, length(f) + 1); sub(/"}$/, "", s); print s "=" $2 }' "$1" | sort
}
# kc_by_state NS JSONPATH-FIELD: "state=count" lines of the FlinkClusters of NS by that field
# ("Unknown" when empty), sorted; FIELD "job" counts only clusters with spec.job
kc_by_state() {
  if [ "$2" = job ]; then
    kc -n "$1" get flinkclusters -o jsonpath='{range .items[?(@.spec.job)]}{.status.components.job.state}{"\n"}{end}'
  else
    kc -n "$1" get flinkclusters -o jsonpath='{range .items[*]}{.status.state}{"\n"}{end}'
  fi | awk '{ c[$0 == "" ? "Unknown" : $0]++ } END { for (s in c) print s "=" c[s] }' | sort
}

case_metrics() {
  local ns pdir
  ns=$(new_ns metrics)
  pdir=$(fast_restart_policies metrics 1) || { patch_failed metrics; return 0; }
  start_controller metrics --namespace "$ns" --policy-dir "$pdir" --metrics-addr 127.0.0.1:0
  local sps="savepointsDir: file://$TESTENV_DIR/flink/savepoints"
  sed "s/name: wordcount/name: ticker/; s|savepointsDir: /cache/savepoints|$sps|" \
    "$ROOT/deploy/examples/wordcount.yaml" | kc -n "$ns" apply -f - >/dev/null
  sed "s/name: wordcount/name: crash/; s|savepointsDir: /cache/savepoints|$sps\\n    restartPolicy: FromSavepointOnFailure\\n    fromSavepoint: file://$TESTENV_DIR/flink/savepoints/none|" \
    "$ROOT/deploy/examples/wordcount.yaml" | sed 's/\\n/\n/g' | kc -n "$ns" apply -f - >/dev/null
  job() { jp "$ns" "flinkcluster/$1" "{.status.components.job.$2}"; }
  local m=$WORK/metrics.txt
  t_metrics_jobs() {
    local jid
    jid=$(submit_ticker); [ -n "$jid" ] || { echo "could not submit the Ticker job"; return 1; }
    echo "$jid" >"$WORK/metrics.jid"
    poll 60 is_state "$ns" ticker Running || { echo "ticker: $(state "$ns" ticker)"; return 1; }
    poll 30 job_running "$ns" ticker "$jid" || { echo "ticker job: $(job ticker id) $(job ticker state)"; return 1; }
    # the failing job, restarted once (the test plays the submitter: kwok's pods never run)
    fail() {
      local fid
      poll 60 eval '[ "$(job crash state)" = Pending ] && [ -z "$(job crash id)" ]' ||
        { echo "crash job: $(job crash state) $(job crash id)"; return 1; }
      fid=$(submit_ticker -1); [ -n "$fid" ] || { echo "could not submit the failing Ticker"; return 1; }
      set_job "$ns" crash "$fid" Running || return 1
      poll 40 eval '[ "$(job crash state)" = Failed ]' || { echo "crash job: $(job crash state)"; return 1; }
    }
    fail || return 1
    poll 30 eval '[ "$(job crash restartCount)" = 1 ]' || { echo "restartCount $(job crash restartCount)"; return 1; }
    fail || return 1
    poll 20 has_event "$ns" crash RestartLimitReached || { echo "no RestartLimitReached"; return 1; }
    savepoint_generation "$ns" ticker
  }
  check "metrics: a Ticker job Running and savepointed, a job Failed after 1 restart (host JobManager)" t_metrics_jobs
  # same_states: the scrape's clusters and jobs by state in $ns equal kubectl's (polled: a pass may
  # land between the two reads)
  same_states() {
    mx_scrape metrics >"$m" || return 1
    [ "$(mx_by_state "$m" flink_controller_clusters "$ns")" = "$(kc_by_state "$ns" cluster)" ] &&
      [ "$(mx_by_state "$m" flink_controller_jobs "$ns")" = "$(kc_by_state "$ns" job)" ]
  }
  t_metrics_states() {
    poll 20 same_states || {
      echo "clusters: scraped $(mx_by_state "$m" flink_controller_clusters "$ns" | xargs), kubectl $(kc_by_state "$ns" cluster | xargs)"
      echo "jobs: scraped $(mx_by_state "$m" flink_controller_jobs "$ns" | xargs), kubectl $(kc_by_state "$ns" job | xargs)"
      return 1
    }
    mx_by_state "$m" flink_controller_jobs "$ns" | xargs
    expect "jobs Running + Failed" "$(mx_by_state "$m" flink_controller_jobs "$ns" | xargs)" "Failed=1 Running=1"
  }
  check "metrics: flink_controller_clusters and flink_controller_jobs by namespace and state = kubectl's FlinkClusters" t_metrics_states
  t_metrics_restarts() {
    local c
    for c in ticker crash; do
      expect "job_restarts of $c" "$(mx_value "$m" "flink_controller_job_restarts{namespace=\"$ns\",cluster=\"$c\"}")" \
        "$(job "$c" restartCount)" || return 1
    done
    expect "crash restartCount" "$(job crash restartCount)" 1
  }
  check "metrics: flink_controller_job_restarts = status.components.job.restartCount (1 and 0)" t_metrics_restarts
  t_metrics_savepoint() {
    local t
    t=$(job ticker lastSavepointTime)
    [ -n "$t" ] || { echo "no lastSavepointTime"; return 1; }
    expect "last savepoint timestamp ($t)" \
      "$(mx_value "$m" "flink_controller_job_last_savepoint_timestamp_seconds{namespace=\"$ns\",cluster=\"ticker\"}")" \
      "$(date -d "$t" +%s)" || return 1
    ! mx_value "$m" "flink_controller_job_last_savepoint_timestamp_seconds{namespace=\"$ns\",cluster=\"crash\"}" ||
      { echo "a savepoint time for crash, which has none"; return 1; }
    expect "savepoints_total success" \
      "$(mx_value "$m" "flink_controller_savepoints_total{namespace=\"$ns\",operation=\"savepoint\",result=\"success\"}")" 1 ||
      return 1
    sleep 11 # more passes (the job poll every 10 s) see the same Succeeded savepoint: not counted again
    mx_scrape metrics >"$m" || return 1
    expect "savepoints_total success after more passes" \
      "$(mx_value "$m" "flink_controller_savepoints_total{namespace=\"$ns\",operation=\"savepoint\",result=\"success\"}")" 1 ||
      return 1
    ! grep -q "^flink_controller_savepoints_total{namespace=\"$ns\",.*result=\"failure\"}" "$m" ||
      { echo "a savepoint failure counted"; return 1; }
  }
  check "metrics: job_last_savepoint_timestamp_seconds = lastSavepointTime; savepoints_total{savepoint,success} 1, not counted again" t_metrics_savepoint
  t_metrics_flink() {
    local r jid
    jid=$(cat "$WORK/metrics.jid")
    for r in 'GET,/jobs/overview,200' 'GET,/jobs/:jobid/savepoints/:triggerid,200' 'GET,/jobs/:jobid/exceptions,200'; do
      IFS=, read -r meth path code <<<"$r"
      local n d
      n=$(mx_value "$m" "flink_controller_flink_requests_total{method=\"$meth\",path=\"$path\",code=\"$code\"}") ||
        { echo "no series $r"; grep '^flink_controller_flink_requests_total' "$m"; return 1; }
      d=$(mx_value "$m" "flink_controller_flink_request_duration_seconds_count{method=\"$meth\",path=\"$path\"}")
      echo "$meth $path $code: $n requests, $d timed"
      [ "$n" -gt 0 ] && [ "${d:-0}" -gt 0 ] || return 1
    done
    grep -q '^flink_controller_flink_requests_total{method="POST",path="/jobs/:jobid/savepoints",code="20[02]"}' "$m" ||
      { echo "no POST /jobs/:jobid/savepoints answered 200/202"; return 1; }
    ! grep '^flink_controller_flink_request' "$m" | grep -q "$jid" || { echo "a raw job id in a path label"; return 1; }
  }
  check "metrics: flink_requests_total by route template (:jobid, :triggerid) with code 200, durations counted, no raw ids" t_metrics_flink
  t_metrics_process() {
    local rss
    rss=$(mx_value "$m" process_resident_memory_bytes) || { echo "no process_resident_memory_bytes"; return 1; }
    echo "resident $rss bytes, $(mx_value "$m" process_open_fds) fds, cpu $(mx_value "$m" process_cpu_seconds_total) s"
    awk -v v="$rss" 'BEGIN { exit !(v > 1000000) }' || return 1
    [ "$(mx_value "$m" process_open_fds)" -gt 3 ] || return 1
    grep -q '^flink_controller_build_info{version="[^"]*",commit="[^"]*",lua="Lua 5\.4[^"]*"} 1$' "$m" ||
      { echo "no build_info"; return 1; }
  }
  check "metrics: process_resident_memory_bytes > 1 MB, process_open_fds, build_info present" t_metrics_process
  t_metrics_stale() {
    kc -n "$ns" delete flinkcluster crash --wait=false >/dev/null || return 1
    gone() {
      mx_scrape metrics >"$m" &&
        ! grep -q "cluster=\"crash\"" "$m" && [ "$(mx_by_state "$m" flink_controller_jobs "$ns" | xargs)" = "Running=1" ]
    }
    poll 30 gone || { echo "series left:"; grep "namespace=\"$ns\"" "$m"; return 1; }
  }
  check "metrics: a deleted FlinkCluster's series are gone at the next scrape" t_metrics_stale
  stop_controller metrics >/dev/null
  [ -f "$WORK/metrics.jid" ] && curl -s -X PATCH "$FLINK_REST_URL/jobs/$(cat "$WORK/metrics.jid")?mode=cancel" >/dev/null 2>&1
  return 0
}
