#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Records the Flink REST answers the controller's job lifecycle reads, from a live session
# cluster, into OUTDIR (tests/testdata/flink-rest/<version>/, read by
# tests/flink_rest_spec.lua): one file per call, "<name>.json" with the HTTP status, the body
# as Flink sent it and the request's JSON body when there was one ({"status": N, "body": <JSON>,
# "request": <JSON>}).
# Usage: tests/env/flink/record-rest.sh BASE_URL JOBS_JAR OUTDIR
#   BASE_URL  the JobManager's REST address (e.g. http://<pod IP>:8081 of a session cluster on
#             the real node); JOBS_JAR  the test jobs jar of the same Flink version (the cache's
#             flink-<hash>/jobs.jar or flink2-<hash>/jobs.jar); the savepoints go to
#             file:///tmp/record-rest-savepoints in the JobManager's container.
# Calls, in the order the lifecycle makes them (docs/lifecycle.md):
#   config                GET /config (the Flink version)
#   upload-jar            POST /jars/upload (multipart "jarfile": JOBS_JAR) -> {"filename"}
#   run-jar               POST /jars/<jar id>/run {"entryClass": "testenv.Ticker", "jobId": <ours>}
#                         -> {"jobid"} (fc.flink's REST submission gives the job its id)
#   overview-running      GET /jobs/overview with the Ticker RUNNING
#   savepoint-trigger     POST /jobs/<id>/savepoints   -> {"request-id"}
#   savepoint-completed   GET /jobs/<id>/savepoints/<request-id> until COMPLETED
#   stop-trigger          POST /jobs/<id>/stop (stop-with-savepoint, drain false)
#   stop-completed        GET /jobs/<id>/savepoints/<request-id> of the stop until COMPLETED
#   job-finished          GET /jobs/<id> once the stopped job is FINISHED
#   overview-finished     GET /jobs/overview then
#   job-failed            GET /jobs/<id> of a Ticker whose negative pause fails it (FAILED)
#   exceptions-failed     GET /jobs/<id>/exceptions?maxExceptions=1 of that job
#   exceptions-unknown    GET /jobs/<random id>/exceptions (404, Flink's error body)
#   savepoint-unknown     POST /jobs/<random id>/savepoints (accepted: 202 and a request id)
#   savepoint-unknown-completed  GET of that request until COMPLETED (its failure-cause)
# Needs curl and jq.  Exit 1 when a step does not reach the state it waits for (the last
# answer on stderr).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 BASE_URL JOBS_JAR OUTDIR" >&2; exit 2; }
base=${1%/} jar=$2 out=$3
mkdir -p "$out"
SP=file:///tmp/record-rest-savepoints

# call NAME METHOD PATH [BODY]: the answer's body on stdout; recorded as NAME unless NAME is -
call() {
  local name=$1 method=$2 path=$3 body=${4:-} resp status
  if [ -n "$body" ]; then
    resp=$(curl -sS -X "$method" -H 'Content-Type: application/json' -d "$body" -w '\n%{http_code}' "$base$path")
  else
    resp=$(curl -sS -X "$method" -w '\n%{http_code}' "$base$path")
  fi
  status=${resp##*$'\n'} resp=${resp%$'\n'*}
  if [ "$name" != - ]; then
    jq -n --argjson s "$status" --argjson b "$resp" --argjson r "${body:-null}" \
      '{status: $s, body: $b} + (if $r == null then {} else {request: $r} end)' >"$out/$name.json"
  fi
  printf '%s\n' "$resp"
}
# wait_for WHAT N CMD...: retries CMD (1 s apart) up to N times
wait_for() {
  local what=$1 n=$2 i; shift 2
  for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 1; done
  echo "record-rest: $what did not happen" >&2; return 1
}

call config GET /config >/dev/null
resp=$(curl -sS -X POST -F "jarfile=@$jar" -w '\n%{http_code}' "$base/jars/upload")
jq -n --argjson s "${resp##*$'\n'}" --argjson b "${resp%$'\n'*}" '{status: $s, body: $b}' >"$out/upload-jar.json"
jar_id=$(jq -r '.body.filename | split("/") | last' "$out/upload-jar.json")
# run NAME ARG: the Ticker with ARG (emit interval in ms), as job id 32 hex digits of our own;
# recorded as NAME unless -
run() {
  local jid; jid=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  call "$1" POST "/jars/$jar_id/run" \
    "{\"entryClass\":\"testenv.Ticker\",\"programArgsList\":[\"$2\"],\"jobId\":\"$jid\"}" | jq -r .jobid
}
id=$(run run-jar 100)
vertices_running() {
  call - GET "/jobs/$id" | jq -e '.state == "RUNNING" and (.vertices | length > 0)
    and all(.vertices[]; .status == "RUNNING")' >/dev/null
}
wait_for "job $id RUNNING with every task" 120 vertices_running
call overview-running GET /jobs/overview >/dev/null

rid=$(call savepoint-trigger POST "/jobs/$id/savepoints" "{\"target-directory\":\"$SP\",\"cancel-job\":false}" |
  jq -r '."request-id"')
completed() { call "$1" GET "/jobs/$id/savepoints/$2" | jq -e '.status.id == "COMPLETED"' >/dev/null; }
wait_for "savepoint $rid COMPLETED" 60 completed savepoint-completed "$rid"

rid=$(call stop-trigger POST "/jobs/$id/stop" "{\"targetDirectory\":\"$SP\",\"drain\":false}" | jq -r '."request-id"')
wait_for "stop $rid COMPLETED" 60 completed stop-completed "$rid"
finished() { call job-finished GET "/jobs/$id" | jq -e '.state == "FINISHED"' >/dev/null; }
wait_for "job $id FINISHED" 60 finished
call overview-finished GET /jobs/overview >/dev/null

id=$(run - -1)
failed() { call job-failed GET "/jobs/$id" | jq -e '.state == "FAILED"' >/dev/null; }
wait_for "job $id FAILED" 120 failed
has_history() {
  call exceptions-failed GET "/jobs/$id/exceptions?maxExceptions=1" | jq -e '.exceptionHistory.entries | length > 0' >/dev/null
}
wait_for "exceptions of $id" 30 has_history
call exceptions-unknown GET /jobs/0123456789abcdef0123456789abcdef/exceptions >/dev/null
id=0123456789abcdef0123456789abcdef
rid=$(call savepoint-unknown POST "/jobs/$id/savepoints" "{\"target-directory\":\"$SP\",\"cancel-job\":false}" |
  jq -r '."request-id"')
wait_for "savepoint $rid of an unknown job COMPLETED" 30 completed savepoint-unknown-completed "$rid"
curl -sS -X DELETE "$base/jars/$jar_id" >/dev/null
echo "record-rest: $(ls "$out" | wc -l) answers in $out"
