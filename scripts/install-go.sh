#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes a Go >= 1.26 available as `go` on PATH, for the test environment only (Kubernetes, etcd,
# kwok, CoreDNS are built from pinned Go modules, tests/env/build.sh); the product ships no Go.
# Called by `make deps`. Nothing to do when a go >= 1.26 is already on PATH or in /usr/local/go.
# 1.26: the newest Kubernetes claimed (K8S_NEWEST_VERSION, tests/env/versions.env) says go 1.26.0
# in its go.mod (tests/env/build.sh builds with GOTOOLCHAIN=local); the 1.34 build keeps its
# go1.24 behaviour through its own godebug default.
# Otherwise (a fresh Debian bookworm): Debian's golang-go (1.19) downloads the pinned toolchain
# module golang.org/toolchain@v0.0.1-go$GO_TOOLCHAIN.linux-amd64 through the Go module proxy
# (the way the go command itself fetches toolchains), and /usr/local/bin/go links to it.
# Exit: 0 done; 1 the download failed (message on stderr).
set -euo pipefail
GO_TOOLCHAIN=${GO_TOOLCHAIN:-1.26.8}

# go_ok BIN: true when BIN runs and reports go1.N with N >= 26 (any major >= 2 too)
go_ok() {
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%[.a-z]*}
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 26 ]; }
}
if command -v go >/dev/null && go_ok "$(command -v go)"; then exit 0; fi
if [ -x /usr/local/go/bin/go ] && go_ok /usr/local/go/bin/go; then
  ln -sf /usr/local/go/bin/go /usr/local/bin/go
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then echo "install-go: only linux-amd64 is set up here" >&2; exit 1; fi
command -v go >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go
boot=$(command -v go)
mod=golang.org/toolchain@v0.0.1-go$GO_TOOLCHAIN.linux-amd64
dir=$(cd /tmp && GOFLAGS=-modcacherw "$boot" mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[ -n "$dir" ] && [ -f "$dir/bin/go" ] || { echo "install-go: could not download $mod" >&2; exit 1; }
# module zips keep no file modes: the toolchain's programs must be executable
chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
ln -sf "$dir/bin/go" /usr/local/bin/go
go_ok /usr/local/bin/go || { echo "install-go: $dir/bin/go does not run" >&2; exit 1; }
echo "install-go: go $GO_TOOLCHAIN at $dir"
