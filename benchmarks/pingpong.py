"""Ping-pong over one bidi stream: the coalescing writer must not add latency (issue 3).

Against the grpc-go peer (tests/peers/go/echo_server.go), each arm opens ONE connection and
ONE /benchmark.BenchmarkService/StreamCall stream, makes --warmup-trips unmeasured round trips,
then times --trips round trips (default 1,000) of a 128 B BenchmarkRequest: write one
message, read its echo. Then it half-closes and checks the final status.

  writer-on   triple_py.insecure_channel(addr): the default coalescing writer (watermark
              and delay from the core's options table); pending bytes must be flushed before a read blocks
  writer-off  the same with options=[("triple.write_buffer_size", 0)]

--idiom says how the round trips are driven:
  loop        (default) the caller writes, then reads the echo: the read flushes the writer;
  iterator    grpcio's idiom: a request iterator, consumed on another thread, yields the next
              request once the caller's response loop has handed it the previous echo; the
              read is already waiting when the request is written;
  aio         the same idiom on triple_py.aio: an async request iterator and `async for`.
In the last two a writer that held the request until its flush timer would add
triple.write_buffer_delay_us (200 us) to every round trip: writer-off is the reference.

Rounds interleave the two arms and reverse their order every other round. Per arm: the
median over rounds of each round's median round trip, of its p99, and of its mean (total
time / trips); write syscalls per round trip from ch.stats(). The issue's target: the median
round trip with the writer on is within 5% of writer off. The verdict uses the paired
figure, the median over rounds of (on / off) of the same round, which tolerates load that
drifts between rounds better than the ratio of the two medians (also printed).
Raw per-round data: results/pingpong-<timestamp>.json (or --out).

Usage: .venv/bin/python benchmarks/pingpong.py [--rounds 7] [--trips 1000] [--size 128]
           [--idiom loop|iterator|aio]
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import queue
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import triple_py
from triple_py.bench.environment import environment
from triple_py.bench.messages import STREAM_METHOD, encode_payload
from triple_py.bench.recorders import describe, percentile
from triple_py_testing.peers import start_peer

ROOT = Path(__file__).resolve().parents[1]

ARMS = {"writer-on": None, "writer-off": [("triple.write_buffer_size", 0)]}
STREAM_TIMEOUT = 60.0
TARGET = 1.05


class PeerDied(RuntimeError):
    """The grpc-go peer exited during the run: later figures would be meaningless."""


def median(values: List[Optional[float]]) -> Optional[float]:
    """The median of the values present (None: no round had one)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def fmt(value: Optional[float], spec: str, suffix: str = "") -> str:
    """``value`` formatted, or "-" when there is none."""
    return "-" if value is None else format(value, spec) + suffix


@dataclasses.dataclass
class PingPong:
    """One arm's round. Times in microseconds."""

    arm: str
    trips: int = 0
    median_us: Optional[float] = None
    p99_us: Optional[float] = None
    mean_us: Optional[float] = None
    min_us: Optional[float] = None
    write_syscalls_per_trip: Optional[float] = None
    stats_delta: Optional[Dict[str, int]] = None
    failed: Optional[str] = None


def pingpong_arm(arm: str, address: str, request: bytes, trips: int,
                 warmup_trips: int) -> PingPong:
    """One connection, one stream, `warmup_trips` then `trips` timed write/read pairs."""
    with triple_py.insecure_channel(address, options=ARMS[arm]) as channel:
        call = channel.stream_stream(STREAM_METHOD)(timeout=STREAM_TIMEOUT)
        try:
            for _ in range(warmup_trips):
                call.write(request)
                if next(call) != request:
                    raise ValueError("warm-up response != request")
            before = channel.stats()
            times = []
            clock = time.perf_counter
            began = clock()
            for _ in range(trips):
                started = clock()
                call.write(request)
                response = next(call)
                times.append(clock() - started)
                if response != request:
                    raise ValueError("response != request")
            total = clock() - began
            after = channel.stats()
            call.done_writing()
            for extra in call:
                raise ValueError(f"unexpected response after done_writing: {extra[:16]!r}")
        except BaseException:
            call.cancel()
            raise
    return summarize(arm, times, total, before, after)


def summarize(arm: str, times: list, total: float, before: dict, after: dict) -> PingPong:
    """One arm's round from its round-trip times (seconds) and channel stats."""
    trips = len(times)
    times = sorted(times)
    delta = {k: after[k] - before[k] for k in after if isinstance(after[k], int)}
    return PingPong(arm, trips=trips, median_us=statistics.median(times) * 1e6,
                    p99_us=percentile(times, 0.99) * 1e6, mean_us=total / trips * 1e6,
                    min_us=times[0] * 1e6,
                    write_syscalls_per_trip=delta["write_syscalls"] / trips, stats_delta=delta)


def pingpong_iterator_arm(arm: str, address: str, request: bytes, trips: int,
                          warmup_trips: int) -> PingPong:
    """grpcio's idiom: a request iterator (on the call's own thread) that yields the next
    request once the response loop has handed it the previous echo."""
    echoes: queue.Queue = queue.Queue()
    sent_at: list = []
    clock = time.perf_counter

    def requests():
        for _ in range(warmup_trips + trips):
            sent_at.append(clock())
            yield request
            if echoes.get(timeout=STREAM_TIMEOUT) != request:
                return

    with triple_py.insecure_channel(address, options=ARMS[arm]) as channel:
        call = channel.stream_stream(STREAM_METHOD)(requests(), timeout=STREAM_TIMEOUT)
        times, before, began = [], None, 0.0
        for i, response in enumerate(call):
            if i == warmup_trips - 1:  # the timed trips start with the next request
                before, began = channel.stats(), clock()
            elif i >= warmup_trips:
                times.append(clock() - sent_at[i])
            echoes.put(response)
        total, after = clock() - began, channel.stats()
        if len(times) != trips:
            raise ValueError(f"{len(times)} echoes timed of {trips}")
    return summarize(arm, times, total, before, after)


def pingpong_aio_arm(arm: str, address: str, request: bytes, trips: int,
                     warmup_trips: int) -> PingPong:
    """The iterator idiom on triple_py.aio: an async request iterator and ``async for``."""
    import triple_py.aio

    async def run() -> PingPong:
        echoes: asyncio.Queue = asyncio.Queue()
        sent_at: list = []
        clock = time.perf_counter

        async def requests():
            for _ in range(warmup_trips + trips):
                sent_at.append(clock())
                yield request
                if await echoes.get() != request:
                    return

        async with triple_py.aio.insecure_channel(address, options=ARMS[arm]) as channel:
            stats = channel._sync.core_channel.stats
            call = channel.stream_stream(STREAM_METHOD)(requests(), timeout=STREAM_TIMEOUT)
            times, before, began, i = [], None, 0.0, 0
            async for response in call:
                if i == warmup_trips - 1:
                    before, began = stats(), clock()
                elif i >= warmup_trips:
                    times.append(clock() - sent_at[i])
                echoes.put_nowait(response)
                i += 1
            total, after = clock() - began, stats()
        return summarize(arm, times, total, before, after)

    return asyncio.run(run())


IDIOMS = {"loop": pingpong_arm, "iterator": pingpong_iterator_arm, "aio": pingpong_aio_arm}


def run_arm(arm: str, address: str, request: bytes, args: argparse.Namespace) -> PingPong:
    try:
        # The iterator idioms start their clock at the last warm-up echo: at least one.
        warmup = args.warmup_trips if args.idiom == "loop" else max(1, args.warmup_trips)
        return IDIOMS[args.idiom](arm, address, request, args.trips, warmup)
    except Exception as exc:
        return PingPong(arm, failed=describe(exc))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--trips", type=int, default=1000, help="timed round trips per round")
    parser.add_argument("--warmup-trips", type=int, default=200)
    parser.add_argument("--size", type=int, default=128, help="payload bytes per message")
    parser.add_argument("--idiom", choices=list(IDIOMS), default="loop",
                        help="how round trips are driven (see the module)")
    parser.add_argument("--out", type=Path,
                        help="JSON file (default results/pingpong-<timestamp>.json)")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or ROOT / "results" / f"pingpong-{stamp}.json"
    report = {"benchmark": "pingpong", "idiom": args.idiom, "started": stamp, "peer": "grpc-go",
              "args": {k: str(v) for k, v in vars(args).items()},
              "environment": environment(), "rounds": []}
    request = encode_payload(os.urandom(args.size))
    arms = list(ARMS)

    with start_peer("go") as peer:
        print(f"grpc-go peer at {peer.address}; {args.rounds} rounds x {args.trips} round trips "
              f"of {args.size} B (+{args.warmup_trips} warm-up) on one bidi stream per arm, "
              f"idiom {args.idiom}; {os.cpu_count()} CPUs")
        print(f"\n{'round':>5} {'arm':<11} {'median us':>9} {'p99 us':>8} {'mean us':>8} "
              f"{'writes/trip':>11}  notes")
        try:
            for r in range(args.rounds):
                results = {}
                for arm in (arms if r % 2 == 0 else arms[::-1]):
                    m = results[arm] = run_arm(arm, peer.address, request, args)
                    print(f"{r + 1:>5} {arm:<11} {fmt(m.median_us, '.1f'):>9} "
                          f"{fmt(m.p99_us, '.1f'):>8} {fmt(m.mean_us, '.1f'):>8} "
                          f"{fmt(m.write_syscalls_per_trip, '.3f'):>11}  {m.failed or ''}")
                    if peer.process.poll() is not None:
                        raise PeerDied(f"the grpc-go peer exited with "
                                       f"{peer.process.returncode} during the {arm} arm")
                report["rounds"].append({"order": list(results), "arms": {
                    a: dataclasses.asdict(m) for a, m in results.items()}})
        except PeerDied as exc:
            report["aborted"] = str(exc)
            print(f"\nABORTED: {exc}")

    summary = {}
    for arm in arms:
        ms = [PingPong(**r["arms"][arm]) for r in report["rounds"]]
        summary[arm] = {f: median([getattr(m, f) for m in ms])
                        for f in ("median_us", "p99_us", "mean_us", "write_syscalls_per_trip")}
        summary[arm]["failed"] = sorted({m.failed for m in ms if m.failed})
    on, off = summary["writer-on"], summary["writer-off"]
    ratios = {f: on[f] / off[f] if on[f] and off[f] else None
              for f in ("median_us", "p99_us", "mean_us")}
    per_round = [r["arms"]["writer-on"]["median_us"] / r["arms"]["writer-off"]["median_us"]
                 for r in report["rounds"]
                 if r["arms"]["writer-on"]["median_us"] and r["arms"]["writer-off"]["median_us"]]
    report["summary"], report["ratio_on_off"] = summary, ratios
    report["ratio_on_off_per_round"] = per_round

    print(f"\n== ping-pong ({args.idiom}), {args.size} B, {args.trips} round trips per round; median of "
          f"{len(report['rounds'])} rounds ==")
    header = (f"{'arm':<11} {'median us':>9} {'p99 us':>8} {'mean us':>8} {'writes/trip':>11}"
              f"  notes")
    print(header)
    print("-" * len(header))
    for arm, s in summary.items():
        print(f"{arm:<11} {fmt(s['median_us'], '.1f'):>9} {fmt(s['p99_us'], '.1f'):>8} "
              f"{fmt(s['mean_us'], '.1f'):>8} {fmt(s['write_syscalls_per_trip'], '.3f'):>11}  "
              + "; ".join(s["failed"]))
    print(f"{'on/off':<11} {fmt(ratios['median_us'], '.3f', 'x'):>9} "
          f"{fmt(ratios['p99_us'], '.3f', 'x'):>8} {fmt(ratios['mean_us'], '.3f', 'x'):>8}")
    paired = statistics.median(per_round) if per_round else None
    report["ratio_on_off_paired_median"] = paired
    if per_round:
        print("per-round on/off (median round trip): "
              + " ".join(f"{x:.3f}" for x in per_round)
              + f"; their median {paired:.3f}")
    if paired is not None:
        verdict = "MET" if paired <= TARGET else "MISSED"
        print(f"{verdict}: writer on within {TARGET - 1:.0%} of writer off (median over "
              f"rounds of the paired on/off ratio of median round trips = {paired:.3f}; "
              f"ratio of the medians above = {ratios['median_us']:.3f})")

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"\nraw data: {out}")
    failed = [f for s in summary.values() for f in s["failed"]]
    return 1 if failed or "aborted" in report else 0


if __name__ == "__main__":
    sys.exit(main())
