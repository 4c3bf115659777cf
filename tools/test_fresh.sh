#!/usr/bin/env bash
# make test-fresh: `make test` as the first command on a bare Debian 12, to catch an install
# step that only works because this machine already has the package.
#
#  1. A minimal Debian 12 root (debootstrap --variant=minbase bookworm, from the mirror in
#     this machine's apt sources). The bare root is cached as a tarball in FRESH_CACHE
#     (default /var/cache/triple_py); it holds Debian's minbase only, never a project package.
#  2. Into a new copy of it goes network plumbing only: name resolution (resolv.conf, hosts),
#     this machine's apt sources (the same mirror), its CA certificates and its npm settings.
#  3. A clone of this repository's HEAD (committed work only), `apt-get install make git`,
#     then `make test` there as the first command: tools/bootstrap.sh must install the rest.
#
# Needs root (debootstrap, chroot, mounts). FRESH_DIR (default /var/tmp/triple_py-fresh,
# outside the checkout: pip and setuptools walk the project tree) holds the root;
# it is deleted first and after a pass (kept on failure, for a look: FRESH_KEEP=1 keeps it
# always). FRESH_TARGET (default test) is the make target run in the root.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

cache_dir=${FRESH_CACHE:-/var/cache/triple_py}
work=${FRESH_DIR:-/var/tmp/triple_py-fresh}
target=${FRESH_TARGET:-test}
root=$work/root
base_tar=$cache_dir/bookworm-minbase.tar.gz

say() { printf 'test-fresh: %s\n' "$*"; }
now() { date +%s; }
t0=$(now)

[ "$(id -u)" -eq 0 ] || { say "needs root (debootstrap, chroot and mounts)"; exit 2; }

# The Debian mirror this machine uses: the first URI serving bookworm in its apt sources.
mirror() {
  local uri
  uri=$(awk '/^URIs:/ {u=$2} /^Suites:/ && u && / bookworm( |$)/ {print u; exit}' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' \
                         /etc/apt/sources.list 2>/dev/null || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

# Everything mounted at or below the root (ours, and what tests made there, such as
# ip netns's /run/netns), deepest first.
unmount_all() {
  local m
  for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/mounts \
             | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
}
trap unmount_all EXIT

if [ ! -s "$base_tar" ]; then
  command -v debootstrap >/dev/null || {
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends debootstrap \
      || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
             --no-install-recommends debootstrap; }
  }
  say "building the bare root (debootstrap --variant=minbase bookworm $(mirror))"
  unmount_all
  rm -rf --one-file-system "$work" && mkdir -p "$work" "$cache_dir"
  debootstrap --variant=minbase bookworm "$root" "$(mirror)" > "$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; exit 1; }
  tar -C "$root" -czf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
  rm -rf "$root"
fi
t_base=$(now)

unmount_all
rm -rf --one-file-system "$work"
mkdir -p "$root"
tar -C "$root" -xzf "$base_tar"

# Network plumbing, nothing the project needs: names, the mirror, CAs, npm's settings.
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp /etc/hosts "$root/etc/hosts"
if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
  for f in /etc/apt/sources.list.d/*.sources; do
    grep -q 'debian' "$f" && cp "$f" "$root/etc/apt/sources.list.d/"
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

# The repository as committed, as a user's clone would have it.
git clone -q --no-hardlinks "$repo" "$root/work/triple_py"

# The root is a mount point of its own, as / is on a real machine: `ip netns` (the
# multi-host test) remounts / as a slave in its namespace and fails on a plain directory.
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mountpoint -q "$root/dev/shm" || mount -t tmpfs shm "$root/dev/shm"

say "root ready in $(( $(now) - t0 )) s; installing make and git, then make $target there"
set +e
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 TERM=dumb CI="${CI:-}" \
  SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
  /bin/bash -c '
    set -e
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends make git ca-certificates >/dev/null
    cd /work/triple_py
    started=$(date +%s)
    make '"$target"'
    echo "test-fresh: make '"$target"' took $(( $(date +%s) - started )) s in the fresh root"
  '
status=$?
set -e
unmount_all
say "done in $(( $(now) - t0 )) s (bare root: $(( t_base - t0 )) s); exit $status"
if [ "$status" -eq 0 ] && [ -z "${FRESH_KEEP:-}" ]; then
  rm -rf --one-file-system "$work"
fi
exit "$status"
