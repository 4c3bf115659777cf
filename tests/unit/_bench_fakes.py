"""Fakes shared by the test_bench_* tests: a runner that records what it was asked to run."""
from __future__ import annotations

import ast
import contextlib
from pathlib import Path
from typing import Iterator, List

from triple_py.bench.record.result import BenchResult, Latency
from triple_py.bench.spec.run_spec import RunSpec

#: The harness's package directory.
BENCH = Path(__file__).resolve().parents[2] / "triple_py" / "bench"


def two_arm_matrix(rounds: int) -> str:
    """A matrix text: one scenario (128 B, 50 in flight), stream-path (baseline) and
    fastpath, ``rounds`` rounds of 0.1 s without warm-up."""
    return f"""
name = "t"
benchmark = "Unary"
baseline = "stream-path"
rounds = {rounds}
duration = 0.1
warmup = 0
arms = ["stream-path", "fastpath"]
[scenarios]
payload = [128]
concurrency = [50]
"""


class FakeRunner:
    """Returns a made-up BenchResult per spec and remembers the order of the calls.

    QPS depends on the arm (fastpath faster than stream-path) plus a little per-call jitter,
    so comparisons have something to compare.
    """

    BASE = {"stream-path": 1000.0, "fastpath": 1500.0}

    def __init__(self, fail: str = "") -> None:
        self.calls: List[RunSpec] = []
        self.fail = fail

    def __call__(self, spec: RunSpec) -> BenchResult:
        self.calls.append(spec)
        if spec.arm == self.fail:
            raise RuntimeError("boom")
        qps = self.BASE.get(spec.arm, 500.0) + 10 * len(self.calls)
        lat = Latency(count=100, min=1e4, mean=5e4, p50=4e4, p90=8e4, p99=1e5, p99_9=2e5,
                      p99_99=3e5, max=4e5)
        return BenchResult(
            arm=spec.arm, mode=spec.mode, target=spec.target, method=spec.resolved_method(),
            payload_size=spec.payload_size, concurrency=spec.concurrency,
            duration_s=spec.duration, elapsed_s=spec.duration, calls=int(qps * spec.duration),
            errors=0, qps=qps, status_codes={"OK": int(qps * spec.duration)}, latency=lat,
            latency_corrected=lat, histogram=[(40000, 50), (100000, 50)],
            per_call={"write_syscalls": 0.25, "allocations": 0.0} if spec.mode in
            ("fastpath", "stream-path") else {},
            cpu={"process_us_per_call": 1e6 / qps})


class FakeServers:
    """A server factory handing out 127.0.0.1:1001, :1002, ... (one per start)."""

    def __init__(self) -> None:
        self.started: List[str] = []
        self.live = 0

    @contextlib.contextmanager
    def __call__(self) -> Iterator[str]:
        address = f"127.0.0.1:{1001 + len(self.started)}"
        self.started.append(address)
        self.live += 1
        try:
            yield address
        finally:
            self.live -= 1


def named_in_code(name: str) -> List[str]:
    """The harness's modules whose code (not docstrings or comments) names ``name``: as an
    identifier, an attribute, a keyword or in a string."""
    found = []
    for path in sorted(BENCH.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                           ast.AsyncFunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            named = (isinstance(node, ast.Name) and node.id == name) or (
                isinstance(node, ast.Attribute) and node.attr == name) or (
                isinstance(node, ast.keyword) and node.arg == name) or (
                isinstance(node, ast.arg) and node.arg == name) or (
                isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings and name in node.value)
            if named:
                found.append(str(path.relative_to(BENCH)))
                break
    return found
