"""``(host, port)`` of a target that names one TCP server (see _resolver for the rest)."""
from __future__ import annotations

from ._resolver import DEFAULT_PORT, parse_target as _parse, split_host_port, static_endpoints


def parse_target(target: str) -> tuple[str, str]:
    """Splits a grpcio-style target naming one TCP server into host and port:
    ``host:port``, ``[v6addr]:port``, ``host`` (port 443), ``dns:[///]host[:port]``,
    ``ipv4:addr:port``, ``ipv6:[addr]:port``.  ValueError for anything else (a list, a
    unix socket, a registry)."""
    parsed = _parse(target)
    if parsed.scheme == "dns":
        host, port = split_host_port(parsed.endpoint, DEFAULT_PORT, "target")
        return host, str(port)
    if parsed.scheme in ("ipv4", "ipv6"):
        endpoints = static_endpoints(parsed)
        if len(endpoints) == 1:
            return endpoints[0].host, str(endpoints[0].port)
    raise ValueError(f"invalid target {target!r}: not one host:port")
