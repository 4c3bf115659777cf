"""The shop schema and the grpc-go peer serving it: triple_py_testing.peers.shop_schema,
under the name the tests import."""
from triple_py_testing.peers.shop_schema import (PLACE, PROTO_DIR, SHOP_PROTO, shop_peer,
                                                 write_shop_protoset)

__all__ = ["PLACE", "PROTO_DIR", "SHOP_PROTO", "shop_peer", "write_shop_protoset"]
