"""Map entries named as protobufjs names them (grpc-js's reflection) are renamed as protoc
names them, so that the descriptor pool accepts the file (no network)."""
from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

from triple_py.bench.workload.descriptor_repair import map_entry_name, repair_map_entries

F = descriptor_pb2.FieldDescriptorProto


def _map_field(message: descriptor_pb2.DescriptorProto, field: str, number: int,
               type_name: str, entry: str, value_type: int) -> None:
    """A map field as protobufjs describes it: its entry message named ``entry``."""
    message.field.add(name=field, number=number, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
                      type_name=type_name)
    nested = message.nested_type.add(name=entry)
    nested.options.map_entry = True
    nested.field.add(name="key", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    nested.field.add(name="value", number=2, label=F.LABEL_OPTIONAL, type=value_type)


def _protobufjs_file() -> descriptor_pb2.FileDescriptorProto:
    """What @grpc/reflection sends for ``message Order { map<string, string> labels = 4;
    message Line { map<string, int64> unit_prices = 1; } }``: entries named like fields."""
    f = descriptor_pb2.FileDescriptorProto(name="shop_v1.proto", package="shop.v1",
                                           syntax="proto3")
    order = f.message_type.add(name="Order")
    _map_field(order, "labels", 4, "Labels", "Labels", F.TYPE_STRING)
    line = order.nested_type.add(name="Line")
    _map_field(line, "unit_prices", 1, ".shop.v1.Order.Line.UnitPrices", "UnitPrices",
               F.TYPE_INT64)
    return f


def test_protoc_names():
    assert map_entry_name("labels") == "LabelsEntry"
    assert map_entry_name("unit_prices") == "UnitPricesEntry"
    assert map_entry_name("x_2y") == "X2yEntry"


def test_the_pool_refuses_then_accepts_the_repaired_file():
    with pytest.raises(TypeError, match="map_entry should not be set explicitly"):
        descriptor_pool.DescriptorPool().Add(_protobufjs_file())
    f = _protobufjs_file()
    assert repair_map_entries([f]) == 2
    assert repair_map_entries([f]) == 0  # idempotent
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    order = pool.FindMessageTypeByName("shop.v1.Order")
    assert order.fields_by_name["labels"].message_type.GetOptions().map_entry
    assert order.fields_by_name["labels"].message_type.name == "LabelsEntry"
    line = pool.FindMessageTypeByName("shop.v1.Order.Line")
    assert line.fields_by_name["unit_prices"].message_type.full_name == \
        "shop.v1.Order.Line.UnitPricesEntry"


def test_protoc_named_entries_and_plain_repeated_messages_are_left_alone():
    f = _protobufjs_file()
    repair_map_entries([f])
    order = f.message_type[0]
    order.field.add(name="lines", number=5, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
                    type_name="Line")
    before = f.SerializeToString()
    assert repair_map_entries([f]) == 0
    assert f.SerializeToString() == before
