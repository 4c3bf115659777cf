"""asyncio API of triple_py, mirroring ``grpc.aio``.

::

    import triple_py.aio
    async with triple_py.aio.insecure_channel("127.0.0.1:50051") as ch:
        reply = await ch.unary_unary("/pkg.Svc/Method")(b"request", timeout=3)
        async for r in ch.stream_stream("/pkg.Svc/Chat")(request_iterator):
            ...

Completions reach the event loop through one eventfd watched with
``loop.add_reader``: no thread per call, and the C I/O thread never takes the GIL.
Cancelling the awaiting task cancels the RPC (the stream is reset).
"""
from ._calls import EOF, AioRpcError
from ._channel import insecure_channel, secure_channel
from ._deferred import (ClientCallDetails, StreamStreamClientInterceptor,
                        StreamUnaryClientInterceptor, UnaryStreamClientInterceptor,
                        UnaryUnaryClientInterceptor)
# The abstract types grpc.aio users annotate with, and grpc.aio's Metadata.
from ._types import (Call, Channel, ClientInterceptor, Metadata, RpcContext,
                     StreamStreamCall, StreamStreamMultiCallable, StreamUnaryCall,
                     StreamUnaryMultiCallable, UnaryStreamCall, UnaryStreamMultiCallable,
                     UnaryUnaryCall, UnaryUnaryMultiCallable)

__all__ = ["AioRpcError", "Call", "Channel", "ClientCallDetails", "ClientInterceptor", "EOF",
           "Metadata", "RpcContext", "StreamStreamCall", "StreamStreamClientInterceptor",
           "StreamStreamMultiCallable", "StreamUnaryCall", "StreamUnaryClientInterceptor",
           "StreamUnaryMultiCallable", "UnaryStreamCall", "UnaryStreamClientInterceptor",
           "UnaryStreamMultiCallable", "UnaryUnaryCall", "UnaryUnaryClientInterceptor",
           "UnaryUnaryMultiCallable", "insecure_channel", "secure_channel"]
