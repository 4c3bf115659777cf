"""run_load's result is its table: the dict has one key per row of ``_triple.LOAD_RESULTS``
(csrc/binding/load_results.c), in the table's order, with values of the row's type; and a
real run's figures reach a BenchResult with every row that BenchResult has no field for
in ``extra``."""
from __future__ import annotations

import pytest

from triple_py import _load_results, _triple
from triple_py.bench.arms.loadgen import result_from_load
from triple_py.bench.record.load_figures import extra_figures
from triple_py.testing import EchoServer

#: Python types of the rows' values, by their type.
PYTHON_TYPES = {"count": int, "int": int, "float": float, "bool": bool, "str": str,
                "latency": dict, "histogram": list, "series": dict, "codes": list,
                "cpu": dict, "counters": dict, "ratios": dict}


@pytest.fixture(scope="module")
def server():
    with EchoServer() as s:
        yield s


def _load(server, **kw):
    args = dict(path=None, mode="unary", payload_size=16, concurrency=2, connections=1,
                duration=0, warmup=0, count=200)
    return _triple.run_load("127.0.0.1", server.port, **{**args, **kw})


@pytest.mark.parametrize("mode", ["unary", "bidi"])
def test_every_key_is_a_row_and_every_row_a_key(server, mode):
    raw = _load(server, mode=mode, stream_messages=2)
    assert list(raw) == [r.name for r in _load_results.LOAD_RESULTS]
    for row in _load_results.LOAD_RESULTS:
        assert isinstance(raw[row.name], PYTHON_TYPES[row.type]), row
        assert row.doc, row
    assert raw["calls"] >= 200 and raw["interrupted"] is False
    assert raw["streams"] == (raw["calls"] if mode == "bidi" else 0)


def test_a_stopped_run_says_so_in_its_row(server):
    raw = _load(server, count=0, duration=30, stop=lambda: True)
    assert raw["interrupted"] is True and list(raw) == [
        r.name for r in _load_results.LOAD_RESULTS]


def test_a_real_result_keeps_every_unmodelled_row_in_extra(server):
    raw = _load(server)
    result = result_from_load(raw, arm="fastpath", mode="fastpath", target="t")
    assert extra_figures(raw) and all(result.extra[k] == v
                                      for k, v in extra_figures(raw).items())
    assert result.calls == raw["calls"] and result.method == raw["path"]
    assert result.warmup["calls"] == raw["warmup_calls"]
