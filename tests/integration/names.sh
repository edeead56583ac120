# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2317  # check functions are called through `check`
# The children's labels renamed in their one place, lua/fc/names.lua (issue #32), on the real API
# server with pods on the kwok node (sourced by tests/integration/run.sh, helpers in lib.sh):
#   labelrename  a controller whose data directory has fc.names' labels renamed (app=flink,
#                cluster, component -> example.com/app=flink-renamed, example.com/cluster,
#                example.com/component) runs a StatefulSet session cluster and a Native one: the
#                children carry the new labels only, are created once (no write over passes
#                with nothing to do), a deleted Service and a deleted Native TaskManager pod are
#                replaced, the clusters reach Running and their Native pod count

# labelrename_home DIR: a data directory (lua/, policies/) with fc.names' label constants renamed
labelrename_home() {
  mkdir -p "$1" && cp -r "$ROOT/lua" "$ROOT/policies" "$1/" || return 1
  sed -i -e 's|^names\.APP_LABEL = "app"$|names.APP_LABEL = "example.com/app"|' \
    -e 's|^names\.APP = "flink"$|names.APP = "flink-renamed"|' \
    -e 's|^names\.CLUSTER_LABEL = "cluster"$|names.CLUSTER_LABEL = "example.com/cluster"|' \
    -e 's|^names\.COMPONENT_LABEL = "component"$|names.COMPONENT_LABEL = "example.com/component"|' \
    "$1/lua/fc/names.lua" || return 1
  # all four replaced (a renamed constant in the shipped file would leave one as it was)
  [ "$(grep -c '^names\.[A-Z_]* = "\(example\.com/.*\|flink-renamed\)"$' "$1/lua/fc/names.lua")" = 4 ]
}

# metric_lines CONTROLLER REGEX: the sum of the /metrics samples whose line matches REGEX
metric_lines() {
  scrape_metrics "$1" | awk -v re="$2" '$0 !~ /^#/ && $0 ~ re { s += $NF } END { print s + 0 }'
}

case_labelrename() {
  local ns home=$WORK/labelrename-home
  ns=$(new_ns labelrename) || { check "labelrename: namespace" false; return; }
  check "labelrename: a data directory with lua/fc/names.lua's four label constants renamed" labelrename_home "$home"
  FLINK_CONTROLLER_HOME=$home start_controller labelrename --namespace "$ns" --metrics-addr 127.0.0.1:0 \
    --health-addr 127.0.0.1:0
  session_cluster rs | kc -n "$ns" apply -f - >/dev/null
  native_cluster rn 4 | kc -n "$ns" apply -f - >/dev/null
  local new='example.com/app=flink-renamed' kinds=statefulsets,services,configmaps,jobs,pods
  local sel=(get "$kinds" -o name)
  rs_children() { kc -n "$ns" "${sel[@]}" -l "$new,example.com/cluster=rs" | grep -vc '^pod/'; }
  rs_complete() { [ "$(rs_children)" = 4 ]; }
  # rn_pods: the Native cluster's TaskManager pods by the renamed labels, sorted, on one line
  rn_pods() {
    kc -n "$ns" get pods -o name -l "$new,example.com/cluster=rn,example.com/component=taskmanager" | sort | tr '\n' ' ' |
      sed 's/ $//'
  }
  rn_pods_are() { [ "$(rn_pods)" = "$1" ]; }
  rn_counted() { [ "$(native_field "$ns" rn pods)" = 2 ]; }
  t_labels() {
    poll 60 rs_complete || { echo "rs children: $(rs_children), want 4"; return 1; }
    poll 60 rn_pods_are "pod/rn-taskmanager-1 pod/rn-taskmanager-2" || { echo "rn pods: $(rn_pods)"; return 1; }
    expect "objects with the old labels" "$(kc -n "$ns" "${sel[@]}" -l 'app=flink' | wc -l)" 0 || return 1
    expect "objects with the old cluster label" "$(kc -n "$ns" "${sel[@]}" -l 'cluster' | wc -l)" 0 || return 1
    expect "JobManager Service selector" \
      "$(jp "$ns" service/rs-jobmanager '{.spec.selector.example\.com/component} {.spec.selector.example\.com/cluster}')" \
      "jobmanager rs" || return 1
    owned_by "$ns" service/rs-jobmanager "$(jp "$ns" flinkcluster/rs '{.metadata.uid}')"
  }
  check "labelrename: the children (StatefulSets, Service, ConfigMap, Native TaskManager pods) carry the renamed labels, none the old ones" \
    t_labels
  t_running() {
    poll 90 is_state "$ns" rs Running || { echo "rs state: $(state "$ns" rs)"; return 1; }
    poll 60 rn_counted || { echo "rn status pods: $(native_field "$ns" rn pods)"; return 1; }
  }
  check "labelrename: the session cluster reaches Running, the Native one counts its 2 pods (read back through the renamed cluster label)" \
    t_running
  local uids
  child_uids() {
    kc -n "$ns" get statefulsets,services,configmaps,pods -l "$new" -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}' |
      sort
  }
  t_once() {
    local w0 w1 r0 r1 c0 c1 i
    w0=$(quiet labelrename 6 60) || { echo "$w0"; return 1; }
    uids=$(child_uids)
    c0=$(metric_lines labelrename 'api_requests_total[{]code="201"')
    r0=$(metric_sum labelrename flink_controller_reconcile_total)
    for i in 1 2 3; do
      kc -n "$ns" annotate --overwrite flinkcluster rs rn "example.com/poke=$i" >/dev/null || return 1
      sleep 1
    done
    sleep 3
    w1=$(metric_sum labelrename flink_controller_api_requests_total)
    r1=$(metric_sum labelrename flink_controller_reconcile_total)
    c1=$(metric_lines labelrename 'api_requests_total[{]code="201"')
    echo "passes $r0 -> $r1, requests $w0 -> $w1, creates (201) $c0 -> $c1"
    [ "$r1" -ge $((r0 + 4)) ] || { echo "the pokes did not run passes"; return 1; }
    expect "API requests over the passes" "$w1" "$w0" || return 1
    expect "creates over the passes" "$c1" "$c0" || return 1
    expect "children (name=uid)" "$(child_uids)" "$uids"
  }
  check "labelrename: passes with nothing to do write nothing, the children keep their uids (created once: the watches see them)" \
    t_once
  t_deleted() {
    local old c0 c1
    old=$(jp "$ns" service/rs-jobmanager '{.metadata.uid}')
    c0=$(metric_lines labelrename 'api_requests_total[{]code="201",verb="PATCH"')
    kc -n "$ns" delete service rs-jobmanager --wait=true >/dev/null || return 1
    kc -n "$ns" delete pod rn-taskmanager-1 --wait=false >/dev/null || return 1
    back() { local u; u=$(jp "$ns" service/rs-jobmanager '{.metadata.uid}'); [ -n "$u" ] && [ "$u" != "$old" ]; }
    poll 30 back || { echo "rs-jobmanager not re-created in 30 s"; return 1; }
    poll 60 rn_pods_are "pod/rn-taskmanager-2 pod/rn-taskmanager-3" || { echo "rn pods: $(rn_pods)"; return 1; }
    expect "the new Service's labels" \
      "$(jp "$ns" service/rs-jobmanager '{.metadata.labels.example\.com/app} {.metadata.labels.example\.com/cluster}')" \
      "flink-renamed rs" || return 1
    quiet labelrename 6 60 >/dev/null || return 1
    c1=$(metric_lines labelrename 'api_requests_total[{]code="201",verb="PATCH"')
    echo "creates (201 PATCH) $c0 -> $c1"
    expect "objects created after the two deletions (the Service, one pod)" "$((c1 - c0))" 2 || return 1
    poll 30 is_state "$ns" rs Running || { echo "rs state: $(state "$ns" rs)"; return 1; }
  }
  check "labelrename: a deleted Service and a deleted Native TaskManager pod are each re-created once, with the renamed labels" \
    t_deleted
  stop_controller labelrename >/dev/null
}
