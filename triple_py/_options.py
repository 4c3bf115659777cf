"""Channel options: grpcio's keys that triple_py honours, plus ``triple.*`` knobs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from . import __version__

MAX_RECEIVE = "grpc.max_receive_message_length"
MAX_SEND = "grpc.max_send_message_length"
PRIMARY_USER_AGENT = "grpc.primary_user_agent"
DEFAULT_AUTHORITY = "grpc.default_authority"
SSL_TARGET_NAME_OVERRIDE = "grpc.ssl_target_name_override"
# Accept any server certificate (secure_channel only): for load tests against servers with
# throw-away certificates (python -m triple_py.bench run --skipTLS). Never a default.
TLS_SKIP_VERIFY = "triple.tls_skip_verify"
STREAM_WINDOW = "triple.stream_window"
CONN_WINDOW = "triple.connection_window"
MAX_FRAME_SIZE = "triple.max_frame_size"
WRITE_BUFFER_SIZE = "triple.write_buffer_size"
WRITE_BUFFER_DELAY_US = "triple.write_buffer_delay_us"
WIRE = "triple.wire"
DIALECT = "triple.dialect"
SERVICE_GROUP = "triple.service_group"
SERVICE_VERSION = "triple.service_version"
CODEC = "triple.codec"
WRITE_STALL_TIMEOUT_MS = "triple.write_stall_timeout_ms"
KEEPALIVE_TIME_MS = "grpc.keepalive_time_ms"
KEEPALIVE_TIMEOUT_MS = "grpc.keepalive_timeout_ms"
KEEPALIVE_PERMIT_WITHOUT_CALLS = "grpc.keepalive_permit_without_calls"
MAX_PINGS_WITHOUT_DATA = "grpc.http2.max_pings_without_data"
INITIAL_RECONNECT_BACKOFF_MS = "grpc.initial_reconnect_backoff_ms"
MAX_RECONNECT_BACKOFF_MS = "grpc.max_reconnect_backoff_ms"
MIN_RECONNECT_BACKOFF_MS = "grpc.min_reconnect_backoff_ms"
UNARY_FAST_PATH = "triple.unary_fast_path"
LB_POLICY_NAME = "grpc.lb_policy_name"
SERVICE_CONFIG = "grpc.service_config"
ENABLE_RETRIES = "grpc.enable_retries"
LB_POLICIES = ("pick_first", "round_robin")
INT_MAX = 2**31 - 1
WIRES = {"grpc": 0, "triple": 1}
# Triple wire dialects (csrc/tri_channel.h TRI_DIALECT_*): the version and deadline headers a
# Triple unary call sends.  "go": dubbo-go's (triple-protocol-version: 0.1.0,
# triple-timeout-ms); "spec": the Triple spec's, which Dubbo Java and dubbo-js read
# (tri-protocol-version: 1.0.0, tri-service-timeout); "auto": both.  Replies are read in every
# implementation's form whatever the dialect.
DIALECTS = {"auto": 0, "go": 1, "spec": 2}


@dataclass
class ChannelOptions:
    """The options a channel was built with, resolved to their defaults."""

    max_receive: int = 4 * 1024 * 1024
    max_send: int = -1
    user_agent: str = f"triple-py/{__version__}"
    authority: Optional[str] = None
    stream_window: int = 16 * 1024 * 1024 - 1
    conn_window: int = 2**30 - 1
    max_frame_size: int = 64 * 1024
    write_buffer_size: int = 32 * 1024
    write_buffer_delay_us: int = 200
    wire: str = "grpc"
    dialect: str = "auto"
    service_group: Optional[str] = None
    service_version: Optional[str] = None
    codec: str = "proto"
    compression: int = 0
    ssl_target_name_override: Optional[str] = None
    tls_skip_verify: bool = False
    # A connection whose output has waited this long for a peer that reads nothing dies
    # (its calls end UNAVAILABLE and the next call reconnects); 0 turns the watchdog off.
    write_stall_timeout_ms: int = 10_000
    # grpcio's keepalive: a PING after this long without reading while calls are open
    # (INT_MAX or 0: off, grpcio's client default); no ACK within the timeout kills it.
    keepalive_time_ms: int = 0
    keepalive_timeout_ms: int = 20_000
    keepalive_permit_without_calls: bool = False
    max_pings_without_data: int = 2
    # grpcio's connection backoff after failed connection attempts (connection-backoff.md);
    # min_reconnect_backoff_ms is the least time an attempt is given, as in grpc core.
    # Values below 100 ms count as 100 ms, as in grpc core.
    initial_reconnect_backoff_ms: int = 1_000
    max_reconnect_backoff_ms: int = 120_000
    min_reconnect_backoff_ms: int = 20_000
    # Unary calls take the fast path (one op: headers and the whole request at once).
    # False sends them through the client-streaming machinery instead (start, write,
    # done_writing: dubbo-go's duplex path), the baseline of an A/B and a fallback.
    # On the Triple wire the one request goes out as the bare body (TRI_CALL_UNARY_BODY).
    unary_fast_path: bool = True
    # Several backends (_balancer): None means the service config's, else pick_first.
    lb_policy: Optional[str] = None
    service_config: Optional[str] = None  # JSON (_service_config)
    enable_retries: bool = True  # grpcio's default: retries and transparent retries on

    @classmethod
    def from_pairs(cls, options: Optional[Iterable[tuple[str, Any]]]) -> "ChannelOptions":
        """Reads grpcio-style ``[(key, value), ...]``; unknown keys are ignored, as grpcio does."""
        o = cls()
        for key, value in options or ():
            if key == PRIMARY_USER_AGENT:
                o.user_agent = f"{value} {o.user_agent}"
            elif key == WIRE and value not in WIRES:
                raise ValueError(f"{WIRE} must be one of {sorted(WIRES)}, not {value!r}")
            elif key == LB_POLICY_NAME and value not in LB_POLICIES:
                raise ValueError(f"{LB_POLICY_NAME} must be one of {LB_POLICIES}, not {value!r}")
            elif key == DIALECT and value not in DIALECTS:
                raise ValueError(f"{DIALECT} must be one of {sorted(DIALECTS)}, not {value!r}")
            elif key in _FIELDS:
                name, kind = _FIELDS[key]
                try:
                    setattr(o, name, kind(value))
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"option {key!r}: {exc}") from None
        return o

    def core_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``_triple.Channel``."""
        return dict(authority=self.authority, max_receive=self.max_receive,
                    max_send=self.max_send, stream_window=self.stream_window,
                    conn_window=self.conn_window, max_frame_size=self.max_frame_size,
                    user_agent=self.user_agent, write_buffer_size=self.write_buffer_size,
                    write_buffer_delay_us=self.write_buffer_delay_us,
                    wire=WIRES[self.wire], dialect=DIALECTS[self.dialect],
                    compression=self.compression,
                    service_group=self.service_group, service_version=self.service_version,
                    triple_codec=self.codec,
                    write_stall_timeout_ms=self.write_stall_timeout_ms,
                    keepalive_time_ms=(0 if self.keepalive_time_ms >= INT_MAX
                                       else self.keepalive_time_ms),
                    keepalive_timeout_ms=self.keepalive_timeout_ms,
                    keepalive_permit_without_calls=self.keepalive_permit_without_calls,
                    max_pings_without_data=self.max_pings_without_data,
                    initial_reconnect_backoff_ms=self.initial_reconnect_backoff_ms,
                    max_reconnect_backoff_ms=self.max_reconnect_backoff_ms,
                    min_reconnect_backoff_ms=self.min_reconnect_backoff_ms)


def _milliseconds(value: Any) -> int:
    """A duration option in ms: an int >= 0, INT_MAX at most (larger means INT_MAX)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a duration option must be an int (milliseconds), not {value!r}")
    if value < 0:
        raise ValueError(f"a duration option must be >= 0 ms, not {value}")
    return min(value, INT_MAX)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a count option must be an int >= 0, not {value!r}")
    return min(value, INT_MAX)


def _in_range(low: int, high: int, unlimited: Optional[int] = None) -> Any:
    """A converter for an int option that must lie in [low, high] (or be `unlimited`):
    anything else (a float, a bool, 2**32 that would wrap) is a ValueError naming the
    range, instead of a channel that accepts it and then hangs."""
    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"this option must be an int, not {value!r}")
        if value == unlimited or low <= value <= high:
            return value
        also = f" or {unlimited} (unlimited)" if unlimited is not None else ""
        raise ValueError(f"this option must be in [{low}, {high}]{also}, not {value}")
    return convert


def _flag(value: Any) -> bool:
    """A switch option: a bool (or 0/1, as grpcio's C core takes ints)."""
    if not isinstance(value, int) or value not in (0, 1):  # bool is an int
        raise TypeError(f"a switch option must be a bool, not {value!r}")
    return bool(value)


# Option key -> (ChannelOptions field, converter), for the keys that map one to one.
_FIELDS: dict[str, tuple[str, Any]] = {
    MAX_RECEIVE: ("max_receive", _in_range(0, 2**63 - 1, unlimited=-1)),
    MAX_SEND: ("max_send", _in_range(0, 2**63 - 1, unlimited=-1)),
    DEFAULT_AUTHORITY: ("authority", str),
    SSL_TARGET_NAME_OVERRIDE: ("ssl_target_name_override", str),
    TLS_SKIP_VERIFY: ("tls_skip_verify", bool),
    # HTTP/2 windows: 0 would let no byte through, 2**31 and above are protocol errors.
    STREAM_WINDOW: ("stream_window", _in_range(1, INT_MAX)),
    CONN_WINDOW: ("conn_window", _in_range(65_535, INT_MAX)),  # HTTP/2's initial window
    MAX_FRAME_SIZE: ("max_frame_size", _in_range(16_384, 16_777_215)),  # RFC 9113 6.5.2
    WRITE_BUFFER_SIZE: ("write_buffer_size", _in_range(0, INT_MAX)),
    WRITE_BUFFER_DELAY_US: ("write_buffer_delay_us", _in_range(0, INT_MAX)),
    WIRE: ("wire", str),
    DIALECT: ("dialect", str),
    SERVICE_GROUP: ("service_group", str),
    SERVICE_VERSION: ("service_version", str),
    CODEC: ("codec", str),
    WRITE_STALL_TIMEOUT_MS: ("write_stall_timeout_ms", _milliseconds),
    KEEPALIVE_TIME_MS: ("keepalive_time_ms", _milliseconds),
    KEEPALIVE_TIMEOUT_MS: ("keepalive_timeout_ms", _milliseconds),
    KEEPALIVE_PERMIT_WITHOUT_CALLS: ("keepalive_permit_without_calls", bool),
    MAX_PINGS_WITHOUT_DATA: ("max_pings_without_data", _count),
    INITIAL_RECONNECT_BACKOFF_MS: ("initial_reconnect_backoff_ms", _milliseconds),
    MAX_RECONNECT_BACKOFF_MS: ("max_reconnect_backoff_ms", _milliseconds),
    MIN_RECONNECT_BACKOFF_MS: ("min_reconnect_backoff_ms", _milliseconds),
    UNARY_FAST_PATH: ("unary_fast_path", _flag),
    LB_POLICY_NAME: ("lb_policy", str),
    SERVICE_CONFIG: ("service_config", str),
    ENABLE_RETRIES: ("enable_retries", _flag),
}
