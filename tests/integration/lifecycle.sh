# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Integration cases of the job lifecycle (issue 9) on the test environment's host Flink
# (sourced by tests/integration/run.sh after lib.sh and cases.sh: submit_ticker, set_job).

# savepoint_dirs: the savepoint directories the host Flink wrote so far, one per line
savepoint_dirs() { find "$TESTENV_DIR/flink/savepoints" -maxdepth 1 -name 'savepoint-*' 2>/dev/null | sort; }

# case triggerfind (issue 9 item 3): a controller that died with a savepoint in flight finds it
# by the trigger id the status holds, instead of reporting TriggerFailed or triggering again.
#  1. died after Flink took the trigger: the test sends the savepoint with the status's trigger
#     id (as the dead controller did), the next controller looks the id up and reports that
#     savepoint Succeeded; Flink wrote exactly one savepoint.
#  2. died after the status write, before the request went out: the next controller's lookup
#     gets 404 and sends the trigger with the same id; one savepoint, Succeeded.
case_triggerfind() {
  local ns jid
  ns=$(new_ns triggerfind)
  jget() { lua5.4 "$ROOT/tests/env/json.lua" "$@"; }
  jid=$(submit_ticker)
  sed "s/name: wordcount/name: tf/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints|" \
    "$ROOT/deploy/examples/wordcount.yaml" | kc -n "$ns" apply -f - >/dev/null
  sp() { jp "$ns" flinkcluster/tf "{.status.savepoint.$1}"; }
  job() { jp "$ns" flinkcluster/tf "{.status.components.job.$1}"; }
  # in_flight TID: the status of a savepoint of the job in flight under trigger id TID, as the
  # controller writes it before its request (the controller is stopped meanwhile)
  in_flight() {
    kc -n "$ns" patch flinkcluster tf --subresource=status --type=merge -p "{\"status\":{\"savepoint\":{
      \"state\":\"InProgress\",\"triggerID\":\"$1\",\"jobID\":\"$jid\",\"triggerReason\":\"scheduled\",
      \"triggerTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"requestTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}}}" >/dev/null
  }
  t_tf_running() {
    [ -n "$jid" ] || { echo "could not submit the Ticker job"; return 1; }
    start_controller tf1 --namespace "$ns"
    poll 60 is_state "$ns" tf Running || { echo "cluster: $(state "$ns" tf)"; return 1; }
    set_job "$ns" tf "$jid" Running || return 1
    poll 30 eval '[ "$(job state)" = Running ]' || { echo "job: $(job state)"; return 1; }
    # the Ticker's tasks run (a savepoint needs them RUNNING)
    poll 30 eval '[ "$(curl -sf "$FLINK_REST_URL/jobs/'"$jid"'" | jget state)" = RUNNING ]'
    sleep 2
    stop_controller tf1 >/dev/null
  }
  check "triggerfind: the Ticker runs as the cluster's job; the controller stopped" t_tf_running
  t_tf_found() {
    local tid before after code
    tid=$(printf '%08x%024x' "$(date +%s)" 1)
    before=$(savepoint_dirs | wc -l)
    in_flight "$tid" || return 1
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
      -d "{\"target-directory\":\"file://$TESTENV_DIR/flink/savepoints\",\"cancel-job\":false,\"triggerId\":\"$tid\"}" \
      "$FLINK_REST_URL/jobs/$jid/savepoints")
    expect "the dead controller's trigger" "$code" 202 || return 1
    FC_LOG_LEVEL=debug start_controller tf2 --namespace "$ns"
    poll 60 eval '[ "$(sp state)" = Succeeded ]' || { echo "savepoint: $(sp state) $(sp message)"; return 1; }
    expect "trigger id kept" "$(sp triggerID)" "$tid" || return 1
    expect "location = Flink's answer for that id" "$(job savepointLocation)" \
      "$(curl -sf "$FLINK_REST_URL/jobs/$jid/savepoints/$tid" | jget operation.location)" || return 1
    sleep 3
    after=$(savepoint_dirs | wc -l)
    expect "savepoints written" "$((after - before))" 1 || return 1
    grep -q "method=GET path=/jobs/$jid/savepoints/$tid" "$WORK/tf2.log" || { echo "no lookup by the trigger id in the log"; return 1; }
    ! grep -q "method=POST path=/jobs/$jid/savepoints" "$WORK/tf2.log" || { echo "triggered again"; return 1; }
    stop_controller tf2 >/dev/null
  }
  check "triggerfind: died after Flink took the trigger: the next controller looks the id up and reports that savepoint Succeeded, none triggered again" t_tf_found
  t_tf_resent() {
    local tid before after
    tid=$(printf '%08x%024x' "$(date +%s)" 2)
    before=$(savepoint_dirs | wc -l)
    in_flight "$tid" || return 1
    FC_LOG_LEVEL=debug start_controller tf3 --namespace "$ns"
    poll 60 eval '[ "$(sp state)" = Succeeded ]' || { echo "savepoint: $(sp state) $(sp message)"; return 1; }
    expect "trigger id kept" "$(sp triggerID)" "$tid" || return 1
    expect "Flink knows the savepoint by our id" "$(curl -sf "$FLINK_REST_URL/jobs/$jid/savepoints/$tid" | jget status.id)" \
      COMPLETED || return 1
    sleep 3
    after=$(savepoint_dirs | wc -l)
    expect "savepoints written" "$((after - before))" 1 || return 1
    stop_controller tf3 >/dev/null
  }
  check "triggerfind: died after writing the trigger id, before the request: the lookup's 404 sends the same id again: one savepoint, Succeeded" t_tf_resent
  curl -s -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null 2>&1
}

# case restsubmit (issue 9 item 6): jarFile an http:// URL (the test jobs jar served by a
# loopback HTTP server): the controller submits through the host Flink's REST API (download,
# POST /jars/upload, POST /jars/<id>/run with its own job id), no submitter Job; a jar that
# cannot be downloaded fails the job with the reason in the status.
case_restsubmit() {
  local ns port dir pid
  ns=$(new_ns restsubmit)
  jget() { lua5.4 "$ROOT/tests/env/json.lua" "$@"; }
  dir=$WORK/jars
  mkdir -p "$dir" && cp "$TESTENV_FLINK_JOBS_JAR" "$dir/testenv-jobs.jar"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m http.server --bind 127.0.0.1 --directory "$dir" "$port" >"$WORK/jarserver.log" 2>&1 &
  pid=$!
  start_controller restsubmit --namespace "$ns"
  # rest_cluster NAME JAR [NS]: the wordcount example running the Ticker from http://127.0.0.1/JAR
  rest_cluster() {
    sed "s/name: wordcount/name: $1/; s|savepointsDir: /cache/savepoints|savepointsDir: file://$TESTENV_DIR/flink/savepoints|;
      s|jarFile: .*|jarFile: http://127.0.0.1:$port/$2|; s|className: .*|className: testenv.Ticker|;
      s|args: .*|args: [\"100\"]|" \
      "$ROOT/deploy/examples/wordcount.yaml" | kc -n "${3:-$ns}" apply -f - >/dev/null
  }
  rest_cluster rest testenv-jobs.jar
  job() { jp "$ns" "flinkcluster/$1" "{.status.components.job.$2}"; }
  # no_jar JAR: the host Flink holds no upload of JAR (GET /jars: each id is "<uuid>_<file name>")
  no_jar() {
    local files
    files=$(curl -sf "$FLINK_REST_URL/jars" | jget files) && ! grep -qF "_$1\"" <<<"$files"
  }
  t_rest_runs() {
    local id
    poll 60 is_state "$ns" rest Running || { echo "cluster: $(state "$ns" rest)"; return 1; }
    poll 60 eval '[ "$(job rest state)" = Running ]' || { echo "job: $(job rest state) $(job rest failureReason)"; return 1; }
    id=$(job rest id)
    expect "job id = the submission's" "$id" "$(job rest submission.jobID)" || return 1
    flink_running() { [ "$(curl -sf "$FLINK_REST_URL/jobs/$id" | jget state)" = RUNNING ]; }
    poll 60 flink_running || { echo "Flink's state of $id: $(curl -sf "$FLINK_REST_URL/jobs/$id" | jget state)"; return 1; }
    ! kc -n "$ns" get job rest-job-submitter >/dev/null 2>&1 || { echo "a submitter Job was created"; return 1; }
    grep -q 'GET /testenv-jobs.jar' "$WORK/jarserver.log" || { echo "the jar was not downloaded"; return 1; }
    # the uploaded jar deleted once Flink ran it (DELETE /jars/<id>)
    poll 30 no_jar testenv-jobs.jar || { echo "jars on the JobManager: $(curl -sf "$FLINK_REST_URL/jars")"; return 1; }
    echo "job $id"
  }
  check "restsubmit: jarFile http://127.0.0.1/... -> downloaded, POST /jars/upload, /jars/<id>/run with our job id: Flink RUNNING, job Running, no submitter Job, the jar deleted from the JobManager" t_rest_runs
  t_rest_once() {
    local id
    id=$(job rest id)
    sleep 12
    expect "job id after more passes" "$(job rest id)" "$id" || return 1
    expect "job state after more passes" "$(job rest state)" Running || return 1
    expect "downloads of the jar" "$(grep -c 'GET /testenv-jobs.jar' "$WORK/jarserver.log")" 1
  }
  check "restsubmit: later passes submit nothing again (one download, the same job id)" t_rest_once
  t_rest_cancel() {
    local id
    id=$(job rest id)
    kc -n "$ns" patch flinkcluster rest --type=merge -p '{"spec":{"job":{"cancelRequested":true}}}' >/dev/null || return 1
    poll 60 is_state "$ns" rest Stopped || { echo "state $(state "$ns" rest), job $(job rest state)"; return 1; }
    expect "job state" "$(job rest state)" Cancelled || return 1
    expect "Flink job state" "$(curl -sf "$FLINK_REST_URL/jobs/$id" | jget state)" FINISHED
  }
  check "restsubmit: cancelRequested stops the REST-submitted job with a savepoint (FINISHED, Cancelled)" t_rest_cancel
  # a jar near Flink's upload limit (rest.server.max-content-length, 100 MiB): the test jobs jar
  # with 90 MiB of random bytes stored in it. The controller writes it to a temporary file and
  # uploads it from there: its peak RSS (VmHWM) grows by far less than the jar (the three copies
  # in memory it took before: about 270 MiB)
  python3 - "$TESTENV_FLINK_JOBS_JAR" "$dir/testenv-large.jar" <<'PY'
import os, shutil, sys, zipfile
shutil.copy(sys.argv[1], sys.argv[2])
with zipfile.ZipFile(sys.argv[2], "a") as z, z.open("padding.bin", "w", force_zip64=True) as f:
    for _ in range(90):
        f.write(os.urandom(1 << 20))
PY
  hwm() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$(ctl_pid restsubmit)/status"; }
  local hwm0
  hwm0=$(hwm)
  rest_cluster restlarge testenv-large.jar
  t_rest_large() {
    local hwm1 kib
    kib=$(( $(stat -c %s "$dir/testenv-large.jar") / 1024 ))
    poll 90 eval '[ "$(job restlarge state)" = Running ]' ||
      { echo "job: $(job restlarge state) $(job restlarge failureReason)"; return 1; }
    hwm1=$(hwm)
    echo "jar $kib KiB; controller VmHWM $hwm0 KiB before, $hwm1 KiB after: +$((hwm1 - hwm0)) KiB" |
      tee "$WORK/restlarge.rss"
    [ -n "$hwm0" ] && [ -n "$hwm1" ] && [ $((hwm1 - hwm0)) -lt 65536 ] ||
      { echo "peak RSS grew by 64 MiB or more"; return 1; }
    poll 30 no_jar testenv-large.jar || { echo "jars on the JobManager: $(curl -sf "$FLINK_REST_URL/jars")"; return 1; }
    kc -n "$ns" patch flinkcluster restlarge --type=merge -p '{"spec":{"job":{"cancelRequested":true}}}' >/dev/null &&
      poll 60 is_state "$ns" restlarge Stopped || { echo "not stopped: $(state "$ns" restlarge)"; return 1; }
  }
  check "restsubmit: a 90 MiB jar (near Flink's 100 MiB upload limit) is downloaded to a file and uploaded from it: Running, the controller's peak RSS grows by less than 64 MiB, the jar deleted from the JobManager" t_rest_large
  [ -f "$WORK/restlarge.rss" ] && sed 's/^/# /' "$WORK/restlarge.rss"
  rest_cluster restbad missing.jar
  t_rest_missing() {
    poll 60 eval '[ "$(job restbad state)" = Failed ]' || { echo "job: $(job restbad state)"; return 1; }
    case "$(job restbad failureReason)" in
      "submission failed: download http://127.0.0.1:$port/missing.jar: HTTP 404"*) ;;
      *) echo "failureReason: $(job restbad failureReason)"; return 1 ;;
    esac
    warning_says "$ns" restbad JobStateChanged "submission failed: download" ||
      { echo "no Warning JobStateChanged with the reason"; return 1; }
  }
  check "restsubmit: a jar URL that answers 404: job Failed, 'submission failed: download ...: HTTP 404' in status and a Warning Event" t_rest_missing
  stop_controller restsubmit >/dev/null
  # the download's size cap, from a policy copy that changes only submit.lua's constant
  local capns pdir
  capns=$(new_ns restcap)
  pdir=$WORK/policies-restcap
  cp -r "$ROOT/policies" "$pdir"
  edit_policy "$pdir/submit.lua" 's/^submit.JAR_MAX_BYTES = .*/submit.JAR_MAX_BYTES = 1000/' \
    'submit.JAR_MAX_BYTES = 1000' || { patch_failed restsubmit; return 0; }
  start_controller restcap --namespace "$capns" --policy-dir "$pdir"
  rest_cluster restbig testenv-jobs.jar "$capns"
  t_rest_cap() {
    poll 60 eval '[ "$(jp "$capns" flinkcluster/restbig "{.status.components.job.state}")" = Failed ]' ||
      { echo "job: $(jp "$capns" flinkcluster/restbig '{.status.components.job}')"; return 1; }
    case "$(jp "$capns" flinkcluster/restbig '{.status.components.job.failureReason}')" in
      "submission failed: download http://127.0.0.1:$port/testenv-jobs.jar: "*"over 1000 bytes"*) ;;
      *) echo "failureReason: $(jp "$capns" flinkcluster/restbig '{.status.components.job.failureReason}')"; return 1 ;;
    esac
  }
  check "restsubmit: a jar over the policy's JAR_MAX_BYTES (1000 in a policy copy) is not downloaded further: Failed with the reason" t_rest_cap
  stop_controller restcap >/dev/null
  kill "$pid" 2>/dev/null
}

# older_revision NS NAME: writes the ControllerRevision that 0.2.0 and earlier made for the
# FlinkCluster's spec (named and recorded by the spec defaulted with policies/defaults.lua, not by
# the spec as written, revision 1, our labels and controller ownerReference) and prints its name
older_revision() {
  local out
  out=$(kc -n "$1" get flinkcluster "$2" -o json | lua5.4 -e '
    local root = arg[1]
    package.path = root .. "/lua/?.lua;" .. root .. "/policies/?.lua;" .. package.path
    local cjson, revision = require("cjson"), require("fc.revision")
    local c = cjson.decode(io.read("a"))
    c.status = nil
    local d = require("defaults").apply(c)
    local obj = revision.object(d, 1)
    obj.metadata.name = c.metadata.name .. "-" .. revision.hash(d.spec)
    io.write(obj.metadata.name, "\n", cjson.encode(obj))' /dev/null "$ROOT") || return 1
  printf '%s\n' "$out" | tail -n +2 | kc -n "$1" create -f - >/dev/null || return 1
  printf '%s\n' "$out" | head -n 1
}

# case upgrade (issue 27 items 1, 2): a controller upgrade that adds a default restarts nothing.
# The job cluster runs the host Flink's Ticker job under this controller; the controller stops;
# its revision is rewritten as 0.2.0 left it (named by the defaulted spec); a controller whose
# defaults.lua adds a default (a TaskManager pod annotation) starts. It adopts the revision
# (RevisionAdopted, currentRevision back to the spec's own name), requests no savepoint and no
# stop, replaces no StatefulSet, Job or pod, and the job keeps its id; the new template waits
# (a Normal TemplateChangeHeld, not Stalled). Then a spec change is the usual update (stop with
# savepoint, new StatefulSets with the new default, resubmission).
case_upgrade() {
  local ns jid pdir rev old before sps
  pdir=$WORK/policies-upgrade
  cp -r "$ROOT/policies" "$pdir"
  edit_policy "$pdir/defaults.lua" \
    's/^  return out$/  if is_object(spec.taskManager) then\n    fill(spec.taskManager, "podAnnotations", { ["example.com\/defaulted"] = "yes" })\n  end\n&/' \
    'example.com/defaulted' || { patch_failed upgrade; return 0; }
  ticker_case upgrade upg
  local defaulted_ann='{.spec.template.metadata.annotations.example\.com/defaulted}'
  # uids of the StatefulSets, the submitter Job and every pod of the cluster, sorted
  uids() {
    { kc -n "$ns" get statefulsets,jobs -l app=flink,cluster=upg \
        -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid}{"\n"}{end}'
      kc -n "$ns" get pods -l app=flink,cluster=upg \
        -o jsonpath='{range .items[*]}Pod/{.metadata.name}={.metadata.uid}{"\n"}{end}'; } | sort
  }
  # (here, not in a check: a check runs in a subshell, and the later checks read these)
  rev=$(jp "$ns" flinkcluster/upg '{.status.currentRevision}')
  stop_controller upgrade >/dev/null
  before=$(uids)
  sps=$(savepoint_dirs | wc -l)
  old=$(older_revision "$ns" upg) || echo "# could not write the older revision"
  kc -n "$ns" delete controllerrevision "$rev" >/dev/null
  kc -n "$ns" patch flinkcluster upg --subresource=status --type=merge \
    -p "{\"status\":{\"currentRevision\":\"$old\",\"nextRevision\":\"$old\"}}" >/dev/null
  # and one labelled as the original operator labelled its own (the FlinkCluster's labels, not
  # app/cluster), which the controller must see too
  kc -n "$ns" create -f - >/dev/null <<EOF2
{"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "data": {"spec": {"\$patch": "replace"}},
 "metadata": {"name": "upg-b7745cb6b", "labels": {"flinkoperator.k8s.io/hash": "b7745cb6b",
   "flinkoperator.k8s.io/managed-by": "upg"},
   "ownerReferences": [{"apiVersion": "flinkoperator.k8s.io/v1beta1", "kind": "FlinkCluster", "name": "upg",
     "uid": "$(jp "$ns" flinkcluster/upg '{.metadata.uid}')", "controller": true}]}}
EOF2
  # debug: its log has every Flink call ("flink <METHOD> <path>: HTTP <status>")
  mkdir -p "$WORK/upgrade-snap"
  FC_LOG_LEVEL=debug start_controller upgrade2 --namespace "$ns" --policy-dir "$pdir" --debug-snapshot-dir "$WORK/upgrade-snap"
  t_adopted() {
    [ -n "$rev" ] && [ -n "$old" ] && [ "$old" != "$rev" ] || { echo "revision '$rev', older name '$old'"; return 1; }
    grep -q '^Pod/upg-taskmanager-0=' <<<"$before" || { echo "no TaskManager pod: $before"; return 1; }
    back() { [ "$(jp "$ns" flinkcluster/upg '{.status.currentRevision} {.status.nextRevision}')" = "$rev $rev" ]; }
    poll 30 back || { echo "revisions: $(jp "$ns" flinkcluster/upg '{.status.currentRevision} {.status.nextRevision}')"; return 1; }
    said() {
      kc -n "$ns" get events --field-selector "involvedObject.name=upg,reason=RevisionAdopted,type=Normal" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -qF "revision $old (ours) adopted as $rev"
    }
    poll 10 said || { echo "no RevisionAdopted Event naming $old and $rev"; return 1; }
    expect "status.adoptedRevision.from" "$(jp "$ns" flinkcluster/upg '{.status.adoptedRevision.from}')" "$old" || return 1
    sleep 12 # one more job poll (every 10 s): still nothing replaced or requested
    expect "StatefulSet, Job and pod uids" "$(uids)" "$before" || return 1
    expect "job id and state" "$(jp "$ns" flinkcluster/upg '{.status.components.job.id} {.status.components.job.state}')" \
      "$jid Running" || return 1
    expect "Flink job state" "$(flink_state "$jid")" RUNNING || return 1
    expect "savepoint state" "$(jp "$ns" flinkcluster/upg '{.status.savepoint.state}')" NotTriggered || return 1
    expect "savepoints written" "$(savepoint_dirs | wc -l)" "$sps" || return 1
    grep -q 'method=GET path=/jobs/overview http_code=200' "$WORK/upgrade2.log" || { echo "the job was not polled"; return 1; }
    if grep -E 'flink (POST|PATCH) ' "$WORK/upgrade2.log"; then echo "a savepoint, stop or cancel request"; return 1; fi
    echo "revision $old adopted as $rev; uids: $(echo "$before" | tr '\n' ' ')"
  }
  check "upgrade: a controller with a new default adopts the older revision (RevisionAdopted): no savepoint, stop or cancel, no StatefulSet, Job or pod replaced, the job id kept" \
    t_adopted
  t_unlabelled() {
    lua5.4 -e 'local s = require("cjson").decode(io.read("a"))
      local revs = s.children.ControllerRevision or {}
      assert(revs["upg-b7745cb6b"], "not in the snapshot: the original-style ControllerRevision")
      assert(revs[arg[1]], "not in the snapshot: " .. arg[1])' /dev/null "$rev" <"$WORK/upgrade-snap/$ns.upg.json"
  }
  check "upgrade: ControllerRevisions are watched whatever their labels (the original operator's carry the FlinkCluster's)" \
    t_unlabelled
  t_held_not_stalled() {
    normal_held() {
      kc -n "$ns" get events --field-selector "involvedObject.name=upg,reason=TemplateChangeHeld,type=Normal" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -qF "StatefulSet upg-taskmanager held since revision $old was adopted"
    }
    poll 10 normal_held || { echo "no Normal TemplateChangeHeld for upg-taskmanager"; return 1; }
    expect "the new default's annotation on the TaskManager template" "$(jp "$ns" statefulset/upg-taskmanager "$defaulted_ann")" "" ||
      return 1
    expect "Stalled" "$(condition "$ns" upg Stalled)" "False NotStalled" || return 1
    expect "Ready" "$(condition "$ns" upg Ready)" "True Running"
  }
  check "upgrade: the new default's pod template waits while the job runs: a Normal TemplateChangeHeld, Ready, not Stalled" \
    t_held_not_stalled
  t_update() {
    local tm
    tm=$(jp "$ns" statefulset/upg-taskmanager '{.metadata.uid}')
    spec_patch "$ns" upg '{"job":{"parallelism":2}}' || return 1
    sp_done() { [ "$(jp "$ns" flinkcluster/upg '{.status.savepoint.triggerReason} {.status.savepoint.state}')" = "update Succeeded" ]; }
    poll 60 sp_done || { echo "savepoint: $(jp "$ns" flinkcluster/upg '{.status.savepoint}')"; return 1; }
    expect "the update's savepoint stopped the job" "$(jp "$ns" flinkcluster/upg '{.status.savepoint.stop}')" true || return 1
    renewed() {
      [ "$(jp "$ns" statefulset/upg-taskmanager '{.metadata.uid}')" != "$tm" ] &&
        [ "$(jp "$ns" statefulset/upg-taskmanager "$defaulted_ann")" = yes ]
    }
    poll 60 renewed || { echo "TaskManager StatefulSet uid $(jp "$ns" statefulset/upg-taskmanager '{.metadata.uid}') (was $tm)"; return 1; }
    updated() {
      local cur nxt
      cur=$(jp "$ns" flinkcluster/upg '{.status.currentRevision}')
      nxt=$(jp "$ns" flinkcluster/upg '{.status.nextRevision}')
      [ -n "$cur" ] && [ "$cur" = "$nxt" ] && [ "$cur" != "$rev" ]
    }
    poll 90 updated || { echo "revisions: $(jp "$ns" flinkcluster/upg '{.status.currentRevision} {.status.nextRevision}')"; return 1; }
    expect "status.adoptedRevision after the update" "$(jp "$ns" flinkcluster/upg '{.status.adoptedRevision}')" ""
  }
  check "upgrade: then a spec change (parallelism) is the usual update: stop with savepoint, StatefulSets recreated with the new default, revision current" \
    t_update
  stop_controller upgrade2 >/dev/null
  curl -s -X PATCH "$FLINK_REST_URL/jobs/$jid?mode=cancel" >/dev/null 2>&1
}
