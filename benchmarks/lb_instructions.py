"""Instructions per unary call (callgrind) through the balancer against the direct core
call (issue 25), sync and asyncio.

    .venv/bin/python benchmarks/lb_instructions.py [--root DIR ...] [--arms sync,aio]

Uses ``python_instructions.per_call`` (N sequential 128 B calls under callgrind, two values
of N, the difference cancels start-up) on three targets of embedded echo servers:
``127.0.0.1:P`` (one endpoint: the channel calls the core directly),
``ipv4:127.0.0.1:P,127.0.0.1:P`` (a list: the channel goes through ``_balancer.Balancer``,
pick_first over the one backend the repeated address makes) and ``ipv4:P,Q`` under
round_robin (two backends, the picker's path).  ``--root`` (repeatable) counts the
``triple_py`` of other checkouts in the same run, e.g. the base commit's and this one's.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))
from python_instructions import per_call  # noqa: E402
from triple_py.testing import EchoServer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append",
                        help="a checkout whose triple_py to count (repeatable; default: this)")
    parser.add_argument("--arms", default="sync,aio")
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root or [ROOT]]
    round_robin = json.dumps([["grpc.lb_policy_name", "round_robin"]])
    with EchoServer() as server, EchoServer() as other:
        targets = {"direct": (f"127.0.0.1:{server.port}", "null"),
                   "balancer": (f"ipv4:127.0.0.1:{server.port},127.0.0.1:{server.port}",
                                "null"),
                   "rr2": (f"ipv4:127.0.0.1:{server.port},127.0.0.1:{other.port}",
                           round_robin)}
        for arm in args.arms.split(","):
            for name, (target, options) in targets.items():
                for root in roots:
                    value, totals = per_call(root, arm, target, options)
                    print(f"{str(root):<12s} {arm:5s} {name:9s} {value:>10,.0f} "
                          f"instructions/call (totals {totals[0]:,} / {totals[1]:,})",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
