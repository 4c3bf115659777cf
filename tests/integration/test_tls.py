"""TLS channels (issue 5, "TLS"): secure_channel + ssl_channel_credentials over OpenSSL.

Every certificate is made at run time by `_tls_helpers.make_pki` (the openssl command). The
grpcio and grpc-go peers serve TLS with `--tls-cert/--tls-key` (and require client
certificates with `--tls-client-ca`); one peer is started per (stack, certificate, mTLS)
and kept for the session. A small stdlib `ssl` server checks what the client offers
(SNI, ALPN) where the real peers cannot tell.

A failed handshake or verification must be UNAVAILABLE with OpenSSL's reason in details().
"""
from __future__ import annotations

import os
import socket
import ssl
import subprocess
import threading
import time
from typing import List, Optional

import grpc
import pytest

import triple_py
from peers import STREAM_METHOD, UNARY_METHOD
from _helpers import TIMEOUT, start_child
from _tls_helpers import Identity, PeerPool, make_pki, pem_body

PEER_NAMES = ["grpcio", "go"]
FAIL_FAST = 5.0  # seconds a failing TLS call may take (the deadline is TIMEOUT)
UNAVAILABLE = triple_py.StatusCode.UNAVAILABLE


# --- fixtures ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def tls_peers():
    pool = PeerPool()
    yield pool
    pool.close()


@pytest.fixture(params=PEER_NAMES)
def name(request) -> str:
    return request.param


def tls_peer(pool: PeerPool, name: str, identity: Identity, client_ca: Optional[Identity] = None):
    options = identity.peer_options()
    if client_ca is not None:
        options["tls_client_ca"] = str(client_ca.cert)
    return pool.get(name, **options)


def credentials(roots: Optional[bytes], client: Optional[Identity] = None):
    if client is None:
        return triple_py.ssl_channel_credentials(root_certificates=roots)
    return triple_py.ssl_channel_credentials(root_certificates=roots,
                                             private_key=client.key_pem,
                                             certificate_chain=client.cert_pem)


def secure(target: str, creds, override: Optional[str] = None, **kwargs) -> triple_py.Channel:
    options = [("grpc.ssl_target_name_override", override)] if override else []
    return triple_py.secure_channel(target, creds, options=options, **kwargs)


def echo_unary(channel: triple_py.Channel, request: bytes = b"hello over tls") -> bytes:
    return channel.unary_unary(UNARY_METHOD)(request, timeout=TIMEOUT)


def echo_bidi(channel: triple_py.Channel, requests: List[bytes]) -> List[bytes]:
    return list(channel.stream_stream(STREAM_METHOD)(iter(requests), timeout=TIMEOUT))


def failed_call(channel: triple_py.Channel, stream: bool = False) -> triple_py.RpcError:
    """The RpcError of one call that must fail; checks that it failed promptly."""
    started = time.monotonic()
    with pytest.raises(triple_py.RpcError) as info:
        if stream:
            echo_bidi(channel, [b"one", b"two"])
        else:
            echo_unary(channel)
    assert time.monotonic() - started < FAIL_FAST
    return info.value


def assert_unavailable(error: triple_py.RpcError, *reasons: str) -> None:
    assert error.code() == UNAVAILABLE, (error.code(), error.details())
    for reason in reasons:
        assert reason in error.details(), (reason, error.details())


# --- the peers themselves, with grpcio as the client ----------------------------------------

def test_tls_peers_with_grpcio_client(pki, tls_peers, name):
    """The TLS peers work with grpcio's client: a triple_py failure here is triple_py's."""
    roots = pki.ca.cert_pem
    plain = tls_peer(tls_peers, name, pki.server)
    with grpc.secure_channel(plain.address, grpc.ssl_channel_credentials(roots)) as channel:
        assert channel.unary_unary(UNARY_METHOD)(b"ref", timeout=TIMEOUT) == b"ref"
    mtls = tls_peer(tls_peers, name, pki.server, client_ca=pki.ca)
    with_cert = grpc.ssl_channel_credentials(roots, pki.client.key_pem, pki.client.cert_pem)
    with grpc.secure_channel(mtls.address, with_cert) as channel:
        assert channel.unary_unary(UNARY_METHOD)(b"ref", timeout=TIMEOUT) == b"ref"
    with grpc.secure_channel(mtls.address, grpc.ssl_channel_credentials(roots)) as channel:
        with pytest.raises(grpc.RpcError) as info:
            channel.unary_unary(UNARY_METHOD)(b"ref", timeout=TIMEOUT)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE


# --- success --------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_unary_and_bidi(pki, tls_peers, name, host):
    """Verified by IP SAN (127.0.0.1) or DNS SAN (localhost); unary and bidi calls share
    one TLS connection; large messages cross many TLS records."""
    peer = tls_peer(tls_peers, name, pki.server)
    big = os.urandom(1024 * 1024)
    with secure(f"{host}:{peer.port}", credentials(pki.ca.cert_pem)) as channel:
        assert echo_unary(channel) == b"hello over tls"
        assert echo_unary(channel, big) == big
        requests = [b"", b"a", os.urandom(100_000), b"last"]
        assert echo_bidi(channel, requests) == requests
        call = channel.stream_stream(STREAM_METHOD)(timeout=TIMEOUT)
        for message in (b"ping", b"pong"):  # interleaved writes and reads
            call.write(message)
            assert next(call) == message
        call.done_writing()
        assert list(call) == []
        assert call.code() == triple_py.StatusCode.OK
        assert channel.stats()["connects"] == 1


def test_concurrent_calls(pki, tls_peers, name):
    peer = tls_peer(tls_peers, name, pki.server)
    with secure(peer.address, credentials(pki.ca.cert_pem)) as channel:
        futures = [channel.unary_unary(UNARY_METHOD).future(b"%d" % i, timeout=TIMEOUT)
                   for i in range(50)]
        assert [f.result(timeout=TIMEOUT) for f in futures] == [b"%d" % i for i in range(50)]


def test_target_name_override_with_the_right_name(pki, tls_peers, name):
    """A certificate for `localhost` only (no IP SAN): 127.0.0.1 fails the IP check, and
    passes when grpc.ssl_target_name_override names the certificate's host."""
    peer = tls_peer(tls_peers, name, pki.localhost)
    with secure(peer.address, credentials(pki.ca.cert_pem)) as channel:
        assert_unavailable(failed_call(channel), "IP address mismatch")
    with secure(peer.address, credentials(pki.ca.cert_pem), override="localhost") as channel:
        assert echo_unary(channel) == b"hello over tls"
        assert echo_bidi(channel, [b"x", b"y"]) == [b"x", b"y"]


# --- verification failures -------------------------------------------------------------------

def test_wrong_host_name(pki, tls_peers, name):
    peer = tls_peer(tls_peers, name, pki.server)
    with secure(peer.address, credentials(pki.ca.cert_pem), override="wrong.example") as channel:
        for stream in (False, True):
            assert_unavailable(failed_call(channel, stream), "certificate verify failed",
                               "hostname mismatch")


def test_unknown_ca(pki, tls_peers, name):
    peer = tls_peer(tls_peers, name, pki.other_server)
    with secure(peer.address, credentials(pki.ca.cert_pem)) as channel:
        for stream in (False, True):
            assert_unavailable(failed_call(channel, stream), "certificate verify failed",
                               "unable to get local issuer certificate")


def test_expired_certificate(pki, tls_peers, name):
    peer = tls_peer(tls_peers, name, pki.expired)
    with secure(peer.address, credentials(pki.ca.cert_pem)) as channel:
        for stream in (False, True):
            assert_unavailable(failed_call(channel, stream), "certificate verify failed",
                               "certificate has expired")


def test_failure_is_not_sticky(pki, tls_peers, name):
    """Every call on a channel whose handshakes fail fails promptly; none hangs."""
    peer = tls_peer(tls_peers, name, pki.other_server)
    with secure(peer.address, credentials(pki.ca.cert_pem)) as channel:
        for _ in range(5):
            assert_unavailable(failed_call(channel), "certificate verify failed")
        futures = [channel.unary_unary(UNARY_METHOD).future(b"x", timeout=TIMEOUT)
                   for _ in range(10)]
        for future in futures:
            assert future.exception(timeout=FAIL_FAST).code() == UNAVAILABLE


def test_tls_channel_to_plaintext_peer(request, name):
    """A TLS client hello answered by an h2c server: a handshake error, not a hang."""
    peer = request.getfixturevalue(f"{name}_server")
    with secure(peer.address, credentials(None)) as channel:
        error = failed_call(channel)
    assert_unavailable(error, "TLS")


def test_plaintext_channel_to_tls_peer(pki, tls_peers, name):
    peer = tls_peer(tls_peers, name, pki.server)
    with triple_py.insecure_channel(peer.address) as channel:
        assert failed_call(channel).code() == UNAVAILABLE


# --- system trust store ----------------------------------------------------------------------

def test_system_store_when_no_roots(pki, tls_peers, name):
    """root_certificates=None verifies against the system store, which knows neither the
    test CA nor a self-signed certificate."""
    with secure(tls_peer(tls_peers, name, pki.server).address, credentials(None)) as channel:
        assert_unavailable(failed_call(channel), "certificate verify failed",
                           "unable to get local issuer certificate")
    with secure(tls_peer(tls_peers, name, pki.self_signed).address, credentials(None)) as channel:
        assert_unavailable(failed_call(channel), "certificate verify failed", "self-signed")


SYSTEM_STORE_CHILD = """
import sys
import triple_py
creds = triple_py.ssl_channel_credentials()
with triple_py.secure_channel(sys.argv[1], creds) as channel:
    print(channel.unary_unary("/benchmark.BenchmarkService/UnaryCall")(b"sys", timeout=10))
"""


def test_system_store_is_openssl_default(pki, tls_peers, monkeypatch):
    """Proof that None means OpenSSL's default store: pointing SSL_CERT_FILE (which the
    default store honours) at the test CA makes the same credentials succeed."""
    peer = tls_peer(tls_peers, "go", pki.server)
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca.cert))  # inherited by the child
    child = start_child(SYSTEM_STORE_CHILD, peer.address)
    monkeypatch.delenv("SSL_CERT_FILE")
    out, err = child.communicate(timeout=30)
    assert (child.returncode, out.strip()) == (0, "b'sys'"), err


# Python's ssl module names the host's CA store (the test CA here) while OpenSSL's own
# defaults, as the core's OpenSSL sees them, know nothing of it: `import ssl` first.
PYTHON_PATHS_CHILD = """
import ssl
import sys
import triple_py
kind, location = sys.argv[2], sys.argv[3]
paths = ssl.get_default_verify_paths()
ssl.get_default_verify_paths = lambda: paths._replace(
    cafile=location if kind == "file" else None, capath=location if kind == "dir" else None)
creds = triple_py.ssl_channel_credentials()
with triple_py.secure_channel(sys.argv[1], creds) as channel:
    print(channel.unary_unary("/benchmark.BenchmarkService/UnaryCall")(b"py", timeout=10))
"""


@pytest.mark.parametrize("kind", ["file", "dir"])
def test_system_store_falls_back_to_pythons_verify_paths(pki, tls_peers, kind, tmp_path,
                                                         monkeypatch):
    """A statically linked OpenSSL may look for the system store where this host keeps
    nothing: without root_certificates the channel also trusts the CA file and directory
    that ssl.get_default_verify_paths() names (SSL_CERT_FILE is unset in the child, so
    only that path can make the call succeed)."""
    peer = tls_peer(tls_peers, "go", pki.server)
    location = pki.ca.cert
    if kind == "dir":
        location = tmp_path / "certs"
        location.mkdir()
        (location / "ca.pem").write_bytes(pki.ca.cert_pem)
        subprocess.run(["openssl", "rehash", str(location)], check=True, timeout=30)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    child = start_child(PYTHON_PATHS_CHILD, peer.address, kind, str(location))
    out, err = child.communicate(timeout=30)
    assert (child.returncode, out.strip()) == (0, "b'py'"), err


# --- mTLS ------------------------------------------------------------------------------------

def test_mtls_with_client_certificate(pki, tls_peers, name):
    peer = tls_peer(tls_peers, name, pki.server, client_ca=pki.ca)
    with secure(peer.address, credentials(pki.ca.cert_pem, pki.client)) as channel:
        assert echo_unary(channel) == b"hello over tls"
        assert echo_bidi(channel, [b"m", b"tls"]) == [b"m", b"tls"]


def test_mtls_without_client_certificate(pki, tls_peers, name):
    """The peer requires a client certificate. With TLS 1.3 the client's handshake ends
    before the server rejects it, so the error may come on the first read: still
    UNAVAILABLE, with OpenSSL's reason."""
    peer = tls_peer(tls_peers, name, pki.server, client_ca=pki.ca)
    with secure(peer.address, credentials(pki.ca.cert_pem)) as channel:
        for stream in (False, True):
            assert_unavailable(failed_call(channel, stream), "TLS")


def test_mtls_with_certificate_of_another_ca(pki, tls_peers, name):
    peer = tls_peer(tls_peers, name, pki.server, client_ca=pki.ca)
    with secure(peer.address, credentials(pki.ca.cert_pem, pki.other_server)) as channel:
        assert_unavailable(failed_call(channel), "TLS")


# --- key material never shows ------------------------------------------------------------------

def leaks(key_pem: bytes, *texts: str) -> List[str]:
    """The base64 lines of key_pem that occur in any of texts."""
    lines = [line.decode() for line in pem_body(key_pem)]
    return [line for line in lines if any(line in text for text in texts)]


def error_texts(error: triple_py.RpcError) -> List[str]:
    return [error.details() or "", str(error), repr(error), error.debug_error_string()]


def test_no_key_material_in_errors_or_reprs(pki, tls_peers, name):
    key = pki.client.key_pem
    creds = credentials(pki.ca.cert_pem, pki.client)
    texts = [repr(creds), str(creds)]
    for peer, override in [(tls_peer(tls_peers, name, pki.other_server), None),
                           (tls_peer(tls_peers, name, pki.expired), None),
                           (tls_peer(tls_peers, name, pki.server), "wrong.example")]:
        with secure(peer.address, creds, override=override) as channel:
            texts += [repr(channel)] + error_texts(failed_call(channel))
    mtls = tls_peer(tls_peers, name, pki.server, client_ca=pki.ca)
    with secure(mtls.address, credentials(pki.ca.cert_pem, pki.other_server)) as channel:
        texts += error_texts(failed_call(channel))
        other_key = pki.other_server.key_pem
    with pytest.raises(ValueError) as info:  # a key that does not match the certificate
        secure(mtls.address, triple_py.ssl_channel_credentials(
            pki.ca.cert_pem, pki.server.key_pem, pki.client.cert_pem))
    texts.append(str(info.value))
    assert "<redacted>" in repr(creds)
    assert leaks(key, *texts) == []
    assert leaks(other_key, *texts) == []
    assert leaks(pki.server.key_pem, *texts) == []


LOGGING_CHILD = """
import sys
import triple_py
from pathlib import Path
key, cert, roots = (Path(p).read_bytes() for p in sys.argv[2:5])
creds = triple_py.ssl_channel_credentials(roots, key, cert)
print(repr(creds))
for target in sys.argv[1].split(","):
    with triple_py.secure_channel(target, creds) as channel:
        try:
            channel.unary_unary("/benchmark.BenchmarkService/UnaryCall")(b"x", timeout=10)
        except triple_py.RpcError as error:
            print(repr(error), error.details())
"""


def test_no_key_material_on_stdout_or_stderr(pki, tls_peers):
    """Nothing the library writes to the process's stdout or stderr (C code included)
    carries the key, across failed handshakes of every kind."""
    targets = [tls_peer(tls_peers, "go", identity).address
               for identity in (pki.other_server, pki.expired)]
    targets.append(tls_peer(tls_peers, "grpcio", pki.server, client_ca=pki.other_ca).address)
    child = start_child(LOGGING_CHILD, ",".join(targets), str(pki.client.key),
                        str(pki.client.cert), str(pki.ca.cert))
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert out.count("UNAVAILABLE") == 3, out
    assert leaks(pki.client.key_pem, out, err) == []


# --- what the client offers: SNI and ALPN ---------------------------------------------------------

class ProbeServer:
    """A stdlib TLS server that records each handshake's SNI and the ALPN protocol it
    selected, then closes the connection."""

    def __init__(self, identity: Identity, alpn: Optional[List[str]]) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(identity.cert, identity.key)
        if alpn is not None:
            self.context.set_alpn_protocols(alpn)
        self.context.sni_callback = self._on_sni
        self.sni: List[Optional[str]] = []
        self.alpn: List[Optional[str]] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)  # accept() polls `stopped`: close() cannot wake it
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True, name="tls-probe")
        self.thread.start()

    def _on_sni(self, sslobj, server_name, context) -> None:
        self.sni.append(server_name)

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(5)
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    self.alpn.append(tls.selected_alpn_protocol())
            except (OSError, ssl.SSLError):
                conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(5)
        self.listener.close()


@pytest.mark.parametrize("host, override, sni", [
    ("localhost", None, "localhost"),
    ("127.0.0.1", None, None),  # RFC 6066: no IP addresses in SNI
    ("127.0.0.1", "localhost", "localhost"),
])
def test_sni_and_alpn_offered(pki, host, override, sni):
    server = ProbeServer(pki.server, ["h2"])
    try:
        with secure(f"{host}:{server.port}", credentials(pki.ca.cert_pem), override) as channel:
            assert failed_call(channel).code() == UNAVAILABLE  # the probe closes after hello
        assert server.sni[:1] == [sni]
        assert server.alpn[:1] == ["h2"]
    finally:
        server.close()


@pytest.mark.parametrize("alpn", [["http/1.1"], None], ids=["http1.1", "no-alpn"])
def test_alpn_h2_required(pki, alpn):
    server = ProbeServer(pki.server, alpn)
    try:
        with secure(f"localhost:{server.port}", credentials(pki.ca.cert_pem)) as channel:
            assert_unavailable(failed_call(channel), "ALPN")
    finally:
        server.close()
