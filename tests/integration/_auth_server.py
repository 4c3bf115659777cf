"""An in-process grpcio server whose one method answers with what it received: the
request's metadata as JSON (key -> list of values).  For the call-credential and
interceptor tests, which must see what reached a server (the peers only echo x-echo-*).
"""
from __future__ import annotations

import json
from concurrent import futures
from typing import Iterator, Optional

import grpc

METHOD = "/auth.Auth/WhoAmI"
STREAM_METHOD = "/auth.Auth/WhoAmIStream"


def _received(context: grpc.ServicerContext) -> bytes:
    seen: dict[str, list] = {}
    for key, value in context.invocation_metadata():
        if not key.endswith("-bin"):
            seen.setdefault(key, []).append(value)
    return json.dumps(seen).encode()


class _Handler(grpc.GenericRpcHandler):
    def service(self, details):
        if details.method == METHOD:
            return grpc.unary_unary_rpc_method_handler(lambda req, ctx: _received(ctx))
        if details.method == STREAM_METHOD:
            def stream(requests: Iterator[bytes], ctx) -> Iterator[bytes]:
                for _ in requests:
                    yield _received(ctx)
            return grpc.stream_stream_rpc_method_handler(stream)
        return None


class AuthServer:
    """Started on 127.0.0.1 with a free port; TLS when given a server identity."""

    def __init__(self, cert_pem: Optional[bytes] = None, key_pem: Optional[bytes] = None):
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers((_Handler(),))
        if cert_pem is None:
            self.port = self._server.add_insecure_port("127.0.0.1:0")
        else:
            creds = grpc.ssl_server_credentials([(key_pem, cert_pem)])
            self.port = self._server.add_secure_port("127.0.0.1:0", creds)
        self._server.start()

    def stop(self) -> None:
        self._server.stop(None)


def received(reply: bytes) -> dict:
    """The metadata the server saw, from its reply."""
    return json.loads(reply)
