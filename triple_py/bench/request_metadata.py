"""Moved: the code of ``triple_py.bench.request_metadata`` now lives in
:mod:`triple_py.bench.workload.metadata`.

This module keeps the old import path for one release: it re-exports the public names."""
from .workload.metadata import MetadataTemplate, parse_metadata, render_metadata

__all__ = ["MetadataTemplate", "parse_metadata", "render_metadata"]
