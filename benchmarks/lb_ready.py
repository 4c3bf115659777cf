"""Backends added and removed under load, before and after round_robin picks READY
backends only (issue 25), paired rounds.

    .venv/bin/python benchmarks/lb_ready.py --before /work/main [--after .] [--rounds 5]
        [--seconds 4] [--out results/lb_ready-<timestamp>]

Four embedded echo servers run in processes of their own.  Each round runs
``triple_py_testing.backends.CHURN_CHILD`` (4 threads of 128 B unary calls, round robin,
the endpoint list swapped every 0.25 s for --seconds (4), timeout 10 s per call) once with
each checkout's ``triple_py`` (its own ``.venv`` Python, in an order that alternates
between rounds), in two scenarios:

- ``live``: the four endpoints are the four servers (a provider added is up);
- ``stalled``: the fourth endpoint is a ``triple_py_testing.faults.FaultProxy`` in front of
  the fourth server with the ``stall`` fault (a provider that registered but never answers: its
  connection is accepted, its HTTP/2 SETTINGS never come).  It is in three of the six
  lists the child cycles through.

Each run prints calls, calls lost (an RpcError), p50 and p99 latency.  Raw rows go to
``<out>/churn.jsonl``, the per-round after/before ratios to ``<out>/churn_summary.txt``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List

from triple_py.bench.messages import UNARY_METHOD as METHOD
from triple_py_testing.backends import CHURN_CHILD, run_child, start_servers, stop_servers
from triple_py_testing.faults import FaultProxy

ROOT = Path(__file__).resolve().parents[1]


def churn(root: Path, ports: List[int], seconds: float) -> dict:
    """One churn child with ``root``'s triple_py (its .venv Python, its tree first)."""
    return run_child(CHURN_CHILD, ",".join(map(str, ports)), str(seconds), METHOD, "1",
                     python=str(root / ".venv/bin/python"), cwd=root)


def summarize(rows: List[dict], scenarios: List[str], rounds: int) -> List[str]:
    """The after/before ratios of each round and the raw lost calls and p99s."""
    lines = ["Churn under load, after/before per round (2-core VM shared with other "
             "helpers; servers and client on the same cores).", ""]
    for scenario in scenarios:
        by: Dict[tuple, dict] = {(r["round"], r["arm"]): r for r in rows
                                 if r["scenario"] == scenario}
        lines.append(f"{scenario}:")
        for key in ("p99_us", "p50_us", "qps"):
            ratios = [by[(n, "after")][key] / by[(n, "before")][key] for n in range(rounds)]
            lines.append(f"  {key:7s} after/before per round "
                         f"{', '.join(f'{x:.3f}' for x in ratios)}; median "
                         f"{statistics.median(ratios):.3f}")
        for arm in ("before", "after"):
            mine = [by[(n, arm)] for n in range(rounds)]
            lines.append(f"  {arm:6s} lost {[r['lost'] for r in mine]} of calls "
                         f"{[r['calls'] for r in mine]}; p99 us "
                         f"{[round(r['p99_us']) for r in mine]}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the reference checkout")
    parser.add_argument("--after", type=Path, default=ROOT, help="the changed checkout")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0, help="load per run (4)")
    parser.add_argument("--out", default=str(ROOT / "results" / time.strftime(
                        "lb_ready-%Y%m%d-%H%M%S")))
    args = parser.parse_args()
    roots = {"before": args.before.resolve(), "after": args.after.resolve()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    servers = start_servers(4)
    ports = [p for _, p in servers]
    stall = FaultProxy(f"127.0.0.1:{ports[3]}").start()
    stall.set_fault("stall")
    scenarios = {"live": ports, "stalled": [*ports[:3], stall.port]}
    rows: List[dict] = []
    try:
        with open(out / "churn.jsonl", "w") as raw:
            for rnd in range(args.rounds):
                for scenario, eps in scenarios.items():
                    arms = ["before", "after"] if rnd % 2 == 0 else ["after", "before"]
                    for arm in arms:
                        row = churn(roots[arm], eps, args.seconds)
                        row.update(round=rnd, scenario=scenario, arm=arm,
                                   root=str(roots[arm]), at=time.time())
                        raw.write(json.dumps(row) + "\n")
                        raw.flush()
                        rows.append(row)
                        print(f"round {rnd} {scenario:7s} {arm:6s} calls {row['calls']:6d} "
                              f"lost {row['lost']:3d} p50 {row['p50_us']:8.0f} us "
                              f"p99 {row['p99_us']:9.0f} us", flush=True)
    finally:
        stall.stop()
        stop_servers(servers)
    summary = "\n".join(summarize(rows, list(scenarios), args.rounds)) + "\n"
    (out / "churn_summary.txt").write_text(summary)
    print(summary, end="")
    return 0

if __name__ == "__main__":
    sys.exit(main())
