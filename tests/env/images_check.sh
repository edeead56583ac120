#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the real node's images without containerd (TAP on stdout): the
# archive's structure (manifest.json tags, config, layer digest), the files of
# the unpacked layer, and programs of the image run in a chroot in private
# mount, PID, network and UTS namespaces (`unshare`; /proc mounted, which the
# JVM needs).
# Usage: tests/env/images_check.sh [flink[=TAR]] [flink2[=TAR]] [controller[=TAR]]
#   (default: all three).  Without TAR, flink is the cached flink-image component
#   and flink2 the flink2-image one (built by tests/env/build.sh when missing), and
#   controller is built by tests/env/images.sh into the scratch folder.
# flink: entrypoint, bin/flink and jars present; `flink --version`; then the
#   official image's contract as the rendered objects use it: a configuration
#   folder holding only a legacy flink-conf.yaml (memory sizes, no bind
#   addresses) and log4j 1 console properties, mounted read-only on
#   /opt/flink/conf; `/docker-entrypoint.sh jobmanager` and `taskmanager`
#   start, the TaskManager registers, `flink run --detached` of the test jobs
#   jar prints a JobID and the job finishes.
# flink2: the same for the Flink 2 image, with the configuration as the
#   policies render it for Flink 1.19+ and 2.x: config.yaml only, string values.
# controller: the Dockerfile's USER/ENTRYPOINT in the config; as uid 65532,
#   `flink-controller render` of a FlinkCluster finds its Lua code in DATADIR
#   and the runtime libraries in the image.
# Scratch files in a mktemp folder under $TMPDIR, removed at the end.  Exit: 0
# all passed (or "1..0 # SKIP" when not root or unshare is missing); 1 a check
# failed (details as TAP comments).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
  echo "1..0 # SKIP needs root and unshare (chroot, mounts)"; exit 0
fi
[ $# -gt 0 ] || set -- flink flink2 controller

W=$(mktemp -d "${TMPDIR:-/tmp}/images-check.XXXXXX")
# (the processes of a check die with its PID namespace: unshare --kill-child)
trap 'rm -rf "$W"' EXIT

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; [ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/# /'; }
# check NAME PATTERN CMD...: ok when CMD succeeds and its output matches the
# extended regex PATTERN (empty: anything), else not ok with the output's end
check() {
  local name=$1 pat=$2 out; shift 2
  if out=$("$@" 2>&1) && { [ -z "$pat" ] || grep -Eq -- "$pat" <<<"$out"; }; then ok "$name"
  else not_ok "$name" "$(tail -n 30 <<<"$out")"; fi
}
# has NAME PATTERN...: ok when $SESSION matches every extended regex PATTERN
has() {
  local name=$1 p; shift
  for p in "$@"; do
    grep -Eq -- "$p" <<<"$SESSION" || { not_ok "$name" "no match for: $p" "$SESSION"; return; }
  done
  ok "$name"
}

# unpack TAR DIR: the archive into DIR/archive, its single layer into DIR/rootfs;
# sets CONFIG (the image config JSON) and TAGS (one per line)
unpack() {
  mkdir -p "$2/archive" "$2/rootfs"
  tar -xf "$1" -C "$2/archive" || return 1
  local m=$2/archive/manifest.json layer cfg
  [ "$(jq length "$m")" = 1 ] && [ "$(jq '.[0].Layers | length' "$m")" = 1 ] || return 1
  layer=$2/archive/$(jq -r '.[0].Layers[0]' "$m") cfg=$2/archive/$(jq -r '.[0].Config' "$m")
  CONFIG=$(cat "$cfg") TAGS=$(jq -r '.[0].RepoTags[]' "$m")
  # the config is named by its digest and names the layer's
  [ "$(basename "$cfg" .json)" = "$(sha256sum <"$cfg" | cut -d' ' -f1)" ] || return 1
  [ "$(jq -r '.rootfs.diff_ids[0]' <<<"$CONFIG")" = "sha256:$(sha256sum <"$layer" | cut -d' ' -f1)" ] ||
    return 1
  tar -xf "$layer" -C "$2/rootfs" --numeric-owner
}

# in_image ROOTFS [--conf DIR] [--user U] CMD...: CMD in a chroot of ROOTFS in
# new mount/PID/net/UTS namespaces (loopback up, /proc mounted, /etc/hosts and
# /dev/null, /dev/urandom provided); DIR bind-mounted read-only on
# /opt/flink/conf; as user U (uid:gid) when given.
in_image() {
  local r=$1 conf="" user=""; shift
  while :; do
    case $1 in
      --conf) conf=$2; shift 2 ;;
      --user) user=$2; shift 2 ;;
      *) break ;;
    esac
  done
  printf '127.0.0.1 localhost images-check\n' >"$r/etc/hosts"
  unshare --mount --pid --net --uts --fork --kill-child /bin/bash -c '
    set -e; r=$1 conf=$2 user=$3; shift 3
    ip link set lo up 2>/dev/null || true
    hostname images-check
    mount -t proc proc "$r/proc"
    for d in null zero random urandom; do touch "$r/dev/$d"; mount --bind "/dev/$d" "$r/dev/$d"; done
    if [ -n "$conf" ]; then
      mount --bind "$conf" "$r/opt/flink/conf"; mount -o remount,bind,ro "$r/opt/flink/conf"
    fi
    exec chroot ${user:+--userspec="$user"} "$r" "$@"' in_image "$r" "$conf" "$user" "$@"
}

# check_flink NAME TAR VERSION TAGS: the Flink image NAME (flink: Flink 1.x with the legacy
# flink-conf.yaml; flink2: Flink 2 with config.yaml) of Flink VERSION, tagged TAGS
check_flink() {
  local name=$1 tar=$2 FLINK_VERSION=$3 FLINK_IMAGE_TAGS=$4 d=$W/$1 r=$W/$1/rootfs
  if ! unpack "$tar" "$d"; then not_ok "$name: $tar unpacks (one layer, digests match)"; return; fi
  ok "$name: $tar unpacks (one layer, digests match)"
  local t missing=""
  for t in ${FLINK_IMAGE_TAGS//,/ }; do grep -qx "$t" <<<"$TAGS" || missing+=" $t"; done
  if [ -z "$missing" ]; then ok "$name: tags $FLINK_IMAGE_TAGS"; else not_ok "$name: tags" "missing:$missing" "have: $TAGS"; fi
  check "$name: ENTRYPOINT [/docker-entrypoint.sh]" "" \
    jq -e '.config.Entrypoint == ["/docker-entrypoint.sh"]' <<<"$CONFIG"
  local f bad=""
  for f in docker-entrypoint.sh opt/flink/bin/flink usr/bin/java usr/bin/curl bin/hostname; do
    [ -x "$r/$f" ] || bad+=" $f"
  done
  for f in opt/flink/usrlib/testenv-jobs.jar opt/flink/image/log4j-console.properties \
    opt/flink/image/log4j-cli.properties; do [ -f "$r/$f" ] || bad+=" $f"; done
  ls "$r"/opt/flink/lib/flink-runtime-"$FLINK_VERSION".jar "$r"/opt/flink/lib/flink-clients-"$FLINK_VERSION".jar \
    >/dev/null 2>&1 || bad+=" flink-runtime/flink-clients $FLINK_VERSION jars"
  # (a zip's central directory holds the entry names as plain text)
  for f in testenv/WordCount.class testenv/Ticker.class; do
    grep -qa "$f" "$r/opt/flink/usrlib/testenv-jobs.jar" || bad+=" $f"
  done
  if [ -z "$bad" ]; then ok "$name: files (entrypoint, bin/flink, java, curl, jars, test jobs)"
  else not_ok "$name: files" "missing:$bad"; fi

  check "$name: flink --version is $FLINK_VERSION" "Version: ${FLINK_VERSION//./\\.}," \
    in_image "$r" /opt/flink/bin/flink --version

  # the rendered objects' configuration, no bind addresses (the entrypoint adds them), log4j 1
  # console properties: for 1.x the legacy flink-conf.yaml only; for Flink 2 config.yaml only,
  # in the form the policies write it (flat keys, string values quoted where YAML would read
  # another type: lib.flinkconf.render_yaml)
  local conf=$W/$name-conf
  mkdir -p "$conf"
  if [ "$name" = flink2 ]; then
    cat >"$conf/config.yaml" <<'EOF'
blob.server.port: "6124"
jobmanager.memory.process.size: "1024m"
jobmanager.rpc.address: localhost
jobmanager.rpc.port: "6123"
rest.port: "8081"
taskmanager.data.port: "6121"
taskmanager.memory.process.size: "1024m"
taskmanager.numberOfTaskSlots: "1"
taskmanager.rpc.port: "6122"
EOF
  else
    cat >"$conf/flink-conf.yaml" <<'EOF'
jobmanager.rpc.address: localhost
jobmanager.rpc.port: 6123
blob.server.port: 6124
rest.port: 8081
taskmanager.rpc.port: 6122
taskmanager.data.port: 6121
jobmanager.memory.process.size: 1024m
taskmanager.memory.process.size: 1024m
taskmanager.numberOfTaskSlots: 1
EOF
  fi
  printf 'log4j.rootLogger=INFO, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n' \
    >"$conf/log4j-console.properties"
  # one namespace for the whole session: JobManager and TaskManager through the
  # entrypoint in the background, then the CLI as the job submitter does
  cat >"$r/check-session.sh" <<'EOF'
#!/bin/bash
# run inside the check's chroot: start the session, submit the test job
/docker-entrypoint.sh jobmanager >/tmp/jm.log 2>&1 &
/docker-entrypoint.sh taskmanager >/tmp/tm.log 2>&1 &
for i in $(seq 120); do
  curl -fsS http://localhost:8081/taskmanagers 2>/dev/null | grep -q '"slotsNumber":1' && break
  sleep 1
done
echo "== taskmanagers"; curl -fsS http://localhost:8081/taskmanagers; echo
out=$(/opt/flink/bin/flink run --jobmanager localhost:8081 --class testenv.WordCount --detached \
  /opt/flink/usrlib/testenv-jobs.jar 2>&1)
echo "== flink run"; echo "$out"
id=$(sed -n 's/.*JobID \([0-9a-fA-F]\{32\}\).*/\1/p' <<<"$out" | tail -n 1)
state=none
for i in $(seq 60); do
  [ -n "$id" ] || break
  state=$(curl -fsS "http://localhost:8081/jobs/$id" | sed -n 's/.*"state":"\([A-Z]*\)".*/\1/p' | head -n 1)
  case $state in FINISHED|FAILED|CANCELED) break ;; esac
  sleep 1
done
echo "== job $id: $state"
echo "== jobmanager log"
grep -E 'docker-entrypoint|YAML parser|Rest endpoint listening|Starting RPC|ERROR' /tmp/jm.log | head -n 20
echo "== taskmanager log"; grep -E 'docker-entrypoint|Successful registration|ERROR' /tmp/tm.log | head -n 20
echo "== listening"; cat /proc/net/tcp /proc/net/tcp6 | awk '$4 == "0A" {print $2}' | sort -u | tr '\n' ' '; echo
EOF
  chmod +x "$r/check-session.sh"
  SESSION=$(in_image "$r" --conf "$conf" /check-session.sh 2>&1)
  local id; id=$(sed -n 's/^== job \([0-9a-f]\{32\}\): .*/\1/p' <<<"$SESSION")
  has "$name: entrypoint jobmanager + taskmanager: TaskManager registered" '"slotsNumber":1'
  has "$name: bind addresses added as -D (the configuration lacks them)" \
    'docker-entrypoint: .*StandaloneSession.*-Djobmanager.bind-host=0.0.0.0 -Drest.bind-address=0.0.0.0' \
    'docker-entrypoint: .*TaskManagerRunner.*-Dtaskmanager.bind-host=0.0.0.0'
  if [ "$name" = flink2 ]; then
    # Flink 2 reads config.yaml, the standard YAML parser: the string values became its options
    has "$name: the JobManager reads config.yaml (standard YAML)" \
      'Using standard YAML parser to load flink configuration file from /opt/flink/conf/config.yaml'
  else
    # Flink 1.20 without a config.yaml: the legacy file and parser
    has "$name: the JobManager reads the legacy flink-conf.yaml" \
      'Using legacy YAML parser to load flink configuration file from /opt/flink/conf/flink-conf.yaml'
  fi
  # the mounted file is log4j 1 syntax: the image's log4j2 console file is used
  has "$name: JobManager logs to stdout (log4j 1 file replaced)" \
    'docker-entrypoint: .*log4j /opt/flink/image/log4j-console.properties' 'Rest endpoint listening'
  # 0.0.0.0:8081 and :6123 (hex 1F91, 17EB) in /proc/net/tcp
  has "$name: REST 8081 and RPC 6123 on all interfaces" '^[^=]*00000000:1F91' '^[^=]*00000000:17EB'
  if [ -n "$id" ]; then
    has "$name: flink run --detached printed JobID $id, the job FINISHED" "^== job $id: FINISHED"
  else not_ok "$name: flink run --detached prints a JobID" "$SESSION"; fi
}

check_controller() {
  local tar=$1 d=$W/controller r=$W/controller/rootfs
  if ! unpack "$tar" "$d"; then not_ok "controller: $tar unpacks (one layer, digests match)"; return; fi
  ok "controller: $tar unpacks (one layer, digests match)"
  if grep -qx "$CONTROLLER_IMAGE" <<<"$TAGS"; then ok "controller: tag $CONTROLLER_IMAGE"
  else not_ok "controller: tag $CONTROLLER_IMAGE" "have: $TAGS"; fi
  check "controller: USER and ENTRYPOINT of the Dockerfile" "" jq -e --arg u "$(dockerfile_final USER)" \
    --argjson ep "$(dockerfile_final ENTRYPOINT)" '.config.User == $u and .config.Entrypoint == $ep' <<<"$CONFIG"
  local user; user=$(dockerfile_final USER)
  cp "$HERE/../../deploy/examples/wordcount.yaml" "$r/tmp/wordcount.yaml"
  check "controller: render as $user finds DATADIR and the runtime libraries" "kind: StatefulSet" \
    in_image "$r" --user "$user" /usr/local/bin/flink-controller render -f /tmp/wordcount.yaml
}

for arg in "$@"; do
  name=${arg%%=*} tar=${arg#*=}
  [ "$tar" != "$arg" ] || tar=""
  case $name in
    flink|flink2)
      comp=flink-image version=$FLINK_VERSION tags=$FLINK_IMAGE_TAGS
      [ "$name" = flink ] || comp=flink2-image version=$FLINK2_VERSION tags=$FLINK2_IMAGE_TAGS
      if [ -z "$tar" ]; then
        "$HERE/build.sh" "$comp" >&2 || { not_ok "$name: build.sh $comp"; continue; }
        tar=$(component_dir "$comp")/image.tar
      fi
      check_flink "$name" "$tar" "$version" "$tags" ;;
    controller)
      if [ -z "$tar" ]; then
        tar=$W/controller.tar
        "$HERE/images.sh" controller "$tar" >&2 || { not_ok "controller: images.sh controller"; continue; }
      fi
      check_controller "$tar" ;;
    *) echo "images_check.sh: unknown image $name (flink|flink2|controller)" >&2; exit 2 ;;
  esac
done
echo "1..$n"
[ "$failed" -eq 0 ]
