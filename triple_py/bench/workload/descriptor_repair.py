"""Repairs of file descriptors that some reflection servers send and descriptor pools refuse.

protobufjs, which grpc-js's ``@grpc/reflection`` uses to describe a service, names a map
field's entry message after the field (``Labels`` for ``map<string, string> labels``),
where protoc names it ``LabelsEntry``. Every protobuf runtime checks protoc's name and
refuses the file ("map_entry should not be set explicitly"; grpcurl fails the same way,
fullstorydev/grpcurl#519). The encoding does not depend on the entry's name, so renaming
the entry to protoc's name (and pointing the field at it) gives the pool a file it accepts
that describes the same wire format.
"""
from __future__ import annotations

from typing import Iterable

from google.protobuf import descriptor_pb2

__all__ = ["repair_map_entries", "map_entry_name"]

_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED


def map_entry_name(field_name: str) -> str:
    """protoc's name of the entry message of map field ``field_name``: the name in
    CamelCase (underscores dropped, the letter after each capitalised) plus ``Entry``."""
    parts, upper = [], True
    for ch in field_name:
        if ch == "_":
            upper = True
            continue
        parts.append(ch.upper() if upper else ch)
        upper = False
    return "".join(parts) + "Entry"


def _repair_message(message: descriptor_pb2.DescriptorProto) -> int:
    renamed = 0
    entries = {n.name: n for n in message.nested_type if n.options.map_entry}
    for field in message.field:
        if field.label != _REPEATED or not field.type_name:
            continue
        scope, _, last = field.type_name.rpartition(".")
        entry = entries.get(last)
        want = map_entry_name(field.name)
        if entry is None or last == want or want in entries:
            continue
        entry.name = want
        field.type_name = f"{scope}.{want}" if scope or field.type_name.startswith(".") \
            else want
        entries[want] = entries.pop(last)
        renamed += 1
    for nested in message.nested_type:
        renamed += _repair_message(nested)
    return renamed


def repair_map_entries(files: Iterable[descriptor_pb2.FileDescriptorProto]) -> int:
    """Renames, in place, every map entry message not named as protoc names it (see the
    module's docstring); returns how many were renamed."""
    return sum(_repair_message(m) for f in files for m in f.message_type)
