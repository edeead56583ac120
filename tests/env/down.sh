#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops the test environment started by tests/env/up.sh: exactly the
# processes recorded in $TESTENV_DIR/pids, newest first, each only while its
# pid still belongs to the process started (same /proc start time), then
# removes everything under $TESTENV_DIR except logs/ (kept for reading; the
# next up clears them).  A real node goes first (tests/env/node/node.sh
# node_teardown: its pods deleted, its processes and containers stopped, its
# host traces removed); then tests/env/traces.sh must find nothing of it.
# Not running: says so, exit 0.  Exit 1 when a process
# could not be stopped.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$TESTENV_SRC/proc.sh"
. "$TESTENV_SRC/node/node.sh"
ROOT=$(cd "$TESTENV_SRC/../.." && pwd)
TESTENV_DIR=${TESTENV_DIR:-$ROOT/build/testenv}
PIDS=$TESTENV_DIR/pids
[ -d "$TESTENV_DIR" ] || { echo "testenv: not running (no $TESTENV_DIR)"; exit 0; }
exec 9>"$TESTENV_DIR/.lock"
flock -w 120 9 || { echo "testenv: another testenv-up/down holds $TESTENV_DIR/.lock" >&2; exit 1; }
if [ ! -f "$PIDS" ]; then
  echo "testenv: not running"
else
  node_teardown "$(component_dir k8s)/bin/kubectl" "$TESTENV_DIR/kubeconfig"
  pids_stop "$PIDS"
fi
left=$(pids_running "$PIDS")
if [ -n "$left" ]; then
  echo "testenv: still running, not cleaning up: $left" >&2
  exit 1
fi
if [ -d "$TESTENV_DIR/node" ] && ! left=$(TESTENV_DIR=$TESTENV_DIR "$TESTENV_SRC/traces.sh"); then
  echo "testenv: the real node left host traces:" >&2
  echo "$left" | sed 's/^/  /' >&2
fi
find "$TESTENV_DIR" -mindepth 1 -maxdepth 1 ! -name logs ! -name .lock -exec rm -rf {} +
rm -f "$TESTENV_DIR/.lock"
echo "testenv: down"
