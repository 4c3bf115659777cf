"""Per-call cost of interceptors and call credentials, triple_py next to grpcio (issue 24).

Against the grpc-go peer, four arms per client, all on a plaintext channel made with
``local_channel_credentials()`` (so call credentials are allowed in both clients):

  plain        no interceptor, no call credentials
  interceptor  one UnaryUnaryClientInterceptor that adds one metadata pair
  plugin       the channel's composite credentials carry one metadata_call_credentials
               plugin that adds one metadata pair
  both         the interceptor and the plugin

Each arm makes --calls sequential unary calls of a 128 B payload (after --warmup); a
round runs the eight arms back to back, interleaving the clients, in an order reversed
every other round. Per arm: median over rounds of microseconds per call (wall) and of
process CPU microseconds per call. Then paired ratios (``triple_py.bench.paired
.compare_pairs``: per-round ratios, Hodges-Lehmann estimate, exact CI, verdict) of each
arm against its client's plain arm, and of triple_py against grpcio arm by arm.

Usage: .venv/bin/python benchmarks/call_options.py [--rounds 8] [--calls 2000]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import grpc

import triple_py
from triple_py.bench.messages import UNARY_METHOD
from triple_py_testing.peers import start_peer
from triple_py.bench.paired import compare_pairs

ARMS = ("plain", "interceptor", "plugin", "both")
CLIENTS = {"triple_py": triple_py, "grpcio": grpc}


def _interceptor_class(mod: Any) -> type:
    class AddHeader(mod.UnaryUnaryClientInterceptor):
        """Adds ``x-traced: 1``, as a tracing interceptor would."""

        def intercept_unary_unary(self, continuation, details, request):
            metadata = list(details.metadata or ()) + [("x-traced", "1")]
            return continuation(_with_metadata(mod, details, metadata), request)
    return AddHeader


def _with_metadata(mod: Any, details: Any, metadata: list) -> Any:
    if hasattr(details, "_replace"):
        return details._replace(metadata=metadata)

    class Details(mod.ClientCallDetails):  # grpcio's details are not a namedtuple
        pass
    copy = Details()
    for field in ("method", "timeout", "credentials", "wait_for_ready", "compression"):
        setattr(copy, field, getattr(details, field, None))
    copy.metadata = metadata
    return copy


def _plugin(context: Any, callback: Callable) -> None:
    callback((("x-token", "t0k3n"),), None)


def make_callable(mod: Any, address: str, arm: str) -> Tuple[Any, Any]:
    """(channel, unary multi-callable) of one client's arm."""
    creds = mod.local_channel_credentials()
    if arm in ("plugin", "both"):
        creds = mod.composite_channel_credentials(creds, mod.metadata_call_credentials(_plugin))
    channel = mod.secure_channel(address, creds)
    if arm in ("interceptor", "both"):
        channel = mod.intercept_channel(channel, _interceptor_class(mod)())
    return channel, channel.unary_unary(UNARY_METHOD)


def timed(call: Any, payload: bytes, calls: int) -> Tuple[float, float]:
    """(wall, CPU) seconds per call over ``calls`` sequential calls."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        call(payload, timeout=10)
    return ((time.perf_counter() - wall0) / calls, (time.process_time() - cpu0) / calls)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)
    payload = b"\x0a\x80\x01" + b"a" * 128
    wall: Dict[Tuple[str, str, int], float] = {}
    cpu: Dict[Tuple[str, str, int], float] = {}
    labels = [f"{c}:{a}" for a in ARMS for c in CLIENTS]
    with start_peer("go") as peer:
        address = f"localhost:{peer.port}"
        arms = {label: make_callable(CLIENTS[label.split(":")[0]], address,
                                     label.split(":")[1]) for label in labels}
        for _, call in arms.values():
            assert call(payload, timeout=10) == payload
            timed(call, payload, args.warmup)
        for rnd in range(args.rounds):
            order = labels if rnd % 2 == 0 else labels[::-1]
            for label in order:
                w, c = timed(arms[label][1], payload, args.calls)
                wall[("unary128", label, rnd)] = w
                cpu[("unary128", label, rnd)] = c
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        for channel, _ in arms.values():
            channel.close()
    print(f"{args.rounds} rounds x {args.calls} sequential unary calls (128 B) per arm, "
          "grpc-go peer, local_channel_credentials channels")
    print(f"{'arm':<24}{'wall us/call':>14}{'CPU us/call':>14}")
    for label in labels:
        w = statistics.median(v for (_, a, _), v in wall.items() if a == label)
        c = statistics.median(v for (_, a, _), v in cpu.items() if a == label)
        print(f"{label:<24}{w * 1e6:>14.1f}{c * 1e6:>14.1f}")
    pairs = [(f"{c}:{a}", f"{c}:plain") for c in CLIENTS for a in ARMS[1:]]
    pairs += [(f"triple_py:{a}", f"grpcio:{a}") for a in ARMS]
    for what, values in (("wall time per call", wall), ("CPU per call", cpu)):
        print(f"\npaired ratios of {what} (arm / baseline, same round):")
        for row in compare_pairs(values, pairs, ["unary128"]):
            print(f"  {row.arm:<22} / {row.baseline:<18} {row.estimate:6.3f} "
                  f"[{row.ci_low:.3f}, {row.ci_high:.3f}] ({row.confidence:.0%}) "
                  f"p={row.p:.3g} {row.verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
