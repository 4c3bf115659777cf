"""Moved: the code of ``triple_py.bench.loadgen`` now lives in
:mod:`triple_py.bench.arms.loadgen`.

This module keeps the old import path for one release: it re-exports the public names."""
from .arms.loadgen import C_MODES, run_c_load, run_c_spec, result_from_load

__all__ = ["C_MODES", "run_c_load", "run_c_spec", "result_from_load"]
