"""Moved: the code of ``triple_py.bench.target`` now lives in
:mod:`triple_py.bench.running.servers` and :mod:`triple_py.bench.spec.target`.

This module keeps the old import path for one release: it re-exports the public names."""
from .running.servers import embedded_server, ServerFactory, fixed_target
from .spec.target import split_target, check_target, target_endpoints

__all__ = ["split_target", "check_target", "target_endpoints", "embedded_server",
           "ServerFactory", "fixed_target"]
