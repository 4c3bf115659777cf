"""Instructions per unary call (callgrind) through the balancer against the direct core
call (issue 25), sync and asyncio.

    .venv/bin/python benchmarks/lb_instructions.py

Uses ``python_instructions.per_call`` (N sequential 128 B calls under callgrind, two values
of N, the difference cancels start-up) on two targets of one embedded echo server:
``127.0.0.1:P`` (one endpoint: the channel calls the core directly) and
``ipv4:127.0.0.1:P,127.0.0.1:P`` (a list: the channel goes through ``_balancer.Balancer``,
pick_first over the one backend the repeated address makes).
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))
from python_instructions import per_call  # noqa: E402
from triple_py.testing import EchoServer  # noqa: E402


def main() -> int:
    with EchoServer() as server:
        targets = {"direct": f"127.0.0.1:{server.port}",
                   "balancer": f"ipv4:127.0.0.1:{server.port},127.0.0.1:{server.port}"}
        for arm in ("sync", "aio"):
            for name, target in targets.items():
                value, totals = per_call(ROOT, arm, target)
                print(f"{arm:5s} {name:9s} {value:>10,.0f} instructions/call (totals "
                      f"{totals[0]:,} / {totals[1]:,})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
