"""Find the capacity: the highest open-loop rate whose CO-corrected latency percentile meets
an SLO with no errors (``python -m triple_py.bench capacity --slo p99=5ms``).

The search: probe the start rate, then double it until a probe fails the SLO (or the
maximum rate is reached), or, when the start rate fails, halve it until one passes (down to
1/64 of it); then bisect between the last passing and the first failing rate
until they are within ``precision`` of each other (relative) or ``max_probes`` ran. A probe
passes when it has no error, sent its intended calls (at most 0.1 % missed, or one),
achieved at least 95 % of the offered rate, and its corrected percentile (measured from the
intended send times, so a server falling behind shows up as latency) is within the limit.
"""
from __future__ import annotations

import dataclasses
import signal
import time
from typing import Callable, List, Optional, Tuple

from ..errors import BenchError, ConfigError
from ..interrupts import signal_of
from ..record.result import BenchResult
from ..results.capacity import CapacityResult, CapacityRun, Probe, histogram_percentile
from ..spec.capacity import CapacitySpec
from ..spec.run_spec import RunSpec
from ..spec.slo import Slo

__all__ = ["judge", "find_capacity", "run_capacity"]

_MISSED_SHARE = 0.001  # intended calls never sent that a passing probe may have: this
#                        share, and at least one (the schedule's last tick at the deadline,
#                        which a short probe on a busy machine often misses)
_DOWN_LIMIT = 64  # below start_rate / this, the search gives up


def judge(result: BenchResult, rate: float, slo: Slo) -> Probe:
    """The probe of one run at ``rate``."""
    value = histogram_percentile(result.histogram_corrected or result.histogram, slo.percentile)
    missed = int(result.extra.get("missed", 0))
    why = ""
    if result.errors:
        why = f"{result.errors} errors ({result.first_error})"
    elif missed > max(1.0, _MISSED_SHARE * (result.calls + missed)):
        why = f"{missed} intended calls never sent"
    elif result.qps < 0.95 * rate:
        why = f"achieved {result.qps:,.0f}/s of {rate:,.0f}/s"
    elif value is None or value > slo.limit_s * 1e9:
        why = f"p{slo.percentile:g} {(value or 0) / 1e6:.3f} ms over {slo.limit_s * 1e3:g} ms"
    return Probe(rate, result.qps, value, result.errors, missed, not why, why)


def find_capacity(probe_at: Callable[[float], BenchResult], slo: Slo, *, start_rate: float,
                  max_rate: float, precision: float = 0.05, max_probes: int = 16,
                  on_probe: Optional[Callable[[Probe], None]] = None) -> CapacityResult:
    """Ramps, then bisects (see the module's docstring). ``probe_at(rate)`` runs one probe."""
    if not 0 < start_rate <= max_rate:
        raise ConfigError("the start rate must be > 0 and at most the maximum rate")
    if not 0 < precision < 1:
        raise ConfigError("precision must be in (0, 1)")
    began = time.monotonic()
    probes: List[Probe] = []

    def probe(rate: float) -> Probe:
        p = judge(probe_at(rate), rate, slo)
        probes.append(p)
        if on_probe:
            on_probe(p)
        return p

    good: Optional[float] = None
    bad: Optional[float] = None
    interrupted = ""
    try:
        good, bad = _search(probe, start_rate, max_rate, precision, max_probes, probes)
    except KeyboardInterrupt as exc:  # SIGINT/SIGTERM: the finished probes are the result

        interrupted = signal.Signals(signal_of(exc)).name
        good = max((p.rate for p in probes if p.passed), default=None)
    return CapacityResult(slo, probes, good, time.monotonic() - began,
                          ceiling_reached=good is not None and good >= max_rate,
                          interrupted=interrupted)


def _search(probe: Callable[[float], Probe], start_rate: float, max_rate: float,
            precision: float, max_probes: int, probes: List[Probe]
            ) -> Tuple[Optional[float], Optional[float]]:
    """The ramp and the bisection: (highest passing rate, lowest failing rate)."""
    good: Optional[float] = None
    bad: Optional[float] = None
    rate = start_rate
    while len(probes) < max_probes:
        if probe(rate).passed:
            good = rate
            if rate >= max_rate or bad is not None:
                break
            rate = min(rate * 2, max_rate)
        else:
            bad = rate
            if good is not None or rate / 2 < start_rate / _DOWN_LIMIT:
                break
            rate /= 2  # the start rate fails: halve until a rate passes
    while good is not None and bad is not None and (bad - good) / good > precision \
            and len(probes) < max_probes:
        mid = (good + bad) / 2
        if probe(mid).passed:
            good = mid
        else:
            bad = mid
    return good, bad


def run_capacity(spec: CapacitySpec, label: str, arm: str, base: RunSpec,
                 runner: Callable[[RunSpec], BenchResult]) -> CapacityRun:
    """One search for ``arm`` in the scenario ``label``: ``base`` (the arm's RunSpec in the
    scenario, its call setup applied) with the probe's rate, and the search's duration and
    warm-up when it sets them. A probe that raises ends the search as failed."""
    timing = {k: v for k, v in (("duration", spec.duration), ("warmup", spec.warmup))
              if v is not None}

    def probe_at(rate: float) -> BenchResult:
        return runner(dataclasses.replace(base, rate=rate, **timing))

    out = CapacityRun(label, arm)
    try:
        out.result = find_capacity(probe_at, spec.slo, start_rate=spec.start_rate,
                                   max_rate=spec.max_rate, precision=spec.precision,
                                   max_probes=spec.max_probes)
    except ConfigError:
        raise
    except BenchError as exc:
        out.failed = str(exc)
    return out
