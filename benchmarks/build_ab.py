"""Two builds of triple_py, paired round by round, against one grpc-go peer.

    .venv/bin/python benchmarks/build_ab.py --base /path/to/old/checkout [--rounds 10]
        [--duration 1] [--out results/build_ab.json]

A refactor (issue 19) must not slow the client: this runs the C load generator of this
checkout ("new") and of another checkout ("base", its own .venv and extension) one after
the other in each round, in alternating order, against the same grpc-go peer, for the
unary fast path (128 B, 100 in flight) and bidi streams (128 B, 128 messages a stream,
32 streams). Each run is ``python -m triple_py.bench run ... -O json`` in the checkout's
own interpreter, so each build loads only its own code. The verdicts pair the two builds
round by round (Hodges-Lehmann estimate and exact interval, .paired) on QPS and on client
CPU time per call.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

from triple_py.bench.record.result import BenchResult
from triple_py.bench.report.paired import verdict_block
from triple_py.bench.results.paired import compare_pairs
from triple_py.bench.results.reader import read_results
from triple_py_testing.peers import start_peer

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS: Dict[str, List[str]] = {
    "unary-128B-c100": ["--mode", "fastpath", "--payload", "128", "-c", "100"],
    "bidi-128B-m128-c32": ["--mode", "bidi", "--payload", "128", "-c", "32",
                           "--stream-messages", "128"],
}


def one_run(checkout: Path, target: str, args: List[str], duration: float) -> BenchResult:
    """The record of one ``bench run`` by ``checkout``'s interpreter (its JSON document,
    of whichever format version that checkout writes, read back by this one's reader)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-m", "triple_py.bench",
                        "run", "--target", target, *args, "-z", str(duration),
                        "--warmup", "0.3", "-O", "json", "-o", str(out)],
                       cwd=checkout, check=True, capture_output=True, timeout=120)
        (arm_run,) = read_results(out).runs
        if arm_run.result is None:
            raise RuntimeError(f"the run failed: {arm_run.failed}")
        return arm_run.result


def figures(result: BenchResult) -> Tuple[float, float]:
    """(QPS, client CPU µs per call) of one run."""
    if result.errors:
        raise RuntimeError(f"{result.errors} calls failed: {result.status_codes}")
    return result.qps, result.cpu.get("process_us_per_call") or 0.0


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, required=True, help="the other checkout (built)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--duration", type=float, default=1.0)
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    builds = {"new": ROOT, "base": a.base.resolve()}
    raw: Dict[str, List[dict]] = {}
    with start_peer("go") as peer:
        for scenario, args in SCENARIOS.items():
            for i in range(a.rounds):
                order = list(builds) if i % 2 == 0 else list(builds)[::-1]
                for build in order:
                    qps, cpu = figures(one_run(builds[build], peer.address, args, a.duration))
                    raw.setdefault(scenario, []).append(
                        {"round": i, "build": build, "qps": qps, "cpu_us_per_call": cpu})
                    print(f"{scenario} round {i + 1} {build}: {qps:,.0f} QPS, "
                          f"{cpu:.2f} µs/call", file=sys.stderr, flush=True)
    blocks = []
    for key, what in (("qps", "QPS"), ("cpu_us_per_call", "CPU/call")):
        values = {(s, r["build"], r["round"]): r[key] for s, rows in raw.items()
                  for r in rows if r[key]}
        blocks.append(verdict_block(compare_pairs(values, [("new", "base")], list(raw)), what))
    text = "\n\n".join(blocks)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"base": str(a.base), "rounds": a.rounds, "raw": raw,
                                     "verdicts": text}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
