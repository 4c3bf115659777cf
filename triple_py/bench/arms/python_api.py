"""Arms that drive triple_py's Python API from Python threads (not the C load generator).

``triple-py-sync``   ``concurrency`` threads making blocking unary calls on triple_py channels;
                     ``options["unary_fast_path"]`` False sends them through the streaming
                     machinery (the channel option ``triple.unary_fast_path``)
``triple-py-aio``    ``concurrency`` asyncio tasks awaiting unary calls on triple_py.aio channels
                     (the same loop as grpcio-aio's, on triple_py's asyncio API)
``triple-py-bidi``   T = min(threads, C) threads each driving C/T bidi streams in batches:
                     open a stream, write K, done_writing, for each of its streams in turn,
                     then drain them in order (read K and the final status), recording each
                     stream's latency from open to status; ``options["threads"]`` (default 8;
                     0: one thread per stream). ``write_buffer_size`` 0 turns the coalescing
                     writer off (the seeds' writer-off arm).

They measure what a Python program gets from the API; the C modes measure the core. Write
syscalls come from the channels' counters (``ch.stats()``) over the measured window.
"""
from __future__ import annotations

import threading
import time
from typing import Dict, List, Optional, Tuple

import triple_py
import triple_py.aio
from ..record.result import BenchResult
from ..spec.run_spec import RunSpec
from .grpcio import JOIN_GRACE, aio_unary, blocking_unary_calls, run_threads
from .recorders import STOP, StreamRecorder, thread_window

__all__ = ["triple_py_sync_unary", "triple_py_aio_unary", "triple_py_bidi", "DEFAULT_STREAM_THREADS", "split"]

DEFAULT_STREAM_THREADS = 8


def _sum_stats(channels) -> Dict[str, int]:
    total: Dict[str, int] = {}
    for channel in channels:
        for key, value in channel.stats().items():
            if isinstance(value, int):
                total[key] = total.get(key, 0) + value
    return total


def _channel_options(spec: RunSpec) -> List[Tuple[str, object]]:
    """The spec's channel options by their keys (every one it sets, the write buffer and
    the wire among them), after the arms' own defaults."""
    return [("grpc.max_receive_message_length", -1),
            ("triple.unary_fast_path", bool(spec.options.get("unary_fast_path", True))),
            # a target with several servers gets calls spread over all of them
            ("grpc.lb_policy_name", "round_robin"), *spec.channel_pairs()]


def _apply_counters(result: BenchResult, delta: Dict[str, int], messages: int = 0) -> None:
    result.counters = dict(delta)
    calls = delta.get("calls") or 0
    if calls:
        result.per_call = {k: v / calls for k, v in delta.items()}
    if messages:
        result.per_message = {k: v / messages for k, v in delta.items()}


def triple_py_sync_unary(spec: RunSpec) -> BenchResult:
    """``concurrency`` Python threads making blocking unary calls on triple_py channels."""
    request = spec.request_bytes()
    channels = [triple_py.insecure_channel(spec.target, options=_channel_options(spec))
                for _ in range(spec.connections)]
    try:
        calls = blocking_unary_calls(channels, spec)
        recorder, delta = run_threads(calls, request, spec.concurrency, spec.warmup,
                                      spec.duration, spec.timeout + JOIN_GRACE,
                                      probe=lambda: _sum_stats(channels),
                                      verify=spec.verify)
    finally:
        for channel in channels:
            channel.close()
    result = recorder.result(**spec.result_fields())
    result.write_buffer_size = spec.write_buffer_size
    _apply_counters(result, delta)
    return result


def triple_py_aio_unary(spec: RunSpec) -> BenchResult:
    """``concurrency`` asyncio tasks awaiting unary calls on triple_py.aio channels."""
    def connect(spec: RunSpec):
        return triple_py.aio.insecure_channel(spec.target, options=_channel_options(spec))

    result, delta = aio_unary(spec, connect, _sum_stats)
    result.write_buffer_size = spec.write_buffer_size
    _apply_counters(result, delta)
    return result


def split(total: int, parts: int) -> List[int]:
    """``total`` streams over ``parts`` threads, as evenly as possible."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _drain(call, request: bytes, n: int, verify: bool) -> None:
    """Reads the stream's ``n`` responses (with ``verify``, each must be ``request``)
    and its end; raises ValueError otherwise."""
    for i in range(n):
        response = next(call)
        if verify and response != request:
            raise ValueError(f"response {i} != request")
    try:
        next(call)
    except StopIteration:
        return
    raise ValueError(f"more than {n} responses")


def _streams_worker(multi_callable, request: bytes, n: int, k: int, timeout: float,
                    recorder: StreamRecorder, verify: bool = False) -> None:
    """Drives k streams at a time until the recorder stops (k == 1: the plain loop)."""
    while recorder.phase != STOP:
        batch: List[Tuple[float, object]] = []
        for _ in range(k):
            started = time.perf_counter()
            call = None
            try:
                call = multi_callable(timeout=timeout)
                for _ in range(n):
                    call.write(request)
                call.done_writing()
                recorder.note_written(n)
                batch.append((started, call))
            except Exception as exc:
                if call is not None:
                    call.cancel()
                recorder.record(False, time.perf_counter() - started, exc)
        for started, call in batch:
            try:
                _drain(call, request, n, verify)
                ok, error = True, None
            except Exception as exc:
                call.cancel()
                ok, error = False, exc
            recorder.record(ok, time.perf_counter() - started, error)


def triple_py_bidi(spec: RunSpec, recorder: Optional[StreamRecorder] = None) -> BenchResult:
    """C bidi streams of K messages on triple_py channels, from T Python threads."""
    method, request, n = spec.resolved_method(), spec.request_bytes(), spec.stream_messages
    threads = int(spec.options.get("threads", DEFAULT_STREAM_THREADS))
    threads = spec.concurrency if threads <= 0 else min(threads, spec.concurrency)
    recorder = recorder or StreamRecorder()
    channels = [triple_py.insecure_channel(spec.target, options=_channel_options(spec))
                for _ in range(spec.connections)]
    try:
        callables = [channel.stream_stream(method) for channel in channels]
        workers = [threading.Thread(target=_streams_worker, daemon=True,
                                    args=(callables[i % len(callables)], request, n, k,
                                          spec.timeout, recorder, spec.verify))
                   for i, k in enumerate(split(spec.concurrency, threads))]
        before, after = thread_window(recorder, workers, spec.warmup, spec.duration,
                                      spec.timeout + JOIN_GRACE, lambda: _sum_stats(channels))
        recorder.final_stats = _sum_stats(channels)
    finally:
        for channel in channels:
            channel.close()
    result = recorder.result(**spec.result_fields())
    result.write_buffer_size = spec.write_buffer_size
    result.extra["threads"] = threads
    _apply_counters(result, {k: after[k] - before[k] for k in after},
                    messages=recorder.messages_written)
    return result
