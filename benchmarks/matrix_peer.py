"""A triple_py.bench matrix against a real peer server (grpc-go by default).

    .venv/bin/python benchmarks/matrix_peer.py seed-unary [--peer go] [matrix flags...]
    .venv/bin/python benchmarks/matrix_peer.py seed-stream --restart-server --rounds 6

Starts the peer with tests/peers/launch.py (the Go peer is built on first use) and runs
`python -m triple_py.bench matrix ...` against it; every flag after the matrix name is the
harness's (see `python -m triple_py.bench matrix --help`). With --restart-server every
round gets a freshly started peer. The package itself never imports tests/: this script
hands the harness a server factory instead of a --target.
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(1, str(ROOT))  # the in-tree triple_py when it is not installed
from peers.launch import PEER_NAMES, start_peer  # noqa: E402

from triple_py.bench.cli import main  # noqa: E402


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

    @contextlib.contextmanager
    def server() -> Iterator[str]:
        with start_peer(peer) as p:
            yield p.address

    return main(["matrix", *argv], server_factory=server, server_name=f"the {peer} peer")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(run(sys.argv[1:]))
