"""run_load takes its channel options the way Channel() does (issue 19): every keyword that is
not the load's own is a row of ``_triple.CHANNEL_OPTIONS``, parsed by the same walker of the
C table, and every connection of the load is made with it.

The server is `RawH2Server` (_triple_helpers.py), which records each request's headers, so
the tests read on the wire what the load's connections sent.  Every load is bounded by a
count and a per-call timeout.
"""
from __future__ import annotations

from typing import Any

import pytest

from triple_py import _triple
from triple_py.bench.arms.loadgen import run_c_load
from _triple_helpers import RawH2Server

COUNT = 4
DEFAULT_USER_AGENT = {row[1]: row[5] for row in _triple.CHANNEL_OPTIONS}["user_agent"]


def load(server: RawH2Server, mode: str = "unary", **options: Any) -> dict:
    """COUNT Triple-wire calls over 2 connections to `server` with `options`."""
    return _triple.run_load("127.0.0.1", server.port, path=None, mode=mode, payload_size=16,
                            concurrency=1, connections=2, duration=0.0, warmup=0.0,
                            count=COUNT, timeout=3.0, **{"wire": "triple", **options})


@pytest.mark.parametrize("mode", ["unary", "unary_stream_path"])
def test_options_the_load_never_named_reach_every_connection(mode):
    """service_group, service_version and user_agent were never keywords of run_load: given
    as Channel() takes them, every request of the load carries them."""
    with RawH2Server() as server:
        result = load(server, mode, service_group="g", service_version="1.0.0",
                      user_agent="load-test/1")
    assert (result["calls"], result["errors"]) == (COUNT, 0)
    assert len(server.requests) >= COUNT
    for request in server.requests:
        assert request.get("tri-service-group") == "g"
        assert request.get("tri-service-version") == "1.0.0"
        assert request.get("user-agent") == "load-test/1"


def test_the_bench_harness_passes_any_row_through_connection():
    """The harness's ``connection`` dict is keyed by the table's names, so a row the harness
    never names reaches the load too."""
    with RawH2Server() as server:
        result = run_c_load(arm="c", mode="fastpath", target=server.address, method=None,
                            payload_size=16, concurrency=1, connections=1, duration=0.0,
                            warmup=0.0, count=COUNT, timeout=3.0, wire="triple",
                            connection={"service_group": "bench-g"})
    assert result.errors == 0
    assert {r.get("tri-service-group") for r in server.requests} == {"bench-g"}


def test_without_options_the_defaults_go_on_the_wire():
    """No option given: the table's defaults, as before (no group, the core's user agent)."""
    with RawH2Server() as server:
        result = load(server)
    assert result["errors"] == 0
    assert result["write_buffer_size"] == {r[1]: r[5] for r in _triple.CHANNEL_OPTIONS}[
        "write_buffer_size"]
    request = server.last()
    assert request.get("tri-service-group") is None
    assert request.get("user-agent") == DEFAULT_USER_AGENT


@pytest.mark.parametrize("wire", [1, "triple"])
def test_the_load_keywords_that_were_channel_options_keep_working(wire):
    """wire (by index or name) and the write buffer, as the harness always passed them."""
    with RawH2Server() as server:
        result = load(server, wire=wire, write_buffer_size=0, write_buffer_delay_us=50)
    assert result["errors"] == 0
    assert (result["write_buffer_size"], result["write_buffer_delay_us"]) == (0, 50)
    assert server.last().get("content-type") == "application/proto"  # Triple unary


REQUIRED = dict(path=None, mode="unary", payload_size=16, concurrency=1, connections=1,
                duration=0.0, warmup=0.0, count=1)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"compress": 2}, TypeError, "run_load() got an unexpected keyword argument 'compress'"),
    ({"write_buffer_size": -1}, ValueError,
     "channel option write_buffer_size must be in [0, 2147483647], not -1"),
    ({"keepalive_time_ms": "soon"}, TypeError,
     "channel option keepalive_time_ms must be an int, not str"),
    ({"wire": "carrier-pigeon"}, ValueError, "channel option wire: unknown value"),
    ({"concurrency": "2"}, TypeError, "run_load() argument 'concurrency' must be an int"),
    ({"duration": None}, TypeError, "run_load() argument 'duration' must be a number"),
    ({"payload_size": -1}, ValueError,
     "run_load() argument 'payload_size' must be in [0, 67108864], not -1"),
])
def test_bad_keywords_are_refused_before_any_connection(kwargs, error, message):
    """Port 1 is never dialled: the keywords are checked first, with Channel()'s messages
    for the channel options."""
    with pytest.raises(error) as info:
        _triple.run_load("127.0.0.1", 1, **{**REQUIRED, **kwargs})
    assert message in str(info.value)


def test_missing_and_positional_arguments_are_refused():
    partial = {k: v for k, v in REQUIRED.items() if k != "warmup"}
    with pytest.raises(TypeError, match="missing required argument 'warmup'"):
        _triple.run_load("127.0.0.1", 1, **partial)
    with pytest.raises(TypeError):
        _triple.run_load("127.0.0.1", 1, None, **{k: v for k, v in REQUIRED.items()
                                                  if k != "path"})
