#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds (or finds cached) every binary and jar the test environment runs.
# Usage: tests/env/build.sh [k8s|etcd|kwok|flink|node|coredns|pause|image-base|
#          flink-image|image-controller-base|flink2|flink2-image|helm|k8s-newest]...
#   (default: all; node/coredns/pause are the real node's kubelet +
#   kube-proxy, cluster DNS and sandbox image; the image-* and flink-image
#   components are its other images' parts, see image/components.sh; flink2 and
#   flink2-image are the second Flink version, FLINK2_VERSION, as an image of the real node;
#   helm is the Helm CLI the chart's tests use, deploy/helm/; k8s-newest is the control plane
#   of K8S_NEWEST_VERSION, the newest Kubernetes claimed, for tests/compat/run.sh)
# Output: ~/.cache/flink-controller/testenv/<component>-<hash>/ with a .done
# marker; an existing .done folder is reused untouched (a warm build takes
# well under a second).  Needs go (>= 1.26: k8s-newest's go.mod says go 1.26.0) for the Go components, java 17 + mvn
# for flink, root + debootstrap + jq for the images image-base,
# image-controller-base and flink-image (tests/env/image/components.sh).  Exit
# status non-zero when a component fails to build; the log of each build is in
# <cache>/<component>-<hash>.log.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
BUILD_SH=$(readlink -f "$0")

# Go: static, stripped, reproducible-ish; 2 parallel jobs (a 2-core machine
# shared with other builds).
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
GO_BUILD=(go build -p 2 -trimpath)

# go_wrapper DIR MODULE VERSION PKG...: writes a wrapper module in DIR that
# requires MODULE@VERSION and blank-imports PKG... under a never-set build tag
# (so `go mod tidy` keeps them).  Extra go.mod text comes on stdin; its go line is
# $WRAPPER_GO (default 1.24.0).
go_wrapper() {
  local dir=$1 mod=$2 ver=$3; shift 3
  mkdir -p "$dir"
  {
    echo "module testenv.local/wrapper"
    echo
    echo "go ${WRAPPER_GO:-1.24.0}"
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

# k8s_cmds OUT VERSION STAGING_VERSION CMD...: builds k8s.io/kubernetes/cmd/CMD... of release
# VERSION (e.g. 1.34.4) into OUT/bin through a wrapper module made of what that release's own
# go.mod says: its go line, its godebug default, and each staging module it replaces
# (k8s.io/X => ./staging/src/k8s.io/X) replaced by its published tag vSTAGING_VERSION, because
# k8s.io/kubernetes requires them at v0.0.0, which the proxy does not serve.  The version is
# stamped as a release build would.
k8s_cmds() {
  local out=$1 src=$1/src ver=$2 v=v$2 sv=v$3 gomod m; shift 3
  local pkgs=() c; for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  gomod=$(cd / && go mod download -json "k8s.io/kubernetes@$v" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [ -f "$gomod" ] || { echo "k8s_cmds: no go.mod of k8s.io/kubernetes@$v from the module proxy" >&2; return 1; }
  local gover godebug staging
  gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")
  godebug=$(sed -n 's/^godebug default=\(go[0-9.]*\)$/\1/p' "$gomod")
  staging=$(sed -n 's|^[[:space:]]*k8s.io/\([a-z0-9-]*\) => ./staging/src/k8s.io/\1$|\1|p' "$gomod")
  [ -n "$gover" ] && [ -n "$godebug" ] && [ -n "$staging" ] ||
    { echo "k8s_cmds: no go line, godebug default or staging modules in $gomod" >&2; return 1; }
  {
    echo
    echo "godebug default=$godebug"
    echo
    echo "replace ("
    for m in $staging; do echo "	k8s.io/$m => k8s.io/$m $sv"; done
    echo ")"
  } | WRAPPER_GO=$gover go_wrapper "$src" k8s.io/kubernetes "$v" "${pkgs[@]}"
  local major=${ver%%.*} minor=${ver#*.}; minor=${minor%%.*}
  local x="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    x+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$src" && go mod tidy && "${GO_BUILD[@]}" -ldflags="-s -w$x" -o "$out/bin/" "${pkgs[@]}")
}

K8S_CONTROL_PLANE=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
build_k8s() { k8s_cmds "$1" "$K8S_VERSION" "$K8S_STAGING_VERSION" "${K8S_CONTROL_PLANE[@]}"; }
# the control plane of the newest release we claim (docs/versions.md; tests/compat/run.sh)
build_k8s-newest() { k8s_cmds "$1" "$K8S_NEWEST_VERSION" "$K8S_NEWEST_STAGING_VERSION" "${K8S_CONTROL_PLANE[@]}"; }
# the real node's kubelet and kube-proxy (same release as the control plane)
build_node() { k8s_cmds "$1" "$K8S_VERSION" "$K8S_STAGING_VERSION" kubelet kube-proxy; }

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

# flink_jars OUT FLINK_VERSION LOG4J_VERSION [TICKER_JAVA [MVN_ARG...]]: Flink's jars resolved
# by our pom (with MVN_ARG..., e.g. -Dkubernetes-ha for its profile of Flink's Kubernetes HA
# services) into OUT/lib/ (the classpath is lib/*.jar), and the test jobs under jobs/ built
# against that version into OUT/jobs.jar, with TICKER_JAVA in place of jobs/'s Ticker.java
# when not empty (Flink 2's API differs: jobs/flink2/).
flink_jars() {
  local out=$1 mvnq=(mvn -B -q -Dflink.version="$2" -Dlog4j.version="$3") ticker=${4:-}
  shift 3; shift $(($# > 0 ? 1 : 0))
  mkdir -p "$out/lib"
  "${mvnq[@]}" "$@" -f "$TESTENV_SRC/flink/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$out/lib" -DincludeScope=runtime
  rm -rf "$out/jobs-build"; mkdir -p "$out/jobs-build"
  cp -r "$TESTENV_SRC/jobs/pom.xml" "$TESTENV_SRC/jobs/src" "$out/jobs-build/"
  if [ -n "$ticker" ]; then cp "$ticker" "$out/jobs-build/src/main/java/testenv/Ticker.java"; fi
  "${mvnq[@]}" -f "$out/jobs-build/pom.xml" package
  cp "$out"/jobs-build/target/testenv-jobs.jar "$out/jobs.jar"
  rm -rf "$out/jobs-build"
}

# Flink 1.x (FLINK_VERSION): the session cluster of up.sh and the flink-image component.
build_flink() { flink_jars "$1" "$FLINK_VERSION" "$LOG4J_VERSION"; }
# Flink 2.x (FLINK2_VERSION): the second Flink of the real node (component flink2-image), with
# Flink's Kubernetes HA services (the pom's profile kubernetes-ha).
build_flink2() {
  flink_jars "$1" "$FLINK2_VERSION" "$FLINK2_LOG4J_VERSION" "$TESTENV_SRC/jobs/flink2/testenv/Ticker.java" \
    -Dkubernetes-ha
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
  # a process of its own (build.sh --inner): bash ignores set -e in a function or subshell whose
  # status is tested (build_one's caller tests it with ||), so a `( set -e; ... ) || rc=$?` here
  # went on past a failed step and marked a half-built component done
  "$BASH" "$BUILD_SH" --inner "$name" "$tmp" >"$dir.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    log "$name: FAILED after $((SECONDS - start))s; last lines of $dir.log:"
    tail -n 20 "$dir.log" >&2; rm -rf "$tmp"; return 1
  fi
  rm -rf "$tmp/src"
  echo "$((SECONDS - start))" >"$tmp/.build-seconds"
  date -u +%FT%TZ >"$tmp/.done"
  rm -rf "$dir"; mv "$tmp" "$dir"
  # older builds of this component (earlier pins) are not used any more: <name>-<12 hex>[.log]
  # only, not another component whose name starts with this one's (k8s-newest for k8s)
  local old rest; for old in "$TESTENV_CACHE/$name"-*; do
    rest=${old#"$TESTENV_CACHE/$name"-}; rest=${rest%.log}
    [[ $rest =~ ^[0-9a-f]{12}$ ]] || continue
    [ "$old" = "$dir" ] || [ "$old" = "$dir.log" ] || rm -rf "$old"
  done
  log "$name: built in $((SECONDS - start))s"
}

# build.sh --inner NAME DIR: build_NAME into DIR at the top level, where set -e stops at the
# first failing step (build_one runs this; the parent holds the cache lock)
if [ "${1:-}" = --inner ]; then "build_$2" "$3"; exit 0; fi

# one build at a time per cache (two `make test` runs in parallel: the second
# waits, then finds the first one's results); then drop half-built leftovers
mkdir -p "$TESTENV_CACHE"
exec 8>"$TESTENV_CACHE/.build.lock"
flock 8
rm -rf "$TESTENV_CACHE"/*.tmp.*

comps=("$@"); [ ${#comps[@]} -gt 0 ] || comps=(etcd kwok k8s flink node coredns pause image-base flink-image image-controller-base flink2 flink2-image helm k8s-newest)
rc=0
for c in "${comps[@]}"; do build_one "$c" || rc=1; done
exit $rc
