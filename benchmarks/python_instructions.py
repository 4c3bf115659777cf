"""Instructions per call of triple_py's *Python* API paths, counted by callgrind.

    .venv/bin/python benchmarks/python_instructions.py [--root DIR] [--arms sync,aio]

``benchmarks/instructions.py`` counts the C load generator, which never runs the Python
multi-callables; this counts them: a child process makes N sequential unary calls (128 B)
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
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parents[1]
from triple_py.bench.messages import UNARY_METHOD  # noqa: E402
from triple_py_testing.peers import start_peer  # noqa: E402

CHILD = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
import triple_py, triple_py.aio
arm, address, method, n = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
options = json.loads(sys.argv[6]) if len(sys.argv) > 6 else None
payload = b"\\x0a\\x80\\x01" + b"a" * 128
if arm == "sync-bidi":
    with triple_py.insecure_channel(address) as ch:
        stream = ch.stream_stream(method.replace("UnaryCall", "StreamCall"))(timeout=600)
        for _ in range(n):
            stream.write(payload)
            stream.flush()
            next(stream)
        stream.done_writing()
        assert list(stream) == []
elif arm == "aio-bidi":
    async def main():
        async with triple_py.aio.insecure_channel(address) as ch:
            stream = ch.stream_stream(method.replace("UnaryCall", "StreamCall"))(timeout=600)
            for _ in range(n):
                await stream.write(payload)
                await stream.read()
            await stream.done_writing()
            assert await stream.read() is triple_py.aio.EOF
    asyncio.run(main())
elif arm == "aio":
    async def main():
        async with triple_py.aio.insecure_channel(address, options=options) as ch:
            call = ch.unary_unary(method)
            for _ in range(n):
                await call(payload, timeout=10)
    asyncio.run(main())
else:
    ch = triple_py.insecure_channel(address, options=options)
    if arm == "sync-intercepted":
        class Pass(triple_py.UnaryUnaryClientInterceptor):
            def intercept_unary_unary(self, continuation, details, request):
                return continuation(details, request)
        ch = triple_py.intercept_channel(ch, Pass())
    call = ch.unary_unary(method)
    for _ in range(n):
        call(payload, timeout=10)
    ch.close()
print("CALLS", n)
"""
COUNTS = (300, 1800)


def counted(root: Path, arm: str, address: str, calls: int, options: str = "null") -> int:
    """Instructions of one callgrind run of the child (``options``: the channel options
    as a JSON list of pairs, "null" for none)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             "-c", CHILD, str(root), arm, address, UNARY_METHOD, str(calls), options],
            capture_output=True, text=True, timeout=1800, cwd=root)
    collected = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode or not collected or f"CALLS {calls}" not in proc.stdout:
        raise RuntimeError(f"callgrind run failed ({arm}): {(proc.stdout + proc.stderr)[-400:]}")
    return int(collected.group(1))


def per_call(root: Path, arm: str, address: str,
             options: str = "null") -> Tuple[float, List[int]]:
    """(instructions per call, the two totals) of one arm."""
    totals = [counted(root, arm, address, n, options) for n in COUNTS]
    return (totals[1] - totals[0]) / (COUNTS[1] - COUNTS[0]), totals


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, action="append",
                        help="a checkout whose triple_py to count (repeatable; default: this)")
    parser.add_argument("--arms", default="sync,aio")
    args = parser.parse_args(argv)
    roots = args.root or [ROOT]
    with start_peer("embedded") as peer:
        for root in roots:
            for arm in args.arms.split(","):
                value, totals = per_call(root.resolve(), arm, peer.address)
                print(f"{str(root):<28} {arm:<18} {value:>12,.0f} instructions/call "
                      f"(totals {totals[0]:,} / {totals[1]:,} for {COUNTS[0]} / {COUNTS[1]} "
                      "calls)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
