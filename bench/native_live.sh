#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The live path of Native TaskManagers, as a benchmark (not a timed test): one FlinkCluster
# with N TaskManager pods (default 1,000) on the test environment's kwok node; prints the time
# until all N pods exist (pods per second) and the first pass of a restarted controller, which
# rebuilds the accounting from the N pods. It is the integration case `nativescale` (its checks:
# ids 1..N, no pod created after the restart, a deleted pod replaced as id N+1) with its
# figures. Needs the test environment (make testenv-build; it is brought up and down here when
# none runs).
#   bench/native_live.sh [N]          (make bench-live)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export NATIVE_SCALE_PODS=${1:-${NATIVE_SCALE_PODS:-1000}}
out=$("$ROOT/tests/integration/run.sh" nativescale 2>&1)
rc=$?
echo "$out" | grep -E '^(ok|not ok)|pods created in|first pass after the restart'
exit "$rc"
