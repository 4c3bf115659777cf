"""The abstract types of ``triple_py.aio``, under the names ``grpc.aio`` gives them,
and its ``Metadata`` multi-map.

Code written for grpc.aio annotates with these (``grpc.aio.Channel``,
``grpc.aio.UnaryUnaryCall``, ``grpc.aio.UnaryStreamMultiCallable`` ...); with
``import triple_py as grpc`` the same annotations name these classes, and triple_py.aio's
channels, multi-callables and calls are instances of them.  The calls are generic in
their request and response types, as grpc.aio's are.
"""
from __future__ import annotations

import abc
from types import TracebackType
from typing import (TYPE_CHECKING, Any, AsyncIterable, AsyncIterator, Callable, Generator,
                    Generic, Iterable, Iterator, Mapping, Optional, Sequence, TypeVar, Union)

if TYPE_CHECKING:
    from .._connectivity import ChannelConnectivity
    from .._status import StatusCode

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")

MetadataValue = Union[str, bytes]
#: Request metadata as callers pass it: a ``Metadata`` or (key, value) pairs.
MetadataType = Union["Metadata", Sequence[tuple[str, MetadataValue]]]
#: Response metadata as calls report it: (key, value) pairs.
ResponseMetadata = tuple[tuple[str, MetadataValue], ...]
RequestIterableType = Union[Iterable[Any], AsyncIterable[Any]]
Serializer = Optional[Callable[[Any], bytes]]
Deserializer = Optional[Callable[[bytes], Any]]


class Metadata(Mapping[str, MetadataValue]):
    """Metadata as an ordered multi-map: a key may carry several values.

    Iterating gives the (key, value) pairs in order, so a ``Metadata`` can be passed
    wherever metadata pairs are accepted (``metadata=`` of a call).  Indexing gives a
    key's first value; ``get_all`` gives all of them.  ``len`` counts the pairs.
    """

    def __init__(self, *args: tuple[str, MetadataValue]) -> None:
        self._values: dict[str, list[MetadataValue]] = {}
        for key, value in args:
            self.add(key, value)

    @classmethod
    def from_tuple(cls, raw_metadata: Optional[Iterable[tuple[str, MetadataValue]]]
                   ) -> Metadata:
        """A Metadata of (key, value) pairs (None: empty)."""
        return cls(*(raw_metadata or ()))

    def add(self, key: str, value: MetadataValue) -> None:
        """Adds a value for ``key`` after those it has."""
        self._values.setdefault(key, []).append(value)

    def __len__(self) -> int:
        return sum(len(values) for values in self._values.values())

    def __getitem__(self, key: str) -> MetadataValue:
        values = self._values.get(key)
        if not values:
            raise KeyError(key)
        return values[0]

    def __setitem__(self, key: str, value: MetadataValue) -> None:
        """Replaces the first value of ``key`` (adds it when the key is absent)."""
        values = self._values.get(key)
        if values:
            values[0] = value
        else:
            self._values[key] = [value]

    def __delitem__(self, key: str) -> None:
        """Removes the first value of ``key``; KeyError when it has none."""
        values = self._values.get(key)
        if not values:
            raise KeyError(key)
        del values[0]
        if not values:
            del self._values[key]

    def delete_all(self, key: str) -> None:
        """Removes every value of ``key``; KeyError when it has none."""
        del self._values[key]

    def get_all(self, key: str) -> list[MetadataValue]:
        """Every value of ``key``, in order (empty when absent)."""
        return list(self._values.get(key, ()))

    def set_all(self, key: str, values: Iterable[MetadataValue]) -> None:
        """Makes ``values`` the values of ``key``."""
        self._values[key] = list(values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[tuple[str, MetadataValue]]:  # type: ignore[override]
        for key, values in self._values.items():
            for value in values:
                yield key, value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Metadata):
            return self._values == other._values
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __add__(self, other: Any) -> Metadata:
        if isinstance(other, (Metadata, tuple)):
            pairs: list[tuple[str, MetadataValue]] = [*self, *other]
            return Metadata(*pairs)
        return NotImplemented

    def __repr__(self) -> str:
        return f"{type(self).__name__}({tuple(self)!r})"


class RpcContext(abc.ABC):
    """What every asyncio RPC offers, whatever its shape."""

    __slots__ = ()

    @abc.abstractmethod
    def cancelled(self) -> bool:
        """True if the RPC was cancelled."""

    @abc.abstractmethod
    def done(self) -> bool:
        """True once the RPC has ended."""

    @abc.abstractmethod
    def time_remaining(self) -> Optional[float]:
        """Seconds left before the deadline, or None without one."""

    @abc.abstractmethod
    def cancel(self) -> bool:
        """Ends the RPC with CANCELLED; True if this cancelled a running RPC."""

    @abc.abstractmethod
    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        """Arranges for ``callback(call)`` to run once the RPC has ended (at once if it
        has)."""


class Call(RpcContext):
    """An asyncio RPC seen from the client: its metadata and final status."""

    __slots__ = ()

    @abc.abstractmethod
    async def initial_metadata(self) -> ResponseMetadata:
        """The response headers' metadata, once they arrive."""

    @abc.abstractmethod
    async def trailing_metadata(self) -> ResponseMetadata:
        """The response trailers' metadata, once the RPC has ended."""

    @abc.abstractmethod
    async def code(self) -> StatusCode:
        """The final status code, once the RPC has ended."""

    @abc.abstractmethod
    async def details(self) -> Optional[str]:
        """The final status message, once the RPC has ended."""

    @abc.abstractmethod
    async def wait_for_connection(self) -> None:
        """Returns once the RPC is under way on a connection (its headers arrived) or
        has ended; raises the RPC's error if it failed."""


class UnaryUnaryCall(Call, Generic[RequestT, ResponseT]):
    """A unary asyncio RPC: awaiting it gives the response."""

    __slots__ = ()

    @abc.abstractmethod
    def __await__(self) -> Generator[Any, None, ResponseT]:
        """Waits for the response; raises ``AioRpcError`` if the RPC fails."""


class UnaryStreamCall(Call, Generic[RequestT, ResponseT]):
    """A server-streaming asyncio RPC: ``async for`` or ``read()`` its responses."""

    __slots__ = ()

    @abc.abstractmethod
    def __aiter__(self) -> AsyncIterator[ResponseT]:
        """The responses, in order; a failed RPC raises ``AioRpcError``."""

    @abc.abstractmethod
    async def read(self) -> Any:
        """The next response, or ``EOF`` after the last one."""


class StreamUnaryCall(Call, Generic[RequestT, ResponseT]):
    """A client-streaming asyncio RPC: ``write()`` the requests, then await it."""

    __slots__ = ()

    @abc.abstractmethod
    async def write(self, request: RequestT) -> None:
        """Sends one request."""

    @abc.abstractmethod
    async def done_writing(self) -> None:
        """Ends the request stream."""

    @abc.abstractmethod
    def __await__(self) -> Generator[Any, None, ResponseT]:
        """Waits for the response; raises ``AioRpcError`` if the RPC fails."""


class StreamStreamCall(Call, Generic[RequestT, ResponseT]):
    """A bidirectional asyncio RPC: write requests and read responses."""

    __slots__ = ()

    @abc.abstractmethod
    def __aiter__(self) -> AsyncIterator[ResponseT]:
        """The responses, in order; a failed RPC raises ``AioRpcError``."""

    @abc.abstractmethod
    async def read(self) -> Any:
        """The next response, or ``EOF`` after the last one."""

    @abc.abstractmethod
    async def write(self, request: RequestT) -> None:
        """Sends one request."""

    @abc.abstractmethod
    async def done_writing(self) -> None:
        """Ends the request stream."""


class UnaryUnaryMultiCallable(abc.ABC, Generic[RequestT, ResponseT]):
    """Starts asyncio calls of one unary method."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, request: RequestT, *, timeout: Optional[float] = None,
                 metadata: Optional[MetadataType] = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> UnaryUnaryCall[RequestT, ResponseT]:
        """Starts the call; await the result for the response."""


class UnaryStreamMultiCallable(abc.ABC, Generic[RequestT, ResponseT]):
    """Starts asyncio calls of one server-streaming method."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, request: RequestT, *, timeout: Optional[float] = None,
                 metadata: Optional[MetadataType] = None, credentials: Any = None,
                 wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> UnaryStreamCall[RequestT, ResponseT]:
        """Starts the call; iterate the result for the responses."""


class StreamUnaryMultiCallable(abc.ABC, Generic[RequestT, ResponseT]):
    """Starts asyncio calls of one client-streaming method."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, request_iterator: Optional[RequestIterableType] = None, *,
                 timeout: Optional[float] = None, metadata: Optional[MetadataType] = None,
                 credentials: Any = None, wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> StreamUnaryCall[RequestT, ResponseT]:
        """Starts the call, sending the requests of ``request_iterator`` (sync or async)
        or, without one, those written to the call."""


class StreamStreamMultiCallable(abc.ABC, Generic[RequestT, ResponseT]):
    """Starts asyncio calls of one bidirectional-streaming method."""

    __slots__ = ()

    @abc.abstractmethod
    def __call__(self, request_iterator: Optional[RequestIterableType] = None, *,
                 timeout: Optional[float] = None, metadata: Optional[MetadataType] = None,
                 credentials: Any = None, wait_for_ready: Optional[bool] = None,
                 compression: Any = None) -> StreamStreamCall[RequestT, ResponseT]:
        """Starts the call, sending the requests of ``request_iterator`` (sync or async)
        or, without one, those written to the call."""


class Channel(abc.ABC):
    """An asyncio client channel; ``async with`` closes it at the end of the block."""

    __slots__ = ()

    @abc.abstractmethod
    async def __aenter__(self) -> Any:
        """The channel itself."""

    @abc.abstractmethod
    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc_val: Optional[BaseException],
                        exc_tb: Optional[TracebackType]) -> None:
        """Closes the channel."""

    @abc.abstractmethod
    async def close(self, grace: Optional[float] = None) -> None:
        """Ends the RPCs still running and releases the channel's resources."""

    @abc.abstractmethod
    def get_state(self, try_to_connect: bool = False) -> ChannelConnectivity:
        """The connectivity state now; ``try_to_connect`` connects an idle channel."""

    @abc.abstractmethod
    async def wait_for_state_change(self, last_observed_state: ChannelConnectivity) -> None:
        """Returns once the state is no longer ``last_observed_state``."""

    @abc.abstractmethod
    async def channel_ready(self) -> None:
        """Connects if needed and returns once the channel is READY."""

    @abc.abstractmethod
    def unary_unary(self, method: str, request_serializer: Serializer = None,
                    response_deserializer: Deserializer = None) -> UnaryUnaryMultiCallable:
        """The multi-callable of the unary method ``method``."""

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


class ClientInterceptor(abc.ABC):
    """The base of the four kinds of asyncio client interceptor."""

    __slots__ = ()

