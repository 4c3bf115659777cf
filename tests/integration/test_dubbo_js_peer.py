"""triple_py against Apache Dubbo's JavaScript server (issue 21): dubbo-node 3.0.0-alpha
(tests/peers/node/dubbo_server.mjs, fixture `dubbo_js_server`), on both wires.

On the Triple wire dubbo-js answers errors as {"status": <code>, "message", "details"} with
the HTTP status of the code and reads the deadline from `tri-service-timeout`; the peer reports
the deadline it saw (`x-peer-timeout-ms`).  Routing is on `tri-service-group` /
`tri-service-version`; a miss is a bare 404, which both wires read as UNIMPLEMENTED.
Streams use gRPC framing on both wires (triple_py does not speak dubbo-js's
application/connect+proto streaming wire).
"""
from __future__ import annotations

import pytest

import triple_py
from _triple_helpers import (DETAILS_KEY, TIMEOUT, Code, KiB, bidi, decode_rpc_status,
                             echoed, header, unary)
from peers import encode_payload

WIRES = ["grpc", "triple"]
REPORT = ("x-peer-report", "1")
UTF8 = "unicode é ✓ 100%"
GZIP = triple_py.Compression.Gzip


def channel(server, wire: str, *options):
    return triple_py.insecure_channel(server.address, options=list(options), wire=wire)


def rpc_error(call, *args, **kwargs) -> triple_py.RpcError:
    with pytest.raises(triple_py.RpcError) as info:
        call(*args, **kwargs)
    return info.value


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("size", [0, 1, 1000, 70 * KiB, 1024 * KiB])
def test_echo(dubbo_js_server, wire, size):
    body = encode_payload(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    with channel(dubbo_js_server, wire) as ch:
        assert unary(ch)(body, timeout=TIMEOUT) == body


@pytest.mark.parametrize("wire", WIRES)
def test_metadata_both_ways(dubbo_js_server, wire):
    md = [("x-echo-text", "plain"), ("x-echo-data-bin", b"\x00\xff\x10")]
    with channel(dubbo_js_server, wire) as ch:
        _, call = unary(ch).with_call(encode_payload(b"m"), timeout=TIMEOUT, metadata=md)
    want = sorted(md)
    assert echoed(call.initial_metadata()) == want
    assert echoed(call.trailing_metadata()) == want


@pytest.mark.parametrize("wire", WIRES)
def test_group_version_routing(dubbo_js_server, wire):
    options = [("triple.service_group", "g"), ("triple.service_version", "1.0.0")]
    with channel(dubbo_js_server, wire, *options) as ch:
        _, call = unary(ch).with_call(encode_payload(b"r"), timeout=TIMEOUT)
    assert header(call.initial_metadata(), "x-peer-route") == "g/1.0.0"
    with channel(dubbo_js_server, wire) as ch:
        _, call = unary(ch).with_call(encode_payload(b"r"), timeout=TIMEOUT)
    assert header(call.initial_metadata(), "x-peer-route") == "/"


@pytest.mark.parametrize("wire", WIRES)
def test_missing_group_version_is_unimplemented(dubbo_js_server, wire):
    options = [("triple.service_group", "nope"), ("triple.service_version", "9")]
    with channel(dubbo_js_server, wire, *options) as ch:
        error = rpc_error(unary(ch), encode_payload(b"r"), timeout=TIMEOUT)
    assert error.code() is Code.UNIMPLEMENTED


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("number", range(1, 17))
def test_every_status_with_utf8_message_and_details(dubbo_js_server, wire, number):
    md = [("x-status", str(number)), ("x-message-bin", UTF8.encode()),
          ("x-error-detail", "detail text")]
    with channel(dubbo_js_server, wire) as ch:
        error = rpc_error(unary(ch), encode_payload(b"e"), timeout=TIMEOUT, metadata=md)
    assert error.code().value[0] == number
    assert error.details() == UTF8
    status = decode_rpc_status(header(error.trailing_metadata(), DETAILS_KEY))
    assert (status.code, status.message) == (number, UTF8)
    assert status.details == [("type.googleapis.com/benchmark.BenchmarkResponse",
                               encode_payload(b"detail text"))]


@pytest.mark.parametrize("wire, dialect, seen", [
    ("grpc", "auto", True),     # grpc-timeout
    ("triple", "auto", True),   # tri-service-timeout (and triple-timeout-ms, ignored)
    ("triple", "spec", True),
    ("triple", "go", False),    # dubbo-go's triple-timeout-ms only: dubbo-js sees none
])
def test_deadline_observed_by_the_server(dubbo_js_server, wire, dialect, seen):
    with channel(dubbo_js_server, wire, ("triple.dialect", dialect)) as ch:
        _, call = unary(ch).with_call(encode_payload(b"d"), timeout=5, metadata=[REPORT])
    value = header(call.initial_metadata(), "x-peer-timeout-ms")
    if seen:
        assert 3000 < int(value) <= 5000, value
    else:
        assert value == "none"


def test_server_enforces_the_deadline_it_saw(dubbo_js_server):
    """With the deadline on the wire dubbo-js ends the call itself: DEADLINE_EXCEEDED."""
    with channel(dubbo_js_server, "triple") as ch:
        error = rpc_error(unary(ch), encode_payload(b"s"), timeout=0.3,
                          metadata=[("x-delay-ms", "2000")])
    assert error.code() is Code.DEADLINE_EXCEEDED


@pytest.mark.parametrize("wire", WIRES)
def test_gzip_both_ways(dubbo_js_server, wire):
    body = encode_payload(b"gzip me " * 4096)
    with channel(dubbo_js_server, wire) as ch:
        response, call = unary(ch).with_call(body, timeout=TIMEOUT, compression=GZIP,
                                             metadata=[REPORT])
    assert response == body
    assert header(call.initial_metadata(), "x-peer-request-encoding") == "gzip"
    assert "gzip" in header(call.initial_metadata(), "x-peer-accept-encoding")


@pytest.mark.parametrize("wire", WIRES)
def test_bidi_stream(dubbo_js_server, wire):
    messages = [encode_payload(b"m%d" % i) for i in range(5)]
    with channel(dubbo_js_server, wire) as ch:
        assert list(bidi(ch)(iter(messages), timeout=TIMEOUT)) == messages


# --- the C load generator on the Triple wire -----------------------------------------------

@pytest.mark.parametrize("mode, dialect", [("fastpath", "auto"), ("fastpath", "spec"),
                                           ("fastpath", "go"), ("stream-path", "auto"),
                                           ("bidi", "auto")])
def test_c_load_generator_on_the_triple_wire(dubbo_js_server, mode, dialect):
    """`bench run --wire triple` (fast path, stream path, bidi streams framed as Triple
    frames streams, like gRPC): every call of a bounded C load is answered OK by dubbo-js,
    in each dialect (dubbo-js requires no version header)."""
    from triple_py.bench import run
    result = run(dubbo_js_server.address, mode=mode, wire="triple", concurrency=4,
                 duration=0, count=200, warmup=0, options={"dialect": dialect})
    assert (result.calls, result.errors, result.wire) == (200, 0, "triple")
    assert result.status_codes == {"OK": 200}


@pytest.mark.parametrize("compression", [None, GZIP])
def test_triple_stream_path_against_dubbo_js(dubbo_js_server, compression):
    """`triple.unary_fast_path=False` on the Triple wire: the one request goes out as the
    bare (possibly gzipped) body with no content-length; dubbo-js answers it."""
    body = encode_payload(b"streamed " * 512)
    with channel(dubbo_js_server, "triple", ("triple.unary_fast_path", False)) as ch:
        response, call = unary(ch).with_call(body, timeout=TIMEOUT, compression=compression,
                                             metadata=[REPORT])
    assert response == body
    seen = header(call.initial_metadata(), "x-peer-request-encoding")
    assert seen == ("gzip" if compression else "identity")
    assert header(call.initial_metadata(), "x-peer-content-type") == "application/proto"
