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
                   comparison and the paired-by-round table (:mod:`triple_py.bench.results.paired`).
``paired.csv``     the paired table: every arm over the baseline and every headline pair,
                   per scenario (columns:
                   :data:`~triple_py.bench.results.paired.PAIRED_COLUMNS`: the ratios, the
                   Hodges-Lehmann estimate, its exact CI, p, the verdict).
``verdicts.txt``   the conclusion: each headline comparison per scenario, a significant
                   change with its CI, equivalent within ±5 %, or the rounds still needed.
``capacity.txt``   with a ``[capacity]`` table: each search's verdict and probes, and
                   ``capacity/<scenario>-<arm>.json`` and ``.png`` (:mod:`.capacity`).

ns/op is 1e9 / QPS: the wall time per completed call at the run's concurrency (like Go's
RunParallel benchmarks), so lower is better and benchstat's sec/op column reads as the
seeds' did. cpu-ns/op is the client's CPU time per call (benchstat: cpu-sec/op): when the
server is the bottleneck every arm reaches about the same QPS, and the client's cost is what
tells the arms apart.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict

from ..results.document import results_doc
from ..results.model import MatrixRun
from .capacity import write_capacities
from .gobench import go_bench_text
from .html import matrix_html
from .paired import format_verdicts
from .text import format_summary
from .tidy_csv import write_csv, write_paired_csv

__all__ = ["write_results", "write_reports", "summary_text", "REPORT_FILES"]

#: The files :func:`write_reports` makes from a run (besides ``benchstat/<arm>.txt`` and,
#: with capacity searches, ``capacity.txt`` and ``capacity/``).
REPORT_FILES = ("results.csv", "bench.txt", "summary.txt", "paired.csv", "verdicts.txt",
                "comparison.txt", "report.html")


def summary_text(run: MatrixRun) -> str:
    """``summary.txt``: the triple_py version that recorded the run (when known), then the
    summary tables."""
    head = f"triple_py {run.version}\n\n" if run.version else ""
    return head + format_summary(run) + "\n"


def write_results(run: MatrixRun, out_dir: Path, comparison_text: str = "") -> Dict[str, Path]:
    """Writes every output file into ``out_dir``: ``results.json`` and the reports
    (:func:`write_reports`); returns {kind: path}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "results.json"
    json_path.write_text(json.dumps(results_doc(run), separators=(",", ":"), default=str)
                         + "\n")
    return {"json": json_path, **write_reports(run, out_dir, comparison_text)}


def write_reports(run: MatrixRun, out_dir: Path, comparison_text: str = ""
                  ) -> Dict[str, Path]:
    """Writes the reports of a run (everything but ``results.json``) into ``out_dir``, the
    same whether the run was just made or read back from its document; returns
    {kind: path}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out_dir / "results.csv", "gobench": out_dir / "bench.txt",
             "summary": out_dir / "summary.txt"}
    write_csv(run, paths["csv"])
    paths["gobench"].write_text(go_bench_text(run))
    paths["summary"].write_text(summary_text(run))
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
    paths["html"] = out_dir / "report.html"
    paths["html"].write_text(matrix_html(run, format_summary(run)))
    return paths
