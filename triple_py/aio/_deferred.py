"""Calls of ``triple_py.aio`` that start later: after their interceptors, call credentials
or ``wait_for_ready`` wait (grpc.aio's interceptors and call options).

A ``DeferredCall`` is returned at once, like every aio call; a task of the event loop
does what must come first and ends with the real call (or, from an interceptor, a call
of its own or a plain response).  Awaiting, iterating, reading, writing and the status
accessors wait for that task and then act on what it produced; ``cancel()`` stops the
task or cancels the call it started.  Calls without any of this never come here.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Awaitable, Callable, NamedTuple, Optional

from .._helper_threads import off_loop
from .._call_credentials import PluginFailure, plugin_metadata_async
from .._preflight import (EndedCall, call_plugins, must_wait, plugin_context, wait_to_start,
                          with_time_left)
from .._status import StatusCode, code_from_int
from .._types import ClientCallDetails as _BaseClientCallDetails
from ._calls import EOF, AioRpcError
from . import _types as abstract


class _Details(NamedTuple):
    method: str
    timeout: Optional[float]
    metadata: Any
    credentials: Any
    wait_for_ready: Optional[bool]


class ClientCallDetails(_Details, _BaseClientCallDetails):
    """What an aio interceptor sees of a call (grpc.aio's ``ClientCallDetails``, a
    ``triple_py.ClientCallDetails`` without ``compression``)."""

    __slots__ = ()


class UnaryUnaryClientInterceptor(abstract.ClientInterceptor):
    """grpc.aio's: ``async intercept_unary_unary(continuation, details, request)``
    returns the call (``await continuation(details, request)``) or a response."""

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any,
                                    request: Any) -> Any:
        raise NotImplementedError()


class UnaryStreamClientInterceptor(abstract.ClientInterceptor):
    """grpc.aio's: returns the call or an async iterator of responses."""

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any,
                                     request: Any) -> Any:
        raise NotImplementedError()


class StreamUnaryClientInterceptor(abstract.ClientInterceptor):
    """grpc.aio's: returns the call or a response."""

    async def intercept_stream_unary(self, continuation: Any, client_call_details: Any,
                                     request_iterator: Any) -> Any:
        raise NotImplementedError()


class StreamStreamClientInterceptor(abstract.ClientInterceptor):
    """grpc.aio's: returns the call or an async iterator of responses."""

    async def intercept_stream_stream(self, continuation: Any, client_call_details: Any,
                                      request_iterator: Any) -> Any:
        raise NotImplementedError()


KINDS = {"unary_unary": (UnaryUnaryClientInterceptor, "intercept_unary_unary"),
         "unary_stream": (UnaryStreamClientInterceptor, "intercept_unary_stream"),
         "stream_unary": (StreamUnaryClientInterceptor, "intercept_stream_unary"),
         "stream_stream": (StreamStreamClientInterceptor, "intercept_stream_stream")}


def check_interceptors(interceptors: Any) -> tuple[Any, ...]:
    """The interceptors as a tuple; TypeError for anything that is not one."""
    out = tuple(interceptors or ())
    kinds = tuple(kind for kind, _ in KINDS.values())
    for interceptor in out:
        if not isinstance(interceptor, kinds):
            raise TypeError("interceptors must be triple_py.aio UnaryUnaryClientInterceptor, "
                            "UnaryStreamClientInterceptor, StreamUnaryClientInterceptor or "
                            f"StreamStreamClientInterceptor, not {type(interceptor)!r}")
    return out


def _is_call(value: Any) -> bool:
    return isinstance(value, DeferredCall) or hasattr(value, "_on_event")


class DeferredCall(abstract.Call):
    """An aio call whose start is awaited (see the module)."""

    def __init__(self, start: Awaitable[Any]) -> None:
        self._task = asyncio.get_running_loop().create_task(start)
        self._cancelled = False

    async def _target(self) -> Any:
        return await asyncio.shield(self._task)

    # -- awaiting and streams ---------------------------------------------------
    def __await__(self):
        return self._response().__await__()

    async def _response(self) -> Any:
        try:
            target = await self._target()
        except asyncio.CancelledError:
            if not self._task.done():
                self.cancel()
            raise
        return await target if _is_call(target) else target

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        target = await self._target()
        async for item in target:
            yield item

    async def read(self) -> Any:
        """The next response, or EOF."""
        target = await self._target()
        if _is_call(target):
            return await target.read()
        return await target.__anext__() if hasattr(target, "__anext__") else EOF

    async def write(self, request: Any) -> None:
        """Writes one request of the started call."""
        await (await self._target()).write(request)

    async def done_writing(self) -> None:
        """Half-closes the started call's request stream."""
        await (await self._target()).done_writing()

    # -- grpc.aio.Call ----------------------------------------------------------
    def cancel(self) -> bool:
        """Cancels the start, or the call once started."""
        if not self._task.done():
            self._cancelled = True
            return self._task.cancel()
        if self._task.cancelled() or self._task.exception() is not None:
            return False
        target = self._task.result()
        return target.cancel() if _is_call(target) else False

    def cancelled(self) -> bool:
        """True if the call was cancelled."""
        if self._cancelled:
            return True
        target = self._finished_target()
        return bool(target is not None and _is_call(target) and target.cancelled())

    def _finished_target(self) -> Any:
        if not self._task.done() or self._task.cancelled() or self._task.exception():
            return None
        return self._task.result()

    def done(self) -> bool:
        """True once the call ended (or failed, or was cancelled, before it started)."""
        if not self._task.done():
            return self._cancelled
        target = self._finished_target()
        return not _is_call(target) or target.done()

    def time_remaining(self) -> Optional[float]:
        """Not tracked in Python."""
        return None

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        """Calls ``callback(self)`` on the loop once the call has ended (or failed
        before it started)."""
        def started(_task: Any) -> None:
            target = self._finished_target()
            if _is_call(target):
                target.add_done_callback(lambda _call: callback(self))
            else:
                callback(self)
        self._task.add_done_callback(started)

    async def _ask(self, name: str, ok: Any, error: Callable[[AioRpcError], Any]) -> Any:
        try:
            target = await self._target()
        except AioRpcError as err:
            return error(err)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self._task.cancelled() and (task is None or not task.cancelling()):
                return error(CANCELLED_BEFORE_START)  # cancel() before the call started
            raise
        if _is_call(target):
            return await getattr(target, name)()
        return ok

    async def initial_metadata(self) -> Any:
        """Response headers."""
        return await self._ask("initial_metadata", (), lambda e: e.initial_metadata())

    async def trailing_metadata(self) -> Any:
        """Response trailers."""
        return await self._ask("trailing_metadata", (), lambda e: e.trailing_metadata())

    async def code(self) -> StatusCode:
        """The final status code."""
        return await self._ask("code", StatusCode.OK, lambda e: e.code())

    async def details(self) -> Optional[str]:
        """The final status message."""
        return await self._ask("details", "", lambda e: e.details())

    async def wait_for_connection(self) -> None:
        """Returns once headers arrived or the call ended."""
        await self.initial_metadata()


#: What a call cancelled before it started answers (grpc.aio's words for a cancel).
CANCELLED_BEFORE_START = AioRpcError(StatusCode.CANCELLED, (), (),
                                     "Locally cancelled by application!")


class _DeferredUnaryUnary(DeferredCall, abstract.UnaryUnaryCall):
    """A deferred unary call: a ``UnaryUnaryCall``."""


class _DeferredUnaryStream(DeferredCall, abstract.UnaryStreamCall):
    """A deferred server-streaming call: a ``UnaryStreamCall``."""


class _DeferredStreamUnary(DeferredCall, abstract.StreamUnaryCall):
    """A deferred client-streaming call: a ``StreamUnaryCall``."""


class _DeferredStreamStream(DeferredCall, abstract.StreamStreamCall):
    """A deferred bidirectional call: a ``StreamStreamCall``."""


#: The DeferredCall class of each call shape (grpc.aio's shape names).
DEFERRED = {"unary_unary": _DeferredUnaryUnary, "unary_stream": _DeferredUnaryStream,
            "stream_unary": _DeferredStreamUnary, "stream_stream": _DeferredStreamStream}


def ended_error(ended: EndedCall) -> AioRpcError:
    """The AioRpcError of a call that failed before it started."""
    return AioRpcError(code_from_int(ended.code()), (), (), ended.details())


async def prepared(sync_channel: Any, method: str, timeout: Optional[float], metadata: Any,
                   credentials: Any, wait_for_ready: Optional[bool]) -> tuple[Any, Any]:
    """``(timeout left, metadata)`` after the wait for READY (or for a balancer's
    backend), run on a daemon helper thread, then the call credentials, whose plugins
    run on helper threads while the loop awaits their callbacks: the loop never blocks,
    and a cancelled call stops waiting at once, even for a plugin that never answers.
    Raises the AioRpcError they fail the call with."""
    deadline = None if timeout is None else time.monotonic() + timeout
    plugins = call_plugins(sync_channel, credentials)
    if isinstance(plugins, EndedCall):
        raise ended_error(plugins)
    if must_wait(sync_channel, wait_for_ready):
        ended = await off_loop(lambda: wait_to_start(sync_channel, deadline, wait_for_ready))
        if ended is not None:
            raise ended_error(ended)
    if plugins:
        try:
            added = await plugin_metadata_async(plugins, plugin_context(sync_channel, method),
                                                deadline)
        except PluginFailure as failure:
            raise AioRpcError(failure.code, (), (), failure.details) from None
        metadata = (*(metadata or ()), *added)
    outcome = with_time_left(deadline, timeout, metadata)
    if isinstance(outcome, EndedCall):
        raise ended_error(outcome)
    return outcome


def intercepted(interceptors: tuple[Any, ...], shape: str, details: ClientCallDetails,
                request: Any, invoke: Callable[[ClientCallDetails, Any], Any]) -> DeferredCall:
    """The call of shape ``shape`` ("unary_unary" ...) through ``interceptors`` (the first
    one first); ``invoke(details, request)`` starts the real call at the end of the
    chain."""
    hook = KINDS[shape][1]
    deferred = DEFERRED[shape]

    def link(index: int) -> Callable[[Any, Any], Awaitable[Any]]:
        async def continuation(new_details: Any, new_request: Any) -> Any:
            d = ClientCallDetails(*(getattr(new_details, f, getattr(details, f))
                                    for f in ClientCallDetails._fields))
            if index == len(interceptors):
                return invoke(d, new_request)
            return deferred(getattr(interceptors[index], hook)(link(index + 1), d,
                                                               new_request))
        return continuation
    return deferred(getattr(interceptors[0], hook)(link(1), details, request))
