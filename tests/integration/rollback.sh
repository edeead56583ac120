# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# cases rollback and rollback2 (issue 29, item 2): an upgrade that never becomes healthy is rolled
# back, on real Flink 1.20.5 pods (rollback) and Flink 2.3.0 pods (rollback2). The Ticker job cluster of realpods.sh with spec.job.rollback {enabled: true,
# readinessTimeoutSeconds: 30}: once its job runs without restarts for policies/rollback.lua's
# STABLE_SECONDS its revision is status.lastStableRevision. An update to args ["-1"] (the
# Ticker's source throws at once) is stopped with a savepoint and submitted from it; its job never
# becomes healthy, so 30 s after its submission the controller returns to the stable revision:
# the broken job cancelled, the stable spec's job restored from the upgrade's savepoint (Flink's
# restored checkpoint is that savepoint), status.rollback and the condition RolledBack name both
# revisions, a Warning UpgradeRolledBack gives the reason, and the user's spec stays as written.
# Sourced by tests/integration/run.sh after realpods.sh (ticker_cluster, real_node_ready,
# node_has_image, job_field, is_job, jm_get, jget, why).

# rollback_cluster NAME SAVEPOINT-DIR VERSION: the Ticker job cluster of Flink VERSION with rollback
# on; its pods request 200m CPU (limit 500m), as healthrestart's.
rollback_cluster() {
  ticker_cluster "$1" "$2" "$3" "rollback: {enabled: true, readinessTimeoutSeconds: 30}" | small_requests
}

# rollback_case CASE VERSION: the rollback on the image of Flink VERSION (CASE names the
# controller, its log and the namespace)
rollback_case() {
  local c=$1 version=$2
  local desc="real pods, Flink $version: rollback"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  node_has_image "docker.io/library/flink:$version" || { skip "$desc" "no flink:$version image on the node"; return 0; }
  local ns spdir
  ns=$(new_ns "$c" real)
  spdir=$TESTENV_DIR/savepoints/$ns
  mkdir -p "$spdir"
  # the earlier cases' Flink pods gone from the real node first: ours need its room
  real_node_free
  FLINK_DIRECT=1 start_controller "$c" --namespace "$ns"
  rollback_cluster ticker "$spdir" "$version" | kc -n "$ns" apply -f - >/dev/null
  t_rollback_stable() {
    poll 180 is_job "$ns" ticker Running || { why "$ns" ticker; tail -n 15 "$WORK/$c.log"; return 1; }
    # judged healthy after STABLE_SECONDS (20) of running without restarts
    stable() {
      stable_rev=$(jp "$ns" flinkcluster/ticker '{.status.lastStableRevision}')
      [ -n "$stable_rev" ] && [ "$stable_rev" = "$(jp "$ns" flinkcluster/ticker '{.status.currentRevision}')" ]
    }
    poll 60 stable || { echo "lastStableRevision '$stable_rev', currentRevision" \
      "'$(jp "$ns" flinkcluster/ticker '{.status.currentRevision}')'"; return 1; }
    stable_id=$(job_field "$ns" ticker id)
    expect "Flink's state of job $stable_id" "$(jm_get "$ns" ticker "/jobs/$stable_id" | jget state)" RUNNING ||
      return 1
    # each check runs in a subshell: what the next ones need goes through a file
    printf '%s\n' "$stable_rev" "$stable_id" > "$WORK/$c.state"
  }
  check "$desc: job Running, its revision judged stable (status.lastStableRevision = currentRevision)" t_rollback_stable
  t_rollback_upgrade() {
    local stable_rev stable_id broken_rev upgrade_sp out
    { read -r stable_rev; read -r stable_id; } < "$WORK/$c.state" || { echo "no state from the first check"; return 1; }
    out=$(kc -n "$ns" patch flinkcluster ticker --type merge -p '{"spec":{"job":{"args":["-1"]}}}' 2>&1) ||
      { echo "patch: $out"; return 1; }
    # the update: stop with a savepoint, the new revision's job submitted from it
    upgraded() {
      broken_rev=$(jp "$ns" flinkcluster/ticker '{.status.currentRevision}')
      upgrade_sp=$(job_field "$ns" ticker fromSavepoint)
      [ -n "$broken_rev" ] && [ "$broken_rev" != "$stable_rev" ] && [ -n "$upgrade_sp" ]
    }
    poll 120 upgraded || { echo "no upgrade: currentRevision '$broken_rev' (stable '$stable_rev')," \
      "fromSavepoint '$upgrade_sp'"; why "$ns" ticker; tail -n 15 "$WORK/$c.log"; return 1; }
    case "$upgrade_sp" in file:/savepoints/*) ;; *) echo "upgrade savepoint '$upgrade_sp' is not under /savepoints"; return 1 ;; esac
    # stopped with that savepoint: Flink lists the job FINISHED (the stop may still be under way)
    stopped() { [ "$(jm_get "$ns" ticker "/jobs/$stable_id" | jget state)" = FINISHED ]; }
    poll 30 stopped || { echo "Flink's state of the stable job $stable_id:" \
      "$(jm_get "$ns" ticker "/jobs/$stable_id" | jget state), want FINISHED"; return 1; }
    printf '%s\n' "$stable_rev" "$stable_id" "$broken_rev" "$upgrade_sp" > "$WORK/$c.state"
  }
  check "$desc: update to args [-1] -> stop with savepoint, the new revision's job submitted from it" t_rollback_upgrade
  t_rollback_back() {
    local id stable_rev stable_id broken_rev upgrade_sp
    { read -r stable_rev; read -r stable_id; read -r broken_rev; read -r upgrade_sp; } < "$WORK/$c.state" ||
      { echo "no state from the upgrade check"; return 1; }
    # within readinessTimeoutSeconds (30) of the submission, plus the stop and a new submission
    rolled_back() {
      [ "$(jp "$ns" flinkcluster/ticker '{.status.rollback.from} {.status.rollback.to} {.status.currentRevision}')" = \
        "$broken_rev $stable_rev $stable_rev" ] && is_job "$ns" ticker Running
    }
    poll 150 rolled_back || { why "$ns" ticker; jp "$ns" flinkcluster/ticker '{.status.rollback}'; echo;
      tail -n 15 "$WORK/$c.log"; return 1; }
    expect "status.rollback.savepoint" "$(jp "$ns" flinkcluster/ticker '{.status.rollback.savepoint}')" "$upgrade_sp" ||
      return 1
    expect "condition RolledBack" "$(condition "$ns" ticker RolledBack)" "True UpgradeRolledBack" || return 1
    warning_says "$ns" ticker UpgradeRolledBack "revision $broken_rev not healthy within 30 s of its submission" ||
      { echo "no Warning UpgradeRolledBack naming $broken_rev"; return 1; }
    warning_says "$ns" ticker UpgradeRolledBack "rolling back to revision $stable_rev from savepoint $upgrade_sp" ||
      { echo "the Warning UpgradeRolledBack does not name $stable_rev and $upgrade_sp"; return 1; }
    # the user's spec stays as written
    expect "spec.job.args" "$(jp "$ns" flinkcluster/ticker '{.spec.job.args}')" '["-1"]' || return 1
    # Flink runs the stable spec's job, restored from the upgrade's savepoint
    id=$(job_field "$ns" ticker id)
    [ "$id" != "$stable_id" ] || { echo "job id $id is the old one"; return 1; }
    running() { [ "$(jm_get "$ns" ticker "/jobs/$id" | jget state)" = RUNNING ]; }
    poll 60 running || { echo "Flink's state of job $id: $(jm_get "$ns" ticker "/jobs/$id" | jget state)"; return 1; }
    job_restored_from "$ns" ticker "$id" "$upgrade_sp" || return 1
    # the submitter that ran it had the stable spec's arguments (the Ticker's default pause: no -1)
    local args
    args=$(kc -n "$ns" get jobs -l app=flink -o jsonpath='{.items[*].spec.template.spec.containers[0].args}')
    case "$args" in *'"-1"'*) echo "a submitter with the broken args: $args"; return 1 ;; esac
    case "$args" in *"$upgrade_sp"*) ;; *) echo "the submitter does not restore $upgrade_sp: $args"; return 1 ;; esac
  }
  check "$desc: not healthy within 30 s -> rolled back to the stable revision, restored from the upgrade's savepoint, status and Warning UpgradeRolledBack say so, spec kept" t_rollback_back
  stop_controller "$c" >/dev/null
  real_cleanup "$ns" "$spdir"
}
case_rollback() { rollback_case rollback 1.20.5; }
case_rollback2() { rollback_case rollback2 2.3.0; }
