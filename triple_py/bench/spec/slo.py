"""Service-level objectives: a latency percentile and its limit (``p99=5ms``), what a
capacity search must meet."""
from __future__ import annotations

import dataclasses
import re

from ..errors import ConfigError
from ..units import parse_duration

__all__ = ["Slo", "parse_slo"]


_SLO = re.compile(r"p(\d+(?:\.\d+)?)\s*=\s*(\S+)")


@dataclasses.dataclass(frozen=True)
class Slo:
    """A latency objective: ``percentile`` (e.g. 99.9) at most ``limit_s`` seconds."""

    percentile: float
    limit_s: float

    def __str__(self) -> str:
        return f"p{self.percentile:g} <= {self.limit_s * 1e3:g} ms"


def parse_slo(text: str) -> Slo:
    """``p99=5ms``, ``p99.9=20ms``, ``p50=0.5ms``; ConfigError otherwise."""
    match = _SLO.fullmatch(text.strip())
    if not match:
        raise ConfigError(f"bad SLO {text!r} (expected pNN=DURATION, e.g. p99=5ms)")
    p = float(match.group(1))
    if not 0 < p < 100:
        raise ConfigError(f"SLO percentile must be in (0, 100), not {p:g}")
    limit = parse_duration(match.group(2), "SLO limit")
    if limit <= 0:
        raise ConfigError("SLO limit must be > 0")
    return Slo(p, limit)
