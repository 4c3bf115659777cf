"""The shop schema (tests/peers/proto/shop_order.proto) and the grpc-go peer serving it with
server reflection: a real, nested service for the schema tests and the any-service benchmark."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from triple_py.bench.schema import compile_proto
from .benchmark_peers import Peer, start_peer
from .builds import repository_root

PROTO_DIR = repository_root() / "tests" / "peers" / "proto"
SHOP_PROTO = PROTO_DIR / "shop_order.proto"
PLACE = "shop.v1.OrderService/Place"


def write_shop_protoset(directory: Path) -> Path:
    """shop_order.proto and its import compiled into a FileDescriptorSet file."""
    path = directory / "shop.protoset"
    path.write_bytes(compile_proto(str(SHOP_PROTO)).SerializeToString())
    return path


@contextlib.contextmanager
def shop_peer(directory: Path, **options: object) -> Iterator[Peer]:
    """The grpc-go peer serving shop.v1.OrderService (echo) with server reflection."""
    with start_peer("go", schema=write_shop_protoset(directory), **options) as peer:
        yield peer
