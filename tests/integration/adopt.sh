# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# Case adopt (issue 27): flink-controller takes over a job cluster that the original
# Google/Spotify operator made, on the real node (sourced by tests/integration/run.sh after
# realpods.sh: real_node_ready, skip, job_field, is_job, jm_get, jget, why, all_vertices_running,
# job_restored_from).
#   adopt  a Ticker job cluster with the original's objects and status, Running; our controller
#          started on it holds for ADOPT_HOLD_SECONDS (300): the same job id in the status and in
#          Flink, no savepoint taken and no stop, the same pods (uid, restartCount), the same
#          StatefulSets and submitter Job; then a parallelism change updates the job as usual
#          (stop with a savepoint, a new job restored from it, Running).
# How the original's objects come to be (ADOPT_ORIGINAL_BIN):
#   unset  (CI) the objects its converter makes for this spec (controllers/flinkcluster_converter.go
#          at fe98573), from tests/integration/adopt/*.json (made by adopt/fixtures.py from the
#          objects the original made) with the namespace and the cluster's uid filled in; the
#          submitter runs `flink run` from the ConfigMap's submit-job.sh and writes
#          `jobID: <id>` to its termination log as the original's does; then the status the
#          original writes for a Running job.  The original is not on the Go module proxy (its
#          module path is refused there), so CI cannot build it.
#   a path a binary of the original built from its source (adopt/build-original.sh SRC OUT, which
#          also says what fe98573 needs changed to build and to run here): it runs as a
#          pod on the real node (its Flink client needs the cluster's DNS names) with cluster-admin,
#          webhooks off (so the manifest carries the defaults its webhook would have written),
#          creates everything itself and is deleted once the job is Running.  With ADOPT_DUMP=DIR
#          set as well, its objects are written to DIR as the fixtures above (adopt_dump).
# The FlinkCluster (adopt_cluster) is the one the original stores: every default its mutating
# webhook sets written out, the image pulled IfNotPresent (no registry here).

ADOPT_FIXTURES=$HERE/adopt
ADOPT_HOLD_SECONDS=${ADOPT_HOLD_SECONDS:-300}

# adopt_cluster NAME HOSTDIR: the FlinkCluster as the original operator stores it.  Memory: the
# original's heap rule (limit - max(limit * offHeapRatio%, offHeapMin)) written as the legacy
# jobmanager.heap.size/taskmanager.heap.size, which Flink 1.20 reads as the total Flink memory;
# 2Gi limits give 1548m, enough for a TaskManager's fixed parts.
adopt_cluster() {
  local vol="
    volumes: [{name: savepoints, hostPath: {path: $2, type: DirectoryOrCreate}}]
    volumeMounts: [{name: savepoints, mountPath: /savepoints}]"
  cat <<EOF
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: $1
spec:
  image: {name: "flink:1.20.5", pullPolicy: IfNotPresent}
  recreateOnUpdate: true
  jobManager:
    replicas: 1
    accessScope: Cluster
    ports: {rpc: 6123, blob: 6124, query: 6125, ui: 8081}
    memoryOffHeapRatio: 25
    memoryOffHeapMin: 600M
    resources: {limits: {memory: "2Gi", cpu: "500m"}}$vol
  taskManager:
    replicas: 1
    ports: {data: 6121, rpc: 6122, query: 6125}
    memoryOffHeapRatio: 25
    memoryOffHeapMin: 600M
    resources: {limits: {memory: "2Gi", cpu: "500m"}}$vol
  job:
    jarFile: /opt/flink/usrlib/testenv-jobs.jar
    className: testenv.Ticker
    parallelism: 1
    allowNonRestoredState: false
    noLoggingToStdout: false
    savepointsDir: file:///savepoints
    restartPolicy: Never
    cleanupPolicy: {afterJobSucceeds: DeleteCluster, afterJobFails: KeepCluster, afterJobCancelled: DeleteCluster}$vol
  flinkProperties:
    taskmanager.numberOfTaskSlots: "2"
EOF
}

# The savepoints' host directory: one fixed path, because the spec is part of the original's
# revision (its ControllerRevision's data and the hash in its name), so the fixtures hold only for
# this path (one test environment per machine at a time).
ADOPT_SPDIR=/var/tmp/flink-controller-adopt-savepoints

# adopt_fill FILE NS UID [JOBID NOW]: a fixture with its placeholders filled in
adopt_fill() {
  sed -e "s|@NS@|$2|g" -e "s|@UID@|$3|g" -e "s|@JOBID@|${4:-}|g" -e "s|@NOW@|${5:-}|g" "$1"
}

# adopt_by_fixtures NS NAME: the original's objects from the fixtures, the submitter run
# to its end, then the original's status of a Running job.  Fails with what is missing.
adopt_by_fixtures() {
  local ns=$1 name=$2 uid f id now
  uid=$(jp "$ns" "flinkcluster/$name" '{.metadata.uid}')
  [ -n "$uid" ] || { echo "no uid of flinkcluster/$name"; return 1; }
  # the order of the original's first passes: its revision, then ConfigMap, JobManager
  # StatefulSet and Service, TaskManager StatefulSet; the submitter once those are ready
  adopt_fill "$ADOPT_FIXTURES/controllerrevision.json" "$ns" "$uid" | kc -n "$ns" create -f - >/dev/null || return 1
  for f in configmap jobmanager-statefulset jobmanager-service taskmanager-statefulset; do
    adopt_fill "$ADOPT_FIXTURES/$f.json" "$ns" "$uid" | kc -n "$ns" create -f - >/dev/null || { echo "create $f"; return 1; }
  done
  poll 180 sts_ready "$ns" "$name-jobmanager" || { echo "JobManager not ready"; why "$ns" "$name"; return 1; }
  poll 180 sts_ready "$ns" "$name-taskmanager" || { echo "TaskManager not ready"; why "$ns" "$name"; return 1; }
  adopt_fill "$ADOPT_FIXTURES/job-submitter.json" "$ns" "$uid" | kc -n "$ns" create -f - >/dev/null || return 1
  submitted() { [ "$(jp "$ns" "job/$name-job-submitter" '{.status.succeeded}')" = 1 ]; }
  poll 240 submitted || { echo "the submitter did not succeed"; kc -n "$ns" logs "job/$name-job-submitter" | tail -n 20; return 1; }
  id=$(kc -n "$ns" get pods -l "job-name=$name-job-submitter" \
    -o 'jsonpath={.items[0].status.containerStatuses[0].state.terminated.message}' | sed -n 's/^jobID: //p')
  [ "${#id}" -eq 32 ] || { echo "no job id in the submitter's termination message ('$id')"; return 1; }
  now=$(date -u +%FT%TZ)
  adopt_fill "$ADOPT_FIXTURES/status-running.json" "$ns" "$uid" "$id" "$now" >"$WORK/adopt-status.json"
  kc -n "$ns" patch "flinkcluster/$name" --subresource=status --type merge --patch-file "$WORK/adopt-status.json" >/dev/null
}

# adopt_by_original NS NAME BIN: the original operator BIN as a pod on the real node, watching NS
# (cluster-admin through a ClusterRoleBinding adopt-original-NS, deleted by adopt_original_gone).
adopt_by_original() {
  local ns=$1 bin=$2
  kc -n "$ns" create serviceaccount adopt-original >/dev/null || return 1
  kc create clusterrolebinding "adopt-original-$ns" --clusterrole=cluster-admin \
    --serviceaccount="$ns:adopt-original" >/dev/null || return 1
  kc -n "$ns" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata:
  name: adopt-original
spec:
  serviceAccountName: adopt-original
  restartPolicy: Never
  containers:
  - name: operator
    image: flink:1.20.5
    imagePullPolicy: IfNotPresent
    command: [/original/$(basename "$bin"), --metrics-addr=0, --enable-leader-election=false, --watch-namespace=$ns]
    env: [{name: FLINK_OPERATOR_ENABLE_WEBHOOKS, value: "false"}]
    volumeMounts: [{name: bin, mountPath: /original, readOnly: true}]
  volumes: [{name: bin, hostPath: {path: $(dirname "$(readlink -f "$bin")"), type: Directory}}]
EOF
}
adopt_original_gone() {
  kc -n "$1" delete pod adopt-original --wait=true --timeout=60s >/dev/null 2>&1
  kc delete clusterrolebinding "adopt-original-$1" >/dev/null 2>&1
  return 0
}

# adopt_dump NS NAME DIR: the original's objects of cluster NAME as fixtures (server-set
# fields dropped, namespace and owner uid as placeholders: fixtures.py).
adopt_dump() {
  local ns=$1 name=$2 out=$3 uid kind obj
  uid=$(jp "$ns" "flinkcluster/$name" '{.metadata.uid}')
  mkdir -p "$out"
  for obj in configmap/$name-configmap statefulset/$name-jobmanager service/$name-jobmanager \
    statefulset/$name-taskmanager job/$name-job-submitter; do
    kind=${obj%%/*}
    kc -n "$ns" get "$obj" -o json >"$out/$kind-${obj#*/}.json"
  done
  kc -n "$ns" get controllerrevisions -o json >"$out/controllerrevisions.json"
  kc -n "$ns" get flinkcluster "$name" -o json >"$out/flinkcluster.json"
  printf 'uid=%s\nns=%s\n' "$uid" "$ns" >"$out/placeholders"
}

# adopt_snapshot NS NAME: one line per fact that must not change while our controller holds:
# the job id (status and Flink's job list), the pods (uid, restarts), the StatefulSets and the
# submitter Job (uid, generation)
adopt_snapshot() {
  local ns=$1 name=$2 k
  echo "status job id: $(job_field "$ns" "$name" id)"
  echo "Flink jobs: $(jm_get "$ns" "$name" /jobs | lua5.4 -e 'local t = {}
    for _, j in ipairs(require("cjson").decode(io.read("a")).jobs or {}) do t[#t + 1] = j.id .. " " .. j.status end
    table.sort(t); print(table.concat(t, ", "))' /dev/null)"
  for k in pod/$name-jobmanager-0 pod/$name-taskmanager-0; do
    echo "$k: $(jp "$ns" "$k" '{.metadata.uid} restarts={.status.containerStatuses[0].restartCount}')"
  done
  for k in statefulset/$name-jobmanager statefulset/$name-taskmanager job/$name-job-submitter service/$name-jobmanager; do
    echo "$k: $(jp "$ns" "$k" '{.metadata.uid} generation={.metadata.generation}')"
  done
}

case_adopt() {
  local desc="real pods: adopt the original operator's Running job cluster"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  node_has_image docker.io/library/flink:1.20.5 || { skip "$desc" "no flink:1.20.5 image on the node"; return 0; }
  local ns spdir name=ticker mode=fixtures
  [ -n "${ADOPT_ORIGINAL_BIN:-}" ] && mode=original
  ns=$(new_ns adopt real)
  spdir=$ADOPT_SPDIR
  rm -rf "$spdir" && mkdir -p "$spdir"
  local t0=$SECONDS
  adopt_cluster "$name" "$spdir" | kc -n "$ns" apply -f - >/dev/null
  t_adopt_original() {
    if [ "$mode" = original ]; then
      adopt_by_original "$ns" "$ADOPT_ORIGINAL_BIN" || return 1
      poll 300 is_job "$ns" "$name" Running ||
        { why "$ns" "$name"; kc -n "$ns" logs adopt-original | tail -n 20; return 1; }
      [ -z "${ADOPT_DUMP:-}" ] || adopt_dump "$ns" "$name" "$ADOPT_DUMP"
      kc -n "$ns" logs adopt-original >"$WORK/adopt-original.log" 2>&1
      adopt_original_gone "$ns"
    else
      adopt_by_fixtures "$ns" "$name" || return 1
    fi
    local id
    id=$(job_field "$ns" "$name" id)
    [ "${#id}" -eq 32 ] || { echo "status job id '$id' is not 32 hex digits"; return 1; }
    expect "Flink's state of job $id" "$(jm_get "$ns" "$name" "/jobs/$id" | jget state)" RUNNING || return 1
    tasks_running() { jm_get "$ns" "$name" "/jobs/$id" | all_vertices_running; }
    poll 60 tasks_running || { echo "tasks of $id not all RUNNING"; return 1; }
    # every status field the original wrote is kept by our CRD's schema (pruning would drop it)
    local f
    for f in state currentRevision nextRevision lastUpdateTime components.configMap.name \
      components.jobManagerStatefulSet.state components.jobManagerService.name \
      components.taskManagerStatefulSet.state components.job.state components.job.id; do
      [ -n "$(jp "$ns" "flinkcluster/$name" "{.status.$f}")" ] || { echo "status.$f missing"; return 1; }
    done
  }
  # shellcheck disable=SC2154  # failed: the count of failed checks (lib.sh)
  local failed0=$failed
  check "$desc: the original's objects ($mode), job Running in Flink with the status' id" t_adopt_original
  [ "$failed" -eq "$failed0" ] || { adopt_original_gone "$ns"; real_done adopt "$ns" "$name" "$spdir"; return 0; }
  echo "# adopt: the original's job cluster ($mode) Running after $((SECONDS - t0)) s"
  local before
  before=$(adopt_snapshot "$ns" "$name")
  FLINK_DIRECT=1 start_controller adopt --namespace "$ns"
  t_adopt_hold() {
    local end=$((SECONDS + ADOPT_HOLD_SECONDS)) now id
    id=$(job_field "$ns" "$name" id)
    while [ "$SECONDS" -lt "$end" ]; do
      now=$(adopt_snapshot "$ns" "$name")
      [ "$now" = "$before" ] ||
        { echo "changed after $((ADOPT_HOLD_SECONDS - end + SECONDS)) s:"; diff <(echo "$before") <(echo "$now"); return 1; }
      ctl_alive adopt || { echo "our controller exited"; tail -n 20 "$WORK/adopt.log"; return 1; }
      sleep 10
    done
    # Flink: the job still RUNNING, no savepoint in its checkpoint history, none restored
    local cp
    cp=$(jm_get "$ns" "$name" "/jobs/$id/checkpoints")
    expect "Flink's state of job $id" "$(jm_get "$ns" "$name" "/jobs/$id" | jget state)" RUNNING || return 1
    expect "savepoints of job $id (latest.savepoint)" "$(printf '%s' "$cp" | jget latest.savepoint)" "" || return 1
    [ -z "$(ls -A "$spdir")" ] || { echo "files under the savepoint directory:"; ls -R "$spdir"; return 1; }
    # our controller: no savepoint or stop asked (its log, its Events, the status), cluster Running
    ! grep -E '/jobs/[0-9a-f]{32}/(savepoints|stop)' "$WORK/adopt.log" || return 1
    local ev
    ev=$(kc -n "$ns" get events --field-selector "involvedObject.kind=FlinkCluster" \
      -o 'jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}')
    echo "our controller's Events: $ev"
    ! grep -E '^(SavepointStateChanged|UserControl|JobStateChanged|StateChanged):' <<<"$ev" || return 1
    # status.savepoint may say NotTriggered (ours writes it), nothing more
    expect "status.savepoint" "$(jp "$ns" "flinkcluster/$name" '{.status.savepoint.triggerID}/{.status.savepoint.state}' |
      sed 's|/NotTriggered$|/|')" "/" || return 1
    expect "lastSavepointTriggerID" "$(job_field "$ns" "$name" lastSavepointTriggerID)" "" || return 1
    expect "cluster state" "$(state "$ns" "$name")" Running || return 1
  }
  check "$desc: our controller on it for ${ADOPT_HOLD_SECONDS} s: the same job id (status, Flink), no savepoint or stop, the same pods, StatefulSets and submitter" t_adopt_hold
  # what our controller said meanwhile (reason x times seen), for the record
  echo "# adopt: Events of the FlinkCluster during the hold: $(kc -n "$ns" get events \
    --field-selector involvedObject.kind=FlinkCluster -o 'jsonpath={range .items[*]}{.reason} x{.count}; {end}')"
  t_adopt_update() {
    local old_id id loc jm
    old_id=$(job_field "$ns" "$name" id)
    jm=$(jp "$ns" "pod/$name-jobmanager-0" '{.metadata.uid}')
    kc -n "$ns" patch flinkcluster "$name" --type merge -p '{"spec":{"job":{"parallelism":2}}}' >/dev/null || return 1
    resumed() {
      id=$(job_field "$ns" "$name" id)
      [ -n "$id" ] && [ "$id" != "$old_id" ] && is_job "$ns" "$name" Running
    }
    poll 300 resumed || { why "$ns" "$name"; tail -n 15 "$WORK/adopt.log"; return 1; }
    loc=$(job_field "$ns" "$name" savepointLocation)
    case "$loc" in file:/savepoints/*) ;; *) echo "savepoint location '$loc' is not under /savepoints"; return 1 ;; esac
    [ -s "$spdir/${loc#file:/savepoints/}/_metadata" ] || { echo "no _metadata for $loc"; ls -R "$spdir"; return 1; }
    # the old job's end is known to its JobManager only: the update replaces the pods whose
    # template was held at the takeover (recreateOnUpdate), and a new JobManager has no history
    if [ "$(jp "$ns" "pod/$name-jobmanager-0" '{.metadata.uid}')" = "$jm" ]; then
      expect "Flink's state of job $old_id (stopped with a savepoint)" \
        "$(jm_get "$ns" "$name" "/jobs/$old_id" | jget state)" FINISHED || return 1
    fi
    job_restored_from "$ns" "$name" "$id" "$loc" || return 1
    # the job's parallelism (its source is a non-parallel SourceFunction: 1 whatever the job's)
    expect "parallelism of job $id" "$(jm_get "$ns" "$name" "/jobs/$id/config" | jget execution-config.job-parallelism)" 2 ||
      return 1
    new_tasks_running() { jm_get "$ns" "$name" "/jobs/$id" | all_vertices_running; }
    poll 60 new_tasks_running || { echo "tasks of the new job not all RUNNING"; return 1; }
  }
  check "$desc: then parallelism 1 -> 2: stop with a savepoint, a new job id restored from it with parallelism 2, Running" t_adopt_update
  echo "# adopt: ${mode}, $((SECONDS - t0)) s"
  real_done adopt "$ns" "$name" "$spdir"
}
