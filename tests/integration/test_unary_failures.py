"""How triple_py unary calls fail (issue 2, "Failure behaviour"): deadlines, no server,
lost connections, size limits both ways, malformed responses, HTTP errors, status
parsing, close() with calls pending, Ctrl-C, and bad arguments."""
import os
import signal
import time

import pytest

import triple_py
from _helpers import (MiB, TIMEOUT, LineReader, closed_port, os_thread_count, peak_rss_bytes,
                      quiet_stats, reset_peak_rss, rogue, rogue_stats, rpc_error, start_child,
                      unary, wait_for)
from peers import h2_rogue_server as rogue_peer

Code = triple_py.StatusCode
# A real peer enforces the deadline too (from grpc-timeout, on its own clock) and may end the
# call a few microseconds before the client's deadline.
SERVER_CLOCK_SLACK = 0.01


@pytest.fixture
def channel(peer):
    with triple_py.insecure_channel(peer.address) as ch:
        yield ch


@pytest.fixture
def rogue_channel(rogue_server):
    with triple_py.insecure_channel(rogue_server.address) as ch:
        yield ch


# --- deadlines -----------------------------------------------------------------------------

def test_deadline_exceeded(channel):
    started = time.monotonic()
    error = rpc_error(unary(channel), b"slow", metadata=[("x-delay-ms", "10000")], timeout=0.3)
    elapsed = time.monotonic() - started
    assert error.code() is Code.DEADLINE_EXCEEDED
    assert 0.3 - SERVER_CLOCK_SLACK <= elapsed < 0.8, elapsed
    assert unary(channel)(b"next", timeout=TIMEOUT) == b"next"
    assert channel.stats()["connects"] == 1


def test_deadline_exceeded_future(channel):
    started = time.monotonic()
    future = unary(channel).future(b"slow", metadata=[("x-delay-ms", "10000")], timeout=0.3)
    assert future.exception(timeout=5).code() is Code.DEADLINE_EXCEEDED
    assert 0.3 - SERVER_CLOCK_SLACK <= time.monotonic() - started < 0.8
    assert future.code() is Code.DEADLINE_EXCEEDED
    with pytest.raises(triple_py.RpcError):
        future.result(timeout=0)


def test_deadline_enforced_locally_and_stream_reset(rogue_channel):
    """The rogue NeverAnswer ignores grpc-timeout: the client ends the call itself and
    resets the stream."""
    resets = rogue_stats(rogue_channel)["resets"]
    started = time.monotonic()
    error = rpc_error(rogue(rogue_channel, "NeverAnswer"), b"x", timeout=0.3)
    elapsed = time.monotonic() - started
    assert error.code() is Code.DEADLINE_EXCEEDED
    assert 0.3 <= elapsed < 0.8, elapsed
    assert wait_for(lambda: rogue_stats(rogue_channel)["resets"] > resets, 5), \
        "the server never saw RST_STREAM for the expired call"
    assert rogue(rogue_channel, "Echo")(b"next", timeout=TIMEOUT) == b"next"


def test_many_deadlines_at_once(channel):
    call = unary(channel)
    started = time.monotonic()
    pending = [call.future(b"slow", metadata=[("x-delay-ms", "10000")], timeout=0.2 + i / 100)
               for i in range(20)]
    for future in pending:
        assert future.exception(timeout=5).code() is Code.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 1.5
    assert call(b"fast", timeout=TIMEOUT) == b"fast"


@pytest.mark.parametrize("timeout", [0, -1, -0.5])
def test_zero_or_negative_timeout(channel, timeout):
    started = time.monotonic()
    error = rpc_error(unary(channel), b"x", timeout=timeout)
    assert error.code() is Code.DEADLINE_EXCEEDED
    future = unary(channel).future(b"x", timeout=timeout)
    assert future.exception(timeout=5).code() is Code.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 0.5
    assert unary(channel)(b"ok", timeout=TIMEOUT) == b"ok"


# --- connection failures -------------------------------------------------------------------

def test_nothing_listening():
    with triple_py.insecure_channel(f"127.0.0.1:{closed_port()}") as channel:
        started = time.monotonic()
        error = rpc_error(unary(channel), b"x", timeout=TIMEOUT)
        assert error.code() is Code.UNAVAILABLE
        future = unary(channel).future(b"x", timeout=TIMEOUT)
        assert future.exception(timeout=TIMEOUT).code() is Code.UNAVAILABLE
        assert time.monotonic() - started < 2


def test_connection_lost_fails_every_call_in_flight(rogue_channel):
    waiting = [rogue(rogue_channel, "NeverAnswer").future(b"x", timeout=30) for _ in range(5)]
    # calls go out in order on the one connection: once this answers, the 5 are on the wire
    assert rogue(rogue_channel, "Echo")(b"barrier", timeout=TIMEOUT) == b"barrier"
    assert not any(f.done() for f in waiting)
    connects = rogue_channel.stats()["connects"]
    started = time.monotonic()
    error = rpc_error(rogue(rogue_channel, "DropConnection"), b"x", timeout=TIMEOUT)
    assert error.code() is Code.UNAVAILABLE
    for future in waiting:
        assert future.exception(timeout=5).code() is Code.UNAVAILABLE
    assert time.monotonic() - started < 2
    # the next call opens a new connection
    assert rogue(rogue_channel, "Echo")(b"again", timeout=TIMEOUT) == b"again"
    assert rogue_channel.stats()["connects"] == connects + 1


def test_connection_lost_then_blocking_calls_in_threads(rogue_channel):
    """Blocking calls in other threads are failed too, and return at once."""
    from concurrent import futures

    def blocked_call():
        return rpc_error(rogue(rogue_channel, "NeverAnswer"), b"x", timeout=30).code()

    calls = rogue_channel.stats()["calls"]
    with futures.ThreadPoolExecutor(4) as pool:
        results = [pool.submit(blocked_call) for _ in range(4)]
        assert wait_for(lambda: rogue_channel.stats()["calls"] >= calls + 4, 5)
        assert rogue(rogue_channel, "Echo")(b"barrier", timeout=TIMEOUT) == b"barrier"
        assert not any(r.done() for r in results)
        error = rpc_error(rogue(rogue_channel, "DropConnection"), b"x", timeout=TIMEOUT)
        assert error.code() is Code.UNAVAILABLE
        assert [r.result(timeout=5) for r in results] == [Code.UNAVAILABLE] * 4


# --- size limits ---------------------------------------------------------------------------

def test_response_over_receive_limit(peer):
    options = [("grpc.max_receive_message_length", 1000)]
    with triple_py.insecure_channel(peer.address, options=options) as channel:
        call = unary(channel)
        # x-response-size N answers a BenchmarkResponse: N bytes of payload + 3 bytes of tag
        assert len(call(b"", metadata=[("x-response-size", "990")], timeout=TIMEOUT)) == 993
        error = rpc_error(call, b"", metadata=[("x-response-size", "1000")], timeout=TIMEOUT)
        assert error.code() is Code.RESOURCE_EXHAUSTED
        error = rpc_error(call, b"", metadata=[("x-response-size", str(2 * MiB))],
                          timeout=TIMEOUT)
        assert error.code() is Code.RESOURCE_EXHAUSTED
        assert call(b"still works", timeout=TIMEOUT) == b"still works"


def test_default_receive_limit_is_4_mib(channel):
    call = unary(channel)
    assert len(call(os.urandom(4 * MiB), timeout=TIMEOUT)) == 4 * MiB
    error = rpc_error(call, os.urandom(4 * MiB + 1), timeout=TIMEOUT)
    assert error.code() is Code.RESOURCE_EXHAUSTED


@pytest.mark.rss
def test_huge_response_is_not_buffered(rogue_channel):
    """A response declaring 100 MiB fails at once with RESOURCE_EXHAUSTED; the client
    neither buffers it nor reads it to the end (it resets the stream)."""
    huge_before = len(rogue_stats(rogue_channel)["huge_sent"])
    assert reset_peak_rss(), "cannot reset VmHWM through /proc/self/clear_refs"
    peak_before = peak_rss_bytes()
    started = time.monotonic()
    error = rpc_error(rogue(rogue_channel, "HugeResponse"), b"x", timeout=TIMEOUT)
    elapsed = time.monotonic() - started
    assert error.code() is Code.RESOURCE_EXHAUSTED
    assert elapsed < 1, elapsed
    assert peak_rss_bytes() - peak_before < 32 * MiB, "the response was buffered"
    assert wait_for(lambda: len(rogue_stats(rogue_channel)["huge_sent"]) > huge_before, 5), \
        "the server never saw the stream end"
    sent = rogue_stats(rogue_channel)["huge_sent"][-1]
    assert sent < 100 * MiB, f"the server sent {sent} bytes before the client reset"
    assert rogue(rogue_channel, "Echo")(b"next", timeout=TIMEOUT) == b"next"


def test_send_over_limit_sends_nothing(peer):
    options = [("grpc.max_send_message_length", 1024)]
    with triple_py.insecure_channel(peer.address, options=options) as channel:
        call = unary(channel)
        assert call(b"a" * 1024, timeout=TIMEOUT) == b"a" * 1024  # the limit itself is allowed
        before = quiet_stats(channel)
        error = rpc_error(call, b"a" * 1025, timeout=TIMEOUT)
        assert error.code() is Code.RESOURCE_EXHAUSTED
        future = call.future(os.urandom(MiB), timeout=TIMEOUT)
        assert future.exception(timeout=TIMEOUT).code() is Code.RESOURCE_EXHAUSTED
        after = channel.stats()
        assert after["bytes_written"] == before["bytes_written"]
        assert after["write_syscalls"] == before["write_syscalls"]
        assert call(b"small", timeout=TIMEOUT) == b"small"


def test_send_over_limit_before_connecting(peer):
    options = [("grpc.max_send_message_length", 10)]
    with triple_py.insecure_channel(peer.address, options=options) as channel:
        error = rpc_error(unary(channel), b"x" * 11, timeout=TIMEOUT)
        assert error.code() is Code.RESOURCE_EXHAUSTED
        stats = channel.stats()
        assert (stats["bytes_written"], stats["connects"]) == (0, 0)


# --- malformed responses and HTTP errors (rogue server) ------------------------------------

@pytest.mark.parametrize("mode, code", [
    ("MalformedFlags", Code.INTERNAL),
    ("TruncatedMessage", Code.INTERNAL),
    ("TwoMessages", Code.INTERNAL),
    ("MissingStatus", Code.INTERNAL),
    ("Http503", Code.UNAVAILABLE),
    ("Http404NoGrpc", Code.UNIMPLEMENTED),
    ("Nope", Code.UNIMPLEMENTED),  # the rogue server's own unknown-method answer
])
def test_bad_responses(rogue_channel, mode, code):
    started = time.monotonic()
    error = rpc_error(rogue(rogue_channel, mode), b"x", timeout=TIMEOUT)
    assert error.code() is code, (error.code(), error.details())
    assert time.monotonic() - started < 2
    future = rogue(rogue_channel, mode).future(b"x", timeout=TIMEOUT)
    assert future.exception(timeout=TIMEOUT).code() is code
    # the connection survives a bad stream
    assert rogue(rogue_channel, "Echo")(b"next", timeout=TIMEOUT) == b"next"
    assert rogue_channel.stats()["connects"] == 1


def test_trailers_only_with_percent_encoded_message(rogue_channel):
    error = rpc_error(rogue(rogue_channel, "TrailersOnly"), b"x", timeout=TIMEOUT)
    assert error.code() is Code.PERMISSION_DENIED
    assert error.details() == "café % done" == rogue_peer.TRAILERS_ONLY_MESSAGE
    assert error.trailing_metadata() == ()


def test_lenient_percent_decoding(rogue_channel):
    error = rpc_error(rogue(rogue_channel, "PercentMessage"), b"x", timeout=TIMEOUT)
    assert error.code() is Code.INVALID_ARGUMENT
    assert error.details() == rogue_peer.PERCENT_MESSAGE  # "%zz" passes through as is


def test_status_details_kept_for_the_caller(rogue_channel):
    error = rpc_error(rogue(rogue_channel, "StatusDetails"), b"x", timeout=TIMEOUT)
    assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT,
                                               rogue_peer.STATUS_DETAILS_MESSAGE)
    trailing = dict(error.trailing_metadata())
    raw = trailing["grpc-status-details-bin"]
    assert isinstance(raw, bytes)
    # sent as unpadded base64; the caller gets the decoded google.rpc.Status bytes
    assert raw == rogue_peer.STATUS_DETAILS


def test_unknown_method(channel):
    call = channel.unary_unary("/benchmark.BenchmarkService/NoSuchMethod")
    error = rpc_error(call, b"x", timeout=TIMEOUT)
    assert error.code() is Code.UNIMPLEMENTED
    call = channel.unary_unary("/no.Such/Service")
    assert rpc_error(call, b"x", timeout=TIMEOUT).code() is Code.UNIMPLEMENTED
    assert unary(channel)(b"after", timeout=TIMEOUT) == b"after"


# --- close() and Ctrl-C --------------------------------------------------------------------

def test_close_cancels_pending_calls_and_joins_the_io_thread(rogue_server):
    baseline = os_thread_count()
    channel = triple_py.insecure_channel(rogue_server.address)
    pending = [rogue(channel, "NeverAnswer").future(b"x", timeout=30) for _ in range(5)]
    assert rogue(channel, "Echo")(b"up", timeout=TIMEOUT) == b"up"  # the 5 were sent first
    assert os_thread_count() > baseline
    assert not any(f.done() for f in pending)
    started = time.monotonic()
    channel.close()
    for future in pending:
        assert future.exception(timeout=1).code() is Code.CANCELLED
    assert time.monotonic() - started < 1
    # the I/O thread is joined by close(); the futures' dispatcher thread ends by itself
    assert wait_for(lambda: os_thread_count() <= baseline, 1), \
        f"{os_thread_count()} threads after close, {baseline} before the channel"
    # a closed channel fails new calls at once (grpcio raises ValueError; an RpcError
    # CANCELLED is accepted too)
    started = time.monotonic()
    with pytest.raises((ValueError, triple_py.RpcError)) as info:
        unary(channel)(b"x", timeout=TIMEOUT)
    if isinstance(info.value, triple_py.RpcError):
        assert info.value.code() is Code.CANCELLED
    assert time.monotonic() - started < 0.5
    channel.close()  # idempotent


def test_close_fails_blocking_call_in_another_thread(rogue_server):
    from concurrent import futures
    channel = triple_py.insecure_channel(rogue_server.address)
    with futures.ThreadPoolExecutor(1) as pool:
        blocked = pool.submit(rpc_error, rogue(channel, "NeverAnswer"), b"x", timeout=30)
        assert wait_for(lambda: channel.stats()["calls"] >= 1, 5)  # the call has started
        assert rogue(channel, "Echo")(b"up", timeout=TIMEOUT) == b"up"
        assert not blocked.done()
        started = time.monotonic()
        channel.close()
        assert blocked.result(timeout=2).code() is Code.CANCELLED
        assert time.monotonic() - started < 1


CTRL_C_CHILD = r"""
import sys, time
import triple_py
with triple_py.insecure_channel(sys.argv[1]) as channel:
    call = channel.unary_unary("/rogue.Rogue/NeverAnswer")
    print("calling", flush=True)
    try:
        call(b"x", timeout=30)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
        raise
    print("returned", flush=True)
"""


@pytest.mark.skipif(
    os.environ.get("TRIPLE_PY_ASAN") == "1",
    reason="the child runs the plain, uninstrumented build with only the ASan runtime "
           "preloaded; there its SIGINT went unanswered twice in CI (not reproduced "
           "locally), so the plain run asserts this")
def test_ctrl_c_interrupts_a_blocked_call(rogue_server):
    child = start_child(CTRL_C_CHILD, rogue_server.address)
    try:
        lines = LineReader(child)
        assert lines.next_line(timeout=20)[1] == "calling"
        time.sleep(0.3)  # the child is now waiting inside the C call
        assert child.poll() is None
        sent = time.monotonic()  # CLOCK_MONOTONIC: comparable with the child's
        child.send_signal(signal.SIGINT)
        _, line = lines.next_line(timeout=2)
        word, stamp = line.split()
        assert word == "interrupted"
        assert float(stamp) - sent < 0.2, f"interrupted {float(stamp) - sent:.3f} s after SIGINT"
        child.wait(timeout=1)
        assert time.monotonic() - sent < 1.2
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGINT
    assert "KeyboardInterrupt" in child.stderr.read()


# --- bad arguments -------------------------------------------------------------------------

@pytest.mark.parametrize("request_value", ["text", 12, [1, 2], object()],
                         ids=["str", "int", "list", "object"])
def test_request_not_bytes_like(channel, request_value):
    with pytest.raises(TypeError):
        unary(channel)(request_value, timeout=TIMEOUT)
    with pytest.raises(TypeError):
        unary(channel).future(request_value, timeout=TIMEOUT)
    assert unary(channel)(b"ok", timeout=TIMEOUT) == b"ok"


def test_serializer_returning_non_bytes(channel):
    call = channel.unary_unary("/benchmark.BenchmarkService/UnaryCall",
                               request_serializer=lambda request: request)
    with pytest.raises(TypeError):
        call("not bytes", timeout=TIMEOUT)


@pytest.mark.parametrize("key", ["Upper-Case", "has space", "", ":path", "x-ü", "a\nb"])
def test_invalid_metadata_key(channel, key):
    with pytest.raises(ValueError):
        unary(channel)(b"x", metadata=[(key, "v")], timeout=TIMEOUT)
    with pytest.raises(ValueError):
        unary(channel).future(b"x", metadata=[("x-ok", "v"), (key, "v")], timeout=TIMEOUT)
    assert unary(channel)(b"ok", timeout=TIMEOUT) == b"ok"


def test_invalid_metadata_value(channel):
    with pytest.raises(ValueError):
        unary(channel)(b"x", metadata=[("x-key", "line\nbreak")], timeout=TIMEOUT)


def test_str_value_on_binary_key(channel):
    with pytest.raises(TypeError):
        unary(channel)(b"x", metadata=[("x-data-bin", "text")], timeout=TIMEOUT)
    assert unary(channel)(b"ok", timeout=TIMEOUT) == b"ok"


def test_request_buffer_is_pinned_while_in_flight(channel):
    """The request is sent from the caller's buffer (no copy): while the call runs the
    buffer cannot be resized; after it completes it can."""
    request = bytearray(b"pinned" * 100)
    future = unary(channel).future(request, metadata=[("x-delay-ms", "300")], timeout=TIMEOUT)
    with pytest.raises(BufferError):
        request.extend(b"more")
    with pytest.raises(BufferError):
        del request[:10]
    assert future.result(timeout=TIMEOUT) == b"pinned" * 100
    request.extend(b"more")  # released once the call has completed
    assert len(request) == 604


def test_request_buffer_released_after_failure(rogue_channel):
    request = bytearray(b"x" * 10)
    future = rogue(rogue_channel, "NeverAnswer").future(request, timeout=0.2)
    with pytest.raises(BufferError):
        request.append(1)
    assert future.exception(timeout=5).code() is Code.DEADLINE_EXCEEDED
    request.append(1)
    future = rogue(rogue_channel, "NeverAnswer").future(request, timeout=30)
    future.cancel()
    assert wait_for(future.done, 1)
    with pytest.raises(triple_py.FutureCancelledError):
        future.result(timeout=1)
    request.append(2)
