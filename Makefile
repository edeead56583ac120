# SPDX-License-Identifier: Apache-2.0
# flink-controller build.  `make deps` installs Debian packages; `make` builds
# build/flink-controller; `make test` runs every suite and ends with
# "N passed, N failed".
CC       ?= cc
# libev ships no pkg-config file on Debian; it is linked by name (-lev).
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC \
            $(shell pkg-config --cflags lua5.4 libcurl openssl jansson yaml-0.1 libmicrohttpd libzstd 2>/dev/null)
LDLIBS   += $(shell pkg-config --libs lua5.4 libcurl openssl jansson yaml-0.1 libmicrohttpd libzstd 2>/dev/null) -lev -lm -ldl
BUILD    := build
DATADIR  ?= $(CURDIR)
CPPFLAGS += -DFC_DATADIR='"$(DATADIR)"'

# The release and the commit compiled into the binary (core/version.h; `flink-controller version`,
# the metric flink_controller_build_info): git describe when the tree has a tag v*, else the
# VERSION file; the commit from git, "-dirty" with local changes. A build outside a git checkout
# (the Dockerfile's: no .git in the context) is given them: make VERSION=0.2.0 COMMIT=1a2b3c4d5e6f
ifeq ($(origin VERSION),undefined)
VERSION := $(shell v=$$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null) && echo "$${v\#v}" || cat VERSION 2>/dev/null)
endif
ifeq ($(origin COMMIT),undefined)
COMMIT := $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null && echo "$$c" || echo "$$c-dirty"; } || echo unknown)
endif
CPPFLAGS += -DFC_VERSION='"$(VERSION)"' -DFC_COMMIT='"$(COMMIT)"'

# core/lua_sandbox.c is the host for busted (build/lib/fc/sandbox.so), not part of the binary
SRCS     := $(filter-out core/lua_sandbox.c,$(wildcard core/*.c))
OBJS     := $(SRCS:core/%.c=$(BUILD)/obj/%.o)
LIB_OBJS := $(filter-out $(BUILD)/obj/main.o,$(OBJS))
ASAN_OBJS:= $(SRCS:core/%.c=$(BUILD)/asan/obj/%.o)
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# Lua C modules also built as loadable .so files, so busted (lua5.4) can
# require them: fc.<name> -> build/lib/fc/<name>.so from core/lua_<name>.c. Not fc.host
# (core/lua_host.c, the host's own table: under busted fc.host is fc.sandbox's, below).
LUA_CMODS := $(filter-out host,$(patsubst core/lua_%.c,%,$(wildcard core/lua_*.c)))
LUA_SOS   := $(LUA_CMODS:%=$(BUILD)/lib/fc/%.so)

C_TESTS   := $(patsubst tests/c/%.c,$(BUILD)/tests/%,$(wildcard tests/c/test_*.c))

DEBIAN_PKGS := lua5.4 liblua5.4-dev lua-cjson lua-yaml libyaml-dev libev-dev \
               libcurl4-openssl-dev libssl-dev libjansson-dev libmicrohttpd-dev libzstd-dev lua-busted lua-check pkg-config \
               gcc make ca-certificates

.PHONY: FORCE crds monitoring image all deps deps-build test lint docs asan fuzz clean install testenv-up testenv-down bench bench-live bench-converge testenv-build demo test-policies
all: $(BUILD)/flink-controller $(LUA_SOS) lua/fc/crd.lua

# The FlinkCluster schema for the policies (require "fc.crd"), generated from deploy/crd.yaml,
# the one description of the API's fields (docs/admission.md, "one schema").
lua/fc/crd.lua: deploy/crd.yaml scripts/crd-schema.lua
	lua5.4 scripts/crd-schema.lua deploy/crd.yaml $@

# The CRD's copies: deploy/crd.yaml stays the one source; kustomize reads no file outside a
# kustomization's folder and Helm installs its chart's crds/, so each has a copy, byte for byte
# (tests/helm_spec.lua checks). `make crds` after an edit of deploy/crd.yaml.
CRD_COPIES := deploy/crds/flinkclusters.yaml deploy/helm/flink-controller/crds/flinkclusters.yaml
crds: $(CRD_COPIES)
$(CRD_COPIES): deploy/crd.yaml
	cp deploy/crd.yaml $@

# deploy/monitoring (docs/alerts.md): the Grafana dashboard, written from its panel list, and the
# Helm chart's copies of it and of the alerts (the chart reads no file outside its folder;
# tests/monitoring_spec.lua checks them). `make monitoring` after an edit of either.
MONITORING_COPIES := deploy/helm/flink-controller/files/dashboard.json deploy/helm/flink-controller/files/prometheusrule.yaml
monitoring: deploy/monitoring/dashboard.json $(MONITORING_COPIES)
deploy/monitoring/dashboard.json: scripts/monitoring-dashboard.lua
	lua5.4 scripts/monitoring-dashboard.lua $@
deploy/helm/flink-controller/files/%: deploy/monitoring/%
	cp $< $@

# Java and Maven are for the test environment only (a real Flink from Maven
# Central, tests/env/); installed from Debian when the machine has none.
# Go >= 1.24 (the real kube-apiserver, kubelet, CoreDNS) from scripts/install-go.sh: the
# machine's own when it has one, else Debian's golang-go fetches the pinned toolchain module.
TESTENV_PKGS := openjdk-17-jdk-headless maven openssl curl
# The test environment's real node (tests/env/, docs/testenv.md "The real node"): container runtime,
# CNI plugins, kube-proxy's and the kubelet's iptables/conntrack, and debootstrap for the images
# built here (no registry), jq for their archives' JSON (tests/env/mkimage.sh), patch for the
# policy cookbook's tests (tests/cookbook_spec.lua). Always installed: a machine with Java may
# still lack these.
NODE_PKGS := containerd runc containernetworking-plugins iptables conntrack debootstrap iproute2 util-linux jq patch
# The fuzz suite (tests/fuzz/, `make fuzz`): clang with libFuzzer and the sanitizer runtimes.
FUZZ_PKGS := clang-14 libclang-rt-14-dev libfuzzer-14-dev
# promtool, for the alerts' checks and unit tests (tests/monitoring_spec.lua): Debian ships it in
# the prometheus package (the server comes with it; its service is not needed).
MONITORING_PKGS := prometheus

# deps: everything `make`, `make test` and `make demo` need; deps-build: only what `make` needs
# (the Dockerfile's build stage).
deps: deps-build
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	extra=; command -v java >/dev/null && command -v mvn >/dev/null || extra="$(TESTENV_PKGS)"; \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(NODE_PKGS) $(FUZZ_PKGS) $(MONITORING_PKGS) $$extra && \
	$$SUDO scripts/install-go.sh

deps-build:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(DEBIAN_PKGS)

# the objects that print the version are rebuilt when it changes (build/version.stamp is
# rewritten only then)
$(BUILD)/version.stamp: FORCE
	@mkdir -p $(dir $@); printf '%s %s\n' '$(VERSION)' '$(COMMIT)' | cmp -s - $@ || printf '%s %s\n' '$(VERSION)' '$(COMMIT)' >$@
FORCE:
$(BUILD)/obj/main.o $(BUILD)/obj/metrics.o $(BUILD)/asan/obj/main.o $(BUILD)/asan/obj/metrics.o \
  $(BUILD)/fuzz/obj/metrics.o: $(BUILD)/version.stamp

$(BUILD)/obj/%.o: core/%.c $(wildcard core/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/asan/obj/%.o: core/%.c $(wildcard core/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(ASAN_FLAGS) -O1 -c -o $@ $<

$(BUILD)/flink-controller: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/asan/flink-controller: $(ASAN_OBJS)
	$(CC) $(CFLAGS) $(ASAN_FLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# A Lua C module: its binding file plus the plain C module of the same name
# (core/<name>.c) when there is one.
$(BUILD)/lib/fc/%.so: $(BUILD)/obj/lua_%.o
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(sort $^ $(wildcard $(BUILD)/obj/$*.o)) $(LDFLAGS)
# the slot accounting: core/slots.c and its rooms (core/slotsctx.h)
SLOTS_OBJS := $(patsubst %,$(BUILD)/obj/%.o,slots slots_shape slots_prio slots_pass)
$(BUILD)/lib/fc/slots.so: $(SLOTS_OBJS)
# fc.sandbox: the binary's policy host (lhost and the C modules it preloads) for busted
LHOST_OBJS := $(patsubst %,$(BUILD)/obj/%.o,lhost lhost_budget lhost_env lhost_load lua_host)
$(BUILD)/lib/fc/sandbox.so: $(LHOST_OBJS) $(BUILD)/obj/lpattern.o $(BUILD)/obj/util.o $(BUILD)/obj/lua_slots.o $(SLOTS_OBJS)
.SECONDARY: $(BUILD)/obj/lua_sandbox.o

$(BUILD)/tests/%: tests/c/%.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Icore -o $@ $^ $(LDFLAGS) $(LDLIBS)

asan: $(BUILD)/asan/flink-controller

# libFuzzer targets (tests/fuzz/fuzz_<name>.c -> build/fuzz/fuzz_<name>) under ASan+UBSan,
# linked with the core's objects built by clang into build/fuzz/obj/; tests/run.sh fuzz runs
# them (docs/reliability.md).
FUZZ_CC    := clang-14
FUZZ_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g
FUZZ_OBJS  := $(filter-out $(BUILD)/fuzz/obj/main.o,$(SRCS:core/%.c=$(BUILD)/fuzz/obj/%.o))
FUZZ_BINS  := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))

$(BUILD)/fuzz/obj/%.o: core/%.c $(wildcard core/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -Icore -o $@ $^ $(LDFLAGS) $(LDLIBS)

fuzz: $(FUZZ_BINS)

# Benchmarks (not part of `make test`): print ns/op of the hot paths.
$(BUILD)/bench/slots_bench: bench/slots_bench.c $(SLOTS_OBJS) core/slots.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Icore -o $@ bench/slots_bench.c $(SLOTS_OBJS) -lm

bench: $(BUILD)/bench/slots_bench
	$(BUILD)/bench/slots_bench

# the live path of Native TaskManagers on the test environment's kwok node (1,000 pods)
bench-live: all
	bench/native_live.sh

# N FlinkClusters converged by the controller beside the API server's own ceiling
# (docs/performance.md); its own kwok-only test environment
N ?= 1000
bench-converge: all
	bench/converge $(N)

lint:
	luacheck --no-color -q lua policies tests deploy/argocd

# The FlinkCluster field reference, generated from the CRD (tests/reference_spec.lua fails when
# the committed docs/reference.md is not what this writes).
docs:
	lua5.4 scripts/crd-reference.lua deploy/crd.yaml docs/reference.md

test: all asan $(C_TESTS)
	@bash tests/run.sh

# The policies alone (docs/policies.md): luacheck on policies/, every fixture in the
# production sandbox (`flink-controller test`), then busted on the policy specs and the fixtures
# walker through tests/run.sh (its LUA_PATH, TAP and counts).
# One spec: bash tests/run.sh busted policies/cluster_spec.lua
test-policies: $(BUILD)/flink-controller $(LUA_SOS) lua/fc/crd.lua
	luacheck --no-color -q policies
	$(BUILD)/flink-controller test
	@bash tests/run.sh busted $(sort $(wildcard policies/*_spec.lua)) tests/policy_fixtures_spec.lua

# install: the binary to $(PREFIX)/bin, lua/ and policies/ (without specs and testdata) to
# $(DATADIR). DATADIR is compiled into the binary, so build with the same value:
#   make DATADIR=/usr/local/share/flink-controller
#   make install PREFIX=/usr/local DATADIR=/usr/local/share/flink-controller [DESTDIR=...]
PREFIX   ?= /usr/local
install: all
	install -D -m 0755 $(BUILD)/flink-controller $(DESTDIR)$(PREFIX)/bin/flink-controller
	install -D -m 0644 LICENSE $(DESTDIR)$(PREFIX)/share/doc/flink-controller/LICENSE
	@if [ "$(abspath $(DESTDIR)$(DATADIR))" = "$(CURDIR)" ]; then \
	  echo "install: DATADIR is the source tree; lua/ and policies/ stay in place"; \
	else \
	  for f in $$(find lua policies -type f ! -name '*_spec.lua' ! -path 'policies/testdata/*' | sort); do \
	    install -D -m 0644 "$$f" "$(DESTDIR)$(DATADIR)/$$f" || exit 1; \
	  done; \
	  echo "install: lua/ and policies/ -> $(DESTDIR)$(DATADIR)"; \
	fi

clean:
	rm -rf $(BUILD)

# The controller image from the Dockerfile, tagged $(IMAGE), with the release and the commit as
# build arguments; docker (with a daemon) or buildah, whichever is here. The test environment
# builds the same recipe without either (tests/env/images.sh controller).
# tagged with the release of the VERSION file, the tag deploy/deployment.yaml and the chart run,
# also in a checkout past a tag (where git describe's VERSION has a suffix)
IMAGE ?= flink-controller:$(shell cat VERSION)
image:
	@if command -v docker >/dev/null && docker info >/dev/null 2>&1; then b="docker build"; \
	elif command -v buildah >/dev/null; then b="buildah bud"; \
	else echo "image: needs docker (and its daemon) or buildah; tests/env/images.sh controller builds the same recipe without either" >&2; exit 1; fi; \
	set -x; $$b --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

# Test environment (tests/env/, docs/testenv.md): kube-apiserver + etcd +
# controller-manager + scheduler + kwok and a Flink session cluster on
# loopback, and (as root) a real kubelet node with containerd, kube-proxy and CoreDNS.
# Binaries and images are built once per pin set into
# ~/.cache/flink-controller/testenv/; `up` writes build/testenv/env.sh.
testenv-build:
	tests/env/build.sh

testenv-up:
	tests/env/up.sh

testenv-down:
	tests/env/down.sh

# The controller end to end on the real node: test environment up, `run`, wordcount-local's job
# Running -> Succeeded and the cluster cleaned up, all stopped again (docs/development.md, "The two commands").
demo: all
	scripts/demo.sh
