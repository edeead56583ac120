# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The container images of the real node that are built here (sourced by
# lib.sh; defines names and functions only).  No registry on these machines, so
# no `FROM`: every image is a Debian root file system from debootstrap
# (image/rootfs.sh) plus our files, packed by mkimage.sh into a `docker save`
# archive that up.sh imports into containerd (namespace k8s.io).
# build.sh components (build_NAME OUT, cached like the others):
#   image-base             OUT/rootfs: minbase + $IMAGE_BASE_PKGS (JRE 17, curl)
#   image-controller-base  OUT/rootfs: minbase + the runtime packages of the
#                          Dockerfile's final stage
#   flink-image            OUT/image.tar: image-base + Flink's jars (component flink),
#                          the test jobs and our entrypoint (image/flink/), tags $FLINK_IMAGE_TAGS
#   flink2-image           the same with Flink 2 (component flink2), tags $FLINK2_IMAGE_TAGS
# The controller image depends on the source tree, so images.sh builds it on
# demand (tag $CONTROLLER_IMAGE) instead of build.sh.
# (Why debootstrap and not buildah/podman: see images.sh.)

# `image: flink:1.20.5` in a pod is looked up as docker.io/library/flink:1.20.5;
# the minor-version tag serves `image: flink:1.20`.
FLINK_IMAGE_TAGS=docker.io/library/flink:$FLINK_VERSION,docker.io/library/flink:${FLINK_VERSION%.*}
FLINK2_IMAGE_TAGS=docker.io/library/flink:$FLINK2_VERSION,docker.io/library/flink:${FLINK2_VERSION%.*}
CONTROLLER_IMAGE=localhost/flink-controller:testenv
TESTENV_DOCKERFILE=$TESTENV_SRC/../../Dockerfile

# dockerfile_final KEYWORD: the arguments of the last KEYWORD instruction of
# the Dockerfile's final stage (continuation lines joined), e.g. USER, ENTRYPOINT.
dockerfile_final() {
  sed -e '/^[[:space:]]*#/d' -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' "$TESTENV_DOCKERFILE" |
    awk -v kw="$1" '/^FROM /{v = ""} $1 == kw {v = substr($0, length(kw) + 2)} END {print v}'
}

# controller_runtime_pkgs: the packages the final stage installs, comma-separated
controller_runtime_pkgs() {
  dockerfile_final RUN | grep -o 'apt-get install[^&]*' | tr ' ' '\n' |
    grep -v -e '^-' -e '^apt-get$' -e '^install$' -e '^$' | paste -sd, -
}

build_image-base() {
  "$TESTENV_SRC/image/rootfs.sh" "$IMAGE_DEBIAN_SUITE" "$IMAGE_BASE_PKGS" "$1/rootfs"
}

build_image-controller-base() {
  local pkgs; pkgs=$(controller_runtime_pkgs)
  [ -n "$pkgs" ] || { echo "no apt-get install in the Dockerfile's final stage" >&2; return 1; }
  "$TESTENV_SRC/image/rootfs.sh" "$IMAGE_DEBIAN_SUITE" "$pkgs" "$1/rootfs"
}

# flink_image OUT FLINK_COMPONENT TAGS: a Flink image, /opt/flink/{lib,usrlib,bin,conf,image,examples}
# on image-base with the jars and test jobs of FLINK_COMPONENT (flink or flink2), the official
# image's entrypoint contract (image/flink/docker-entrypoint.sh), tagged TAGS (comma-separated).
flink_image() {
  local out=$1 r=$1/rootfs flink base d
  flink=$(component_dir "$2") base=$(component_dir image-base)
  for d in "$2" image-base; do
    [ -f "$(component_dir "$d")/.done" ] || build_one "$d"
  done
  cp -a "$base/rootfs" "$r"
  install -d "$r"/opt/flink/{bin,lib,usrlib,conf,image,log}
  cp "$flink"/lib/*.jar "$r/opt/flink/lib/"
  cp "$flink/jobs.jar" "$r/opt/flink/usrlib/testenv-jobs.jar"
  # where the official image has the streaming WordCount (deploy/examples/quickstart.yaml runs
  # it): the test jobs' jar, whose Main-Class is testenv.WordCount, a job that ends by itself as
  # Flink's does (the examples are not on Maven Central)
  install -D -m 0644 "$flink/jobs.jar" "$r/opt/flink/examples/streaming/WordCount.jar"
  local src=$TESTENV_SRC/image/flink
  install -m 0755 "$src/docker-entrypoint.sh" "$r/docker-entrypoint.sh"
  install -m 0755 "$src/flink" "$r/opt/flink/bin/flink"
  install -m 0644 "$src/flink-env.sh" "$r/opt/flink/bin/"
  install -m 0644 "$src/config.yaml" "$r/opt/flink/conf/"
  install -m 0644 "$src/log4j-cli.properties" "$TESTENV_SRC/testdata/log4j-console.properties" \
    "$r/opt/flink/image/"
  "$TESTENV_SRC/mkimage.sh" --workdir /opt/flink --env FLINK_HOME=/opt/flink \
    --env PATH=/opt/flink/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    "$r" "$3" "$out/image.tar" '["/docker-entrypoint.sh"]'
  rm -rf "$r"
}

build_flink-image() { flink_image "$1" flink "$FLINK_IMAGE_TAGS"; }
build_flink2-image() { flink_image "$1" flink2 "$FLINK2_IMAGE_TAGS"; }
