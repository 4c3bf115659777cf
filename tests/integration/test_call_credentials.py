"""Call credentials (issue 24): what the server receives, refusals, failing and slow plugins,
side by side with grpcio's client where it has the same case."""
from __future__ import annotations

import asyncio
import textwrap
import threading
import time

import grpc
import pytest

import triple_py
import triple_py.aio
from _auth_server import METHOD, STREAM_METHOD, AuthServer, received
from _helpers import TIMEOUT, echoed, finished_child, start_child
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


# --- plugins that never answer: exit, cancel, deadline, other calls ---------------------

# A child's script starts with this: the server's address, a plugin that never calls back.
STUCK_PRELUDE = textwrap.dedent("""\
    import asyncio, sys, threading, time
    import triple_py, triple_py.aio
    ADDR = sys.argv[1]
    METHOD, STREAM = "/auth.Auth/WhoAmI", "/auth.Auth/WhoAmIStream"
    LOCAL = triple_py.local_channel_credentials()
    never = threading.Event()

    def stuck(context, callback):
        never.wait()
    STUCK = triple_py.metadata_call_credentials(stuck)

    def code_of(fn):
        try:
            fn()
            return "OK"
        except triple_py.RpcError as err:
            return err.code().name
""")

STUCK_SYNC = """
    ch = triple_py.secure_channel(ADDR, LOCAL)
    mc = ch.unary_unary(METHOD)
    out = [code_of(lambda: mc(b"", timeout=0.3, credentials=STUCK)),
           mc.future(b"", timeout=0.3, credentials=STUCK).exception(5).code().name,
           code_of(lambda: list(ch.stream_stream(STREAM)(iter([b"a"]), timeout=0.3,
                                                       credentials=STUCK))),
           code_of(lambda: list(ch.unary_stream(STREAM)(b"a", timeout=0.3,
                                                      credentials=STUCK)))]
    # No deadline: only cancel ends these; each is returned at once, as grpcio's.
    started = time.monotonic()
    pending = [mc.future(b"", credentials=STUCK),
               ch.stream_unary(METHOD).future(iter([b""]), credentials=STUCK),
               ch.stream_stream(STREAM)(iter([b"a"]), credentials=STUCK),
               ch.unary_stream(STREAM)(b"a", credentials=STUCK)]
    out.append(time.monotonic() - started < 1)
    time.sleep(0.1)
    out += [(call.cancel(), call.code().name) for call in pending]
    out.append(code_of(lambda: list(pending[2])))
"""

STUCK_AIO = """
    async def main():
        ch = triple_py.aio.secure_channel(ADDR, LOCAL)
        mc = ch.unary_unary(METHOD)
        async def awaited(call):
            try:
                await call
                return "OK"
            except triple_py.RpcError as err:
                return err.code().name
        out = [await awaited(mc(b"", timeout=0.3, credentials=STUCK))]
        stream = ch.stream_stream(STREAM)(timeout=0.3, credentials=STUCK)
        try:
            await stream.read()
        except triple_py.RpcError as err:
            out.append(err.code().name)
        call = mc(b"", credentials=STUCK)  # no deadline: only cancel ends it
        task = asyncio.ensure_future(call)
        await asyncio.sleep(0.1)
        out.append(call.cancel())
        try:
            await task
        except asyncio.CancelledError:
            out.append("CancelledError")
        out.append((await call.code()).name)
        return out
    out = asyncio.run(main())  # returns although the plugins never answered
"""

STUCK_END = """
    print(out)
    print(time.monotonic(), flush=True)  # the end of the script: the process exits now
"""


def run_stuck_child(plain_auth, body: str, end: str = STUCK_END) -> tuple[list, float]:
    """Runs STUCK_PRELUDE + ``body`` + ``end`` in a child (hard timeout 30 s); returns
    what it printed and how long it took to exit after its script ended."""
    code = STUCK_PRELUDE + textwrap.dedent(body) + textwrap.dedent(end)
    child = start_child(code, f"localhost:{plain_auth.port}", start_new_session=True)
    out = finished_child(child, 30, "a process with a stuck plugin")
    ended = time.monotonic()
    result, script_end = out.strip().splitlines()[-2:]
    return eval(result), ended - float(script_end)  # noqa: S307 - our own child's list


def test_stuck_plugin_lets_the_sync_process_exit(plain_auth):
    """Deadline and cancel end every call shape waiting on a plugin that never answers,
    and the process exits at once (grpcio: 1.1 s): plugins run on daemon threads."""
    out, exit_s = run_stuck_child(plain_auth, STUCK_SYNC)
    assert out == ["DEADLINE_EXCEEDED"] * 4 + [True] + [(True, "CANCELLED")] * 4 + \
        ["CANCELLED"]
    assert exit_s < 5, f"the process took {exit_s:.1f} s to exit"


def test_stuck_plugin_lets_asyncio_run_return_and_the_process_exit(plain_auth):
    """aio: the deadline ends the call, a cancel returns at once (CANCELLED), and
    ``asyncio.run()`` and the process end although the plugins never answered."""
    out, exit_s = run_stuck_child(plain_auth, STUCK_AIO)
    assert out == ["DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED", True, "CancelledError",
                   "CANCELLED"]
    assert exit_s < 5, f"the process took {exit_s:.1f} s to exit"


STARVED = """
    def fast(context, callback):
        callback((("x-fast", "1"),), None)
    FAST = triple_py.metadata_call_credentials(fast)
    stuck_ch = triple_py.secure_channel(ADDR, LOCAL)
    stuck_futures = [stuck_ch.unary_unary(METHOD).future(b"", timeout=60, credentials=STUCK)
                     for _ in range(12)]
    time.sleep(0.2)
    other = triple_py.secure_channel(ADDR, LOCAL).unary_unary(METHOD)
    out = [code_of(lambda: other(b"", timeout=1, credentials=FAST)) for _ in range(3)]

    async def main():
        stuck_ach = triple_py.aio.secure_channel(ADDR, LOCAL)
        calls = [stuck_ach.unary_unary(METHOD)(b"", timeout=60, credentials=STUCK)
                 for _ in range(12)]
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0.2)
        amc = triple_py.aio.secure_channel(ADDR, LOCAL).unary_unary(METHOD)
        got = []
        for _ in range(3):
            try:
                await amc(b"", timeout=1, credentials=FAST)
                got.append("OK")
            except triple_py.RpcError as err:
                got.append(err.code().name)
        for c in calls:
            c.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return got
    out += asyncio.new_event_loop().run_until_complete(main())
"""
# Exit at once, whatever threads remain: this test is about the calls, not the exit.
HARD_EXIT = STUCK_END + """
    import os
    os._exit(0)
"""


def test_stuck_plugins_hold_up_no_other_call(plain_auth):
    """Twelve stuck plugins (sync and aio) leave other channels' credentialed calls
    alone (grpcio: unaffected; a pool of 4 threads failed them all DEADLINE_EXCEEDED)."""
    out, _ = run_stuck_child(plain_auth, STARVED, HARD_EXIT)
    assert out == ["OK"] * 6


# --- plugin metadata the core would refuse, and failing plugins, in every call shape --

def call_shapes(ch, aio_ch, creds):
    """(shape, thunk) for every call shape: the thunk makes the call and returns its
    (code name, details), or ("RAISED", repr) for anything that is not an RpcError."""
    def sync(fn):
        def run():
            try:
                fn()
                return "OK", None
            except triple_py.RpcError as err:
                return err.code().name, err.details()
            except Exception as exc:  # noqa: BLE001 - what the finding was about
                return "RAISED", repr(exc)
        return run

    async def aio_unary():
        await aio_ch.unary_unary(METHOD)(b"", timeout=TIMEOUT, credentials=creds)

    async def aio_stream():
        call = aio_ch.stream_stream(STREAM_METHOD)(iter([b"a"]), timeout=TIMEOUT,
                                                   credentials=creds)
        return [r async for r in call]

    def in_loop(coro_fn):
        async def main():
            return await coro_fn()
        return lambda: asyncio.get_event_loop_policy().get_event_loop().run_until_complete(
            main())
    kw = dict(timeout=TIMEOUT, credentials=creds)
    return [
        ("unary", sync(lambda: ch.unary_unary(METHOD)(b"", **kw))),
        ("with_call", sync(lambda: ch.unary_unary(METHOD).with_call(b"", **kw))),
        ("future", sync(lambda: ch.unary_unary(METHOD).future(b"", **kw).result())),
        ("unary_stream", sync(lambda: list(ch.unary_stream(STREAM_METHOD)(b"", **kw)))),
        ("stream_unary", sync(lambda: ch.stream_unary(METHOD)(iter([b""]), **kw))),
        ("stream_stream", sync(lambda: list(ch.stream_stream(STREAM_METHOD)(iter([b"a"]),
                                                                           **kw)))),
        ("aio_unary", sync(in_loop(aio_unary))),
        ("aio_stream_stream", sync(in_loop(aio_stream))),
    ]


@pytest.fixture
def both_local(plain_auth):
    """A sync and an aio triple_py channel with local credentials, and an event loop."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    ch = triple_py.secure_channel(f"localhost:{plain_auth.port}",
                                  triple_py.local_channel_credentials())
    aio_ch = triple_py.aio.secure_channel(f"localhost:{plain_auth.port}",
                                          triple_py.local_channel_credentials())
    try:
        yield ch, aio_ch
    finally:
        loop.run_until_complete(aio_ch.close())
        ch.close()
        asyncio.set_event_loop(None)
        loop.close()


def answering(metadata):
    def plugin(context, callback):
        callback(metadata, None)
    return plugin


ILLEGAL = {"bad key": (("bad key", "v"),), "newline in value": (("k", "a\nb"),),
           "upper-case key": (("Upper", "v"),), "str -bin value": (("k-bin", "abc"),),
           "reserved key": (("te", "x"),), "int value": (("k", 5),),
           "not pairs": ("abc",)}


@pytest.mark.parametrize("case", list(ILLEGAL))
def test_illegal_plugin_metadata_fails_every_call_shape_unavailable(both_local, case):
    """Metadata the core would refuse ends the call UNAVAILABLE "Illegal metadata" (as
    grpcio's unary, future, stream and aio calls do), never a raw ValueError."""
    creds = triple_py.metadata_call_credentials(answering(ILLEGAL[case]))
    got = {shape: run() for shape, run in call_shapes(*both_local, creds)}
    assert got == {shape: ("UNAVAILABLE", "Illegal metadata") for shape in got}


@pytest.mark.parametrize("case", ["bad key", "newline in value", "upper-case key"])
def test_illegal_plugin_metadata_as_grpcio(plain_auth, case):
    ours, theirs = local_pair(plain_auth.port)
    with ours, theirs:
        a = outcome(triple_py, ours.unary_unary(METHOD),
                    triple_py.metadata_call_credentials(answering(ILLEGAL[case])))
        b = outcome(grpc, theirs.unary_unary(METHOD),
                    grpc.metadata_call_credentials(answering(ILLEGAL[case])))
    assert a == b == ("UNAVAILABLE", "Illegal metadata")


@pytest.mark.parametrize("plugin", [raising, reporting])
def test_failing_plugin_fails_every_call_shape_as_grpcio(both_local, plugin):
    """grpcio's words in every shape: UNAVAILABLE "Getting metadata from plugin failed
    with error: <the exception's text>"."""
    got = {shape: run() for shape, run in call_shapes(
        *both_local, triple_py.metadata_call_credentials(plugin))}
    text = "no token today" if plugin is raising else "token service down"
    want = ("UNAVAILABLE", f"Getting metadata from plugin failed with error: {text}")
    assert got == {shape: want for shape in got}
