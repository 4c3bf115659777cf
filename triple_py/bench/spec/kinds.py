"""The arm kinds: what can be measured, by which code, with which abilities.

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
from typing import Callable, Dict, Tuple

from .errors import ConfigError
from .result import BenchResult
from .spec import RunSpec

__all__ = ["ArmKind", "KINDS", "ALIASES", "kind_of", "canonical_mode", "run_spec"]


@dataclasses.dataclass(frozen=True)
class ArmKind:
    """One way of producing load: its runner and what it supports."""

    name: str
    runner: Callable[[RunSpec], BenchResult]
    description: str
    streaming: bool = False  # default method StreamCall, K messages per stream
    open_loop: bool = False  # --rps
    count: bool = False  # -n
    ours: bool = False  # our client: write syscalls and allocations are reported
    wires: Tuple[str, ...] = ("grpc",)


def _c(mode: str) -> Callable[[RunSpec], BenchResult]:
    def runner(spec: RunSpec) -> BenchResult:
        from .loadgen import run_c_spec

        return run_c_spec(spec, mode)
    return runner


def _lazy(module: str, function: str) -> Callable[[RunSpec], BenchResult]:
    def runner(spec: RunSpec) -> BenchResult:
        import importlib

        return getattr(importlib.import_module(module, __package__), function)(spec)
    return runner


KINDS: Dict[str, ArmKind] = {k.name: k for k in (
    ArmKind("fastpath", _c("fastpath"), "C load generator, unary fast path",
            open_loop=True, count=True, ours=True, wires=("grpc", "triple")),
    ArmKind("stream-path", _c("stream-path"),
            "C load generator, unary call through the streaming machinery (baseline)",
            open_loop=True, count=True, ours=True, wires=("grpc", "triple")),
    # On the Triple wire a stream is gRPC-framed (dubbo-go, Java and the Triple spec frame
    # streams as gRPC); the channel adds the Triple service headers it has.
    ArmKind("bidi", _c("bidi"), "C load generator, bidi streams of K messages",
            streaming=True, open_loop=True, count=True, ours=True, wires=("grpc", "triple")),
    ArmKind("grpcio-sync", _lazy(".arms_grpcio", "grpcio_sync_unary"),
            "grpcio, Python threads, blocking unary calls"),
    ArmKind("grpcio-aio", _lazy(".arms_grpcio", "grpcio_aio_unary"),
            "grpcio.aio, asyncio tasks, unary calls"),
    ArmKind("grpcio-aio-bidi", _lazy(".arms_grpcio", "grpcio_aio_bidi"),
            "grpcio.aio, asyncio tasks, stream_stream with K messages", streaming=True),
    ArmKind("h2load", _lazy(".arms_h2load", "h2load"),
            "h2load, one raw gRPC frame per request (HTTP status only)", count=True),
    ArmKind("h2load-bidi", _lazy(".arms_h2load", "h2load"),
            "h2load, K raw gRPC frames per request to StreamCall", streaming=True, count=True),
    ArmKind("triple-py-sync", _lazy(".arms_triple_py", "triple_py_sync_unary"),
            "triple_py Python API, Python threads, blocking unary calls", ours=True,
            wires=("grpc", "triple")),
    ArmKind("triple-py-aio", _lazy(".arms_triple_py", "triple_py_aio_unary"),
            "triple_py.aio, asyncio tasks, unary calls", ours=True, wires=("grpc", "triple")),
    ArmKind("triple-py-bidi", _lazy(".arms_triple_py", "triple_py_bidi"),
            "triple_py Python API, Python threads, bidi streams", streaming=True, ours=True),
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


def run_spec(spec: RunSpec) -> BenchResult:
    """Validates ``spec`` and runs it with its kind's runner.

    A run stopped by SIGINT or SIGTERM raises :class:`~.interrupts.Interrupted` (a
    KeyboardInterrupt) whose ``result`` holds what it measured until then."""
    from .interrupts import raise_if_marked

    spec.mode = canonical_mode(spec.mode)
    spec.validate()
    return raise_if_marked(kind_of(spec.mode).runner(spec))
