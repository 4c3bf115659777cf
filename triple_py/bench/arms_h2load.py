"""Moved: the code of ``triple_py.bench.arms_h2load`` now lives in
:mod:`triple_py.bench.arms.h2load`.

This module keeps the old import path for one release: it re-exports the public names."""
from .arms.h2load import (h2load, h2load_command, request_headers, parse_h2load_output,
                          parse_h2load_log, h2load_ms, H2loadSummary)

__all__ = ["h2load", "h2load_command", "request_headers", "parse_h2load_output",
           "parse_h2load_log", "h2load_ms", "H2loadSummary"]
