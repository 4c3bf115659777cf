"""Moved: the code of ``triple_py.bench.descriptor_repair`` now lives in
:mod:`triple_py.bench.workload.descriptor_repair`.

This module keeps the old import path for one release: it re-exports the public names."""
from .workload.descriptor_repair import repair_map_entries, map_entry_name

__all__ = ["repair_map_entries", "map_entry_name"]
