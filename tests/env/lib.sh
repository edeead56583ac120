# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared helpers for tests/env/*.sh (sourced, not run).
# Defines TESTENV_SRC (this folder), TESTENV_CACHE (binary cache root) and
# component_dir NAME, which prints the cache folder of one component:
#   ~/.cache/flink-controller/testenv/<name>-<first 12 hex of sha256(pins)>
# where pins are the versions.env values that component is built from, plus
# the build recipe revision, so a pin change means a new folder (a rebuild).
TESTENV_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
. "$TESTENV_SRC/versions.env"
TESTENV_CACHE=${TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flink-controller/testenv}
# Bump when a build recipe changes in a way that needs a rebuild.
TESTENV_RECIPE_REV=1
# The real node's sandbox image (component pause), imported into its containerd.
PAUSE_IMAGE=localhost/pause:testenv

component_pins() {
  case $1 in
    k8s)   echo "k8s $K8S_VERSION $K8S_STAGING_VERSION" ;;
    k8s-newest) echo "k8s-newest $K8S_NEWEST_VERSION $K8S_NEWEST_STAGING_VERSION" ;;
    etcd)  echo "etcd $ETCD_VERSION" ;;
    kwok)  echo "kwok $KWOK_VERSION" ;;
    helm)  echo "helm $HELM_VERSION" ;;
    node)  echo "node $K8S_VERSION $K8S_STAGING_VERSION" ;;
    coredns) echo "coredns $COREDNS_VERSION $(sha256sum <"$TESTENV_SRC/node/coredns/main.go")" ;;
    pause) echo "pause $PAUSE_IMAGE $(cat "$TESTENV_SRC"/node/{pause,probe}/main.go "$TESTENV_SRC/mkimage.sh" | sha256sum)" ;;
    flink) echo "flink $FLINK_VERSION $LOG4J_VERSION $(cat "$TESTENV_SRC/flink/pom.xml" "$TESTENV_SRC/jobs/pom.xml" "$TESTENV_SRC"/jobs/src/main/java/*/*.java 2>/dev/null | sha256sum)" ;;
    flink2) echo "flink2 $FLINK2_VERSION $FLINK2_LOG4J_VERSION $(cat "$TESTENV_SRC/flink/pom.xml" "$TESTENV_SRC/jobs/pom.xml" "$TESTENV_SRC"/jobs/src/main/java/*/*.java "$TESTENV_SRC"/jobs/flink2/*/*.java 2>/dev/null | sha256sum)" ;;
    image-base) echo "image-base $IMAGE_DEBIAN_SUITE $IMAGE_BASE_PKGS $(sha256sum <"$TESTENV_SRC/image/rootfs.sh")" ;;
    image-controller-base) echo "image-controller-base $IMAGE_DEBIAN_SUITE $(controller_runtime_pkgs) $(sha256sum <"$TESTENV_SRC/image/rootfs.sh")" ;;
    flink-image) echo "flink-image $FLINK_IMAGE_TAGS $(basename "$(component_dir flink)") $(flink_image_pins)" ;;
    flink2-image) echo "flink2-image $FLINK2_IMAGE_TAGS $(basename "$(component_dir flink2)") $(flink_image_pins)" ;;
    *) echo "unknown component $1" >&2; return 1 ;;
  esac
}

# what both Flink images are built from besides their jars: the base and our files
flink_image_pins() {
  echo "$(basename "$(component_dir image-base)") $(cat "$TESTENV_SRC"/image/flink/* "$TESTENV_SRC/image/components.sh" "$TESTENV_SRC/testdata/log4j-console.properties" "$TESTENV_SRC/mkimage.sh" | sha256sum)"
}

component_dir() {
  local h
  h=$(printf '%s rev%s\n' "$(component_pins "$1")" "$TESTENV_RECIPE_REV" | sha256sum | cut -c1-12)
  echo "$TESTENV_CACHE/$1-$h"
}

# the images built here (components image-base, image-controller-base, flink-image)
# shellcheck source=image/components.sh
. "$TESTENV_SRC/image/components.sh"

# log MSG...: progress on stderr with a UTC timestamp.
log() { printf '[testenv %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
