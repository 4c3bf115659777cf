"""Parsing of gRPC target strings into (host, port)."""
from __future__ import annotations

DEFAULT_PORT = "443"


def parse_target(target: str) -> tuple[str, str]:
    """Splits a grpcio-style target into host and port.

    Accepts ``host:port``, ``[v6addr]:port``, ``host`` (port 443), and the
    ``dns:///``, ``dns:``, ``ipv4:`` and ``ipv6:`` scheme prefixes.
    """
    t = target.strip()
    for prefix in ("dns:///", "dns://", "dns:", "ipv4:", "ipv6:"):
        if t.startswith(prefix):
            t = t[len(prefix):]
            if prefix == "dns://" and "/" in t:  # dns://authority/host:port
                t = t.split("/", 1)[1]
            break
    if not t:
        raise ValueError(f"invalid target {target!r}")
    if t.startswith("["):
        end = t.find("]")
        if end < 0:
            raise ValueError(f"invalid target {target!r}")
        host, rest = t[1:end], t[end + 1:]
        port = rest[1:] if rest.startswith(":") else DEFAULT_PORT
    elif t.count(":") == 1:
        host, port = t.split(":")
    elif ":" in t:  # bare IPv6 address
        host, port = t, DEFAULT_PORT
    else:
        host, port = t, DEFAULT_PORT
    if not port.isdigit() or not host:
        raise ValueError(f"invalid target {target!r}")
    return host, port
