"""Dubbo provider URLs (triple_py.registry.dubbo_url) and the zookeeper:// target and filters
(triple_py.registry.provider_query), against the forms Dubbo's own code writes.

The escaped strings marked "java.net.URLEncoder" were produced by running
``URLEncoder.encode(s, "UTF-8")`` (what Dubbo's URL.encode calls) with OpenJDK 17 on the
unescaped string next to them.
"""
from __future__ import annotations

import pytest

from triple_py.registry.dubbo_url import (DEFAULT_WEIGHT, DubboURL, DubboURLError,
                                          decode_node_name, encode_node_name,
                                          parse_dubbo_url)
from triple_py.registry.provider_query import (ProviderQuery, ZookeeperTarget,
                                               parse_zookeeper_target)

# A Dubbo 3.3 Java provider of an IDL service over Triple, as registered.
JAVA_TRI = ("tri://192.168.31.5:50052/org.apache.dubbo.samples.api.GreetingsService?"
            "anyhost=true&application=first-dubbo-provider&methods=sayHi,sayHiAsync&"
            "prefer.serialization=hessian2,fastjson2&side=provider&timestamp=1700000000000")
# java.net.URLEncoder of JAVA_TRI
JAVA_TRI_NODE = (
    "tri%3A%2F%2F192.168.31.5%3A50052%2Forg.apache.dubbo.samples.api.GreetingsService%3F"
    "anyhost%3Dtrue%26application%3Dfirst-dubbo-provider%26methods%3DsayHi%2CsayHiAsync%26"
    "prefer.serialization%3Dhessian2%2Cfastjson2%26side%3Dprovider%26timestamp%3D1700000000000")
# A dubbo-go provider: path with the interface, a value with spaces (Go's url.QueryEscape
# writes them as '+'), parameters sorted by url.Values.Encode.
GO_TRI_NODE = ("tri%3A%2F%2F10.0.0.7%3A20000%2Fcom.example.UserProvider%3Fanyhost%3Dtrue%26"
               "group%3Dgo%26interface%3Dcom.example.UserProvider%26methods%3DGetUser%26"
               "module%3Ddubbogo+user-info+server%26release%3Ddubbo-golang-3.2.0%26"
               "side%3Dprovider%26version%3D1.0.0")


def url_with(**params: str) -> DubboURL:
    return DubboURL("tri", "10.0.0.1", 50051, "pkg.Svc", {"interface": "pkg.Svc", **params})


class TestParse:
    def test_java_provider_node_name(self):
        url = decode_node_name(JAVA_TRI_NODE)
        assert (url.protocol, url.host, url.port) == ("tri", "192.168.31.5", 50052)
        assert url.path == url.interface == "org.apache.dubbo.samples.api.GreetingsService"
        assert url.methods == ("sayHi", "sayHiAsync")
        assert url.parameters["prefer.serialization"] == "hessian2,fastjson2"
        assert url.parameters["side"] == "provider"
        assert url.parameters["timestamp"] == "1700000000000"
        assert (url.group, url.version, url.weight, url.enabled) == (None, None, 100, True)

    def test_go_provider_node_name(self):
        url = decode_node_name(GO_TRI_NODE)
        assert (url.host, url.port, url.interface) == ("10.0.0.7", 20000,
                                                       "com.example.UserProvider")
        assert url.parameters["module"] == "dubbogo user-info server"
        assert (url.group, url.version) == ("go", "1.0.0")

    def test_encoding_matches_java_urlencoder(self):
        assert encode_node_name(JAVA_TRI) == JAVA_TRI_NODE
        # java.net.URLEncoder: '*' kept, '~' and '+' escaped, space as '+', UTF-8 bytes
        assert encode_node_name("a b~c*d-e_f.g+h/é") == "a+b%7Ec*d-e_f.g%2Bh%2F%C3%A9"

    def test_full_string_sorts_parameters_and_round_trips(self):
        url = parse_dubbo_url("tri://h:1/pkg.Svc?side=provider&application=a&methods=b,a")
        assert url.to_full_string() == "tri://h:1/pkg.Svc?application=a&methods=b,a&side=provider"
        assert decode_node_name(encode_node_name(url.to_full_string())) == url

    def test_interface_parameter_wins_over_path(self):
        url = parse_dubbo_url("tri://h:1/ctx/path?interface=pkg.Real")
        assert (url.path, url.interface) == ("ctx/path", "pkg.Real")

    def test_user_info_ipv6_and_missing_port(self):
        url = parse_dubbo_url("tri://u:p@[::1]:50051/pkg.Svc")
        assert (url.username, url.password, url.host, url.port) == ("u", "p", "::1", 50051)
        assert url.address() == "[::1]:50051"
        bare = parse_dubbo_url("tri://fe80::1:50051/pkg.Svc")  # Dubbo splits at the last ':'
        assert (bare.host, bare.port) == ("fe80::1", 50051)
        assert parse_dubbo_url("tri://host/pkg.Svc").port is None
        assert parse_dubbo_url("tri://host:0/pkg.Svc").port is None  # Dubbo's "no port"

    def test_parameters_as_dubbo_reads_them(self):
        url = parse_dubbo_url("tri://h:1/p?a=1;b=x=y&flag&=skip&default.version=2&c=")
        assert url.parameters["a"] == "1"
        assert url.parameters["b"] == "x=y"  # only the first '=' separates
        assert url.parameters["flag"] == ""
        assert url.version == "2"  # "default.version" fills an absent "version"
        assert url.parameter("c") is None  # empty counts as absent
        assert "" not in url.parameters

    @pytest.mark.parametrize("text", ["", "://h:1/p", "h:1/p", "tri://h:port/p",
                                      "tri://h:99999/p", "tri://[::1/p", "tri://[::1]x/p"])
    def test_bad_urls_are_refused(self, text):
        with pytest.raises(DubboURLError):
            parse_dubbo_url(text)

    @pytest.mark.parametrize("name", ["tri%3A%2F%2Fh%3A1%2Fp%ZZ", "tri%3A%2F%2Fh%3A1%2F%FF%FE"])
    def test_bad_escapes_are_refused(self, name):
        with pytest.raises(DubboURLError):
            decode_node_name(name)


class TestProviderFields:
    @pytest.mark.parametrize("params, enabled", [
        ({}, True), ({"enabled": "true"}, True), ({"enabled": "TRUE"}, True),
        ({"enabled": ""}, True), ({"enabled": "false"}, False), ({"enabled": "0"}, False),
        ({"disabled": "true"}, False), ({"disabled": "false"}, True),
        ({"disabled": "false", "enabled": "false"}, False),
        ({"disabled": "True", "enabled": "true"}, False),
    ])
    def test_enabled_follows_dubbo(self, params, enabled):
        assert url_with(**params).enabled is enabled

    @pytest.mark.parametrize("raw, weight", [(None, DEFAULT_WEIGHT), ("5", 5), ("0", 0),
                                             ("x", DEFAULT_WEIGHT), ("-3", DEFAULT_WEIGHT)])
    def test_weight(self, raw, weight):
        params = {} if raw is None else {"weight": raw}
        assert url_with(**params).weight == weight


class TestFilters:
    @pytest.mark.parametrize("wanted, expected", [
        (None, [True, False, False]),  # no group: only providers without one
        ("g1", [False, True, False]),
        ("g2,g1", [False, True, True]),  # a comma list: any of them
        ("*", [True, True, True]),
    ])
    def test_group_rules(self, wanted, expected):
        query = ProviderQuery("pkg.Svc", group=wanted)
        urls = (url_with(), url_with(group="g1"), url_with(group="g2"))
        assert [query.matches(u) for u in urls] == expected

    @pytest.mark.parametrize("wanted, expected", [
        (None, [True, False, False]),  # no version: only providers without one
        ("1.0.0", [False, True, False]),
        ("*", [True, True, True]),
        ("1.0.0,2.0.0", [False, False, False]),  # Dubbo has no version lists
    ])
    def test_version_rules(self, wanted, expected):
        query = ProviderQuery("pkg.Svc", version=wanted)
        urls = (url_with(), url_with(version="1.0.0"), url_with(version="2.0.0"))
        assert [query.matches(u) for u in urls] == expected

    def test_protocol_interface_category_and_enabled(self):
        query = ProviderQuery("pkg.Svc")
        assert query.matches(url_with())
        dubbo2 = DubboURL("dubbo", "h", 1, "pkg.Svc", {"interface": "pkg.Svc"})
        grpc = DubboURL("grpc", "h", 1, "pkg.Svc", {"interface": "pkg.Svc"})
        assert not query.matches(dubbo2) and not query.matches(grpc)
        assert ProviderQuery("pkg.Svc", protocols=("tri", "grpc")).matches(grpc)
        assert not query.matches(DubboURL("tri", "h", 1, "other.Svc", {}))
        assert query.matches(DubboURL("tri", "h", 1, "x", {"interface": "*"}))
        assert not query.matches(url_with(category="configurators"))
        assert query.matches(url_with(category="providers"))
        assert not query.matches(url_with(enabled="false"))
        assert not query.matches(url_with(disabled="true"))


class TestTarget:
    def test_defaults(self):
        target = parse_zookeeper_target("zookeeper://127.0.0.1:2181/benchmark.BenchmarkService")
        assert target == ZookeeperTarget("127.0.0.1:2181",
                                         ProviderQuery("benchmark.BenchmarkService"))
        assert target.query.protocols == ("tri",)
        assert target.providers_path == "/dubbo/benchmark.BenchmarkService/providers"

    def test_filters_and_ensemble(self):
        target = parse_zookeeper_target(
            "zookeeper://zk1:2181,zk2:2182/pkg.Svc?group=a,b&version=1.0.0&protocol=tri,grpc")
        assert target.hosts == "zk1:2181,zk2:2182"
        assert target.query == ProviderQuery("pkg.Svc", group="a,b", version="1.0.0",
                                             protocols=("tri", "grpc"))

    def test_empty_filter_means_none(self):
        query = parse_zookeeper_target("zookeeper://h:1/pkg.Svc?group=&version=").query
        assert (query.group, query.version) == (None, None)

    @pytest.mark.parametrize("target, words", [
        ("dns:///h:1", "not a zookeeper"),
        ("zookeeper:///pkg.Svc", "no ZooKeeper host"),
        ("zookeeper://h:1,/pkg.Svc", "no ZooKeeper host"),
        ("zookeeper://h:1/", "one Dubbo interface"),
        ("zookeeper://h:1/a/b", "one Dubbo interface"),
        ("zookeeper://h:1/pkg.Svc?color=red", "unknown parameter 'color'"),
        ("zookeeper://h:1/pkg.Svc?group=a&group=b", "'group' given twice"),
        ("zookeeper://h:1/pkg.Svc?protocol=dubbo", "protocol must be"),
        ("zookeeper://h:1/pkg.Svc?protocol=", "protocol must be"),
    ])
    def test_bad_targets_say_why(self, target, words):
        with pytest.raises(ValueError, match=words):
            parse_zookeeper_target(target)


class TestServiceKeyPerBackend:
    def test_registered_group_and_version_become_the_call_headers(self):
        from triple_py._resolver import Endpoint
        from triple_py.registry import with_service_key

        found = Endpoint("h", 1, attributes={"dubbo.url": "tri://h:1/p", "group": "g",
                                             "version": "2"})
        assert with_service_key({"wire": 1}, found) == {
            "wire": 1, "service_group": "g", "service_version": "2"}
        # the channel's own triple.service_group wins; a missing version stays unset
        mine = {"service_group": "mine", "service_version": None}
        no_version = Endpoint("h", 1, attributes={"dubbo.url": "tri://h:1/p", "group": "g"})
        assert with_service_key(mine, no_version) == {"service_group": "mine",
                                                      "service_version": None}
        # not from a Dubbo registry: untouched
        plain = Endpoint("h", 1, attributes={"group": "g"})
        assert with_service_key({"wire": 1}, plain) == {"wire": 1}
