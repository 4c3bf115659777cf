"""RunSpec: everything one arm needs for one run, validated in one place."""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Dict, List, Optional, Tuple

from ... import _options
from ..._options import core_default
from ..errors import ConfigError
from ..limits import load_limit, option_range
from ..workload.messages import STREAM_METHOD, UNARY_METHOD, benchmark_request, normalize_method
from .kinds import kind_of
from .knobs import (CHANNEL, FIELD_KEYWORDS, channel_row, check_channel, check_load,
                    spec_knobs, split_knob)
from .schedules import Schedule

__all__ = ["RunSpec", "takes_knob", "c_arm_mode", "WIRES", "WRITE_BUFFER_SIZE", "WRITE_BUFFER_DELAY_US", "load_limit",
           "option_range"]

#: The wires, as the core's ``triple.wire`` row names them.
WIRES = tuple(_options.WIRES)
# The C core's coalescing writer defaults (its table of channel options).
WRITE_BUFFER_SIZE: int = core_default("write_buffer_size")
WRITE_BUFFER_DELAY_US: int = core_default("write_buffer_delay_us")


@dataclasses.dataclass
class RunSpec:
    """One run of one arm.

    ``concurrency`` is the total number of calls (streams) in flight, spread evenly over
    ``connections`` (ghz's meaning). ``duration`` seconds are measured after ``warmup``
    seconds; ``count`` > 0 caps the measured calls (C modes and h2load). ``rate`` (calls/s
    over all connections) makes the C modes open-loop. ``request`` overrides the serialized
    BenchmarkRequest the Python and h2load arms send (default: ``payload_size`` bytes).
    ``requests`` is a ring of pre-encoded requests with their metadata
    (:func:`~triple_py.bench.workload.request_data.build_ring`): the C arms cycle through
    it, the other arms send
    its first body (and no metadata). ``connection`` holds the C load's channel options by
    the names of ``_triple.CHANNEL_OPTIONS`` (authority, compression, TLS:
    :meth:`~triple_py.bench.workload.call_setup.CallSetup.connection`).
    ``rate_schedule`` (an open loop whose rate follows it) and ``concurrency_schedule``
    (calls in flight over time, at most ``concurrency``) are ghz's load schedules
    (:mod:`.schedules`, C arms only).

    ``verify``: every arm but h2load compares each response with its request (the
    server must echo); one that differs counts as an error (status ``MISMATCH``). Off,
    an arm checks what h2load and ghz check: the status (and our client's framing
    checks), so that no arm does work another skips.

    ``channel`` sets any channel option by its name in ``_triple.CHANNEL_OPTIONS``
    (``{"stream_window": 1 << 20}``; our client's arms: the C ones take every row, the
    triple-py ones the rows with a key) and ``load`` any other keyword of
    ``_triple.LOAD_OPTIONS`` by its name (``{"series_digits": 3}``; C arms): each is checked
    against its row (:mod:`.knobs`). A channel option that is a field of its own here
    (``write_buffer_size``, ``write_buffer_delay_us``, ``wire``) moves to its field.
    """

    arm: str
    mode: str
    target: str
    method: Optional[str] = None
    payload_size: int = 128
    concurrency: int = 50
    connections: int = 1
    duration: float = 3.0
    warmup: float = 0.5
    count: int = 0
    rate: Optional[float] = None
    stream_messages: int = 1
    write_buffer_size: int = WRITE_BUFFER_SIZE
    write_buffer_delay_us: int = WRITE_BUFFER_DELAY_US
    timeout: float = 10.0
    wire: str = "grpc"
    shared_request: bool = True
    verify: bool = False
    hist_digits: int = 3
    request: Optional[bytes] = None
    options: Dict[str, Any] = dataclasses.field(default_factory=dict)
    requests: Optional[List[Tuple[bytes, List[Tuple[bytes, bytes]]]]] = None
    connection: Dict[str, Any] = dataclasses.field(default_factory=dict)
    rate_schedule: Optional[Schedule] = None
    concurrency_schedule: Optional[Schedule] = None
    channel: Dict[str, Any] = dataclasses.field(default_factory=dict)
    load: Dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.channel, self.load = dict(self.channel), dict(self.load)
        for name in [n for n in self.channel if n in _CHANNEL_FIELDS]:
            setattr(self, name, self.channel.pop(name))

    @property
    def streaming(self) -> bool:
        """True for the bidi kinds (their default method is StreamCall)."""
        return kind_of(self.mode).streaming

    def resolved_method(self) -> str:
        """The method path, defaulting to UnaryCall (StreamCall for the bidi kinds)."""
        if self.method is None:
            return STREAM_METHOD if self.streaming else UNARY_METHOD
        return normalize_method(self.method)

    def request_bytes(self) -> bytes:
        """The serialized request the Python and h2load arms send."""
        if self.request is not None:
            return self.request
        if self.requests:
            return self.requests[0][0]
        return benchmark_request(self.payload_size)

    def validate(self) -> "RunSpec":
        """Checks every field; raises ConfigError naming the first bad one. Returns self."""
        kind = kind_of(self.mode)  # ConfigError for an unknown mode

        def need(ok: bool, message: str) -> None:
            if not ok:
                raise ConfigError(message)

        def number(value: Any) -> bool:
            return isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value)

        need(self.wire in WIRES, f"unknown wire {self.wire!r} (expected grpc or triple)")
        need(self.wire in kind.wires,
             f"--wire {self.wire}: the {self.mode} arm speaks only the "
             f"{'/'.join(kind.wires)} wire (streams are gRPC-framed on every wire)")
        if "dialect" in self.options:
            check_channel("dialect", self.options["dialect"])
        for name, value in self.channel.items():
            check_channel(name, value)
            need(takes_knob(self.mode, CHANNEL + name),
                 f"channel.{name}: the {self.mode} arm does not take it (channel options: "
                 f"fastpath, stream-path, bidi; triple-py-* those with a key)")
        for name, value in self.load.items():
            check_load(name, value)
            need(takes_knob(self.mode, name),
                 f"{name}: a keyword of the C load generator; the {self.mode} arm does not "
                 f"take it (use fastpath, stream-path or bidi)")
        def within(value: Any, name: str, what: str, *, integer: bool = True,
                   low: Optional[float] = None, table: Callable = load_limit) -> None:
            lo, hi = table(name)
            shown = f"{lo:.0f}..{hi:.0f}" if low is None else f"> 0 and <= {hi:.0f}"
            lo = lo if low is None else low
            ok = (isinstance(value, int) and not isinstance(value, bool)) if integer \
                else number(value)
            need(ok and lo <= value <= hi, f"{what} must be {shown}, not {value!r}")

        within(self.payload_size, "payload_size", "payload size (bytes)")
        within(self.connections, "connections", "connections")
        # One call in flight costs a slot in the C load, a thread or a task in the Python
        # arms: the load generator's bound per connection (and for the Python arms, total).
        per_connection = load_limit("concurrency")[1]
        c_arm = c_arm_mode(self.mode)
        most = per_connection * (self.connections if c_arm and isinstance(
            self.connections, int) else 1)
        need(isinstance(self.concurrency, int) and 1 <= self.concurrency <= most,
             f"concurrency must be 1..{most:.0f}"
             + (f" ({per_connection:.0f} per connection)" if c_arm else "")
             + f", not {self.concurrency!r}")
        need(self.concurrency % self.connections == 0,
             f"concurrency {self.concurrency} is not a multiple of connections "
             f"{self.connections} (calls in flight are spread evenly over the connections)")
        within(self.duration, "duration", "duration (seconds)", integer=False)
        within(self.warmup, "warmup", "warm-up (seconds)", integer=False)
        within(self.count, "count", "total (-n)")
        need(self.duration > 0 or self.count > 0, "give a duration (-z) or a total (-n)")
        if self.rate is not None:
            within(self.rate, "rate", "rate (calls/s)", integer=False, low=1e-9)
        within(self.stream_messages, "stream_messages", "stream messages")
        within(self.write_buffer_size, "write_buffer_size", "write buffer size (bytes)",
               table=option_range)
        within(self.write_buffer_delay_us, "write_buffer_delay_us",
               "write buffer delay (µs)", table=option_range)
        within(self.timeout, "timeout", "timeout (seconds)", integer=False, low=1e-9)
        need(self.rate is None or kind.open_loop,
             f"--rps: the {self.mode} arm has no open loop (use fastpath, stream-path or bidi)")
        need(self.count == 0 or kind.count,
             f"-n/--total: the {self.mode} arm runs for a duration only; use -z")
        pems = ("root_certificates", "private_key", "certificate_chain")
        h2load_ok = self.mode.startswith("h2load") and set(self.connection) <= {
            "tls", "ssl_target_name_override", "tls_skip_verify", *pems} \
            and not any(self.connection.get(k) for k in pems)
        need(not (self.connection or any(md for _, md in self.requests or ()))
             or c_arm or h2load_ok,
             f"metadata, TLS, --authority and compression: the {self.mode} arm does not "
             f"take them (use fastpath, stream-path or bidi; h2load takes metadata and "
             f"TLS without --cacert, which it does not verify)")
        need((self.rate_schedule is None and self.concurrency_schedule is None) or c_arm,
             f"load schedules: the {self.mode} arm does not take them (use fastpath, "
             f"stream-path or bidi)")
        need(self.rate_schedule is None or self.rate is None,
             "give --rps or --load-schedule, not both")
        self.resolved_method()  # ConfigError for a malformed method
        return self

    def channel_options(self) -> Dict[str, Any]:
        """Every channel option of this run by the table's names: the call setup's
        (``connection``), the fields that are channel options, then ``channel``."""
        return {**self.connection, **self._own_channel()}

    def channel_pairs(self) -> List[Tuple[str, Any]]:
        """The channel options of this run (but the call setup's) as grpcio-style
        ``(key, value)`` pairs, for the arms on triple_py's Python API."""
        return [(channel_row(name).key, value) for name, value in self._own_channel().items()]

    def _own_channel(self) -> Dict[str, Any]:
        own = {name: getattr(self, name) for name in _CHANNEL_FIELDS}
        if "dialect" in self.options:
            own["dialect"] = self.options["dialect"]
        return {**own, **self.channel}

    def knobs(self) -> Dict[str, Any]:
        """``channel`` and ``load`` as one dict of flat names (``channel.NAME``, ``NAME``):
        what the results record of this run beyond the fields."""
        return spec_knobs(self.channel, self.load)

    def result_fields(self) -> Dict[str, Any]:
        """The BenchResult fields that echo this spec."""
        size = round(sum(len(b) for b, _ in self.requests) / len(self.requests)) \
            if self.requests else self.payload_size
        return {"arm": self.arm, "mode": self.mode, "target": self.target,
                "method": self.resolved_method(), "payload_size": size,
                "concurrency": self.concurrency, "connections": self.connections,
                "stream_messages": self.stream_messages if self.streaming else 1,
                "rate": self.rate, "duration_s": self.duration, "warmup_s": self.warmup,
                "count": self.count, "wire": self.wire}


def c_arm_mode(mode: str) -> bool:
    """True for the kinds the C load generator runs (they take every load keyword)."""
    return mode in ("fastpath", "stream-path", "bidi")


def takes_knob(mode: str, key: str) -> bool:
    """True when the arms of kind ``mode`` take the knob ``key`` (a flat name): the C
    arms take every channel option and load keyword, the other arms of our client
    (triple-py-*) the channel options that have a key, the reference arms none."""
    kind, name = split_knob(key)
    if c_arm_mode(mode):
        return True
    return kind == "channel" and kind_of(mode).ours and channel_row(name).key is not None


#: Channel options that are RunSpec fields of their own.
_CHANNEL_FIELDS = tuple(f.name for f in dataclasses.fields(RunSpec)
                        if f.name in {o.name for o in _options.CORE_OPTIONS})
assert FIELD_KEYWORDS <= {f.name for f in dataclasses.fields(RunSpec)} | {"driver_threads"}
