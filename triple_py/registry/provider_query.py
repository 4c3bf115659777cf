"""Which registered providers a ``zookeeper://`` channel uses, and the target that says so.

    zookeeper://127.0.0.1:2181/benchmark.BenchmarkService?group=g&version=1.0.0&protocol=tri

The authority is the ZooKeeper ensemble (``host:port``, several joined by ','), the path the
Dubbo service interface, and the query the filters.  A provider matches as a Dubbo consumer
would match it (apache/dubbo 3.3 ``UrlUtils.isMatch`` and ``RegistryDirectory``):

- interface: equal (a provider registered for ``*`` matches any);
- category: ``providers`` (the default when the URL has none);
- group: no ``group`` matches only providers without a group; ``*`` matches any; otherwise
  the provider's group must be one of the comma-separated groups given;
- version: no ``version`` matches only providers without a version; ``*`` matches any;
  otherwise equal (no lists: Dubbo has none for versions);
- protocol: one of the comma-separated protocols given (``tri`` when the target says none);
  only the HTTP/2 ones this client speaks are accepted, ``tri`` and ``grpc``;
- enabled: a provider with ``enabled`` other than true, or ``disabled=true``, is left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from urllib.parse import parse_qsl, unquote, urlsplit

from .dubbo_url import DubboURL, encode_node_name

__all__ = ["ANY", "DEFAULT_PROTOCOL", "SPOKEN_PROTOCOLS", "ProviderQuery", "ZookeeperTarget",
           "parse_zookeeper_target"]

ANY = "*"
DEFAULT_PROTOCOL = "tri"
#: Dubbo protocols whose providers answer HTTP/2 gRPC or Triple calls.
SPOKEN_PROTOCOLS = ("tri", "grpc")
_QUERY_KEYS = ("group", "version", "protocol")


def _empty_as_none(value: Optional[str]) -> Optional[str]:
    return value if value else None


@dataclass(frozen=True)
class ProviderQuery:
    """The service a consumer asks for: interface, group, version and protocols."""

    interface: str
    group: Optional[str] = None
    version: Optional[str] = None
    protocols: tuple[str, ...] = (DEFAULT_PROTOCOL,)

    def matches(self, url: DubboURL) -> bool:
        """True when ``url`` is a provider this consumer would call."""
        if not (url.interface == self.interface or url.interface == ANY):
            return False
        if url.category != "providers" or url.protocol not in self.protocols:
            return False
        if not url.enabled:
            return False
        return self._group_matches(url.group) and self._version_matches(url.version)

    def _group_matches(self, provider_group: Optional[str]) -> bool:
        if self.group is None:
            return provider_group is None
        if self.group == ANY:
            return True
        return provider_group is not None and provider_group in self.group.split(",")

    def _version_matches(self, provider_version: Optional[str]) -> bool:
        if self.version is None:
            return provider_version is None
        return self.version == ANY or self.version == provider_version


@dataclass(frozen=True)
class ZookeeperTarget:
    """A parsed ``zookeeper://`` target: the ensemble to ask, and what to ask it for."""

    hosts: str  # kazoo's connect string: "host:port[,host:port...]"
    query: ProviderQuery

    @property
    def providers_path(self) -> str:
        """Where Dubbo providers of the interface register: ``/dubbo/<interface>/providers``
        (the interface escaped as Dubbo's ``URL.encode`` does; a Java name needs none)."""
        return f"/dubbo/{encode_node_name(self.query.interface)}/providers"


def parse_zookeeper_target(target: str) -> ZookeeperTarget:
    """Parses ``zookeeper://host:port[,host:port]/<interface>[?group=&version=&protocol=]``.

    ValueError, naming the problem, for another scheme, no ensemble, no interface, a
    repeated or unknown query key, or a protocol this client cannot speak.
    """
    parts = urlsplit(target.strip())
    if parts.scheme != "zookeeper":
        raise ValueError(f"not a zookeeper:// target: {target!r}")
    hosts = parts.netloc
    if not hosts or any(not h.strip() for h in hosts.split(",")):
        raise ValueError(f"zookeeper target {target!r} names no ZooKeeper host:port")
    interface = unquote(parts.path.lstrip("/"))
    if not interface or "/" in interface:
        raise ValueError(f"zookeeper target {target!r}: the path must be one Dubbo "
                         f"interface name, e.g. zookeeper://127.0.0.1:2181/pkg.Service")
    values: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False):
        if key not in _QUERY_KEYS:
            raise ValueError(f"zookeeper target {target!r}: unknown parameter {key!r} "
                             f"(known: {', '.join(_QUERY_KEYS)})")
        if key in values:
            raise ValueError(f"zookeeper target {target!r}: {key!r} given twice")
        values[key] = value
    protocols = tuple(p for p in values.get("protocol", DEFAULT_PROTOCOL).split(",") if p)
    unknown = [p for p in protocols if p not in SPOKEN_PROTOCOLS]
    if not protocols or unknown:
        raise ValueError(f"zookeeper target {target!r}: protocol must be one or more of "
                         f"{', '.join(SPOKEN_PROTOCOLS)} (this client speaks gRPC and Triple "
                         f"over HTTP/2), not {values.get('protocol')!r}")
    query = ProviderQuery(interface=interface, group=_empty_as_none(values.get("group")),
                          version=_empty_as_none(values.get("version")), protocols=protocols)
    return ZookeeperTarget(hosts=hosts, query=query)
