#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for triple_py: the Debian packages the build, the
# tests and the benchmarks need (installed only when missing), then .venv made from
# /usr/bin/python3 with --system-site-packages, with triple_py installed into it.
# Idempotent; `make bench` and `make test` run it first.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

PACKAGES=(
  build-essential pkg-config python3-dev python3-venv python3-pip python3-setuptools
  libnghttp2-dev libssl-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler
  protobuf-compiler python3-protobuf python3-grpcio python3-h2 python3-hpack python3-pytest
  python3-numpy python3-scipy python3-pandas python3-jinja2
  python3-matplotlib python3-nbclient python3-nbformat python3-ipykernel python3-pytest-benchmark
  python3-build python3-wheel dpkg-dev binutils
  jupyter-notebook chromium chromium-driver python3-selenium python3-pil python3-ipython
  python3-jupyter-client
  golang-go golang-google-grpc-dev nghttp2-client clang libclang-rt-14-dev strace openssl
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev golang-goprotobuf-dev
  python3-distributed iproute2 clang-format mypy zookeeper python3-kazoo util-linux
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q || true
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
fi

# Node.js and npm run the Connect peers (tests/peers/node, tests/interop/peers/node).
# Machines of this kind come with Node 20; a bare Debian gets Debian's.
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends nodejs npm
fi

if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
# Rebuild the extension whenever a C, proto or build file is newer than it; the test tools
# (testing/: triple_py_testing, not in triple_py's wheel) are installed editable next to it.
stamp=.venv/.triple_py-installed
if [ ! -f "$stamp" ] || [ -n "$(find csrc proto setup.py pyproject.toml testing/pyproject.toml -newer "$stamp" -type f -not -path 'csrc/gen/*' 2>/dev/null | head -1)" ]; then
  .venv/bin/pip install -q --no-build-isolation --no-deps -e . 
  .venv/bin/pip install -q --no-build-isolation --no-deps -e testing
  touch "$stamp"
fi
[ "$(( $(date +%s) - started ))" -lt 5 ] || echo "bootstrap: done in $(( $(date +%s) - started )) s"
