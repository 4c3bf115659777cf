"""Moved: the code of ``triple_py.bench.request_data`` now lives in
:mod:`triple_py.bench.workload.request_data`.

This module keeps the old import path for one release: it re-exports the public names."""
from .workload.request_data import (RequestData, RingEntry, DEFAULT_RING_SIZE, request_data,
                                    build_ring)

__all__ = ["RequestData", "RingEntry", "DEFAULT_RING_SIZE", "request_data", "build_ring"]
