# shellcheck shell=bash
# Issue 12 (policy authoring), sourced by tests/integration/run.sh: `flink-controller diff` shows
# what a candidate policy directory would change in a live FlinkCluster, as kubectl diff does,
# and writes nothing (case `livediff`).

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
  patch -s -p1 -d "$pdir" <"$ROOT/docs/cookbook/labels.patch" || echo "# could not apply labels.patch"
  start_controller livediff --namespace "$ns"
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
  stop_controller livediff >/dev/null
}
