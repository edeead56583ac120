# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# upgradeMode last-state on the real node (issue 29 item 1; sourced by tests/integration/run.sh
# after realpods.sh: real_node_ready, skip, job_field, is_job, jm_get, jget, why,
# all_vertices_running, config_value, node_has_image):
#   laststate2   testenv.Ticker on flink:2.3.0 with checkpoints every second, upgradeMode
#                last-state on Flink's Kubernetes HA services as the policy configures them
#                (high-availability.type kubernetes; the HA storage and the checkpoints on a
#                hostPath volume every JobManager pod of the one node sees; the pods run as the
#                ServiceAccount the controller renders with a Role for Flink's HA ConfigMaps, no
#                spec.serviceAccountName). A Flink option changed -> the pods are replaced with
#                no savepoint, the same job id resumes from a checkpoint (restored id > 0, not a
#                savepoint) and its checkpoint ids go on; the JobManager pod killed (--force) ->
#                the same job resumes from a checkpoint, not resubmitted. The status records the
#                latest checkpoint (latestCheckpoint); at the end the cluster is deleted while the
#                controller runs: the HA ConfigMaps Flink wrote go (its HA finalizer).
#   laststate    the same on flink:1.20.5 with ZooKeeper HA: the registry the test images are
#                built from does not serve flink-kubernetes 1.20.x (tests/env/flink/pom.xml), so
#                flinkProperties switch the HA type to ZooKeeper (a server from the image's
#                flink-shaded-zookeeper jar in a pod of the namespace), which keeps the job graph
#                and checkpoint pointer the same way; the controller's part is the same, its
#                HA ConfigMap cleanup shown on one made by hand
#   haclean      (kwok) the HA ConfigMaps deleted with the cluster, below
#   jmha         two JobManagers on Flink 2 (Kubernetes HA), the leader killed, below

# ls_zk VERSION: true when the flink:VERSION image has no flink-kubernetes (1.x here), whose
# last-state cases run on ZooKeeper HA instead (the top)
ls_zk() { case $1 in 1.*) return 0 ;; *) return 1 ;; esac; }

# laststate_cluster NAME HOSTDIR VERSION SLOTS [JM_REPLICAS]: the Ticker job cluster in
# upgradeMode last-state, HA storage and checkpoints under HOSTDIR (mounted at /state), no
# savepointsDir; JM_REPLICAS JobManagers (default 1); Flink's Kubernetes HA, ZooKeeper's on 1.x
# (ls_zk). Each pod requests 200m CPU (limit 500m): the real node's two cores hold two
# JobManagers and a TaskManager (and ZooKeeper).
laststate_cluster() {
  local vol="
    volumes: [{name: state, hostPath: {path: $2, type: DirectoryOrCreate}}]
    volumeMounts: [{name: state, mountPath: /state}]"
  local ckdir=execution.checkpointing.dir zk=""
  case $3 in 1.*) ckdir=state.checkpoints.dir ;; esac
  ls_zk "$3" && zk="
    high-availability.type: zookeeper
    high-availability.zookeeper.quorum: \"zk:2181\"
    high-availability.cluster-id: /$1"
  cat <<EOF
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: $1
spec:
  image: {name: "flink:$3"}
  jobManager:
    replicas: ${5:-1}
    resources: {requests: {memory: "1024Mi", cpu: "200m"}, limits: {memory: "1024Mi", cpu: "500m"}}$vol
  taskManager:
    replicas: 1
    resources: {requests: {memory: "1024Mi", cpu: "200m"}, limits: {memory: "1024Mi", cpu: "500m"}}$vol
  job:
    jarFile: /opt/flink/usrlib/testenv-jobs.jar
    className: testenv.Ticker
    parallelism: 1
    upgradeMode: last-state
    highAvailability: {storageDir: "file:///state/ha"}
    restartPolicy: FromSavepointOnFailure
  flinkProperties:
    taskmanager.numberOfTaskSlots: "$4"
    execution.checkpointing.interval: "1s"
    $ckdir: "file:///state/checkpoints"$zk
EOF
}

# laststate_zk VERSION: a ZooKeeper server (the flink image's shaded ZooKeeper) as Pod and Service zk
laststate_zk() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: zk, labels: {app: laststate-zk}}
spec:
  containers:
    - name: zk
      image: "flink:$1"
      command: ["java", "-Dzookeeper.admin.enableServer=false", "-cp", "/opt/flink/lib/*",
        "org.apache.flink.shaded.zookeeper3.org.apache.zookeeper.server.ZooKeeperServerMain", "2181", "/tmp/zk"]
      ports: [{containerPort: 2181}]
      readinessProbe: {tcpSocket: {port: 2181}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: zk}
spec:
  selector: {app: laststate-zk}
  ports: [{port: 2181, targetPort: 2181}]
EOF
}

# measured CASE TEXT: TEXT for the case's TAP comments (ls_report), as `check` keeps a passing
# check's output to itself
measured() { printf '%s\n' "$2" >>"$WORK/$1.measured"; }
# ls_report CASE: the case's measurements as TAP comments
ls_report() { [ -f "$WORK/$1.measured" ] && sed 's/^/# /' "$WORK/$1.measured"; return 0; }

# ckpt NS NAME ID FIELD: a field of GET /jobs/ID/checkpoints (json.lua path)
ckpt() { jm_get "$1" "$2" "/jobs/$3/checkpoints" | jget "$4"; }
# no_savepoint: true when the GET /jobs/<id>/checkpoints answer on stdin has a history and no
# entry of it is a savepoint
no_savepoint() {
  lua5.4 -e 'local h = require("cjson").decode(io.read("a")).history or {}
    for _, e in ipairs(h) do if e.is_savepoint == true then os.exit(1) end end
    os.exit(#h > 0 and 0 or 1)' /dev/null
}

# resumes_same NS NAME ID BEFORE CASE: job ID of FlinkCluster NAME runs again restored from a
# checkpoint (not a savepoint) whose id is BEFORE or later, Running in the status under the same
# id, not resubmitted (restartCount 0); RESTORED is set to the restored checkpoint's id. Both
# come from one answer: with two JobManagers behind the Service, the next request may reach the
# one still starting (connection refused).
resumes_same() {
  local ns=$1 name=$2 id=$3 before=$4 restored_sp=""
  resumed() {
    local cp
    cp=$(jm_get "$ns" "$name" "/jobs/$id/checkpoints") || return 1
    RESTORED=$(printf '%s' "$cp" | jget latest.restored.id)
    restored_sp=$(printf '%s' "$cp" | jget latest.restored.is_savepoint)
    [ -n "$RESTORED" ] && [ "$RESTORED" -ge "$before" ] && jm_get "$ns" "$name" "/jobs/$id" | all_vertices_running
  }
  poll 150 resumed || { echo "job $id did not resume: $(jm_get "$ns" "$name" "/jobs/$id/checkpoints")"
    why "$ns" "$name"; tail -n 20 "$WORK/$5.log"; return 1; }
  expect "restored from a savepoint" "$restored_sp" false || return 1
  poll 30 is_job "$ns" "$name" Running || { why "$ns" "$name"; return 1; }
  expect "job id after the JobManager's loss" "$(job_field "$ns" "$name" id)" "$id" || return 1
  expect "restartCount (not resubmitted)" "$(job_field "$ns" "$name" restartCount)" 0 || return 1
  measured "$5" "$name: job $id resumed from checkpoint $RESTORED (latest before the loss: $before)"
}

# laststate_start CASE VERSION DESC: status 1 (a SKIP line for DESC) without the real node or
# the flink:VERSION image; else a namespace LS_NS (with ZooKeeper, laststate_zk, on 1.x), the
# HA and checkpoint directory LS_DIR on the host, and controller CASE watching the namespace
laststate_start() {
  real_node_ready || { skip "$3" "no real node in this environment"; return 1; }
  node_has_image "docker.io/library/flink:$2" || { skip "$3" "no flink:$2 image on the node"; return 1; }
  LS_NS=$(new_ns "$1" real)
  LS_DIR=$TESTENV_DIR/savepoints/$LS_NS
  mkdir -p "$LS_DIR" && chmod 0777 "$LS_DIR"
  if ls_zk "$2"; then laststate_zk "$2" | kc -n "$LS_NS" apply -f - >/dev/null; fi
  FLINK_DIRECT=1 start_controller "$1" --namespace "$LS_NS"
}

laststate_case() {
  local c=$1 version=$2
  local desc="real pods, Flink $version: upgradeMode last-state"
  laststate_start "$c" "$version" "$desc" || return 0
  local ns=$LS_NS dir=$LS_DIR
  laststate_cluster ls "$dir" "$version" 2 | kc -n "$ns" apply -f - >/dev/null
  # tasks RUNNING and at least N completed checkpoints of job $id
  checkpointed() {
    jm_get "$ns" ls "/jobs/$id" | all_vertices_running &&
      [ "$(ckpt "$ns" ls "$id" counts.completed)" -ge "$1" ]
  }
  t_ls_running() {
    local id
    poll 240 is_job "$ns" ls Running || { why "$ns" ls; tail -n 15 "$WORK/$c.log"; return 1; }
    id=$(job_field "$ns" ls id)
    poll 90 checkpointed 2 || { echo "job $id: no 2 completed checkpoints: $(jm_get "$ns" ls "/jobs/$id/checkpoints")"; return 1; }
    local conf
    conf=$(jm_get "$ns" ls /jobmanager/config) || return 1
    # the policy's HA options (on 1.x the type overridden by flinkProperties: see the top)
    local type=kubernetes; ls_zk "$version" && type=zookeeper
    expect "high-availability.type" "$(printf '%s' "$conf" | config_value high-availability.type)" "$type" || return 1
    expect "high-availability.storageDir" "$(printf '%s' "$conf" | config_value high-availability.storageDir)" \
      file:///state/ha || return 1
    expect "kubernetes.cluster-id" "$(printf '%s' "$conf" | config_value kubernetes.cluster-id)" ls || return 1
    # the pods run as the account the controller made for the HA services, owned by the cluster
    expect "JobManager pod's ServiceAccount" "$(jp "$ns" pod/ls-jobmanager-0 '{.spec.serviceAccountName}')" ls-flink-ha ||
      return 1
    local kind
    for kind in serviceaccount role rolebinding; do
      expect "$kind ls-flink-ha owner" "$(jp "$ns" "$kind/ls-flink-ha" '{.metadata.ownerReferences[0].name}')" ls ||
        return 1
    done
    # the HA services keep the job graph in the storage directory
    [ -n "$(find "$dir/ha" -type f 2>/dev/null | head -n 1)" ] || { echo "nothing in the HA storage $dir/ha"; return 1; }
    # and (Kubernetes HA) the leader and the pointers to it in ConfigMaps of their own
    ls_zk "$version" || ha_configmaps_written "$ns" ls "$id" || return 1
    # the status records the latest completed checkpoint Flink reports (lib.upgrade.latest_checkpoint)
    recorded() {
      local cid; cid=$(jp "$ns" flinkcluster/ls '{.status.components.job.latestCheckpoint.id}')
      [ -n "$cid" ] && [ "$cid" -ge 1 ]
    }
    poll 60 recorded || { echo "no latestCheckpoint: $(jp "$ns" flinkcluster/ls '{.status.components.job}')"; return 1; }
    expect "latestCheckpoint.jobID" "$(jp "$ns" flinkcluster/ls '{.status.components.job.latestCheckpoint.jobID}')" "$id" ||
      return 1
    local cpath; cpath=$(jp "$ns" flinkcluster/ls '{.status.components.job.latestCheckpoint.path}')
    case $cpath in file:/state/checkpoints/"$id"/chk-*) ;; *) echo "latestCheckpoint.path: $cpath"; return 1 ;; esac
  }
  check "$desc: job Running with checkpoints, the JobManager runs with HA (its storage written) as the ServiceAccount the controller made; status records its latest checkpoint" t_ls_running
  # each check runs in a subshell (check): the job id is read again in each
  t_ls_upgrade() {
    local old_jm old_rev before restored id
    id=$(job_field "$ns" ls id)
    old_jm=$(jp "$ns" pod/ls-jobmanager-0 '{.metadata.uid}')
    old_rev=$(jp "$ns" flinkcluster/ls '{.status.currentRevision}')
    before=$(ckpt "$ns" ls "$id" latest.completed.id)
    # a Flink option: every pod is replaced (the configuration's hash), the job is not touched
    kc -n "$ns" patch flinkcluster ls --type merge \
      -p '{"spec":{"flinkProperties":{"taskmanager.numberOfTaskSlots":"3"}}}' >/dev/null || return 1
    replaced() {
      local u; u=$(jp "$ns" pod/ls-jobmanager-0 '{.metadata.uid}')
      [ -n "$u" ] && [ "$u" != "$old_jm" ]
    }
    poll 120 replaced || { echo "the JobManager pod was not replaced"; why "$ns" ls; return 1; }
    # the new JobManager lists the same job again (HA recovery), restored from a checkpoint
    restored_ckpt() {
      restored=$(ckpt "$ns" ls "$id" latest.restored.id)
      [ -n "$restored" ] && [ "$restored" -gt 0 ]
    }
    poll 150 restored_ckpt || { echo "job $id not restored: $(jm_get "$ns" ls "/jobs/$id/checkpoints")"; why "$ns" ls
      tail -n 20 "$WORK/$c.log"; return 1; }
    expect "restored from a savepoint" "$(ckpt "$ns" ls "$id" latest.restored.is_savepoint)" false || return 1
    [ "$restored" -ge "$before" ] || { echo "restored checkpoint $restored is older than $before, the latest before"; return 1; }
    expect "the new JobManager's slots option" "$(jm_get "$ns" ls /jobmanager/config | config_value taskmanager.numberOfTaskSlots)" 3 ||
      return 1
    poll 60 checkpointed 1 || { echo "job $id takes no checkpoint after its recovery"; return 1; }
    local after; after=$(ckpt "$ns" ls "$id" latest.completed.id)
    [ "$after" -gt "$restored" ] || { echo "checkpoint ids do not go on: latest $after, restored $restored"; return 1; }
    measured "$c" "ls upgrade: job $id, latest checkpoint before $before, restored $restored, latest after $after"
    status_after() {
      local cid; cid=$(jp "$ns" flinkcluster/ls '{.status.components.job.latestCheckpoint.id}')
      [ -n "$cid" ] && [ "$cid" -gt "$restored" ]
    }
    poll 30 status_after || { echo "status latestCheckpoint not past $restored: $(jp "$ns" flinkcluster/ls \
      '{.status.components.job.latestCheckpoint}')"; return 1; }
    poll 30 is_job "$ns" ls Running || { why "$ns" ls; return 1; }
    expect "job id after the upgrade" "$(job_field "$ns" ls id)" "$id" || return 1
    [ "$(jp "$ns" flinkcluster/ls '{.status.currentRevision}')" != "$old_rev" ] || { echo "currentRevision unchanged"; return 1; }
    # no savepoint: none in the status, none in Flink's checkpoint history
    expect "savepoint state" "$(jp "$ns" flinkcluster/ls '{.status.savepoint.state}')" NotTriggered || return 1
    jm_get "$ns" ls "/jobs/$id/checkpoints" | no_savepoint ||
      { echo "a savepoint in Flink's checkpoint history of $id"; return 1; }
    expect "restartCount" "$(job_field "$ns" ls restartCount)" 0 || return 1
    kc -n "$ns" get events --field-selector reason=LastStateUpgrade -o name | grep -q . ||
      { echo "no LastStateUpgrade Event"; return 1; }
  }
  check "$desc: a Flink option changed -> pods replaced with no savepoint, the same job restored from checkpoint > 0, checkpoint ids go on" t_ls_upgrade
  t_ls_jm_killed() {
    local old_jm before id
    id=$(job_field "$ns" ls id)
    old_jm=$(jp "$ns" pod/ls-jobmanager-0 '{.metadata.uid}')
    before=$(ckpt "$ns" ls "$id" latest.completed.id)
    kc -n "$ns" delete pod ls-jobmanager-0 --grace-period=0 --force >/dev/null 2>&1
    back() { local u; u=$(jp "$ns" pod/ls-jobmanager-0 '{.metadata.uid}'); [ -n "$u" ] && [ "$u" != "$old_jm" ]; }
    poll 60 back || { echo "the StatefulSet did not bring the JobManager back"; return 1; }
    resumes_same "$ns" ls "$id" "$before" "$c"
  }
  check "$desc: JobManager pod killed -> the same job resumes from its latest checkpoint, not resubmitted" t_ls_jm_killed
  t_ls_deleted() {
    if ls_zk "$version"; then
      # an HA ConfigMap as Flink's Kubernetes HA services would leave it (ZooKeeper keeps none)
      kc -n "$ns" create configmap ls-cluster-config-map --from-literal=leader=x >/dev/null &&
        kc -n "$ns" label configmap ls-cluster-config-map "${HA_LABELS[@]}" app=ls >/dev/null || return 1
    else
      # the ones Flink wrote, still there while the job runs
      ha_configmaps_written "$ns" ls "$(job_field "$ns" ls id)" || return 1
    fi
    ha_delete "$ns" ls
  }
  check "$desc: FlinkCluster deleted -> its pods, then its HA ConfigMaps (Flink's own on 2.x) go, then the finalizer lets it go" t_ls_deleted
  ls_report "$c"
  ha_done "$c" "$ns" ls "$dir"
  if ls_zk "$version"; then kc -n "$ns" delete pod zk --wait=true --timeout=60s >/dev/null 2>&1; fi
}

# The labels of the HA ConfigMaps Flink 1.20 writes besides app=<cluster-id> (Flink 2 writes
# type only: the controller selects app and type, lua/fc/haclean.lua)
HA_LABELS=(type=flink-native-kubernetes configmap-type=high-availability)

# ha_configmaps_written NS NAME JOB: Flink's Kubernetes HA services of FlinkCluster NAME (its
# kubernetes.cluster-id) wrote their ConfigMaps labelled app=NAME,type=flink-native-kubernetes:
# NAME-cluster-config-map, whose leader annotation (Flink's ConfigMap lock) names a holder, and
# NAME-JOB-config-map, the job's checkpoint pointers (a checkpointID-... key)
ha_configmaps_written() {
  local cms
  cms=$(kc -n "$1" get configmap -l "app=$2,type=flink-native-kubernetes" -o name | sort | tr '\n' ' ')
  # both sides sorted: the job id's first character decides which of the two comes first
  expect "HA ConfigMaps" "$cms" \
    "$(printf '%s\n' "configmap/$2-$3-config-map" "configmap/$2-cluster-config-map" | sort | tr '\n' ' ')" || return 1
  [ -n "$(ha_holder "$1" "$2")" ] || { echo "no leader in $2-cluster-config-map: $(jp "$1" "configmap/$2-cluster-config-map" '{.metadata}')"
    return 1; }
  jp "$1" "configmap/$2-$3-config-map" '{.data}' | grep -q '"checkpointID-' ||
    { echo "no checkpoint pointer in $2-$3-config-map: $(jp "$1" "configmap/$2-$3-config-map" '{.data}')"; return 1; }
}

# ha_holder NS NAME: the lock identity of the JobManager that leads FlinkCluster NAME (Flink's
# ConfigMap lock: the leader annotation of NAME-cluster-config-map), empty when none
ha_holder() {
  jp "$1" "configmap/$2-cluster-config-map" '{.metadata.annotations.control-plane\.alpha\.kubernetes\.io/leader}' |
    jget holderIdentity
}

# ha_delete NS NAME: deletes FlinkCluster NAME with the controller running (its finalizer
# flinkoperator.k8s.io/ha-configmaps waits for it) and checks that it, its pods and its HA
# ConfigMaps are gone
ha_delete() {
  local has
  has=$(jp "$1" "flinkcluster/$2" '{.metadata.finalizers}')
  case $has in *flinkoperator.k8s.io/ha-configmaps*) ;; *) echo "no HA finalizer on $2: $has"; return 1 ;; esac
  kc -n "$1" delete flinkcluster "$2" --wait=false >/dev/null || return 1
  cluster_gone() { [ -z "$(jp "$1" "flinkcluster/$2" '{.metadata.name}')" ]; }
  poll 120 cluster_gone "$1" "$2" || { echo "FlinkCluster $2 still there: $(jp "$1" "flinkcluster/$2" '{.metadata}')"
    return 1; }
  expect "HA ConfigMaps of $2 left" "$(kc -n "$1" get configmap -l "app=$2,type=flink-native-kubernetes" -o name)" "" ||
    return 1
  pods_gone() { [ -z "$(kc -n "$1" get pods -l "cluster=$2" -o name 2>/dev/null)" ]; }
  poll 120 pods_gone "$1" "$2" || { echo "pods of $2 left: $(kc -n "$1" get pods -l "cluster=$2" -o name)"; return 1; }
}

# ha_done CASE NS NAME DIR: the end of a case with an HA cluster: deleted while the controller
# runs (the finalizer needs it), then the controller stopped, then (a failed case) whatever is
# left let go of the finalizer so that its namespace can be deleted
ha_done() {
  kc -n "$2" delete flinkcluster "$3" --wait=true --timeout=120s >/dev/null 2>&1
  stop_controller "$1" >/dev/null
  kc -n "$2" patch flinkcluster "$3" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  kc -n "$2" delete pods -l "cluster=$3" --wait=true --timeout=120s >/dev/null 2>&1
  rm -rf "$4"
}
case_laststate() { laststate_case laststate 1.20.5; }
case_laststate2() { laststate_case laststate2 2.3.0; }

# haclean (kwok): Flink's HA ConfigMaps are removed with the FlinkCluster (lua/fc/haclean.lua).
# Flink is not running here: the ConfigMaps its Kubernetes HA services would write
# (<name>-cluster-config-map, <name>-<job id>-config-map, labels app=<name>,
# type=flink-native-kubernetes and on Flink 1.x configmap-type=high-availability, no
# ownerReference) are made by hand (laststate2 and jmha delete the ones real Flink 2 wrote),
# with the other ConfigMaps that must stay.
case_haclean() {
  local ns
  ns=$(new_ns haclean)
  start_controller haclean --namespace "$ns"
  laststate_cluster hac /tmp/haclean-unused 2.3.0 1 | kc -n "$ns" apply -f - >/dev/null
  # ha_cm NAME APP [LABEL...]: a ConfigMap labelled app=APP and LABEL...
  ha_cm() {
    kc -n "$ns" create configmap "$1" --from-literal=leader=x >/dev/null &&
      kc -n "$ns" label configmap "$1" "app=$2" "${@:3}" >/dev/null
  }
  t_hac_finalizer() {
    has_fin() { jp "$ns" flinkcluster/hac '{.metadata.finalizers}' | grep -q 'flinkoperator.k8s.io/ha-configmaps'; }
    poll 60 has_fin || { echo "no finalizer: $(jp "$ns" flinkcluster/hac '{.metadata.finalizers}')"; return 1; }
    poll 60 jp "$ns" statefulset/hac-jobmanager '{.metadata.name}' || { echo "no JobManager StatefulSet"; return 1; }
  }
  check "kwok: a last-state cluster carries the finalizer flinkoperator.k8s.io/ha-configmaps" t_hac_finalizer
  t_hac_deleted() {
    # as Flink 1.20 labels them, and as Flink 2 does
    ha_cm hac-cluster-config-map hac "${HA_LABELS[@]}" || return 1
    ha_cm hac-00000000000000000000000000000001-config-map hac "${HA_LABELS[0]}" || return 1
    # not the cluster's: another cluster-id's HA ConfigMap, and ones of app=hac that are not Flink's
    ha_cm other-cluster-config-map other "${HA_LABELS[@]}" || return 1
    ha_cm hac-notes hac || return 1
    ha_cm hac-old hac "${HA_LABELS[1]}" || return 1
    ha_delete "$ns" hac || { tail -n 15 "$WORK/haclean.log"; return 1; }
    expect "other ConfigMaps" "$(kc -n "$ns" get configmap other-cluster-config-map hac-notes hac-old -o name | sort |
      tr '\n' ' ')" "configmap/hac-notes configmap/hac-old configmap/other-cluster-config-map " || return 1
  }
  check "kwok: FlinkCluster deleted -> its StatefulSets, then its HA ConfigMaps (app=hac, type=flink-native-kubernetes: Flink 1.20's and 2's labels) go, then the finalizer; other ConfigMaps stay" t_hac_deleted
  ha_done haclean "$ns" hac /tmp/haclean-unused
}

# jmha (real node): two JobManagers on Flink 2 with Kubernetes HA (as laststate2: the leader
# elected through the ConfigMap jm-cluster-config-map, no ZooKeeper): the leader killed
# (--force) -> the standby takes over and the same job goes on from its latest checkpoint (no
# resubmission). The JobManager Service selects both pods: REST on a standby is served through
# the leader (its handlers find the leading Dispatcher by the HA services), each JobManager
# announcing its own pod IP (policies/cluster.lua, replicas > 1).
case_jmha() {
  local c=jmha version=2.3.0
  local desc="real pods, Flink $version: two JobManagers with HA"
  laststate_start "$c" "$version" "$desc" || return 0
  local ns=$LS_NS dir=$LS_DIR
  laststate_cluster jm "$dir" "$version" 1 2 | kc -n "$ns" apply -f - >/dev/null
  # pod_log_has POD TEXT: the log of POD holds TEXT (read whole first: `grep -q` in a pipe would
  # end kubectl early with SIGPIPE, a failure under pipefail)
  pod_log_has() { local l; l=$(kc -n "$ns" logs "$1" 2>/dev/null) && grep -qF -- "$2" <<<"$l"; }
  # leads POD: the JobManager in POD logged its leadership (Flink's leader election)
  leads() { pod_log_has "$1" 'was granted leadership'; }
  t_jmha_running() {
    poll 240 is_job "$ns" jm Running || { why "$ns" jm; tail -n 15 "$WORK/$c.log"; return 1; }
    poll 60 sts_ready "$ns" jm-jobmanager || { echo "not both JobManagers ready"; why "$ns" jm; return 1; }
    local id; id=$(job_field "$ns" jm id)
    two_ckpts() { [ "$(ckpt "$ns" jm "$id" counts.completed)" -ge 2 ]; }
    poll 90 two_ckpts || { echo "job $id: no 2 completed checkpoints"; return 1; }
    local ip0 ip1
    ip0=$(jp "$ns" pod/jm-jobmanager-0 '{.status.podIP}')
    ip1=$(jp "$ns" pod/jm-jobmanager-1 '{.status.podIP}')
    if [ -z "$ip0" ] || [ -z "$ip1" ]; then echo "pod IPs: '$ip0' '$ip1'"; return 1; fi
    # each JobManager's RPC runs at its own pod IP (pekko.tcp://flink@<IP>:<port>), not the Service's name
    pod_log_has jm-jobmanager-0 "@$ip0:" || { echo "jm-jobmanager-0 does not run at $ip0"; return 1; }
    pod_log_has jm-jobmanager-1 "@$ip1:" || { echo "jm-jobmanager-1 does not run at $ip1"; return 1; }
    # exactly one leader
    local n=0 p
    for p in jm-jobmanager-0 jm-jobmanager-1; do leads "$p" && n=$((n + 1)); done
    expect "JobManagers that lead" "$n" 1
  }
  check "$desc: the job Running with checkpoints, two JobManager pods Ready, one of them the leader" t_jmha_running
  t_jmha_failover() {
    local id leader standby before p holder old_uid
    id=$(job_field "$ns" jm id)
    for p in jm-jobmanager-0 jm-jobmanager-1; do
      if leads "$p"; then leader=$p; else standby=$p; fi
    done
    if [ -z "$leader" ] || [ -z "$standby" ]; then echo "leader '$leader', standby '$standby'"; return 1; fi
    holder=$(ha_holder "$ns" jm)
    [ -n "$holder" ] || { echo "no leader in jm-cluster-config-map"; return 1; }
    old_uid=$(jp "$ns" "pod/$leader" '{.metadata.uid}')
    before=$(ckpt "$ns" jm "$id" latest.completed.id)
    kc -n "$ns" delete pod "$leader" --grace-period=0 --force >/dev/null 2>&1
    # once the killed one's lease ran out (Flink's lease-duration, 15 s) another JobManager takes
    # the ConfigMap lock: the standby, or the pod the StatefulSet made in the killed one's place
    new_leader() {
      local h; h=$(ha_holder "$ns" jm)
      [ -n "$h" ] && [ "$h" != "$holder" ] || return 1
      leads "$standby" && return 0
      [ "$(jp "$ns" "pod/$leader" '{.metadata.uid}')" != "$old_uid" ] && leads "$leader"
    }
    poll 120 new_leader || { echo "no JobManager took the leadership from $holder: $(ha_holder "$ns" jm)"
      kc -n "$ns" logs "$standby" | tail -n 20; return 1; }
    resumes_same "$ns" jm "$id" "$before" "$c" || return 1
    # checkpoints go on under the new leader
    goes_on() { [ "$(ckpt "$ns" jm "$id" latest.completed.id)" -gt "$RESTORED" ]; }
    poll 60 goes_on || { echo "no checkpoint after the restore $RESTORED"; return 1; }
    measured "$c" "jm: the lock went from $holder to $(ha_holder "$ns" jm); checkpoints go on: $(ckpt "$ns" jm "$id" latest.completed.id)"
  }
  check "$desc: the leading JobManager killed -> another JobManager takes the ConfigMap lock, the same job resumes from its latest checkpoint, not resubmitted" \
    t_jmha_failover
  t_jmha_deleted() { ha_configmaps_written "$ns" jm "$(job_field "$ns" jm id)" && ha_delete "$ns" jm; }
  check "$desc: FlinkCluster deleted -> its pods, the HA ConfigMaps Flink wrote and the cluster gone" t_jmha_deleted
  ls_report "$c"
  ha_done "$c" "$ns" jm "$dir"
}
