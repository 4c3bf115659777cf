"""Several embedded echo servers, each in a process of its own, the targets that spread
calls over them, and a child program that loads them while the backends change: what the
balancer benchmarks (benchmarks/lb_*.py) share.

    servers = start_servers(4)            # [(process, port), ...]
    try:
        for arm, (target, shared) in backend_targets([p for _, p in servers]).items():
            row = run_child(CODE, target, shared)   # the child's last line, as JSON
    finally:
        stop_servers(servers)
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

__all__ = ["CHURN_CHILD", "backend_targets", "run_child", "start_server", "start_servers",
           "stop_servers"]

Server = Tuple[subprocess.Popen, int]


def start_server(cwd: Optional[Path] = None) -> Server:
    """One embedded echo server (``python -m triple_py.server``) in a process of its own,
    serving until its stdin closes: (its process, its port)."""
    proc = subprocess.Popen([sys.executable, "-m", "triple_py.server", "--port", "0",
                             "--exit-on-stdin-eof"], cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("LISTENING "):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, int(line.split()[1])


def start_servers(n: int, cwd: Optional[Path] = None) -> List[Server]:
    """``n`` embedded echo servers, each in a process of its own."""
    servers: List[Server] = []
    try:
        for _ in range(n):
            servers.append(start_server(cwd))
    except BaseException:
        stop_servers(servers)
        raise
    return servers


def stop_servers(servers: List[Server]) -> None:
    """Ends the servers of :func:`start_servers` (closing their stdin) and waits for them."""
    for proc, _ in servers:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=10)


def backend_targets(ports: List[int]) -> Dict[str, Tuple[str, str]]:
    """Arm name -> (target, shared I/O thread flag "1"/"0") over the servers on ``ports``
    (at least 4): ``one`` (the first server: the channel calls the core directly), and
    ``ipv4:`` lists of 2 and 4 servers with their connections on a thread each (``rr2``,
    ``rr4``) or on one shared I/O thread (``rr2s``, ``rr4s``)."""
    def ipv4(n: int) -> str:
        return "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports[:n])
    return {"one": (f"127.0.0.1:{ports[0]}", "1"), "rr2": (ipv4(2), "0"),
            "rr2s": (ipv4(2), "1"), "rr4": (ipv4(4), "0"), "rr4s": (ipv4(4), "1")}


def run_child(code: str, *args: str, python: str = sys.executable,
              cwd: Optional[Path] = None, timeout: float = 120) -> dict:
    """Runs ``python -c code args...`` and returns its last stdout line, a JSON object;
    RuntimeError with its stderr's end when it fails. ``python`` and ``cwd`` choose the
    interpreter and the checkout whose triple_py it imports."""
    out = subprocess.run([python, "-c", code, *args], cwd=cwd, capture_output=True,
                         text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


#: argv: ports (comma-separated, 4), seconds, method, "1" to churn ("0": a fixed list).
#: 4 threads of 128 B unary calls under round_robin on a channel whose test resolver
#: swaps the endpoint list every 0.25 s (with churn) among six lists of 2 or 3 of the
#: servers; prints {calls, lost (an RpcError), changes, p50_us, p99_us, qps}.
CHURN_CHILD = r"""
import json, sys, threading, time
import triple_py
from triple_py._resolver import Endpoint, register_scheme
ports, seconds, churn = [int(p) for p in sys.argv[1].split(",")], float(sys.argv[2]), sys.argv[4] == "1"
eps = [Endpoint("127.0.0.1", p) for p in ports]
class Swap:
    def start(self, on_update):
        self.on_update = on_update
        on_update(eps[:2])
    def refresh(self): pass
    def close(self): pass
resolver = Swap()
register_scheme("churn", lambda parsed: resolver)
payload = b"\x0a\x80\x01" + b"a" * 128
lists = [eps[:2], eps[:3], eps[1:3], eps[1:4], eps[2:4], [eps[0], eps[3]]]
with triple_py.insecure_channel("churn:///svc", options=[("grpc.lb_policy_name", "round_robin")]) as ch:
    call = ch.unary_unary(sys.argv[3])
    for _ in range(300):
        call(payload, timeout=10)
    stop = time.monotonic() + seconds
    lat, lost = [[] for _ in range(4)], [0]
    def loop(i):
        while time.monotonic() < stop:
            t = time.perf_counter()
            try:
                call(payload, timeout=10)
                lat[i].append(time.perf_counter() - t)
            except triple_py.RpcError:
                lost[0] += 1
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(4)]
    for t in threads: t.start()
    changes = 0
    while churn and time.monotonic() < stop:
        time.sleep(0.25)
        changes += 1
        resolver.on_update(lists[changes % len(lists)])
    for t in threads: t.join()
    all_lat = sorted(x for l in lat for x in l)
    print(json.dumps({"calls": len(all_lat), "lost": lost[0], "changes": changes,
                      "p50_us": all_lat[len(all_lat) // 2] * 1e6,
                      "p99_us": all_lat[int(len(all_lat) * 0.99)] * 1e6,
                      "qps": len(all_lat) / seconds}))
"""
