"""Where the load goes: a target (any scheme a channel takes: ``host:port``,
``dns:``, ``ipv4:``/``ipv6:`` lists, ``unix:``, ``unix-abstract:``, a registered
registry such as ``zookeeper://``): checked, split and resolved to endpoints (the servers
the harness starts are in :mod:`triple_py.bench.running.servers`)."""
from __future__ import annotations

import threading
from typing import List, Tuple

from ..._resolver import (DEFAULT_PORT, Endpoint, parse_target as parse_uri, resolver_for,
                          split_host_port, static_endpoints)
from ..._target import parse_target
from ..errors import ConfigError, TargetError

__all__ = ["split_target", "check_target", "target_endpoints"]

RESOLVE_WAIT_S = 10.0  # how long target_endpoints waits for a registry's first answer


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


def check_target(target: str) -> None:
    """ConfigError unless ``target`` is well formed (a registry is not asked)."""
    try:
        parsed = parse_uri(target)
        if parsed.scheme == "dns":
            host, port = split_host_port(parsed.endpoint, DEFAULT_PORT, "target")
        elif parsed.scheme in ("ipv4", "ipv6", "unix", "unix-abstract"):
            static_endpoints(parsed)
    except ValueError as exc:
        raise ConfigError(f"bad target {target!r}: {exc}") from None
    if parsed.scheme == "dns" and ":" not in target.rsplit("]", 1)[-1]:
        raise ConfigError(f"bad target {target!r}: no port (expected host:port)")


def target_endpoints(target: str, wait: float = RESOLVE_WAIT_S) -> List[Endpoint]:
    """The servers of ``target``, resolved once (the C load generator spreads its
    connections over them): one for ``host:port``/``dns:`` (the C dial resolves the
    name itself), the list of ``ipv4:``/``ipv6:``, the socket of ``unix:``, or the
    first answer of a registry's resolver (TargetError if none within ``wait`` s)."""
    check_target(target)
    parsed = parse_uri(target)
    if parsed.scheme == "dns":
        host, port = split_host_port(parsed.endpoint, DEFAULT_PORT, "target")
        return [Endpoint(host, port)]
    if parsed.scheme in ("ipv4", "ipv6", "unix", "unix-abstract"):
        return static_endpoints(parsed)
    got: List[List[Endpoint]] = []
    answered = threading.Event()

    def on_update(endpoints: List[Endpoint]) -> None:
        if endpoints and not answered.is_set():
            got.append(list(endpoints))
            answered.set()
    resolver = resolver_for(parsed)
    try:
        resolver.start(on_update)
        if not answered.wait(wait):
            raise TargetError(f"{target}: no endpoint within {wait:g} s")
    finally:
        resolver.close()
    return got[0]

