# syntax=docker/dockerfile:1
# flink-controller image:  docker build -t flink-controller:dev .
#
# Stage 1 builds with exactly the Debian packages of `make deps-build` (DEBIAN_PKGS in the Makefile);
# stage 2 holds only the runtime libraries, the binary and the Lua code. DATADIR is compiled into
# the binary (FC_DATADIR), so `make` and `make install` get the same value.
# Only the build inputs are copied: a host build/ directory (objects compiled with another
# DATADIR) must never reach the image.

FROM debian:bookworm-slim AS build
ARG DEBIAN_FRONTEND=noninteractive
ARG DATADIR=/usr/local/share/flink-controller
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
RUN make -j"$(nproc)" DATADIR="${DATADIR}" all \
 && make install PREFIX=/usr/local DATADIR="${DATADIR}" DESTDIR=/out

FROM debian:bookworm-slim
ARG DEBIAN_FRONTEND=noninteractive
# One runtime package per build library: liblua5.4-dev -> liblua5.4-0, libev-dev -> libev4,
# libcurl4-openssl-dev -> libcurl4, libssl-dev -> libssl3, libjansson-dev -> libjansson4,
# libyaml-dev -> libyaml-0-2, libmicrohttpd-dev -> libmicrohttpd12; lua-cjson and lua-yaml are
# the Lua modules themselves.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      liblua5.4-0 lua-cjson lua-yaml libev4 libcurl4 libssl3 libjansson4 libyaml-0-2 libmicrohttpd12 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/usr/local/ /usr/local/
LABEL org.opencontainers.image.title="flink-controller" \
      org.opencontainers.image.description="Kubernetes controller for Apache Flink (FlinkCluster, flinkoperator.k8s.io/v1beta1)"
# metrics, health (see deploy/deployment.yaml)
EXPOSE 8080 8081
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/flink-controller"]
CMD ["--help"]
