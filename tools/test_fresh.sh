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

CHROOT_CACHE=${FRESH_CACHE:-/var/cache/triple_py}
CHROOT_WHO=test-fresh
. tools/chroot_lib.sh
work=${FRESH_DIR:-/var/tmp/triple_py-fresh}
target=${FRESH_TARGET:-test}
root=$work/root

say() { printf 'test-fresh: %s\n' "$*"; }
now() { date +%s; }
t0=$(now)

[ "$(id -u)" -eq 0 ] || { say "needs root (debootstrap, chroot and mounts)"; exit 2; }

# Everything mounted at or below the root (ours, and what tests made there, such as
# ip netns's /run/netns), deepest first.
trap 'chroot_unmount_all "$root"' EXIT

base_tar=$(chroot_base_tarball bookworm)
t_base=$(now)

chroot_unpack "$root" "$base_tar"
# Network plumbing, nothing the project needs: names, the mirror, CAs, npm's settings.
chroot_plumb "$root" bookworm

# The repository as committed, as a user's clone would have it.
git clone -q --no-hardlinks "$repo" "$root/work/triple_py"

chroot_mount "$root"

say "root ready in $(( $(now) - t0 )) s; installing make and git, then make $target there"
set +e
CHROOT_ENV=(SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
            NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
chroot_sh "$root" '
    set -e
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends make git ca-certificates >/dev/null
    cd /work/triple_py
    started=$(date +%s)
    make '"$target"'
    echo "test-fresh: make '"$target"' took $(( $(date +%s) - started )) s in the fresh root"
  '
status=$?
set -e
chroot_unmount_all "$root"
say "done in $(( $(now) - t0 )) s (bare root: $(( t_base - t0 )) s); exit $status"
if [ "$status" -eq 0 ] && [ -z "${FRESH_KEEP:-}" ]; then
  rm -rf --one-file-system "$work"
fi
exit "$status"
