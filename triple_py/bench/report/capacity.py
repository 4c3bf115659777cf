"""Capacity searches as text (the verdict and every probe), a figure (percentile against
rate, the SLO line) and files (``capacity.txt``, ``capacity/<scenario>-<arm>.json`` and
``.png``)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Sequence

from ..results.capacity import CapacityResult, CapacityRun
from .charts import _plt

__all__ = ["capacity_text", "capacity_plot", "format_capacities", "write_capacities"]


def capacity_text(result: CapacityResult) -> str:
    """The verdict, then the evidence (every probe in order)."""
    if result.interrupted:
        head = (f"capacity: search interrupted by {result.interrupted} after "
                f"{len(result.probes)} probes; " + (
                    f"at least {result.capacity:,.0f} calls/s with {result.slo}"
                    if result.capacity is not None else "no rate passed yet"))
    elif result.capacity is None:
        head = f"capacity: below the start rate ({result.slo} not met at any rate tried)"
    else:
        head = (f"capacity: {result.capacity:,.0f} calls/s with {result.slo} and no errors"
                + (" (the maximum rate tried: the capacity may be higher)"
                   if result.ceiling_reached else ""))
    lines = [head, f"search: {len(result.probes)} probes in {result.seconds:.1f} s", "",
             f"{'rate/s':>12} {'achieved/s':>12} {'p' + format(result.slo.percentile, 'g') + ' ms':>10}"
             f"  verdict"]
    for p in result.probes:
        value = f"{p.percentile_ns / 1e6:.3f}" if p.percentile_ns is not None else "-"
        lines.append(f"{p.rate:>12,.0f} {p.qps:>12,.0f} {value:>10}  "
                     f"{'pass' if p.passed else 'FAIL: ' + p.why}")
    return "\n".join(lines) + "\n"


def capacity_plot(result: CapacityResult, path: Path) -> Path:
    """The probes' percentile against their rate, the SLO line and the capacity, as PNG."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for passed, marker, color in ((True, "o", "tab:green"), (False, "x", "tab:red")):
        pts = [(p.rate, (p.percentile_ns or 0) / 1e6) for p in result.probes
               if p.passed == passed]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, color=color,
                       label="pass" if passed else "fail")
    ax.axhline(result.slo.limit_s * 1e3, color="grey", linestyle="--", label=str(result.slo))
    if result.capacity is not None:
        ax.axvline(result.capacity, color="tab:blue", linestyle=":",
                   label=f"capacity {result.capacity:,.0f}/s")
    ax.set_xlabel("offered rate (calls/s)")
    ax.set_ylabel(f"p{result.slo.percentile:g} latency, CO-corrected (ms)")
    ax.set_yscale("log")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("capacity search")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def format_capacities(runs: Sequence[CapacityRun]) -> str:
    """Every search: a heading per scenario and arm, then its verdict and probes."""
    blocks = []
    for run in runs:
        head = f"== capacity: {run.label} {run.arm} =="
        body = capacity_text(run.result) if run.result is not None \
            else f"search failed: {run.failed}\n"
        blocks.append(f"{head}\n{body}")
    return "\n".join(blocks)


def _file_stem(run: CapacityRun) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{run.label}-{run.arm}")


def write_capacities(runs: Sequence[CapacityRun], out_dir: Path) -> Dict[str, Path]:
    """``capacity.txt`` and, per finished search, ``capacity/<scenario>-<arm>.json`` and
    ``.png``; returns {"capacity": the text file, "capacity_dir": the folder}."""
    text_path = out_dir / "capacity.txt"
    text_path.write_text(format_capacities(runs))
    folder = out_dir / "capacity"
    folder.mkdir(exist_ok=True)
    for run in runs:
        if run.result is None:
            continue
        stem = _file_stem(run)
        (folder / f"{stem}.json").write_text(json.dumps(
            dict(run.result.to_dict(), scenario=run.label, arm=run.arm), indent=1,
            default=str) + "\n")
        capacity_plot(run.result, folder / f"{stem}.png")
    return {"capacity": text_path, "capacity_dir": folder}
