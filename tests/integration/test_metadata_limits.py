"""Metadata limits like grpc's, and errors that say where they were found.

The client advertises SETTINGS_MAX_HEADER_LIST_SIZE (grpc.max_metadata_size, 8 KiB by
default, as grpcio 1.51), so a compliant server (grpc-go) refuses to send a larger header
block and resets that stream; a server that sends one anyway fails that call with
RESOURCE_EXHAUSTED. The embedded server advertises its own limit (64 KiB) and checks the
client's before it answers. Either way the other calls on the connection carry on: each test
keeps IN_FLIGHT calls in flight on one connection. Local HTTP/2 errors are not worded as the
peer's, and an HTTP 200 that is not gRPC is UNKNOWN (grpc's HTTP-to-gRPC mapping)."""
import functools
import socket
import struct
from typing import Dict, List, Sequence, Tuple

import h2.config
import h2.connection
import h2.errors
import h2.events

import triple_py
from triple_py.testing import EchoServer
from _helpers import TIMEOUT, rogue, rpc_error
from peers import UNARY_METHOD
from peers import h2_rogue_server as rogue_peer

Code = triple_py.StatusCode
Metadata = Sequence[Tuple[str, str]]
IN_FLIGHT = 50
HOLD = ("x-delay-ms", "300")  # keeps every call in flight while the others are sent


def fire(stubs: Dict[int, object], metadata: Dict[int, Metadata], default_stub,
         **kwargs) -> Dict[int, object]:
    """Starts IN_FLIGHT calls at once (call i with stubs.get(i) and metadata.get(i)), then
    returns each one's outcome: "OK" or its RpcError."""
    futures = [stubs.get(i, default_stub).future(b"call %d" % i, metadata=metadata.get(i, ()),
                                                   timeout=TIMEOUT, **kwargs)
               for i in range(IN_FLIGHT)]
    outcomes = {}
    for i, future in enumerate(futures):
        error = future.exception()
        outcomes[i] = "OK" if error is None else error
    return outcomes


def bystanders(outcomes: Dict[int, object], special: Sequence[int]) -> List[object]:
    """The outcomes of the calls other than `special` that did not succeed."""
    return [o for i, o in outcomes.items() if i not in special and o != "OK"]


def test_large_response_headers_fail_only_their_call_against_grpc_go(go_server):
    """grpc-go reads our SETTINGS_MAX_HEADER_LIST_SIZE and resets the stream whose headers
    or trailers would exceed it (INTERNAL, as grpcio 1.51 gets from it): one 120 KB value, ten
    30 KB values, a 20 KB trailer. The other 47 calls succeed on the same connection. Before:
    grpc-go sent the blocks, the client's nghttp2 ended the connection (COMPRESSION_ERROR,
    "Too many CONTINUATION frames") and about half the bystanders ended INTERNAL."""
    special = {10: [HOLD, ("x-response-header-size", "120000")],
               20: [HOLD, ("x-response-header-size", "30000"), ("x-response-header-count", "10")],
               30: [HOLD, ("x-response-trailer-size", "20000")]}
    with triple_py.insecure_channel(go_server.address) as ch:
        stub = ch.unary_unary(UNARY_METHOD)
        outcomes = fire({}, {i: special.get(i, [HOLD]) for i in range(IN_FLIGHT)}, stub)
        for i in special:
            assert outcomes[i] != "OK", i
            assert outcomes[i].code() is Code.INTERNAL, outcomes[i]
        assert bystanders(outcomes, special) == []
        assert ch.stats()["connects"] == 1


def test_max_metadata_size_raises_the_limit(go_server):
    """grpc.max_metadata_size is advertised and honoured: at 400,000 bytes grpc-go sends ten
    30 KB values (19 CONTINUATION frames of 16 KiB) and the call gets them all."""
    options = [("grpc.max_metadata_size", 400_000)]
    with triple_py.insecure_channel(go_server.address, options=options) as ch:
        stub = ch.unary_unary(UNARY_METHOD)
        reply, call = stub.with_call(b"big", timeout=TIMEOUT, metadata=[
            ("x-response-header-size", "30000"), ("x-response-header-count", "10")])
        assert reply == b"big"
        fillers = [k for k, v in call.initial_metadata() if k.startswith("x-filler-")]
        assert len(fillers) == 10, call.initial_metadata()


def test_server_ignoring_the_limit_fails_only_that_call(rogue_server):
    """A server that ignores SETTINGS_MAX_HEADER_LIST_SIZE: a header block over the limit
    fails its call with RESOURCE_EXHAUSTED (grpcio: "received initial metadata size exceeds
    limit"), the stream is reset, and the other calls on the connection succeed."""
    with triple_py.insecure_channel(rogue_server.address) as ch:
        echo = rogue(ch, "Echo")
        special = {10: rogue(ch, "LargeHeaders"), 20: rogue(ch, "LargeTrailers")}
        outcomes = fire(special, {}, echo)
        assert outcomes[10].code() is Code.RESOURCE_EXHAUSTED, outcomes[10]
        assert "received initial metadata size exceeds limit" in outcomes[10].details()
        assert outcomes[20].code() is Code.RESOURCE_EXHAUSTED, outcomes[20]
        assert "received trailing metadata size exceeds limit" in outcomes[20].details()
        assert bystanders(outcomes, special) == []
        assert ch.stats()["connects"] == 1
    big = rogue_peer.LARGE_FIELDS * rogue_peer.LARGE_FIELD_SIZE * 2
    with triple_py.insecure_channel(rogue_server.address,
                                    options=[("grpc.max_metadata_size", big)]) as ch:
        reply, call = rogue(ch, "LargeHeaders").with_call(b"x", timeout=TIMEOUT)
        assert reply == b"x"
        assert len([k for k, _ in call.initial_metadata() if k.startswith("x-filler-")]) == 10


def test_embedded_server_metadata_limits_fail_only_their_call():
    """The embedded server: a request whose echoed metadata exceeds the client's 8 KiB is
    reset by the server (INTERNAL, as grpc-go does); a 200 KB request header is over the
    server's advertised 64 KiB and refused by the client before it is sent
    (RESOURCE_EXHAUSTED). Before, the 200 KB header made the server drop the connection and
    every call on it."""
    special = {10: [HOLD, ("x-echo-big", "e" * 20_000)],
               20: [HOLD, ("x-big", "b" * 200_000)],
               30: [HOLD] + [("x-echo-%d" % i, "e" * 7000) for i in range(10)]}
    with EchoServer() as server, \
            triple_py.insecure_channel(server.address) as ch:
        stub = ch.unary_unary(UNARY_METHOD)
        outcomes = fire({}, {i: special.get(i, [HOLD]) for i in range(IN_FLIGHT)}, stub)
        assert outcomes[10].code() is Code.INTERNAL, outcomes[10]
        assert outcomes[20].code() is Code.RESOURCE_EXHAUSTED, outcomes[20]
        assert "server's (SETTINGS_MAX_HEADER_LIST_SIZE)" in outcomes[20].details()
        assert outcomes[30].code() is Code.RESOURCE_EXHAUSTED, outcomes[30]
        assert bystanders(outcomes, special) == []
        assert ch.stats()["connects"] == 1


def _raw_requests(port: int, headers_of: Dict[int, List[Tuple[bytes, bytes]]],
                  count: int) -> Tuple[Dict[int, Dict[bytes, bytes]], List[object]]:
    """Sends `count` unary requests on one h2c connection with python-h2 (which does not
    check the server's SETTINGS_MAX_HEADER_LIST_SIZE); request i carries headers_of.get(i)
    as well. Returns each stream's response headers and trailers merged, by request index,
    and the connection-level events (GOAWAY)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                                header_encoding=None))
    # Plain literals: python-hpack's Huffman coder takes seconds over 100 KB.
    conn.encoder.encode = functools.partial(conn.encoder.encode, huffman=False)
    conn.initiate_connection()
    index: Dict[int, int] = {}
    for i in range(count):
        sid = conn.get_next_available_stream_id()
        index[sid] = i
        conn.send_headers(sid, [(b":method", b"POST"), (b":scheme", b"http"),
                                (b":path", UNARY_METHOD.encode()), (b":authority", b"x"),
                                (b"content-type", b"application/grpc"), (b"te", b"trailers")]
                          + headers_of.get(i, []))
        conn.send_data(sid, b"\x00" + struct.pack(">I", 0), end_stream=True)
    sock.sendall(conn.data_to_send())
    answers: Dict[int, Dict[bytes, bytes]] = {}
    ended, connection_events = set(), []
    try:
        while len(ended) < count and not connection_events:
            data = sock.recv(1 << 20)
            if not data:
                connection_events.append("EOF")
                break
            for event in conn.receive_data(data):
                if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                    answers.setdefault(index[event.stream_id], {}).update(event.headers)
                elif isinstance(event, h2.events.StreamEnded):
                    ended.add(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    answers.setdefault(index[event.stream_id], {})[b"rst"] = b"%d" % \
                        event.error_code
                    ended.add(event.stream_id)
                elif isinstance(event, h2.events.ConnectionTerminated):
                    connection_events.append(event)
            sock.sendall(conn.data_to_send())
    finally:
        sock.close()
    return answers, connection_events


def test_embedded_server_fails_only_an_oversized_request_stream():
    """A client that ignores the server's SETTINGS_MAX_HEADER_LIST_SIZE sends ten 30 KB
    request headers: that stream is answered RESOURCE_EXHAUSTED, the 9 others on the
    connection succeed, no GOAWAY."""
    big = [(b"x-big-%d" % i, b"b" * 30_000) for i in range(10)]
    with EchoServer() as server:
        answers, connection_events = _raw_requests(server.port, {4: big}, 10)
    assert connection_events == []
    assert answers[4].get(b"grpc-status") == str(Code.RESOURCE_EXHAUSTED.value[0]).encode(), \
        answers[4]
    assert b"limit" in answers[4].get(b"grpc-message", b"")
    assert [i for i in range(10) if i != 4 and answers[i].get(b"grpc-status") != b"0"] == []


def test_embedded_server_undecodable_request_header_ends_with_goaway():
    """One 200 KB request field from a client that ignores the server's
    SETTINGS_MAX_HEADER_LIST_SIZE is over what nghttp2's HPACK decoder takes (a 64 KiB
    string), a connection error: the server answers GOAWAY(COMPRESSION_ERROR) and reads
    what the client still sends until its EOF, so the client reads the GOAWAY. Before, the
    server closed with those bytes unread and the client got a reset (ECONNRESET)."""
    with EchoServer() as server:
        _, connection_events = _raw_requests(server.port, {4: [(b"x-big", b"b" * 200_000)]},
                                             10)
    assert [(type(e), e.error_code) for e in connection_events] == \
        [(h2.events.ConnectionTerminated, h2.errors.ErrorCodes.COMPRESSION_ERROR)]


def test_http_200_that_is_not_grpc_is_unknown(rogue_server):
    """An HTTP 200 whose content-type is not application/grpc is UNKNOWN (grpc's mapping,
    grpc-go and grpcio), with or without a grpc-status. Before: INTERNAL."""
    with triple_py.insecure_channel(rogue_server.address) as ch:
        for mode in ("HtmlPage", "HtmlWithStatus"):
            error = rpc_error(rogue(ch, mode), b"x", timeout=TIMEOUT)
            assert error.code() is Code.UNKNOWN, (mode, error)
            assert '"text/html"' in error.details(), error.details()
        assert rogue(ch, "Echo")(b"next", timeout=TIMEOUT) == b"next"


def test_local_protocol_error_is_not_worded_as_the_peers(rogue_server):
    """A header value larger than nghttp2's HPACK decoder takes (a server ignoring our limit)
    is an error the client finds itself: it ends the connection (COMPRESSION_ERROR, the
    HPACK state is lost) and the message says so, without "from peer". Before: "HTTP/2
    protocol error from peer (COMPRESSION_ERROR)"."""
    with triple_py.insecure_channel(rogue_server.address) as ch:
        error = rpc_error(rogue(ch, "HugeHeaderField"), b"x", timeout=TIMEOUT)
        assert error.code() is Code.INTERNAL, error
        assert "detected by the client" in error.details(), error.details()
        assert "from peer" not in error.details(), error.details()
        assert rogue(ch, "Echo")(b"next", timeout=TIMEOUT) == b"next"  # a new connection
