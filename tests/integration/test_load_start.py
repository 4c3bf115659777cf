"""run_load's start_at_ns and phase_ns (what triple_py.bench.distributed gives each worker):
the clock starts at the given monotonic time, or at once and reported late, and an open
loop's schedule is shifted by the phase. Against the embedded server."""
import time

import pytest

from triple_py import _triple
from triple_py.testing import EchoServer


@pytest.fixture(scope="module")
def server():
    with EchoServer() as s:
        host, port = s.address.rsplit(":", 1)
        yield host, int(port)


def test_clock_starts_at_start_at(server):
    start = time.monotonic_ns() + 300_000_000
    r = _triple.run_load(*server, path=None, mode="unary", payload_size=16, concurrency=2,
                         connections=1, duration=0.1, warmup=0.05, start_at_ns=start)
    assert r["start_monotonic_ns"] == start and r["late_ns"] == 0
    assert time.monotonic_ns() >= start + 150_000_000  # warm-up and window came after it
    assert r["calls"] > 0


def test_a_start_already_past_starts_at_once_and_is_reported_late(server):
    start = time.monotonic_ns() - 50_000_000
    r = _triple.run_load(*server, path=None, mode="unary", payload_size=16, concurrency=2,
                         connections=1, duration=0.05, warmup=0.0, start_at_ns=start)
    assert r["late_ns"] >= 50_000_000
    assert r["start_monotonic_ns"] == start + r["late_ns"]


@pytest.mark.parametrize("phase_ms,calls", [(0, 3), (60, 2), (300, 0)])
def test_phase_shifts_the_open_loop_schedule(server, phase_ms, calls):
    """10 calls/s for 0.25 s: sends at 0, 100, 200 ms; shifted by 60 ms: 60, 160 ms (260 is
    past the window); by 300 ms: none."""
    r = _triple.run_load(*server, path=None, mode="unary", payload_size=16, concurrency=1,
                         connections=1, duration=0.25, warmup=0.0, rate=10.0,
                         phase_ns=phase_ms * 1_000_000)
    assert r["calls"] == calls


def test_bad_values_refused(server):
    with pytest.raises(ValueError, match="start_at_ns"):
        _triple.run_load(*server, path=None, mode="unary", payload_size=16, concurrency=1,
                         connections=1, duration=0.1, warmup=0.0, start_at_ns=-1)
    with pytest.raises(ValueError, match="phase_ns"):
        _triple.run_load(*server, path=None, mode="unary", payload_size=16, concurrency=1,
                         connections=1, duration=0.1, warmup=0.0, phase_ns=-1)
