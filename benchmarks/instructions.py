"""Client instructions per call, counted by callgrind: a cost measure free of timing noise.

    .venv/bin/python benchmarks/instructions.py [--modes fastpath,stream-path]
        [--sizes 128,1KiB,16KiB,1MiB] [-c 50] [--out results/instructions.json]

A mode may name a wire and a Triple dialect: ``fastpath/triple/go`` is the fast path on the
Triple wire with ``triple.dialect = go``, so ``--modes fastpath/triple/go,fastpath/triple/auto``
counts what the second pair of dialect headers costs per call. A mode may also end in
``+<setup>``, a call setup of SETUPS below: ``--modes fastpath+fixed128,fastpath+templated128
--sizes 128`` counts what per-call variety (a ring of 1024 distinct templated bodies) costs
against one fixed body of the same size and schema.

On a shared 2-core VM one QPS figure moves by 10-50 % from round to round, which hides
differences of a few percent between two arms, and against a server that saturates the
machine every arm reaches the same QPS anyway. Instructions executed per call do not move:
for each mode and payload size this runs the C load generator twice under
``valgrind --tool=callgrind`` (all threads, the process from start to exit) with two call
counts, and divides the difference of the totals by the difference of the calls, so the
interpreter's start-up and the run's set-up cancel out. The target is the embedded echo
server in a process of its own (not counted). Callgrind runs the client's threads one at a
time, so this counts work, not contention or waiting: it complements the QPS matrix, it does
not replace it. The figures are for this build of the extension and of libnghttp2.

The mode ``h2load`` counts h2load itself (nghttp2's load tool, one connection, the same
concurrency, the same gRPC-framed BenchmarkRequest and the headers of the bench's h2load arm)
the same way against the same server: the reference the C generator is held to.

Output: one line per (size, mode) with instructions per call and the ratio to the first mode;
``--out`` also keeps the raw totals as JSON.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
from triple_py_testing.peers import start_peer

from triple_py.bench import ConfigError
from triple_py.bench.arms import canonical_mode
from triple_py.bench.units import parse_size

MODES = ("fastpath", "stream-path")  # the C load generator's unary kinds
H2LOAD = "h2load"  # the reference: h2load itself under callgrind
# Calls per run: (small run, large run).  Large payloads cost more per call: fewer calls.
CALLS = [(64 * 1024, (10, 60)), (4 * 1024, (500, 3000)), (0, (2000, 12000))]
CHILD = """
import json, sys
from triple_py.bench import run
target, mode, size, conc, count, wire, dialect, call = sys.argv[1:9]
r = run(target, mode=mode, payload_size=int(size), concurrency=int(conc), duration=0,
        warmup=0, count=int(count), wire=wire, options={"dialect": dialect},
        call=json.loads(call) or None)
print("CALLS", r.calls, r.errors)
"""


# Call setups a mode may name after a "+": the 128 B BenchmarkRequest of issue 22 sent as
# one fixed body, or templated so that every entry of the request ring differs (per-call
# variety). Both go through the same schema path; only the ring's contents differ.
_BENCH_PROTO = str(ROOT / "proto" / "benchmark.proto")
SETUPS: Dict[str, Dict[str, object]] = {
    "fixed128": {"proto": _BENCH_PROTO, "data": '{"payload": "%s"}' % ("A" * 168)},
    "templated128": {"proto": _BENCH_PROTO, "data": '{"payload": "{{randomString 168}}"}'},
    "fixed128md": {"proto": _BENCH_PROTO, "data": '{"payload": "%s"}' % ("A" * 168),
                   "metadata": '{"x-request-id": "0"}'},
    "templated128md": {"proto": _BENCH_PROTO, "data": '{"payload": "{{randomString 168}}"}',
                       "metadata": '{"x-request-id": "{{.RequestNumber}}"}'},
}


def unary_kind(name: str) -> Optional[str]:
    """The arm kind ``name`` stands for (aliases allowed) when it is one of MODES; the name
    may go on with ``/<wire>[/<dialect>]`` and ``+<setup>`` (a key of SETUPS), kept in the
    result."""
    if name == H2LOAD:
        return H2LOAD
    name, plus, setup = name.partition("+")
    if plus and setup not in SETUPS:
        return None
    head, _, rest = name.partition("/")
    try:
        kind = canonical_mode(head)
    except ConfigError:
        return None
    if kind not in MODES:
        return None
    return kind + ("/" + rest if rest else "") + (plus + setup)


def mode_args(mode: str) -> List[str]:
    """[kind, wire, dialect] of a mode named ``kind[/wire[/dialect]]``."""
    parts = mode.split("/")
    return (parts + ["grpc", "auto"][len(parts) - 1:])[:3]


def calls_for(size: int) -> Tuple[int, int]:
    """(small, large) call counts for a payload of ``size`` bytes."""
    return next(counts for floor, counts in CALLS if size >= floor)


def split_setup(mode: str) -> Tuple[str, Dict[str, object]]:
    """A mode named ``name+setup`` is ``name`` with the call setup ``setup`` of SETUPS."""
    name, _, setup = mode.partition("+")
    return name, SETUPS.get(setup, {}) if setup else {}


def h2load_run(address: str, size: int, concurrency: int, count: int) -> Tuple[int, int]:
    """(instructions, calls) of one callgrind run of h2load making ``count`` calls."""
    from triple_py.bench.arms_h2load import h2load_command
    from triple_py.bench.messages import grpc_frame
    from triple_py.bench.runner import spec_of

    spec = spec_of(address, payload_size=size, mode=H2LOAD, concurrency=concurrency,
                   duration=0, warmup=0, count=count)
    with tempfile.TemporaryDirectory() as tmp:
        out, body = Path(tmp) / "callgrind.out", Path(tmp) / "body.grpc"
        body.write_bytes(grpc_frame(spec.request_bytes()))
        command = h2load_command(spec, str(body), str(Path(tmp) / "log"))
        proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                               *command], capture_output=True, text=True, timeout=1800)
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded",
                     proc.stdout)
    collected = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode or not done or not collected:
        raise RuntimeError(f"callgrind run of h2load failed ({size} B): "
                           + (proc.stdout + proc.stderr).strip()[-400:])
    if done.group(1) != done.group(2):
        raise RuntimeError(f"h2load: {done.group(2)} of {done.group(1)} calls succeeded "
                           f"({size} B)")
    return int(collected.group(1)), int(done.group(1))


def counted_run(address: str, mode: str, size: int, concurrency: int,
                count: int) -> Tuple[int, int]:
    """(instructions, calls) of one callgrind run of the load generator (or h2load)."""
    if mode == H2LOAD:
        return h2load_run(address, size, concurrency, count)
    mode, call = split_setup(mode)
    kind, wire, dialect = mode_args(mode)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             "-c", CHILD, address, kind, str(size), str(concurrency), str(count), wire,
             dialect, json.dumps(call)],
            capture_output=True, text=True, timeout=1800, cwd=ROOT)
    calls = re.search(r"^CALLS (\d+) (\d+)$", proc.stdout, re.M)
    collected = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode or not calls or not collected:
        raise RuntimeError(f"callgrind run failed ({mode}, {size} B): "
                           + (proc.stdout + proc.stderr).strip()[-400:])
    if int(calls.group(2)):
        raise RuntimeError(f"{calls.group(2)} calls failed ({mode}, {size} B)")
    return int(collected.group(1)), int(calls.group(1))


def measure(address: str, modes: List[str], sizes: List[int],
            concurrency: int) -> List[Dict[str, object]]:
    """One row per (size, mode): instructions per call and the raw totals."""
    rows = []
    for size in sizes:
        small, large = calls_for(size)
        for mode in modes:
            i1, c1 = counted_run(address, mode, size, concurrency, small)
            i2, c2 = counted_run(address, mode, size, concurrency, large)
            rows.append({"size": size, "mode": mode, "concurrency": concurrency,
                         "instructions_per_call": (i2 - i1) / (c2 - c1),
                         "runs": [{"calls": c1, "instructions": i1},
                                  {"calls": c2, "instructions": i2}]})
            print(f"  {size:>8} B  {mode:<12} {rows[-1]['instructions_per_call']:>12,.0f}",
                  file=sys.stderr, flush=True)
    return rows


def report(rows: List[Dict[str, object]], modes: List[str]) -> str:
    """The table: instructions per call per mode, and each mode's ratio to the first."""
    base = modes[0]
    lines = [f"{'payload':>9}  " + "  ".join(f"{m:>14}" for m in modes)
             + "".join(f"  {m + ' / ' + base:>26}" for m in modes[1:])]
    for size in dict.fromkeys(r["size"] for r in rows):
        per = {r["mode"]: r["instructions_per_call"] for r in rows if r["size"] == size}
        lines.append(f"{size:>8}B  " + "  ".join(f"{per[m]:>14,.0f}" for m in modes)
                     + "".join(f"  {per[m] / per[base]:>26.3f}" for m in modes[1:]))
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="fastpath,stream-path")
    parser.add_argument("--sizes", default="128,1KiB,16KiB,1MiB")
    parser.add_argument("-c", "--concurrency", type=int, default=50)
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    names = args.modes.split(",")
    modes = [unary_kind(name) for name in names]
    unknown = [name for name, mode in zip(names, modes) if mode is None]
    problem = (f"unknown mode {unknown[0]!r} (known: {', '.join(MODES + (H2LOAD,))})"
               if unknown
               else "valgrind is not installed" if shutil.which("valgrind") is None else "")
    if problem:
        print(f"instructions.py: error: {problem}", file=sys.stderr)
        return 2
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    with start_peer("embedded") as server:
        rows = measure(server.address, modes, sizes, args.concurrency)
    print(f"client instructions per call (callgrind), {args.concurrency} in flight, "
          f"embedded echo server")
    print(report(rows, modes))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
