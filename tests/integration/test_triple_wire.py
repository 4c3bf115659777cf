"""The Triple unary wire against a real Connect server (issue 5, "Triple wire (unary)" and
"Interop for this issue"; docs/triple-wire.md §1, §5).

The peer is connect-node (tests/peers/node/, fixture `connect_server`): Connect's unary
protocol is what the Triple wire derives from, so a `wire="triple"` channel's unary calls are
Connect unary calls to it (bare body, application/proto or application/json, JSON errors,
`trailer-` metadata, whole-body gzip). Connect ignores triple-* headers, so Triple deadlines
are the client's own. The same port also speaks gRPC, used at the end with the default wire.

What the client puts on the wire, and answers no real server gives (HTTP-status fallback,
`code_17`, JSON escapes), are checked with `RawH2Server` (_triple_helpers.py).
"""
import base64
import gzip
import time

import pytest

import triple_py
from _helpers import benchmark_messages, quiet_stats
from _triple_helpers import (DETAILS_KEY, TIMEOUT, Answer, Code, KiB, RawH2Server,
                             b64_unpadded, bidi, decode_rpc_status, echoed, header, json_error,
                             json_payload, json_request, proto_ok, triple_channel, unary)
from peers import encode_payload

GZIP = triple_py.Compression.Gzip
NO_COMPRESSION = triple_py.Compression.NoCompression
REPORT = [("x-peer-report", "1")]  # the Connect peer reports what it saw (peer's README)
COMPRESSIBLE = encode_payload(b"triple wire " * (16 * KiB // 12))  # about 16 KiB
SLOW = encode_payload(b"slow")  # a valid BenchmarkRequest: the peer parses the body first


@pytest.fixture
def channel(connect_server):
    with triple_channel(connect_server.address) as ch:
        yield ch


@pytest.fixture
def grpc_channel(connect_server):
    with triple_py.insecure_channel(connect_server.address) as ch:
        yield ch


def rpc_error(call, *args, **kwargs) -> triple_py.RpcError:
    with pytest.raises(triple_py.RpcError) as info:
        call(*args, **kwargs)
    return info.value


def details_status(error: triple_py.RpcError):
    """The google.rpc.Status of the error's grpc-status-details-bin trailer."""
    return decode_rpc_status(header(error.trailing_metadata(), DETAILS_KEY))


def written_by(channel: triple_py.Channel, call) -> tuple:
    """(result of call(), bytes the channel wrote for it, bytes it read for it)."""
    before = quiet_stats(channel)
    result = call()
    after = quiet_stats(channel)
    return (result, after["bytes_written"] - before["bytes_written"],
            after["bytes_read"] - before["bytes_read"])


# --- echo ----------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 1000, 70 * KiB, 1024 * KiB])
def test_echo_raw_bytes(channel, size):
    request = encode_payload(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    response, call = unary(channel).with_call(request, timeout=TIMEOUT, metadata=REPORT)
    assert response == request
    assert call.code() is Code.OK
    assert header(call.initial_metadata(), "x-peer-protocol") == "connect"


def test_echo_protobuf_serializers(channel):
    request_type, response_type = benchmark_messages()
    call = unary(channel, request_serializer=request_type.SerializeToString,
                 response_deserializer=response_type.FromString)
    response = call(request_type(payload=b"\x00hello\xff"), timeout=TIMEOUT)
    assert isinstance(response, response_type)
    assert response.payload == b"\x00hello\xff"
    assert call(request_type(), timeout=TIMEOUT) == response_type()


def test_many_calls_share_one_connection(channel):
    futures = [unary(channel).future(encode_payload(b"%d" % i), timeout=TIMEOUT)
               for i in range(50)]
    assert [f.result(timeout=TIMEOUT) for f in futures] == \
        [encode_payload(b"%d" % i) for i in range(50)]
    assert channel.stats()["connects"] == 1


# --- metadata ------------------------------------------------------------------------------

def test_metadata_both_ways(channel):
    """x-echo-* come back as headers (initial metadata) and as `trailer-` headers, which
    the client strips into trailing metadata; -bin values are bytes both ways."""
    sent = [("x-echo-text", "some value"), ("x-echo-one-bin", b"\xff"),
            ("x-echo-three-bin", b"\x00\x01\x02"), ("x-echo-empty-bin", b"")]
    response, call = unary(channel).with_call(b"", timeout=TIMEOUT, metadata=sent)
    assert response == b""
    assert echoed(call.initial_metadata()) == sorted(sent)
    assert echoed(call.trailing_metadata()) == sorted(sent)
    keys = [k for k, _ in call.initial_metadata() + call.trailing_metadata()]
    assert not [k for k in keys if k.startswith("trailer-") or k.startswith(":")], keys
    assert DETAILS_KEY not in keys


def test_metadata_on_errors(channel):
    error = rpc_error(unary(channel), b"", timeout=TIMEOUT,
                      metadata=[("x-status", "9"), ("x-echo-e", "on error"),
                                ("x-echo-e-bin", b"\x01\x02")])
    assert error.code() is Code.FAILED_PRECONDITION
    expected = [("x-echo-e", "on error"), ("x-echo-e-bin", b"\x01\x02")]
    assert echoed(error.initial_metadata()) == expected
    assert echoed(error.trailing_metadata()) == expected


def test_trailer_prefixed_headers_from_raw_server():
    answer = proto_ok(b"ok", [("x-lead", "l"), ("trailer-x-t", "tv"),
                              ("trailer-x-t-bin", "AAEC"), ("trailer-x-p-bin", "AA==")])
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        response, call = unary(ch).with_call(b"", timeout=TIMEOUT)
    assert response == b"ok"
    assert call.initial_metadata() == (("x-lead", "l"),)
    assert sorted(call.trailing_metadata()) == [("x-p-bin", b"\x00"), ("x-t", "tv"),
                                                ("x-t-bin", b"\x00\x01\x02")]


# --- errors (JSON body) --------------------------------------------------------------------

ERRORS = [
    (3, Code.INVALID_ARGUMENT, "bad argument"),
    (5, Code.NOT_FOUND, "nicht gefunden: Größe ✓"),
    (7, Code.PERMISSION_DENIED, "accès refusé «non»"),
    (13, Code.INTERNAL, "内部错误 \"quoted\" \\ back\nslash"),
    (16, Code.UNAUTHENTICATED, "who are you? 🤔"),
]


@pytest.mark.parametrize("number, code, message", ERRORS, ids=[c.name for _, c, _ in ERRORS])
def test_json_errors(channel, number, code, message):
    error = rpc_error(unary(channel), b"\x0a\x01a", timeout=TIMEOUT,
                      metadata=[("x-status", str(number)),
                                ("x-message-bin", message.encode("utf-8"))])
    assert error.code() is code
    assert error.details() == message


def test_json_error_ascii_message_header(channel):
    error = rpc_error(unary(channel), b"", timeout=TIMEOUT,
                      metadata=[("x-status", "8"), ("x-message", "slow down, 100% busy")])
    assert error.code() is Code.RESOURCE_EXHAUSTED
    assert error.details() == "slow down, 100% busy"


def test_json_error_details_become_grpc_status_details_bin(channel):
    """The JSON body's code, message and details are re-encoded as a google.rpc.Status in
    the trailing metadata key grpc-status-details-bin (types get type.googleapis.com/)."""
    error = rpc_error(unary(channel), b"", timeout=TIMEOUT,
                      metadata=[("x-status", "5"), ("x-message-bin", "où ✓".encode()),
                                ("x-error-detail", "detail text")])
    assert error.code() is Code.NOT_FOUND
    assert error.details() == "où ✓"
    status = details_status(error)
    assert (status.code, status.message) == (5, "où ✓")
    assert status.details == [("type.googleapis.com/benchmark.BenchmarkResponse",
                               encode_payload(b"detail text"))]


def test_json_error_escapes_from_raw_server():
    body = (b'{"code":"internal","debug":{"nested":[1,{"a":null}]},'
            b'"message":"caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\n\\t\\/ end"}')
    answer = Answer(500, [("content-type", "application/json")], body)
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        error = rpc_error(unary(ch), b"", timeout=TIMEOUT)
    assert error.code() is Code.INTERNAL
    assert error.details() == 'café 😀 "q" \\ \n\t/ end'


def test_gzipped_json_error_from_raw_server():
    body = gzip.compress(b'{"code":"permission_denied","message":"zipped"}')
    answer = Answer(403, [("content-type", "application/json"),
                          ("content-encoding", "gzip")], body)
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        error = rpc_error(unary(ch), b"", timeout=TIMEOUT)
    assert (error.code(), error.details()) == (Code.PERMISSION_DENIED, "zipped")


@pytest.mark.parametrize("name, code", [("code_4", Code.DEADLINE_EXCEEDED),
                                        ("code_99", Code.UNKNOWN),
                                        ("no_such_code", Code.UNKNOWN)])
def test_json_code_names(name, code):
    answer = json_error(name, "m", http_status=400)  # the JSON code wins over table B
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        error = rpc_error(unary(ch), b"", timeout=TIMEOUT)
    assert (error.code(), error.details()) == (code, "m")


def test_code_17_business_error():
    """`code_17` (dubbo-go's business error) is kept as 17 by the core (csrc/tri_tjson.h);
    triple_py.StatusCode has no 17, so code() is UNKNOWN (_status.code_from_int: codes
    outside 0-16 are UNKNOWN), and the 17 survives in grpc-status-details-bin."""
    answer = json_error("code_17", "business failure", http_status=500)
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        error = rpc_error(unary(ch), b"", timeout=TIMEOUT)
    assert error.code() is Code.UNKNOWN
    assert error.details() == "business failure"
    status = details_status(error)
    assert (status.code, status.message, status.details) == (17, "business failure", [])


# --- HTTP-status fallback (table B) --------------------------------------------------------

FALLBACK = [
    ("503 html body", Answer(503, [("content-type", "text/html")], b"<h1>busy</h1>"),
     Code.UNAVAILABLE),
    ("404 no body", Answer(404), Code.UNIMPLEMENTED),
    ("400 garbage", Answer(400, [("content-type", "application/json")], b"{garbage"),
     Code.INVALID_ARGUMENT),
    ("401 text", Answer(401, [("content-type", "text/plain")], b"no"), Code.UNAUTHENTICATED),
    ("403 no body", Answer(403), Code.PERMISSION_DENIED),
    ("408 no body", Answer(408), Code.DEADLINE_EXCEEDED),
    ("429 no body", Answer(429), Code.UNAVAILABLE),
    ("431 no body", Answer(431), Code.RESOURCE_EXHAUSTED),
    ("502 no body", Answer(502), Code.UNAVAILABLE),
    ("409 no body", Answer(409), Code.UNKNOWN),
    ("500 json without code", Answer(500, [("content-type", "application/json")],
                                     b'{"message":"no code"}'), Code.UNKNOWN),
]


@pytest.mark.parametrize("answer, code", [f[1:] for f in FALLBACK], ids=[f[0] for f in FALLBACK])
def test_http_status_fallback(answer, code):
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        for _ in range(2):  # the connection stays usable after such an answer
            error = rpc_error(unary(ch), b"\x0a\x01a", timeout=TIMEOUT)
            assert error.code() is code
            assert str(answer.status) in error.details()
        assert ch.stats()["connects"] == 1
    assert len(server.requests) == 2


# --- gzip ----------------------------------------------------------------------------------

def test_gzip_per_channel(connect_server):
    with triple_channel(connect_server.address) as plain, \
            triple_channel(connect_server.address, compression=GZIP) as zipped:
        for ch in (plain, zipped):
            assert unary(ch)(b"", timeout=TIMEOUT) == b""  # connect first
        (resp_plain, call_plain), plain_written, _ = written_by(
            plain, lambda: unary(plain).with_call(COMPRESSIBLE, timeout=TIMEOUT,
                                                  metadata=REPORT))
        (resp_zip, call_zip), zip_written, _ = written_by(
            zipped, lambda: unary(zipped).with_call(COMPRESSIBLE, timeout=TIMEOUT,
                                                    metadata=REPORT))
    assert resp_plain == resp_zip == COMPRESSIBLE
    assert header(call_plain.initial_metadata(), "x-peer-request-encoding") == "identity"
    assert header(call_zip.initial_metadata(), "x-peer-request-encoding") == "gzip"
    assert plain_written > len(COMPRESSIBLE)
    assert zip_written < len(COMPRESSIBLE) // 8, (zip_written, plain_written)


def test_gzip_per_call(channel):
    assert unary(channel)(b"", timeout=TIMEOUT) == b""
    (response, call), written, _ = written_by(
        channel, lambda: unary(channel).with_call(COMPRESSIBLE, timeout=TIMEOUT,
                                                  metadata=REPORT, compression=GZIP))
    assert response == COMPRESSIBLE
    assert header(call.initial_metadata(), "x-peer-request-encoding") == "gzip"
    assert written < len(COMPRESSIBLE) // 8
    # The next call without per-call compression goes uncompressed again.
    (response, call), written, _ = written_by(
        channel, lambda: unary(channel).with_call(COMPRESSIBLE, timeout=TIMEOUT,
                                                  metadata=REPORT))
    assert response == COMPRESSIBLE
    assert header(call.initial_metadata(), "x-peer-request-encoding") == "identity"
    assert written > len(COMPRESSIBLE)


def test_per_call_no_compression_overrides_channel(connect_server):
    with triple_channel(connect_server.address, compression=GZIP) as ch:
        response, call = unary(ch).with_call(COMPRESSIBLE, timeout=TIMEOUT, metadata=REPORT,
                                             compression=NO_COMPRESSION)
    assert response == COMPRESSIBLE
    assert header(call.initial_metadata(), "x-peer-request-encoding") == "identity"


def test_gzip_responses_are_inflated(channel):
    """The client always sends accept-encoding: gzip and the peer then gzips every
    response (compressMinBytes 0): 16 KiB of "a" arrive as a few dozen bytes."""
    assert unary(channel)(b"", timeout=TIMEOUT) == b""
    (response, call), _, read = written_by(
        channel, lambda: unary(channel).with_call(
            b"", timeout=TIMEOUT, metadata=REPORT + [("x-response-size", str(16 * KiB))]))
    assert response == encode_payload(b"a" * 16 * KiB)
    assert header(call.initial_metadata(), "x-peer-accept-encoding") == "gzip"
    assert read < 2 * KiB, read


def test_gzip_both_ways_large(channel):
    request = encode_payload(b"0123456789abcdef" * (256 * KiB // 16))
    assert unary(channel)(request, timeout=TIMEOUT, compression=GZIP) == request


# --- deadlines -----------------------------------------------------------------------------

def test_deadline_exceeded(channel):
    started = time.monotonic()
    error = rpc_error(unary(channel), SLOW, timeout=0.3, metadata=[("x-delay-ms", "5000")])
    elapsed = time.monotonic() - started
    assert error.code() is Code.DEADLINE_EXCEEDED
    assert 0.3 <= elapsed < 1.5, elapsed
    assert unary(channel)(encode_payload(b"next"), timeout=TIMEOUT) == encode_payload(b"next")
    assert channel.stats()["connects"] == 1


def test_deadline_exceeded_future(channel):
    future = unary(channel).future(SLOW, timeout=0.2, metadata=[("x-delay-ms", "5000")])
    assert future.exception(timeout=5).code() is Code.DEADLINE_EXCEEDED


def test_delay_within_deadline(channel):
    assert unary(channel)(b"\x0a\x01z", timeout=TIMEOUT,
                          metadata=[("x-delay-ms", "100")]) == b"\x0a\x01z"


# --- JSON codec ----------------------------------------------------------------------------

def test_json_codec(connect_server):
    options = [("triple.codec", "json")]
    with triple_channel(connect_server.address, options) as ch:
        call = unary(ch, request_serializer=json_request, response_deserializer=json_payload)
        assert call(b"\x00json \xff", timeout=TIMEOUT) == b"\x00json \xff"
        assert call(b"", timeout=TIMEOUT) == b""
        assert call(b"gz" * 8 * KiB, timeout=TIMEOUT, compression=GZIP) == b"gz" * 8 * KiB
        error = rpc_error(call, b"x", timeout=TIMEOUT,
                          metadata=[("x-status", "3"), ("x-message", "json says no")])
        assert (error.code(), error.details()) == (Code.INVALID_ARGUMENT, "json says no")


def test_json_codec_on_the_wire():
    def respond(request):
        return Answer(200, [("content-type", "application/json")], b'{"payload":"b2s="}')

    with RawH2Server(respond) as server, \
            triple_channel(server.address, [("triple.codec", "json")]) as ch:
        call = unary(ch, request_serializer=json_request, response_deserializer=json_payload)
        assert call(b"hi", timeout=TIMEOUT) == b"ok"
    request = server.last()
    assert request.get("content-type") == "application/json"
    assert request.body == json_request(b"hi")


# --- what goes on the wire -----------------------------------------------------------------

def test_request_headers_on_the_wire():
    options = [("triple.service_group", "g"), ("triple.service_version", "1.0.0")]
    body = encode_payload(b"wire")
    with RawH2Server() as server, triple_channel(server.address, options) as ch:
        assert unary(ch)(body, timeout=3, metadata=[("x-custom", "v")]) == body
    request = server.last()
    assert request.get(":method") == "POST"
    assert request.get(":scheme") == "http"
    assert request.get(":path") == "/benchmark.BenchmarkService/UnaryCall"
    assert request.get("content-type") == "application/proto"
    assert request.get("triple-protocol-version") == "0.1.0"
    assert 2000 < int(request.get("triple-timeout-ms")) <= 3000
    assert request.get("tri-service-group") == "g"
    assert request.get("tri-service-version") == "1.0.0"
    assert request.get("content-length") == str(len(body))
    assert request.get("accept-encoding") == "gzip"
    assert request.get("content-encoding") is None
    assert request.get("x-custom") == "v"
    assert request.body == body  # bare: no 5-byte envelope
    keys = request.keys()
    assert "te" not in keys
    assert not [k for k in keys if k.startswith("grpc-")], keys
    assert keys[:4] == [":method", ":scheme", ":path", ":authority"]


def test_optional_headers_absent_on_the_wire():
    with RawH2Server() as server, triple_channel(server.address) as ch:
        assert unary(ch)(b"", timeout=None) == b""
    request = server.last()
    for key in ("tri-service-group", "tri-service-version", "triple-timeout-ms", "te"):
        assert request.get(key) is None, key
    assert request.get("content-length") == "0"
    assert request.body == b""


def test_bin_metadata_unpadded_on_the_wire():
    values = {"x-one-bin": b"\xff", "x-two-bin": b"\x00\x01", "x-three-bin": b"\xfb\xff\xfe",
              "x-four-bin": b"\x00\x00\x00\x00", "x-empty-bin": b""}
    with RawH2Server() as server, triple_channel(server.address) as ch:
        unary(ch)(b"", timeout=TIMEOUT, metadata=list(values.items()))
    request = server.last()
    for key, value in values.items():
        wire = request.get(key)
        assert wire == b64_unpadded(value), (key, wire)
        assert "=" not in wire
        assert base64.b64decode(wire + "=" * (-len(wire) % 4)) == value


def test_gzip_on_the_wire():
    with RawH2Server(lambda r: proto_ok(b"done")) as server, \
            triple_channel(server.address, compression=GZIP) as ch:
        assert unary(ch)(COMPRESSIBLE, timeout=TIMEOUT) == b"done"
    request = server.last()
    assert request.get("content-encoding") == "gzip"
    assert request.get("content-length") == str(len(request.body))
    assert gzip.decompress(request.body) == COMPRESSIBLE


def test_gzip_response_from_raw_server():
    answer = proto_ok(gzip.compress(COMPRESSIBLE), [("content-encoding", "gzip")])
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        assert unary(ch)(b"", timeout=TIMEOUT) == COMPRESSIBLE


@pytest.mark.parametrize("headers, body, code", [
    ([("content-encoding", "br")], b"\x0a\x01a", Code.INTERNAL),
    ([("content-encoding", "gzip")], b"\x1f\x8b\x08\x00not deflate data", Code.INTERNAL),
    ([("content-encoding", "gzip")], gzip.compress(bytes(8 * 1024 * KiB)),
     Code.RESOURCE_EXHAUSTED),  # inflates past the 4 MiB receive limit
], ids=["unknown encoding", "corrupt gzip", "gzip bomb"])
def test_bad_response_encoding_from_raw_server(headers, body, code):
    answer = proto_ok(body, headers)
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        error = rpc_error(unary(ch), b"", timeout=TIMEOUT)
    assert error.code() is code, error.details()
    assert len(server.requests) == 1


# --- streams on a Triple channel, and the same peer's gRPC protocol -----------------------

def test_streams_on_triple_channel_use_grpc(channel):
    call = bidi(channel)(iter([b"\x0a\x01a", b"", b"\x0a\x01b"]), timeout=TIMEOUT,
                         metadata=REPORT)
    assert list(call) == [b"\x0a\x01a", b"", b"\x0a\x01b"]
    assert header(call.initial_metadata(), "x-peer-protocol") == "grpc"


def test_grpc_echo(grpc_channel):
    request = encode_payload(b"grpc" * 1000)
    response, call = unary(grpc_channel).with_call(
        request, timeout=TIMEOUT, metadata=REPORT + [("x-echo-g", "1"),
                                                     ("x-echo-g-bin", b"\x00\xff")])
    assert response == request
    assert header(call.initial_metadata(), "x-peer-protocol") == "grpc"
    expected = [("x-echo-g", "1"), ("x-echo-g-bin", b"\x00\xff")]
    assert echoed(call.initial_metadata()) == expected
    assert echoed(call.trailing_metadata()) == expected
    request_type, response_type = benchmark_messages()
    call = unary(grpc_channel, request_serializer=request_type.SerializeToString,
                 response_deserializer=response_type.FromString)
    assert call(request_type(payload=b"pb"), timeout=TIMEOUT).payload == b"pb"


def test_grpc_status(grpc_channel):
    error = rpc_error(unary(grpc_channel), b"", timeout=TIMEOUT,
                      metadata=[("x-status", "7"), ("x-message-bin", "refusé ✓".encode()),
                                ("x-error-detail", "why")])
    assert error.code() is Code.PERMISSION_DENIED
    assert error.details() == "refusé ✓"
    status = details_status(error)
    assert (status.code, status.message) == (7, "refusé ✓")
    assert status.details == [("type.googleapis.com/benchmark.BenchmarkResponse",
                               encode_payload(b"why"))]


def test_grpc_gzip(grpc_channel):
    response, call = unary(grpc_channel).with_call(COMPRESSIBLE, timeout=TIMEOUT,
                                                   metadata=REPORT, compression=GZIP)
    assert response == COMPRESSIBLE
    assert header(call.initial_metadata(), "x-peer-request-encoding") == "gzip"


def test_grpc_deadline(grpc_channel):
    error = rpc_error(unary(grpc_channel), b"", timeout=0.3, metadata=[("x-delay-ms", "5000")])
    assert error.code() is Code.DEADLINE_EXCEEDED


def test_grpc_stream_echo(grpc_channel):
    requests = [encode_payload(b"m%d" % i * (i * 100)) for i in range(20)]
    call = bidi(grpc_channel)(iter(requests), timeout=TIMEOUT,
                              metadata=[("x-echo-s", "stream")])
    assert list(call) == requests
    assert call.code() is Code.OK
    assert echoed(call.initial_metadata()) == [("x-echo-s", "stream")]
    assert echoed(call.trailing_metadata()) == [("x-echo-s", "stream")]


def test_grpc_stream_status(grpc_channel):
    call = bidi(grpc_channel)(iter([b"x"]), timeout=TIMEOUT,
                              metadata=[("x-status", "14"), ("x-message", "gone")])
    with pytest.raises(triple_py.RpcError) as info:
        list(call)
    assert (info.value.code(), info.value.details()) == (Code.UNAVAILABLE, "gone")
