"""intercept_channel (issue 24): what the server receives, order, short-circuit, raising
interceptors, errors seen by interceptors, all four kinds; each case also run through
grpcio's own client with the same interceptor, and the two compared."""
from __future__ import annotations

import grpc
import pytest

import triple_py
from _helpers import TIMEOUT, echoed
from peers import UNARY_METHOD

STREAM_METHOD = "/benchmark.BenchmarkService/StreamCall"
ALL_KINDS = (triple_py.UnaryUnaryClientInterceptor, triple_py.UnaryStreamClientInterceptor,
             triple_py.StreamUnaryClientInterceptor, triple_py.StreamStreamClientInterceptor,
             grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
             grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor)


class Tagging(*ALL_KINDS):
    """Adds ``x-echo-<name>: <n>`` to every call and logs that it ran."""

    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def _tag(self, continuation, details, request):
        self.log.append(self.name)
        metadata = list(details.metadata or ()) + [(f"x-echo-{self.name}", str(len(self.log)))]
        return continuation(details._replace(metadata=metadata) if hasattr(details, "_replace")
                            else _Details(details, metadata), request)

    intercept_unary_unary = intercept_unary_stream = _tag
    intercept_stream_unary = intercept_stream_stream = _tag


class _Details(grpc.ClientCallDetails, triple_py.ClientCallDetails):
    """grpcio's details are not a namedtuple: a copy with other metadata."""

    def __init__(self, details, metadata):
        for field in ("method", "timeout", "credentials", "wait_for_ready", "compression"):
            setattr(self, field, getattr(details, field, None))
        self.metadata = metadata


def intercepted(mod, address: str, *interceptors):
    return mod.intercept_channel(mod.insecure_channel(address), *interceptors)


def run_all_kinds(mod, address: str):
    """(echoed metadata of each of the four kinds, interceptor log) with mod's client."""
    log: list = []
    ch = intercepted(mod, address, Tagging("a", log), Tagging("b", log))
    seen = {}
    _, call = ch.unary_unary(UNARY_METHOD).with_call(b"u", timeout=TIMEOUT)
    seen["unary_unary"] = echoed(call.initial_metadata())
    stream = ch.unary_stream(STREAM_METHOD)(b"s", timeout=TIMEOUT)
    assert list(stream) == [b"s"]
    seen["unary_stream"] = echoed(stream.initial_metadata())
    _, call = ch.stream_unary(STREAM_METHOD).with_call(iter([b"c"]), timeout=TIMEOUT)
    seen["stream_unary"] = echoed(call.initial_metadata())
    stream = ch.stream_stream(STREAM_METHOD)(iter([b"1", b"2"]), timeout=TIMEOUT)
    assert list(stream) == [b"1", b"2"]
    seen["stream_stream"] = echoed(stream.initial_metadata())
    seen["future"] = ch.unary_unary(UNARY_METHOD).future(b"f", timeout=TIMEOUT).result()
    ch.close()
    return seen, log


def test_all_kinds_reach_the_server_in_order_like_grpcio(peer):
    ours, our_log = run_all_kinds(triple_py, peer.address)
    theirs, their_log = run_all_kinds(grpc, peer.address)
    assert ours == theirs
    assert our_log == their_log == ["a", "b"] * 5
    assert ours["unary_unary"] == [("x-echo-a", "1"), ("x-echo-b", "2")]
    assert ours["future"] == b"f"


class ShortCircuit(triple_py.UnaryUnaryClientInterceptor, grpc.UnaryUnaryClientInterceptor):
    """Answers from a cache without calling the continuation."""

    def intercept_unary_unary(self, continuation, details, request):
        return Cached(b"cached:" + request)


class Cached(grpc.Call, grpc.Future):
    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value

    def exception(self, timeout=None):
        return None

    def traceback(self, timeout=None):
        return None

    def add_done_callback(self, fn):
        fn(self)

    def cancel(self):
        return False

    def cancelled(self):
        return False

    def running(self):
        return False

    def done(self):
        return True

    def is_active(self):
        return False

    def time_remaining(self):
        return None

    def add_callback(self, cb):
        return False

    def initial_metadata(self):
        return ()

    def trailing_metadata(self):
        return ()

    def code(self):
        return grpc.StatusCode.OK

    def details(self):
        return ""


def test_short_circuit_never_reaches_the_inner_interceptors(peer):
    for mod in (triple_py, grpc):
        log: list = []
        ch = intercepted(mod, peer.address, ShortCircuit(), Tagging("inner", log))
        mc = ch.unary_unary(UNARY_METHOD)
        assert mc(b"x", timeout=TIMEOUT) == b"cached:x"
        response, call = mc.with_call(b"y", timeout=TIMEOUT)
        assert (response, call.value) == (b"cached:y", b"cached:y")
        assert mc.future(b"z", timeout=TIMEOUT).result() == b"cached:z"
        assert log == [], mod.__name__
        ch.close()


class Raising(*ALL_KINDS):
    def _boom(self, continuation, details, request):
        raise LookupError("interceptor says no")

    intercept_unary_unary = intercept_unary_stream = _boom
    intercept_stream_unary = intercept_stream_stream = _boom


def raised(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - what comes out is the point
        return type(exc).__name__, str(exc)
    return None


def raising_outcomes(mod, address):
    ch = intercepted(mod, address, Raising())
    out = [raised(lambda: ch.unary_unary(UNARY_METHOD)(b"x", timeout=TIMEOUT)),
           raised(lambda: ch.unary_unary(UNARY_METHOD).with_call(b"x", timeout=TIMEOUT)),
           raised(lambda: ch.unary_unary(UNARY_METHOD).future(b"x", timeout=TIMEOUT).result()),
           raised(lambda: list(ch.unary_stream(STREAM_METHOD)(b"x", timeout=TIMEOUT))),
           raised(lambda: ch.stream_unary(STREAM_METHOD)(iter([b"x"]), timeout=TIMEOUT)),
           raised(lambda: list(ch.stream_stream(STREAM_METHOD)(iter([b"x"]),
                                                               timeout=TIMEOUT)))]
    ch.close()
    return out


def test_raising_interceptor_raises_out_of_the_call_like_grpcio(peer):
    ours = raising_outcomes(triple_py, peer.address)
    theirs = raising_outcomes(grpc, peer.address)
    assert ours == theirs
    assert ours[0] == ("LookupError", "interceptor says no")


class RetryOnce(triple_py.UnaryUnaryClientInterceptor, grpc.UnaryUnaryClientInterceptor):
    """Sees the error as a Call and retries without the failing header."""

    def __init__(self):
        self.codes = []

    def intercept_unary_unary(self, continuation, details, request):
        call = continuation(details, request)
        self.codes.append(call.code())
        if call.code() != call.code().OK:
            metadata = [kv for kv in details.metadata if kv[0] != "x-status"]
            details = details._replace(metadata=metadata) if hasattr(details, "_replace") \
                else _Details(details, metadata)
            call = continuation(details, request)
            self.codes.append(call.code())
        return call


def test_interceptor_sees_the_error_and_retries(peer):
    for mod in (triple_py, grpc):
        retry = RetryOnce()
        ch = intercepted(mod, peer.address, retry)
        reply = ch.unary_unary(UNARY_METHOD)(b"again", timeout=TIMEOUT,
                                             metadata=[("x-status", "14")])
        assert reply == b"again"
        assert [c.name for c in retry.codes] == ["UNAVAILABLE", "OK"], mod.__name__
        ch.close()


def test_error_through_interceptor_is_the_rpc_error(peer):
    ch = intercepted(triple_py, peer.address, Tagging("a", []))
    with pytest.raises(triple_py.RpcError) as info:
        ch.unary_unary(UNARY_METHOD)(b"", timeout=TIMEOUT, metadata=[("x-status", "5")])
    assert info.value.code() is triple_py.StatusCode.NOT_FOUND
    fut = ch.unary_unary(UNARY_METHOD).future(b"", timeout=TIMEOUT,
                                              metadata=[("x-status", "5")])
    assert fut.exception(TIMEOUT).code() is triple_py.StatusCode.NOT_FOUND
    ch.close()


class Rename(triple_py.UnaryUnaryClientInterceptor):
    def intercept_unary_unary(self, continuation, details, request):
        return continuation(details._replace(method=UNARY_METHOD, timeout=TIMEOUT), request)


def test_interceptor_may_change_method_and_timeout(grpcio_server):
    ch = intercepted(triple_py, grpcio_server.address, Rename())
    assert ch.unary_unary("/no.Such/Method")(b"renamed") == b"renamed"
    ch.close()


def test_intercept_channel_refuses_other_objects(grpcio_server):
    with triple_py.insecure_channel(grpcio_server.address) as ch:
        with pytest.raises(TypeError, match="UnaryUnaryClientInterceptor"):
            triple_py.intercept_channel(ch, object())
