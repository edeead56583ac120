# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Issue 12 (policy authoring), sourced by tests/integration/run.sh: `flink-controller diff` shows
# what a candidate policy directory would change in a live FlinkCluster, as kubectl diff does,
# and writes nothing (case `livediff`); `run --policy-configmap` serves policy overrides from a
# ConfigMap once their fixtures pass, refuses a bad set and keeps the last good one (case
# `override`). Issue #27: `render` is as strict as the API server and its output applies (case
# `render`).

# resource_versions NS: the resourceVersions of the namespace's FlinkClusters and children
resource_versions() {
  kc -n "$1" get flinkclusters,statefulsets,services,configmaps,controllerrevisions \
    -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}'
}

case_livediff() {
  local ns pdir
  ns=$(new_ns livediff)
  pdir=$WORK/policies-labels
  cp -r "$ROOT/policies" "$pdir"
  patch -s -p1 -d "$pdir" <"$ROOT/docs/cookbook/labels.patch" ||
    { echo "# could not apply docs/cookbook/labels.patch"; patch_failed livediff; return 0; }
  mkdir -p "$WORK/snapshots"
  start_controller livediff --namespace "$ns" --debug-snapshot-dir "$WORK/snapshots"
  small_cluster sess | kc -n "$ns" apply -f - >/dev/null
  t_livediff_same() {
    poll 90 is_state "$ns" sess Running || { echo "state: $(state "$ns" sess)"; return 1; }
    local out rc
    out=$("$FC_BIN" diff --kubeconfig "$KUBECONFIG" "$ns/sess" 2>&1); rc=$?
    expect "exit status with the running policies" "$rc" 0 || { echo "$out"; return 1; }
    expect "output" "$out" ""
  }
  check "livediff: the policies the controller runs: no difference (exit 0, no output)" t_livediff_same
  t_livediff_labels() {
    local before out rc after
    before=$(resource_versions "$ns")
    out=$("$FC_BIN" diff --kubeconfig "$KUBECONFIG" --policy-dir "$pdir" "$ns/sess" 2>"$WORK/livediff.err"); rc=$?
    after=$(resource_versions "$ns")
    echo "$out" | head -n 30
    expect "exit status" "$rc" 1 || { cat "$WORK/livediff.err"; return 1; }
    expect "files that differ" "$(echo "$out" | grep '^diff -u -N -r ' | sed 's/.* MERGED\///' | tr '\n' ' ')" \
      "apps.v1.StatefulSet.$ns.sess-jobmanager apps.v1.StatefulSet.$ns.sess-taskmanager v1.ConfigMap.$ns.sess-configmap v1.Service.$ns.sess-jobmanager " ||
      return 1
    expect "added label lines" "$(echo "$out" | grep -c '^+    example.com/cost-centre: data-platform$')" 4 || return 1
    expect "removed lines other than the applied-hash" "$(echo "$out" | grep '^-[^-]' | grep -vc 'applied-hash')" 0 || return 1
    expect "resourceVersions (nothing written)" "$after" "$before" || return 1
    expect "the live TaskManager StatefulSet's label" \
      "$(jp "$ns" statefulset/sess-taskmanager '{.metadata.labels.example\.com/cost-centre}')" ""
  }
  check "livediff: a policy that adds a label: diff -u of exactly the four objects it changes, exit 1, nothing written" \
    t_livediff_labels
  t_livediff_all_and_missing() {
    local rc
    "$FC_BIN" diff --kubeconfig "$KUBECONFIG" --policy-dir "$pdir" -A >"$WORK/livediff-all.out" 2>"$WORK/livediff-all.err"
    rc=$?
    # other cases' clusters share the environment: their trouble (exit 2) must not be ours
    [ "$rc" = 1 ] || [ "$rc" = 2 ] || { echo "-A exit status $rc"; return 1; }
    if grep -q "$ns/" "$WORK/livediff-all.err"; then cat "$WORK/livediff-all.err"; return 1; fi
    grep -q "^+++ MERGED/apps.v1.StatefulSet.$ns.sess-taskmanager" "$WORK/livediff-all.out" ||
      { echo "-A does not show the cluster"; return 1; }
    "$FC_BIN" diff --kubeconfig "$KUBECONFIG" "$ns/nope" >/dev/null 2>"$WORK/livediff-nope.err"; rc=$?
    expect "exit status for a missing FlinkCluster" "$rc" 2 || return 1
    grep -q "^diff: $ns/nope: HTTP 404" "$WORK/livediff-nope.err" || { cat "$WORK/livediff-nope.err"; return 1; }
  }
  check "livediff: -A covers every namespace; a missing FlinkCluster is an error naming it (exit 2)" t_livediff_all_and_missing
  t_replay() {
    local snap=$WORK/snapshots/$ns.sess.json out rc
    [ -s "$snap" ] || { echo "no snapshot at $snap: $(ls "$WORK/snapshots")"; return 1; }
    out=$("$FC_BIN" reconcile --snapshot "$snap" 2>&1); rc=$?
    expect "replay exit status" "$rc" 0 || { echo "$out"; return 1; }
    expect "objects a replayed steady pass applies" "$(echo "$out" | grep -c '^- object:')" 0 || { echo "$out" | head -n 20; return 1; }
    out=$("$FC_BIN" reconcile --snapshot "$snap" --policy-dir "$pdir" 2>&1); rc=$?
    expect "replay exit status with the labels policy" "$rc" 0 || return 1
    expect "objects the labels policy would apply in that pass" "$(echo "$out" | grep -c '^- object:')" 4
  }
  check "livediff: run --debug-snapshot-dir keeps each cluster's last snapshot; reconcile --snapshot replays it offline (nothing to do; 4 applies with the labels policy)" \
    t_replay
  stop_controller livediff >/dev/null
}

# policy_hash CONTROLLER: the hash label of the controller's flink_controller_policy_set_info
policy_hash() {
  scrape_metrics "$1" | sed -n 's/^flink_controller_policy_set_info{hash="\([0-9a-f]*\)"} 1$/\1/p'
}
# override_cm NS NAME create|replace KEY=FILE...: the ConfigMap of those keys (kubectl create
# configmap --from-file, replaced whole on an update)
override_cm() {
  local ns=$1 name=$2 verb=$3 args=() kv; shift 3
  for kv in "$@"; do args+=(--from-file="$kv"); done
  kc -n "$ns" create configmap "$name" "${args[@]}" --dry-run=client -o json | kc -n "$ns" "$verb" -f - >/dev/null
}
# tm_pool NS CLUSTER: the nodeSelector example.com/pool of the TaskManager StatefulSet's pod
# template (docs/cookbook/tm-template.patch sets it to spot)
tm_pool() { jp "$1" "statefulset/$2-taskmanager" '{.spec.template.spec.nodeSelector.example\.com/pool}'; }
# rejected NS NAME: the messages of the Warning PolicyRejected Events about ConfigMap NAME
rejected() {
  kc -n "$1" get events --field-selector "involvedObject.kind=ConfigMap,involvedObject.name=$2,reason=PolicyRejected" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' 2>/dev/null
}

case_override() {
  local ns pdir cm=policies good=() f c pid h0
  ns=$(new_ns override)
  # the override: taskmanager.lua with the TaskManager pod template recipe, and the cluster and
  # taskmanager fixtures it changes written again from the patched policy (`test --update`), as
  # the cookbook says
  pdir=$WORK/policies-override
  cp -r "$ROOT/policies" "$pdir"
  patch -s -p1 -d "$pdir" <"$ROOT/docs/cookbook/tm-template.patch" ||
    { echo "# could not apply docs/cookbook/tm-template.patch"; patch_failed override; return 0; }
  for c in "$pdir"/testdata/{cluster,taskmanager}/*/; do
    c=${c%/}; c=${c#"$pdir/testdata/"}
    "$FC_BIN" test --policy-dir "$pdir" --update "$c" "$c" >/dev/null 2>&1
  done
  good=("taskmanager.lua=$pdir/taskmanager.lua")
  for f in "$pdir"/testdata/{cluster,taskmanager}/*/expected.yaml; do
    c=${f#"$pdir/testdata/"}; c=${c%/expected.yaml}
    cmp -s "$f" "$ROOT/policies/testdata/$c/expected.yaml" || good+=("testdata.${c%%/*}.${c#*/}.expected.yaml=$f")
  done
  start_controller override --namespace "$ns" --metrics-addr 127.0.0.1:0 --health-addr 127.0.0.1:0 \
    --policy-configmap "$ns/$cm" --policy-work-dir "$WORK"
  session_cluster sess | kc -n "$ns" apply -f - >/dev/null
  # a FlinkJob waiting for a session cluster that does not exist (ClusterNotFound: its next pass
  # 10 s away): a new set must reach it at once, as it reaches the FlinkClusters
  kc -n "$ns" apply -f - >/dev/null <<'EOF'
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkJob
metadata: {name: waiting}
spec:
  clusterRef: {name: nosuch}
  job: {jarFile: "http://127.0.0.1:1/job.jar", className: testenv.Ticker}
EOF
  fj_annotated() { [ "$(jp "$ns" flinkjob/waiting '{.metadata.annotations.flinkoperator\.k8s\.io/policy-hash}')" = "$1" ]; }
  # the built-in set's hash (checks run in subshells: read here)
  poll 20 eval '[ -n "$(policy_hash override)" ]'
  h0=$(policy_hash override)
  t_override_builtin() {
    poll 90 is_state "$ns" sess Running || { echo "state: $(state "$ns" sess)"; return 1; }
    expect "hash length" "${#h0}" 12 || return 1
    annotated() { [ "$(jp "$ns" flinkcluster/sess '{.metadata.annotations.flinkoperator\.k8s\.io/policy-hash}')" = "$h0" ]; }
    poll 10 annotated || { echo "annotation: $(jp "$ns" flinkcluster/sess '{.metadata.annotations}')"; return 1; }
    poll 10 fj_annotated "$h0" || { echo "FlinkJob annotation: $(jp "$ns" flinkjob/waiting '{.metadata.annotations}')"; return 1; }
    expect "TaskManager pool before the override" "$(tm_pool "$ns" sess)" ""
  }
  check "override: without the ConfigMap the built-in set serves; its hash is the metric and the cluster's annotation" \
    t_override_builtin
  pid=$(ctl_pid override)
  t_override_accepted() {
    echo "${#good[@]} keys"
    override_cm "$ns" "$cm" create "${good[@]}" || return 1
    poll 10 eval '[ "$(tm_pool "$ns" sess)" = spot ]' ||
      { echo "pool: '$(tm_pool "$ns" sess)'"; tail -n 5 "$WORK/override.log"; return 1; }
    local h1
    h1=$(policy_hash override)
    [ -n "$h1" ] && [ "$h1" != "$h0" ] || { echo "metric hash '$h1' (built-in $h0)"; return 1; }
    annotated() { [ "$(jp "$ns" flinkcluster/sess '{.metadata.annotations.flinkoperator\.k8s\.io/policy-hash}')" = "$h1" ]; }
    poll 10 annotated || { echo "annotation: $(jp "$ns" flinkcluster/sess '{.metadata.annotations}')"; return 1; }
    # the waiting FlinkJob's pass runs with the new set at the switch, not at its next requeue (10 s)
    poll 3 fj_annotated "$h1" ||
      { echo "FlinkJob annotation 3 s after the cluster's: $(jp "$ns" flinkjob/waiting '{.metadata.annotations}')"; return 1; }
    grep -q "policy set switched.*$h1" "$WORK/override.log" || { echo "no switch log line"; return 1; }
    expect "accepted sets" "$(metric_sum override 'flink_controller_policy_reloads_total{result="accepted"}')" 1
  }
  check "override: a ConfigMap with the TaskManager template recipe is checked and serves within 10 s: the running cluster's template changes, metric and annotation name the new hash (a waiting FlinkJob's too, at once), the log says the switch" \
    t_override_accepted
  t_override_refused() {
    local h1 broken=$WORK/taskmanager-broken.lua
    h1=$(policy_hash override)
    { cat "$pdir/taskmanager.lua"; echo "end"; } >"$broken"
    override_cm "$ns" "$cm" replace taskmanager.lua="$broken" || return 1
    poll 10 eval 'rejected "$ns" "$cm" | grep -q "taskmanager.lua:[0-9]*: "' || { echo "events: $(rejected "$ns" "$cm")"; return 1; }
    expect "refused sets after a syntax error" \
      "$(metric_sum override 'flink_controller_policy_reloads_total{result="refused"}')" 1 || return 1
    # the recipe without its updated fixtures: the built-in cluster cases fail
    override_cm "$ns" "$cm" replace taskmanager.lua="$pdir/taskmanager.lua" || return 1
    poll 30 eval '[ "$(rejected "$ns" "$cm" | grep -c "cluster/[a-z0-9.-]*: .*expected")" = 1 ]' ||
      { echo "events: $(rejected "$ns" "$cm")"; return 1; }
    expect "refused sets after a failing fixture" \
      "$(metric_sum override 'flink_controller_policy_reloads_total{result="refused"}')" 2 || return 1
    expect "hash serving" "$(policy_hash override)" "$h1" || return 1
    expect "TaskManager pool of the running cluster" "$(tm_pool "$ns" sess)" spot || return 1
    session_cluster sess2 | kc -n "$ns" apply -f - >/dev/null
    poll 20 eval '[ "$(tm_pool "$ns" sess2)" = spot ]' || { echo "new cluster's pool: '$(tm_pool "$ns" sess2)'"; return 1; }
    rejected "$ns" "$cm" | head -n 2
  }
  check "override: a syntax error and a failing fixture are each refused (Warning PolicyRejected naming file:line / the case and its difference, refused counter +1); the last good set serves, a new cluster too" \
    t_override_refused
  t_override_deleted() {
    kc -n "$ns" delete configmap "$cm" >/dev/null || return 1
    poll 10 eval '[ -z "$(tm_pool "$ns" sess)" ]' || { echo "pool: '$(tm_pool "$ns" sess)'"; return 1; }
    expect "hash after the delete" "$(policy_hash override)" "$h0" || return 1
    expect "controller pid" "$(ctl_pid override)" "$pid" || return 1
    ctl_alive override || { echo "the controller exited"; return 1; }
  }
  check "override: deleting the ConfigMap brings back the built-in set within 10 s; the controller never restarted" \
    t_override_deleted
  # its finalizer released while the controller runs (no job was submitted)
  kc -n "$ns" delete flinkjob waiting --timeout=30s >/dev/null 2>&1
  stop_controller override >/dev/null
}

# case render (issue #27): what `render` prints is accepted by the real API server (server-side
# dry run, kubectl's strict field validation) for every example; the fields render refuses as
# unknown are the ones the API server refuses (the CRD installed), and those it keeps (an
# embedded core/v1 type) both keep; the placeholder owner uid render printed before is accepted
# by the API server and the garbage collector deletes the object (why render leaves it out).
case_render() {
  local ns
  ns=$(new_ns render)
  t_render_apply() {
    local f out
    for f in "$ROOT"/deploy/examples/*.yaml; do
      out=$("$FC_BIN" render -f "$f") || { echo "render -f $f failed"; return 1; }
      if grep -q 'ownerReferences' <<<"$out"; then echo "$f: ownerReferences in the output"; return 1; fi
      kc -n "$ns" apply --dry-run=server --validate=strict -f - <<<"$out" >"$WORK/render-apply.out" 2>&1 ||
        { echo "$f:"; cat "$WORK/render-apply.out"; return 1; }
      echo "$(basename "$f"): $(grep -c '(server dry run)' "$WORK/render-apply.out") objects accepted"
    done
  }
  check "render: render -f deploy/examples/X.yaml | kubectl apply --dry-run=server --validate=strict -f - is accepted for every example" \
    t_render_apply
  t_render_strict() {
    local bad server ours f
    bad=$WORK/render-unknown.yaml
    sed -e 's/^  name: quickstart$/  name: quickstart\n  lables: {a: b}/' \
      -e 's/^  taskManager:$/  taskManager:\n    volumeMounts: [{name: v, mountPath: \/v, anything: 1}]\n    replica: 2/' \
      "$ROOT/deploy/examples/quickstart.yaml" >"$bad"
    if server=$(kc -n "$ns" apply --dry-run=server --validate=strict -f "$bad" 2>&1); then
      echo "the API server accepted it"; return 1
    fi
    echo "kubectl: $server"
    if ours=$("$FC_BIN" render -f "$bad" 2>&1 >/dev/null); then echo "render accepted it"; return 1; fi
    echo "render: $ours"
    # the API server names each field; render names the same ones, no more
    for f in metadata.lables spec.taskManager.replica; do
      grep -q "unknown field \"$f\"" <<<"$server" || { echo "the server did not name $f"; return 1; }
    done
    expect "render's fields" "$(cut -d: -f2 <<<"$ours" | tr -d ' ' | tr '\n' ' ')" "metadata.lables spec.taskManager.replica " ||
      return 1
    if grep -q anything <<<"$server$ours"; then echo "a kept field (volumeMounts[0].anything) was refused"; return 1; fi
  }
  check "render: the unknown fields render refuses (metadata.lables, spec.taskManager.replica) are the ones the API server refuses with --validate=strict; a field of an embedded type is kept by both" \
    t_render_strict
  t_placeholder_gc() {
    # the ownerReference render printed before for a FlinkCluster never applied
    kc -n "$ns" apply -f - >/dev/null <<'EOF' || { echo "the API server refused the placeholder uid"; return 1; }
apiVersion: v1
kind: ConfigMap
metadata:
  name: orphan-configmap
  ownerReferences:
  - {apiVersion: flinkoperator.k8s.io/v1beta1, kind: FlinkCluster, name: orphan, controller: true,
     blockOwnerDeletion: false, uid: "<uid of FlinkCluster orphan, set when applied>"}
data: {a: b}
EOF
    gone() { ! kc -n "$ns" get configmap orphan-configmap >/dev/null 2>&1; }
    local t0=$SECONDS
    poll 60 gone || { echo "still there after 60 s"; return 1; }
    echo "accepted, then deleted by the garbage collector after $((SECONDS - t0)) s"
  }
  check "render: the placeholder owner uid render printed before is accepted by the API server, and the garbage collector deletes the object" \
    t_placeholder_gc
}
