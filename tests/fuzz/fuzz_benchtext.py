"""Coverage-guided fuzzing of the benchmark text parser and the benchstat pipeline behind it.

The parser is Python (triple_py.benchstat), so libFuzzer cannot drive it, and atheris (a
libFuzzer for Python) is not packaged by Debian. This is the same loop in plain Python, with
libFuzzer's command line shape and its final statistics:

    python tests/fuzz/fuzz_benchtext.py -max_total_time=60 [-seed=N] WORK_DIR CORPUS_DIR...

Each input is split at its first NUL byte into an "old" and a "new" file (no NUL: one file),
read as Go benchmark text or harness JSON, compared (build_tables) and rendered as text and
CSV, exactly as ``python -m triple_py.benchstat old new`` does. The only exception allowed
out is BenchstatError (the CLI prints it as ``benchstat: ...`` and exits); anything else is
a crash: the input is written to ``WORK_DIR/../benchtext-crash-<sha1>`` with its traceback
and the run exits 1. Guidance: the set of (file, line) pairs of triple_py/benchstat that an
input executes (sys.settrace); an input that reaches a new pair joins the corpus in
WORK_DIR. Mutations are libFuzzer's usual ones plus token insertion from a dictionary of
the format's words.
"""
from __future__ import annotations

import hashlib
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from triple_py.benchstat.format import render_csv, render_text  # noqa: E402
from triple_py.benchstat.inputs import InputSpec  # noqa: E402
from triple_py.benchstat.pipeline import BenchstatError, Options, build_tables  # noqa: E402

# Where the benchstat modules were imported from (the ASan test run imports a copy).
PACKAGE_DIR = str(Path(build_tables.__code__.co_filename).parent)
MAX_LEN = 4096
TOKENS = [b"Benchmark", b"BenchmarkX-8", b"/sub=", b"-", b" ns/op", b" B/op", b" MB/s",
          b" sec/op", b"Unit ", b" assume=exact", b"goos: ", b"pkg: ", b".file", b"\n",
          b"\t", b" ", b"1e309", b"-0", b"NaN", b"+Inf", b"0x1p-2", b"1_000", b"_",
          b"999999999999999999999", b"\xff", b"\xe2\x80\x8b", b'{"results": [', b"]}",
          b'"unit_values": {"sec/op": ', b'"name": "BenchmarkA"', b"iters", b",", b":"]


def run_one(data: bytes) -> None:
    """The pipeline of one input; raises whatever the code under test raises."""
    old, sep, new = data.partition(b"\0")
    specs = [InputSpec(label="old", path="old.txt", data=old)]
    if sep:
        specs.append(InputSpec(label="new", path="new.txt", data=new))
    try:
        tables = build_tables(specs, Options(), lambda message: None)
    except BenchstatError:
        return
    render_text(tables)

    class Sink:
        def write(self, text: str) -> int:
            return len(text)

    render_csv(tables, Sink())


def traced(data: bytes) -> Tuple[Set[Tuple[str, int]], Optional[str]]:
    """Runs one input; returns the lines it executed and the traceback of a crash."""
    seen: Set[Tuple[str, int]] = set()

    def local(frame, event, arg):  # type: ignore[no-untyped-def]
        if event == "line":
            seen.add((frame.f_code.co_filename, frame.f_lineno))
        return local

    def global_(frame, event, arg):  # type: ignore[no-untyped-def]
        return local if frame.f_code.co_filename.startswith(PACKAGE_DIR) else None

    sys.settrace(global_)
    try:
        run_one(data)
        return seen, None
    except RecursionError:
        return seen, traceback.format_exc()
    except Exception:  # noqa: BLE001 - every other escape is the finding
        return seen, traceback.format_exc()
    finally:
        sys.settrace(None)


def mutate(rng: random.Random, data: bytes, corpus: List[bytes]) -> bytes:
    """One to four of libFuzzer's mutations."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        pos = rng.randint(0, len(b))
        if op == 0 and b:  # flip a bit
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b:  # erase a run
            del b[pos:pos + rng.randint(1, 16)]
        elif op == 2:  # insert random bytes
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3:  # insert a token
            b[pos:pos] = rng.choice(TOKENS)
        elif op == 4 and b:  # duplicate a run
            start = rng.randrange(len(b))
            b[pos:pos] = b[start:start + rng.randint(1, 64)]
        elif op == 5 and corpus:  # splice with another input
            other = rng.choice(corpus)
            cut = rng.randint(0, len(other))
            b = b[:pos] + bytearray(other[cut:])
        elif op == 6 and b:  # replace a digit run with an interesting number
            i = rng.randrange(len(b))
            b[i:i + 1] = rng.choice([b"0", b"-1", b"1e308", b"4294967296", b"1.5", b"-"])
    return bytes(b[:MAX_LEN])


def load(dirs: List[Path]) -> List[bytes]:
    inputs = []
    for d in dirs:
        if d.is_dir():
            inputs += [p.read_bytes()[:MAX_LEN] for p in sorted(d.iterdir()) if p.is_file()]
    return inputs or [b""]


def main(argv: List[str]) -> int:
    seconds, seed, dirs = 60.0, None, []
    for arg in argv:
        if arg.startswith("-max_total_time="):
            seconds = float(arg.split("=", 1)[1])
        elif arg.startswith("-seed="):
            seed = int(arg.split("=", 1)[1])
        else:
            dirs.append(Path(arg))
    if not dirs:
        print(__doc__, file=sys.stderr)
        return 2
    work = dirs[0]
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed if seed is not None else int.from_bytes(os.urandom(4), "big"))
    corpus = load(dirs)
    coverage: Set[Tuple[str, int]] = set()
    execs = crashes = 0

    def execute(data: bytes) -> bool:
        """Runs one input; True when it reached new lines."""
        nonlocal execs, crashes
        execs += 1
        lines, crash = traced(data)
        if crash:
            crashes += 1
            name = "benchtext-crash-" + hashlib.sha1(data).hexdigest()
            (work.parent / name).write_bytes(data)
            (work.parent / (name + ".txt")).write_text(crash)
            print(f"==CRASH== {work.parent / name}\n{crash}", file=sys.stderr)
            return False
        if lines - coverage:
            coverage.update(lines)
            return True
        return False

    for data in list(corpus):
        execute(data)
    end = time.monotonic() + seconds
    while not crashes and time.monotonic() < end:
        data = mutate(rng, rng.choice(corpus), corpus)
        if execute(data):
            corpus.append(data)
            (work / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"#{execs}\tDONE   cov: {len(coverage)} lines corp: {len(corpus)} "
          f"exec/s: {execs / max(seconds, 1e-9):.0f}")
    print(f"stat::number_of_executed_units: {execs}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
