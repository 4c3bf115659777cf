"""Instructions per call of triple_py's *Python* API paths, counted by callgrind.

    .venv/bin/python benchmarks/python_instructions.py [--root DIR] [--arms sync,aio]
        [--size 128]

``benchmarks/instructions.py`` counts the C load generator, which never runs the Python
multi-callables; this counts them: a child process makes N sequential unary calls (128 B,
or ``--size`` payload bytes)
through ``triple_py`` (``sync``: ``channel.unary_unary(m)(payload)``; ``aio``: ``await``
the same on ``triple_py.aio``; ``sync-intercepted``: through one pass-through
interceptor) to the embedded echo server (another process, not counted), under
``valgrind --tool=callgrind``, for two values of N; the difference of the totals over
the difference of the calls cancels start-up. ``--root`` points at another checkout (its
``triple_py`` is imported instead), so one run can count a baseline tree and this one.
``sync-bidi`` and ``aio-bidi`` count per *message* of one bidi stream (StreamCall) instead:
N ping-pongs (write one 128 B request, read its echo), then half-close; no retry policy,
grpc.enable_retries at its default (on: transparent retries keep the requests until the
first response).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List

from triple_py.bench.messages import UNARY_METHOD
from triple_py_testing.callgrind import COUNTS, python_api_per_call
from triple_py_testing.peers import start_peer

ROOT = Path(__file__).resolve().parents[1]


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, action="append",
                        help="a checkout whose triple_py to count (repeatable; default: this)")
    parser.add_argument("--arms", default="sync,aio")
    parser.add_argument("--size", type=int, default=128, help="payload bytes per call")
    args = parser.parse_args(argv)
    roots = args.root or [ROOT]
    with start_peer("embedded") as peer:
        for root in roots:
            for arm in args.arms.split(","):
                value, totals = python_api_per_call(root.resolve(), arm, peer.address,
                                                    UNARY_METHOD, size=args.size)
                print(f"{str(root):<28} {arm:<18} {args.size:>8} B {value:>12,.0f} "
                      "instructions/call "
                      f"(totals {totals[0]:,} / {totals[1]:,} for {COUNTS[0]} / {COUNTS[1]} "
                      "calls)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
