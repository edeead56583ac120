#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The container images of the test environment's real node, as `docker save`
# archives for `ctr -n k8s.io images import` (no registry on these machines).
# Usage: tests/env/images.sh controller|flink OUT.tar [REF...]
#   controller  flink-controller from this source tree, the recipe of the
#               repo's Dockerfile: its final stage's runtime packages (on a
#               cached debootstrap rootfs, build.sh component
#               image-controller-base), `make all install` with the Dockerfile's
#               DATADIR into that rootfs, its USER, ENTRYPOINT and CMD.  Tag
#               $CONTROLLER_IMAGE (localhost/flink-controller:testenv) plus REF...
#               Compiled in build/image-controller/ (make BUILD=...), never in
#               build/: the image's objects have another DATADIR compiled in.
#               Not cached by build.sh (it depends on the source); make
#               rebuilds only what changed, packing takes ~10 s.
#   flink       the cached flink-image component (build.sh flink-image), copied;
#               tags $FLINK_IMAGE_TAGS (REF... not allowed: the tags are baked in)
# Output: OUT.tar; progress on stderr.  Needs root (debootstrap, root-owned
# files in the layer), debootstrap, jq, and the build tools of `make`.
# Exit: 0 written; 1 a build failed; 2 usage.
#
# Why not buildah/podman build of the Dockerfile: Debian bookworm has buildah
# 1.28, but the Dockerfile starts `FROM debian:bookworm-slim`, which needs a
# registry; a local base would have to be debootstrapped first anyway, and the
# build stage's RUN steps (apt-get, make deps-build) would then run in
# containers under runc here (this VM's root lacks CAP_SYS_RESOURCE, see the
# real-node notes) to redo what the host has already installed.  debootstrap
# + make + mkimage.sh (tar, jq) make the same image with fewer moving parts.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTENV_SRC/../.." && pwd)

[ $# -ge 2 ] || { sed -n '4,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
what=$1 out=$2; shift 2
mkdir -p "$(dirname "$out")"

case $what in
  flink)
    [ $# -eq 0 ] || { echo "images.sh: flink takes no REF (tags: $FLINK_IMAGE_TAGS)" >&2; exit 2; }
    "$TESTENV_SRC/build.sh" flink-image || exit 1
    cp "$(component_dir flink-image)/image.tar" "$out.tmp"
    mv "$out.tmp" "$out"
    ;;
  controller)
    "$TESTENV_SRC/build.sh" image-controller-base || exit 1
    datadir=$(sed -n 's/^ARG DATADIR=//p' "$TESTENV_DOCKERFILE" | tail -n 1)
    [ -n "$datadir" ] || { echo "images.sh: no ARG DATADIR= in the Dockerfile" >&2; exit 1; }
    bdir=$ROOT/build/image-controller
    # one make at a time in that folder (fd 7 held until exit)
    mkdir -p "$bdir"; exec 7>"$bdir/.lock"; flock 7
    log "controller: make in $bdir (DATADIR=$datadir)"
    w=$(mktemp -d "$(dirname "$out")/.images.XXXXXX")
    trap 'rm -rf "$w"' EXIT
    cp -a "$(component_dir image-controller-base)/rootfs" "$w/rootfs"
    mk=(make -C "$ROOT" --no-print-directory BUILD="$bdir" DATADIR="$datadir")
    "${mk[@]}" -j2 all >&2 || exit 1
    "${mk[@]}" install PREFIX=/usr/local DESTDIR="$w/rootfs" >&2 || exit 1
    user=$(dockerfile_final USER) ep=$(dockerfile_final ENTRYPOINT) cmd=$(dockerfile_final CMD)
    tags=$CONTROLLER_IMAGE
    for r in "$@"; do tags+=",$r"; done
    log "controller: packing $tags (user ${user:-root}, entrypoint $ep)"
    "$TESTENV_SRC/mkimage.sh" ${user:+--user "$user"} "$w/rootfs" "$tags" "$out" "${ep:-null}" "${cmd:-null}"
    ;;
  *) echo "images.sh: unknown image $what (controller|flink)" >&2; exit 2 ;;
esac
log "$what: $out ($(du -m "$out" | cut -f1) MB)"
