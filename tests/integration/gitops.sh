# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# Issue #27 item 4 (sourced by tests/integration/run.sh): GitOps tools read a FlinkCluster's
# health from its kstatus conditions (policies/status.lua, docs/gitops.md) on the real API
# server: `kubectl wait --for=condition=Ready` returns once a session cluster is Running;
# Reconciling is True while it is created and False after; `kubectl wait --for=condition=Stalled`
# returns for a spec the policies refuse (no admission webhook here, as in case `invalid`) and for
# an invalid edit, observedGeneration = generation both times; deploy/argocd's health.lua, run on
# the objects as the API server returns them, says Healthy and Degraded.
# Uses session_cluster, condition, spec_patch (lib.sh, cases.sh).

# gitops_health NS NAME: the Argo CD health check on the object as the API server returns it
# (JSON decoded by lua-cjson: numbers are floats, as gopher-lua's), "<status>: <message>"
gitops_health() {
  kc -n "$1" get "flinkcluster/$2" -o json 2>/dev/null | lua5.4 -e '
    local obj = require("cjson").decode(io.read("a"))
    local f = assert(io.open(arg[1]))
    local src = f:read("a")
    f:close()
    -- what Argo CD opens for a health script (tests/argocd_health_spec.lua): no string or math
    local env = { obj = obj, ipairs = ipairs, pairs = pairs, next = next, type = type, tostring = tostring,
      tonumber = tonumber, select = select, error = error, pcall = pcall, assert = assert, table = table }
    local hs = assert(load(src, "=health.lua", "t", env))()
    print(hs.status .. ": " .. hs.message)' /dev/null "$ROOT/deploy/argocd/flinkoperator.k8s.io/FlinkCluster/health.lua"
}

case_gitops() {
  local ns watch_pid
  ns=$(new_ns gitops)
  # every version of the cluster's state and conditions a watch sees, from before it exists; the
  # controller starts once the watch has shown the new cluster without a status (on kwok the
  # cluster is Running within a second: a watch started later would miss Creating)
  kc -n "$ns" get flinkclusters --field-selector metadata.name=gitops --watch -o \
    'jsonpath=state={.status.state} Reconciling={.status.conditions[?(@.type=="Reconciling")].status} Ready={.status.conditions[?(@.type=="Ready")].status}{"\n"}' \
    >"$WORK/gitops.watch" 2>&1 &
  watch_pid=$!
  session_cluster gitops | kc -n "$ns" apply -f - >/dev/null
  poll 30 grep -qx 'state= Reconciling= Ready=' "$WORK/gitops.watch" || echo "# the watch did not show the new cluster" >&2
  start_controller gitops --namespace "$ns"
  t_wait_ready() {
    local t0=$SECONDS
    kc -n "$ns" wait --for=condition=Ready flinkcluster/gitops --timeout=120s || return 1
    echo "Ready after $((SECONDS - t0)) s"
    expect "state" "$(state "$ns" gitops)" Running || return 1
    expect "Reconciling" "$(condition "$ns" gitops Reconciling)" "False Reconciled" || return 1
    expect "Stalled" "$(condition "$ns" gitops Stalled)" "False NotStalled" || return 1
    expect "observedGeneration" "$(jp "$ns" flinkcluster/gitops '{.status.observedGeneration}')" \
      "$(jp "$ns" flinkcluster/gitops '{.metadata.generation}')" || return 1
    expect "Argo CD health" "$(gitops_health "$ns" gitops)" "Healthy: all components are Ready"
  }
  check "gitops: kubectl wait --for=condition=Ready returns 0 for a session cluster once it is Running (Reconciling, Stalled False; Argo CD Healthy)" \
    t_wait_ready
  t_reconciling_seen() {
    kc -n "$ns" wait --for=condition=Reconciling=False flinkcluster/gitops --timeout=10s >/dev/null || return 1
    sleep 1 # the watch prints the last version
    cat "$WORK/gitops.watch"
    # Creating with Reconciling=True, then Running with Reconciling=False, in that order
    awk '/^state=Creating Reconciling=True Ready=False$/ { c = NR } /^state=Running Reconciling=False Ready=True$/ && c { r = NR }
      END { exit !(c && r > c) }' "$WORK/gitops.watch"
  }
  check "gitops: Reconciling=True while the cluster is created (state Creating), False once it is Running" t_reconciling_seen
  kill "$watch_pid" 2>/dev/null
  wait "$watch_pid" 2>/dev/null
  # memoryOffHeapMin 2Gi over the 1024Mi limit: valid for the CRD, not for validate.lua
  session_cluster refused | sed 's/^  jobManager:$/  jobManager:\n    memoryOffHeapMin: 2Gi/' | kc -n "$ns" apply -f - >/dev/null
  t_wait_stalled() {
    kc -n "$ns" wait --for=condition=Stalled flinkcluster/refused --timeout=60s || return 1
    expect "Stalled" "$(condition "$ns" refused Stalled)" "True InvalidSpec" || return 1
    expect "Reconciling" "$(condition "$ns" refused Reconciling)" "False Stalled" || return 1
    expect "Ready" "$(condition "$ns" refused Ready)" "False InvalidSpec" || return 1
    expect "observedGeneration (seen, and refused)" "$(jp "$ns" flinkcluster/refused '{.status.observedGeneration}')" \
      "$(jp "$ns" flinkcluster/refused '{.metadata.generation}')" || return 1
    jp "$ns" flinkcluster/refused '{.status.conditions[?(@.type=="Stalled")].message}' |
      grep -qF 'spec.jobManager.memoryOffHeapMin' || { echo "Stalled does not name the field"; return 1; }
    gitops_health "$ns" refused | grep -q '^Degraded: invalid spec: spec.jobManager.memoryOffHeapMin' ||
      { echo "Argo CD health: $(gitops_health "$ns" refused)"; return 1; }
  }
  check "gitops: kubectl wait --for=condition=Stalled returns 0 for a spec the policies refuse (observedGeneration = generation; Argo CD Degraded)" \
    t_wait_stalled
  t_edit_stalled() {
    spec_patch "$ns" gitops '{"jobManager":{"memoryOffHeapMin":"2Gi"}}' || return 1
    kc -n "$ns" wait --for=condition=Stalled flinkcluster/gitops --timeout=60s || return 1
    expect "observedGeneration of the held edit" "$(jp "$ns" flinkcluster/gitops '{.status.observedGeneration}')" \
      "$(jp "$ns" flinkcluster/gitops '{.metadata.generation}')" || return 1
    expect "state (the last valid spec keeps running)" "$(state "$ns" gitops)" Running || return 1
    kc -n "$ns" patch flinkcluster gitops --type json -p '[{"op":"remove","path":"/spec/jobManager/memoryOffHeapMin"}]' \
      >/dev/null || return 1
    kc -n "$ns" wait --for=condition=Stalled=False flinkcluster/gitops --timeout=60s || return 1
    kc -n "$ns" wait --for=condition=Ready flinkcluster/gitops --timeout=60s || return 1
    expect "Argo CD health after the fix" "$(gitops_health "$ns" gitops)" "Healthy: all components are Ready"
  }
  check "gitops: an invalid edit of a running cluster is Stalled at its generation; the fix clears it and Ready returns" \
    t_edit_stalled
  stop_controller gitops >/dev/null
}
