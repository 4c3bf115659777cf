"""Capacity searches in matrix files: a ``[capacity]`` table.

After the rounds of each scenario, the harness runs
:func:`~triple_py.bench.running.capacity.find_capacity` for
each chosen arm against the same server: the open-loop rate is ramped, then bisected to the
highest rate whose CO-corrected percentile meets the SLO with no errors. The scenario's
concurrency is the most calls in flight each probe may have (an open loop needs room)::

    [capacity]
    slo = "p99=5ms"        # required: pNN=DURATION
    start_rate = 1000      # first rate tried, calls/s (1000)
    max_rate = 1000000     # highest rate tried (1e6)
    precision = 0.05       # stop when passing and failing rates are this close (0.05)
    max_probes = 16        # most probes per search (16)
    duration = "2s"        # measured per probe (default: the matrix's duration)
    warmup = "0.5s"        # per probe (default: the matrix's warm-up)
    arms = ["fastpath"]    # default: every arm whose kind runs an open loop

Outputs (:func:`~triple_py.bench.report.capacity.write_capacities`): ``capacity.txt``
(every search's verdict and probes)
and per search ``capacity/<scenario>-<arm>.json`` and ``.png``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Sequence

from ..errors import ConfigError
from ..units import parse_duration
from .kinds import kind_of
from .slo import Slo, parse_slo

__all__ = ["CapacitySpec", "parse_capacity"]

_KEYS = {"slo", "start_rate", "max_rate", "precision", "max_probes", "duration", "warmup",
         "arms"}


@dataclasses.dataclass(frozen=True)
class CapacitySpec:
    """A matrix's ``[capacity]`` table, validated."""

    slo: Slo
    arms: Sequence[str]
    start_rate: float = 1000.0
    max_rate: float = 1e6
    precision: float = 0.05
    max_probes: int = 16
    duration: Optional[float] = None  # None: the matrix's
    warmup: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        """Plain data for the results JSON."""
        return dict(dataclasses.asdict(self), slo=str(self.slo), arms=list(self.arms))


def _number(doc: Mapping[str, Any], key: str, default: float) -> float:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"capacity.{key} must be a number > 0, not {value!r}")
    return float(value)


def parse_capacity(doc: Any, arms: Mapping[str, str]) -> CapacitySpec:
    """The ``[capacity]`` table; ``arms`` maps the matrix's arm names to their kinds.
    ConfigError for an unknown key, a bad SLO or number, or an arm that is not in the
    matrix or cannot run an open loop."""
    if not isinstance(doc, dict):
        raise ConfigError("[capacity] must be a table")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown key capacity.{unknown[0]} (known: {', '.join(sorted(_KEYS))})")
    if "slo" not in doc:
        raise ConfigError('[capacity] needs slo (e.g. slo = "p99=5ms")')
    open_loop = [name for name, mode in arms.items() if kind_of(mode).open_loop]
    chosen = doc.get("arms", open_loop)
    if not isinstance(chosen, list) or not all(isinstance(a, str) for a in chosen):
        raise ConfigError("capacity.arms must be a list of arm names")
    for name in chosen:
        if name not in arms:
            raise ConfigError(f"capacity.arms: no arm {name!r} in the matrix")
        if name not in open_loop:
            raise ConfigError(f"capacity.arms: {name!r} ({arms[name]}) cannot run an open loop "
                              f"(arms that can: {', '.join(open_loop) or 'none'})")
    if not chosen:
        raise ConfigError("[capacity]: no arm of the matrix can run an open loop")
    spec = CapacitySpec(
        slo=parse_slo(str(doc["slo"])), arms=tuple(chosen),
        start_rate=_number(doc, "start_rate", 1000.0), max_rate=_number(doc, "max_rate", 1e6),
        precision=_number(doc, "precision", 0.05),
        max_probes=int(_number(doc, "max_probes", 16)),
        duration=parse_duration(doc["duration"], "capacity.duration") if "duration" in doc
        else None,
        warmup=parse_duration(doc["warmup"], "capacity.warmup") if "warmup" in doc else None)
    if spec.start_rate > spec.max_rate:
        raise ConfigError("capacity.start_rate must be at most capacity.max_rate")
    if not 0 < spec.precision < 1:
        raise ConfigError("capacity.precision must be in (0, 1)")
    return spec

