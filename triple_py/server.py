"""Run the embedded echo server: ``python -m triple_py.server --port 0``.

Prints ``LISTENING <port>`` on stdout once the server accepts connections (the test peers'
convention, tests/peers/README.md), then serves until SIGINT or SIGTERM (or, with
``--exit-on-stdin-eof``, until its stdin closes). The server is
``benchmark.BenchmarkService`` on the gRPC and Triple unary wires over h2c; see
triple_py.testing.EchoServer and csrc/tri_server.h for what it does.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Optional, Sequence

from .testing import EchoServer


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m triple_py.server",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="bind address (127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (0)")
    parser.add_argument("--threads", type=int, default=1, help="I/O threads (1)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="also stop when stdin closes (for parent processes)")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse(argv)
    try:
        server = EchoServer(args.host, args.port, args.threads)
        server.start()
    except (OSError, ValueError) as exc:
        print(f"triple_py.server: {exc}", file=sys.stderr)
        return 1
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    if args.exit_on_stdin_eof:
        def watch_stdin() -> None:
            try:
                while os.read(0, 4096):
                    pass
            except OSError:
                pass
            stopped.set()
        threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()
    print(f"LISTENING {server.port}", flush=True)
    try:
        while not stopped.wait(0.5):  # a timed wait lets the signal handlers run
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
