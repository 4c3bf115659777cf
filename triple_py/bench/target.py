"""Where the load goes: a ``host:port`` target, or the embedded echo server."""
from __future__ import annotations

import contextlib
from typing import Callable, ContextManager, Iterator, Optional, Tuple

from .._target import parse_target
from .errors import ConfigError
from .server_cpu import Served

__all__ = ["split_target", "embedded_server", "ServerFactory", "fixed_target"]

#: Makes a server for one round (or the whole run): a context manager giving "host:port",
#: or a ServerProcess (address and pid) when the server runs in a process of its own.
ServerFactory = Callable[[], ContextManager[Served]]


def split_target(target: str) -> Tuple[str, int]:
    """(host, port) of ``host:port``, ``[v6]:port`` or ``dns:///host:port``; ConfigError if bad."""
    try:
        host, port = parse_target(target)
    except ValueError:
        raise ConfigError(f"bad target {target!r} (expected host:port)") from None
    if ":" not in target.rsplit("]", 1)[-1]:
        raise ConfigError(f"bad target {target!r}: no port (expected host:port)")
    number = int(port)
    if not 0 < number < 65536:
        raise ConfigError(f"bad target {target!r}: port out of range")
    return host, number


@contextlib.contextmanager
def embedded_server(threads: int = 1) -> Iterator[str]:
    """Starts triple_py.testing.EchoServer on 127.0.0.1 (ephemeral port); yields its address."""
    from ..testing import EchoServer

    with EchoServer(threads=threads) as server:
        yield server.address


def fixed_target(target: Optional[str]) -> ServerFactory:
    """A factory for ``target`` (an external server: nothing to start), or the embedded one."""
    if target is None:
        return embedded_server
    split_target(target)  # fail early on a malformed address

    @contextlib.contextmanager
    def external() -> Iterator[str]:
        yield target

    return external
