"""gzip compression on the gRPC wire (issue 5, "gzip"): per channel and per call, both ways.

The plain grpcio and grpc-go peers decompress gzip requests; grpc-go also compresses its
answer to a gzip request. Peers started with `compress_responses=True` gzip every response
whatever the request, which shows the client decompressing answers to uncompressed
requests. How much went over the wire is read from `channel.stats()` (bytes_written,
bytes_read), so a payload that compresses to almost nothing proves the compression.

The rogue h2 server sends what no real peer does: a gzip bomb (64 MiB of zeros in about
64 KiB), corrupt gzip, and a compressed message without grpc-encoding.
"""
from __future__ import annotations

import os
import socket
import time
import zlib
from typing import Callable, List

import h2.config
import h2.connection
import h2.events
import pytest

import triple_py
from peers import STREAM_METHOD, UNARY_METHOD, decode_payload, encode_payload, frame
from peers import h2_rogue_server as rogue_peer
from _helpers import MiB, TIMEOUT, quiet_stats, rogue, start_child
from _tls_helpers import PeerPool

KiB = 1024
GZIP = triple_py.Compression.Gzip
NONE = triple_py.Compression.NoCompression
# 16 KiB of text that gzip shrinks to a few hundred bytes.
COMPRESSIBLE = (b"triple_py sends gzip-compressed gRPC messages; " * 400)[:16 * KiB]
SMALL_ON_WIRE = 2 * KiB  # a compressed 16 KiB payload, with headers and framing, fits
PEER_NAMES = ["grpcio", "go"]


@pytest.fixture(scope="session")
def compressing_peers():
    """Peers that gzip every response message (--compress-responses)."""
    pool = PeerPool()
    yield pool
    pool.close()


@pytest.fixture(params=PEER_NAMES)
def compressing_peer(request, compressing_peers):
    return compressing_peers.get(request.param, compress_responses=True)


def wire(channel: triple_py.Channel, fn: Callable[[], object]) -> tuple:
    """(fn(), bytes written, bytes read) on the channel's connection during fn()."""
    before = quiet_stats(channel)
    result = fn()
    after = quiet_stats(channel)
    return (result, after["bytes_written"] - before["bytes_written"],
            after["bytes_read"] - before["bytes_read"])


def connected(channel: triple_py.Channel) -> triple_py.Channel:
    """The channel after one small call, so the connection preface is not counted."""
    assert channel.unary_unary(UNARY_METHOD)(b"warm-up", timeout=TIMEOUT) == b"warm-up"
    return channel


def echo(channel, request=COMPRESSIBLE, **kwargs) -> tuple:
    return wire(channel, lambda: channel.unary_unary(UNARY_METHOD)(
        request, timeout=TIMEOUT, **kwargs))


# --- unary -------------------------------------------------------------------------------------

def test_unary_gzip_per_channel(peer):
    with connected(triple_py.insecure_channel(peer.address)) as plain:
        response, plain_written, _ = echo(plain)
        assert response == COMPRESSIBLE
    with connected(triple_py.insecure_channel(peer.address, compression=GZIP)) as gzipped:
        response, gzip_written, _ = echo(gzipped)
        assert response == COMPRESSIBLE
    assert plain_written > len(COMPRESSIBLE)
    assert gzip_written < SMALL_ON_WIRE, (gzip_written, plain_written)


def test_unary_gzip_per_call(peer):
    with connected(triple_py.insecure_channel(peer.address)) as channel:
        response, written, _ = echo(channel, compression=GZIP)
        assert (response, written < SMALL_ON_WIRE) == (COMPRESSIBLE, True), written
        response, written, _ = echo(channel)  # the channel's default again: none
        assert (response, written > len(COMPRESSIBLE)) == (COMPRESSIBLE, True), written
    with connected(triple_py.insecure_channel(peer.address, compression=GZIP)) as channel:
        response, written, _ = echo(channel, compression=NONE)  # the call overrides
        assert (response, written > len(COMPRESSIBLE)) == (COMPRESSIBLE, True), written
        response, written, _ = echo(channel, compression=GZIP)
        assert (response, written < SMALL_ON_WIRE) == (COMPRESSIBLE, True), written


def test_go_answers_gzip_with_gzip(go_server):
    """grpc-go compresses its answer with the request's encoding: the client inflates it."""
    with connected(triple_py.insecure_channel(go_server.address)) as channel:
        response, _, read = echo(channel, compression=GZIP)
        assert response == COMPRESSIBLE
        assert read < SMALL_ON_WIRE


@pytest.mark.parametrize("size", [0, 1, 300, 16 * KiB, 3 * MiB])
def test_gzip_sizes_and_incompressible(peer, size):
    """Random bytes (which gzip makes slightly larger) and an empty message round-trip."""
    request = os.urandom(size)
    with triple_py.insecure_channel(peer.address, compression=GZIP) as channel:
        assert channel.unary_unary(UNARY_METHOD)(request, timeout=TIMEOUT) == request


def test_large_compressible_both_ways(go_server):
    """8 MiB that gzip shrinks about 1000x, both ways (grpc-go answers gzip with gzip)."""
    request = b"\x00" * (8 * MiB)
    options = [("grpc.max_receive_message_length", 16 * MiB)]
    with connected(triple_py.insecure_channel(go_server.address, options=options,
                                              compression=GZIP)) as channel:
        response, written, read = echo(channel, request)
        assert response == request
        assert written < 64 * KiB and read < 64 * KiB, (written, read)


def test_compressed_responses_to_uncompressed_requests(compressing_peer):
    """The peer gzips its answers though the client sent plain messages."""
    with connected(triple_py.insecure_channel(compressing_peer.address)) as channel:
        response, written, read = echo(channel)
        assert response == COMPRESSIBLE
        assert written > len(COMPRESSIBLE)
        assert read < SMALL_ON_WIRE
        answer, _, read = wire(channel, lambda: channel.unary_unary(UNARY_METHOD)(
            b"x", metadata=[("x-response-size", str(MiB))], timeout=TIMEOUT))
        assert decode_payload(answer) == b"a" * MiB
        assert read < 16 * KiB


def test_receive_limit_applies_after_decompression(compressing_peer):
    """grpc.max_receive_message_length bounds the inflated message, not the wire bytes."""
    size = 256 * KiB
    message_length = len(encode_payload(b"a" * size))
    call_metadata = [("x-response-size", str(size))]
    for limit, ok in [(message_length, True), (message_length - 1, False)]:
        options = [("grpc.max_receive_message_length", limit)]
        with triple_py.insecure_channel(compressing_peer.address, options=options) as channel:
            call = channel.unary_unary(UNARY_METHOD)
            if ok:
                assert decode_payload(call(b"x", metadata=call_metadata, timeout=TIMEOUT)) \
                    == b"a" * size
            else:
                with pytest.raises(triple_py.RpcError) as info:
                    call(b"x", metadata=call_metadata, timeout=TIMEOUT)
                assert info.value.code() == triple_py.StatusCode.RESOURCE_EXHAUSTED
            assert call(b"still usable", timeout=TIMEOUT) == b"still usable"


# --- streaming ---------------------------------------------------------------------------------

STREAM_REQUESTS = [COMPRESSIBLE] * 6 + [b"", b"tail"]


def test_bidi_gzip_both_ways(compressing_peer):
    with connected(triple_py.insecure_channel(compressing_peer.address)) as channel:
        bidi = channel.stream_stream(STREAM_METHOD)
        responses, written, read = wire(channel, lambda: list(
            bidi(iter(STREAM_REQUESTS), timeout=TIMEOUT, compression=GZIP)))
        assert responses == STREAM_REQUESTS
        assert written < 4 * SMALL_ON_WIRE and read < 4 * SMALL_ON_WIRE, (written, read)
        # Without compression on this call, requests go plain; answers stay gzip.
        responses, written, read = wire(channel, lambda: list(
            bidi(iter(STREAM_REQUESTS), timeout=TIMEOUT)))
        assert responses == STREAM_REQUESTS
        assert written > 6 * len(COMPRESSIBLE) and read < 4 * SMALL_ON_WIRE


def test_stream_gzip_per_channel(peer):
    """Channel-wide gzip applies to every streaming shape, and writes through call.write."""
    with connected(triple_py.insecure_channel(peer.address, compression=GZIP)) as channel:
        responses, written, _ = wire(channel, lambda: list(channel.stream_stream(
            STREAM_METHOD)(iter(STREAM_REQUESTS), timeout=TIMEOUT)))
        assert responses == STREAM_REQUESTS
        assert written < 4 * SMALL_ON_WIRE, written
        call = channel.stream_stream(STREAM_METHOD)(timeout=TIMEOUT)
        for _ in range(3):
            call.write(COMPRESSIBLE)
            assert next(call) == COMPRESSIBLE
        call.done_writing()
        assert list(call) == []
        assert list(channel.unary_stream(STREAM_METHOD)(COMPRESSIBLE, timeout=TIMEOUT)) \
            == [COMPRESSIBLE]
        assert channel.stream_unary(STREAM_METHOD)(iter([COMPRESSIBLE]), timeout=TIMEOUT) \
            == COMPRESSIBLE
        responses, written, _ = wire(channel, lambda: list(channel.stream_stream(
            STREAM_METHOD)(iter(STREAM_REQUESTS), timeout=TIMEOUT, compression=NONE)))
        assert responses == STREAM_REQUESTS
        assert written > 6 * len(COMPRESSIBLE)


def test_stream_gzip_random_messages(peer):
    rng = os.urandom
    requests: List[bytes] = [rng(n) for n in (0, 1, 100, 40 * KiB, 16 * KiB, 300 * KiB)]
    with triple_py.insecure_channel(peer.address) as channel:
        call = channel.stream_stream(STREAM_METHOD)
        assert list(call(iter(requests), timeout=TIMEOUT, compression=GZIP)) == requests


# --- the rogue server: bombs, corrupt and unannounced compression -------------------------------

def h2_fetch(address: str, mode: str, timeout: float = 10.0) -> tuple:
    """(response headers of each HEADERS frame, DATA bytes) of one rogue request, read with
    a raw python3-h2 client (no gRPC library in between)."""
    host, port = address.rsplit(":", 1)
    conn = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=True, header_encoding=None))
    headers, data, ended = [], bytearray(), False
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        conn.initiate_connection()
        conn.send_headers(1, [(b":method", b"POST"), (b":scheme", b"http"),
                              (b":path", f"/rogue.Rogue/{mode}".encode()),
                              (b":authority", address.encode()),
                              (b"content-type", b"application/grpc"), (b"te", b"trailers")])
        conn.send_data(1, frame(b"x"), end_stream=True)
        sock.sendall(conn.data_to_send())
        deadline = time.monotonic() + timeout
        while not ended:
            assert time.monotonic() < deadline, "no complete answer"
            chunk = sock.recv(1 << 20)
            assert chunk, "connection closed before the answer ended"
            for event in conn.receive_data(chunk):
                if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                    headers.append(dict(event.headers))
                elif isinstance(event, h2.events.DataReceived):
                    data += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, 1)
                elif isinstance(event, h2.events.StreamEnded):
                    ended = True
            sock.sendall(conn.data_to_send())
    return headers, bytes(data)


def inflated_size(gzip_bytes: bytes) -> tuple:
    """(total inflated length, True if every inflated byte is zero), inflating 1 MiB at a
    time so the test itself never holds the bomb."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total, zeros, pending = 0, True, gzip_bytes
    while pending or not inflater.eof:
        out = inflater.decompress(pending, MiB)
        pending = inflater.unconsumed_tail
        total += len(out)
        zeros = zeros and not out.strip(b"\x00")
        if not out and not pending:
            break
    return total, zeros and inflater.eof


def test_rogue_compression_modes_on_the_wire(rogue_server):
    """The rogue modes send what they claim (checked without triple_py)."""
    headers, data = h2_fetch(rogue_server.address, "GzipBomb")
    assert headers[0][b"grpc-encoding"] == b"gzip" and headers[-1][b"grpc-status"] == b"0"
    assert data[0] == 1 and int.from_bytes(data[1:5], "big") == len(data) - 5
    assert len(data) < 128 * KiB
    assert inflated_size(data[5:]) == (rogue_peer.GZIP_BOMB_SIZE, True)
    headers, data = h2_fetch(rogue_server.address, "GzipCorrupt")
    assert headers[0][b"grpc-encoding"] == b"gzip"
    assert data == frame(rogue_peer.GZIP_CORRUPT, flags=1)
    with pytest.raises(zlib.error):
        zlib.decompress(data[5:], 16 + zlib.MAX_WBITS)
    headers, data = h2_fetch(rogue_server.address, "CompressedNoEncoding")
    assert b"grpc-encoding" not in headers[0]
    assert data[0] == 1
    assert zlib.decompress(data[5:], 16 + zlib.MAX_WBITS) == encode_payload(b"compressed")


def rogue_error(channel, mode: str, stream: bool = False) -> triple_py.RpcError:
    started = time.monotonic()
    with pytest.raises(triple_py.RpcError) as info:
        if stream:
            list(channel.unary_stream(f"/rogue.Rogue/{mode}")(b"x", timeout=TIMEOUT))
        else:
            rogue(channel, mode)(b"x", timeout=TIMEOUT)
    assert time.monotonic() - started < 5
    return info.value


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "server_stream"])
def test_gzip_bomb(rogue_server, stream):
    with triple_py.insecure_channel(rogue_server.address) as channel:
        error = rogue_error(channel, "GzipBomb", stream)
        assert error.code() == triple_py.StatusCode.RESOURCE_EXHAUSTED, error.details()
        assert rogue(channel, "Echo")(b"after the bomb", timeout=TIMEOUT) == b"after the bomb"


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "server_stream"])
@pytest.mark.parametrize("mode", ["GzipCorrupt", "CompressedNoEncoding"])
def test_bad_compressed_message_is_internal(rogue_server, mode, stream):
    with triple_py.insecure_channel(rogue_server.address) as channel:
        error = rogue_error(channel, mode, stream)
        assert error.code() == triple_py.StatusCode.INTERNAL, error.details()
        assert rogue(channel, "Echo")(b"still fine", timeout=TIMEOUT) == b"still fine"


BOMB_CHILD = """
import sys
from pathlib import Path
import triple_py

def peak():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

with triple_py.insecure_channel(sys.argv[1]) as channel:
    echo = channel.unary_unary("/rogue.Rogue/Echo")
    assert echo(b"warm-up", timeout=10) == b"warm-up"
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
    start = peak()
    codes = []
    for stream in (False, True, False):
        try:
            if stream:
                list(channel.unary_stream("/rogue.Rogue/GzipBomb")(b"x", timeout=10))
            else:
                channel.unary_unary("/rogue.Rogue/GzipBomb")(b"x", timeout=10)
            codes.append("OK")
        except triple_py.RpcError as error:
            codes.append(error.code().name)
    print(",".join(codes), peak() - start)
"""


@pytest.mark.rss
def test_gzip_bomb_memory_is_bounded(rogue_server):
    """In a fresh process (no pooled buffers from earlier tests), three bombs of 64 MiB
    each raise the peak RSS by far less than one bomb: inflating stops at the 4 MiB
    receive limit."""
    child = start_child(BOMB_CHILD, rogue_server.address)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    codes, growth = out.split()
    assert codes == "RESOURCE_EXHAUSTED,RESOURCE_EXHAUSTED,RESOURCE_EXHAUSTED"
    assert int(growth) < 64 * MiB, f"peak RSS grew by {int(growth) / MiB:.1f} MiB"
