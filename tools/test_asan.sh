#!/usr/bin/env bash
# The Python test suite against an extension built with AddressSanitizer and
# UndefinedBehaviorSanitizer.  The instrumented copy of the package goes to
# build/asan/ (the editable install stays as it is); the ASan runtime is
# preloaded into the uninstrumented python.  Leak detection is off for the
# interpreter (CPython keeps memory until exit), on for the C tests (make ctest).
# Debian's /usr/bin/python3 runs it: the venv's editable install would shadow the copy.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/asan
rm -rf "$out"
mkdir -p "$out"
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
TRIPLE_CFLAGS="$flags -O1" TRIPLE_LDFLAGS="$flags" \
  .venv/bin/python setup.py -q build_ext --build-lib "$out" --build-temp "$out/tmp" --force
cp triple_py/*.py triple_py/*.pyi triple_py/py.typed "$out/triple_py/" 2>/dev/null || true
# Every subpackage (aio, bench, peers, registry, ...): a new one must not be left behind.
for d in triple_py/*/; do
  case "$d" in *__pycache__*) ;; *) cp -r "$d" "$out/triple_py/" ;; esac
done
find "$out/triple_py" -name '__pycache__' -prune -exec rm -rf {} +
# The package's metadata next to the copy, so that its version, extras and console scripts
# are found as in an installed package (tests/unit/test_commands_and_metadata.py).
.venv/bin/python setup.py -q dist_info --output-dir "$out" 2>/dev/null
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
export LD_PRELOAD="$asan:$ubsan"
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TRIPLE_PY_ASAN=1
root=$PWD
# The test tools' peer launcher finds the repository (Go and Node peers, protos) here
# (testing/triple_py_testing/peers/builds.py).
export TRIPLE_PY_ROOT="$root"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(tests/integration tests/unit)
for i in "${!args[@]}"; do args[$i]="$root/${args[$i]}"; done
cd "$out"  # so the repository's own triple_py (cwd on sys.path) is not the one imported
# Child processes too (Dask workers, namespaced hosts, notebook runs) import the copy.
# The test tools (triple_py_testing) come from the checkout's testing/.
export PYTHONPATH="$PWD:$root/testing${PYTHONPATH:+:$PYTHONPATH}"
/usr/bin/python3 -c "import triple_py; f = triple_py._triple.__file__; assert '/build/asan/' in f, f; print('instrumented:', f)"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider --rootdir="$root" -c "$root/pyproject.toml" "${args[@]}"
