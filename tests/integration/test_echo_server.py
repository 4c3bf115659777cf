"""The embedded echo server (triple_py.testing.EchoServer, csrc/server/) against
reference clients: grpcio on the gRPC wire, a small python3-h2 client on the Triple unary
wire, h2load for a smoke run, and `python -m triple_py.server` as a process."""
from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest

import triple_py
from triple_py.testing import EchoServer

from _helpers import quiet_stats

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = Path(sys.executable)  # the interpreter running the tests
UNARY = "/benchmark.BenchmarkService/UnaryCall"
STREAM = "/benchmark.BenchmarkService/StreamCall"
TIMEOUT = 10
MiB = 1024 * 1024
# dubbo-go's code -> HTTP status (docs/triple-wire.md §5 table A) and Connect names.
TRIPLE_HTTP = {1: 408, 2: 500, 3: 400, 4: 408, 5: 404, 6: 409, 7: 403, 8: 429, 9: 412,
               10: 409, 11: 400, 12: 404, 13: 500, 14: 503, 15: 500, 16: 401}
CONNECT_NAMES = {code.value[0]: code.name.lower() for code in grpc.StatusCode}
CONNECT_NAMES[1] = "canceled"
NON_OK = [code for code in grpc.StatusCode if code is not grpc.StatusCode.OK]


@pytest.fixture(scope="module")
def server():
    with EchoServer(threads=2) as srv:
        yield srv


@pytest.fixture
def channel(server):
    options = [("grpc.max_receive_message_length", 64 * MiB),
               ("grpc.max_send_message_length", 64 * MiB)]
    with grpc.insecure_channel(server.address, options=options) as ch:
        yield ch


def unary(channel):
    return channel.unary_unary(UNARY)


def stream(channel):
    return channel.stream_stream(STREAM)


def echoed(metadata) -> list:
    return sorted((k, v) for k, v in (metadata or ()) if k.startswith("x-echo-"))


# --- the fixture itself --------------------------------------------------------------------

def test_fixture_address_and_lifecycle():
    srv = EchoServer()
    assert srv.port == 0
    with srv:
        assert srv.port > 0
        assert srv.address == f"127.0.0.1:{srv.port}"
        with grpc.insecure_channel(srv.address) as ch:
            assert unary(ch)(b"ping", timeout=TIMEOUT) == b"ping"
        stats = srv.stats()
        assert stats["connects"] >= 1 and stats["calls"] >= 1
    srv.stop()  # idempotent
    with grpc.insecure_channel(srv.address) as ch:
        with pytest.raises(grpc.RpcError) as info:
            unary(ch)(b"ping", timeout=2)
        assert info.value.code() is grpc.StatusCode.UNAVAILABLE


def test_port_in_use_raises_oserror(server):
    with pytest.raises(OSError):
        EchoServer(port=server.port).start()


def test_stop_with_open_connection():
    srv = EchoServer().start()
    with grpc.insecure_channel(srv.address) as ch:
        future = unary(ch).future(b"x", metadata=[("x-delay-ms", "60000")], timeout=30)
        time.sleep(0.2)
        started = time.monotonic()
        srv.stop()
        assert time.monotonic() - started < 2
        with pytest.raises(grpc.RpcError) as info:
            future.result(timeout=10)
        assert info.value.code() is grpc.StatusCode.UNAVAILABLE


# --- gRPC wire (grpcio client) -------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 128, 16 * 1024, MiB, 8 * MiB], ids=lambda n: f"{n}B")
def test_unary_echo(channel, size):
    request = os.urandom(size)
    assert unary(channel)(request, timeout=TIMEOUT) == request


def test_many_concurrent_unary(channel):
    futures = [unary(channel).future(b"%d" % i, timeout=TIMEOUT) for i in range(500)]
    assert [f.result() for f in futures] == [b"%d" % i for i in range(500)]


def test_stream_echo_each_message_promptly(channel):
    """Each message's echo arrives before the next message is sent."""
    requests: "queue.Queue" = queue.Queue()
    responses = stream(channel)(iter(requests.get, None), timeout=TIMEOUT)
    for i, size in enumerate([3, 50_000, 1]):
        message = bytes([i]) * size
        requests.put(message)
        assert next(responses) == message
    requests.put(None)
    assert list(responses) == []
    assert responses.code() is grpc.StatusCode.OK


def test_stream_echo_many(channel):
    messages = [os.urandom(n) for n in range(0, 3000, 7)]
    assert list(stream(channel)(iter(messages), timeout=TIMEOUT)) == messages


@pytest.mark.parametrize("code", NON_OK, ids=lambda c: c.name)
def test_status(channel, code):
    metadata = [("x-status", str(code.value[0])), ("x-message", "bad 100%")]
    with pytest.raises(grpc.RpcError) as info:
        unary(channel)(b"x", metadata=metadata, timeout=TIMEOUT)
    assert info.value.code() is code
    assert info.value.details() == "bad 100%"


def test_status_message_bin(channel):
    metadata = [("x-status", "9"), ("x-message-bin", "caf\u00e9 \u2713".encode()),
                ("x-message", "ignored")]
    with pytest.raises(grpc.RpcError) as info:
        unary(channel)(b"x", metadata=metadata, timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert info.value.details() == "caf\u00e9 \u2713"


def test_status_on_stream(channel):
    call = stream(channel)(iter([b"a", b"b"]), metadata=[("x-status", "10")], timeout=TIMEOUT)
    with pytest.raises(grpc.RpcError) as info:
        list(call)
    assert info.value.code() is grpc.StatusCode.ABORTED


def test_status_zero(channel):
    response, call = unary(channel).with_call(b"x", metadata=[("x-status", "0")],
                                              timeout=TIMEOUT)
    assert response == b"" and call.code() is grpc.StatusCode.OK
    assert list(stream(channel)(iter([b"a"]), metadata=[("x-status", "0")],
                                timeout=TIMEOUT)) == []


@pytest.mark.parametrize("key,value", [("x-status", "17"), ("x-delay-ms", "-1"),
                                       ("x-response-size", "abc")])
def test_bad_control_value(channel, key, value):
    with pytest.raises(grpc.RpcError) as info:
        unary(channel)(b"x", metadata=[(key, value)], timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def test_metadata_echo(channel):
    metadata = [("x-echo-one", "1"), ("x-echo-two-bin", b"\x00\xff\x10"), ("other", "no")]
    response, call = unary(channel).with_call(b"m", metadata=metadata, timeout=TIMEOUT)
    assert response == b"m"
    want = sorted([("x-echo-one", "1"), ("x-echo-two-bin", b"\x00\xff\x10")])
    assert echoed(call.initial_metadata()) == want
    assert echoed(call.trailing_metadata()) == want
    assert all(k != "other" for k, _ in call.initial_metadata())


def test_metadata_echo_with_error(channel):
    with pytest.raises(grpc.RpcError) as info:
        unary(channel)(b"m", metadata=[("x-echo-e", "v"), ("x-status", "5")], timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.NOT_FOUND
    assert echoed(info.value.initial_metadata()) == [("x-echo-e", "v")]
    assert echoed(info.value.trailing_metadata()) == [("x-echo-e", "v")]


def test_metadata_echo_on_stream(channel):
    call = stream(channel)(iter([b"s"]), metadata=[("x-echo-s", "t")], timeout=TIMEOUT)
    assert list(call) == [b"s"]
    assert echoed(call.initial_metadata()) == [("x-echo-s", "t")]
    assert echoed(call.trailing_metadata()) == [("x-echo-s", "t")]


def test_delay(channel):
    started = time.monotonic()
    assert unary(channel)(b"d", metadata=[("x-delay-ms", "300")], timeout=TIMEOUT) == b"d"
    assert time.monotonic() - started >= 0.3


def test_delays_do_not_block_other_calls(channel):
    """The delay is a timer in the worker loop: other calls are answered meanwhile."""
    slow = unary(channel).future(b"slow", metadata=[("x-delay-ms", "1000")], timeout=TIMEOUT)
    started = time.monotonic()
    assert unary(channel)(b"fast", timeout=TIMEOUT) == b"fast"
    assert time.monotonic() - started < 0.5
    assert slow.result() == b"slow"


def test_deadline_exceeded(channel):
    with pytest.raises(grpc.RpcError) as info:
        unary(channel)(b"x", metadata=[("x-delay-ms", "5000")], timeout=0.2)
    assert info.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED


def test_server_sends_deadline_exceeded(server):
    """The server's own answer when grpc-timeout passes (seen with a raw h2 client)."""
    status, headers, body, reset = h2_call(
        server.port, UNARY, [("content-type", "application/grpc"), ("te", "trailers"),
                             ("grpc-timeout", "100m"), ("x-delay-ms", "5000")],
        b"\x00\x00\x00\x00\x00")
    assert status == 200 and reset is None
    assert ("grpc-status", "4") in headers


def test_reset(channel):
    with pytest.raises(grpc.RpcError) as info:
        unary(channel)(b"x", metadata=[("x-reset", "1")], timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.CANCELLED


def test_unknown_method(channel):
    with pytest.raises(grpc.RpcError) as info:
        channel.unary_unary("/benchmark.BenchmarkService/Missing")(b"", timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as info:
        channel.unary_unary("/other.Service/UnaryCall")(b"", timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.UNIMPLEMENTED


def test_lower_case_method_route(channel):
    assert channel.unary_unary("/benchmark.BenchmarkService/unaryCall")(
        b"lc", timeout=TIMEOUT) == b"lc"


def test_response_size(channel):
    response = unary(channel)(b"ignored", metadata=[("x-response-size", "300")],
                              timeout=TIMEOUT)
    assert response == b"\x0a\xac\x02" + b"a" * 300  # BenchmarkResponse{payload}
    assert unary(channel)(b"x", metadata=[("x-response-size", "0")], timeout=TIMEOUT) == b""


# --- gzip ----------------------------------------------------------------------------------

COMPRESSIBLE = b"0123456789abcdef" * 8192  # 128 KiB that gzip shrinks to well under 4 KiB


def wire_bytes(server, call):
    """(bytes the server read, bytes it wrote) while call() ran; call's result too.

    The counters are read once they settle: the server counts a write after sendmsg
    returns, so the client may hold the answer before the count moves."""
    before = quiet_stats(server, quiet=0.02)
    result = call()
    after = quiet_stats(server, quiet=0.02)
    return (after["bytes_read"] - before["bytes_read"],
            after["bytes_written"] - before["bytes_written"], result)


def test_gzip_grpcio_client(server):
    """grpcio with gzip: the request arrives compressed, the echo goes back compressed
    (grpcio accepts gzip and compressed its request)."""
    with grpc.insecure_channel(server.address, compression=grpc.Compression.Gzip) as ch:
        assert unary(ch)(b"warm", timeout=TIMEOUT) == b"warm"
        read, written, response = wire_bytes(
            server, lambda: unary(ch)(COMPRESSIBLE, timeout=TIMEOUT))
        assert response == COMPRESSIBLE
        assert read < 8192 and written < 8192, (read, written)
        messages = [COMPRESSIBLE[:n] for n in (0, 1, 5000, len(COMPRESSIBLE))]
        assert list(stream(ch)(iter(messages), timeout=TIMEOUT)) == messages


def test_gzip_grpcio_response_only(server, channel):
    """An uncompressed request: a plain answer, unless x-compress-response: 1 asks (grpcio
    always accepts gzip)."""
    read, written, response = wire_bytes(
        server, lambda: unary(channel)(COMPRESSIBLE, timeout=TIMEOUT))
    assert response == COMPRESSIBLE and written > len(COMPRESSIBLE)
    read, written, response = wire_bytes(
        server, lambda: unary(channel)(COMPRESSIBLE, metadata=[("x-compress-response", "1")],
                                       timeout=TIMEOUT))
    assert response == COMPRESSIBLE and read > len(COMPRESSIBLE) and written < 8192
    # Per call on a plain channel.
    read, written, response = wire_bytes(
        server, lambda: unary(channel)(COMPRESSIBLE, compression=grpc.Compression.Gzip,
                                       timeout=TIMEOUT))
    assert response == COMPRESSIBLE and read < 8192 and written < 8192


@pytest.mark.parametrize("wire", ["grpc", "triple"])
def test_gzip_triple_py_client(server, wire):
    with triple_py.insecure_channel(server.address, wire=wire,
                                    compression=triple_py.Compression.Gzip) as ch:
        call = ch.unary_unary(UNARY)
        assert call(b"warm", timeout=TIMEOUT) == b"warm"
        read, written, response = wire_bytes(server, lambda: call(COMPRESSIBLE,
                                                                  timeout=TIMEOUT))
        assert response == COMPRESSIBLE
        assert read < 8192 and written < 8192, (read, written)
        assert call(b"", timeout=TIMEOUT) == b""
        response = call(b"x", metadata=[("x-response-size", "50000")], timeout=TIMEOUT)
        assert response == b"\x0a\xd0\x86\x03" + b"a" * 50000
        with pytest.raises(triple_py.RpcError) as info:
            call(COMPRESSIBLE, metadata=[("x-status", "6"), ("x-message", "dup")],
                 timeout=TIMEOUT)
        assert info.value.code() is triple_py.StatusCode.ALREADY_EXISTS
        assert info.value.details() == "dup"
        if wire == "grpc":
            messages = [COMPRESSIBLE[:n] for n in (0, 7, len(COMPRESSIBLE))]
            assert list(ch.stream_stream(STREAM)(iter(messages), timeout=TIMEOUT)) == messages
    with triple_py.insecure_channel(server.address, wire=wire) as ch:
        call = ch.unary_unary(UNARY)
        read, written, response = wire_bytes(
            server, lambda: call(COMPRESSIBLE, metadata=[("x-compress-response", "1")],
                                 timeout=TIMEOUT))
        assert response == COMPRESSIBLE
        assert read > len(COMPRESSIBLE) and written < 8192, (read, written)
        read, written, response = wire_bytes(
            server, lambda: call(COMPRESSIBLE, compression=triple_py.Compression.Gzip,
                                 timeout=TIMEOUT))
        assert response == COMPRESSIBLE and read < 8192 and written < 8192


def _gzip(data: bytes) -> bytes:
    import gzip
    return gzip.compress(data, compresslevel=9)


@pytest.mark.parametrize("wire", ["grpc", "triple"])
def test_gzip_bad_requests(server, wire):
    """Corrupt gzip: INTERNAL; inflating past max_message (64 MiB): RESOURCE_EXHAUSTED;
    an unknown encoding: UNIMPLEMENTED (seen with a raw h2 client)."""
    bomb = _gzip(bytes(64 * MiB + 1))
    corrupt = _gzip(b"hello world")[:-6] + b"\x00" * 6
    if wire == "grpc":
        def call(body, enc="gzip"):
            frame = b"\x01" + len(body).to_bytes(4, "big") + body
            status, headers, _, _ = h2_call(
                server.port, UNARY, [("content-type", "application/grpc"),
                                     ("te", "trailers"), ("grpc-encoding", enc)], frame)
            assert status == 200
            return int(dict(headers)["grpc-status"])
        assert call(bomb) == 8
        assert call(corrupt) == 13
        assert call(b"abc", "snappy") == 12
        assert call(_gzip(b"ok")) == 0
    else:
        def call(body, enc="gzip"):
            status, _, data, _ = h2_call(
                server.port, UNARY, [("content-type", "application/proto"),
                                     ("content-encoding", enc)], body)
            return status, (json.loads(data)["code"] if status != 200 else data)
        assert call(bomb) == (429, "resource_exhausted")
        assert call(corrupt) == (500, "internal")
        assert call(b"abc", "snappy") == (404, "unimplemented")
        assert call(_gzip(b"ok")) == (200, b"ok")


def test_gzip_advertised(server):
    status, headers, _, _ = h2_call(server.port, UNARY, [("content-type", "application/grpc"),
                                                         ("te", "trailers")],
                                    b"\x00\x00\x00\x00\x00")
    assert ("grpc-accept-encoding", "gzip") in headers
    status, headers, _, _ = h2_call(server.port, UNARY, [("content-type", "application/proto")],
                                    b"")
    assert ("accept-encoding", "gzip") in headers


# --- triple_py's own client against it -----------------------------------------------------

@pytest.mark.parametrize("wire", ["grpc", "triple"])
def test_triple_py_client(server, wire):
    with triple_py.insecure_channel(server.address, wire=wire) as ch:
        call = ch.unary_unary(UNARY)
        assert call(b"abc" * 100, timeout=TIMEOUT) == b"abc" * 100
        with pytest.raises(triple_py.RpcError) as info:
            call(b"x", metadata=[("x-status", "5"), ("x-message", "gone")], timeout=TIMEOUT)
        assert info.value.code() is triple_py.StatusCode.NOT_FOUND
        assert info.value.details() == "gone"


# --- Triple unary wire (a small h2 client) ------------------------------------------------

def h2_call(port: int, path: str, headers: list, body: bytes, timeout: float = TIMEOUT):
    """One request on a fresh connection: (status, headers, body, reset code or None).

    Response headers and trailers are returned together, in order, as (name, value) str
    pairs (the trailer-* headers of the Triple wire are ordinary headers)."""
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                                header_encoding="utf-8"))
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16 * MiB})
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", path),
                            (":authority", f"127.0.0.1:{port}")] + headers)
    pending = body
    got_headers: list = []
    data = bytearray()
    status = reset = None
    done = False
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        while not done:
            while pending and conn.local_flow_control_window(sid) > 0:
                n = min(len(pending), conn.local_flow_control_window(sid),
                        conn.max_outbound_frame_size)
                conn.send_data(sid, pending[:n])
                pending = pending[n:]
            if not pending and body is not None:
                conn.end_stream(sid)
                body = None
            sock.sendall(conn.data_to_send())
            if time.monotonic() > deadline:
                raise TimeoutError("no complete response")
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            for event in conn.receive_data(chunk):
                if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                    for name, value in event.headers:
                        if name == ":status":
                            status = int(value)
                        else:
                            got_headers.append((name, value))
                elif isinstance(event, h2.events.DataReceived):
                    data += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, sid)
                elif isinstance(event, h2.events.StreamEnded):
                    done = True
                elif isinstance(event, h2.events.StreamReset):
                    reset, done = event.error_code, True
        sock.sendall(conn.data_to_send())
    return status, got_headers, bytes(data), reset


def test_triple_echo(server):
    message = b"\x0a\x05hello"
    status, headers, body, reset = h2_call(
        server.port, UNARY, [("content-type", "application/proto"),
                             ("triple-protocol-version", "0.1.0"), ("x-echo-a", "b")],
        message)
    assert (status, body, reset) == (200, message, None)
    assert ("content-type", "application/proto") in headers
    assert ("x-echo-a", "b") in headers
    assert ("trailer-x-echo-a", "b") in headers
    assert ("content-length", str(len(message))) in headers


def test_triple_large_echo(server):
    message = os.urandom(3 * MiB)
    status, _, body, _ = h2_call(server.port, UNARY, [("content-type", "application/proto")],
                                 message)
    assert status == 200 and body == message


def test_triple_json(server):
    status, headers, body, _ = h2_call(server.port, UNARY,
                                       [("content-type", "application/json")],
                                       b'{"payload":"aGk="}')
    assert (status, body) == (200, b'{"payload":"aGk="}')
    assert ("content-type", "application/json") in headers
    status, _, body, _ = h2_call(server.port, UNARY, [("content-type", "application/json"),
                                                      ("x-response-size", "5")], b"{}")
    assert json.loads(body) == {"payload": "YWFhYWE="}


@pytest.mark.parametrize("code", range(1, 17))
def test_triple_error_json(server, code):
    status, headers, body, _ = h2_call(
        server.port, UNARY, [("content-type", "application/proto"), ("x-status", str(code)),
                             ("x-message-bin", base64.b64encode(b'say "hi"\n\x01').decode()),
                             ("x-echo-k", "v")], b"")
    assert status == TRIPLE_HTTP[code]
    assert ("content-type", "application/json") in headers
    assert ("x-echo-k", "v") in headers and ("trailer-x-echo-k", "v") in headers
    assert json.loads(body) == {"code": CONNECT_NAMES[code], "message": 'say "hi"\n\x01'}


def test_triple_unknown_method(server):
    status, _, body, _ = h2_call(server.port, "/benchmark.BenchmarkService/Nope",
                                 [("content-type", "application/proto")], b"")
    assert status == 404 and json.loads(body)["code"] == "unimplemented"


def test_triple_timeout(server):
    status, _, body, _ = h2_call(server.port, UNARY,
                                 [("content-type", "application/proto"),
                                  ("triple-timeout-ms", "50"), ("x-delay-ms", "5000")], b"")
    assert status == 408 and json.loads(body)["code"] == "deadline_exceeded"


def test_triple_bad_version(server):
    status, _, body, _ = h2_call(server.port, UNARY,
                                 [("content-type", "application/proto"),
                                  ("triple-protocol-version", "9")], b"")
    assert status == 400 and json.loads(body)["code"] == "invalid_argument"


def test_triple_reset(server):
    status, _, _, reset = h2_call(server.port, UNARY, [("content-type", "application/proto"),
                                                       ("x-reset", "1")], b"x")
    assert status is None and reset == 8  # CANCEL


def test_unsupported_content_type(server):
    status, _, _, _ = h2_call(server.port, UNARY, [("content-type", "text/plain")], b"x")
    assert status == 415


# --- h2load and the command line ----------------------------------------------------------

@pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load is not installed")
def test_h2load_smoke(server, tmp_path):
    frame = tmp_path / "frame.bin"
    frame.write_bytes(b"\x00\x00\x00\x00\x05hello")
    out = subprocess.run(
        ["h2load", "-n", "1000", "-c", "1", "-m", "10", "-d", str(frame),
         "-H", "content-type: application/grpc", "-H", "te: trailers",
         f"http://127.0.0.1:{server.port}{UNARY}"],
        capture_output=True, text=True, timeout=60).stdout
    assert "1000 succeeded, 0 failed" in out, out


def start_cli(*args: str) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([str(VENV_PYTHON), "-m", "triple_py.server", *args], cwd=ROOT,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("LISTENING "), (line, proc.stderr.read() if proc.poll() else "")
    return proc, int(line.split()[1])


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_cli(signum):
    proc, port = start_cli("--port", "0", "--threads", "2")
    try:
        assert port > 0
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            assert unary(ch)(b"cli", timeout=TIMEOUT) == b"cli"
        proc.send_signal(signum)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_bad_port():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([str(VENV_PYTHON), "-m", "triple_py.server", "--port", "70000"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "triple_py.server:" in proc.stderr and "Traceback" not in proc.stderr


def test_stream_backpressure(server):
    """A client that streams without reading stalls on its flow-control window (the
    server stops crediting input once 4 MiB of answers wait), then resumes when it reads:
    memory per stream is bounded and nothing is lost."""
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 64 * 1024})
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", STREAM),
                            (":authority", "x"), ("content-type", "application/grpc"),
                            ("te", "trailers")])
    payload = 16 * 1024 - 5
    message = b"\x00" + payload.to_bytes(4, "big") + b"b" * payload
    out = bytearray()
    sent = received = 0
    ended = False
    trailers: list = []

    def pump(sock, read: bool) -> None:
        nonlocal received, ended
        out.extend(conn.data_to_send())
        try:
            if out:
                del out[:sock.send(out)]
        except BlockingIOError:
            pass
        if not read:
            return
        try:
            chunk = sock.recv(1 << 20)
        except BlockingIOError:
            return
        for event in conn.receive_data(chunk):
            if isinstance(event, h2.events.DataReceived):
                received += len(event.data)
                conn.acknowledge_received_data(event.flow_controlled_length, sid)
            elif isinstance(event, h2.events.TrailersReceived):
                trailers.extend(event.headers)
            elif isinstance(event, h2.events.StreamEnded):
                ended = True

    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.setblocking(False)
        until = time.monotonic() + 1.5
        while time.monotonic() < until:  # phase 1: send only
            if conn.local_flow_control_window(sid) >= len(message) and len(out) < MiB:
                conn.send_data(sid, message)
                sent += len(message)
            else:
                time.sleep(0.01)
            pump(sock, read=False)
        stalled_at = sent
        half_closed = False
        assert stalled_at < 40 * MiB, "the server kept accepting input nobody reads"
        until = time.monotonic() + 30
        while not ended and time.monotonic() < until:  # phase 2: read, send 8 MiB more
            if sent < stalled_at + 8 * MiB:
                if conn.local_flow_control_window(sid) >= len(message):
                    conn.send_data(sid, message)
                    sent += len(message)
            elif not half_closed:
                conn.end_stream(sid)
                half_closed = True
            pump(sock, read=True)
            time.sleep(0.0005 if sent < stalled_at + 8 * MiB else 0.002)
    assert ended, f"stream did not end: sent {sent}, received {received}"
    assert received == sent
    assert (b"grpc-status", b"0") in trailers


# --- grpc.testing.TestService (hand-coded protobuf, as the server's own) ------------------

TS = "/grpc.testing.TestService/"


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _vi(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _ld(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _boolvalue(field: int, value) -> bytes:
    return b"" if value is None else _ld(field, _vi(1, 1) if value else b"")


def _status(field: int, status) -> bytes:
    if status is None:
        return b""
    code, message = status
    return _ld(field, _vi(1, code) + _ld(2, message.encode()))


def _payload(size: int) -> bytes:
    return _ld(2, bytes(size)) if size else b""


def simple_request(response_size=0, payload_size=0, response_compressed=None,
                   expect_compressed=None, status=None) -> bytes:
    return (_vi(2, response_size) + (_ld(3, _payload(payload_size)) if payload_size else b"")
            + _boolvalue(6, response_compressed) + _status(7, status)
            + _boolvalue(8, expect_compressed))


def output_request(sizes=(), interval_us=0, compressed=None, status=None,
                   payload_size=0) -> bytes:
    params = b"".join(_ld(2, _vi(1, n) + (_vi(2, interval_us) if interval_us else b"")
                          + _boolvalue(3, compressed)) for n in sizes)
    return params + (_ld(3, _payload(payload_size)) if payload_size else b"") \
        + _status(7, status)


def input_request(payload_size: int, expect_compressed=None) -> bytes:
    return _ld(1, _payload(payload_size)) + _boolvalue(2, expect_compressed)


def pb_fields(data: bytes) -> dict:
    """{field: [values]} of a message (varints as int, length-delimited as bytes)."""
    fields: dict = {}
    i = 0
    while i < len(data):
        key = shift = 0
        while True:
            b = data[i]
            i += 1
            key |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        value = shift = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        if key & 7 == 2:
            value, i = data[i:i + value], i + value
        else:
            assert key & 7 == 0
        fields.setdefault(key >> 3, []).append(value)
    return fields


def body_of(response: bytes) -> bytes:
    """The payload body of a SimpleResponse / StreamingOutputCallResponse."""
    payload = pb_fields(response).get(1, [b""])[-1]
    return pb_fields(payload).get(2, [b""])[-1]


def check_zeros(response: bytes, size: int) -> None:
    body = body_of(response)
    assert len(body) == size and body.count(0) == size


def test_ts_empty_call(channel):
    response, call = channel.unary_unary(TS + "EmptyCall").with_call(b"", timeout=TIMEOUT)
    assert response == b"" and call.code() is grpc.StatusCode.OK


def test_ts_unary_call(channel):
    call = channel.unary_unary(TS + "UnaryCall")
    check_zeros(call(simple_request(314159, 271828), timeout=TIMEOUT), 314159)
    check_zeros(call(simple_request(0), timeout=TIMEOUT), 0)
    special = "\t\ntest with whitespace\r\nand Unicode BMP \u2615 and non-BMP \U0001f608\t\n"
    for code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.NOT_FOUND):
        with pytest.raises(grpc.RpcError) as info:
            call(simple_request(10, status=(code.value[0], special)), timeout=TIMEOUT)
        assert info.value.code() is code and info.value.details() == special
    with pytest.raises(grpc.RpcError) as info:  # an EchoStatus code no status has
        call(simple_request(status=(99, "x")), timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.UNKNOWN
    with pytest.raises(grpc.RpcError) as info:
        call(b"\x12\x05", timeout=TIMEOUT)  # not a SimpleRequest
    assert info.value.code() is grpc.StatusCode.INTERNAL


def test_ts_echo_metadata(channel):
    metadata = [("x-grpc-test-echo-initial", "test_initial_metadata_value"),
                ("x-grpc-test-echo-trailing-bin", b"\x0a\x0b\x0a\x0b\x0a\x0b")]
    response, call = channel.unary_unary(TS + "UnaryCall").with_call(
        simple_request(5), metadata=metadata, timeout=TIMEOUT)
    assert dict(call.initial_metadata())["x-grpc-test-echo-initial"] == \
        "test_initial_metadata_value"
    assert "x-grpc-test-echo-trailing-bin" not in dict(call.initial_metadata())
    assert dict(call.trailing_metadata())["x-grpc-test-echo-trailing-bin"] == \
        b"\x0a\x0b\x0a\x0b\x0a\x0b"
    assert "x-grpc-test-echo-initial" not in dict(call.trailing_metadata())
    stream_call = channel.stream_stream(TS + "FullDuplexCall")(
        iter([output_request([7])]), metadata=metadata, timeout=TIMEOUT)
    assert [len(body_of(r)) for r in stream_call] == [7]
    assert dict(stream_call.initial_metadata())["x-grpc-test-echo-initial"] == \
        "test_initial_metadata_value"
    assert dict(stream_call.trailing_metadata())["x-grpc-test-echo-trailing-bin"] == \
        b"\x0a\x0b\x0a\x0b\x0a\x0b"


def test_ts_unary_compression(server, channel):
    call = channel.unary_unary(TS + "UnaryCall")
    # response_compressed: true is compressed on the wire (grpcio accepts gzip), false not.
    for compressed, small in ((True, True), (False, False), (None, False)):
        read, written, response = wire_bytes(
            server, lambda: call(simple_request(314159, response_compressed=compressed),
                                 timeout=TIMEOUT))
        check_zeros(response, 314159)
        assert (written < 314159 // 4) is small, (compressed, written)
    # expect_compressed: the probe (plain request) fails; gzip passes; false + plain passes.
    with pytest.raises(grpc.RpcError) as info:
        call(simple_request(10, 271828, expect_compressed=True), timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    read, written, response = wire_bytes(
        server, lambda: call(simple_request(10, 271828, expect_compressed=True),
                             compression=grpc.Compression.Gzip, timeout=TIMEOUT))
    check_zeros(response, 10)
    assert read < 271828 // 4
    check_zeros(call(simple_request(10, 271828, expect_compressed=False), timeout=TIMEOUT), 10)
    with pytest.raises(grpc.RpcError) as info:
        call(simple_request(10, 100, expect_compressed=False), compression=grpc.Compression.Gzip,
             timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def test_ts_streaming_output(server, channel):
    sizes = [31415, 9, 2653, 58979]
    call = channel.unary_stream(TS + "StreamingOutputCall")
    assert [len(body_of(r)) for r in call(output_request(sizes), timeout=TIMEOUT)] == sizes
    # interval_us is a timer: 3 x 250 ms, and other calls are answered meanwhile.
    started = time.monotonic()
    responses = call(output_request([1, 2, 3], interval_us=250_000), timeout=TIMEOUT)
    first = next(responses)
    quick = time.monotonic()
    check_zeros(channel.unary_unary(TS + "UnaryCall")(simple_request(3), timeout=TIMEOUT), 3)
    assert time.monotonic() - quick < 0.2
    assert [len(body_of(r)) for r in [first, *responses]] == [1, 2, 3]
    assert time.monotonic() - started >= 0.75
    # Compressed, then not (bytes the server wrote).
    read, written, got = wire_bytes(server, lambda: list(call(
        output_request([31415], compressed=True) + output_request([92653], compressed=False),
        timeout=TIMEOUT)))
    assert [len(body_of(r)) for r in got] == [31415, 92653]
    assert 92653 < written < 92653 + 31415 // 2
    with pytest.raises(grpc.RpcError) as info:
        list(call(output_request([5], status=(10, "stop")), timeout=TIMEOUT))
    assert info.value.code() is grpc.StatusCode.ABORTED and info.value.details() == "stop"


def test_ts_streaming_input(channel):
    call = channel.stream_unary(TS + "StreamingInputCall")
    response = call(iter([input_request(n) for n in (27182, 8, 1828, 45904)]), timeout=TIMEOUT)
    assert pb_fields(response) == {1: [74922]}
    assert call(iter([]), timeout=TIMEOUT) == b""
    with pytest.raises(grpc.RpcError) as info:
        call(iter([input_request(27182, expect_compressed=True)]), timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    response = call(iter([input_request(27182, True), input_request(45904, True)]),
                    compression=grpc.Compression.Gzip, timeout=TIMEOUT)
    assert pb_fields(response) == {1: [73086]}


def test_ts_full_duplex(channel):
    requests: "queue.Queue" = queue.Queue()
    call = channel.stream_stream(TS + "FullDuplexCall")(iter(requests.get, None),
                                                         timeout=TIMEOUT)
    for size, body in ((31415, 27182), (9, 8), (2653, 1828), (58979, 45904)):
        requests.put(output_request([size], payload_size=body))
        check_zeros(next(call), size)
    requests.put(None)
    assert list(call) == [] and call.code() is grpc.StatusCode.OK
    # empty_stream, and a status after two answers.
    assert list(channel.stream_stream(TS + "FullDuplexCall")(iter([]), timeout=TIMEOUT)) == []
    call = channel.stream_stream(TS + "FullDuplexCall")(
        iter([output_request([1, 2]), output_request(status=(2, "after two")),
              output_request([3])]), timeout=TIMEOUT)
    got = []
    with pytest.raises(grpc.RpcError) as info:
        for response in call:
            got.append(len(body_of(response)))
    assert got == [1, 2]
    assert info.value.code() is grpc.StatusCode.UNKNOWN and info.value.details() == "after two"


def test_ts_half_duplex(channel):
    requests: "queue.Queue" = queue.Queue()
    call = channel.stream_stream(TS + "HalfDuplexCall")(iter(requests.get, None),
                                                         timeout=TIMEOUT)
    requests.put(output_request([10, 20]))
    requests.put(output_request([30]))
    got: "queue.Queue" = queue.Queue()
    reader = threading.Thread(target=lambda: [got.put(r) for r in call])
    reader.start()
    time.sleep(0.3)
    assert got.empty(), "HalfDuplexCall answered before the half-close"
    requests.put(None)
    reader.join(TIMEOUT)
    assert [len(body_of(got.get_nowait())) for _ in range(3)] == [10, 20, 30]
    assert call.code() is grpc.StatusCode.OK


def test_ts_unimplemented(channel):
    for path in (TS + "UnimplementedCall", "/grpc.testing.UnimplementedService/UnimplementedCall"):
        with pytest.raises(grpc.RpcError) as info:
            channel.unary_unary(path)(b"", timeout=TIMEOUT)
        assert info.value.code() is grpc.StatusCode.UNIMPLEMENTED


@pytest.mark.parametrize("wire", ["grpc", "triple"])
def test_ts_triple_py_client(server, wire):
    with triple_py.insecure_channel(server.address, wire=wire) as ch:
        assert ch.unary_unary(TS + "EmptyCall")(b"", timeout=TIMEOUT) == b""
        unary_call = ch.unary_unary(TS + "UnaryCall")
        check_zeros(unary_call(simple_request(314159, 271828), timeout=TIMEOUT), 314159)
        with pytest.raises(triple_py.RpcError) as info:
            unary_call(simple_request(status=(2, "test status message")), timeout=TIMEOUT)
        assert info.value.code() is triple_py.StatusCode.UNKNOWN
        assert info.value.details() == "test status message"
        metadata = [("x-grpc-test-echo-initial", "ini"),
                    ("x-grpc-test-echo-trailing-bin", b"\x00\x01")]
        response, call = unary_call.with_call(simple_request(3), metadata=metadata,
                                              timeout=TIMEOUT)
        assert ("x-grpc-test-echo-initial", "ini") in list(call.initial_metadata())
        assert ("x-grpc-test-echo-trailing-bin", b"\x00\x01") in list(call.trailing_metadata())
        # Compression both ways, and expect_compressed.
        with pytest.raises(triple_py.RpcError) as info:
            unary_call(simple_request(5, 1000, expect_compressed=True), timeout=TIMEOUT)
        assert info.value.code() is triple_py.StatusCode.INVALID_ARGUMENT
        read, written, response = wire_bytes(server, lambda: unary_call(
            simple_request(314159, 271828, expect_compressed=True),
            compression=triple_py.Compression.Gzip, timeout=TIMEOUT))
        check_zeros(response, 314159)
        assert read < 271828 // 4 and written < 314159 // 4  # the default rule: gzip back
        read, written, response = wire_bytes(server, lambda: unary_call(
            simple_request(314159, response_compressed=True), timeout=TIMEOUT))
        assert written < 314159 // 4
        for path in (TS + "UnimplementedCall", "/grpc.testing.UnimplementedService/X"):
            with pytest.raises(triple_py.RpcError) as info:
                ch.unary_unary(path)(b"", timeout=TIMEOUT)
            assert info.value.code() is triple_py.StatusCode.UNIMPLEMENTED
        # Streams are gRPC streams, also on a Triple channel.
        sizes = [31415, 9, 2653]
        assert [len(body_of(r)) for r in ch.unary_stream(TS + "StreamingOutputCall")(
            output_request(sizes, interval_us=1000), timeout=TIMEOUT)] == sizes
        assert pb_fields(ch.stream_unary(TS + "StreamingInputCall")(
            iter([input_request(n) for n in (27182, 8)]), timeout=TIMEOUT)) == {1: [27190]}
        duplex = ch.stream_stream(TS + "FullDuplexCall")(timeout=TIMEOUT)
        for size in (31415, 9):
            duplex.write(output_request([size], payload_size=100))
            check_zeros(next(duplex), size)
        duplex.done_writing()
        assert list(duplex) == [] and duplex.code() is triple_py.StatusCode.OK
        half = ch.stream_stream(TS + "HalfDuplexCall")(
            iter([output_request([1]), output_request([2, 3])]), timeout=TIMEOUT)
        assert [len(body_of(r)) for r in half] == [1, 2, 3]


def test_ts_triple_wire_json(server):
    """UnaryCall with the JSON codec (protojson in, JSON out) on the Triple wire."""
    status, headers, body, _ = h2_call(
        server.port, TS + "UnaryCall", [("content-type", "application/json")],
        json.dumps({"responseType": "COMPRESSABLE", "responseSize": 5,
                    "payload": {"body": base64.b64encode(b"\0" * 7).decode()}}).encode())
    assert status == 200 and json.loads(body) == {"payload": {"body": "AAAAAAA="}}
    message = "\t\ntest with whitespace\r\nand Unicode BMP \u2615 and non-BMP \U0001f608\t\n"
    status, _, body, _ = h2_call(
        server.port, TS + "UnaryCall", [("content-type", "application/json")],
        json.dumps({"response_status": {"code": 2, "message": message}}).encode())
    assert status == 500 and json.loads(body) == {"code": "unknown", "message": message}
    status, _, body, _ = h2_call(server.port, TS + "UnaryCall",
                                 [("content-type", "application/json")], b"{")
    assert status == 400 and json.loads(body)["code"] == "invalid_argument"
    status, _, body, _ = h2_call(server.port, TS + "StreamingOutputCall",
                                 [("content-type", "application/proto")], b"")
    assert status == 404 and json.loads(body)["code"] == "unimplemented"
