#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the original operator (github.com/GoogleCloudPlatform/flink-on-k8s-operator, module
# github.com/googlecloudplatform/flink-operator) from a source tree for the adopt case's
# ADOPT_ORIGINAL_BIN.  Not part of CI: the Go module proxy refuses that module path, so the
# source has to be at hand (a checkout of fe98573).  Its dependencies come from the proxy.
# Usage: tests/integration/adopt/build-original.sh SRC OUT   (OUT: the static binary)
# The source is copied, and the copy changed in three places that fe98573 needs here:
#   - go.mod: vbom.ml/util (required through volcano -> k8s.io/kubernetes 1.18 -> kubectl) is
#     not served any more; replaced by its GitHub home at the same commit
#   - api/v1beta1/zz_generated.deepcopy.go: `out.takeSavepointOnUpgrade` (does not compile) is
#     the field TakeSavepointOnUpgrade
#   - controllers/flinkcluster_observer.go: the JobManager Ingress is read as
#     extensions/v1beta1, which Kubernetes stopped serving in 1.22; every pass then failed with
#     "no matches for kind", so that error reads as "no Ingress" (none is configured here)
# Output: OUT; the build's time on stderr.  Exit non-zero when a step fails.
set -euo pipefail
src=$(cd "$1" && pwd) out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
cd "$work"
echo 'replace vbom.ml/util => github.com/fvbommel/util v0.0.0-20160121211510-db5cfe13f5cc' >>go.mod
sed -i 's/&out\.takeSavepointOnUpgrade/\&out.TakeSavepointOnUpgrade/' api/v1beta1/zz_generated.deepcopy.go
python3 - controllers/flinkcluster_observer.go <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
get = """		observedIngress)
}"""
fixed = """		observedIngress)
	if apimeta.IsNoMatchError(err) {
		return apierrors.NewNotFound(schema.GroupResource{Group: "extensions", Resource: "ingresses"},
			getJobManagerIngressName(clusterName))
	}
	return err
}"""
head = "func (observer *ClusterStateObserver) observeJobManagerIngress("
i = s.index(head)
j = s.index(get, i)
body = s[i:j].replace("return observer.k8sClient.Get(", "var err = observer.k8sClient.Get(", 1)
s = s[:i] + body + fixed + s[j + len(get):]
s = s.replace('import (\n', 'import (\n\tapierrors "k8s.io/apimachinery/pkg/api/errors"\n'
              '\tapimeta "k8s.io/apimachinery/pkg/api/meta"\n\t"k8s.io/apimachinery/pkg/runtime/schema"\n', 1)
open(p, "w").write(s)
PY
start=$SECONDS
CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local go build -p 2 -trimpath -ldflags='-s -w' -o "$work/flink-operator" .
install -m 0755 "$work/flink-operator" "$out"
echo "build-original: $out in $((SECONDS - start)) s" >&2
