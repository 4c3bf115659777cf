"""Self-tests of the test peers, with grpcio and a raw python3-h2 client as clients.

These check the peers against tests/peers/README.md independently of triple_py, so a
triple_py test failing against a peer points at triple_py. Messages are decoded with the
protobuf library from protoc-compiled descriptors, not with the peers' own helpers.

grpcio 1.51 is never pointed at the rogue modes MissingStatus (the client process dies
with SIGILL) or TwoMessages (the unary call hangs until its deadline); those two, and the
framing modes, are checked on the wire with the raw h2 client instead.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent import futures
from pathlib import Path

import grpc
import h2.config
import h2.connection
import h2.errors
import h2.events
import pytest
from google.protobuf import descriptor_pb2, message_factory

from peers import STREAM_METHOD, UNARY_METHOD, decode_payload, frame, launch
from peers import h2_rogue_server as rogue

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 64 * MiB),
                   ("grpc.max_send_message_length", 64 * MiB)]
RPC_STATUS_PROTO = """
syntax = "proto3";
package google.rpc;
import "google/protobuf/any.proto";
message Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; }
message BadRequest {
  message FieldViolation { string field = 1; string description = 2; }
  repeated FieldViolation field_violations = 1;
}
"""


@pytest.fixture(scope="session")
def messages(tmp_path_factory):
    """Message classes compiled by protoc: benchmark.*, google.rpc.Status, BadRequest."""
    out = tmp_path_factory.mktemp("proto")
    (out / "rpc_status.proto").write_text(RPC_STATUS_PROTO)
    descriptor_set = out / "all.pb"
    subprocess.run(["protoc", f"-I{ROOT / 'proto'}", f"-I{out}", "-I/usr/include",
                    "--include_imports", f"--descriptor_set_out={descriptor_set}",
                    "benchmark.proto", "rpc_status.proto"], check=True)
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes()).file
    return message_factory.GetMessages(files)


@pytest.fixture
def channel(peer):
    with grpc.insecure_channel(peer.address, options=CHANNEL_OPTIONS) as ch:
        yield ch


@pytest.fixture
def rogue_channel(rogue_server):
    with grpc.insecure_channel(rogue_server.address, options=CHANNEL_OPTIONS) as ch:
        yield ch


def unary(channel):
    return channel.unary_unary(UNARY_METHOD)


def stream(channel):
    return channel.stream_stream(STREAM_METHOD)


def rpc_error(call, *args, **kwargs) -> grpc.RpcError:
    """The RpcError that call(*args, **kwargs) raises."""
    with pytest.raises(grpc.RpcError) as info:
        result = call(*args, **kwargs)
        if not isinstance(result, bytes):  # a response stream: the error comes while reading
            list(result)
    return info.value


def echoed(metadata) -> list:
    return sorted((k, v) for k, v in metadata if k.startswith("x-echo-"))


# --- grpcio and grpc-go peers ---------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 128, MiB, 4 * MiB, 8 * MiB])
def test_unary_echo(channel, size):
    request = os.urandom(size)
    assert unary(channel)(request, timeout=30) == request


def test_stream_echo(channel):
    requests = [b"", b"x", os.urandom(1000), os.urandom(MiB), b"last"]
    assert list(stream(channel)(iter(requests), timeout=30)) == requests


def test_unknown_method(channel):
    call = channel.unary_unary("/benchmark.BenchmarkService/NoSuchMethod")
    assert rpc_error(call, b"x", timeout=5).code() == grpc.StatusCode.UNIMPLEMENTED


@pytest.mark.parametrize("code", [c for c in grpc.StatusCode if c != grpc.StatusCode.OK],
                         ids=lambda c: c.name)
def test_status_with_message(channel, code):
    metadata = [("x-status", str(code.value[0])), ("x-message", f"{code.name} on purpose")]
    error = rpc_error(unary(channel), b"req", metadata=metadata, timeout=5)
    assert (error.code(), error.details()) == (code, f"{code.name} on purpose")
    error = rpc_error(stream(channel), iter([b"req"]), metadata=metadata, timeout=5)
    assert (error.code(), error.details()) == (code, f"{code.name} on purpose")


def test_status_with_binary_message(channel):
    text = "café ☕ 100% \"quoted\"\n"
    metadata = [("x-status", "9"), ("x-message", "ignored"), ("x-message-bin", text.encode())]
    error = rpc_error(unary(channel), b"req", metadata=metadata, timeout=5)
    assert (error.code(), error.details()) == (grpc.StatusCode.FAILED_PRECONDITION, text)


def test_status_ok(channel):
    assert unary(channel)(b"req", metadata=[("x-status", "0")], timeout=5) == b""
    assert list(stream(channel)(iter([b"a", b"b"]), metadata=[("x-status", "0")], timeout=5)) == []


@pytest.mark.parametrize("key, value", [
    ("x-status", "forty"), ("x-status", "17"), ("x-delay-ms", "-1"),
    ("x-delay-ms", "3600001"), ("x-response-size", str(64 * MiB + 1))])
def test_bad_control_value(channel, key, value):
    error = rpc_error(unary(channel), b"req", metadata=[(key, value)], timeout=5)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert value in error.details()


ECHO_METADATA = [("x-echo-text", "hello"), ("x-echo-multi", "1"), ("x-echo-multi", "2"),
                 ("x-echo-data-bin", b"\x00\x01\xfe\xff")]
NOT_ECHOED = [("x-other", "no"), ("x-echoless", "no")]


def test_echo_metadata(channel):
    response, call = unary(channel).with_call(b"req", metadata=ECHO_METADATA + NOT_ECHOED,
                                              timeout=5)
    assert response == b"req"
    assert echoed(call.initial_metadata()) == sorted(ECHO_METADATA)
    assert echoed(call.trailing_metadata()) == sorted(ECHO_METADATA)
    assert not {k for k, _ in call.initial_metadata()} & {k for k, _ in NOT_ECHOED}


def test_echo_metadata_with_status(channel):
    error = rpc_error(unary(channel), b"req", metadata=ECHO_METADATA + [("x-status", "5")],
                      timeout=5)
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert echoed(error.initial_metadata()) == sorted(ECHO_METADATA)
    assert echoed(error.trailing_metadata()) == sorted(ECHO_METADATA)


def test_echo_metadata_stream(channel):
    call = stream(channel)(iter([b"a"]), metadata=ECHO_METADATA, timeout=5)
    assert list(call) == [b"a"]
    assert echoed(call.initial_metadata()) == sorted(ECHO_METADATA)
    assert echoed(call.trailing_metadata()) == sorted(ECHO_METADATA)


@pytest.mark.parametrize("size", [0, 1, 127, 128, 300, 5 * MiB])
def test_response_size(channel, messages, size):
    metadata = [("x-response-size", str(size))]
    response_type = messages["benchmark.BenchmarkResponse"]
    for response in [unary(channel)(b"req", metadata=metadata, timeout=30),
                     *stream(channel)(iter([b"one", b"two"]), metadata=metadata, timeout=30)]:
        assert response_type.FromString(response).payload == b"a" * size
        assert decode_payload(response) == b"a" * size
        assert len(response) <= size + 5


def test_delay(channel):
    started = time.monotonic()
    assert unary(channel)(b"req", metadata=[("x-delay-ms", "300")], timeout=5) == b"req"
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    error = rpc_error(unary(channel), b"req", metadata=[("x-delay-ms", "5000")], timeout=0.2)
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 2


def test_delay_ends_with_the_call(channel):
    """Calls that time out during x-delay-ms release the server (more of them than workers)."""
    call = unary(channel)
    delayed = [call.future(b"slow", metadata=[("x-delay-ms", "20000")], timeout=0.3)
               for _ in range(40)]
    for future in delayed:
        assert future.exception(timeout=5).code() == grpc.StatusCode.DEADLINE_EXCEEDED
    started = time.monotonic()
    assert call(b"fast", timeout=5) == b"fast"
    assert time.monotonic() - started < 1


def test_concurrent_calls(channel):
    call = unary(channel)

    def worker(index: int) -> int:
        for n in range(200):
            request = f"{index}:{n}".encode()
            assert call(request, timeout=10) == request
        return index

    with futures.ThreadPoolExecutor(16) as pool:
        assert sorted(pool.map(worker, range(16))) == list(range(16))


# --- peer processes ----------------------------------------------------------------------

@pytest.mark.parametrize("name", launch.PEER_NAMES)
def test_peer_lifecycle(name):
    """A peer answers on its port, exits on stdin EOF, and stop() reaps it."""
    peer = launch.start_peer(name)
    try:
        assert peer.address == f"127.0.0.1:{peer.port}"
        socket.create_connection(("127.0.0.1", peer.port), timeout=5).close()
        peer.process.stdin.close()
        assert peer.process.wait(timeout=10) is not None
    finally:
        peer.stop()
    assert peer.process.poll() is not None
    with launch.start_peer(name) as peer:
        pass
    assert peer.process.returncode in (0, -signal.SIGTERM)


def test_start_unknown_peer():
    with pytest.raises(ValueError):
        launch.start_peer("nope")


def test_python_peers_run_on_this_interpreter_or_the_override(monkeypatch):
    """The Python peers run on the tests' interpreter (the .venv sees Debian's python3-grpcio
    and python3-h2), or on $TRIPLE_PY_PEER_PYTHON; never on a fixed path."""
    monkeypatch.delenv("TRIPLE_PY_PEER_PYTHON", raising=False)
    for name in ("grpcio", "rogue"):
        assert launch.peer_command(name, "127.0.0.1", 0)[0] == sys.executable
    monkeypatch.setenv("TRIPLE_PY_PEER_PYTHON", "/opt/other/python3")
    assert launch.peer_command("grpcio", "127.0.0.1", 0)[0] == "/opt/other/python3"


# --- rogue peer ----------------------------------------------------------------------------

def h2_call(address: str, path: str, body: bytes, *, read_limit: int = 0,
            timeout: float = 10.0) -> dict:
    """One request on a fresh h2c connection; what came back, frame by frame.

    With read_limit, resets the stream (CANCEL) once that many DATA bytes have arrived.
    """
    host, port = address.rsplit(":", 1)
    conn = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=True, header_encoding=None))
    result = {"headers": [], "data": bytearray(), "ended": False, "reset": None,
              "closed": False}
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        conn.initiate_connection()
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(stream_id, [
            (b":method", b"POST"), (b":scheme", b"http"), (b":path", path.encode()),
            (b":authority", address.encode()), (b"content-type", b"application/grpc"),
            (b"te", b"trailers")])
        conn.send_data(stream_id, body, end_stream=True)
        sock.sendall(conn.data_to_send())
        deadline = time.monotonic() + timeout
        while not result["ended"] and result["reset"] is None:
            assert time.monotonic() < deadline, f"no answer within {timeout} s: {result}"
            try:
                data = sock.recv(1 << 20)
            except ConnectionResetError:
                data = b""
            if not data:
                result["closed"] = True
                break
            for event in conn.receive_data(data):
                if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                    result["headers"].append(event.headers)
                elif isinstance(event, h2.events.DataReceived):
                    result["data"] += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, stream_id)
                    limit_hit = read_limit and len(result["data"]) >= read_limit
                    if limit_hit and result["reset"] is None:
                        conn.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
                        result["reset"] = "by client"
                elif isinstance(event, h2.events.StreamEnded):
                    result["ended"] = True
                elif isinstance(event, h2.events.StreamReset):
                    result["reset"] = event.error_code
            sock.sendall(conn.data_to_send())
    return result


GRPC_200 = [(b":status", b"200"), (b"content-type", b"application/grpc")]
STATUS_0 = [(b"grpc-status", b"0")]


@pytest.mark.parametrize("mode, headers, data", [
    ("MalformedFlags", [GRPC_200, STATUS_0], b"\x02\x00\x00\x00\x03abc"),
    ("TruncatedMessage", [GRPC_200, STATUS_0], b"\x00\x00\x00\x00\x640123456789"),
    ("TwoMessages", [GRPC_200, STATUS_0], frame(b"\n\x03one") + frame(b"\n\x03two")),
    ("MissingStatus", [GRPC_200, [(b"x-note", b"no grpc-status")]], frame(b"\n\x02ok")),
    ("Http503", [[(b":status", b"503")]], b""),
    ("Http404NoGrpc", [[(b":status", b"404"), (b"content-type", b"text/plain")]], b"not found\n"),
    ("TrailersOnly", [GRPC_200 + [(b"grpc-status", b"7"),
                                  (b"grpc-message", rogue.TRAILERS_ONLY_WIRE)]], b""),
    ("PercentMessage", [GRPC_200, [(b"grpc-status", b"3"),
                                   (b"grpc-message", rogue.PERCENT_MESSAGE_WIRE)]], b""),
])
def test_rogue_wire(rogue_server, mode, headers, data):
    result = h2_call(rogue_server.address, f"/rogue.Rogue/{mode}", frame(b"req"))
    assert (result["headers"], bytes(result["data"]), result["ended"]) == (headers, data, True)


def test_rogue_echo(rogue_channel):
    assert rogue_channel.unary_unary("/rogue.Rogue/Echo")(b"ping", timeout=5) == b"ping"
    requests = [b"a", b"", os.urandom(3 * MiB)]
    echo = rogue_channel.stream_stream("/rogue.Rogue/Echo")
    assert list(echo(iter(requests), timeout=30)) == requests


def test_rogue_unknown_mode(rogue_channel):
    error = rpc_error(rogue_channel.unary_unary("/rogue.Rogue/Nope"), b"x", timeout=5)
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED


@pytest.mark.parametrize("mode, code, details", [
    ("TrailersOnly", grpc.StatusCode.PERMISSION_DENIED, rogue.TRAILERS_ONLY_MESSAGE),
    ("PercentMessage", grpc.StatusCode.INVALID_ARGUMENT, rogue.PERCENT_MESSAGE),
    ("Http503", grpc.StatusCode.UNAVAILABLE, None),
    ("Http404NoGrpc", grpc.StatusCode.UNIMPLEMENTED, None),
    ("HugeResponse", grpc.StatusCode.RESOURCE_EXHAUSTED, None),
])
def test_rogue_status_with_grpcio(rogue_channel, mode, code, details):
    error = rpc_error(rogue_channel.unary_unary(f"/rogue.Rogue/{mode}"), b"x", timeout=10)
    assert error.code() == code
    if details is not None:
        assert error.details() == details


def test_rogue_status_details(rogue_server, rogue_channel, messages):
    error = rpc_error(rogue_channel.unary_unary("/rogue.Rogue/StatusDetails"), b"x", timeout=5)
    assert (error.code(), error.details()) == (grpc.StatusCode.INVALID_ARGUMENT,
                                               rogue.STATUS_DETAILS_MESSAGE)
    raw = dict(error.trailing_metadata())["grpc-status-details-bin"]
    status = messages["google.rpc.Status"].FromString(raw)
    assert (status.code, status.message) == (3, rogue.STATUS_DETAILS_MESSAGE)
    assert status.details[0].type_url == rogue.BAD_REQUEST_TYPE_URL
    bad_request = messages["google.rpc.BadRequest"].FromString(status.details[0].value)
    assert bad_request.field_violations[0].field == "payload"
    wire = h2_call(rogue_server.address, "/rogue.Rogue/StatusDetails", frame(b"x"))
    assert not dict(wire["headers"][-1])[b"grpc-status-details-bin"].endswith(b"=")


def rogue_stats(channel) -> dict:
    return json.loads(channel.unary_unary("/rogue.Rogue/Stats")(b"", timeout=5))


def test_rogue_huge_response_is_reset_by_the_client(rogue_server, rogue_channel):
    before = rogue_stats(rogue_channel)
    result = h2_call(rogue_server.address, "/rogue.Rogue/HugeResponse", frame(b"x"),
                     read_limit=3 * MiB)
    assert bytes(result["data"][:5]) == b"\x00\x06\x40\x00\x00"  # declares 100 MiB
    deadline = time.monotonic() + 5
    while len(rogue_stats(rogue_channel)["huge_sent"]) == len(before["huge_sent"]):
        assert time.monotonic() < deadline, "the server did not see the reset"
        time.sleep(0.05)
    sent = rogue_stats(rogue_channel)["huge_sent"][-1]
    assert 3 * MiB <= sent < 100 * MiB


def test_rogue_never_answer(rogue_channel):
    started = time.monotonic()
    error = rpc_error(rogue_channel.unary_unary("/rogue.Rogue/NeverAnswer"), b"x", timeout=0.3)
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - started >= 0.3


def test_rogue_drop_connection_fails_calls_in_flight(rogue_server, rogue_channel):
    before = rogue_stats(rogue_channel)["modes"].get("NeverAnswer", 0)
    with grpc.insecure_channel(rogue_server.address) as channel:
        waiting = [channel.unary_unary("/rogue.Rogue/NeverAnswer").future(b"x", timeout=30)
                   for _ in range(3)]
        deadline = time.monotonic() + 5
        while rogue_stats(rogue_channel)["modes"].get("NeverAnswer", 0) < before + 3:
            assert time.monotonic() < deadline, "the calls did not reach the server"
            time.sleep(0.02)
        error = rpc_error(channel.unary_unary("/rogue.Rogue/DropConnection"), b"x", timeout=5)
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        for future in waiting:
            assert future.exception(timeout=5).code() == grpc.StatusCode.UNAVAILABLE
    # The server goes on accepting. (A fresh channel: whether grpcio's next call on the old
    # one fails with "Broken pipe" depends on when grpcio notices the reset.)
    with grpc.insecure_channel(rogue_server.address) as channel:
        assert channel.unary_unary("/rogue.Rogue/Echo")(b"again", timeout=5) == b"again"


def test_rogue_echo_after_failures(rogue_channel):
    for mode in ["Http503", "TrailersOnly", "HugeResponse", "PercentMessage"]:
        rpc_error(rogue_channel.unary_unary(f"/rogue.Rogue/{mode}"), b"x", timeout=10)
    assert rogue_channel.unary_unary("/rogue.Rogue/Echo")(b"still", timeout=5) == b"still"
