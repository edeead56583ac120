#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ConfigMap key submit-job.sh of the adopt case's fixture: the contract of the original
# operator's submitter script (mounted at /opt/flink-operator/submit-job.sh, run as
# `bash submit-job.sh <flink run arguments>` with FLINK_JM_ADDR=<host:port>), written here:
# wait until GET http://$FLINK_JM_ADDR/jobs has answered twice (5 s apart, at most 60 tries),
# run `flink run`, and write the result as YAML to the pod's termination log:
#   jobID: <32 hex>          (only on success)
#   message: |
#     <one line of result>   followed by the output, indented, within 4 KiB
# Exit 1: the JobManager never answered; 2: no job id in the output of `flink run`.
set -uo pipefail
term=/dev/termination-log
out=$(mktemp)

report() {
  printf 'message: |\n  %s\n' "$1"
  sed 's/^/  /' "$out"
} 2>/dev/null

ok=0
for ((try = 1; try <= 60; try++)); do
  if curl -sS "http://$FLINK_JM_ADDR/jobs" >>"$out" 2>&1; then
    ok=$((ok + 1))
    [ "$ok" -ge 2 ] && break
  fi
  sleep 5
done
if [ "$ok" -lt 2 ]; then
  report "Aborted submit because JobManager is unavailable." | head -c 4096 >>"$term"
  exit 1
fi
: >"$out"
/opt/flink/bin/flink run "$@" 2>&1 | tee "$out"
id=$(sed -n 's/.*Job has been submitted with JobID \([0-9a-f]\{32\}\).*/\1/p' "$out" | head -n 1)
if [ -z "$id" ]; then
  report "Failed to submit." | head -c 4096 >>"$term"
  exit 2
fi
{ echo "jobID: $id"; report "Successfully submitted!"; } | head -c 4096 >"$term"
