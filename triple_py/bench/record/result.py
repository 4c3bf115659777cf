"""BenchResult: the figures of one run of one arm, whatever produced them.

The C load generator fills every field; the reference arms (grpcio, h2load) fill what they
can measure and leave the rest empty (``None``, ``{}``), so tables and files treat every arm
alike. Latencies are in nanoseconds throughout.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .html_tables import bench_result_html

__all__ = ["Latency", "BenchResult", "STATUS_NAMES", "MISMATCH", "status_name",
           "histogram_from_samples", "series_from_completions"]

#: gRPC status code names, indexed by code.
STATUS_NAMES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")

#: Percentile keys as printed (and as in the C result dict) -> Latency attribute.
PERCENTILES = (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p99_9"),
               ("p99.99", "p99_99"))

Histogram = List[Tuple[int, int]]


#: The status of a call that ended OK with a response other than its request (the
#: arms' ``verify``): counted as an error.
MISMATCH = "MISMATCH"


def status_name(code: int) -> str:
    """``OK``, ``UNIMPLEMENTED``...; ``CODE_<n>`` outside 0..16."""
    return STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else f"CODE_{code}"


@dataclasses.dataclass
class Latency:
    """A latency distribution summary, in nanoseconds (None: not measured)."""

    count: int = 0
    min: Optional[float] = None
    mean: Optional[float] = None
    stdev: Optional[float] = None
    p50: Optional[float] = None
    p90: Optional[float] = None
    p99: Optional[float] = None
    p99_9: Optional[float] = None
    p99_99: Optional[float] = None
    max: Optional[float] = None

    @classmethod
    def from_load(cls, d: Mapping[str, Any], histogram: Sequence[Tuple[int, int]] = ()
                  ) -> "Latency":
        """From a C ``latency_ns`` dict (its stdev computed from the histogram)."""
        count = int(d.get("count", 0))
        if not count:
            return cls()
        lat = cls(count=count, min=d.get("min"), mean=d.get("mean"), max=d.get("max"))
        for key, attr in PERCENTILES:
            setattr(lat, attr, d.get(key))
        lat.stdev = _hist_stdev(histogram, lat.mean)
        return lat

    @classmethod
    def from_samples(cls, samples_ns: Iterable[float]) -> "Latency":
        """Nearest-rank percentiles of raw samples (ghz's definition)."""
        values = sorted(samples_ns)
        if not values:
            return cls()
        n = len(values)
        mean = math.fsum(values) / n
        var = math.fsum((v - mean) ** 2 for v in values) / n
        lat = cls(count=n, min=values[0], mean=mean, stdev=math.sqrt(var), max=values[-1])
        for key, attr in PERCENTILES:
            q = float(key[1:]) / 100.0
            setattr(lat, attr, values[max(0, math.ceil(q * n) - 1)])
        return lat

    def to_dict(self) -> Dict[str, Any]:
        """``{"count", "min", "mean", "stdev", "p50", ..., "p99.99", "max"}`` (ns)."""
        d: Dict[str, Any] = {"count": self.count, "min": self.min, "mean": self.mean,
                             "stdev": self.stdev}
        for key, attr in PERCENTILES:
            d[key] = getattr(self, attr)
        d["max"] = self.max
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Latency":
        """The inverse of to_dict."""
        lat = cls(count=int(d.get("count") or 0), min=d.get("min"), mean=d.get("mean"),
                  stdev=d.get("stdev"), max=d.get("max"))
        for key, attr in PERCENTILES:
            setattr(lat, attr, d.get(key))
        return lat


def _hist_stdev(histogram: Sequence[Tuple[int, int]], mean: Optional[float]) -> Optional[float]:
    total = sum(n for _, n in histogram)
    if not total or mean is None:
        return None
    return math.sqrt(sum(n * (v - mean) ** 2 for v, n in histogram) / total)


def histogram_from_samples(samples_ns: Iterable[float], digits: int = 3) -> Histogram:
    """[(value_ns, count)] with values rounded to ``digits`` significant digits (HDR-like)."""
    counts: Dict[int, int] = {}
    for v in samples_ns:
        v = int(v)
        if v > 0:
            scale = 10 ** max(0, len(str(v)) - digits)
            v = (v // scale) * scale
        counts[v] = counts.get(v, 0) + 1
    return sorted(counts.items())


def series_from_completions(completions: Iterable[Tuple[float, float, bool]], start: float,
                            seconds: int) -> Dict[str, List[float]]:
    """One-second buckets of (end_time_s, latency_ns, ok) completions after ``start``.

    Returns ``{"calls": [...], "errors": [...], "p99_ns": [...]}`` like the C series
    (completions after the last whole second count in the last bucket).
    """
    seconds = max(1, seconds)
    buckets: List[List[float]] = [[] for _ in range(seconds)]
    errors = [0] * seconds
    for end, latency_ns, ok in completions:
        i = min(seconds - 1, max(0, int(end - start)))
        buckets[i].append(latency_ns)
        if not ok:
            errors[i] += 1
    p99 = [Latency.from_samples(b).p99 or 0 for b in buckets]
    return {"calls": [len(b) for b in buckets], "errors": errors, "p99_ns": p99}


def client_cpu(cpu: Mapping[str, Any], figure: str) -> Any:
    """One of a result's ``cpu`` figures (``s``, ``cores``, ``us_per_call``) for the client,
    whichever kind of arm measured it: ``process_<figure>`` (our arms, grpcio) or
    ``h2load_<figure>``; None when neither is there."""
    return cpu.get("process_" + figure, cpu.get("h2load_" + figure))


@dataclasses.dataclass
class BenchResult:
    """One run of one arm: throughput, latency, errors and the client's costs.

    Throughput: ``qps`` is measured calls (streams, in the bidi modes) per second over
    ``elapsed_s``; failed calls count, as in ghz. Latency: ``latency`` is measured from the
    actual send, ``latency_corrected`` from the intended send (open loop, ``rate`` set; in a
    closed loop both are the same). The convenience properties (``p50``, ``p99``...) give the
    corrected figures in nanoseconds. The C modes' latency covers every measured call, failed
    ones included; the Python arms' covers the OK calls (ghz's default); h2load's needs its
    ``latency_log`` option (otherwise only min/mean/stdev/max). Costs: ``counters`` are the
    C core's counters over the
    measured part (write syscalls, bytes, heap allocations...), ``per_call`` and
    ``per_message`` divide them by calls and by messages written; they are empty for the
    reference arms. ``histogram`` is the raw latency histogram as (value_ns, count) pairs.
    """

    arm: str
    mode: str
    target: str
    method: str
    payload_size: int
    concurrency: int
    connections: int = 1
    stream_messages: int = 1
    rate: Optional[float] = None
    duration_s: float = 0.0
    warmup_s: float = 0.0
    count: int = 0
    wire: str = "grpc"
    write_buffer_size: Optional[int] = None
    elapsed_s: float = 0.0
    calls: int = 0
    errors: int = 0
    qps: float = 0.0
    status_codes: Dict[str, int] = dataclasses.field(default_factory=dict)
    latency: Latency = dataclasses.field(default_factory=Latency)
    latency_corrected: Latency = dataclasses.field(default_factory=Latency)
    series: Dict[str, List[float]] = dataclasses.field(default_factory=dict)
    cpu: Dict[str, float] = dataclasses.field(default_factory=dict)
    counters: Dict[str, int] = dataclasses.field(default_factory=dict)
    per_call: Dict[str, float] = dataclasses.field(default_factory=dict)
    per_message: Dict[str, float] = dataclasses.field(default_factory=dict)
    streams: int = 0
    messages_sent: int = 0
    messages_received: int = 0
    messages_per_s: float = 0.0
    histogram: Histogram = dataclasses.field(default_factory=list)
    histogram_corrected: Histogram = dataclasses.field(default_factory=list)
    warmup: Dict[str, Any] = dataclasses.field(default_factory=dict)
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: List[str] = dataclasses.field(default_factory=list)

    # -- convenience ------------------------------------------------------------------------
    @property
    def ok_calls(self) -> int:
        """Measured calls (streams) that ended with OK."""
        return self.calls - self.errors

    @property
    def cpu_us_per_call(self) -> Optional[float]:
        """The client's CPU time per call in µs (the whole process for our arms and grpcio,
        h2load's process for h2load), or None when not measured."""
        value = client_cpu(self.cpu, "us_per_call")
        return float(value) if value else None

    @property
    def server_cpu_us_per_call(self) -> Optional[float]:
        """The server's CPU time per call in µs, when the harness could read it (a server
        in a process of its own: see :mod:`~triple_py.bench.running.server_cpu`), else None."""
        value = self.cpu.get("server_us_per_call")
        return float(value) if value is not None else None

    def calls_including_warmup(self) -> float:
        """Calls (streams) made over the whole run, warm-up included: the warm-up's own
        count when the arm reports it; otherwise the warm-up is taken to have run at the
        measured rate. CPU time read around a whole run is divided by this."""
        if "calls" in self.warmup:
            return float(self.calls + self.warmup["calls"])
        if self.count or self.elapsed_s <= 0:
            return float(self.calls)
        return self.calls * (self.warmup_s + self.elapsed_s) / self.elapsed_s

    @property
    def error_rate(self) -> float:
        """errors / calls (0.0 without calls)."""
        return self.errors / self.calls if self.calls else 0.0

    @property
    def p50(self) -> Optional[float]:
        """Median latency (ns), from the intended send."""
        return self.latency_corrected.p50

    @property
    def p90(self) -> Optional[float]:
        """90th percentile latency (ns), from the intended send."""
        return self.latency_corrected.p90

    @property
    def p99(self) -> Optional[float]:
        """99th percentile latency (ns), from the intended send."""
        return self.latency_corrected.p99

    @property
    def p99_9(self) -> Optional[float]:
        """99.9th percentile latency (ns), from the intended send."""
        return self.latency_corrected.p99_9

    @property
    def p99_99(self) -> Optional[float]:
        """99.99th percentile latency (ns), from the intended send."""
        return self.latency_corrected.p99_99

    @property
    def max_latency(self) -> Optional[float]:
        """Slowest call (ns), from the intended send."""
        return self.latency_corrected.max

    @property
    def write_syscalls_per_call(self) -> Optional[float]:
        """Socket write syscalls per measured call (C modes only)."""
        return self.per_call.get("write_syscalls") if self.per_call else None

    @property
    def write_syscalls_per_message(self) -> Optional[float]:
        """Socket write syscalls per message written (streaming C modes only)."""
        if not self.per_message or not self.messages_sent:
            return None
        return self.per_message.get("write_syscalls")

    @property
    def allocations_per_call(self) -> Optional[float]:
        """Heap allocations of the C core per measured call (C modes only)."""
        return self.per_call.get("allocations") if self.per_call else None

    @property
    def first_error(self) -> Optional[str]:
        """The most frequent non-OK status, e.g. ``UNIMPLEMENTED`` (None without errors)."""
        bad = {k: v for k, v in self.status_codes.items() if k != "OK" and v}
        return max(bad, key=bad.get) if bad else None

    def _repr_html_(self) -> str:
        """Jupyter's view: what ran and its figures, as HTML tables."""
        return bench_result_html(self)

    # -- conversion -------------------------------------------------------------------------
    def to_dict(self, histograms: bool = True) -> Dict[str, Any]:
        """Every field as JSON-ready values (latencies as dicts keyed p50..p99.99)."""
        d = dataclasses.asdict(self)
        d["latency_ns"] = self.latency.to_dict()
        d["latency_corrected_ns"] = self.latency_corrected.to_dict()
        del d["latency"], d["latency_corrected"]
        for key in ("histogram", "histogram_corrected"):
            d[key] = [list(p) for p in getattr(self, key)] if histograms else None
        if not histograms:
            d["warmup"] = {k: v for k, v in self.warmup.items() if "histogram" not in k}
        d["write_syscalls_per_call"] = self.write_syscalls_per_call
        d["write_syscalls_per_message"] = self.write_syscalls_per_message
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BenchResult":
        """The inverse of to_dict (unknown keys are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in names}
        kwargs["latency"] = Latency.from_dict(d.get("latency_ns") or {})
        kwargs["latency_corrected"] = Latency.from_dict(d.get("latency_corrected_ns") or {})
        for key in ("histogram", "histogram_corrected"):
            kwargs[key] = [tuple(p) for p in (d.get(key) or [])]
        return cls(**kwargs)
