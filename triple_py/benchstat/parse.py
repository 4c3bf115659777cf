"""Reader for the Go benchmark text format (golang.org/design/14313).

The reader yields :class:`Result` records (one per ``Benchmark...``
line, carrying the file configuration in force at that line) and
:class:`BenchSyntaxError` records for malformed lines, which the caller
reports as ``file:line: message`` and then skips. ``Unit`` metadata
lines accumulate in a :class:`UnitMetadataMap` shared across files.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple, Union

from .textutil import is_go_lower, is_go_space, is_go_upper, split_field
from .units import tidy

__all__ = [
    "ConfigEntry",
    "Value",
    "Result",
    "BenchSyntaxError",
    "UnitMetadataMap",
    "FatalInputError",
    "read_benchmark_text",
    "name_base",
    "name_parts",
    "parse_go_float",
    "parse_go_int",
]

#: bufio.Scanner's default maximum token size.
MAX_LINE_BYTES = 64 * 1024


@dataclass
class ConfigEntry:
    """One ``key: value`` configuration pair; ``file`` is False for ``.file``."""

    key: str
    value: str
    file: bool


@dataclass
class Value:
    """A measurement in tidied units, with the original unit if it changed."""

    value: float
    unit: str
    orig_value: float = 0.0
    orig_unit: str = ""


@dataclass
class Result:
    """One benchmark result line and the configuration in force for it."""

    config: List[ConfigEntry]
    name: str
    iters: int
    values: List[Value]
    file_name: str = ""
    line: int = 0

    def get_config(self, key: str) -> Optional[str]:
        """Value of a configuration key, or None if it is not set."""
        for entry in self.config:
            if entry.key == key:
                return entry.value
        return None


@dataclass
class BenchSyntaxError:
    """A malformed input line; printed as ``file:line: msg``."""

    file_name: str
    line: int
    msg: str

    def __str__(self) -> str:
        return "%s:%d: %s" % (self.file_name, self.line, self.msg)


class FatalInputError(Exception):
    """An input error that stops benchstat (printed as ``benchstat: msg``)."""


class UnitMetadataMap:
    """``Unit`` line metadata, keyed by (tidied unit, key)."""

    def __init__(self) -> None:
        self._values: Dict[Tuple[str, str], str] = {}

    def set(self, unit: str, key: str, value: str) -> Optional[str]:
        """Record metadata; return the previous value if it conflicts."""
        tidy_unit = tidy(1.0, unit)[1]
        have = self._values.get((tidy_unit, key))
        if have is not None:
            return None if have == value else have
        self._values[(tidy_unit, key)] = value
        return None

    def get(self, unit: str, key: str) -> Optional[str]:
        """Metadata value for a (possibly untidied) unit, or None."""
        return self._values.get((tidy(1.0, unit)[1], key))

    def assumption(self, unit: str) -> str:
        """``exact`` if the unit has ``assume=exact``, else ``nothing``."""
        return "exact" if self.get(unit, "assume") == "exact" else "nothing"


class _Config:
    """Ordered configuration with benchfmt's delete-by-swap semantics."""

    def __init__(self) -> None:
        self.entries: List[ConfigEntry] = []

    def set(self, key: str, value: str, file: bool) -> None:
        for entry in self.entries:
            if entry.key == key:
                entry.value = value
                entry.file = file
                return
        self.entries.append(ConfigEntry(key, value, file))

    def delete(self, key: str) -> None:
        for i, entry in enumerate(self.entries):
            if entry.key == key:
                self.entries[i] = self.entries[-1]
                self.entries.pop()
                return

    def snapshot(self) -> List[ConfigEntry]:
        return [ConfigEntry(e.key, e.value, e.file) for e in self.entries]


def _split_gomaxprocs(name: str) -> Tuple[str, str]:
    for i in range(len(name) - 1, -1, -1):
        if name[i] == "-" and i < len(name) - 1:
            return name[:i], name[i:]
        if not "0" <= name[i] <= "9":
            break
    return name, ""


def name_base(name: str) -> str:
    """The base name: text before the first ``/``, or the name minus ``-N``."""
    slash = name.find("/")
    if slash >= 0:
        return name[:slash]
    return _split_gomaxprocs(name)[0]


def name_parts(name: str) -> Tuple[str, List[str]]:
    """Split a full name into its base and its ``/...`` and ``-N`` parts."""
    prefix, gomaxprocs = _split_gomaxprocs(name)
    pieces: List[str] = []
    prev = 0
    for i, ch in enumerate(prefix):
        if ch == "/":
            pieces.append(prefix[prev:i])
            prev = i
    pieces.append(prefix[prev:])
    if gomaxprocs:
        pieces.append(gomaxprocs)
    return pieces[0], pieces[1:]


class GoNumberError(ValueError):
    """Number syntax or range error, with Go's message text."""


_SYNTAX = "invalid syntax"
_RANGE = "value out of range"
_DEC_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_HEX_FLOAT = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+))[pP]([+-]?[0-9]+)\Z")
_SPECIAL_FLOAT = re.compile(r"([+-]?)(?:inf|infinity)\Z|nan\Z", re.IGNORECASE)


def _underscores_ok(s: str) -> bool:
    saw = "^"
    i = 0
    if s[:1] in ("-", "+"):
        s = s[1:]
    hexa = False
    if len(s) >= 2 and s[0] == "0" and s[1].lower() in "box":
        i = 2
        saw = "0"
        hexa = s[1].lower() == "x"
    while i < len(s):
        c = s[i]
        if "0" <= c <= "9" or (hexa and "a" <= c.lower() <= "f"):
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
        i += 1
    return saw != "_"


def parse_go_float(s: str) -> float:
    """Parse a float with Go's ``strconv.ParseFloat`` syntax and errors."""
    if s.isdigit() and s.isascii():
        return float(int(s))
    special = _SPECIAL_FLOAT.match(s)
    if special:
        if s.lower() == "nan":
            return math.nan
        return -math.inf if special.group(1) == "-" else math.inf
    if not s.isascii() or not _underscores_ok(s):
        raise GoNumberError(_SYNTAX)
    plain = s.replace("_", "")
    hex_match = _HEX_FLOAT.match(plain)
    if hex_match:
        sign, mantissa, exponent = hex_match.groups()
        try:
            value = float.fromhex("%s0x%sp%d" % (sign, mantissa, max(min(int(exponent), 100000), -100000)))
        except OverflowError:
            raise GoNumberError(_RANGE) from None
    elif _DEC_FLOAT.match(plain):
        value = float(plain)
    else:
        raise GoNumberError(_SYNTAX)
    if math.isinf(value):
        raise GoNumberError(_RANGE)
    return value


def parse_go_int(s: str) -> int:
    """Parse a base-10 int64 like Go's ``strconv.Atoi``."""
    digits = s[1:] if s[:1] in ("+", "-") else s
    if not digits:
        raise GoNumberError(_SYNTAX)
    value = 0
    limit = 2 ** 63 if s[:1] == "-" else 2 ** 63 - 1
    for ch in digits:
        if not ("0" <= ch <= "9"):
            raise GoNumberError(_SYNTAX)
        value = value * 10 + (ord(ch) - 48)
        if value > limit:
            raise GoNumberError(_RANGE)
    return -value if s[:1] == "-" else value


def _parse_key_value(line: str) -> Optional[Tuple[str, str]]:
    """``key: value`` (or ``key:``) per benchfmt; None if not a config line."""
    key = None
    rest = ""
    for i, ch in enumerate(line):
        if i == 0 and not is_go_lower(ch):
            return None
        if is_go_space(ch) or is_go_upper(ch):
            return None
        if i > 0 and ch == ":":
            key, rest = line[:i], line[i + 1:]
            break
    if not key:
        return None
    if rest == "":
        return key, ""
    stripped = rest.lstrip(" \t")
    if len(stripped) == len(rest):
        return None
    return key, stripped


def _parse_benchmark_line(line: str, config: _Config, file_name: str,
                          line_no: int) -> Union[Result, BenchSyntaxError, None]:
    body = line[len("Benchmark"):]
    name, rest = split_field(body)
    if rest == "" and len(name) == len(body):
        return None  # "go test -v" prints the bare name; skip it.

    def error(msg: str) -> BenchSyntaxError:
        return BenchSyntaxError(file_name, line_no, msg)

    field_text, rest = split_field(rest)
    if not field_text:
        return error("missing iteration count")
    try:
        iters = parse_go_int(field_text)
    except GoNumberError as err:
        return error("parsing iteration count: %s" % err)
    values: List[Value] = []
    while True:
        field_text, rest = split_field(rest)
        if not field_text:
            if values:
                break
            return error("missing measurements")
        try:
            number = parse_go_float(field_text)
        except GoNumberError as err:
            return error("parsing measurement: %s" % err)
        unit, rest = split_field(rest)
        if not unit:
            return error("missing units")
        values.append(make_value(number, unit))
    return Result(config.snapshot(), name, iters, values, file_name, line_no)


def make_value(number: float, unit: str) -> Value:
    """A :class:`Value` in tidied units, remembering the original unit."""
    tidy_value, tidy_unit = tidy(number, unit)
    if tidy_value == number and tidy_unit == unit:
        return Value(number, unit)
    return Value(tidy_value, tidy_unit, number, unit)


def _parse_unit_line(rest: str, units: UnitMetadataMap, file_name: str,
                     line_no: int) -> Iterator[BenchSyntaxError]:
    unit, rest = split_field(rest)
    if not unit:
        yield BenchSyntaxError(file_name, line_no, "missing unit")
        return
    while True:
        pair, rest = split_field(rest)
        if not pair:
            return
        eq = pair.find("=")
        if eq <= 0:
            yield BenchSyntaxError(file_name, line_no, "expected key=value")
            continue
        key, value = pair[:eq], pair[eq + 1:]
        have = units.set(unit, key, value)
        if have is not None:
            yield BenchSyntaxError(file_name, line_no,
                                   "metadata %s of unit %s already set to %s" % (key, unit, have))


def _lines(data: bytes, file_name: str) -> Iterator[Tuple[int, str]]:
    """Lines as bufio.Scanner yields them (CR stripped), numbered from 1."""
    start = 0
    line_no = 0
    while start < len(data):
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end
        if stop - start >= MAX_LINE_BYTES:
            raise FatalInputError("%s:%d: bufio.Scanner: token too long" % (file_name, line_no))
        raw = data[start:stop]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        line_no += 1
        yield line_no, raw.decode("utf-8", "surrogateescape")
        if end < 0:
            break
        start = end + 1


def read_benchmark_text(data: bytes, file_name: str, label: str,
                        units: UnitMetadataMap) -> Iterator[Union[Result, BenchSyntaxError]]:
    """Parse one file of Go benchmark output.

    ``label`` becomes the internal ``.file`` configuration key. Unit
    metadata is added to ``units``. Raises :class:`FatalInputError` for
    an over-long line (after yielding the records before it).
    """
    config = _Config()
    config.set(".file", label, file=False)
    for line_no, line in _lines(data, file_name):
        if line.startswith("Benchmark"):
            record = _parse_benchmark_line(line, config, file_name, line_no)
            if record is not None:
                yield record
            continue
        if line.startswith("U"):
            first, rest = split_field(line)
            if first == "Unit":
                yield from _parse_unit_line(rest, units, file_name, line_no)
                continue
        pair = _parse_key_value(line)
        if pair is not None:
            key, value = pair
            if value == "":
                config.delete(key)
            else:
                config.set(key, value, file=True)
