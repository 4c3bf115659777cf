"""Register a server in ZooKeeper the way a Dubbo provider does (for tests and benchmarks).

    url = provider_url("127.0.0.1:50051", "benchmark.BenchmarkService",
                       methods=("StreamCall", "UnaryCall"))
    with ZookeeperProvider("127.0.0.1:2181", url):   # registered until the block ends
        ...

A Dubbo provider process holds one ZooKeeper session; each service it exports becomes an
ephemeral node ``/dubbo/<interface>/providers/<URL.encode(url.toFullString())>`` whose
parents are persistent nodes (apache/dubbo ``ZookeeperRegistry.doRegister`` and
``AbstractZookeeperClient.create``).  Curator, which Dubbo uses, stores the host's address
as each node's data; so does this.  The node goes away when the provider unregisters or its
session ends, which is how a consumer learns that a provider left.
"""
from __future__ import annotations

import os
import time
from typing import Mapping, Optional, Sequence

from .dubbo_url import DubboURL, encode_node_name

__all__ = ["ZookeeperProvider", "provider_url"]

DUBBO_ROOT = "/dubbo"


def provider_url(address: str, interface: str, *, protocol: str = "tri",
                 application: str = "triple-py-provider", group: Optional[str] = None,
                 version: Optional[str] = None, methods: Sequence[str] = (),
                 extra: Optional[Mapping[str, str]] = None) -> DubboURL:
    """The URL a Dubbo 3 Triple provider at ``address`` ("host:port") registers for
    ``interface``: the parameters Dubbo writes for an exported IDL service (application,
    anyhost, deprecated, dubbo, dynamic, generic, interface, methods, serialization, side,
    timestamp, pid), plus group, version and ``extra`` (weight, enabled, ...)."""
    host, _, port = address.rpartition(":")
    params = {
        "anyhost": "false", "application": application, "deprecated": "false",
        "dubbo": "2.0.2", "dynamic": "true", "generic": "false", "interface": interface,
        "methods": ",".join(sorted(methods)), "pid": str(os.getpid()),
        "serialization": "protobuf", "side": "provider",
        "timestamp": str(int(time.time() * 1000)),
    }
    if group:
        params["group"] = group
    if version:
        params["version"] = version
    params.update(extra or {})
    return DubboURL(protocol=protocol, host=host.strip("[]"), port=int(port), path=interface,
                    parameters={k: v for k, v in params.items() if v})


class ZookeeperProvider:
    """One provider's ZooKeeper session with its URLs registered as ephemeral nodes."""

    def __init__(self, hosts: str, *urls: DubboURL, session_timeout: float = 10.0) -> None:
        from kazoo.client import KazooClient

        self.hosts = hosts
        self.urls = list(urls)
        self._client = KazooClient(hosts=hosts, timeout=session_timeout)
        self._paths: dict[DubboURL, str] = {}

    @staticmethod
    def node_path(url: DubboURL) -> str:
        """Where ``url`` is registered: ``/dubbo/<interface>/providers/<escaped URL>``."""
        return (f"{DUBBO_ROOT}/{encode_node_name(url.interface)}/{url.category}/"
                f"{encode_node_name(url.to_full_string())}")

    def start(self, timeout: float = 15.0) -> "ZookeeperProvider":
        """Opens the session and registers every URL given to the constructor."""
        self._client.start(timeout=timeout)
        for url in self.urls:
            self.register(url)
        return self

    def register(self, url: DubboURL) -> str:
        """Creates the persistent parents and the ephemeral node of ``url``; its path."""
        path = self.node_path(url)
        data = url.host.encode()
        parent = path.rsplit("/", 1)[0]
        self._client.ensure_path(parent)
        self._client.create(path, data, ephemeral=True)
        self._paths[url] = path
        return path

    def unregister(self, url: DubboURL) -> None:
        """Deletes the node of ``url`` (what Dubbo does on unexport)."""
        path = self._paths.pop(url, None) or self.node_path(url)
        self._client.delete(path)

    def close(self) -> None:
        """Ends the session: ZooKeeper deletes every ephemeral node it holds. Idempotent."""
        self._paths.clear()
        self._client.stop()
        self._client.close()

    def __enter__(self) -> "ZookeeperProvider":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
