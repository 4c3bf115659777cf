"""Target strings parsed as grpcio parses them (grpc/grpc doc/naming.md), the endpoints
of the static schemes, and the default :authority of each scheme."""
from __future__ import annotations

import pytest

from triple_py._resolver import (DnsResolver, Endpoint, parse_target, register_scheme,
                                 static_endpoints)


@pytest.mark.parametrize("target, scheme, authority, endpoint, default_authority", [
    ("localhost:50051", "dns", "", "localhost:50051", "localhost:50051"),
    ("dns:///svc.example:443", "dns", "", "svc.example:443", "svc.example:443"),
    ("dns://8.8.8.8:53/svc.example", "dns", "8.8.8.8:53", "svc.example", "svc.example"),
    ("dns:svc.example", "dns", "", "svc.example", "svc.example"),
    ("[::1]:50051", "dns", "", "[::1]:50051", "[::1]:50051"),
    ("ipv4:10.0.0.1:1,10.0.0.2:2", "ipv4", "", "10.0.0.1:1,10.0.0.2:2",
     "10.0.0.1:1,10.0.0.2:2"),
    ("ipv6:[::1]:5,[2001:db8::1]:6", "ipv6", "", "[::1]:5,[2001:db8::1]:6",
     "[::1]:5,[2001:db8::1]:6"),
    ("unix:relative/sock", "unix", "", "relative/sock", "localhost"),
    ("unix:/run/app.sock", "unix", "", "run/app.sock", "localhost"),
    ("unix:///run/app.sock", "unix", "", "run/app.sock", "localhost"),
    ("unix-abstract:my-name", "unix-abstract", "", "my-name", "localhost"),
    ("madeup://x/y", "dns", "", "madeup://x/y", "madeup:%2F%2Fx%2Fy"),
])
def test_parse(target, scheme, authority, endpoint, default_authority):
    parsed = parse_target(target)
    assert (parsed.scheme, parsed.authority, parsed.endpoint) == (scheme, authority, endpoint)
    assert parsed.default_authority() == default_authority


@pytest.mark.parametrize("target, endpoints", [
    ("ipv4:127.0.0.1:1,127.0.0.2:2", [Endpoint("127.0.0.1", 1), Endpoint("127.0.0.2", 2)]),
    ("ipv4:127.0.0.1:1,,127.0.0.2:2", [Endpoint("127.0.0.1", 1), Endpoint("127.0.0.2", 2)]),
    ("ipv6:[::1]:5", [Endpoint("::1", 5)]),
    ("unix:rel/sock", [Endpoint("rel/sock", None, "unix")]),
    ("unix:/abs/sock", [Endpoint("/abs/sock", None, "unix")]),
    ("unix:///abs/sock", [Endpoint("/abs/sock", None, "unix")]),
    ("unix-abstract:name", [Endpoint("name", None, "unix-abstract")]),
])
def test_static_endpoints(target, endpoints):
    assert static_endpoints(parse_target(target)) == endpoints


@pytest.mark.parametrize("target, message", [
    ("ipv4:127.0.0.1", "a port is required"),
    ("ipv4:[::1]:5", "not an ipv4 address"),
    ("ipv4:localhost:5", "not an ipv4 address"),
    ("ipv6:127.0.0.1:5", "not an ipv6 address"),
    ("ipv6:[::1", "no ']'"),
    ("ipv4:127.0.0.1:99999", "bad port"),
    ("ipv4:", "no address"),
    ("ipv4://host/127.0.0.1:5", "takes no authority"),
    ("unix://host/path", "takes no authority"),
    ("unix:", "empty socket path"),
])
def test_bad_static_targets(target, message):
    with pytest.raises(ValueError, match=message):
        static_endpoints(parse_target(target))


def test_empty_target_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        parse_target("  ")


def test_a_registered_scheme_gets_its_own_parse():
    register_scheme("test-registry", lambda parsed: None)
    parsed = parse_target("test-registry://zk:2181/pkg.Iface?group=a&version=1")
    assert (parsed.scheme, parsed.authority, parsed.endpoint, parsed.query) == (
        "test-registry", "zk:2181", "pkg.Iface", "group=a&version=1")


def test_dns_resolver_lists_every_address_and_rate_limits_refresh():
    answers = [["::1", "127.0.0.1"], ["127.0.0.1"]]
    calls = []

    def resolve(host, port):
        calls.append((host, port))
        return answers[min(len(calls) - 1, 1)]

    updates = []
    resolver = DnsResolver(parse_target("dns:///svc.local:7"), resolve)
    resolver.start(updates.append)
    assert updates == [[Endpoint("::1", 7), Endpoint("127.0.0.1", 7)]]
    assert updates[0][0].attributes == {"dns_name": "svc.local"}
    resolver.refresh()  # within 30 s of the last resolution: nothing happens
    assert calls == [("svc.local", 7)]
    resolver.close()


def test_dns_default_port_is_443():
    assert DnsResolver(parse_target("dns:///svc.local")).port == 443
