# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Issue 30 (sourced by tests/integration/run.sh): `run --shards N` across replicas (case `shards`,
# kwok only). Three controllers with --shards 3 (--shard-index 0, 1, 2; the Leases
# flink-controller-shard-<i> in the case's namespace) and 30 session clusters: each replica
# reconciles its shard; the one of shard 1 is SIGKILLed at its first write, one of the other two
# takes its Lease over (the record unchanged for the lease duration, 15 s, by its own clock) and
# reconciles its clusters. At the end: every cluster Running with all its children (lost), no
# cluster written by two replicas at once (duplicate: in each cluster's sequence of writes from
# the logs, by timestamp, one change of writer at most, from the killed replica before its kill
# to the shard's new holder), nothing left without its FlinkCluster (orphaned); the shard metrics;
# shard 0's Lease taken by a stranger: its replica fences shard 0 at once and keeps running, a
# spec change reaches the other shards' clusters only; SIGTERM releases every shard's Lease.

# shards_analyse NS KILL_TS: from the three logs (debug: one "written" line per write, with its
# timestamp and cluster=) prints "duplicate N" and the clusters per replica; KILL_TS is the
# kill's time as the logs write it (UTC, milliseconds)
shards_analyse() {
  python3 - "$WORK" "$2" <<'PY'
import re, sys, collections
work, kill_ts = sys.argv[1], sys.argv[2]
writes = collections.defaultdict(list)  # cluster -> [(ts, replica)]
for r in ("shard0", "shard1", "shard2"):
    for line in open(f"{work}/{r}.log", errors="replace"):
        f = line.split(" ", 3)
        if len(f) < 3 or f[2] != "written":
            continue
        m = re.search(r" cluster=(\S+)", line)
        if m:
            writes[m.group(1)].append((f[0], r))
dup, per = 0, collections.Counter()
for c, ws in sorted(writes.items()):
    ws.sort()
    seq = [r for i, (_, r) in enumerate(ws) if i == 0 or ws[i - 1][1] != r]
    for r in set(seq):
        per[r] += 1
    ok = len(seq) == 1 or (len(seq) == 2 and seq[0] == "shard1" and
                           max(t for t, r in ws if r == "shard1") <= kill_ts)
    if not ok:
        dup += 1
        print(f"# {c}: writers in turn {seq}")
print(f"clusters_written {len(writes)}")
print("per_replica " + " ".join(f"{r}={per[r]}" for r in ("shard0", "shard1", "shard2")))
print(f"duplicate {dup}")
PY
}

# shards_of KEY [N]: the shard of workqueue key KEY among N (3): fnv1a32(KEY) mod N, as core/shard
shards_of() {
  python3 -c 'import sys
h = 2166136261
for b in sys.argv[1].encode():
    h = ((h ^ b) * 16777619) & 0xffffffff
print(h % int(sys.argv[2]))' "$1" "${2:-3}"
}

case_shards() {
  local ns i t0 tkill holder1 taker
  ns=$(new_ns shards)
  t0=$(date +%s)
  for i in 0 1 2; do
    FC_LOG_LEVEL=debug start_controller "shard$i" --namespace "$ns" --leader-election-namespace "$ns" \
      --shards 3 --shard-index "$i" --metrics-addr 127.0.0.1:0 --health-addr 127.0.0.1:0
  done
  t_shards_leases() {
    local i h
    for i in 0 1 2; do
      held() { [ -n "$(jp "$ns" "lease/flink-controller-shard-$1" '{.spec.holderIdentity}')" ]; }
      poll 30 held "$i" || { echo "shard $i: no holder"; return 1; }
      h=$(jp "$ns" "lease/flink-controller-shard-$i" '{.spec.holderIdentity}')
      grep -q "identity=$h" "$WORK/shard$i.log" || { echo "shard $i held by $h, not by shard$i"; return 1; }
    done
  }
  check "shards: three replicas with --shards 3 each hold their own shard's Lease" t_shards_leases
  # the standbys campaign for the other shards one lease duration after their start: the
  # clusters come after that, so the takeover below is timed from the kill alone
  while [ $(($(date +%s) - t0)) -lt 17 ]; do sleep 0.5; done
  local tapply
  tapply=$(date +%s%N)
  for i in $(seq 1 30); do small_cluster "s$i"; echo ---; done | kc -n "$ns" apply -f - >/dev/null
  holder1=$(jp "$ns" lease/flink-controller-shard-1 '{.spec.holderIdentity}')
  # mid-converge: at shard1's first write
  poll 30 grep -q ' written ' "$WORK/shard1.log"
  stop_controller shard1 KILL >/dev/null
  tkill=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
  local tk
  tk=$(date +%s%N)
  t_shards_takeover() {
    new_holder() { local h; h=$(jp "$ns" lease/flink-controller-shard-1 '{.spec.holderIdentity}'); [ -n "$h" ] && [ "$h" != "$holder1" ]; }
    poll 40 new_holder || { echo "shard 1 not taken over within 40 s"; return 1; }
    local took h
    h=$(jp "$ns" lease/flink-controller-shard-1 '{.spec.holderIdentity}')
    took=$((($(date +%s%N) - tk) / 1000000))
    echo "$took" >"$WORK/shards.took"
    # as case leader: the standby's clock starts at its next try after the last renewal (retry 2 s
    # jittered up to 4.4 s), it takes over at its first try after the 15 s: at most 15 + 2 x 4.4 s
    # after the kill, plus 1.5 s of polling
    [ "$took" -le 25300 ] || { echo "took over after $took ms: more than lease duration + two jittered retries"; return 1; }
    shards_taker >/dev/null || { echo "shard 1 held by $h, neither shard0 nor shard2"; return 1; }
  }
  # shards_taker: the replica (shard0 or shard2) whose identity holds shard 1's Lease
  shards_taker() {
    local h r
    h=$(jp "$ns" lease/flink-controller-shard-1 '{.spec.holderIdentity}')
    for r in shard0 shard2; do
      [ -n "$h" ] && grep -q "identity=$h" "$WORK/$r.log" && { echo "$r"; return 0; }
    done
    return 1
  }
  check "shards: the killed replica's shard is taken over by a live one within lease duration + two retries" t_shards_takeover
  taker=$(shards_taker)
  echo "# shards: shard 1 taken over by ${taker:-nobody} $(cat "$WORK/shards.took" 2>/dev/null || echo '?') ms after the kill"
  t_shards_converge() {
    all_running() { [ "$(kc -n "$ns" get flinkclusters -o jsonpath='{range .items[*]}{.status.state}{"\n"}{end}' | grep -c '^Running$')" = 30 ]; }
    poll 120 all_running || { echo "Running: $(kc -n "$ns" get flinkclusters -o jsonpath='{range .items[*]}{.status.state}{"\n"}{end}' | sort | uniq -c | tr '\n' ' ')"; return 1; }
    echo $((($(date +%s%N) - tapply) / 1000000)) >"$WORK/shards.conv"
  }
  check "shards: all 30 clusters Running" t_shards_converge
  echo "# shards: 30 clusters Running $(cat "$WORK/shards.conv" 2>/dev/null || echo '?') ms after they were applied (a replica killed on the way)"
  t_shards_sweep() {
    local lost=0 orphaned=0 dup c kind uids res
    for i in $(seq 1 30); do
      for c in "configmap/s$i-configmap" "statefulset/s$i-jobmanager" "statefulset/s$i-taskmanager" "service/s$i-jobmanager"; do
        [ -n "$(jp "$ns" "$c" '{.metadata.name}')" ] || { lost=$((lost + 1)); echo "# missing $c"; }
      done
    done
    uids=$(kc -n "$ns" get flinkclusters -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}')
    for kind in configmaps statefulsets services jobs; do
      while read -r name uid; do
        [ -n "$name" ] || continue
        if [ -z "$uid" ] || ! grep -qx "$uid" <<<"$uids"; then orphaned=$((orphaned + 1)); echo "# orphaned $kind/$name"; fi
      done < <(kc -n "$ns" get "$kind" -l cluster \
        -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.ownerReferences[?(@.controller==true)].uid}{"\n"}{end}')
    done
    res=$(shards_analyse "$ns" "$tkill")
    echo "$res" | grep '^#'
    dup=$(awk '$1 == "duplicate" { print $2 }' <<<"$res")
    echo "# shards: $(grep '^per_replica' <<<"$res"), $(grep '^clusters_written' <<<"$res")" >"$WORK/shards.sweep"
    echo "# shards: lost $lost duplicate $dup orphaned $orphaned" >>"$WORK/shards.sweep"
    expect "clusters written (from the logs)" "$(awk '$1 == "clusters_written" { print $2 }' <<<"$res")" 30 || return 1
    expect "lost duplicate orphaned" "lost $lost duplicate $dup orphaned $orphaned" "lost 0 duplicate 0 orphaned 0"
  }
  check "shards: lost 0 duplicate 0 orphaned 0 (every child there, one writer per cluster at a time, nothing without its cluster)" t_shards_sweep
  cat "$WORK/shards.sweep" 2>/dev/null
  t_shards_metrics() {
    local m owned clusters
    m=$(scrape_metrics "$taker") || { echo "no /metrics from $taker"; return 1; }
    owned=$(awk '$1 ~ /^flink_controller_shard_owned\{/ { s += $2 } END { print s + 0 }' <<<"$m")
    clusters=$(awk '$1 ~ /^flink_controller_shard_clusters\{/ { s += $2 } END { print s + 0 }' <<<"$m")
    grep -q '^flink_controller_shard_owned{shard="1"} 1' <<<"$m" || { grep shard_owned <<<"$m"; return 1; }
    expect "shards owned by $taker" "$owned" 2 || return 1
    expect "clusters over the shards in $taker's cache" "$clusters" 30
  }
  check "shards: /metrics of the taker: flink_controller_shard_owned 1 for its two shards, shard_clusters sum 30" t_shards_metrics
  # a shard's Lease taken by someone else (as case fence): its replica fences that shard at once
  # and goes on running; a spec change of every cluster is applied to the other shards' clusters
  # only, and the fenced replica writes nothing about shard 0's clusters after it saw the loss
  t_shards_fence() {
    local now i c got s0=() rest=() other=0 after
    for i in $(seq 1 30); do
      if [ "$(shards_of "$ns/s$i")" = 0 ]; then s0+=("s$i"); else rest+=("s$i"); fi
    done
    [ "${#s0[@]}" -gt 0 ] || { echo "no cluster in shard 0"; return 1; }
    now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
    kc -n "$ns" patch lease flink-controller-shard-0 --type merge \
      -p "{\"spec\":{\"holderIdentity\":\"another-replica\",\"renewTime\":\"$now\",\"leaseDurationSeconds\":300}}" \
      >/dev/null || return 1
    poll 20 grep -q '"shard lost" shard=0' "$WORK/shard0.log" || { echo "shard0 did not see the loss"; return 1; }
    for i in $(seq 1 30); do
      kc -n "$ns" patch flinkcluster "s$i" --type merge -p '{"spec":{"taskManager":{"replicas":2}}}' >/dev/null ||
        return 1
    done
    scaled() {
      local c
      for c in "${rest[@]}"; do
        [ "$(jp "$ns" "statefulset/$c-taskmanager" '{.spec.replicas}')" = 2 ] || return 1
      done
    }
    poll 60 scaled || { echo "the clusters of shards 1 and 2 were not all scaled"; return 1; }
    sleep 3
    for c in "${s0[@]}"; do
      got=$(jp "$ns" "statefulset/$c-taskmanager" '{.spec.replicas}')
      [ "$got" = 1 ] || other=$((other + 1))
    done
    # writes about shard 0's clusters only: shard0 may also hold the killed replica's shard (it
    # took it over above), whose clusters it goes on writing
    after=$(sed -n '/"shard lost" shard=0/,$p' "$WORK/shard0.log" | grep ' written ' |
      grep -cE " cluster=($(IFS='|'; echo "${s0[*]}")) namespace=")
    echo "shard 0 clusters: ${#s0[@]}, scaled by someone: $other; shard0's writes after the loss: $after"
    ctl_alive shard0 || { echo "shard0 exited"; return 1; }
    expect "shard 0 clusters changed while nobody holds shard 0" "$other" 0 || return 1
    expect "writes of shard0 after the loss" "$after" 0
  }
  check "shards: a replica whose shard Lease another took fences that shard at once, keeps running; the other shards' clusters are updated" t_shards_fence
  t_shards_release() {
    local i rc
    for i in 0 2; do
      rc=$(stop_controller "shard$i" TERM)
      expect "shard$i exit status" "$rc" 0 || return 1
    done
    # shard 0 is another-replica's since t_shards_fence
    for i in 1 2; do
      expect "shard $i holder after SIGTERM" "$(jp "$ns" "lease/flink-controller-shard-$i" '{.spec.holderIdentity}')" "" || return 1
    done
  }
  check "shards: SIGTERM releases every shard Lease held and exits 0" t_shards_release
  kc delete namespace "$ns" --wait=false >/dev/null 2>&1
}
