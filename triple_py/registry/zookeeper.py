"""The ``zookeeper://`` resolver: Dubbo providers of one interface, watched in ZooKeeper.

Dubbo providers register at the interface level as ephemeral nodes
``/dubbo/<interface>/providers/<escaped provider URL>`` (apache/dubbo
``ZookeeperRegistry.toUrlPath``).  This resolver connects to the ensemble with kazoo, makes
sure the providers path exists (a Dubbo consumer creates it too, so that it can watch it
before any provider comes), watches its children with kazoo's ChildrenWatch, and on every
change hands the balancer the full list of matching providers as Endpoints.

Only ``providers`` is read: Dubbo's ``routers`` and ``configurators`` categories (routing
rules and dynamic overrides, including a ``disabled`` override written by dubbo-admin) are
ignored, and so is everything Dubbo 3 keeps for application-level discovery
(``/services``, ``/dubbo/mapping``, ``/dubbo/metadata``).  While ZooKeeper is unreachable
the last list stays in force; after a reconnect the list is read again.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, List, Optional, Sequence

from .._resolver import Endpoint
from .dubbo_url import DubboURL, DubboURLError, decode_node_name
from .provider_query import ProviderQuery, ZookeeperTarget, parse_zookeeper_target

__all__ = ["ZookeeperResolver", "endpoints_from_nodes"]

log = logging.getLogger(__name__)

#: ZooKeeper session timeout asked for: how long the ensemble keeps this client's session
#: (and the watch) across a lost connection.
SESSION_TIMEOUT_S = 10.0
#: How long start() waits for the first list, so that a channel's first calls find their
#: providers (a Dubbo consumer also waits for its first notification); with no answer by
#: then, start() returns and the list comes when ZooKeeper answers.
FIRST_UPDATE_TIMEOUT_S = 5.0
#: refresh() reads again at most this often: the balancer asks on every call that finds a
#: backend down, and the watch already reports every change.
REFRESH_MIN_INTERVAL_S = 1.0


def _endpoint(url: DubboURL) -> Endpoint:
    """The Endpoint for one provider; its attributes are the URL's parameters plus
    ``dubbo.protocol`` and ``dubbo.url`` (the full URL as registered)."""
    attributes = dict(url.parameters)
    attributes["dubbo.protocol"] = url.protocol
    attributes["dubbo.url"] = url.to_full_string()
    return Endpoint(host=url.host, port=url.port, kind="tcp", attributes=attributes)


def endpoints_from_nodes(names: Sequence[str], query: ProviderQuery) -> List[Endpoint]:
    """The Endpoints of the provider nodes ``names`` (children of a providers path) that
    ``query`` matches, one per host:port, sorted by address.

    A node that is not a Dubbo URL, or has no host or port, is skipped with a warning.  When
    one address is registered twice (a provider restarting before its old session
    expired), the node with the newest ``timestamp`` wins.
    """
    chosen: dict[tuple[str, int], DubboURL] = {}
    for name in names:
        try:
            url = decode_node_name(name)
        except DubboURLError as exc:
            log.warning("zookeeper resolver: skipping node %r: %s", name, exc)
            continue
        if not query.matches(url):
            continue
        if not url.host or url.port is None:
            log.warning("zookeeper resolver: skipping provider without host:port: %s",
                        url.to_full_string())
            continue
        key = (url.host, url.port)
        old = chosen.get(key)
        if old is None or _timestamp(url) > _timestamp(old):
            chosen[key] = url
    return [_endpoint(chosen[key]) for key in sorted(chosen)]


def _timestamp(url: DubboURL) -> int:
    raw = url.parameter("timestamp")
    return int(raw) if raw is not None and raw.isdigit() else 0


class ZookeeperResolver:
    """Resolver for ``zookeeper://host:port/<interface>?group=&version=&protocol=``.

    ``start(on_update)`` connects and waits up to ``first_update_timeout`` seconds for the
    first read; ``on_update`` gets the full list of matching providers then, and again
    after every change that alters it.  ``refresh()`` asks for a new read (without
    blocking); ``close()`` ends the session, and no update is delivered once it has
    returned.  Do not call ``close()`` from inside ``on_update``.
    """

    def __init__(self, target: ZookeeperTarget, session_timeout: float = SESSION_TIMEOUT_S,
                 first_update_timeout: float = FIRST_UPDATE_TIMEOUT_S) -> None:
        self.target = target
        self._session_timeout = session_timeout
        self._first_update_timeout = first_update_timeout
        # One read-and-deliver at a time, in order.  Reentrant so that close() from inside
        # on_update does not deadlock (it must not, though, wait for kazoo's threads there).
        self._lock = threading.RLock()
        self._closed = False
        self._client = None  # kazoo.client.KazooClient once started
        self._on_update: Optional[Callable[[List[Endpoint]], None]] = None
        self._last: Optional[List[Endpoint]] = None
        self._first = threading.Event()
        self._refresh_lock = threading.Lock()
        self._refresh_due = 0.0  # time.monotonic() before which refresh() does nothing

    @classmethod
    def from_target(cls, target: str) -> "ZookeeperResolver":
        """A resolver for a ``zookeeper://`` target string (ValueError if malformed)."""
        return cls(parse_zookeeper_target(target))

    def start(self, on_update: Callable[[List[Endpoint]], None]) -> None:
        """Connects to the ensemble, starts watching the providers in the background, and
        returns after the first list was delivered or ``first_update_timeout`` s."""
        from kazoo.client import KazooClient
        from kazoo.retry import KazooRetry

        with self._lock:
            if self._client is not None or self._closed:
                raise RuntimeError("ZookeeperResolver.start called twice or after close")
            self._on_update = on_update
            retry = KazooRetry(max_tries=-1, delay=0.1, max_delay=2.0)
            self._client = KazooClient(hosts=self.target.hosts, timeout=self._session_timeout,
                                       connection_retry=retry, command_retry=dict(max_tries=3),
                                       logger=log)
        client = self._client
        client.handler.spawn(self._watch_when_connected, client, client.start_async())
        self._first.wait(self._first_update_timeout)

    def wait_first_update(self, timeout: float) -> bool:
        """Blocks until the first list was delivered (True) or ``timeout`` s passed."""
        return self._first.wait(timeout)

    def _watch_when_connected(self, client, connected: threading.Event) -> None:
        """Waits for the session, then creates the providers path if missing and sets the
        ChildrenWatch (which re-arms itself across reconnects)."""
        from kazoo.exceptions import KazooException
        from kazoo.recipe.watchers import ChildrenWatch

        while not connected.wait(0.5):
            if self._closed:
                return
        path = self.target.providers_path
        try:
            client.ensure_path(path)
            ChildrenWatch(client, path, self._on_children)
        except KazooException as exc:  # lost the connection meanwhile: try on the next one
            if self._closed:
                return
            log.warning("zookeeper resolver: cannot watch %s on %s: %s; retrying on "
                        "reconnect", path, self.target.hosts, exc)

            def on_state(state: str) -> Optional[bool]:
                if state == "CONNECTED" and not self._closed:
                    ready = threading.Event()
                    ready.set()
                    client.handler.spawn(self._watch_when_connected, client, ready)
                    return True  # one retry per reconnect: remove this listener
                return None
            client.add_listener(on_state)

    def _on_children(self, children: List[str]) -> Optional[bool]:
        """ChildrenWatch callback: re-reads under the lock, so that a slow refresh cannot
        deliver an older list after this one."""
        if self._closed:
            return False
        self._reload(force=False)
        return None

    def _reload(self, force: bool) -> None:
        from kazoo.exceptions import KazooException, NoNodeError

        with self._lock:
            if self._closed:
                return
            try:
                names = self._client.get_children(self.target.providers_path)
            except NoNodeError:
                names = []
            except KazooException as exc:
                log.warning("zookeeper resolver: reading %s failed: %s; keeping %d providers",
                            self.target.providers_path, exc, len(self._last or []))
                return
            endpoints = endpoints_from_nodes(names, self.target.query)
            if not force and endpoints == self._last:
                return
            self._last = endpoints
            assert self._on_update is not None
            self._on_update(list(endpoints))
            self._first.set()

    def refresh(self) -> None:
        """Asks for a fresh read of the providers, delivered even if unchanged; at most
        one every REFRESH_MIN_INTERVAL_S (other calls meanwhile do nothing).  Returns at
        once: the read runs on kazoo's worker thread."""
        client = self._client
        if client is None or self._closed or not client.connected:
            return
        with self._refresh_lock:
            now = time.monotonic()
            if now < self._refresh_due:
                return
            self._refresh_due = now + REFRESH_MIN_INTERVAL_S
        client.handler.spawn(self._reload, True)

    def close(self) -> None:
        """Stops watching and closes the ZooKeeper session. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            try:
                client.stop()
            finally:
                client.close()

    def __repr__(self) -> str:
        q = self.target.query
        return (f"ZookeeperResolver({self.target.hosts}, {q.interface}, group={q.group}, "
                f"version={q.version}, protocols={','.join(q.protocols)})")
