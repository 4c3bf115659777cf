"""Target names and resolvers: what a channel connects to.

A target string (grpcio's syntax, grpc/grpc ``doc/naming.md``) is parsed into a
``ParsedTarget`` (scheme, authority, endpoint part).  A *resolver*, made by the factory
registered for the scheme, turns it into a list of ``Endpoint``s and tells the channel
whenever that list changes.  The channel's balancer (``_balancer``) gives each endpoint a
backend (one C core channel, one HTTP/2 connection, one I/O thread) and spreads calls
over them.

The interface, kept stable for resolvers outside this module (the ZooKeeper registry of
``zookeeper://`` targets registers itself through ``register_scheme``):

``Endpoint(host, port, kind="tcp", attributes={})``
    ``host`` is an IP literal or a name for ``kind="tcp"``, the socket path for
    ``"unix"``, the name for ``"unix-abstract"``; ``port`` is None for the unix kinds.
    ``attributes`` carry resolver data (a Dubbo URL's parameters, say); the balancer
    ignores them.  Endpoints are compared by value: an update that lists an equal
    endpoint keeps its backend.

``Resolver`` (a protocol)
    ``start(on_update)``: begin; call ``on_update(list_of_endpoints)`` with the full
    list, now or later, and again on every change, from any thread.  ``refresh()``: a
    hint that a connection to one of the endpoints failed (the dns resolver then
    resolves again, at most every ``DNS_MIN_INTERVAL_S``).  ``close()``: stop; no
    ``on_update`` after it returns.

``register_scheme(scheme, factory)``
    ``factory(parsed_target) -> Resolver`` for targets ``scheme:...``.

Schemes built in (grpcio's): ``dns`` (the default, also for ``host:port`` and unknown
schemes), ``ipv4``, ``ipv6``, ``unix``, ``unix-abstract``.
"""
from __future__ import annotations

import ipaddress
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Protocol
from urllib.parse import quote

DEFAULT_PORT = 443  # grpc's default for dns targets without a port (naming.md)
DNS_MIN_INTERVAL_S = 30.0  # grpc's minimum time between two DNS resolutions


@dataclass(frozen=True)
class Endpoint:
    """One address a channel can connect to (see the module docstring)."""

    host: str
    port: Optional[int]
    kind: str = "tcp"  # "tcp" | "unix" | "unix-abstract"
    attributes: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def __str__(self) -> str:
        if self.kind != "tcp":
            return f"{self.kind}:{self.host}"
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ParsedTarget:
    """A target split as grpc core splits it: ``scheme:[//authority]path[?query]``.

    ``path`` is the URI path as written ("/abs/path" for ``unix:///abs/path``);
    ``endpoint`` the path without its leading "/" (what dns, ipv4 and ipv6 resolve);
    ``authority`` the URI's authority part (a DNS server for ``dns://8.8.8.8/host``,
    a ZooKeeper address for ``zookeeper://zk:2181/iface``); ``query`` the part after
    "?" (undecoded)."""

    target: str
    scheme: str
    authority: str
    path: str
    query: str = ""

    @property
    def endpoint(self) -> str:
        return self.path[1:] if self.path.startswith("/") else self.path

    def default_authority(self) -> str:
        """The ``:authority`` grpcio sends when ``grpc.default_authority`` is not set:
        "localhost" for unix sockets (grpc core's UnixResolverFactory), else the
        endpoint part %-encoded (grpc core's ResolverFactory::GetDefaultAuthority):
        ``host:port`` as written, the whole list for ``ipv4:a:1,b:2``."""
        if self.scheme in ("unix", "unix-abstract"):
            return "localhost"
        return quote(self.endpoint, safe=":[]@!$&'()*+,;=-._~")


class Resolver(Protocol):
    """Turns a target into endpoints (see the module docstring)."""

    def start(self, on_update: Callable[[List[Endpoint]], None]) -> None: ...

    def refresh(self) -> None: ...

    def close(self) -> None: ...


ResolverFactory = Callable[[ParsedTarget], Resolver]
_factories: Dict[str, ResolverFactory] = {}
_factories_lock = threading.Lock()


def register_scheme(scheme: str, factory: ResolverFactory) -> None:
    """Makes targets ``scheme:...`` resolve through ``factory(parsed_target)``."""
    if not scheme or scheme != scheme.lower() or ":" in scheme:
        raise ValueError(f"a scheme is lower-case and has no ':', not {scheme!r}")
    with _factories_lock:
        _factories[scheme] = factory


def registered(scheme: str) -> bool:
    """True if targets with this scheme have a resolver."""
    with _factories_lock:
        return scheme in _factories


def parse_target(target: str) -> ParsedTarget:
    """Splits ``target`` as grpcio does: a registered scheme is used as is; anything
    else (``host:port``, an unknown scheme) means ``dns:///target``.  Raises
    ValueError for an empty target."""
    if not isinstance(target, str) or not target.strip():
        raise ValueError(f"invalid target {target!r}: empty")
    t = target.strip()
    scheme, sep, rest = t.partition(":")
    if sep and registered(scheme.lower()):
        return _split(t, scheme.lower(), rest)
    return _split(t, "dns", "///" + t)


def _split(target: str, scheme: str, rest: str) -> ParsedTarget:
    rest, _, query = rest.partition("?")
    authority = ""
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
    return ParsedTarget(target, scheme, authority, rest, query)


def resolver_for(parsed: ParsedTarget) -> Resolver:
    """The resolver of a parsed target (its scheme's factory)."""
    with _factories_lock:
        factory = _factories.get(parsed.scheme)
    if factory is None:
        raise ValueError(f"no resolver for scheme {parsed.scheme!r} ({parsed.target!r})")
    return factory(parsed)


def split_host_port(hostport: str, default_port: Optional[int], what: str) -> tuple[str, int]:
    """``host[:port]`` or ``[v6]:port`` (or a bare IPv6 literal) into (host, port)."""
    s = hostport
    if s.startswith("["):
        end = s.find("]")
        if end < 0:
            raise ValueError(f"invalid {what} {hostport!r}: no ']'")
        host, tail = s[1:end], s[end + 1:]
        if tail and not tail.startswith(":"):
            raise ValueError(f"invalid {what} {hostport!r}")
        port_s = tail[1:] if tail else ""
    elif s.count(":") == 1:
        host, port_s = s.split(":")
    elif ":" in s:  # a bare IPv6 literal, no port
        host, port_s = s, ""
    else:
        host, port_s = s, ""
    if not host:
        raise ValueError(f"invalid {what} {hostport!r}: no host")
    if not port_s:
        if default_port is None:
            raise ValueError(f"invalid {what} {hostport!r}: a port is required")
        return host, default_port
    if not port_s.isdigit() or not 0 < int(port_s) < 65536:
        raise ValueError(f"invalid {what} {hostport!r}: bad port {port_s!r}")
    return host, int(port_s)


def static_endpoints(parsed: ParsedTarget) -> List[Endpoint]:
    """The endpoints of an ``ipv4:``, ``ipv6:``, ``unix:`` or ``unix-abstract:`` target
    (grpc core's sockaddr resolver: a comma-separated list, no authority)."""
    if parsed.authority:
        raise ValueError(f"invalid target {parsed.target!r}: {parsed.scheme}: takes no "
                         "authority (unix:///abs/path has three slashes)")
    if parsed.scheme in ("unix", "unix-abstract"):
        if not parsed.path or parsed.path == "/":
            raise ValueError(f"invalid target {parsed.target!r}: empty socket path")
        return [Endpoint(parsed.path, None, parsed.scheme)]
    out = []
    for part in parsed.endpoint.split(","):
        if not part:
            continue
        host, port = split_host_port(part, None, f"{parsed.scheme}: address")
        try:
            addr = ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"invalid target {parsed.target!r}: {host!r} is not an "
                             f"{parsed.scheme} address") from None
        if (addr.version == 4) != (parsed.scheme == "ipv4"):
            raise ValueError(f"invalid target {parsed.target!r}: {host!r} is not an "
                             f"{parsed.scheme} address")
        out.append(Endpoint(host, port))
    if not out:
        raise ValueError(f"invalid target {parsed.target!r}: no address")
    return out


class StaticResolver:
    """A fixed list of endpoints (ipv4:, ipv6:, unix:, unix-abstract:)."""

    def __init__(self, endpoints: List[Endpoint]) -> None:
        self._endpoints = list(endpoints)

    @classmethod
    def of(cls, parsed: ParsedTarget) -> "StaticResolver":
        return cls(static_endpoints(parsed))

    def start(self, on_update: Callable[[List[Endpoint]], None]) -> None:
        on_update(list(self._endpoints))

    def refresh(self) -> None:
        """Nothing to re-resolve."""

    def close(self) -> None:
        """Nothing to stop."""


class DnsResolver:
    """``dns:[//server/]host[:port]``: one endpoint per address of the name
    (getaddrinfo, AAAA and A as the system orders them), resolved at start and again
    on ``refresh()`` (a connection failed), at most every DNS_MIN_INTERVAL_S (grpc's
    rule), on a helper thread.  A DNS server in the authority is not supported (grpc's
    native resolver does not support it either): ValueError."""

    def __init__(self, parsed: ParsedTarget,
                 resolve: Optional[Callable[[str, int], List[str]]] = None) -> None:
        if parsed.authority:
            raise ValueError(f"invalid target {parsed.target!r}: a DNS server in the "
                             "authority is not supported")
        self.host, self.port = split_host_port(parsed.endpoint, DEFAULT_PORT, "dns target")
        self._resolve = resolve or _getaddrinfo
        self._lock = threading.Lock()
        self._on_update: Optional[Callable[[List[Endpoint]], None]] = None
        self._last = 0.0
        self._busy = False
        self._closed = False
        self._endpoints: List[Endpoint] = []

    def start(self, on_update: Callable[[List[Endpoint]], None]) -> None:
        self._on_update = on_update
        self._run()

    def refresh(self) -> None:
        with self._lock:
            if self._busy or self._closed or time.monotonic() - self._last < DNS_MIN_INTERVAL_S:
                return
            self._busy = True
        threading.Thread(target=self._run, daemon=True, name="triple_py-dns").start()

    def _run(self) -> None:
        with self._lock:
            self._last = time.monotonic()
            self._busy = True
        try:
            addrs = self._resolve(self.host, self.port)
        except OSError:
            addrs = []  # keep what we had: a failed lookup is not an empty answer
        endpoints = [Endpoint(a, self.port, attributes={"dns_name": self.host})
                     for a in addrs]
        with self._lock:
            self._busy = False
            changed = bool(endpoints) and endpoints != self._endpoints
            if changed:
                self._endpoints = endpoints
            notify = None if self._closed or not changed else self._on_update
        if notify is not None:
            notify(list(endpoints))
        elif not self._endpoints and self._on_update is not None and not self._closed:
            self._on_update([Endpoint(self.host, self.port)])  # the core resolves it

    def close(self) -> None:
        with self._lock:
            self._closed = True


def _getaddrinfo(host: str, port: int) -> List[str]:
    """The distinct addresses of ``host``, in getaddrinfo's order."""
    seen: List[str] = []
    for family, _, _, _, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        if family in (socket.AF_INET, socket.AF_INET6) and sockaddr[0] not in seen:
            seen.append(sockaddr[0])
    return seen


register_scheme("dns", DnsResolver)
for _scheme in ("ipv4", "ipv6", "unix", "unix-abstract"):
    register_scheme(_scheme, StaticResolver.of)
