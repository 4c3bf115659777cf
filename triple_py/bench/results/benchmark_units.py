"""One run in Go benchmark terms: its name (``BenchmarkUnary/128B/c50/fastpath-2``) and its
values per unit (ns/op, ops/s, p50-ns, ...), shared by the results document and the
``bench.txt`` lines benchstat reads."""
from __future__ import annotations

import math
from typing import Dict

from ..record.result import BenchResult
from .environment import goarch
from .model import ArmRun, MatrixRun

__all__ = ["unit_values", "go_name", "goarch"]


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


def go_name(run: MatrixRun, arm_run: ArmRun, with_arm: bool = True) -> str:
    """``BenchmarkUnary/128B/c50/fastpath-2`` (or without the arm); the suffix is the CPU
    count of the machine that ran it."""
    name = f"Benchmark{run.matrix.benchmark}/{arm_run.label}"
    if with_arm:
        name += f"/{arm_run.arm.name}"
    return f"{name}-{run.cpus}"
