"""Request data for any method: ghz's ``-d/-D/-b/-B`` (JSON or protobuf bytes), templated
per call, rendered and encoded into a ring of requests before the run.

The ring (:func:`build_ring`): the C generator never enters Python per call, so every
request is rendered and encoded up front and call *i* of the run sends entry *i mod R*
(csrc/tri_ring.h). R is the number of data messages when nothing is templated (an array is
sent round-robin), else ``ring_size`` rounded up to a multiple of that number. Entry *i* is
rendered with ``.RequestNumber`` = *i* and ``.WorkerID`` = *i mod concurrency*; so
``.RequestNumber`` counts calls modulo R, and ``.UUID``/``random*``/timestamps repeat every R
calls (timestamps are the time the ring was rendered).
"""
from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from typing import List, Optional, Sequence, Tuple

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from ..errors import ConfigError
from ..limits import load_limit
from .messages import decode_varint
from .metadata import MetadataTemplate, render_metadata
from .schema import MethodSchema
from .template import CallContext, Template, parse_template

__all__ = ["RequestData", "RingEntry", "DEFAULT_RING_SIZE", "request_data", "build_ring"]

#: Entries rendered when data or metadata is templated (``--ring-size``).
DEFAULT_RING_SIZE = 1024
MAX_RING_BYTES = 256 << 20
#: Bytes of Python objects per ring entry besides its data (the tuple, the bytes object and
#: the metadata list), and per metadata pair (its tuple and two bytes objects).
ENTRY_OVERHEAD = 160
PAIR_OVERHEAD = 128

#: (body, [(key, value), ...]) as _triple.run_load takes it.
RingEntry = Tuple[bytes, List[Tuple[bytes, bytes]]]


@dataclasses.dataclass(frozen=True)
class RequestData:
    """The request messages: a JSON template (object, array or JSON lines) or binary ones."""

    json: Optional[Template] = None
    binary: Tuple[bytes, ...] = ()
    origin: str = "--data"

    @property
    def is_constant(self) -> bool:
        """True when every rendering is the same."""
        return self.json is None or self.json.is_constant


def _read(path: str, flag: str, mode: str = "r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{flag} {path}: not UTF-8 text") from None


def _split_delimited(data: bytes) -> Optional[List[bytes]]:
    """Varint-length-prefixed messages covering ``data`` exactly, or None."""
    out, pos = [], 0
    while pos < len(data):
        try:
            size, pos = decode_varint(data, pos)
        except ValueError:
            return None
        if pos + size > len(data):
            return None
        out.append(data[pos:pos + size])
        pos += size
    return out if len(out) > 1 else None


def request_data(data: Optional[str] = None, data_file: Optional[str] = None,
                 binary: bool = False, binary_file: Optional[str] = None) -> RequestData:
    """The data flags as a RequestData (at most one of them). ``binary`` reads protobuf bytes
    from stdin. Several binary messages are varint-length-delimited (protobuf's
    writeDelimitedTo); bytes that do not split exactly so are one message."""
    given = [f for f, v in (("-d", data), ("-D", data_file), ("-b", binary),
                            ("-B", binary_file)) if v]
    if len(given) > 1:
        raise ConfigError(f"{' and '.join(given)}: give the request data one way")
    if data is not None:
        return RequestData(json=parse_template(data), origin="--data")
    if data_file is not None:
        return RequestData(json=parse_template(_read(data_file, "--data-file")),
                           origin=f"--data-file {data_file}")
    if binary or binary_file:
        raw = sys.stdin.buffer.read() if binary else _read(binary_file, "--binary-file", "rb")
        return RequestData(binary=tuple(_split_delimited(raw) or [raw]),
                           origin="--binary" if binary else f"--binary-file {binary_file}")
    return RequestData(json=parse_template("{}"), origin="no data")


def _messages(text: str, origin: str) -> list:
    """The JSON objects of one rendering: an object, an array, or JSON lines."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) < 2:
            raise ConfigError(f"{origin}: not JSON: {exc}") from None
        try:
            value = [json.loads(ln) for ln in lines]
        except json.JSONDecodeError as exc2:
            raise ConfigError(f"{origin}: neither JSON nor JSON lines: {exc2}") from None
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(i, dict) for i in items):
        raise ConfigError(f"{origin}: expected a JSON object, an array of objects or "
                          f"one object per line")
    return items


def _encode(method: MethodSchema, item: dict, origin: str, index: int) -> bytes:
    message = method.request_class()()
    try:
        json_format.ParseDict(item, message)
    except json_format.ParseError as exc:
        raise ConfigError(f"{origin}: message {index} does not match "
                          f"{method.input.full_name}: {exc}") from None
    return message.SerializeToString()


def _check_binary(method: MethodSchema, data: RequestData) -> None:
    for i, raw in enumerate(data.binary):
        try:
            method.request_class()().ParseFromString(raw)
        except DecodeError:
            raise ConfigError(f"{data.origin}: message {i} is not a valid "
                              f"{method.input.full_name}") from None


def build_ring(method: MethodSchema, data: RequestData,
               metadata: Sequence[MetadataTemplate] = (), *, ring_size: int = DEFAULT_RING_SIZE,
               concurrency: int = 1, seed: Optional[int] = None) -> List[RingEntry]:
    """Every request of the run, rendered and encoded (see the module's docstring).

    Raises ConfigError naming the message and field when data does not match the method's
    request type, or when the ring would exceed 256 MiB.
    """
    if ring_size < 1:
        raise ConfigError(f"ring size must be >= 1, not {ring_size}")
    rng = random.Random(seed)
    now = time.time_ns()

    def context(i: int) -> CallContext:
        return CallContext(request_number=i, worker_id=i % max(concurrency, 1),
                           timestamp_ns=now, method_path=method.path,
                           input_name=method.input.full_name,
                           output_name=method.output.full_name,
                           client_streaming=method.client_streaming,
                           server_streaming=method.server_streaming, rng=rng)

    constant = data.is_constant and all(m.is_constant for m in metadata)
    if data.json is None:
        _check_binary(method, data)
        count = len(data.binary)
    else:
        count = len(_messages(data.json.render(context(0)), data.origin))
    size = count if constant else -(-max(ring_size, count) // count) * count
    most = int(load_limit("requests")[1])
    if size > most:
        raise ConfigError(f"the request ring would have {size} entries, more than the load "
                          f"generator's {most}: lower --ring-size")
    ring: List[RingEntry] = []
    total = 0
    fixed = None
    for i in range(size):
        ctx = context(i)
        if data.json is None:
            body = data.binary[i % count]
        else:
            if fixed is None or not data.json.is_constant:
                fixed = _messages(data.json.render(ctx), data.origin)
                if len(fixed) != count:
                    raise ConfigError(f"{data.origin}: renderings differ in length "
                                      f"({count} then {len(fixed)} messages)")
            body = _encode(method, fixed[i % count], data.origin, i % count)
        entry = (body, render_metadata(metadata, ctx))
        ring.append(entry)
        cost = _entry_bytes(entry)
        total += cost
        # The first entry prices the whole ring: refused before it is rendered.
        if total > MAX_RING_BYTES or (i == 0 and cost * size > MAX_RING_BYTES):
            raise ConfigError(f"the request ring would exceed {MAX_RING_BYTES >> 20} MiB "
                              f"({size} entries of about {cost} bytes in memory): lower "
                              f"--ring-size")
    return ring


def _entry_bytes(entry: RingEntry) -> int:
    """What one ring entry holds in memory: its bytes and the Python objects around them."""
    body, metadata = entry
    return (ENTRY_OVERHEAD + len(body)
            + sum(PAIR_OVERHEAD + len(k) + len(v) for k, v in metadata))
