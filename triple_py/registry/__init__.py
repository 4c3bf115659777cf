"""Service registries: where a channel finds its backends by service name.

``zookeeper://host:port/<interface>[?group=&version=&protocol=]`` reads the providers
Dubbo services register in ZooKeeper (triple_py.registry.zookeeper; the URL format is in
dubbo_url, the target syntax and filters in provider_query).  Importing this package
registers the scheme; kazoo is imported only when such a target is used.
"""
from __future__ import annotations

from typing import Any, Dict

from .._resolver import Endpoint, ParsedTarget, Resolver, register_scheme

__all__ = ["ZOOKEEPER_SCHEME", "with_service_key"]

ZOOKEEPER_SCHEME = "zookeeper"


def _zookeeper_resolver(parsed: ParsedTarget) -> Resolver:
    """The resolver of a ``zookeeper://`` target (ValueError if the target is malformed)."""
    from .zookeeper import ZookeeperResolver

    return ZookeeperResolver.from_target(parsed.target)


register_scheme(ZOOKEEPER_SCHEME, _zookeeper_resolver)


def with_service_key(core_kwargs: Dict[str, Any], endpoint: Endpoint) -> Dict[str, Any]:
    """The core channel keywords for a backend: a Dubbo provider found in a registry is
    called with its registered group and version (``tri-service-group`` and
    ``tri-service-version``, how a Dubbo port serving one interface in several groups or
    versions tells them apart), unless the channel sets ``triple.service_group`` /
    ``triple.service_version`` itself."""
    attrs = endpoint.attributes
    if "dubbo.url" not in attrs:
        return core_kwargs
    out = dict(core_kwargs)
    for key, attr in (("service_group", "group"), ("service_version", "version")):
        if not out.get(key) and attrs.get(attr):
            out[key] = attrs[attr]
    return out
