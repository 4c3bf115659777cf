"""Paired QPS of two triple_py builds: the self-contained wheel against the system-library
build, alternating round by round against the grpc-go peer.

    make dist
    /usr/bin/python3 -m venv --system-site-packages /tmp/bv
    /tmp/bv/bin/pip install --no-index --no-deps dist/triple_py-*-manylinux*.whl
    .venv/bin/python benchmarks/bundled_vs_system.py --bundled /tmp/bv/bin/triple-bench \
        --out benchmarks/results/2026-12-04-bundled-vs-system

Each round runs both builds' `triple-bench run` (50 in flight, one connection), in
alternating order; the figure is the median of the per-round ratios bundled / system.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
from pathlib import Path

from triple_py.bench.results.reader import read_results
from triple_py_testing.peers import start_peer

ROOT = Path(__file__).resolve().parents[1]


def run_once(command: str, target: str, size: str, seconds: str, out: Path) -> float:
    """One `triple-bench run`; returns its QPS (the JSON is kept at `out`)."""
    subprocess.run([command, "run", "--target", target, "-c", "50", "-z", seconds,
                    "--payload", size, "--json", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    (arm_run,) = read_results(out).runs
    return float(arm_run.result.qps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundled", required=True, help="the wheel's triple-bench")
    parser.add_argument("--system", default=str(ROOT / ".venv" / "bin" / "triple-bench"))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", default="3s")
    parser.add_argument("--sizes", default="128,16KiB")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    builds = {"bundled": args.bundled, "system": args.system}
    with start_peer("go") as peer:
        target = str(getattr(peer, "address", peer))
        for size in args.sizes.split(","):
            ratios = []
            for rnd in range(args.rounds):
                order = list(builds) if rnd % 2 == 0 else list(builds)[::-1]
                qps = {name: run_once(builds[name], target, size, args.duration,
                                      args.out / f"{name}-{size}-{rnd}.json") for name in order}
                ratios.append(qps["bundled"] / qps["system"])
            print(f"{size}: bundled / system QPS per round "
                  f"{[round(r, 3) for r in ratios]}, median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
