"""The public surface a grpcio user annotates with: ``import triple_py as grpc`` finds
grpcio's client-side names (and grpc.aio's under ``triple_py.aio``), the abstract ones are
abstract base classes, triple_py's real objects are instances of them as grpcio's are,
and a client written with grpcio's annotations type-checks (mypy, against the types the
package ships: its annotations, py.typed and _triple.pyi; MYPYPATH unset).

Server-side names (grpc.server, ServicerContext, the method handlers ...) are not part of
it: triple_py has no server API (triple_py.server runs the embedded echo server only)."""
from __future__ import annotations

import abc
import asyncio
import collections.abc
import importlib.util
import os
import site
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import triple_py
import triple_py.aio
from triple_py.testing import EchoServer

UNARY = "/benchmark.BenchmarkService/UnaryCall"
STREAM = "/benchmark.BenchmarkService/StreamCall"  # echoes each message

# grpcio 1.51's client-side public names (dir(grpc) less the server side, the modules it
# imports and the credentials triple_py does not offer: alts, xds, compute_engine).
CLIENT_TYPES = ["RpcContext", "Call", "Future", "UnaryUnaryMultiCallable",
                "UnaryStreamMultiCallable", "StreamUnaryMultiCallable",
                "StreamStreamMultiCallable", "Channel", "ClientCallDetails",
                "AuthMetadataContext", "AuthMetadataPlugin", "AuthMetadataPluginCallback",
                "UnaryUnaryClientInterceptor", "UnaryStreamClientInterceptor",
                "StreamUnaryClientInterceptor", "StreamStreamClientInterceptor"]
CLIENT_OTHER = ["ChannelConnectivity", "StatusCode", "Compression", "LocalConnectionType",
                "RpcError", "FutureTimeoutError", "FutureCancelledError",
                "ChannelCredentials", "CallCredentials", "insecure_channel",
                "secure_channel", "intercept_channel", "channel_ready_future",
                "ssl_channel_credentials", "local_channel_credentials",
                "metadata_call_credentials", "access_token_call_credentials",
                "composite_call_credentials", "composite_channel_credentials"]
# grpc.aio's client-side names.
AIO_TYPES = ["RpcContext", "Call", "UnaryUnaryCall", "UnaryStreamCall", "StreamUnaryCall",
             "StreamStreamCall", "Channel", "UnaryUnaryMultiCallable",
             "UnaryStreamMultiCallable", "StreamUnaryMultiCallable",
             "StreamStreamMultiCallable", "ClientInterceptor"]
AIO_OTHER = ["AioRpcError", "ClientCallDetails", "Metadata", "EOF", "insecure_channel",
             "secure_channel", "UnaryUnaryClientInterceptor", "UnaryStreamClientInterceptor",
             "StreamUnaryClientInterceptor", "StreamStreamClientInterceptor"]


@pytest.mark.parametrize("module, names", [(triple_py, CLIENT_TYPES + CLIENT_OTHER),
                                           (triple_py.aio, AIO_TYPES + AIO_OTHER)])
def test_every_client_name_of_grpcio_exists(module: Any, names: list[str]) -> None:
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{module.__name__} lacks {missing}"
    assert not [n for n in names if n not in module.__all__]


def test_the_lists_are_grpcio_names() -> None:
    """Kept honest against grpcio itself where it is installed (Debian's python3-grpcio)."""
    grpc = pytest.importorskip("grpc")
    import grpc.aio
    assert not [n for n in CLIENT_TYPES + CLIENT_OTHER if not hasattr(grpc, n)]
    assert not [n for n in AIO_TYPES + AIO_OTHER if not hasattr(grpc.aio, n)]


@pytest.mark.parametrize("module, names", [(triple_py, CLIENT_TYPES),
                                           (triple_py.aio, AIO_TYPES)])
def test_the_types_are_abstract_base_classes(module: Any, names: list[str]) -> None:
    for name in names:
        cls = getattr(module, name)
        assert isinstance(cls, abc.ABCMeta), name
    for name in ("RpcContext", "Call", "Channel", "UnaryUnaryMultiCallable"):
        with pytest.raises(TypeError, match="abstract"):
            getattr(module, name)()


@pytest.fixture(scope="module")
def server() -> Any:
    with EchoServer() as s:
        yield s


def _within(event: threading.Event) -> bool:
    return event.wait(5)


def test_sync_objects_are_instances_of_the_types(server: Any) -> None:
    grpc = triple_py
    with grpc.insecure_channel(server.address) as ch:
        assert isinstance(ch, grpc.Channel)
        unary = ch.unary_unary(UNARY)
        shapes = {grpc.UnaryUnaryMultiCallable: unary,
                  grpc.UnaryStreamMultiCallable: ch.unary_stream(STREAM),
                  grpc.StreamUnaryMultiCallable: ch.stream_unary(STREAM),
                  grpc.StreamStreamMultiCallable: ch.stream_stream(STREAM)}
        for kind, mc in shapes.items():
            assert [k for k in shapes if isinstance(mc, k)] == [kind]

        fut = unary.future(b"f", timeout=5)
        assert isinstance(fut, grpc.Future) and isinstance(fut, grpc.Call)
        assert isinstance(fut, grpc.RpcContext)
        assert fut.result() == b"f"
        assert fut.add_callback(lambda: None) is False  # ended: not kept
        assert fut.time_remaining() is None

        slow = unary.future(b"s", timeout=5, metadata=(("x-delay-ms", "300"),))
        left = slow.time_remaining()
        assert left is not None and 0 < left <= 5
        ran = threading.Event()
        assert slow.add_callback(ran.set) is True
        assert _within(ran) and slow.code() is grpc.StatusCode.OK

        response, call = unary.with_call(b"w")
        assert response == b"w" and isinstance(call, grpc.Call)
        assert call.code() is grpc.StatusCode.OK

        with pytest.raises(grpc.RpcError) as failed:
            unary(b"x", metadata=(("x-status", "5"),))
        assert isinstance(failed.value, grpc.Call)
        assert failed.value.code() is grpc.StatusCode.NOT_FOUND

        ready = grpc.channel_ready_future(ch)
        assert isinstance(ready, grpc.Future)
        ready.result(timeout=5)


def test_a_response_stream_is_a_call_a_future_and_an_iterator(server: Any) -> None:
    grpc = triple_py
    with grpc.insecure_channel(server.address) as ch:
        stream = ch.stream_stream(STREAM)(iter([b"a", b"b"]), timeout=5,
                                          metadata=(("x-delay-ms", "200"),))
        assert isinstance(stream, grpc.Call) and isinstance(stream, grpc.Future)
        assert isinstance(stream, collections.abc.Iterator)
        ended, done_with = threading.Event(), []
        assert stream.add_callback(ended.set) is True
        stream.add_done_callback(done_with.append)
        assert stream.running() and not stream.done()
        with pytest.raises(grpc.FutureTimeoutError):
            stream.result(timeout=0)
        assert list(stream) == [b"a", b"b"]
        assert _within(ended)
        assert stream.result(timeout=5) is None and stream.exception() is None
        assert stream.done() and not stream.running() and not stream.cancelled()
        assert done_with == [stream]
        assert stream.add_callback(lambda: None) is False

        cancelled = ch.unary_stream(STREAM)(b"c", metadata=(("x-delay-ms", "2000"),))
        assert cancelled.cancel() and cancelled.cancelled()
        with pytest.raises(grpc.FutureCancelledError):
            cancelled.result(timeout=5)


def test_interceptor_and_plugin_objects_are_instances_of_the_types(server: Any) -> None:
    grpc = triple_py
    seen: dict[str, Any] = {}

    class Plugin(grpc.AuthMetadataPlugin):
        def __call__(self, context: grpc.AuthMetadataContext,
                     callback: grpc.AuthMetadataPluginCallback) -> None:
            seen["context"], seen["callback"] = context, callback
            callback((("x-echo-plugin", "yes"),), None)

    class Details(grpc.UnaryUnaryClientInterceptor):
        def intercept_unary_unary(self, continuation: Any,
                                  client_call_details: grpc.ClientCallDetails,
                                  request: Any) -> Any:
            seen["details"] = client_call_details
            return continuation(client_call_details, request)

    creds = grpc.composite_channel_credentials(grpc.local_channel_credentials(),
                                               grpc.metadata_call_credentials(Plugin()))
    with grpc.secure_channel(server.address, creds) as plain:
        ch = grpc.intercept_channel(plain, Details())
        assert isinstance(ch, grpc.Channel)
        unary = ch.unary_unary(UNARY)
        assert isinstance(unary, grpc.UnaryUnaryMultiCallable)
        response, call = unary.with_call(b"i", timeout=5)
        assert response == b"i" and isinstance(call, grpc.Call)
        assert ("x-echo-plugin", "yes") in call.initial_metadata()
        fut = unary.future(b"j", timeout=5)
        assert isinstance(fut, grpc.Future) and fut.result() == b"j"
        assert isinstance(ch.unary_stream(STREAM), grpc.UnaryStreamMultiCallable)
        assert isinstance(ch.stream_stream(STREAM), grpc.StreamStreamMultiCallable)
    assert isinstance(seen["context"], grpc.AuthMetadataContext)
    assert seen["context"].method_name == "UnaryCall"
    assert isinstance(seen["callback"], grpc.AuthMetadataPluginCallback)
    assert isinstance(seen["details"], grpc.ClientCallDetails)
    assert seen["details"].method == UNARY


def test_aio_objects_are_instances_of_the_types(server: Any) -> None:
    aio = triple_py.aio

    async def main() -> None:
        async with aio.insecure_channel(server.address) as ch:
            assert isinstance(ch, aio.Channel)
            shapes = {aio.UnaryUnaryMultiCallable: ch.unary_unary(UNARY),
                      aio.UnaryStreamMultiCallable: ch.unary_stream(STREAM),
                      aio.StreamUnaryMultiCallable: ch.stream_unary(STREAM),
                      aio.StreamStreamMultiCallable: ch.stream_stream(STREAM)}
            for kind, mc in shapes.items():
                assert [k for k in shapes if isinstance(mc, k)] == [kind]

            md = aio.Metadata(("x-echo-a", "1"), ("x-echo-a", "2"))
            call = ch.unary_unary(UNARY)(b"u", timeout=5, metadata=md)
            assert isinstance(call, aio.UnaryUnaryCall) and isinstance(call, aio.Call)
            assert isinstance(call, aio.RpcContext)
            done_with: list[Any] = []
            call.add_done_callback(done_with.append)
            assert await call == b"u"
            assert done_with == [call]
            later: list[Any] = []
            call.add_done_callback(later.append)  # ended: at once
            assert later == [call]
            assert [v for k, v in await call.initial_metadata() if k == "x-echo-a"] == \
                ["1", "2"]

            stream = ch.unary_stream(STREAM)(b"s", timeout=5)
            assert isinstance(stream, aio.UnaryStreamCall)
            assert [r async for r in stream] == [b"s"]
            bidi = ch.stream_stream(STREAM)(timeout=5)
            assert isinstance(bidi, aio.StreamStreamCall)
            await bidi.write(b"b")
            await bidi.done_writing()
            assert await bidi.read() == b"b" and await bidi.read() is aio.EOF
            upload = ch.stream_unary(STREAM)(iter([b"c"]), timeout=5)
            assert isinstance(upload, aio.StreamUnaryCall)
            assert await upload == b"c"
            waiting = ch.stream_stream(STREAM)(timeout=5, wait_for_ready=True)
            assert isinstance(waiting, aio.StreamStreamCall)  # starts after the wait
            await waiting.done_writing()
            assert await waiting.read() is aio.EOF

            failed = ch.unary_unary(UNARY)(b"x", metadata=(("x-status", "5"),))
            with pytest.raises(aio.AioRpcError) as err:
                await failed
            assert isinstance(err.value, triple_py.RpcError)
            assert err.value.code() is triple_py.StatusCode.NOT_FOUND

        class Short(aio.UnaryUnaryClientInterceptor):
            async def intercept_unary_unary(self, continuation: Any, details: Any,
                                            request: Any) -> Any:
                assert isinstance(details, aio.ClientCallDetails)
                assert isinstance(details, triple_py.ClientCallDetails)
                return await continuation(details, request)
        assert isinstance(Short(), aio.ClientInterceptor)
        async with aio.insecure_channel(server.address, interceptors=[Short()]) as ch:
            deferred = ch.unary_unary(UNARY)(b"d", timeout=5)
            assert isinstance(deferred, aio.UnaryUnaryCall)
            assert not isinstance(deferred, aio.StreamStreamCall)
            ended = asyncio.Event()
            deferred.add_done_callback(lambda _c: ended.set())
            assert await deferred == b"d"
            await asyncio.wait_for(ended.wait(), 5)

    asyncio.run(asyncio.wait_for(main(), 30))


def test_aio_metadata_is_a_multimap_of_pairs() -> None:
    md = triple_py.aio.Metadata(("a", "1"), ("b", b"2"), ("a", "3"))
    assert list(md) == [("a", "1"), ("a", "3"), ("b", b"2")]
    assert len(md) == 3 and md["a"] == "1" and md.get_all("a") == ["1", "3"]
    assert "a" in md and "z" not in md and md.get_all("z") == []
    md["a"] = "x"
    del md["b"]
    assert md == (("a", "x"), ("a", "3"))
    md.set_all("c", ["5", "6"])
    md.delete_all("a")
    assert md == triple_py.aio.Metadata(("c", "5"), ("c", "6"))
    assert md + (("d", "7"),) == (("c", "5"), ("c", "6"), ("d", "7"))
    assert triple_py.aio.Metadata.from_tuple(None) == ()
    with pytest.raises(KeyError):
        md["a"]


# A client written for grpcio, annotated as grpcio's users annotate: it must type-check.
GOOD = '''
from __future__ import annotations

from typing import Iterator, Optional

import triple_py as grpc
import triple_py.aio


def echo(ch: grpc.Channel) -> grpc.UnaryUnaryMultiCallable:
    return ch.unary_unary("/benchmark.BenchmarkService/UnaryCall")


def typed(ch: grpc.Channel) -> grpc.UnaryUnaryMultiCallable[bytes, bytes]:
    return ch.unary_unary("/benchmark.BenchmarkService/UnaryCall")


def shapes(ch: grpc.Channel) -> tuple[grpc.UnaryStreamMultiCallable,
                                      grpc.StreamUnaryMultiCallable,
                                      grpc.StreamStreamMultiCallable]:
    return ch.unary_stream("/s/A"), ch.stream_unary("/s/B"), ch.stream_stream("/s/C")


def start(mc: grpc.UnaryUnaryMultiCallable) -> grpc.Future:
    fut: grpc.Future = mc.future(b"x", timeout=1.0)
    call: grpc.Call = mc.future(b"x")
    ctx: grpc.RpcContext = call
    added: bool = ctx.add_callback(lambda: None)
    left: Optional[float] = call.time_remaining()
    code: grpc.StatusCode = call.code()
    print(added, left, code, call.details(), call.initial_metadata())
    return fut


def blocking(mc: grpc.UnaryUnaryMultiCallable[bytes, bytes]) -> bytes:
    response, call = mc.with_call(b"x", metadata=(("k", "v"),))
    finished: grpc.Call = call
    print(finished.trailing_metadata())
    return response


def responses(mc: grpc.UnaryStreamMultiCallable) -> list[bytes]:
    it = mc(b"x")
    call: grpc.Call = it
    fut: grpc.Future = it
    out = [r for r in it]
    print(call.cancel(), fut.done())
    return out


def requests() -> Iterator[bytes]:
    yield b"a"


def upload(mc: grpc.StreamUnaryMultiCallable) -> grpc.Future:
    return mc.future(requests())


def watch(ch: grpc.Channel) -> None:
    def on_state(state: grpc.ChannelConnectivity) -> None:
        print(state is grpc.ChannelConnectivity.READY)
    ch.subscribe(on_state, try_to_connect=True)
    ch.unsubscribe(on_state)
    ready: grpc.Future = grpc.channel_ready_future(ch)
    ready.result(timeout=1)


class Plugin(grpc.AuthMetadataPlugin):
    def __call__(self, context: grpc.AuthMetadataContext,
                 callback: grpc.AuthMetadataPluginCallback) -> None:
        callback((("x-url", context.service_url), ("x-m", context.method_name)), None)


class Logger(grpc.UnaryUnaryClientInterceptor):
    def intercept_unary_unary(self, continuation, client_call_details: grpc.ClientCallDetails,
                              request):
        print(client_call_details.method, client_call_details.timeout)
        return continuation(client_call_details, request)


def connect(target: str) -> grpc.Channel:
    creds: grpc.ChannelCredentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(), grpc.metadata_call_credentials(Plugin()))
    token: grpc.CallCredentials = grpc.access_token_call_credentials("t")
    print(token, grpc.Compression.Gzip, grpc.LocalConnectionType.LOCAL_TCP)
    plain: grpc.Channel = grpc.insecure_channel(target)
    intercepted: grpc.Channel = grpc.intercept_channel(plain, Logger())
    intercepted.close()
    with grpc.secure_channel(target, creds) as ch:
        return ch


def failure(mc: grpc.UnaryUnaryMultiCallable) -> Optional[grpc.StatusCode]:
    try:
        mc(b"x")
    except grpc.RpcError as err:
        if isinstance(err, grpc.Call):
            return err.code()
    except (grpc.FutureTimeoutError, grpc.FutureCancelledError):
        pass
    return None


async def aio_client(target: str) -> bytes:
    async with triple_py.aio.insecure_channel(target) as ch:
        channel: triple_py.aio.Channel = ch
        state: grpc.ChannelConnectivity = channel.get_state()
        await channel.channel_ready()
        mc: triple_py.aio.UnaryUnaryMultiCallable = channel.unary_unary("/s/U")
        call: triple_py.aio.UnaryUnaryCall = mc(b"x", metadata=triple_py.aio.Metadata(("k", "v")))
        base: triple_py.aio.Call = call
        ctx: triple_py.aio.RpcContext = call
        ctx.add_done_callback(lambda c: None)
        code: grpc.StatusCode = await base.code()
        print(state, code, await base.details(), await base.initial_metadata())
        stream: triple_py.aio.UnaryStreamCall = channel.unary_stream("/s/S")(b"x")
        async for item in stream:
            print(item)
        bidi: triple_py.aio.StreamStreamCall = channel.stream_stream("/s/B")()
        await bidi.write(b"x")
        await bidi.done_writing()
        print(await bidi.read() is triple_py.aio.EOF)
        upload: triple_py.aio.StreamUnaryCall = channel.stream_unary("/s/C")()
        await upload.done_writing()
        try:
            return await call
        except triple_py.aio.AioRpcError as err:
            print(err.code(), err.details())
            raise


class AioLogger(triple_py.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, details: triple_py.aio.ClientCallDetails,
                                    request):
        print(details.method)
        return await continuation(details, request)
'''

# Misuses the types must catch (so the check above is not vacuous: nothing is Any).
BAD = '''
import triple_py as grpc


def f(ch: grpc.Channel) -> grpc.StreamStreamMultiCallable:
    return ch.unary_unary("/s/M")


def g(mc: grpc.UnaryUnaryMultiCallable) -> None:
    mc.future(b"x").no_such_method()


def h(call: grpc.Call) -> grpc.Future:
    return call
'''


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    """mypy (Debian's, tools/bootstrap.sh) on one client module, finding triple_py as
    it is importable: an installed package from its site-packages, a checkout (editable
    install, whose import hook mypy cannot follow) from the directory holding it."""
    pytest.importorskip("mypy")
    spec = importlib.util.find_spec("triple_py")
    assert spec is not None and spec.origin is not None
    holder = Path(spec.origin).resolve().parents[1]
    installed = str(holder) in {str(Path(p).resolve()) for p in site.getsitepackages()}
    module = tmp_path / "grpc_style_client.py"
    module.write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--python-version", "3.11",
         "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(module)],
        cwd=tmp_path if installed else holder, env=env, capture_output=True, text=True,
        timeout=300)


def test_a_grpcio_annotated_client_type_checks(tmp_path: Path) -> None:
    good = _mypy(tmp_path, GOOD)
    assert good.returncode == 0 and not good.stdout.strip(), good.stdout + good.stderr
    bad = _mypy(tmp_path, BAD)
    errors = [line for line in bad.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["6", "10", "14"], bad.stdout
