"""A triple_py.bench matrix against a real peer server (grpc-go by default).

    .venv/bin/python benchmarks/matrix_peer.py seed-unary [--peer go] [matrix flags...]
    .venv/bin/python benchmarks/matrix_peer.py seed-stream --restart-server --rounds 6
    .venv/bin/python benchmarks/matrix_peer.py concurrency-sweep --peer embedded --pin

Starts the peer with tests/peers/launch.py (the Go peer is built on first use) and runs
`python -m triple_py.bench matrix ...` against it; every flag after the matrix name is the
harness's (see `python -m triple_py.bench matrix --help`). With --restart-server every
round gets a freshly started peer. The package itself never imports tests/: this script
hands the harness a server factory instead of a --target. `--peer embedded` is our C echo
server in a process of its own.

`--pin` puts the peer on the last CPU (every thread of it; the Go peer with GOMAXPROCS=1)
and this process, with the load generator's threads and the h2load it starts, on the other
CPUs, so that client and server stop taking turns on the same cores: the QPS then varies
less from round to round, and it is the server's capacity, not the scheduler's, that
bounds a server-bound arm.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator, Set

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(1, str(ROOT))  # the in-tree triple_py when it is not installed
from peers.launch import PEER_NAMES, start_peer  # noqa: E402

from triple_py.bench.cli import main  # noqa: E402


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
    def server() -> Iterator[str]:
        with start_peer(peer) as p:
            if pin:
                pin_process(p.process.pid, server_cpus)
            yield p.address

    return main(["matrix", *argv], server_factory=server, server_name=f"the {peer} peer")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(run(sys.argv[1:]))
