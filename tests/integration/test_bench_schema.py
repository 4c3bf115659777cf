"""Schemas for any service: --proto, --protoset and server reflection (grpc-go peer)."""
from __future__ import annotations

import pytest

from _schema_helpers import PLACE, PROTO_DIR, SHOP_PROTO, shop_peer, write_shop_protoset
from triple_py import insecure_channel
from triple_py.bench.errors import ConfigError
from triple_py.bench.workload.reflection import method_by_reflection
from triple_py.bench.workload.schema import compile_proto, find_method, pool_of, read_protoset

SHAPES = {"Place": "unary", "Watch": "server-streaming", "Upload": "client-streaming",
          "Chat": "bidi"}


def _check_order(method) -> None:
    order = method.request_class()()
    fields = {f.name for f in method.input.fields}
    assert {"lines", "labels", "priority", "ship_to"} <= fields
    order.lines.add(sku="a", quantity=2).unit_price.units = 3  # nested, repeated
    order.labels["k"] = "v"                                    # map
    order.priority = 2                                         # enum
    assert type(order).FromString(order.SerializeToString()) == order


def test_proto_compiles_with_its_imports_and_every_shape_is_found():
    pool = pool_of(compile_proto(str(SHOP_PROTO)).file)
    for name, shape in SHAPES.items():
        method = find_method(pool, f"shop.v1.OrderService.{name}")
        assert method.path == f"/shop.v1.OrderService/{name}"
        assert method.shape == shape
    _check_order(find_method(pool, PLACE))


def test_import_paths_are_searched(tmp_path):
    (tmp_path / "main.proto").write_text(
        'syntax = "proto3"; import "shop/common.proto"; package m;\n'
        "message R { shop.v1.Money m = 1; }\nservice S { rpc Do(R) returns (R); }\n")
    with pytest.raises(ConfigError, match="does not compile: .*shop/common.proto"):
        compile_proto(str(tmp_path / "main.proto"))
    pool = pool_of(compile_proto(str(tmp_path / "main.proto"), [str(SHOP_PROTO.parent)]).file)
    assert find_method(pool, "m.S/Do").input.fields[0].message_type.full_name == "shop.v1.Money"


def test_protoset_gives_the_same_method(tmp_path):
    pool = pool_of(read_protoset(str(write_shop_protoset(tmp_path))).file)
    _check_order(find_method(pool, PLACE))


@pytest.mark.parametrize("text, match", [
    ('syntax = "proto3"; message A { int32 x = 1 }', r'does not compile: .*:1:\d+: Expected ";"'),
    ('syntax = "proto3"; message A { Nope x = 1; }', r'does not compile: .*"Nope" is not defined'),
])
def test_a_proto_that_does_not_compile_is_protocs_message(tmp_path, text, match):
    (tmp_path / "bad.proto").write_text(text)
    with pytest.raises(ConfigError, match=match):
        compile_proto(str(tmp_path / "bad.proto"))


def test_bad_schema_inputs_are_one_line(tmp_path):
    pool = pool_of(compile_proto(str(SHOP_PROTO)).file)
    with pytest.raises(ConfigError, match="has no method Nope .it has Chat, Place, Upload, Watch"):
        find_method(pool, "shop.v1.OrderService/Nope")
    with pytest.raises(ConfigError, match="no service shop.v1.Missing"):
        find_method(pool, "shop.v1.Missing/Place")
    with pytest.raises(ConfigError, match="no such file"):
        compile_proto(str(tmp_path / "absent.proto"))
    (tmp_path / "junk.pb").write_bytes(b"\xff\xff\xff")
    with pytest.raises(ConfigError, match="not a FileDescriptorSet"):
        read_protoset(str(tmp_path / "junk.pb"))


def test_reflection_describes_every_shape_with_imports(tmp_path):
    with shop_peer(tmp_path) as peer, insecure_channel(peer.address) as channel:
        for name, shape in SHAPES.items():
            method = method_by_reflection(channel, f"shop.v1.OrderService/{name}")
            assert method.shape == shape
        _check_order(method_by_reflection(channel, PLACE))  # shop/common.proto came too
        with pytest.raises(ConfigError, match="unknown symbol: shop.v1.Nope"):
            method_by_reflection(channel, "shop.v1.Nope/Place")
        with pytest.raises(ConfigError, match="has no method Nope"):
            method_by_reflection(channel, "shop.v1.OrderService/Nope")


def test_no_reflection_service_asks_for_a_schema(tmp_path):
    from peers.launch import start_peer

    with start_peer("go") as peer, insecure_channel(peer.address) as channel:
        with pytest.raises(ConfigError, match="no reflection service.*--proto or --protoset"):
            method_by_reflection(channel, PLACE)


def test_reflection_v1_against_grpc_js():
    """grpc-js with @grpc/reflection serves grpc.reflection.v1 only (no v1alpha), so this
    works only through the v1 service; its map entries, named as protobufjs names them, are
    repaired (descriptor_repair); then a templated load of the method is answered."""
    from triple_py.bench import run
    from peers.launch import start_peer

    with start_peer("grpc-js", proto=str(SHOP_PROTO), include=str(PROTO_DIR)) as peer:
        with insecure_channel(peer.address) as channel:
            for name, shape in SHAPES.items():
                assert method_by_reflection(channel, f"shop.v1.OrderService/{name}").shape \
                    == shape
            _check_order(method_by_reflection(channel, PLACE))
        result = run(peer.address, method=PLACE, concurrency=4, duration=0, count=200,
                     warmup=0, call={"data": '{"id": "o-{{.RequestNumber}}", '
                                             '"labels": {"k": "{{randomString 4}}"}}'})
    assert (result.calls, result.errors) == (200, 0)
