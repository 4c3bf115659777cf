"""Round robin over 1, 2 and 4 backends against one backend (issue 25), paired rounds.

    .venv/bin/python benchmarks/lb_backends.py [--rounds 8] [--seconds 2]
        [--out results/lb_backends-<timestamp>] [--arms one,rr2,rr2s,...] [--no-churn]

Four embedded echo servers run in processes of their own (``python -m triple_py.server``).
Every round runs each arm once, in an order that rotates from round to round, each in a
fresh child process:

- Python (triple_py sync channel, 4 threads of 128 B unary calls): ``one`` (the baseline:
  ``127.0.0.1:P1``, the direct core call), ``rr1`` (``dns:///localhost:P1`` under
  round_robin: the balancer in front of one backend), ``rr2`` and ``rr4``
  (``ipv4:`` lists of 2 and 4 servers under round_robin, a thread per backend:
  ``triple.shared_io_thread`` off), ``rr2s`` and ``rr4s`` (the same with the backends'
  connections on one shared I/O thread);
- Python asyncio (4 tasks on one channel, the same calls): ``aio-one`` (baseline),
  ``aio-rr2``, ``aio-rr2s``, ``aio-rr4``, ``aio-rr4s``;
- C load generator (fastpath, 4 connections x 4 calls in flight): ``c-one``, ``c-rr2``,
  ``c-rr4`` (connection i -> server i % n).

Each child prints its calls/s and client CPU µs per call (process CPU over the measured
window, every thread included).  ``triple_py.bench.paired.compare_pairs`` gives the
per-round ratios against the baseline of the same round, the Hodges-Lehmann estimate and
its exact interval.  A ``churn`` child then measures calls lost and p99 while backends are
added and removed under load (a test resolver swaps the endpoint list every 0.25 s)
against the same load with a fixed list.  Raw rows go to ``<out>/rounds.jsonl``, the
summary to ``<out>/summary.txt``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Dict, Tuple

from triple_py.bench.messages import UNARY_METHOD as METHOD
from triple_py.bench.paired import compare_pairs
from triple_py_testing.backends import CHURN_CHILD, run_child, start_servers, stop_servers

ROOT = Path(__file__).resolve().parents[1]

PY_CHILD = r"""
import asyncio, json, sys, threading, time
import triple_py, triple_py.aio
target, seconds, shared = sys.argv[1], float(sys.argv[2]), sys.argv[4] != "0"
api = sys.argv[5] if len(sys.argv) > 5 else "sync"
options = [("grpc.lb_policy_name", "round_robin"), ("triple.shared_io_thread", shared)]
payload = b"\x0a\x80\x01" + b"a" * 128
def report(n, t0, t1, c0, c1):
    print(json.dumps({"qps": n / (t1 - t0), "cpu_us_per_call": (c1 - c0) / n * 1e6,
                      "calls": n}))
if api == "aio":
    async def main():
        async with triple_py.aio.insecure_channel(target, options=options) as ch:
            call = ch.unary_unary(sys.argv[3])
            for _ in range(300):
                await call(payload, timeout=10)
            stop = time.monotonic() + seconds
            async def loop():
                n = 0
                while time.monotonic() < stop:
                    await call(payload, timeout=10)
                    n += 1
                return n
            t0, c0 = time.monotonic(), time.process_time()
            counts = await asyncio.gather(*(loop() for _ in range(4)))
            report(sum(counts), t0, time.monotonic(), c0, time.process_time())
    asyncio.run(main())
    sys.exit(0)
with triple_py.insecure_channel(target, options=options) as ch:
    call = ch.unary_unary(sys.argv[3])
    for _ in range(300):
        call(payload, timeout=10)
    stop = time.monotonic() + seconds
    counts = [0] * 4
    def loop(i):
        n = 0
        while time.monotonic() < stop:
            call(payload, timeout=10)
            n += 1
        counts[i] = n
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(4)]
    t0, c0 = time.monotonic(), time.process_time()
    for t in threads: t.start()
    for t in threads: t.join()
    report(sum(counts), t0, time.monotonic(), c0, time.process_time())
"""

C_CHILD = r"""
import json, sys
from triple_py.bench.loadgen import run_c_load
r = run_c_load(arm="fastpath", mode="fastpath", target=sys.argv[1], method=sys.argv[3],
               payload_size=128, concurrency=16, connections=4, duration=float(sys.argv[2]),
               warmup=0.3)
print(json.dumps({"qps": r.qps, "cpu_us_per_call": r.cpu_us_per_call, "calls": r.calls,
                  "errors": r.errors}))
"""

ARMS = ("one", "rr1", "rr2", "rr2s", "rr4", "rr4s", "aio-one", "aio-rr2", "aio-rr2s",
        "aio-rr4", "aio-rr4s", "c-one", "c-rr2", "c-rr4")
# Scenario -> (arm, baseline) pairs compared round by round: each against one backend, and
# the shared I/O thread against a thread per backend.
PAIRS = {
    "python": [("rr1", "one"), ("rr2", "one"), ("rr4", "one"), ("rr2s", "one"),
               ("rr4s", "one"), ("rr2s", "rr2"), ("rr4s", "rr4")],
    "aio": [("aio-rr2", "aio-one"), ("aio-rr4", "aio-one"), ("aio-rr2s", "aio-one"),
            ("aio-rr4s", "aio-one"), ("aio-rr2s", "aio-rr2"), ("aio-rr4s", "aio-rr4")],
    "c": [("c-rr2", "c-one"), ("c-rr4", "c-one")],
}


def scenario_of(arm: str) -> str:
    return "c" if arm.startswith("c-") else "aio" if arm.startswith("aio-") else "python"


def arm_child(arm: str, targets: Dict[str, str]) -> Tuple[str, str, Tuple[str, ...]]:
    """(child code, target, extra argv) of an arm: ``[aio-|c-]<one|rr1|rr2|rr4>[s]``; the
    trailing ``s`` puts the backends on one shared I/O thread."""
    scenario = scenario_of(arm)
    base = arm.split("-", 1)[1] if scenario != "python" else arm
    shared = base.endswith("s")
    target = targets[base.rstrip("s")]
    if scenario == "c":
        return C_CHILD, target, ()
    return PY_CHILD, target, ("1" if shared or base == "one" else "0",
                              "aio" if scenario == "aio" else "sync")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--out", default=str(ROOT / "results" / time.strftime(
                        "lb_backends-%Y%m%d-%H%M%S")))
    parser.add_argument("--arms", default=",".join(ARMS),
                        help="comma-separated subset of " + ",".join(ARMS))
    parser.add_argument("--no-churn", action="store_true", help="skip the churn rounds")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    servers = start_servers(4)
    ports = [p for _, p in servers]

    def ipv4(n: int) -> str:
        return "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports[:n])
    targets = {"one": f"127.0.0.1:{ports[0]}", "rr1": f"dns:///localhost:{ports[0]}",
               "rr2": ipv4(2), "rr4": ipv4(4)}
    qps: Dict[Tuple[str, str, int], float] = {}
    cpu: Dict[Tuple[str, str, int], float] = {}
    names = args.arms.split(",")
    churn = []
    try:
        with open(out / "rounds.jsonl", "w") as raw:
            for rnd in range(args.rounds):
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                for arm in order:
                    code, target, extra = arm_child(arm, targets)
                    row = run_child(code, target, str(args.seconds), METHOD, *extra, cwd=ROOT)
                    row.update(round=rnd, arm=arm, target=target, at=time.time())
                    raw.write(json.dumps(row) + "\n")
                    raw.flush()
                    scenario = scenario_of(arm)
                    qps[(scenario, arm, rnd)] = row["qps"]
                    cpu[(scenario, arm, rnd)] = row["cpu_us_per_call"]
                    print(f"round {rnd} {arm:8s} {row['qps']:9.0f} calls/s "
                          f"{row['cpu_us_per_call']:7.1f} us CPU/call", flush=True)
            for rnd in range(0 if args.no_churn else 3):
                for mode in ("0", "1"):
                    row = run_child(CHURN_CHILD, ",".join(map(str, ports)), "4", METHOD, mode,
                                    cwd=ROOT)
                    row.update(round=rnd, arm="churn" if mode == "1" else "fixed")
                    raw.write(json.dumps(row) + "\n")
                    churn.append(row)
                    print(row, flush=True)
    finally:
        stop_servers(servers)
    lines = ["Paired ratios against the baseline of the same round (2-core shared VM; "
             "the servers run on the same 2 cores).", ""]
    for what, values in (("QPS", qps), ("client CPU per call (arm / baseline: >1 means more CPU)", cpu)):
        lines.append(f"{what}:")
        for scenario, pairs in PAIRS.items():
            pairs = [(a, b) for a, b in pairs if a in names and b in names]
            for row in compare_pairs(values, pairs, [scenario]) if pairs else ():
                lines.append(f"  {row.arm:8s} vs {row.baseline:8s} HL {row.estimate:.3f} "
                             f"[{row.ci_low:.3f}, {row.ci_high:.3f}] ({row.confidence:.0%}) "
                             f"p={row.p:.3f} median {row.median:.3f} {row.verdict or ''}")
    lines.append("Backends added/removed every 0.25 s under load (4 threads, round robin):")
    for row in churn:
        lines.append(f"  {row['arm']:5s} round {row['round']}: {row['calls']} calls, "
                     f"lost {row['lost']}, changes {row['changes']}, "
                     f"p50 {row['p50_us']:.0f} us, p99 {row['p99_us']:.0f} us")
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
