"""The exact merge of the results of one load split over several processes.

Each part is one worker's :class:`~triple_py.bench.record.result.BenchResult` from the C
load generator, with
the moment its measured window began on the client's clock. The merge is exact where the
parts carry enough to be exact:

- latency histograms are rebuilt in the C core's own histogram (``_triple.Histogram``)
  from the exported (value, count) pairs, which restores every bucket, and added bucket
  by bucket (``tri_hist_add``, what the load generator does with its threads'
  histograms); percentiles are read from the sum and kept within the parts' exact
  min..max, as the C side keeps them, so they equal the percentiles of one histogram
  that had recorded every part's latencies;
- count, min, max and mean combine exactly; counts, status codes, counters and CPU time
  are summed, and the per-call figures divided again;
- the one-second series are aligned by absolute time (each part's window start) and
  their calls and errors added; a second's p99 cannot be merged (the C series keeps only
  its p99), so the merged series has the highest of the parts' p99 for that second, an
  upper bound (said in ``extra["series_p99"]``).

The merged window runs from the earliest part's start to the latest part's end;
``qps`` is all calls over it. ``extra["workers"]`` keeps every part's own figures.
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ... import _triple
from ..record.load_figures import summed_figures
from ..record.result import PERCENTILES, BenchResult, Histogram, Latency, _hist_stdev

__all__ = ["Part", "merge_histograms", "merge_latency", "merge_series", "merge_parts",
           "worker_row", "imbalance"]

#: cpu figures that are sums of seconds (the rates are derived again from the sums).
CPU_SECONDS = ("process_user_s", "process_sys_s", "process_s", "driver_s")


@dataclasses.dataclass
class Part:
    """One worker's share of a run: its result and where it ran.

    ``window_start_ns`` is when its measured window began, on the client's wall clock
    (its own clock minus ``clock_offset_ns``).
    """

    worker: str
    result: BenchResult
    window_start_ns: int
    clock_offset_ns: int = 0
    clock_rtt_ns: int = 0
    host: str = ""
    pid: int = 0

    @property
    def window_end_ns(self) -> int:
        """When its last measured call completed (client clock)."""
        return self.window_start_ns + round(self.result.elapsed_s * 1e9)


def merge_histograms(histograms: Sequence[Histogram], digits: int = 3) -> Histogram:
    """The (value_ns, count) pairs of the bucket-by-bucket sum of ``histograms``."""
    return list(_summed(histograms, digits).pairs())


def _summed(histograms: Sequence[Histogram], digits: int) -> Any:
    total = _triple.Histogram(digits)
    for pairs in histograms:
        part = _triple.Histogram(digits)
        part.record_pairs(pairs)
        total.add(part)
    return total


def merge_latency(latencies: Sequence[Latency], histograms: Sequence[Histogram],
                  digits: int = 3) -> Tuple[Latency, Histogram]:
    """The merged summary and histogram of parts (their summaries and histograms, in the
    same order). Percentiles come from the summed histogram, clamped to the exact
    min..max of the parts, as the C side reports them."""
    parts = [lat for lat in latencies if lat.count]
    total = _summed(histograms, digits)
    pairs = list(total.pairs())
    if not parts:
        return Latency(), pairs
    count = sum(lat.count for lat in parts)
    low = min(lat.min for lat in parts if lat.min is not None)
    high = max(lat.max for lat in parts if lat.max is not None)
    mean = sum(lat.count * (lat.mean or 0.0) for lat in parts) / count
    merged = Latency(count=count, min=low, mean=mean, max=high)
    for key, attr in PERCENTILES:
        value = total.percentile(float(key[1:]))
        setattr(merged, attr, min(max(value, low), high))
    merged.stdev = _hist_stdev(pairs, mean)
    return merged, pairs


def merge_series(series: Sequence[Mapping[str, Sequence[float]]], shifts: Sequence[int]
                 ) -> Dict[str, List[float]]:
    """Per-second series added after shifting part i by ``shifts[i]`` seconds (its start
    after the earliest part's). ``p99_ns``: the highest of the parts' for each second."""
    length = max((len(s.get("calls", ())) + shift for s, shift in zip(series, shifts)),
                 default=0)
    out: Dict[str, List[float]] = {"calls": [0] * length, "errors": [0] * length,
                                   "p99_ns": [0] * length}
    for s, shift in zip(series, shifts):
        for key in ("calls", "errors"):
            for i, value in enumerate(s.get(key, ())):
                out[key][i + shift] += value
        for i, value in enumerate(s.get("p99_ns", ())):
            out["p99_ns"][i + shift] = max(out["p99_ns"][i + shift], value)
    return out


def _sum_dicts(dicts: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for d in dicts:
        for key, value in d.items():
            out[key] = out.get(key, 0) + value
    return out


def _per(counters: Mapping[str, float], n: float) -> Dict[str, float]:
    return {k: (v / n if n else 0.0) for k, v in counters.items()}


def worker_row(part: Part, merged_start_ns: int) -> Dict[str, Any]:
    """One worker's own figures, for the breakdown in ``extra["workers"]``."""
    r = part.result
    return {"worker": part.worker, "host": part.host, "pid": part.pid,
            "concurrency": r.concurrency, "connections": r.connections, "rate": r.rate,
            "calls": r.calls, "errors": r.errors, "qps": r.qps, "p50_ns": r.p50,
            "p99_ns": r.p99, "p99_9_ns": r.p99_9, "max_ns": r.max_latency,
            "cpu_us_per_call": r.cpu_us_per_call, "elapsed_s": r.elapsed_s,
            "clock_offset_ms": part.clock_offset_ns / 1e6,
            "clock_rtt_ms": part.clock_rtt_ns / 1e6,
            "start_skew_ms": (part.window_start_ns - merged_start_ns) / 1e6,
            "late_ms": (r.extra.get("late_ns") or 0) / 1e6,
            "status_codes": dict(r.status_codes)}


def imbalance(values: Sequence[float]) -> Optional[float]:
    """(highest - lowest) / mean of the workers' figures; None without a positive mean."""
    if len(values) < 2:
        return 0.0 if values else None
    mean = statistics.fmean(values)
    return (max(values) - min(values)) / mean if mean > 0 else None


def merge_parts(parts: Sequence[Part], *, arm: Optional[str] = None,
                target: Optional[str] = None) -> BenchResult:
    """One BenchResult for the whole run: the fields of a local run, merged exactly."""
    if not parts:
        raise ValueError("merge_parts: no parts")
    results = [p.result for p in parts]
    first = results[0]
    digits = int(first.extra.get("hist_digits") or 3)
    start = min(p.window_start_ns for p in parts)
    end = max(p.window_end_ns for p in parts)
    elapsed = (end - start) / 1e9 if any(r.calls for r in results) else 0.0
    calls = sum(r.calls for r in results)
    messages_sent = sum(r.messages_sent for r in results)
    messages_received = sum(r.messages_received for r in results)
    latency, histogram = merge_latency([r.latency for r in results],
                                       [r.histogram for r in results], digits)
    corrected, histogram_corrected = merge_latency(
        [r.latency_corrected for r in results], [r.histogram_corrected for r in results],
        digits)
    counters = _sum_dicts([r.counters for r in results])
    cpu = {k: sum(r.cpu.get(k, 0.0) for r in results) for k in CPU_SECONDS
           if any(k in r.cpu for r in results)}
    if "process_s" in cpu:
        cpu["process_us_per_call"] = cpu["process_s"] * 1e6 / calls if calls else 0.0
        cpu["process_cores"] = cpu["process_s"] / elapsed if elapsed > 0 else 0.0
    shifts = [round((p.window_start_ns - start) / 1e9) for p in parts]
    rates = [r.rate for r in results if r.rate]
    merged = BenchResult(
        arm=arm or first.arm, mode=first.mode, target=target or first.target,
        method=first.method, payload_size=first.payload_size,
        concurrency=sum(r.concurrency for r in results),
        connections=sum(r.connections for r in results),
        stream_messages=first.stream_messages, rate=sum(rates) if rates else None,
        duration_s=first.duration_s, warmup_s=first.warmup_s,
        count=sum(r.count for r in results), wire=first.wire,
        write_buffer_size=first.write_buffer_size, elapsed_s=elapsed, calls=calls,
        errors=sum(r.errors for r in results),
        qps=calls / elapsed if elapsed > 0 else 0.0,
        status_codes=_sum_dicts([r.status_codes for r in results]),
        latency=latency, latency_corrected=corrected,
        series=merge_series([r.series for r in results], shifts), cpu=cpu,
        counters=counters, per_call=_per(counters, calls) if counters else {},
        per_message=_per(counters, messages_sent) if messages_sent else {},
        streams=sum(r.streams for r in results), messages_sent=messages_sent,
        messages_received=messages_received,
        messages_per_s=messages_received / elapsed if elapsed > 0 else 0.0,
        histogram=histogram, histogram_corrected=histogram_corrected,
        warmup=_merge_warmup(results, digits))
    summed = summed_figures()  # the counters of the load generator's table in extra
    merged.extra = {k: v for k, v in first.extra.items()
                    if k not in summed and k not in ("start_monotonic_ns", "late_ns")}
    for key in summed:
        if any(key in r.extra for r in results):
            merged.extra[key] = sum(r.extra.get(key, 0) for r in results)
    if merged.rate:
        merged.extra["target_rate"] = merged.rate
    rows = [worker_row(p, start) for p in parts]
    merged.extra.update({
        "workers": rows,
        "imbalance": {"qps": imbalance([r["qps"] for r in rows]),
                      "calls": imbalance([r["calls"] for r in rows])},
        "series_p99": "highest of the workers' p99 in each second (an upper bound)",
        "series_shift_s": shifts})
    for p in parts:
        if p.result.errors:
            merged.notes.append(f"{p.worker}: {p.result.errors} of {p.result.calls} calls "
                                f"failed (mostly {p.result.first_error})")
        merged.notes.extend(f"{p.worker}: {note}" for note in p.result.notes)
    return merged


def _merge_warmup(results: Sequence[BenchResult], digits: int) -> Dict[str, Any]:
    """The warm-up's counts and latencies, merged like the measured ones."""
    warm = [r.warmup for r in results]
    out: Dict[str, Any] = {"calls": sum(w.get("calls", 0) for w in warm),
                           "errors": sum(w.get("errors", 0) for w in warm)}
    for key, hist_key in (("latency_ns", "histogram"),
                          ("latency_corrected_ns", "histogram_corrected")):
        latency, pairs = merge_latency([Latency.from_dict(w.get(key) or {}) for w in warm],
                                       [[tuple(p) for p in w.get(hist_key) or []]
                                        for w in warm], digits)
        out[key] = latency.to_dict()
        out[hist_key] = [list(p) for p in pairs]
    return out
