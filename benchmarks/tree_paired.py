"""Per-call wall time and CPU of triple_py's Python unary path: this checkout against a
baseline checkout, interleaved rounds in the same run, paired ratios.

    .venv/bin/python benchmarks/tree_paired.py --base DIR [--rounds 10] [--calls 3000]
        [--arms sync,aio]

Each round runs, for every arm, one child process per checkout (order alternating from
round to round) that makes --calls sequential unary calls (128 B) to the grpc-go peer
through that checkout's ``triple_py`` and prints its wall and CPU seconds per call (after
200 warm-up calls). ``triple_py.bench.paired.compare_pairs`` gives the per-round ratios
(this / base), the Hodges-Lehmann estimate, its exact confidence interval and a verdict.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from triple_py.bench.messages import UNARY_METHOD
from triple_py.bench.paired import compare_pairs
from triple_py_testing.peers import start_peer

ROOT = Path(__file__).resolve().parents[1]

# Run with PYTHONPATH at a checkout: its triple_py (built in place) is the one imported.
CHILD = """
import asyncio, sys, time
import triple_py, triple_py.aio
arm, address, method, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
payload = b"\\x0a\\x80\\x01" + b"a" * 128
def clock():
    return time.perf_counter(), time.process_time()
if arm == "aio":
    async def main():
        async with triple_py.aio.insecure_channel(address) as ch:
            call = ch.unary_unary(method)
            for _ in range(200):
                await call(payload, timeout=10)
            t0 = clock()
            for _ in range(n):
                await call(payload, timeout=10)
            return t0, clock()
    t0, t1 = asyncio.run(main())
else:
    with triple_py.insecure_channel(address) as ch:
        call = ch.unary_unary(method)
        for _ in range(200):
            call(payload, timeout=10)
        t0 = clock()
        for _ in range(n):
            call(payload, timeout=10)
        t1 = clock()
print("PERCALL", (t1[0] - t0[0]) / n, (t1[1] - t0[1]) / n)
"""


def one_run(root: Path, arm: str, address: str, calls: int) -> Tuple[float, float]:
    """(wall, CPU) seconds per call of one child process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, arm, address, UNARY_METHOD, str(calls)],
                          capture_output=True, text=True, timeout=600, cwd=root, env=env)
    line = [x for x in proc.stdout.splitlines() if x.startswith("PERCALL ")]
    if proc.returncode or not line:
        raise RuntimeError(f"child failed ({root}, {arm}): {(proc.stdout + proc.stderr)[-400:]}")
    wall, cpu = line[0].split()[1:]
    return float(wall), float(cpu)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the baseline checkout")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--arms", default="sync,aio")
    args = parser.parse_args(argv)
    trees = {"this": ROOT, "base": args.base.resolve()}
    wall: Dict[Tuple[str, str, int], float] = {}
    cpu: Dict[Tuple[str, str, int], float] = {}
    arms = args.arms.split(",")
    with start_peer("go") as peer:
        for rnd in range(args.rounds):
            order = ["this", "base"] if rnd % 2 == 0 else ["base", "this"]
            for arm in arms:
                for tree in order:
                    w, c = one_run(trees[tree], arm, peer.address, args.calls)
                    wall[(arm, tree, rnd)], cpu[(arm, tree, rnd)] = w, c
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"{args.rounds} rounds x {args.calls} sequential unary calls (128 B), grpc-go peer; "
          f"this = {ROOT}, base = {trees['base']}")
    for what, values in (("wall time per call", wall), ("CPU per call", cpu)):
        print(f"{what}: this / base, paired by round")
        for row in compare_pairs(values, [("this", "base")], arms):
            print(f"  {row.scenario:<6} {row.estimate:6.3f} [{row.ci_low:.3f}, "
                  f"{row.ci_high:.3f}] ({row.confidence:.0%}) p={row.p:.3g} {row.verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
