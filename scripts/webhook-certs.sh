#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/webhook-certs.sh OUTDIR [NAME...]: a CA and a serving certificate for the admission
# webhook, with the openssl CLI, for the file mode (--webhook-cert-file; the tests, the webhook
# alone). In a cluster the controller makes its own (deploy/webhook) or cert-manager does
# (deploy/webhook-cert-manager): docs/webhook.md.
#   OUTDIR/ca.crt ca.key        the CA (ca.crt base64 is the webhook configurations' caBundle)
#   OUTDIR/tls.crt tls.key      the webhook's certificate (EC P-256, 1 year), signed by the CA,
#                               with subjectAltName DNS:<name>/IP:<address> for each NAME
#                               (default: flink-controller-webhook.flink-system.svc, its short
#                               forms, localhost and 127.0.0.1)
# A second run with the same OUTDIR keeps the CA and issues a new certificate (rotation: the
# webhook re-reads tls.crt/tls.key when they change). Exit 1 when openssl fails.
set -euo pipefail
out=${1:?usage: webhook-certs.sh OUTDIR [NAME...]}
shift
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(flink-controller-webhook flink-controller-webhook.flink-system
  flink-controller-webhook.flink-system.svc localhost 127.0.0.1)
mkdir -p "$out"
san=""
for n in "${names[@]}"; do
  if [[ $n =~ ^[0-9.]+$ || $n == *:* ]]; then san+="IP:$n,"; else san+="DNS:$n,"; fi
done
san=${san%,}
if [ ! -s "$out/ca.crt" ] || [ ! -s "$out/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=flink-controller-webhook-ca" -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
fi
# write the new pair beside and rename: the webhook never reads a half-written file
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${names[0]}" \
  -keyout "$out/tls.key.new" -out "$out/tls.csr" 2>/dev/null
openssl x509 -req -in "$out/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial -days 365 \
  -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' "$san") \
  -out "$out/tls.crt.new" 2>/dev/null
chmod 600 "$out/tls.key.new" "$out/ca.key"
mv "$out/tls.key.new" "$out/tls.key"
mv "$out/tls.crt.new" "$out/tls.crt"
rm -f "$out/tls.csr" "$out/ca.srl"
