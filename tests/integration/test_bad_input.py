"""Bad input from the caller (issue 9): wrong argument types, serializers that return
something other than bytes, metadata that is not a sequence of valid pairs, timeouts of the
wrong type, a closed channel, writes after done_writing, metadata far over any limit.

Each must raise a clear Python exception (TypeError / ValueError as grpcio does, or an
RpcError for what only the connection can refuse) and leave the channel working; none may
crash the process.  The nastiest inputs run in a child process (under PYTHONMALLOC=debug, so
that a use of freed memory crashes instead of reading stale bytes) whose exit status is
checked.  Everything runs against the embedded echo server, on the sync API and on
triple_py.aio.
"""
from __future__ import annotations

import asyncio
import math
import textwrap
import time

import pytest

import triple_py
import triple_py.aio as aio
from _helpers import MiB, TIMEOUT, start_child
from peers import STREAM_METHOD, UNARY_METHOD
from triple_py.testing import EchoServer

Code = triple_py.StatusCode
CHILD_TIMEOUT = 60  # seconds a child process may take


@pytest.fixture(scope="module")
def server():
    with EchoServer() as srv:
        yield srv


@pytest.fixture
def channel(server):
    with triple_py.insecure_channel(server.address) as ch:
        yield ch


def unary(channel, **serializers):
    return channel.unary_unary(UNARY_METHOD, **serializers)


def bidi(channel, **serializers):
    return channel.stream_stream(STREAM_METHOD, **serializers)


def assert_still_works(channel) -> None:
    """The channel answers a unary call and a stream after the bad call."""
    assert unary(channel)(b"still ok", timeout=TIMEOUT) == b"still ok"
    assert list(bidi(channel)(iter([b"a", b"b"]), timeout=TIMEOUT)) == [b"a", b"b"]


def aio_run(coro_fn, timeout: float = 30):
    """Runs `await coro_fn()` in a fresh event loop, bounded by `timeout`."""
    return asyncio.run(asyncio.wait_for(coro_fn(), timeout))


# --- the request --------------------------------------------------------------------------

NOT_BYTES = {
    "str": "text",
    "int": 12,
    "float": 1.5,
    "list": [1, 2],
    "dict": {"a": 1},
    "object": object(),
    "None": None,
    "non-contiguous memoryview": memoryview(b"abcdef")[::2],
}

SHAPES = {
    "call": lambda ch, request: unary(ch)(request, timeout=TIMEOUT),
    "with_call": lambda ch, request: unary(ch).with_call(request, timeout=TIMEOUT),
    "future": lambda ch, request: unary(ch).future(request, timeout=TIMEOUT).result(),
    "unary_stream": lambda ch, request: list(
        ch.unary_stream(STREAM_METHOD)(request, timeout=TIMEOUT)),
}


@pytest.mark.parametrize("shape", SHAPES.keys())
@pytest.mark.parametrize("request_value", NOT_BYTES.values(), ids=NOT_BYTES.keys())
def test_request_not_bytes_like_without_serializer(channel, shape, request_value):
    """Without a serializer the request must be bytes-like: anything else is a TypeError.
    None included: it is not an empty message (grpcio fails it too, with INTERNAL
    "Exception serializing request!", which is accepted here as well)."""
    with pytest.raises((TypeError, triple_py.RpcError)) as info:
        SHAPES[shape](channel, request_value)
    refused(info.value)
    assert_still_works(channel)


def refused(error: Exception) -> None:
    """A request that could not be serialized: TypeError, or grpcio's RpcError INTERNAL."""
    if isinstance(error, triple_py.RpcError):
        assert error.code() is Code.INTERNAL, error


def test_stream_write_not_bytes_like(channel):
    call = bidi(channel)(timeout=TIMEOUT)
    for value in NOT_BYTES.values():
        with pytest.raises(TypeError):
            call.write(value)
    call.write(b"fine")  # the stream is still usable
    call.done_writing()
    assert list(call) == [b"fine"]
    assert call.code() is Code.OK


BAD_SERIALIZED = {"str": "text", "None": None, "int": 7, "list": [1]}


@pytest.mark.parametrize("shape", ["call", "future", "unary_stream", "stream write"])
@pytest.mark.parametrize("output", BAD_SERIALIZED.values(), ids=BAD_SERIALIZED.keys())
def test_serializer_returning_non_bytes(channel, shape, output):
    serializer = {"request_serializer": lambda request: output}
    with pytest.raises((TypeError, triple_py.RpcError)) as info:
        if shape == "call":
            unary(channel, **serializer)("request", timeout=TIMEOUT)
        elif shape == "future":
            unary(channel, **serializer).future("request", timeout=TIMEOUT).result()
        elif shape == "unary_stream":
            list(channel.unary_stream(STREAM_METHOD, **serializer)("request", timeout=TIMEOUT))
        else:
            call = bidi(channel, **serializer)(timeout=TIMEOUT)
            try:
                call.write("request")
            finally:
                call.cancel()
    refused(info.value)
    assert_still_works(channel)


@pytest.mark.parametrize("shape", ["stream_unary", "stream_stream"])
@pytest.mark.parametrize("output", BAD_SERIALIZED.values(), ids=BAD_SERIALIZED.keys())
def test_serializer_returning_non_bytes_in_a_request_iterator(channel, shape, output):
    """Requests from an iterator are serialized on a helper thread: the call ends with an
    error status (as in grpcio), promptly, and the channel carries on."""
    started = time.monotonic()
    with pytest.raises(triple_py.RpcError) as info:
        if shape == "stream_unary":
            channel.stream_unary(STREAM_METHOD, request_serializer=lambda r: output)(
                iter(["a", "b"]), timeout=TIMEOUT)
        else:
            list(bidi(channel, request_serializer=lambda r: output)(iter(["a", "b"]),
                                                                    timeout=TIMEOUT))
    assert info.value.code() in (Code.UNKNOWN, Code.INTERNAL)
    assert time.monotonic() - started < TIMEOUT / 2
    assert_still_works(channel)


def test_serializer_and_deserializer_exceptions_reach_the_caller(channel):
    def broken(_):
        raise ZeroDivisionError("codec bug")
    with pytest.raises((ZeroDivisionError, triple_py.RpcError)):
        unary(channel, request_serializer=broken)("x", timeout=TIMEOUT)
    with pytest.raises((ZeroDivisionError, triple_py.RpcError)):
        unary(channel, response_deserializer=broken)(b"x", timeout=TIMEOUT)
    with pytest.raises((ZeroDivisionError, triple_py.RpcError)):
        unary(channel, response_deserializer=broken).future(b"x", timeout=TIMEOUT).result()
    assert_still_works(channel)


# --- metadata --------------------------------------------------------------------------------

NOT_PAIRS = {
    "int": 5,
    "object": object(),
    "str": "abc",
    "dict": {"x-a": "b"},
    "triple": [("x-a", "b", "c")],
    "single": [("x-a",)],
    "int item": [5],
    "None item": [None],
}


def metadata_shapes(channel, metadata):
    """The bad metadata on each call shape, one after the other (each must raise)."""
    yield lambda: unary(channel)(b"x", metadata=metadata, timeout=TIMEOUT)
    yield lambda: unary(channel).future(b"x", metadata=metadata, timeout=TIMEOUT)
    yield lambda: bidi(channel)(metadata=metadata, timeout=TIMEOUT)
    yield lambda: channel.unary_stream(STREAM_METHOD)(b"x", metadata=metadata, timeout=TIMEOUT)


@pytest.mark.parametrize("metadata", NOT_PAIRS.values(), ids=NOT_PAIRS.keys())
def test_metadata_not_a_sequence_of_pairs(channel, metadata):
    for attempt in metadata_shapes(channel, metadata):
        with pytest.raises((TypeError, ValueError)):
            attempt()
    assert_still_works(channel)


@pytest.mark.parametrize("key", [5, b"x-key", None, 1.5], ids=["int", "bytes", "None", "float"])
def test_metadata_key_not_str(channel, key):
    for attempt in metadata_shapes(channel, [(key, "v")]):
        with pytest.raises((TypeError, ValueError)):
            attempt()
    assert_still_works(channel)


BAD_KEYS = ["Upper-Case", "has space", "", ":path", "x-ü", "a\nb", "a\x00b", "x/y", "x@y",
            "\ud800"]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_invalid_metadata_key(channel, key):
    for attempt in metadata_shapes(channel, [("x-fine", "v"), (key, "v")]):
        with pytest.raises(ValueError):
            attempt()
    assert_still_works(channel)


BAD_VALUES = {"NUL": "a\x00b", "SOH": "a\x01b", "LF": "line\nbreak", "CR": "cr\r",
              "DEL": "del\x7f", "TAB": "tab\there", "non-ASCII": "café",
              "lone surrogate": "\ud800"}


@pytest.mark.parametrize("value", BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_invalid_metadata_value(channel, value):
    for attempt in metadata_shapes(channel, [("x-key", value)]):
        with pytest.raises(ValueError):
            attempt()
    assert_still_works(channel)


@pytest.mark.parametrize("value", ["text", 5, None, bytearray(b"x")],
                         ids=["str", "int", "None", "bytearray"])
def test_binary_key_needs_bytes(channel, value):
    for attempt in metadata_shapes(channel, [("x-data-bin", value)]):
        with pytest.raises((TypeError, ValueError)):
            attempt()
    assert_still_works(channel)


def test_edge_metadata_that_is_valid(channel):
    """What is legal passes: the full key alphabet, empty values, printable ASCII, bytes
    for a text key, any bytes for a -bin key.  (Not a leading or trailing space: RFC 9113
    lets the server's nghttp2 refuse those.)"""
    metadata = [("x-echo-0123456789_.-abcz", "v"), ("x-echo-empty", ""),
                ("x-echo-printable", "".join(map(chr, range(0x21, 0x7F))) + " ~"),
                ("x-echo-bytes", b"bytes ok"), ("x-echo-all-bin", bytes(range(256)))]
    _, call = unary(channel).with_call(b"x", metadata=metadata, timeout=TIMEOUT)
    received = dict(call.trailing_metadata())
    assert received["x-echo-printable"] == metadata[2][1]
    assert received["x-echo-all-bin"] == bytes(range(256))
    assert received["x-echo-empty"] == ""


SECRET = "s3cr3t-T0KEN-value-123456"


@pytest.mark.parametrize("bad_entry", [("authorization", f"Bearer {SECRET}\n"),
                                       ("x-api-key", f"{SECRET}\x00"),
                                       ("Authorization", f"Bearer {SECRET}")],
                         ids=["newline in value", "NUL in value", "upper-case key"])
def test_metadata_errors_do_not_show_values(channel, bad_entry):
    """A token in metadata must not end up in exception text (issue 9, "no key or token
    material in logs or exception text"): tracebacks are logged.  A token read from a file
    with its trailing newline is the common case."""
    metadata = [("x-request-id", "1"), ("x-other-token", SECRET), bad_entry]
    with pytest.raises(ValueError) as info:
        unary(channel)(b"x", metadata=metadata, timeout=TIMEOUT)
    text = str(info.value) + repr(info.value)
    assert SECRET not in text, f"the error shows the token: {text!r}"


# --- timeouts -------------------------------------------------------------------------------

WRONG_TIMEOUTS = {"str": "5", "bytes": b"5", "list": [5], "object": object(), "complex": 1j}


@pytest.mark.parametrize("timeout", WRONG_TIMEOUTS.values(), ids=WRONG_TIMEOUTS.keys())
def test_timeout_of_the_wrong_type(channel, timeout):
    attempts = [lambda: unary(channel)(b"x", timeout=timeout),
                lambda: unary(channel).with_call(b"x", timeout=timeout),
                lambda: unary(channel).future(b"x", timeout=timeout),
                lambda: bidi(channel)(timeout=timeout),
                lambda: channel.unary_stream(STREAM_METHOD)(b"x", timeout=timeout)]
    for attempt in attempts:
        with pytest.raises(TypeError):
            attempt()
    assert_still_works(channel)


def test_nan_timeout_is_refused(channel):
    """NaN is no deadline at all: a ValueError (as time.sleep(nan) raises), not a C cast of
    NaN to an integer (undefined behaviour) that happens to mean "no deadline"."""
    for attempt in [lambda: unary(channel)(b"x", timeout=math.nan),
                    lambda: unary(channel).future(b"x", timeout=math.nan),
                    lambda: bidi(channel)(timeout=math.nan)]:
        with pytest.raises(ValueError):
            attempt()
    assert_still_works(channel)


def test_extreme_timeouts(channel):
    """inf and huge values mean "no deadline"; zero and negative ones are already past."""
    assert unary(channel)(b"x", timeout=math.inf) == b"x"
    assert unary(channel)(b"x", timeout=1e300) == b"x"
    for timeout in (0, -1, -math.inf, 1e-300):
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"x", timeout=timeout)
        assert info.value.code() is Code.DEADLINE_EXCEEDED
    with pytest.raises((OverflowError, ValueError)):
        unary(channel)(b"x", timeout=10**400)


# --- the method --------------------------------------------------------------------------------

def test_bad_method_paths(channel):
    with pytest.raises(ValueError):
        channel.unary_unary("")(b"x", timeout=TIMEOUT)
    with pytest.raises(TypeError):
        channel.unary_unary(5)(b"x", timeout=TIMEOUT)
    with pytest.raises((ValueError, triple_py.RpcError)):  # refused here or by the server
        channel.unary_unary("/a\x00b/c")(b"x", timeout=TIMEOUT)
    with pytest.raises(triple_py.RpcError):  # an HTTP/2 header block over nghttp2's limit
        channel.unary_unary("/" + "m" * MiB)(b"x", timeout=TIMEOUT)
    assert_still_works(channel)


# --- a closed channel ------------------------------------------------------------------------

def test_closed_channel_refuses_new_calls(server):
    channel = triple_py.insecure_channel(server.address)
    made_before = unary(channel)
    assert made_before(b"x", timeout=TIMEOUT) == b"x"
    channel.close()
    attempts = [lambda: made_before(b"x", timeout=TIMEOUT),
                lambda: made_before.with_call(b"x", timeout=TIMEOUT),
                lambda: made_before.future(b"x", timeout=TIMEOUT),
                lambda: unary(channel)(b"x", timeout=TIMEOUT),
                lambda: bidi(channel)(timeout=TIMEOUT),
                lambda: bidi(channel)(iter([b"x"]), timeout=TIMEOUT),
                lambda: channel.unary_stream(STREAM_METHOD)(b"x", timeout=TIMEOUT),
                lambda: channel.stream_unary(STREAM_METHOD)(iter([b"x"]), timeout=TIMEOUT)]
    for attempt in attempts:
        with pytest.raises(ValueError, match="closed channel"):
            attempt()
    channel.close()  # idempotent
    with channel:  # and as a context manager
        pass


def test_closed_channel_refuses_generic_calls(server):
    """generic_call (the Triple wrapper codec) refuses a closed channel like every other
    call: ValueError, not an RpcError from a call that was started anyway."""
    channel = triple_py.insecure_channel(server.address)
    channel.close()
    with pytest.raises(ValueError, match="closed channel"):
        channel.generic_call("svc", "m", [b"x"], ["java.lang.String"], timeout=TIMEOUT)


def test_stream_of_a_closed_channel(server):
    channel = triple_py.insecure_channel(server.address)
    call = bidi(channel)(timeout=TIMEOUT)
    call.write(b"one")
    assert next(call) == b"one"
    channel.close()
    with pytest.raises(triple_py.RpcError) as info:
        call.write(b"two")
    assert info.value.code() is Code.CANCELLED
    with pytest.raises(triple_py.RpcError):
        next(call)
    call.done_writing()  # harmless
    assert call.cancel() is False


# --- streams ------------------------------------------------------------------------------------

def test_write_after_done_writing(channel):
    call = bidi(channel)(timeout=TIMEOUT, metadata=[("x-delay-ms", "200")])
    call.write(b"one")
    call.done_writing()
    with pytest.raises(ValueError):
        call.write(b"late")
    call.done_writing()  # twice is harmless
    assert list(call) == [b"one"]
    assert call.code() is Code.OK


def test_write_after_cancel(channel):
    """Once cancel() has returned True the call is over: a write raises the call's
    RpcError (CANCELLED) at once, as after any other end, instead of being dropped
    silently while the cancellation is still on its way to the I/O thread."""
    call = bidi(channel)(timeout=TIMEOUT)
    assert call.cancel() is True
    with pytest.raises(triple_py.RpcError) as info:
        call.write(b"late")
    assert info.value.code() is Code.CANCELLED
    assert_still_works(channel)


# --- metadata over every limit -------------------------------------------------------------------

@pytest.mark.parametrize("metadata", [
    [("x-big", "v" * MiB)],
    [("x-echo-big", "v" * MiB)],
    [("x-big-bin", b"\xff" * MiB)],
    [("k" * MiB, "v")],
    [("x-many", "v")] * 100_000,
], ids=["1 MiB value", "1 MiB echoed value", "1 MiB binary value", "1 MiB key",
        "100,000 entries"])
def test_huge_metadata_fails_only_its_own_call(channel, metadata):
    """Metadata no server would take fails its call with an RpcError, quickly; calls in
    flight and open streams on the same connection are not disturbed."""
    assert unary(channel)(b"warm", timeout=TIMEOUT) == b"warm"
    in_flight = unary(channel).future(b"in flight", timeout=TIMEOUT,
                                      metadata=[("x-delay-ms", "300")])
    stream = bidi(channel)(timeout=TIMEOUT)
    stream.write(b"before")
    assert next(stream) == b"before"
    connects = channel.stats()["connects"]
    for attempt in (lambda: unary(channel)(b"x", metadata=metadata, timeout=TIMEOUT),
                    lambda: list(bidi(channel)(iter([b"x"]), metadata=metadata,
                                               timeout=TIMEOUT))):
        started = time.monotonic()
        with pytest.raises(triple_py.RpcError) as info:
            attempt()
        assert info.value.code() is not Code.OK
        assert time.monotonic() - started < TIMEOUT / 2
    assert in_flight.result(timeout=TIMEOUT) == b"in flight"
    stream.write(b"after")
    assert next(stream) == b"after"
    stream.done_writing()
    assert list(stream) == [] and stream.code() is Code.OK
    assert channel.stats()["connects"] == connects


# --- triple_py.aio --------------------------------------------------------------------------------

@pytest.fixture
def aio_target(server):
    return server.address


@pytest.mark.parametrize("value", ["text", 5, None, object()],
                         ids=["str", "int", "None", "object"])
def test_aio_request_not_bytes_like(aio_target, value):
    async def scenario():
        async with aio.insecure_channel(aio_target) as ch:
            call = ch.unary_unary(UNARY_METHOD)
            with pytest.raises((TypeError, triple_py.RpcError)) as info:
                await call(value, timeout=TIMEOUT)
            refused(info.value)
            with pytest.raises((TypeError, triple_py.RpcError)) as info:
                await ch.unary_stream(STREAM_METHOD)(value, timeout=TIMEOUT).read()
            refused(info.value)
            assert await call(b"ok", timeout=TIMEOUT) == b"ok"
    aio_run(scenario)


@pytest.mark.parametrize("output", BAD_SERIALIZED.values(), ids=BAD_SERIALIZED.keys())
def test_aio_serializer_returning_non_bytes(aio_target, output):
    async def scenario():
        async with aio.insecure_channel(aio_target) as ch:
            serialized = ch.unary_unary(UNARY_METHOD, request_serializer=lambda r: output)
            with pytest.raises((TypeError, triple_py.RpcError)) as info:
                await serialized("request", timeout=TIMEOUT)
            refused(info.value)
            stream = ch.stream_stream(STREAM_METHOD, request_serializer=lambda r: output)(
                timeout=TIMEOUT)
            with pytest.raises(TypeError):
                await stream.write("request")
            stream.cancel()
            assert await ch.unary_unary(UNARY_METHOD)(b"ok", timeout=TIMEOUT) == b"ok"
    aio_run(scenario)


def test_aio_stream_writes(aio_target):
    async def scenario():
        async with aio.insecure_channel(aio_target) as ch:
            stream = ch.stream_stream(STREAM_METHOD)(timeout=TIMEOUT)
            for value in ("text", None, 5):
                with pytest.raises(TypeError):
                    await stream.write(value)
            await stream.write(b"fine")
            assert await stream.read() == b"fine"
            await stream.done_writing()
            with pytest.raises(asyncio.InvalidStateError):  # grpc.aio's behaviour
                await stream.write(b"late")
            assert await stream.read() is aio.EOF
            assert await stream.code() is Code.OK
    aio_run(scenario)


def test_aio_bad_metadata_and_timeouts(aio_target):
    async def scenario():
        async with aio.insecure_channel(aio_target) as ch:
            call = ch.unary_unary(UNARY_METHOD)
            chat = ch.stream_stream(STREAM_METHOD)
            for metadata, error in [(5, TypeError), ("abc", ValueError),
                                    ([("Upper", "v")], ValueError),
                                    ([("x-key", "line\nbreak")], ValueError),
                                    ([(b"x-key", "v")], ValueError),
                                    ([("x-data-bin", "text")], TypeError)]:
                with pytest.raises(error):
                    await call(b"x", metadata=metadata, timeout=TIMEOUT)
                with pytest.raises(error):
                    chat(metadata=metadata, timeout=TIMEOUT)
            for timeout in WRONG_TIMEOUTS.values():
                with pytest.raises(TypeError):
                    await call(b"x", timeout=timeout)
                with pytest.raises(TypeError):
                    chat(timeout=timeout)
            assert await call(b"ok", timeout=TIMEOUT) == b"ok"
    aio_run(scenario)


def test_aio_nan_timeout_is_refused(aio_target):
    async def scenario():
        async with aio.insecure_channel(aio_target) as ch:
            with pytest.raises(ValueError):
                await ch.unary_unary(UNARY_METHOD)(b"x", timeout=math.nan)
    aio_run(scenario)


def test_aio_huge_metadata(aio_target):
    async def scenario():
        async with aio.insecure_channel(aio_target) as ch:
            call = ch.unary_unary(UNARY_METHOD)
            in_flight = asyncio.ensure_future(
                call(b"in flight", timeout=TIMEOUT, metadata=[("x-delay-ms", "200")]))
            with pytest.raises(triple_py.RpcError) as info:
                await call(b"x", metadata=[("x-big", "v" * MiB)], timeout=TIMEOUT)
            assert info.value.code() is not Code.OK
            assert await in_flight == b"in flight"
    aio_run(scenario)


def test_aio_closed_channel(aio_target):
    async def scenario():
        ch = aio.insecure_channel(aio_target)
        call = ch.unary_unary(UNARY_METHOD)
        assert await call(b"x", timeout=TIMEOUT) == b"x"
        await ch.close()
        with pytest.raises(ValueError, match="closed channel"):
            await call(b"x", timeout=TIMEOUT)
        with pytest.raises(ValueError, match="closed channel"):
            ch.stream_stream(STREAM_METHOD)(timeout=TIMEOUT)
        await ch.close()  # idempotent
    aio_run(scenario)


# --- the nastiest inputs, in a child process --------------------------------------------------

def run_child(body: str, monkeypatch) -> tuple[int, str, str]:
    """Runs CHILD_PRELUDE then `body` in a child Python under PYTHONMALLOC=debug (freed
    memory is poisoned, so a use after free crashes); its (exit status, stdout, stderr)."""
    monkeypatch.setenv("PYTHONMALLOC", "debug")
    child = start_child(CHILD_PRELUDE + textwrap.dedent(body))
    try:
        out, err = child.communicate(timeout=CHILD_TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, out, err


CHILD_PRELUDE = """
import faulthandler, math
faulthandler.enable()
import triple_py
from triple_py.testing import EchoServer
UNARY = "/benchmark.BenchmarkService/UnaryCall"
STREAM = "/benchmark.BenchmarkService/StreamCall"

def attempt(name, fn):
    try:
        fn()
        print(name, "returned", flush=True)
    except Exception as exc:
        print(name, "raised", type(exc).__name__, flush=True)
"""


def test_nasty_inputs_do_not_crash_the_process(monkeypatch):
    code = """
    def broken_metadata():
        yield ("x-a", "b")
        raise RuntimeError("metadata generator broke")

    class BadFloat:
        def __float__(self):
            raise RuntimeError("no float")

    with EchoServer() as server, triple_py.insecure_channel(server.address) as ch:
        call = ch.unary_unary(UNARY)
        for name, fn in [
            ("1 MiB value", lambda: call(b"x", metadata=[("x-a", "v" * 2**20)], timeout=10)),
            ("1 MiB key", lambda: call(b"x", metadata=[("k" * 2**20, "v")], timeout=10)),
            ("100k entries", lambda: call(b"x", metadata=[("x-a", "v")] * 100_000, timeout=10)),
            ("1 MiB path", lambda: ch.unary_unary("/" + "m" * 2**20)(b"x", timeout=10)),
            ("NUL in path", lambda: ch.unary_unary("/a\\x00b/c")(b"x", timeout=10)),
            ("surrogate key", lambda: call(b"x", metadata=[("x-\\ud800", "v")], timeout=10)),
            ("surrogate value", lambda: call(b"x", metadata=[("x-a", "\\ud800")], timeout=10)),
            ("generator raises", lambda: call(b"x", metadata=broken_metadata(), timeout=10)),
            ("timeout raises", lambda: call(b"x", timeout=BadFloat())),
            ("timeout 10**400", lambda: call(b"x", timeout=10**400)),
            ("timeout nan", lambda: call(b"x", timeout=math.nan)),
            ("strided buffer", lambda: call(memoryview(b"abcdef")[::2], timeout=10)),
            ("64 MiB request", lambda: call(b"r" * 2**26, timeout=10)),
            ("bad stream writes", lambda: [ch.stream_stream(STREAM)(timeout=10).write(v)
                                           for v in ("s", None, 5)]),
            ("generic args", lambda: ch.generic_call("s", "m", [1], ["x"], timeout=10)),
            ("generic nan", lambda: ch.generic_call("s", "m", [b"1"], ["x"], timeout=math.nan)),
        ]:
            attempt(name, fn)
        assert call(b"still ok", timeout=10) == b"still ok"
    print("survived", flush=True)
    """
    status, out, err = run_child(code, monkeypatch)
    assert status == 0, f"exit status {status}\nstdout:\n{out}\nstderr:\n{err[-3000:]}"
    assert "survived" in out


def test_metadata_pair_whose_items_are_made_on_each_access(monkeypatch):
    """A pair may be any 2-item sequence (grpcio takes them).  One whose __getitem__ makes
    new strings used to be read after the temporary tuple holding them was freed
    (csrc/binding/channel_type.c, add_metadata): a crash under PYTHONMALLOC=debug."""
    code = """
    class Pair:
        def __len__(self):
            return 2
        def __getitem__(self, i):
            if i == 0:
                return "".join(["x-echo-", "key"])
            if i == 1:
                return "".join(["val", "ue" * 20])
            raise IndexError(i)

    with EchoServer() as server, triple_py.insecure_channel(server.address) as ch:
        _, call = ch.unary_unary(UNARY).with_call(b"x", metadata=[Pair()], timeout=10)
        print(dict(call.trailing_metadata())["x-echo-key"], flush=True)
    """
    status, out, err = run_child(code, monkeypatch)
    assert status == 0, f"exit status {status}\nstdout:\n{out}\nstderr:\n{err[-3000:]}"
    assert out.split() == ["val" + "ue" * 20]


def test_metadata_list_emptied_while_it_is_read(monkeypatch):
    """A pair whose __getitem__ empties the metadata list being read: the reader must not
    index past the list's new end (it used to read freed memory and crash)."""
    code = """
    metadata = []

    class Clearing:
        def __len__(self):
            return 2
        def __getitem__(self, i):
            metadata.clear()
            if i < 2:
                return ("x-echo-a", "v")[i]
            raise IndexError(i)

    metadata[:] = [Clearing()] + [("x-echo-b", "w")] * 3
    with EchoServer() as server, triple_py.insecure_channel(server.address) as ch:
        attempt("mutating metadata",
                lambda: ch.unary_unary(UNARY)(b"x", metadata=metadata, timeout=10))
        assert ch.unary_unary(UNARY)(b"ok", timeout=10) == b"ok"
    print("survived", flush=True)
    """
    status, out, err = run_child(code, monkeypatch)
    assert status == 0, f"exit status {status}\nstdout:\n{out}\nstderr:\n{err[-3000:]}"
    assert "survived" in out
