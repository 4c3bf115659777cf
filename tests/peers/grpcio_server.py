"""The grpcio test peer: benchmark.BenchmarkService on raw bytes (tests/peers/README.md).

A synchronous grpcio server (thread pool) with generic handlers and no serializers, so
requests and responses are the message bytes. UnaryCall echoes the request, StreamCall
echoes each request message; the control metadata of README.md changes the answer
(`peers.parse_control`). A unary call must carry one message when it ends OK, so
`x-status: 0` on UnaryCall answers an empty message; StreamCall answers none.
`x-delay-ms` applies once, before anything is sent, and ends early if the call does.

TLS: `--tls-cert PEM --tls-key PEM` serve TLS (ALPN h2) with that identity instead of
plaintext h2c; `--tls-client-ca PEM` also requires a client certificate signed by that CA
(mTLS). `--compress-responses` gzip-compresses every response message.

Usage: /usr/bin/python3 grpcio_server.py [--port 0] [--host 127.0.0.1] [--workers 32]
           [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]] [--compress-responses]
Prints `LISTENING <port>`, serves until SIGTERM or EOF on stdin.
"""
from __future__ import annotations

import argparse
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Iterator, Optional

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from peers import (  # noqa: E402
    BENCHMARK_SERVICE, MAX_MESSAGE, Control, ControlError, parse_control, serve_until_stopped,
)

CODES = {code.value[0]: code for code in grpc.StatusCode}


def begin(context: grpc.ServicerContext) -> Control:
    """Apply the call's control metadata up to the answer: delay, echoed metadata, x-status.

    Returns the Control when the handler should go on; aborts the call otherwise (raises).
    """
    try:
        control = parse_control(context.invocation_metadata())
    except ControlError as exc:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    if control.delay_ms:
        call_ended = threading.Event()
        if context.add_callback(call_ended.set):
            call_ended.wait(control.delay_ms / 1000)
        if not context.is_active():
            context.abort(grpc.StatusCode.CANCELLED, "call ended during x-delay-ms")
    if control.echo:
        context.send_initial_metadata(control.echo)
        context.set_trailing_metadata(control.echo)
    if control.status:  # 1..16; 0 is handled by each method
        context.abort(CODES[control.status], control.message)
    return control


def unary_call(request: bytes, context: grpc.ServicerContext) -> bytes:
    """UnaryCall: the request bytes (or the x-response-size payload)."""
    control = begin(context)
    if control.status == 0:
        return b""
    return control.response(request)


def stream_call(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    """StreamCall: one answer per request message until the client half-closes."""
    control = begin(context)
    if control.status == 0:
        return
    for request in requests:
        yield control.response(request)


def server_credentials(cert: str, key: str,
                       client_ca: Optional[str]) -> grpc.ServerCredentials:
    """TLS credentials from PEM files; with client_ca, client certificates are required."""
    identity = (Path(key).read_bytes(), Path(cert).read_bytes())
    if client_ca is None:
        return grpc.ssl_server_credentials([identity])
    return grpc.ssl_server_credentials([identity], root_certificates=Path(client_ca).read_bytes(),
                                       require_client_auth=True)


def make_server(host: str, port: int, workers: int,
                credentials: Optional[grpc.ServerCredentials] = None,
                compress_responses: bool = False) -> tuple[grpc.Server, int]:
    """A started server and its bound port (TLS when credentials are given)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
            ("grpc.so_reuseport", 0),
        ],
        compression=grpc.Compression.Gzip if compress_responses else None,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(BENCHMARK_SERVICE, {
        "UnaryCall": grpc.unary_unary_rpc_method_handler(unary_call),
        "StreamCall": grpc.stream_stream_rpc_method_handler(stream_call),
    }),))
    address = f"{host}:{port}"
    if credentials is None:
        bound = server.add_insecure_port(address)
    else:
        bound = server.add_secure_port(address, credentials)
    if not bound:
        raise SystemExit(f"cannot bind {host}:{port}")
    server.start()
    return server, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--tls-cert", help="PEM certificate chain: serve TLS")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    parser.add_argument("--tls-client-ca", help="PEM CA: require client certificates (mTLS)")
    parser.add_argument("--compress-responses", action="store_true",
                        help="gzip every response message")
    args = parser.parse_args()
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    if args.tls_client_ca and not args.tls_cert:
        parser.error("--tls-client-ca needs --tls-cert and --tls-key")
    credentials = None
    if args.tls_cert:
        credentials = server_credentials(args.tls_cert, args.tls_key, args.tls_client_ca)
    server, port = make_server(args.host, args.port, args.workers, credentials,
                               args.compress_responses)
    serve_until_stopped(port)
    server.stop(grace=None).wait(5)


if __name__ == "__main__":
    main()
