"""The abstract types of the public API, under the names grpcio gives them.

Code written for grpcio annotates with these (``grpc.Channel``, ``grpc.Call``,
``grpc.Future``, ``grpc.UnaryUnaryMultiCallable`` ...); with ``import triple_py as grpc``
the same annotations name these classes, and triple_py's own objects are instances of
them: a channel is a ``Channel``, what ``future()`` returns is a ``Call`` and a
``Future``, the call ``with_call`` returns is a ``Call``, a response iterator is a
``Call`` and a ``Future``.

The concrete classes inherit from these (no per-instance cost: the bases hold no
state and define no ``__init__``).  The multi-callables, calls and futures are generic
in their request and response types, as in typeshed's grpcio stubs, so both the bare
names and ``grpc.UnaryUnaryMultiCallable[Req, Resp]`` type-check.

Only the client side is here: triple_py has no server API.
"""
from __future__ import annotations

import abc
from types import TracebackType
from typing import (TYPE_CHECKING, Any, Callable, Generic, Iterator, Optional, Sequence,
                    TypeVar, Union)

if TYPE_CHECKING:  # only annotated here: _connectivity itself imports this module
    from ._connectivity import ChannelConnectivity

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")

#: Request metadata as callers pass it: (key, value) pairs, bytes values for ``-bin`` keys.
MetadataType = Sequence[tuple[str, Union[str, bytes]]]
#: Response metadata as calls report it.
Metadata = tuple[tuple[str, Union[str, bytes]], ...]
#: What ``Future.add_done_callback`` and ``Channel.subscribe`` call.
DoneCallback = Callable[[Any], None]
ConnectivityCallback = Callable[["ChannelConnectivity"], None]
Serializer = Optional[Callable[[Any], bytes]]
Deserializer = Optional[Callable[[bytes], Any]]


class RpcContext(abc.ABC):
    """What every RPC in progress offers, whatever its shape."""

    __slots__ = ()

    @abc.abstractmethod
    def is_active(self) -> bool:
        """True until the RPC has ended (finished, failed or cancelled)."""

    @abc.abstractmethod
    def time_remaining(self) -> Optional[float]:
        """Seconds left before the deadline, or None without a deadline (or when the
        RPC has ended)."""

    @abc.abstractmethod
    def cancel(self) -> bool:
        """Ends the RPC with CANCELLED; True if this cancelled a running RPC, False if it
        had already ended."""

    @abc.abstractmethod
    def add_callback(self, callback: Callable[[], None]) -> bool:
        """Arranges for ``callback()`` to run once the RPC ends.  False (and the
        callback is not kept) when the RPC has already ended."""


class Call(RpcContext):
    """An RPC seen from the client: its response metadata and final status."""

    __slots__ = ()

    @abc.abstractmethod
    def initial_metadata(self) -> Optional[Metadata]:
        """The response headers' metadata (may wait for them)."""

    @abc.abstractmethod
    def trailing_metadata(self) -> Optional[Metadata]:
        """The response trailers' metadata (waits for the end of the RPC)."""

    @abc.abstractmethod
    def code(self) -> Any:
        """The final ``StatusCode`` (waits for the end of the RPC)."""

    @abc.abstractmethod
    def details(self) -> Optional[str]:
        """The final status message (waits for the end of the RPC)."""


class Future(abc.ABC, Generic[ResponseT]):
    """The eventual outcome of an asynchronous computation: here, an RPC started with
    ``future()``.  Waits take an optional ``timeout`` in seconds and raise
    ``FutureTimeoutError`` when it runs out."""

    __slots__ = ()

    @abc.abstractmethod
    def cancel(self) -> bool:
        """Tries to stop the computation; True if it was stopped by this call."""

    @abc.abstractmethod
    def cancelled(self) -> bool:
        """True if the computation was stopped before it completed."""

    @abc.abstractmethod
    def running(self) -> bool:
        """True while the computation may still complete or be cancelled."""

    @abc.abstractmethod
    def done(self) -> bool:
        """True once the computation has completed or been cancelled."""

    @abc.abstractmethod
    def result(self, timeout: Optional[float] = None) -> ResponseT:
        """The computed value; raises what the computation raised (an ``RpcError``),
        ``FutureCancelledError`` or ``FutureTimeoutError``."""

    @abc.abstractmethod
    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """What the computation raised, or None if it succeeded."""

    @abc.abstractmethod
    def traceback(self, timeout: Optional[float] = None) -> Optional[TracebackType]:
        """The traceback of what the computation raised, if there is one."""

    @abc.abstractmethod
    def add_done_callback(self, fn: DoneCallback) -> None:
        """Arranges for ``fn(future)`` to run once the computation is done (at once if it
        already is)."""


class CallFuture(Call, Future[ResponseT]):
    """An RPC that is both a ``Call`` and a ``Future``: what ``future()`` returns."""

    __slots__ = ()


class UnaryUnaryMultiCallable(abc.ABC, Generic[RequestT, ResponseT]):
    """Invokes one unary method (one request, one response)."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, request: RequestT, timeout: Optional[float] = None,
                 metadata: Optional[MetadataType] = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None, compression: Any = None) -> ResponseT:
        """Makes the call and returns the response; raises ``RpcError`` if it fails."""

    @abc.abstractmethod
    def with_call(self, request: RequestT, timeout: Optional[float] = None,
                  metadata: Optional[MetadataType] = None, credentials: Any = None,
                  wait_for_ready: Optional[bool] = None,
                  compression: Any = None) -> tuple[ResponseT, Call]:
        """Makes the call and returns the response with the finished ``Call``."""

    @abc.abstractmethod
    def future(self, request: RequestT, timeout: Optional[float] = None,
               metadata: Optional[MetadataType] = None, credentials: Any = None,
               wait_for_ready: Optional[bool] = None,
               compression: Any = None) -> CallFuture[ResponseT]:
        """Starts the call and returns at once with an object that is both its ``Call``
        and its ``Future``."""


class UnaryStreamMultiCallable(abc.ABC, Generic[RequestT, ResponseT]):
    """Invokes one server-streaming method (one request, a stream of responses)."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, request: RequestT, timeout: Optional[float] = None,
                 metadata: Optional[MetadataType] = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> CallIterator[ResponseT]:
        """Starts the call; the result iterates over the responses and is its
        ``Call`` (iterating a failed call raises its ``RpcError``)."""


class StreamUnaryMultiCallable(abc.ABC, Generic[RequestT, ResponseT]):
    """Invokes one client-streaming method (a stream of requests, one response)."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, request_iterator: Iterator[RequestT], timeout: Optional[float] = None,
                 metadata: Optional[MetadataType] = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None, compression: Any = None) -> ResponseT:
        """Sends every request and returns the response; raises ``RpcError`` if the
        call fails."""

    @abc.abstractmethod
    def with_call(self, request_iterator: Iterator[RequestT],
                  timeout: Optional[float] = None, metadata: Optional[MetadataType] = None,
                  credentials: Any = None, wait_for_ready: Optional[bool] = None,
                  compression: Any = None) -> tuple[ResponseT, Call]:
        """Like calling it, and returns the finished ``Call`` with the response."""

    @abc.abstractmethod
    def future(self, request_iterator: Iterator[RequestT], timeout: Optional[float] = None,
               metadata: Optional[MetadataType] = None, credentials: Any = None,
               wait_for_ready: Optional[bool] = None,
               compression: Any = None) -> CallFuture[ResponseT]:
        """Starts the call (the requests are sent in the background) and returns its
        ``Call`` and ``Future``."""


class StreamStreamMultiCallable(abc.ABC, Generic[RequestT, ResponseT]):
    """Invokes one bidirectional-streaming method."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, request_iterator: Iterator[RequestT], timeout: Optional[float] = None,
                 metadata: Optional[MetadataType] = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> CallIterator[ResponseT]:
        """Starts the call; the requests are sent in the background and the result
        iterates over the responses and is its ``Call``."""


class CallIterator(CallFuture[ResponseT], Iterator[ResponseT]):
    """A call with a response stream: an iterator of the responses that is also the
    ``Call`` and a ``Future`` of its end."""

    __slots__ = ()


class Channel(abc.ABC):
    """A client's connection to a target, making the multi-callables of its methods.
    A context manager: leaving the ``with`` block closes it."""

    __slots__ = ()

    @abc.abstractmethod
    def subscribe(self, callback: ConnectivityCallback, try_to_connect: bool = False) -> None:
        """Calls ``callback(ChannelConnectivity)`` with the state now and after each
        change; ``try_to_connect`` starts connecting an idle channel."""

    @abc.abstractmethod
    def unsubscribe(self, callback: ConnectivityCallback) -> None:
        """Stops the calls to a subscribed ``callback``."""

    @abc.abstractmethod
    def unary_unary(self, method: str, request_serializer: Serializer = None,
                    response_deserializer: Deserializer = None) -> UnaryUnaryMultiCallable:
        """The multi-callable of the unary method ``method`` ("/package.Service/Name")."""

    @abc.abstractmethod
    def unary_stream(self, method: str, request_serializer: Serializer = None,
                     response_deserializer: Deserializer = None) -> UnaryStreamMultiCallable:
        """The multi-callable of the server-streaming method ``method``."""

    @abc.abstractmethod
    def stream_unary(self, method: str, request_serializer: Serializer = None,
                     response_deserializer: Deserializer = None) -> StreamUnaryMultiCallable:
        """The multi-callable of the client-streaming method ``method``."""

    @abc.abstractmethod
    def stream_stream(self, method: str, request_serializer: Serializer = None,
                      response_deserializer: Deserializer = None
                      ) -> StreamStreamMultiCallable:
        """The multi-callable of the bidirectional-streaming method ``method``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Ends every RPC still running on the channel and releases its resources."""

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]],
                 exc_val: Optional[BaseException],
                 exc_tb: Optional[TracebackType]) -> None:
        self.close()


class ClientCallDetails(abc.ABC):
    """What a client interceptor is told about a call, and may pass on changed."""

    __slots__ = ()

    method: str
    timeout: Optional[float]
    metadata: Optional[MetadataType]
    credentials: Any
    wait_for_ready: Optional[bool]
    compression: Any


class AuthMetadataContext(abc.ABC):
    """What a metadata plugin is told about the call it adds metadata to."""

    __slots__ = ()

    #: "scheme://authority/package.Service" of the call.
    service_url: str
    #: The method's name, without its service.
    method_name: str


class AuthMetadataPluginCallback(abc.ABC):
    """What a metadata plugin calls, once, with its answer."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, metadata: Optional[MetadataType], error: Optional[Exception]) -> None:
        """``callback(metadata, None)`` adds ``metadata`` to the call;
        ``callback(None, error)`` fails the call."""


class AuthMetadataPlugin(abc.ABC):
    """A source of per-call metadata for ``metadata_call_credentials``."""

    def __call__(self, context: AuthMetadataContext,
                 callback: AuthMetadataPluginCallback) -> None:
        """Produces the metadata of one call and hands it to ``callback`` (from any
        thread); must not block for long."""
        raise NotImplementedError()
