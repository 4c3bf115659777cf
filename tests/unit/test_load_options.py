"""run_load's own table (csrc/binding/load_options.c, ``_triple.LOAD_OPTIONS``): the rows
are well formed, run_load parses exactly those keywords (plus the channel options) by
walking them, and a value outside a row's range is refused with an error naming it."""
from __future__ import annotations

import math
from typing import Any

import pytest

from triple_py import _triple
from triple_py._load_options import LOAD_OPTIONS, LoadOption, load_option
from triple_py._options import ADDRESS_KINDS, CORE_OPTIONS

TYPES = {"int", "float", "bool", "str", "choice", "schedule", "requests", "endpoints",
         "callable"}
# A port nothing listens on: a configuration the walker accepts ends in ConnectionError
# at the first call, before anything runs.
CLOSED = ("127.0.0.1", 1)
GOOD: dict[str, Any] = {"path": None, "mode": "unary", "payload_size": 8,
                        "concurrency": 1, "connections": 1, "duration": 0.1, "warmup": 0}


def test_rows_are_well_formed() -> None:
    names = [o.name for o in LOAD_OPTIONS]
    assert len(names) == len(set(names))
    assert not set(names) & {o.name for o in CORE_OPTIONS}, "a load keyword shadows a " \
        "channel option"
    for o in LOAD_OPTIONS:
        assert o.type in TYPES, o
        assert o.doc and "\n" not in o.doc, o
        assert isinstance(o.unit, str) and isinstance(o.required, bool), o
        if o.type in ("int", "float", "requests", "endpoints"):
            assert o.min is not None and o.max is not None and o.min <= o.max, o
        if o.type in ("int", "float"):
            assert o.min <= o.default <= o.max, o
        if o.type == "choice":
            assert o.default in o.choices, o
        else:
            assert o.choices == (), o


def test_ranges_are_the_load_generators() -> None:
    """A row with a limit in the load generator's own table has that range (an int row
    within its C type's: start_at_ns stops at 2**63-1)."""
    for name, (low, high) in _triple.LOAD_LIMITS.items():
        row = load_option(name)
        assert row.min == low, row
        assert row.max == high or row.max == 2**63 - 1 < high, row


def test_required_rows() -> None:
    required = {o.name for o in LOAD_OPTIONS if o.required}
    assert required == set(GOOD)
    for name in required:
        kwargs = {k: v for k, v in GOOD.items() if k != name}
        with pytest.raises(TypeError, match=f"missing required argument '{name}'"):
            _triple.run_load(*CLOSED, **kwargs)


def bad_value(o: LoadOption) -> Any:
    """A value of the row's type outside its range, or of the wrong type."""
    if o.type == "int":
        return o.max + 1
    if o.type == "float":
        return math.inf
    if o.type in ("requests", "endpoints"):
        return [] if o.min > 0 else [("127.0.0.1", "1", 0)] * (o.max + 1)
    return {"bool": "yes", "str": 5, "choice": "nope", "schedule": "x",
            "callable": 5}[o.type]


@pytest.mark.parametrize("row", LOAD_OPTIONS, ids=lambda o: o.name)
def test_each_row_is_parsed_and_range_checked(row: LoadOption) -> None:
    with pytest.raises((TypeError, ValueError), match=f"'{row.name}'"):
        _triple.run_load(*CLOSED, **{**GOOD, row.name: bad_value(row)})


@pytest.mark.parametrize("name", ["hist_digits", "phase_ns", "count", "rate", "timeout",
                                  "warmup", "stream_messages"])
def test_a_rows_bounds_are_accepted(name: str) -> None:
    row = load_option(name)
    for value in (row.min, row.max):
        with pytest.raises(ConnectionError):
            _triple.run_load(*CLOSED, **{**GOOD, name: value})


def test_keywords_beyond_both_tables_are_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        _triple.run_load(*CLOSED, **GOOD, bogus=1)
    # ... and a channel option goes to the channel options' walker, with its range.
    with pytest.raises(ValueError, match="write_buffer_size"):
        _triple.run_load(*CLOSED, **GOOD, write_buffer_size=2**31)


def test_mode_choices_and_aliases() -> None:
    assert load_option("mode").choices == ("unary", "unary_stream_path", "bidi")
    for mode in (*load_option("mode").choices, "fastpath", "stream_path", 0, 2):
        with pytest.raises(ConnectionError):
            _triple.run_load(*CLOSED, **{**GOOD, "mode": mode})


def test_endpoints_take_address_kinds_by_name() -> None:
    assert ADDRESS_KINDS == {"tcp": 0, "unix": 1, "unix-abstract": 2}
    for kind in ("tcp", ADDRESS_KINDS["tcp"]):
        with pytest.raises(ConnectionError):
            _triple.run_load(*CLOSED, **GOOD, endpoints=[("127.0.0.1", "1", kind)])
    with pytest.raises(ValueError, match="address kind 'bogus'"):
        _triple.run_load(*CLOSED, **GOOD, endpoints=[("127.0.0.1", "1", "bogus")])
