"""Outputs of a matrix (and of a single run): tables, JSON, CSV, Go benchmark format.

Files written into the results directory by :func:`write_results`:

``results.json``   benchstat's load-harness schema (``config`` + ``results``: one entry per
                   arm, scenario and round with ``name``, ``arm``, ``round``, ``iters``,
                   ``unit_values``), each entry also holding the whole BenchResult
                   (``result``: raw histograms, series, counters...); plus ``matrix``,
                   ``environment``, ``summary`` and ``failed`` (runs without figures).
                   ``python -m triple_py.benchstat -col arm results.json`` compares the arms.
``results.csv``    tidy: one row per arm, scenario and round (columns: CSV_COLUMNS).
``bench.txt``      Go benchmark format, every run (the header ends in a ``# triple_py
                   <version>`` line, which benchstat skips: not a configuration key, so
                   that the runs of two versions compare in one table):
                   ``BenchmarkUnary/128B/c50/fastpath-2  <calls>  <ns/op> ns/op  <qps> ops/s
                   <p50> p50-ns ...``.
``benchstat/<arm>.txt``  the same lines per arm without the arm in the name, so that
                   ``python -m triple_py.benchstat benchstat/stream-path.txt
                   benchstat/fastpath.txt`` compares two arms the way the seeds did.
``summary.txt``    the summary tables; ``comparison.txt``: the verdicts, then the benchstat
                   comparison and the paired-by-round table (:mod:`.paired`).
``paired.csv``     the paired table: every arm over the baseline and every headline pair,
                   per scenario (columns: :data:`.paired.PAIRED_COLUMNS`: the ratios, the
                   Hodges-Lehmann estimate, its exact CI, p, the verdict).
``verdicts.txt``   the conclusion: each headline comparison per scenario, a significant
                   change with its CI, equivalent within ±5 %, or the rounds still needed.
``capacity.txt``   with a ``[capacity]`` table: each search's verdict and probes, and
                   ``capacity/<scenario>-<arm>.json`` and ``.png`` (:mod:`.matrix_capacity`).

ns/op is 1e9 / QPS: the wall time per completed call at the run's concurrency (like Go's
RunParallel benchmarks), so lower is better and benchstat's sec/op column reads as the
seeds' did. cpu-ns/op is the client's CPU time per call (benchstat: cpu-sec/op): when the
server is the bottleneck every arm reaches about the same QPS, and the client's cost is what
tells the arms apart.
"""
from __future__ import annotations

import csv
import io
import dataclasses
import json
import math
import os
import platform
import statistics
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import __version__
from .harness import ArmRun, MatrixRun
from .matrix_capacity import capacity_docs, write_capacities
from .paired import PAIRED_COLUMNS, format_paired, format_verdicts, headline_ratios, \
    paired_ratios
from .result import BenchResult, client_cpu

__all__ = ["CSV_COLUMNS", "ArmSummary", "summarize", "format_scenario_table",
           "format_summary", "unit_values", "go_line", "go_bench_text", "go_header",
           "csv_rows", "write_csv", "write_paired_csv", "results_doc", "write_results", "comparison",
           "format_run_summary", "NOTE_FEW_ROUNDS"]

CSV_COLUMNS = [
    "matrix", "benchmark", "scenario", "arm", "kind", "is_baseline", "round", "position",
    "server", "payload", "concurrency", "connections", "stream_messages", "rate",
    "write_buffer_size", "duration_s", "warmup_s", "elapsed_s", "calls", "errors", "qps",
    "messages_per_s", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "p99_99_ms", "max_ms",
    "mean_ms", "p99_uncorrected_ms", "write_syscalls_per_call", "write_syscalls_per_message",
    "bytes_written_per_call", "allocations_per_call", "cpu_s", "cpu_cores", "cpu_us_per_call",
    "server_cpu_us_per_call", "status",
    "failed", "target", "triple_py"]

NOTE_FEW_ROUNDS = ("note: with fewer than 4 rounds per arm the Mann-Whitney U test cannot "
                   "reach p < 0.05, so every change prints as ~; use --rounds 6 or more "
                   "(benchstat recommends 10) for significance")


def _ms(ns: Optional[float]) -> Optional[float]:
    return None if ns is None else ns / 1e6


def _median(values: Sequence[Optional[float]]) -> Optional[float]:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


class ArmSummary(dict):
    """Per scenario and arm, over the rounds: qps median/min/max, p50/p99 medians (ms),
    errors, failures, ratio to the baseline's median QPS, write syscalls per call, and the
    medians of client and server CPU time per call (µs; None when not measured)."""


def summarize(run: MatrixRun) -> List[Tuple[str, Dict[str, ArmSummary]]]:
    """[(scenario label, {arm: ArmSummary})] in matrix order."""
    matrix = run.matrix
    out = []
    for scenario in matrix.scenarios:
        arms: Dict[str, ArmSummary] = {}
        for arm in matrix.arms:
            runs = run.runs_of(scenario, arm.name)
            results = [r.result for r in runs if r.result is not None]
            s = ArmSummary(arm=arm.name, kind=arm.mode, rounds=len(runs),
                           measured=len(results))
            qps = [r.qps for r in results]
            s["qps"] = _median(qps)
            s["qps_min"] = min(qps) if qps else None
            s["qps_max"] = max(qps) if qps else None
            s["messages_per_s"] = _median([r.messages_per_s or None for r in results])
            s["p50_ms"] = _median([_ms(r.p50) for r in results])
            s["mean_ms"] = _median([_ms(r.latency_corrected.mean) for r in results])
            s["p99_ms"] = _median([_ms(r.p99) for r in results])
            s["errors"] = sum(r.errors for r in results)
            s["calls"] = sum(r.calls for r in results)
            s["failed"] = sorted({r.failed for r in runs if r.failed})
            s["notes"] = sorted({n for r in results for n in r.notes})
            s["write_syscalls_per_call"] = _median([r.write_syscalls_per_call for r in results])
            s["write_syscalls_per_message"] = _median(
                [r.write_syscalls_per_message for r in results])
            s["cpu_us_per_call"] = _median([r.cpu_us_per_call for r in results])
            s["server_cpu_us_per_call"] = _median([r.server_cpu_us_per_call for r in results])
            s["ours"] = arm.ours
            arms[arm.name] = s
        base = arms[matrix.baseline]["qps"]
        for s in arms.values():
            s["vs_baseline"] = s["qps"] / base if s["qps"] is not None and base else None
        out.append((matrix.label(scenario), arms))
    return out


def _fmt(value: Optional[float], spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


def _qps_text(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def format_scenario_table(run: MatrixRun, label: str, arms: Dict[str, ArmSummary]) -> str:
    """The table of one scenario: arm, QPS median and range, p50/p99, errors, ratio...
    When the server's CPU time was measured (a server in a process of its own), two more
    columns: client and server CPU µs per call."""
    matrix = run.matrix
    streaming = matrix.streaming
    rate_head = "streams/s" if streaming else "QPS"
    writes_width = 10 if streaming else 11
    cpu_columns = any(s["server_cpu_us_per_call"] is not None for s in arms.values())
    lines = [f"== {matrix.benchmark} {label}: median of {matrix.rounds} rounds x "
             f"{matrix.duration:g} s (+{matrix.warmup:g} s warm-up), baseline "
             f"{matrix.baseline} =="]
    head = (f"{'arm':<16} {rate_head:>10} {'range':>19} "
            + (f"{'msgs/s':>11} " if streaming else "")
            + f"{'p50 ms':>8} {'p99 ms':>8} {'errors':>6} {'vs base':>8} "
            + (f"{'writes/msg':>10}" if streaming else f"{'writes/call':>11}")
            + (f" {'cli µs/call':>11} {'srv µs/call':>11}" if cpu_columns else "") + "  notes")
    lines += [head, "-" * len(head)]
    for name, s in arms.items():
        notes = list(s["failed"]) + [n for n in s["notes"] if "failed" not in n]
        if s["p50_ms"] is None and s["mean_ms"] is not None:
            notes.append(f"no percentiles: mean {s['mean_ms']:.3f} ms")
        if s["qps"] is None:
            lines.append(f"{name:<16} {'-':>10} {'-':>19} " + (f"{'-':>11} " if streaming else "")
                         + f"{'-':>8} {'-':>8} {'-':>6} {'-':>8} {'-':>{writes_width}}"
                         + (f" {'-':>11} {'-':>11}" if cpu_columns else "")
                         + "  " + "; ".join(notes))
            continue
        rng = f"{_qps_text(s['qps_min'])}..{_qps_text(s['qps_max'])}"
        ratio = "base" if name == matrix.baseline else _fmt(s["vs_baseline"], ".2f", "x")
        writes = (s["write_syscalls_per_message"] if streaming else s["write_syscalls_per_call"])
        cpu = (f" {_fmt(s['cpu_us_per_call'], '.2f'):>11}"
               f" {_fmt(s['server_cpu_us_per_call'], '.2f'):>11}" if cpu_columns else "")
        lines.append(
            f"{name:<16} {_qps_text(s['qps']):>10} {rng:>19} "
            + (f"{_qps_text(s['messages_per_s']):>11} " if streaming else "")
            + f"{_fmt(s['p50_ms'], '.3f'):>8} {_fmt(s['p99_ms'], '.3f'):>8} {s['errors']:>6} "
            f"{ratio:>8} {_fmt(writes, '.4f' if streaming else '.3f'):>{writes_width}}"
            + cpu + ("  " + "; ".join(notes) if notes else ""))
    return "\n".join(lines)


def format_summary(run: MatrixRun) -> str:
    """Every scenario's table, then one overview line per scenario (QPS ratio to baseline)."""
    summary = summarize(run)
    parts = [format_scenario_table(run, label, arms) for label, arms in summary]
    matrix = run.matrix
    others = [a.name for a in matrix.arms if a.name != matrix.baseline]
    head = f"{'scenario':<18} {matrix.baseline:>18} " + " ".join(
        f"{n[:12]:>12}" for n in others)
    what = "streams/s" if matrix.streaming else "QPS"
    rows = [f"== overview: median {what} of the baseline and each arm's ratio to it ==", head,
            "-" * len(head)]
    for label, arms in summary:
        rows.append(f"{label:<18} {_qps_text(arms[matrix.baseline]['qps']):>18} " + " ".join(
            f"{_fmt(arms[n]['vs_baseline'], '.2f', 'x'):>12}" for n in others))
    parts.append("\n".join(rows))
    return "\n\n".join(parts)


# -- Go benchmark format ------------------------------------------------------------------

def unit_values(result: BenchResult, ours: bool) -> Dict[str, float]:
    """The measurements of one run as benchmark units (ns/op, ops/s, p50-ns, ...)."""
    values: Dict[str, float] = {"ns/op": 1e9 / result.qps if result.qps else math.inf,
                                "ops/s": result.qps}
    if result.messages_per_s:
        values["msgs/s"] = result.messages_per_s
    for key, attr in (("p50-ns", "p50"), ("p90-ns", "p90"), ("p99-ns", "p99"),
                      ("p99.9-ns", "p99_9")):
        value = getattr(result, attr)
        if value is not None:
            values[key] = float(value)
    values["errors"] = float(result.errors)
    if result.cpu_us_per_call:
        values["cpu-ns/op"] = result.cpu_us_per_call * 1e3
    if result.server_cpu_us_per_call is not None:
        values["server-cpu-ns/op"] = result.server_cpu_us_per_call * 1e3
    if ours and result.per_call:
        if result.streams and result.write_syscalls_per_message is not None:
            values["writes/msg"] = result.write_syscalls_per_message
        values["writes/op"] = result.per_call.get("write_syscalls", 0.0)
        values["allocs/op"] = result.per_call.get("allocations", 0.0)
    return values


def _go_number(value: float) -> str:
    if value == math.inf:
        return "+Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}" if abs(value) < 1e-3 or abs(value) >= 1e6 else f"{value:.4f}".rstrip(
        "0").rstrip(".")


def go_name(run: MatrixRun, arm_run: ArmRun, with_arm: bool = True) -> str:
    """``BenchmarkUnary/128B/c50/fastpath-2`` (or without the arm)."""
    name = f"Benchmark{run.matrix.benchmark}/{arm_run.label}"
    if with_arm:
        name += f"/{arm_run.arm.name}"
    return f"{name}-{os.cpu_count() or 1}"


def go_line(name: str, result: BenchResult, ours: bool) -> str:
    """One benchmark result line."""
    fields = [name, str(max(1, result.calls))]
    for unit, value in unit_values(result, ours).items():
        fields += [_go_number(value), unit]
    return "\t".join([fields[0], fields[1], " ".join(fields[2:])])


def go_header(run: MatrixRun) -> str:
    """``goos: linux`` style configuration lines."""
    env = run.environment
    lines = [f"goos: {platform.system().lower()}", f"goarch: {_goarch()}",
             "pkg: triple_py/bench", f"cpu: {env.get('cpu_model') or 'unknown'}",
             f"matrix: {run.matrix.name}"]
    if env.get("commit"):
        lines.append(f"commit: {env['commit'][:12]}{'-dirty' if env.get('dirty') else ''}")
    lines.append(f"# triple_py {__version__}")
    return "\n".join(lines) + "\n"


def _goarch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "i686": "386"}.get(machine, machine)


def go_bench_text(run: MatrixRun, arm: Optional[str] = None) -> str:
    """Go benchmark text: every run (arm in the name), or one arm's runs (arm not in it)."""
    lines = []
    for arm_run in run.runs:
        if arm_run.result is None or (arm is not None and arm_run.arm.name != arm):
            continue
        lines.append(go_line(go_name(run, arm_run, with_arm=arm is None), arm_run.result,
                             arm_run.arm.ours))
    return go_header(run) + "\n".join(lines) + ("\n" if lines else "")


# -- CSV ----------------------------------------------------------------------------------

def _csv_row(run: MatrixRun, r: ArmRun) -> Dict[str, Any]:
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
        "failed": r.failed or "", "target": r.target, "triple_py": __version__}
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
    return {k: ("" if row.get(k) is None else row.get(k, "")) for k in CSV_COLUMNS}


def csv_rows(run: MatrixRun) -> List[Dict[str, Any]]:
    """One dict per arm run, keyed by CSV_COLUMNS."""
    return [_csv_row(run, r) for r in run.runs]


def csv_text(run: MatrixRun) -> str:
    """The tidy CSV as text."""
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(csv_rows(run))
    return buf.getvalue()


def write_csv(run: MatrixRun, path: Path) -> None:
    """The tidy CSV."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write(csv_text(run))


# -- JSON ---------------------------------------------------------------------------------

def results_doc(run: MatrixRun, histograms: bool = True) -> Dict[str, Any]:
    """The results JSON document (benchstat's harness schema plus everything else)."""
    env = run.environment
    config = {"goos": platform.system().lower(), "goarch": _goarch(),
              "pkg": "triple_py/bench", "cpu": env.get("cpu_model") or "unknown",
              "matrix": run.matrix.name}
    if env.get("commit"):
        config["commit"] = env["commit"][:12] + ("-dirty" if env.get("dirty") else "")
    results, failed = [], []
    for r in run.runs:
        entry = {"name": go_name(run, r, with_arm=False).rsplit("-", 1)[0]
                 .removeprefix("Benchmark"),
                 "arm": r.arm.name, "round": r.round, "position": r.position,
                 "scenario": dict(r.scenario.to_dict(), label=r.label), "kind": r.arm.mode,
                 "server": r.server_generation, "target": r.target}
        if r.result is None:
            failed.append(dict(entry, failed=r.failed))
            continue
        entry["iters"] = max(1, r.result.calls)
        entry["unit_values"] = {k: v for k, v in unit_values(r.result, r.arm.ours).items()
                                if math.isfinite(v)}
        entry["result"] = r.result.to_dict(histograms=histograms)
        results.append(entry)
    summary = [{"scenario": label, "arms": arms} for label, arms in summarize(run)]
    return {"config": config, "results": results, "failed": failed, "triple_py": __version__,
            "matrix": run.matrix.to_dict(), "environment": env,
            "load_average_after": run.load_after, "started": run.started,
            "finished": run.finished, "summary": summary,
            "capacities": capacity_docs(run.capacities)}


def write_results(run: MatrixRun, out_dir: Path, comparison_text: str = "") -> Dict[str, Path]:
    """Writes every output file into ``out_dir``; returns {kind: path}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "results.json", "csv": out_dir / "results.csv",
             "gobench": out_dir / "bench.txt", "summary": out_dir / "summary.txt"}
    paths["json"].write_text(json.dumps(results_doc(run), separators=(",", ":"), default=str)
                             + "\n")
    write_csv(run, paths["csv"])
    paths["gobench"].write_text(go_bench_text(run))
    paths["summary"].write_text(f"triple_py {__version__}\n\n" + format_summary(run) + "\n")
    per_arm = out_dir / "benchstat"
    per_arm.mkdir(exist_ok=True)
    for arm in run.matrix.arms:
        (per_arm / f"{arm.name}.txt").write_text(go_bench_text(run, arm.name))
    paths["benchstat"] = per_arm
    paths["paired"] = out_dir / "paired.csv"
    write_paired_csv(run, paths["paired"])
    verdicts = format_verdicts(run)
    if verdicts:
        paths["verdicts"] = out_dir / "verdicts.txt"
        paths["verdicts"].write_text(verdicts + "\n")
    if run.capacities:
        paths.update(write_capacities(run.capacities, out_dir))
    if comparison_text:
        paths["comparison"] = out_dir / "comparison.txt"
        paths["comparison"].write_text(comparison_text)
    from .html_report import matrix_html

    paths["html"] = out_dir / "report.html"
    paths["html"].write_text(matrix_html(run, format_summary(run)))
    return paths


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


# -- comparison -------------------------------------------------------------------------------

def comparison(run: MatrixRun,
               units: str = ".unit:(sec/op OR p99-sec OR cpu-sec/op)") -> str:
    """benchstat's comparison of the baseline arm with each other arm (per scenario, with
    the significance marks), through triple_py.benchstat's Python API; then the same arms
    paired by round (:mod:`.paired`)."""
    from ..benchstat import BenchstatError, render

    matrix = run.matrix
    base_text = go_bench_text(run, matrix.baseline)
    blocks = []
    if not any(r.result for r in run.runs if r.arm.name == matrix.baseline):
        return f"== no results for the baseline arm {matrix.baseline}: nothing to compare ==\n"
    rounds = min((len([r for r in run.runs_of(s, a.name) if r.result]) for s in matrix.scenarios
                  for a in matrix.arms), default=0)
    for arm in matrix.arms:
        if arm.name == matrix.baseline:
            continue
        text = go_bench_text(run, arm.name)
        if text.count("\n") <= go_header(run).count("\n"):
            blocks.append(f"== {matrix.baseline} vs {arm.name}: no results for {arm.name} ==")
            continue
        warnings: List[str] = []
        arm_units = units if " p99-ns" in text else ".unit:(sec/op OR cpu-sec/op)"  # h2load
        try:
            rendered = render([(matrix.baseline, base_text), (arm.name, text)],
                              filter=arm_units, on_warning=warnings.append)
        except BenchstatError as exc:
            rendered = f"benchstat: {exc}"
        blocks.append(f"== benchstat: {matrix.baseline} (base) vs {arm.name} ==\n"
                      + _strip_config(rendered).rstrip())
    paired = format_paired(run)
    if paired:
        blocks.append(paired)
    if rounds and rounds < 4:
        blocks.append(NOTE_FEW_ROUNDS)
    verdicts = format_verdicts(run)
    if verdicts:  # the conclusion first, the evidence after it
        blocks.insert(0, verdicts)
    return go_header(run) + "\n" + "\n\n".join(blocks) + "\n"


def _strip_config(text: str) -> str:
    """benchstat's output without its leading ``key: value`` configuration lines."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) and lines[i] and not lines[i][0].isspace():
        i += 1
    return "\n".join(lines[i:])


# -- a single run (python -m triple_py.bench run) ---------------------------------------------

def _dur(ns: Optional[float]) -> str:
    if ns is None:
        return "-"
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} µs"


def _linear_histogram(result: BenchResult, marks: int = 10) -> List[str]:
    """ghz's response time histogram: marks linear buckets from fastest to slowest."""
    pairs = result.histogram_corrected or result.histogram
    if not pairs:
        return []
    lo, hi = pairs[0][0], pairs[-1][0]
    width = (hi - lo) / marks if hi > lo else 1
    counts = [0] * (marks + 1)
    for value, n in pairs:
        counts[min(marks, int((value - lo) / width))] += n
    top = max(counts) or 1
    lines = []
    for i, n in enumerate(counts):
        bar = "∎" * round(40 * n / top)
        lines.append(f"  {(lo + i * width) / 1e6:10.3f} [{n}]\t|{bar}")
    return lines


def format_run_summary(result: BenchResult) -> str:
    """ghz-style summary of one run."""
    lat, unc = result.latency_corrected, result.latency
    unit = "streams" if result.streams or result.stream_messages > 1 else "calls"
    lines = ["", "Summary:",
             f"  Mode:         {result.mode} ({result.arm}) on {result.target} {result.method}",
             f"  Load:         {result.concurrency} in flight on {result.connections} "
             f"connection(s), {result.payload_size} B payload"
             + (f", {result.stream_messages} messages per stream"
                if result.stream_messages > 1 else "")
             + (f", open loop at {result.rate:g}/s" if result.rate else ", closed loop"),
             f"  Count:        {result.calls} {unit}",
             f"  Total:        {result.elapsed_s:.2f} s (after {result.warmup_s:g} s warm-up)",
             f"  Slowest:      {_dur(lat.max)}",
             f"  Fastest:      {_dur(lat.min)}",
             f"  Average:      {_dur(lat.mean)}",
             (f"  Streams/sec:  {result.qps:,.2f}" if unit == "streams" else
              f"  Requests/sec: {result.qps:,.2f}")]
    if result.messages_per_s:
        lines.append(f"  Messages/sec: {result.messages_per_s:,.0f}")
    if result.rate:
        lines.append("")
        lines.append("Latency distribution (from the intended send | from the actual send):")
        for key, attr in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p99_9"),
                          ("p99.99", "p99_99"), ("max", "max")):
            lines.append(f"  {key:<7} {_dur(getattr(lat, attr)):>10} | "
                         f"{_dur(getattr(unc, attr)):>10}")
    else:
        lines += ["", "Latency distribution:"]
        for key, attr in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p99_9"),
                          ("p99.99", "p99_99"), ("max", "max")):
            lines.append(f"  {key:<7} {_dur(getattr(lat, attr)):>10}")
    hist = _linear_histogram(result)
    if hist:
        lines += ["", "Response time histogram (ms):"] + hist
    lines += ["", "Status code distribution:"]
    for code, n in sorted(result.status_codes.items(), key=lambda kv: -kv[1]):
        lines.append(f"  [{code}]   {n} responses")
    if not result.status_codes:
        lines.append("  (none)")
    if result.cpu:
        lines += ["", "Client:"]
        if "process_cores" in result.cpu:
            lines.append(f"  CPU:          {result.cpu['process_cores']:.2f} cores (whole "
                         f"process), {result.cpu.get('process_us_per_call', 0):.1f} µs/call")
        if "h2load_cores" in result.cpu:
            lines.append(f"  CPU:          {result.cpu['h2load_cores']:.2f} cores (h2load)")
        if result.per_call:
            pc = result.per_call
            lines.append(f"  Per call:     {pc.get('write_syscalls', 0):.3f} write syscalls, "
                         f"{pc.get('bytes_written', 0):,.0f} B written, "
                         f"{pc.get('allocations', 0):.3f} allocations")
        if result.write_syscalls_per_message is not None:
            lines.append(f"  Per message:  {result.write_syscalls_per_message:.4f} write "
                         f"syscalls")
    for note in result.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines) + "\n"
