# syntax=docker/dockerfile:1
# SPDX-License-Identifier: Apache-2.0
# flink-controller image:  make image  (docker build or buildah bud of this file, tagged
# flink-controller:$(VERSION), the release and commit passed as build arguments), or by hand:
#   docker build --build-arg COMMIT=$(git rev-parse --short=12 HEAD) -t flink-controller:0.2.0 .
#
# Stage 1 builds with exactly the Debian packages of `make deps-build` (DEBIAN_PKGS in the Makefile);
# stage 2 holds only the runtime libraries, the binary and the Lua code. DATADIR is compiled into
# the binary (FC_DATADIR), so `make` and `make install` get the same value.
# Only the build inputs are copied: a host build/ directory (objects compiled with another
# DATADIR) must never reach the image.

# Both stages start from one base, pinned by digest so that a build is repeatable and a changed
# upstream image never enters unseen; the tag beside it says what the digest is (bookworm-slim,
# Debian 12.12, the multi-platform index). To refresh it (for Debian's point releases and
# security updates), take the index digest the tag names today and review the change:
#   docker buildx imagetools inspect debian:bookworm-slim --format '{{.Manifest.Digest}}'
# (or `crane digest debian:bookworm-slim`, `skopeo inspect --format '{{.Digest}}'
# docker://debian:bookworm-slim`), then `docker build --build-arg BASE_IMAGE=...` tries one.
ARG BASE_IMAGE=debian:bookworm-slim@sha256:d5d3f9c23164ea16f31852f95bd5959aad1c5e854332fe00f7b3a20fcc9f635c

FROM ${BASE_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
ARG DATADIR=/usr/local/share/flink-controller
# The release and the commit compiled in (no .git in the build context): `make image` passes both;
# a plain `docker build .` gets the VERSION file's release and the commit "unknown".
ARG COMMIT=unknown
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
RUN make deps-build \
 && rm -rf /var/lib/apt/lists/*
COPY core/ core/
COPY lua/ lua/
COPY policies/ policies/
COPY deploy/crd.yaml deploy/crd.yaml
COPY scripts/crd-schema.lua scripts/crd-schema.lua
COPY VERSION LICENSE ./
ARG VERSION=
# (the build arguments reach make through the environment, so `make install` sees the same)
RUN export VERSION="${VERSION:-$(cat VERSION)}" COMMIT="${COMMIT}" \
 && make -j"$(nproc)" DATADIR="${DATADIR}" all \
 && make install PREFIX=/usr/local DATADIR="${DATADIR}" DESTDIR=/out

FROM ${BASE_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
# One runtime package per build library: liblua5.4-dev -> liblua5.4-0, libev-dev -> libev4,
# libcurl4-openssl-dev -> libcurl4, libssl-dev -> libssl3, libjansson-dev -> libjansson4,
# libyaml-dev -> libyaml-0-2, libmicrohttpd-dev -> libmicrohttpd12, libzstd-dev -> libzstd1; lua-cjson and lua-yaml are
# the Lua modules themselves.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      liblua5.4-0 lua-cjson lua-yaml libev4 libcurl4 libssl3 libjansson4 libyaml-0-2 libmicrohttpd12 libzstd1 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/usr/local/ /usr/local/
ARG VERSION=
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="flink-controller" \
      org.opencontainers.image.description="Kubernetes controller for Apache Flink (FlinkCluster, flinkoperator.k8s.io/v1beta1)" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
# metrics, health (see deploy/deployment.yaml)
EXPOSE 8080 8081
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/flink-controller"]
CMD ["--help"]
