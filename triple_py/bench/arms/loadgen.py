"""The C load generator arms: ``fastpath``, ``stream-path`` and ``bidi``.

A thin layer over ``triple_py._triple.run_load`` (csrc/tri_load.h): it maps the harness's
names and units onto the C configuration, turns the C exceptions into one-line errors, and
the C result dict into a :class:`~triple_py.bench.record.result.BenchResult`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Mapping, Optional

from ... import _options, _triple
from ..._resolver import parse_target
from ..errors import ConfigError, TargetError
from ..interrupts import mark, signal_of
from ..record.load_figures import extra_figures
from ..record.result import MISMATCH, BenchResult, Latency, status_name
from ..spec.run_spec import RunSpec
from ..spec.schedules import Schedule
from ..spec.target import target_endpoints

__all__ = ["C_MODES", "run_c_load", "run_c_spec", "result_from_load"]

#: Harness mode name -> run_load mode name.
C_MODES = {"fastpath": "unary", "stream-path": "unary_stream_path", "bidi": "bidi"}


def run_c_load(*, arm: str, mode: str, target: str, method: str, payload_size: int,
               concurrency: int, connections: int, duration: float, warmup: float,
               count: int = 0, rate: Optional[float] = None, stream_messages: int = 1,
               write_buffer_size: Optional[int] = None,
               write_buffer_delay_us: Optional[int] = None,
               timeout: float = 10.0, shared_request: bool = True, verify: bool = False,
               hist_digits: int = 3, driver_threads: bool = False, start_at_ns: int = 0,
               phase_ns: int = 0, wire: Optional[str] = None, dialect: Optional[str] = None,
               requests: Optional[list] = None,
               connection: Optional[Mapping[str, Any]] = None,
               rate_schedule: Optional[Schedule] = None,
               concurrency_schedule: Optional[Schedule] = None,
               stop: Optional[Callable[[], bool]] = None,
               load: Optional[Mapping[str, Any]] = None) -> BenchResult:
    """Runs one C load (GIL released for its whole length) and returns its figures.

    ``concurrency`` is the total number of calls in flight, spread evenly over
    ``connections`` (the caller checked that it divides). Closed-loop unary loads run on
    the connections' I/O threads unless ``driver_threads`` asks for a thread of their own.
    ``start_at_ns`` (``time.monotonic_ns()`` clock) starts the warm-up at that moment once
    the connections are open, ``phase_ns`` shifts an open loop's schedule (both for loads
    split over several processes: :mod:`~triple_py.bench.distributed`). ``wire="triple"``
    sends Triple
    unary calls with the headers of ``dialect`` (``triple.dialect``: auto, go or spec);
    in the bidi mode, gRPC-framed streams, as Triple frames them. ``requests`` is a ring of pre-encoded requests (body, metadata) that call i
    of the run takes entry i mod len of (csrc/tri_ring.h); ``connection`` more channel
    options by the names of ``_triple.CHANNEL_OPTIONS`` (authority, compression, tls,
    root_certificates, ..., keepalive_time_ms: any of them), for every connection; the
    write buffer, ``wire`` and ``dialect`` arguments are channel options too, which
    override ``connection``'s when given (None: ``connection``'s, else the core's
    default, :data:`~triple_py.bench.spec.run_spec.WRITE_BUFFER_SIZE`...).
    ``rate_schedule`` / ``concurrency_schedule``: ghz's load schedules
    (:mod:`~triple_py.bench.spec.schedules`). ``load``: any other keyword of
    ``_triple.LOAD_OPTIONS`` by its name (``series_digits``...), passed as it is.
    ``stop`` (asked every 50 ms, from any thread) ends the run early when it returns true:
    the result then has ``extra["stopped"]`` and covers the run until then (SIGINT or
    SIGTERM in the main thread do the same through :mod:`~triple_py.bench.interrupts`).
    A target with several servers (``ipv4:a,b``, a registry) spreads the connections
    over them: connection i goes to server i % n (each connection keeps its calls, so
    the C threads share nothing), so ``connections`` must be at least n.
    Raises ConfigError for a
    configuration the C side rejects and TargetError for an unreachable target.
    """
    endpoints = target_endpoints(target)
    first = endpoints[0]
    host, port = first.host, first.port or 0
    given = {"write_buffer_size": write_buffer_size,
             "write_buffer_delay_us": write_buffer_delay_us, "wire": wire, "dialect": dialect}
    channel = {**dict(connection or {}), **{k: v for k, v in given.items() if v is not None}}
    wire = channel.setdefault("wire", "grpc")
    spread = None
    if len(endpoints) > 1 or first.kind != "tcp":
        spread = [(e.host, str(e.port or 0), _options.ADDRESS_KINDS[e.kind])
                  for e in endpoints]
        if not channel.get("authority"):  # grpc's default :authority (_resolver)
            channel["authority"] = parse_target(target).default_authority()
    try:
        raw = _triple.run_load(
            host, port, path=method, mode=C_MODES[mode], payload_size=payload_size,
            concurrency=concurrency // connections, connections=connections,
            duration=duration, warmup=warmup, count=count, rate=rate or 0.0,
            stream_messages=stream_messages if mode == "bidi" else 1,
            timeout=timeout, shared_request=shared_request, verify=verify,
            hist_digits=hist_digits,
            driver_threads=driver_threads, start_at_ns=start_at_ns, phase_ns=phase_ns,
            requests=requests, endpoints=spread,
            rate_schedule=rate_schedule.as_c() if rate_schedule else None,
            concurrency_schedule=concurrency_schedule.as_c() if concurrency_schedule else None,
            stop=stop, **dict(load or {}), **channel)
    except KeyboardInterrupt as exc:  # SIGINT/SIGTERM: the figures until the stop
        partial = getattr(exc, "load_result", None)
        if partial is None:
            raise
        result = mark(result_from_load(partial, arm=arm, mode=mode, target=target),
                      signal_of(exc))
        return _finish(result, duration, count, wire, requests, rate_schedule,
                       concurrency_schedule)
    except ValueError as exc:
        raise ConfigError(str(exc).removeprefix("run_load: ")) from None
    except ConnectionError as exc:
        why = str(exc).removeprefix("run_load: ").removeprefix(f"{host}:{port} unavailable: ")
        raise TargetError(f"cannot reach {target}: {why}") from None
    result = result_from_load(raw, arm=arm, mode=mode, target=target)
    if raw.get("interrupted"):
        result.extra["stopped"] = True
    return _finish(result, duration, count, wire, requests, rate_schedule,
                   concurrency_schedule)


def _finish(result: BenchResult, duration: float, count: int, wire: str,
            requests: Optional[list], rate_schedule: Optional[Schedule],
            concurrency_schedule: Optional[Schedule]) -> BenchResult:
    """The run's settings that the C result does not echo, added to ``result``."""
    result.duration_s, result.count, result.wire = duration, count, wire
    for name, schedule in (("load_schedule", rate_schedule),
                           ("concurrency_schedule", concurrency_schedule)):
        if schedule is not None:
            result.extra[name] = dataclasses.asdict(schedule)
    if requests:
        result.payload_size = round(sum(len(b) for b, _ in requests) / len(requests))
        result.extra["ring_size"] = len(requests)
    return result


def run_c_spec(spec: RunSpec, mode: Optional[str] = None, *, start_at_ns: int = 0,
               phase_ns: int = 0, stop: Optional[Callable[[], bool]] = None) -> BenchResult:
    """:func:`run_c_load` with the figures of ``spec`` (``mode``: a C mode, default the
    spec's)."""
    return run_c_load(arm=spec.arm, mode=mode or spec.mode, target=spec.target,
                      method=spec.resolved_method(), payload_size=spec.payload_size,
                      concurrency=spec.concurrency, connections=spec.connections,
                      duration=spec.duration, warmup=spec.warmup, count=spec.count,
                      rate=spec.rate, stream_messages=spec.stream_messages,
                      timeout=spec.timeout, shared_request=spec.shared_request,
                      verify=spec.verify,
                      hist_digits=spec.hist_digits,
                      driver_threads=bool(spec.options.get("driver_threads", False)),
                      start_at_ns=start_at_ns, phase_ns=phase_ns, requests=spec.requests,
                      connection=spec.channel_options(), rate_schedule=spec.rate_schedule,
                      concurrency_schedule=spec.concurrency_schedule, stop=stop,
                      load=spec.load)


def result_from_load(raw: Mapping[str, Any], *, arm: str, mode: str, target: str
                     ) -> BenchResult:
    """A BenchResult holding every figure of a ``run_load`` result dict: the keys it has
    fields for in them, every other row of ``_triple.LOAD_RESULTS`` in ``extra``
    (:mod:`~triple_py.bench.record.load_figures`)."""
    histogram = [tuple(p) for p in raw.get("histogram", [])]
    histogram_corrected = [tuple(p) for p in raw.get("histogram_corrected", [])]
    codes = {status_name(i): n for i, n in enumerate(raw.get("status_codes", [])) if n}
    if raw.get("mismatches"):  # verify: OK calls whose response was not the request
        codes[MISMATCH] = raw["mismatches"]
    bidi = raw.get("mode") == "bidi"
    warmup: Dict[str, Any] = {
        "calls": raw.get("warmup_calls", 0), "errors": raw.get("warmup_errors", 0),
        "latency_ns": raw.get("warmup_latency_ns"),
        "latency_corrected_ns": raw.get("warmup_latency_corrected_ns"),
        "histogram": [list(p) for p in raw.get("warmup_histogram", [])],
        "histogram_corrected": [list(p) for p in raw.get("warmup_histogram_corrected", [])]}
    extra = extra_figures(raw)  # every figure of the table that BenchResult has no field for
    extra["c_mode"] = raw.get("mode")
    return BenchResult(
        arm=arm, mode=mode, target=target, method=raw.get("path", ""),
        payload_size=raw.get("payload_size", 0),
        concurrency=raw.get("concurrency", 0) * raw.get("connections", 1),
        connections=raw.get("connections", 1),
        stream_messages=raw.get("stream_messages", 1),
        rate=raw.get("target_rate") or None, warmup_s=raw.get("warmup_s", 0.0),
        write_buffer_size=raw.get("write_buffer_size"),
        elapsed_s=raw.get("elapsed_s", 0.0), calls=raw.get("calls", 0),
        errors=raw.get("errors", 0), qps=raw.get("qps", 0.0), status_codes=codes,
        latency=Latency.from_load(raw.get("latency_ns", {}), histogram),
        latency_corrected=Latency.from_load(raw.get("latency_corrected_ns", {}),
                                            histogram_corrected),
        series=dict(raw.get("series", {})), cpu=dict(raw.get("cpu", {})),
        counters=dict(raw.get("counters", {})), per_call=dict(raw.get("per_call", {})),
        per_message=dict(raw.get("per_message", {})) if raw.get("messages_sent") else {},
        streams=raw.get("streams", 0) if bidi else 0,
        messages_sent=raw.get("messages_sent", 0),
        messages_received=raw.get("messages_received", 0),
        messages_per_s=raw.get("messages_per_s", 0.0),
        histogram=histogram, histogram_corrected=histogram_corrected,
        warmup=warmup, extra=extra)
