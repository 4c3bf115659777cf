#!/bin/sh
# Build the grpc-go test peer into OUTDIR/echo_server (Debian golang-go + golang-google-grpc-dev).
# Idempotent: does nothing when the binary is newer than its source and this script.
# GOCACHE lives under OUTDIR so the build works without a usable HOME (e.g. as root in CI).
set -eu
if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
src_dir=$(cd "$(dirname "$0")" && pwd)
src="$src_dir/go/echo_server.go"
mkdir -p "$1"
out_dir=$(cd "$1" && pwd)
bin="$out_dir/echo_server"

if [ -x "$bin" ] && [ "$bin" -nt "$src" ] && [ "$bin" -nt "$0" ]; then
    exit 0
fi
command -v go >/dev/null 2>&1 || { echo "$0: 'go' not found (apt-get install golang-go golang-google-grpc-dev)" >&2; exit 1; }

GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$out_dir/gocache" GOFLAGS= \
    go build -o "$bin.tmp" "$src"
mv -f "$bin.tmp" "$bin"
echo "built $bin" >&2
