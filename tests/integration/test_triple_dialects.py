"""Triple dialects (issue 21): the headers `triple.dialect` sends, and the Dubbo Java dialect
as far as it can be checked without a JVM.

The Java peer here is `RawH2Server` (_triple_helpers.py) answering the way Apache Dubbo's Java
Triple server does on its HTTP/2 unary path, per apache/dubbo at commit
324c62550ab22ffa53bce15f219bbc1d67b8c4a3 (paths under
dubbo-rpc/dubbo-rpc-triple/src/main/java/org/apache/dubbo/rpc/protocol/tri/ = `TRI/`, and
dubbo-remoting/dubbo-remoting-http12/src/main/java/org/apache/dubbo/remoting/http12/ = `H12/`):

- The deadline is read from `tri-service-timeout` as a decimal Long of milliseconds
  (`TRI/h12/AbstractServerTransportListener.java:303-318`, the name in
  `TRI/TripleHeaderEnum.java:42`); `triple-timeout-ms` is not read.  No protocol-version
  header is read at all (no `tri-protocol-version` in the Java sources).
- Service group and version come from `tri-service-group` / `tri-service-version`
  (`TRI/TripleHeaderEnum.java:40-41`, `TRI/rest/mapping/condition/
  ServiceGroupVersionCondition.java:53,68`); a request no invoker matches raises
  `HttpStatusException(404, "Invoker not found")` (`TRI/h12/AbstractServerTransportListener.
  java:125-129`).
- A failed call with gRPC code C becomes `HttpStatusException(grpcCodeToHttpStatus(C),
  message)` (`TRI/h12/CompositeExceptionHandler.java:113-128`; the table is
  `grpcCodeToHttpStatus` in dubbo-rpc/dubbo-rpc-triple/src/main/java/org/apache/dubbo/rpc/
  TriRpcStatus.java:202-236).  The unary observer answers it with that HTTP status and an
  `ErrorResponse` body (`TRI/h12/http2/Http2UnaryServerChannelObserver.java:50-65`), whose
  `status` is the HTTP status **as a string** and `message` the exception's message
  (`H12/AbstractServerHttpChannelObserver.java:270-279`, `H12/ErrorResponse.java:27-29`,
  `HttpUtils.toStatusString` writes `Integer.toString(statusCode)`), encoded by the
  request's codec: JSON for an `application/json` request.

What the peer does beyond Java (a test device, not Java behaviour): it answers the deadline it
saw in the response header `x-seen-timeout`, and takes the error to raise from the request's
`x-code` and `x-message-bin` metadata.
"""
from __future__ import annotations

import base64
import json

import pytest

import triple_py
from _triple_helpers import (DETAILS_KEY, TIMEOUT, Answer, Code, RawH2Server, b64_unpadded,
                             decode_rpc_status, header, triple_channel, unary)

# TriRpcStatus.grpcCodeToHttpStatus (TriRpcStatus.java:202-236), gRPC code -> HTTP status.
JAVA_HTTP = {1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409,
             11: 400, 12: 501, 13: 500, 14: 503, 15: 500, 16: 401}
# What a client can read back from each: Java's table is not one to one, so UNKNOWN and
# DATA_LOSS arrive as INTERNAL (500), FAILED_PRECONDITION and OUT_OF_RANGE as
# INVALID_ARGUMENT (400), ALREADY_EXISTS as ABORTED (409).  csrc/tri_tjson.h.
JAVA_READ_BACK = {2: 13, 9: 3, 11: 3, 6: 10, 15: 13}
GROUP, VERSION = "g", "1.0.0"
UTF8 = "unicode é ✓ 100%"


def java_peer(request) -> Answer:
    """One unary answer as Dubbo Java's HTTP/2 Triple server gives it (module docstring)."""
    seen = request.get("tri-service-timeout")  # AbstractServerTransportListener.java:304
    report = [("x-seen-timeout", seen or "none")]
    if (request.get("tri-service-group") or "", request.get("tri-service-version") or "") \
            != (GROUP, VERSION):
        return java_error(404, "Invoker not found", request, report)
    code = request.get("x-code")
    if code:
        message = b64_decode(request.get("x-message-bin") or "").decode("utf-8")
        return java_error(JAVA_HTTP[int(code)], message, request, report)
    return Answer(200, [("content-type", request.get("content-type")), *report], request.body)


def java_error(http: int, message: str, request, report) -> Answer:
    """The ErrorResponse answer (AbstractServerHttpChannelObserver.java:270-279)."""
    body = json.dumps({"status": str(http), "message": message}, ensure_ascii=False)
    return Answer(http, [("content-type", "application/json"), *report], body.encode())


def b64_decode(value: str) -> bytes:
    """Unpadded (or padded) base64, as -bin metadata travels."""
    return base64.b64decode(value + "=" * (-len(value) % 4))


def java_channel(address: str, dialect: str = "auto", group: str = GROUP):
    options = [("triple.codec", "json"), ("triple.dialect", dialect),
               ("triple.service_group", group), ("triple.service_version", VERSION)]
    return triple_channel(address, options)


def rpc_error(call, *args, **kwargs) -> triple_py.RpcError:
    with pytest.raises(triple_py.RpcError) as info:
        call(*args, **kwargs)
    return info.value


# --- what each dialect sends ---------------------------------------------------------------

SENT = {"auto": {"triple-protocol-version": "0.1.0", "tri-protocol-version": "1.0.0"},
        "go": {"triple-protocol-version": "0.1.0", "tri-protocol-version": None},
        "spec": {"triple-protocol-version": None, "tri-protocol-version": "1.0.0"}}
TIMEOUT_NAMES = {"auto": ("triple-timeout-ms", "tri-service-timeout"),
                 "go": ("triple-timeout-ms",), "spec": ("tri-service-timeout",)}


@pytest.mark.parametrize("dialect", sorted(SENT))
def test_dialect_headers_on_the_wire(dialect):
    with RawH2Server() as server, \
            triple_channel(server.address, [("triple.dialect", dialect)]) as ch:
        assert unary(ch)(b"x", timeout=3) == b"x"
    request = server.last()
    for key, value in SENT[dialect].items():
        assert request.get(key) == value, key
    for key in ("triple-timeout-ms", "tri-service-timeout"):
        if key in TIMEOUT_NAMES[dialect]:
            assert 2000 < int(request.get(key)) <= 3000, key
        else:
            assert request.get(key) is None, key
    if dialect == "auto":  # one deadline, two names
        assert request.get("triple-timeout-ms") == request.get("tri-service-timeout")


def test_default_dialect_is_auto():
    with RawH2Server() as server, triple_channel(server.address) as ch:
        assert unary(ch)(b"", timeout=3) == b""
    assert server.last().get("tri-service-timeout") is not None
    assert server.last().get("triple-timeout-ms") is not None


def test_no_deadline_no_timeout_header():
    with RawH2Server() as server, triple_channel(server.address) as ch:
        assert unary(ch)(b"", timeout=None) == b""
    for key in ("triple-timeout-ms", "tri-service-timeout"):
        assert server.last().get(key) is None, key


def test_bad_dialect_is_a_clear_error():
    with pytest.raises(ValueError, match="triple.dialect must be one of"):
        triple_py.insecure_channel("127.0.0.1:1", options=[("triple.dialect", "java")],
                                   wire="triple")


# --- the Java dialect ----------------------------------------------------------------------

@pytest.mark.parametrize("dialect, seen", [("auto", True), ("spec", True), ("go", False)])
def test_java_sees_the_deadline_in_spec_and_auto(dialect, seen):
    with RawH2Server(java_peer) as server, java_channel(server.address, dialect) as ch:
        _, call = unary(ch).with_call(b'{"payload":"b2s="}', timeout=3)
    value = header(call.initial_metadata(), "x-seen-timeout")
    if seen:
        assert 2000 < int(value) <= 3000
    else:
        assert value == "none"  # dubbo-go's triple-timeout-ms: Java reads no such header


@pytest.mark.parametrize("code", sorted(JAVA_HTTP))
def test_java_error_bodies(code):
    """Every gRPC code raised in a Java service: the client reads the ErrorResponse body
    (status = HTTP status as a string), keeps the UTF-8 message, and maps the status with
    Java's own table (lossy where Java's is, see JAVA_READ_BACK)."""
    md = [("x-code", str(code)), ("x-message-bin", UTF8.encode())]
    with RawH2Server(java_peer) as server, java_channel(server.address) as ch:
        error = rpc_error(unary(ch), b"{}", timeout=TIMEOUT, metadata=md)
    assert error.code().value[0] == JAVA_READ_BACK.get(code, code), (code, error.code())
    assert error.details() == UTF8
    status = decode_rpc_status(header(error.trailing_metadata(), DETAILS_KEY))
    assert (status.code, status.message) == (error.code().value[0], UTF8)


def test_java_missing_group_is_404_invoker_not_found():
    with RawH2Server(java_peer) as server, java_channel(server.address, group="other") as ch:
        error = rpc_error(unary(ch), b"{}", timeout=TIMEOUT)
    # Java answers a missing invoker with 404, the status it also gives NOT_FOUND: only the
    # message tells them apart (docs/triple-wire.md §1.4).
    assert (error.code(), error.details()) == (Code.NOT_FOUND, "Invoker not found")


def test_java_proto_error_without_body_falls_back_to_http_status():
    """A body that cannot be read (here none) leaves only the HTTP status: table B."""
    answer = Answer(503, [("content-type", "application/proto")], b"")
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        error = rpc_error(unary(ch), b"", timeout=TIMEOUT)
    assert (error.code(), error.details()) == (Code.UNAVAILABLE, "HTTP status 503")


# --- the dubbo-js body form, from a raw server ---------------------------------------------

def test_dubbo_js_numeric_status_with_details():
    """dubbo-js writes {"status": <gRPC code>, "message", "details"} (apache/dubbo-js
    packages/dubbo/src/protocol-triple/error-json.ts errorToJson) with the HTTP status of
    codeToHttpStatus (http-status.ts): NOT_FOUND is 404, which alone would read UNIMPLEMENTED."""
    detail = {"type": "google.rpc.ErrorInfo", "value": b64_unpadded(b"\x0a\x03foo")}
    body = json.dumps({"status": 5, "message": UTF8, "details": [detail]}).encode()
    answer = Answer(404, [("content-type", "application/json")], body)
    with RawH2Server(lambda r: answer) as server, triple_channel(server.address) as ch:
        error = rpc_error(unary(ch), b"", timeout=TIMEOUT)
    assert (error.code(), error.details()) == (Code.NOT_FOUND, UTF8)
    status = decode_rpc_status(header(error.trailing_metadata(), DETAILS_KEY))
    assert (status.code, status.message) == (5, UTF8)
    assert status.details == [("type.googleapis.com/google.rpc.ErrorInfo", b"\x0a\x03foo")]


@pytest.mark.parametrize("mode", ["fastpath", "stream-path"])
@pytest.mark.parametrize("dialect", sorted(SENT))
def test_c_load_generator_sends_the_dialect(dialect, mode):
    """The C load generator's Triple-wire calls carry the same headers as the channel's;
    the stream path's body is bare too, without content-length (dubbo-go's duplex path)."""
    from triple_py.bench import run
    with RawH2Server() as server:
        result = run(server.address, mode=mode, wire="triple", concurrency=1,
                     duration=0, count=3, warmup=0, timeout=3, options={"dialect": dialect})
    assert result.errors == 0
    request = server.last()
    assert request.get("content-type") == "application/proto"
    assert request.body[:1] == b"\x0a"  # BenchmarkRequest field 1: no 5-byte envelope
    assert (request.get("content-length") is None) == (mode == "stream-path")
    for key, value in SENT[dialect].items():
        assert request.get(key) == value, key
    for key in ("triple-timeout-ms", "tri-service-timeout"):
        assert (request.get(key) is not None) == (key in TIMEOUT_NAMES[dialect]), key
