"""The arm kinds: what can be measured and with which abilities (the code that runs each
kind is in :mod:`triple_py.bench.arms`).

=================  =====================================================================
kind               what runs
=================  =====================================================================
fastpath           C load generator, unary fast path (aliases: unary)
stream-path        C load generator, the unary call as a full-duplex stream (one message
                   written, the answer read as a stream): the baseline arm, like the
                   seeds' duplexHTTPCall (aliases: stream_path, unary_stream_path)
bidi               C load generator, bidi streams of K messages each way; the writer is on
                   unless write_buffer_size is 0
grpcio-sync        grpcio, Python threads, blocking unary calls
grpcio-aio         grpcio.aio, asyncio tasks, unary calls
grpcio-aio-bidi    grpcio.aio, asyncio tasks, stream_stream with K messages each way
h2load             nghttp2's h2load, one raw gRPC frame per request (HTTP status only)
h2load-bidi        h2load, K gRPC frames per request to StreamCall
triple-py-sync     triple_py's Python API from Python threads, blocking unary calls
triple-py-aio      triple_py's asyncio API (triple_py.aio), asyncio tasks, unary calls
triple-py-bidi     triple_py's Python API from Python threads, bidi streams
=================  =====================================================================
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Callable, Dict, Tuple

from ... import _options
from ..errors import ConfigError

__all__ = ["ArmKind", "KINDS", "ALIASES", "kind_of", "canonical_mode"]


@dataclasses.dataclass(frozen=True)
class ArmKind:
    """One way of producing load and what it supports (the code that runs it is in
    :mod:`triple_py.bench.arms`, by kind name: :data:`triple_py.bench.arms.RUNNERS`)."""

    name: str
    description: str
    streaming: bool = False  # default method StreamCall, K messages per stream
    open_loop: bool = False  # --rps
    count: bool = False  # -n
    ours: bool = False  # our client: write syscalls and allocations are reported
    wires: Tuple[str, ...] = ("grpc",)

    @property
    def runner(self) -> Callable:
        """The function that runs this kind (``RunSpec -> BenchResult``), looked up in the
        arms' table by name. Kept for one release: use
        :func:`triple_py.bench.arms.runner_of`."""
        arms = importlib.import_module(__name__.rpartition(".spec.")[0] + ".arms.runners")
        return arms.runner_of(self.name)


#: Every wire of the core (its ``triple.wire`` row): what the arms of our client speak.
WIRES: Tuple[str, ...] = tuple(_options.WIRES)

KINDS: Dict[str, ArmKind] = {k.name: k for k in (
    ArmKind("fastpath", "C load generator, unary fast path",
            open_loop=True, count=True, ours=True, wires=WIRES),
    ArmKind("stream-path",
            "C load generator, unary call through the streaming machinery (baseline)",
            open_loop=True, count=True, ours=True, wires=WIRES),
    # On the Triple wire a stream is gRPC-framed (dubbo-go, Java and the Triple spec frame
    # streams as gRPC); the channel adds the Triple service headers it has.
    ArmKind("bidi", "C load generator, bidi streams of K messages",
            streaming=True, open_loop=True, count=True, ours=True, wires=WIRES),
    ArmKind("grpcio-sync", "grpcio, Python threads, blocking unary calls"),
    ArmKind("grpcio-aio", "grpcio.aio, asyncio tasks, unary calls"),
    ArmKind("grpcio-aio-bidi", "grpcio.aio, asyncio tasks, stream_stream with K messages",
            streaming=True),
    ArmKind("h2load", "h2load, one raw gRPC frame per request (HTTP status only)", count=True),
    ArmKind("h2load-bidi", "h2load, K raw gRPC frames per request to StreamCall",
            streaming=True, count=True),
    ArmKind("triple-py-sync", "triple_py Python API, Python threads, blocking unary calls",
            ours=True, wires=WIRES),
    ArmKind("triple-py-aio", "triple_py.aio, asyncio tasks, unary calls", ours=True,
            wires=WIRES),
    ArmKind("triple-py-bidi", "triple_py Python API, Python threads, bidi streams",
            streaming=True, ours=True),
)}

ALIASES = {"unary": "fastpath", "stream_path": "stream-path",
           "unary_stream_path": "stream-path", "streampath": "stream-path",
           "duplex": "stream-path"}


def canonical_mode(mode: str) -> str:
    """The kind name for ``mode`` or one of its aliases; ConfigError when unknown."""
    if not isinstance(mode, str):
        raise ConfigError(f"bad mode {mode!r}")
    name = ALIASES.get(mode, mode)
    if name not in KINDS:
        raise ConfigError(f"unknown mode {mode!r} (expected one of: {', '.join(KINDS)})")
    return name


def kind_of(mode: str) -> ArmKind:
    """The ArmKind of ``mode`` (aliases allowed); ConfigError when unknown."""
    return KINDS[canonical_mode(mode)]

