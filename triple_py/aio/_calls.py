"""Awaitable calls of ``triple_py.aio``, shaped like ``grpc.aio``'s."""
from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Callable, Generator, Optional

from .. import _triple
from .._triple import Wakeup as _Wakeup
from .._codec import deserialize, reads_in_place, serialize
from .._errors import RpcError
from .._replay import KeptRequests
from .._status import StatusCode, code_from_int
from . import _types as abstract

Serializer = Optional[Callable[[Any], bytes]]
Deserializer = Optional[Callable[[bytes], Any]]

STREAM_EVENTS = (_triple.EV_DONE | _triple.EV_MESSAGE | _triple.EV_HEADERS
                 | _triple.EV_WRITABLE)
_LOG = logging.getLogger("triple_py")


class _EOFType:
    """The end-of-stream marker returned by ``read()`` (``grpc.aio.EOF``)."""

    def __repr__(self) -> str:
        return "<triple_py.aio.EOF>"

    def __bool__(self) -> bool:
        return False


EOF = _EOFType()


class AioRpcError(RpcError):
    """An RPC ended with a non-OK status (``grpc.aio.AioRpcError``)."""

    def __init__(self, code: StatusCode, initial_metadata: Any, trailing_metadata: Any,
                 details: Optional[str] = None,
                 debug_error_string: Optional[str] = None) -> None:
        super().__init__(code, details)
        self._code = code
        self._details = details
        self._initial_metadata = initial_metadata
        self._trailing_metadata = trailing_metadata
        self._debug = debug_error_string or f"{code.name}: {details}"

    def code(self) -> StatusCode:
        """The status code."""
        return self._code

    def details(self) -> Optional[str]:
        """The status message."""
        return self._details

    def initial_metadata(self) -> Any:
        """Response headers."""
        return self._initial_metadata

    def trailing_metadata(self) -> Any:
        """Response trailers."""
        return self._trailing_metadata

    def debug_error_string(self) -> str:
        """One line for logs."""
        return self._debug

    def __str__(self) -> str:
        return (f"<AioRpcError of RPC that terminated with:\n\tstatus = {self._code}\n"
                f"\tdetails = \"{self._details}\"\n>")


def local_error(code: StatusCode, details: str) -> AioRpcError:
    """An AioRpcError made on this side (a serializer failed): no metadata."""
    return AioRpcError(code, (), (), details)


def error_of(core_call: Any) -> AioRpcError:
    """The AioRpcError describing a finished, failed core call."""
    initial, trailing = core_call.metadata()
    return AioRpcError(code_from_int(core_call.code()), initial, trailing,
                       core_call.details())


class _Call(abstract.Call):
    """State and waiting shared by every aio call: one core call, its events."""

    # Class defaults, stored on an instance only when they change: a unary call (no
    # serializer of its own) is made with four stores.
    _serialize: Serializer = None
    _channel_gone = False  # the channel closed while the call waited
    _cancelled = False  # cancel() was called and took effect

    def __init__(self, reactor: Any, core_call: Any, serializer: Serializer,
                 deserializer: Deserializer) -> None:
        self._reactor = reactor
        self._core = core_call
        if serializer is not None:
            self._serialize = serializer
        self._deserialize = deserializer
        self._waiters: list[asyncio.Future] = []
        reactor._calls[id(core_call)] = self  # reactor.register, without its frame

    # -- events from the reactor ------------------------------------------------
    def _on_event(self) -> None:
        waiters, self._waiters = self._waiters, []
        # The done callbacks first: a waiter's task may run inside set_result (Wakeup).
        if self._done_callbacks is not None:
            self._ended_attempt(bool(waiters))
        for w in waiters:
            if not w.done():
                w.set_result(None)

    # -- add_done_callback ------------------------------------------------------
    # The callbacks waiting for the end of the call, and whether they ran (class
    # attributes: a call nobody adds a callback to costs one test per event).
    _done_callbacks: Optional[list[Callable[[Any], None]]] = None
    _callbacks_ran = False

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        """Calls ``callback(self)`` once the call has ended (at once if it has), on the
        event loop."""
        if self._callbacks_ran or (self._core.done() and self._last_attempt(False)):
            callback(self)
            return
        if self._done_callbacks is None:
            self._done_callbacks = []
        self._done_callbacks.append(callback)

    def _last_attempt(self, awaited: bool) -> bool:
        """True when the ended current attempt is the call's last: no retry may
        follow it (one follows only while a task awaits the call)."""
        return (not awaited or self._owner is None or self._cancelled
                or self._core.code() == 0)

    def _ended_attempt(self, awaited: bool) -> None:
        if self._core.done() and self._last_attempt(awaited):
            self._run_done_callbacks()

    def _run_done_callbacks(self) -> None:
        callbacks, self._done_callbacks = self._done_callbacks or [], None
        self._callbacks_ran = True
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # logged; the next callbacks and the loop carry on
                _LOG.exception("Exception calling done-callback %r", callback)

    def _on_channel_closed(self) -> None:
        self._channel_gone = True
        self._on_event()

    async def _next_event(self, cancel_rpc: bool = False) -> None:
        """Waits for the next event.  With ``cancel_rpc``, cancelling the waiting task
        cancels the RPC (RST_STREAM): that is how awaiting the call, reading and
        writing behave in grpc.aio; waits for metadata or status leave it running."""
        if self._channel_gone:
            raise asyncio.InvalidStateError("the channel was closed")
        fut = self._reactor._loop.create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if cancel_rpc:
                self.cancel()
            raise

    # Retries (_retry): set on calls of a channel with grpc.enable_retries; the owner (the
    # multi-callable) makes attempts: owner._next_attempt(again, timeout_left) and
    # owner._retries_for(first).  Class attributes: a call without them costs nothing.
    _owner: Any = None
    _again: tuple = ()
    _retry_state: Any = None  # the call's _retry.Retries, from its first failure on
    _kept: Any = None  # the _replay.KeptRequests of a request stream with retries
    _switch: Optional[asyncio.Future] = None  # set while the next attempt is being started

    async def _next_attempt_after(self, failed: Any) -> bool:
        """The attempt ``failed`` ended with an error: True once another attempt runs
        (started here, after ``Retries``'s delay, or by another task of this call),
        False when the call ends with ``failed``."""
        while self._switch is not None:
            await asyncio.shield(self._switch)
        if self._core is not failed:
            return True
        if self._owner is None or self._cancelled:
            return False
        retries = self._retry_state
        if retries is None:
            retries = self._retry_state = self._owner._retries_for(failed)
        delay = retries.delay(failed)
        if delay is None:
            self._commit()
            return False
        switch = self._switch = self._reactor.loop.create_future()
        try:
            if delay:
                await asyncio.sleep(delay)
            if self._cancelled:
                return False
            self._core = self._owner._next_attempt(self._again, retries.timeout_left())
            self._reactor.register(self._core, self)
            await self._replay()
        finally:
            self._switch = None
            switch.set_result(None)
        return True

    def _commit(self) -> None:
        """No further attempt: the call ends with its current one (or its response
        began)."""
        self._owner = None
        if self._done_callbacks is not None and self._core.done():
            self._run_done_callbacks()

    async def _replay(self) -> None:
        """Sends a new attempt what the failed one was sent (request streams)."""

    def _ended_ok(self) -> None:
        """The call ended OK: the retry throttle is told, once."""
        owner = self._owner
        if owner is not None:
            if owner._throttle is not None:
                owner._throttle.on_success()
            self._commit()

    async def _wait_done(self, cancel_rpc: bool = False) -> None:
        while not self._core.done():
            await self._next_event(cancel_rpc)

    def _raise_if_cancelled(self) -> None:
        """grpc.aio raises CancelledError from a call the application cancelled."""
        if self._cancelled:
            raise asyncio.CancelledError()

    # -- grpc.aio.Call ----------------------------------------------------------
    def cancel(self) -> bool:
        """Cancels the RPC; True if this cancelled a running call."""
        if self._core.cancel():
            self._cancelled = True
            return True
        return False

    def cancelled(self) -> bool:
        """True if the RPC ended CANCELLED."""
        return self._cancelled or (
            self._core.done() and self._core.code() == StatusCode.CANCELLED.value[0])

    def done(self) -> bool:
        """True once the RPC has ended."""
        return self._core.done()

    def time_remaining(self) -> Optional[float]:
        """Not tracked in Python: the C core enforces the deadline."""
        return None

    async def initial_metadata(self) -> Any:
        """Response headers, as soon as they arrive."""
        while True:
            md = self._core.initial_metadata(0)
            if md is not None:
                return md
            await self._next_event()

    async def trailing_metadata(self) -> Any:
        """Response trailers (waits for the end of the RPC)."""
        await self._wait_done()
        return self._core.metadata()[1]

    async def code(self) -> StatusCode:
        """The final status code (waits for the end of the RPC)."""
        await self._wait_done()
        return code_from_int(self._core.code())

    async def details(self) -> str:
        """The final status message (waits for the end of the RPC)."""
        await self._wait_done()
        return self._core.details()

    async def wait_for_connection(self) -> None:
        """Returns once headers arrived or the call ended."""
        await self.initial_metadata()


class UnaryResponseCall(_Call):
    """A call with one response: awaiting it gives the response or raises."""

    _UNSET = object()
    _response: Any = _UNSET  # deserialized once: the same object every await
    # The deserializer reads the response in place (see _codec.reads_in_place): set
    # by the multi-callable, which asks once.
    _in_place = False

    def __await__(self) -> Generator[Any, None, Any]:
        """Awaiting the call gives the response or raises.  The common case (one
        attempt, ended OK) runs in this one generator frame: the task waits on the
        future the reactor completes, then takes the response; anything else (a
        retry, a failure, a cancel, a closed channel) goes through ``_result``."""
        core = self._core
        if not core.done() and not self._channel_gone:
            # Not an asyncio.Future: the reactor steps this task at once (see
            # csrc/binding/wakeup_type.c).
            fut = _Wakeup(self._reactor._loop)
            self._waiters.append(fut)
            try:
                fut._asyncio_future_blocking = True
                yield fut  # a cancelled task's step raises CancelledError here
            except asyncio.CancelledError:
                self.cancel()  # as grpc.aio: cancelling the awaiting task cancels the RPC
                raise
        if core is self._core and core.done() and not self._cancelled and \
                core.code() == 0:
            self._settle_callbacks()
            return self._ok_response()
        return (yield from self._result().__await__())

    def _settle_callbacks(self) -> None:
        """The call ended before the reactor told it (it was done when awaited): its
        done callbacks run now, before the awaiting task goes on, as they would have
        from the reactor.  They run once either way."""
        if self._done_callbacks is not None:
            self._ended_attempt(True)

    async def _result(self) -> Any:
        await self._wait_done(cancel_rpc=True)
        self._raise_if_cancelled()
        self._settle_callbacks()
        if self._core.code() != 0:
            while self._owner is not None and await self._next_attempt_after(self._core):
                await self._wait_done(cancel_rpc=True)
                self._raise_if_cancelled()
                self._settle_callbacks()
                if self._core.code() == 0:
                    break
            if self._core.code() != 0:
                raise error_of(self._core)
        return self._ok_response()

    def _ok_response(self) -> Any:
        """The response of the call, ended OK: deserialized once (the same object
        every await); the retry throttle is told."""
        owner = self._owner
        if owner is not None and (owner._throttle is not None or self._kept is not None):
            self._ended_ok()  # nothing to do for a plain unary call without a throttle
        response = self._response
        if response is self._UNSET:  # deserialized once, the same object every await
            core, codec = self._core, self._deserialize
            if codec is None:
                response = self._response = core.response()
                return response
            # A protobuf parser reads the response in place: no copy into bytes.
            in_place = self._in_place or reads_in_place(codec)
            raw = memoryview(core) if in_place else core.response()
            response = self._response = deserialize(codec, raw, local_error)
        return response




class StreamResponseMixin(_Call):
    """Reading a response stream: ``await read()`` and ``async for``."""

    async def read(self) -> Any:
        """The next response, or ``EOF`` at the end; raises AioRpcError on failure."""
        while True:
            self._raise_if_cancelled()
            core = self._core
            raw = core.read_nowait()
            if raw is False:
                # Requests written while this read waits go at once when nothing else
                # is in flight (Nagle's rule, as during a sync read): a ping-pong
                # never waits for the coalescing writer's timer.
                core.reader_waits(True)
                try:
                    await self._next_event(cancel_rpc=True)
                finally:
                    core.reader_waits(False)
                continue
            if raw is None:
                if self._core.code() != 0:
                    if self._owner is not None and \
                            await self._next_attempt_after(self._core):
                        continue
                    raise error_of(self._core)
                self._ended_ok()
                return EOF
            if self._owner is not None:  # a response message commits the call (A6)
                self._commit()
            try:
                return deserialize(self._deserialize, raw, local_error)
            except AioRpcError:
                self._core.cancel(StatusCode.INTERNAL.value[0])  # as grpc.aio: the RPC ends
                raise

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        while True:
            item = await self.read()
            if item is EOF:
                return
            yield item


class StreamRequestMixin(_Call):
    """Writing a request stream: ``await write()`` and ``await done_writing()``."""

    _half_closed = False

    async def write(self, request: Any) -> None:
        """Queues one request (coalescing writer); waits while the peer is behind.

        After ``done_writing()`` it raises ``asyncio.InvalidStateError``, as grpc.aio does.
        """
        if self._half_closed:
            raise asyncio.InvalidStateError("RPC is half closed after calling done_writing")
        payload = serialize(self._serialize, request, local_error)
        while self._switch is not None:  # the next attempt is being started
            await asyncio.shield(self._switch)
        core = self._core
        if self._kept is not None:
            self._keep(payload)
        while not core.can_write(len(payload)):
            if core.done():
                break
            await self._next_event(cancel_rpc=True)
            if self._core is not core:  # a new attempt was sent this request
                return
        if self._core is not core:
            return
        if core.write(payload):
            return
        if self._owner is not None and await self._next_attempt_after(core):
            return  # the new attempt was sent this request
        raise error_of(core) if core.code() != 0 else \
            asyncio.InvalidStateError("the RPC has already finished")

    async def done_writing(self) -> None:
        """Flushes and half-closes the request stream."""
        while self._switch is not None:
            await asyncio.shield(self._switch)
        while not self._core.can_write(0) and not self._core.done():
            await self._next_event(cancel_rpc=True)
        self._half_closed = True
        self._core.done_writing()

    # -- retries: the requests sent, kept for the next attempt (see _replay) ------
    # _kept (on _Call): None when not kept (no retries, or committed)

    def _keep_requests(self, per_call_limit: int, budget: Any) -> None:
        """Keeps the requests from now on, for retries."""
        self._kept = KeptRequests(per_call_limit, budget)

    def _keep(self, payload: Any) -> None:
        if not self._kept.add(payload):
            self._commit()

    def _commit(self) -> None:
        super()._commit()
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.release()

    async def _replay(self) -> None:
        core = self._core
        for payload in list(self._kept.messages if self._kept is not None else ()):
            while not core.can_write(len(payload)):
                if core.done():
                    return
                await self._next_event(cancel_rpc=True)
            if not core.write(payload):
                return
        if self._half_closed:
            while not core.can_write(0) and not core.done():
                await self._next_event(cancel_rpc=True)
            core.done_writing()

    async def _consume(self, requests: Any) -> None:
        """Writes every request of a (sync or async) iterator, then half-closes."""
        try:
            if hasattr(requests, "__aiter__"):
                async for request in requests:
                    await self.write(request)
            else:
                for request in requests:
                    await self.write(request)
            await self.done_writing()
        except (RpcError, asyncio.InvalidStateError):
            return  # the RPC ended; its status says why
        except asyncio.CancelledError:
            raise
        except Exception:
            self._core.cancel(StatusCode.UNKNOWN.value[0])


class UnaryUnaryCall(UnaryResponseCall, abstract.UnaryUnaryCall):
    """``await stub.Method(request)``."""


class StreamedUnaryUnaryCall(StreamRequestMixin, UnaryUnaryCall):
    """A unary call sent through the client-streaming machinery
    (``triple.unary_fast_path`` False): its one request goes out from a task."""


class UnaryStreamCall(StreamResponseMixin, abstract.UnaryStreamCall):
    """A server stream: ``async for response in call``."""


class StreamUnaryCall(StreamRequestMixin, UnaryResponseCall, abstract.StreamUnaryCall):
    """A client stream: write requests, then ``await call`` for the response."""


class StreamStreamCall(StreamRequestMixin, StreamResponseMixin, abstract.StreamStreamCall):
    """A bidirectional stream."""
