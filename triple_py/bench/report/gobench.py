"""Go benchmark format (``bench.txt``, ``benchstat/<arm>.txt``): a ``goos:``-style header,
then one line per run with its values per unit."""
from __future__ import annotations

import math
from typing import Optional

from ..record.result import BenchResult
from ..results.benchmark_units import go_name, unit_values
from ..results.model import MatrixRun

__all__ = ["go_line", "go_header", "go_bench_text"]


def _go_number(value: float) -> str:
    if value == math.inf:
        return "+Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}" if abs(value) < 1e-3 or abs(value) >= 1e6 else f"{value:.4f}".rstrip(
        "0").rstrip(".")


def go_line(name: str, result: BenchResult, ours: bool) -> str:
    """One benchmark result line."""
    fields = [name, str(max(1, result.calls))]
    for unit, value in unit_values(result, ours).items():
        fields += [_go_number(value), unit]
    return "\t".join([fields[0], fields[1], " ".join(fields[2:])])


def go_header(run: MatrixRun) -> str:
    """``goos: linux`` style configuration lines (of the machine and version that ran it)."""
    env = run.environment
    lines = [f"goos: {run.goos}", f"goarch: {run.goarch}",
             "pkg: triple_py/bench", f"cpu: {env.get('cpu_model') or 'unknown'}",
             f"matrix: {run.matrix.name}"]
    if env.get("commit"):
        lines.append(f"commit: {env['commit'][:12]}{'-dirty' if env.get('dirty') else ''}")
    if run.version:
        lines.append(f"# triple_py {run.version}")
    return "\n".join(lines) + "\n"


def go_bench_text(run: MatrixRun, arm: Optional[str] = None) -> str:
    """Go benchmark text: every run (arm in the name), or one arm's runs (arm not in it)."""
    lines = []
    for arm_run in run.runs:
        if arm_run.result is None or (arm is not None and arm_run.arm.name != arm):
            continue
        lines.append(go_line(go_name(run, arm_run, with_arm=arm is None), arm_run.result,
                             arm_run.arm.ours))
    return go_header(run) + "\n".join(lines) + ("\n" if lines else "")
