#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test suite, each of which speaks TAP, and ends with one line
# "N passed, N failed".  A suite that dies before finishing its plan counts
# the missing tests as failed; a suite that prints no plan counts as one
# failure.  Usage: tests/run.sh [suite...] [spec...]   (default: all suites)
# Arguments naming an existing file or directory (e.g. policies/cluster_spec.lua) select the
# specs the busted and asan suites run, in place of policies/ and tests/:
#   bash tests/run.sh busted policies/cluster_spec.lua
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
export FC_ROOT=$ROOT
export LUA_PATH="$ROOT/lua/?.lua;$ROOT/lua/?/init.lua;$ROOT/policies/?.lua;$ROOT/tests/?.lua;/usr/share/lua/5.4/?.lua;/usr/share/lua/5.4/?/init.lua;;"
export LUA_CPATH="$ROOT/build/lib/?.so;/usr/lib/x86_64-linux-gnu/lua/5.4/?.so;;"
# FC_TEST_LOGS: where the TAP files go (another directory keeps parallel runs apart)
LOG=${FC_TEST_LOGS:-$ROOT/build/test-logs}
mkdir -p "$LOG"
passed=0
failed=0

# run_suite NAME CMD...: runs CMD, keeps its TAP in build/test-logs/NAME.tap,
# echoes failures and adds up the counts.
run_suite() {
  local name=$1; shift
  local out="$LOG/$name.tap"
  "$@" >"$out" 2>"$LOG/$name.err"
  local rc=$?
  local ok nok plan
  ok=$(grep -cE '^ok ' "$out")
  nok=$(grep -cE '^not ok ' "$out")
  plan=$(grep -oE '^1\.\.[0-9]+' "$out" | head -n1 | cut -d. -f3)
  if [ -z "$plan" ]; then
    if [ $((ok + nok)) -eq 0 ]; then nok=1; fi
  elif [ $((ok + nok)) -lt "$plan" ]; then
    nok=$((nok + plan - ok - nok))
  fi
  if [ "$rc" -ne 0 ] && [ "$nok" -eq 0 ]; then nok=1; fi
  passed=$((passed + ok)); failed=$((failed + nok))
  local skip
  skip=$(grep -m1 -oE '^1\.\.0 # SKIP.*' "$out" | sed 's/^1\.\.0 # SKIP */ (skipped: /; s/$/)/')
  printf '%-28s %4d passed, %d failed%s\n' "$name" "$ok" "$nok" "$skip"
  if [ "$nok" -ne 0 ]; then
    grep -E -A12 '^not ok ' "$out" | sed 's/^/    /' | head -n 80
    tail -n 20 "$LOG/$name.err" | sed 's/^/    stderr: /'
  fi
}

# not_built NAME PATH: a suite whose program is missing counts one failure (make test builds
# it first; running tests/run.sh alone after a clean must not pass by running nothing).
not_built() {
  failed=$((failed + 1))
  printf '%-28s %4d passed, %d failed (%s not built: make test builds it)\n' "$1" 0 1 "$2"
}

# the helper makes require("fc.host") the production host (fc.sandbox, build/lib/fc/sandbox.so)
BUSTED=(lua5.4 /usr/bin/busted --output=TAP --lpath="$LUA_PATH" --cpath="$LUA_CPATH"
        --helper="$ROOT/tests/support/busted_helper.lua")

suites=()
specs=()
for a in "$@"; do
  case $a in
    lint|busted|c|asan|fuzz|testenv|integration|compat) suites+=("$a") ;;
    *) if [ -e "$a" ]; then specs+=("$a"); else suites+=("$a"); fi ;;
  esac
done
if [ ${#suites[@]} -eq 0 ] && [ ${#specs[@]} -gt 0 ]; then
  suites=(busted)
fi
if [ ${#suites[@]} -eq 0 ]; then
  suites=(lint busted c asan fuzz testenv integration compat)
fi
for s in "${suites[@]}"; do
  case $s in
    lint)
      run_suite lint env -u LUA_PATH -u LUA_CPATH bash -c 'if luacheck --no-color -q lua policies tests deploy/argocd >"$0" 2>&1; then echo "1..1"; echo "ok 1 luacheck clean"; else echo "1..1"; echo "not ok 1 luacheck"; sed "s/^/# /" "$0"; fi' "$LOG/luacheck.txt" ;;
    busted)
      # specs beside the policies and under tests/
      if [ ${#specs[@]} -gt 0 ]; then
        run_suite busted "${BUSTED[@]}" --pattern=_spec "${specs[@]}"
      else
        run_suite busted "${BUSTED[@]}" --pattern=_spec policies tests
      fi ;;
    c)
      # one program per tests/c/test_*.c; one not built is a failure, not a suite that ran nothing
      for src in tests/c/test_*.c; do
        t=build/tests/$(basename "$src" .c)
        if [ -x "$t" ]; then
          run_suite "c-$(basename "$t")" "$t"
        else
          not_built "c-$(basename "$t")" "$t"
        fi
      done ;;
    asan)
      # the specs that run the binary, against the ASan+UBSan build
      if [ -x build/asan/flink-controller ]; then
        FC_BIN=$ROOT/build/asan/flink-controller ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
          run_suite asan "${BUSTED[@]}" --pattern=_spec --tags=bin "${specs[@]:-tests}"
      else
        not_built asan build/asan/flink-controller
      fi ;;
    fuzz)
      # libFuzzer targets under ASan+UBSan: kept inputs, then a bounded run each (tests/fuzz/run.sh)
      run_suite fuzz tests/fuzz/run.sh ;;
    testenv)
      # One environment for the smoke test and the live checks of the other suites (the CRD
      # spec's #testenv block, the kube client and leader election against a real API server);
      # brought up here when none runs, and taken down again only then.
      if [ -x tests/env/smoke.sh ]; then
        # not exported: the integration suite picks its own environment by default
        tdir=${TESTENV_DIR:-$ROOT/build/testenv}
        env_started=0
        # the host values a real node changes, checked again after down
        tests/env/traces.sh --save "$LOG/testenv-sysctls"
        if [ ! -f "$tdir/env.sh" ] && TESTENV_DIR=$tdir tests/env/up.sh >"$LOG/testenv-up.log" 2>&1; then
          env_started=1
        fi
        TESTENV_DIR=$tdir run_suite testenv tests/env/smoke.sh
        if [ -f "$tdir/env.sh" ]; then
          (
            # shellcheck source=/dev/null
            . "$tdir/env.sh"
            export FC_KUBECONFIG=$KUBECONFIG
            run_suite testenv-specs "${BUSTED[@]}" --pattern=_spec --tags=testenv policies tests
            for t in build/tests/test_kube_live build/tests/test_leader; do
              [ -x "$t" ] && run_suite "testenv-$(basename "$t")" "$t"
            done
            echo "$passed $failed" >"$LOG/testenv-counts"
          )
          read -r passed failed <"$LOG/testenv-counts"
        fi
        if [ "$env_started" -eq 1 ]; then
          real=$(. "$tdir/env.sh" && echo "${TESTENV_NODE:-}")
          TESTENV_DIR=$tdir tests/env/down.sh >"$LOG/testenv-down.log" 2>&1
          # after a real node: nothing of it left on the host
          [ -z "$real" ] || TESTENV_DIR=$tdir run_suite testenv-traces tests/env/traces.sh --tap "$LOG/testenv-sysctls"
        fi
      fi ;;
    integration)
      # the controller against the real test environment (tests/integration/, SKIPs without one)
      run_suite integration tests/integration/run.sh ;;
    compat)
      # the newest Kubernetes claimed (docs/versions.md): its kwok-only environment
      # (build/testenv-newest), the CRD's admission and integration cases against it
      # (tests/compat/run.sh, SKIPs only when it cannot be built here)
      run_suite compat tests/compat/run.sh ;;
    *) echo "unknown suite: $s" >&2; exit 2 ;;
  esac
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
