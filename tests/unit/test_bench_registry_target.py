"""The bench harness's handling of registry targets (triple_py.bench.target): a registry
target becomes a fixed target once, and a list of backends is spread round robin.
Resolution against a real ZooKeeper: tests/integration/test_zookeeper_balancer.py."""
from __future__ import annotations

import pytest

from triple_py._resolver import Endpoint
from triple_py.bench.errors import ConfigError
from triple_py.bench.target import (check_target, is_registry_target, lb_channel_options,
                                    split_target, static_target)


def test_registry_targets_are_told_apart():
    assert is_registry_target("zookeeper://127.0.0.1:2181/benchmark.BenchmarkService")
    for plain in ("127.0.0.1:50051", "dns:///h:1", "ipv4:1.2.3.4:5,1.2.3.4:6", "unix:/tmp/s"):
        assert not is_registry_target(plain), plain


def test_static_target_of_one_or_several_backends():
    assert static_target([Endpoint("10.0.0.1", 5)]) == "10.0.0.1:5"
    assert static_target([Endpoint("10.0.0.1", 5), Endpoint("10.0.0.2", 6)]) == \
        "ipv4:10.0.0.1:5,10.0.0.2:6"
    assert static_target([Endpoint("::1", 5), Endpoint("fe80::2", 6)]) == \
        "ipv6:[::1]:5,[fe80::2]:6"
    with pytest.raises(ConfigError, match="both IPv4 and IPv6"):
        static_target([Endpoint("10.0.0.1", 5), Endpoint("::1", 6)])
    with pytest.raises(ConfigError, match="TCP host:port only"):
        static_target([Endpoint("/tmp/sock", None, "unix")])


def test_round_robin_only_for_a_list():
    assert lb_channel_options("ipv4:10.0.0.1:5,10.0.0.2:6") == [("grpc.lb_policy_name",
                                                                  "round_robin")]
    assert lb_channel_options("ipv4:10.0.0.1:5") == []
    assert lb_channel_options("127.0.0.1:5") == []  # the direct single-connection path


def test_c_arms_refuse_a_list_with_a_reason():
    with pytest.raises(ConfigError, match="loads one host:port"):
        split_target("ipv4:10.0.0.1:5,10.0.0.2:6")


def test_malformed_registry_target_is_a_config_error_without_connecting():
    with pytest.raises(ConfigError, match="protocol must be"):
        check_target("zookeeper://127.0.0.1:1/pkg.Svc?protocol=dubbo")
    check_target("zookeeper://127.0.0.1:1/pkg.Svc")  # well formed: nothing contacted
