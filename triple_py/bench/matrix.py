"""Moved: the code of ``triple_py.bench.matrix`` now lives in
:mod:`triple_py.bench.spec.matrix`.

This module keeps the old import path for one release: it re-exports the public names."""
from .spec.matrix import (Matrix, ArmSpec, Scenario, BUILTIN, load_matrix, parse_matrix,
                          round_order, AXES)

__all__ = ["Matrix", "ArmSpec", "Scenario", "BUILTIN", "load_matrix", "parse_matrix",
           "round_order", "AXES"]
