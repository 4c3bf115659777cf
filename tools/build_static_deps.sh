#!/usr/bin/env bash
# tools/build_static_deps.sh [--tarballs] OUTDIR
#
# Builds the static libraries that the self-contained wheel links into triple_py._triple
# (setup.py with TRIPLE_BUNDLED_DEPS=OUTDIR): position-independent, hidden-visibility
# archives made from pinned sources, never from this repository.
#
#   OUTDIR/include/{nghttp2,protobuf-c,openssl}/   headers matching the archives
#   OUTDIR/lib/libnghttp2.a libprotobuf-c.a libssl.a libcrypto.a [libzstd.a]
#   OUTDIR/licenses/<package>/                      their licence and copyright files
#   OUTDIR/versions                                 the stamp: what was built, from what
#
# Sources are unpacked into a temporary directory outside the repository; nghttp2 and
# protobuf-c are compiled with -fPIC -fvisibility=hidden -O2, library only.  zlib stays
# dynamic (libz.so.1 is on the manylinux allow-list).
#
# Default (Debian 12 bookworm, Debian 13 trixie): nghttp2 and protobuf-c from `apt-get
# source` at the versions pinned per release below (Debian's patches applied); OpenSSL is
# Debian's own libssl-dev archives (built PIC by Debian), pinned by version.  When that
# libcrypto.a needs zstd (Debian 13), libzstd is rebuilt the same way from its source package
# (Debian's libzstd.a is not PIC).  Needs build-essential, dpkg-dev and libssl-dev; enables
# deb-src (a sources file of its own, from the configured mirrors) and runs `apt-get update`
# when source indexes are missing, which needs root or sudo.
#
# --tarballs (manylinux containers, where there is no apt): the upstream release tarballs
# pinned by version and sha256 below (downloaded with curl from upstream, else from
# Debian's archive, which holds the same files), OpenSSL built from source too (no shared
# libraries, no apps, no zlib; OPENSSLDIR /etc/ssl, and the Python layer adds the host's
# own CA locations).  Needs a C compiler, make, perl and curl.
#
# Idempotent: when OUTDIR/versions already records what the pins ask for, it exits at once.
set -euo pipefail

MODE=debian
if [ "${1:-}" = --tarballs ]; then
  MODE=tarballs
  shift
fi
if [ $# -ne 1 ]; then
  echo "usage: $0 [--tarballs] OUTDIR" >&2
  exit 2
fi
OUT=$(realpath -m "$1")
# The recipe's own version: bump it when the flags or the steps below change.
RECIPE=2
CFLAGS_DEPS="-O2 -fPIC -fvisibility=hidden"

die() {
  echo "build_static_deps: $*" >&2
  exit 1
}

# --- the steps both modes share ------------------------------------------------------------

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

# archive NAME OBJDIR: OUT/lib/libNAME.a from OBJDIR/*.o (deterministic: no time stamps;
# the compiler's file-prefix map keeps the work directory's name out of the objects).
archive() {
  rm -f "$OUT/lib/lib$1.a"
  ar rcsD "$OUT/lib/lib$1.a" "$2"/*.o
}

# licenses PACKAGE FILE...: OUT/licenses/PACKAGE/ with each FILE that exists.
licenses() {
  local pkg=$1 f
  shift
  mkdir -p "$OUT/licenses/$pkg"
  for f in "$@"; do
    if [ -f "$f" ]; then cp "$f" "$OUT/licenses/$pkg/"; fi
  done
}

# build_nghttp2 SRC VERSION: the library only (lib/*.c), no configure (a Debian source has
# none): the few settings it reads from config.h are POSIX headers and
# clock_gettime(CLOCK_MONOTONIC), which glibc has.
build_nghttp2() {
  local src=$1 up=$2 major minor patch c
  IFS=. read -r major minor patch <<<"$up"
  mkdir -p "$OUT/include/nghttp2" "$WORK/obj-nghttp2"
  cp "$src/lib/includes/nghttp2/nghttp2.h" "$OUT/include/nghttp2/"
  sed -e "s/@PACKAGE_VERSION@/$up/" \
    -e "s/@PACKAGE_VERSION_NUM@/$(printf '0x%02x%02x%02x' "$major" "$minor" "$patch")/" \
    "$src/lib/includes/nghttp2/nghttp2ver.h.in" >"$OUT/include/nghttp2/nghttp2ver.h"
  for c in "$src"/lib/*.c; do
    # shellcheck disable=SC2086
    gcc $CFLAGS_DEPS -ffile-prefix-map="$WORK/"= -Werror=implicit-function-declaration -DHAVE_ARPA_INET_H=1 \
      -DHAVE_NETINET_IN_H=1 -DHAVE_TIME_H=1 -DHAVE_CLOCK_GETTIME=1 \
      -DHAVE_DECL_CLOCK_MONOTONIC=1 -I"$OUT/include" \
      -I"$src/lib" -c "$c" -o "$WORK/obj-nghttp2/$(basename "$c" .c).o"
  done
  archive nghttp2 "$WORK/obj-nghttp2"
}

# build_protobuf_c SRC: the runtime library is one file.
build_protobuf_c() {
  local src=$1
  mkdir -p "$OUT/include/protobuf-c" "$WORK/obj-protobuf-c"
  cp "$src/protobuf-c/protobuf-c.h" "$OUT/include/protobuf-c/"
  # shellcheck disable=SC2086
  gcc $CFLAGS_DEPS -ffile-prefix-map="$WORK/"= -I"$src" -c "$src/protobuf-c/protobuf-c.c" \
    -o "$WORK/obj-protobuf-c/protobuf-c.o"
  archive protobuf-c "$WORK/obj-protobuf-c"
}

# start_work: the temporary directory (removed on exit) and an empty OUT.
start_work() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/triple-static-deps.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  chmod 755 "$WORK" # apt drops privileges to _apt for downloads when it can read it
  rm -rf "$OUT"
  mkdir -p "$OUT/include" "$OUT/lib" "$OUT/licenses"
}

# --- --tarballs: upstream release tarballs --------------------------------------------------

# name version sha256 upstream-url debian-archive-url
TARBALLS=(
  "nghttp2 1.70.0 aa317e2cf9dca6afa0aed68f8fad6ff303ec6982e25a78c75c0b65e2b9b3ded5
   https://github.com/nghttp2/nghttp2/releases/download/v1.70.0/nghttp2-1.70.0.tar.gz
   https://deb.debian.org/debian/pool/main/n/nghttp2/nghttp2_1.70.0.orig.tar.gz"
  "protobuf-c 1.5.1 20d1dc257da96f8ddff8be4dd9779215bbd0a6069ed53bbe9de38fa7629be06b
   https://github.com/protobuf-c/protobuf-c/releases/download/v1.5.1/protobuf-c-1.5.1.tar.gz
   https://deb.debian.org/debian/pool/main/p/protobuf-c/protobuf-c_1.5.1.orig.tar.gz"
  "openssl 3.5.7 a8c0d28a529ca480f9f36cf5792e2cd21984552a3c8e4aa11a24aa31aeac98e8
   https://github.com/openssl/openssl/releases/download/openssl-3.5.7/openssl-3.5.7.tar.gz
   https://deb.debian.org/debian/pool/main/o/openssl/openssl_3.5.7.orig.tar.gz"
)

# tarball NAME: downloads and checks NAME's pinned tarball, unpacks it into the work
# directory; prints the source directory.
tarball() {
  local row name version sha url file
  for row in "${TARBALLS[@]}"; do
    read -r name version sha _ <<<"$row"
    [ "$name" = "$1" ] || continue
    file="$WORK/$name-$version.tar.gz"
    for url in $(echo "$row" | tr -s ' \n' '\n' | tail -n +4); do
      if curl -fsSL --retry 3 -o "$file" "$url" &&
        echo "$sha  $file" | sha256sum -c --status; then
        mkdir -p "$WORK/src-$name"
        tar -xzf "$file" -C "$WORK/src-$name" --strip-components=1
        echo "$WORK/src-$name"
        return 0
      fi
      echo "build_static_deps: $url: download failed or sha256 mismatch" >&2
    done
    die "no good copy of $name $version"
  done
  die "no pinned tarball for $1"
}

tarball_versions() {
  local row name version sha
  echo "recipe $RECIPE"
  echo "source tarballs"
  for row in "${TARBALLS[@]}"; do
    read -r name version sha _ <<<"$row"
    echo "$name $version sha256:$sha"
  done
  echo "cflags $CFLAGS_DEPS"
}

if [ "$MODE" = tarballs ]; then
  if [ -f "$OUT/versions" ] && [ "$(cat "$OUT/versions")" = "$(tarball_versions)" ]; then
    echo "build_static_deps: $OUT is up to date"
    exit 0
  fi
  start_work
  src=$(tarball nghttp2)
  build_nghttp2 "$src" "$(sed -n 's/^nghttp2 \([^ ]*\) .*/\1/p' <(tarball_versions))"
  licenses nghttp2 "$src/COPYING"
  src=$(tarball protobuf-c)
  build_protobuf_c "$src"
  licenses protobuf-c "$src/LICENSE"
  src=$(tarball openssl)
  (
    cd "$src"
    # shellcheck disable=SC2086
    ./Configure no-shared no-apps no-tests no-docs no-zlib no-module \
      --prefix="$WORK/openssl" --libdir=lib --openssldir=/etc/ssl $CFLAGS_DEPS >/dev/null
    make -s -j"$(nproc)" build_libs >/dev/null
    make -s install_dev >/dev/null
  )
  cp -r "$WORK/openssl/include/openssl" "$OUT/include/"
  cp "$WORK/openssl/lib/libssl.a" "$WORK/openssl/lib/libcrypto.a" "$OUT/lib/"
  licenses openssl "$src/LICENSE.txt"
  tarball_versions >"$OUT/versions"
  echo "build_static_deps: built $OUT: $(tr '\n' ' ' <"$OUT/versions")"
  exit 0
fi

# --- default: Debian source packages --------------------------------------------------------

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

OPENSSL_VERSION=$(dpkg-query -W -f='${Version}' libssl-dev 2>/dev/null) ||
  die "libssl-dev is not installed (apt-get install libssl-dev)"
matches "$OPENSSL_VERSION" "$PIN_OPENSSL" ||
  die "libssl-dev $OPENSSL_VERSION does not match the pin '$PIN_OPENSSL' for $CODENAME"
NEED_ZSTD=0
# grep reads all of nm's output (no -q): under pipefail, nm killed by SIGPIPE after an early
# match would make the test false.
if nm -u "$LIBDIR/libcrypto.a" 2>/dev/null | grep ' U ZSTD_' >/dev/null; then
  NEED_ZSTD=1
fi
if nm -u "$LIBDIR/libcrypto.a" 2>/dev/null | grep ' U Brotli' >/dev/null; then
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
  if [ -z "$(source_versions "$pkg")" ]; then
    # deb-src configured but its indexes never downloaded (or outdated).
    $SUDO apt-get update -q >&2
  fi
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
  # A mirror holding the upstream tarball but not the .dsc or the Debian diff (seen for
  # Debian 13's protobuf-c): the upstream source of the newest match, without Debian's
  # patches, unpacked where dpkg-source would have put it.
  v=${tried# }
  v=${v%% *}
  local up=${v#*:} orig
  up=${up%-*}
  if (cd "$WORK" && apt-get source -q --tar-only "$pkg=$v" >"$WORK/$pkg-orig.log" 2>&1); then
    orig=$(ls "$WORK/${pkg}_$up".orig.tar.* 2>/dev/null | head -1)
    if [ -n "$orig" ]; then
      mkdir -p "$WORK/$pkg-$up"
      tar -xf "$orig" -C "$WORK/$pkg-$up" --strip-components=1
      echo "build_static_deps: $pkg $v: only its upstream tarball is on the mirror; built without Debian's patches" >&2
      echo "$v"
      return 0
    fi
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

command -v dpkg-source >/dev/null || die "dpkg-source is missing (apt-get install dpkg-dev)"
ensure_deb_src
start_work

V_NGHTTP2=$(fetch nghttp2 "$PIN_NGHTTP2")
src=$(srcdir nghttp2 "$V_NGHTTP2")
build_nghttp2 "$src" "${V_NGHTTP2%-*}"
licenses nghttp2 "$src/COPYING" "$src/debian/copyright"

V_PROTOBUF_C=$(fetch protobuf-c "$PIN_PROTOBUF_C")
src=$(srcdir protobuf-c "$V_PROTOBUF_C")
build_protobuf_c "$src"
licenses protobuf-c "$src/LICENSE" "$src/debian/copyright"

# OpenSSL: Debian's PIC archives and the headers of the same version (the generic ones and
# the multiarch configuration headers).
mkdir -p "$OUT/include/openssl"
cp -r /usr/include/openssl/. "$OUT/include/openssl/"
cp -r "/usr/include/$MULTIARCH/openssl/." "$OUT/include/openssl/"
cp "$LIBDIR/libssl.a" "$LIBDIR/libcrypto.a" "$OUT/lib/"
licenses openssl /usr/share/doc/libssl-dev/copyright

# zstd, for a libcrypto.a built with zstd compression: the static library only.
V_ZSTD=none
if [ "$NEED_ZSTD" = 1 ]; then
  V_ZSTD=$(fetch libzstd "$PIN_ZSTD")
  src=$(srcdir libzstd "$V_ZSTD")
  make -s -C "$src/lib" -j"$(nproc)" libzstd.a CFLAGS="$CFLAGS_DEPS" >"$WORK/zstd-build.log" ||
    die "building libzstd.a failed (see the output above)"
  cp "$src/lib/libzstd.a" "$OUT/lib/"
  licenses zstd "$src/LICENSE" "$src/COPYING" "$src/debian/copyright"
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
