"""Benchmark units: tidying (ns -> sec, MB -> B), classes and number scaling.

A row of a table is printed with one :class:`Scaler`, chosen from the
smallest non-zero center in the row so that every value keeps at least
three significant digits. Decimal units use SI prefixes (``T G M k
"" m µ n``); units counting bytes in the numerator use IEC binary
prefixes (``Ti Gi Mi Ki``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterator, List, Sequence, Tuple

from .gofmt import format_fixed
from .textutil import is_go_space

__all__ = ["unit_tokens", "tidy", "tidy_unit", "is_binary_unit", "Scaler", "common_scale", "scale"]


def unit_tokens(unit: str) -> Iterator[Tuple[str, int, bool]]:
    """Yield (token, byte offset, in_denominator) for the parts of a unit.

    Tokens are separated by ``*`` (back to the numerator), ``/`` (into
    the denominator), ``-`` and white space.
    """
    denom = False
    i = 0
    while i < len(unit):
        ch = unit[i]
        if ch == "*":
            denom = False
            i += 1
        elif ch == "/":
            denom = True
            i += 1
        elif ch == "-" or is_go_space(ch):
            i += 1
        else:
            start = i
            while i < len(unit) and not (unit[i] in "*/-" or is_go_space(unit[i])):
                i += 1
            yield unit[start:i], start, denom


@functools.lru_cache(maxsize=1024)
def tidy_unit(unit: str) -> Tuple[str, float]:
    """Return (tidied unit, factor): multiply a value by factor to tidy it."""
    if unit == "ns/op":
        return "sec/op", 1e-9
    if unit == "MB/s":
        return "B/s", 1e6
    if "ns" not in unit and "MB" not in unit:
        return unit, 1.0
    factor = 1.0
    edits: List[Tuple[int, int, str]] = []
    for tok, pos, denom in unit_tokens(unit):
        if denom:
            continue
        if tok == "ns":
            edits.append((pos, 2, "sec"))
            factor /= 1e9
        elif tok == "MB":
            edits.append((pos, 2, "B"))
            factor *= 1e6
    for pos, length, replacement in reversed(edits):
        unit = unit[:pos] + replacement + unit[pos + length:]
    return unit, factor


def tidy(value: float, unit: str) -> Tuple[float, str]:
    """Convert a value to base units (``ns/op`` -> ``sec/op``, ``MB/s`` -> ``B/s``)."""
    tidied, factor = tidy_unit(unit)
    return value * factor, tidied


def is_binary_unit(unit: str) -> bool:
    """True if the unit counts bytes in its numerator (``B``, ``MB``, ``bytes``)."""
    return any(tok in ("B", "MB", "bytes") and not denom for tok, _, denom in unit_tokens(unit))


@dataclass(frozen=True)
class Scaler:
    """How to print numbers of one row: digits after the point, factor, prefix."""

    prec: int
    factor: float
    prefix: str

    def format(self, value: float) -> str:
        """``value / factor`` with ``prec`` decimals, then the prefix."""
        return format_fixed(value / self.factor, self.prec) + self.prefix


@dataclass(frozen=True)
class _Prefix:
    factor: float
    prefix: str
    t100: float
    t10: float
    t1: float


def _si_prefixes() -> List[_Prefix]:
    out = []
    exp = 12
    for prefix in ["T", "G", "M", "k", "", "m", "µ", "n"]:
        out.append(_Prefix(float(10.0 ** exp), prefix, float("99.995e%d" % exp),
                           float("9.9995e%d" % exp), float(".99995e%d" % exp)))
        exp -= 3
    return out


def _iec_prefixes() -> List[_Prefix]:
    out = []
    exp = 40
    for prefix in ["Ti", "Gi", "Mi", "Ki", ""]:
        out.append(_Prefix(float(2 ** exp), prefix,
                           float.fromhex("0x1.8ffae147ae148p%d" % (6 + exp)),
                           float.fromhex("0x1.3ffbe76c8b439p%d" % (3 + exp)),
                           float.fromhex("0x1.fff972474538fp%d" % (-1 + exp))))
        exp -= 10
    return out


_SI = _si_prefixes()
_IEC = _iec_prefixes()
_SIGFIG_THRESHOLDS = [float("9.9995e%d" % exp) for exp in range(-1, -9, -1)]
_SIGFIG_BASE = 3


def common_scale(values: Sequence[float], binary: bool) -> Scaler:
    """A scaler showing at least three significant digits for every value."""
    smallest = 0.0
    for v in values:
        v = abs(v)
        if v != 0 and (smallest == 0 or v < smallest):
            smallest = v
    if smallest == 0:
        return Scaler(3, 1.0, "")
    prefixes = _IEC if binary else _SI
    for p in prefixes:
        if smallest >= p.t100:
            return Scaler(1, p.factor, p.prefix)
        if smallest >= p.t10:
            return Scaler(2, p.factor, p.prefix)
        if smallest >= p.t1:
            return Scaler(3, p.factor, p.prefix)
    last = prefixes[-1]
    scaled = smallest / last.factor
    for i, thresh in enumerate(_SIGFIG_THRESHOLDS):
        if scaled >= thresh or i == len(_SIGFIG_THRESHOLDS) - 1:
            return Scaler(i + _SIGFIG_BASE, last.factor, last.prefix)
    raise AssertionError("unreachable")


def scale(value: float, binary: bool) -> str:
    """Format one value with its own scale (used for the geomean row)."""
    return common_scale([value], binary).format(value)
