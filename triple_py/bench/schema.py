"""Moved: the code of ``triple_py.bench.schema`` now lives in
:mod:`triple_py.bench.workload.schema`.

This module keeps the old import path for one release: it re-exports the public names."""
from .workload.schema import (MethodSchema, message_class, compile_proto, read_protoset,
                              pool_of, find_method, benchmark_schema)

__all__ = ["MethodSchema", "message_class", "compile_proto", "read_protoset", "pool_of",
           "find_method", "benchmark_schema"]
