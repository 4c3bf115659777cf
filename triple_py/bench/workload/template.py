"""ghz's call templates: ``{{.RequestNumber}}``, ``{{randomInt 1 100}}``... in data and metadata.

A template is parsed once (:func:`parse_template`; ConfigError for one that does not parse)
and rendered per request with a :class:`CallContext`. Supported actions, as in ghz:

- fields: ``.RequestNumber``, ``.WorkerID``, ``.UUID``, ``.Timestamp`` (RFC 3339),
  ``.TimestampUnix``, ``.TimestampUnixMilli``, ``.TimestampUnixNano``,
  ``.FullyQualifiedName``, ``.MethodName``, ``.ServiceName``, ``.InputName``,
  ``.OutputName``, ``.IsClientStreaming``, ``.IsServerStreaming``;
- functions: ``randomString N``, ``randomInt MIN MAX`` (MIN <= n < MAX, ghz's range),
  ``newUUID``.
"""
from __future__ import annotations

import dataclasses
import datetime
import random
import re
import string
import uuid
from typing import Callable, List, Union

from ..errors import ConfigError

__all__ = ["CallContext", "Template", "parse_template"]

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_ALPHABET = string.ascii_letters + string.digits


@dataclasses.dataclass(frozen=True)
class CallContext:
    """What one rendered request knows about its call."""

    request_number: int
    worker_id: int
    timestamp_ns: int
    method_path: str = ""
    input_name: str = ""
    output_name: str = ""
    client_streaming: bool = False
    server_streaming: bool = False
    rng: random.Random = dataclasses.field(default_factory=random.Random, compare=False)

    def uuid(self) -> str:
        """A random (version 4) UUID from this context's generator."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))


def _service(ctx: CallContext) -> str:
    return ctx.method_path.split("/")[1] if ctx.method_path.count("/") == 2 else ""


_FIELDS: dict = {
    "RequestNumber": lambda c: str(c.request_number),
    "WorkerID": lambda c: str(c.worker_id),
    "UUID": CallContext.uuid,
    "Timestamp": lambda c: datetime.datetime.fromtimestamp(
        c.timestamp_ns / 1e9, datetime.timezone.utc).isoformat(),
    "TimestampUnix": lambda c: str(c.timestamp_ns // 1_000_000_000),
    "TimestampUnixMilli": lambda c: str(c.timestamp_ns // 1_000_000),
    "TimestampUnixNano": lambda c: str(c.timestamp_ns),
    "FullyQualifiedName": lambda c: c.method_path.strip("/").replace("/", "."),
    "MethodName": lambda c: c.method_path.rsplit("/", 1)[-1],
    "ServiceName": _service,
    "InputName": lambda c: c.input_name,
    "OutputName": lambda c: c.output_name,
    "IsClientStreaming": lambda c: str(c.client_streaming).lower(),
    "IsServerStreaming": lambda c: str(c.server_streaming).lower(),
}

_Part = Union[str, Callable[[CallContext], str]]


def _int_arg(text: str, action: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"template {{{{{action}}}}}: {text!r} is not an integer") from None


def _action(action: str) -> Callable[[CallContext], str]:
    words = action.split()
    if not words:
        raise ConfigError("template: empty action {{}}")
    if words[0].startswith("."):
        field = _FIELDS.get(words[0][1:])
        if field is None or len(words) != 1:
            raise ConfigError(f"template {{{{{action}}}}}: unknown field (expected one of "
                              f"{', '.join('.' + f for f in _FIELDS)})")
        return field
    name, args = words[0], words[1:]
    if name == "randomString" and len(args) == 1:
        n = _int_arg(args[0], action)
        if not 0 <= n <= 1_000_000:
            raise ConfigError(f"template {{{{{action}}}}}: length must be 0..1000000")
        return lambda c: "".join(c.rng.choices(_ALPHABET, k=n))
    if name == "randomInt" and len(args) == 2:
        low, high = _int_arg(args[0], action), _int_arg(args[1], action)
        if high <= low:
            raise ConfigError(f"template {{{{{action}}}}}: MAX must be above MIN")
        return lambda c: str(c.rng.randrange(low, high))
    if name == "newUUID" and not args:
        return CallContext.uuid
    raise ConfigError(f"template {{{{{action}}}}}: unknown function or wrong arguments "
                      f"(expected randomString N, randomInt MIN MAX or newUUID)")


@dataclasses.dataclass(frozen=True)
class Template:
    """A parsed template: literal text and actions."""

    parts: tuple

    @property
    def is_constant(self) -> bool:
        """True when it has no action: every rendering is the same text."""
        return all(isinstance(p, str) for p in self.parts)

    def render(self, ctx: CallContext) -> str:
        """The text for one call."""
        return "".join(p if isinstance(p, str) else p(ctx) for p in self.parts)


def parse_template(text: str) -> Template:
    """Parses ghz template syntax. Raises ConfigError for an unknown field or function, bad
    arguments, or an unclosed ``{{``."""
    parts: List[_Part] = []
    pos = 0
    for match in _ACTION.finditer(text):
        parts.append(text[pos:match.start()])
        parts.append(_action(match.group(1)))
        pos = match.end()
    rest = text[pos:]
    if "{{" in rest:
        raise ConfigError(f"template: unclosed '{{{{' in {rest[rest.index('{{'):][:40]!r}")
    parts.append(rest)
    return Template(tuple(p for p in parts if p != ""))
