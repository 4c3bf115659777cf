"""Context switches, futex calls and CPU per call of triple_py's blocking unary path
with many Python threads (the GIL-side wake-ups), load-independent counts.

    .venv/bin/python benchmarks/python_wakeups.py [--threads 50] [--calls 20000]
        [--size 128] [--arm sync|aio] [--strace]

A child process makes ``--calls`` unary calls of ``--size`` payload bytes to the
embedded echo server (another process, not counted), from ``--threads`` Python threads
(``sync``) or that many tasks of one event loop (``aio``), after a warm-up of one call
per thread.  The child reads ``getrusage(RUSAGE_SELF)`` around the run (every thread,
exited ones included), so the context switches per call (voluntary and involuntary) do
not depend on how busy the machine's cores are.  ``--strace`` also runs the child under
``strace -f -c`` and reports the system calls per call of the whole child (start-up
included, and strace's stops change the threads' interleaving: a count for comparing
two trees, not an absolute figure; the context switches of such a run mean nothing).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

from triple_py.bench.workload.messages import UNARY_METHOD
from triple_py_testing.peers import start_peer

ROOT = Path(__file__).resolve().parents[1]  # --root: the checkout whose triple_py runs

CHILD = r"""
import asyncio, json, resource, sys, threading, time
import triple_py, triple_py.aio
arm, address, method = sys.argv[1], sys.argv[2], sys.argv[3]
from triple_py.bench.workload.messages import benchmark_request
threads, calls, payload = int(sys.argv[4]), int(sys.argv[5]), benchmark_request(int(sys.argv[6]))
per = calls // threads
lat = []

def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw, r.ru_nivcsw, r.ru_utime + r.ru_stime, time.monotonic(), r.ru_stime

if arm == "sync":
    ch = triple_py.insecure_channel(address)
    call = ch.unary_unary(method)
    start = threading.Barrier(threads + 1)
    def work():
        call(payload, timeout=30)
        start.wait()
        mine = []
        for _ in range(per):
            t = time.perf_counter()
            call(payload, timeout=30)
            mine.append(time.perf_counter() - t)
        lat.extend(mine)
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts: t.start()
    start.wait()
    before = usage()
    for t in ts: t.join()
    after = usage()
    ch.close()
else:
    async def main():
        async with triple_py.aio.insecure_channel(address) as ch:
            call = ch.unary_unary(method)
            await asyncio.gather(*(call(payload, timeout=30) for _ in range(threads)))
            async def work():
                for _ in range(per):
                    t = time.perf_counter()
                    await call(payload, timeout=30)
                    lat.append(time.perf_counter() - t)
            b = usage()
            await asyncio.gather(*(work() for _ in range(threads)))
            return b, usage()
    before, after = asyncio.run(main())
n = per * threads
lat.sort()
print("RESULT " + json.dumps({
    "calls": n,
    "vcsw_per_call": (after[0] - before[0]) / n,
    "ivcsw_per_call": (after[1] - before[1]) / n,
    "cpu_us_per_call": (after[2] - before[2]) / n * 1e6,
    "sys_us_per_call": (after[4] - before[4]) / n * 1e6,
    "qps": n / (after[3] - before[3]),
    "p50_us": lat[n // 2] * 1e6, "p99_us": lat[int(n * 0.99)] * 1e6,
    **getattr(triple_py._triple, "handoff_stats", dict)()}))
"""


def run(root: Path, arm: str, address: str, threads: int, calls: int, size: int,
        strace: bool) -> Dict[str, float]:
    """One child run; its figures (with ``futex_per_call`` etc. under ``strace``)."""
    cmd = [sys.executable, "-c", CHILD, arm, address, UNARY_METHOD,
           str(threads), str(calls), str(size)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(  # the checkout's triple_py first
        p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "strace.out"
        if strace:
            cmd = ["strace", "-f", "-c", "-o", str(trace)] + cmd
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=root,
                              env=env)
        found = re.search(r"^RESULT (.*)$", proc.stdout, re.M)
        if proc.returncode or not found:
            raise RuntimeError(f"run failed: {(proc.stdout + proc.stderr)[-600:]}")
        result: Dict[str, float] = json.loads(found.group(1))
        if strace:
            for line in trace.read_text().splitlines():
                cols = line.split()
                if len(cols) >= 5 and cols[-1] in ("futex", "epoll_wait", "write", "read",
                                                   "sendmsg", "getpid", "epoll_ctl", "recvmsg", "poll"):
                    result[f"{cols[-1]}_per_call"] = int(cols[3]) / result["calls"]
    return result


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--arm", default="sync", choices=("sync", "aio"))
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--strace", action="store_true")
    args = parser.parse_args(argv)
    with start_peer("embedded") as peer:
        result = run(args.root.resolve(), args.arm, peer.address, args.threads, args.calls,
                     args.size, args.strace)
    print(json.dumps({k: round(v, 3) for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
