"""Unit tidying, unit classes, per-row scaling and Go number formatting."""

from __future__ import annotations

import math

import pytest

from test_benchstat_helpers import import_benchstat

import_benchstat()
from triple_py.benchstat import gofmt, units  # noqa: E402


@pytest.mark.parametrize("unit, tidied, factor", [
    ("ns/op", "sec/op", 1e-9),
    ("MB/s", "B/s", 1e6),
    ("us/op", "us/op", 1.0),
    ("B/op", "B/op", 1.0),
    ("allocs/op", "allocs/op", 1.0),
    ("ns/frame", "sec/frame", 1e-9),
    ("frames/ns", "frames/ns", 1.0),  # denominators are left alone
    ("MB*ns/op", "B*sec/op", 1e6 / 1e9),
    ("text-MB", "text-B", 1e6),
    ("nsec/op", "nsec/op", 1.0),  # only whole tokens
])
def test_tidy_unit(unit, tidied, factor):
    assert units.tidy_unit(unit) == (tidied, factor)


def test_tidy_uses_multiplication_like_go():
    assert units.tidy(1000.5, "ns/op") == (1000.5 * 1e-9, "sec/op")
    assert units.tidy(6, "ns/op")[0] == 6.000000000000001e-09


@pytest.mark.parametrize("unit, binary", [
    ("B/op", True), ("B/s", True), ("text-bytes", True), ("MB", True),
    ("sec/op", False), ("allocs/op", False), ("ops/B", False), ("KB/op", False),
])
def test_unit_class(unit, binary):
    assert units.is_binary_unit(unit) is binary


@pytest.mark.parametrize("values, binary, texts", [
    ([1.718e-6], False, ["1.718µ"]),
    ([1000.5e-9, 968.5e-9], False, ["1000.5n", "968.5n"]),
    ([237.5e-9, 56.75e-9], False, ["237.50n", "56.75n"]),
    ([10.048 * 2 ** 30, 2.105 * 2 ** 30], True, ["10.048Gi", "2.105Gi"]),
    ([1536.0], True, ["1.500Ki"]),
    ([12.0, 9.0], False, ["12.000", "9.000"]),
    ([1023.9 * 1024], True, ["1023.9Ki"]),
    ([0.0, 0.0], False, ["0.000", "0.000"]),
    ([64.0], True, ["64.00"]),
    ([1.5e13], False, ["15.00T"]),
    ([1.5e-12], False, ["0.001500n"]),
])
def test_row_scaling_examples(values, binary, texts):
    scaler = units.common_scale(values, binary)
    assert [scaler.format(v) for v in values] == texts


def test_scale_uses_smallest_nonzero_magnitude():
    scaler = units.common_scale([0.0, -2e-6, 3e-3], False)
    assert scaler.format(3e-3) == "3000.000µ"


@pytest.mark.parametrize("value, text", [
    (1e6, "1e+06"), (9.685000000000001e-07, "9.685000000000001e-07"), (1536.0, "1536"),
    (120.0, "120"), (6.000000000000001e-09, "6.000000000000001e-09"), (0.95, "0.95"),
    (1.0, "1"), (123456.7, "123456.7"), (1e-5, "1e-05"), (0.0001, "0.0001"),
    (0.0, "0"), (-2.5e-7, "-2.5e-07"), (1e21, "1e+21"), (math.inf, "+Inf"),
    (-math.inf, "-Inf"), (math.nan, "NaN"), (2.2588824670619782e-07, "2.2588824670619782e-07"),
])
def test_go_v_formatting(value, text):
    assert gofmt.format_v(value) == text


def test_go_fixed_formatting_of_specials():
    assert gofmt.format_fixed(math.inf, 2, plus=True) == "+Inf"
    assert gofmt.format_fixed(math.nan, 0) == "NaN"
    assert gofmt.format_fixed(-0.001, 2, plus=True) == "-0.00"
