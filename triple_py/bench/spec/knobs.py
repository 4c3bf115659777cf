"""Knobs: the load keywords and channel options a run sets, by the core's own tables.

Two tables of the C binding name everything a run of our client can be given:

- ``_triple.LOAD_OPTIONS`` (:mod:`triple_py._load_options`): ``run_load``'s own keywords;
- ``_triple.CHANNEL_OPTIONS`` (:mod:`triple_py._options`): the channel options, which
  ``run_load`` and ``Channel()`` both take.

A :class:`~.run_spec.RunSpec` holds the harness's own settings as fields (payload,
concurrency, ...) plus two dicts keyed by these tables' names: ``load`` (the load keywords
that are not a field) and ``channel`` (channel options). Everything here reads the rows
when asked (never a copy of a name, a range or a list of choices), so a row added to
either table is a knob of every matrix file (``channel.NAME`` and ``NAME`` keys of an arm
or of ``[scenarios]``), of ``run(load=..., channel=...)`` and of the CLI's ``--load`` and
``--channel`` flags, checked against its own range, without an edit in the harness.

The flat name of a knob, as matrix keys, CSV columns and frame columns spell it:
``channel.NAME`` for a channel option, ``NAME`` for a load keyword.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ... import _load_options, _options
from ..errors import ConfigError
from ..units import parse_size

__all__ = ["CHANNEL", "HARNESS_KEYWORDS", "FIELD_KEYWORDS", "channel_row", "load_row",
           "free_load_names", "is_knob", "check_channel", "check_load", "check_knob",
           "split_knob", "flat_knobs", "knob_from_text", "parse_assignment", "knob_columns",
           "spec_knobs", "knob_dicts"]

#: The prefix of a channel option's flat name (``channel.stream_window``).
CHANNEL = "channel."

#: ``run_load`` keywords the harness computes for each run from other settings (the method,
#: the arm's kind, the ring of requests, the schedules, the target's endpoints, the start of
#: a load split over processes, the stop callback): they are not knobs a user sets by name.
HARNESS_KEYWORDS = frozenset({"path", "mode", "requests", "rate_schedule",
                              "concurrency_schedule", "endpoints", "start_at_ns", "phase_ns",
                              "stop"})
#: ``run_load`` keywords a RunSpec holds as settings of its own (fields, and
#: ``options["driver_threads"]``), with the harness's units and defaults: set through them,
#: not as knobs (:mod:`.run_spec` checks that each is one).
FIELD_KEYWORDS = frozenset({"payload_size", "concurrency", "connections", "duration",
                            "warmup", "count", "rate", "stream_messages", "timeout",
                            "shared_request", "hist_digits", "driver_threads", "verify"})
#: Value types of the load table that a knob may have (the others are built by the harness).
_SCALAR_LOAD_TYPES = frozenset({"int", "float", "bool", "str", "choice"})

Row = Union[_options.CoreOption, _load_options.LoadOption]


def channel_row(name: str, where: str = "") -> _options.CoreOption:
    """The row of the channel option ``name`` (``_triple.CHANNEL_OPTIONS``); ConfigError
    when the core has none by that name."""
    for row in _options.CORE_OPTIONS:
        if row.name == name:
            return row
    raise ConfigError(f"{where}{CHANNEL}{name}: the core has no such channel option (known: "
                      f"{', '.join(r.name for r in _options.CORE_OPTIONS)})")


def load_row(name: str, where: str = "") -> _load_options.LoadOption:
    """The row of the load keyword ``name`` (``_triple.LOAD_OPTIONS``); ConfigError when
    the load generator has none by that name."""
    for row in _load_options.LOAD_OPTIONS:
        if row.name == name:
            return row
    raise ConfigError(f"{where}{name}: the load generator has no such keyword (known: "
                      f"{', '.join(free_load_names())})")


def free_load_names() -> Tuple[str, ...]:
    """The load keywords a user sets as knobs (``RunSpec.load``): every row of
    ``_triple.LOAD_OPTIONS`` with a plain value, but those the harness computes itself
    (:data:`HARNESS_KEYWORDS`) or holds as settings of its own (:data:`FIELD_KEYWORDS`)."""
    return tuple(r.name for r in _load_options.LOAD_OPTIONS
                 if r.type in _SCALAR_LOAD_TYPES
                 and r.name not in HARNESS_KEYWORDS | FIELD_KEYWORDS)


def is_knob(key: str) -> bool:
    """True when ``key`` is a knob's flat name: ``channel.NAME`` or a free load keyword."""
    return key.startswith(CHANNEL) or key in free_load_names()


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(bound: Any) -> str:
    if bound is None:
        return ""
    return f"{bound:g}" if isinstance(bound, float) else str(bound)


def _check_row(row: Row, value: Any, shown: str, where: str) -> Any:
    """``value`` checked against ``row`` (its type, range and choices); ConfigError
    naming ``where`` and ``shown`` (the key as the user wrote it)."""
    prefix = f"{where}{shown}"
    kind = row.type
    low, high = row.min, row.max
    if kind == "bool":
        if not (isinstance(value, bool) or (_integer(value) and value in (0, 1))):
            raise ConfigError(f"{prefix} must be true or false, not {value!r}")
        return bool(value)
    if kind == "choice":
        if value not in row.choices:
            raise ConfigError(f"{prefix} must be one of {', '.join(row.choices)}, "
                              f"not {value!r}")
        return value
    if kind in ("str", "pem"):
        if value is not None and not isinstance(value, (str, bytes)):
            raise ConfigError(f"{prefix} must be a string, not {value!r}")
        return value
    if kind == "float":
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value)):
            raise ConfigError(f"{prefix} must be a number, not {value!r}")
    elif not _integer(value):
        raise ConfigError(f"{prefix} must be an integer, not {value!r}")
    unlimited = kind == "limit" and value == -1
    if not unlimited and ((low is not None and value < low)
                          or (high is not None and value > high)):
        also = " or -1 (unlimited)" if kind == "limit" else ""
        raise ConfigError(f"{prefix} must be {_shown(low)}..{_shown(high)}{also}, "
                          f"not {value!r}")
    return value


def check_channel(name: str, value: Any, where: str = "", shown: Optional[str] = None) -> Any:
    """``value`` of the channel option ``name``, checked by its row; ConfigError naming
    ``channel.NAME`` (or ``shown``: the key as the user wrote it), prefixed by ``where``
    (a file, an arm, a flag)."""
    return _check_row(channel_row(name, where), value, shown or CHANNEL + name, where)


def check_load(name: str, value: Any, where: str = "") -> Any:
    """``value`` of the load keyword ``name``, checked by its row; ConfigError naming it."""
    row = load_row(name, where)  # ConfigError naming the known ones when there is none
    if name in HARNESS_KEYWORDS or row.type not in _SCALAR_LOAD_TYPES:
        raise ConfigError(f"{where}{name}: set by the harness for each run, not a knob")
    if name in FIELD_KEYWORDS:
        raise ConfigError(f"{where}{name}: a setting of the harness's own (its flag or "
                          f"matrix key), not a knob")
    return _check_row(row, value, name, where)


def check_knob(key: str, value: Any, where: str = "") -> Any:
    """A knob by its flat name (``channel.NAME`` or a load keyword), checked."""
    if key.startswith(CHANNEL):
        return check_channel(key[len(CHANNEL):], value, where)
    return check_load(key, value, where)


def split_knob(key: str) -> Tuple[str, str]:
    """``("channel", NAME)`` or ``("load", NAME)`` for a flat name."""
    if key.startswith(CHANNEL):
        return "channel", key[len(CHANNEL):]
    return "load", key


def flat_knobs(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """The knobs among ``settings`` (a matrix arm's or scenario's keys, a result's record)
    by their flat names: a ``channel`` table's entries as ``channel.NAME``, flat
    ``channel.NAME`` keys and free load keywords as they are; other keys are left out."""
    flat: Dict[str, Any] = {}
    nested = settings.get("channel")
    if isinstance(nested, Mapping):
        flat.update({CHANNEL + k: v for k, v in nested.items()})
    free = free_load_names()
    flat.update({k: v for k, v in settings.items() if k.startswith(CHANNEL) or k in free})
    return flat


def knob_from_text(key: str, text: str, where: str = "") -> Any:
    """The value of a knob given as text (a command-line flag), read by its row's type
    (integers also as sizes: ``64KiB``), then checked."""
    kind, name = split_knob(key)
    row: Row = channel_row(name, where) if kind == "channel" else load_row(name, where)
    value: Any = text
    try:
        if row.type == "bool":
            lowered = text.strip().lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(text)
            value = lowered in ("true", "1", "yes", "on")
        elif row.type == "float":
            value = float(text)
        elif row.type in ("int", "limit", "ms", "count"):
            try:
                value = int(text, 0)
            except ValueError:
                value = parse_size(text)
        elif row.type in ("str", "pem") and text.lower() == "none":
            value = None
    except (ValueError, ConfigError):
        raise ConfigError(f"{where}{key}: bad value {text!r} (its type: {row.type})") from None
    return check_knob(key, value, where)


def parse_assignment(text: str, flag: str, channel: bool) -> Tuple[str, Any]:
    """``NAME=VALUE`` of ``--channel`` (``channel`` True; NAME may also be the option's key,
    ``triple.stream_window``) or ``--load``: the knob's flat name and its checked value."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(f"{flag} {text!r}: expected NAME=VALUE")
    if channel:  # by its name, or by its key as channels take it (triple.stream_window)
        name = name.removeprefix(CHANNEL)
        name = next((r.name for r in _options.CORE_OPTIONS if r.key == name), name)
    key = CHANNEL + name if channel else name
    return key, knob_from_text(key, value.strip(), f"{flag} {text}: ")


def knob_columns(rows: Iterable[Mapping[str, Any]], known: Iterable[str] = ()) -> List[str]:
    """The knob columns of ``rows`` in first-seen order, leaving out those in ``known``
    (a table's fixed columns)."""
    seen = set(known)
    columns: List[str] = []
    for row in rows:
        for key in row:
            if key not in seen and is_knob(key):
                seen.add(key)
                columns.append(key)
    return columns


def spec_knobs(channel: Mapping[str, Any], load: Mapping[str, Any]
               ) -> Dict[str, Any]:
    """A spec's ``channel`` and ``load`` dicts as one dict of flat names."""
    return {**{CHANNEL + k: v for k, v in channel.items()}, **dict(load)}


def knob_dicts(flat: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The inverse of :func:`spec_knobs`: (channel, load) dicts by the tables' names."""
    channel: Dict[str, Any] = {}
    load: Dict[str, Any] = {}
    for key, value in flat.items():
        kind, name = split_knob(key)
        (channel if kind == "channel" else load)[name] = value
    return channel, load

