#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Test-only PKI for the transport tests: a CA, a server cert for 127.0.0.1 /
# localhost, a client cert (CN flink-controller-test) and an unrelated CA.
# Usage: gen_test_certs.sh DIR   (does nothing when DIR/client.key exists)
set -eu
dir=$1
[ -f "$dir/client.key" ] && exit 0
mkdir -p "$dir"
cd "$dir"
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $ec -keyout ca.key -out ca.crt -days 3 -subj /CN=transport-test-ca 2>/dev/null
openssl req -x509 $ec -keyout other-ca.key -out other-ca.crt -days 3 -subj /CN=other-ca 2>/dev/null
openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 3 \
  -extfile server.ext 2>/dev/null
openssl req $ec -keyout client.key.tmp -out client.csr -subj /CN=flink-controller-test 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 3 \
  -extfile client.ext 2>/dev/null
mv client.key.tmp client.key
