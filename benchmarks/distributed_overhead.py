"""What the distributed path costs on this machine (issue 23), in paired rounds.

Two comparisons, each arm against the embedded echo server in a process of its own
(``python -m triple_py.server``), interleaved round by round (order reversed every other
round) so that drift of the machine cancels out in the per-round ratios:

- ``local:1`` vs a plain local run: the same load (c in flight, one connection) from one
  Dask worker process vs from this process: the overhead of the distributed path itself
  (task dispatch, the common start, the merge).
- ``local:2`` vs one process with the same total load: c/2 in flight on one connection in
  each of two worker processes vs c in flight on two connections in one process. On a
  2-core machine shared with the server this measures coordination cost and contention,
  not a speed-up: there is no third core for the second load process.

For every pair: the median of the per-round QPS and p99 ratios, the Hodges-Lehmann
estimate with its exact interval and Wilcoxon's signed-rank p over the log ratios
(triple_py.bench.paired). Writes the per-round figures as JSON (no histograms).

    .venv/bin/python benchmarks/distributed_overhead.py --rounds 8 -z 1.5 --out FILE
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

from triple_py.bench import distributed
from triple_py.bench.arms import run_spec
from triple_py.bench.paired import signed_rank_p, walsh_interval
from triple_py.bench.result import BenchResult
from triple_py.bench.runner import spec_of

ROOT = Path(__file__).resolve().parents[1]


def start_server() -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "triple_py.server", "--exit-on-stdin-eof"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
    line = proc.stdout.readline()
    if not line.startswith("LISTENING "):
        raise SystemExit(f"the server did not start: {line!r}")
    proc.port = int(line.split()[1])  # type: ignore[attr-defined]
    return proc


def summarize(pairs: List[Dict[str, float]], key: str) -> Dict[str, float]:
    logs = [math.log(p[f"arm_{key}"] / p[f"ref_{key}"]) for p in pairs]
    est, low, high, coverage = walsh_interval(logs)
    return {"median_ratio": math.exp(statistics.median(logs)), "hl_ratio": math.exp(est),
            "ci_low": math.exp(low), "ci_high": math.exp(high), "ci_coverage": coverage,
            "p": signed_rank_p(logs), "rounds": len(logs)}


def paired(name: str, arm: Callable[[], BenchResult], ref: Callable[[], BenchResult],
           rounds: int) -> Dict[str, object]:
    pairs = []
    for r in range(rounds):
        order = [("arm", arm), ("ref", ref)]
        if r % 2:
            order.reverse()
        got = {}
        for label, fn in order:
            res = fn()
            got[f"{label}_qps"], got[f"{label}_p99"] = res.qps, res.p99
            got[f"{label}_cpu_us_per_call"] = res.cpu_us_per_call
            if label == "arm" and res.extra.get("workers"):
                got["arm_workers"] = [{k: w[k] for k in ("qps", "p99_ns", "clock_offset_ms",
                                                         "clock_rtt_ms", "late_ms")}
                                      for w in res.extra["workers"]]
        pairs.append(got)
        print(f"{name} round {r + 1}: qps {got['arm_qps']:.0f} vs {got['ref_qps']:.0f}, "
              f"p99 {got['arm_p99'] / 1e3:.0f} vs {got['ref_p99'] / 1e3:.0f} us", flush=True)
    out = {"name": name, "rounds": pairs, "qps": summarize(pairs, "qps"),
           "p99": summarize(pairs, "p99")}
    for key in ("qps", "p99"):
        s = out[key]
        print(f"{name}: {key} ratio median {s['median_ratio']:.3f}, HL {s['hl_ratio']:.3f} "
              f"[{s['ci_low']:.3f}, {s['ci_high']:.3f}] ({s['ci_coverage']:.0%}), "
              f"p = {s['p']:.3f}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("-z", "--duration", type=float, default=1.5)
    parser.add_argument("--warmup", type=float, default=0.3)
    parser.add_argument("-c", "--concurrency", type=int, default=16)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    server = start_server()
    target = f"127.0.0.1:{server.port}"
    common = dict(duration=args.duration, warmup=args.warmup)
    c = args.concurrency
    doc: Dict[str, object] = {"started": time.time(), "target": "embedded server, own process",
                              "duration_s": args.duration, "warmup_s": args.warmup,
                              "concurrency": c}
    try:
        with distributed.connect("local:1") as one, distributed.connect("local:2") as two:
            doc["local1_vs_plain"] = paired(
                "local:1 vs plain", lambda: distributed.run(one, target, concurrency=c, **common),
                lambda: run_spec(spec_of(target, concurrency=c, **common)), args.rounds)
            doc["local2_vs_one_process"] = paired(
                "local:2 vs one process",
                lambda: distributed.run(two, target, concurrency=c, connections=2, **common),
                lambda: run_spec(spec_of(target, concurrency=c, connections=2, **common)),
                args.rounds)
    finally:
        server.stdin.close()
        server.wait(10)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
