#!/usr/bin/env bash
# Builds (or finds cached) every binary and jar the test environment runs.
# Usage: tests/env/build.sh [k8s|etcd|kwok|flink|node|coredns|pause|image-base|
#          flink-image|image-controller-base|flink2|flink2-image|helm]...
#   (default: all; node/coredns/pause are the real node's kubelet +
#   kube-proxy, cluster DNS and sandbox image; the image-* and flink-image
#   components are its other images' parts, see image/components.sh; flink2 and
#   flink2-image are the second Flink version, FLINK2_VERSION, as an image of the real node;
#   helm is the Helm CLI the chart's tests use, deploy/helm/)
# Output: ~/.cache/flink-controller/testenv/<component>-<hash>/ with a .done
# marker; an existing .done folder is reused untouched (a warm build takes
# well under a second).  Needs go (>= 1.24) for k8s/etcd/kwok, java 17 + mvn
# for flink, root + debootstrap + jq for the images image-base,
# image-controller-base and flink-image (tests/env/image/components.sh).  Exit
# status non-zero when a component fails to build; the log of each build is in
# <cache>/<component>-<hash>.log.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Go: static, stripped, reproducible-ish; 2 parallel jobs (a 2-core machine
# shared with other builds).
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
GO_BUILD=(go build -p 2 -trimpath)

# The k8s.io/* staging modules of Kubernetes 1.34 (kubernetes go.mod replace
# list).  Each is replaced by its published tag because k8s.io/kubernetes
# requires them at v0.0.0, which the proxy does not serve.
K8S_STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime
  client-go cloud-provider cluster-bootstrap code-generator component-base
  component-helpers controller-manager cri-api cri-client csi-translation-lib
  dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
  kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver sample-cli-plugin
  sample-controller)

# go_wrapper DIR MODULE VERSION PKG...: writes a wrapper module in DIR that
# requires MODULE@VERSION and blank-imports PKG... under a never-set build tag
# (so `go mod tidy` keeps them).  Extra go.mod text comes on stdin.
go_wrapper() {
  local dir=$1 mod=$2 ver=$3; shift 3
  mkdir -p "$dir"
  {
    echo "module testenv.local/wrapper"
    echo
    echo "go 1.24.0"
    echo
    echo "require $mod $ver"
    cat
  } >"$dir/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    local p; for p in "$@"; do echo "	_ \"$p\""; done
    echo ")"
  } >"$dir/tools.go"
}

# k8s_cmds OUT CMD...: builds k8s.io/kubernetes/cmd/CMD... of the pinned
# release into OUT/bin through a wrapper module (staging modules replaced by
# their tags, version stamped as a release build would).
k8s_cmds() {
  local out=$1 src=$1/src v=v$K8S_VERSION sv=v$K8S_STAGING_VERSION m; shift
  local pkgs=() c; for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  {
    echo
    echo "godebug default=go1.24"
    echo
    echo "replace ("
    for m in "${K8S_STAGING[@]}"; do echo "	k8s.io/$m => k8s.io/$m $sv"; done
    echo ")"
  } | go_wrapper "$src" k8s.io/kubernetes "$v" "${pkgs[@]}"
  local major=${K8S_VERSION%%.*} minor=${K8S_VERSION#*.}; minor=${minor%%.*}
  local x="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    x+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$src" && go mod tidy && "${GO_BUILD[@]}" -ldflags="-s -w$x" -o "$out/bin/" "${pkgs[@]}")
}

build_k8s() { k8s_cmds "$1" kube-apiserver kube-controller-manager kube-scheduler kubectl; }
# the real node's kubelet and kube-proxy (same release as the control plane)
build_node() { k8s_cmds "$1" kubelet kube-proxy; }

# CoreDNS: our main (tests/env/node/coredns/main.go, only the plugins the
# real node's Corefile uses) in a wrapper module requiring the pinned release.
build_coredns() {
  local out=$1 src=$1/src
  go_wrapper "$src" github.com/coredns/coredns "v$COREDNS_VERSION" github.com/coredns/coredns/coremain </dev/null
  mkdir -p "$src/cmd/coredns"
  cp "$TESTENV_SRC/node/coredns/main.go" "$src/cmd/coredns/"
  (cd "$src" && go mod tidy && "${GO_BUILD[@]}" -ldflags="-s -w" -o "$out/bin/coredns" ./cmd/coredns)
}

# pause: the sandbox image of the real node's pods (localhost/pause:testenv):
# our static pause binary (tests/env/node/pause/) plus /probe, a test tool
# (tests/env/node/probe/), packed by mkimage.sh into OUT/image.tar.
build_pause() {
  local out=$1 src=$1/src
  mkdir -p "$src/rootfs" "$src/pause" "$src/probe"
  printf 'module testenv.local/pause\n\ngo 1.24.0\n' >"$src/go.mod"
  cp "$TESTENV_SRC/node/pause/main.go" "$src/pause/"
  cp "$TESTENV_SRC/node/probe/main.go" "$src/probe/"
  (cd "$src" && "${GO_BUILD[@]}" -ldflags="-s -w" -o rootfs/ ./pause ./probe)
  "$TESTENV_SRC/mkimage.sh" "$src/rootfs" "$PAUSE_IMAGE" "$out/image.tar" '["/pause"]'
}

build_etcd() {
  local out=$1 src=$1/src
  go_wrapper "$src" go.etcd.io/etcd/server/v3 "v$ETCD_VERSION" go.etcd.io/etcd/server/v3 </dev/null
  (cd "$src" && go mod tidy && "${GO_BUILD[@]}" -ldflags="-s -w" -o "$out/bin/etcd" go.etcd.io/etcd/server/v3)
}

build_kwok() {
  local out=$1 src=$1/src
  go_wrapper "$src" sigs.k8s.io/kwok "v$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok </dev/null
  (cd "$src" && go mod tidy && "${GO_BUILD[@]}" -ldflags="-s -w" -o "$out/bin/kwok" sigs.k8s.io/kwok/cmd/kwok)
}

# Helm (HELM_VERSION): the CLI of tests/helm_spec.lua and the integration case `helm`, built
# like `go install helm.sh/helm/v3/cmd/helm@vX` in a wrapper module; the version stamped as
# the release's (`helm version`).
build_helm() {
  local out=$1 src=$1/src
  go_wrapper "$src" helm.sh/helm/v3 "v$HELM_VERSION" helm.sh/helm/v3/cmd/helm </dev/null
  (cd "$src" && go mod tidy && "${GO_BUILD[@]}" \
    -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION" \
    -o "$out/bin/helm" helm.sh/helm/v3/cmd/helm)
}

# flink_jars OUT FLINK_VERSION LOG4J_VERSION [TICKER_JAVA]: Flink's jars resolved by our pom
# into OUT/lib/ (the classpath is lib/*.jar), and the test jobs under jobs/ built against
# that version into OUT/jobs.jar, with TICKER_JAVA in place of jobs/'s Ticker.java when given
# (Flink 2's API differs: jobs/flink2/).
flink_jars() {
  local out=$1 mvnq=(mvn -B -q -Dflink.version="$2" -Dlog4j.version="$3")
  mkdir -p "$out/lib"
  "${mvnq[@]}" -f "$TESTENV_SRC/flink/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$out/lib" -DincludeScope=runtime
  rm -rf "$out/jobs-build"; mkdir -p "$out/jobs-build"
  cp -r "$TESTENV_SRC/jobs/pom.xml" "$TESTENV_SRC/jobs/src" "$out/jobs-build/"
  if [ -n "${4:-}" ]; then cp "$4" "$out/jobs-build/src/main/java/testenv/Ticker.java"; fi
  "${mvnq[@]}" -f "$out/jobs-build/pom.xml" package
  cp "$out"/jobs-build/target/testenv-jobs.jar "$out/jobs.jar"
  rm -rf "$out/jobs-build"
}

# Flink 1.x (FLINK_VERSION): the session cluster of up.sh and the flink-image component.
build_flink() { flink_jars "$1" "$FLINK_VERSION" "$LOG4J_VERSION"; }
# Flink 2.x (FLINK2_VERSION): the second Flink of the real node (component flink2-image).
build_flink2() {
  flink_jars "$1" "$FLINK2_VERSION" "$FLINK2_LOG4J_VERSION" "$TESTENV_SRC/jobs/flink2/testenv/Ticker.java"
}

build_one() {
  local name=$1 dir; dir=$(component_dir "$name")
  if [ -f "$dir/.done" ]; then log "$name: cached in $dir"; return 0; fi
  local tool; case $name in flink|flink2) tool=mvn ;; image-*base) tool=debootstrap ;; flink-image|flink2-image) tool=jq ;; *) tool=go ;; esac
  command -v "$tool" >/dev/null ||
    { log "$name: toolchain missing"; return 1; }
  local tmp=$dir.tmp.$$ start=$SECONDS
  mkdir -p "$tmp"
  log "$name: building into $dir (log $dir.log)"
  local rc=0
  # a subshell outside any condition, so set -e stops at the first failure
  ( set -e; "build_$name" "$tmp" ) >"$dir.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    log "$name: FAILED after $((SECONDS - start))s; last lines of $dir.log:"
    tail -n 20 "$dir.log" >&2; rm -rf "$tmp"; return 1
  fi
  rm -rf "$tmp/src"
  echo "$((SECONDS - start))" >"$tmp/.build-seconds"
  date -u +%FT%TZ >"$tmp/.done"
  rm -rf "$dir"; mv "$tmp" "$dir"
  # older builds of this component (earlier pins) are not used any more
  local old; for old in "$TESTENV_CACHE/$name"-*; do
    [ "$old" = "$dir" ] || [ "$old" = "$dir.log" ] || rm -rf "$old"
  done
  log "$name: built in $((SECONDS - start))s"
}

# one build at a time per cache (two `make test` runs in parallel: the second
# waits, then finds the first one's results); then drop half-built leftovers
mkdir -p "$TESTENV_CACHE"
exec 8>"$TESTENV_CACHE/.build.lock"
flock 8
rm -rf "$TESTENV_CACHE"/*.tmp.*

comps=("$@"); [ ${#comps[@]} -gt 0 ] || comps=(etcd kwok k8s flink node coredns pause image-base flink-image image-controller-base flink2 flink2-image helm)
rc=0
for c in "${comps[@]}"; do build_one "$c" || rc=1; done
exit $rc
