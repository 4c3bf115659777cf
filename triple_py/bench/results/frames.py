"""The harness's results as tidy pandas DataFrames, for notebooks and your own analysis.

::

    from triple_py.bench import load_results
    res = load_results("results/seed-unary-20261130-120000")   # or .../results.json
    res.runs           # one row per arm, scenario and round: qps, p50_ms..p99_99_ms, errors...
    res.histograms     # long: arm, scenario, round, value_ns, count (the raw histograms)
    res.timeseries     # per second of every run: calls, errors, qps, p99_ms
    res.environment    # versions, CPU, commit... of the machine that ran it
    res.aggregate("qps")                      # per scenario and arm: n, mean, 95% CI, median...
    res.latency_distribution()                # ECDF / HDR percentile spectrum, rounds merged
    res.benchstat()                           # triple_py.benchstat's comparison, as a DataFrame

``path`` is what ``python -m triple_py.bench matrix`` writes (a results directory holding
``results.json``) or a JSON file of the same schema (also ``python -m triple_py.bench run
--json``). The frames keep the matrix's order: ``res.scenarios`` and ``res.arms`` list the
scenario labels and arm names as the matrix gave them (sort by ``scenario_index`` and
``arm_index``). Latencies in ``runs`` are milliseconds from the intended send (corrected
for coordinated omission in an open loop; the same as from the actual send in a closed
loop); the histograms keep nanoseconds. Nothing here needs a plotting library; see
:mod:`triple_py.bench.plots` for the figures of the notebooks in ``notebooks/``.
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ... import benchstat
from ..record.html_tables import results_html
from ..record.load_figures import figure_columns, figure_type
from ..record.result import client_cpu
from ..spec.kinds import kind_of
from ..spec.knobs import knob_columns
from .document import results_doc
from .model import MatrixRun
from .paired import PAIRED_COLUMNS, compare_rounds
from .reader import find_document, read_results, run_from_document
from .statistics import conclusions, higher_is_better, interval, significant_changes
from .views import Comparison, PairedTable

__all__ = ["Results", "load_results", "results_from_document", "results_from_run", "RUN_COLUMNS",
           "SUCCESS_CODES", "percentile_spectrum",
           "interval", "higher_is_better", "significant_changes", "conclusions"]

#: Columns of :attr:`Results.runs`, in order.
RUN_COLUMNS = [
    "matrix", "benchmark", "name", "scenario", "scenario_index", "arm", "arm_index", "mode",
    "is_baseline", "ours", "round", "position", "order", "server", "target", "method", "wire",
    "payload", "concurrency", "connections", "stream_messages", "rate", "write_buffer_size",
    "duration_s", "warmup_s", "elapsed_s", "calls", "ok_calls", "errors", "error_rate", "qps",
    "streams", "messages_sent", "messages_received", "messages_per_s",
    "min_ms", "mean_ms", "stdev_ms", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "p99_99_ms",
    "max_ms", "p99_uncorrected_ms",
    "write_syscalls_per_call", "write_syscalls_per_message", "bytes_written_per_call",
    "read_syscalls_per_call", "allocations_per_call", "pool_misses_per_call",
    "wakeups_per_call", "cpu_s", "cpu_user_s", "cpu_sys_s", "cpu_cores", "cpu_us_per_call",
    "server_cpu_us_per_call", "status_codes", "first_error", "notes", "failed"]

_FLOAT_COLUMNS = [
    "rate", "duration_s", "warmup_s", "elapsed_s", "error_rate", "qps", "messages_per_s",
    "min_ms", "mean_ms", "stdev_ms", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "p99_99_ms",
    "max_ms", "p99_uncorrected_ms", "write_syscalls_per_call", "write_syscalls_per_message",
    "bytes_written_per_call", "read_syscalls_per_call", "allocations_per_call",
    "pool_misses_per_call", "wakeups_per_call", "cpu_s", "cpu_user_s", "cpu_sys_s",
    "cpu_cores", "cpu_us_per_call", "server_cpu_us_per_call"]
_INT_COLUMNS = ["scenario_index", "arm_index", "round", "position", "order", "server",
                "payload", "concurrency", "connections", "stream_messages", "calls",
                "ok_calls", "errors", "streams", "messages_sent", "messages_received"]

#: Status names that mean success: gRPC's OK, and h2load's HTTP 2xx (it does not read
#: grpc-status).
SUCCESS_CODES = frozenset({"OK", "HTTP_2xx"})

#: Columns of :attr:`Results.histograms` and :attr:`Results.timeseries`.
HISTOGRAM_COLUMNS = ["scenario", "arm", "round", "value_ns", "count"]
TIMESERIES_COLUMNS = ["scenario", "arm", "round", "order", "second", "width_s", "calls",
                      "errors", "qps", "p99_ms"]

PathLike = Union[str, "Path"]


def _ms(ns: Any) -> Optional[float]:
    return None if ns is None else float(ns) / 1e6


@dataclasses.dataclass
class Results:
    """One harness output, loaded (see :func:`load_results`).

    ``runs``: one row per arm, scenario and round (columns :data:`RUN_COLUMNS`, then one
    per knob the runs were given: ``channel.NAME``, load keywords, then one per figure of
    the C load generator's table the results have in ``extra``
    (:func:`~..record.load_figures.figure_columns`); runs that
    raised have ``failed`` set and no figures). ``histograms``: the latency histogram of
    every run in long format (``scenario, arm, round, value_ns, count``; the corrected one,
    i.e. the one the percentiles in ``runs`` come from). ``timeseries``: per second of each
    run's measured window (``second`` 0, 1, ...; ``width_s`` is 1 except for a last,
    partial bucket; ``qps = calls / width_s``). ``environment``: the machine, versions and
    commit. ``matrix``: the matrix as run (arms, scenarios, rounds, durations...);
    ``config``: benchstat's configuration lines. ``document``: the raw JSON.
    """

    path: Path
    runs: Any  # pandas.DataFrame
    histograms: Any
    timeseries: Any
    environment: Dict[str, Any]
    matrix: Dict[str, Any]
    config: Dict[str, Any]
    scenarios: List[str]
    arms: List[str]
    baseline: str
    document: Dict[str, Any] = dataclasses.field(repr=False, default_factory=dict)

    # -- shape ------------------------------------------------------------------------------
    @property
    def directory(self) -> Path:
        """The results directory (where the JSON is): the default place for figures."""
        return self.path.parent

    @property
    def measured(self):
        """``runs`` without the failed runs."""
        return self.runs[self.runs["failed"].isna()]

    @property
    def streaming(self) -> bool:
        """True when any run streamed (bidi arms: ``streams`` > 0 or K > 1)."""
        r = self.runs
        return bool(len(r)) and bool(((r["streams"] > 0) | (r["stream_messages"] > 1)).any())

    @property
    def rounds(self) -> int:
        """The rounds the matrix asked for."""
        return int(self.matrix.get("rounds") or (self.runs["round"].max() if len(self.runs)
                                                  else 0))

    def histogram_frame(self, corrected: bool = True):
        """The histograms as in :attr:`histograms`; ``corrected=False``: from the actual
        send instead of the intended one (differs only in an open loop)."""
        if corrected:
            return self.histograms
        return _histogram_frame(self.document, "histogram")

    # -- checks -----------------------------------------------------------------------------
    def validate(self, min_rounds: int = 3, max_error_rate: float = 0.0) -> List[str]:
        """Problems that make a comparison unreliable (empty: none): failed runs, fewer than
        ``min_rounds`` measured rounds of an arm in a scenario, error rates above
        ``max_error_rate``."""
        problems = []
        for _, row in self.runs[self.runs["failed"].notna()].iterrows():
            problems.append(f"{row['scenario']} {row['arm']} round {row['round']}: failed: "
                            f"{row['failed']}")
        m = self.measured
        counts = m.groupby(["scenario", "arm"]).size()
        for scenario in self.scenarios:
            for arm in self.arms:
                n = int(counts.get((scenario, arm), 0))
                if n < min_rounds:
                    problems.append(f"{scenario} {arm}: {n} measured round(s), fewer than "
                                    f"{min_rounds}")
        for _, row in m[m["error_rate"] > max_error_rate].iterrows():
            problems.append(f"{row['scenario']} {row['arm']} round {row['round']}: "
                            f"{row['errors']} errors in {row['calls']} calls "
                            f"({row['first_error'] or 'errors'})")
        return problems

    # -- statistics -------------------------------------------------------------------------
    def aggregate(self, value: str = "qps", by: Sequence[str] = ("scenario", "arm"),
                  confidence: float = 0.95):
        """Per group (default: scenario and arm, in matrix order), over the measured rounds
        of ``value``: ``n, mean, median, std, lo, hi, min, max``. ``lo``/``hi`` are the
        ``confidence`` Student-t interval of the mean (NaN with fewer than 2 rounds). The
        scenario axes (payload, concurrency, stream_messages...) come along when grouping
        by scenario."""
        import pandas as pd

        by = list(by)
        m = self.measured.dropna(subset=[value])
        rows = []
        for key, group in m.groupby(by[0] if len(by) == 1 else by, sort=False):
            key = key if isinstance(key, tuple) else (key,)
            values = group[value].astype(float).tolist()
            mean, lo, hi = interval(values, confidence)
            row = dict(zip(by, key))
            row.update(n=len(values), mean=mean, median=float(pd.Series(values).median()),
                       std=float(pd.Series(values).std()) if len(values) > 1 else math.nan,
                       lo=lo, hi=hi, min=min(values), max=max(values))
            first = group.iloc[0]
            extra = []
            if "scenario" in by:
                extra += ["scenario_index", "payload", "concurrency", "connections",
                          "stream_messages", "rate"]
            if "arm" in by:
                extra += ["arm_index", "mode", "is_baseline"]
            for column in extra:
                row.setdefault(column, first[column])
            rows.append(row)
        out = pd.DataFrame(rows)
        order = [c for c in ("scenario_index", "arm_index") if c in out.columns]
        if order and len(out):
            out = out.sort_values(order, kind="stable").reset_index(drop=True)
        return out

    def latency_distribution(self, by: Sequence[str] = ("scenario", "arm"),
                             corrected: bool = True):
        """The latency distribution per group with the rounds merged, for ECDF and HDR
        percentile-spectrum plots: one row per distinct value with ``value_ns``,
        ``value_ms``, ``count``, ``cumulative`` (fraction of calls at or below the value),
        ``percentile`` (100 x the fraction below and at, like HdrHistogram's output) and
        ``inverse_tail`` = 1 / (1 - fraction) (the spectrum's x axis: 10 = p90, 100 = p99...;
        the last value, at fraction 1, gets 1 / (1/N) = N, the resolution of the data)."""
        import pandas as pd

        hist = self.histogram_frame(corrected)
        by = list(by)
        if hist.empty:
            return pd.DataFrame(columns=by + ["value_ns", "value_ms", "count", "cumulative",
                                              "percentile", "inverse_tail", "total"])
        merged = hist.groupby(by + ["value_ns"], sort=False, as_index=False)["count"].sum()
        frames = []
        for _, group in merged.groupby(by[0] if len(by) == 1 else by, sort=False):
            frames.append(percentile_spectrum(group.sort_values("value_ns")))
        out = pd.concat(frames, ignore_index=True)
        keys = [k for k in ("scenario", "arm") if k in by]
        if keys:
            rank_s = {s: i for i, s in enumerate(self.scenarios)}
            rank_a = {a: i for i, a in enumerate(self.arms)}
            sort_cols = []
            if "scenario" in keys:
                out["_s"] = out["scenario"].map(rank_s)
                sort_cols.append("_s")
            if "arm" in keys:
                out["_a"] = out["arm"].map(rank_a)
                sort_cols.append("_a")
            out = out.sort_values(sort_cols + ["value_ns"], kind="stable").drop(
                columns=sort_cols).reset_index(drop=True)
        return out

    def benchstat(self, units: Sequence[str] = ("sec/op", "p99-sec"),
                  arms: Optional[Sequence[str]] = None, baseline: Optional[str] = None,
                  alpha: float = 0.05, confidence: float = 0.95, warnings: Optional[list] = None):
        """triple_py.benchstat's comparison of ``baseline`` (default: the matrix's) with
        the other arms (default: every arm with results), over the rounds, as the
        DataFrame of :func:`triple_py.benchstat.tables_to_frame` (one row per cell:
        ``unit, row`` (the benchmark name), ``col`` (the arm), ``center, ci, delta_pct,
        delta, p, significant``...). ``units`` are benchstat units (``ns/op`` reads as
        ``sec/op``, ``p99-ns`` as ``p99-sec``; the harness writes ``ops/s``, ``msgs/s``,
        ``p50-ns``..``p99.9-ns``, ``errors``, ``writes/op``, ``writes/msg``, ``allocs/op``).
        Input warnings go to the ``warnings`` list when given."""
        inputs, options = self._benchstat_args(units, arms, baseline, warnings)
        return benchstat.compare(inputs, alpha=alpha, confidence=confidence, **options)

    def paired(self, value: str = "qps", baseline: Optional[str] = None):
        """Each arm against ``baseline`` (default: the matrix's), paired by round: per
        scenario and arm, the median, geometric mean, min and max of the per-round ratios
        ``value / baseline's value in the same round`` and the exact Wilcoxon signed-rank
        p-value of their logs (see :mod:`triple_py.bench.paired`; the matrix prints the
        same table for QPS), the Hodges-Lehmann estimate of the ratio with its exact 95 %
        interval (``estimate, ci_low, ci_high``, and the interval's real ``confidence``) and
        the verdict (``higher``, ``lower``, ``equivalent`` within ±5 %, or ``inconclusive``
        with ``more_rounds`` still needed). Columns: :data:`triple_py.bench.paired.
        PAIRED_COLUMNS`."""
        import pandas as pd


        rows = self._paired_rows(value, baseline)
        return pd.DataFrame([dict(dataclasses.asdict(r), significant=r.significant)
                             for r in rows], columns=PAIRED_COLUMNS)

    def paired_table(self, value: str = "qps", baseline: Optional[str] = None):
        """The same comparison as :meth:`paired`, as a
        :class:`~triple_py.bench.views.PairedTable`: an HTML table in Jupyter with the
        significant rows marked (better / worse), text with ``print()``."""
        return PairedTable(self._paired_rows(value, baseline), baseline or self.baseline,
                           value)

    def _paired_rows(self, value: str, baseline: Optional[str]) -> list:
        m = self.measured.dropna(subset=[value])
        values = {(row.scenario, row.arm, int(row.round)): float(getattr(row, value))
                  for row in m.itertuples()}
        return compare_rounds(values, baseline or self.baseline, self.scenarios, self.arms)

    def comparison(self, units: Sequence[str] = ("sec/op", "p99-sec"),
                   arms: Optional[Sequence[str]] = None, baseline: Optional[str] = None,
                   alpha: float = 0.05, confidence: float = 0.95):
        """benchstat's comparison (:meth:`benchstat` and :meth:`benchstat_text` in one) as
        a :class:`~triple_py.bench.views.Comparison`: an HTML table per unit in Jupyter,
        each change marked better, worse or ``~``; benchstat's text with ``print()``."""
        frame = self.benchstat(units, arms, baseline, alpha, confidence)
        text = self.benchstat_text(units, arms, baseline, alpha, confidence)
        return Comparison(frame, text, baseline or self.baseline)

    def __repr__(self) -> str:
        return (f"<Results {self.path}: {len(self.scenarios)} scenarios x {len(self.arms)} "
                f"arms, {len(self.runs)} runs ({len(self.measured)} measured), baseline "
                f"{self.baseline}>")

    def _repr_html_(self) -> str:
        """Jupyter's view: where and what, then per scenario and arm the median figures."""
        return results_html(self)

    def benchstat_text(self, units: Sequence[str] = ("sec/op", "p99-sec"),
                       arms: Optional[Sequence[str]] = None, baseline: Optional[str] = None,
                       alpha: float = 0.05, confidence: float = 0.95,
                       warnings: Optional[list] = None) -> str:
        """The same comparison as :meth:`benchstat`, as benchstat prints it."""
        inputs, options = self._benchstat_args(units, arms, baseline, warnings)
        return benchstat.render(inputs, alpha=alpha, confidence=confidence, **options)

    def _benchstat_args(self, units: Sequence[str], arms: Optional[Sequence[str]],
                        baseline: Optional[str], warnings: Optional[list]):
        base = baseline or self.baseline
        have = set(self.measured["arm"])
        if base not in have:
            raise ValueError(f"no results for the baseline arm {base!r}")
        others = [a for a in (arms or self.arms) if a != base and a in have]
        col = "arm@(" + " ".join([base] + others) + ")"
        unit_filter = ".unit:(" + " OR ".join(units) + ")" if units else "*"
        doc = {"config": self.config, "results": self.document.get("results", [])}
        sink = warnings.append if warnings is not None else (lambda message: None)
        return ([(self.path.name, json.dumps(doc))],
                {"col": col, "filter": unit_filter, "on_warning": sink})


def percentile_spectrum(hist):
    """For one histogram (a frame with ``value_ns`` ascending and ``count``): the same rows
    plus ``value_ms``, ``total``, ``cumulative``, ``percentile`` and ``inverse_tail``
    (see :meth:`Results.latency_distribution`)."""
    out = hist.copy()
    total = float(out["count"].sum())
    out["value_ms"] = out["value_ns"] / 1e6
    out["total"] = total
    cum = out["count"].cumsum() / total if total else out["count"] * 0.0
    out["cumulative"] = cum
    out["percentile"] = cum * 100.0
    tail = (1.0 - cum).clip(lower=1.0 / total if total else 1.0)
    out["inverse_tail"] = 1.0 / tail
    return out


# -- loading ----------------------------------------------------------------------------------


def load_results(path: PathLike, baseline: Optional[str] = None) -> Results:
    """Loads a harness output: a results directory (``results/<matrix>-<timestamp>/``) or
    a JSON file of its schema (``results.json``, or ``python -m triple_py.bench run --json
    OUT``), of any document version this release reads (:mod:`.reader`). ``baseline``
    replaces the matrix's baseline arm (``is_baseline``, :meth:`Results.benchstat`).
    Returns :class:`Results`; raises FileNotFoundError, or ValueError for a JSON document
    that is not the harness's (e.g. pytest-benchmark's), of an unknown version, or a
    baseline that is not one of its arms."""
    json_path = find_document(path)
    return results_from_run(read_results(json_path), baseline, json_path)


def results_from_document(doc: Any, json_path: Path, baseline: Optional[str] = None
                          ) -> Results:
    """:func:`load_results` of a document already in memory; ``json_path`` names it in
    messages and is :attr:`Results.path`."""
    return results_from_run(run_from_document(doc, str(json_path)), baseline, Path(json_path))


def results_from_run(run: MatrixRun, baseline: Optional[str] = None,
                     path: Optional[Path] = None) -> Results:
    """A matrix run (just made, or read back by :func:`~.reader.read_results`) as Results:
    the frames of its records, in the form the results document gives them
    (:func:`~.document.results_doc`). ``path`` is :attr:`Results.path` (default:
    ``<matrix>.json``)."""
    return _frames(results_doc(run), path or Path(f"{run.matrix.name}.json"), baseline)


def _frames(doc: Mapping[str, Any], json_path: Path, baseline: Optional[str]) -> Results:
    import pandas as pd

    matrix = dict(doc.get("matrix") or {})
    arms = [a["name"] for a in matrix.get("arms", []) if isinstance(a, dict) and "name" in a]
    scenarios = [s["label"] for s in matrix.get("scenarios", []) if isinstance(s, dict)
                 and "label" in s]
    entries = list(doc["results"]) + [dict(e, _failed=True) for e in doc.get("failed") or []]
    for e in entries:  # entries of arms or scenarios the matrix does not list: appended
        if e.get("arm") not in arms and e.get("arm") is not None:
            arms.append(e["arm"])
        label = (e.get("scenario") or {}).get("label") or e.get("name")
        if label not in scenarios:
            scenarios.append(label)
    if baseline is not None and baseline not in arms:
        raise ValueError(f"baseline {baseline!r} is not an arm of {json_path} (arms: "
                         f"{', '.join(arms)})")
    baseline = baseline or matrix.get("baseline") or (arms[0] if arms else "")
    rows = [_run_row(e, matrix, doc.get("config") or {}, scenarios, arms, baseline)
            for e in entries]
    knobs = knob_columns((e.get("knobs") or {} for e in entries), RUN_COLUMNS)
    figures = figure_columns((_extra(e) for e in entries), RUN_COLUMNS + knobs)
    for row, e in zip(rows, entries):
        row.update({name: _extra(e).get(name) for name in figures})
    runs = pd.DataFrame.from_records(rows, columns=RUN_COLUMNS + knobs + figures)
    for c in figures:
        runs[c] = pd.to_numeric(runs[c], errors="coerce").astype(
            "Int64" if figure_type(c) in ("count", "int") else float)
    for c in _FLOAT_COLUMNS:
        runs[c] = pd.to_numeric(runs[c], errors="coerce").astype(float)
    for c in _INT_COLUMNS:
        runs[c] = pd.to_numeric(runs[c], errors="coerce").astype("Int64")
    runs = runs.sort_values(["scenario_index", "round", "position", "arm_index"],
                            kind="stable").reset_index(drop=True)
    runs["order"] = pd.array(range(len(runs)), dtype="Int64")
    runs["failed"] = runs["failed"].where(runs["failed"].notna(), None)
    order = {(s, a, r): o for s, a, r, o in zip(runs["scenario"], runs["arm"], runs["round"],
                                               runs["order"])}
    return Results(path=json_path, runs=runs, histograms=_histogram_frame(doc),
                   timeseries=_timeseries_frame(doc, order), environment=dict(
                       doc.get("environment") or {}), matrix=matrix,
                   config=dict(doc.get("config") or {}), scenarios=scenarios, arms=arms,
                   baseline=baseline, document=doc)


def _extra(e: Mapping[str, Any]) -> Mapping[str, Any]:
    return (e.get("result") or {}).get("extra") or {}


def _kind_ours(mode: Optional[str]) -> Optional[bool]:
    try:
        return kind_of(mode).ours
    except Exception:
        return None


def _run_row(e: Mapping[str, Any], matrix: Mapping[str, Any], config: Mapping[str, Any],
             scenarios: List[str], arms: List[str], baseline: str) -> Dict[str, Any]:
    sc = dict(e.get("scenario") or {})
    label = sc.get("label") or e.get("name")
    res = e.get("result") or {}
    arm = e.get("arm")
    mode = e.get("kind") or res.get("mode")
    row: Dict[str, Any] = {
        "matrix": matrix.get("name") or config.get("matrix"), "benchmark": matrix.get(
            "benchmark"), "name": e.get("name"), "scenario": label,
        "scenario_index": scenarios.index(label), "arm": arm, "arm_index": arms.index(arm),
        "mode": mode, "is_baseline": arm == baseline, "ours": _kind_ours(mode),
        "round": e.get("round"), "position": e.get("position"), "server": e.get("server"),
        "target": e.get("target"), "payload": sc.get("payload", res.get("payload_size")),
        "concurrency": sc.get("concurrency", res.get("concurrency")),
        "connections": sc.get("connections", res.get("connections", 1)),
        "stream_messages": sc.get("stream_messages", res.get("stream_messages", 1)),
        "rate": sc.get("rate") or res.get("rate") or 0.0,
        "write_buffer_size": res.get("write_buffer_size", sc.get("write_buffer_size")),
        "duration_s": res.get("duration_s", matrix.get("duration")),
        "warmup_s": res.get("warmup_s", matrix.get("warmup")),
        "failed": e.get("failed") if e.get("_failed") or e.get("failed") else None,
        **dict(e.get("knobs") or {})}  # channel options and load keywords it was given
    if not res:
        row["status_codes"] = {}
        return row
    lat = res.get("latency_corrected_ns") or {}
    unc = res.get("latency_ns") or {}
    calls = int(res.get("calls") or 0)
    errors = int(res.get("errors") or 0)
    per_call = res.get("per_call") or {}
    cpu = res.get("cpu") or {}
    codes = dict(res.get("status_codes") or {})
    bad = {k: v for k, v in codes.items() if k not in SUCCESS_CODES and v}
    row.update({
        "method": res.get("method"), "wire": res.get("wire"),
        "elapsed_s": res.get("elapsed_s"), "calls": calls, "ok_calls": calls - errors,
        "errors": errors, "error_rate": errors / calls if calls else 0.0,
        "qps": res.get("qps"), "streams": res.get("streams", 0),
        "messages_sent": res.get("messages_sent", 0),
        "messages_received": res.get("messages_received", 0),
        "messages_per_s": res.get("messages_per_s") or None,
        "min_ms": _ms(lat.get("min")), "mean_ms": _ms(lat.get("mean")),
        "stdev_ms": _ms(lat.get("stdev")), "p50_ms": _ms(lat.get("p50")),
        "p90_ms": _ms(lat.get("p90")), "p99_ms": _ms(lat.get("p99")),
        "p99_9_ms": _ms(lat.get("p99.9")), "p99_99_ms": _ms(lat.get("p99.99")),
        "max_ms": _ms(lat.get("max")), "p99_uncorrected_ms": _ms(unc.get("p99")),
        "write_syscalls_per_call": res.get("write_syscalls_per_call",
                                           per_call.get("write_syscalls")),
        "write_syscalls_per_message": res.get("write_syscalls_per_message"),
        "bytes_written_per_call": per_call.get("bytes_written"),
        "read_syscalls_per_call": per_call.get("read_syscalls"),
        "allocations_per_call": per_call.get("allocations"),
        "pool_misses_per_call": per_call.get("pool_misses"),
        "wakeups_per_call": per_call.get("wakeups"),
        "cpu_s": client_cpu(cpu, "s"),
        "cpu_user_s": cpu.get("process_user_s"), "cpu_sys_s": cpu.get("process_sys_s"),
        "cpu_cores": client_cpu(cpu, "cores"),
        "cpu_us_per_call": client_cpu(cpu, "us_per_call"),
        "server_cpu_us_per_call": cpu.get("server_us_per_call"),
        "status_codes": codes, "first_error": max(bad, key=bad.get) if bad else None,
        "notes": "; ".join(res.get("notes") or []) or None})
    return row


def _entry_key(e: Mapping[str, Any]) -> Tuple[str, str, int]:
    sc = e.get("scenario") or {}
    return sc.get("label") or e.get("name"), e.get("arm"), e.get("round")


def _histogram_frame(doc: Mapping[str, Any], key: str = "histogram_corrected"):
    """Long frame of every run's histogram (falling back on the uncorrected one)."""
    import numpy as np
    import pandas as pd

    parts = []
    for e in doc.get("results", []):
        res = e.get("result") or {}
        pairs = res.get(key) or res.get("histogram") or []
        if not pairs:
            continue
        arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        scenario, arm, rnd = _entry_key(e)
        parts.append(pd.DataFrame({"scenario": scenario, "arm": arm, "round": rnd,
                                   "value_ns": arr[:, 0], "count": arr[:, 1]}))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c in ("round", "value_ns", "count")
                                          else "object") for c in HISTOGRAM_COLUMNS})
    return pd.concat(parts, ignore_index=True)[HISTOGRAM_COLUMNS]


def _timeseries_frame(doc: Mapping[str, Any], order: Mapping[Tuple[str, str, int], int]):
    import pandas as pd

    rows = []
    for e in doc.get("results", []):
        res = e.get("result") or {}
        series = res.get("series") or {}
        calls = list(series.get("calls") or [])
        if not calls:
            continue
        errors = list(series.get("errors") or [0] * len(calls))
        p99 = list(series.get("p99_ns") or [None] * len(calls))
        elapsed = float(res.get("elapsed_s") or len(calls))
        scenario, arm, rnd = _entry_key(e)
        n = len(calls)
        for i, c in enumerate(calls):
            width = 1.0 if i < n - 1 else max(elapsed - (n - 1), 1e-3)
            p = p99[i] if i < len(p99) else None
            rows.append({"scenario": scenario, "arm": arm, "round": rnd,
                         "order": order.get((scenario, arm, rnd)), "second": i,
                         "width_s": width, "calls": int(c),
                         "errors": int(errors[i]) if i < len(errors) else 0,
                         "qps": c / width, "p99_ms": _ms(p) if p else None})
    frame = pd.DataFrame.from_records(rows, columns=TIMESERIES_COLUMNS)
    frame["p99_ms"] = pd.to_numeric(frame["p99_ms"], errors="coerce").astype(float)
    frame["qps"] = frame["qps"].astype(float)
    frame["width_s"] = frame["width_s"].astype(float)
    return frame
