# shellcheck shell=bash
# Throw-away Debian roots for the bare-machine tests (tools/test_fresh.sh,
# tools/test_wheel.sh).  Sourced, not run: `. tools/chroot_lib.sh`.  Needs root.
#
#   chroot_base_tarball CODENAME     the cached `debootstrap --variant=minbase CODENAME`
#                                    tarball (built on first use), printed
#   chroot_unpack ROOT TARBALL       ROOT emptied, then TARBALL unpacked into it
#   chroot_plumb ROOT CODENAME       network plumbing only: names, the mirror's apt sources
#                                    for CODENAME, this machine's CA certificates, npm's
#                                    settings
#   chroot_mount ROOT                ROOT a mount point of its own, with /proc, /sys, /dev
#   chroot_unmount_all ROOT          everything mounted at or below ROOT, deepest first
#   chroot_sh ROOT SCRIPT            SCRIPT run by bash in ROOT with a clean environment
#                                    (extra VAR=value pairs for it in CHROOT_ENV, an array)
#   chroot_prepared CODENAME NAME PACKAGES...
#                                    the cached tarball of a minbase root with PACKAGES
#                                    installed (apt-get, no recommends), built on first use
#                                    and rebuilt when the package list changes; printed
#
# Caches live in CHROOT_CACHE (default /var/cache/triple_py); roots are built under
# CHROOT_WORK (default /var/tmp/triple_py-chroot), outside any checkout (pip and setuptools
# walk a project tree).  Only Debian's packages go into a cached tarball, never the project.

CHROOT_CACHE=${CHROOT_CACHE:-/var/cache/triple_py}
CHROOT_WORK=${CHROOT_WORK:-/var/tmp/triple_py-chroot}
CHROOT_ENV=()

chroot_say() { printf '%s: %s\n' "${CHROOT_WHO:-chroot}" "$*"; }

# The Debian mirror this machine uses: the first URI serving bookworm in its apt sources.
chroot_mirror() {
  local uri
  uri=$(awk '/^URIs:/ {u=$2} /^Suites:/ && u && / bookworm( |$)/ {print u; exit}' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' \
                         /etc/apt/sources.list 2>/dev/null || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

chroot_unmount_all() {
  local root=$1 m
  for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/mounts \
             | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
}

chroot_need_debootstrap() {
  command -v debootstrap >/dev/null && return
  chroot_say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
      --no-install-recommends debootstrap \
    || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
           install -y -q --no-install-recommends debootstrap; }
}

chroot_base_tarball() {
  local codename=$1 tar dir
  tar=$CHROOT_CACHE/$codename-minbase.tar.gz
  if [ ! -s "$tar" ]; then
    chroot_need_debootstrap >&2
    dir=$CHROOT_WORK/debootstrap-$codename
    chroot_say "building the bare root (debootstrap --variant=minbase $codename $(chroot_mirror))" >&2
    chroot_unmount_all "$dir"
    rm -rf --one-file-system "$dir" && mkdir -p "$CHROOT_WORK" "$CHROOT_CACHE"
    # debootstrap checks the Release file against debian-archive-keyring, whose Debian 12
    # version holds the Debian 13 (trixie) keys too.
    if ! debootstrap --variant=minbase "$codename" "$dir" "$(chroot_mirror)" \
         > "$CHROOT_WORK/debootstrap-$codename.log" 2>&1; then
      tail -20 "$CHROOT_WORK/debootstrap-$codename.log" >&2
      return 1
    fi
    tar -C "$dir" -czf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf --one-file-system "$dir"
  fi
  echo "$tar"
}

chroot_unpack() {
  local root=$1 tar=$2
  chroot_unmount_all "$root"
  rm -rf --one-file-system "$root"
  mkdir -p "$root"
  tar -C "$root" -xzf "$tar"
}

chroot_plumb() {
  local root=$1 codename=$2 f
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cp /etc/hosts "$root/etc/hosts"
  # This machine's Debian 12 sources, for CODENAME (the same mirror, its own suites).
  if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
    rm -f "$root"/etc/apt/sources.list.d/*.sources
    for f in /etc/apt/sources.list.d/*.sources; do
      grep -q 'debian' "$f" || continue
      sed "s/\bbookworm\b/$codename/g" "$f" > "$root/etc/apt/sources.list.d/$(basename "$f")"
    done
    rm -f "$root/etc/apt/sources.list"
  fi
  mkdir -p "$root/usr/local/share/ca-certificates" "$root/etc/ssl/certs"
  cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
  [ -f /etc/ssl/certs/ca-certificates.crt ] && \
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  for f in /etc/npmrc /usr/etc/npmrc /root/.npmrc; do
    [ -f "$f" ] && { mkdir -p "$root$(dirname "$f")"; cp "$f" "$root$f"; }
  done
  return 0
}

# The root is a mount point of its own, as / is on a real machine: `ip netns` remounts / as
# a slave in its namespace and fails on a plain directory.
chroot_mount() {
  local root=$1
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mountpoint -q "$root/dev/shm" || mount -t tmpfs shm "$root/dev/shm"
}

chroot_sh() {
  local root=$1 script=$2
  chroot "$root" /usr/bin/env -i HOME=/root \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb CI="${CI:-}" DEBIAN_FRONTEND=noninteractive \
    "${CHROOT_ENV[@]}" /bin/bash -c "$script"
}

chroot_prepared() {
  local codename=$1 name=$2 base key tar root status
  shift 2
  base=$(chroot_base_tarball "$codename") || return 1
  # The key: the package list and the base tarball it was made from.
  key=$( { echo "$*"; stat -c %Y "$base"; } | sha256sum | cut -c1-12)
  tar=$CHROOT_CACHE/$codename-$name-$key.tar.gz
  if [ ! -s "$tar" ]; then
    root=$CHROOT_WORK/prepare-$codename-$name
    chroot_say "preparing the $codename root '$name': apt-get install $*" >&2
    chroot_unpack "$root" "$base"
    chroot_plumb "$root" "$codename"
    chroot_mount "$root"
    set +e
    chroot_sh "$root" "set -e
      apt-get -o Acquire::Retries=3 update -q >/dev/null
      apt-get -o Acquire::Retries=3 install -y -q --no-install-recommends $* >/dev/null
      apt-get clean" >&2
    status=$?
    set -e
    chroot_unmount_all "$root"
    if [ "$status" -ne 0 ]; then
      chroot_say "apt-get install in the $codename root failed ($status)" >&2
      return "$status"
    fi
    rm -f "$CHROOT_CACHE/$codename-$name"-*.tar.gz
    tar -C "$root" -czf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf --one-file-system "$root"
  fi
  echo "$tar"
}
