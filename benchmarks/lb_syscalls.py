"""Syscalls, wake-ups and context switches per call over 1, 2 and 4 backends, the backends'
connections on one shared I/O thread or on a thread each (issue 25).

    .venv/bin/python benchmarks/lb_syscalls.py [--calls 5000] [--rounds 3]
        [--out results/lb_syscalls-<timestamp>]

Four embedded echo servers in processes of their own.  Each arm runs in a fresh child:
Python ``sync`` (4 threads, ``calls`` 128 B unary calls each; ``--workers`` changes the
4) or ``aio`` (4 tasks, the same), over ``127.0.0.1:P1`` (``one``, the direct core call) or ``ipv4:`` lists of 2 or 4
servers under round_robin with ``triple.shared_io_thread`` on (``rr2s``, ``rr4s``) or off
(``rr2``, ``rr4``).  The child reports the channel's counters per call (``write_syscalls``,
``read_syscalls`` of the sockets, ``wakeups``: eventfd writes that woke an I/O thread) and
the process's context switches and CPU time (user + system) per call (``getrusage``,
every thread).  The counts do not
depend on the machine's speed the way QPS does, only on how calls meet in time (the CPU
time does, and is noisy on a shared machine); the arms
rotate from round to round and the medians of the rounds are kept.  Raw rows go to
``<out>/syscalls_rounds.jsonl``, the medians to ``<out>/syscalls_per_call.json``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

from triple_py.bench.messages import UNARY_METHOD as METHOD
from triple_py_testing.backends import backend_targets, run_child, start_servers, stop_servers

ROOT = Path(__file__).resolve().parents[1]

COUNTERS = ("write_syscalls", "read_syscalls", "wakeups")

CHILD = r"""
import asyncio, json, resource, sys, threading
import triple_py, triple_py.aio
target, shared, api, calls, method = sys.argv[1], sys.argv[2] == "1", sys.argv[3], int(sys.argv[4]), sys.argv[5]
workers = int(sys.argv[6])
options = [("grpc.lb_policy_name", "round_robin"), ("triple.shared_io_thread", shared)]
payload = b"\x0a\x80\x01" + b"a" * 128
COUNTERS = ("write_syscalls", "read_syscalls", "wakeups")
def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw + r.ru_nivcsw, r.ru_utime + r.ru_stime
def row_of(s0, s1, u0, u1):
    n = workers * calls
    row = {k: (s1[k] - s0[k]) / n for k in COUNTERS}
    row["context_switches"] = (u1[0] - u0[0]) / n
    row["cpu_us"] = (u1[1] - u0[1]) / n * 1e6
    return json.dumps(row)
def measure(stats, run):
    s0, u0 = stats(), usage()
    run()
    print(row_of(s0, stats(), u0, usage()))
if api == "sync":
    with triple_py.insecure_channel(target, options=options) as ch:
        call = ch.unary_unary(method)
        for _ in range(200):
            call(payload, timeout=10)
        def run():
            def loop():
                for _ in range(calls):
                    call(payload, timeout=10)
            threads = [threading.Thread(target=loop) for _ in range(workers)]
            for t in threads: t.start()
            for t in threads: t.join()
        measure(ch.stats, run)
else:
    async def main():
        async with triple_py.aio.insecure_channel(target, options=options) as ch:
            call = ch.unary_unary(method)
            for _ in range(200):
                await call(payload, timeout=10)
            async def loop():
                for _ in range(calls):
                    await call(payload, timeout=10)
            s0, u0 = ch.stats(), usage()
            await asyncio.gather(*(loop() for _ in range(workers)))
            print(row_of(s0, ch.stats(), u0, usage()))
    asyncio.run(main())
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per thread or task")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4, help="threads or tasks")
    parser.add_argument("--out", default=str(ROOT / "results" / time.strftime(
                        "lb_syscalls-%Y%m%d-%H%M%S")))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    servers = start_servers(4)
    table = backend_targets([p for _, p in servers])
    names = [(api, arm) for api in ("sync", "aio") for arm in table]
    rows: Dict[Tuple[str, str], List[dict]] = {name: [] for name in names}
    try:
        suffix = "" if args.workers == 4 else f"_{args.workers}workers"
        with open(out / f"syscalls_rounds{suffix}.jsonl", "w") as raw:
            for rnd in range(args.rounds):
                for api, arm in names[rnd % len(names):] + names[:rnd % len(names)]:
                    target, shared = table[arm]
                    row = run_child(CHILD, target, shared, api, str(args.calls), METHOD,
                                    str(args.workers), cwd=ROOT)
                    rows[(api, arm)].append(row)
                    raw.write(json.dumps({**row, "round": rnd, "api": api, "arm": arm,
                                          "target": target, "at": time.time()}) + "\n")
                    raw.flush()
                    print(f"round {rnd} {api:4s} {arm:5s} " + " ".join(
                        f"{k} {v:.3f}" for k, v in row.items()), flush=True)
    finally:
        stop_servers(servers)
    medians = {f"{api}-{arm}": {k: round(statistics.median(r[k] for r in rs), 3)
                                for k in (*COUNTERS, "context_switches", "cpu_us")}
               for (api, arm), rs in rows.items()}
    suffix = "" if args.workers == 4 else f"_{args.workers}workers"
    (out / f"syscalls_per_call{suffix}.json").write_text(json.dumps(medians, indent=1) + "\n")
    print(json.dumps(medians, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
