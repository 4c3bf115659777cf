"""Go ``fmt`` number formatting that differs from Python's.

``%v`` of a float64 in Go is the shortest round-trip representation in
``%g`` style, switching to exponent form when the decimal exponent is
below -4 or at least 6 (``1e+06``, ``9.685000000000001e-07``, ``1536``).
Infinities and NaN print as ``+Inf``, ``-Inf`` and ``NaN``.
"""

from __future__ import annotations

import math

__all__ = ["format_v", "format_fixed"]


def _special(x: float, plus: bool) -> str:
    if math.isnan(x):
        return "+NaN" if plus else "NaN"
    return "+Inf" if x > 0 else "-Inf"


def _shortest_digits(x: float):
    """Return (digits, point) with x == 0.digits * 10**point, for x > 0."""
    text = repr(x)
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    leading_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    point = len(whole) + exponent - leading_zeros
    digits = digits.rstrip("0")
    return digits, point


def format_v(x: float) -> str:
    """Format a float64 like Go's ``fmt.Sprint``/``%v``."""
    if math.isnan(x) or math.isinf(x):
        return _special(x, False)
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign = "-" if x < 0 else ""
    digits, point = _shortest_digits(abs(x))
    exp = point - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return "%s%se%s%02d" % (sign, mant, "-" if exp < 0 else "+", abs(exp))
    if point <= 0:
        return sign + "0." + "0" * (-point) + digits
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return sign + digits[:point] + "." + digits[point:]


def format_fixed(x: float, prec: int, plus: bool = False) -> str:
    """``%.{prec}f`` (``%+.{prec}f`` when plus) with Go's Inf/NaN spelling."""
    if math.isnan(x) or math.isinf(x):
        return _special(x, plus)
    return ("%+.*f" if plus else "%.*f") % (prec, x)
