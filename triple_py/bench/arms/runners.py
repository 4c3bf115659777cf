"""The kind -> runner table: the function that runs one RunSpec of each arm kind, and
:func:`run_spec`, which validates a spec and runs it with its kind's runner."""
from __future__ import annotations

from typing import Callable, Dict

from ..interrupts import raise_if_marked
from ..record.result import BenchResult
from ..spec.kinds import KINDS, canonical_mode
from ..spec.run_spec import RunSpec
from .grpcio import grpcio_aio_bidi, grpcio_aio_unary, grpcio_sync_unary
from .h2load import h2load
from .loadgen import run_c_spec
from .python_api import triple_py_aio_unary, triple_py_bidi, triple_py_sync_unary

__all__ = ["Runner", "RUNNERS", "runner_of", "run_spec", "with_knobs"]

#: Runs one spec of one kind.
Runner = Callable[[RunSpec], BenchResult]


def _c(mode: str) -> Runner:
    def runner(spec: RunSpec) -> BenchResult:
        return run_c_spec(spec, mode)
    return runner


#: Every kind of :data:`~triple_py.bench.spec.kinds.KINDS` -> the function that runs it.
RUNNERS: Dict[str, Runner] = {
    "fastpath": _c("fastpath"),
    "stream-path": _c("stream-path"),
    "bidi": _c("bidi"),
    "grpcio-sync": grpcio_sync_unary,
    "grpcio-aio": grpcio_aio_unary,
    "grpcio-aio-bidi": grpcio_aio_bidi,
    "h2load": h2load,
    "h2load-bidi": h2load,
    "triple-py-sync": triple_py_sync_unary,
    "triple-py-aio": triple_py_aio_unary,
    "triple-py-bidi": triple_py_bidi,
}
assert set(RUNNERS) == set(KINDS), "every arm kind has a runner"


def runner_of(mode: str) -> Runner:
    """The runner of ``mode`` (a kind or an alias); ConfigError when unknown."""
    return RUNNERS[canonical_mode(mode)]


def run_spec(spec: RunSpec) -> BenchResult:
    """Validates ``spec`` and runs it with its kind's runner.

    A run stopped by SIGINT or SIGTERM raises :class:`~triple_py.bench.interrupts.Interrupted` (a
    KeyboardInterrupt) whose ``result`` holds what it measured until then."""
    spec.mode = canonical_mode(spec.mode)
    spec.validate()
    return raise_if_marked(with_knobs(RUNNERS[spec.mode](spec), spec))


def with_knobs(result: BenchResult, spec: RunSpec) -> BenchResult:
    """``result`` with the knobs ``spec`` set (:meth:`RunSpec.knobs`: channel options and
    load keywords by their flat names) recorded as ``extra["knobs"]``, when it set any:
    the CSV and the frames read them from there."""
    knobs = spec.knobs()
    if knobs:
        result.extra["knobs"] = knobs
    return result
