#!/usr/bin/env bash
# Fails when a C source or header outside csrc/binding/ includes Python.h, directly or
# through a binding header: the core, its C tests, fuzzers and stress tools build and run
# without Python (`make test` runs this).
set -euo pipefail
cd "$(dirname "$0")/.."
hits=$(grep -rlE --include='*.c' --include='*.h' \
         '#[[:space:]]*include[[:space:]]*[<"]([^>"]*/)?(Python\.h|binding\.h|binding/[^>"]*)[>"]' \
         csrc tests tools benchmarks 2>/dev/null | grep -v '^csrc/binding/' || true)
if [ -n "$hits" ]; then
  echo "check_python_h: Python.h is included outside csrc/binding/:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "check_python_h: Python.h only in csrc/binding/"
