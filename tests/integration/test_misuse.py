"""The misuse suite (issue 20): what a hostile but ordinary user does, one probe each.

Every probe runs in a child process with a hard timeout, so a hang fails its test instead
of the run; the child asserts what it sees and exits 0.  The suite runs under the plain
build and under ASan (``make test-asan``: the children inherit its environment).  The
echo server is the test's own, on 127.0.0.1.
"""
from __future__ import annotations

import textwrap

import pytest

from _helpers import finished_child, start_child
from triple_py.testing import EchoServer

HARD_TIMEOUT = 60  # seconds: a probe still running then has hung

# What every probe starts with: the server address and the unary stub's method.
PRELUDE = textwrap.dedent("""\
    import os, sys, time
    import triple_py
    ADDR = sys.argv[1]
    UNARY = "/benchmark.BenchmarkService/UnaryCall"
    STREAM = "/benchmark.BenchmarkService/StreamCall"
    Code = triple_py.StatusCode
""")


@pytest.fixture(scope="module")
def server():
    with EchoServer() as srv:
        yield srv


def probe(server: EchoServer, *parts: str, timeout: float = HARD_TIMEOUT) -> str:
    """Runs PRELUDE and `parts` (each dedented on its own) in a child; fails the test if
    it hangs or fails.  Returns the child's stdout."""
    body = "".join(textwrap.dedent(part) for part in parts)
    child = start_child(PRELUDE + body, server.address, start_new_session=True)
    return finished_child(child, timeout, "probe")


# --- row 1 and 2: fork ------------------------------------------------------------------

FORK_CHILD = """
    def in_child(fn):
        '''Runs fn() in a forked child; the child's exit status must be 0.'''
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                fn()
                code = 0
            finally:
                sys.stdout.flush()
                if code:
                    os._exit(code)
            sys.exit(0)  # a normal exit: finalization deallocates inherited channels
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
"""


def test_fork_child_call_on_inherited_channel_fails_fast(server):
    """Row 1: the inherited channel answers UNAVAILABLE at once, never hangs; the parent's
    channel keeps working."""
    probe(server, FORK_CHILD, """
        ch = triple_py.insecure_channel(ADDR)
        stub = ch.unary_unary(UNARY)
        assert stub(b"x", timeout=5) == b"x"
        def child():
            started = time.monotonic()
            try:
                stub(b"y", timeout=5)
                raise AssertionError("a call on an inherited channel succeeded")
            except triple_py.RpcError as e:
                assert e.code() is Code.UNAVAILABLE, e
                assert "fork" in e.details(), e.details()
            assert time.monotonic() - started < 2
            fut = stub.future(b"z", timeout=5)
            assert fut.exception(timeout=5).code() is Code.UNAVAILABLE
            bidi = ch.stream_stream(STREAM)(iter([b"a"]), timeout=5)
            try:
                list(bidi)
                raise AssertionError("a stream on an inherited channel succeeded")
            except triple_py.RpcError as e:
                assert e.code() is Code.UNAVAILABLE, e
        in_child(child)
        assert stub(b"after", timeout=5) == b"after"
    """)


def test_fork_child_of_an_aio_channel_leaves_the_parents_connection_alone(server):
    """Row 1 for asyncio: the aio channel's connection runs on its event loop's thread (a
    driven IoLoop, whose epoll the child shares with the parent).  Parent and child run
    event loops at the same time after the fork: in the child a call on the inherited
    channel fails UNAVAILABLE at once, and while the parent's calls keep its connection
    busy, the child neither reads the parent's socket (every parent call gets its own
    answer) nor spins on its readiness (little CPU while it sleeps)."""
    probe(server, """
        import asyncio, triple_py.aio as aio
        ch = aio.insecure_channel(ADDR)
        stub = ch.unary_unary(UNARY)
        async def first():
            assert await stub(b"x", timeout=5) == b"x"
        asyncio.run(first())
        pid = os.fork()
        if pid == 0:
            async def child():
                assert ch._sync.io_loop.inherited
                started = time.monotonic()
                try:
                    await stub(b"y", timeout=5)
                    raise AssertionError("a call on an inherited channel succeeded")
                except aio.AioRpcError as e:
                    assert e.code() is Code.UNAVAILABLE, e
                    assert "fork" in e.details(), e.details()
                assert time.monotonic() - started < 2
                cpu = time.process_time()
                await asyncio.sleep(0.8)  # the parent's calls meanwhile
                assert time.process_time() - cpu < 0.3, time.process_time() - cpu
            code = 1
            try:
                asyncio.run(child())
                code = 0
            finally:
                sys.stdout.flush()
                os._exit(code)
        async def parent():
            assert not ch._sync.io_loop.inherited
            end = time.monotonic() + 1.0
            n = 0
            while time.monotonic() < end:
                payload = b"p%d" % n
                assert await stub(payload, timeout=5) == payload
                n += 1
                await asyncio.sleep(0.001)
            await ch.close()
        asyncio.run(parent())
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
    """)


def test_fork_child_own_channel_and_exit(server):
    """Row 2: the child's own channel works; closing the inherited one and exiting (with
    the inherited channel still referenced) return."""
    probe(server, FORK_CHILD, """
        ch = triple_py.insecure_channel(ADDR)
        keep = ch.unary_unary(UNARY)
        assert keep(b"x", timeout=5) == b"x"
        def own_then_close():
            with triple_py.insecure_channel(ADDR) as own:
                assert own.unary_unary(UNARY)(b"own", timeout=5) == b"own"
            ch.close()
        def own_then_exit():  # the inherited channel is dropped at interpreter exit
            own = triple_py.insecure_channel(ADDR)
            assert own.unary_unary(UNARY).future(b"f", timeout=5).result() == b"f"
        in_child(own_then_close)
        in_child(own_then_exit)
        assert keep(b"after", timeout=5) == b"after"
        ch.close()
    """)


def test_fork_child_with_calls_in_flight_at_the_fork(server):
    """Row 1, calls that were in flight when the parent forked: in the child, waiting on
    one raises RuntimeError at once instead of hanging, and the child still exits while
    it holds them (their I/O thread stayed in the parent, where they complete)."""
    probe(server, FORK_CHILD, """
        ch = triple_py.insecure_channel(ADDR)
        stub = ch.unary_unary(UNARY)
        assert stub(b"warm", timeout=5) == b"warm"
        slow = [("x-delay-ms", "1500")]
        fut = stub.future(b"in flight", timeout=10, metadata=slow)
        stream = ch.unary_stream(STREAM)(b"s", timeout=10, metadata=slow)
        def child():
            for wait in (lambda: fut.result(timeout=5), lambda: next(stream)):
                started = time.monotonic()
                try:
                    wait()
                    raise AssertionError("an inherited call completed in the child")
                except RuntimeError as e:
                    assert "fork" in str(e), e
                assert time.monotonic() - started < 2
            # fut and stream stay referenced: the exit deallocates them
        in_child(child)
        assert fut.result(timeout=10) == b"in flight"
        assert list(stream) == [b"s"]
        ch.close()
    """)


def test_fork_pool_on_inherited_stub(server):
    """Row 1 as multiprocessing meets it: a fork Pool's workers call through the parent's
    stub (UNAVAILABLE at once) or make their own channel (works); the pool shuts down."""
    probe(server, """
        import multiprocessing
        ch = triple_py.insecure_channel(ADDR)
        stub = ch.unary_unary(UNARY)
        stub(b"warm", timeout=5)
        def inherited(i):
            try:
                return stub(b"%d" % i, timeout=5)
            except triple_py.RpcError as e:
                return e.code().name
        def own(i):
            with triple_py.insecure_channel(ADDR) as c:
                return c.unary_unary(UNARY)(b"%d" % i, timeout=5)
        with multiprocessing.get_context("fork").Pool(2) as pool:
            assert pool.map(inherited, range(4)) == ["UNAVAILABLE"] * 4
            assert pool.map(own, range(4)) == [b"0", b"1", b"2", b"3"]
        assert stub(b"p", timeout=5) == b"p"
    """)


# --- row 5: a done-callback that raises ------------------------------------------------

def test_raising_done_callback_is_logged_and_later_callbacks_run(server):
    """Row 5: the exception is logged; the same future's next callback and every later
    future's callbacks still run, and no finished future is kept."""
    probe(server, """
        import io, logging, threading
        log = io.StringIO()
        logging.getLogger("triple_py").addHandler(logging.StreamHandler(log))
        ran = []
        def boom(fut):
            raise RuntimeError("callback bug")
        def add(fut, fn):
            try:  # a future already done runs fn at once, and its exception propagates
                fut.add_done_callback(fn)  # there, as in grpcio
            except RuntimeError:
                pass
        with triple_py.insecure_channel(ADDR) as ch:
            stub = ch.unary_unary(UNARY)
            stub(b"warm", timeout=5)
            for i in range(200):
                f = stub.future(b"%d" % i * 1000, timeout=5)
                add(f, boom)
                add(f, lambda f: ran.append(f.result()))
                f.result(timeout=5)
            deadline = time.monotonic() + 10
            while len(ran) < 200 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(ran) == 200, len(ran)
            assert "callback bug" in log.getvalue()
            assert not ch._dispatcher._pending
    """)


# --- row 6: channels dropped without close() ---------------------------------------------

def test_channels_dropped_without_close_release_threads_and_fds(server):
    """Row 6: 2,000 x (channel, future().result(), drop): threads and fds stay a handful
    (before: hundreds of threads alive at once)."""
    probe(server, """
        import gc
        gc.disable()  # the release must not depend on the cycle collector
        def counts():
            return len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd"))
        base_threads, base_fds = counts()
        peak_threads = peak_fds = 0
        started = time.monotonic()
        for i in range(2000):
            ch = triple_py.insecure_channel(ADDR)
            assert ch.unary_unary(UNARY).future(b"x", timeout=5).result() == b"x"
            del ch
            if i % 20 == 0:
                threads, fds = counts()
                peak_threads, peak_fds = max(peak_threads, threads), max(peak_fds, fds)
            if time.monotonic() - started > 40:
                break
        print(base_threads, base_fds, peak_threads, peak_fds, i)
        # A handful of channels (2 threads, 5 fds each) may still be on their way out on
        # a loaded machine; before the fix it was hundreds.
        assert peak_threads <= base_threads + 12, (base_threads, peak_threads)
        assert peak_fds <= base_fds + 32, (base_fds, peak_fds)
    """)


# --- row 10: serializers that raise ---------------------------------------------------------

def test_codec_exceptions_are_rpc_errors_internal(server):
    """Row 10: a raising serializer or deserializer is RpcError INTERNAL (grpcio's
    messages) with the exception as __cause__, on every shape, sync and aio."""
    probe(server, """
        import asyncio
        import triple_py.aio as aio
        def bad(_):
            raise ZeroDivisionError("codec bug")
        def check(e, what):
            assert isinstance(e, triple_py.RpcError), type(e)
            assert e.code() is Code.INTERNAL, e.code()
            assert e.details() == f"Exception {what}!", e.details()
            assert isinstance(e.__cause__, ZeroDivisionError), repr(e.__cause__)
        def expect(fn, what):
            try:
                fn()
            except triple_py.RpcError as e:
                check(e, what)
            else:
                raise AssertionError(f"no RpcError ({what})")
        ser, de = "serializing request", "deserializing response"
        with triple_py.insecure_channel(ADDR) as ch:
            unary = lambda **kw: ch.unary_unary(UNARY, **kw)
            expect(lambda: unary(request_serializer=bad)(b"x", timeout=5), ser)
            expect(lambda: unary(response_deserializer=bad)(b"x", timeout=5), de)
            expect(lambda: unary(response_deserializer=bad).with_call(b"x", timeout=5), de)
            expect(lambda: unary(request_serializer=bad).future(b"x", timeout=5).result(), ser)
            expect(lambda: unary(response_deserializer=bad).future(b"x", timeout=5).result(), de)
            expect(lambda: list(ch.unary_stream(STREAM, response_deserializer=bad)(
                b"x", timeout=5)), de)
            call = ch.stream_stream(STREAM, request_serializer=bad)(timeout=5)
            expect(lambda: call.write(b"x"), ser)
            call.cancel()
            expect(lambda: ch.stream_unary(STREAM, response_deserializer=bad)(
                iter([b"a"]), timeout=5), de)
            assert unary()(b"still", timeout=5) == b"still"
        async def main():
            async with aio.insecure_channel(ADDR) as ach:
                for kw, what in (({"request_serializer": bad}, ser),
                                 ({"response_deserializer": bad}, de)):
                    try:
                        await ach.unary_unary(UNARY, **kw)(b"x", timeout=5)
                    except triple_py.RpcError as e:
                        check(e, what)
                    else:
                        raise AssertionError("no AioRpcError")
                try:
                    async for _ in ach.unary_stream(STREAM, response_deserializer=bad)(
                            b"x", timeout=5):
                        pass
                except triple_py.RpcError as e:
                    check(e, de)
                else:
                    raise AssertionError("no AioRpcError (stream)")
        asyncio.run(asyncio.wait_for(main(), 30))
    """)


# --- row 11: compression values and Deflate ----------------------------------------------

def test_bad_compression_values_are_refused(server):
    """Row 11: values outside Compression are a ValueError, on the channel and per call."""
    probe(server, """
        Compression = triple_py.Compression
        for bad in (99, -5, 3, "gzip", 2.0, True):
            try:
                triple_py.insecure_channel(ADDR, compression=bad)
                raise AssertionError(f"channel compression={bad!r} accepted")
            except ValueError:
                pass
        with triple_py.insecure_channel(ADDR) as ch:
            stub = ch.unary_unary(UNARY)
            for bad in (99, -5):
                for call in (stub, stub.future, ch.unary_stream(STREAM)):
                    try:
                        call(b"x", timeout=5, compression=bad)
                        raise AssertionError(f"call compression={bad!r} accepted")
                    except ValueError:
                        pass
            assert stub(b"ok", timeout=5, compression=Compression.Gzip) == b"ok"
    """)


GRPCIO_PEER = """
    from concurrent import futures
    import grpc
    # A grpcio echo server of the probe's own (grpcio: the reference for every row).
    echo = lambda request, context: request
    stream_echo = lambda requests, context: (r for r in requests)
    handler = grpc.method_handlers_generic_handler("benchmark.BenchmarkService", {
        "UnaryCall": grpc.unary_unary_rpc_method_handler(echo),
        "StreamCall": grpc.stream_stream_rpc_method_handler(stream_echo)})
    srv = grpc.server(futures.ThreadPoolExecutor(2), handlers=[handler])
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
"""


def test_deflate_is_sent_compressed_and_understood(server):
    """Row 11: Compression.Deflate sends zlib-compressed messages that a grpcio server
    reads back (before: the bytes went out uncompressed), unary and streaming."""
    probe(server, GRPCIO_PEER, """
        from triple_py_testing.faults import FaultProxy
        payload = b"compressible " * 20000  # 260 kB
        try:
            with FaultProxy(("127.0.0.1", port)) as proxy:
                with triple_py.insecure_channel(proxy.address,
                                                compression=triple_py.Compression.Deflate) as ch:
                    assert ch.unary_unary(UNARY)(payload, timeout=10) == payload
                    got = list(ch.stream_stream(STREAM)(iter([payload, payload]), timeout=10))
                    assert got == [payload, payload]
                    per_call = ch.unary_unary(UNARY)(
                        payload, timeout=10, compression=triple_py.Compression.Deflate)
                    assert per_call == payload
                sent = proxy.stats()["bytes_to_target"]
            assert sent < len(payload), sent  # 4 messages of 260 kB in under 260 kB
        finally:
            srv.stop(None)
    """)


# --- row 9: numeric options ------------------------------------------------------------------

def test_numeric_options_are_range_checked(server):
    """Row 9: windows of 0 or 2**32 (which wrapped to 0 and hung every call), frame sizes
    and buffer sizes out of range, non-ints: ValueError naming the option."""
    probe(server, """
        BAD = [("triple.stream_window", 0), ("triple.stream_window", 2**32),
               ("triple.stream_window", 2**31), ("triple.connection_window", 0),
               ("triple.connection_window", 2**32), ("triple.max_frame_size", 2**32),
               ("triple.max_frame_size", 1000), ("triple.write_buffer_size", -1),
               ("triple.write_buffer_size", 2**32), ("triple.write_buffer_delay_us", -1),
               ("grpc.max_receive_message_length", -2), ("grpc.max_send_message_length", 2**64),
               ("triple.stream_window", 1.5), ("triple.stream_window", True)]
        for key, value in BAD:
            try:
                triple_py.insecure_channel(ADDR, options=[(key, value)])
                raise AssertionError(f"{key}={value!r} accepted")
            except ValueError as e:
                assert key in str(e), e
        edges = [("triple.stream_window", 2**31 - 1), ("triple.connection_window", 65_535),
                 ("grpc.max_receive_message_length", -1), ("triple.max_frame_size", 16_384)]
        with triple_py.insecure_channel(ADDR, options=edges) as ch:
            assert ch.unary_unary(UNARY)(b"edge", timeout=5) == b"edge"
    """)


# --- row 3: Ctrl-C in initial_metadata() and in a write held back by flow control -------------

SILENT_PEER = """
    import signal, socket, threading
    # A peer that accepts and then neither reads nor writes: no response headers ever come,
    # and once its windows and the socket buffers are full, writes are held back.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held = []
    threading.Thread(target=lambda: [held.append(listener.accept()) for _ in range(8)],
                     daemon=True).start()
    SILENT = "127.0.0.1:%d" % listener.getsockname()[1]

    def interrupted_within(fn, seconds=5.0):
        '''fn() must raise KeyboardInterrupt from a SIGINT sent 0.3 s into it.'''
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        started = time.monotonic()
        timer.start()
        try:
            fn()
            raise AssertionError("returned instead of being interrupted")
        except KeyboardInterrupt:
            pass
        finally:
            timer.cancel()
        assert time.monotonic() - started < seconds, time.monotonic() - started

    def fill(call):
        '''Writes until the peer's flow control holds writes back (bounded).'''
        chunk = b"x" * 65536
        for _ in range(10_000):
            call.write(chunk)
"""


def test_ctrl_c_interrupts_initial_metadata(server):
    probe(server, SILENT_PEER, """
        with triple_py.insecure_channel(SILENT) as ch:
            call = ch.stream_stream(STREAM)()
            interrupted_within(call.initial_metadata)
            assert call.code() is Code.CANCELLED
    """)


def test_ctrl_c_interrupts_a_write_held_by_flow_control(server):
    probe(server, SILENT_PEER, """
        with triple_py.insecure_channel(SILENT) as ch:
            call = ch.stream_stream(STREAM)()
            interrupted_within(lambda: fill(call))
            assert call.code() is Code.CANCELLED
    """)


def test_held_write_ends_at_the_deadline(server):
    """A write held back by flow control ends when the call's deadline passes: the call
    is DEADLINE_EXCEEDED and write() reports it."""
    probe(server, SILENT_PEER, """
        with triple_py.insecure_channel(SILENT) as ch:
            call = ch.stream_stream(STREAM)(timeout=1)
            started = time.monotonic()
            try:
                fill(call)
                raise AssertionError("10,000 writes of 64 KiB went to a peer that reads nothing")
            except triple_py.RpcError as e:
                assert e.code() is Code.DEADLINE_EXCEEDED, e
            assert time.monotonic() - started < 10
    """)


# --- row 8: metadata limits --------------------------------------------------------------

def test_metadata_limits_match_grpc(server):
    """Row 8: 51 (or 200) entries go out (before: INTERNAL "too many metadata entries"); a
    header list over the server's SETTINGS_MAX_HEADER_LIST_SIZE is RESOURCE_EXHAUSTED with
    a message, as grpcio gets from the server (before: UNAVAILABLE "The length of the frame
    is invalid"), and the connection carries on; the embedded server, whose limit is 64 KiB,
    takes 60,000 bytes."""
    probe(server, GRPCIO_PEER, """
        many = [("x-k%d" % i, "v") for i in range(51)]
        big = [("x-big", "a" * 65536)]
        try:
            with triple_py.insecure_channel("127.0.0.1:%d" % port) as ch:
                stub = ch.unary_unary(UNARY)
                assert stub(b"many", timeout=5, metadata=many) == b"many"
                for md in (big, [("x-b%d" % i, "a" * 7000) for i in range(10)]):
                    try:
                        stub(b"big", timeout=5, metadata=md)
                        raise AssertionError("64 KiB of metadata taken by grpcio's server")
                    except triple_py.RpcError as e:
                        assert e.code() is Code.RESOURCE_EXHAUSTED, e
                        assert "metadata" in e.details(), e.details()
                    assert stub(b"next", timeout=5) == b"next"
                connects = ch.stats()["connects"]
                assert connects == 1, connects
        finally:
            srv.stop(None)
        with triple_py.insecure_channel(ADDR) as ch:  # the embedded server's limit: 64 KiB
            stub = ch.unary_unary(UNARY)
            assert stub(b"x", timeout=5, metadata=[("x-k%d" % i, "v") for i in range(200)]) == b"x"
            assert stub(b"y", timeout=5, metadata=[("x-big", "a" * 60000)]) == b"y"
    """)


# --- row 4: one aio channel, two event loops -----------------------------------------------

def test_aio_channel_refuses_a_second_running_loop(server):
    """Row 4: while loop A (thread A) has a call pending on the channel, a call from loop B
    raises RuntimeError at once, and A's call still finishes; after A's loop ends, another
    loop may use the channel."""
    probe(server, """
        import asyncio, threading
        import triple_py.aio as aio
        ch = aio.insecure_channel(ADDR)
        started, release = threading.Event(), threading.Event()
        results = {}
        async def loop_a():
            stub = ch.unary_stream(STREAM)
            call = stub(b"a", timeout=10)
            started.set()
            while not release.is_set():
                await asyncio.sleep(0.01)
            results["a"] = [r async for r in call]
        thread = threading.Thread(target=lambda: asyncio.run(loop_a()))
        thread.start()
        assert started.wait(10)
        async def loop_b():
            try:
                await ch.unary_unary(UNARY)(b"b", timeout=5)
                raise AssertionError("a second running loop was accepted")
            except RuntimeError as e:
                assert "event loop" in str(e), e
        asyncio.run(asyncio.wait_for(loop_b(), 10))
        release.set()
        thread.join(20)
        assert not thread.is_alive()
        assert results["a"] == [b"a"], results
        async def after():
            assert await ch.unary_unary(UNARY)(b"c", timeout=5) == b"c"
            await ch.close()
        asyncio.run(asyncio.wait_for(after(), 10))
    """)
