"""Who drives the C load generator (csrc/tri_load.h, "Who runs the loop").

Closed-loop unary loads run on the connection's own I/O thread (an I/O hook): completions
are recorded and replaced where they were read, with no eventfd between the two threads.
These tests check that such runs count exactly what a driver-thread run counts, that the
loop really runs on the I/O thread (no wake-ups of the connection), and that a run survives
its connection dying under it (the stand-by driver thread starts the next connection).
"""
from __future__ import annotations

import threading
import time

import pytest

from triple_py.bench import run
from triple_py.testing import EchoServer
from triple_py_testing.faults import FaultProxy

DRIVERS = {"io": {}, "threads": {"driver_threads": True}}


@pytest.fixture(scope="module")
def server():
    with EchoServer() as s:
        yield s


@pytest.mark.parametrize("mode", ["fastpath", "stream-path"])
@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_count_runs_are_exact_with_either_driver(server, mode, driver):
    r = run(server.address, mode=mode, count=500, duration=0, warmup=0, concurrency=16,
            options=DRIVERS[driver])
    assert 500 <= r.calls <= 500 + 16 and r.errors == 0
    assert r.status_codes == {"OK": r.calls}
    assert r.latency.count == r.calls and r.per_call["bytes_read"] > 0


def test_io_driven_loop_wakes_nobody(server):
    """On the I/O thread, calls started from the hook need no eventfd write to the
    connection: the wake-up counter stays (almost) still, while a driver-thread run
    wakes its connection for every batch it submits."""
    io = run(server.address, mode="fastpath", duration=0.5, warmup=0.1, concurrency=32)
    threads = run(server.address, mode="fastpath", duration=0.5, warmup=0.1, concurrency=32,
                  options={"driver_threads": True})
    assert io.errors == threads.errors == 0 and io.calls > 1000
    # A stalled I/O thread (a loaded CI machine) may let the stand-by driver make a pass.
    assert io.counters["wakeups"] <= io.calls / 100
    assert threads.counters["wakeups"] > threads.calls / 1000
    assert io.cpu["driver_s"] == 0


def test_io_driven_run_survives_its_connection_dying(server):
    """Reset connections under an I/O-driven run: the calls on them fail UNAVAILABLE, the
    stand-by driver notices the silent loop and starts the calls that reconnect (after
    the connection backoff of up to 1.2 s that the failed attempts in the fault window
    cause), and the run ends on time with successes after the fault."""
    with FaultProxy(server.address) as proxy:
        result = {}

        def load() -> None:
            result["r"] = run(proxy.address, mode="fastpath", duration=3.0, warmup=0,
                              concurrency=16, timeout=2.0)

        t = threading.Thread(target=load)
        started = time.monotonic()
        t.start()
        time.sleep(0.4)
        proxy.set_fault("reset")
        time.sleep(0.3)
        proxy.clear()
        t.join(timeout=30)
        assert not t.is_alive()
        assert time.monotonic() - started < 10
    r = result["r"]
    assert r.status_codes.get("UNAVAILABLE", 0) > 0
    assert set(r.status_codes) <= {"OK", "UNAVAILABLE"}
    assert r.counters["connects"] >= 2
    # The last second is after the fault and the backoff: calls succeed again.
    assert r.series["calls"][-1] > r.series["errors"][-1]
