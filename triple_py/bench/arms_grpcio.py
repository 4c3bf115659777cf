"""Moved: the code of ``triple_py.bench.arms_grpcio`` now lives in
:mod:`triple_py.bench.arms.grpcio`.

This module keeps the old import path for one release: it re-exports the public names."""
from .arms.grpcio import (grpcio_sync_unary, grpcio_aio_unary, grpcio_aio_bidi, run_threads,
                          aio_window, aio_unary, channel_options, JOIN_GRACE)

__all__ = ["grpcio_sync_unary", "grpcio_aio_unary", "grpcio_aio_bidi", "run_threads",
           "aio_window", "aio_unary", "channel_options", "JOIN_GRACE"]
