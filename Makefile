# triple_py: `make bench` runs the seed-unary benchmark matrices with a report;
# `make test` runs every test.  Both set up the machine first (tools/bootstrap.sh).
PY := .venv/bin/python
CC ?= gcc
PKGS := libnghttp2 openssl zlib libprotobuf-c
# Recursive (=) so pkg-config runs when a recipe needs the flags, after bootstrap has
# installed the -dev packages, not when make reads this file (the first command on a bare
# machine has none of them yet).
CFLAGS_CORE = -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter \
	-Icsrc -Icsrc/gen $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread
# The client core (csrc/tri_*.c) and the embedded server, a subsystem of its own (csrc/server/).
CORE_SRC := $(wildcard csrc/tri_*.c csrc/server/*.c) csrc/gen/benchmark.pb-c.c csrc/gen/triple_wrapper.pb-c.c
CORE_HDR = $(wildcard csrc/*.h csrc/server/*.h)
CTEST_SRC := $(wildcard tests/c/*.c)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

.PHONY: all bootstrap build notebook test check-python-h format-check test-fresh test-wheel ctest ctest-asan ctest-reverse pytest bench bench-peers clean fuzz test-tsan test-valgrind test-asan microbench soak interop dist

all: build

bootstrap:
	tools/bootstrap.sh

build: bootstrap

csrc/gen/%.pb-c.c: proto/%.proto | bootstrap
	mkdir -p csrc/gen
	protoc-c --proto_path=proto --c_out=csrc/gen $<

build/ctest: $(CORE_SRC) $(CTEST_SRC) $(CORE_HDR) $(wildcard tests/c/*.h) | bootstrap
	mkdir -p build
	$(CC) $(CFLAGS_CORE) -Itests/c -o $@ $(CORE_SRC) $(CTEST_SRC) $(LIBS)

# The sync path's threading with no Python (benchmarks/python_wakeups.py --arm threads),
# optimised as the extension is (-O2; error messages cut to their buffers are meant).
build/blocking_threads: benchmarks/blocking_threads.c $(CORE_SRC) $(CORE_HDR) | bootstrap
	@mkdir -p build
	$(CC) $(CFLAGS_CORE) -O2 -Wno-format-truncation -o $@ $< $(CORE_SRC) $(LIBS)

build/ctest-asan: $(CORE_SRC) $(CTEST_SRC) $(CORE_HDR) $(wildcard tests/c/*.h) | bootstrap
	mkdir -p build
	$(CC) $(CFLAGS_CORE) $(SAN) -Itests/c -o $@ $(CORE_SRC) $(CTEST_SRC) $(LIBS)

build/ctest-noseal: $(CORE_SRC) $(CTEST_SRC) $(CORE_HDR) $(wildcard tests/c/*.h) | bootstrap
	mkdir -p build
	$(CC) $(CFLAGS_CORE) -DTRI_WRITER_BROKEN_SEAL -Itests/c -o $@ $(CORE_SRC) $(CTEST_SRC) $(LIBS)

# C tests: no Python; no network except the embedded server's own suite (loopback).
# Also run under ASan+UBSan.
ctest: build/ctest build/ctest-asan ctest-reverse
	build/ctest
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build/ctest-asan

# Reverse check: with close's sealing compiled out, the writer tests must fail.
ctest-reverse: build/ctest-noseal
	@if build/ctest-noseal writer >/dev/null 2>&1; then \
	  echo "ctest-reverse: writer tests passed without sealing: they cannot catch the race"; exit 1; \
	else echo "ctest-reverse: writer tests fail without sealing, as they must"; fi

# Debian's Jupyter Notebook on notebooks/ with the kernel "triple_py (Python 3.x, <venv>)"
# registered; prints the URL with its token; Ctrl-C stops it, its kernels and its temporary
# files (triple_py/bench/jupyter/notebook_server.py). NOTEBOOK_PORT picks the port (default: the
# first free from 8888).
NOTEBOOK_PORT ?=
notebook: bootstrap
	$(PY) -m triple_py.bench.jupyter.notebook_server $(if $(NOTEBOOK_PORT),--port $(NOTEBOOK_PORT))

pytest: bootstrap
	$(PY) -m pytest -q -p no:cacheprovider tests

# C lines changed since FORMAT_BASE (default main) against .clang-format (Debian's
# clang-format 14): prints the reformatting they need and fails if any; the rest of the
# tree is left as it is.
FORMAT_BASE ?= main
format-check: bootstrap
	@out=$$(git diff -U0 --no-color $(FORMAT_BASE) -- 'csrc/*.c' 'csrc/*.h' 'tests/c/*.c' \
	  'tests/c/*.h' | clang-format-diff-14 -p1); \
	if [ -n "$$out" ]; then echo "$$out"; echo "format-check: reformat the lines above"; exit 1; \
	else echo "format-check: changed C lines match .clang-format"; fi

# The core builds without Python: no Python.h outside csrc/binding/.
check-python-h:
	tools/check_python_h.sh

test: check-python-h ctest pytest

# The sdist (dist/triple_py-<version>.tar.gz: the C sources with the generated protobuf-c
# ones, proto/, the package, docs; no tests), checked against `git ls-files`
# (tools/check_sdist.py), then the wheel(s) built from that sdist, not from the checkout
# (tools/build_wheel.sh SDIST OUTDIR).  Building from the sdist needs no protoc-c.
VERSION = $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' triple_py/__init__.py)
SDIST = dist/triple_py-$(VERSION).tar.gz
dist: bootstrap
	rm -f $(SDIST)
	$(PY) -m build --sdist --no-isolation --outdir dist .
	$(PY) tools/check_sdist.py $(SDIST)
	tools/build_wheel.sh $(SDIST) dist/

# `make test` as the first command in a minimal Debian 12 root (tools/test_fresh.sh): fails
# when the project needs a package that tools/bootstrap.sh does not install.  Needs root.
test-fresh:
	tools/test_fresh.sh

# The wheel as a user meets it (tools/test_wheel.sh): `make dist`'s wheel installed with pip
# --no-index in minimal Debian 12 roots (no checkout) for the smoke test (tests/wheel/smoke.py)
# and the suite's no-checkout part (tests/wheel/installed_tests.txt); a Debian 13 wheel built
# from the sdist in one root and smoke-tested in another.  Needs root.
test-wheel: dist
	tools/test_wheel.sh $(SDIST) "$$(ls -t dist/triple_py-$(VERSION)-*manylinux*.whl | head -1)"

# The main job: the headline matrix (triple_py/bench/spec/matrices/headline.toml) against the embedded
# echo server in a process of its own (so that client and server CPU per call are each
# measured), under 10 minutes on 2 cores: fast path vs stream path from the C load
# generator and from Python, and each reference client (h2load, grpcio sync, grpc.aio) next
# to ours; it ends in verdicts (a change with its CI, equivalence within ±5 %, or the rounds
# still needed); files in results/.  `make bench FULL=1`: the seeds' full unary tables
# (seed-unary, seed-unary-py: 4 payloads x 2 concurrencies, 6 rounds of 3 s; ~25 min).
# The reference clients against the grpc-go peer: make bench-peers (benchmarks/matrices/unary_peers.toml).
FULL ?=
bench: bootstrap
	@if [ -n "$(FULL)" ]; then \
	  $(PY) -m triple_py.bench matrix seed-unary --rounds 6 --duration 3 && \
	  $(PY) -m triple_py.bench matrix seed-unary-py --rounds 6 --duration 3; \
	else \
	  $(PY) benchmarks/matrix_peer.py headline --peer embedded; \
	fi

bench-peers: bootstrap
	$(PY) benchmarks/matrix_peer.py benchmarks/matrices/unary_peers.toml --peer go

# The interop grid (tests/interop/README.md): every peer x wire x case, JUnit XML and JSON.
interop: bootstrap
	mkdir -p build
	$(PY) -m triple_py_testing.interop --junit build/interop.xml --json build/interop.json

# pytest-benchmark micro-benchmarks of the hot path (benchmarks/micro; not in `make test`):
# envelope, pool, protobuf-c pack pooled vs copy, gzip, a unary call triple_py vs grpcio.
# Rounds of >= 0.5 ms keep the per-round data (which benchstat reads) to a few MB; compare
# variants with e.g. `$(PY) -m triple_py.benchstat -col /method results/microbench.json`.
MICROBENCH_JSON ?= results/microbench.json
microbench: bootstrap
	mkdir -p $(dir $(MICROBENCH_JSON))
	$(PY) -m pytest benchmarks/micro -p no:cacheprovider -q \
	  --benchmark-json $(MICROBENCH_JSON) --benchmark-save-data \
	  --benchmark-min-time=0.0005 --benchmark-max-time=0.5 --benchmark-min-rounds=10 \
	  --benchmark-warmup=on --benchmark-disable-gc --benchmark-columns=min,median,iqr,rounds
	$(PY) -m triple_py.benchstat $(MICROBENCH_JSON)

clean:
	rm -rf build .build dist csrc/gen *.egg-info triple_py/*.so

# libFuzzer targets (clang): each runs FUZZ_SECONDS from its committed seed corpus;
# new inputs go to build/fuzz/<target>/ so the committed corpus stays small.  Then the
# benchmark text parser (Python) for as long, with the same layout.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := frame gzip tjson session server inplace
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -Icsrc -Icsrc/gen $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FUZZ_CORE := $(filter-out csrc/tri_load.c csrc/tri_hist.c,$(CORE_SRC))

build/fuzz_%: tests/fuzz/fuzz_%.c $(CORE_SRC) $(CORE_HDR) $(wildcard tests/c/*.h) | bootstrap
	mkdir -p build
	clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_CORE) $(LIBS)

fuzz: $(addprefix build/fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/$$t; \
	  echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; \
	  build/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/$$t- build/fuzz/$$t tests/fuzz/corpus/$$t \
	    > build/fuzz/$$t.log 2>&1; rc=$$?; \
	  grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss|==[0-9]+==ERROR|SUMMARY)|cov:" \
	    build/fuzz/$$t.log | tail -4; \
	  found=$$(ls build/fuzz/$$t-crash-* build/fuzz/$$t-leak-* build/fuzz/$$t-timeout-* \
	    build/fuzz/$$t-oom-* 2>/dev/null); \
	  if [ $$rc -ne 0 ] || [ -n "$$found" ]; then \
	    echo "fuzz $$t: exit $$rc; what the target printed last:"; \
	    grep -vE "^ +#[0-9]+ |^(#[0-9]+|INFO:|MS:|NOTE:|stat::|.NEW_FUNC)" \
	      build/fuzz/$$t.log | tail -25; \
	    for f in $$found; do echo "$$f, the input (base64):"; base64 -w0 $$f; echo; done; \
	    exit 1; \
	  fi; \
	done
	@# The benchmark text parser is Python: the same loop, coverage-guided by line tracing
	@# (tests/fuzz/fuzz_benchtext.py; atheris is not packaged by Debian).
	@mkdir -p build/fuzz/benchtext
	@echo "== fuzz benchtext ($(FUZZ_SECONDS) s)"
	@$(PY) tests/fuzz/fuzz_benchtext.py -max_total_time=$(FUZZ_SECONDS) \
	  build/fuzz/benchtext tests/fuzz/corpus/benchtext || { echo "fuzz benchtext: crash found"; exit 1; }

# ThreadSanitizer: the threaded C tests (among them the fork test, tests/c/test_fork.c),
# and a many-threads client stress run
# against the embedded server (loopback), both must report no race.
STRESS_SRC := $(CORE_SRC)
build/ctest-tsan: $(CORE_SRC) $(CTEST_SRC) $(CORE_HDR) $(wildcard tests/c/*.h) | bootstrap
	mkdir -p build
	clang $(CFLAGS_CORE) -fsanitize=thread -Itests/c -o $@ $(CORE_SRC) $(CTEST_SRC) $(LIBS)

build/stress-tsan: tests/stress/stress_client.c $(STRESS_SRC) $(CORE_HDR) | bootstrap
	mkdir -p build
	clang $(CFLAGS_CORE) -fsanitize=thread -o $@ $< $(STRESS_SRC) $(LIBS)

test-tsan: build/ctest-tsan build/stress-tsan
	TSAN_OPTIONS=halt_on_error=1 build/ctest-tsan
	TSAN_OPTIONS=halt_on_error=1 build/stress-tsan

# Leak check of the C tests under valgrind.
test-valgrind: build/ctest
	valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  --error-exitcode=1 build/ctest

# AddressSanitizer + UndefinedBehaviorSanitizer: the C tests, then the Python suite
# with the extension built instrumented (tools/test_asan.sh).
test-asan: build/ctest-asan bootstrap
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build/ctest-asan
	tools/test_asan.sh

# Soak (tools/soak.py): SOAK_SECONDS (60) at 1,000 unary calls in flight on one channel
# against the embedded echo server behind triple_py_testing.faults.FaultProxy, a 0.5 s fault
# window (reset, stall, truncate, close_after) every 5 s; prints a summary, writes
# results/soak-<ts>.json, and fails when RSS grew by more than 5 % from start to end.
# Misuse rides along (tools/soak_misuse.py): a fork every 3 s, a raising done-callback on
# every 1000th future, a channel dropped without close() every 0.5 s; failed or hung
# children, unlogged callback errors, or piled-up threads/fds fail it too.
SOAK_SECONDS ?= 60
soak: bootstrap
	$(PY) tools/soak.py --seconds $(SOAK_SECONDS)
