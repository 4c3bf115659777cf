"""Blocking callers woken in turn (csrc/tri_handoff.h): no caller is ever left asleep.

The I/O thread queues finished blocking calls while a woken caller still holds the turn,
and that caller wakes the next one as it goes back to Python.  A lost wake-up would show
as a hang (the probes run in a child process with a hard timeout), or, since every wait
is sliced, as calls that only end through the I/O thread's stall check or their own
50 ms slice: the probes also bound those.
"""
from __future__ import annotations

import textwrap

import pytest

from _helpers import probe_child
from triple_py.testing import EchoServer

HARD_TIMEOUT = 120  # seconds: a probe still running then has hung

PRELUDE = textwrap.dedent("""\
    import random, sys, threading, time
    import triple_py
    from triple_py import _triple
    ADDR = sys.argv[1]
    UNARY = "/benchmark.BenchmarkService/UnaryCall"
    Code = triple_py.StatusCode
    errors = []

    def run_threads(n, fn):
        ts = [threading.Thread(target=fn, args=(i,)) for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors[:5]
""")


@pytest.fixture(scope="module")
def server():
    with EchoServer() as srv:
        yield srv


def probe(server: EchoServer, body: str) -> str:
    """Runs PRELUDE and `body` in a child; fails the test if it hangs or fails."""
    return probe_child(PRELUDE, body, server.address, HARD_TIMEOUT)


def test_every_call_completes_with_many_threads(server):
    """64 threads x 400 calls: small ones (queued and handed on), 100 KiB ones (woken at
    once) and threads that block elsewhere between calls (a sleep, an Event: the turn
    must not wait for them).  Every call returns its own echo; hand-offs did the waking,
    the stall check almost none of it."""
    out = probe(server, """
        ch = triple_py.insecure_channel(ADDR)
        stub = ch.unary_unary(UNARY)
        gate = threading.Event()
        worst = [0.0]

        def work(i):
            rnd = random.Random(i)
            try:
                for n in range(400):
                    size = 100 * 1024 if n % 37 == 0 else rnd.randrange(1, 200)
                    request = f"{i}:{n}:".encode() + bytes([i % 256]) * size
                    started = time.monotonic()
                    if stub(request, timeout=30) != request:
                        raise AssertionError(f"thread {i} call {n}: wrong echo")
                    worst[0] = max(worst[0], time.monotonic() - started)
                    if i % 4 == 1:
                        time.sleep(0.0002)  # the GIL released outside the library
                    elif i % 4 == 2:
                        gate.wait(0.0001)
            except BaseException as e:
                errors.append(repr(e))

        before = _triple.handoff_stats()
        run_threads(64, work)
        after = _triple.handoff_stats()
        ch.close()
        d = {k: after[k] - before[k] for k in after}
        print(d, worst[0])
        assert d["handed"] > 1000, d
        woken = d["handed"] + d["started"] + d["lapsed"] + d["restarted"]
        assert woken <= d["queued"], d
        assert d["restarted"] <= max(50, d["queued"] // 10), d  # a loaded machine stalls some
        assert worst[0] < 10, worst[0]
        print("OK")
    """)
    assert out.rstrip().endswith("OK")


def test_deadlines_and_cancels_during_hand_off(server):
    """Deadlines expiring and futures cancelled while plain calls are handed on around
    them: each ends with its own status, the plain calls with their echo, nothing hangs
    (the I/O thread completes expired and cancelled calls into the same queue)."""
    out = probe(server, """
        ch = triple_py.insecure_channel(ADDR)
        stub = ch.unary_unary(UNARY)
        counts = {"ok": 0, "deadline": 0, "cancelled": 0}
        lock = threading.Lock()

        def count(key):
            with lock:
                counts[key] += 1

        def work(i):
            try:
                for n in range(150):
                    kind = (i + n) % 5
                    if kind == 0:  # expires in flight
                        try:
                            stub(b"slow", timeout=0.02, metadata=[("x-delay-ms", "300")])
                            raise AssertionError("a slow call beat its deadline")
                        except triple_py.RpcError as e:
                            assert e.code() == Code.DEADLINE_EXCEEDED, e
                        count("deadline")
                    elif kind == 1:  # cancelled while in flight, then waited on
                        f = stub.future(b"slow", timeout=30, metadata=[("x-delay-ms", "300")])
                        time.sleep(0.001)
                        assert f.cancel()
                        try:
                            f.result(timeout=10)
                            raise AssertionError("a cancelled future has a result")
                        except triple_py.FutureCancelledError:
                            pass
                        count("cancelled")
                    else:
                        request = f"{i}:{n}".encode()
                        assert stub(request, timeout=30) == request
                        count("ok")
            except BaseException as e:
                errors.append(repr(e))

        run_threads(32, work)
        ch.close()
        print(counts)
        assert counts == {"ok": 32 * 90, "deadline": 32 * 30, "cancelled": 32 * 30}, counts
        print("OK")
    """)
    assert out.rstrip().endswith("OK")


def test_turn_passes_across_channels_and_fork(server):
    """Callers on two channels share the turn (the GIL is per process); a child forked
    while calls are in flight makes its own calls with an empty queue."""
    out = probe(server, """
        import os
        chans = [triple_py.insecure_channel(ADDR) for _ in range(2)]
        stubs = [c.unary_unary(UNARY) for c in chans]
        stop = threading.Event()

        def work(i):
            try:
                n = 0
                while not stop.is_set():
                    request = f"{i}:{n}".encode()
                    assert stubs[i % 2](request, timeout=30) == request
                    n += 1
            except BaseException as e:
                errors.append(repr(e))

        ts = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for t in ts:
            t.start()
        time.sleep(0.3)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with triple_py.insecure_channel(ADDR) as fresh:
                    call = fresh.unary_unary(UNARY)
                    done = []
                    def child_work(i):
                        for n in range(200):
                            done.append(call(b"c%d" % i, timeout=10))
                    cts = [threading.Thread(target=child_work, args=(i,)) for i in range(8)]
                    for t in cts:
                        t.start()
                    for t in cts:
                        t.join()
                    assert len(done) == 1600
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        stop.set()
        for t in ts:
            t.join()
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert not errors, errors[:5]
        for c in chans:
            c.close()
        print("OK")
    """)
    assert out.rstrip().endswith("OK")
