"""The servers a run goes to: a fixed target (nothing to start) or the embedded echo server
(triple_py.testing.EchoServer), as factories the rounds call once per server."""
from __future__ import annotations

import contextlib
from typing import Callable, ContextManager, Iterator, Optional

from ...testing import EchoServer
from ..spec.target import check_target
from .server_cpu import Served

__all__ = ["ServerFactory", "embedded_server", "fixed_target"]

#: Makes a server for one round (or the whole run): a context manager giving "host:port",
#: or a ServerProcess (address and pid) when the server runs in a process of its own.
ServerFactory = Callable[[], ContextManager[Served]]


@contextlib.contextmanager
def embedded_server(threads: int = 1) -> Iterator[str]:
    """Starts triple_py.testing.EchoServer on 127.0.0.1 (ephemeral port); yields its address."""
    with EchoServer(threads=threads) as server:
        yield server.address


def fixed_target(target: Optional[str]) -> ServerFactory:
    """A factory for ``target`` (an external server: nothing to start), or the embedded one."""
    if target is None:
        return embedded_server
    check_target(target)  # fail early on a malformed address

    @contextlib.contextmanager
    def external() -> Iterator[str]:
        yield target

    return external
