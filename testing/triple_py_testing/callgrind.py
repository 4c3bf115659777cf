"""Instructions counted by callgrind: the total of one command, and per call of triple_py's
Python API, where the difference of two runs of N calls over the difference of N cancels
start-up. What benchmarks/python_instructions.py and benchmarks/lb_instructions.py share.

    per_call, totals = python_api_per_call(root, "sync", "127.0.0.1:PORT", method)

``root`` is a checkout whose ``triple_py`` (built in place) is the one counted: the child
runs there with the checkout on PYTHONPATH, so one run can count a baseline tree and this
one. Needs valgrind.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["COUNTS", "PYTHON_API_CHILD", "checkout_env", "instructions",
           "python_api_per_call"]

#: Calls of the two runs whose difference :func:`python_api_per_call` divides.
COUNTS = (300, 1800)

#: argv: arm, address, method, N, channel options (a JSON list of pairs, or null), payload
#: size (bytes; 128 when not given). N sequential calls through triple_py's Python API: ``sync``
#: (``channel.unary_unary(m)(payload)``), ``aio`` (awaited on triple_py.aio),
#: ``sync-intercepted`` (through one pass-through interceptor); ``sync-bidi`` and
#: ``aio-bidi``: N ping-pongs on one StreamCall stream (write one, read its echo), then
#: the half-close. Prints ``CALLS N`` at the end.
PYTHON_API_CHILD = """
import asyncio, json, sys
import triple_py, triple_py.aio
arm, address, method, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
options = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
size = int(sys.argv[6]) if len(sys.argv) > 6 else 128
# The payload, field 1 (bytes) of `size` bytes, encoded here: a baseline checkout's
# triple_py may not have triple_py.bench.workload.messages.
length, rest = b"", size
while True:
    length += bytes([rest & 0x7F | (0x80 if rest > 0x7F else 0)])
    rest >>= 7
    if not rest:
        break
payload = b"\\x0a" + length + b"a" * size
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


def checkout_env(root: Path) -> Dict[str, str]:
    """This process's environment with ``root`` first on PYTHONPATH: a child started with
    it (and ``cwd=root``) imports that checkout's triple_py."""
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def instructions(argv: Sequence[str], *, expect: str, cwd: Optional[Path] = None,
                 env: Optional[Dict[str, str]] = None, timeout: float = 1800) -> int:
    """The instructions of ``argv`` (every thread) under ``valgrind --tool=callgrind``;
    RuntimeError unless it exits 0 with ``expect`` in its stdout."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/callgrind.out",
             *argv], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    collected = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode or not collected or expect not in proc.stdout:
        raise RuntimeError(f"callgrind run failed: {(proc.stdout + proc.stderr)[-400:]}")
    return int(collected.group(1))


def python_api_per_call(root: Path, arm: str, address: str, method: str,
                        options: str = "null", counts: Tuple[int, int] = COUNTS,
                        size: int = 128) -> Tuple[float, List[int]]:
    """(instructions per call, the two totals) of one arm of :data:`PYTHON_API_CHILD`
    with ``root``'s triple_py (``options``: channel options as JSON, "null" for none;
    ``size``: the request payload's bytes, echoed back)."""
    totals = [instructions([sys.executable, "-c", PYTHON_API_CHILD, arm, address, method,
                            str(n), options, str(size)], expect=f"CALLS {n}", cwd=root,
                           env=checkout_env(root))
              for n in counts]
    return (totals[1] - totals[0]) / (counts[1] - counts[0]), totals
