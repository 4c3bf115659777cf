"""triple_py.aio interceptors, call credentials and wait_for_ready (issue 24), each case
run with grpc.aio's client too and compared."""
from __future__ import annotations

import asyncio
import threading

import grpc
import grpc.aio
import pytest

import triple_py
import triple_py.aio
from _auth_server import METHOD, AuthServer, received
from _helpers import TIMEOUT, echoed
from peers import UNARY_METHOD
from peers.launch import start_peer

STREAM_METHOD = "/benchmark.BenchmarkService/StreamCall"
# grpc.aio's own InterceptedCall raises from __del__ (whenever it is collected) after a
# raising interceptor: its cancel() re-raises the interceptor's exception. That warning is
# grpcio's, not triple_py's.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def details_with(mod, details, metadata):
    return mod.aio.ClientCallDetails(details.method, details.timeout, metadata,
                                     details.credentials, details.wait_for_ready)


def tagging(mod):
    """A factory of interceptors that add ``x-echo-<name>`` and log that they ran: one
    per kind, since grpc.aio files an interceptor under its first kind only."""
    async def tag(self, continuation, details, request):
        self.log.append(self.name)
        md = list(details.metadata or ()) + [(f"x-echo-{self.name}", str(len(self.log)))]
        return await continuation(details_with(mod, details, md), request)

    def init(self, name, log):
        self.name, self.log = name, log

    kinds = [(mod.aio.UnaryUnaryClientInterceptor, "intercept_unary_unary"),
             (mod.aio.UnaryStreamClientInterceptor, "intercept_unary_stream"),
             (mod.aio.StreamUnaryClientInterceptor, "intercept_stream_unary"),
             (mod.aio.StreamStreamClientInterceptor, "intercept_stream_stream")]
    classes = [type(f"Tag{i}", (kind,), {"__init__": init, hook: tag})
               for i, (kind, hook) in enumerate(kinds)]
    return lambda name, log: [cls(name, log) for cls in classes]


async def all_kinds(mod, address):
    log: list = []
    cls = tagging(mod)
    seen = {}
    async with mod.aio.insecure_channel(address, interceptors=[*cls("a", log),
                                                                *cls("b", log)]) as ch:
        call = ch.unary_unary(UNARY_METHOD)(b"u", timeout=TIMEOUT)
        seen["uu"] = (await call, echoed(await call.initial_metadata()), (await call.code()).name)
        call = ch.unary_stream(STREAM_METHOD)(b"s", timeout=TIMEOUT)
        seen["us"] = ([r async for r in call], echoed(await call.initial_metadata()))
        call = ch.stream_unary(STREAM_METHOD)(iter([b"c"]), timeout=TIMEOUT)
        seen["su"] = (await call, echoed(await call.trailing_metadata()))
        call = ch.stream_stream(STREAM_METHOD)(timeout=TIMEOUT)
        await call.write(b"1")
        first = await call.read()
        await call.done_writing()
        seen["ss"] = (first, echoed(await call.initial_metadata()), (await call.code()).name)
        try:
            await ch.unary_unary(UNARY_METHOD)(b"", timeout=TIMEOUT, metadata=[("x-status", "5")])
        except mod.aio.AioRpcError as err:
            seen["error"] = err.code().name
    return seen, log


def test_aio_interceptors_all_kinds_like_grpc_aio(peer):
    ours, our_log = asyncio.run(all_kinds(triple_py, peer.address))
    theirs, their_log = asyncio.run(all_kinds(grpc, peer.address))
    assert our_log == their_log == ["a", "b"] * 5
    assert ours == theirs
    assert ours["uu"] == (b"u", [("x-echo-a", "1"), ("x-echo-b", "2")], "OK")
    assert ours["us"] == ([b"s"], [("x-echo-a", "3"), ("x-echo-b", "4")])
    assert ours["su"] == (b"c", [("x-echo-a", "5"), ("x-echo-b", "6")])
    assert ours["ss"] == (b"1", [("x-echo-a", "7"), ("x-echo-b", "8")], "OK")
    assert ours["error"] == "NOT_FOUND"


def short_and_raising(mod):
    class Short(mod.aio.UnaryUnaryClientInterceptor):
        async def intercept_unary_unary(self, continuation, details, request):
            return b"cached:" + request

    class Raising(mod.aio.UnaryUnaryClientInterceptor):
        async def intercept_unary_unary(self, continuation, details, request):
            raise LookupError("no")
    return Short, Raising


async def short_raise(mod, address):
    short, raising = short_and_raising(mod)
    out = []
    log: list = []
    async with mod.aio.insecure_channel(address,
                                        interceptors=[short(), *tagging(mod)("x", log)]) as ch:
        out.append(await ch.unary_unary(UNARY_METHOD)(b"q", timeout=TIMEOUT))
    async with mod.aio.insecure_channel(address, interceptors=[raising()]) as ch:
        try:
            await ch.unary_unary(UNARY_METHOD)(b"q", timeout=TIMEOUT)
        except LookupError as exc:
            out.append(("LookupError", str(exc)))
    out.append(log)
    return out


def test_aio_short_circuit_and_raise_like_grpc_aio(grpcio_server):
    ours = asyncio.run(short_raise(triple_py, grpcio_server.address))
    theirs = asyncio.run(short_raise(grpc, grpcio_server.address))
    assert ours == theirs == [b"cached:q", ("LookupError", "no"), []]


@pytest.fixture(scope="module")
def plain_auth():
    server = AuthServer()
    yield server
    server.stop()


async def credential_cases(mod, port):
    def failing(context, callback):
        raise ValueError("broken plugin")

    creds = mod.composite_channel_credentials(
        mod.local_channel_credentials(),
        mod.metadata_call_credentials(lambda ctx, cb: cb((("x-chan", "1"),), None)))
    out = {}
    async with mod.aio.secure_channel(f"localhost:{port}", creds) as ch:
        reply = await ch.unary_unary(METHOD)(
            b"", timeout=TIMEOUT, credentials=mod.access_token_call_credentials("tk"))
        seen = received(reply)
        out["seen"] = (seen["x-chan"], seen["authorization"])
        try:
            await ch.unary_unary(METHOD)(b"", timeout=TIMEOUT,
                                         credentials=mod.metadata_call_credentials(failing))
        except mod.aio.AioRpcError as err:
            out["failing"] = (err.code().name, err.details())
    async with mod.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        try:
            await ch.unary_unary(METHOD)(b"", timeout=TIMEOUT,
                                         credentials=mod.access_token_call_credentials("tk"))
        except mod.aio.AioRpcError as err:  # triple_py: as the sync API (and grpcio's)
            out["insecure"] = err.code().name
        except Exception as exc:  # noqa: BLE001 - grpc.aio raises a UsageError instead
            out["insecure"] = type(exc).__name__
    return out


def test_aio_call_credentials_like_grpc_aio(plain_auth):
    ours = asyncio.run(credential_cases(triple_py, plain_auth.port))
    theirs = asyncio.run(credential_cases(grpc, plain_auth.port))
    assert ours["seen"] == theirs["seen"] == (["1"], ["Bearer tk"])
    assert ours["failing"] == theirs["failing"]
    assert ours["failing"][0] == "UNAVAILABLE"
    assert ours["insecure"] == "UNAUTHENTICATED" and theirs["insecure"] == "UsageError"


async def restart_case(mod, name):
    peer = start_peer(name)
    port = peer.port
    async with mod.aio.insecure_channel(peer.address) as ch:
        mc = ch.unary_unary(UNARY_METHOD)
        assert await mc(b"1", timeout=TIMEOUT) == b"1"
        peer.stop()
        with pytest.raises(mod.aio.AioRpcError):
            await mc(b"2", timeout=TIMEOUT)
        peer = start_peer(name, port=port)
        try:
            return await mc(b"3", timeout=3, wait_for_ready=True)
        finally:
            peer.stop()


@pytest.mark.parametrize("name", ["grpcio", "go"])
def test_aio_wait_for_ready_through_a_restart(name):
    assert asyncio.run(restart_case(triple_py, name)) == b"3"
    assert asyncio.run(restart_case(grpc, name)) == b"3"


def test_aio_interceptors_must_be_interceptors():
    with pytest.raises(TypeError, match="interceptors"):
        triple_py.aio.insecure_channel("127.0.0.1:1", interceptors=[object()])


def test_aio_slow_plugin_meets_the_deadline_and_the_loop_runs(plain_auth):
    async def scenario():
        release = threading.Event()
        loop = asyncio.get_running_loop()

        def slow(context, callback):
            release.wait(5)
            callback((), None)
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)
        t = loop.create_task(ticker())
        async with triple_py.aio.secure_channel(f"localhost:{plain_auth.port}",
                                                triple_py.local_channel_credentials()) as ch:
            with pytest.raises(triple_py.aio.AioRpcError) as info:
                await ch.unary_unary(METHOD)(
                    b"", timeout=0.3, credentials=triple_py.metadata_call_credentials(slow))
            release.set()
        t.cancel()
        return info.value.code(), ticks
    code, ticks = asyncio.run(scenario())
    assert code is triple_py.StatusCode.DEADLINE_EXCEEDED
    assert ticks >= 5  # the loop kept running while the plugin hung


def test_aio_one_interceptor_of_several_kinds_serves_them_all(grpcio_server):
    class Both(triple_py.aio.UnaryUnaryClientInterceptor,
               triple_py.aio.UnaryStreamClientInterceptor):
        seen: list = []

        async def intercept_unary_unary(self, continuation, details, request):
            self.seen.append("uu")
            return await continuation(details, request)

        async def intercept_unary_stream(self, continuation, details, request):
            self.seen.append("us")
            return await continuation(details, request)

    async def scenario():
        async with triple_py.aio.insecure_channel(grpcio_server.address,
                                                  interceptors=[Both()]) as ch:
            assert await ch.unary_unary(UNARY_METHOD)(b"x", timeout=TIMEOUT) == b"x"
            assert [r async for r in ch.unary_stream(STREAM_METHOD)(b"y", timeout=TIMEOUT)] \
                == [b"y"]
    asyncio.run(scenario())
    assert Both.seen == ["uu", "us"]


def test_aio_cancel_before_the_call_started(plain_auth):
    async def scenario():
        gate = asyncio.Event()

        class Slow(triple_py.aio.UnaryUnaryClientInterceptor):
            async def intercept_unary_unary(self, continuation, details, request):
                await gate.wait()
                return await continuation(details, request)
        async with triple_py.aio.insecure_channel(f"127.0.0.1:{plain_auth.port}",
                                                  interceptors=[Slow()]) as ch:
            call = ch.unary_unary(METHOD)(b"", timeout=TIMEOUT)
            await asyncio.sleep(0)
            assert not call.done()
            assert call.cancel() and call.cancelled()
            with pytest.raises(asyncio.CancelledError):
                await call
    asyncio.run(scenario())
