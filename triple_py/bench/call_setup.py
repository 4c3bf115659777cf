"""Moved: the code of ``triple_py.bench.call_setup`` now lives in
:mod:`triple_py.bench.workload.call_setup`.

This module keeps the old import path for one release: it re-exports the public names."""
from .workload.call_setup import TlsOptions, CallSetup, PreparedCall

__all__ = ["TlsOptions", "CallSetup", "PreparedCall"]
