"""The tidy CSV (``results.csv``: one row per arm, scenario and round) and the paired
table as CSV (``paired.csv``)."""
from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path
from typing import Any, Dict, List

from ..record.load_figures import figure_columns
from ..record.result import client_cpu
from ..results.model import ArmRun, MatrixRun
from ..results.paired import PAIRED_COLUMNS, headline_ratios, paired_ratios
from ..results.summary import _ms
from ..spec.knobs import knob_columns

__all__ = ["CSV_COLUMNS", "csv_knob_columns", "csv_figure_columns", "csv_rows", "csv_text", "write_csv", "write_paired_csv"]


CSV_COLUMNS = [
    "matrix", "benchmark", "scenario", "arm", "kind", "is_baseline", "round", "position",
    "server", "payload", "concurrency", "connections", "stream_messages", "rate",
    "write_buffer_size", "duration_s", "warmup_s", "elapsed_s", "calls", "errors", "qps",
    "messages_per_s", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "p99_99_ms", "max_ms",
    "mean_ms", "p99_uncorrected_ms", "write_syscalls_per_call", "write_syscalls_per_message",
    "bytes_written_per_call", "allocations_per_call", "cpu_s", "cpu_cores", "cpu_us_per_call",
    "server_cpu_us_per_call", "status",
    "failed", "target", "triple_py"]


def _csv_row(run: MatrixRun, r: ArmRun, columns: List[str], figures: List[str]
             ) -> Dict[str, Any]:
    res = r.result
    s = r.scenario
    row: Dict[str, Any] = {
        "matrix": run.matrix.name, "benchmark": run.matrix.benchmark, "scenario": r.label,
        "arm": r.arm.name, "kind": r.arm.mode, "is_baseline": r.arm.name == run.matrix.baseline,
        "round": r.round, "position": r.position, "server": r.server_generation,
        "payload": s.payload, "concurrency": s.concurrency, "connections": s.connections,
        "stream_messages": s.stream_messages, "rate": s.rate or "",
        "write_buffer_size": r.arm.overrides.get("write_buffer_size", s.write_buffer_size),
        "duration_s": run.matrix.duration, "warmup_s": run.matrix.warmup,
        "failed": r.failed or "", "target": r.target, "triple_py": run.version}
    if res is not None:
        lat = res.latency_corrected
        row.update({
            "elapsed_s": res.elapsed_s, "calls": res.calls, "errors": res.errors,
            "qps": res.qps, "messages_per_s": res.messages_per_s or "",
            "p50_ms": _ms(lat.p50), "p90_ms": _ms(lat.p90), "p99_ms": _ms(lat.p99),
            "p99_9_ms": _ms(lat.p99_9), "p99_99_ms": _ms(lat.p99_99), "max_ms": _ms(lat.max),
            "mean_ms": _ms(lat.mean), "p99_uncorrected_ms": _ms(res.latency.p99),
            "write_syscalls_per_call": res.write_syscalls_per_call,
            "write_syscalls_per_message": res.write_syscalls_per_message,
            "bytes_written_per_call": res.per_call.get("bytes_written") if res.per_call else None,
            "allocations_per_call": res.allocations_per_call,
            "cpu_s": client_cpu(res.cpu, "s"), "cpu_cores": client_cpu(res.cpu, "cores"),
            "cpu_us_per_call": res.cpu_us_per_call,
            "server_cpu_us_per_call": res.server_cpu_us_per_call,
            "status": ";".join(f"{k}={v}" for k, v in sorted(res.status_codes.items()))})
    row.update(run.knobs_of(r))
    if res is not None:
        row.update({name: res.extra.get(name) for name in figures})
    return {k: ("" if row.get(k) is None else row.get(k, "")) for k in columns}


def csv_knob_columns(run: MatrixRun) -> List[str]:
    """The columns after :data:`CSV_COLUMNS`: one per knob the runs were given (channel
    options as ``channel.NAME``, load keywords by name, in first-seen order); none when
    no run was given any."""
    return knob_columns((run.knobs_of(r) for r in run.runs), CSV_COLUMNS)


def csv_figure_columns(run: MatrixRun) -> List[str]:
    """The columns after the knob columns: one per figure of the C load generator's table
    that the results keep in ``extra`` (:func:`~..record.load_figures.figure_columns`);
    none when no result has one."""
    known = CSV_COLUMNS + csv_knob_columns(run)
    return figure_columns((r.result.extra for r in run.runs if r.result is not None), known)


def _columns(run: MatrixRun) -> List[str]:
    return CSV_COLUMNS + csv_knob_columns(run) + csv_figure_columns(run)


def csv_rows(run: MatrixRun) -> List[Dict[str, Any]]:
    """One dict per arm run, keyed by CSV_COLUMNS, then the knob columns, then the figure
    columns."""
    columns, figures = _columns(run), csv_figure_columns(run)
    return [_csv_row(run, r, columns, figures) for r in run.runs]


def csv_text(run: MatrixRun) -> str:
    """The tidy CSV as text."""
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=_columns(run))
    writer.writeheader()
    writer.writerows(csv_rows(run))
    return buf.getvalue()


def write_csv(run: MatrixRun, path: Path) -> None:
    """The tidy CSV."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write(csv_text(run))


def write_paired_csv(run: MatrixRun, path: Path) -> None:
    """The paired table as CSV: every arm over the baseline, then the headline pairs that
    are not among them."""
    rows = paired_ratios(run)
    seen = {(r.scenario, r.arm, r.baseline) for r in rows}
    rows += [r for r in headline_ratios(run) if (r.scenario, r.arm, r.baseline) not in seen]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=PAIRED_COLUMNS)
        writer.writeheader()
        for r in rows:
            row = dict(dataclasses.asdict(r), significant=r.significant)
            writer.writerow({k: "" if row[k] is None else row[k] for k in PAIRED_COLUMNS})
