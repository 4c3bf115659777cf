"""The grpcio interop peer: grpc.testing.TestService on python3-grpcio (Debian).

Implements the server side of the standard gRPC interop service
(proto/grpc/testing/test.proto) the way grpc/grpc's interop servers do:

* EmptyCall, UnaryCall, StreamingOutputCall, StreamingInputCall, FullDuplexCall and
  HalfDuplexCall; UnimplementedCall and grpc.testing.UnimplementedService are not
  registered, so grpcio answers UNIMPLEMENTED.
* ``response_status`` ends the call with that code and message.
* ``response_compressed`` (UnaryCall) and ``ResponseParameters.compressed`` (streams):
  gzip for the call, and ``disable_next_message_compression`` for a message that asks for
  none.
* ``x-grpc-test-echo-initial`` is sent back in the initial metadata and
  ``x-grpc-test-echo-trailing-bin`` in the trailing metadata.
* ``interval_us`` sleeps before the response it belongs to.

``expect_compressed`` is NOT checked: grpcio's ServicerContext does not tell whether a
request message arrived compressed (the interop matrix marks client_compressed_* n/a here).

The message classes are the ones triple_py_testing.interop compiles with ``protoc --python_out``:
``--pb-dir`` is the directory holding that ``triple_interop_pb`` package.

Usage: /usr/bin/python3 grpcio_testservice.py --pb-dir DIR [--host 127.0.0.1] [--port 0]
Prints ``LISTENING <port>``, serves until SIGTERM/SIGINT or EOF on stdin.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from concurrent import futures
from typing import Iterator

import grpc

MAX_MESSAGE = 64 * 1024 * 1024
SERVICE = "grpc.testing.TestService"
ECHO_INITIAL = "x-grpc-test-echo-initial"
ECHO_TRAILING = "x-grpc-test-echo-trailing-bin"
CODES = {code.value[0]: code for code in grpc.StatusCode}

pb = None  # the triple_interop_pb package, imported in main()


def echo_metadata(context: grpc.ServicerContext) -> None:
    """Send back the echo keys: initial -> initial metadata, trailing-bin -> trailers."""
    initial, trailing = [], []
    for key, value in context.invocation_metadata():
        if key == ECHO_INITIAL:
            initial.append((key, value))
        elif key == ECHO_TRAILING:
            trailing.append((key, value))
    if initial:
        context.send_initial_metadata(initial)
    if trailing:
        context.set_trailing_metadata(trailing)


def check_status(status, context: grpc.ServicerContext) -> None:
    """Abort with the requested EchoStatus (a code of 0 means none)."""
    if status.code != 0:
        context.abort(CODES.get(status.code, grpc.StatusCode.UNKNOWN), status.message)


def payload(size: int):
    return pb.messages_pb2.Payload(type=pb.messages_pb2.COMPRESSABLE, body=bytes(size))


def empty_call(request, context):
    echo_metadata(context)
    return pb.empty_pb2.Empty()


def unary_call(request, context):
    echo_metadata(context)
    if request.HasField("response_compressed"):
        context.set_compression(grpc.Compression.Gzip if request.response_compressed.value
                                else grpc.Compression.NoCompression)
    check_status(request.response_status, context)
    return pb.messages_pb2.SimpleResponse(payload=payload(request.response_size))


def respond(request, context) -> Iterator:
    """The responses one StreamingOutputCallRequest asks for, in order."""
    check_status(request.response_status, context)
    for params in request.response_parameters:
        if params.interval_us > 0:
            time.sleep(params.interval_us / 1e6)
        if params.HasField("compressed"):
            context.set_compression(grpc.Compression.Gzip)
            if not params.compressed.value:
                context.disable_next_message_compression()
        yield pb.messages_pb2.StreamingOutputCallResponse(payload=payload(params.size))


def streaming_output_call(request, context):
    echo_metadata(context)
    yield from respond(request, context)


def streaming_input_call(requests, context):
    echo_metadata(context)
    size = sum(len(request.payload.body) for request in requests)
    return pb.messages_pb2.StreamingInputCallResponse(aggregated_payload_size=size)


def full_duplex_call(requests, context):
    echo_metadata(context)
    for request in requests:
        yield from respond(request, context)


def half_duplex_call(requests, context):
    echo_metadata(context)
    buffered = list(requests)
    for request in buffered:
        yield from respond(request, context)


def handlers() -> grpc.GenericRpcHandler:
    m = pb.messages_pb2
    empty = pb.empty_pb2.Empty

    def unary(fn, req, resp):
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)

    def out(fn, req, resp, kind):
        return kind(fn, request_deserializer=req.FromString,
                    response_serializer=resp.SerializeToString)

    return grpc.method_handlers_generic_handler(SERVICE, {
        "EmptyCall": unary(empty_call, empty, empty),
        "UnaryCall": unary(unary_call, m.SimpleRequest, m.SimpleResponse),
        "StreamingOutputCall": out(streaming_output_call, m.StreamingOutputCallRequest,
                                   m.StreamingOutputCallResponse,
                                   grpc.unary_stream_rpc_method_handler),
        "StreamingInputCall": out(streaming_input_call, m.StreamingInputCallRequest,
                                  m.StreamingInputCallResponse,
                                  grpc.stream_unary_rpc_method_handler),
        "FullDuplexCall": out(full_duplex_call, m.StreamingOutputCallRequest,
                              m.StreamingOutputCallResponse,
                              grpc.stream_stream_rpc_method_handler),
        "HalfDuplexCall": out(half_duplex_call, m.StreamingOutputCallRequest,
                              m.StreamingOutputCallResponse,
                              grpc.stream_stream_rpc_method_handler),
    })


def serve_until_stopped(port: int) -> None:
    """Print LISTENING <port>; block until SIGTERM/SIGINT or EOF on stdin."""
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())

    def watch_stdin() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        stopped.set()

    threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()
    print(f"LISTENING {port}", flush=True)
    while not stopped.wait(0.5):
        pass


def main() -> None:
    global pb
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--pb-dir", required=True,
                        help="directory holding the generated triple_interop_pb package")
    args = parser.parse_args()
    sys.path.insert(0, args.pb_dir)
    import triple_interop_pb
    pb = triple_interop_pb

    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=args.workers),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
            ("grpc.so_reuseport", 0),
        ],
    )
    server.add_generic_rpc_handlers((handlers(),))
    port = server.add_insecure_port(f"{args.host}:{args.port}")
    if not port:
        raise SystemExit(f"cannot bind {args.host}:{args.port}")
    server.start()
    serve_until_stopped(port)
    server.stop(grace=None).wait(5)


if __name__ == "__main__":
    main()
