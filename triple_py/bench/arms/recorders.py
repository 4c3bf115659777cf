"""Timing of the Python-driven arms: a warm-up, one measured window, every completion kept.

The workers (threads or asyncio tasks) loop until ``phase`` is STOP and call
:meth:`Recorder.record` after every call; only completions inside the measured window count.
:class:`StreamRecorder` is for streams that can outlive the window (see its docstring).
"""
from __future__ import annotations

import math
import resource
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..interrupts import mark, signal_of
from ..record.result import (MISMATCH, BenchResult, Latency, histogram_from_samples,
                             series_from_completions)

__all__ = ["WARMUP", "MEASURE", "STOP", "Recorder", "StreamRecorder", "describe", "status_of",
           "percentile", "process_cpu", "thread_window", "sleep_in_slices", "STOP_GRACE",
           "SLICE"]

#: Seconds an interrupted run waits for its workers to finish their call (they are
#: daemon threads or cancelled tasks: none is waited for longer).
STOP_GRACE = 0.5
#: Longest single wait of the main thread during a run: a signal the kernel hands to another
#: thread runs its Python handler (SIGINT, SIGTERM) in the main thread within this.
SLICE = 0.1


def sleep_in_slices(seconds: float) -> None:
    """``time.sleep(seconds)`` in slices of :data:`SLICE` (see there)."""
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(SLICE, left))

WARMUP, MEASURE, STOP = "warmup", "measure", "stop"


def describe(error: BaseException) -> str:
    """One line for an error: the status code and details of an RpcError-like error."""
    if callable(getattr(error, "code", None)) and callable(getattr(error, "details", None)):
        return f"{error.code()}: {error.details()}"
    return f"{type(error).__name__}: {error}"


def status_of(error: Optional[BaseException]) -> str:
    """The status name of a failed call: ``UNIMPLEMENTED`` for an RpcError-like error with
    that code, the exception's type name otherwise (``MISMATCH``: a wrong echo)."""
    if error is None:
        return MISMATCH
    code = getattr(error, "code", None)
    if callable(code):
        try:
            value = code()
            return getattr(value, "name", str(value))
        except Exception:  # a broken error object: still counted
            pass
    return type(error).__name__


def percentile(sorted_values: List[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of an ascending list."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def process_cpu() -> float:
    """CPU seconds (user + system) used so far by this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Recorder:
    """Counts calls that complete inside the measured window and keeps their latencies.

    ``latencies`` holds the OK calls' latencies in seconds (the sample behind the
    percentiles, as in ghz); every completion in the window, OK or not, is also kept as
    (end time, latency, status) for the status distribution and the one-second series.
    ``interrupted``: the signal that stopped the run early (None: it ran its course); its
    result is then marked (:func:`~triple_py.bench.interrupts.mark`) and covers the window
    until the stop.
    """

    def __init__(self) -> None:
        self.phase = WARMUP
        self.interrupted: Optional[int] = None
        self.latencies: List[float] = []  # list.append is atomic under the GIL
        self.completions: List[Tuple[float, float, str]] = []
        self.errors = 0
        self.error_sample: Optional[str] = None
        self.warmup_calls = 0
        self._lock = threading.Lock()
        self._started = self._stopped = 0.0
        self._cpu_started = self._cpu_stopped = 0.0

    def record(self, ok: bool, seconds: float, error: Optional[BaseException] = None,
               ended: Optional[float] = None) -> None:
        """One finished call (``seconds`` from its start, ending at ``ended`` on the
        ``time.perf_counter()`` clock: now when not given); ignored outside the window."""
        if self.phase != MEASURE:
            if self.phase == WARMUP:
                self.warmup_calls += 1
            return
        now = time.perf_counter() if ended is None else ended
        if ok:
            self.latencies.append(seconds)
            self.completions.append((now, seconds, "OK"))
            return
        self.completions.append((now, seconds, status_of(error)))
        with self._lock:
            self.errors += 1
            if self.error_sample is None:
                self.error_sample = describe(error) if error else "response != request"

    def start_window(self) -> None:
        """Ends the warm-up: completions from now on are measured."""
        self._cpu_started = process_cpu()
        self._started = time.perf_counter()
        self.phase = MEASURE

    def stop(self) -> None:
        """Ends the measured window (a second call changes nothing; before start_window():
        an empty window); workers should finish their call and return. Nothing is recorded
        after it."""
        if self.phase == STOP:
            return
        now, cpu = time.perf_counter(), process_cpu()
        if self.phase == WARMUP:
            self._started, self._cpu_started = now, cpu
        self._stopped, self._cpu_stopped = now, cpu
        self.phase = STOP

    @property
    def window(self) -> float:
        """Seconds between start_window() and stop()."""
        return self._stopped - self._started

    def status_codes(self) -> Dict[str, int]:
        """Completions in the window by status name."""
        codes: Dict[str, int] = {}
        for _, _, status in self.completions:
            codes[status] = codes.get(status, 0) + 1
        return codes

    def cpu(self, calls: int) -> Dict[str, float]:
        """Process CPU over the window (includes an in-process server, like the C figures)."""
        used = self._cpu_stopped - self._cpu_started
        window = self.window
        return {"process_s": used, "process_cores": used / window if window > 0 else 0.0,
                "process_us_per_call": used * 1e6 / calls if calls else 0.0}

    def result(self, **fields: Any) -> BenchResult:
        """A BenchResult of the window: ``fields`` give arm, mode, target, method, etc."""
        window = self.window
        calls = len(self.completions)
        samples_ns = [round(s * 1e9) for s in self.latencies]
        latency = Latency.from_samples(samples_ns)
        histogram = histogram_from_samples(samples_ns)
        result = BenchResult(**fields)
        result.elapsed_s = window
        result.calls, result.errors = calls, self.errors
        result.qps = calls / window if window > 0 else 0.0
        result.status_codes = self.status_codes()
        result.latency = result.latency_corrected = latency
        result.histogram = result.histogram_corrected = histogram
        result.series = series_from_completions(
            ((end, round(lat * 1e9), status == "OK") for end, lat, status in self.completions),
            self._started, math.ceil(window - 1e-6) if window > 0 else 1)
        result.cpu = self.cpu(calls)
        result.warmup = {"calls": self.warmup_calls}
        if self.error_sample:
            result.notes.append(f"{self.errors} failed calls, e.g. {self.error_sample}")
        if self.interrupted is not None:
            mark(result, self.interrupted)
        return result


class StreamRecorder(Recorder):
    """Recorder, plus every stream's span and the messages written.

    A stream can outlive the window (grpc.aio at 512 messages x 128 streams takes seconds,
    and its streams run in lock-step waves), so counting only the streams that end inside
    the window would quantize throughput to whole waves. Instead every successful stream
    counts with the fraction of its life (open to final status) that lies inside the window:
    streams/s = sum of those fractions / window, messages/s = streams/s x N. In a steady
    state this is the completion rate; the completions inside the window are kept too.
    Latencies: every successful stream that overlaps the window.
    """

    def __init__(self) -> None:
        super().__init__()
        self._spans: List[Tuple[float, float]] = []  # (opened, ended) of successful streams
        self._written: List[int] = []  # list.append is atomic under the GIL
        self._written_total: List[int] = []
        self.final_stats: Dict[str, int] = {}

    def record(self, ok: bool, seconds: float, error: Optional[BaseException] = None,
               ended: Optional[float] = None) -> None:
        if ended is None:
            ended = time.perf_counter()
        if ok and self.phase != WARMUP and (self.phase == MEASURE or ended - seconds
                                            < self._stopped):
            # streams that end after stop() still overlap; those opened after it do not
            self._spans.append((ended - seconds, ended))
        super().record(ok, seconds, error, ended)

    def note_written(self, n: int) -> None:
        """n messages were written (and the stream half-closed) just now."""
        self._written_total.append(n)
        if self.phase == MEASURE:
            self._written.append(n)

    @property
    def written_total(self) -> int:
        """Messages written over the recorder's whole life."""
        return sum(self._written_total)

    @property
    def messages_written(self) -> int:
        """Messages written inside the window."""
        return sum(self._written)

    def overlap(self) -> Tuple[float, List[float]]:
        """(streams' summed share of the window, latencies of the overlapping streams)."""
        start, stop = self._started, self._stopped
        share = 0.0
        latencies = []
        for opened, ended in self._spans:
            overlap = min(ended, stop) - max(opened, start)
            if overlap > 0:
                share += overlap / (ended - opened)
                latencies.append(ended - opened)
        latencies.sort()
        return share, latencies

    def result(self, *, stream_messages: int = 1, **fields: Any) -> BenchResult:
        """As Recorder.result, with qps = streams/s by overlap share and stream latencies."""
        result = super().result(stream_messages=stream_messages, **fields)
        window = self.window
        share, latencies = self.overlap()
        samples_ns = [round(s * 1e9) for s in latencies]
        completed = len(self.latencies)
        result.qps = share / window if window > 0 else 0.0
        result.messages_per_s = result.qps * stream_messages
        result.streams = len(latencies)
        result.messages_sent = self.messages_written
        result.latency = result.latency_corrected = Latency.from_samples(samples_ns)
        result.histogram = result.histogram_corrected = histogram_from_samples(samples_ns)
        result.extra.update({"streams_completed": completed,
                             "completed_per_s": completed / window if window > 0 else 0.0,
                             "throughput": "overlap share of the window (StreamRecorder)"})
        return result


def thread_window(recorder: Recorder, threads: Sequence[threading.Thread], warmup: float,
                  duration: float, join_timeout: float,
                  probe: Callable[[], Dict[str, int]] = dict
                  ) -> Tuple[Dict[str, int], Dict[str, int]]:
    """Starts ``threads`` (workers looping until the recorder stops), sleeps through the
    warm-up and the window, stops the recorder and joins them (``join_timeout`` each).

    ``probe()`` is read at the start and the end of the window: returns both readings. A
    KeyboardInterrupt (SIGINT, or SIGTERM through :mod:`~triple_py.bench.interrupts`) in
    the sleep ends the
    window at once: the recorder keeps the signal (``interrupted``) and the workers get
    :data:`STOP_GRACE` in all to finish their call, as daemon threads.
    """
    before: Dict[str, int] = {}
    try:
        for thread in threads:
            thread.start()
        sleep_in_slices(warmup)
        before = probe()
        recorder.start_window()
        sleep_in_slices(duration)
    except KeyboardInterrupt as exc:
        recorder.interrupted = signal_of(exc)
    finally:
        recorder.stop()
    after = probe()
    before = before or dict(after)  # stopped in the warm-up: no window, no difference
    deadline = time.monotonic() + STOP_GRACE
    for thread in threads:
        if thread.ident is None:
            continue
        if recorder.interrupted is None:
            thread.join(join_timeout)
        else:
            thread.join(max(0.0, deadline - time.monotonic()))
    return before, after
