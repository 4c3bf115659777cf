#!/bin/sh
# Install the Connect peers' npm dependencies (exact versions from package-lock.json) into
# tests/peers/node/node_modules with `npm ci`.  Usage: install.sh [NPM_CACHE_DIR]
# Idempotent: does nothing when node_modules was installed from the current package-lock.json
# (a stamp file in node_modules holds the lock file's sha256).  NPM_CACHE_DIR (launch.py passes
# .build/peers/npm-cache) keeps npm's cache out of HOME, so the install works without a usable
# HOME (e.g. as root in CI).
set -eu
if [ $# -gt 1 ]; then
    echo "usage: $0 [NPM_CACHE_DIR]" >&2
    exit 2
fi
dir=$(cd "$(dirname "$0")" && pwd)
stamp="$dir/node_modules/.triple-py-install-stamp"

want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "$0: 'npm' not found (Node.js 20 with npm is needed)" >&2; exit 1; }
if [ $# -eq 1 ]; then
    mkdir -p "$1"
    npm_config_cache=$(cd "$1" && pwd)
    export npm_config_cache
fi
cd "$dir"
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" >"$stamp"
echo "installed $dir/node_modules" >&2
