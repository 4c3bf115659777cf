"""The coalescing stream writer end to end (issue 3, the seed's PR #3746 table).

Counterparts of TestStreamBufferWriter* / TestWriteBuffering* over a real connection:
coalescing (three messages, one write), the watermark, large messages alone and never
reordered, empty flush, flush-on-close, the flush timer, write after close, the 200-round
race between writes and done_writing, concurrent writers, and the write-syscall counts and
ping-pong latency with the writer on and off.  Writes are counted with
channel.stats()["write_syscalls"] / ["bytes_written"].
"""
import queue
import random
import threading
import time

import pytest

import triple_py
from _stream_helpers import (
    NO_TIMER, TIMEOUT, WATERMARK, WRITER_OFF, WRITER_ON, WRITERS, Background, bidi, drain,
    open_channel, rogue_counter, settle, tagged, untag, wait_for_change, warm_up,
    write_syscalls,
)

StatusCode = triple_py.StatusCode
PREFIX = 5  # gRPC message prefix: flag byte + 4-byte length
HELD = 0.1  # seconds during which "nothing is sent" is checked


def started_call(channel, method=None, **kwargs):
    """A bidi call (StreamCall unless `method` says otherwise) on an established connection,
    whose HEADERS have been written and the connection is quiet again."""
    if method is None:
        warm_up(channel)
        call = bidi(channel)(timeout=TIMEOUT, **kwargs)
    else:
        rogue_counter(channel, "streams")  # connects; the rogue peer has no StreamCall
        call = channel.stream_stream(method)(timeout=TIMEOUT, **kwargs)
    settle(channel)
    return call


def server_answered(call) -> Background:
    """A thread waiting for the response headers: the peers send them with the first
    echo, so they arrive only once the server has received a message.  Waiting for them
    does not flush the writer (reading would)."""
    return Background(call.initial_metadata, name="initial-metadata")


# --- the write-syscall counts --------------------------------------------------------------

def test_burst_coalesced(peer):
    """1,000 messages of 100 B then done_writing, writer on (defaults): every echo comes back,
    in far fewer writes than messages (TestWriteBufferingStreamingFlushOnClose)."""
    messages = [tagged(i, 100) for i in range(1000)]
    with open_channel(peer, WRITER_ON) as channel:
        warm_up(channel)
        before = settle(channel)["write_syscalls"]
        call = bidi(channel)(timeout=TIMEOUT)
        for message in messages:
            call.write(message)
        call.done_writing()
        assert drain(call) == messages
        writes = settle(channel)["write_syscalls"] - before
    assert writes < 50, f"{writes} write syscalls for 1,000 messages"


def _paced_writes(peer, options, count=1000, gap=200e-6) -> int:
    """Write syscalls of one stream carrying `count` 100 B messages from a producer that
    pauses `gap` seconds after each write (all echoes checked)."""
    messages = [tagged(i, 100) for i in range(count)]
    with open_channel(peer, options) as channel:
        warm_up(channel)
        before = settle(channel)["write_syscalls"]
        call = bidi(channel)(timeout=TIMEOUT)
        for message in messages:
            call.write(message)
            time.sleep(gap)
        call.done_writing()
        assert drain(call) == messages
        return settle(channel)["write_syscalls"] - before


def test_writer_on_far_fewer_writes_than_off(peer):
    """The same paced producer (a few thousand messages/s): with the writer off each message
    leaves on its own, with the writer on (timer out of the way) they leave a watermark at
    a time: at least 10x fewer write syscalls."""
    off = _paced_writes(peer, WRITER_OFF)
    on = _paced_writes(peer, [("triple.write_buffer_delay_us", 1_000_000)])
    assert on * 10 <= off, f"writer on: {on} writes, writer off: {off} writes"


def test_three_messages_one_write(rogue_server):
    """Three small messages then flush(): one write carries all three
    (TestStreamBufferWriterCoalesces).  Against the rogue peer's NeverAnswer mode, which
    sends nothing back, so no other frame is written meanwhile."""
    messages = [b"alpha", b"bravo" * 10, b"charlie" * 20]
    with open_channel(rogue_server, NO_TIMER) as channel:
        call = started_call(channel, method="/rogue.Rogue/NeverAnswer")
        before = channel.stats()
        for message in messages:
            call.write(message)
        time.sleep(HELD)
        assert channel.stats()["write_syscalls"] == before["write_syscalls"]
        call.flush()
        assert wait_for_change(lambda: write_syscalls(channel), before["write_syscalls"],
                               2.0) is not None
        after = settle(channel)
        assert after["write_syscalls"] - before["write_syscalls"] == 1
        payload = sum(PREFIX + len(m) for m in messages)
        assert payload <= after["bytes_written"] - before["bytes_written"] <= payload + 9
        call.cancel()


def test_flush_at_watermark(peer):
    """Messages below the watermark are held; the one that reaches it sends the whole
    batch in one write, without flush() (TestStreamBufferWriterFlushesAtLimit)."""
    size = 1024 - PREFIX
    count = WATERMARK // 1024  # the last one fills the chunk exactly
    messages = [tagged(i, size) for i in range(count)]
    with open_channel(peer, NO_TIMER) as channel:
        call = started_call(channel)
        before = channel.stats()
        answered = server_answered(call)
        for message in messages[:-1]:
            call.write(message)
        time.sleep(HELD)
        assert channel.stats()["write_syscalls"] == before["write_syscalls"]
        assert not answered.finished.is_set()
        call.write(messages[-1])
        answered.result()  # the server got the batch: no flush, no read
        assert channel.stats()["bytes_written"] - before["bytes_written"] >= WATERMARK
        call.done_writing()
        assert drain(call) == messages


def test_large_message_after_pending(peer):
    """A message >= the watermark goes out at once, after the pending small ones, never
    ahead of them (TestStreamBufferWriterLargeMessage*)."""
    small = [b"first", b"second"]
    large = tagged(9, WATERMARK)
    with open_channel(peer, NO_TIMER) as channel:
        call = started_call(channel)
        before = write_syscalls(channel)
        answered = server_answered(call)
        for message in small:
            call.write(message)
        time.sleep(HELD)
        assert write_syscalls(channel) == before and not answered.finished.is_set()
        call.write(large)
        answered.result()
        assert [next(call) for _ in range(3)] == small + [large]
        call.write(b"tail")
        call.done_writing()
        assert drain(call) == [b"tail"]


@WRITERS
def test_empty_flush_writes_nothing(peer, writer):
    """flush() with nothing queued writes nothing (TestStreamBufferWriterFlushEmptyIsNoOp)."""
    with open_channel(peer, writer) as channel:
        call = started_call(channel)
        before = write_syscalls(channel)
        for _ in range(5):
            call.flush()
        time.sleep(HELD)
        assert write_syscalls(channel) == before
        call.write(b"x")
        call.flush()
        assert next(call) == b"x"
        call.done_writing()
        assert drain(call) == []


# --- the flush timer -----------------------------------------------------------------------

def test_flush_timer_sends_partial_chunk(peer):
    """Writer on with the default 200 us delay: a small message with no flush or read after
    it still reaches the server (its echo comes back), within a few ms.  Five rounds; the
    latency bound applies to the fastest, as this machine's scheduler may be busy."""
    with open_channel(peer, WRITER_ON) as channel:
        call = started_call(channel)
        answered = server_answered(call)
        delays = []
        for i in range(5):
            before = write_syscalls(channel)
            call.write(tagged(i, 32))
            delay = wait_for_change(lambda: write_syscalls(channel), before, 2.0)
            assert delay is not None, f"round {i}: the partial chunk was not sent within 2 s"
            delays.append(delay)
            if i == 0:
                answered.result()  # the server answered: no read, no flush was needed
            assert next(call) == tagged(i, 32)
            settle(channel)
        call.done_writing()
        assert drain(call) == []
    assert min(delays) < 0.02, f"partial chunks waited {[round(d * 1e3, 1) for d in delays]} ms"


@pytest.mark.parametrize("trigger", ["flush", "done_writing", "read"])
def test_no_timer_holds_until_asked(peer, trigger):
    """With triple.write_buffer_delay_us = 0 a partial chunk waits for flush(),
    done_writing() or a read on the same call: nothing is written before."""
    with open_channel(peer, NO_TIMER) as channel:
        call = started_call(channel)
        answered = server_answered(call)
        before = write_syscalls(channel)
        call.write(b"held")
        time.sleep(HELD)
        assert write_syscalls(channel) == before
        assert not answered.finished.is_set()
        if trigger == "flush":
            call.flush()
            answered.result()
            assert next(call) == b"held"
            call.done_writing()
            assert drain(call) == []
        elif trigger == "done_writing":
            call.done_writing()
            answered.result()
            assert drain(call) == [b"held"]
        else:
            assert next(call) == b"held"  # the read flushed first
            call.done_writing()
            assert drain(call) == []
        assert call.code() is StatusCode.OK


# --- ping-pong -----------------------------------------------------------------------------

# A timer far longer than the whole exchange may take: 200 round trips that each waited
# for it would need 400 s, and the call's deadline is TIMEOUT.
SLOW_TIMER = [("triple.write_buffer_delay_us", 2_000_000)]


def test_ping_pong_never_waits_for_the_writer_timer(peer):
    """200 round trips of 128 B on one stream with the writer on and a 2 s flush timer end
    well within the call's deadline: each read flushes what the writer holds, so a
    request-response exchange pays no timer delay (the figures are the benchmark's)."""
    message = b"p" * 128
    with open_channel(peer, SLOW_TIMER) as channel:
        warm_up(channel)
        call = bidi(channel)(timeout=TIMEOUT)
        for _ in range(200):
            call.write(message)
            assert next(call) == message
        call.done_writing()
        assert drain(call) == []
        assert call.code() is StatusCode.OK


@pytest.mark.parametrize("options", [NO_TIMER, SLOW_TIMER], ids=["no-timer", "slow-timer"])
def test_ping_pong_from_a_request_iterator(peer, options):
    """grpcio's idiom: a request iterator, consumed on a thread of its own, that waits for
    the answer to its previous request while the caller's read waits.  A request written
    while a read waits, with nothing else in flight, goes at once (Nagle's rule): 50 round
    trips neither wait for a 2 s flush timer nor, without a timer, stay unsent until the
    deadline."""
    answers: queue.Queue = queue.Queue()

    def requests():
        for i in range(50):
            yield b"%d" % i
            answers.get(timeout=TIMEOUT)

    with open_channel(peer, options) as channel:
        got = []
        for response in bidi(channel)(requests(), timeout=TIMEOUT):
            got.append(response)
            answers.put(response)
    assert got == [b"%d" % i for i in range(50)]


# --- close ---------------------------------------------------------------------------------

@WRITERS
def test_write_after_done_writing(peer, writer):
    """write() after done_writing() raises ValueError; the messages before it (the unflushed
    tail included) are delivered; done_writing() and flush() stay harmless
    (TestStreamBufferWriterWriteAfterClose / FlushAfterClose)."""
    with open_channel(peer, writer) as channel:
        # x-delay-ms keeps the server from ending the call at once, so the call is
        # half-closed but not finished while the late writes are tried
        call = bidi(channel)(timeout=TIMEOUT, metadata=[("x-delay-ms", "500")])
        call.write(b"one")
        call.write(b"tail")
        call.done_writing()
        with pytest.raises(ValueError):
            call.write(b"late")
        before = settle(channel)["write_syscalls"]
        call.done_writing()
        call.flush()
        assert write_syscalls(channel) == before
        with pytest.raises(ValueError):
            call.write(b"later")
        assert call.is_active()
        assert drain(call) == [b"one", b"tail"]
        assert call.code() is StatusCode.OK


def _race_round(channel, rng: random.Random, with_flusher: bool) -> None:
    call = bidi(channel)(timeout=TIMEOUT)
    parties = 3 if with_flusher else 2
    start = threading.Barrier(parties, timeout=TIMEOUT)
    closed = threading.Event()

    def writer():
        start.wait()
        accepted = 0
        while accepted < 100_000:
            try:
                call.write(tagged(accepted, 24))
            except (ValueError, triple_py.RpcError):
                return accepted
            accepted += 1
        raise AssertionError("done_writing never stopped the writer")

    def flusher():
        start.wait()
        while not closed.is_set():
            call.flush()

    writing = Background(writer, name="racing-writer")
    flushing = Background(flusher, name="racing-flusher") if with_flusher else None
    start.wait()
    end = time.perf_counter() + rng.uniform(0, 500e-6)
    while time.perf_counter() < end:
        pass
    call.done_writing()
    closed.set()
    accepted = writing.result()
    if flushing:
        flushing.result()
    responses = drain(call)
    assert len(responses) == accepted, (
        f"{accepted} writes accepted, {len(responses)} echoed: an accepted write was dropped")
    assert [untag(r)[1] for r in responses] == list(range(accepted))
    assert call.code() is StatusCode.OK


@WRITERS
def test_write_racing_done_writing(peer, writer):
    """200 rounds of a writer thread against done_writing() (and a flusher in half of
    them): each write either raised or was echoed, never accepted and dropped
    (TestStreamBufferWriterCloseNeverDropsRacingWrite / ConcurrentCloseAndFlush)."""
    rng = random.Random(3746)
    with open_channel(peer, writer) as channel:
        for round_ in range(200):
            _race_round(channel, rng, with_flusher=bool(round_ % 2))


@WRITERS
def test_concurrent_writers(peer, writer):
    """8 threads x 100 writes on one call plus a flusher, then done_writing: all 800 echoes,
    each thread's messages in its order (TestStreamBufferWriterConcurrent)."""
    threads, per_thread = 8, 100
    with open_channel(peer, writer) as channel:
        call = bidi(channel)(timeout=TIMEOUT)
        start = threading.Barrier(threads + 1, timeout=TIMEOUT)
        stop_flushing = threading.Event()

        def write_all(tag):
            start.wait()
            for i in range(per_thread):
                call.write(tagged(i, 64 + 37 * tag, tag=tag))

        def flush_all():
            start.wait()
            while not stop_flushing.is_set():
                call.flush()
                time.sleep(0.0005)

        writers = [Background(lambda t=t: write_all(t), name=f"writer-{t}") for t in range(threads)]
        flusher = Background(flush_all, name="flusher")
        for w in writers:
            w.result()
        stop_flushing.set()
        flusher.result()
        call.done_writing()
        responses = drain(call)
    assert len(responses) == threads * per_thread
    order = {}
    for response in responses:
        tag, index = untag(response)
        assert response == tagged(index, 64 + 37 * tag, tag=tag)
        order.setdefault(tag, []).append(index)
    assert order == {t: list(range(per_thread)) for t in range(threads)}
