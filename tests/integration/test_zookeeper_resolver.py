"""The zookeeper:// resolver against a real ZooKeeper (Debian's), with providers registered
the way Dubbo providers register: one session each, an ephemeral node per service under
persistent /dubbo/<interface>/providers.  No RPC here: test_zookeeper_balancer.py sends
calls through the balancer."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest
from kazoo.client import KazooClient

from _zk_helpers import Updates, zk  # noqa: F401  (zk: the module's ZooKeeper fixture)
from triple_py.registry.zookeeper import ZookeeperResolver
from triple_py.registry.zookeeper_provider import ZookeeperProvider, provider_url

SERVICE = "benchmark.BenchmarkService"
METHODS = ("StreamCall", "UnaryCall")


@pytest.fixture
def service(request):
    """A service name of this test's own, so that tests share the server but no nodes."""
    return f"test.{request.node.name.replace('[', '_').replace(']', '')}.Svc"


def url(port: int, service: str, **kw):
    return provider_url(f"127.0.0.1:{port}", service, methods=METHODS, **kw)


@pytest.fixture
def resolvers():
    """Makes started resolvers and closes them all at the end."""
    made = []

    def make(target: str, updates: Updates) -> ZookeeperResolver:
        resolver = ZookeeperResolver.from_target(target)
        made.append(resolver)
        resolver.start(updates.deliver)
        return resolver

    yield make
    for resolver in made:
        resolver.close()


def test_reads_registered_providers_with_dubbo_filters(zk, service, resolvers):
    with ZookeeperProvider(zk.address, url(5001, service), url(5002, service, group="g"),
                           url(5003, service, version="1.0.0"),
                           url(5004, service, protocol="dubbo"),
                           url(5005, service, extra={"disabled": "true"}),
                           url(5006, service, extra={"enabled": "false"}),
                           url(5007, service, group="g", version="1.0.0", protocol="grpc")):
        base = f"zookeeper://{zk.address}/{service}"
        cases = {
            "": [5001],
            "?group=g": [5002],
            "?group=g,h&version=*": [5002],
            "?group=*&version=*": [5001, 5002, 5003],
            "?version=1.0.0": [5003],
            "?group=g&version=1.0.0&protocol=grpc": [5007],
            "?group=*&version=*&protocol=tri,grpc": [5001, 5002, 5003, 5007],
        }
        for query, ports in cases.items():
            updates = Updates()
            resolvers(base + query, updates)
            got = updates.wait_for(lambda eps: True)
            assert sorted(e.port for e in got) == ports, query
            assert all(e.host == "127.0.0.1" and e.kind == "tcp" for e in got)


def test_endpoint_attributes_carry_the_provider_url(zk, service, resolvers):
    registered = url(5101, service, group="g", version="2", extra={"weight": "7"})
    with ZookeeperProvider(zk.address, registered):
        updates = Updates()
        resolvers(f"zookeeper://{zk.address}/{service}?group=g&version=2", updates)
        [endpoint] = updates.wait_for(lambda eps: len(eps) == 1)
        attrs = endpoint.attributes
        assert attrs["dubbo.url"] == registered.to_full_string()
        assert attrs["dubbo.protocol"] == "tri"
        assert (attrs["group"], attrs["version"], attrs["weight"]) == ("g", "2", "7")
        assert attrs["side"] == "provider" and attrs["methods"] == "StreamCall,UnaryCall"


def test_watch_follows_providers_coming_and_going(zk, service, resolvers):
    updates = Updates()
    resolvers(f"zookeeper://{zk.address}/{service}", updates)
    updates.wait_addresses([])  # no provider yet: the path is created, the list is empty
    a = ZookeeperProvider(zk.address, url(5201, service)).start()
    b = ZookeeperProvider(zk.address, url(5202, service)).start()
    try:
        updates.wait_addresses([("127.0.0.1", 5201), ("127.0.0.1", 5202)])
        a.unregister(a.urls[0])  # Dubbo's unexport: the node is deleted
        updates.wait_addresses([("127.0.0.1", 5202)])
        b.close()  # the provider process ends: its session and ephemeral node go away
        updates.wait_addresses([])
        a.register(url(5203, service))
        updates.wait_addresses([("127.0.0.1", 5203)])
    finally:
        a.close()
        b.close()


def test_nodes_that_change_nothing_deliver_nothing(zk, service, resolvers):
    updates = Updates()
    resolvers(f"zookeeper://{zk.address}/{service}", updates)
    updates.wait_addresses([])
    with ZookeeperProvider(zk.address, url(5301, service, group="other"),
                           url(5302, service, extra={"enabled": "false"})):
        raw = KazooClient(hosts=zk.address)
        raw.start(timeout=15)
        try:
            raw.create(f"/dubbo/{service}/providers/not-a-url", b"")
            assert updates.quiet(1.5) is None
        finally:
            raw.stop()
            raw.close()


def test_same_address_twice_keeps_the_newest_registration(zk, service, resolvers):
    old = url(5401, service, extra={"timestamp": "1000", "weight": "1"})
    new = url(5401, service, extra={"timestamp": "2000", "weight": "2"})
    with ZookeeperProvider(zk.address, old, new):
        updates = Updates()
        resolvers(f"zookeeper://{zk.address}/{service}", updates)
        [endpoint] = updates.wait_for(lambda eps: len(eps) == 1)
        assert endpoint.attributes["weight"] == "2"


def test_refresh_delivers_the_current_list_at_most_once_a_second(zk, service, resolvers):
    with ZookeeperProvider(zk.address, url(5501, service)):
        updates = Updates()
        resolver = resolvers(f"zookeeper://{zk.address}/{service}", updates)
        updates.wait_addresses([("127.0.0.1", 5501)])
        for _ in range(1000):  # the balancer asks on every call that finds a backend down
            resolver.refresh()
        updates.wait_addresses([("127.0.0.1", 5501)], timeout=5)
        assert updates.quiet(0.5) is None  # one read for the burst


def test_no_update_after_close(zk, service):
    before = set(threading.enumerate())
    updates = Updates()
    resolver = ZookeeperResolver.from_target(f"zookeeper://{zk.address}/{service}")
    resolver.start(updates.deliver)
    updates.wait_addresses([])
    assert set(threading.enumerate()) - before  # kazoo's threads run meanwhile
    resolver.close()
    resolver.close()  # idempotent
    with ZookeeperProvider(zk.address, url(5601, service)):
        assert updates.quiet(1.5) is None
    resolver.refresh()  # after close: nothing, no error
    assert [t for t in set(threading.enumerate()) - before if t.is_alive()] == []


def test_unreachable_zookeeper_neither_blocks_nor_hangs_close():
    """start() gives up waiting for the first list after its timeout when nobody listens;
    close() ends the retries.  Run in a
    child process with a hard timeout: a hang here would be a hang of every channel."""
    code = textwrap.dedent("""
        import socket, time
        from triple_py.registry.zookeeper import ZookeeperResolver
        from triple_py.registry.provider_query import parse_zookeeper_target
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        r = ZookeeperResolver(parse_zookeeper_target(f"zookeeper://127.0.0.1:{port}/pkg.Svc"),
                              first_update_timeout=1.0)
        got = []
        t0 = time.monotonic(); r.start(got.append); started = time.monotonic() - t0
        assert 1.0 <= started < 3, started
        assert not r.wait_first_update(1.0) and got == []
        t0 = time.monotonic(); r.close(); closed = time.monotonic() - t0
        assert closed < 5, closed
        print("OK")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "OK", done.stderr[-2000:]


def test_bad_target_is_refused_before_connecting():
    with pytest.raises(ValueError, match="protocol must be"):
        ZookeeperResolver.from_target("zookeeper://127.0.0.1:1/pkg.Svc?protocol=dubbo")


def test_a_killed_provider_leaves_when_its_session_expires(zk, service, resolvers):
    """A provider process killed without unregistering: ZooKeeper deletes its node when
    the session times out (here 1 s), and the list follows."""
    code = textwrap.dedent(f"""
        import sys, time
        from triple_py.registry.zookeeper_provider import ZookeeperProvider, provider_url
        url = provider_url("127.0.0.1:5701", {service!r})
        ZookeeperProvider({zk.address!r}, url, session_timeout=1.0).start()
        print("REGISTERED", flush=True)
        time.sleep(60)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert child.stdout.readline().strip() == "REGISTERED"
        updates = Updates()
        resolvers(f"zookeeper://{zk.address}/{service}", updates)
        updates.wait_addresses([("127.0.0.1", 5701)])
        child.kill()
        updates.wait_addresses([])
    finally:
        child.kill()
        child.wait(10)


def test_zookeeper_outage_keeps_the_last_list():
    """While the ensemble is down, the providers last seen stay (no empty list); close()
    still returns promptly."""
    from triple_py.registry.zookeeper_server import LocalZookeeper

    with LocalZookeeper(tick_ms=200) as own:
        service = "outage.pkg.Svc"
        with ZookeeperProvider(own.address, url(5801, service)):
            updates = Updates()
            resolver = ZookeeperResolver.from_target(f"zookeeper://{own.address}/{service}")
            resolver.start(updates.deliver)
            try:
                updates.wait_addresses([("127.0.0.1", 5801)])
                own.stop()
                assert updates.quiet(3.0) is None
            finally:
                closer = threading.Thread(target=resolver.close, daemon=True)
                closer.start()
                closer.join(10)
                assert not closer.is_alive(), "close() hung with ZooKeeper down"
