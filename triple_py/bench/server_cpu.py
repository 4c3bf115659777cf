"""Moved: the code of ``triple_py.bench.server_cpu`` now lives in
:mod:`triple_py.bench.running.server_cpu`.

This module keeps the old import path for one release: it re-exports the public names."""
from .running.server_cpu import (ServerProcess, Served, unpack_served, process_cpu_seconds,
                                 book_server_cpu)

__all__ = ["ServerProcess", "Served", "unpack_served", "process_cpu_seconds",
           "book_server_cpu"]
