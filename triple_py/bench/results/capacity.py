"""The records of a capacity search: each probe, the search's result, one search of a
matrix (scenario and arm), and their plain-data form in the results document."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ... import __version__
from ..spec.slo import Slo

__all__ = ["Probe", "CapacityResult", "CapacityRun", "histogram_percentile",
           "capacity_docs"]


def histogram_percentile(pairs: Sequence[Tuple[float, int]], p: float) -> Optional[float]:
    """The value at percentile ``p`` of a histogram [(value, count), ...] ascending."""
    total = sum(c for _, c in pairs)
    if not total:
        return None
    rank, seen = p / 100.0 * total, 0
    for value, count in pairs:
        seen += count
        if seen >= rank:
            return float(value)
    return float(pairs[-1][0])


@dataclasses.dataclass
class Probe:
    """One rate tried and what it measured."""

    rate: float
    qps: float
    percentile_ns: Optional[float]
    errors: int
    missed: int
    passed: bool
    why: str = ""


@dataclasses.dataclass
class CapacityResult:
    """The search: its SLO, every probe in order, the capacity (None: even the start rate
    failed) and how long it took."""

    slo: Slo
    probes: List[Probe]
    capacity: Optional[float]
    seconds: float
    ceiling_reached: bool = False
    interrupted: str = ""  # the signal that stopped the search (its probes so far are kept)

    def to_dict(self) -> dict:
        """A JSON-ready dict, with the triple_py version that measured it."""
        return dict(dataclasses.asdict(self), triple_py=__version__)


@dataclasses.dataclass
class CapacityRun:
    """One search: a scenario's label, an arm, and its result or why it failed."""

    label: str
    arm: str
    result: Optional[CapacityResult] = None
    failed: Optional[str] = None


def capacity_docs(runs: List[CapacityRun]) -> List[Dict[str, Any]]:
    """The searches as plain data (for the results JSON)."""
    return [{"scenario": r.label, "arm": r.arm, "failed": r.failed,
             "result": r.result.to_dict() if r.result is not None else None} for r in runs]
