"""Moved: the code of ``triple_py.bench.reflection`` now lives in
:mod:`triple_py.bench.workload.reflection`.

This module keeps the old import path for one release: it re-exports the public names."""
from .workload.reflection import REFLECTION_SERVICES, method_by_reflection

__all__ = ["REFLECTION_SERVICES", "method_by_reflection"]
