"""triple_py: a fast gRPC and Dubbo Triple client with a C core, shaped like grpcio.

Move existing grpcio code over by changing one import::

    import triple_py as grpc
    with grpc.insecure_channel("127.0.0.1:50051") as ch:
        echo = ch.unary_unary("/benchmark.BenchmarkService/UnaryCall")
        reply = echo(b"raw request bytes", timeout=3)
"""
__version__ = "0.1.0"

from ._status import Compression, StatusCode  # noqa: E402
from ._errors import (CallResult, FutureCancelledError, FutureTimeoutError,  # noqa: E402
                      RpcError)
from ._channel import insecure_channel, process_stats, secure_channel  # noqa: E402
from ._credentials import ChannelCredentials, ssl_channel_credentials  # noqa: E402
from ._future import UnaryFuture  # noqa: E402
from ._call_credentials import (CallCredentials, LocalConnectionType,  # noqa: E402
                                access_token_call_credentials, composite_call_credentials,
                                composite_channel_credentials, local_channel_credentials,
                                metadata_call_credentials)
from ._connectivity import ChannelConnectivity, channel_ready_future  # noqa: E402
from ._interceptors import (StreamStreamClientInterceptor,  # noqa: E402
                            StreamUnaryClientInterceptor, UnaryStreamClientInterceptor,
                            UnaryUnaryClientInterceptor, intercept_channel)
# The abstract types grpcio users annotate with (grpc.Channel, grpc.Call, grpc.Future ...).
from ._types import (AuthMetadataContext, AuthMetadataPlugin,  # noqa: E402
                     AuthMetadataPluginCallback, Call, Channel, ClientCallDetails, Future,
                     RpcContext, StreamStreamMultiCallable, StreamUnaryMultiCallable,
                     UnaryStreamMultiCallable, UnaryUnaryMultiCallable)


def stats() -> dict[str, int]:
    """Process-wide counters: the sum over every channel, open or closed."""
    return process_stats()


__all__ = ["AuthMetadataContext", "AuthMetadataPlugin", "AuthMetadataPluginCallback", "Call",
           "CallCredentials", "Channel", "CallResult", "ChannelConnectivity",
           "ChannelCredentials", "ClientCallDetails", "Compression", "Future",
           "FutureCancelledError", "FutureTimeoutError", "LocalConnectionType", "RpcContext",
           "RpcError", "StatusCode", "StreamStreamClientInterceptor",
           "StreamStreamMultiCallable", "StreamUnaryClientInterceptor",
           "StreamUnaryMultiCallable", "UnaryFuture", "UnaryStreamClientInterceptor",
           "UnaryStreamMultiCallable", "UnaryUnaryClientInterceptor",
           "UnaryUnaryMultiCallable", "access_token_call_credentials",
           "channel_ready_future", "composite_call_credentials",
           "composite_channel_credentials", "insecure_channel", "intercept_channel",
           "local_channel_credentials", "metadata_call_credentials", "secure_channel",
           "ssl_channel_credentials", "stats", "__version__"]
