"""Call credentials with grpcio's API: ``metadata_call_credentials``,
``access_token_call_credentials``, ``composite_call_credentials`` and
``composite_channel_credentials``, and ``local_channel_credentials``.

Call credentials add request metadata to every call they apply to.  A plugin
(``AuthMetadataPlugin``) runs on a daemon helper thread (``_helper_threads``), never on
the C I/O thread, never on the caller's thread, never behind other plugins still
running, and never joined at exit: the call waits for its callback up to the call's
deadline (an asyncio call also until it is cancelled).  Metadata the core would refuse
(a bad key, a value with a control character) ends the call with UNAVAILABLE "Illegal
metadata", as grpcio does.  A plugin that raises or reports an error ends the
call with UNAVAILABLE ("Getting metadata from plugin failed with error: ..."),
as grpcio does, or with the plugin error's own code when it is an ``RpcError``
that has one; one that is still running at the deadline ends it with
DEADLINE_EXCEEDED.  Over a plaintext channel call credentials are refused with
UNAUTHENTICATED, as grpcio refuses them, unless the channel was made with
``local_channel_credentials()``.
"""
from __future__ import annotations

import asyncio
import enum
import functools
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional, Sequence

from . import _triple
from ._credentials import ChannelCredentials
from ._helper_threads import helpers, wake_soon
from ._status import StatusCode
from . import _types as abstract
from ._types import AuthMetadataPluginCallback

Metadata = tuple[tuple[str, Any], ...]
PluginCallback = Callable[[Optional[Sequence[tuple[str, Any]]], Optional[Exception]], None]


class _ContextFields(NamedTuple):
    service_url: str  #: scheme://authority/package.Service
    method_name: str  #: the method's name, without the service


class AuthMetadataContext(_ContextFields, abstract.AuthMetadataContext):
    """What a plugin is told about the call (a ``grpc.AuthMetadataContext``)."""

    __slots__ = ()


class CallCredentials:
    """Credentials that add metadata to each call (grpcio's ``grpc.CallCredentials``).

    Made by ``metadata_call_credentials``, ``access_token_call_credentials`` or
    ``composite_call_credentials``; each plugin of the list runs in order.
    """

    def __init__(self, plugins: tuple[Any, ...]) -> None:
        self._plugins = plugins

    def __repr__(self) -> str:
        return f"CallCredentials({len(self._plugins)} plugin(s))"


class LocalConnectionType(enum.Enum):
    """Kinds of local connection (grpcio's ``grpc.LocalConnectionType``)."""

    UDS = 0
    LOCAL_TCP = 1


class _AccessToken:
    """The plugin of ``access_token_call_credentials``: static, runs inline."""

    def __init__(self, token: str) -> None:
        self.metadata: Metadata = (("authorization", f"Bearer {token}"),)


def metadata_call_credentials(metadata_plugin: Callable[[abstract.AuthMetadataContext,
                                                         AuthMetadataPluginCallback], None],
                              name: Optional[str] = None) -> CallCredentials:
    """Call credentials from a plugin ``plugin(context, callback)`` (see the module)."""
    if not callable(metadata_plugin):
        raise TypeError("metadata_plugin must be callable as plugin(context, callback)")
    return CallCredentials((metadata_plugin,))


def access_token_call_credentials(access_token: str) -> CallCredentials:
    """Call credentials that send ``authorization: Bearer <access_token>``."""
    if not isinstance(access_token, str):
        raise TypeError("access_token must be a str")
    return CallCredentials((_AccessToken(access_token),))


def composite_call_credentials(*call_credentials: CallCredentials) -> CallCredentials:
    """One CallCredentials applying each of ``call_credentials`` in order."""
    if len(call_credentials) < 2:
        raise ValueError("composite_call_credentials needs at least two CallCredentials")
    return CallCredentials(_plugins_of(call_credentials))


def composite_channel_credentials(channel_credentials: ChannelCredentials,
                                  *call_credentials: CallCredentials) -> ChannelCredentials:
    """Channel credentials whose channel applies ``call_credentials`` to every call."""
    if not isinstance(channel_credentials, ChannelCredentials):
        raise TypeError("channel_credentials must be ChannelCredentials")
    if not call_credentials:
        raise ValueError("composite_channel_credentials needs at least one CallCredentials")
    plugins = channel_credentials.call_plugins + _plugins_of(call_credentials)
    return ChannelCredentials(channel_credentials.root_certificates,
                              channel_credentials.private_key,
                              channel_credentials.certificate_chain,
                              local=channel_credentials.local, call_plugins=plugins)


def local_channel_credentials(local_connect_type: LocalConnectionType =
                              LocalConnectionType.LOCAL_TCP) -> ChannelCredentials:
    """Credentials for a plaintext channel to this machine that may carry call
    credentials (grpcio's ``local_channel_credentials``).  Only ``LOCAL_TCP`` is
    supported, and the target must be a loopback address or ``localhost``."""
    if local_connect_type is not LocalConnectionType.LOCAL_TCP:
        raise ValueError("only LocalConnectionType.LOCAL_TCP is supported")
    return ChannelCredentials(local=True)


def _plugins_of(call_credentials: Sequence[CallCredentials]) -> tuple[Any, ...]:
    plugins: tuple[Any, ...] = ()
    for creds in call_credentials:
        if not isinstance(creds, CallCredentials):
            raise TypeError(f"expected CallCredentials, got {type(creds).__name__}")
        plugins += creds._plugins
    return plugins


@dataclass
class PluginFailure(Exception):
    """Why call credentials could not produce their metadata."""

    code: StatusCode
    details: str


class _Answer(AuthMetadataPluginCallback):
    """The one answer of a plugin, set by calling it (the plugin's callback) from any
    thread."""

    def __init__(self, on_answer: Callable[[], None]) -> None:
        self._once = threading.Lock()  # taken by the first callback
        self._on_answer = on_answer  # told, from the plugin's thread, once answered
        self.metadata: Optional[Sequence[tuple[str, Any]]] = None
        self.error: Optional[BaseException] = None

    def callback(self, metadata: Optional[Sequence[tuple[str, Any]]],
                 error: Optional[Exception]) -> None:
        if not self._once.acquire(blocking=False):
            return  # a second callback is ignored, as grpcio ignores it
        self.metadata, self.error = metadata, error
        self._on_answer()

    __call__ = callback

    def run(self, plugin: Any, context: AuthMetadataContext) -> None:
        try:
            plugin(context, self)
        except Exception as exc:  # the plugin itself failed: the call fails
            self.callback(None, exc)

    def start(self, plugin: Any, context: AuthMetadataContext) -> None:
        """Runs ``plugin`` on a helper thread (_helper_threads: a daemon thread, never
        one that waits long behind other plugins)."""
        helpers.submit(lambda: self.run(plugin, context))

    def added(self) -> list[tuple[str, Any]]:
        """The metadata answered; raises the PluginFailure the call ends with."""
        if self.error is not None:
            raise _failed(self.error)
        return _legal(self.metadata)


def _failed(error: BaseException) -> PluginFailure:
    code = getattr(error, "code", None)
    own = code() if callable(code) else None
    if isinstance(own, StatusCode) and own is not StatusCode.OK:
        details = getattr(error, "details", None)
        return PluginFailure(own, details() if callable(details) else str(error))
    return PluginFailure(StatusCode.UNAVAILABLE,
                         f"Getting metadata from plugin failed with error: {error}")


def plugin_metadata(plugins: tuple[Any, ...], context: AuthMetadataContext,
                    deadline: Optional[float]) -> Metadata:
    """The metadata every plugin adds, in order; raises PluginFailure.

    ``deadline`` is a ``time.monotonic()`` instant (None: wait as long as it takes).
    """
    out: list[tuple[str, Any]] = []
    for plugin in plugins:
        if isinstance(plugin, _AccessToken):
            out.extend(plugin.metadata)
            continue
        answered = threading.Event()
        answer = _Answer(answered.set)
        answer.start(plugin, context)
        if not answered.wait(_left(deadline)):
            raise _deadline_exceeded()
        out.extend(answer.added())
    return tuple(out)


async def plugin_metadata_async(plugins: tuple[Any, ...], context: AuthMetadataContext,
                                deadline: Optional[float]) -> Metadata:
    """``plugin_metadata`` for an asyncio call: the plugins run on helper threads and the
    loop awaits their callbacks, never blocking; cancelling the awaiting task stops the
    wait at once (a plugin that never answers is left to its daemon thread)."""
    loop = asyncio.get_running_loop()
    out: list[tuple[str, Any]] = []
    for plugin in plugins:
        if isinstance(plugin, _AccessToken):
            out.extend(plugin.metadata)
            continue
        answered: asyncio.Future[None] = loop.create_future()
        answer = _Answer(functools.partial(wake_soon, loop, answered))
        answer.start(plugin, context)
        try:
            await asyncio.wait_for(answered, _left(deadline))
        except asyncio.TimeoutError:
            raise _deadline_exceeded() from None
        out.extend(answer.added())
    return tuple(out)


def _left(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _deadline_exceeded() -> PluginFailure:
    return PluginFailure(StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")


def _illegal() -> PluginFailure:
    return PluginFailure(StatusCode.UNAVAILABLE, "Illegal metadata")


def _legal(metadata: Any) -> list[tuple[str, Any]]:
    """A plugin's metadata as (key, value) pairs; PluginFailure UNAVAILABLE "Illegal
    metadata" (grpcio's words) unless every pair is one the core would send."""
    try:
        pairs = [(k, v) for k, v in (metadata or ())]
    except (TypeError, ValueError):
        raise _illegal() from None
    for key, value in pairs:
        if not isinstance(key, str) or not isinstance(value, (str, bytes)) or \
                (key.endswith("-bin") and not isinstance(value, bytes)) or \
                not _triple.metadata_legal(key, value):
            raise _illegal()
    return pairs
