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
from ._channel import Channel, insecure_channel, process_stats, secure_channel  # noqa: E402
from ._credentials import ChannelCredentials, ssl_channel_credentials  # noqa: E402
from ._future import UnaryFuture  # noqa: E402


def stats() -> dict[str, int]:
    """Process-wide counters: the sum over every channel, open or closed."""
    return process_stats()


__all__ = ["Channel", "CallResult", "ChannelCredentials", "Compression",
           "FutureCancelledError", "FutureTimeoutError", "RpcError", "StatusCode",
           "UnaryFuture", "insecure_channel", "secure_channel", "ssl_channel_credentials",
           "stats", "__version__"]
