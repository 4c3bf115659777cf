"""Instructions per unary call (callgrind) through the balancer against the direct core
call (issue 25), sync and asyncio; and, concurrently, over 2 and 4 backends with their
connections on one shared I/O thread or a thread each.

    .venv/bin/python benchmarks/lb_instructions.py [--part sequential|backends|all]
        [--root DIR ...] [--apis sync,aio]

Uses ``triple_py_testing.callgrind.python_api_per_call`` (N sequential 128 B calls under
callgrind, two values of N, the difference cancels start-up) on three targets of embedded
echo servers:
``127.0.0.1:P`` (one endpoint: the channel calls the core directly),
``ipv4:127.0.0.1:P,127.0.0.1:P`` (a list: the channel goes through ``_balancer.Balancer``,
pick_first over the one backend the repeated address makes) and ``ipv4:P,Q`` under
round_robin (``rr2``: two backends, the picker's path).  ``--root`` (repeatable) counts the
``triple_py`` of other checkouts in the same run (sequential part), e.g. a base commit's.

``backends``: four embedded echo servers (processes of their own, not counted); a child
under callgrind makes 4 x N calls from 4 threads (``sync``) or 4 tasks (``aio``) on one
channel, for two values of N, over ``one`` (127.0.0.1:P1) or ``ipv4:`` lists of 2 or 4
servers under round_robin, ``triple.shared_io_thread`` on (``rr2s``, ``rr4s``) or off
(``rr2``, ``rr4``).  Every thread of the child is counted (callers, I/O threads).  Valgrind
runs one thread at a time, so how calls meet in time is not the machine's; the arms share
that condition.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List

from triple_py.bench.messages import UNARY_METHOD as METHOD
from triple_py.testing import EchoServer
from triple_py_testing.backends import backend_targets, start_servers, stop_servers
from triple_py_testing.callgrind import instructions, python_api_per_call

ROOT = Path(__file__).resolve().parents[1]

CONCURRENT = r"""
import asyncio, sys, threading
import triple_py, triple_py.aio
target, shared, api, calls, method = sys.argv[1], sys.argv[2] == "1", sys.argv[3], int(sys.argv[4]), sys.argv[5]
options = [("grpc.lb_policy_name", "round_robin"), ("triple.shared_io_thread", shared)]
payload = b"\x0a\x80\x01" + b"a" * 128
if api == "aio":
    async def main():
        async with triple_py.aio.insecure_channel(target, options=options) as ch:
            call = ch.unary_unary(method)
            async def loop():
                for _ in range(calls):
                    await call(payload, timeout=60)
            await asyncio.gather(*(loop() for _ in range(4)))
    asyncio.run(main())
else:
    with triple_py.insecure_channel(target, options=options) as ch:
        call = ch.unary_unary(method)
        def loop():
            for _ in range(calls):
                call(payload, timeout=60)
        threads = [threading.Thread(target=loop) for _ in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
print("CALLS", 4 * calls)
"""
PER_TASK = (50, 300)  # calls per thread or task in the two runs


def counted(target: str, shared: str, api: str, calls: int) -> int:
    """Instructions of one callgrind run of the concurrent child (every thread)."""
    return instructions([sys.executable, "-c", CONCURRENT, target, shared, api, str(calls),
                         METHOD], expect=f"CALLS {4 * calls}", cwd=ROOT)


def backends(api_names: List[str]) -> None:
    servers = start_servers(4)
    try:
        table = backend_targets([p for _, p in servers])
        for api in api_names:
            for arm, (target, shared) in table.items():
                totals: List[int] = [counted(target, shared, api, n) for n in PER_TASK]
                value = (totals[1] - totals[0]) / (4 * (PER_TASK[1] - PER_TASK[0]))
                print(f"{api:5s} {arm:5s} {value:>10,.0f} instructions/call (totals "
                      f"{totals[0]:,} / {totals[1]:,} for {4 * PER_TASK[0]} / "
                      f"{4 * PER_TASK[1]} calls)", flush=True)
    finally:
        stop_servers(servers)


def sequential(roots: List[Path], api_names: List[str]) -> None:
    round_robin = json.dumps([["grpc.lb_policy_name", "round_robin"]])
    with EchoServer() as server, EchoServer() as other:
        targets = {"direct": (f"127.0.0.1:{server.port}", "null"),
                   "balancer": (f"ipv4:127.0.0.1:{server.port},127.0.0.1:{server.port}",
                                "null"),
                   "rr2": (f"ipv4:127.0.0.1:{server.port},127.0.0.1:{other.port}",
                           round_robin)}
        for api in api_names:
            for name, (target, options) in targets.items():
                for root in roots:
                    value, totals = python_api_per_call(root, api, target, METHOD, options)
                    print(f"{str(root):<12s} {api:5s} {name:9s} {value:>10,.0f} "
                          f"instructions/call (totals {totals[0]:,} / {totals[1]:,})",
                          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("sequential", "backends", "all"), default="all")
    parser.add_argument("--root", type=Path, action="append",
                        help="sequential part: a checkout whose triple_py to count "
                             "(repeatable; default: this)")
    parser.add_argument("--apis", "--arms", dest="apis", default="sync,aio",
                        help="sync,aio")
    args = parser.parse_args()
    apis = args.apis.split(",")
    if args.part in ("sequential", "all"):
        sequential([r.resolve() for r in args.root or [ROOT]], apis)
    if args.part in ("backends", "all"):
        backends(apis)
    return 0


if __name__ == "__main__":
    sys.exit(main())
