#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the path of a test environment tool built by tests/env/build.sh, or exits 1 (and says
# which component to build) when it is not built.  Usage: tests/env/tool.sh kubectl|helm
#   kubectl  the pinned release's (component k8s), as up.sh's TESTENV_KUBECTL
#   helm     the pinned Helm CLI (component helm), as up.sh's TESTENV_HELM
# For the specs that need a tool but no running environment (tests/helm_spec.lua).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
case ${1:-} in
  kubectl) comp=k8s ;;
  helm) comp=helm ;;
  *) echo "usage: tests/env/tool.sh kubectl|helm" >&2; exit 2 ;;
esac
dir=$(component_dir "$comp")
if [ -f "$dir/.done" ] && [ -x "$dir/bin/$1" ]; then
  echo "$dir/bin/$1"
else
  echo "$1 not built: tests/env/build.sh $comp" >&2
  exit 1
fi
