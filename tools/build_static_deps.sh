#!/usr/bin/env bash
# tools/build_static_deps.sh OUTDIR
#
# Builds the static libraries that the self-contained wheel links into triple_py._triple
# (setup.py with TRIPLE_BUNDLED_DEPS=OUTDIR): position-independent, hidden-visibility
# archives made from pinned Debian source packages, never from this repository.
#
#   OUTDIR/include/{nghttp2,protobuf-c,openssl}/   headers matching the archives
#   OUTDIR/lib/libnghttp2.a libprotobuf-c.a libssl.a libcrypto.a [libzstd.a]
#   OUTDIR/licenses/<package>/                      their licence and copyright files
#   OUTDIR/versions                                 the stamp: what was built, from what
#
# nghttp2 and protobuf-c are fetched with `apt-get source` (Debian's patches applied) into a
# temporary directory outside the repository and compiled with -fPIC -fvisibility=hidden -O2,
# library only.  OpenSSL is Debian's own libssl-dev archives (built PIC by Debian), pinned by
# version.  When that libcrypto.a needs zstd (Debian 13), libzstd is rebuilt the same way
# from its source package (Debian's libzstd.a is not PIC).  zlib stays dynamic (libz.so.1 is
# on the manylinux allow-list).
#
# Runs on Debian 12 (bookworm) and 13 (trixie) with build-essential, dpkg-dev and
# libssl-dev; enables deb-src (a sources file of its own, from the configured mirrors) and
# runs `apt-get update` when source indexes are missing, which needs root or sudo.
# Idempotent: when OUTDIR/versions matches the pins and the installed libssl-dev, it exits
# at once.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
OUT=$(realpath -m "$1")
# The recipe's own version: bump it when the flags or the steps below change.
RECIPE=1
CFLAGS_DEPS="-O2 -fPIC -fvisibility=hidden"

die() {
  echo "build_static_deps: $*" >&2
  exit 1
}

. /etc/os-release
CODENAME=${VERSION_CODENAME:-}
# Pinned Debian versions per release: glob patterns over source-package versions (the
# security updates of a release differ only in their +debNNuM suffix).
case "$CODENAME" in
  bookworm)
    PIN_NGHTTP2='1.52.0-1+deb12u*'
    PIN_PROTOBUF_C='1.4.1-1'
    PIN_OPENSSL='3.0.*-*~deb12u*'
    PIN_ZSTD='1.5.4+dfsg2-5 1.5.4+dfsg2-5+deb12u*'
    ;;
  trixie)
    PIN_NGHTTP2='1.64.0-1.1+deb13u*'
    PIN_PROTOBUF_C='1.5.1-1'
    PIN_OPENSSL='3.5.*-*~deb13u*'
    PIN_ZSTD='1.5.7+dfsg-1 1.5.7+dfsg-1+deb13u*'
    ;;
  *)
    die "no pinned versions for Debian release '${CODENAME:-unknown}' (known: bookworm, trixie)"
    ;;
esac

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
MULTIARCH=$(gcc -print-multiarch)
LIBDIR=/usr/lib/$MULTIARCH

# matches VERSION PATTERNS...: true when VERSION matches one of the glob patterns.
matches() {
  local v=$1 p
  shift
  for p in $*; do
    # shellcheck disable=SC2053
    [[ $v == $p ]] && return 0
  done
  return 1
}

OPENSSL_VERSION=$(dpkg-query -W -f='${Version}' libssl-dev 2>/dev/null) ||
  die "libssl-dev is not installed (apt-get install libssl-dev)"
matches "$OPENSSL_VERSION" "$PIN_OPENSSL" ||
  die "libssl-dev $OPENSSL_VERSION does not match the pin '$PIN_OPENSSL' for $CODENAME"
NEED_ZSTD=0
if nm -u "$LIBDIR/libcrypto.a" 2>/dev/null | grep -q ' U ZSTD_'; then
  NEED_ZSTD=1
fi
if nm -u "$LIBDIR/libcrypto.a" 2>/dev/null | grep -q ' U Brotli'; then
  die "$LIBDIR/libcrypto.a needs brotli, which this script does not build"
fi

# The stamp: skip everything when what OUTDIR holds is what the pins ask for.
stamp_ok() {
  local f=$OUT/versions line
  [ -f "$f" ] || return 1
  grep -qx "recipe $RECIPE" "$f" || return 1
  grep -qx "codename $CODENAME" "$f" || return 1
  grep -qx "openssl $OPENSSL_VERSION" "$f" || return 1
  line=$(sed -n 's/^nghttp2 //p' "$f")
  matches "$line" "$PIN_NGHTTP2" || return 1
  line=$(sed -n 's/^protobuf-c //p' "$f")
  matches "$line" "$PIN_PROTOBUF_C" || return 1
  if [ "$NEED_ZSTD" = 1 ]; then
    line=$(sed -n 's/^libzstd //p' "$f")
    matches "$line" "$PIN_ZSTD" || return 1
  fi
  return 0
}
if stamp_ok; then
  echo "build_static_deps: $OUT is up to date ($(tr '\n' ' ' <"$OUT/versions"))"
  exit 0
fi

# deb-src: a sources file of our own holding a deb-src copy of every configured entry for a
# suite of this release (with its options, e.g. Signed-By); the system's files are left as
# they are.
ensure_deb_src() {
  if apt-get indextargets --format '$(CREATED_BY)' | grep -qx Sources; then
    return
  fi
  local f one=() d822=() name=triple-py-deb-src
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && [ "$(basename "$f")" != "$name.list" ] && one+=("$f")
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && [ "$(basename "$f")" != "$name.sources" ] && d822+=("$f")
  done
  local tmp
  tmp=$(mktemp)
  if [ ${#one[@]} -gt 0 ]; then
    # One-line style: "deb [options] URI SUITE COMPONENTS..." -> "deb-src ...".
    awk -v c="$CODENAME" '$1 == "deb" { s = ($2 ~ /^\[/) ? 0 : 3
        if (s == 0) { for (i = 2; i <= NF; i++) if ($i ~ /\]$/) { s = i + 2; break } }
        if (s && ($s == c || index($s, c "-") == 1)) { sub(/^[ \t]*deb/, "deb-src"); print } }' \
      "${one[@]}" >"$tmp.list"
  else
    : >"$tmp.list"
  fi
  if [ ${#d822[@]} -gt 0 ]; then
    # deb822 style: each enabled stanza of type deb naming a suite of this release.
    awk -v c="$CODENAME" 'BEGIN { RS = ""; FS = "\n" }
      { types = ""; suites = ""; enabled = 1
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/) types = " " substr($i, 7) " "
          if ($i ~ /^Suites:/) suites = " " substr($i, 8) " "
          if ($i ~ /^Enabled: *no/) enabled = 0 }
        if (!enabled || types !~ / deb / || (suites !~ (" " c " ") && suites !~ (" " c "-"))) next
        for (i = 1; i <= NF; i++) print ($i ~ /^Types:/ ? "Types: deb-src" : $i)
        print "" }' "${d822[@]}" >"$tmp.sources"
  else
    : >"$tmp.sources"
  fi
  [ -s "$tmp.list" ] || [ -s "$tmp.sources" ] ||
    die "no Debian $CODENAME suite is configured in apt's sources to derive deb-src from"
  local ext
  for ext in list sources; do
    if [ -s "$tmp.$ext" ]; then
      echo "build_static_deps: enabling deb-src in /etc/apt/sources.list.d/$name.$ext"
      $SUDO install -m 644 "$tmp.$ext" "/etc/apt/sources.list.d/$name.$ext"
    fi
  done
  rm -f "$tmp" "$tmp.list" "$tmp.sources"
  $SUDO apt-get update -q
}

# source_versions PACKAGE: the source versions apt knows, newest first.
source_versions() {
  apt-cache showsrc --only-source "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -u |
    sort -rV
}

# fetch PACKAGE PATTERNS: `apt-get source` of the newest version matching the patterns
# (falling back to an older match when a mirror lacks it) into the work directory; prints
# the version fetched.
fetch() {
  local pkg=$1 pins=$2 v tried=""
  for v in $(source_versions "$pkg"); do
    matches "$v" "$pins" || continue
    tried="$tried $v"
    if (cd "$WORK" && apt-get source -q "$pkg=$v" >"$WORK/$pkg.log" 2>&1); then
      echo "$v"
      return 0
    fi
    echo "build_static_deps: apt-get source $pkg=$v failed; trying an older match" >&2
  done
  if [ -z "$tried" ]; then
    die "no source version of $pkg matching '$pins' (apt knows: $(source_versions "$pkg" | tr '\n' ' '))"
  fi
  die "apt-get source $pkg failed for every match:$tried (see $WORK/$pkg.log)"
}

# srcdir PACKAGE VERSION: the directory dpkg-source unpacked (PACKAGE-UPSTREAMVERSION).
srcdir() {
  local up=${2#*:}
  up=${up%-*}
  [ -d "$WORK/$1-$up" ] || die "cannot find the unpacked source of $1 $2 in $WORK"
  echo "$WORK/$1-$up"
}

# archive NAME OBJDIR: OUT/lib/libNAME.a from OBJDIR/*.o.
archive() {
  rm -f "$OUT/lib/lib$1.a"
  ar rcs "$OUT/lib/lib$1.a" "$2"/*.o
}

command -v dpkg-source >/dev/null || die "dpkg-source is missing (apt-get install dpkg-dev)"
ensure_deb_src
WORK=$(mktemp -d "${TMPDIR:-/tmp}/triple-static-deps.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# apt drops privileges to _apt for downloads when it can read the directory.
chmod 755 "$WORK"
rm -rf "$OUT"
mkdir -p "$OUT/include" "$OUT/lib" "$OUT/licenses"

# nghttp2: the library only (lib/*.c), no configure (the source has none): the few
# settings it reads from config.h are POSIX headers and clock_gettime(CLOCK_MONOTONIC),
# which glibc has.
V_NGHTTP2=$(fetch nghttp2 "$PIN_NGHTTP2")
src=$(srcdir nghttp2 "$V_NGHTTP2")
up=${V_NGHTTP2%-*}
IFS=. read -r major minor patch <<<"$up"
mkdir -p "$OUT/include/nghttp2" "$WORK/obj-nghttp2"
cp "$src/lib/includes/nghttp2/nghttp2.h" "$OUT/include/nghttp2/"
sed -e "s/@PACKAGE_VERSION@/$up/" \
  -e "s/@PACKAGE_VERSION_NUM@/$(printf '0x%02x%02x%02x' "$major" "$minor" "$patch")/" \
  "$src/lib/includes/nghttp2/nghttp2ver.h.in" >"$OUT/include/nghttp2/nghttp2ver.h"
for c in "$src"/lib/*.c; do
  # shellcheck disable=SC2086
  gcc $CFLAGS_DEPS -Werror=implicit-function-declaration -DHAVE_ARPA_INET_H=1 \
    -DHAVE_NETINET_IN_H=1 -DHAVE_TIME_H=1 -DHAVE_CLOCK_GETTIME=1 \
    -DHAVE_DECL_CLOCK_MONOTONIC=1 -I"$OUT/include" \
    -I"$src/lib" -c "$c" -o "$WORK/obj-nghttp2/$(basename "$c" .c).o"
done
archive nghttp2 "$WORK/obj-nghttp2"
mkdir -p "$OUT/licenses/nghttp2"
cp "$src/COPYING" "$src/debian/copyright" "$OUT/licenses/nghttp2/"

# protobuf-c: the runtime library is one file.
V_PROTOBUF_C=$(fetch protobuf-c "$PIN_PROTOBUF_C")
src=$(srcdir protobuf-c "$V_PROTOBUF_C")
mkdir -p "$OUT/include/protobuf-c" "$WORK/obj-protobuf-c"
cp "$src/protobuf-c/protobuf-c.h" "$OUT/include/protobuf-c/"
# shellcheck disable=SC2086
gcc $CFLAGS_DEPS -I"$src" -c "$src/protobuf-c/protobuf-c.c" \
  -o "$WORK/obj-protobuf-c/protobuf-c.o"
archive protobuf-c "$WORK/obj-protobuf-c"
mkdir -p "$OUT/licenses/protobuf-c"
cp "$src/LICENSE" "$src/debian/copyright" "$OUT/licenses/protobuf-c/"

# OpenSSL: Debian's PIC archives and the headers of the same version (the generic ones and
# the multiarch configuration headers).
mkdir -p "$OUT/include/openssl" "$OUT/licenses/openssl"
cp -r /usr/include/openssl/. "$OUT/include/openssl/"
cp -r "/usr/include/$MULTIARCH/openssl/." "$OUT/include/openssl/"
cp "$LIBDIR/libssl.a" "$LIBDIR/libcrypto.a" "$OUT/lib/"
cp /usr/share/doc/libssl-dev/copyright "$OUT/licenses/openssl/"

# zstd, for a libcrypto.a built with zstd compression: the static library only.
V_ZSTD=none
if [ "$NEED_ZSTD" = 1 ]; then
  V_ZSTD=$(fetch libzstd "$PIN_ZSTD")
  src=$(srcdir libzstd "$V_ZSTD")
  make -s -C "$src/lib" -j"$(nproc)" libzstd.a CFLAGS="$CFLAGS_DEPS" >"$WORK/zstd-build.log" ||
    die "building libzstd.a failed (see the output above)"
  cp "$src/lib/libzstd.a" "$OUT/lib/"
  mkdir -p "$OUT/licenses/zstd"
  cp "$src/LICENSE" "$src/COPYING" "$src/debian/copyright" "$OUT/licenses/zstd/"
fi

{
  echo "recipe $RECIPE"
  echo "codename $CODENAME"
  echo "nghttp2 $V_NGHTTP2"
  echo "protobuf-c $V_PROTOBUF_C"
  echo "openssl $OPENSSL_VERSION"
  echo "libzstd $V_ZSTD"
  echo "cflags $CFLAGS_DEPS"
} >"$OUT/versions"
echo "build_static_deps: built $OUT: $(tr '\n' ' ' <"$OUT/versions")"
