"""Cancellation, deadlines and the half-closed / closed states of streaming calls.

The rogue peer counts the RST_STREAM frames it receives (its Stats mode), which shows that
the server sees a cancel or an expired deadline; against grpcio and grpc-go, 200 streams
cancelled in a row and 150 open streams cancelled together (more than grpcio's 32 handler
threads, and more than the usual 100 concurrent streams) must leave the connection and the
server able to serve the next call.
"""
import time

import pytest

import triple_py
from _stream_helpers import (
    KiB, MiB, TIMEOUT, Background, bidi, drain, drain_until_error, open_channel, rogue_bidi,
    rogue_counter, stream_unary, tagged, unary_stream, wait_for, warm_up,
)

StatusCode = triple_py.StatusCode


@pytest.fixture
def channel(peer):
    with open_channel(peer) as ch:
        yield ch


@pytest.fixture
def rogue_channel(rogue_server):
    with open_channel(rogue_server) as ch:
        yield ch


def open_stream(channel, timeout=TIMEOUT, **kwargs):
    """A bidi call with one echo received: the server's handler is running."""
    call = bidi(channel)(timeout=timeout, **kwargs)
    call.write(b"hello")
    assert next(call) == b"hello"
    return call


# --- cancel --------------------------------------------------------------------------------

def test_cancel_mid_stream(channel):
    """cancel() on a running stream: the call ends CANCELLED, reads and writes raise it, and
    the connection goes on serving other calls."""
    warm_up(channel)
    connects = channel.stats()["connects"]
    call = open_stream(channel)
    assert call.is_active()
    assert call.cancel() is True
    assert call.code() is StatusCode.CANCELLED
    assert not call.is_active()
    with pytest.raises(triple_py.RpcError) as info:
        next(call)
    assert info.value.code() is StatusCode.CANCELLED
    with pytest.raises(triple_py.RpcError) as info:
        call.write(b"after cancel")
    assert info.value.code() is StatusCode.CANCELLED
    call.done_writing()  # harmless on a finished call
    assert call.cancel() is False
    assert drain(bidi(channel)(iter([b"next"]), timeout=TIMEOUT)) == [b"next"]
    assert channel.stats()["connects"] == connects


def test_second_cancel_returns_false(channel):
    """Only the cancel() that cancels returns True; one right after it returns False and the
    call is no longer active (grpcio: cancel() sets the CANCELLED state at once)."""
    for _ in range(20):
        call = open_stream(channel)
        assert call.cancel() is True
        assert call.cancel() is False
        assert not call.is_active()
        assert call.code() is StatusCode.CANCELLED


def test_cancel_discards_unread_responses(channel):
    """After cancel(), the next read raises CANCELLED even if echoes had already arrived
    (grpcio's behaviour: a cancelled call yields nothing more)."""
    call = bidi(channel)(timeout=TIMEOUT)
    for i in range(5):
        call.write(tagged(i, 16))
    assert next(call) == tagged(0, 16)
    time.sleep(0.2)  # the other four echoes are now in the receive queue
    assert call.cancel() is True
    got, error = drain_until_error(call)
    assert error.code() is StatusCode.CANCELLED
    assert got == [], f"{len(got)} responses read after cancel()"


def test_cancel_frees_streams(peer, channel):
    """200 streams opened (handler running), then cancelled, one after the other: the server
    sees every reset (grpcio's 32 handler threads would otherwise all stay blocked) and
    the 201st call on the same connection still works."""
    warm_up(channel)
    connects = channel.stats()["connects"]
    for i in range(200):
        call = open_stream(channel, timeout=5)
        assert call.cancel() is True
        assert call.code() is StatusCode.CANCELLED
    call = bidi(channel)(iter([b"still serving"]), timeout=5)
    assert drain(call) == [b"still serving"]
    assert channel.stats()["connects"] == connects


def test_cancel_many_open_streams(channel):
    """150 streams open at once (more than grpcio's 32 handler threads and the usual 100
    concurrent streams), each with a request written and not read, then all cancelled:
    the next call on the same connection is served."""
    warm_up(channel)
    connects = channel.stats()["connects"]
    calls = []
    for i in range(150):
        call = bidi(channel)(timeout=TIMEOUT)
        call.write(tagged(i, 32))
        call.flush()
        calls.append(call)
    for call in calls:
        call.cancel()
    for call in calls:
        assert call.code() is StatusCode.CANCELLED
    assert drain(bidi(channel)(iter([b"served"]), timeout=5)) == [b"served"]
    assert channel.stats()["connects"] == connects


def test_cancel_stops_request_iterator(channel):
    """An endless request iterator is no longer pulled once the call is cancelled."""
    pulled = []

    def requests():
        while True:
            pulled.append(1)
            yield b"more"

    call = bidi(channel)(requests(), timeout=TIMEOUT)
    assert next(call) == b"more"
    call.cancel()
    assert call.code() is StatusCode.CANCELLED
    time.sleep(0.1)
    count = len(pulled)
    time.sleep(0.2)
    assert len(pulled) == count


def test_cancel_wakes_blocked_reader(channel):
    call = bidi(channel)(timeout=TIMEOUT)
    reader = Background(lambda: next(call), name="blocked-reader")
    assert not reader.finished.wait(0.2)
    call.cancel()
    with pytest.raises(triple_py.RpcError) as info:
        reader.result(timeout=2)
    assert info.value.code() is StatusCode.CANCELLED


def _write_until_error(call, chunk: bytes, progress: list) -> None:
    while True:
        call.write(chunk)
        progress.append(len(chunk))


def test_cancel_releases_blocked_writer(channel):
    """A writer that nobody reads the echoes of ends up blocked by flow control (GIL
    released, bounded queue); cancel() wakes it with CANCELLED."""
    call = bidi(channel)(timeout=TIMEOUT)
    progress: list = []
    writer = Background(lambda: _write_until_error(call, b"w" * (64 * KiB), progress),
                        name="blocked-writer")
    # the writer stops making progress once every window and queue on the path is full
    last = -1
    for _ in range(100):
        time.sleep(0.05)
        if len(progress) == last:
            break
        last = len(progress)
    assert len(progress) == last, "the writer never blocked"
    assert not writer.finished.is_set()
    assert sum(progress) < 512 * MiB
    spins = 0
    end = time.monotonic() + 0.05
    while time.monotonic() < end:  # this thread runs: the blocked writer holds no GIL
        spins += 1
    assert spins > 100
    call.cancel()
    with pytest.raises(triple_py.RpcError) as info:
        writer.result(timeout=2)
    assert info.value.code() is StatusCode.CANCELLED


def test_cancel_server_streaming(channel):
    call = unary_stream(channel)(b"x", timeout=TIMEOUT, metadata=[("x-delay-ms", "5000")])
    time.sleep(0.05)
    assert call.cancel() is True
    got, error = drain_until_error(call)
    assert error.code() is StatusCode.CANCELLED


def test_cancel_sends_rst_stream(rogue_channel):
    """The server receives an RST_STREAM for each cancelled stream, before and after the
    client half-closed."""
    resets = rogue_counter(rogue_channel, "resets")
    calls = []
    for i in range(4):
        call = rogue_bidi(rogue_channel, "NeverAnswer")(timeout=TIMEOUT)
        call.write(b"request")
        call.flush()
        if i % 2:
            call.done_writing()
        calls.append(call)
    time.sleep(0.1)
    for call in calls:
        assert call.cancel() is True
        assert call.code() is StatusCode.CANCELLED
    assert wait_for(lambda: rogue_counter(rogue_channel, "resets") - resets == 4, 3), (
        rogue_counter(rogue_channel, "resets") - resets)


def test_finished_stream_sends_no_rst(rogue_channel):
    """A stream that ended normally (half-closed, then the server's trailers) is closed:
    cancel() returns False and nothing is reset."""
    resets = rogue_counter(rogue_channel, "resets")
    call = rogue_bidi(rogue_channel, "Echo")(timeout=TIMEOUT)
    call.write(b"one")
    call.write(b"two")
    call.done_writing()
    assert drain(call) == [b"one", b"two"]
    assert call.cancel() is False
    time.sleep(0.1)
    assert rogue_counter(rogue_channel, "resets") == resets


# --- deadlines -----------------------------------------------------------------------------

def test_deadline_open_stream(channel):
    """The client keeps the stream open (no half-close): DEADLINE_EXCEEDED at about the
    deadline, for the reader and for later writes."""
    start = time.monotonic()
    call = open_stream(channel, timeout=0.5)
    with pytest.raises(triple_py.RpcError) as info:
        next(call)
    elapsed = time.monotonic() - start
    assert info.value.code() is StatusCode.DEADLINE_EXCEEDED
    assert 0.45 <= elapsed < 2.0, elapsed
    assert call.code() is StatusCode.DEADLINE_EXCEEDED
    with pytest.raises(triple_py.RpcError) as info:
        call.write(b"late")
    assert info.value.code() is StatusCode.DEADLINE_EXCEEDED
    assert drain(bidi(channel)(iter([b"next"]), timeout=TIMEOUT)) == [b"next"]


def test_expired_deadline(channel):
    """timeout=0: the stream fails with DEADLINE_EXCEEDED without waiting."""
    start = time.monotonic()
    call = bidi(channel)(iter([b"x"]), timeout=0)
    got, error = drain_until_error(call)
    assert error.code() is StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - start < 1.0


def test_deadline_sends_rst_stream(rogue_channel):
    resets = rogue_counter(rogue_channel, "resets")
    start = time.monotonic()
    call = rogue_bidi(rogue_channel, "NeverAnswer")(timeout=0.3)
    call.write(b"request")
    got, error = drain_until_error(call)
    assert error.code() is StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - start < 2.0
    assert wait_for(lambda: rogue_counter(rogue_channel, "resets") - resets == 1, 3)


def test_deadline_with_blocked_writers(peer):
    """A stream whose writer is blocked by flow control (nobody reads the echoes, so the
    server is stuck in the middle of a 1 MiB response) ends with DEADLINE_EXCEEDED at its
    deadline, whichever side notices the deadline first: the grpcio server's trailers
    (grpc-status 4) after part of a message must not turn it into INTERNAL.  Several
    rounds, as which side is first varies from run to run."""
    with open_channel(peer) as channel:
        warm_up(channel)
        for round_ in range(10):
            start = time.monotonic()
            call = bidi(channel)(timeout=0.3)
            with pytest.raises(triple_py.RpcError) as info:
                _write_until_error(call, b"d" * MiB, [])
            assert time.monotonic() - start < 2.0
            error = info.value
            assert (error.code(), call.code()) == (StatusCode.DEADLINE_EXCEEDED,) * 2, (
                f"round {round_}: {error.code()} {error.details()!r}")


def test_deadline_client_and_server_streaming(channel):
    """Deadlines on the unary-request and unary-response stream shapes."""
    slow = [("x-delay-ms", "3000")]
    call = unary_stream(channel)(b"x", timeout=0.3, metadata=slow)
    got, error = drain_until_error(call)
    assert error.code() is StatusCode.DEADLINE_EXCEEDED
    with pytest.raises(triple_py.RpcError) as info:
        stream_unary(channel)(iter([b"x"]), timeout=0.3, metadata=slow)
    assert info.value.code() is StatusCode.DEADLINE_EXCEEDED


# --- half-closed and closed ----------------------------------------------------------------

def test_half_closed_reads_to_the_end(channel):
    """After done_writing() the call is half-closed: every echo can still be read, then it
    ends OK."""
    messages = [tagged(i, 512) for i in range(100)]
    call = bidi(channel)(timeout=TIMEOUT)
    for message in messages:
        call.write(message)
    call.done_writing()
    first = next(call)
    assert first == messages[0]
    rest = drain(call)
    assert [first] + rest == messages
    assert call.code() is StatusCode.OK
    assert call.done() and not call.is_active()
    with pytest.raises(StopIteration):
        next(call)


def test_write_after_server_ended_ok(channel):
    """The server ended the call (OK, x-status: 0) before the client half-closed: write()
    raises the call's RpcError, as documented in triple_py/_streams.py."""
    call = bidi(channel)(timeout=TIMEOUT, metadata=[("x-status", "0")])
    assert drain(call) == []
    assert call.code() is StatusCode.OK
    with pytest.raises(triple_py.RpcError) as info:
        call.write(b"too late")
    assert info.value.code() is StatusCode.OK


def test_write_after_server_error(channel):
    call = bidi(channel)(timeout=TIMEOUT, metadata=[("x-status", "14"), ("x-message", "gone")])
    got, error = drain_until_error(call)
    assert error.code() is StatusCode.UNAVAILABLE
    for _ in range(3):  # the same error every time
        with pytest.raises(triple_py.RpcError) as info:
            call.write(b"too late")
        assert info.value.code() is StatusCode.UNAVAILABLE
        assert info.value.details() == "gone"
    call.flush()
    call.done_writing()


def test_write_after_half_close_and_end(channel):
    """Half-closed and then ended: a write is refused (ValueError for the half-close or the
    call's RpcError; both are documented) and never reaches the wire."""
    call = bidi(channel)(iter([b"a"]), timeout=TIMEOUT)
    assert drain(call) == [b"a"]
    with pytest.raises((ValueError, triple_py.RpcError)):
        call.write(b"b")


def test_channel_close_cancels_streams(peer):
    """Channel.close() fails every open stream with CANCELLED and wakes its reader."""
    channel = open_channel(peer)
    call = open_stream(channel)
    reader = Background(lambda: next(call), name="reader")
    assert not reader.finished.wait(0.1)
    channel.close()
    with pytest.raises(triple_py.RpcError) as info:
        reader.result(timeout=2)
    assert info.value.code() is StatusCode.CANCELLED
    assert call.code() is StatusCode.CANCELLED
