"""Moved: the code of ``triple_py.bench.arms_triple_py`` now lives in
:mod:`triple_py.bench.arms.python_api`.

This module keeps the old import path for one release: it re-exports the public names."""
from .arms.python_api import (triple_py_sync_unary, triple_py_aio_unary, triple_py_bidi,
                              DEFAULT_STREAM_THREADS, split)

__all__ = ["triple_py_sync_unary", "triple_py_aio_unary", "triple_py_bidi",
           "DEFAULT_STREAM_THREADS", "split"]
