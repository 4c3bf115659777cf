"""Context switches, futex calls and CPU per call of triple_py's blocking unary path
with many Python threads (the GIL-side wake-ups), load-independent counts.

    .venv/bin/python benchmarks/python_wakeups.py [--threads 50] [--calls 20000]
        [--size 128] [--arm sync|aio|c|threads] [--strace] [--peer embedded|go] [--cpus 0]
    .venv/bin/python benchmarks/python_wakeups.py --base DIR [--rounds 6] [--arms c,sync,aio]
        [--host NAME]

A child process makes ``--calls`` unary calls of ``--size`` payload bytes to the
embedded echo server (another process, not counted), from ``--threads`` Python threads
(``sync``) or that many tasks of one event loop (``aio``), or the C load generator with
that many calls in flight (``c``, the reference), or ``--threads`` threads of a C program
making blocking calls through the core (``threads``: ``benchmarks/blocking_threads.c``,
built from the checkout; the sync path's threading without Python), after a warm-up of
one call per thread.  The child reads ``getrusage(RUSAGE_SELF)`` around the run (every thread,
exited ones included), so the context switches and minor page faults per call (voluntary and involuntary) do
not depend on how busy the machine's cores are.  ``--strace`` also runs the child under
``strace -f -c`` and reports the system calls per call of the whole child (start-up
included, and strace's stops change the threads' interleaving: a count for comparing
two trees, not an absolute figure; the context switches of such a run mean nothing).
``--base DIR`` runs every arm in this checkout and in DIR (built in place) in interleaved
rounds against one server and reports the paired ratios: this / base, and each other
arm / the C generator within each tree.  ``--cpus 0`` runs the client child on CPU 0
only (the peer stays unpinned): every wake-up between its threads then stays on one
CPU, which shows what the cross-CPU ones cost.  ``--host NAME`` makes every client dial
the peer by a host name that resolves to 127.0.0.1 instead of by its address.
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
from typing import Dict, List, Optional, Set, Tuple

from triple_py.bench.results.paired import compare_pairs
from triple_py.bench.workload.messages import UNARY_METHOD
from triple_py_testing.peers import start_peer

ROOT = Path(__file__).resolve().parents[1]  # --root: the checkout whose triple_py runs
ARMS = ("sync", "aio", "c", "threads")  # threads: benchmarks/blocking_threads.c, no Python

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
    return (r.ru_nvcsw, r.ru_nivcsw, r.ru_utime + r.ru_stime, time.monotonic(), r.ru_stime,
            r.ru_minflt)

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
    before, s0 = usage(), ch.stats()
    for t in ts: t.join()
    after, s1 = usage(), ch.stats()
    ch.close()
elif arm == "c":  # the C load generator: the same calls, no Python per call
    host, port = address.rsplit(":", 1)
    def load(count, **kw):
        triple_py._triple.run_load(host, int(port), path=method, mode="unary", connections=1,
                                   duration=0.0, warmup=0.0, payload_size=int(sys.argv[6]),
                                   concurrency=threads, count=count, **kw)
    load(threads)  # warm-up
    before = usage()
    load(calls, shared_request=True)
    after = usage()
    s0 = s1 = {}  # the generator's channel is its own
    per = calls // threads
    lat = [0.0] * calls  # the generator's own histogram is not read here
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
            b, s0 = usage(), ch.stats()
            await asyncio.gather(*(work() for _ in range(threads)))
            return b, usage(), s0, ch.stats()
    before, after, s0, s1 = asyncio.run(main())
n = per * threads
lat.sort()
print("RESULT " + json.dumps({
    "calls": n,
    "vcsw_per_call": (after[0] - before[0]) / n,
    "ivcsw_per_call": (after[1] - before[1]) / n,
    "cpu_us_per_call": (after[2] - before[2]) / n * 1e6,
    "sys_us_per_call": (after[4] - before[4]) / n * 1e6,
    "minflt_per_call": (after[5] - before[5]) / n,
    "qps": n / (after[3] - before[3]),
    "p50_us": lat[n // 2] * 1e6, "p99_us": lat[int(n * 0.99)] * 1e6,
    # of the bytes read, the share read straight into their messages (in-place reads)
    "in_place_share": ((s1["bytes_read_in_place"] - s0["bytes_read_in_place"])
                       / max(1, s1["bytes_read"] - s0["bytes_read"]) if s0 else 0.0),
    **getattr(triple_py._triple, "handoff_stats", dict)()}))
"""


def blocking_threads_binary(root: Path) -> Path:
    """``benchmarks/blocking_threads.c`` of checkout ``root``, built against that
    checkout's core by its Makefile (``build/blocking_threads``, rebuilt when stale)."""
    subprocess.run(["make", "-s", "-C", str(root), "-o", "bootstrap", "build/blocking_threads"],
                   check=True)
    return root / "build" / "blocking_threads"


def run(root: Path, arm: str, address: str, threads: int, calls: int, size: int,
        strace: bool, cpus: Optional[Set[int]] = None) -> Dict[str, float]:
    """One child run; its figures (with ``futex_per_call`` etc. under ``strace``).
    With ``cpus`` the child (every thread of it, the library's I/O threads included)
    runs on those CPUs only, as ``taskset`` would."""
    if arm == "threads":
        host, port = address.rsplit(":", 1)
        cmd = [str(blocking_threads_binary(root)), host, port, str(threads), str(calls),
               str(size)]
    else:
        cmd = [sys.executable, "-c", CHILD, arm, address, UNARY_METHOD,
               str(threads), str(calls), str(size)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(  # the checkout's triple_py first
        p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "strace.out"
        if strace:
            cmd = ["strace", "-f", "-c", "-o", str(trace)] + cmd
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=root,
                              env=env, preexec_fn=pin)
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


PAIRED = ("cpu_us_per_call", "qps", "vcsw_per_call", "minflt_per_call")


def by_name(address: str, host: Optional[str]) -> str:
    """``address`` ("ip:port") with its host replaced by ``host`` when one is given."""
    return f"{host}:{address.rsplit(':', 1)[1]}" if host else address


def paired(this: Path, base: Path, arms: List[str], peer: str, rounds: int, threads: int,
           calls: int, size: int, cpus: Optional[Set[int]] = None,
           host: Optional[str] = None) -> None:
    """Interleaved rounds of every arm in two checkouts (order alternating by round): one
    JSON line per child run (the raw data), then this / base per arm and, within each
    tree, each Python arm / the C generator, paired by round (Hodges-Lehmann estimate,
    exact interval, verdict)."""
    trees = {"this": this, "base": base}
    figures: Dict[str, Dict[Tuple[str, str, int], float]] = {m: {} for m in PAIRED}
    with start_peer(peer) as server:
        for rnd in range(rounds):
            for arm in arms:
                for tree in (["this", "base"] if rnd % 2 == 0 else ["base", "this"]):
                    result = run(trees[tree], arm, by_name(server.address, host), threads,
                                 calls, size, False, cpus)
                    for metric in PAIRED:
                        figures[metric][(arm, tree, rnd)] = result[metric]
                    print(json.dumps({"round": rnd, "arm": arm, "tree": tree,
                                      **{k: round(v, 3) for k, v in result.items()}}),
                          flush=True)
    print(f"# {rounds} rounds, {threads} threads/tasks/calls in flight, {calls} calls of "
          f"{size} B per run, {peer} peer; this = {this}, base = {base}"
          + (f"; client on CPUs {sorted(cpus)}" if cpus else "")
          + (f"; clients dial the host name {host!r}" if host else ""))
    for metric in PAIRED:
        print(f"# {metric}: this / base, paired by round")
        for row in compare_pairs(figures[metric], [("this", "base")], arms):
            print(f"#   {row.scenario:<5} {row.estimate:7.3f} [{row.ci_low:.3f}, "
                  f"{row.ci_high:.3f}] ({row.confidence:.0%}) p={row.p:.3g} {row.verdict}")
    if "c" in arms:
        by_tree = {(tree, arm, rnd): v for (arm, tree, rnd), v
                   in figures["cpu_us_per_call"].items()}
        print("# cpu_us_per_call: each arm / C generator, paired by round")
        for row in compare_pairs(by_tree, [(a, "c") for a in arms if a != "c"],
                                 ["this", "base"]):
            print(f"#   {row.scenario:<5} {row.arm:<5} {row.estimate:7.3f} [{row.ci_low:.3f}, "
                  f"{row.ci_high:.3f}] ({row.confidence:.0%})")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--arm", default="sync", choices=ARMS)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--strace", action="store_true")
    parser.add_argument("--peer", default="embedded", choices=("embedded", "go"))
    parser.add_argument("--base", type=Path, help="a baseline checkout: paired rounds")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--arms", default="c,sync,aio", help="with --base")
    parser.add_argument("--cpus", default="", help="run the client child on these CPUs "
                        "only (comma-separated; the peer is not pinned)")
    parser.add_argument("--host", default="", help="dial the peer by this host name (it "
                        "must resolve to 127.0.0.1, where the peer listens: localhost, or "
                        "the machine's name in /etc/hosts) instead of its IP address")
    args = parser.parse_args(argv)
    cpus = {int(c) for c in args.cpus.split(",") if c} or None
    if args.base:
        arms = args.arms.split(",")
        unknown = set(arms) - set(ARMS)
        if unknown:
            parser.error(f"unknown arms {sorted(unknown)}; known: {', '.join(ARMS)}")
        paired(args.root.resolve(), args.base.resolve(), arms, args.peer, args.rounds,
               args.threads, args.calls, args.size, cpus, args.host or None)
        return 0
    with start_peer(args.peer) as peer:
        result = run(args.root.resolve(), args.arm, by_name(peer.address, args.host or None),
                     args.threads, args.calls, args.size, args.strace, cpus)
    print(json.dumps({k: round(v, 3) for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
