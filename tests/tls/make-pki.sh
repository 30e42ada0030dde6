#!/bin/sh
# Creates a private CA, a coordinator certificate for 127.0.0.1 and localhost, and a client
# certificate for the agent "web-1" in DIR, with the exact commands of README.md's "TLS with a
# private CA" (the TLS tests run this script, so the README's commands are the tested ones).
# Usage: tests/tls/make-pki.sh DIR
set -eu
cd "$1"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
  -subj "/CN=jobctl CA" -keyout ca.key -out ca.crt
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=coordinator" -keyout coordinator.key -out coordinator.csr
openssl x509 -req -in coordinator.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
  -extfile server.ext -out coordinator.crt
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=web-1" -keyout web-1.key -out web-1.csr
openssl x509 -req -in web-1.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
  -extfile client.ext -out web-1.crt
