"""Moved: the code of ``triple_py.bench.template`` now lives in
:mod:`triple_py.bench.workload.template`.

This module keeps the old import path for one release: it re-exports the public names."""
from .workload.template import CallContext, Template, parse_template

__all__ = ["CallContext", "Template", "parse_template"]
