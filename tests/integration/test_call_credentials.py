"""Call credentials (issue 24): what the server receives, refusals, failing and slow plugins,
side by side with grpcio's client where it has the same case."""
from __future__ import annotations

import threading

import grpc
import pytest

import triple_py
from _auth_server import METHOD, STREAM_METHOD, AuthServer, received
from _helpers import TIMEOUT, echoed
from _tls_helpers import make_pki
from peers import UNARY_METHOD
from peers.launch import start_peer


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki-auth"))


@pytest.fixture(scope="module")
def tls_auth(pki):
    server = AuthServer(pki.server.cert_pem, pki.server.key_pem)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def plain_auth():
    server = AuthServer()
    yield server
    server.stop()


def ssl(pki):
    return triple_py.ssl_channel_credentials(pki.ca.cert_pem)


def token_plugin(key: str, value: str):
    def plugin(context, callback):
        callback(((key, value),), None)
    return plugin


def test_channel_access_token_reaches_the_server_over_tls(pki, tls_auth):
    creds = triple_py.composite_channel_credentials(
        ssl(pki), triple_py.access_token_call_credentials("s3cret"))
    with triple_py.secure_channel(f"localhost:{tls_auth.port}", creds) as ch:
        seen = received(ch.unary_unary(METHOD)(b"", timeout=TIMEOUT))
        streamed = list(ch.stream_stream(STREAM_METHOD)(iter([b"a"]), timeout=TIMEOUT))
    assert seen["authorization"] == ["Bearer s3cret"]
    assert received(streamed[0])["authorization"] == ["Bearer s3cret"]


def test_per_call_credentials_follow_the_channel_ones_in_order(pki, tls_auth):
    creds = triple_py.composite_channel_credentials(
        ssl(pki), triple_py.metadata_call_credentials(token_plugin("x-order", "channel")))
    per_call = triple_py.composite_call_credentials(
        triple_py.access_token_call_credentials("t1"),
        triple_py.metadata_call_credentials(token_plugin("x-order", "call")))
    with triple_py.secure_channel(f"localhost:{tls_auth.port}", creds) as ch:
        seen = received(ch.unary_unary(METHOD)(b"", timeout=TIMEOUT, credentials=per_call))
        plain = received(ch.unary_unary(METHOD)(b"", timeout=TIMEOUT,
                                                metadata=[("x-app", "1")]))
    assert seen["x-order"] == ["channel", "call"]
    assert seen["authorization"] == ["Bearer t1"]
    assert plain["x-order"] == ["channel"] and plain["x-app"] == ["1"]
    assert "authorization" not in plain


@pytest.mark.parametrize("name", ["grpcio", "go"])
def test_plugin_metadata_reaches_the_peers_over_tls(pki, name):
    with start_peer(name, **pki.server.peer_options()) as peer:
        creds = triple_py.composite_channel_credentials(
            ssl(pki), triple_py.metadata_call_credentials(token_plugin("x-echo-token", "abc")))
        with triple_py.secure_channel(f"localhost:{peer.port}", creds) as ch:
            _, call = ch.unary_unary(UNARY_METHOD).with_call(b"hi", timeout=TIMEOUT)
            streamed = ch.stream_stream("/benchmark.BenchmarkService/StreamCall")(
                iter([b"1", b"2"]), timeout=TIMEOUT)
            assert list(streamed) == [b"1", b"2"]
            assert echoed(streamed.initial_metadata()) == [("x-echo-token", "abc")]
    assert echoed(call.initial_metadata()) == [("x-echo-token", "abc")]


def test_plugin_context_names_the_service_and_method(pki, tls_auth):
    contexts = []

    def plugin(context, callback):
        contexts.append(context)
        callback((), None)
    creds = triple_py.composite_channel_credentials(
        ssl(pki), triple_py.metadata_call_credentials(plugin))
    with triple_py.secure_channel(f"localhost:{tls_auth.port}", creds) as ch:
        ch.unary_unary(METHOD)(b"", timeout=TIMEOUT)
    assert contexts == [(f"https://localhost:{tls_auth.port}/auth.Auth", "WhoAmI")]


def both_clients(address: str, credentials_for, call):
    """(code, details) of the same call from triple_py's and grpcio's clients."""
    out = []
    for mod in (triple_py, grpc):
        with mod.insecure_channel(address) as ch:
            try:
                call(ch.unary_unary(METHOD), credentials_for(mod))
                out.append(("OK", None))
            except mod.RpcError as err:
                out.append((err.code().name, err.details()))
    return out


def test_insecure_channel_refuses_call_credentials_as_grpcio(plain_auth):
    got = both_clients(f"127.0.0.1:{plain_auth.port}",
                       lambda mod: mod.access_token_call_credentials("t"),
                       lambda mc, creds: mc(b"", timeout=TIMEOUT, credentials=creds))
    assert got[0] == got[1]
    assert got[0][0] == "UNAUTHENTICATED"


def local_pair(port: int):
    """A triple_py and a grpcio channel with local credentials to the same server."""
    return (triple_py.secure_channel(f"localhost:{port}", triple_py.local_channel_credentials()),
            grpc.secure_channel(f"localhost:{port}", grpc.local_channel_credentials()))


def outcome(mod, multi_callable, creds, timeout=TIMEOUT):
    try:
        return "OK", received(multi_callable(b"", timeout=timeout, credentials=creds))
    except mod.RpcError as err:
        return err.code().name, err.details()


def test_local_credentials_allow_call_credentials(plain_auth):
    ours, theirs = local_pair(plain_auth.port)
    with ours, theirs:
        a = outcome(triple_py, ours.unary_unary(METHOD),
                    triple_py.access_token_call_credentials("tok"))
        b = outcome(grpc, theirs.unary_unary(METHOD), grpc.access_token_call_credentials("tok"))
    assert a[0] == b[0] == "OK"
    assert a[1]["authorization"] == b[1]["authorization"] == ["Bearer tok"]


def test_local_credentials_need_a_loopback_target():
    with pytest.raises(ValueError, match="loopback"):
        triple_py.secure_channel("10.1.2.3:80", triple_py.local_channel_credentials())


def raising(context, callback):
    raise ValueError("no token today")


def reporting(context, callback):
    callback(None, RuntimeError("token service down"))


@pytest.mark.parametrize("plugin", [raising, reporting])
def test_failing_plugin_ends_the_call_as_grpcio(plain_auth, plugin):
    ours, theirs = local_pair(plain_auth.port)
    with ours, theirs:
        a = outcome(triple_py, ours.unary_unary(METHOD),
                    triple_py.metadata_call_credentials(plugin))
        b = outcome(grpc, theirs.unary_unary(METHOD), grpc.metadata_call_credentials(plugin))
        fut = ours.unary_unary(METHOD).future(
            b"", timeout=TIMEOUT, credentials=triple_py.metadata_call_credentials(plugin))
        assert fut.exception(TIMEOUT).code() is triple_py.StatusCode.UNAVAILABLE
    assert a == b
    assert a[0] == "UNAVAILABLE" and "Getting metadata from plugin failed" in a[1]


def test_plugin_error_with_its_own_code(plain_auth):
    class Denied(triple_py.RpcError):
        def code(self):
            return triple_py.StatusCode.PERMISSION_DENIED

        def details(self):
            return "not you"

    def plugin(context, callback):
        callback(None, Denied())
    ch = triple_py.secure_channel(f"localhost:{plain_auth.port}",
                                  triple_py.local_channel_credentials())
    with ch:
        got = outcome(triple_py, ch.unary_unary(METHOD),
                      triple_py.metadata_call_credentials(plugin))
    assert got == ("PERMISSION_DENIED", "not you")


def test_slow_plugin_meets_the_deadline_and_blocks_no_other_call(plain_auth):
    release = threading.Event()

    def slow(context, callback):
        release.wait(5)
        callback((), None)
    ch = triple_py.secure_channel(f"localhost:{plain_auth.port}",
                                  triple_py.local_channel_credentials())
    with ch:
        mc = ch.unary_unary(METHOD)
        fut_errors = []
        t = threading.Thread(target=lambda: fut_errors.append(
            outcome(triple_py, mc, triple_py.metadata_call_credentials(slow), timeout=0.5)))
        t.start()
        # While the plugin hangs, the channel's other calls go through.
        for _ in range(5):
            assert outcome(triple_py, mc, None)[0] == "OK"
        t.join(5)
        release.set()
    assert fut_errors == [("DEADLINE_EXCEEDED", "Deadline Exceeded")]


def test_credentials_of_the_wrong_type_are_refused(plain_auth):
    with triple_py.insecure_channel(f"127.0.0.1:{plain_auth.port}") as ch:
        with pytest.raises(TypeError, match="CallCredentials"):
            ch.unary_unary(METHOD)(b"", timeout=TIMEOUT, credentials="Bearer x")
