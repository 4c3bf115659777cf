"""asyncio unary benchmark against the grpc-go peer: triple_py.aio vs grpc.aio (issue 10).

Both arms make BenchmarkService/UnaryCall calls with a 128 B payload (a 131-byte
BenchmarkRequest) to the grpc-go peer (tests/peers/go/echo_server.go) from ONE process:

  triple_py.aio  one triple_py.aio channel (one connection), C asyncio tasks on one loop
  grpc.aio       one grpc.aio channel (one connection), C asyncio tasks on one loop

Every arm runs in a fresh event loop (asyncio.run, the default loop) with the same worker
coroutine: `await call(request, timeout=10)` in a loop, checking response == request and
timing every call. It warms up (excluded), then measures a fixed window; calls completing
inside the window count (their latencies give p50/p99). Rounds interleave the arms and
reverse their order every other round. The table shows the median over rounds, and the ratio
triple_py.aio / grpc.aio both as the ratio of the medians and as the median of the per-round
(paired) ratios. cpu us/call is this process's CPU time (all threads: the loop, the
triple_py I/O thread or grpc's threads) over the window per call; the peer runs on the
same machine, so the CPU the client leaves over is what the server gets.

Raw per-round figures: results/aio_unary-<timestamp>.json (or --out).

Usage: .venv/bin/python benchmarks/aio_unary.py [--rounds 5] [--duration 3] [--warmup 1]
       [--concurrency 100] [--payload 128]
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from unary_peers import (  # noqa: E402  (shared conventions of the unary benchmark)
    CALL_TIMEOUT, ROOT, STOP, TRIPLE_PY_SKIPPED, Measurement, PeerDied, Recorder, describe,
    environment, fmt, median)
from triple_py.bench.messages import UNARY_METHOD, encode_payload  # noqa: E402
from triple_py_testing.peers import start_peer  # noqa: E402

if not TRIPLE_PY_SKIPPED:
    import triple_py.aio

TRIPLE, GRPC = "triple_py.aio", "grpc.aio"
ARMS = (TRIPLE, GRPC)


@dataclasses.dataclass
class AioMeasurement(Measurement):
    """unary_peers.Measurement plus the client process CPU time per call (microseconds)."""

    cpu_us_per_call: Optional[float] = None


def open_channel(arm: str, address: str):
    """The arm's asyncio channel (an async context manager)."""
    if arm == TRIPLE:
        return triple_py.aio.insecure_channel(address)
    return grpc.aio.insecure_channel(address)


async def measure_arm(arm: str, address: str, request: bytes, concurrency: int, warmup: float,
                      duration: float) -> AioMeasurement:
    """`concurrency` tasks looping unary calls on one channel of `arm`; one measured window."""
    recorder = Recorder()
    async with open_channel(arm, address) as channel:
        call = channel.unary_unary(UNARY_METHOD)

        async def worker() -> None:
            while recorder.phase != STOP:
                started = time.perf_counter()
                try:
                    ok, error = await call(request, timeout=CALL_TIMEOUT) == request, None
                except Exception as exc:  # counted and reported, the arm goes on
                    ok, error = False, exc
                recorder.record(ok, time.perf_counter() - started, error)

        tasks = [asyncio.create_task(worker()) for _ in range(concurrency)]
        await asyncio.sleep(warmup)
        cpu_before = time.process_time()
        recorder.start_window()
        await asyncio.sleep(duration)
        recorder.stop()
        cpu = time.process_time() - cpu_before
        await asyncio.wait_for(asyncio.gather(*tasks), CALL_TIMEOUT + 5)
    base = recorder.measurement(arm)
    result = AioMeasurement(**dataclasses.asdict(base))
    if result.calls:
        result.cpu_us_per_call = cpu * 1e6 / result.calls
    return result


def run_arm(arm: str, address: str, request: bytes, args: argparse.Namespace) -> AioMeasurement:
    """One arm for one round in a fresh event loop; an exception becomes a failed figure."""
    if arm == TRIPLE and TRIPLE_PY_SKIPPED:
        return AioMeasurement(arm, failed=f"SKIPPED: {TRIPLE_PY_SKIPPED}")
    try:
        return asyncio.run(measure_arm(arm, address, request, args.concurrency, args.warmup,
                                       args.duration))
    except Exception as exc:
        return AioMeasurement(arm, failed=describe(exc))


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def summarize(rounds: List[Dict[str, AioMeasurement]]) -> dict:
    """Per arm: the median of each figure over the rounds; and the triple/grpc ratios."""
    arms = {}
    for arm in ARMS:
        ms = [r[arm] for r in rounds]
        arms[arm] = {field: median([getattr(m, field) for m in ms])
                     for field in ("qps", "p50_ms", "p99_ms", "mean_ms", "max_ms",
                                   "cpu_us_per_call")}
        arms[arm]["qps_min"] = min((m.qps for m in ms if m.qps is not None), default=None)
        arms[arm]["qps_max"] = max((m.qps for m in ms if m.qps is not None), default=None)
        arms[arm]["errors"] = sum(m.errors for m in ms)
        arms[arm]["failed"] = sorted({m.failed for m in ms if m.failed})
    paired = [ratio(r[TRIPLE].qps, r[GRPC].qps) for r in rounds]
    paired = [p for p in paired if p is not None]
    return {"arms": arms,
            "ratio_of_medians": ratio(arms[TRIPLE]["qps"], arms[GRPC]["qps"]),
            "paired_ratios": paired,
            "median_paired_ratio": statistics.median(paired) if paired else None}


def print_rounds(rounds: List[Dict[str, AioMeasurement]]) -> None:
    print(f"\n{'round':<6} {'order':<26} {TRIPLE + ' QPS':>18} {GRPC + ' QPS':>13} {'ratio':>7}")
    for n, r in enumerate(rounds, 1):
        order = " then ".join(r)
        paired = ratio(r[TRIPLE].qps, r[GRPC].qps)
        print(f"{n:<6} {order:<26} {fmt(r[TRIPLE].qps, ',.0f'):>18} "
              f"{fmt(r[GRPC].qps, ',.0f'):>13} {fmt(paired, '.2f', 'x'):>7}")


def print_table(title: str, summary: dict) -> None:
    print(f"\n{title}")
    header = (f"{'arm':<14} {'QPS':>9} {'(min..max)':>19} {'p50 ms':>7} {'p99 ms':>7} "
              f"{'cpu us/call':>11}  notes")
    print(header)
    print("-" * len(header))
    for arm, s in summary["arms"].items():
        notes = "; ".join(s["failed"])
        if s["qps"] is None:
            print(f"{arm:<14} {'-':>9} {'':>19} {'-':>7} {'-':>7} {'-':>11}  {notes}")
            continue
        spread = f"{s['qps_min']:,.0f}..{s['qps_max']:,.0f}"
        print(f"{arm:<14} {s['qps']:>9,.0f} {spread:>19} {fmt(s['p50_ms'], '.2f'):>7} "
              f"{fmt(s['p99_ms'], '.2f'):>7} {fmt(s['cpu_us_per_call'], '.1f'):>11}  {notes}")
    print(f"\n{TRIPLE} / {GRPC}: {fmt(summary['ratio_of_medians'], '.2f', 'x')} "
          f"(ratio of the median QPS); median of the per-round ratios "
          f"{fmt(summary['median_paired_ratio'], '.2f', 'x')} "
          f"[{', '.join(f'{p:.2f}' for p in summary['paired_ratios'])}]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="measured seconds per arm")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--payload", type=int, default=128, help="payload bytes")
    parser.add_argument("--out", type=Path,
                        help="JSON file (default results/aio_unary-<timestamp>.json)")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or ROOT / "results" / f"aio_unary-{stamp}.json"
    request = encode_payload(os.urandom(args.payload))
    report = {"benchmark": "aio_unary", "started": stamp, "peer": "grpc-go",
              "args": {k: str(v) for k, v in vars(args).items()},
              "request_bytes": len(request), "environment": environment(), "rounds": []}
    if TRIPLE_PY_SKIPPED:
        print(f"NOTE: the {TRIPLE} arm is skipped: {TRIPLE_PY_SKIPPED}")

    rounds: List[Dict[str, AioMeasurement]] = []
    with start_peer("go") as peer:
        print(f"grpc-go peer at {peer.address}; payload {args.payload} B, {args.concurrency} "
              f"tasks per arm on one channel; {args.rounds} rounds x {args.duration:g} s "
              f"(+{args.warmup:g} s warm-up) per arm")
        try:
            for n in range(args.rounds):
                results: Dict[str, AioMeasurement] = {}
                for arm in (ARMS if n % 2 == 0 else ARMS[::-1]):
                    results[arm] = run_arm(arm, peer.address, request, args)
                    if peer.process.poll() is not None:
                        raise PeerDied(f"the grpc-go peer exited with "
                                       f"{peer.process.returncode} during the {arm} arm")
                rounds.append(results)
                report["rounds"].append({"order": list(results), "arms": {
                    a: dataclasses.asdict(m) for a, m in results.items()}})
        except PeerDied as exc:
            report["aborted"] = str(exc)
            print(f"\nABORTED: {exc}")

    if rounds:
        print_rounds(rounds)
        report["summary"] = summarize(rounds)
        print_table(f"== {args.payload} B unary, {args.concurrency} concurrent tasks, one "
                    f"channel each; median of {len(rounds)} rounds ==", report["summary"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"\nraw data: {out}")
    failed = [f for r in rounds for m in r.values() if m.failed for f in [m.failed]]
    return 1 if failed or "aborted" in report else 0


if __name__ == "__main__":
    sys.exit(main())
