"""A matrix run and a single run as text: the scenario tables, the overview, the
comparison (benchstat's table, the paired-by-round table, the verdicts) and one run's
summary."""
from __future__ import annotations

from typing import Dict, List, Optional

from ...benchstat import BenchstatError, render
from ..record.result import BenchResult
from ..results.model import MatrixRun
from ..results.summary import ArmSummary, summarize
from .gobench import go_bench_text, go_header
from .paired import format_paired, format_verdicts

__all__ = ["format_scenario_table", "format_summary", "comparison", "format_run_summary",
           "NOTE_FEW_ROUNDS"]

NOTE_FEW_ROUNDS = ("note: with fewer than 4 rounds per arm the Mann-Whitney U test cannot "
                   "reach p < 0.05, so every change prints as ~; use --rounds 6 or more "
                   "(benchstat recommends 10) for significance")


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

# -- CSV ----------------------------------------------------------------------------------

# -- JSON ---------------------------------------------------------------------------------

# -- comparison -------------------------------------------------------------------------------


def comparison(run: MatrixRun,
               units: str = ".unit:(sec/op OR p99-sec OR cpu-sec/op)") -> str:
    """benchstat's comparison of the baseline arm with each other arm (per scenario, with
    the significance marks), through triple_py.benchstat's Python API; then the same arms
    paired by round (:mod:`.paired`)."""
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
