"""Per scenario and arm, the medians over the rounds (QPS, latency, CPU per call) and the
ratio to the baseline: the summary the text tables and the results document show."""
from __future__ import annotations

import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from .model import MatrixRun

__all__ = ["ArmSummary", "summarize"]


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
