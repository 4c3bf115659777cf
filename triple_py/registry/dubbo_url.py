"""Dubbo's URLs as providers register them: parse, print and encode.

A Dubbo provider registers itself as one string,
``protocol://[user[:password]@]host:port/path?key=value&key=value...``, whose parameters
(``application``, ``interface``, ``group``, ``version``, ``methods``, ``side``, ``weight``,
``enabled``/``disabled``, ``timestamp``, ``serialization``, ...) are written raw (never
escaped one by one) and sorted by key.  In ZooKeeper the whole string is escaped once, the
way ``java.net.URLEncoder`` escapes a form value, and becomes the name of a node under
``/dubbo/<interface>/providers``.

The rules here follow apache/dubbo 3.3 (``URL.toFullString``/``buildString``, ``URL.encode``,
``URLStrParser.parseEncodedStr``/``parseDecodedStr``) and apache/dubbo-go
(``registry/base_registry.go``: the same layout, escaped with Go's ``url.QueryEscape``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional
from urllib.parse import quote_plus, unquote_plus

__all__ = ["DEFAULT_WEIGHT", "DubboURL", "DubboURLError", "decode_node_name",
           "encode_node_name", "parse_dubbo_url"]

#: Dubbo's weight when a provider gives none (org.apache.dubbo.rpc.cluster.Constants).
DEFAULT_WEIGHT = 100
# Older providers registered "default.<key>" for some keys; Dubbo's parser also files the
# value under <key> when <key> itself is absent.
_DEFAULT_PREFIX = "default."
# Characters java.net.URLEncoder leaves alone besides letters and digits (space becomes '+').
_JAVA_URLENCODER_SAFE = "-_.*"
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


class DubboURLError(ValueError):
    """A string that is not a Dubbo URL (no protocol, a bad port, a bad %-escape)."""


def _frozen(mapping: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class DubboURL:
    """One parsed Dubbo URL. ``port`` is None when the URL has none (Dubbo's 0)."""

    protocol: str
    host: str
    port: Optional[int]
    path: str = ""
    parameters: Mapping[str, str] = field(default_factory=dict, hash=False)
    username: Optional[str] = None
    password: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", _frozen(self.parameters))

    def parameter(self, key: str) -> Optional[str]:
        """The value of ``key``, or None when absent or empty (Dubbo treats both alike)."""
        value = self.parameters.get(key)
        return value if value else None

    @property
    def interface(self) -> str:
        """The service interface: the ``interface`` parameter, else the path (Dubbo's
        ``getServiceInterface``; a simplified registration leaves the parameter out)."""
        return self.parameter("interface") or self.path

    @property
    def group(self) -> Optional[str]:
        """The service group, None when the provider has none."""
        return self.parameter("group")

    @property
    def version(self) -> Optional[str]:
        """The service version, None when the provider has none."""
        return self.parameter("version")

    @property
    def category(self) -> str:
        """The registry category the URL is filed under (``providers`` unless it says)."""
        return self.parameter("category") or "providers"

    @property
    def enabled(self) -> bool:
        """False when the provider is switched off, by Dubbo's rules: ``enabled`` other
        than "true" (any case) switches it off (UrlUtils.isMatch), and so does
        ``disabled=true`` (RegistryDirectory.toInvokers); an empty value counts as absent."""
        enabled = self.parameter("enabled")
        if enabled is not None and enabled.lower() != "true":
            return False
        disabled = self.parameter("disabled")
        return not (disabled is not None and disabled.lower() == "true")

    @property
    def weight(self) -> int:
        """The load-balancing weight (100 when absent, not a number, or negative)."""
        raw = self.parameter("weight")
        try:
            value = int(raw) if raw is not None else DEFAULT_WEIGHT
        except ValueError:
            return DEFAULT_WEIGHT
        return value if value >= 0 else DEFAULT_WEIGHT

    @property
    def methods(self) -> tuple[str, ...]:
        """The method names the provider lists (``methods=a,b``), in its order."""
        raw = self.parameter("methods")
        return tuple(m for m in raw.split(",") if m) if raw else ()

    def address(self) -> str:
        """``host:port`` (an IPv6 host in brackets); ``host`` alone when there is no port."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"

    def to_full_string(self) -> str:
        """The string a provider registers (Dubbo's ``URL.toFullString``): user info, host,
        port, path, then every parameter with a non-empty key, sorted by key, values raw."""
        out = [f"{self.protocol}://" if self.protocol else ""]
        if self.username:
            out.append(self.username)
            if self.password:
                out.append(f":{self.password}")
            out.append("@")
        if self.host:
            out.append(self.address())
        if self.path:
            out.append(f"/{self.path}")
        params = [f"{k}={(v or '').strip()}" for k, v in sorted(self.parameters.items()) if k]
        if params:
            out.append("?" + "&".join(params))
        return "".join(out)


def encode_node_name(full_url: str) -> str:
    """The ZooKeeper node name for a registered URL: the whole string escaped as
    ``java.net.URLEncoder.encode(s, "UTF-8")`` does (Dubbo's ``URL.encode``)."""
    # Python's quote leaves '~' alone (RFC 3986 unreserved); URLEncoder escapes it.
    return quote_plus(full_url, safe=_JAVA_URLENCODER_SAFE).replace("~", "%7E")


def decode_node_name(name: str) -> DubboURL:
    """Parses a node name under ``.../providers`` (an escaped URL) into a DubboURL.

    Undoes one level of escaping as ``URLDecoder.decode`` does ('+' is a space), which also
    reads names escaped by Go's ``url.QueryEscape`` or JavaScript's ``encodeURIComponent``.
    DubboURLError when the name is not an escaped Dubbo URL.
    """
    if _BAD_ESCAPE.search(name):
        raise DubboURLError(f"bad %-escape in registry node {name!r}")
    try:
        text = unquote_plus(name, errors="strict")
    except UnicodeDecodeError:
        raise DubboURLError(f"registry node {name!r} is not UTF-8 once unescaped") from None
    return parse_dubbo_url(text)


def _parse_parameters(query: str) -> dict[str, str]:
    """``k=v&k2=v2`` (';' also separates, as in Dubbo's parser) into a dict; a name
    without '=' gets "", and "default.<key>" also fills <key> when that is absent."""
    params: dict[str, str] = {}
    for item in re.split(r"[&;]", query):
        name, _, value = item.partition("=")
        if not name:
            continue
        params[name] = value
    for name, value in list(params.items()):
        if name.startswith(_DEFAULT_PREFIX):
            params.setdefault(name[len(_DEFAULT_PREFIX):], value)
    return params


def _split_host_port(hostport: str, url: str) -> tuple[str, Optional[int]]:
    """``host:port``, ``[v6]:port``, or a bare IPv6 address whose last group is the port
    (Dubbo splits at the last ':' unless a '%' scope id follows it)."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise DubboURLError(f"unclosed '[' in Dubbo URL {url!r}")
        host, rest = hostport[1:end], hostport[end + 1:]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise DubboURLError(f"bad host in Dubbo URL {url!r}")
        port_text = rest[1:]
    else:
        colon = hostport.rfind(":")
        if colon <= 0 or colon == len(hostport) - 1 or "%" in hostport[colon:]:
            return hostport, None
        host, port_text = hostport[:colon], hostport[colon + 1:]
    if not port_text.isdigit() or not 0 <= int(port_text) < 65536:
        raise DubboURLError(f"bad port {port_text!r} in Dubbo URL {url!r}")
    port = int(port_text)
    return host, (port or None)


def parse_dubbo_url(url: str) -> DubboURL:
    """Parses an unescaped Dubbo URL as Dubbo's ``URLStrParser.parseDecodedStr`` does.

    ``protocol://[user[:password]@]host[:port][/path][?k=v&...]``; anything after '#' in
    the part before '?' is dropped.  DubboURLError when there is no protocol or the port is
    not a number.
    """
    text = url.strip()
    body, _, query = text.partition("?")
    params = _parse_parameters(query) if query else {}
    body = body.split("#", 1)[0]
    scheme_end = body.find("://")
    if scheme_end <= 0:
        raise DubboURLError(f"no protocol in Dubbo URL {url!r}")
    protocol, rest = body[:scheme_end], body[scheme_end + 3:]
    authority, slash, path = rest.partition("/")
    username = password = None
    if "@" in authority:
        userinfo, authority = authority.rsplit("@", 1)
        username, colon, pw = userinfo.partition(":")
        password = pw if colon else None
    host, port = _split_host_port(authority, url)
    return DubboURL(protocol=protocol, host=host, port=port, path=path if slash else "",
                    parameters=params, username=username or None, password=password)
