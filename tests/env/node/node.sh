# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The test environment's real node (sourced by tests/env/up.sh, down.sh and
# traces.sh, after lib.sh and proc.sh): containerd + runc + CNI bridge, a
# kubelet, kube-proxy (iptables) and CoreDNS on the host, as node
# testenv-real-0 beside kwok's fake testenv-node-0.
# Per environment everything lives in $TESTENV_DIR/node; the kubelet,
# containerd and the CNI plugins also write fixed host paths (listed below),
# so one real node runs per machine at a time: /run/flink-controller-testenv-node/
# names the environment that runs it and keeps the host values it changes.

NODE_NAME=testenv-real-0
KWOK_NODE=testenv-node-0
NODE_BRIDGE=testenvbr0
NODE_POD_CIDR=10.244.7.0/24
# the API server's --service-cluster-ip-range (up.sh)
NODE_SERVICE_CIDR=10.96.0.0/16
NODE_MARK=/run/flink-controller-testenv-node
# host sysctls the CNI bridge (ip_forward) or the kubelet (the rest, its
# "kernel defaults") set; saved at up, restored at down
NODE_SYSCTLS=(net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic
  kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# fixed host directories written by containerd 1.6 (fifo, shim sockets), the
# kubelet (device plugins, log symlinks) and CNI (netns, result cache); removed
# at down unless they existed before up
NODE_HOST_DIRS=(/run/containerd /var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/netns)
# images imported into the node's containerd at up: COMPONENT:FILE of a
# build.sh component, imported when the component is built (.done); add a line
# for another image
NODE_IMAGES=(pause:image.tar flink-image:image.tar flink2-image:image.tar)
# the namespace annotations that send every pod of a namespace to the kwok node
# (admission plugins PodNodeSelector and PodTolerationRestriction)
KWOK_TOLERATION='[{"key":"kwok.x-k8s.io/node","operator":"Exists","effect":"NoSchedule"}]'
KWOK_NS_ANNOTATIONS="scheduler.alpha.kubernetes.io/node-selector=type=kwok scheduler.alpha.kubernetes.io/defaultTolerations=$KWOK_TOLERATION"

# node_ip: the host's primary IPv4 address (source of its default route).
node_ip() { ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p'; }

# node_unusable: prints why the real node cannot run here now; prints nothing
# (status 0 either way) when it can.
node_unusable() {
  local t owner
  [ "$(id -u)" = 0 ] || { echo "not root"; return 0; }
  for t in containerd containerd-shim-runc-v2 runc ctr iptables-save ip6tables-save ip; do
    command -v "$t" >/dev/null || { echo "$t not found (make deps)"; return 0; }
  done
  for t in bridge host-local portmap; do
    [ -x "/usr/lib/cni/$t" ] || { echo "CNI plugin /usr/lib/cni/$t not found (make deps)"; return 0; }
  done
  [ -n "$(node_ip)" ] || { echo "no IPv4 default route"; return 0; }
  owner=$(node_owner)
  if [ -n "$owner" ]; then echo "the real node of $owner is running (one per machine)"; return 0; fi
  if [ -S /run/containerd/containerd.sock ]; then echo "a system containerd uses /run/containerd"; fi
}

# node_owner: prints the TESTENV_DIR of another environment that holds the
# host's real node (its processes run, or its up/down holds its lock);
# nothing when the host is free, ours, or its mark is stale.
node_owner() {
  local owner
  [ -d "$NODE_MARK" ] || return 0
  owner=$(cat "$NODE_MARK/owner" 2>/dev/null) || true
  # a fresh mark without owner yet: another up is claiming it this instant
  if [ -z "$owner" ]; then
    [ -z "$(find "$NODE_MARK" -maxdepth 0 -mmin -1)" ] || echo "(being claimed)"
    return 0
  fi
  [ "$owner" != "$TESTENV_DIR" ] || return 0
  if [ -n "$(pids_running "$owner/pids")" ] ||
    { [ -e "$owner/.lock" ] && ! flock -n "$owner/.lock" true 2>/dev/null; }; then
    echo "$owner"
  fi
}

# node_render TEMPLATE OUT KEY=VALUE...: TEMPLATE (in tests/env/node/) to OUT
# with every @KEY@ replaced by VALUE.
node_render() {
  local in=$TESTENV_SRC/node/$1 out=$2 kv args=(); shift 2
  for kv in "$@"; do args+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
  sed "${args[@]}" "$in" >"$out"
}

# node_sysctls: "name value" of each of NODE_SYSCTLS, one per line.
node_sysctls() {
  local s
  for s in "${NODE_SYSCTLS[@]}"; do echo "$s $(sysctl -n "$s" 2>/dev/null)"; done
}

# node_claim: marks the host as running this environment's real node (an
# atomic mkdir of the mark) and keeps the host state to restore.  A stale mark
# (a crashed run: node_owner prints nothing) is cleaned up first, restoring
# the values it saved.  Fails when another environment holds the node.
node_claim() {
  local d
  if ! mkdir "$NODE_MARK" 2>/dev/null; then
    [ -z "$(node_owner)" ] || return 1
    log "cleaning the host traces of a stopped real node ($(cat "$NODE_MARK/owner" 2>/dev/null))"
    node_clean_host
    mkdir "$NODE_MARK" || return 1
  fi
  node_sysctls >"$NODE_MARK/sysctls"
  for d in "${NODE_HOST_DIRS[@]}"; do [ ! -e "$d" ] || echo "$d"; done >"$NODE_MARK/existed"
  echo "$TESTENV_DIR" >"$NODE_MARK/owner"
  mkdir -p "$TESTENV_DIR/node"
}

# node_images: the image archives to import, one path per line.
node_images() {
  local i dir
  for i in "${NODE_IMAGES[@]}"; do
    dir=$(component_dir "${i%%:*}" 2>/dev/null) || continue
    [ -f "$dir/.done" ] && [ -f "$dir/${i#*:}" ] && echo "$dir/${i#*:}"
  done
  return 0
}

# ctr_node ARGS...: ctr against the node's containerd, CRI namespace.
ctr_node() { ctr --address "$TESTENV_DIR/node/containerd.sock" --namespace k8s.io "$@"; }

# node_kubeconfig NAME CERT: writes $TESTENV_DIR/node/NAME.kubeconfig for the
# client certificate $PKI/CERT.{crt,key} (context testenv, the local API).
node_kubeconfig() {
  local b64=(base64 -w0)
  cat >"$TESTENV_DIR/node/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $("${b64[@]}" "$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $("${b64[@]}" "$PKI/$2.crt")
    client-key-data: $("${b64[@]}" "$PKI/$2.key")
contexts:
- name: testenv
  context: {cluster: testenv, user: $2}
current-context: testenv
EOF
}

# node_start_runtime: (up.sh, before the control plane, after node_claim)
# starts containerd and imports the images in the background (pid in
# NODE_IMPORT_PID, log logs/images.log).  Uses up.sh's start, free_port, log.
node_start_runtime() {
  local nd=$TESTENV_DIR/node
  mkdir -p "$nd/cni" "$nd/pod-logs"
  node_render containerd.toml "$nd/containerd.toml" NODE_DIR="$nd" PAUSE_IMAGE="$PAUSE_IMAGE"
  node_render cni.conflist "$nd/cni/10-testenv.conflist" NODE_DIR="$nd" BRIDGE="$NODE_BRIDGE" POD_CIDR="$NODE_POD_CIDR"
  start containerd containerd --config "$nd/containerd.toml"
  (
    set -e
    n=0; until ctr_node version >/dev/null 2>&1; do n=$((n + 1)); [ "$n" -lt 150 ]; sleep 0.2; done
    node_images | while read -r img; do
      echo "importing $img"
      ctr_node images import --snapshotter overlayfs "$img"
    done
  ) </dev/null >"$LOGS/images.log" 2>&1 9>&- &
  NODE_IMPORT_PID=$!
}

# node_start: (up.sh, once the API server is ready) certificates and
# kubeconfigs for the kubelet (Node authorizer), kube-proxy and CoreDNS, then
# starts the three.  Needs NODE_IP, API_PORT, PKI, kc, sign, start, free_port.
node_start() {
  local nd=$TESTENV_DIR/node client="extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature,keyEncipherment"
  sign node "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
  sign kube-proxy /CN=system:kube-proxy "$client"
  sign coredns /CN=testenv:coredns "$client"
  node_kubeconfig kubelet node
  node_kubeconfig kube-proxy kube-proxy
  node_kubeconfig coredns coredns
  # CoreDNS's kubernetes plugin reads these (RBAC's system:node-proxier
  # covers kube-proxy already)
  { kc create clusterrole testenv:coredns --verb=list,watch \
      --resource=endpointslices.discovery.k8s.io,services,pods,namespaces &&
    kc create clusterrolebinding testenv:coredns --clusterrole=testenv:coredns --user=testenv:coredns
  } >"$LOGS/rbac-coredns.log" 2>&1 || fail "cannot create CoreDNS's RBAC" rbac-coredns
  KUBELET_HEALTHZ_PORT=$(free_port) PROXY_HEALTHZ_PORT=$(free_port) DNS_READY_PORT=$(free_port)
  node_render kubelet.yaml "$nd/kubelet.yaml" NODE_DIR="$nd" NODE_IP="$NODE_IP" PKI="$PKI" \
    KUBELET_PORT="$(free_port)" KUBELET_HEALTHZ_PORT="$KUBELET_HEALTHZ_PORT"
  node_render kube-proxy.yaml "$nd/kube-proxy.yaml" NODE_DIR="$nd" NODE_IP="$NODE_IP" NODE_NAME="$NODE_NAME" \
    POD_CIDR="$NODE_POD_CIDR" PROXY_HEALTHZ_PORT="$PROXY_HEALTHZ_PORT" PROXY_METRICS_PORT="$(free_port)"
  node_render Corefile "$nd/Corefile" NODE_DIR="$nd" NODE_IP="$NODE_IP" \
    DNS_HEALTH_PORT="$(free_port)" DNS_READY_PORT="$DNS_READY_PORT"
  local bin; bin=$(component_dir node)/bin
  start kubelet "$bin/kubelet" --config="$nd/kubelet.yaml" --kubeconfig="$nd/kubelet.kubeconfig" \
    --root-dir="$nd/kubelet" --cert-dir="$nd/kubelet-pki" --hostname-override="$NODE_NAME" \
    --node-ip="$NODE_IP" --node-labels=type=real --v=1
  node_drop_unrouted
  start kube-proxy "$bin/kube-proxy" --config="$nd/kube-proxy.yaml" --v=1
  start coredns "$(component_dir coredns)/bin/coredns" -conf "$nd/Corefile"
}

# node_drop_unrouted: drops what pods send to a ClusterIP that kube-proxy has not
# rewritten (a Service it has not synced yet, or none), as a cluster's network
# does: nothing there answers. This machine's own network answers any TCP
# connection it is sent (port 8081: HTTP 404, no body), so without the rule a
# client that connects to a new Service before kube-proxy's sync keeps a live
# keep-alive connection to the wrong peer (a controller's Flink calls all 404).
# Table mangle, chain FORWARD: after kube-proxy's DNAT (nat PREROUTING), before
# the filter rules of CNI and kube-proxy. The chain's CNI- prefix lets
# node_clean_host remove it.
node_drop_unrouted() {
  local m=(iptables -w -t mangle) jump=(FORWARD -s "$NODE_POD_CIDR" -d "$NODE_SERVICE_CIDR" -j CNI-TESTENV-UNROUTED)
  # idempotent: a crashed environment may have left them
  { { "${m[@]}" -N CNI-TESTENV-UNROUTED || "${m[@]}" -F CNI-TESTENV-UNROUTED; } &&
    "${m[@]}" -A CNI-TESTENV-UNROUTED -j DROP &&
    { "${m[@]}" -C "${jump[@]}" 2>/dev/null || "${m[@]}" -A "${jump[@]}"; }
  } >"$LOGS/iptables-unrouted.log" 2>&1 || fail "cannot add the rule dropping unrouted ClusterIP traffic" iptables-unrouted
}

# node_ready: true when the real node's Ready condition is True.
node_ready() {
  [ "$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# node_wait: (up.sh) images imported, kubelet's node Ready, kube-proxy synced,
# CoreDNS serving (its ready plugin: the kubernetes plugin has synced).
node_wait() {
  wait "$NODE_IMPORT_PID" || fail "image import failed" images
  wait_for kubelet 60 node_ready
  wait_for kube-proxy 30 curl -sf "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz"
  wait_for coredns 30 curl -sf "http://127.0.0.1:$DNS_READY_PORT/ready"
}

# node_teardown KUBECTL KUBECONFIG: stops this environment's real node (if it
# has one) and removes its host traces: pods deleted through the API while the
# kubelet runs, kubelet/kube-proxy/CoreDNS stopped, kube-proxy --cleanup, the
# containers left killed through containerd, their shims stopped by the pids
# containerd wrote, containerd stopped, then node_clean_host.  Every other
# process of the environment is left to the caller.  Prints what it did.
node_teardown() (
  # best effort: every step runs whatever the previous one did
  set +e +o pipefail
  local kctl=("$1" --kubeconfig="$2" --request-timeout=10s) nd=$TESTENV_DIR/node
  [ -d "$nd" ] || return 0
  if [ -n "$(pids_running "$PIDS" | grep '^kubelet ')" ]; then
    "${kctl[@]}" cordon "$NODE_NAME" >/dev/null 2>&1 || true
    "${kctl[@]}" delete pods -A --field-selector "spec.nodeName=$NODE_NAME" \
      --grace-period=2 --timeout=60s 2>&1 | tail -n 3 | sed 's/^/testenv: /' || true
  fi
  pids_stop "$PIDS" coredns kube-proxy kubelet
  "$(component_dir node)/bin/kube-proxy" --cleanup >/dev/null 2>&1 || true
  if [ -n "$(pids_running "$PIDS" | grep '^containerd ')" ]; then
    local c
    for c in $(ctr_node tasks ls -q 2>/dev/null); do
      ctr_node tasks kill -s KILL "$c" >/dev/null 2>&1 || true
    done
    for c in $(ctr_node containers ls -q 2>/dev/null); do
      ctr_node tasks rm -f "$c" >/dev/null 2>&1 || true
      ctr_node containers rm "$c" >/dev/null 2>&1 || true
      echo "testenv: container $c removed"
    done
  fi
  node_stop_shims
  pids_stop "$PIDS" containerd
  if [ "$(cat "$NODE_MARK/owner" 2>/dev/null)" = "$TESTENV_DIR" ]; then
    node_clean_host
  else
    echo "testenv: the host's real-node mark is not ours: its host traces are left to its owner"
  fi
)

# node_stop_shims: stops the containerd shims of this node: the pids in
# containerd's shim.pid files, each only while it is a shim serving our socket.
node_stop_shims() (
  # best effort: every step runs whatever the previous one did
  set +e +o pipefail
  local f pid sock=$TESTENV_DIR/node/containerd.sock n
  for f in "$TESTENV_DIR"/node/containerd/state/io.containerd.runtime.v2.task/*/*/shim.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    tr "\\0" " " 2>/dev/null <"/proc/$pid/cmdline" | grep -q -- "-address $sock" || continue
    kill -TERM "$pid" 2>/dev/null || continue
    n=0; while [ -d "/proc/$pid" ] && [ "$n" -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    echo "testenv: containerd shim (pid $pid) stopped"
  done
)

# node_clean_host: removes the host traces of a stopped real node: iptables
# chains KUBE-*/CNI-* and the rules jumping to them (v4 and v6), the bridge,
# the saved sysctls restored, kubepods cgroups, mounts under $TESTENV_DIR/node
# and the fixed host paths, the host directories up created, the mark.
node_clean_host() (
  # best effort: every step runs whatever the previous one did
  set +e +o pipefail
  local ipt t chain mp d s v
  for ipt in iptables ip6tables; do
    for t in filter nat mangle raw; do
      # the jumps to them from the other chains, by rule number, highest first (a rule's own
      # text does not survive the shell: CNI's comments hold escaped quotes)
      for chain in $("$ipt" -w -t "$t" -S 2>/dev/null | awk '$1 == "-A" { print $2 }' | sort -u); do
        case $chain in KUBE-* | CNI-*) continue ;; esac
        "$ipt" -w -t "$t" -L "$chain" -n --line-numbers 2>/dev/null |
          awk 'NR > 2 && $2 ~ /^(KUBE|CNI)-/ { print $1 }' | sort -rn | while read -r n; do
            "$ipt" -w -t "$t" -D "$chain" "$n" 2>/dev/null || true
          done
      done
      for chain in $("$ipt-save" -t "$t" 2>/dev/null | sed -n 's/^:\(\(KUBE\|CNI\)-[^ ]*\) .*/\1/p'); do
        "$ipt" -w -t "$t" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$ipt-save" -t "$t" 2>/dev/null | sed -n 's/^:\(\(KUBE\|CNI\)-[^ ]*\) .*/\1/p'); do
        "$ipt" -w -t "$t" -X "$chain" 2>/dev/null || true
      done
    done
  done
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
  if [ -f "$NODE_MARK/sysctls" ]; then
    while read -r s v; do [ -z "$v" ] || sysctl -qw "$s=$v" || true; done <"$NODE_MARK/sysctls"
  fi
  for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  # deepest first; lazily when busy
  node_mounts | sort -r | while read -r mp; do umount "$mp" 2>/dev/null || umount -l "$mp" || true; done
  rm -f /run/netns/cni-*
  for d in "${NODE_HOST_DIRS[@]}"; do
    grep -qxF "$d" "$NODE_MARK/existed" 2>/dev/null || rm -rf "$d"
  done
  rm -rf "$NODE_MARK"
)

# node_mounts [DIR]: mount points the real node leaves (under DIR, default
# $TESTENV_DIR/node, and the fixed host paths), one per line.
node_mounts() {
  local dir=${1:-$TESTENV_DIR/node}
  awk '{print $5}' /proc/self/mountinfo | grep -E "^($dir/|/run/containerd/|/var/lib/kubelet|/run/netns/cni-)" || true
}
