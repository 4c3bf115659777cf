#!/usr/bin/env bash
# make test-wheel: the wheel as a user meets it, on bare Debian machines, with no checkout.
#
#   tools/test_wheel.sh SDIST WHEEL
#
# SDIST and WHEEL are what `make dist` made (the wheel built from the sdist on this
# Debian 12 machine).  Then, each in a throw-away `debootstrap --variant=minbase` root
# (tools/chroot_lib.sh; roots cached as tarballs in TEST_WHEEL_CACHE, default
# /var/cache/triple_py, holding Debian's packages only):
#
#  0. tools/wheel_fixup.py --check WHEEL (NEEDED, glibc floor, exports), and the sizes.
#  1. Debian 12 with only python3, python3-venv, ca-certificates and openssl (the TLS
#     step's certificates) and the Debian packages of the extra the smoke exercises
#     (python3-protobuf, python3-numpy for "bench"): a venv with --system-site-packages,
#     `pip install --no-index WHEEL[bench]`, then tests/wheel/smoke.py (copied in alone).
#  2. Another Debian 12 root, with the Debian packages of the extras "test" and "analysis"
#     added (TEST_PKGS): `pip install --no-index WHEEL[test]`, then the part of the test
#     suite that needs no checkout (tests/wheel/installed_tests.txt; TRIPLE_PY_INSTALLED=1
#     makes the conftest skip what needs the checkout's peers), run from a directory
#     without triple_py/ in it, against the installed package.
#  3. Debian 13 (Python 3.13) with the build dependencies: tools/build_wheel.sh builds the
#     bundled wheel from SDIST there (the tools are copied in next to it; the static
#     libraries are cached in TEST_WHEEL_CACHE/trixie-build-cache), then its check.
#  4. A second, fresh Debian 13 root with only the runtime packages of step 1: that wheel
#     installed, then the smoke test.
#
# Needs root (debootstrap, chroot, mounts).  TEST_WHEEL_DIR (default
# /var/tmp/triple_py-wheel, outside the checkout) holds the roots; it is deleted after a
# pass and kept on failure (TEST_WHEEL_KEEP=1 keeps it always).  TEST_WHEEL_STEPS (default
# "1 2 3 4") runs a subset.  Every step prints its time; the exit status is that of the
# first failing step.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ]; then
  echo "usage: $0 SDIST WHEEL" >&2
  exit 2
fi
sdist=$(realpath "$1")
wheel=$(realpath "$2")

CHROOT_CACHE=${TEST_WHEEL_CACHE:-/var/cache/triple_py}
CHROOT_WHO=test-wheel
. tools/chroot_lib.sh
work=${TEST_WHEEL_DIR:-/var/tmp/triple_py-wheel}
steps=" ${TEST_WHEEL_STEPS:-1 2 3 4} "

# The Debian packages of each kind of root.  The runtime: Python with venv, the CA store and
# the openssl command (the TLS step's certificates), and the extra "bench" (protobuf, numpy)
# that triple-bench and triple-benchstat need.
RUN_PKGS="python3 python3-venv ca-certificates openssl python3-protobuf python3-numpy"
# Building the wheel (tools/build_wheel.sh and tools/build_static_deps.sh).
BUILD_PKGS="build-essential python3-dev python3-venv python3-build python3-setuptools
python3-wheel dpkg-dev pkg-config libssl-dev zlib1g-dev ca-certificates"
# The suite's runner and reference client (the extra "test"), what the analysis tests
# import (the extra "analysis": pandas, scipy, matplotlib, jinja2), protoc for the load
# tool's --proto, and mypy, which checks callers against the shipped stub.
TEST_PKGS="python3-pytest python3-grpcio python3-pandas python3-scipy python3-matplotlib
python3-jinja2 protobuf-compiler python3-mypy"

# The host's interpreter for the tools run here (the project venv's when there is one).
host_python=/usr/bin/python3
[ -x .venv/bin/python ] && host_python=.venv/bin/python

say() { printf 'test-wheel: %s\n' "$*"; }
now() { date +%s; }
t0=$(now)
timings=()
status=0

[ "$(id -u)" -eq 0 ] || { say "needs root (debootstrap, chroot and mounts)"; exit 2; }
[ -s "$sdist" ] || { say "no sdist at $1"; exit 2; }
[ -s "$wheel" ] || { say "no wheel at $2"; exit 2; }

# Every root is under $work: whatever is mounted there goes at exit.
trap 'chroot_unmount_all "$work"' EXIT

# fail STEP STATUS: remembers the first failure.
fail() {
  say "step $1 FAILED (exit $2)"
  [ "$status" -ne 0 ] || status=$2
}

# new_root NAME CODENAME KIND PACKAGES: a fresh root from the cached prepared tarball,
# plumbed and mounted; prints its path.
new_root() {
  local name=$1 codename=$2 kind=$3 tar root
  shift 3
  # shellcheck disable=SC2048,SC2086
  tar=$(chroot_prepared "$codename" "$kind" $*) || return 1
  root=$work/$name
  chroot_unpack "$root" "$tar"
  chroot_plumb "$root" "$codename"
  chroot_mount "$root"
  echo "$root"
}

# install_and_smoke ROOT WHEEL: a venv in ROOT with the wheel and its extra, then the smoke.
install_and_smoke() {
  local root=$1 whl=$2 name
  name=$(basename "$whl")
  mkdir -p "$root/work/wheel"
  cp "$whl" "$root/work/wheel/"
  cp tests/wheel/smoke.py "$root/work/smoke.py"
  chroot_sh "$root" '
    set -e
    cd /work
    python3 -m venv --system-site-packages /opt/venv
    s=$(date +%s)
    /opt/venv/bin/pip install -q --no-index --disable-pip-version-check \
      "/work/wheel/'"$name"'[bench]"
    echo "test-wheel: pip install --no-index took $(( $(date +%s) - s )) s"
    /opt/venv/bin/pip show triple_py | sed -n "s/^\(Version\|Location\|Requires\):/  &/p"
    /opt/venv/bin/python /work/smoke.py
  '
}

# smoke_in_root STEP CODENAME WHEEL: a fresh runtime root of CODENAME, WHEEL installed and
# smoke-tested there (install_and_smoke), with the times.
smoke_in_root() {
  local step=$1 codename=$2 whl=$3 s root
  s=$(now)
  # shellcheck disable=SC2086
  if root=$(new_root "$codename" "$codename" wheel-run $RUN_PKGS); then
    timings+=("$codename root ready: $(( $(now) - s )) s")
    s=$(now)
    install_and_smoke "$root" "$whl" || fail "$step" $?
    timings+=("$codename install + smoke: $(( $(now) - s )) s")
    chroot_unmount_all "$root"
  else
    fail "$step" 1
  fi
}

rm -rf --one-file-system "$work"
mkdir -p "$work"

say "sdist $(basename "$sdist"): $(stat -c %s "$sdist") bytes; wheel $(basename "$wheel"): $(stat -c %s "$wheel") bytes"
say "the check of $(basename "$wheel"):"
"$host_python" tools/wheel_fixup.py --check "$wheel" || fail 0 $?

if [[ $steps == *" 1 "* ]]; then
  say "step 1: Debian 12 root ($RUN_PKGS)"
  smoke_in_root 1 bookworm "$wheel"
fi

if [[ $steps == *" 2 "* ]]; then
  s=$(now)
  say "step 2: Debian 12 root with the test extras ($TEST_PKGS); the tests that need no checkout"
  # shellcheck disable=SC2086
  if root12t=$(new_root bookworm-tests bookworm wheel-test $RUN_PKGS $TEST_PKGS); then
    timings+=("bookworm test root ready: $(( $(now) - s )) s")
    s=$(now)
    # The listed tests run; the conftest and the helpers they import come along, nothing
    # else of the checkout.
    suite=$root12t/work/suite
    mkdir -p "$suite/tests/peers" "$root12t/work/wheel"
    cp tests/conftest.py "$suite/tests/"
    cp tests/peers/__init__.py tests/peers/launch.py "$suite/tests/peers/"
    cp -r tests/peers/proto "$suite/tests/peers/"  # the schemas the load tool's tests compile
    cp -r tests/unit tests/integration "$suite/tests/"
    find "$suite" -name __pycache__ -prune -exec rm -rf {} +
    listed=$(grep -v '^ *\(#\|$\)' tests/wheel/installed_tests.txt | tr '\n' ' ')
    for path in $listed; do
      [ -f "$path" ] || { say "tests/wheel/installed_tests.txt names $path, which does not exist"; exit 2; }
    done
    cp "$wheel" "$root12t/work/wheel/"
    # The test tools' distribution (testing/: triple_py_testing, pure Python) goes next to
    # the wheel, as grpcio-testing would; built from a copy, so the checkout stays clean.
    testing_whl=""
    if [ -f testing/pyproject.toml ]; then
      rm -rf "$work/testing-src" && cp -r testing "$work/testing-src"
      "$host_python" -m pip wheel -q --no-deps --no-build-isolation --no-index \
        -w "$root12t/work/wheel" "$work/testing-src" >/dev/null
      testing_whl=$(basename "$(ls "$root12t"/work/wheel/triple_py_testing-*.whl)")
    fi
    CHROOT_ENV=(TRIPLE_PY_INSTALLED=1)
    chroot_sh "$root12t" '
      set -e
      python3 -m venv --system-site-packages /opt/venv
      /opt/venv/bin/pip install -q --no-index --disable-pip-version-check \
        "/work/wheel/'"$(basename "$wheel")"'[test]"
      if [ -n "'"$testing_whl"'" ]; then
        /opt/venv/bin/pip install -q --no-index --no-deps --disable-pip-version-check \
          "/work/wheel/'"$testing_whl"'"
      fi
      cd /work/suite
      test ! -e triple_py && test ! -e tests/triple_py
      where=$(/opt/venv/bin/python -c "import triple_py; print(triple_py.__file__)")
      case "$where" in
        /opt/venv/*) echo "test-wheel: the tests import $where" ;;
        *) echo "test-wheel: triple_py imported from $where, not the venv"; exit 1 ;;
      esac
      /opt/venv/bin/python -m pytest -q -p no:cacheprovider '"$listed"'
    ' || fail 2 $?
    CHROOT_ENV=()
    timings+=("bookworm tests: $(( $(now) - s )) s")
    chroot_unmount_all "$root12t"
  else
    fail 2 1
  fi
fi

if [[ $steps == *" 3 "* ]]; then
  s=$(now)
  say "step 3: Debian 13 build root; the wheel from the sdist with tools/build_wheel.sh"
  # shellcheck disable=SC2086
  if root13b=$(new_root trixie-build trixie wheel-build $BUILD_PKGS); then
    timings+=("trixie build root ready: $(( $(now) - s )) s")
    s=$(now)
    mkdir -p "$root13b/work/dist" "$root13b/work/tools" "$root13b/var/cache/triple_py" \
      "$CHROOT_CACHE/trixie-build-cache"
    cp "$sdist" "$root13b/work/dist/"
    cp tools/build_wheel.sh tools/build_static_deps.sh tools/wheel_fixup.py "$root13b/work/tools/"
    mount --bind "$CHROOT_CACHE/trixie-build-cache" "$root13b/var/cache/triple_py"
    if chroot_sh "$root13b" '
        set -e
        cd /work
        /work/tools/build_wheel.sh "/work/dist/'"$(basename "$sdist")"'" /work/out > /work/build.log 2>&1 \
          || { tail -40 /work/build.log; exit 1; }
        tail -1 /work/build.log
      '; then
      mkdir -p "$work/trixie-wheel"
      cp "$root13b"/work/out/*.whl "$work/trixie-wheel/"
      wheel13=$(ls "$work"/trixie-wheel/*.whl)
      timings+=("trixie wheel build: $(( $(now) - s )) s")
      say "the check of $(basename "$wheel13") ($(stat -c %s "$wheel13") bytes):"
      "$host_python" tools/wheel_fixup.py --check "$wheel13" || fail 3 $?
    else
      fail 3 1
    fi
    chroot_unmount_all "$root13b"
    # The build root is done with: its space back before the next root.
    [ -n "${TEST_WHEEL_KEEP:-}" ] || [ "$status" -ne 0 ] || rm -rf --one-file-system "$root13b"
  else
    fail 3 1
  fi
fi

if [[ $steps == *" 4 "* ]]; then
  wheel13=$(ls "$work"/trixie-wheel/*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel13" ]; then
    fail 4 1
    say "step 4: no Debian 13 wheel (step 3 failed or did not run)"
  else
    say "step 4: a fresh Debian 13 root ($RUN_PKGS) and the wheel built there"
    smoke_in_root 4 trixie "$wheel13"
  fi
fi

chroot_unmount_all "$work"
say "times:"
for t in "${timings[@]}"; do say "  $t"; done
say "done in $(( $(now) - t0 )) s; exit $status"
if [ "$status" -eq 0 ] && [ -z "${TEST_WHEEL_KEEP:-}" ]; then
  rm -rf --one-file-system "$work"
fi
exit "$status"
