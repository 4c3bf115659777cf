"""Channel options: grpcio's keys that triple_py honours, plus ``triple.*`` knobs.

The keys, defaults and ranges are the C core's table of channel options
(``csrc/tri_options.c``, exported as ``_triple.CHANNEL_OPTIONS``): a new option is a
row there (and its use in the core); ``ChannelOptions`` grows the field, the key, the
range check and the keyword for ``_triple.Channel`` from the row.  Only what grpcio
defines beyond the table stays here: how each type of value is checked (milliseconds,
counts, -1 for unlimited), ``grpc.primary_user_agent`` prepending to the default, and
``triple.unary_fast_path``, which only the Python layer reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple, Optional, TypeVar

from . import __version__, _triple


class CoreOption(NamedTuple):
    """One row of the C core's table of channel options (``_triple.CHANNEL_OPTIONS``)."""

    key: Optional[str]  # as users write it; None: set through another API
    name: str  # ChannelOptions field and _triple.Channel keyword
    type: str  # int, limit, ms, count, bool, str, choice, pem
    min: Optional[int]
    max: Optional[int]
    default: Any
    choices: tuple[str, ...]
    from_credentials: bool  # TLS material: from channel credentials, not options


CORE_OPTIONS: tuple[CoreOption, ...] = tuple(CoreOption(*row) for row in _triple.CHANNEL_OPTIONS)
_BY_NAME = {o.name: o for o in CORE_OPTIONS}
INT_MAX = 2**31 - 1
_T = TypeVar("_T")


def core_default(name: str) -> Any:
    """The core's default of the channel option called ``name`` ("write_buffer_size"):
    what the bench harness and the docs state as the default."""
    return _BY_NAME[name].default


def _key(name: str) -> str:
    key = _BY_NAME[name].key
    assert key is not None, name
    return key


PRIMARY_USER_AGENT = _key("user_agent")
WIRE = _key("wire")
DIALECT = _key("dialect")
UNARY_FAST_PATH = "triple.unary_fast_path"
# Options of the Python layer (several backends, retries: _balancer, _service_config).
LB_POLICY_NAME = "grpc.lb_policy_name"
SERVICE_CONFIG = "grpc.service_config"
ENABLE_RETRIES = "grpc.enable_retries"
PER_RPC_RETRY_BUFFER_SIZE = "grpc.per_rpc_retry_buffer_size"
RETRY_BUFFER_SIZE = "grpc.retry_buffer_size"
LB_POLICIES = ("pick_first", "round_robin")
# Triple wire dialects (csrc/tri_channel.h TRI_DIALECT_*): the version and deadline headers a
# Triple unary call sends.  "go": dubbo-go's (triple-protocol-version: 0.1.0,
# triple-timeout-ms); "spec": the Triple spec's, which Dubbo Java and dubbo-js read
# (tri-protocol-version: 1.0.0, tri-service-timeout); "auto": both.  Replies are read in every
# implementation's form whatever the dialect.
WIRES = {name: i for i, name in enumerate(_BY_NAME["wire"].choices)}
DIALECTS = {name: i for i, name in enumerate(_BY_NAME["dialect"].choices)}
# How a channel dials its host (csrc/tri_channel.h TRI_ADDRESS_*): the endpoint kinds of
# _resolver (tcp, unix, unix-abstract), by the core's number.
ADDRESS_KINDS = {name: i for i, name in enumerate(_BY_NAME["address_kind"].choices)}


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


def _in_range(low: int, high: int, unlimited: Optional[int] = None) -> Callable[[Any], int]:
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


def _converter(row: CoreOption) -> Callable[[Any], Any]:
    """How a value of the row's type is checked (the per-type rules of grpcio's keys)."""
    if row.type == "int":
        assert row.min is not None and row.max is not None
        return _in_range(row.min, row.max)
    if row.type == "limit":
        assert row.min is not None and row.max is not None
        return _in_range(row.min, row.max, unlimited=-1)
    rules: dict[str, Callable[[Any], Any]] = {
        "ms": _milliseconds, "count": _count, "bool": bool, "str": str, "choice": str}
    return rules[row.type]


_PY_TYPES = {"int": int, "limit": int, "ms": int, "count": int, "bool": bool,
             "str": Optional[str], "choice": str}
# The ChannelOptions fields: every row but the TLS material from credentials.
_CORE_FIELDS = tuple(o for o in CORE_OPTIONS if not o.from_credentials)
_DEFAULTS = {o.name: o.default for o in _CORE_FIELDS}
_DEFAULTS["user_agent"] = f"{_DEFAULTS['user_agent']}/{__version__}"

# Option key -> (ChannelOptions field, converter), for the keys that map one to one.
_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    o.key: (o.name, _converter(o)) for o in _CORE_FIELDS if o.key is not None}
_FIELDS[UNARY_FAST_PATH] = ("unary_fast_path", _flag)
_FIELDS[LB_POLICY_NAME] = ("lb_policy", str)
_FIELDS[SERVICE_CONFIG] = ("service_config", str)
_FIELDS[ENABLE_RETRIES] = ("enable_retries", _flag)
_FIELDS[PER_RPC_RETRY_BUFFER_SIZE] = ("per_rpc_retry_buffer_size", _count)
_FIELDS[RETRY_BUFFER_SIZE] = ("retry_buffer_size", _count)
_CHOICES = {o.key: o.choices for o in _CORE_FIELDS if o.type == "choice"}


def _with_table_fields(cls: type[_T]) -> type[_T]:
    """Makes ``cls`` a dataclass whose fields are the table's rows (their defaults and
    Python types) followed by the fields ``cls`` declares itself."""
    own = cls.__dict__.get("__annotations__", {})
    cls.__annotations__ = {**{o.name: _PY_TYPES[o.type] for o in _CORE_FIELDS}, **own}
    for o in _CORE_FIELDS:
        setattr(cls, o.name, _DEFAULTS[o.name])
    return dataclass(cls)


@_with_table_fields
class ChannelOptions:
    """The options a channel was built with, resolved to their defaults.

    One field per row of ``_triple.CHANNEL_OPTIONS`` but the TLS material (named as the
    row: ``max_receive``, ``write_buffer_size``...), then those of the Python layer:
    ``unary_fast_path``, ``lb_policy``, ``service_config``, ``enable_retries``,
    ``per_rpc_retry_buffer_size``, ``retry_buffer_size``."""

    # Unary calls take the fast path (one op: headers and the whole request at once)
    # unless False: they then go through the client-streaming machinery (start, write,
    # done_writing: dubbo-go's duplex path), the baseline of an A/B and a fallback. On
    # the Triple wire the one request goes out as the bare body (TRI_CALL_UNARY_BODY).
    unary_fast_path: bool = True
    # Several backends (_balancer): None means the service config's, else pick_first.
    lb_policy: Optional[str] = None
    service_config: Optional[str] = None  # JSON (_service_config)
    enable_retries: bool = True  # grpcio's default: retries and transparent retries on
    # Request bytes a streaming call keeps for its next attempt (_replay), per call and
    # over the channel's calls; past either the call commits (grpc core's defaults).
    per_rpc_retry_buffer_size: int = 256 << 10
    retry_buffer_size: int = 256 << 20

    if TYPE_CHECKING:
        def __init__(self, **fields: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...  # the table's fields
        def __setattr__(self, name: str, value: Any) -> None: ...

    @classmethod
    def from_pairs(cls, options: Optional[Iterable[tuple[str, Any]]]) -> "ChannelOptions":
        """Reads grpcio-style ``[(key, value), ...]``; unknown keys are ignored, as grpcio
        does."""
        o = cls()
        for key, value in options or ():
            if key == PRIMARY_USER_AGENT:
                o.user_agent = f"{value} {o.user_agent}"
            elif key == LB_POLICY_NAME and value not in LB_POLICIES:
                raise ValueError(f"{LB_POLICY_NAME} must be one of {LB_POLICIES}, not {value!r}")
            elif key in _CHOICES and value not in _CHOICES[key]:
                raise ValueError(
                    f"{key} must be one of {sorted(_CHOICES[key])}, not {value!r}")
            elif key in _FIELDS:
                name, kind = _FIELDS[key]
                try:
                    setattr(o, name, kind(value))
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"option {key!r}: {exc}") from None
        return o

    def core_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``_triple.Channel``: one per row of the table."""
        kwargs = {o.name: getattr(self, o.name) for o in _CORE_FIELDS}
        if kwargs["keepalive_time_ms"] >= INT_MAX:  # grpcio's "never"
            kwargs["keepalive_time_ms"] = 0
        return kwargs
