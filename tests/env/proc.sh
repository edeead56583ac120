# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Process bookkeeping for tests/env/up.sh and down.sh (sourced, not run).
# The pid file $TESTENV_DIR/pids has one line per process up.sh started:
#   <name> <pid> <start time in clock ticks since boot, /proc/<pid>/stat field 22>
# A pid counts as "ours" only while /proc/<pid> exists with that same start
# time, so a pid reused by another program after a crash is never signalled.

# proc_start PID: prints the start time of PID (empty when PID is gone).
proc_start() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  # field 2 (comm) may hold spaces: cut everything up to its closing ')'
  stat=${stat##*) }
  # after comm, field 3 is the first; start time is field 22 -> 20th here
  # shellcheck disable=SC2086
  set -- $stat
  # a zombie (state Z) has exited already: report it as gone
  [ "$1" = Z ] && return 0
  echo "${20}"
}

# proc_ours PID START: true while PID is the process recorded with START.
proc_ours() {
  [ -n "$1" ] && [ -d "/proc/$1" ] && [ "$(proc_start "$1")" = "$2" ]
}

# pids_running PIDFILE: prints "name pid" of each recorded process still ours.
pids_running() {
  local name pid start
  [ -f "$1" ] || return 0
  while read -r name pid start; do
    if proc_ours "$pid" "$start"; then echo "$name $pid"; fi
  done <"$1"
}

# pids_stop PIDFILE [NAME...]: stops every recorded process (only those
# named NAME... when given) that is still ours, newest first: SIGTERM, up to
# 20 s grace, then SIGKILL.  Prints what it did.
pids_stop() {
  local pidfile=$1 lines=() i name pid start waited; shift
  local only=" $* "
  [ -f "$pidfile" ] || return 0
  mapfile -t lines <"$pidfile"
  for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
    read -r name pid start <<<"${lines[$i]}"
    [ "$only" = "  " ] || [[ $only == *" $name "* ]] || continue
    if ! proc_ours "$pid" "$start"; then
      echo "testenv: $name (pid $pid) already gone"
      continue
    fi
    kill -TERM "$pid" 2>/dev/null || true
    waited=0
    while proc_ours "$pid" "$start" && [ "$waited" -lt 200 ]; do
      sleep 0.1; waited=$((waited + 1))
    done
    if proc_ours "$pid" "$start"; then
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
      echo "testenv: $name (pid $pid) killed after 20 s"
    else
      echo "testenv: $name (pid $pid) stopped"
    fi
  done
}
