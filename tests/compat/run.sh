#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The compat suite (TAP, plan at the end): the newest Kubernetes release claimed
# (K8S_NEWEST_VERSION in tests/env/versions.env, docs/versions.md), where every other suite runs
# on the oldest (K8S_VERSION). Brings up a kwok-only test environment of that release's control
# plane (tests/env/up.sh with TESTENV_K8S=k8s-newest, TESTENV_REAL_NODE=0) in its own
# $TESTENV_DIR (default build/testenv-newest: other ports, other processes, its own down), then
#   1. checks that the API server is that release (kubectl version, printed);
#   2. the API server's own admission of deploy/crd.yaml (schema, defaults, CEL rules): the
#      #testenv blocks of tests/crd_spec.lua and tests/admission_spec.lua (a pending one fails:
#      the API server is there);
#   3. the controller against it: tests/integration/run.sh with $COMPAT_CASES (default: example
#      scale invalid rbac leader steady), which reuses the environment;
# and takes the environment down again (only when it brought it up).
# "1..0 # SKIP <reason>" only when the environment cannot be built here (no go / mvn / java, up.sh
# exit 2) or build/flink-controller is not built; a component that fails to build, an
# environment that does not come up, a sub-suite that skips or dies: failures.
# Run it through tests/run.sh (its LUA_PATH and LUA_CPATH): bash tests/run.sh compat
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../env/lib.sh
. "$ROOT/tests/env/lib.sh"
export TESTENV_DIR=${COMPAT_TESTENV_DIR:-$ROOT/build/testenv-newest}
export TESTENV_K8S=k8s-newest TESTENV_REAL_NODE=0
read -r -a CASES <<<"${COMPAT_CASES:-example scale invalid rbac leader steady}"

if [ ! -x "$ROOT/build/flink-controller" ] && [ -z "${FC_BIN:-}" ]; then
  echo "1..0 # SKIP build/flink-controller not built (make)"
  exit 0
fi
env_alive() {
  # shellcheck source=/dev/null
  [ -f "$TESTENV_DIR/env.sh" ] &&
    (. "$TESTENV_DIR/env.sh" && [ "${TESTENV_K8S:-}" = k8s-newest ] &&
      "$TESTENV_KUBECTL" --kubeconfig="$KUBECONFIG" get --raw /readyz) >/dev/null 2>&1
}
started=0
T0=$SECONDS
if ! env_alive; then
  uplog=$(mktemp)
  "$ROOT/tests/env/up.sh" >"$uplog" 2>&1
  rc=$?
  if [ "$rc" -eq 2 ]; then
    echo "1..0 # SKIP $(tail -n 1 "$uplog")"
    rm -f "$uplog"; exit 0
  elif [ "$rc" -ne 0 ]; then
    echo "not ok 1 - the test environment of Kubernetes $K8S_NEWEST_VERSION comes up (tests/env/up.sh exit $rc)"
    sed 's/^/# /' "$uplog" | tail -n 40
    echo "1..1"
    rm -f "$uplog"; exit 1
  fi
  sed 's/^/# /' "$uplog"; rm -f "$uplog"
  started=1
fi
cleanup() {
  if [ "$started" -eq 1 ]; then "$ROOT/tests/env/down.sh" 2>&1 | tail -n 1 | sed 's/^/# /'; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# shellcheck source=/dev/null
. "$TESTENV_DIR/env.sh"

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)) failed=$((failed + 1)); echo "not ok $n - $1"; }

# 1. the release
echo "# kubectl version (environment $TESTENV_DIR):"
"$TESTENV_KUBECTL" version 2>&1 | sed 's/^/#   /'
server=$("$TESTENV_KUBECTL" get --raw /version 2>&1 | lua5.4 "$ROOT/tests/env/json.lua" gitVersion 2>&1)
if [ "$server" = "v$K8S_NEWEST_VERSION" ]; then
  ok "the API server is Kubernetes $server (K8S_NEWEST_VERSION)"
else
  nok "the API server is Kubernetes v$K8S_NEWEST_VERSION (K8S_NEWEST_VERSION): got '$server'"
fi

# sub NAME CMD...: runs a TAP producer and renumbers its results into this plan; its plan lines
# become comments. A pending/skipped test, a missing or short plan, a non-zero exit without a
# failure: failures.
sub() {
  local name=$1 out rc line plan="" seen=0 bad=0 t0=$SECONDS; shift
  out=$(mktemp)
  "$@" >"$out" 2>&1
  rc=$?
  while IFS= read -r line; do
    case $line in
      "ok "*"# SKIP"*) seen=$((seen + 1)) bad=$((bad + 1)); nok "$name: ${line#ok * - } (skipped or pending: the API server is up)" ;;
      "ok "*) seen=$((seen + 1)); ok "$name: ${line#ok * - }" ;;
      "not ok "*) seen=$((seen + 1)) bad=$((bad + 1)); nok "$name: ${line#not ok * - }" ;;
      1..*) plan=${line#1..}; plan=${plan%% *}; echo "# $name: plan $line" ;;
      "#"*) echo "$line" ;;
      *) echo "# $line" ;;
    esac
  done <"$out"
  rm -f "$out"
  if [ -z "$plan" ]; then
    nok "$name: printed no plan (exit $rc)"
  elif [ "$plan" -eq 0 ]; then
    nok "$name: skipped everything"
  elif [ "$seen" -lt "$plan" ]; then
    nok "$name: $((plan - seen)) of its $plan tests did not run (exit $rc)"
  elif [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
    nok "$name: exit $rc without a failed test"
  fi
  echo "# $name: $((SECONDS - t0)) s"
}

# 2. the API server's admission of the CRD (schema, defaults, CEL)
sub crd env FC_KUBECONFIG="$KUBECONFIG" lua5.4 /usr/bin/busted --output=TAP \
  --lpath="${LUA_PATH:-}" --cpath="${LUA_CPATH:-}" --helper="$ROOT/tests/support/busted_helper.lua" \
  --pattern=_spec --tags=testenv "$ROOT/tests/crd_spec.lua" "$ROOT/tests/admission_spec.lua"

# 3. the controller: the integration cases, in this environment
sub integration "$ROOT/tests/integration/run.sh" "${CASES[@]}"

echo "# compat: Kubernetes $server, $((SECONDS - T0)) s"
echo "1..$n"
[ "$failed" -eq 0 ]
