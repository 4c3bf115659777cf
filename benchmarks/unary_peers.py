"""Unary-call benchmark against the grpc-go peer (issue 2).

For each payload size and concurrency, every arm makes unary BenchmarkService/UnaryCall
calls over ONE connection to the grpc-go peer (tests/peers/go/echo_server.go):

  triple_py    N Python threads, blocking calls on one triple_py channel
  grpcio-sync  N Python threads, blocking calls on one grpc channel
  grpcio-aio   N asyncio tasks on one grpc.aio channel
  h2load       nghttp2's load generator, N streams on one connection (-c1 -m N), raw gRPC
               frames; a reference for what the server can do

Each arm warms up (excluded), then measures a fixed window. The Python arms time every call
(p50/p99); h2load reports only mean/sd/max per request. Rounds interleave the arms and
reverse their order every other round; tables show the median over rounds, and the JSON
file (--out) holds every round's figures.

The arms are triple_py.bench's (triple-py-sync, grpcio-sync, grpcio-aio, h2load in
triple_py/bench/arms_*.py); this script adapts their BenchResult to its Measurement. For
the C load generator and matrices with JSON/CSV/benchstat output, see
`python -m triple_py.bench matrix seed-unary --target HOST:PORT` (`make bench`).

Usage: .venv/bin/python benchmarks/unary_peers.py [--duration 3] [--rounds 3] [--warmup 1]
       (needs an importable triple_py for the shared arms: the .venv, or the in-tree build)
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(1, str(ROOT))  # the in-tree triple_py when it is not installed
from triple_py.bench.messages import UNARY_METHOD, encode_payload  # noqa: E402
from triple_py_testing.peers import Peer, start_peer  # noqa: E402

from triple_py.bench import arms_grpcio, arms_h2load, recorders  # noqa: E402
from triple_py.bench.arms_h2load import h2load_ms  # noqa: E402,F401  (kept for importers)
from triple_py.bench.recorders import (  # noqa: E402,F401  (re-exported for the other scripts)
    MEASURE, STOP, WARMUP, describe, percentile)
from triple_py.bench.result import BenchResult  # noqa: E402
from triple_py.bench.spec import RunSpec  # noqa: E402

try:
    import triple_py
    from triple_py.bench import arms_triple_py
    TRIPLE_PY_SKIPPED: Optional[str] = None
except Exception as exc:  # not built yet, or a broken build: run the other arms
    triple_py = None
    TRIPLE_PY_SKIPPED = f"import triple_py failed: {type(exc).__name__}: {exc}"

ARMS = ("triple_py", "grpcio-sync", "grpcio-aio", "h2load")
BASELINE = "grpcio-sync"
CALL_TIMEOUT = 10.0


@dataclasses.dataclass
class Measurement:
    """One arm's figures for one round. Latencies in milliseconds."""

    arm: str
    qps: Optional[float] = None
    calls: int = 0
    errors: int = 0
    seconds: float = 0.0
    p50_ms: Optional[float] = None
    p99_ms: Optional[float] = None
    mean_ms: Optional[float] = None
    sd_ms: Optional[float] = None
    max_ms: Optional[float] = None
    write_syscalls_per_call: Optional[float] = None
    stats_delta: Optional[Dict[str, int]] = None
    failed: Optional[str] = None  # why the arm produced no figures


class Recorder(recorders.Recorder):
    """triple_py.bench's Recorder, plus measurement(): this script's Measurement."""

    def measurement(self, arm: str) -> Measurement:
        seconds = self.window
        lat = sorted(self.latencies)
        m = Measurement(arm, qps=len(lat) / seconds, calls=len(lat), errors=self.errors,
                        seconds=seconds)
        if lat:
            m.p50_ms, m.p99_ms = percentile(lat, 0.50) * 1e3, percentile(lat, 0.99) * 1e3
            m.mean_ms, m.max_ms = statistics.fmean(lat) * 1e3, lat[-1] * 1e3
        if self.error_sample:
            m.failed = f"{self.errors} failed calls, e.g. {self.error_sample}"
        return m


def _ms(ns: Optional[float]) -> Optional[float]:
    return None if ns is None else ns / 1e6


def measurement(result: BenchResult) -> Measurement:
    """This script's Measurement of a triple_py.bench BenchResult.

    qps counts the successful calls only (as this script always did; BenchResult.qps
    counts failed calls too, like ghz).
    """
    lat = result.latency
    m = Measurement(result.arm, qps=result.ok_calls / result.elapsed_s if result.elapsed_s
                    else None, calls=result.ok_calls, errors=result.errors,
                    seconds=result.elapsed_s, p50_ms=_ms(lat.p50), p99_ms=_ms(lat.p99),
                    mean_ms=_ms(lat.mean), sd_ms=_ms(lat.stdev) if lat.p50 is None else None,
                    max_ms=_ms(lat.max), write_syscalls_per_call=result.write_syscalls_per_call,
                    stats_delta=result.counters or None)
    if result.mode == "h2load":  # h2load: its own req/s (requests done / measured time)
        m.qps, m.calls = result.qps, result.ok_calls
    failures = [n for n in result.notes if "failed" in n]
    if failures:
        m.failed = failures[0]
    return m


def _spec(arm: str, mode: str, address: str, request: bytes, concurrency: int,
          warmup: float, duration: float) -> RunSpec:
    return RunSpec(arm=arm, mode=mode, target=address, method=UNARY_METHOD,
                   payload_size=len(request), concurrency=concurrency, connections=1,
                   duration=duration, warmup=warmup, timeout=CALL_TIMEOUT, request=request)


def triple_py_arm(address: str, request: bytes, concurrency: int, warmup: float,
                  duration: float) -> Measurement:
    """N threads on one triple_py channel; also write syscalls per call from ch.stats()."""
    return measurement(arms_triple_py.triple_py_sync_unary(
        _spec("triple_py", "triple-py-sync", address, request, concurrency, warmup, duration)))


def grpcio_sync_arm(address: str, request: bytes, concurrency: int, warmup: float,
                    duration: float) -> Measurement:
    """N threads on one grpc channel (one connection)."""
    return measurement(arms_grpcio.grpcio_sync_unary(
        _spec("grpcio-sync", "grpcio-sync", address, request, concurrency, warmup, duration)))


def grpcio_aio_arm(address: str, request: bytes, concurrency: int, warmup: float,
                   duration: float) -> Measurement:
    """N asyncio tasks on one grpc.aio channel (one connection)."""
    return measurement(arms_grpcio.grpcio_aio_unary(
        _spec("grpcio-aio", "grpcio-aio", address, request, concurrency, warmup, duration)))


def h2load_arm(address: str, request: bytes, concurrency: int, warmup: float,
               duration: float) -> Measurement:
    """h2load -c1 -m N with one raw gRPC frame as the body of every request.

    h2load checks the HTTP status only (not grpc-status) and reports mean/sd/max latency.
    """
    return measurement(arms_h2load.h2load(
        _spec("h2load", "h2load", address, request, concurrency, warmup, duration)))


ARM_FUNCTIONS = {"triple_py": triple_py_arm, "grpcio-sync": grpcio_sync_arm,
                 "grpcio-aio": grpcio_aio_arm, "h2load": h2load_arm}


def run_arm(arm: str, address: str, request: bytes, concurrency: int, warmup: float,
            duration: float) -> Measurement:
    """One arm for one round; an exception becomes a failed Measurement, not a crash."""
    if arm == "triple_py" and TRIPLE_PY_SKIPPED:
        return Measurement(arm, failed=f"SKIPPED: {TRIPLE_PY_SKIPPED}")
    try:
        return ARM_FUNCTIONS[arm](address, request, concurrency, warmup, duration)
    except Exception as exc:
        return Measurement(arm, failed=describe(exc))


def median(values: List[Optional[float]]) -> Optional[float]:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarize(rounds: List[Dict[str, Measurement]], arms: List[str]) -> Dict[str, dict]:
    """Per arm: the median of each figure over the rounds, and the ratio to the baseline."""
    summary = {}
    for arm in arms:
        ms = [r[arm] for r in rounds]
        summary[arm] = {field: median([getattr(m, field) for m in ms]) for field in (
            "qps", "p50_ms", "p99_ms", "mean_ms", "sd_ms", "max_ms", "write_syscalls_per_call")}
        summary[arm]["errors"] = sum(m.errors for m in ms)
        summary[arm]["failed"] = sorted({m.failed for m in ms if m.failed})
    base = summary.get(BASELINE, {}).get("qps")
    for arm in arms:
        qps = summary[arm]["qps"]
        summary[arm]["vs_" + BASELINE] = qps / base if qps is not None and base else None
    return summary


def fmt(value: Optional[float], spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


def print_table(title: str, summary: Dict[str, dict]) -> None:
    print(f"\n{title}")
    header = (f"{'arm':<12} {'QPS':>9} {'p50 ms':>7} {'p99 ms':>7} {'vs ' + BASELINE:>15} "
              f"{'writes/call':>11}  notes")
    print(header)
    print("-" * len(header))
    for arm, s in summary.items():
        notes = list(s["failed"])
        if arm == "h2load" and s["mean_ms"] is not None:
            notes.insert(0, f"h2load gives no percentiles: mean {s['mean_ms']:.2f} ms, "
                            f"sd {s['sd_ms']:.2f}, max {s['max_ms']:.2f}")
        if s["qps"] is None:
            print(f"{arm:<12} {'-':>9} {'-':>7} {'-':>7} {'-':>15} {'-':>11}  " + "; ".join(notes))
            continue
        print(f"{arm:<12} {s['qps']:>9,.0f} {fmt(s['p50_ms'], '.2f'):>7} "
              f"{fmt(s['p99_ms'], '.2f'):>7} {fmt(s['vs_' + BASELINE], '.2f', 'x'):>15} "
              f"{fmt(s['write_syscalls_per_call'], '.2f'):>11}  " + "; ".join(notes))


class PeerDied(RuntimeError):
    """The grpc-go peer exited during the run: later figures would be meaningless."""


def run_scenario(peer: Peer, payload: int, concurrency: int,
                 args: argparse.Namespace) -> dict:
    """All rounds of one payload size x concurrency: prints its table, returns its record."""
    request = encode_payload(os.urandom(payload))
    rounds: List[Dict[str, Measurement]] = []
    for n in range(args.rounds):
        results = {}
        for arm in (args.arms if n % 2 == 0 else args.arms[::-1]):
            results[arm] = run_arm(arm, peer.address, request, concurrency, args.warmup,
                                   args.duration)
            if peer.process.poll() is not None:
                raise PeerDied(f"the grpc-go peer exited with {peer.process.returncode} "
                               f"during the {arm} arm (payload {payload}, concurrency "
                               f"{concurrency})")
        rounds.append(results)
    summary = summarize(rounds, args.arms)
    print_table(f"== payload {payload} B, {concurrency} concurrent calls, one connection "
                f"each; median of {args.rounds} rounds ==", summary)
    return {"payload": payload, "request_bytes": len(request), "concurrency": concurrency,
            "summary": summary,
            "rounds": [{"order": list(r), "arms": {a: dataclasses.asdict(m)
                                                   for a, m in r.items()}} for r in rounds]}


def environment() -> dict:
    h2load_version = subprocess.run(["h2load", "--version"], capture_output=True,
                                    text=True).stdout.strip()
    return {"python": sys.version, "executable": sys.executable, "grpcio": grpc.__version__,
            "h2load": h2load_version, "platform": platform.platform(), "cpus": os.cpu_count(),
            "triple_py": getattr(triple_py, "__version__", None) if triple_py else None,
            "triple_py_skipped": TRIPLE_PY_SKIPPED}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="measured seconds per arm")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--payloads", type=int, nargs="+", default=[128, 1024])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--out", type=Path,
                        help="JSON file (default results/unary_peers-<timestamp>.json)")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # tables show up as scenarios finish
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or ROOT / "results" / f"unary_peers-{stamp}.json"
    report = {"benchmark": "unary_peers", "started": stamp, "peer": "grpc-go",
              "args": {k: str(v) for k, v in vars(args).items()},
              "environment": environment(), "scenarios": []}
    if TRIPLE_PY_SKIPPED and "triple_py" in args.arms:
        print(f"NOTE: the triple_py arm is skipped: {TRIPLE_PY_SKIPPED}")

    with start_peer("go") as peer:
        print(f"grpc-go peer at {peer.address}; {args.rounds} rounds x {args.duration:g} s "
              f"(+{args.warmup:g} s warm-up) per arm")
        try:
            for payload in args.payloads:
                for concurrency in args.concurrency:
                    report["scenarios"].append(run_scenario(peer, payload, concurrency, args))
        except PeerDied as exc:
            report["aborted"] = str(exc)
            print(f"\nABORTED: {exc}")

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"\nraw data: {out}")
    if TRIPLE_PY_SKIPPED and "triple_py" in args.arms:
        print(f"NOTE: the triple_py arm was skipped: {TRIPLE_PY_SKIPPED}")
    failed = [f for s in report["scenarios"] for a, v in s["summary"].items()
              for f in v["failed"] if not f.startswith("SKIPPED")]
    return 1 if failed or "aborted" in report else 0


if __name__ == "__main__":
    sys.exit(main())
