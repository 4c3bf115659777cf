"""The ranges the C core enforces, read from its own tables: the load generator's keywords
(``_triple.LOAD_LIMITS``) and the channel options (``_triple.CHANNEL_OPTIONS``)."""
from __future__ import annotations

from typing import Tuple

from .. import _triple

__all__ = ["load_limit", "option_range"]


def load_limit(name: str) -> Tuple[float, float]:
    """(min, max) of a load keyword, from the load generator's own table
    (``_triple.LOAD_LIMITS``: the ranges ``run_load`` enforces; ``concurrency`` is per
    connection, ``requests`` counts ring entries)."""
    return _triple.LOAD_LIMITS[name]


def option_range(name: str) -> Tuple[int, int]:
    """(min, max) of a channel option, from the core's table (``_triple.CHANNEL_OPTIONS``)."""
    for row in _triple.CHANNEL_OPTIONS:
        if row[1] == name and row[3] is not None and row[4] is not None:
            return int(row[3]), int(row[4])
    raise KeyError(f"{name}: not a ranged channel option")
