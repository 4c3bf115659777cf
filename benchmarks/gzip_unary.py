"""gzip on vs off, triple_py vs grpcio, 16 KiB unary calls against the grpc-go peer (issue 5).

Two payloads of 16 KiB: compressible (repeated text) and incompressible (random bytes).
Four arms per payload, all in one run against the same grpc-go peer (which answers a
gzip request with a gzip response): triple_py and grpcio sync, each with gzip off and on,
N Python threads on one channel.  Rounds interleave the arms and reverse their order
every other round; the table shows medians over rounds, QPS ratios to grpcio with the same
compression, and bytes written per call (what compression saves on the wire).

Usage: .venv/bin/python benchmarks/gzip_unary.py [--duration 3] [--rounds 3] [--concurrency 16]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

import grpc

ROOT = Path(__file__).resolve().parent.parent

import triple_py  # noqa: E402
from triple_py_testing.peers import start_peer  # noqa: E402
from triple_py.bench.arms_grpcio import channel_options, run_threads  # noqa: E402

METHOD = "/benchmark.BenchmarkService/UnaryCall"
SIZE = 16 * 1024


def payloads() -> Dict[str, bytes]:
    """BenchmarkRequest{payload} of 16 KiB, compressible and not."""
    text = (b"triple_py gzip benchmark: the quick brown fox jumps over the lazy dog. " * 400)[:SIZE]
    noise = os.urandom(SIZE)
    head = b"\x0a\x80\x80\x01"  # field 1, length 16384 as a varint
    return {"compressible": head + text, "incompressible": head + noise}


def triple_arm(address: str, gzip: bool) -> Callable:
    """Opens a triple_py channel; returns (calls, probe, close)."""
    compression = triple_py.Compression.Gzip if gzip else None
    ch = triple_py.insecure_channel(address, compression=compression,
                                    options=[("grpc.max_receive_message_length", -1)])
    mc = ch.unary_unary(METHOD)
    return [lambda r: mc(r, timeout=10)], ch.stats, ch.close


def grpcio_arm(address: str, gzip: bool) -> Callable:
    """Opens a grpcio channel; returns (calls, probe, close)."""
    compression = grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression
    ch = grpc.insecure_channel(address, options=channel_options(1), compression=compression)
    mc = ch.unary_unary(METHOD)
    return [lambda r: mc(r, timeout=10)], dict, ch.close


ARMS = {"triple_py": (triple_arm, False), "triple_py+gzip": (triple_arm, True),
        "grpcio": (grpcio_arm, False), "grpcio+gzip": (grpcio_arm, True)}


def measure(address: str, arm: str, request: bytes, args: argparse.Namespace) -> Dict:
    make, gzip = ARMS[arm]
    calls, probe, close = make(address, gzip)
    try:
        recorder, delta = run_threads(calls, request, args.concurrency, args.warmup,
                                      args.duration, 15.0, probe=probe)
    finally:
        close()
    result = recorder.result(arm=arm, mode="unary", target=address, method=METHOD,
                             payload_size=SIZE, concurrency=args.concurrency)
    n = max(result.calls, 1)
    return {"qps": result.qps, "p50_ms": (result.latency.p50 or 0) / 1e6,
            "p99_ms": (result.latency.p99 or 0) / 1e6, "errors": result.errors,
            "bytes_written_per_call": delta.get("bytes_written", 0) / n if delta else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    raw: Dict[str, Dict[str, List[Dict]]] = {}
    with start_peer("go") as peer:
        print(f"grpc-go peer at {peer.address}; {args.rounds} rounds x {args.duration} s; "
              f"{args.concurrency} threads; 16 KiB requests")
        for name, request in payloads().items():
            raw[name] = {arm: [] for arm in ARMS}
            order = list(ARMS)
            for rnd in range(args.rounds):
                for arm in (order if rnd % 2 == 0 else order[::-1]):
                    raw[name][arm].append(measure(peer.address, arm, request, args))
    for name, arms in raw.items():
        print(f"\n== {name} 16 KiB ==")
        print(f"{'arm':<16}{'QPS':>10}{'p50 ms':>9}{'p99 ms':>9}{'vs grpcio':>11}{'B written/call':>16}")
        med = {arm: statistics.median(r["qps"] for r in rs) for arm, rs in arms.items()}
        for arm, rs in arms.items():
            ref = med["grpcio+gzip" if arm.endswith("gzip") else "grpcio"]
            bw = [r["bytes_written_per_call"] for r in rs if r["bytes_written_per_call"]]
            print(f"{arm:<16}{med[arm]:>10,.0f}"
                  f"{statistics.median(r['p50_ms'] for r in rs):>9.2f}"
                  f"{statistics.median(r['p99_ms'] for r in rs):>9.2f}"
                  f"{med[arm] / ref:>10.2f}x"
                  f"{(statistics.median(bw) if bw else float('nan')):>16,.0f}")
    out = Path(args.out or ROOT / "results" / f"gzip_unary-{time.strftime('%Y%m%d-%H%M%S')}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rounds": raw}, indent=1))
    print(f"\nraw data: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
