"""The embedded echo server (triple_py.testing.EchoServer, csrc/tri_server.c) against
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

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
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


def test_compressed_request_is_refused(server):
    with grpc.insecure_channel(server.address, compression=grpc.Compression.Gzip) as ch:
        with pytest.raises(grpc.RpcError) as info:
            unary(ch)(b"z" * 1000, timeout=TIMEOUT)
    assert info.value.code() is grpc.StatusCode.UNIMPLEMENTED


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
