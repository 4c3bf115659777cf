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
import re
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from .errors import ConfigError
from .result import BenchResult
from .units import parse_duration

__all__ = ["Slo", "Probe", "CapacityResult", "parse_slo", "histogram_percentile",
           "find_capacity", "capacity_text", "capacity_plot"]

_MISSED_SHARE = 0.001  # intended calls never sent that a passing probe may have: this
#                        share, and at least one (the schedule's last tick at the deadline,
#                        which a short probe on a busy machine often misses)
_DOWN_LIMIT = 64  # below start_rate / this, the search gives up
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
        from .. import __version__

        return dict(dataclasses.asdict(self), triple_py=__version__)


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
        import signal

        from .interrupts import signal_of
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


def capacity_text(result: CapacityResult) -> str:
    """The verdict, then the evidence (every probe in order)."""
    if result.interrupted:
        head = (f"capacity: search interrupted by {result.interrupted} after "
                f"{len(result.probes)} probes; " + (
                    f"at least {result.capacity:,.0f} calls/s with {result.slo}"
                    if result.capacity is not None else "no rate passed yet"))
    elif result.capacity is None:
        head = f"capacity: below the start rate ({result.slo} not met at any rate tried)"
    else:
        head = (f"capacity: {result.capacity:,.0f} calls/s with {result.slo} and no errors"
                + (" (the maximum rate tried: the capacity may be higher)"
                   if result.ceiling_reached else ""))
    lines = [head, f"search: {len(result.probes)} probes in {result.seconds:.1f} s", "",
             f"{'rate/s':>12} {'achieved/s':>12} {'p' + format(result.slo.percentile, 'g') + ' ms':>10}"
             f"  verdict"]
    for p in result.probes:
        value = f"{p.percentile_ns / 1e6:.3f}" if p.percentile_ns is not None else "-"
        lines.append(f"{p.rate:>12,.0f} {p.qps:>12,.0f} {value:>10}  "
                     f"{'pass' if p.passed else 'FAIL: ' + p.why}")
    return "\n".join(lines) + "\n"


def capacity_plot(result: CapacityResult, path: Path) -> Path:
    """The probes' percentile against their rate, the SLO line and the capacity, as PNG."""
    from .plots import _plt

    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for passed, marker, color in ((True, "o", "tab:green"), (False, "x", "tab:red")):
        pts = [(p.rate, (p.percentile_ns or 0) / 1e6) for p in result.probes
               if p.passed == passed]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, color=color,
                       label="pass" if passed else "fail")
    ax.axhline(result.slo.limit_s * 1e3, color="grey", linestyle="--", label=str(result.slo))
    if result.capacity is not None:
        ax.axvline(result.capacity, color="tab:blue", linestyle=":",
                   label=f"capacity {result.capacity:,.0f}/s")
    ax.set_xlabel("offered rate (calls/s)")
    ax.set_ylabel(f"p{result.slo.percentile:g} latency, CO-corrected (ms)")
    ax.set_yscale("log")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("capacity search")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
