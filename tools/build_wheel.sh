#!/usr/bin/env bash
# tools/build_wheel.sh SDIST OUTDIR
#
# The self-contained wheel, built from the sdist (not from a checkout): unpacks SDIST in a
# temporary directory, makes the static libraries (tools/build_static_deps.sh, cached in
# $TRIPLE_STATIC_CACHE, default /var/cache/triple_py/static-deps-<codename>), builds the
# wheel with them linked in (TRIPLE_BUNDLED_DEPS), then tools/wheel_fixup.py retags it
# manylinux_2_Y_<arch> into OUTDIR and checks the result (--check).  Prints the wheel's path
# last.
#
# Needs (Debian 12 or 13): build-essential, python3-dev, python3-build, python3-setuptools,
# python3-wheel, dpkg-dev, libssl-dev, zlib1g-dev, and deb-src access (build_static_deps.sh
# enables it).  $PYTHON picks the interpreter (default /usr/bin/python3, Debian's): the
# wheel is for that interpreter's version.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 SDIST OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
sdist=$(realpath "$1")
out=$(realpath -m "$2")
PYTHON=${PYTHON:-/usr/bin/python3}
. /etc/os-release
cache=${TRIPLE_STATIC_CACHE:-/var/cache/triple_py/static-deps-${VERSION_CODENAME:-unknown}}

"$here/build_static_deps.sh" "$cache"

work=$(mktemp -d "${TMPDIR:-/tmp}/triple-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$sdist" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d)
[ "$(echo "$src" | wc -l)" -eq 1 ] || { echo "build_wheel: $sdist: not one top directory" >&2; exit 1; }

TRIPLE_BUNDLED_DEPS=$cache "$PYTHON" -m build --wheel --no-isolation --outdir "$work/wheel" "$src"
"$PYTHON" "$here/wheel_fixup.py" --outdir "$work/fixed" "$work"/wheel/*.whl
"$PYTHON" "$here/wheel_fixup.py" --check "$work"/fixed/*.whl >/dev/null
mkdir -p "$out"
wheel=$(basename "$work"/fixed/*.whl)
mv -f "$work/fixed/$wheel" "$out/$wheel"
echo "$out/$wheel"
