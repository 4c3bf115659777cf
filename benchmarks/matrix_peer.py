"""A triple_py.bench matrix against a real peer server (grpc-go by default).

    .venv/bin/python benchmarks/matrix_peer.py seed-unary [--peer go] [matrix flags...]
    .venv/bin/python benchmarks/matrix_peer.py seed-stream --restart-server --rounds 6
    .venv/bin/python benchmarks/matrix_peer.py concurrency-sweep --peer embedded --pin
    .venv/bin/python benchmarks/matrix_peer.py concurrency-sweep --peer-flag stream_workers=2

Starts the peer with tests/peers/launch.py (the Go peer is built on first use) and runs
`python -m triple_py.bench matrix ...` against it; every flag after the matrix name is the
harness's (see `python -m triple_py.bench matrix --help`). With --restart-server every
round gets a freshly started peer. The package itself never imports tests/: this script
hands the harness a server factory instead of a --target. `--peer embedded` is our C echo
server in a process of its own. Since every peer is a process of its own, every arm run
also reports the server's CPU time per call (the `srv µs/call` column,
`server_cpu_us_per_call` in the CSV, `server-cpu-ns/op` in bench.txt).

`--pin` puts the peer on the last CPU (every thread of it; the Go peer with GOMAXPROCS=1)
and this process, with the load generator's threads and the h2load it starts, on the other
CPUs, so that client and server stop taking turns on the same cores: the QPS then varies
less from round to round, and it is the server's capacity, not the scheduler's, that
bounds a server-bound arm.

`--peer-flag NAME=VALUE` (repeatable) starts the peer with one more flag of its own, e.g.
`stream_workers=2` for the Go peer's `-stream-workers 2` (grpc.NumStreamWorkers: streams
served by long-lived goroutines instead of one new goroutine per stream).
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, Set

from triple_py_testing.peers import PEER_NAMES, start_peer

from triple_py.bench.cli import main
from triple_py.bench.server_cpu import ServerProcess


def pin_process(pid: int, cpus: Set[int]) -> None:
    """Moves every thread of process ``pid`` onto ``cpus`` (threads it starts later
    inherit the affinity of the thread that starts them)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(tid), cpus)


def run(argv: list) -> int:
    """Strips --peer NAME from argv, then runs the matrix command with that peer."""
    peer = "go"
    if "--peer" in argv:
        i = argv.index("--peer")
        if i + 1 >= len(argv) or argv[i + 1] not in PEER_NAMES:
            print(f"matrix_peer.py: error: --peer needs one of {', '.join(PEER_NAMES)}",
                  file=sys.stderr)
            return 2
        peer = argv[i + 1]
        del argv[i:i + 2]

    peer_flags = {}
    while "--peer-flag" in argv:
        i = argv.index("--peer-flag")
        name, sep, value = (argv[i + 1] if i + 1 < len(argv) else "").partition("=")
        if not name or not sep:
            print("matrix_peer.py: error: --peer-flag needs NAME=VALUE", file=sys.stderr)
            return 2
        peer_flags[name] = value
        del argv[i:i + 2]

    pin = "--pin" in argv
    if pin:
        argv.remove("--pin")
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            print("matrix_peer.py: error: --pin needs two CPUs or more", file=sys.stderr)
            return 2
        server_cpus, client_cpus = {cpus[-1]}, set(cpus[:-1])
        os.environ["GOMAXPROCS"] = "1"  # the Go peer inherits it; the others ignore it
        os.sched_setaffinity(0, client_cpus)

    @contextlib.contextmanager
    def server() -> Iterator[ServerProcess]:
        with start_peer(peer, **peer_flags) as p:
            if pin:
                pin_process(p.process.pid, server_cpus)
            yield ServerProcess(p.address, p.process.pid)

    return main(["matrix", *argv], server_factory=server, server_name=f"the {peer} peer")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(run(sys.argv[1:]))
