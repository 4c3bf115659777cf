"""``python -m triple_py_testing.interop``: run the interop grid, print it, write JUnit XML / JSON.

Exit status: 0 when every applicable cell passed, 1 when one failed (or, with
``--require-all-peers``, when a peer was unavailable), 2 for a usage error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from .cases import CASES
from .peers import PEERS
from .protos import ProtoError
from .runner import run

WIRES = ("grpc", "triple")


def _names(values: Optional[List[str]], known: Sequence[str], what: str,
           parser: argparse.ArgumentParser) -> Optional[List[str]]:
    """Comma-separated and repeated values, checked against ``known``."""
    if not values:
        return None
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return list(dict.fromkeys(names))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m triple_py_testing.interop",
        description="Run triple_py against real gRPC servers: peer x wire x case.")
    parser.add_argument("--peers", action="append", metavar="NAME[,NAME]",
                        help=f"peers to run (default: all: {', '.join(PEERS)})")
    parser.add_argument("--cases", action="append", metavar="NAME[,NAME]",
                        help="cases to run (default: all; --list shows them)")
    parser.add_argument("--wires", action="append", metavar="WIRE[,WIRE]",
                        help="wires to run (grpc, triple; default: every wire a peer speaks)")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write JSON here")
    parser.add_argument("--deadline", type=float, metavar="SECONDS",
                        help="bound the run: cells not started in time fail as not run")
    parser.add_argument("--require-all-peers", action="store_true",
                        help="exit non-zero when a peer is unavailable")
    parser.add_argument("--root", type=Path, metavar="DIR",
                        help="repository root (default: $TRIPLE_PY_ROOT or this checkout)")
    parser.add_argument("--intercepted", action="store_true",
                        help="run every case through intercept_channel (two pass-through "
                             "interceptors of all four kinds)")
    parser.add_argument("--list", action="store_true", help="list the peers and cases; exit")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress lines on stderr")
    args = parser.parse_args(argv)

    if args.list:
        print("peers:")
        for spec in PEERS.values():
            print(f"  {spec.name:9} {'/'.join(spec.wires):12} {spec.stack}")
        print("cases:")
        for case in CASES.values():
            print(f"  {case.name:28} {'/'.join(case.wires):12} {case.summary}")
        return 0
    peers = _names(args.peers, list(PEERS), "peer", parser)
    cases = _names(args.cases, list(CASES), "case", parser)
    wires = _names(args.wires, list(WIRES), "wire", parser)

    def progress(line: str) -> None:
        print(f"interop: {line}", file=sys.stderr, flush=True)

    try:
        report = run(peers, cases, wires, root=args.root, deadline=args.deadline,
                     progress=None if args.quiet else progress,
                     intercepted=args.intercepted)
    except ProtoError as exc:  # without its messages the client cannot run any case
        print(f"interop: {exc}", file=sys.stderr)
        return 1
    print(report.grid())
    if args.junit:
        report.write_junit(args.junit)
    if args.json:
        report.write_json(args.json)
    return 0 if report.ok(args.require_all_peers) else 1


if __name__ == "__main__":
    sys.exit(main())
