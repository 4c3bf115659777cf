"""Reference arms on grpcio: sync threads, asyncio tasks, and asyncio bidi streams.

``grpcio-sync``       ``concurrency`` Python threads making blocking unary calls
``grpcio-aio``        ``concurrency`` asyncio tasks awaiting unary calls
``grpcio-aio-bidi``   ``concurrency`` asyncio tasks, each looping over streams: write K
                      messages, done_writing, read K echoes and the final status

Calls are spread over ``connections`` channels (each with a local subchannel pool, so each
is its own HTTP/2 connection). Every arm warms up (excluded), then measures one window. A
call counts as OK on its OK status, as in h2load, ghz and the C generator; with the run's
``verify`` a response must also be its request's echo (a unary call whose echo differs
counts as an error, status ``MISMATCH``).
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from ..interrupts import loop_signals
from ..record.result import BenchResult
from ..spec.run_spec import RunSpec
from .recorders import STOP, STOP_GRACE, Recorder, StreamRecorder, thread_window

__all__ = ["grpcio_sync_unary", "grpcio_aio_unary", "grpcio_aio_bidi", "run_threads",
           "blocking_unary_calls",
           "aio_window", "aio_unary", "channel_options", "JOIN_GRACE"]

JOIN_GRACE = 5.0  # seconds past the call timeout to wait for the workers


def channel_options(connections: int) -> List[Tuple[str, int]]:
    """Unlimited message sizes, round robin over a target's servers; a channel of its own
    per connection when there are several."""
    options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1),
               ("grpc.lb_policy_name", "round_robin")]  # several servers: spread the calls
    if connections > 1:
        options.append(("grpc.use_local_subchannel_pool", 1))
    return options


def run_threads(calls: List[Callable[[bytes], bytes]], request: bytes, concurrency: int,
                warmup: float, duration: float, join_timeout: float,
                probe: Callable[[], Dict[str, int]] = dict,
                recorder: Optional[Recorder] = None,
                verify: bool = False) -> Tuple[Recorder, Dict[str, int]]:
    """``concurrency`` threads call ``calls[i % len(calls)](request)`` in a loop; one window.
    With ``verify`` a response other than ``request`` counts as an error.

    ``probe()`` is read at the start and the end of the window; returns the recorder and
    the difference of the integer counters.
    """
    recorder = recorder or Recorder()

    def worker(call: Callable[[bytes], bytes]) -> None:
        clock, record = time.perf_counter, recorder.record
        while recorder.phase != STOP:
            started = clock()
            try:
                response = call(request)
                ok, error = not verify or response == request, None
            except Exception as exc:  # counted and reported, the arm goes on
                ok, error = False, exc
            ended = clock()
            record(ok, ended - started, error, ended)

    threads = [threading.Thread(target=worker, args=(calls[i % len(calls)],), daemon=True)
               for i in range(concurrency)]
    before, after = thread_window(recorder, threads, warmup, duration, join_timeout, probe)
    delta = {k: after[k] - before[k] for k in after if isinstance(after[k], int)}
    return recorder, delta


def blocking_unary_calls(channels: List[Any], spec: RunSpec) -> List[Callable[[bytes], bytes]]:
    """One blocking unary call function per channel (grpcio's or triple_py's): the spec's
    method with its timeout."""
    calls = []
    for channel in channels:
        multi_callable = channel.unary_unary(spec.resolved_method())
        calls.append(lambda req, mc=multi_callable: mc(req, timeout=spec.timeout))
    return calls


def grpcio_sync_unary(spec: RunSpec) -> BenchResult:
    """``concurrency`` threads making blocking unary calls on ``connections`` grpc channels."""
    import grpc

    request = spec.request_bytes()
    channels = [grpc.insecure_channel(spec.target, options=channel_options(spec.connections))
                for _ in range(spec.connections)]
    try:
        calls = blocking_unary_calls(channels, spec)
        recorder, _ = run_threads(calls, request, spec.concurrency, spec.warmup,
                                  spec.duration, spec.timeout + JOIN_GRACE,
                                  verify=spec.verify)
    finally:
        for channel in channels:
            channel.close()
    return recorder.result(**spec.result_fields())


def _grpc_aio_channel(spec: RunSpec) -> Any:
    import grpc

    return grpc.aio.insecure_channel(spec.target, options=channel_options(spec.connections))


async def _until(stopped: asyncio.Event, seconds: float) -> None:
    """Sleeps ``seconds`` or until ``stopped`` is set, whichever comes first."""
    try:
        await asyncio.wait_for(stopped.wait(), seconds)
    except asyncio.TimeoutError:
        pass


async def aio_window(spec: RunSpec, recorder: Recorder, kind: str,
                     attempt: Callable[[Any], Awaitable[Any]],
                     connect: Callable[[RunSpec], Any] = _grpc_aio_channel,
                     probe: Optional[Callable[[List[Any]], Dict[str, int]]] = None
                     ) -> Tuple[Recorder, Dict[str, int]]:
    """``concurrency`` asyncio tasks on ``connections`` asyncio channels (``connect(spec)``:
    grpc.aio's by default), each looping ``await attempt(multi_callable)`` through one
    warm-up and one window: an attempt fails when it raises or gives False (a unary
    call's own awaitable may be the attempt: no coroutine of the harness's around it).
    ``probe(channels)`` is read at the start and the end of the window; returns the
    recorder and the difference of its integer counters.

    SIGINT and SIGTERM (in the main thread) end the window at once: the recorder keeps the
    signal (``interrupted``), the tasks are cancelled after :data:`STOP_GRACE` and nothing
    is recorded after the stop. A failed attempt yields to the loop before the next one, so
    a channel that fails every call at once cannot starve the loop.
    """
    stopped = asyncio.Event()

    def on_signal(signum: int) -> None:
        if recorder.interrupted is None:
            recorder.interrupted = signum
        recorder.stop()
        stopped.set()

    async def worker(multi_callable: Any) -> None:
        clock, record = time.perf_counter, recorder.record
        while recorder.phase != STOP:
            started = clock()
            try:
                ok, error = await attempt(multi_callable) is not False, None
            except Exception as exc:  # counted and reported, the arm goes on
                ok, error = False, exc
            ended = clock()
            record(ok, ended - started, error, ended)
            if error is not None:
                await asyncio.sleep(0)

    channels: List[Any] = []
    tasks: List["asyncio.Task[None]"] = []
    before: Dict[str, int] = {}
    after: Dict[str, int] = {}
    with loop_signals(asyncio.get_running_loop(), on_signal):
        try:
            channels = [connect(spec) for _ in range(spec.connections)]
            callables = [getattr(channel, kind)(spec.resolved_method()) for channel in channels]
            tasks = [asyncio.create_task(worker(callables[i % len(callables)]))
                     for i in range(spec.concurrency)]
            await _until(stopped, spec.warmup)
            if not stopped.is_set():
                before = probe(channels) if probe else {}
                recorder.start_window()
                await _until(stopped, spec.duration)
            recorder.stop()
            after = probe(channels) if probe else {}
            before = before or dict(after)
            grace = STOP_GRACE if stopped.is_set() else spec.timeout + JOIN_GRACE
            if tasks:
                await asyncio.wait(tasks, timeout=grace)
        finally:
            recorder.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for channel in channels:
                await channel.close()
    return recorder, {k: after[k] - before[k] for k in after if isinstance(after[k], int)}


def aio_unary(spec: RunSpec, connect: Callable[[RunSpec], Any] = _grpc_aio_channel,
              probe: Optional[Callable[[List[Any]], Dict[str, int]]] = None
              ) -> Tuple[BenchResult, Dict[str, int]]:
    """``concurrency`` asyncio tasks awaiting unary calls on ``connections`` channels made
    by ``connect``; the result and the counters' difference over the window."""
    request = spec.request_bytes()

    timeout = spec.timeout

    async def verified(multi_callable: Any) -> bool:
        return await multi_callable(request, timeout=timeout) == request

    def call(multi_callable: Any) -> Any:  # the call is the awaitable: nothing around it
        return multi_callable(request, timeout=timeout)

    attempt = verified if spec.verify else call

    recorder, delta = asyncio.run(aio_window(spec, Recorder(), "unary_unary", attempt,
                                             connect, probe))
    return recorder.result(**spec.result_fields()), delta


def grpcio_aio_unary(spec: RunSpec) -> BenchResult:
    """``concurrency`` asyncio tasks awaiting unary calls on ``connections`` grpc.aio channels."""
    return aio_unary(spec)[0]


def grpcio_aio_bidi(spec: RunSpec) -> BenchResult:
    """``concurrency`` asyncio tasks looping over bidi streams of K messages each way."""
    import grpc

    request, n = spec.request_bytes(), spec.stream_messages
    recorder = StreamRecorder()

    async def one_stream(multi_callable: Any) -> bool:
        call = multi_callable(timeout=spec.timeout)
        try:
            for _ in range(n):
                await call.write(request)
            await call.done_writing()
            recorder.note_written(n)
            for i in range(n):
                response = await call.read()
                if response is grpc.aio.EOF:
                    raise ValueError(f"{i} responses, expected {n}")
                if spec.verify and response != request:
                    raise ValueError(f"response {i} != request")
            if await call.read() is not grpc.aio.EOF:
                raise ValueError(f"more than {n} responses")
            code = await call.code()
            if code != grpc.StatusCode.OK:
                raise ValueError(f"status {code}: {await call.details()}")
            return True
        except BaseException:
            call.cancel()
            raise

    asyncio.run(aio_window(spec, recorder, "stream_stream", one_stream))
    return recorder.result(**spec.result_fields())
