"""The one protobuf varint of the bench workload: what encode_payload writes, request_data's
delimited-message reader reads back."""
from __future__ import annotations

import pytest

from triple_py.bench.workload.messages import decode_varint, encode_payload, encode_varint
from triple_py.bench.workload.request_data import _split_delimited


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16383, 16384, 2**31 - 1, 2**63])
def test_varint_round_trip(n: int) -> None:
    data = b"\xff" + encode_varint(n) + b"tail"
    assert decode_varint(data, 1) == (n, len(data) - 4)


def test_known_encodings() -> None:
    assert encode_varint(128) == b"\x80\x01" and encode_varint(16384) == b"\x80\x80\x01"
    assert encode_payload(b"a" * 128) == b"\x0a\x80\x01" + b"a" * 128


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff" * 10 + b"\x01"])
def test_truncated_or_overlong(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_varint(data)


def test_delimited_messages_split_by_the_same_varint() -> None:
    a, b = encode_payload(b"x" * 200), encode_payload(b"y")
    data = encode_varint(len(a)) + a + encode_varint(len(b)) + b
    assert _split_delimited(data) == [a, b]
    assert _split_delimited(data[:-1]) is None  # not an exact split: one message
