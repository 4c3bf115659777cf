"""Channels and unary multi-callables with grpcio's API, over the C core."""
from __future__ import annotations

import ipaddress
import os
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Optional, Sequence

from . import _triple
from ._codec import deserialize, reads_in_place, serialize
from ._connectivity import ConnectivityWatcher, Subscriber
from ._credentials import ChannelCredentials, check_local, system_verify_locations
from ._deferred_future import DeferredFuture
from ._errors import CallResult, _InactiveRpcError
from ._future import CompletionDispatcher, UnaryFuture
from . import _types as abstract
from ._options import ChannelOptions
from ._pending_call import PendingCall
from ._preflight import EndedCall, prepare
from ._status import compression_value
from ._streams import StreamingCall, pump_requests, start_pump
from ._balancer import PICK_FIRST, Balancer
from ._resolver import Endpoint, ParsedTarget, parse_target, resolver_for, split_host_port
from .registry import with_service_key  # importing it registers zookeeper://
from ._resolver import static_endpoints
from ._retry import Retries, deadline_of
from ._replay import BufferBudget, ReplayingCall, retries_for
from ._service_config import RetryPolicy, RetryThrottle, ServiceConfig

Serializer = Optional[Callable[[Any], bytes]]
Deserializer = Optional[Callable[[bytes], Any]]
MetadataType = Optional[Sequence[tuple[str, Any]]]

# Every live core channel, for process-wide counters (see triple_py.stats()).
_live_cores: "weakref.WeakSet[Any]" = weakref.WeakSet()
_live_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A fresh lock in a forked child: another thread of the parent may have held it."""
    global _live_lock
    _live_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


# Futures ask for their completion (EV_DONE), except when the call ends inside call()
# itself (QUIET_START): a call refused at once (connection backoff, say) is done before
# future() returns and never goes through the completion thread.
_FUTURE_EVENTS = _triple.EV_DONE | _triple.QUIET_START


_STATIC_SCHEMES = ("ipv4", "ipv6", "unix", "unix-abstract")


def _min_timeout(timeout: Optional[float], limit: float) -> float:
    """The call's timeout capped by the service config's for its method."""
    return limit if timeout is None or timeout > limit else timeout


def _method_settings(channel: Any, method: str
                     ) -> tuple[Optional[float], bool, Optional[RetryPolicy],
                                Optional[RetryThrottle]]:
    """What the service config says about ``method``, for a multi-callable (sync or
    asyncio): its timeout (None: none), whether retries are on (grpc.enable_retries: the
    transparent ones too), its retry policy and the channel's retry throttle (None:
    none)."""
    config = channel._service_config.method(method)
    retries = bool(channel._options.enable_retries)
    policy = config.retry if retries else None
    return (config.timeout, retries, policy,
            channel._service_config.throttle if policy else None)


def _config_wait_for_ready(channel: Any, method: str) -> Optional[bool]:
    """The service config's ``waitForReady`` for ``method`` (None: not set).  As in
    grpcio, it applies to calls whose own ``wait_for_ready`` is None."""
    return channel._service_config.method(method).wait_for_ready


def _queue_check(core: Any) -> Optional[Callable[[], bool]]:
    """A round_robin balancer's ``must_queue`` (a call started now would wait for a
    READY backend); None for a core channel or pick_first, which never make a call
    wait."""
    return core.must_queue if getattr(core, "queues_calls", False) else None


def _compression(compression: Any) -> int:
    """The core's compression argument: -1 keeps the channel's default."""
    return -1 if compression is None else compression_value(compression)


class _MultiCallable:
    """What every multi-callable holds: the channel, the method and the codecs."""

    def __init__(self, channel: "Channel", method: str, serializer: Serializer,
                 deserializer: Deserializer) -> None:
        self._channel = channel
        self._core = channel._core
        self._method = method
        self._serialize = serializer
        self._deserialize = deserializer
        self._in_place = reads_in_place(deserializer)  # given the response without a copy
        self._has_plugins = bool(channel._call_plugins)  # fixed for the channel
        # The service config's word on the method (fixed for the multi-callable).
        self._cfg_timeout, self._retries, self._retry_policy, self._throttle = \
            _method_settings(channel, method)
        self._cfg_wait_for_ready = _config_wait_for_ready(channel, method)
        # No per-method timeout nor waitForReady: a plain call may skip both.
        self._plain = self._cfg_timeout is None and not self._cfg_wait_for_ready
        self._queues = _queue_check(self._core)

    def _waits(self, wait_for_ready: Optional[bool]) -> Optional[bool]:
        """The call's ``wait_for_ready``: its own, else the service config's."""
        return self._cfg_wait_for_ready if wait_for_ready is None else wait_for_ready

    def _core_call(self, payload: Any, timeout: Optional[float], metadata: MetadataType,
                   flags: int, compression: Any, credentials: Any,
                   wait_for_ready: Optional[bool], notify: int = 0,
                   defer: bool = False) -> Any:
        """Starts a call of this method in the core, after its call credentials and
        ``wait_for_ready`` (or the EndedCall they failed it with).  ``defer`` (a stream
        handed to the caller): those run on a helper thread and a PendingCall stands for
        the core call meanwhile, so that the caller may cancel it."""
        wait_for_ready = self._waits(wait_for_ready)
        if self._cfg_timeout is not None:
            timeout = _min_timeout(timeout, self._cfg_timeout)

        def start(timeout: Optional[float], metadata: MetadataType) -> Any:
            return self._core.call(self._method, payload, timeout, metadata, notify=notify,
                                   flags=flags, compression=_compression(compression))
        if credentials is not None or wait_for_ready or self._has_plugins:
            if defer:
                return PendingCall(lambda: self._preflight_then(
                    start, timeout, metadata, credentials, wait_for_ready), timeout)
            return self._preflight_then(start, timeout, metadata, credentials, wait_for_ready)
        return start(timeout, metadata)

    def _preflight_then(self, start: Callable[[Optional[float], MetadataType], Any],
                        timeout: Optional[float], metadata: MetadataType, credentials: Any,
                        wait_for_ready: Optional[bool]) -> Any:
        """``start(timeout left, metadata)`` once the call credentials and the wait for
        READY are done (see _preflight), or the EndedCall they failed the call with."""
        prepared = prepare(self._channel, self._method, timeout, metadata, credentials,
                           wait_for_ready)
        if isinstance(prepared, EndedCall):
            return prepared
        return start(*prepared)

    def _start_request_stream(self, timeout: Optional[float], metadata: MetadataType,
                              compression: Any, flags: int, credentials: Any,
                              wait_for_ready: Optional[bool], defer: bool = False) -> Any:
        """The first attempt of a call whose requests stream (``flags`` beside
        CLIENT_STREAMING): its core call, or with retries on a _replay.ReplayingCall
        that keeps the requests for the attempts that may follow (``defer``: see
        ``_core_call``)."""
        def start(timeout: Optional[float]) -> Any:
            return self._core_call(None, timeout, metadata, _triple.CLIENT_STREAMING | flags,
                                   compression, credentials, wait_for_ready, defer=defer)
        if not self._retries:
            return start(timeout)
        return ReplayingCall.begin(start, timeout,
                                   retries_for(self._retry_policy, self._throttle),
                                   self._channel._options, self._channel._retry_budget)

    def _start_client_stream(self, timeout: Optional[float], metadata: MetadataType,
                             compression: Any, notify: int = 0, flags: int = 0,
                             credentials: Any = None,
                             wait_for_ready: Optional[bool] = None) -> Any:
        """Starts a client-streaming call of this method; requests follow with write()."""
        return self._core_call(None, timeout, metadata, _triple.CLIENT_STREAMING | flags,
                               compression, credentials, wait_for_ready, notify)

    def _tracked(self, core_call: Any) -> UnaryFuture:
        """The UnaryFuture of a started call, its completion routed to it."""
        fut = UnaryFuture(core_call, self._deserialize)
        if core_call.notifying():
            self._channel._dispatcher.track(core_call, fut)
        return fut

    def _response(self, core_call: Any) -> Any:
        """The single response of a finished call, or its RpcError."""
        if core_call.code() != 0:
            raise _InactiveRpcError(core_call)
        raw = memoryview(core_call) if self._in_place else core_call.response()
        return deserialize(self._deserialize, raw)


class UnaryUnaryMultiCallable(_MultiCallable, abstract.UnaryUnaryMultiCallable):
    """Calls one unary method; made by ``Channel.unary_unary``."""

    def __init__(self, channel: "Channel", method: str, serializer: Serializer,
                 deserializer: Deserializer) -> None:
        super().__init__(channel, method, serializer, deserializer)
        self._fast_path = channel._options.unary_fast_path  # fixed for the channel
        # The fast path with nothing to do first (no channel call credentials): fixed too.
        self._direct = self._fast_path and not self._has_plugins
        # ... and nothing to do to the request (no serializer): __call__ starts it itself.
        self._bare = self._direct and serializer is None

    def _start(self, request: Any, timeout: Optional[float], metadata: MetadataType,
               wait: bool, notify: int, compression: Any) -> Any:
        """Starts a call without per-call credentials or wait_for_ready."""
        payload = serialize(self._serialize, request)
        if self._direct:
            return self._core.call(self._method, payload, timeout, metadata, wait=wait,
                                   notify=notify, compression=_compression(compression))
        return self._start_other(payload, timeout, metadata, wait, notify, compression, None,
                                 None)

    def _start_with(self, request: Any, timeout: Optional[float], metadata: MetadataType,
                    wait: bool, notify: int, compression: Any, credentials: Any,
                    wait_for_ready: Optional[bool]) -> Any:
        """Starts a call with per-call credentials or wait_for_ready."""
        payload = serialize(self._serialize, request)
        return self._start_other(payload, timeout, metadata, wait, notify, compression,
                                 credentials, wait_for_ready)

    def _start_other(self, payload: Any, timeout: Optional[float], metadata: MetadataType,
                     wait: bool, notify: int, compression: Any, credentials: Any,
                     wait_for_ready: Optional[bool]) -> Any:
        """Every call but the direct fast path: preflight first if needed."""
        if credentials is not None or wait_for_ready or self._has_plugins:
            return self._preflight_then(
                lambda t, m: self._start_payload(payload, t, m, wait, notify, compression),
                timeout, metadata, credentials, wait_for_ready)
        return self._start_payload(payload, timeout, metadata, wait, notify, compression)

    def _start_payload(self, payload: Any, timeout: Optional[float], metadata: MetadataType,
                       wait: bool, notify: int, compression: Any) -> Any:
        if self._fast_path:
            return self._core.call(self._method, payload, timeout, metadata, wait=wait,
                                   notify=notify, compression=_compression(compression))
        return self._start_streamed(payload, timeout, metadata, wait, notify, compression)

    def _start_streamed(self, payload: Any, timeout: Optional[float], metadata: MetadataType,
                        wait: bool, notify: int, compression: Any) -> Any:
        """The call through the client-streaming machinery (``triple.unary_fast_path``
        False): start, one write, done_writing, as ``stream_unary`` with one request.
        The response side keeps unary rules, so errors are the fast path's. On the Triple
        wire the one request is the bare body (UNARY_BODY), as dubbo-go's duplex path."""
        core_call = self._start_client_stream(timeout, metadata, compression, notify,
                                              _triple.UNARY_BODY)
        try:
            if core_call.write(payload):
                core_call.done_writing()
        except BaseException:  # not bytes-like, say: the fast path would not have started
            core_call.cancel()
            raise
        if wait:
            core_call.wait()
        return core_call

    def __call__(self, request: Any, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None, compression: Any = None) -> Any:
        """Makes the call and returns the response; raises RpcError on failure.

        The GIL is released while the call is in flight; Ctrl-C cancels it.
        """
        if credentials is None and not wait_for_ready and self._plain:
            if self._bare and compression is None:  # _start's work, in this frame
                core_call = self._core.call(self._method, request, timeout, metadata,
                                            wait=True)
            else:
                core_call = self._start(request, timeout, metadata, True, False, compression)
            if core_call.code() == 0 and self._throttle is None:  # the common case, inline
                codec = self._deserialize
                if codec is None:
                    return core_call.response()
                return deserialize(codec, memoryview(core_call)
                                   if self._in_place else core_call.response())
            return self._response(self._finished(core_call, request, metadata, None, None,
                                                 compression))
        return self._response(self._blocking(request, timeout, metadata, credentials,
                                             wait_for_ready, compression))

    def _blocking(self, request: Any, timeout: Optional[float], metadata: MetadataType,
                  credentials: Any, wait_for_ready: Optional[bool], compression: Any) -> Any:
        """Makes the call (and its retries) and returns the finished core call."""
        wait_for_ready = self._waits(wait_for_ready)
        if self._cfg_timeout is not None:
            timeout = _min_timeout(timeout, self._cfg_timeout)
        core_call = (self._start(request, timeout, metadata, True, False, compression)
                     if credentials is None and not wait_for_ready else
                     self._start_with(request, timeout, metadata, True, False, compression,
                                      credentials, wait_for_ready))
        return self._finished(core_call, request, metadata, credentials, wait_for_ready,
                              compression)

    def _finished(self, core_call: Any, request: Any, metadata: MetadataType,
                  credentials: Any, wait_for_ready: Optional[bool], compression: Any) -> Any:
        """The first attempt ended: retried if it failed and may be, and the retry
        throttle told of a success.  Returns the last attempt."""
        if core_call.code() != 0:
            if self._retries:
                return self._retried(core_call, request, metadata, credentials,
                                     wait_for_ready, compression)
        elif self._throttle is not None:
            self._throttle.on_success()
        return core_call

    def _retried(self, core_call: Any, request: Any, metadata: MetadataType,
                 credentials: Any, wait_for_ready: Optional[bool], compression: Any) -> Any:
        """Attempts after a failed first one, as _retry.Retries decides; they keep the
        first attempt's deadline."""
        retries = Retries(self._retry_policy, self._throttle, deadline_of(core_call))
        while True:
            delay = retries.delay(core_call)
            if delay is None:
                return core_call
            if delay:
                time.sleep(delay)
            left = retries.timeout_left()
            core_call = (self._start(request, left, metadata, True, False, compression)
                         if credentials is None and not wait_for_ready else
                         self._start_with(request, left, metadata, True, False, compression,
                                          credentials, wait_for_ready))
            if core_call.code() == 0:
                retries.succeeded()
                return core_call

    def with_call(self, request: Any, timeout: Optional[float] = None,
                  metadata: MetadataType = None, credentials: Any = None,
                  wait_for_ready: Optional[bool] = None,
                  compression: Any = None) -> tuple[Any, CallResult]:
        """Like ``__call__`` but returns ``(response, call)`` with the call's metadata."""
        core_call = self._blocking(request, timeout, metadata, credentials, wait_for_ready,
                                   compression)
        return self._response(core_call), CallResult(core_call)

    def future(self, request: Any, timeout: Optional[float] = None,
               metadata: MetadataType = None, credentials: Any = None,
               wait_for_ready: Optional[bool] = None,
               compression: Any = None) -> abstract.CallFuture:
        """Starts the call and returns at once with a Future (also a Call).  With call
        credentials or ``wait_for_ready``, those run first, on a helper thread; with a
        retry policy the attempts run there too."""
        if self._retry_policy is not None:
            return DeferredFuture(lambda: self._tracked(self._blocking(
                request, timeout, metadata, credentials, wait_for_ready, compression)))
        wait_for_ready = self._waits(wait_for_ready)
        if self._cfg_timeout is not None:
            timeout = _min_timeout(timeout, self._cfg_timeout)
        if credentials is None and not wait_for_ready and not self._has_plugins and \
                (self._queues is None or not self._queues()):  # else it would block here
            core_call = self._start(request, timeout, metadata, False, _FUTURE_EVENTS,
                                    compression)
            fut = UnaryFuture(core_call, self._deserialize)
            if self._retries:  # transparent retry (no policy here: see _future._settle)
                fut._again = (self, request, metadata, compression)
            if core_call.notifying():  # else it ended at once: nothing to wait for
                self._channel._dispatcher.track(core_call, fut)
            return fut
        payload = serialize(self._serialize, request)
        memoryview(payload).release()  # TypeError here, as on the fast path
        return DeferredFuture(lambda: self._tracked(self._start_other(
            payload, timeout, metadata, False, _FUTURE_EVENTS, compression, credentials,
            wait_for_ready)))

    def _transparent_attempt(self, fut: UnaryFuture, failed: Any, again: tuple) -> Any:
        """The next attempt of a future whose attempt ``failed`` no server processed
        (``_retry.Retries`` decides: transparent retries only, the policy being None),
        or None; ``again`` is (self, request, metadata, compression)."""
        if fut._retries is None:
            fut._retries = Retries(None, None, deadline_of(failed))
        if fut._retries.delay(failed) is None:
            return None
        _, request, metadata, compression = again
        return self._start(request, fut._retries.timeout_left(), metadata, False,
                           _FUTURE_EVENTS, compression)


class UnaryStreamMultiCallable(_MultiCallable, abstract.UnaryStreamMultiCallable):
    """Calls a server-streaming method; made by ``Channel.unary_stream``."""


    def __call__(self, request: Any, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> StreamingCall:
        """Sends the request and returns an iterator over the responses.  Until the
        first response arrives, a failed attempt is retried as a unary call is."""
        payload = serialize(self._serialize, request)
        core_call = self._core_call(payload, timeout, metadata, _triple.SERVER_STREAMING,
                                    compression, credentials, wait_for_ready, defer=True)
        stream = StreamingCall(core_call, None, self._deserialize)
        if self._retries:
            retries = Retries(self._retry_policy, self._throttle, deadline_of(core_call))

            def again(failed: Any) -> Optional[Any]:
                delay = retries.delay(failed)
                if delay is None:
                    return None
                time.sleep(delay)
                return self._core_call(payload, retries.timeout_left(), metadata,
                                       _triple.SERVER_STREAMING, compression, credentials,
                                       wait_for_ready, defer=True)
            stream._again = again
        return stream


class StreamUnaryMultiCallable(_MultiCallable, abstract.StreamUnaryMultiCallable):
    """Calls a client-streaming method; made by ``Channel.stream_unary``."""

    def __call__(self, request_iterator: Any, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None, compression: Any = None) -> Any:
        """Sends every request of the iterator, then returns the single response."""
        return self.with_call(request_iterator, timeout, metadata, credentials,
                              wait_for_ready, compression)[0]

    def with_call(self, request_iterator: Any, timeout: Optional[float] = None,
                  metadata: MetadataType = None, credentials: Any = None,
                  wait_for_ready: Optional[bool] = None,
                  compression: Any = None) -> tuple[Any, CallResult]:
        """Like ``__call__`` but returns ``(response, call)``."""
        core_call = self._blocking(request_iterator, timeout, metadata, credentials,
                                   wait_for_ready, compression)
        return self._response(core_call), CallResult(core_call)

    def _blocking(self, request_iterator: Any, timeout: Optional[float],
                  metadata: MetadataType, credentials: Any, wait_for_ready: Optional[bool],
                  compression: Any) -> Any:
        """Sends the requests (over the attempts, with retries) and returns the finished
        core call."""
        call = self._start_request_stream(timeout, metadata, compression, 0, credentials,
                                          wait_for_ready)
        pump_requests(call, request_iterator, self._serialize)
        if isinstance(call, ReplayingCall):
            return call.finish()
        call.wait()
        return call

    def future(self, request_iterator: Any, timeout: Optional[float] = None,
               metadata: MetadataType = None, credentials: Any = None,
               wait_for_ready: Optional[bool] = None,
               compression: Any = None) -> abstract.CallFuture:
        """Starts the call (requests are sent from a helper thread) and returns a Future.
        With a retry policy, call credentials or ``wait_for_ready``, the call starts on
        that thread too (the future is returned at once, as grpcio's)."""
        if self._retry_policy is not None or credentials is not None or \
                self._waits(wait_for_ready) or self._has_plugins:
            return DeferredFuture(lambda: self._tracked(self._blocking(
                request_iterator, timeout, metadata, credentials, wait_for_ready,
                compression)))
        core_call = self._start_client_stream(timeout, metadata, compression,
                                              _FUTURE_EVENTS, credentials=credentials,
                                              wait_for_ready=wait_for_ready)
        fut = UnaryFuture(core_call, self._deserialize)
        if core_call.notifying():
            self._channel._dispatcher.track(core_call, fut)
        start_pump(core_call, request_iterator, self._serialize)
        return fut


class StreamStreamMultiCallable(_MultiCallable, abstract.StreamStreamMultiCallable):
    """Calls a bidirectional-streaming method; made by ``Channel.stream_stream``."""

    def __call__(self, request_iterator: Any = None, timeout: Optional[float] = None,
                 metadata: MetadataType = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> StreamingCall:
        """Starts the stream.  With an iterator, its requests are sent from a helper
        thread; without one, use the call's ``write`` and ``done_writing``."""
        call = self._start_request_stream(timeout, metadata, compression,
                                          _triple.SERVER_STREAMING, credentials,
                                          wait_for_ready, defer=True)
        if request_iterator is not None:
            start_pump(call, request_iterator, self._serialize)
        if isinstance(call, ReplayingCall):
            return StreamingCall(call.core, self._serialize, self._deserialize, call)
        return StreamingCall(call, self._serialize, self._deserialize)


class Channel(abstract.Channel):
    """A client channel to one target, a ``grpc.Channel``.

    Thread-safe: any number of threads may call through it at once.  Calls share one
    HTTP/2 connection, opened on first use and reopened after it is lost.
    """

    def __init__(self, target: str, options: Optional[Iterable[tuple[str, Any]]] = None,
                 compression: Any = None, wire: Optional[str] = None,
                 credentials: Optional[ChannelCredentials] = None, *,
                 background_resolver: bool = False, driven_io: bool = False) -> None:
        """``background_resolver``: a target with a resolver (``zookeeper://``, say)
        starts it on a helper thread instead of waiting here for its first list; calls
        made meanwhile wait for it within their deadline (``triple_py.aio``'s channels:
        the event loop never waits on discovery).  ``driven_io``: a target of one
        endpoint runs its connection on a driven ``_triple.IoLoop`` (``io_loop``),
        which ``triple_py.aio`` turns on its event loop's thread, unless the option
        ``triple.io_on_event_loop`` is False; a host name is then looked up on a
        short-lived thread of the core's (csrc/tri_lookup.h), never on the loop's."""
        parsed = parse_target(target)
        self._target = target
        self._options = ChannelOptions.from_pairs(options)
        if wire is not None:
            self._options = ChannelOptions.from_pairs([*(options or ()), ("triple.wire", wire)])
        if compression is not None:
            self._options.compression = compression_value(compression)
        self._service_config = ServiceConfig.parse(self._options.service_config)
        # Request bytes kept for retries over this channel's streaming calls (_replay).
        self._retry_budget = BufferBudget(self._options.retry_buffer_size)
        policy = self._options.lb_policy or self._service_config.lb_policy or PICK_FIRST
        tls = {}
        override = self._options.ssl_target_name_override
        local = credentials is not None and credentials.local
        one = _single_endpoint(parsed, policy)
        if local:
            for endpoint in ((one,) if one else static_endpoints(parsed)
                             if parsed.scheme in _STATIC_SCHEMES else ()):
                if endpoint.kind == "tcp":
                    check_local(endpoint.host)
        if credentials is not None and not local and override and not self._options.authority:
            self._options.authority = override  # grpcio sends the override as :authority
        # Call credentials: the channel's own, and whether calls may carry any.
        self._call_plugins: tuple[Any, ...] = credentials.call_plugins if credentials else ()
        self._may_send_call_credentials = credentials is not None
        authority = self._options.authority or parsed.default_authority()
        self._url_prefix = f"{'' if local else 'https'}://{authority}"
        if credentials is not None and not local:
            tls = dict(tls=True, root_certificates=credentials.root_certificates,
                       private_key=credentials.private_key,
                       certificate_chain=credentials.certificate_chain)
            if credentials.root_certificates is None:
                tls.update(system_verify_locations())
        core_kwargs: dict[str, Any] = {**self._options.core_kwargs(), "authority": authority,
                                       **tls}
        #: The driven IoLoop of this channel's connection, or None (see driven_io).
        self.io_loop: Optional[Any] = None
        if driven_io and one is not None and self._options.io_on_event_loop:
            self.io_loop = core_kwargs["io_loop"] = _triple.IoLoop(driven=True)
        if one is None and self._options.shared_io_thread:
            # Several backends: their connections share one I/O thread (one wake-up
            # for calls to all of them; docs/architecture.md).
            core_kwargs["io_loop"] = _triple.IoLoop()

        def make_core(endpoint: Endpoint) -> Any:
            """One backend: a core channel to ``endpoint``."""
            # The endpoint's kind is one of the core's address_kind choices
            # (tcp, unix, unix-abstract: _triple.CHANNEL_OPTIONS).
            kwargs = {**with_service_key(core_kwargs, endpoint), "address_kind": endpoint.kind}
            if tls:
                kwargs["ssl_target_name_override"] = \
                    override or endpoint.attributes.get("dns_name")
            return _triple.Channel(endpoint.host, str(endpoint.port or 0), **kwargs)
        # One endpoint for good: the core channel itself, the calls go straight to it.
        self._core = (make_core(one) if one is not None
                      else Balancer(resolver_for(parsed), make_core, policy,
                                    background=background_resolver))
        self._connectivity = ConnectivityWatcher(self._core)
        self._dispatcher = CompletionDispatcher(self._core)
        # Dropped without close(): the dispatcher lets go of the core, which then goes
        # (closing its connection) with the last call object that holds it.
        weakref.finalize(self, self._dispatcher.orphan)
        with _live_lock:
            _live_cores.add(self._core)

    def unary_unary(self, method: str, request_serializer: Serializer = None,
                    response_deserializer: Deserializer = None,
                    _registered_method: Any = None) -> UnaryUnaryMultiCallable:
        """A callable for the unary method ``method`` ("/package.Service/Method").

        Serializers may be omitted: requests and responses are then raw bytes.
        """
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

    def generic_call(self, service: str, method: str, args: Sequence[bytes],
                     arg_types: Sequence[str], serialization: str = "hessian2",
                     timeout: Optional[float] = None,
                     metadata: MetadataType = None) -> tuple[bytes, str]:
        """A non-IDL call with Triple's wrapper codec (TripleRequestWrapper).

        ``args`` are already encoded in ``serialization`` (e.g. Hessian2 bytes) and
        ``arg_types`` are their Java type names.  Returns the response's
        ``(data, type)``; raises RpcError on failure.
        """
        core_call = self._core.generic(f"/{service}/{method}", list(args), list(arg_types),
                                       serialization, timeout, metadata)
        if core_call.code() != 0:
            raise _InactiveRpcError(core_call)
        _, data, type_name = _triple.parse_wrapper_response(core_call.response())
        return data, type_name

    def subscribe(self, callback: Subscriber, try_to_connect: bool = False) -> None:
        """Calls ``callback(ChannelConnectivity)`` with the state now and on each change,
        from a helper thread; ``try_to_connect`` connects an IDLE channel (grpcio's
        ``Channel.subscribe``)."""
        self._connectivity.subscribe(callback, try_to_connect)

    def unsubscribe(self, callback: Subscriber) -> None:
        """Stops the calls to ``callback`` (grpcio's ``Channel.unsubscribe``)."""
        self._connectivity.unsubscribe(callback)

    @property
    def core_channel(self) -> _triple.Channel:
        """The C core's channel under this one (``_triple.Channel``), for
        ``triple_py.aio`` and tools that drive the core directly."""
        return self._core

    @property
    def options(self) -> ChannelOptions:
        """The options this channel was built with, resolved to their defaults."""
        return self._options

    @property
    def retry_buffer_budget(self) -> BufferBudget:
        """The request bytes kept for retries over this channel's streaming calls
        (``grpc.retry_buffer_size``), shared by ``triple_py.aio`` on this channel."""
        return self._retry_budget

    @property
    def has_call_credentials(self) -> bool:
        """True when the channel's credentials add call credentials to every call."""
        return bool(self._call_plugins)

    def stats(self) -> dict[str, int]:
        """This channel's counters: calls, write_syscalls, bytes_written, allocations,
        pool_hits, pool_misses and more."""
        return self._core.stats()

    def close(self) -> None:
        """Fails every pending call with CANCELLED and stops the I/O thread."""
        self._core.close()

    def __enter__(self) -> "Channel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _single_endpoint(parsed: ParsedTarget, policy: str) -> Optional[Endpoint]:
    """The one endpoint of a target that never has more (no balancer needed): a dns
    target under pick_first (the core resolves the name at every connection attempt
    and dials its addresses in turn, happy-eyeballs style: csrc/tri_dial.h) or naming
    an IP address, or a static list of one address.  None when the target needs a resolver and balancer."""
    if parsed.scheme == "dns":
        if parsed.authority:
            raise ValueError(f"invalid target {parsed.target!r}: a DNS server in the "
                             "authority is not supported")
        host, port = split_host_port(parsed.endpoint, 443, "target")
        if policy == PICK_FIRST or _is_ip(host):  # an IP literal has one address
            return Endpoint(host, port)
        return None
    if parsed.scheme in _STATIC_SCHEMES:
        endpoints = static_endpoints(parsed)
        if len(endpoints) == 1:
            return endpoints[0]
    return None


def insecure_channel(target: str, options: Optional[Iterable[tuple[str, Any]]] = None,
                     compression: Any = None, wire: Optional[str] = None) -> Channel:
    """A plaintext (h2c, prior knowledge) channel to ``target`` ("host:port").

    ``wire="triple"`` (or the option ``("triple.wire", "triple")``) sends unary calls
    on the Dubbo Triple wire; streams always use gRPC framing.  ``("triple.dialect", d)``
    picks the Triple headers: ``"auto"`` (default: what every Dubbo implementation reads),
    ``"go"`` (dubbo-go's ``triple-*`` only) or ``"spec"`` (the spec's ``tri-*``, read by
    Dubbo Java and dubbo-js).
    """
    return Channel(target, options, compression, wire)


def secure_channel(target: str, credentials: ChannelCredentials,
                   options: Optional[Iterable[tuple[str, Any]]] = None,
                   compression: Any = None, wire: Optional[str] = None) -> Channel:
    """A TLS channel (ALPN h2) to ``target``; the server's certificate and name are
    verified against ``credentials.root_certificates`` or the system store.  The name
    checked is the target host, or ``grpc.ssl_target_name_override`` when set.
    ``local_channel_credentials()`` make a plaintext channel to a loopback target that
    may carry call credentials; ``composite_channel_credentials`` add call credentials
    to every call of the channel."""
    if not isinstance(credentials, ChannelCredentials):
        raise TypeError("credentials must come from ssl_channel_credentials()")
    return Channel(target, options, compression, wire, credentials)


def process_stats() -> dict[str, int]:
    """Counters summed over every channel of this process, live or gone."""
    total = dict(_triple.retired_stats())
    with _live_lock:
        cores = list(_live_cores)
    for core in cores:
        for key, value in core.stats().items():
            total[key] = total.get(key, 0) + value
    return total
