"""Shared helpers of the triple_py streaming integration tests (test_stream_*.py).

The peers (tests/peers/README.md) answer `/benchmark.BenchmarkService/StreamCall` with one
echo per request message until the client half-closes; `x-status` ends the call before any
message is read, so a status "after some echoes" has to come from elsewhere (a message over
the server's receive limit, the client's own limits, a deadline, a cancel).

Every call made here carries a deadline, and every helper thread is joined with a timeout,
so a stalled stream fails a test instead of hanging the run.
"""
from __future__ import annotations

import json
import random
import struct
import threading
import time
from typing import Any, Callable, List, Optional, Sequence

import pytest

import triple_py
from _helpers import quiet_stats
from peers import STREAM_METHOD

KiB = 1024
MiB = 1024 * KiB
TIMEOUT = 10  # seconds: the deadline of every call that is expected to succeed
WATERMARK = 32 * KiB  # the default triple.write_buffer_size
WRITER_ON: List[tuple] = []  # the defaults: writer on, 32 KiB watermark, 200 us timer
WRITER_OFF = [("triple.write_buffer_size", 0)]
NO_TIMER = [("triple.write_buffer_delay_us", 0)]  # writer on, flushed only on demand
WRITERS = pytest.mark.parametrize("writer", [WRITER_ON, WRITER_OFF], ids=["writer_on", "writer_off"])
ASSORTED_SIZES = (0, 1, 128, 4 * KiB, 40 * KiB)  # 40 KiB > the watermark: written alone
JOIN_TIMEOUT = 15.0  # seconds a helper thread may take before the test fails


# --- channels and calls --------------------------------------------------------------------

def open_channel(peer, options: Sequence[tuple] = ()) -> triple_py.Channel:
    """A channel to `peer` with extra options (use it as a context manager)."""
    return triple_py.insecure_channel(peer.address, options=list(options))


def bidi(channel: triple_py.Channel):
    """The StreamCall multi-callable (stream_stream, raw bytes)."""
    return channel.stream_stream(STREAM_METHOD)


def stream_unary(channel: triple_py.Channel):
    """StreamCall seen as client streaming (the library enforces exactly one response)."""
    return channel.stream_unary(STREAM_METHOD)


def unary_stream(channel: triple_py.Channel):
    """StreamCall seen as server streaming (one request, its echo)."""
    return channel.unary_stream(STREAM_METHOD)


def rpc_error_of(fn: Callable, *args, **kwargs) -> triple_py.RpcError:
    """The RpcError fn(*args, **kwargs) raises; fails the test if it returns."""
    with pytest.raises(triple_py.RpcError) as info:
        fn(*args, **kwargs)
    return info.value


def drain(call) -> list:
    """Every remaining response of `call` (raises the call's RpcError if it failed)."""
    return list(call)


def drain_until_error(call) -> tuple[list, triple_py.RpcError]:
    """(responses read before the error, the RpcError); fails if the call ends OK."""
    got = []
    with pytest.raises(triple_py.RpcError) as info:
        for response in call:
            got.append(response)
    return got, info.value


def echoed(metadata) -> list:
    """The x-echo-* pairs of received metadata, sorted (peers may reorder keys)."""
    return sorted((k, v) for k, v in (metadata or ()) if k.startswith("x-echo-"))


# --- messages ------------------------------------------------------------------------------

def tagged(index: int, size: int, tag: int = 0) -> bytes:
    """A `size`-byte message naming (tag, index) in its first 8 bytes (when it has room),
    then a byte pattern that depends on both."""
    pattern = bytes((index + tag + i) & 0xFF for i in range(256))
    return (struct.pack(">II", tag, index) + pattern * (size // 256 + 1))[:size]


def untag(message: bytes) -> tuple[int, int]:
    """(tag, index) of a message made by `tagged` with size >= 8."""
    return struct.unpack(">II", message[:8])


def assorted_messages(count: int, sizes: Sequence[int] = ASSORTED_SIZES,
                      seed: int = 1) -> list[bytes]:
    """`count` messages cycling through `sizes`, random content (reproducible)."""
    rng = random.Random(seed)
    return [rng.randbytes(sizes[i % len(sizes)]) for i in range(count)]


# --- threads -------------------------------------------------------------------------------

class Background(threading.Thread):
    """Runs fn() on a daemon thread; result() joins it (bounded) and returns or re-raises."""

    def __init__(self, fn: Callable[[], Any], name: str = "stream-test") -> None:
        super().__init__(daemon=True, name=name)
        self._fn = fn
        self._result: Any = None
        self._error: Optional[BaseException] = None
        self.finished = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            self._result = self._fn()
        except BaseException as exc:  # handed to the test thread by result()
            self._error = exc
        finally:
            self.finished.set()

    def result(self, timeout: float = JOIN_TIMEOUT) -> Any:
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} still running after {timeout} s"
        if self._error is not None:
            raise self._error
        return self._result


# --- counters ------------------------------------------------------------------------------

def write_syscalls(channel: triple_py.Channel) -> int:
    return channel.stats()["write_syscalls"]


def settle(channel: triple_py.Channel) -> dict:
    """channel.stats() once the connection has written nothing for 50 ms (see quiet_stats)."""
    return quiet_stats(channel, quiet=0.05)


def wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.005) -> bool:
    """Polls predicate() until it is true or `timeout` seconds passed; its last value."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return predicate()
        time.sleep(interval)
    return True


def rss_bytes() -> int:
    """VmRSS of this process, from /proc/self/status."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise KeyError("VmRSS")


def wait_for_change(read: Callable[[], int], before: int, timeout: float) -> Optional[float]:
    """Seconds until read() differs from `before`, or None if it did not within `timeout`.
    Polls without sleeping so the delay measured is close to the real one."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if read() != before:
            return time.monotonic() - start
        time.sleep(0)
    return None


def warm_up(channel: triple_py.Channel) -> None:
    """One stream round trip: connects the channel and fills its pools."""
    assert drain(bidi(channel)(iter([b"warm-up"]), timeout=TIMEOUT)) == [b"warm-up"]


class RssSampler:
    """The peak VmRSS seen by sample() calls, relative to the baseline at creation."""

    def __init__(self) -> None:
        self.baseline = rss_bytes()
        self.peak = self.baseline

    def sample(self) -> None:
        self.peak = max(self.peak, rss_bytes())

    @property
    def growth(self) -> int:
        return self.peak - self.baseline


# --- the rogue peer (tests/peers/h2_rogue_server.py) ---------------------------------------

def rogue_bidi(channel: triple_py.Channel, mode: str):
    """A stream_stream multi-callable for one rogue mode ("/rogue.Rogue/<mode>")."""
    return channel.stream_stream(f"/rogue.Rogue/{mode}")


def rogue_counter(channel: triple_py.Channel, name: str) -> int:
    """One of the rogue server's counters (its Stats mode: connections, streams, resets...),
    read through triple_py itself; the counters are server-wide, so compare deltas."""
    raw = channel.unary_unary("/rogue.Rogue/Stats")(b"", timeout=TIMEOUT)
    return json.loads(raw).get(name, 0)
