"""A run's result in ghz's machine formats: ``prometheus``, ``influx-summary`` and
``influx-details`` (``run -O/--format``).

``prometheus`` is the text exposition format (gauges, a latency summary with quantiles and a
cumulative histogram of the recorded latency buckets, a counter per status code), metric
prefix ``triple_py_run_``. The influx formats are InfluxDB line protocol: ``influx-summary``
one ``triple_py_run`` line; ``influx-details`` one ``triple_py_second`` line per second of
the run's series (calls, errors, p99), because the C generator keeps histograms rather
than a record per call (ghz writes a line per call there).
"""
from __future__ import annotations

import time
from typing import Dict, List, Optional

from ..record.result import BenchResult

__all__ = ["prometheus_text", "influx_summary", "influx_details"]

_QUANTILES = (("0.5", "p50"), ("0.9", "p90"), ("0.99", "p99"), ("0.999", "p99_9"),
              ("0.9999", "p99_99"))


def _labels(result: BenchResult) -> Dict[str, str]:
    return {"arm": result.arm, "mode": result.mode, "call": result.method,
            "target": result.target}


def _prom_labels(labels: Dict[str, str]) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "{" + ",".join(f'{k}="{esc(str(v))}"' for k, v in labels.items()) + "}"


def _seconds(ns: Optional[float]) -> float:
    return (ns or 0.0) / 1e9


def prometheus_text(result: BenchResult) -> str:
    """The result in Prometheus's text exposition format (latency in seconds)."""
    base = _labels(result)
    lab = _prom_labels(base)
    lat = result.latency_corrected if result.latency_corrected.count else result.latency
    lines: List[str] = []

    def gauge(name: str, value: float, help_text: str) -> None:
        lines.extend([f"# HELP triple_py_run_{name} {help_text}",
                      f"# TYPE triple_py_run_{name} gauge", f"triple_py_run_{name}{lab} {value:g}"])

    gauge("count", result.calls, "measured calls")
    gauge("errors", result.errors, "measured calls that did not end OK")
    gauge("rps", result.qps, "calls per second")
    gauge("elapsed_seconds", result.elapsed_s, "measured time")
    gauge("fastest_seconds", _seconds(lat.min), "fastest call")
    gauge("slowest_seconds", _seconds(lat.max), "slowest call")
    gauge("average_seconds", _seconds(lat.mean), "mean latency")
    lines += ["# HELP triple_py_run_latency_seconds latency (CO-corrected in open loop)",
              "# TYPE triple_py_run_latency_seconds summary"]
    for q, attr in _QUANTILES:
        lines.append(f"triple_py_run_latency_seconds{_prom_labels({**base, 'quantile': q})} "
                     f"{_seconds(getattr(lat, attr)):g}")
    hist = result.histogram_corrected or result.histogram
    lines += ["# HELP triple_py_run_histogram_seconds latency histogram (recorded buckets)",
              "# TYPE triple_py_run_histogram_seconds histogram"]
    total, running = 0.0, 0
    for value, count in hist:
        running += count
        total += value * count
        lines.append(f"triple_py_run_histogram_seconds_bucket"
                     f"{_prom_labels({**base, 'le': f'{value / 1e9:g}'})} {running}")
    lines += [f"triple_py_run_histogram_seconds_bucket{_prom_labels({**base, 'le': '+Inf'})} "
              f"{running}",
              f"triple_py_run_histogram_seconds_sum{lab} {total / 1e9:g}",
              f"triple_py_run_histogram_seconds_count{lab} {running}",
              "# HELP triple_py_run_status calls by final status",
              "# TYPE triple_py_run_status counter"]
    for status, n in sorted(result.status_codes.items()):
        lines.append(f"triple_py_run_status{_prom_labels({**base, 'status': status})} {n}")
    return "\n".join(lines) + "\n"


def _influx_tags(labels: Dict[str, str]) -> str:
    def esc(v: str) -> str:
        return str(v).replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=") \
            .replace(" ", "\\ ")
    return ",".join(f"{k}={esc(v)}" for k, v in labels.items() if v != "")


def influx_summary(result: BenchResult, timestamp_ns: Optional[int] = None) -> str:
    """One InfluxDB line: count, errors, rps, latency figures in ns."""
    lat = result.latency_corrected if result.latency_corrected.count else result.latency
    fields = {"count": f"{result.calls}i", "errors": f"{result.errors}i",
              "rps": f"{result.qps:.4f}", "total_ns": f"{int(result.elapsed_s * 1e9)}i"}
    for name, attr in (("fastest", "min"), ("slowest", "max"), ("average", "mean"),
                       ("median", "p50"), ("p90", "p90"), ("p99", "p99"),
                       ("p999", "p99_9")):
        value = getattr(lat, attr)
        if value is not None:
            fields[f"{name}_ns"] = f"{int(value)}i"
    ts = timestamp_ns if timestamp_ns is not None else time.time_ns()
    return (f"triple_py_run,{_influx_tags(_labels(result))} "
            + ",".join(f"{k}={v}" for k, v in fields.items()) + f" {ts}\n")


def influx_details(result: BenchResult, start_ns: Optional[int] = None) -> str:
    """One InfluxDB line per second of the run (calls, errors, p99 in ns); timestamps from
    ``start_ns`` (default: now minus the run's seconds)."""
    calls = result.series.get("calls", [])
    errors = result.series.get("errors", [])
    p99 = result.series.get("p99_ns", [])
    start = start_ns if start_ns is not None else time.time_ns() - len(calls) * 1_000_000_000
    tags = _influx_tags(_labels(result))
    lines = []
    for i, n in enumerate(calls):
        fields = [f"calls={int(n)}i", f"errors={int(errors[i]) if i < len(errors) else 0}i"]
        if i < len(p99) and p99[i]:
            fields.append(f"p99_ns={int(p99[i])}i")
        lines.append(f"triple_py_second,{tags},second={i} {','.join(fields)} "
                     f"{start + i * 1_000_000_000}")
    return "\n".join(lines) + ("\n" if lines else "")
