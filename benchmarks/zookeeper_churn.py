"""Calls lost and tail latency while Dubbo providers come and go in ZooKeeper (issue 25).

A zookeeper:// channel (round_robin or pick_first) loads embedded echo servers, each in a
process of its own and registered in a throw-away ZooKeeper (Debian's) the way a Dubbo
Triple provider registers.  Two conditions, paired in every round, same load:

  steady   providers A and B registered for the whole window;
  churn    A and B at the start; provider C registers at 1/3 of the window; A leaves at
           2/3 (its ZooKeeper session ends, as when a Dubbo provider process shuts down
           after unregistering).  The set is put back between windows, outside them.

The load: ``--threads`` Python threads, blocking unary calls (128 B) through the Python API,
closed loop, each call with a 10 s deadline.  A call is lost when it does not end OK (an
error status, or no answer within its deadline).  Rounds alternate the order of the two
conditions; per round the script reports both p99s and their ratio (churn / steady), and
the p99 of the second after each change.  It also reports how long a registry change took
to reach the channel's balancer (polling its endpoint list).

Reference (``--c-reference``, on by default): once per round, the C load generator over the
fixed list ``ipv4:A,B`` (resolved once, as the bench harness does for a registry target;
it cannot follow a registry change) with the same 8 calls in flight on 2 connections: what
the servers deliver with no Python client in the way.

Usage: .venv/bin/python benchmarks/zookeeper_churn.py [--rounds 5] [--window 6]
       [--threads 8] [--out results/zookeeper_churn-<timestamp>]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import triple_py
from triple_py.bench.loadgen import run_c_load
from triple_py.bench.messages import UNARY_METHOD
from triple_py.bench.recorders import percentile
from triple_py.registry.zookeeper_provider import ZookeeperProvider, provider_url
from triple_py.registry.zookeeper_server import LocalZookeeper
from triple_py_testing.peers import Peer, start_peer

ROOT = Path(__file__).resolve().parents[1]

SERVICE = "benchmark.BenchmarkService"
REQUEST = b"\n\x80\x01" + b"x" * 128  # BenchmarkRequest{payload: 128 bytes}
CALL_TIMEOUT = 10.0
WARMUP_S = 1.0
POLICIES = ("round_robin", "pick_first")

Record = Tuple[float, float, bool]  # (end time, latency s, ok)


class Registry:
    """The providers and their sessions: who is registered now."""

    def __init__(self, zk: LocalZookeeper, peers: Dict[str, Peer]) -> None:
        self.zk, self.peers = zk, peers
        self.sessions: Dict[str, ZookeeperProvider] = {}

    def add(self, name: str) -> None:
        url = provider_url(self.peers[name].address, SERVICE, methods=("UnaryCall",))
        self.sessions[name] = ZookeeperProvider(self.zk.address, url).start()

    def remove(self, name: str) -> None:
        self.sessions.pop(name).close()

    def exactly(self, names: Tuple[str, ...]) -> None:
        for name in [n for n in self.sessions if n not in names]:
            self.remove(name)
        for name in [n for n in names if n not in self.sessions]:
            self.add(name)

    def close(self) -> None:
        for name in list(self.sessions):
            self.remove(name)


def wait_endpoints(channel: triple_py.Channel, ports: List[int], timeout: float = 15) -> float:
    """Seconds until the channel's balancer lists exactly ``ports``."""
    t0 = time.monotonic()
    while sorted(e.port for e in channel._core.endpoints()) != sorted(ports):
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"balancer never listed {ports}")
        time.sleep(0.001)
    return time.monotonic() - t0


def load_window(channel: triple_py.Channel, threads: int, seconds: float,
                at: List[Tuple[float, Callable[[], Dict[str, float]]]]
                ) -> Tuple[List[Record], int, List[str], float, Dict]:
    """``threads`` threads calling for WARMUP_S + ``seconds``; ``at`` lists (offset into
    the window, action) run by the control thread.  Returns the window's records, the
    calls lost among all calls started in the window (also those that ended after it),
    the errors, the window start and the action timings."""
    call = channel.unary_unary(UNARY_METHOD)
    stop = threading.Event()
    records: List[List[Record]] = [[] for _ in range(threads)]
    errors: List[str] = []
    start = time.monotonic() + WARMUP_S

    def worker(out: List[Record]) -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                ok = call(REQUEST, timeout=CALL_TIMEOUT) == REQUEST
                if not ok:
                    errors.append("wrong reply")
            except triple_py.RpcError as exc:
                ok = False
                errors.append(f"{exc.code().name}: {exc.details()}")
            t1 = time.monotonic()
            if t0 >= start:
                out.append((t1, t1 - t0, ok))

    pool = [threading.Thread(target=worker, args=(r,), daemon=True) for r in records]
    cpu0 = time.process_time()
    for t in pool:
        t.start()
    timings: Dict[str, float] = {}
    for offset, action in at:
        time.sleep(max(0.0, start + offset - time.monotonic()))
        timings.update(action())
    time.sleep(max(0.0, start + seconds - time.monotonic()))
    stop.set()
    for t in pool:
        t.join(CALL_TIMEOUT + 5)
    timings["client_cpu_s"] = time.process_time() - cpu0
    flat = sorted((r for rs in records for r in rs), key=lambda r: r[0])
    lost = sum(1 for r in flat if not r[2])
    return [r for r in flat if r[0] <= start + seconds], lost, errors, start, timings


def summarize(records: List[Record], lost: int, errors: List[str], start: float,
              seconds: float, changes: List[float]) -> Dict:
    lat = sorted(r[1] for r in records if r[2])
    out = {"calls": len(records), "lost": lost,
           "errors_sample": errors[:5], "qps": len(records) / seconds,
           "p50_ms": percentile(lat, 0.5) * 1e3, "p99_ms": percentile(lat, 0.99) * 1e3,
           "p999_ms": percentile(lat, 0.999) * 1e3, "max_ms": lat[-1] * 1e3}
    after = []
    for offset in changes:  # the second that follows each change
        window = sorted(r[1] for r in records if start + offset <= r[0] < start + offset + 1)
        after.append(percentile(window, 0.99) * 1e3 if window else None)
    out["p99_1s_after_change_ms"] = after
    return out


def run_condition(channel: triple_py.Channel, registry: Registry, churn: bool, threads: int,
                  seconds: float) -> Dict:
    peers = registry.peers
    registry.exactly(("A", "B"))
    wait_endpoints(channel, [peers["A"].port, peers["B"].port])
    offsets = [seconds / 3, 2 * seconds / 3]  # steady: the same seconds, for pairing

    def add_c() -> Dict[str, float]:
        t0 = time.monotonic()
        registry.add("C")
        return {"add_registered_s": time.monotonic() - t0,
                "add_seen_s": wait_endpoints(channel, [peers[n].port for n in "ABC"])}

    def remove_a() -> Dict[str, float]:
        t0 = time.monotonic()
        registry.remove("A")
        return {"remove_done_s": time.monotonic() - t0,
                "remove_seen_s": wait_endpoints(channel, [peers[n].port for n in "BC"])}

    actions = list(zip(offsets, (add_c, remove_a))) if churn else []
    records, lost, errors, start, timings = load_window(channel, threads, seconds, actions)
    result = summarize(records, lost, errors, start, seconds, offsets)
    result["condition"] = "churn" if churn else "steady"
    result["timings"] = timings
    result["client_cpu_us_per_call"] = (timings["client_cpu_s"] * 1e6 / result["calls"]
                                        if result["calls"] else None)
    return result


def c_reference(peers: Dict[str, Peer], threads: int, seconds: float) -> Dict:
    """The C load generator, steady, over the fixed list of providers A and B."""
    target = f"ipv4:{peers['A'].address},{peers['B'].address}"
    result = run_c_load(arm="fastpath", mode="fastpath", target=target, method=UNARY_METHOD,
                        payload_size=128, concurrency=threads, connections=2,
                        duration=seconds, warmup=WARMUP_S, timeout=CALL_TIMEOUT)
    return {"target": target, "calls": result.calls, "lost": result.errors,
            "qps": result.qps, "p50_ms": result.latency.p50 / 1e6,
            "p99_ms": result.latency.p99 / 1e6, "p999_ms": result.latency.p99_9 / 1e6,
            "client_cpu_us_per_call": result.cpu.get("process_us_per_call")}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--window", type=float, default=6.0, help="measured seconds (6)")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--no-c-reference", dest="c_reference", action="store_false")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / time.strftime(
                        "zookeeper_churn-%Y%m%d-%H%M%S"))
    args = parser.parse_args(argv)
    policies = args.policies.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"script": "benchmarks/zookeeper_churn.py", "argv": sys.argv[1:],
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "load_before": os.getloadavg()},
           "rounds": []}
    with LocalZookeeper() as zk:
        peers = {name: start_peer("embedded") for name in "ABC"}
        registry = Registry(zk, peers)
        try:
            registry.exactly(("A", "B"))
            for rnd in range(args.rounds):
                if args.c_reference:
                    registry.exactly(("A", "B"))
                    ref = c_reference(peers, args.threads, args.window)
                    doc.setdefault("c_reference", []).append({"round": rnd, **ref})
                    print(f"round {rnd} C generator over A,B (fixed): p99 "
                          f"{ref['p99_ms']:.2f} ms, {ref['qps']:.0f} calls/s, lost "
                          f"{ref['lost']} of {ref['calls']}", flush=True)
                for policy in policies:
                    target = f"zookeeper://{zk.address}/{SERVICE}"
                    with triple_py.insecure_channel(
                            target, options=[("grpc.lb_policy_name", policy)]) as channel:
                        order = (False, True) if rnd % 2 == 0 else (True, False)
                        pair = {}
                        for churn in order:
                            got = run_condition(channel, registry, churn, args.threads,
                                                args.window)
                            pair[got["condition"]] = got
                        ratio = pair["churn"]["p99_ms"] / pair["steady"]["p99_ms"]
                        row = {"round": rnd, "policy": policy,
                               "order": [("churn" if c else "steady") for c in order],
                               "p99_ratio_churn_over_steady": ratio, **pair}
                        doc["rounds"].append(row)
                        print(f"round {rnd} {policy:11s} steady p99 "
                              f"{pair['steady']['p99_ms']:.2f} ms, churn p99 "
                              f"{pair['churn']['p99_ms']:.2f} ms (x{ratio:.2f}); lost "
                              f"{pair['steady']['lost']}/{pair['churn']['lost']} of "
                              f"{pair['steady']['calls']}/{pair['churn']['calls']}; seen "
                              f"add {pair['churn']['timings']['add_seen_s'] * 1e3:.1f} ms, "
                              f"remove {pair['churn']['timings']['remove_seen_s'] * 1e3:.1f} ms",
                              flush=True)
        finally:
            registry.close()
            for peer in peers.values():
                peer.stop()
    doc["machine"]["load_after"] = os.getloadavg()
    doc["summary"] = {}
    for policy in policies:
        rows = [r for r in doc["rounds"] if r["policy"] == policy]
        ratios = [r["p99_ratio_churn_over_steady"] for r in rows]
        doc["summary"][policy] = {
            "rounds": len(rows),
            "lost_steady": sum(r["steady"]["lost"] for r in rows),
            "lost_churn": sum(r["churn"]["lost"] for r in rows),
            "calls_steady": sum(r["steady"]["calls"] for r in rows),
            "calls_churn": sum(r["churn"]["calls"] for r in rows),
            "p99_ratio_median": statistics.median(ratios),
            "p99_ratio_min": min(ratios), "p99_ratio_max": max(ratios),
            "p99_steady_median_ms": statistics.median(r["steady"]["p99_ms"] for r in rows),
            "p99_churn_median_ms": statistics.median(r["churn"]["p99_ms"] for r in rows),
            "qps_steady_median": statistics.median(r["steady"]["qps"] for r in rows),
            "qps_churn_median": statistics.median(r["churn"]["qps"] for r in rows),
            "add_seen_ms_median": statistics.median(
                r["churn"]["timings"]["add_seen_s"] * 1e3 for r in rows),
            "remove_seen_ms_median": statistics.median(
                r["churn"]["timings"]["remove_seen_s"] * 1e3 for r in rows),
        }
    if doc.get("c_reference"):
        refs = doc["c_reference"]
        doc["summary"]["c_reference"] = {
            "rounds": len(refs), "lost": sum(r["lost"] for r in refs),
            "calls": sum(r["calls"] for r in refs),
            "p99_median_ms": statistics.median(r["p99_ms"] for r in refs),
            "qps_median": statistics.median(r["qps"] for r in refs)}
    (args.out / "churn.json").write_text(json.dumps(doc, indent=1))
    print(json.dumps(doc["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
