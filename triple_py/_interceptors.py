"""Client interceptors with grpcio's API: ``intercept_channel(channel, *interceptors)``
and the four ``*ClientInterceptor`` kinds.

``intercept_channel(ch, a, b)`` returns a channel whose calls go through ``a``, then
``b``, then ``ch``: each interceptor gets ``continuation(client_call_details,
request)`` and the details (method, timeout, metadata, credentials, wait_for_ready,
compression) it may replace.  An interceptor may short-circuit (return its own
Call/Future without calling the continuation) or raise: the exception then comes
out of the call (``__call__``, ``result()`` or the iteration), as in grpcio.
A channel without interceptors is untouched: the plain channel keeps its fast path.
"""
from __future__ import annotations

import abc
import sys
from typing import Any, Callable, NamedTuple, Optional

from . import _types as abstract
from ._errors import CallResult, RpcError
from ._status import StatusCode
from ._types import ClientCallDetails


class _Details(NamedTuple):
    method: str
    timeout: Optional[float]
    metadata: Any
    credentials: Any
    wait_for_ready: Optional[bool]
    compression: Any


class CallDetails(_Details, ClientCallDetails):
    """The ClientCallDetails triple_py hands to interceptors."""

    __slots__ = ()


class UnaryUnaryClientInterceptor(abc.ABC):
    """Intercepts unary-unary calls (grpcio's ``grpc.UnaryUnaryClientInterceptor``)."""

    @abc.abstractmethod
    def intercept_unary_unary(self, continuation: Callable[[Any, Any], Any],
                              client_call_details: ClientCallDetails, request: Any) -> Any:
        """Returns a Call that is also a Future (what ``continuation`` returns)."""


class UnaryStreamClientInterceptor(abc.ABC):
    """Intercepts unary-stream calls (grpcio's ``grpc.UnaryStreamClientInterceptor``)."""

    @abc.abstractmethod
    def intercept_unary_stream(self, continuation: Callable[[Any, Any], Any],
                               client_call_details: ClientCallDetails, request: Any) -> Any:
        """Returns a Call that is an iterator of responses."""


class StreamUnaryClientInterceptor(abc.ABC):
    """Intercepts stream-unary calls (grpcio's ``grpc.StreamUnaryClientInterceptor``)."""

    @abc.abstractmethod
    def intercept_stream_unary(self, continuation: Callable[[Any, Any], Any],
                               client_call_details: ClientCallDetails,
                               request_iterator: Any) -> Any:
        """Returns a Call that is also a Future."""


class StreamStreamClientInterceptor(abc.ABC):
    """Intercepts stream-stream calls (grpcio's ``grpc.StreamStreamClientInterceptor``)."""

    @abc.abstractmethod
    def intercept_stream_stream(self, continuation: Callable[[Any, Any], Any],
                                client_call_details: ClientCallDetails,
                                request_iterator: Any) -> Any:
        """Returns a Call that is an iterator of responses."""


_KINDS = (UnaryUnaryClientInterceptor, UnaryStreamClientInterceptor,
          StreamUnaryClientInterceptor, StreamStreamClientInterceptor)


class Outcome(CallResult, abstract.CallIterator):
    """A finished Call and Future: the response with its call, or the exception the
    call (or an interceptor) raised.  (``is_active``, ``time_remaining``,
    ``add_callback`` and ``cancel`` are CallResult's: a finished call's.)"""

    def __init__(self, response: Any = None, call: Any = None,
                 exception: Optional[BaseException] = None,
                 traceback: Any = None) -> None:  # not CallResult's: nothing to read
        self._response = response
        self._call = call if call is not None else exception
        self._exception = exception
        self._traceback = traceback

    def _delegate(self, name: str, default: Any) -> Any:
        method = getattr(self._call, name, None)
        return method() if callable(method) else default

    # grpc.Future
    def result(self, timeout: Optional[float] = None) -> Any:
        """The response, or raises the call's exception."""
        if self._exception is not None:
            raise self._exception
        return self._response

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """The exception the call ended with (None on success)."""
        return self._exception

    def traceback(self, timeout: Optional[float] = None) -> Any:
        """The exception's traceback, if any."""
        return self._traceback

    def cancelled(self) -> bool:
        """False: the call finished by itself."""
        return False

    def running(self) -> bool:
        """False: the call has finished."""
        return False

    def done(self) -> bool:
        """True: the call has finished."""
        return True

    def add_done_callback(self, fn: Callable[["Outcome"], None]) -> None:
        """Calls ``fn(self)`` at once."""
        fn(self)

    # grpc.Call
    def code(self) -> Any:
        """The call's status code (UNKNOWN for an interceptor's own exception)."""
        return self._delegate("code", StatusCode.UNKNOWN)

    def details(self) -> Any:
        """The call's status message (the exception's text for an interceptor's own)."""
        return self._delegate("details", str(self._exception))

    def initial_metadata(self) -> Any:
        """The call's response headers."""
        return self._delegate("initial_metadata", None)

    def trailing_metadata(self) -> Any:
        """The call's response trailers."""
        return self._delegate("trailing_metadata", None)

    # a failed response stream
    def __iter__(self) -> "Outcome":
        return self

    def __next__(self) -> Any:
        raise self._exception if self._exception is not None else StopIteration()


def _failure(exc: BaseException) -> Outcome:
    return Outcome(exception=exc, traceback=sys.exc_info()[2])


def _details(details: Any, default: CallDetails) -> CallDetails:
    """The details an interceptor passed on, with defaults for what it left out."""
    return CallDetails(*(getattr(details, field, getattr(default, field))
                         for field in CallDetails._fields))


def _call_kwargs(details: CallDetails) -> dict[str, Any]:
    return dict(timeout=details.timeout, metadata=details.metadata,
                credentials=details.credentials, wait_for_ready=details.wait_for_ready,
                compression=details.compression)


class _Intercepted:
    """One multi-callable of an intercepted channel: one interceptor over the inner
    channel's multi-callable (made anew when an interceptor changes the method)."""

    def __init__(self, inner: Callable[[str], Any], method: str, interceptor: Any,
                 hook: str) -> None:
        self._inner = inner
        self._method = method
        self._interceptor = interceptor
        self._hook = hook
        self._same_method = inner(method)  # what the continuation calls unless renamed

    def _details(self, timeout: Optional[float], metadata: Any, credentials: Any,
                 wait_for_ready: Optional[bool], compression: Any) -> CallDetails:
        return CallDetails(self._method, timeout, metadata, credentials, wait_for_ready,
                           compression)

    def _intercept(self, start: Callable[[Any, CallDetails, Any], Any], request: Any,
                   details: CallDetails) -> Any:
        """The interceptor's Call, with ``start(inner callable, details, request)`` as
        what its continuation runs; any exception becomes a failed Outcome."""
        def continuation(new_details: Any, new_request: Any) -> Any:
            d = _details(new_details, details)
            try:
                callable_ = self._same_method if d.method == self._method else \
                    self._inner(d.method)
                return start(callable_, d, new_request)
            except Exception as exc:  # grpcio hands the error back as a Call
                return _failure(exc)
        try:
            return getattr(self._interceptor, self._hook)(continuation, details, request)
        except Exception as exc:
            return _failure(exc)


def _with_call(callable_: Any, details: CallDetails, request: Any) -> Outcome:
    try:
        response, call = callable_.with_call(request, **_call_kwargs(details))
    except RpcError as err:
        return _failure(err)
    return Outcome(response, call)


def _future(callable_: Any, details: CallDetails, request: Any) -> Any:
    return callable_.future(request, **_call_kwargs(details))


def _stream(callable_: Any, details: CallDetails, request: Any) -> Any:
    return callable_(request, **_call_kwargs(details))


class _InterceptedUnary(_Intercepted):
    """unary_unary and stream_unary: ``__call__``, ``with_call`` and ``future``."""

    def __call__(self, request: Any, timeout: Optional[float] = None, metadata: Any = None,
                 credentials: Any = None, wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> Any:
        """Makes the call through the interceptor; returns the response."""
        return self.with_call(request, timeout, metadata, credentials, wait_for_ready,
                              compression)[0]

    def with_call(self, request: Any, timeout: Optional[float] = None, metadata: Any = None,
                  credentials: Any = None, wait_for_ready: Optional[bool] = None,
                  compression: Any = None) -> tuple[Any, Any]:
        """Like ``__call__`` but returns ``(response, call)``."""
        details = self._details(timeout, metadata, credentials, wait_for_ready, compression)
        call = self._intercept(_with_call, request, details)
        return call.result(), call

    def future(self, request: Any, timeout: Optional[float] = None, metadata: Any = None,
               credentials: Any = None, wait_for_ready: Optional[bool] = None,
               compression: Any = None) -> Any:
        """Starts the call through the interceptor; returns its Future."""
        details = self._details(timeout, metadata, credentials, wait_for_ready, compression)
        return self._intercept(_future, request, details)


class _InterceptedStream(_Intercepted):
    """unary_stream and stream_stream: ``__call__`` returns the response iterator."""

    def __call__(self, request: Any = None, timeout: Optional[float] = None,
                 metadata: Any = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None, compression: Any = None) -> Any:
        """Starts the call through the interceptor; returns its Call/iterator."""
        details = self._details(timeout, metadata, credentials, wait_for_ready, compression)
        return self._intercept(_stream, request, details)


class _InterceptedUnaryUnary(_InterceptedUnary, abstract.UnaryUnaryMultiCallable):
    """An intercepted unary_unary multi-callable."""


class _InterceptedStreamUnary(_InterceptedUnary, abstract.StreamUnaryMultiCallable):
    """An intercepted stream_unary multi-callable."""


class _InterceptedUnaryStream(_InterceptedStream, abstract.UnaryStreamMultiCallable):
    """An intercepted unary_stream multi-callable."""


class _InterceptedStreamStream(_InterceptedStream, abstract.StreamStreamMultiCallable):
    """An intercepted stream_stream multi-callable."""


# multi-callable name -> (interceptor class, its hook, intercepted callable class)
_SHAPES: dict[str, tuple[type, str, type]] = {
    "unary_unary": (UnaryUnaryClientInterceptor, "intercept_unary_unary",
                    _InterceptedUnaryUnary),
    "unary_stream": (UnaryStreamClientInterceptor, "intercept_unary_stream",
                     _InterceptedUnaryStream),
    "stream_unary": (StreamUnaryClientInterceptor, "intercept_stream_unary",
                     _InterceptedStreamUnary),
    "stream_stream": (StreamStreamClientInterceptor, "intercept_stream_stream",
                      _InterceptedStreamStream),
}


class InterceptedChannel(abstract.Channel):
    """A channel whose calls go through one interceptor, then ``channel``."""

    def __init__(self, channel: Any, interceptor: Any) -> None:
        self._channel = channel
        self._interceptor = interceptor

    def _multi_callable(self, shape: str, method: str, serializer: Any,
                        deserializer: Any) -> Any:
        kind, hook, cls = _SHAPES[shape]
        make = getattr(self._channel, shape)

        def inner(name: str) -> Any:
            return make(name, serializer, deserializer)
        if not isinstance(self._interceptor, kind):
            return inner(method)
        return cls(inner, method, self._interceptor, hook)

    def unary_unary(self, method: str, request_serializer: Any = None,
                    response_deserializer: Any = None, _registered_method: Any = None) -> Any:
        """A callable for the unary method ``method``, intercepted."""
        return self._multi_callable("unary_unary", method, request_serializer,
                                    response_deserializer)

    def unary_stream(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: Any = None) -> Any:
        """A callable for the server-streaming method ``method``, intercepted."""
        return self._multi_callable("unary_stream", method, request_serializer,
                                    response_deserializer)

    def stream_unary(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: Any = None) -> Any:
        """A callable for the client-streaming method ``method``, intercepted."""
        return self._multi_callable("stream_unary", method, request_serializer,
                                    response_deserializer)

    def stream_stream(self, method: str, request_serializer: Any = None,
                      response_deserializer: Any = None,
                      _registered_method: Any = None) -> Any:
        """A callable for the bidirectional method ``method``, intercepted."""
        return self._multi_callable("stream_stream", method, request_serializer,
                                    response_deserializer)

    def subscribe(self, callback: Any, try_to_connect: bool = False) -> None:
        """The underlying channel's ``subscribe``."""
        self._channel.subscribe(callback, try_to_connect)

    def unsubscribe(self, callback: Any) -> None:
        """The underlying channel's ``unsubscribe``."""
        self._channel.unsubscribe(callback)

    def close(self) -> None:
        """Closes the underlying channel."""
        self._channel.close()

    def __enter__(self) -> "InterceptedChannel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:  # stats() and the rest of the channel
        return getattr(self._channel, name)


def intercept_channel(channel: Any, *interceptors: Any) -> Any:
    """``channel`` with ``interceptors`` (the first one runs first) on every call."""
    for interceptor in reversed(interceptors):
        if not isinstance(interceptor, _KINDS):
            raise TypeError("interceptors must be UnaryUnaryClientInterceptor, "
                            "UnaryStreamClientInterceptor, StreamUnaryClientInterceptor "
                            f"or StreamStreamClientInterceptor, not {type(interceptor)!r}")
        channel = InterceptedChannel(channel, interceptor)
    return channel
