"""``triple_py.aio`` channels and multi-callables (the ``grpc.aio`` shapes)."""
from __future__ import annotations

import asyncio
from typing import Any, Iterable, Optional, Sequence

from .. import _triple
from .._channel import Channel as _SyncChannel
from .._channel import _compression
from .._connectivity import ChannelConnectivity, state_of, wait_for_change, wait_ready_async
from .._credentials import ChannelCredentials
from ._calls import (STREAM_EVENTS, Deserializer, Serializer, StreamedUnaryUnaryCall,
                     StreamStreamCall, StreamUnaryCall, UnaryStreamCall, UnaryUnaryCall)
from ._reactor import Reactor

MetadataType = Optional[Sequence[tuple[str, Any]]]
Options = Optional[Iterable[tuple[str, Any]]]


def _not_on_aio(credentials: Any, wait_for_ready: Optional[bool]) -> None:
    """ValueError for what triple_py.aio does not do yet, rather than ignoring it."""
    if credentials is not None:
        raise ValueError("per-call credentials are not supported by triple_py.aio yet; "
                         "use the sync triple_py channel")
    if wait_for_ready:
        raise ValueError("wait_for_ready=True is not supported by triple_py.aio yet; "
                         "await channel.channel_ready() first")


class _MultiCallable:
    def __init__(self, channel: "Channel", method: str, serializer: Serializer,
                 deserializer: Deserializer) -> None:
        self._channel = channel
        self._method = method
        self._serialize = serializer
        self._deserialize = deserializer

    def _start(self, request: Any, timeout: Optional[float], metadata: MetadataType,
               compression: Any, flags: int, events: int) -> Any:
        core = self._channel._sync._core
        payload = None
        if request is not None:
            payload = self._serialize(request) if self._serialize else request
        return core.call(self._method, payload, timeout, metadata, False, events, flags,
                         _compression(compression))

    def _start_request_stream(self, call_class: type, flags: int, requests: Any,
                              serializer: Serializer, timeout: Optional[float],
                              metadata: MetadataType, compression: Any) -> Any:
        """Starts a call whose requests stream (``flags`` has CLIENT_STREAMING): a
        ``call_class`` call, fed from ``requests`` by a task when they are given."""
        core_call = self._start(None, timeout, metadata, compression, flags, STREAM_EVENTS)
        call = call_class(self._channel._reactor(), core_call, serializer, self._deserialize)
        self._channel._pump(call, requests)
        return call


class UnaryUnaryMultiCallable(_MultiCallable):
    """``await channel.unary_unary(path)(request)``."""

    def __init__(self, channel: "Channel", method: str, serializer: Serializer,
                 deserializer: Deserializer) -> None:
        super().__init__(channel, method, serializer, deserializer)
        self._fast_path = channel._sync._options.unary_fast_path  # fixed for the channel

    def __call__(self, request: Any, *, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> UnaryUnaryCall:
        if credentials is not None or wait_for_ready:
            _not_on_aio(credentials, wait_for_ready)
        if self._fast_path:
            core_call = self._start(request, timeout, metadata, compression, 0,
                                    _triple.EV_DONE)
            return UnaryUnaryCall(self._channel._reactor(), core_call, None, self._deserialize)
        # Serialized here, so that a bad request raises from this call as on the fast path.
        payload = self._serialize(request) if self._serialize else request
        memoryview(payload).release()  # TypeError unless bytes-like
        return self._start_request_stream(StreamedUnaryUnaryCall, _triple.CLIENT_STREAMING,
                                          (payload,), None, timeout, metadata, compression)


class UnaryStreamMultiCallable(_MultiCallable):
    """``async for r in channel.unary_stream(path)(request)``."""

    def __call__(self, request: Any, *, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> UnaryStreamCall:
        if credentials is not None or wait_for_ready:
            _not_on_aio(credentials, wait_for_ready)
        core_call = self._start(request, timeout, metadata, compression,
                                _triple.SERVER_STREAMING, STREAM_EVENTS)
        return UnaryStreamCall(self._channel._reactor(), core_call, None, self._deserialize)


class StreamUnaryMultiCallable(_MultiCallable):
    """Client streaming: write requests (or pass an iterator), then await the call."""

    def __call__(self, request_iterator: Any = None, *, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> StreamUnaryCall:
        if credentials is not None or wait_for_ready:
            _not_on_aio(credentials, wait_for_ready)
        return self._start_request_stream(StreamUnaryCall, _triple.CLIENT_STREAMING,
                                          request_iterator, self._serialize, timeout,
                                          metadata, compression)


class StreamStreamMultiCallable(_MultiCallable):
    """Bidirectional streaming: ``write``/``done_writing``/``read``, or an iterator."""

    def __call__(self, request_iterator: Any = None, *, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> StreamStreamCall:
        if credentials is not None or wait_for_ready:
            _not_on_aio(credentials, wait_for_ready)
        return self._start_request_stream(
            StreamStreamCall, _triple.CLIENT_STREAMING | _triple.SERVER_STREAMING,
            request_iterator, self._serialize, timeout, metadata, compression)


class Channel:
    """An asyncio channel (``grpc.aio.Channel``): async context manager, awaitable calls.

    It shares the C core of the sync channel; completions reach the running loop
    through one eventfd (``loop.add_reader``).
    """

    def __init__(self, target: str, options: Options = None, compression: Any = None,
                 wire: Optional[str] = None,
                 credentials: Optional[ChannelCredentials] = None) -> None:
        if credentials is not None and credentials.call_plugins:
            raise ValueError("call credentials (composite_channel_credentials) are not "
                             "supported by triple_py.aio yet")
        self._sync = _SyncChannel(target, options, compression, wire, credentials)
        self._reactor_obj: Optional[Reactor] = None
        self._pumps: set[asyncio.Task] = set()

    def _reactor(self) -> Reactor:
        loop = asyncio.get_running_loop()
        r = self._reactor_obj
        if r is None or r.loop is not loop:
            if r is not None:
                r.close()
            r = self._reactor_obj = Reactor(self._sync._core, loop)
        return r

    def _pump(self, call: Any, requests: Any) -> None:
        """Feeds a request iterator into ``call`` from a task of its own."""
        if requests is None:
            return
        task = asyncio.get_running_loop().create_task(call._consume(requests))
        self._pumps.add(task)
        task.add_done_callback(self._pumps.discard)

    def unary_unary(self, method: str, request_serializer: Serializer = None,
                    response_deserializer: Deserializer = None,
                    _registered_method: Any = None) -> UnaryUnaryMultiCallable:
        """A callable for the unary method ``method``."""
        return UnaryUnaryMultiCallable(self, method, request_serializer, response_deserializer)

    def unary_stream(self, method: str, request_serializer: Serializer = None,
                     response_deserializer: Deserializer = None,
                     _registered_method: Any = None) -> UnaryStreamMultiCallable:
        """A callable for the server-streaming method ``method``."""
        return UnaryStreamMultiCallable(self, method, request_serializer, response_deserializer)

    def stream_unary(self, method: str, request_serializer: Serializer = None,
                     response_deserializer: Deserializer = None,
                     _registered_method: Any = None) -> StreamUnaryMultiCallable:
        """A callable for the client-streaming method ``method``."""
        return StreamUnaryMultiCallable(self, method, request_serializer, response_deserializer)

    def stream_stream(self, method: str, request_serializer: Serializer = None,
                      response_deserializer: Deserializer = None,
                      _registered_method: Any = None) -> StreamStreamMultiCallable:
        """A callable for the bidirectional-streaming method ``method``."""
        return StreamStreamMultiCallable(self, method, request_serializer, response_deserializer)

    def get_state(self, try_to_connect: bool = False) -> ChannelConnectivity:
        """The connectivity state now; ``try_to_connect`` connects an IDLE channel."""
        return state_of(self._sync._core, try_to_connect)

    async def wait_for_state_change(self, last_observed_state: ChannelConnectivity) -> None:
        """Returns once the state differs from ``last_observed_state``."""
        await wait_for_change(self._sync._core, last_observed_state)

    async def channel_ready(self) -> None:
        """Connects if needed and returns once the channel is READY."""
        await wait_ready_async(self._sync._core)

    def stats(self) -> dict[str, int]:
        """The channel's counters (see ``triple_py.Channel.stats``)."""
        return self._sync.stats()

    async def close(self, grace: Optional[float] = None) -> None:
        """Cancels pending calls (CANCELLED) and stops the I/O thread."""
        for task in list(self._pumps):
            task.cancel()
        self._sync.close()  # joins the I/O thread (GIL released, quick)
        # Deliver the CANCELLED completions to waiting coroutines.
        if self._reactor_obj is not None:
            self._reactor_obj._drain()
            self._reactor_obj.close()

    async def __aenter__(self) -> "Channel":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def insecure_channel(target: str, options: Options = None, compression: Any = None,
                     wire: Optional[str] = None) -> Channel:
    """A plaintext asyncio channel (``grpc.aio.insecure_channel``)."""
    return Channel(target, options, compression, wire)


def secure_channel(target: str, credentials: ChannelCredentials, options: Options = None,
                   compression: Any = None, wire: Optional[str] = None) -> Channel:
    """A TLS asyncio channel (``grpc.aio.secure_channel``)."""
    if not isinstance(credentials, ChannelCredentials):
        raise TypeError("credentials must come from ssl_channel_credentials()")
    return Channel(target, options, compression, wire, credentials)
