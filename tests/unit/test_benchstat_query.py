"""Filter and projection syntax: error messages and offsets as in the reference."""

from __future__ import annotations

import pytest

from test_benchstat_helpers import import_benchstat

import_benchstat()
from triple_py.benchstat import parse, query  # noqa: E402
from triple_py.benchstat.projection import Filter  # noqa: E402


@pytest.mark.parametrize("text, message, offset", [
    ("a", "expected key:value", 0),
    ("a :", "expected key:value", 0),
    ("a:", "expected key:value", 0),
    ("", "expected key:value or subexpression", 0),
    ("()", "expected key:value or subexpression", 1),
    ("AND", "expected key:value or subexpression", 0),
    ('"a\\z":"b c"', "bad escape sequence", 0),
    ('a "b', "missing end quote", 2),
    ("(a:b", 'missing ")"', 4),
    ("(a:b))", 'unexpected ")"', 5),
    ("a:/b", 'missing close "/"', 2),
    ("a:/b/c", 'regexp must be followed by space or an operator (unescaped "/"?)', 5),
    ("a:(b c)", "value list must be separated by OR", 5),
    ("a:(b AND c)", "value list must be separated by OR", 5),
    ("a:(b OR AND)", "expected value", 8),
    ("a:()", "expected value", 3),
])
def test_filter_syntax_errors(text, message, offset):
    with pytest.raises(query.QuerySyntaxError) as info:
        query.parse_filter(text)
    assert (info.value.msg, info.value.offset) == (message, offset)


@pytest.mark.parametrize("text, message, offset", [
    ("a,,b", "expected key", 2),
    ("a@", "expected named sort order or parenthesized list", 2),
    ("a@,b", "expected named sort order or parenthesized list", 2),
    ("a@(", "missing )", 3),
    ("a@(,", "missing )", 3),
    ("a@()", "nothing to match", 3),
])
def test_projection_syntax_errors(text, message, offset):
    with pytest.raises(query.QuerySyntaxError) as info:
        query.parse_projection(text)
    assert (info.value.msg, info.value.offset) == (message, offset)


def test_projection_parsing():
    fields = query.parse_projection("a, b@num c@(1 2) .name")
    assert [(f.key, f.order, f.fixed) for f in fields] == [
        ("a", "first", []), ("b", "num", []), ("c", "fixed", ["1", "2"]), (".name", "first", [])]
    assert query.parse_projection("") == []


def test_error_text_has_caret_under_offset():
    with pytest.raises(query.QuerySyntaxError) as info:
        query.parse_filter("x:1 a:(b c)")
    assert str(info.value) == ("syntax error: value list must be separated by OR\n"
                               "\tx:1 a:(b c)\n\t         ^")


def _result(name, config=(), units=("ns/op", "B/op")):
    cfg = [parse.ConfigEntry(".file", "f", False)] + [parse.ConfigEntry(k, v, True) for k, v in config]
    return parse.Result(cfg, name, 1, [parse.make_value(1.0, u) for u in units])


@pytest.mark.parametrize("text, name, keep", [
    ("*", "A", ["sec/op", "B/op"]),
    ("-*", "A", []),
    (".name:A", "A/x=1-8", ["sec/op", "B/op"]),
    (".name:B", "A/x=1-8", []),
    (".fullname:A/x=1-8", "A/x=1-8", ["sec/op", "B/op"]),
    ("/x:1", "A/x=1-8", ["sec/op", "B/op"]),
    ("/gomaxprocs:8", "A/x=1-8", ["sec/op", "B/op"]),
    ("/x:/^[0-9]$/ goos:linux", "A/x=1", ["sec/op", "B/op"]),
    ("goos:darwin OR .unit:ns/op", "A", ["sec/op"]),
    (".unit:sec/op", "A", ["sec/op"]),
    ("-.unit:ns/op", "A", ["B/op"]),
    (".unit:(B/op OR ns/op) .name:A", "A", ["sec/op", "B/op"]),
    ('.file:"f"', "A", ["sec/op", "B/op"]),
])
def test_filter_semantics(text, name, keep):
    res = _result(name, config=[("goos", "linux")])
    kept = Filter(text).apply(res)
    assert kept == bool(keep)
    assert [v.unit for v in res.values] == keep
