"""What runs before a call starts when it has call credentials or ``wait_for_ready``:
the wait for READY, then the credential plugins, both within the call's deadline.

A call that fails here never reaches the C core; it is represented by an
``EndedCall``, which offers the C call's interface with a local status, so every
multi-callable turns it into its usual RpcError, failed future or failed stream.
"""
from __future__ import annotations

import time
from typing import Any, Optional, Union

from ._call_credentials import AuthMetadataContext, PluginFailure, plugin_metadata
from ._connectivity import wait_until_ready
from ._status import StatusCode

INSECURE_DETAILS = ("Established channel does not have a sufficient security level to "
                    "transfer call credential.")


class EndedCall:
    """A call that ended before it started: the C call's interface, nothing to wait for."""

    def __init__(self, code: StatusCode, details: str) -> None:
        self._code = code.value[0]
        self._details = details

    def code(self) -> int:
        return self._code

    def details(self) -> str:
        return self._details

    def unprocessed(self) -> int:
        return 0

    def response_started(self) -> bool:
        return False

    def metadata(self) -> tuple[tuple, tuple]:
        return (), ()

    def initial_metadata(self, timeout: Optional[float] = None) -> tuple:
        return ()

    def response(self) -> None:
        return None

    def read(self, timeout: Optional[float] = None) -> None:
        return None

    def read_nowait(self) -> None:
        return None

    def wait(self, timeout: Optional[float] = None) -> bool:
        return True

    def done(self) -> bool:
        return True

    def notifying(self) -> bool:
        return False

    def cancel(self, code: int = 1) -> bool:
        return False

    def write(self, payload: Any) -> bool:
        return False

    def can_write(self, size: int) -> bool:
        return False

    def flush(self) -> None:
        return None

    def done_writing(self) -> None:
        return None


Prepared = Union[tuple[Optional[float], Any], EndedCall]


def prepare(channel: Any, method: str, timeout: Optional[float], metadata: Any,
            credentials: Any, wait_for_ready: Optional[bool]) -> Prepared:
    """``(timeout left, metadata with the credentials')`` for the call, or the
    EndedCall it fails with (UNAUTHENTICATED over plaintext, the plugin's failure,
    DEADLINE_EXCEEDED while waiting)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    plugins = call_plugins(channel, credentials)
    if isinstance(plugins, EndedCall):
        return plugins
    ended = wait_to_start(channel, deadline, wait_for_ready)
    if ended is not None:
        return ended
    if plugins:
        try:
            added = plugin_metadata(plugins, plugin_context(channel, method), deadline)
        except PluginFailure as failure:
            return EndedCall(failure.code, failure.details)
        metadata = (*(metadata or ()), *added)
    return with_time_left(deadline, timeout, metadata)


def call_plugins(channel: Any, credentials: Any) -> Union[tuple[Any, ...], EndedCall]:
    """The plugins of a call (the channel's, then the call's), or the UNAUTHENTICATED
    EndedCall of call credentials over plaintext; TypeError for bad ``credentials``."""
    check_credentials(credentials)
    plugins = channel._call_plugins
    if credentials is not None:
        plugins = plugins + credentials._plugins
    if plugins and not channel._may_send_call_credentials:
        return EndedCall(StatusCode.UNAUTHENTICATED, INSECURE_DETAILS)
    return plugins


def must_wait(channel: Any, wait_for_ready: Optional[bool]) -> bool:
    """True if ``wait_to_start`` may block (``wait_for_ready``, or a balancer that makes
    calls queue now)."""
    must_queue = getattr(channel._core, "must_queue", None)
    return bool(wait_for_ready) or (must_queue is not None and must_queue())


def wait_to_start(channel: Any, deadline: Optional[float],
                  wait_for_ready: Optional[bool]) -> Optional[EndedCall]:
    """Blocks for ``wait_for_ready`` and a balancer's queue (``wait_ready``), within
    ``deadline``; the DEADLINE_EXCEEDED EndedCall if it passes first."""
    if wait_for_ready and not wait_until_ready(channel._core, deadline):
        return EndedCall(StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
    wait_ready = getattr(channel._core, "wait_ready", None)  # a balancer's queue
    return wait_ready(deadline) if wait_ready is not None else None


def plugin_context(channel: Any, method: str) -> AuthMetadataContext:
    """What the plugins are told of a call of ``method``."""
    service, _, name = method.rpartition("/")
    return AuthMetadataContext(f"{channel._url_prefix}{service}", name)


def with_time_left(deadline: Optional[float], timeout: Optional[float],
                   metadata: Any) -> Prepared:
    """``(timeout left, metadata)``, or DEADLINE_EXCEEDED if ``deadline`` has passed."""
    if deadline is not None:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            return EndedCall(StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
    return timeout, metadata


def has_work(channel: Any, credentials: Any, wait_for_ready: Optional[bool]) -> bool:
    """True if a call needs ``prepare`` (the fast path skips it otherwise)."""
    return credentials is not None or bool(wait_for_ready) or bool(channel._call_plugins)


def check_credentials(credentials: Any) -> None:
    """TypeError unless ``credentials`` is None or CallCredentials."""
    from ._call_credentials import CallCredentials
    if credentials is not None and not isinstance(credentials, CallCredentials):
        raise TypeError("credentials must be CallCredentials (e.g. "
                        "access_token_call_credentials(token)), got "
                        f"{type(credentials).__name__}")


