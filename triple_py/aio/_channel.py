"""``triple_py.aio`` channels and multi-callables (the ``grpc.aio`` shapes)."""
from __future__ import annotations

import asyncio
from typing import Any, Iterable, Optional, Sequence, Union

from .. import _triple
from .._channel import Channel as _SyncChannel
from .._channel import (_compression, _config_wait_for_ready, _method_settings,
                        _min_timeout, _queue_check)
from .._retry import Retries, deadline_of
from .._codec import reads_in_place, serialize
from .._connectivity import ChannelConnectivity, state_of, wait_for_change, wait_ready_async
from .._credentials import ChannelCredentials
from ._calls import (STREAM_EVENTS, Deserializer, Serializer, StreamedUnaryUnaryCall,
                     StreamStreamCall, StreamUnaryCall, UnaryStreamCall, UnaryUnaryCall,
                     local_error)
from ._deferred import (DEFERRED, KINDS, ClientCallDetails, DeferredCall,
                        check_interceptors, intercepted, prepared)
from ._reactor import Reactor
from . import _types as abstract

# (key, value) pairs, or a triple_py.aio.Metadata (which iterates as its pairs).
MetadataType = Optional[Union[abstract.Metadata, Sequence[tuple[str, Any]]]]
Options = Optional[Iterable[tuple[str, Any]]]
_EV_DONE = _triple.EV_DONE


class _MultiCallable:
    _SHAPE = ""  # the grpc.aio shape name, for the channel's interceptors

    def __init__(self, channel: "Channel", method: str, serializer: Serializer,
                 deserializer: Deserializer) -> None:
        self._channel = channel
        self._core = channel._sync.core_channel  # the C core's channel: fixed for the channel
        self._method = method
        self._serialize = serializer
        self._deserialize = deserializer
        # Interceptors or call credentials on the channel: every call is deferred.
        self._interceptors = channel._interceptors_of(self._SHAPE)
        self._deferred_always = bool(self._interceptors) or channel._sync.has_call_credentials
        # The service config's word on the method (fixed for the multi-callable).
        self._cfg_timeout, self._retries, self._retry_policy, self._throttle = \
            _method_settings(channel._sync, method)
        self._cfg_wait_for_ready = _config_wait_for_ready(channel._sync, method)
        self._queues = _queue_check(self._core)  # a balancer with no READY backend yet

    def _must_queue(self) -> bool:
        """True if a call started now would wait for a READY backend: it then
        waits on a helper thread first (see _deferred), not on the loop."""
        return self._queues is not None and self._queues()

    def __call__(self, request: Any = None, *, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None, compression: Any = None) -> Any:
        """Starts the call (for streaming requests, ``request`` is the iterator)."""
        if wait_for_ready is None:
            wait_for_ready = self._cfg_wait_for_ready
        if credentials is not None or wait_for_ready or self._deferred_always or \
                self._must_queue():
            return self._deferred(request, timeout, metadata, credentials, wait_for_ready,
                                  compression)
        return self._invoke(request, timeout, metadata, compression)

    def _invoke(self, request: Any, timeout: Optional[float], metadata: MetadataType,
                compression: Any) -> Any:
        raise NotImplementedError()

    def _deferred(self, request: Any, timeout: Optional[float], metadata: MetadataType,
                  credentials: Any, wait_for_ready: Optional[bool],
                  compression: Any) -> DeferredCall:
        """The call through the channel's interceptors, then its call credentials and
        wait for READY (see _deferred)."""
        def invoke(d: ClientCallDetails, req: Any) -> Any:
            target = self if d.method == self._method else type(self)(
                self._channel, d.method, self._serialize, self._deserialize)
            if d.credentials is None and not d.wait_for_ready and \
                    not self._channel._sync.has_call_credentials and not self._must_queue():
                return target._invoke(req, d.timeout, d.metadata, compression)

            async def start() -> Any:
                self._channel._reactor()  # turns the connection's IoLoop meanwhile
                t, m = await prepared(self._channel._sync, d.method, d.timeout, d.metadata,
                                      d.credentials, d.wait_for_ready)
                return target._invoke(req, t, m, compression)
            return DEFERRED[self._SHAPE](start())
        details = ClientCallDetails(self._method, timeout, metadata, credentials,
                                    wait_for_ready)
        if self._interceptors:
            return intercepted(self._interceptors, self._SHAPE, details, request,
                               invoke)
        return invoke(details, request)

    def _start(self, request: Any, timeout: Optional[float], metadata: MetadataType,
               compression: Any, flags: int, events: int) -> Any:
        payload = None
        if request is not None:
            payload = serialize(self._serialize, request, local_error)
        # A Metadata is read as its pairs, as any iterable of pairs is.
        return self._core.call(self._method, payload, timeout,
                               metadata,  # type: ignore[arg-type]
                               notify=events, flags=flags,
                               compression=_compression(compression))

    def _start_request_stream(self, call_class: type, flags: int, requests: Any,
                              serializer: Serializer, timeout: Optional[float],
                              metadata: MetadataType, compression: Any) -> Any:
        """Starts a call whose requests stream (``flags`` has CLIENT_STREAMING): a
        ``call_class`` call, fed from ``requests`` by a task when they are given."""
        if self._cfg_timeout is not None:
            timeout = _min_timeout(timeout, self._cfg_timeout)
        core_call = self._start(None, timeout, metadata, compression, flags, STREAM_EVENTS)
        call = call_class(self._channel._reactor(), core_call, serializer, self._deserialize)
        if self._retries:  # the requests are kept for the attempts that may follow
            call._owner, call._again = self, (None, metadata, compression, flags,
                                              STREAM_EVENTS)
            options = self._channel._sync.options
            call._keep_requests(options.per_rpc_retry_buffer_size,
                                self._channel._sync.retry_buffer_budget)
        self._channel._pump(call, requests)
        return call

    def _next_attempt(self, again: tuple, timeout: Optional[float]) -> Any:
        """Another attempt of a retried call (_calls._Call._next_attempt_after): ``again``
        is (request, metadata, compression, flags, events), ``timeout`` what is left of
        the deadline."""
        request, metadata, compression, flags, events = again
        return self._start(request, timeout, metadata, compression, flags, events)

    def _retries_for(self, first: Any) -> Retries:
        """The retry bookkeeping of a call whose first attempt was ``first``."""
        return Retries(self._retry_policy, self._throttle, deadline_of(first))


class UnaryUnaryMultiCallable(_MultiCallable, abstract.UnaryUnaryMultiCallable):
    """``await channel.unary_unary(path)(request)``."""

    _SHAPE = "unary_unary"

    def __init__(self, channel: "Channel", method: str, serializer: Serializer,
                 deserializer: Deserializer) -> None:
        super().__init__(channel, method, serializer, deserializer)
        self._fast_path = channel._sync.options.unary_fast_path  # fixed for the channel
        # Fixed too; a method whose service config says waitForReady never takes it.
        self._direct = (self._fast_path and not self._deferred_always
                        and not self._cfg_wait_for_ready)
        # The fast path with nothing to add to the request (no serializer, no configured
        # timeout): __call__ starts it itself.
        self._bare = self._direct and serializer is None and self._cfg_timeout is None
        self._in_place = deserializer is not None and reads_in_place(deserializer)

    def __call__(self, request: Any, *, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> UnaryUnaryCall:
        """``await`` it for the response."""
        if self._direct and credentials is None and not wait_for_ready and \
                (self._queues is None or not self._queues()):  # the fast path
            if self._bare and compression is None:  # _unary's work, with nothing to add
                reactor = self._channel._reactor_obj
                if reactor is None or not reactor.runs_here():
                    reactor = self._channel._reactor()
                return self._wrap(reactor, self._core.call(self._method, request, timeout,
                                                           metadata, notify=_EV_DONE),
                                  request, metadata, None)
            return self._unary(request, timeout, metadata, compression)
        return _MultiCallable.__call__(self, request, timeout=timeout, metadata=metadata,
                                       credentials=credentials, wait_for_ready=wait_for_ready,
                                       compression=compression)

    def _invoke(self, request: Any, timeout: Optional[float], metadata: MetadataType,
                compression: Any) -> Any:
        if self._fast_path:
            return self._unary(request, timeout, metadata, compression)
        # Serialized here, so that a bad request raises from this call as on the fast path.
        payload = serialize(self._serialize, request, local_error)
        memoryview(payload).release()  # TypeError unless bytes-like
        return self._start_request_stream(StreamedUnaryUnaryCall, _triple.CLIENT_STREAMING,
                                          (payload,), None, timeout, metadata, compression)


    def _unary(self, request: Any, timeout: Optional[float], metadata: MetadataType,
               compression: Any) -> UnaryUnaryCall:
        """A fast-path call, with its retries unless they are off (see _retry)."""
        if self._cfg_timeout is not None:
            timeout = _min_timeout(timeout, self._cfg_timeout)
        return self._wrap(self._channel._reactor(),
                          self._start(request, timeout, metadata, compression, 0, _EV_DONE),
                          request, metadata, compression)

    def _wrap(self, reactor: Reactor, core_call: Any, request: Any, metadata: MetadataType,
              compression: Any) -> UnaryUnaryCall:
        """The awaitable of a started fast-path call, with what its retries need."""
        call = UnaryUnaryCall(reactor, core_call, None, self._deserialize)
        call._in_place = self._in_place
        if self._retries:
            call._owner, call._again = self, (request, metadata, compression, 0, _EV_DONE)
        return call


class UnaryStreamMultiCallable(_MultiCallable, abstract.UnaryStreamMultiCallable):
    """``async for r in channel.unary_stream(path)(request)``."""

    _SHAPE = "unary_stream"

    def _invoke(self, request: Any, timeout: Optional[float], metadata: MetadataType,
                compression: Any) -> UnaryStreamCall:
        if self._cfg_timeout is not None:
            timeout = _min_timeout(timeout, self._cfg_timeout)
        core_call = self._start(request, timeout, metadata, compression,
                                _triple.SERVER_STREAMING, STREAM_EVENTS)
        call = UnaryStreamCall(self._channel._reactor(), core_call, None, self._deserialize)
        if self._retries:  # until its first message (see _calls.StreamResponseMixin.read)
            call._owner, call._again = self, (request, metadata, compression,
                                              _triple.SERVER_STREAMING, STREAM_EVENTS)
        return call


class StreamUnaryMultiCallable(_MultiCallable, abstract.StreamUnaryMultiCallable):
    """Client streaming: write requests (or pass an iterator), then await the call."""

    _SHAPE = "stream_unary"

    def _invoke(self, request: Any, timeout: Optional[float], metadata: MetadataType,
                compression: Any) -> StreamUnaryCall:
        return self._start_request_stream(StreamUnaryCall, _triple.CLIENT_STREAMING,
                                          request, self._serialize, timeout,
                                          metadata, compression)


class StreamStreamMultiCallable(_MultiCallable, abstract.StreamStreamMultiCallable):
    """Bidirectional streaming: ``write``/``done_writing``/``read``, or an iterator."""

    _SHAPE = "stream_stream"

    def _invoke(self, request: Any, timeout: Optional[float], metadata: MetadataType,
                compression: Any) -> StreamStreamCall:
        return self._start_request_stream(
            StreamStreamCall, _triple.CLIENT_STREAMING | _triple.SERVER_STREAMING,
            request, self._serialize, timeout, metadata, compression)


class Channel(abstract.Channel):
    """An asyncio channel (``grpc.aio.Channel``): async context manager, awaitable calls.

    It shares the C core of the sync channel; completions reach the running loop
    through one eventfd (``loop.add_reader``).  A channel serves one event loop at a
    time: used from a second loop while the first still runs (in another thread), a
    call raises RuntimeError at once, as grpc.aio does; once the first loop has
    stopped, the next loop takes the channel over.
    """

    def __init__(self, target: str, options: Options = None, compression: Any = None,
                 wire: Optional[str] = None,
                 credentials: Optional[ChannelCredentials] = None,
                 interceptors: Optional[Sequence[Any]] = None) -> None:
        self._interceptors = check_interceptors(interceptors)
        # Discovery (a resolver's first look-up) runs off the loop: see _balancer.
        self._sync = _SyncChannel(target, options, compression, wire, credentials,
                                  background_resolver=True, driven_io=True)
        self._reactor_obj: Optional[Reactor] = None
        self._pumps: set[asyncio.Task] = set()

    def _interceptors_of(self, shape: str) -> tuple[Any, ...]:
        """The channel's interceptors of one call shape, in order."""
        kind = KINDS[shape][0]
        return tuple(i for i in self._interceptors if isinstance(i, kind))

    def _reactor(self) -> Reactor:
        """The reactor of the event loop running this call.  When the channel's reactor
        belongs to the loop running on this thread (see ``Reactor.runs_here``) it is
        that one, with no ``asyncio.get_running_loop()`` (a getpid syscall per call)."""
        r = self._reactor_obj
        if r is not None and r.runs_here():
            return r
        loop = asyncio.get_running_loop()
        if r is None or r.loop is not loop:
            if r is not None and r.loop.is_running():
                raise RuntimeError("this triple_py.aio channel is in use by an event loop "
                                   "that is still running (in another thread); make one "
                                   "channel per event loop")
            if r is not None:
                r.close()
            r = self._reactor_obj = Reactor(self._sync.core_channel, loop,
                                            self._sync.io_loop)
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
        return state_of(self._sync.core_channel, try_to_connect)

    async def wait_for_state_change(self, last_observed_state: ChannelConnectivity) -> None:
        """Returns once the state differs from ``last_observed_state``."""
        self._reactor()  # it turns the connection's IoLoop, if any, while we wait
        await wait_for_change(self._sync.core_channel, last_observed_state)

    async def channel_ready(self) -> None:
        """Connects if needed and returns once the channel is READY."""
        self._reactor()  # as above
        await wait_ready_async(self._sync.core_channel)

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
                     wire: Optional[str] = None,
                     interceptors: Optional[Sequence[Any]] = None) -> Channel:
    """A plaintext asyncio channel (``grpc.aio.insecure_channel``); ``interceptors`` are
    triple_py.aio client interceptors, the first one first."""
    return Channel(target, options, compression, wire, interceptors=interceptors)


def secure_channel(target: str, credentials: ChannelCredentials, options: Options = None,
                   compression: Any = None, wire: Optional[str] = None,
                   interceptors: Optional[Sequence[Any]] = None) -> Channel:
    """A TLS asyncio channel (``grpc.aio.secure_channel``); see ``insecure_channel``."""
    if not isinstance(credentials, ChannelCredentials):
        raise TypeError("credentials must come from ssl_channel_credentials()")
    return Channel(target, options, compression, wire, credentials, interceptors)
