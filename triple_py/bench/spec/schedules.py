"""ghz's load schedules: ``--load-schedule const|step|line`` (the open-loop rate) and
``--concurrency-schedule const|step|line`` (calls in flight), run by the C generator
(csrc/tri_sched.h) from the end of the warm-up.

``step``: start + step x floor(t / step-duration); ``line``: start + step x t (step per
second); both stop at ``end`` (when > 0) and stop changing after ``max-duration`` (when > 0).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Tuple

from ..errors import ConfigError

__all__ = ["Schedule", "KINDS"]

KINDS = ("const", "step", "line")


@dataclasses.dataclass(frozen=True)
class Schedule:
    """One schedule; ``start`` is the value during the warm-up and at t = 0."""

    kind: str
    start: float
    step: float = 0.0
    end: float = 0.0
    step_duration: float = 0.0
    max_duration: float = 0.0

    def check(self, what: str) -> "Schedule":
        """Raises ConfigError naming ``what`` (a flag prefix) for a bad field; returns self."""
        if self.kind not in KINDS:
            raise ConfigError(f"{what}-schedule must be one of {', '.join(KINDS)}, "
                              f"not {self.kind!r}")
        numbers = (self.start, self.step, self.end, self.step_duration, self.max_duration)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in numbers):
            raise ConfigError(f"{what} schedule: numbers must be finite")
        if self.start <= 0:
            raise ConfigError(f"--{what}-start must be > 0 (the schedule's first value)")
        if self.kind != "const" and self.step == 0:
            raise ConfigError(f"--{what}-schedule {self.kind} needs --{what}-step")
        if self.kind == "step" and self.step_duration <= 0:
            raise ConfigError(f"--{what}-schedule step needs --{what}-step-duration > 0")
        if self.end < 0 or self.max_duration < 0:
            raise ConfigError(f"--{what}-end and --{what}-max-duration must be >= 0")
        return self

    def at(self, t: float) -> float:
        """The value at ``t`` seconds after the warm-up (what the C side computes)."""
        if t <= 0 or self.kind == "const":
            return self.start
        if self.max_duration > 0:
            t = min(t, self.max_duration)
        v = self.start + self.step * (math.floor(t / self.step_duration)
                                      if self.kind == "step" else t)
        if self.end > 0 and ((self.step > 0 and v > self.end) or (self.step < 0 and v < self.end)):
            v = self.end
        return v

    def as_c(self) -> Tuple[int, float, float, float, float, float]:
        """``run_load``'s schedule tuple."""
        return (KINDS.index(self.kind), float(self.start), float(self.step), float(self.end),
                float(self.step_duration), float(self.max_duration))

    @classmethod
    def from_flags(cls, kind: Optional[str], start: Optional[float], step: float, end: float,
                   step_duration: float, max_duration: float, what: str
                   ) -> Optional["Schedule"]:
        """The schedule of ghz's --<what>-* flags, or None when --<what>-schedule is not
        given."""
        if kind is None:
            return None
        if start is None:
            raise ConfigError(f"--{what}-schedule needs --{what}-start")
        return cls(kind, start, step, end, step_duration, max_duration).check(what)
