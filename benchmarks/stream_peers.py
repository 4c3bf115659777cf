"""Streaming benchmark against the grpc-go peer: the coalescing writer A/B (issue 3).

The seed's streaming matrix (dubbo-go PR #3746): message size x messages per stream (N) x
concurrent streams (C). Every stream calls /benchmark.BenchmarkService/StreamCall on the
grpc-go peer (tests/peers/go/echo_server.go), sends N BenchmarkRequest messages, half-closes,
then drains the N echoed responses and the final status. Each arm uses ONE connection:

  writer-on   triple_py.insecure_channel(addr): the default coalescing writer (the core's)
  writer-off  the same with options=[("triple.write_buffer_size", 0)]
  grpcio-aio  C asyncio tasks on one grpc.aio channel, stream_stream with call.write /
              done_writing / read

triple_py concurrency design (--threads, default 8): T = min(8, C) Python threads each drive
C/T of the C streams in batches: open a stream with `ch.stream_stream(path)(timeout=60)`,
write N, done_writing(), for each of its streams in turn, then drain them in order (read N and
the final status), recording each stream's latency from its open to its status; then the next
batch. `--threads 0` is the plain design, one thread per stream looping open / write N /
done_writing / read N. Measured here (writer-on, 2 CPUs shared with other jobs, 3 interleaved
rounds x 2 s, median messages/s; the spread between rounds was up to +-30%):

  cell (size x N x C)   one thread/stream   16 threads   8 threads   4 threads   2 threads
  128 x 512 x 32             425,797          491,755      599,930         -           -
  128 x 128 x 32             372,465          431,278      504,443         -           -
  128 x 512 x 128            411,886          705,850      837,908         -           -
  4096 x 512 x 128            97,417           98,229      119,686         -           -
  (another run)
  128 x 512 x 32             662,240              -        613,088     591,074     528,357
  128 x 128 x 128            404,400              -        696,861     603,357     672,352
  1024 x 512 x 128           130,910              -        230,997     212,714     262,073
  4096 x 128 x 32             57,661              -         70,205      61,591      64,377

Fewer threads than streams is faster at C = 128 (up to 2x: 128 threads fight over the GIL)
and no slower at C = 32; 8 threads was the best or within noise of the best everywhere.

Figures per cell and arm (median over rounds): streams/s; messages/s = streams/s x N (a
message and its echo counted once); p50/p99 of the stream latency (open to final status); for
the triple_py arms, write syscalls per message = the ch.stats()["write_syscalls"] delta over
the measured window / messages written in that window (counted per stream when done_writing
returns inside the window). "vs aio" is messages/s divided by grpcio-aio's.

Every arm opens a new connection, warms up (excluded), then measures a fixed window. A stream
counts with the fraction of its life inside the window (see StreamRecorder: grpc.aio's streams
at 512 x 128 outlive a 3 s window and run in lock-step waves, so counting only completions
would quantize its rate to whole waves); the streams are let finish after the window, and the
latency sample is every stream that overlaps the window. Rounds interleave the arms and
reverse their order every other round. Raw per-round data (including the plain completion
counts): results/stream_peers-<timestamp>.json (or --out).

The arm implementations (and StreamRecorder) live in triple_py.bench: writer-on/off are its
triple-py-bidi arm, grpcio-aio its grpcio-aio-bidi arm (triple_py/bench/arms_*.py); this
script adapts their BenchResult to its StreamMeasurement. The C load generator's bidi mode
on the same matrix: `python -m triple_py.bench matrix seed-stream --target HOST:PORT`.

--strace-check runs one cell (128 B x 512 x 32, writer-on) in a child process under
`strace -f -c -e trace=write,writev,sendmsg,sendto` and prints the write-family syscalls per
message strace saw next to the counter's figure from the same child (both over the child
channel's whole life: counters from a fresh channel, every message written).

Usage: .venv/bin/python benchmarks/stream_peers.py [--rounds 3] [--duration 3] [--warmup 0.5]
       [--quick] [--strace-check] [--threads T]
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from unary_peers import (  # noqa: E402  (shared conventions of the unary benchmark)
    ROOT, TRIPLE_PY_SKIPPED, PeerDied, describe, environment, fmt, median)
from triple_py.bench import arms_grpcio, recorders  # noqa: E402  (unary_peers put ROOT on the path)
from triple_py.bench.result import BenchResult  # noqa: E402
from triple_py.bench.spec import RunSpec  # noqa: E402
if not TRIPLE_PY_SKIPPED:
    from triple_py.bench import arms_triple_py  # noqa: E402
from triple_py.bench.messages import STREAM_METHOD, encode_payload  # noqa: E402
from triple_py_testing.peers import Peer, start_peer  # noqa: E402

ARMS = ("writer-on", "writer-off", "grpcio-aio")
BASELINE = "grpcio-aio"
TRIPLE_OPTIONS = {"writer-on": None, "writer-off": [("triple.write_buffer_size", 0)]}
STREAM_TIMEOUT = 60.0
JOIN_TIMEOUT = STREAM_TIMEOUT + 5
SIZES, MESSAGES, STREAMS = (128, 1024, 4096), (128, 512), (32, 128)
QUICK_CELL = (128, 512, 32)  # --quick: the cell the issue's write-syscall target is about
STRACE_CELL = (128, 512, 32)
STRACE_SYSCALLS = ("write", "writev", "sendmsg", "sendto")
DEFAULT_THREADS = 8  # triple_py arms: see the docstring


@dataclasses.dataclass
class StreamMeasurement:
    """One arm's figures for one round of one cell. Latencies in milliseconds."""

    arm: str
    streams_per_s: Optional[float] = None
    messages_per_s: Optional[float] = None
    streams: int = 0  # successful streams overlapping the window (the latency sample)
    streams_completed: int = 0  # successful streams that ended inside the window
    completed_per_s: Optional[float] = None
    errors: int = 0
    seconds: float = 0.0
    p50_ms: Optional[float] = None
    p99_ms: Optional[float] = None
    mean_ms: Optional[float] = None
    max_ms: Optional[float] = None
    messages_written: int = 0  # inside the window
    write_syscalls_per_message: Optional[float] = None
    threads: Optional[int] = None  # triple_py: Python threads driving the streams
    stats_delta: Optional[Dict[str, int]] = None
    failed: Optional[str] = None


StreamRecorder = recorders.StreamRecorder  # spans, messages written, final_stats


def _ms(ns: Optional[float]) -> Optional[float]:
    return None if ns is None else ns / 1e6


def stream_measurement(result: BenchResult) -> StreamMeasurement:
    """This script's StreamMeasurement of a triple_py.bench BenchResult (StreamRecorder's
    overlap-share throughput, completions in the window kept beside it)."""
    lat = result.latency
    failures = [n for n in result.notes if "failed" in n]
    return StreamMeasurement(
        result.arm, streams_per_s=result.qps, messages_per_s=result.messages_per_s,
        streams=result.streams, streams_completed=result.extra.get("streams_completed", 0),
        completed_per_s=result.extra.get("completed_per_s"), errors=result.errors,
        seconds=result.elapsed_s, p50_ms=_ms(lat.p50), p99_ms=_ms(lat.p99),
        mean_ms=_ms(lat.mean), max_ms=_ms(lat.max), messages_written=result.messages_sent,
        write_syscalls_per_message=result.per_message.get("write_syscalls")
        if result.per_message else None,
        threads=result.extra.get("threads"), stats_delta=result.counters or None,
        failed=failures[0] if failures else None)


def _spec(arm: str, mode: str, address: str, request: bytes, n: int, concurrency: int,
          warmup: float, duration: float, threads: int) -> RunSpec:
    return RunSpec(arm=arm, mode=mode, target=address, method=STREAM_METHOD,
                   payload_size=len(request), concurrency=concurrency, connections=1,
                   duration=duration, warmup=warmup, stream_messages=n,
                   write_buffer_size=0 if arm == "writer-off" else RunSpec.write_buffer_size,
                   timeout=STREAM_TIMEOUT, request=request, options={"threads": threads})


def triple_arm(arm: str, address: str, request: bytes, n: int, concurrency: int,
               warmup: float, duration: float, threads: int = DEFAULT_THREADS,
               recorder: Optional[StreamRecorder] = None) -> StreamMeasurement:
    """C streams on one triple_py channel, from `threads` threads (0: one per stream):
    triple_py.bench's triple-py-bidi arm (triple_py/bench/arms_triple_py.py)."""
    spec = _spec(arm, "triple-py-bidi", address, request, n, concurrency, warmup, duration,
                 threads)
    return stream_measurement(arms_triple_py.triple_py_bidi(spec, recorder))


def grpcio_aio_arm(arm: str, address: str, request: bytes, n: int, concurrency: int,
                   warmup: float, duration: float, threads: int = 0) -> StreamMeasurement:
    """C asyncio tasks on one grpc.aio channel, each looping over streams:
    triple_py.bench's grpcio-aio-bidi arm (triple_py/bench/arms_grpcio.py)."""
    spec = _spec(arm, "grpcio-aio-bidi", address, request, n, concurrency, warmup, duration,
                 threads)
    return stream_measurement(arms_grpcio.grpcio_aio_bidi(spec))


ARM_FUNCTIONS = {"writer-on": triple_arm, "writer-off": triple_arm, "grpcio-aio": grpcio_aio_arm}


def run_arm(arm: str, address: str, request: bytes, n: int, concurrency: int,
            args: argparse.Namespace) -> StreamMeasurement:
    """One arm for one round; an exception becomes a failed measurement, not a crash."""
    if arm in TRIPLE_OPTIONS and TRIPLE_PY_SKIPPED:
        return StreamMeasurement(arm, failed=f"SKIPPED: {TRIPLE_PY_SKIPPED}")
    try:
        return ARM_FUNCTIONS[arm](arm, address, request, n, concurrency, args.warmup,
                                  args.duration, args.threads)
    except Exception as exc:
        return StreamMeasurement(arm, failed=describe(exc))


FIELDS = ("streams_per_s", "messages_per_s", "p50_ms", "p99_ms", "mean_ms", "max_ms",
          "write_syscalls_per_message")


def summarize(rounds: List[Dict[str, StreamMeasurement]], arms: List[str]) -> Dict[str, dict]:
    """Per arm: the median of each figure over the rounds, and messages/s / grpcio-aio's."""
    summary = {}
    for arm in arms:
        ms = [r[arm] for r in rounds]
        summary[arm] = {field: median([getattr(m, field) for m in ms]) for field in FIELDS}
        summary[arm]["errors"] = sum(m.errors for m in ms)
        summary[arm]["failed"] = sorted({m.failed for m in ms if m.failed})
    base = summary.get(BASELINE, {}).get("messages_per_s")
    for arm in arms:
        rate = summary[arm]["messages_per_s"]
        summary[arm]["vs_" + BASELINE] = rate / base if rate is not None and base else None
    return summary


def print_table(title: str, summary: Dict[str, dict]) -> None:
    print(f"\n{title}")
    header = (f"{'arm':<11} {'streams/s':>9} {'msgs/s':>10} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'vs aio':>7} {'writes/msg':>10}  notes")
    print(header)
    print("-" * len(header))
    for arm, s in summary.items():
        notes = "; ".join(s["failed"])
        if s["messages_per_s"] is None:
            print(f"{arm:<11} {'-':>9} {'-':>10} {'-':>8} {'-':>8} {'-':>7} {'-':>10}  {notes}")
            continue
        print(f"{arm:<11} {s['streams_per_s']:>9,.1f} {s['messages_per_s']:>10,.0f} "
              f"{fmt(s['p50_ms'], '.1f'):>8} {fmt(s['p99_ms'], '.1f'):>8} "
              f"{fmt(s['vs_' + BASELINE], '.2f', 'x'):>7} "
              f"{fmt(s['write_syscalls_per_message'], '.4f'):>10}  {notes}")


def run_cell(peer: Peer, size: int, n: int, concurrency: int,
             args: argparse.Namespace) -> dict:
    """All rounds of one cell: prints its table, returns its record."""
    request = encode_payload(os.urandom(size))
    rounds: List[Dict[str, StreamMeasurement]] = []
    for r in range(args.rounds):
        results = {}
        for arm in (args.arms if r % 2 == 0 else args.arms[::-1]):
            results[arm] = run_arm(arm, peer.address, request, n, concurrency, args)
            if peer.process.poll() is not None:
                raise PeerDied(f"the grpc-go peer exited with {peer.process.returncode} "
                               f"during the {arm} arm ({size} B x {n} x {concurrency})")
        rounds.append(results)
    summary = summarize(rounds, args.arms)
    print_table(f"== {size} B x {n} messages/stream x {concurrency} streams, one connection "
                f"per arm; median of {args.rounds} rounds ==", summary)
    return {"size": size, "request_bytes": len(request), "messages": n,
            "concurrency": concurrency, "summary": summary,
            "rounds": [{"order": list(r), "arms": {a: dataclasses.asdict(m)
                                                   for a, m in r.items()}} for r in rounds]}


def print_overview(cells: List[dict]) -> None:
    """One line per cell: messages/s of every arm, the two ratios, writes per message."""
    def get(cell: dict, arm: str, field: str) -> Optional[float]:
        return cell["summary"].get(arm, {}).get(field)

    print("\n== overview: messages/s (median), ratios to grpcio-aio, write syscalls per "
          "message ==")
    header = (f"{'size':>5} {'N':>4} {'C':>4} {'on msgs/s':>10} {'off msgs/s':>10} "
              f"{'aio msgs/s':>10} {'on/aio':>7} {'off/aio':>7} {'on w/msg':>9} "
              f"{'off w/msg':>9}")
    print(header)
    print("-" * len(header))
    for c in cells:
        print(f"{c['size']:>5} {c['messages']:>4} {c['concurrency']:>4} "
              f"{fmt(get(c, 'writer-on', 'messages_per_s'), ',.0f'):>10} "
              f"{fmt(get(c, 'writer-off', 'messages_per_s'), ',.0f'):>10} "
              f"{fmt(get(c, 'grpcio-aio', 'messages_per_s'), ',.0f'):>10} "
              f"{fmt(get(c, 'writer-on', 'vs_' + BASELINE), '.2f', 'x'):>7} "
              f"{fmt(get(c, 'writer-off', 'vs_' + BASELINE), '.2f', 'x'):>7} "
              f"{fmt(get(c, 'writer-on', 'write_syscalls_per_message'), '.4f'):>9} "
              f"{fmt(get(c, 'writer-off', 'write_syscalls_per_message'), '.4f'):>9}")


def check_targets(cells: List[dict]) -> List[str]:
    """The issue's targets, each as a 'MET' / 'MISSED' line (for the cells that ran)."""
    lines = []
    for c in cells:
        s, where = c["summary"], f"{c['size']} B x {c['messages']} x {c['concurrency']}"
        on, off = s.get("writer-on", {}), s.get("writer-off", {})
        if c["size"] == 128 and c["messages"] == 512:
            for name, arm, limit in (("writer-on", on, 0.01), ("writer-off", off, 1.05)):
                value = arm.get("write_syscalls_per_message")
                if value is not None:
                    verdict = "MET" if value <= limit else "MISSED"
                    lines.append(f"{verdict:<6} {name} write syscalls/message <= {limit:g} at "
                                 f"{where}: {value:.4f}")
        if c["size"] == 128 and on.get("vs_" + BASELINE) is not None:
            ratio = on["vs_" + BASELINE]
            verdict = "MET" if ratio >= 5 else "MISSED"
            lines.append(f"{verdict:<6} writer-on messages/s >= 5x grpcio-aio at {where}: "
                         f"{ratio:.2f}x")
    return lines


# ---- --strace-check ---------------------------------------------------------------------

STRACE_LINE = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$")


def parse_strace_summary(text: str) -> Dict[str, int]:
    """syscall -> calls from a `strace -c` table."""
    counts = {}
    for line in text.splitlines():
        match = STRACE_LINE.match(line)
        if match and match.group(2) != "total":
            counts[match.group(2)] = int(match.group(1))
    return counts


def child_main(args: argparse.Namespace) -> int:
    """--child: one triple_py arm on one cell; prints one JSON line with the whole-run counts."""
    size, n, concurrency = args.child_cell
    recorder = StreamRecorder()
    m = triple_arm(args.child, args.child_address, encode_payload(os.urandom(size)), n,
                   concurrency, args.warmup, args.duration, args.threads, recorder)
    print(json.dumps({"measurement": dataclasses.asdict(m), "final_stats": recorder.final_stats,
                      "messages_written_total": recorder.written_total}), flush=True)
    return 0


def strace_check(peer: Peer, args: argparse.Namespace) -> dict:
    """Runs the writer-on arm of STRACE_CELL in a child under strace -f -c; prints both
    figures. Returns the record for the JSON file."""
    size, n, concurrency = STRACE_CELL
    print(f"\n== --strace-check: writer-on, {size} B x {n} x {concurrency}, child process "
          f"under strace -f -c ==")
    if shutil.which("strace") is None:
        print("strace is not installed; install it with: sudo apt-get install strace")
        return {"skipped": "strace not installed"}
    if TRIPLE_PY_SKIPPED:
        print(f"skipped: {TRIPLE_PY_SKIPPED}")
        return {"skipped": TRIPLE_PY_SKIPPED}
    with tempfile.NamedTemporaryFile(prefix="strace-", suffix=".txt") as out:
        command = ["strace", "-f", "-c", "-e", "trace=" + ",".join(STRACE_SYSCALLS),
                   "-o", out.name, sys.executable, str(Path(__file__).resolve()),
                   "--child", "writer-on", "--child-address", peer.address,
                   "--child-cell", str(size), str(n), str(concurrency),
                   "--warmup", str(args.warmup), "--duration", str(args.duration),
                   "--threads", str(args.threads)]
        proc = subprocess.run(command, capture_output=True, text=True,
                              timeout=args.warmup + args.duration + 10 * JOIN_TIMEOUT)
        summary_text = Path(out.name).read_text()
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        print(f"the child failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
        return {"failed": proc.stderr[-2000:], "strace_summary": summary_text}
    child = json.loads(lines[-1])
    counts = parse_strace_summary(summary_text)
    messages = child["messages_written_total"]
    counter = child["final_stats"]["write_syscalls"]
    total = sum(counts.get(s, 0) for s in STRACE_SYSCALLS)
    window = child["measurement"]
    print(summary_text.rstrip())
    print(f"\nmessages written by the child (whole run): {messages:,}; streams completed in "
          f"its window: {window['streams_completed']:,} ({fmt(window['streams_per_s'], ',.1f')}/s "
          f"under strace)")
    print(f"{'source':<52} {'syscalls':>9} {'per message':>12}")
    rows = [("strace: write+writev+sendmsg+sendto (all fds)", total)]
    rows += [(f"strace: {s}", counts[s]) for s in STRACE_SYSCALLS if s in counts]
    rows.append(('counter: ch.stats()["write_syscalls"] (socket writev)', counter))
    for label, value in rows:
        print(f"{label:<52} {value:>9,} {value / messages if messages else float('nan'):>12.4f}")
    print(f"counter over the child's measured window only: "
          f"{fmt(window['write_syscalls_per_message'], '.4f')} per message")
    print("(the counter counts socket writevs only; strace's plain `write` calls go to the "
          "core's eventfds (wake-ups) and one to this child's stdout: `strace -y` shows "
          "writev on the TCP socket, write on anon_inode)")
    return {"cell": list(STRACE_CELL), "command": command, "strace_summary": summary_text,
            "strace_counts": counts, "child": child,
            "strace_per_message": total / messages if messages else None,
            "strace_writev_per_message": counts.get("writev", 0) / messages if messages else None,
            "counter_per_message": counter / messages if messages else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="measured seconds per arm")
    parser.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds first")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--messages", type=int, nargs="+", default=list(MESSAGES))
    parser.add_argument("--streams", type=int, nargs="+", default=list(STREAMS))
    parser.add_argument("--quick", action="store_true",
                        help="one cell only: %d B x %d x %d" % QUICK_CELL)
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                        help="triple_py arms: Python threads driving the C streams "
                             "(default 8; 0: one thread per stream)")
    parser.add_argument("--strace-check", action="store_true",
                        help="also cross-check the write-syscall counter with strace -f -c")
    parser.add_argument("--no-matrix", action="store_true",
                        help="with --strace-check: run only the strace check")
    parser.add_argument("--out", type=Path,
                        help="JSON file (default results/stream_peers-<timestamp>.json)")
    parser.add_argument("--child", choices=tuple(TRIPLE_OPTIONS), help=argparse.SUPPRESS)
    parser.add_argument("--child-address", help=argparse.SUPPRESS)
    parser.add_argument("--child-cell", type=int, nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_main(args)
    sys.stdout.reconfigure(line_buffering=True)
    cells = ([QUICK_CELL] if args.quick else
             list(itertools.product(args.sizes, args.messages, args.streams)))
    if args.no_matrix:
        cells = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or ROOT / "results" / f"stream_peers-{stamp}.json"
    report = {"benchmark": "stream_peers", "started": stamp, "peer": "grpc-go",
              "args": {k: str(v) for k, v in vars(args).items()},
              "environment": environment(), "cells": []}
    if TRIPLE_PY_SKIPPED:
        print(f"NOTE: the triple_py arms are skipped: {TRIPLE_PY_SKIPPED}")

    with start_peer("go") as peer:
        print(f"grpc-go peer at {peer.address}; {len(cells)} cells; {args.rounds} rounds x "
              f"{args.duration:g} s (+{args.warmup:g} s warm-up) per arm; triple_py threads: "
              f"{args.threads or 'one per stream'}; {os.cpu_count()} CPUs")
        try:
            for size, n, concurrency in cells:
                report["cells"].append(run_cell(peer, size, n, concurrency, args))
        except PeerDied as exc:
            report["aborted"] = str(exc)
            print(f"\nABORTED: {exc}")
        if report["cells"]:
            print_overview(report["cells"])
            report["targets"] = check_targets(report["cells"])
            if report["targets"]:
                print("\n== issue 3 targets ==")
                print("\n".join(report["targets"]))
        if args.strace_check and "aborted" not in report:
            report["strace_check"] = strace_check(peer, args)

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"\nraw data: {out}")
    failed = [f for c in report["cells"] for v in c["summary"].values()
              for f in v["failed"] if not f.startswith("SKIPPED")]
    strace_failed = "failed" in report.get("strace_check", {})
    return 1 if failed or strace_failed or "aborted" in report else 0


if __name__ == "__main__":
    sys.exit(main())
