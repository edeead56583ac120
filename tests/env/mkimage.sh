#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packs a root file system directory into a container image archive without a
# registry or a container builder: a single-layer `docker save` archive that
# `ctr -n k8s.io images import OUT.tar` (containerd) reads.
#
# Usage: tests/env/mkimage.sh [--user U] [--env K=V]... [--workdir D]
#          ROOTFS REF[,REF...] OUT.tar [ENTRYPOINT-JSON] [CMD-JSON]
#   ROOTFS           directory that becomes the image's / (owners kept numerically:
#                    run as root so that root-owned files stay root-owned)
#   REF[,REF...]     one or more comma-separated image references, written as
#                    the archive's RepoTags; give them fully qualified
#                    (docker.io/library/flink:1.20.5, localhost/x:tag), as a pod's
#                    `image: flink:1.20.5` is looked up as docker.io/library/flink:1.20.5
#   OUT.tar          the archive (written next to itself first, then renamed)
#   ENTRYPOINT-JSON, CMD-JSON   JSON arrays of strings (default: none)
#   --user U         the image's USER (uid[:gid]); default root
#   --env K=V        an Env entry (PATH=... replaces the default PATH); repeatable
#   --workdir D      WorkingDir; default /
# Archive layout: manifest.json ([{Config, RepoTags, Layers}]), <sha256>.json
# (the image config, rootfs.diff_ids = [sha256 of the layer]) and
# <diff_id>/layer.tar.  The layer is packed in name order without access or
# change times, the archive with fixed times and owners: the same ROOTFS gives
# the same bytes.
# Needs GNU tar, sha256sum and jq.  Exit: 0 written; 1 a tool failed; 2 usage
# (including an ENTRYPOINT/CMD that is not a JSON array of strings).
set -euo pipefail

usage() { sed -n '5,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
user="" workdir=/ envs=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
while [ $# -gt 0 ]; do
  case $1 in
    --user) user=${2:?}; shift 2 ;;
    --env) case ${2:?} in PATH=*) envs[0]=$2 ;; *) envs+=("$2") ;; esac; shift 2 ;;
    --workdir) workdir=${2:?}; shift 2 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] && [ $# -le 5 ] || usage
rootfs=$1 refs=$2 out=$3 ep=${4:-null} cmd=${5:-null}
[ -d "$rootfs" ] || { echo "mkimage: $rootfs is not a directory" >&2; exit 2; }
IFS=, read -r -a tags <<<"$refs"
[ ${#tags[@]} -gt 0 ] || usage
for j in "$ep" "$cmd"; do
  jq -en --argjson v "$j" '$v == null or ($v | type == "array" and all(type == "string"))' \
    >/dev/null 2>&1 || { echo "mkimage: not a JSON array of strings: $j" >&2; exit 2; }
done
case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac

w=$(mktemp -d "$(dirname "$out")/.mkimage.XXXXXX")
trap 'rm -rf "$w"' EXIT

tar --sort=name --numeric-owner --xattrs --xattrs-include='*' --format=posix \
  --pax-option=delete=atime,delete=ctime -C "$rootfs" -cf "$w/layer.tar" .
diff=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
mkdir "$w/$diff"; mv "$w/layer.tar" "$w/$diff/layer.tar"

# the image config (docker/OCI image config)
jq -cn --arg arch "$arch" --arg diff "sha256:$diff" --arg user "$user" --arg wd "$workdir" \
  --argjson ep "$ep" --argjson cmd "$cmd" '
  {architecture: $arch, os: "linux", created: "1970-01-01T00:00:00Z",
   config: ({Env: $ARGS.positional, Entrypoint: $ep, Cmd: $cmd, WorkingDir: $wd}
            + (if $user == "" then {} else {User: $user} end)),
   rootfs: {type: "layers", diff_ids: [$diff]},
   history: [{created: "1970-01-01T00:00:00Z", created_by: "tests/env/mkimage.sh"}]}' \
  --args "${envs[@]}" >"$w/config.json"
cfg=$(sha256sum "$w/config.json" | cut -d' ' -f1)
mv "$w/config.json" "$w/$cfg.json"
jq -cn --arg c "$cfg.json" --arg l "$diff/layer.tar" \
  '[{Config: $c, RepoTags: $ARGS.positional, Layers: [$l]}]' --args "${tags[@]}" >"$w/manifest.json"

tar --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$w" -cf "$out.tmp" \
  manifest.json "$cfg.json" "$diff"
mv "$out.tmp" "$out"
