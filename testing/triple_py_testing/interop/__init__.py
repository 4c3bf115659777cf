"""triple_py_testing.interop: the interop matrix, triple_py's client against real gRPC servers.

    python -m triple_py_testing.interop [--peers grpcio,cpp,...] [--cases ...] [--wires grpc,triple]
                                [--junit out.xml] [--json out.json]

Every peer (grpcio, gRPC C++, grpc-go, connect-node, triple_py's embedded server) serves
the standard interop service ``grpc.testing.TestService`` (proto/grpc/testing/), is built
and started by the run and stopped at its end. Every case (the gRPC interop cases, plus
triple_py's own: Triple-wire unary, 1 MiB and 8 MiB messages, 1,000 concurrent calls, 10,000
messages through the coalescing writer) runs on every wire the peer speaks; the grid shows
pass / fail / n/a (with the reason) per peer x wire x case, and the exit status is non-zero
when an applicable cell fails.

Modules: ``cases`` (one function per case), ``peers`` (how each peer is built and started),
``runner`` (the grid, JUnit XML and JSON), ``protos`` (the messages, compiled at run time).
"""
from .runner import Cell, PeerResult, Report, run  # noqa: F401

__all__ = ["Cell", "PeerResult", "Report", "run"]
