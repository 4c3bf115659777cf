"""Service registries: where a channel finds its backends by service name.

``zookeeper://host:port/<interface>[?group=&version=&protocol=]`` reads the providers
Dubbo services register in ZooKeeper (triple_py.registry.zookeeper; the URL format is in
dubbo_url, the target syntax and filters in provider_query).  Importing this package
registers the scheme; kazoo is imported only when such a target is used.
"""
from __future__ import annotations

from .._resolver import ParsedTarget, Resolver, register_scheme

__all__ = ["ZOOKEEPER_SCHEME"]

ZOOKEEPER_SCHEME = "zookeeper"


def _zookeeper_resolver(parsed: ParsedTarget) -> Resolver:
    """The resolver of a ``zookeeper://`` target (ValueError if the target is malformed)."""
    from .zookeeper import ZookeeperResolver

    return ZookeeperResolver.from_target(parsed.target)


register_scheme(ZOOKEEPER_SCHEME, _zookeeper_resolver)
