"""Where the load goes: a ``host:port`` target, a registry target, or the embedded server.

A registry target (a scheme whose resolver finds backends by service name, such as
``zookeeper://127.0.0.1:2181/benchmark.BenchmarkService``) is resolved once, when the run
starts (:func:`load_target`), into a fixed target: ``host:port`` for one backend,
``ipv4:a:p,b:p`` (or ``ipv6:``) for several, which the Python arms spread round robin
(:func:`lb_channel_options`).  The backends stay those for the whole run.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, ContextManager, Iterator, List, Optional, Sequence, Tuple

from .._resolver import Endpoint, parse_target as parse_grpc_target, resolver_for
from .._target import parse_target
from .errors import ConfigError, TargetError
from .server_cpu import Served

__all__ = ["split_target", "embedded_server", "ServerFactory", "fixed_target", "load_target",
           "check_target", "is_registry_target", "resolve_once", "static_target",
           "lb_channel_options", "REGISTRY_TIMEOUT_S"]

#: How long the harness waits for a registry target's first backends.
REGISTRY_TIMEOUT_S = 10.0
# Schemes a target names its backends with directly (grpcio's): everything else that has
# a registered resolver is a registry.
_ADDRESS_SCHEMES = ("dns", "ipv4", "ipv6", "unix", "unix-abstract")

#: Makes a server for one round (or the whole run): a context manager giving "host:port",
#: or a ServerProcess (address and pid) when the server runs in a process of its own.
ServerFactory = Callable[[], ContextManager[Served]]


def split_target(target: str) -> Tuple[str, int]:
    """(host, port) of ``host:port``, ``[v6]:port`` or ``dns:///host:port``; ConfigError if bad."""
    if target.startswith(("ipv4:", "ipv6:")) and "," in target:
        raise ConfigError(f"target {target} lists several backends: the C load generator "
                          "loads one host:port (use a Python arm, e.g. --mode triple-py-sync)")
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
    """A factory for ``target`` (an external server: nothing to start; a registry target
    resolved once, now), or the embedded one."""
    if target is None:
        return embedded_server
    address = load_target(target)  # fails early on a malformed address

    @contextlib.contextmanager
    def external() -> Iterator[str]:
        yield address

    return external


def is_registry_target(target: str) -> bool:
    """True for a target whose backends a registry names (``zookeeper://...``)."""
    return parse_grpc_target(target).scheme not in _ADDRESS_SCHEMES


def _registry_resolver(target: str):
    """The (unstarted) resolver of a registry target; ConfigError if malformed."""
    try:
        return resolver_for(parse_grpc_target(target))
    except ValueError as exc:
        raise ConfigError(f"bad target {target!r}: {exc}") from None


def check_target(target: str) -> None:
    """ConfigError for a malformed target (a registry target is not contacted)."""
    if is_registry_target(target):
        _registry_resolver(target).close()
    else:
        split_target(target)


def resolve_once(target: str, timeout: float = REGISTRY_TIMEOUT_S) -> List[Endpoint]:
    """The first non-empty list of endpoints the resolver of ``target`` reports; the
    resolver is closed before returning.  ConfigError for a malformed target, TargetError
    when no endpoint comes within ``timeout`` seconds."""
    resolver = _registry_resolver(target)
    got: List[Endpoint] = []
    ready = threading.Event()

    def on_update(endpoints: List[Endpoint]) -> None:
        if endpoints and not ready.is_set():
            got.extend(endpoints)
            ready.set()

    try:
        resolver.start(on_update)
        if not ready.wait(timeout):
            raise TargetError(f"{target}: no backend registered (waited {timeout:g} s)")
    finally:
        resolver.close()
    return got


def static_target(endpoints: Sequence[Endpoint]) -> str:
    """A target naming ``endpoints`` directly: ``host:port`` for one, else grpcio's
    ``ipv4:a:p,b:p`` or ``ipv6:[a]:p,[b]:p`` (ConfigError for a mix, or non-TCP ones)."""
    if any(e.kind != "tcp" or e.port is None for e in endpoints):
        raise ConfigError(f"cannot load {', '.join(map(str, endpoints))}: TCP host:port only")
    if len(endpoints) == 1:
        return str(endpoints[0])
    families = {"ipv6" if ":" in e.host else "ipv4" for e in endpoints}
    if len(families) != 1:
        raise ConfigError(f"cannot load both IPv4 and IPv6 backends in one run: "
                          f"{', '.join(map(str, endpoints))}")
    return f"{families.pop()}:{','.join(map(str, endpoints))}"


def load_target(target: str) -> str:
    """The target a run loads: a registry target resolved now into a fixed one
    (:func:`static_target`); any other checked as ``host:port`` and returned as given."""
    if is_registry_target(target):
        return static_target(resolve_once(target))
    check_target(target)
    return target


def lb_channel_options(target: str) -> List[Tuple[str, str]]:
    """Channel options spreading calls over every backend of a fixed target that lists
    several (round robin, as a Dubbo consumer or a gRPC pool would); none otherwise."""
    parsed = parse_grpc_target(target)
    if parsed.scheme in ("ipv4", "ipv6") and "," in parsed.endpoint.strip(","):
        return [("grpc.lb_policy_name", "round_robin")]
    return []
