"""Moved: the code of ``triple_py.bench.harness`` now lives in
:mod:`triple_py.bench.running.rounds` and :mod:`triple_py.bench.results.model`.

This module keeps the old import path for one release: it re-exports the public names."""
from .results.model import ArmRun, MatrixRun, single_run
from .running.rounds import Runner, run_matrix

__all__ = ["ArmRun", "MatrixRun", "run_matrix", "single_run", "Runner"]
