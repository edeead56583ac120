# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# Native TaskManagers (taskManager.mode Native, issue 10) on the real API server, pods on the
# kwok node (sourced by tests/integration/run.sh, helpers in lib.sh):
#   native       7 slots at 2 per pod -> 4 pods; demand 7 -> 3 cancels pods down to 2; a deleted
#                pod is replaced; a pod marked Failed is replaced and counted; a controller
#                restart with the pods present creates none
#   nativequota  a ResourceQuota refusing pods: the controller backs off (few creates, no hot loop)
#   nativescale  1,000 TaskManager pods created, tracked, and recovered after a restart without a
#                duplicate (NATIVE_SCALE_PODS to change the number; the kwok node's pod capacity is
#                raised for it and set back after); prints the figures as TAP comments

# native_cluster NAME SLOTS [extra taskManager YAML lines, indented 4]: a Native session cluster
# whose slots need 100m CPU and 128Mi each, at most 2 per pod.
native_cluster() {
  printf '%s\n' "apiVersion: flinkoperator.k8s.io/v1beta1" "kind: FlinkCluster" "metadata: {name: $1}" "spec:" \
    "  image: {name: flink:1.20.0}" "  jobManager: {resources: {limits: {memory: 1024Mi, cpu: 200m}}}" \
    "  taskManager:" "    mode: Native" "    slots: $2" "    resourceProfile: {cpu: 100m, memory: 128Mi}" \
    "    maxPerTaskManager: {cpu: 200m, memory: 256Mi}" "${3:-}"
}

# tm_pods NS NAME: the names of the cluster's TaskManager pods not being deleted, sorted, one line
tm_pods() {
  kc -n "$1" get pods -l "cluster=$2,component=taskmanager" \
    -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.deletionTimestamp}{"\n"}{end}' 2>/dev/null |
    awk 'NF == 1 {print $1}' | sort -V | tr '\n' ' ' | sed 's/ $//'
}
tm_pods_are() { [ "$(tm_pods "$1" "$2")" = "$3" ]; }
tm_count() { local p; p=$(tm_pods "$1" "$2"); [ -z "$p" ] && echo 0 || wc -w <<<"$p" | tr -d ' '; }
tm_count_is() { [ "$(tm_count "$1" "$2")" = "$3" ]; }
# native_field NS NAME FIELD: status.components.taskManagers.FIELD
native_field() { jp "$1" "flinkcluster/$2" "{.status.components.taskManagers.$3}"; }

case_native() {
  local ns
  ns=$(new_ns native) || { check "native: namespace" false; return; }
  start_controller native --namespace "$ns"
  native_cluster tm 7 | kc -n "$ns" apply -f - >/dev/null
  t_four() {
    poll 60 tm_pods_are "$ns" tm "tm-taskmanager-1 tm-taskmanager-2 tm-taskmanager-3 tm-taskmanager-4" ||
      { echo "pods: $(tm_pods "$ns" tm)"; return 1; }
    local uid pod
    uid=$(jp "$ns" flinkcluster/tm '{.metadata.uid}')
    for pod in tm-taskmanager-1 tm-taskmanager-4; do
      owned_by "$ns" "pod/$pod" "$uid" || return 1
      expect "$pod labels" "$(jp "$ns" "pod/$pod" '{.metadata.labels.app} {.metadata.labels.cluster} {.metadata.labels.component} {.metadata.labels.priority}')" \
        "flink tm taskmanager 0" || return 1
      expect "$pod limits" "$(jp "$ns" "pod/$pod" '{.spec.containers[0].resources.limits.cpu} {.spec.containers[0].resources.limits.memory}')" \
        "200m 256Mi" || return 1
      expect "$pod args" "$(jp "$ns" "pod/$pod" '{.spec.containers[0].args}')" \
        '["taskmanager","-Dtaskmanager.resource-id=$(FLINK_POD_NAME)","-Dtaskmanager.numberOfTaskSlots=2"]' || return 1
    done
    [ -z "$(kc -n "$ns" get statefulset tm-taskmanager -o name 2>/dev/null)" ] || { echo "a TaskManager StatefulSet"; return 1; }
    poll 30 eval '[ "$(native_field "$ns" tm pods)" = 4 ]' || { echo "status pods: $(native_field "$ns" tm pods)"; return 1; }
    expect "slots per TaskManager, demand" "$(native_field "$ns" tm slotsPerTaskManager) $(native_field "$ns" tm demand)" "2 7"
  }
  check "native: 7 slots at 2 per pod -> pods tm-taskmanager-1..4 (labels, owner, limits 2 x profile, resource id = pod name), no TaskManager StatefulSet" t_four
  t_down() {
    kc -n "$ns" patch flinkcluster tm --type=merge -p '{"spec":{"taskManager":{"slots":3}}}' >/dev/null || return 1
    poll 60 tm_pods_are "$ns" tm "tm-taskmanager-3 tm-taskmanager-4" || { echo "pods: $(tm_pods "$ns" tm)"; return 1; }
    sleep 3
    tm_pods_are "$ns" tm "tm-taskmanager-3 tm-taskmanager-4" || { echo "pods later: $(tm_pods "$ns" tm)"; return 1; }
  }
  check "native: demand 7 -> 3 cancels the oldest pending pods down to 2 (4 slots for 3)" t_down
  t_deleted() {
    kc -n "$ns" delete pod tm-taskmanager-3 --wait=false >/dev/null || return 1
    poll 60 tm_pods_are "$ns" tm "tm-taskmanager-4 tm-taskmanager-5" || { echo "pods: $(tm_pods "$ns" tm)"; return 1; }
    poll 30 eval '[ "$(native_field "$ns" tm failedAttempts)" = 1 ]' ||
      { echo "failedAttempts: $(native_field "$ns" tm failedAttempts)"; return 1; }
    poll 10 has_event "$ns" tm TaskManagerFailed || { echo "no TaskManagerFailed event"; return 1; }
  }
  check "native: a deleted pod is replaced by tm-taskmanager-5 (a new id) and counted (failedAttempts 1, event)" t_deleted
  t_failed() {
    kc -n "$ns" patch pod tm-taskmanager-4 --subresource=status --type=merge \
      -p '{"status":{"phase":"Failed","reason":"Error"}}' >/dev/null || return 1
    poll 60 tm_pods_are "$ns" tm "tm-taskmanager-5 tm-taskmanager-6" || { echo "pods: $(tm_pods "$ns" tm)"; return 1; }
    poll 30 eval '[ "$(native_field "$ns" tm failedAttempts)" = 2 ]' ||
      { echo "failedAttempts: $(native_field "$ns" tm failedAttempts)"; return 1; }
    expect "TaskManagersStopped" "$(condition "$ns" tm TaskManagersStopped)" "False BelowMaxFailedAttempts"
  }
  check "native: a pod marked Failed is deleted, replaced by tm-taskmanager-6 and counted (failedAttempts 2)" t_failed
  t_restart() {
    local before uids_before
    before=$(tm_pods "$ns" tm)
    uids_before=$(kc -n "$ns" get pods -l cluster=tm,component=taskmanager -o jsonpath='{.items[*].metadata.uid}')
    expect "controller stopped" "$(stop_controller native)" 0 || return 1
    FC_LOG_LEVEL=debug start_controller native2 --namespace "$ns"
    poll 30 grep -q "debug reconciled cluster=tm namespace=$ns " "$WORK/native2.log" || { echo "no pass of the new controller"; return 1; }
    sleep 5
    expect "pods after the restart" "$(tm_pods "$ns" tm)" "$before" || return 1
    expect "the same pods (uids)" \
      "$(kc -n "$ns" get pods -l cluster=tm,component=taskmanager -o jsonpath='{.items[*].metadata.uid}')" "$uids_before" || return 1
    # the new process works on them: demand 3 -> 6 adds ids after the largest recovered one
    kc -n "$ns" patch flinkcluster tm --type=merge -p '{"spec":{"taskManager":{"slots":6}}}' >/dev/null || return 1
    poll 60 tm_pods_are "$ns" tm "tm-taskmanager-5 tm-taskmanager-6 tm-taskmanager-7" ||
      { echo "pods: $(tm_pods "$ns" tm)"; return 1; }
  }
  check "native: a restarted controller with the pods present creates none, then goes on from the largest id" t_restart
  stop_controller native2 >/dev/null
}

case_nativequota() {
  local ns
  ns=$(new_ns nquota) || { check "nativequota: namespace" false; return; }
  # the JobManager's pod and two TaskManagers fit; the other two are refused (HTTP 403)
  kc -n "$ns" create quota pods --hard=pods=3 >/dev/null
  start_controller nquota --namespace "$ns"
  native_cluster tq 8 | kc -n "$ns" apply -f - >/dev/null
  t_backoff() {
    poll 60 tm_count_is "$ns" tq 2 || { echo "pods: $(tm_pods "$ns" tq)"; return 1; }
    poll 30 has_event "$ns" tq TaskManagerStartFailed || { echo "no TaskManagerStartFailed event"; return 1; }
    local t0 refused
    t0=$(grep -c 'action="apply Pod tq-taskmanager-[0-9]*" http_code=403' "$WORK/nquota.log")
    sleep 30
    refused=$(($(grep -c 'action="apply Pod tq-taskmanager-[0-9]*" http_code=403' "$WORK/nquota.log") - t0))
    # cool-downs of 10, 20, 40 s after the first two: at most 2 rounds of 2 refused creates in 30 s
    [ "$refused" -ge 1 ] && [ "$refused" -le 6 ] || { echo "$refused refused creates in 30 s"; return 1; }
    tm_count_is "$ns" tq 2 || { echo "pods: $(tm_pods "$ns" tq)"; return 1; }
    ctl_alive nquota || { echo "controller exited"; return 1; }
  }
  check "nativequota: a quota refusing pods: 2 created, the others retried after a doubling cool-down (1-6 refused creates in 30 s, not a hot loop)" t_backoff
  t_freed() {
    kc -n "$ns" patch quota pods --type=merge -p '{"spec":{"hard":{"pods":"5"}}}' >/dev/null || return 1
    poll 120 tm_count_is "$ns" tq 4 || { echo "pods: $(tm_pods "$ns" tq)"; return 1; }
  }
  check "nativequota: once the quota allows them, the missing pods are created (within the cool-down)" t_freed
  stop_controller nquota >/dev/null
}

# set_kwok_pods N: the kwok node's pod capacity (status; kwok leaves it as set)
set_kwok_pods() {
  kc patch node "${TESTENV_KWOK_NODE:-testenv-node-0}" --subresource=status --type=merge \
    -p "{\"status\":{\"capacity\":{\"pods\":\"$1\"},\"allocatable\":{\"pods\":\"$1\"}}}" >/dev/null
}

case_nativescale() {
  local ns pods=${NATIVE_SCALE_PODS:-1000} cap
  ns=$(new_ns nscale) || { check "nativescale: namespace" false; return; }
  # room for the pods on the kwok node (110 by tests/env/testdata/node.yaml), given back after
  cap=$(jp default "node/${TESTENV_KWOK_NODE:-testenv-node-0}" '{.status.capacity.pods}')
  set_kwok_pods $((pods + 200))
  start_controller nscale --namespace "$ns" --qps 200 --burst 400
  local t0 t1
  t0=$(date +%s)
  # 5m CPU and 16Mi a slot, 2 a pod: 1,000 pods take 10 CPUs and 32Gi of the kwok node
  native_cluster big $((pods * 2)) | sed -e 's/cpu: 100m, memory: 128Mi/cpu: 5m, memory: 16Mi/' \
    -e 's/cpu: 200m, memory: 256Mi/cpu: 10m, memory: 32Mi/' | kc -n "$ns" apply -f - >/dev/null
  t_created() {
    poll 600 tm_count_is "$ns" big "$pods" || { echo "pods: $(tm_count "$ns" big)"; return 1; }
    t1=$(date +%s)
    echo "$pods pods created in $((t1 - t0)) s" >>"$WORK/nscale.figures"
    expect "last id" "$(tm_pods "$ns" big | tr ' ' '\n' | tail -n1)" "big-taskmanager-$pods"
  }
  check "nativescale: $pods TaskManager pods created (ids 1..$pods)" t_created
  t_recovered() {
    expect "controller stopped" "$(stop_controller nscale)" 0 || return 1
    local uids
    uids=$(kc -n "$ns" get pods -l cluster=big,component=taskmanager -o jsonpath='{.items[*].metadata.uid}' |
      tr ' ' '\n' | sort | tr '\n' ' ')
    FC_LOG_LEVEL=debug start_controller nscale2 --namespace "$ns" --qps 200 --burst 400
    poll 60 grep -q "debug reconciled cluster=big namespace=$ns " "$WORK/nscale2.log" || { echo "no pass of the new controller"; return 1; }
    sleep 10
    expect "the same $pods pods (uids)" "$(kc -n "$ns" get pods -l cluster=big,component=taskmanager \
      -o jsonpath='{.items[*].metadata.uid}' | tr ' ' '\n' | sort | tr '\n' ' ')" "$uids" || return 1
    ! grep -q 'apply Pod' "$WORK/nscale2.log" || { grep 'apply Pod' "$WORK/nscale2.log" | head -3; return 1; }
    # the first pass of the new process rebuilds the accounting from the pods
    grep -o "debug reconciled cluster=big namespace=$ns duration_ms=[0-9.]*" "$WORK/nscale2.log" | head -n1 |
      sed 's/.*duration_ms=\([0-9.]*\)/(\1 ms)/' |
      sed "s/^/first pass after the restart (state rebuilt from $pods pods): /" >>"$WORK/nscale.figures"
    kc -n "$ns" delete pod big-taskmanager-17 --wait=false >/dev/null
    poll 60 tm_count_is "$ns" big "$pods" || return 1
    expect "replacement id" "$(tm_pods "$ns" big | tr ' ' '\n' | tail -n1)" "big-taskmanager-$((pods + 1))"
  }
  check "nativescale: a restarted controller recovers the $pods pods without creating one, and replaces a deleted one as id $((pods + 1))" t_recovered
  sed 's/^/# /' "$WORK/nscale.figures" 2>/dev/null
  stop_controller nscale2 >/dev/null
  kc delete namespace "$ns" --timeout=300s >/dev/null 2>&1
  [ -z "$cap" ] || set_kwok_pods "$cap"
}

# ---- on the real node (skipped without one; realpods.sh has real_node_ready, skip, jm_get, ...) ----
#   nativereal     a Ticker job cluster, parallelism 4, 2 slots per pod: 2 real TaskManager pods
#                  register with the real JobManager under their pod names and the job's tasks
#                  run on them
#   nativetimeout  a TaskManager that never registers (its pod held in an init container) is
#                  replaced after registrationTimeoutSeconds; at maxFailedAttempts no more pods

# tm_ids NS NAME: the resource ids the JobManager lists in GET /taskmanagers, sorted, one line
tm_ids() {
  jm_get "$1" "$2" /taskmanagers | lua5.4 -e 'local ids = {}
    for _, t in ipairs(require("cjson").decode(io.read("a")).taskmanagers or {}) do ids[#ids + 1] = t.id end
    table.sort(ids) print(table.concat(ids, " "))' /dev/null
}

# real_native_head NAME JM_CPU LINE...: a Native FlinkCluster on the Flink image built here, the
# given lines after `mode: Native`
real_native_head() {
  local name=$1 cpu=$2; shift 2
  printf '%s\n' "apiVersion: flinkoperator.k8s.io/v1beta1" "kind: FlinkCluster" "metadata: {name: $name}" "spec:" \
    "  image: {name: flink:1.20.5}" "  jobManager: {resources: {limits: {memory: 1024Mi, cpu: $cpu}}}" \
    "  taskManager:" "    mode: Native" "$@"
}

case_nativereal() {
  local desc="native, real pods: a Ticker job cluster with parallelism 4 at 2 slots per pod"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  local ns; ns=$(new_ns nreal real)
  FLINK_DIRECT=1 start_controller nreal --namespace "$ns"
  real_native_head nt 500m "    resourceProfile: {cpu: 100m, memory: 512Mi}" \
    "    maxPerTaskManager: {cpu: 200m, memory: 1Gi}" "    registrationTimeoutSeconds: 300" \
    "  job: {jarFile: /opt/flink/usrlib/testenv-jobs.jar, className: testenv.Ticker, parallelism: 4," \
    "    cleanupPolicy: {afterJobCancelled: KeepCluster}}" | kc -n "$ns" apply -f - >/dev/null
  t_registered() {
    poll 240 eval '[ "$(tm_ids "$ns" nt)" = "nt-taskmanager-1 nt-taskmanager-2" ]' ||
      { echo "JobManager lists: '$(tm_ids "$ns" nt)'"; why "$ns" nt; tail -n 15 "$WORK/nreal.log"; return 1; }
    # /overview may still count one TaskManager a moment after /taskmanagers lists both
    four_slots() { [ "$(jm_get "$ns" nt /overview | jget slots-total)" = 4 ]; }
    poll 15 four_slots || { expect "slots-total" "$(jm_get "$ns" nt /overview | jget slots-total)" 4; return 1; }
    poll 30 eval '[ "$(native_field "$ns" nt registered) $(native_field "$ns" nt state)" = "2 Ready" ]' ||
      { echo "status: $(jp "$ns" flinkcluster/nt '{.status.components.taskManagers}')"; return 1; }
  }
  check "$desc: pods nt-taskmanager-1 and -2 register with the JobManager under their pod names (4 slots), status Ready" t_registered
  t_job_runs() {
    poll 240 is_job "$ns" nt Running || { why "$ns" nt; tail -n 15 "$WORK/nreal.log"; return 1; }
    local id
    id=$(job_field "$ns" nt id)
    tasks_running() { jm_get "$ns" nt "/jobs/$id" | all_vertices_running; }
    poll 90 tasks_running || { echo "tasks of $id not all RUNNING"; return 1; }
    # every slot of both TaskManagers is taken by the job
    expect "slots-available" "$(jm_get "$ns" nt /overview | jget slots-available)" 0 || return 1
    expect "cluster state" "$(state "$ns" nt)" Running
  }
  check "$desc: the job runs on them (tasks RUNNING, no free slot), cluster Running" t_job_runs
  stop_controller nreal >/dev/null
  kc delete namespace "$ns" --wait=false >/dev/null 2>&1 # the real node's CPU for the next case
}

case_nativetimeout() {
  local desc="native, real pods: a TaskManager that never registers"
  real_node_ready || { skip "$desc" "no real node in this environment"; return 0; }
  local ns; ns=$(new_ns ntimeout real)
  FLINK_DIRECT=1 start_controller ntimeout --namespace "$ns"
  real_native_head nx 200m "    slots: 1" "    registrationTimeoutSeconds: 20" "    maxFailedAttempts: 2" \
    "    initContainers: [{name: hold, image: flink:1.20.5, command: [sleep, '3600']}]" |
    kc -n "$ns" apply -f - >/dev/null
  t_replaced() {
    poll 120 eval 'kc -n "$ns" get pod nx-taskmanager-2 >/dev/null 2>&1' ||
      { echo "pods: $(tm_pods "$ns" nx)"; why "$ns" nx; tail -n 15 "$WORK/ntimeout.log"; return 1; }
    poll 10 has_event "$ns" nx TaskManagerNotRegistered || { echo "no TaskManagerNotRegistered event"; return 1; }
    expect "the JobManager lists" "$(tm_ids "$ns" nx)" ""
  }
  check "$desc: pod 1 is replaced by pod 2 after registrationTimeoutSeconds (20 s), the JobManager answering" t_replaced
  t_limit() {
    poll 120 eval '[ "$(condition "$ns" nx TaskManagersStopped)" = "True MaxFailedAttempts" ]' ||
      { echo "condition: $(condition "$ns" nx TaskManagersStopped), pods: $(tm_pods "$ns" nx)"; return 1; }
    poll 10 has_event "$ns" nx TaskManagersStopped || { echo "no TaskManagersStopped event"; return 1; }
    poll 60 tm_count_is "$ns" nx 0 || { echo "pods: $(tm_pods "$ns" nx)"; return 1; }
    sleep 25
    expect "pods 25 s later" "$(tm_pods "$ns" nx)" "" || return 1
    ! kc -n "$ns" get pod nx-taskmanager-3 >/dev/null 2>&1 || { echo "a third pod"; return 1; }
  }
  check "$desc: after the second timeout (maxFailedAttempts 2) no pod is started, condition and Warning event say why" t_limit
  stop_controller ntimeout >/dev/null
  kc delete namespace "$ns" --wait=false >/dev/null 2>&1
}
