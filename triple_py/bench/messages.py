"""Moved: the code of ``triple_py.bench.messages`` now lives in
:mod:`triple_py.bench.workload.messages`.

This module keeps the old import path for one release: it re-exports the public names."""
from .workload.messages import (BENCHMARK_SERVICE, UNARY_METHOD, STREAM_METHOD, encode_payload,
                                benchmark_request, grpc_frame, normalize_method)

__all__ = ["BENCHMARK_SERVICE", "UNARY_METHOD", "STREAM_METHOD", "encode_payload",
           "benchmark_request", "grpc_frame", "normalize_method"]
