"""Moved: the code of ``triple_py.bench.schedules`` now lives in
:mod:`triple_py.bench.spec.schedules`.

This module keeps the old import path for one release: it re-exports the public names."""
from .spec.schedules import Schedule, KINDS

__all__ = ["Schedule", "KINDS"]
