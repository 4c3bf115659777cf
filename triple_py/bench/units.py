"""Units on the command line and in matrix files: payload sizes and durations."""
from __future__ import annotations

import re
from typing import Union

from .. import _triple
from .errors import ConfigError

__all__ = ["parse_size", "format_size", "parse_duration", "MAX_PAYLOAD"]

# The C load generator's limit (and the peers'), from its table of ranges.
MAX_PAYLOAD = int(_triple.LOAD_LIMITS["payload_size"][1])

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024,
          "m": 1024 ** 2, "mb": 1024 ** 2, "mib": 1024 ** 2}
_SIZE = re.compile(r"\s*(\d+)\s*([a-zA-Z]*)\s*")


def parse_size(value: Union[int, str]) -> int:
    """Bytes from an int or a string with an optional binary unit (B, K/KB/KiB, M/MB/MiB).

    K and M are powers of two here (1 KiB = 1024 B), as in the seeds' tables.
    Raises ConfigError for anything else, or a size over 64 MiB.
    """
    if isinstance(value, bool):
        raise ConfigError(f"bad payload size {value!r}")
    if isinstance(value, int):
        size = value
    elif isinstance(value, str):
        match = _SIZE.fullmatch(value)
        unit = match.group(2).lower() if match else None
        if not match or unit not in _UNITS:
            raise ConfigError(f"bad payload size {value!r} (expected e.g. 128, 1KiB, 16KiB, 1MiB)")
        size = int(match.group(1)) * _UNITS[unit]
    else:
        raise ConfigError(f"bad payload size {value!r}")
    if not 0 <= size <= MAX_PAYLOAD:
        raise ConfigError(f"payload size {size} out of range 0..{MAX_PAYLOAD} bytes")
    return size


def format_size(size: int) -> str:
    """``128B``, ``1KiB``, ``16KiB``, ``1MiB``, ``1536B`` (exact units only)."""
    for unit, factor in (("MiB", 1024 ** 2), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|us|)\s*")
_SECONDS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "m": 60.0}


def parse_duration(value: Union[int, float, str], what: str = "duration") -> float:
    """Seconds from a number or a string like ``3``, ``3s``, ``500ms``, ``1m`` (ghz's -z).

    Raises ConfigError for anything else or a negative value.
    """
    if isinstance(value, bool):
        raise ConfigError(f"bad {what} {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        match = _DURATION.fullmatch(value)
        if not match:
            raise ConfigError(f"bad {what} {value!r} (expected e.g. 3, 3s, 500ms, 1m)")
        seconds = float(match.group(1)) * _SECONDS[match.group(2)]
    else:
        raise ConfigError(f"bad {what} {value!r}")
    if not seconds >= 0 or seconds == float("inf"):
        raise ConfigError(f"bad {what} {value!r}: must be >= 0 seconds")
    return seconds
