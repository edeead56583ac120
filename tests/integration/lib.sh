# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for the controller's integration tests (sourced by tests/integration/run.sh).
# Needs: ROOT, TESTENV_DIR with a running test environment (env.sh sourced), WORK (a temp dir).
# Every check prints one TAP line; the plan is printed at the end by run.sh.

FC_BIN=${FC_BIN:-$ROOT/build/flink-controller}
K=("$TESTENV_KUBECTL" --kubeconfig="$KUBECONFIG")
n=0
failed=0

# check DESCRIPTION CMD...: one TAP line; on failure CMD's output (tail) as comments.
check() {
  local desc=$1 out rc; shift
  n=$((n + 1))
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok $n - $desc"
  else
    echo "not ok $n - $desc"
    printf '%s\n' "$out" | tail -n 25 | sed 's/^/# /'
    failed=$((failed + 1))
  fi
}
# expect WHAT GOT WANT: fails showing both unless equal.
expect() { [ "$2" = "$3" ] || { echo "$1: got '$2', want '$3'"; return 1; }; }
# poll SECONDS CMD...: retries CMD every 0.5 s until it succeeds (its output is dropped).
poll() {
  local limit=$(($1 * 2)) i=0; shift
  until "$@" >/dev/null 2>&1; do
    i=$((i + 1)); [ "$i" -lt "$limit" ] || return 1
    sleep 0.5
  done
}
kc() { "${K[@]}" "$@"; }
# jp NS KIND/NAME JSONPATH: one field (empty when absent)
jp() { "${K[@]}" -n "$1" get "$2" -o "jsonpath=$3" 2>/dev/null; }
# cm_option NS CLUSTER KEY: the value of the Flink option KEY in the cluster's ConfigMap:
# its config.yaml read as YAML (lyaml; Flink 1.19+), else the legacy flink-conf.yaml's
# `KEY: value` line; nothing when absent
cm_option() {
  "${K[@]}" -n "$1" get "configmap/$2-configmap" -o json 2>/dev/null | lua5.4 -e '
    local data, key = (require("cjson").decode(io.read("a")).data or {}), arg[1]
    if data["config.yaml"] then
      local v = (require("lyaml").load(data["config.yaml"]) or {})[key]
      if v ~= nil then print(v) end
    else
      for line in (data["flink-conf.yaml"] or ""):gmatch("[^\n]+") do
        local k, v = line:match("^(.-): (.*)$")
        if k == key then print(v) end
      end
    end' /dev/null "$3"
}

# start_controller NAME ARGS...: runs the controller in the background (log $WORK/NAME.log),
# its pid in $WORK/NAME.pid and, once it exited, its exit status in $WORK/NAME.rc (a small
# wrapper waits for it, so any subshell can read the status). Its Flink REST calls go to the
# test environment's host Flink (--flink-base-url) unless FLINK_DIRECT=1: then to each
# cluster's own JobManager, as a user's controller would (the real-pod cases).
start_controller() {
  local name=$1 flink=(--flink-base-url "$FLINK_REST_URL"); shift
  [ "${FLINK_DIRECT:-0}" = 1 ] && flink=()
  rm -f "$WORK/$name.rc" "$WORK/$name.pid"
  bash -c '"$@" </dev/null >>"$0.log" 2>&1 & echo $! >"$0.pid.tmp"; mv "$0.pid.tmp" "$0.pid"; wait $!; echo $? >"$0.rc"' \
    "$WORK/$name" "$FC_BIN" run --kubeconfig "$KUBECONFIG" "${flink[@]}" \
    --log-level "${FC_LOG_LEVEL:-info}" "$@" \
    </dev/null >/dev/null 2>&1 &
  local i=0
  while [ ! -f "$WORK/$name.pid" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}
ctl_pid() { cat "$WORK/$1.pid" 2>/dev/null; }
ctl_alive() { local p; p=$(ctl_pid "$1") && [ -n "$p" ] && [ ! -f "$WORK/$1.rc" ] && kill -0 "$p" 2>/dev/null; }
# fast_restart_policies NAME MAX: a copy of policies/ in $WORK/policies-NAME whose settings.lua
# restarts a failed job after 4 s (not 10), at most MAX times; prints its path
fast_restart_policies() {
  local pdir=$WORK/policies-$1
  cp -r "$ROOT/policies" "$pdir"
  edit_policy "$pdir/settings.lua" "s/^settings.RESTART_INITIAL_DELAY_SECONDS = 10\$/settings.RESTART_INITIAL_DELAY_SECONDS = 4/;
    s/^settings.RESTART_MAX_ATTEMPTS = 3\$/settings.RESTART_MAX_ATTEMPTS = $2/" "settings.RESTART_MAX_ATTEMPTS = $2" || return 1
  grep -qxF "settings.RESTART_INITIAL_DELAY_SECONDS = 4" "$pdir/settings.lua" ||
    { echo "# could not patch settings.lua: RESTART_INITIAL_DELAY_SECONDS not 4 after the sed" >&2; return 1; }
  echo "$pdir"
}
# scrape_metrics CONTROLLER: its /metrics text (the port from the start line of its log, key
# metrics_port); status 1 when the port is not logged yet or the scrape fails
scrape_metrics() {
  local mp
  mp=$(grep -o 'metrics_port=[0-9]*' "$WORK/$1.log" | head -n1 | cut -d= -f2)
  [ -n "$mp" ] && curl -sf "http://127.0.0.1:$mp/metrics"
}
# stop_controller NAME [SIGNAL]: signals it (TERM default) and waits for its exit status (at
# most 15 s, then SIGKILL); prints the status.
stop_controller() {
  local p i=0; p=$(ctl_pid "$1") || return 0
  [ -n "$p" ] || return 0
  [ -f "$WORK/$1.rc" ] || kill -"${2:-TERM}" "$p" 2>/dev/null
  while [ ! -f "$WORK/$1.rc" ] && [ "$i" -lt 150 ]; do sleep 0.05; i=$((i + 1)); done
  if [ ! -f "$WORK/$1.rc" ]; then
    kill -KILL "$p" 2>/dev/null
    while [ ! -f "$WORK/$1.rc" ] && [ "$i" -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  fi
  cat "$WORK/$1.rc" 2>/dev/null || echo "unknown"
  rm -f "$WORK/$1.pid"
}

# new_ns SUFFIX [real]: creates the namespace int-<pid>-SUFFIX, prints its name and lists it in
# $WORK/namespaces (deleted at the end; a file because callers run it in a subshell).
# Its pods go to the kwok node (the namespace annotations TESTENV_KWOK_NS_ANNOTATIONS of env.sh:
# a node selector and the toleration of kwok's taint) unless the second argument is "real": then
# to the real node.
new_ns() {
  local ns="int-$$-$1"
  echo "$ns" >>"$WORK/namespaces"
  "${K[@]}" create namespace "$ns" >/dev/null || return 1
  if [ "${2:-}" != real ] && [ -n "${TESTENV_KWOK_NS_ANNOTATIONS:-}" ]; then
    # shellcheck disable=SC2086  # key=value words, none with a space
    "${K[@]}" annotate namespace "$ns" $TESTENV_KWOK_NS_ANNOTATIONS >/dev/null || return 1
  fi
  echo "$ns"
}

# session_cluster NAME [extra spec YAML lines, indented 2]: a small session FlinkCluster.
session_cluster() {
  cat <<EOF
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: $1
spec:
  image:
    name: flink:1.20.0
  jobManager:
    resources:
      limits: {memory: "1024Mi", cpu: "200m"}
  taskManager:
    replicas: 1
    resources:
      limits: {memory: "1024Mi", cpu: "200m"}
${2:-}
EOF
}

# state NS NAME: status.state of a FlinkCluster
state() { jp "$1" "flinkcluster/$2" '{.status.state}'; }
is_state() { [ "$(state "$1" "$2")" = "$3" ]; }
# sts_ready NS NAME: the StatefulSet reports all replicas ready
sts_ready() {
  local want got
  want=$(jp "$1" "statefulset/$2" '{.spec.replicas}')
  got=$(jp "$1" "statefulset/$2" '{.status.readyReplicas}')
  [ -n "$want" ] && [ "$want" = "$got" ]
}
# owned_by NS KIND/NAME UID: controller ownerReference FlinkCluster with that uid
owned_by() {
  local got
  got=$(jp "$1" "$2" '{range .metadata.ownerReferences[?(@.controller==true)]}{.kind}/{.uid}{end}')
  expect "$2 controller owner" "$got" "FlinkCluster/$3"
}
# edit_policy FILE SED MARKER: FILE (a policy in a case's copy of policies/) edited in place by
# the sed expression SED; status 1, with a TAP comment on stderr, when the edit left no MARKER (a
# fixed string) in it: the sed matched nothing, the shipped policy changed under the case
edit_policy() {
  sed -i "$2" "$1"
  grep -qF -- "$3" "$1" || { echo "# could not patch ${1#"$WORK"/}: no '$3' in it after the sed" >&2; return 1; }
}
# patch_failed CASE: a failed TAP line for CASE, whose edit of its policies/ copy matched nothing
# (the line above says which); the case stops there, as without its edit it proves nothing
patch_failed() {
  n=$((n + 1)); failed=$((failed + 1))
  echo "not ok $n - $1: its edit of a copy of policies/ applies (it matched nothing: the shipped policy changed)"
}
# edited_policies NAME SED MARKER: a copy of policies/ in $WORK/policies-NAME whose cluster.lua
# is edited by the sed expression SED (which must leave MARKER in it); prints the directory;
# status 1 when the edit failed (edit_policy)
edited_policies() {
  local dir=$WORK/policies-$1
  cp -r "$ROOT/policies" "$dir"
  edit_policy "$dir/cluster.lua" "$2" "$3" || return 1
  echo "$dir"
}

# condition NS NAME TYPE: "<status> <reason>" of a status condition
condition() {
  jp "$1" "flinkcluster/$2" "{.status.conditions[?(@.type==\"$3\")].status} {.status.conditions[?(@.type==\"$3\")].reason}"
}
# has_event NS NAME REASON: a core/v1 Event about FlinkCluster NAME with that reason (run writes
# Events after the status patch: poll it after seeing a status)
has_event() {
  "${K[@]}" -n "$1" get events --field-selector "involvedObject.kind=FlinkCluster,involvedObject.name=$2,reason=$3" \
    -o name 2>/dev/null | grep -q .
}
# warning_says NS NAME REASON TEXT: within 10 s, a Warning Event about FlinkCluster NAME with that
# reason whose message contains TEXT (Events go out after the status patch that a test saw)
warning_says() {
  local ns=$1 name=$2 reason=$3 text=$4
  said() {
    "${K[@]}" -n "$ns" get events --field-selector "involvedObject.name=$name,reason=$reason,type=Warning" \
      -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' 2>/dev/null | grep -qF "$text"
  }
  poll 10 said
}
