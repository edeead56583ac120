# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# Integration cases on the test environment's real node (sourced by tests/integration/run.sh,
# helpers in lib.sh): real JobManager and TaskManager pods of the Flink images built here
# (flink:1.20.5 and flink:2.3.0, tests/env/), a real submitter running `flink run`, and the
# controller reaching each JobManager as a user's would (no --flink-base-url: through the API
# server's service proxy from outside the cluster, by Service DNS name inside it).
#   realjob      deploy/examples/wordcount-local.yaml: job Succeeded, id from the termination message
#   realjob2     the same on Flink 2.3 (deploy/examples/wordcount-flink2.yaml, config.yaml)
#   realticker   Ticker: Running, /jobmanager/config = the ConfigMap, savepoint by annotation with
#                _metadata on the host, an update stops the job with a savepoint and resumes it
#                from there, JobManager pod deleted and back, cancel with savepoint
#   realticker2  the same on Flink 2.3
#   savepointhistory  spec.job.savepointRetention.maxCount 2, four savepoints: the two older
#                disposed through Flink (gone from the host), the history keeps the newest two
#   autocheckpoint  spec.job.autoCheckpointSeconds: checkpoints triggered through Flink's REST API,
#                recorded with the ids of completed checkpoints of Flink's history (2: Flink 2.3)
#   realrest     the REST answers of 1.20.5 and 2.3.0 JobManagers, recorded live, pass flink_rest_spec
#   flinkoptions the options Flink 2 removed (policies/lib/flinkremoved.lua) match the jars
#   realconfig   a flinkProperties change replaces the pods; the JobManager reports the new value
#   incluster    the controller image built here, `kubectl apply -k deploy/crds` then
#                `kubectl apply -k deploy/`, its pod Ready, reconciling a FlinkCluster with its own
#                ServiceAccount; deploy/monitoring's metrics Service in front of both replicas' /metrics
#   helm         the same image installed by the Helm chart (deploy/helm/flink-controller) into a
#                namespace of its own, watching the case's namespace: wordcount job Succeeded with
#                no request refused; `helm uninstall` removes the controller and its RBAC, not the CRD
#   quickstart   README.md's "Quick start" as written (the image `make image` tags, on the node as
#                `kind load` would put it): helm install with the chart's defaults, quickstart.yaml
#                followed to job Succeeded and cluster Stopped, describe, render; then the same with
#                `kubectl apply -k deploy/crds` and `-k deploy`; nothing of the controller left
# Each case skips (TAP "# SKIP") when the environment has no real node or no Flink image.

# real_node_ready: the environment has a Ready real node and the Flink image on it.
real_node_ready() {
  [ -n "${TESTENV_NODE:-}" ] &&
    [ "$(jp default "node/$TESTENV_NODE" '{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
# node_has_image REF: the real node's containerd holds image REF (docker.io/library/flink:2.3.0)
node_has_image() {
  local refs
  refs=$(ctr --address "$TESTENV_DIR/node/containerd.sock" --namespace k8s.io images ls -q 2>/dev/null)
  grep -qxF "$1" <<<"$refs"
}
# skip DESCRIPTION REASON: one TAP line that counts as passed, with the SKIP directive.
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# job_field NS NAME FIELD: status.components.job.FIELD of a FlinkCluster
job_field() { jp "$1" "flinkcluster/$2" "{.status.components.job.$3}"; }
is_job() { [ "$(job_field "$1" "$2" state)" = "$3" ]; }
# jm_get NS NAME PATH: GET PATH of the cluster's JobManager REST API, through the API server's
# service proxy (what the controller does from outside the cluster)
jm_get() {
  kc get --raw "/api/v1/namespaces/$1/services/$2-jobmanager:ui/proxy$3"
}
jget() { lua5.4 "$ROOT/tests/env/json.lua" "$@"; }
# jm_job_running NS NAME ID: job ID is RUNNING in the cluster's JobManager within 60 s, else
# Flink's state is printed. A status job state Running comes before that: the API maps every
# non-terminal Flink JobStatus to Running, INITIALIZING and CREATED included.
jm_job_running() {
  local ns=$1 name=$2 id=$3
  jm_state_running() { [ "$(jm_get "$ns" "$name" "/jobs/$id" | jget state)" = RUNNING ]; }
  poll 60 jm_state_running ||
    { echo "Flink's state of job $id: got '$(jm_get "$ns" "$name" "/jobs/$id" | jget state)', want 'RUNNING' within 60 s"; return 1; }
}
# config_value KEY: the value of KEY in a JobManager's GET /jobmanager/config answer on stdin
# (a JSON list of {key, value}); empty when absent
config_value() {
  lua5.4 -e 'local t = require("cjson").decode(io.read("a"))
    for _, e in ipairs(t) do if e.key == arg[1] then print(e.value) end end' /dev/null "$1"
}
# job_restored_from NS CLUSTER JOB LOC: status 0 when Flink (CLUSTER's JobManager) reports, within
# 60 s, that job JOB was restored from the savepoint at LOC; else says what it reports.
job_restored_from() {
  local restored
  restored_path() {
    restored=$(jm_get "$1" "$2" "/jobs/$3/checkpoints" | jget latest.restored.external_path)
    [ -n "$restored" ]
  }
  poll 60 restored_path "$1" "$2" "$3" || { echo "job $3 reports no restored savepoint"; return 1; }
  expect "job $3 restored from" "$restored" "$4"
}
# all_vertices_running: true when the GET /jobs/<id> answer on stdin has vertices, all RUNNING
all_vertices_running() {
  lua5.4 -e 'local v = require("cjson").decode(io.read("a")).vertices or {}
    for _, x in ipairs(v) do if x.status ~= "RUNNING" then os.exit(1) end end
    os.exit(#v > 0 and 0 or 1)' /dev/null
}
# why NS NAME: what a failed wait shows (state, job, pods, the controller's last lines)
why() {
  echo "cluster $(state "$1" "$2"), job $(jp "$1" "flinkcluster/$2" '{.status.components.job}')"
  kc -n "$1" get pods -o wide 2>&1 | head -n 10
}

# real_job CASE EXAMPLE VERSION: deploy/examples/EXAMPLE (the wordcount job cluster on the image
# of Flink VERSION) to job Succeeded, its id the submitter's, the cluster cleaned up.
real_job() {
  local c=$1 example=$2 version=$3
  local desc="real pods, Flink $version: $example runs flink run in the submitter; job Succeeded with the id of its termination message; cluster cleaned up"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  node_has_image "docker.io/library/flink:$version" || { skip "$desc" "no flink:$version image on the node"; return 0; }
  local ns; ns=$(new_ns "$c" real)
  FLINK_DIRECT=1 start_controller "$c" --namespace "$ns"
  kc -n "$ns" apply -f "$ROOT/deploy/examples/$example" >/dev/null
  t_realjob() {
    poll 240 is_job "$ns" wordcount Succeeded || { why "$ns" wordcount; tail -n 15 "$WORK/$c.log"; return 1; }
    local id msg
    id=$(job_field "$ns" wordcount id)
    msg=$(kc -n "$ns" get pods -l job-name=wordcount-job-submitter \
      -o 'jsonpath={.items[0].status.containerStatuses[0].state.terminated.message}')
    expect "submitter termination message" "$msg" "jobID: $id" || return 1
    [ "${#id}" -eq 32 ] || { echo "job id '$id' is not 32 hex digits"; return 1; }
    # afterJobSucceeds: DeleteCluster (the default): the JobManager and TaskManagers go away
    poll 60 is_state "$ns" wordcount Stopped || { why "$ns" wordcount; return 1; }
    gone() { ! kc -n "$ns" get statefulset wordcount-jobmanager wordcount-taskmanager >/dev/null 2>&1; }
    poll 30 gone || { echo "StatefulSets still there after cleanup"; return 1; }
  }
  check "$desc" t_realjob
  stop_controller "$c" >/dev/null
}
case_realjob() { real_job realjob wordcount-local.yaml 1.20.5; }
case_realjob2() { real_job realjob2 wordcount-flink2.yaml 2.3.0; }

# ticker_cluster NAME HOSTDIR [VERSION [JOB_LINE]]: a job cluster running testenv.Ticker (runs
# until cancelled) on the image of Flink VERSION (default 1.20.5), its savepoints in HOSTDIR on the
# host (a hostPath volume the JobManager, TaskManager and submitter share), resubmitted from the
# latest savepoint when lost, kept after a cancel; JOB_LINE (YAML "field: value") added to spec.job.
ticker_cluster() {
  local vol="
    volumes: [{name: savepoints, hostPath: {path: $2, type: DirectoryOrCreate}}]
    volumeMounts: [{name: savepoints, mountPath: /savepoints}]" extra=""
  [ -z "${4:-}" ] || extra="
    $4"
  cat <<EOF
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: $1
spec:
  image: {name: "flink:${3:-1.20.5}"}
  jobManager:
    resources: {limits: {memory: "1024Mi", cpu: "500m"}}$vol
  taskManager:
    replicas: 1
    resources: {limits: {memory: "1024Mi", cpu: "500m"}}$vol
  job:
    jarFile: /opt/flink/usrlib/testenv-jobs.jar
    className: testenv.Ticker
    parallelism: 1
    savepointsDir: file:///savepoints$extra
    restartPolicy: FromSavepointOnFailure
    cleanupPolicy: {afterJobCancelled: KeepCluster}$vol
  flinkProperties:
    taskmanager.numberOfTaskSlots: "2"
EOF
}

# small_requests: a filter of ticker_cluster's YAML: its pods request 200m CPU (limit 500m), so that
# four of them and the submitters fit on the real node's two cores beside the node's own pods.
small_requests() {
  sed -e 's/resources: {limits: {memory: "1024Mi", cpu: "500m"}}/resources: {requests: {memory: "1024Mi", cpu: "200m"}, limits: {memory: "1024Mi", cpu: "500m"}}/'
}

# real_node_free: waits (at most 120 s) for the earlier cases' Flink pods to leave the real node;
# a TAP comment naming those still there (a case that leaves its pods costs every later one this wait).
real_node_free() {
  node_flink_pods() { kc get pods -A --field-selector spec.nodeName=testenv-real-0,status.phase=Running -l app=flink \
    -o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}' 2>/dev/null; }
  no_other_pods() { [ -z "$(node_flink_pods)" ]; }
  poll 120 no_other_pods || echo "# pods of earlier cases still on the node: $(node_flink_pods)"
}

# real_delete NS [CLUSTER]: FlinkCluster CLUSTER of NS (default: all of them) deleted with its
# StatefulSets, submitter Jobs and pods, the pods killed after 1 s rather than stopped within the
# 30 s grace period (what follows needs the node's room, not a graceful stop); waits at most 90 s
# for the pods to go, else a TAP comment.
real_delete() {
  local ns=$1 sel=app=flink what=(--all)
  [ -z "${2:-}" ] || { sel="app=flink,cluster=$2"; what=("$2"); }
  kc -n "$ns" delete flinkclusters "${what[@]}" --wait=true --timeout=60s >/dev/null 2>&1
  # the owners first (a StatefulSet would make its pods again), then the pods, shortening the
  # grace period of those the garbage collector is deleting already
  kc -n "$ns" delete statefulsets,jobs -l "$sel" --wait=true --timeout=60s >/dev/null 2>&1
  kc -n "$ns" delete pods -l "$sel" --grace-period=1 --wait=false >/dev/null 2>&1
  pods_gone() { [ -z "$(kc -n "$ns" get pods -o name -l "$sel" 2>/dev/null)" ]; }
  poll 90 pods_gone || echo "# pods of $ns still there: $(kc -n "$ns" get pods -l "$sel" -o name | tr '\n' ' ')"
}

# real_cleanup NS [SPDIR]: the node's room back for the next cases: NS's FlinkClusters and their
# pods gone (real_delete), then the savepoint directory SPDIR.
real_cleanup() {
  real_delete "$1"
  [ -z "${2:-}" ] || rm -rf "$2"
}

# ticker_start CASE VERSION DESC [JOB_LINE]: the start of a Ticker case; status 1 (a TAP skip
# of DESC) without a real node or the image; else sets the caller's `ns` and `spdir` (the host
# directory of the savepoints), starts the controller and applies ticker_cluster `ticker`.
ticker_start() {
  real_node_ready || { skip "$3" "no real node in this environment"; return 1; }
  node_has_image "docker.io/library/flink:$2" || { skip "$3" "no flink:$2 image on the node"; return 1; }
  ns=$(new_ns "$1" real)
  spdir=$TESTENV_DIR/savepoints/$ns
  mkdir -p "$spdir"
  FLINK_DIRECT=1 start_controller "$1" --namespace "$ns"
  ticker_cluster ticker "$spdir" "$2" "${4:-}" | kc -n "$ns" apply -f - >/dev/null
}

# real_ticker CASE VERSION: the Ticker lifecycle on the image of Flink VERSION: submit, the
# running JobManager's configuration, savepoint, update (stop with savepoint, resume from it),
# JobManager lost and resumed from the latest savepoint, cancel (stop with savepoint).
real_ticker() {
  local c=$1 version=$2
  local desc="real pods, Flink $version: Ticker" ns spdir
  ticker_start "$c" "$version" "$desc" || return 0
  t_ticker_running() {
    poll 240 is_job "$ns" ticker Running || { why "$ns" ticker; tail -n 15 "$WORK/$c.log"; return 1; }
    local id
    id=$(job_field "$ns" ticker id)
    jm_job_running "$ns" ticker "$id" || return 1
    expect "cluster state" "$(state "$ns" ticker)" Running || return 1
    # a job is RUNNING before its tasks are: a savepoint needs them deployed and running
    tasks_running() { jm_get "$ns" ticker "/jobs/$id" | all_vertices_running; }
    poll 60 tasks_running || { echo "tasks of $id not all RUNNING"; return 1; }
  }
  check "$desc: job Running in Flink (its id from the submitter), cluster Running" t_ticker_running
  t_ticker_config() {
    local conf want key
    # the JobManager runs the Flink of the image, and the ConfigMap has the file that version reads
    expect "Flink's version (GET /config)" "$(jm_get "$ns" ticker /config | jget flink-version)" "$version" || return 1
    local file=config.yaml; case $version in 1.1[0-8].*|1.[0-9].*) file=flink-conf.yaml ;; esac
    [ -n "$(jp "$ns" configmap/ticker-configmap "{.data.${file//./\\.}}")" ] ||
      { echo "the ConfigMap has no $file"; return 1; }
    conf=$(jm_get "$ns" ticker /jobmanager/config) || { echo "no /jobmanager/config"; return 1; }
    # every key the ConfigMap sets is what the running JobManager reports
    for key in taskmanager.numberOfTaskSlots jobmanager.rpc.address rest.port blob.server.port; do
      want=$(cm_option "$ns" ticker "$key")
      [ -n "$want" ] || { echo "the ConfigMap has no $key"; return 1; }
      expect "$key" "$(printf '%s' "$conf" | config_value "$key")" "$want" || return 1
    done
    # and the TaskManager registered with the slots the ConfigMap gives it
    slots() { [ "$(jm_get "$ns" ticker /overview | jget slots-total)" = 2 ]; }
    poll 30 slots || { echo "slots-total: $(jm_get "$ns" ticker /overview | jget slots-total), want 2"; return 1; }
  }
  check "$desc: the JobManager runs Flink $version and its /jobmanager/config shows the ConfigMap's values; the TaskManager has its 2 slots" t_ticker_config
  t_ticker_savepoint() {
    kc -n "$ns" annotate flinkcluster ticker flinkclusters.flinkoperator.k8s.io/user-control=savepoint >/dev/null ||
      return 1
    control_done() { [ "$(jp "$ns" flinkcluster/ticker '{.status.control.name} {.status.control.state}')" = "savepoint Succeeded" ]; }
    poll 90 control_done || { echo "control: $(jp "$ns" flinkcluster/ticker '{.status.control}')"; return 1; }
    local loc
    loc=$(job_field "$ns" ticker savepointLocation)
    case "$loc" in file:/savepoints/*) ;; *) echo "savepoint location '$loc' is not under /savepoints"; return 1 ;; esac
    [ -s "$spdir/${loc#file:/savepoints/}/_metadata" ] || { echo "no _metadata in $spdir for $loc"; ls -R "$spdir"; return 1; }
  }
  check "$desc: user-control savepoint -> control Succeeded, _metadata on the volume shared with the host" t_ticker_savepoint
  t_ticker_update() {
    local old_id before id loc
    old_id=$(job_field "$ns" ticker id)
    before=$(job_field "$ns" ticker savepointLocation)
    # a new emit interval: the job is stopped with a savepoint and submitted again from it
    kc -n "$ns" patch flinkcluster ticker --type merge -p '{"spec":{"job":{"args":["50"]}}}' >/dev/null || return 1
    resumed() {
      id=$(job_field "$ns" ticker id)
      [ -n "$id" ] && [ "$id" != "$old_id" ] && is_job "$ns" ticker Running
    }
    poll 240 resumed || { why "$ns" ticker; tail -n 15 "$WORK/$c.log"; return 1; }
    loc=$(job_field "$ns" ticker savepointLocation)
    [ -n "$loc" ] && [ "$loc" != "$before" ] || { echo "no new savepoint from the stop ($loc, before $before)"; return 1; }
    expect "Flink's state of job $old_id (stopped with a savepoint)" "$(jm_get "$ns" ticker "/jobs/$old_id" | jget state)" \
      FINISHED || return 1
    # Flink restored the new job from exactly that savepoint
    job_restored_from "$ns" ticker "$id" "$loc" || return 1
    expect "restored from a savepoint" "$(jm_get "$ns" ticker "/jobs/$id/checkpoints" | jget latest.restored.is_savepoint)" \
      true || return 1
    new_tasks_running() { jm_get "$ns" ticker "/jobs/$id" | all_vertices_running; }
    poll 60 new_tasks_running || { echo "tasks of the resumed job not all RUNNING"; return 1; }
  }
  check "$desc: update (job args) -> stop with savepoint, the old job FINISHED, the new one restored from that savepoint and Running" t_ticker_update
  t_ticker_jm_restart() {
    local old_pod old_id
    old_pod=$(jp "$ns" pod/ticker-jobmanager-0 '{.metadata.uid}')
    old_id=$(job_field "$ns" ticker id)
    kc -n "$ns" delete pod ticker-jobmanager-0 --wait=false >/dev/null || return 1
    # while the JobManager is away the cluster does not claim to be Running
    not_running() { [ "$(state "$ns" ticker)" != Running ]; }
    poll 60 not_running || { echo "cluster stayed Running with its JobManager deleted"; return 1; }
    back() { local u; u=$(jp "$ns" pod/ticker-jobmanager-0 '{.metadata.uid}'); [ -n "$u" ] && [ "$u" != "$old_pod" ]; }
    poll 60 back || { echo "the StatefulSet did not bring the JobManager back"; return 1; }
    # a JobManager without HA comes back empty: the job is lost, and FromSavepointOnFailure
    # resubmits it from the latest savepoint as a new Flink job
    resubmitted() {
      local id; id=$(job_field "$ns" ticker id)
      [ -n "$id" ] && [ "$id" != "$old_id" ] && is_job "$ns" ticker Running
    }
    poll 240 resubmitted || { why "$ns" ticker; return 1; }
    jm_job_running "$ns" ticker "$(job_field "$ns" ticker id)" || return 1
    [ "$(job_field "$ns" ticker restartCount)" -ge 1 ] || { echo "restartCount not counted"; return 1; }
    poll 60 is_state "$ns" ticker Running || { why "$ns" ticker; return 1; }
    new_tasks_running() { jm_get "$ns" ticker "/jobs/$(job_field "$ns" ticker id)" | all_vertices_running; }
    poll 60 new_tasks_running || { echo "tasks of the resubmitted job not all RUNNING"; return 1; }
  }
  check "$desc: JobManager pod deleted -> cluster not Running meanwhile, pod back, job resubmitted from the savepoint and Running" t_ticker_jm_restart
  t_ticker_cancel() {
    local id before
    id=$(job_field "$ns" ticker id)
    before=$(job_field "$ns" ticker savepointLocation)
    # --overwrite: the savepoint control's annotation is still set (kept, acknowledged)
    kc -n "$ns" annotate --overwrite flinkcluster ticker flinkclusters.flinkoperator.k8s.io/user-control=job-cancel >/dev/null ||
      return 1
    poll 120 is_job "$ns" ticker Cancelled || { why "$ns" ticker; return 1; }
    # the control ends once the stop's savepoint has been read
    control_done() { [ "$(jp "$ns" flinkcluster/ticker '{.status.control.name} {.status.control.state}')" = "job-cancel Succeeded" ]; }
    poll 60 control_done || { echo "control: $(jp "$ns" flinkcluster/ticker '{.status.control}')"; return 1; }
    local loc
    loc=$(job_field "$ns" ticker savepointLocation)
    [ -n "$loc" ] && [ "$loc" != "$before" ] || { echo "no new savepoint before the cancel ($loc)"; return 1; }
    [ -s "$spdir/${loc#file:/savepoints/}/_metadata" ] || { echo "no _metadata for $loc"; return 1; }
    # GET /jobs/<id> is served from Flink's execution graph cache, a few seconds behind the
    # /jobs/overview the controller reads
    finished() { [ "$(jm_get "$ns" ticker "/jobs/$id" | jget state)" = FINISHED ]; }
    poll 15 finished || { echo "Flink's state of job $id: $(jm_get "$ns" ticker "/jobs/$id" | jget state), want FINISHED"; return 1; }
  }
  check "$desc: user-control job-cancel -> stop-with-savepoint with _metadata, Flink FINISHED, job Cancelled" t_ticker_cancel
  real_done "$c" "$ns" ticker "$spdir"
}

# real_done CONTROLLER NS CLUSTER DIR: the end of a real-pod case: the controller stopped, the
# FlinkCluster deleted and its pods gone (real_delete), the host directory removed.
real_done() {
  stop_controller "$1" >/dev/null
  real_delete "$2" "$3"
  rm -rf "$4"
}
case_realticker() { real_ticker realticker 1.20.5; }
case_realticker2() { real_ticker realticker2 2.3.0; }

# job_ran_on NS ID: the Ticker's job of NS is still ID (no restart, no resubmission), RUNNING in Flink
job_ran_on() {
  expect "job id" "$(job_field "$1" ticker id)" "$2" &&
    expect "Flink's state of job $2" "$(jm_get "$1" ticker "/jobs/$2" | jget state)" RUNNING
}

# Savepoint history and retention (policies/lib/retention.lua) on Flink VERSION: the Ticker with
# spec.job.savepointRetention.maxCount 2, four savepoints asked one after another through
# savepointGeneration; the history records each, and the two older are disposed through Flink
# (POST /savepoint-disposal): their directories leave the host volume, their entries the history.
# savepoint_history CASE VERSION
savepoint_history() {
  local c=$1 version=$2
  local desc="real pods, Flink $version: savepoint history, savepointRetention.maxCount 2" ns spdir
  ticker_start "$c" "$version" "$desc" "savepointRetention: {maxCount: 2}" || return 0
  t_history() {
    poll 240 is_job "$ns" ticker Running || { why "$ns" ticker; tail -n 15 "$WORK/$c.log"; return 1; }
    local id g locs=() loc
    id=$(job_field "$ns" ticker id)
    tasks_running() { jm_get "$ns" ticker "/jobs/$id" | all_vertices_running; }
    poll 60 tasks_running || { echo "tasks of $id not all RUNNING"; return 1; }
    for g in 1 2 3 4; do
      kc -n "$ns" patch flinkcluster ticker --type merge -p "{\"spec\":{\"job\":{\"savepointGeneration\":$g}}}" \
        >/dev/null || return 1
      # the request is consumed once its savepoint succeeded
      taken() { [ "$(job_field "$ns" ticker savepointGeneration)" = "$g" ]; }
      poll 60 taken || { echo "savepoint $g: $(jp "$ns" flinkcluster/ticker '{.status.savepoint}')"; return 1; }
      loc=$(job_field "$ns" ticker savepointLocation)
      [ -s "$spdir/${loc#file:/savepoints/}/_metadata" ] || { echo "no _metadata for $loc"; return 1; }
      locs+=("$loc")
    done
    # the two older are disposed (one at a time), the two newer kept: newest first in the history
    local want="${locs[3]} ${locs[2]}"
    history() { jp "$ns" flinkcluster/ticker '{.status.components.job.savepointHistory[*].location}'; }
    disposed() { [ "$(history)" = "$want" ] && [ "$(find "$spdir" -mindepth 1 -maxdepth 1 | wc -l)" = 2 ]; }
    poll 60 disposed || {
      echo "history: $(history), want $want"; ls -l "$spdir"
      jp "$ns" flinkcluster/ticker '{.status.components.job.savepointHistory}'; tail -n 15 "$WORK/$c.log"; return 1
    }
    expect "history's types" "$(jp "$ns" flinkcluster/ticker '{.status.components.job.savepointHistory[*].triggerType}')" \
      "manual manual" || return 1
    expect "history's results" "$(jp "$ns" flinkcluster/ticker '{.status.components.job.savepointHistory[*].result}')" \
      "Succeeded Succeeded" || return 1
    # the files on the host: exactly the two kept savepoints' directories
    local d
    for loc in "${locs[2]}" "${locs[3]}"; do
      [ -s "$spdir/${loc#file:/savepoints/}/_metadata" ] || { echo "kept $loc has no _metadata"; ls -lR "$spdir"; return 1; }
    done
    for loc in "${locs[0]}" "${locs[1]}"; do
      d="$spdir/${loc#file:/savepoints/}"
      [ ! -e "$d" ] || { echo "disposed $loc still on the host"; ls -lR "$d"; return 1; }
      # and the controller said so, once each
      expect "Events SavepointDisposed for $loc" "$(kc -n "$ns" get events --field-selector reason=SavepointDisposed \
        -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}' | grep -cF "savepoint $loc (manual,")" 1 || return 1
    done
    job_ran_on "$ns" "$id"
  }
  check "$desc: 4 savepoints by savepointGeneration -> the history keeps the newest 2, the 2 older disposed through Flink (directories gone from the host, Events), the job Running" t_history
  real_done "$c" "$ns" ticker "$spdir"
}
case_savepointhistory() { savepoint_history savepointhistory 1.20.5; }
case_savepointhistory2() { savepoint_history savepointhistory2 2.3.0; }

# Triggered checkpoints (spec.job.autoCheckpointSeconds 3, lua/fc/checkpoints.lua) on Flink
# VERSION: the Ticker with its own periodic checkpoints 1 h apart (checkpointing on: none of its
# own comes in the case's minute), 200m CPU requests; the controller triggers a checkpoint
# through POST /jobs/<id>/checkpoints every 3 s: status.components.job.checkpointHistory records
# five Succeeded with the checkpoint ids Flink gave, each a completed checkpoint (not a
# savepoint) of Flink's /jobs/<id>/checkpoints history, latestCheckpoint follows, and the job
# runs on untouched.
# auto_checkpoint CASE VERSION
auto_checkpoint() {
  local c=$1 version=$2
  local desc="real pods, Flink $version: autoCheckpointSeconds 3" ns spdir ckdir=execution.checkpointing.dir
  case $version in 1.*) ckdir=state.checkpoints.dir ;; esac
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  node_has_image "docker.io/library/flink:$version" || { skip "$desc" "no flink:$version image on the node"; return 0; }
  real_node_free
  ns=$(new_ns "$c" real)
  spdir=$TESTENV_DIR/savepoints/$ns
  mkdir -p "$spdir"
  FLINK_DIRECT=1 start_controller "$c" --namespace "$ns"
  { ticker_cluster ticker "$spdir" "$version" "autoCheckpointSeconds: 3" | small_requests
    printf '    execution.checkpointing.interval: "1h"\n    %s: "file:///savepoints/checkpoints"\n' "$ckdir"
  } | kc -n "$ns" apply -f - >/dev/null
  # what was measured, as TAP comments after the check (its output shows only on failure)
  note() { echo "$*" >>"$WORK/$c.notes"; }
  t_auto_checkpoint() {
    poll 120 is_job "$ns" ticker Running || { why "$ns" ticker; tail -n 15 "$WORK/$c.log"; return 1; }
    local id ids
    id=$(job_field "$ns" ticker id)
    # the newest three checkpoints triggered recorded Succeeded (one triggered while the tasks
    # were still deploying may have failed before them: a CheckpointFailed Event, told below)
    hist_field() { jp "$ns" flinkcluster/ticker "{.status.components.job.checkpointHistory[*].$1}"; }
    three() { [[ "$(hist_field state)" == "Succeeded Succeeded Succeeded"* ]]; }
    poll 60 three || { echo "checkpointHistory: $(job_field "$ns" ticker checkpointHistory)"
      echo "checkpointTrigger: $(job_field "$ns" ticker checkpointTrigger)"; tail -n 15 "$WORK/$c.log"; return 1; }
    ids=$(hist_field checkpointID | cut -d' ' -f1-3)
    note "checkpoints recorded: $ids (states $(hist_field state), trigger ids $(hist_field triggerID))"
    [[ $(hist_field triggerID) =~ ^([0-9a-f]{32} ){2,4}[0-9a-f]{32}$ ]] || { echo "trigger ids: $(hist_field triggerID)"; return 1; }
    expect "distinct checkpoint ids" "$(tr ' ' '\n' <<<"$ids" | sort -u | wc -l)" 3 || return 1
    # each a completed checkpoint of this job in Flink's history, not a savepoint (the history is
    # served from Flink's cache of the execution graph, a few seconds behind)
    local hist
    in_history() {
      hist=$(jm_get "$ns" ticker "/jobs/$id/checkpoints") || return 1
      printf '%s' "$hist" | lua5.4 -e '
        local h = require("cjson").decode(io.read("a"))
        for n = 1, #arg do
          local want, seen = tonumber(arg[n]), false
          for _, e in ipairs(h.history or {}) do
            if e.id == want then
              seen = true
              print("checkpoint " .. want .. " in Flink: " .. tostring(e.status) .. ", is_savepoint "
                .. tostring(e.is_savepoint) .. ", checkpoint_type " .. tostring(e.checkpoint_type))
              if not (e.status == "COMPLETED" and e.is_savepoint == false) then os.exit(1) end
            end
          end
          if not seen then print("checkpoint " .. want .. " not in the history"); os.exit(1) end
        end' /dev/null $ids
    }
    poll 20 in_history || { in_history; return 1; }
    in_history >>"$WORK/$c.notes"
    note "Flink's counts: $(printf '%s' "$hist" | jget counts)"
    # latestCheckpoint names the newest (its id at least the last one recorded)
    local last=${ids%% *}
    newest() { [ "$(job_field "$ns" ticker latestCheckpoint.id)" -ge "$last" ] 2>/dev/null; }
    poll 20 newest || { echo "latestCheckpoint $(job_field "$ns" ticker latestCheckpoint), want id >= $last"; return 1; }
    note "CheckpointFailed Events: $(kc -n "$ns" get events --field-selector reason=CheckpointFailed \
      -o 'jsonpath={range .items[*]}{.message}{"; "}{end}')"
    # the job ran on untouched
    job_ran_on "$ns" "$id"
  }
  check "$desc: checkpoints triggered through Flink's REST API, recorded Succeeded with the ids of completed checkpoints of Flink's history (not savepoints), the job Running" t_auto_checkpoint
  [ ! -f "$WORK/$c.notes" ] || { sed 's/^/# /' "$WORK/$c.notes"; rm -f "$WORK/$c.notes"; }
  real_done "$c" "$ns" ticker "$spdir"
}
case_autocheckpoint() { auto_checkpoint autocheckpoint 1.20.5; }
case_autocheckpoint2() { auto_checkpoint autocheckpoint2 2.3.0; }

# The Flink REST the lifecycle reads, live on both versions: a session cluster of each image on
# the real node, tests/env/flink/record-rest.sh against its JobManager (pod IP, reachable from the
# host on the node's bridge), then tests/flink_rest_spec.lua on those answers instead of the
# recorded fixtures.
case_realrest() {
  local desc="real pods: the Flink REST answers the lifecycle reads, recorded afresh from 1.20.5 and 2.3.0 JobManagers, pass tests/flink_rest_spec.lua"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  local v
  for v in 1.20.5 2.3.0; do
    node_has_image "docker.io/library/flink:$v" || { skip "$desc" "no flink:$v image on the node"; return 0; }
  done
  local ns; ns=$(new_ns realrest real)
  FLINK_DIRECT=1 start_controller realrest --namespace "$ns"
  t_realrest() {
    local v n ip jar
    for v in 1.20.5 2.3.0; do
      n=rest${v%%.*}
      session_cluster "$n" '  flinkProperties:
    taskmanager.numberOfTaskSlots: "2"' | sed "s/flink:1.20.0/flink:$v/" | kc -n "$ns" apply -f - >/dev/null || return 1
      poll 240 is_state "$ns" "$n" Running || { why "$ns" "$n"; return 1; }
      poll 60 sts_ready "$ns" "$n-taskmanager" || { echo "$n: TaskManager not ready"; return 1; }
      ip=$(jp "$ns" "pod/$n-jobmanager-0" '{.status.podIP}')
      # Running needs the RPC port; the REST endpoint and the TaskManager's registration follow
      rest_up() { [ "$(curl -sf "http://$ip:8081/overview" | jget taskmanagers)" = 1 ]; }
      poll 90 rest_up || { echo "$n: no TaskManager in http://$ip:8081/overview"; return 1; }
      jar=$(. "$ROOT/tests/env/lib.sh" && component_dir "$([ "$v" = 1.20.5 ] && echo flink || echo flink2)")/jobs.jar
      "$ROOT/tests/env/flink/record-rest.sh" "http://$ip:8081" "$jar" "$WORK/rest/${v%.*}" >"$WORK/record-$n.log" 2>&1 ||
        { tail -n 5 "$WORK/record-$n.log"; return 1; }
      kc -n "$ns" delete flinkcluster "$n" --wait=false >/dev/null
    done
    (cd "$ROOT" && FC_FLINK_REST_DIR=$WORK/rest LUA_PATH="$ROOT/lua/?.lua;$ROOT/policies/?.lua;$ROOT/tests/?.lua;;" \
      lua5.4 /usr/bin/busted --output=TAP tests/flink_rest_spec.lua) >"$WORK/rest-spec.tap" 2>&1 ||
      { grep -A6 "^not ok" "$WORK/rest-spec.tap" | head -n 30; return 1; }
  }
  check "$desc" t_realrest
  stop_controller realrest >/dev/null
  real_cleanup "$ns"
}

# The options policies/lib/flinkremoved.lua says Flink 2 no longer knows are exactly those the
# cached Flink 1.20 jars declare and the Flink 2 jars do not (tests/env/flink/config-keys.sh),
# less the two it documents as left out ("class", hidden.*). Needs the test environment's
# build (the flink and flink2 components) and a JDK; no cluster.
case_flinkoptions() {
  local desc="policies/lib/flinkremoved.lua = the option keys the cached Flink 1.20 jars declare and the Flink 2 jars do not"
  t_flinkoptions() {
    local old new
    old=$(. "$ROOT/tests/env/lib.sh" && component_dir flink)/lib new=$(. "$ROOT/tests/env/lib.sh" && component_dir flink2)/lib
    [ -d "$old" ] && [ -d "$new" ] || { echo "no cached jars in $old and $new (tests/env/build.sh flink flink2)"; return 1; }
    "$ROOT/tests/env/flink/config-keys.sh" --removed "$old" "$new" |
      grep -v -x -e class -e hidden.execution.mode -e hidden.execution.retries >"$WORK/removed-by-jars" || return 1
    lua5.4 -e 'for _, k in ipairs(dofile(arg[1]).KEYS) do print(k) end' /dev/null \
      "$ROOT/policies/lib/flinkremoved.lua" >"$WORK/removed-by-policy" || return 1
    [ -s "$WORK/removed-by-jars" ] || { echo "config-keys.sh found no removed option at all"; return 1; }
    diff "$WORK/removed-by-policy" "$WORK/removed-by-jars" || return 1
  }
  check "$desc" t_flinkoptions
}

# A flinkProperties change reaches the running Flink processes (issue "Converge for real"): the
# pod templates' config hash changes, the pods are replaced, and the new JobManager and
# TaskManager run with the new value.
case_realconfig() {
  local desc="real pods: flinkProperties taskmanager.numberOfTaskSlots 1 -> 3 reaches the running JobManager and TaskManager"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  local ns; ns=$(new_ns realconfig real)
  FLINK_DIRECT=1 start_controller realconfig --namespace "$ns"
  session_cluster conf '  flinkProperties:
    taskmanager.numberOfTaskSlots: "1"' | sed 's/flink:1.20.0/flink:1.20.5/' | kc -n "$ns" apply -f - >/dev/null
  t_realconfig() {
    slots_are() { [ "$(jm_get "$ns" conf /overview | jget slots-total)" = "$1" ]; }
    poll 180 slots_are 1 || { why "$ns" conf; return 1; }
    local jm_uid tm_uid
    jm_uid=$(jp "$ns" pod/conf-jobmanager-0 '{.metadata.uid}') tm_uid=$(jp "$ns" pod/conf-taskmanager-0 '{.metadata.uid}')
    kc -n "$ns" patch flinkcluster conf --type merge \
      -p '{"spec":{"flinkProperties":{"taskmanager.numberOfTaskSlots":"3"}}}' >/dev/null || return 1
    replaced() {
      local j t
      j=$(jp "$ns" pod/conf-jobmanager-0 '{.metadata.uid}') t=$(jp "$ns" pod/conf-taskmanager-0 '{.metadata.uid}')
      [ -n "$j" ] && [ -n "$t" ] && [ "$j" != "$jm_uid" ] && [ "$t" != "$tm_uid" ]
    }
    poll 120 replaced || { echo "the JobManager and TaskManager pods were not replaced"; why "$ns" conf; return 1; }
    jm_slots() { [ "$(jm_get "$ns" conf /jobmanager/config | config_value taskmanager.numberOfTaskSlots)" = 3 ]; }
    poll 180 jm_slots || { echo "JobManager config: $(jm_get "$ns" conf /jobmanager/config | config_value taskmanager.numberOfTaskSlots)"; return 1; }
    poll 120 slots_are 3 || { echo "slots-total: $(jm_get "$ns" conf /overview | jget slots-total), want 3"; return 1; }
  }
  check "$desc" t_realconfig
  stop_controller realconfig >/dev/null
  # its pods would hold the node's room (and every later real_node_free) to the end of the run
  real_cleanup "$ns"
}

# controller_image_on_node [REF...]: the controller image built from this tree (tests/env/images.sh,
# localhost/flink-controller:testenv, and the references REF too) imported into the real node's
# containerd.
controller_image_on_node() {
  "$ROOT/tests/env/images.sh" controller "$WORK/controller.tar" "$@" >"$WORK/controller-image.log" 2>&1 ||
    { tail -n 20 "$WORK/controller-image.log"; return 1; }
  ctr --address "$TESTENV_DIR/node/containerd.sock" --namespace k8s.io images import --snapshotter overlayfs \
    "$WORK/controller.tar" >>"$WORK/controller-image.log" 2>&1 || { tail -n 20 "$WORK/controller-image.log"; return 1; }
}
# helm_cli: sets the caller's $helm to the test environment's Helm CLI (TESTENV_HELM, else the
# built component helm); fails when there is none
helm_cli() { helm=${TESTENV_HELM:-}; [ -n "$helm" ] || helm=$("$ROOT/tests/env/tool.sh" helm 2>/dev/null); }
# helm_case_ready DESC IMAGE: the real node is Ready with the Flink image IMAGE (flink:1.20) and the
# Helm CLI is there (the caller's $helm set); else one SKIP line for DESC, and false
helm_case_ready() {
  real_node_ready || { skip "$1" "no real node in this environment"; return 1; }
  node_has_image "docker.io/library/$2" || { skip "$1" "no $2 image on the node"; return 1; }
  helm_cli || { skip "$1" "helm not built (tests/env/build.sh helm)"; return 1; }
}
# H ARGS...: $helm with the environment's kubeconfig, its configuration, cache and data in $WORK/helm
H() {
  HELM_CONFIG_HOME=$WORK/helm/config HELM_CACHE_HOME=$WORK/helm/cache HELM_DATA_HOME=$WORK/helm/data \
    "$helm" --kubeconfig "$KUBECONFIG" "$@"
}
# ns_gone NS: namespace NS does not exist (a Terminating one still does)
ns_gone() { local got; got=$(kc get namespace "$1" 2>&1); [[ $got == *NotFound* ]]; }
# flink_system_clear: no namespace flink-system (deleted, and waited for also when an earlier
# case's is still terminating) and no ClusterRole or ClusterRoleBinding flink-controller: the
# names of deploy/ and of the chart's defaults. Cases rbac, proxy, execcred and namespaced leave
# them (applied from deploy/); incluster and quickstart start from none, in any order.
flink_system_clear() {
  kc delete namespace flink-system --ignore-not-found --wait=false >/dev/null 2>&1
  kc delete clusterrolebinding,clusterrole flink-controller --ignore-not-found >/dev/null 2>&1
  poll 120 ns_gone flink-system || { echo "namespace flink-system still there after 120 s"; kc get namespace flink-system; return 1; }
}
# no_403 NS: none of the controller's log lines in NS says it was refused (HTTP 403)
no_403() {
  ! kc -n "$1" logs -l app.kubernetes.io/name=flink-controller --tail=-1 2>/dev/null | grep -q '"code":403\| 403 ' ||
    { echo "the controller was refused (403):"; kc -n "$1" logs -l app.kubernetes.io/name=flink-controller --tail=-1 | grep 403 | head -5; return 1; }
}

# The controller as users run it: its image (built here from the Dockerfile's recipe by
# tests/env/images.sh, no registry), imported into the real node's containerd, and
# `kubectl apply -k` of deploy/ through an overlay that changes only what this environment needs:
# the image reference (localhost/flink-controller:testenv) and `--namespace` (the controller
# watches the test's namespace alone, not the other cases' leftovers). Everything else, the
# ServiceAccount, the least-privilege RBAC, the hardened pod and the leader Lease, is deploy/'s.
case_incluster() {
  local desc="in-cluster: kubectl apply -k deploy/ (controller image built here)"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  local ns ov=$ROOT/build/incluster-overlay-$$
  ns=$(new_ns incluster real)
  # kustomize takes a base by a path relative to the overlay, so the overlay lives in build/
  mkdir -p "$ov"
  cat >"$ov/kustomization.yaml" <<EOK
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../deploy
images:
  - name: flink-controller
    newName: localhost/flink-controller
    newTag: testenv
patches:
  - target: {kind: Deployment, name: flink-controller}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --namespace=$ns
EOK
  check "$desc: the controller image builds and is on the node" controller_image_on_node
  t_incluster_ready() {
    flink_system_clear || return 1
    # the CRD from its own kustomization first (up.sh applied it already: unchanged)
    kc apply -k "$ROOT/deploy/crds" >"$WORK/apply-k.log" 2>&1 || { cat "$WORK/apply-k.log"; return 1; }
    kc apply -k "$ov" >>"$WORK/apply-k.log" 2>&1 || { cat "$WORK/apply-k.log"; return 1; }
    kc -n flink-system rollout status deployment/flink-controller --timeout=180s >>"$WORK/apply-k.log" 2>&1 ||
      { kc -n flink-system get pods -o wide; kc -n flink-system describe pods | tail -n 30; return 1; }
    expect "ServiceAccount" "$(kc -n flink-system get pods -l app.kubernetes.io/name=flink-controller \
      -o 'jsonpath={range .items[*]}{.spec.serviceAccountName}{" "}{end}')" "flink-controller flink-controller " || return 1
    local holder
    # the holder identity is <pod name>_<random suffix> (POD_NAME from the downward API)
    holder_is_pod() {
      holder=$(jp flink-system lease/flink-controller '{.spec.holderIdentity}')
      [ -n "$holder" ] && kc -n flink-system get pod "${holder%_*}" >/dev/null 2>&1
    }
    poll 60 holder_is_pod || { echo "Lease holder '$holder' is not a controller pod"; return 1; }
  }
  check "$desc: both replicas Ready with the flink-controller ServiceAccount; one holds the Lease" t_incluster_ready
  t_incluster_reconciles() {
    session_cluster ic | sed 's/flink:1.20.0/flink:1.20.5/' | kc -n "$ns" apply -f - >/dev/null || return 1
    poll 240 is_state "$ns" ic Running || {
      why "$ns" ic
      kc -n flink-system logs -l app.kubernetes.io/name=flink-controller --tail=20 2>&1
      return 1
    }
    poll 60 sts_ready "$ns" ic-taskmanager || { echo "TaskManager StatefulSet not ready"; return 1; }
    # least privilege held: nothing the controller did was forbidden
    no_403 flink-system
  }
  check "$desc: the in-cluster controller brings a session cluster to Running on real pods, with no request refused" t_incluster_reconciles
  # deploy/monitoring's metrics Service (docs/alerts.md; its ServiceMonitor and PrometheusRule need
  # the Prometheus operator's CRDs, which this environment has not): it selects both replicas and
  # its port `metrics` serves their /metrics, read through the API server's service proxy
  t_incluster_metrics_service() {
    local eps raw
    kc apply -f "$ROOT/deploy/monitoring/metrics-service.yaml" >/dev/null || return 1
    two_endpoints() {
      eps=$(jp flink-system endpoints/flink-controller-metrics '{range .subsets[*].addresses[*]}{.targetRef.name}{" "}{end}')
      [ "$(wc -w <<<"$eps")" -eq 2 ]
    }
    poll 30 two_endpoints || { echo "endpoints of flink-controller-metrics: '$eps'"; return 1; }
    expect "endpoint port" "$(jp flink-system endpoints/flink-controller-metrics '{.subsets[0].ports[0].name}:{.subsets[0].ports[0].port}')" \
      metrics:8080 || return 1
    raw=$(kc get --raw /api/v1/namespaces/flink-system/services/flink-controller-metrics:metrics/proxy/metrics) ||
      { echo "GET /metrics through the Service: $raw"; return 1; }
    grep -q '^flink_controller_build_info{version="' <<<"$raw" || { echo "no build_info in: ${raw:0:400}"; return 1; }
    grep -qE '^flink_controller_leader [01]$' <<<"$raw" || { echo "no leader gauge in: ${raw:0:400}"; return 1; }
    grep -qE '^flink_controller_workqueue_depth [0-9]+$' <<<"$raw" || { echo "no workqueue_depth in: ${raw:0:400}"; return 1; }
  }
  check "$desc: deploy/monitoring's metrics Service selects both replicas and serves /metrics" t_incluster_metrics_service
  kc -n flink-system delete deployment flink-controller --wait=true --timeout=60s >/dev/null 2>&1
  kc delete namespace flink-system --wait=false >/dev/null 2>&1
  kc delete clusterrolebinding,clusterrole flink-controller >/dev/null 2>&1
  rm -rf "$ov"
}

# The Helm chart on the real API server: the image built here (as incluster), `helm install`
# into a namespace of its own (the restricted Pod Security Standard enforced there) watching the
# case's namespace alone (watchNamespaces: Roles there, no cluster-wide grant), the wordcount job
# cluster of deploy/examples/wordcount-local.yaml to job Succeeded, then `helm uninstall`: the
# Deployment, ServiceAccount and Roles gone, the CRD (crds/ is never deleted by Helm) and the
# FlinkCluster still there.
case_helm() {
  local desc="helm: install of deploy/helm/flink-controller"
  local helm
  helm_case_ready "$desc" flink:1.20.5 || return 0
  local ns rns
  ns=$(new_ns helm real) && rns=$(new_ns helm-system real) || { check "$desc: namespaces" false; return 0; }
  kc label namespace "$rns" pod-security.kubernetes.io/enforce=restricted >/dev/null
  check "$desc: the controller image builds and is on the node" controller_image_on_node
  t_helm_install() {
    H install flink-controller "$ROOT/deploy/helm/flink-controller" --namespace "$rns" \
      --set image.repository=localhost/flink-controller --set image.tag=testenv \
      --set "watchNamespaces={$ns}" --wait --timeout 180s >"$WORK/helm-install.log" 2>&1 ||
      { cat "$WORK/helm-install.log"; kc -n "$rns" get pods -o wide; kc -n "$rns" describe pods | tail -n 30; return 1; }
    kc -n "$rns" rollout status deployment/flink-controller --timeout=60s >/dev/null || return 1
    expect "release" "$(H status flink-controller --namespace "$rns" -o json | jget info.status)" deployed || return 1
    expect "ready replicas" "$(jp "$rns" deployment/flink-controller '{.status.readyReplicas}')" 2 || return 1
    expect "image" "$(jp "$rns" deployment/flink-controller '{.spec.template.spec.containers[0].image}')" \
      localhost/flink-controller:testenv || return 1
    expect "args" "$(jp "$rns" deployment/flink-controller '{.spec.template.spec.containers[0].args}')" \
      "[\"run\",\"--leader-elect\",\"--metrics-addr\",\"0.0.0.0:8080\",\"--health-addr\",\"0.0.0.0:8081\",\"--log-format\",\"json\",\"--log-level\",\"info\",\"--namespace\",\"$ns\"]" || return 1
    # the grant is the watched namespace's Role, not a ClusterRole
    kc -n "$ns" get role flink-controller >/dev/null || return 1
    ! kc get clusterrolebinding flink-controller >/dev/null 2>&1 || { echo "a ClusterRoleBinding flink-controller exists"; return 1; }
    local holder
    holder_is_pod() {
      holder=$(jp "$rns" lease/flink-controller '{.spec.holderIdentity}')
      [ -n "$holder" ] && kc -n "$rns" get pod "${holder%_*}" >/dev/null 2>&1
    }
    poll 60 holder_is_pod || { echo "Lease holder '$holder' is not a controller pod"; return 1; }
  }
  check "$desc: helm install --wait, watchNamespaces=[$ns]: 2 replicas Ready, the Role in $ns, one holds the Lease" t_helm_install
  t_helm_job() {
    kc -n "$ns" apply -f "$ROOT/deploy/examples/wordcount-local.yaml" >/dev/null || return 1
    poll 300 is_job "$ns" wordcount Succeeded || {
      kc -n "$rns" logs -l app.kubernetes.io/name=flink-controller --tail=4 2>&1
      kc -n "$ns" get endpointslices -o wide 2>&1 | head -n 5
      why "$ns" wordcount
      return 1
    }
    local id; id=$(job_field "$ns" wordcount id)
    [ "${#id}" -eq 32 ] || { echo "job id '$id' is not 32 hex digits"; return 1; }
    no_403 "$rns"
  }
  check "$desc: the controller it installed runs wordcount-local.yaml to job Succeeded, no request refused" t_helm_job
  t_helm_uninstall() {
    H uninstall flink-controller --namespace "$rns" --wait --timeout 120s >"$WORK/helm-uninstall.log" 2>&1 ||
      { cat "$WORK/helm-uninstall.log"; return 1; }
    # each object the release made, by name (a failed get is "gone" only when it says NotFound)
    local o
    for o in "$rns deployment/flink-controller" "$rns serviceaccount/flink-controller" \
      "$rns role/flink-controller-leader-election" "$rns rolebinding/flink-controller-leader-election" \
      "$ns role/flink-controller" "$ns rolebinding/flink-controller"; do
      # shellcheck disable=SC2086  # "NS KIND/NAME"
      gone_obj() { local got; got=$(kc get -n ${o% *} "${o#* }" 2>&1); [[ $got == *NotFound* ]]; }
      # shellcheck disable=SC2086
      poll 30 gone_obj || { echo "still there after uninstall: $o"; kc get -n ${o% *} "${o#* }" 2>&1 | tail -n 3
        cat "$WORK/helm-uninstall.log"; return 1; }
    done
    expect "CRD" "$(kc get crd flinkclusters.flinkoperator.k8s.io -o name)" \
      customresourcedefinition.apiextensions.k8s.io/flinkclusters.flinkoperator.k8s.io || return 1
    kc -n "$ns" get flinkcluster wordcount >/dev/null || { echo "the FlinkCluster went with the release"; return 1; }
  }
  check "$desc: helm uninstall removes the Deployment, ServiceAccount and Roles; the CRD and the FlinkCluster stay" t_helm_uninstall
  H uninstall flink-controller --namespace "$rns" >/dev/null 2>&1
  # shards 2: the chart makes a StatefulSet, and pod flink-controller-i takes shard i's Lease by
  # its ordinal at once (a balanced start, docs/sharding.md "Deploying")
  t_helm_shards() {
    H install flink-controller "$ROOT/deploy/helm/flink-controller" --namespace "$rns" \
      --set image.repository=localhost/flink-controller --set image.tag=testenv \
      --set "watchNamespaces={$ns}" --set shards=2 --wait --timeout 180s >"$WORK/helm-shards.log" 2>&1 ||
      { cat "$WORK/helm-shards.log"; kc -n "$rns" get pods -o wide; return 1; }
    expect "ready replicas" "$(jp "$rns" statefulset/flink-controller '{.status.readyReplicas}')" 2 || return 1
    ! kc -n "$rns" get deployment flink-controller >/dev/null 2>&1 || { echo "a Deployment flink-controller exists too"; return 1; }
    local i holder
    for i in 0 1; do
      shard_held_by_ordinal() {
        holder=$(jp "$rns" "lease/flink-controller-shard-$i" '{.spec.holderIdentity}' 2>/dev/null)
        [[ ${holder%_*} == "flink-controller-$i" ]]
      }
      poll 30 shard_held_by_ordinal || { echo "Lease flink-controller-shard-$i held by '$holder', not flink-controller-$i"; return 1; }
    done
    H uninstall flink-controller --namespace "$rns" --wait --timeout 120s >>"$WORK/helm-shards.log" 2>&1 || return 1
    gone_sts() { local got; got=$(kc -n "$rns" get statefulset flink-controller 2>&1); [[ $got == *NotFound* ]]; }
    poll 30 gone_sts || { echo "the StatefulSet is still there after uninstall"; return 1; }
  }
  check "$desc: shards=2 installs a StatefulSet whose pod flink-controller-i holds shard i's Lease; uninstall removes it" t_helm_shards
  H uninstall flink-controller --namespace "$rns" >/dev/null 2>&1
}

# README.md's "Quick start" as written, on the real node. The one substitution is the README's own
# for a kind cluster: the image `make image` tags, flink-controller:<VERSION> (built here from the
# Dockerfile's recipe by tests/env/images.sh, no daemon), imported into the node's containerd
# instead of `kind load docker-image`. Then, from the repository's root:
#   1. helm install flink-controller deploy/helm/flink-controller -n flink-system --create-namespace
#      with no --set (the chart's defaults: that image, all namespaces watched, 2 replicas) and
#      `kubectl -n flink-system rollout status deployment/flink-controller`. As on a new cluster
#      the CRD is not there before (the case deletes it): the chart's crds/ installs it. With it go
#      the FlinkClusters that earlier cases left in their namespaces, which a controller watching
#      every namespace would otherwise reconcile too.
#   2. kubectl apply -f deploy/examples/quickstart.yaml (in the case's namespace), followed with
#      `kubectl get flinkclusters -w`: STATE Creating, Running, then Stopped; JOB STATE Pending,
#      Running, Succeeded; the JobManager and TaskManager pods removed (DeleteCluster, the
#      default); `kubectl describe flinkcluster quickstart` shows conditions and Events;
#      `build/flink-controller render -f deploy/examples/quickstart.yaml` prints the objects.
#   helm uninstall, then the README's other way with the same image: kubectl apply -k deploy/crds,
#   kubectl apply -k deploy, the rollout status, step 2 again in a second namespace, and
#   `kubectl delete -k deploy` (docs/install.md, Uninstall).
# Starts from no namespace flink-system, ClusterRole or ClusterRoleBinding flink-controller (other
# cases leave them: flink_system_clear) and leaves none; the CRD stays, as up.sh applied it. Each
# step's time is printed as a TAP comment.
case_quickstart() {
  local desc="quickstart (README.md)"
  local helm
  helm_case_ready "$desc" flink:1.20 || return 0
  local version image ns ns2 log=$WORK/quickstart.log t0
  version=$(cat "$ROOT/VERSION")
  image=flink-controller:$version
  ns=$(new_ns quickstart real) && ns2=$(new_ns quickstart-k real) || { check "$desc: namespaces" false; return 0; }

  t0=$SECONDS
  check "$desc: make image's $image (tests/env/images.sh) imported into the node's containerd" \
    controller_image_on_node "docker.io/library/$image"
  echo "# quickstart: image built and imported in $((SECONDS - t0)) s"

  # the controller's Deployment as the chart's defaults or deploy/ make it: that image, leader
  # election, no --namespace (every namespace, through the ClusterRoleBinding)
  qs_controller_is_default() {
    expect "image" "$(jp flink-system deployment/flink-controller '{.spec.template.spec.containers[0].image}')" "$image" || return 1
    local args; args=$(jp flink-system deployment/flink-controller '{.spec.template.spec.containers[0].args}')
    [[ $args == '["run","--leader-elect",'* && $args != *--namespace* ]] || { echo "args: $args"; return 1; }
    expect "ready replicas" "$(jp flink-system deployment/flink-controller '{.status.readyReplicas}')" 2 || return 1
    expect "ClusterRoleBinding subject" "$(jp default clusterrolebinding/flink-controller '{.subjects[0].namespace}/{.subjects[0].name}')" \
      flink-system/flink-controller
  }
  t_qs_helm() {
    flink_system_clear || return 1
    kc delete crd flinkclusters.flinkoperator.k8s.io --ignore-not-found --timeout=180s >"$log" 2>&1 || { cat "$log"; return 1; }
    local t=$SECONDS
    (cd "$ROOT" && H install flink-controller deploy/helm/flink-controller -n flink-system --create-namespace) >>"$log" 2>&1 ||
      { cat "$log"; return 1; }
    kc -n flink-system rollout status deployment/flink-controller --timeout=180s >>"$log" 2>&1 ||
      { cat "$log"; kc -n flink-system get pods -o wide; kc -n flink-system describe pods | tail -n 30; return 1; }
    echo "helm install and rollout status: $((SECONDS - t)) s" >"$WORK/quickstart-helm.time"
    kc wait --for=condition=Established crd/flinkclusters.flinkoperator.k8s.io --timeout=30s >/dev/null || return 1
    qs_controller_is_default
  }
  check "$desc: helm install (no --set) with the CRD from crds/; rollout status; image $image, all namespaces, 2 replicas" t_qs_helm
  sed 's/^/# quickstart: /' "$WORK/quickstart-helm.time" 2>/dev/null

  quickstart_follow "$desc (helm)" "$ns"

  t_qs_render() {
    local kinds
    kinds=$(cd "$ROOT" && build/flink-controller render -f deploy/examples/quickstart.yaml | sed -n 's/^kind: //p' | paste -sd' ')
    expect "kinds rendered" "$kinds" "ConfigMap StatefulSet Service StatefulSet Job"
  }
  check "$desc: build/flink-controller render -f deploy/examples/quickstart.yaml prints the objects" t_qs_render

  t_qs_kustomize() {
    H uninstall flink-controller -n flink-system --wait --timeout 120s >>"$log" 2>&1 || { cat "$log"; return 1; }
    # a new cluster again: helm leaves the namespace it created
    kc delete namespace flink-system --timeout=120s >>"$log" 2>&1 || { cat "$log"; return 1; }
    local t=$SECONDS
    (cd "$ROOT" && kc apply -k deploy/crds && kc apply -k deploy) >>"$log" 2>&1 || { cat "$log"; return 1; }
    kc -n flink-system rollout status deployment/flink-controller --timeout=180s >>"$log" 2>&1 ||
      { cat "$log"; kc -n flink-system get pods -o wide; kc -n flink-system describe pods | tail -n 30; return 1; }
    echo "kubectl apply -k deploy/crds, -k deploy and rollout status: $((SECONDS - t)) s" >"$WORK/quickstart-k.time"
    qs_controller_is_default
  }
  check "$desc: helm uninstall; kubectl apply -k deploy/crds and -k deploy as written: image $image, all namespaces, 2 replicas" t_qs_kustomize
  sed 's/^/# quickstart: /' "$WORK/quickstart-k.time" 2>/dev/null

  quickstart_follow "$desc (kustomize)" "$ns2"

  t_qs_removed() {
    (cd "$ROOT" && kc delete -k deploy --timeout=120s) >>"$log" 2>&1 || { cat "$log"; return 1; }
    poll 120 ns_gone flink-system || { echo "namespace flink-system still there"; return 1; }
    local o
    for o in clusterrole/flink-controller clusterrolebinding/flink-controller; do
      ! kc get "$o" >/dev/null 2>&1 || { echo "still there: $o"; return 1; }
    done
    kc get crd flinkclusters.flinkoperator.k8s.io >/dev/null
  }
  check "$desc: kubectl delete -k deploy leaves no flink-system, ClusterRole or binding; the CRD stays" t_qs_removed
  # whatever failed above: nothing of the controller left, the CRD as up.sh applied it
  H uninstall flink-controller -n flink-system >/dev/null 2>&1
  (cd "$ROOT" && kc delete -k deploy --ignore-not-found --wait=false) >/dev/null 2>&1
  (cd "$ROOT" && kc apply -k deploy/crds) >/dev/null 2>&1
  poll 120 ns_gone flink-system
}

# qs_why NS: what a failed wait of the quick start shows: the cluster, the controllers' distinct
# log messages, and what a pod in NS gets for the address the controller uses for the JobManager
# (its Service's DNS name, port 8081) next to what the API server's service proxy gets
qs_why() {
  local ns=$1 name="quickstart-jobmanager.$1.svc"
  why "$ns" quickstart
  kc -n flink-system logs -l app.kubernetes.io/name=flink-controller --tail=300 --prefix 2>&1 |
    sed -e 's/"ts":"[^"]*",//' | sort | uniq -c | sort -rn | head -n 12 | cut -c1-300
  echo "API server service proxy: $(jm_get "$ns" quickstart /jobs/overview 2>&1 | cut -c1-200)"
  kc -n "$ns" run qs-probe --image=flink:1.20 --restart=Never --command -- \
    sh -c "getent ahosts $name; curl -sS -m 5 -o /dev/stdout -w ' HTTP %{http_code} from %{remote_ip}' http://$name:8081/jobs/overview" >/dev/null 2>&1
  probe_ended() { case $(jp "$ns" pod/qs-probe '{.status.phase}') in Succeeded | Failed) ;; *) return 1 ;; esac; }
  poll 60 probe_ended
  echo "a pod in $ns: $(kc -n "$ns" logs qs-probe 2>&1 | tr '\n' ' ' | cut -c1-400)"
  kc -n "$ns" delete pod qs-probe --wait=false >/dev/null 2>&1
}

# quickstart_follow DESC NS: step 2 of the quick start in NS, with the controller in flink-system;
# prints the times as TAP comments.
quickstart_follow() {
  local desc=$1 ns=$2 w=$WORK/quickstart-$2.watch tf=$WORK/quickstart-$2.time
  # `kubectl get flinkclusters -w`, started first so that it sees every status
  timeout 900 "${K[@]}" -n "$ns" get flinkclusters -w >"$w" 2>&1 &
  local wpid=$!
  t_qs_job() {
    local t0=$SECONDS t_run t_end t_stop
    (cd "$ROOT" && kc -n "$ns" apply -f deploy/examples/quickstart.yaml) >/dev/null || return 1
    ran() { case $(state "$ns" quickstart) in Running | Stopping | Stopped) ;; *) return 1 ;; esac; }
    poll 300 ran || { qs_why "$ns"; return 1; }
    t_run=$((SECONDS - t0))
    ended() { case $(job_field "$ns" quickstart state) in Succeeded | Failed | Cancelled | Lost) ;; *) return 1 ;; esac; }
    poll 300 ended || { qs_why "$ns"; kc -n "$ns" logs job/quickstart-job-submitter --tail=5; return 1; }
    t_end=$((SECONDS - t0))
    expect "job state" "$(job_field "$ns" quickstart state)" Succeeded || { why "$ns" quickstart; return 1; }
    poll 120 is_state "$ns" quickstart Stopped || { qs_why "$ns"; return 1; }
    t_stop=$((SECONDS - t0))
    flink_pods_gone() { [ -z "$(kc -n "$ns" get pods -l 'cluster=quickstart,component in (jobmanager,taskmanager)' -o name)" ]; }
    poll 120 flink_pods_gone || { echo "JobManager or TaskManager pods still there"; kc -n "$ns" get pods; return 1; }
    echo "after kubectl apply: Running at $t_run s, job Succeeded at $t_end s, Stopped at $t_stop s, Flink pods gone at $((SECONDS - t0)) s" >"$tf"
  }
  check "$desc: kubectl apply -f deploy/examples/quickstart.yaml: job Succeeded, cluster Stopped, the Flink pods removed" t_qs_job
  sed 's/^/# quickstart: /' "$tf" 2>/dev/null
  sleep 1
  kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
  t_qs_watch() {
    # first appearance of each STATE and JOB STATE in the rows (NAME STATE JOB-STATE AGE; an
    # empty cell is no word), and the last row's pair
    local seen
    seen=$(awk '$1 == "quickstart" {
        st = NF >= 3 ? $2 : ""; jb = NF >= 4 ? $3 : ""
        if (st != "" && !(st in s)) { s[st]; ss = ss " " st }
        if (jb != "" && !(jb in j)) { j[jb]; js = js " " jb }
        last = st "/" jb
      } END { print "states:" ss "; job states:" js "; last: " last }' "$w")
    expect "kubectl get flinkclusters -w" "$seen" \
      "states: Creating Running Stopping Stopped; job states: Pending Running Succeeded; last: Stopped/Succeeded" ||
      { cat "$w"; return 1; }
  }
  check "$desc: kubectl get flinkclusters -w shows STATE Creating, Running, Stopped and JOB STATE Pending, Running, Succeeded" t_qs_watch
  t_qs_describe() {
    local out; out=$(kc -n "$ns" describe flinkcluster quickstart) || return 1
    # the conditions under Status, each with a Type; the Events table with rows
    grep -q '^  Conditions:' <<<"$out" && grep -q '^    Type: ' <<<"$out" ||
      { echo "no conditions:"; printf '%s\n' "$out"; return 1; }
    awk '/^Events:/ {e = 1; next} e && /^  Normal / {n++} END {exit n > 0 ? 0 : 1}' <<<"$out" ||
      { echo "no Events:"; printf '%s\n' "$out" | tail -n 20; return 1; }
    printf '%s\n' "$out" >"$WORK/quickstart-$ns.describe"
  }
  check "$desc: kubectl describe flinkcluster quickstart shows conditions and Events" t_qs_describe
  no_403_check() { no_403 flink-system; }
  check "$desc: no request of the controller refused" no_403_check
}
