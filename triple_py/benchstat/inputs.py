"""Input files: ``[label=]path`` arguments, stdin, and format detection."""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Union

from .json_inputs import looks_like_json, read_json_results
from .parse import BenchSyntaxError, FatalInputError, Result, UnitMetadataMap, read_benchmark_text

__all__ = ["InputSpec", "parse_input_args", "read_inputs"]


@dataclass
class InputSpec:
    """One input: its ``.file`` label, the name used in messages, and its source.

    Exactly one of ``path`` (a file, or ``-`` for stdin) and ``data``
    (in-memory content) is used; ``data`` wins when both are set.
    """

    label: str
    path: str
    data: Optional[bytes] = None


def parse_input_args(args: Sequence[str]) -> List[InputSpec]:
    """Turn ``[label=]path`` arguments into inputs, numbering repeated paths ``p#0``."""
    specs: List[InputSpec] = []
    labeled: List[bool] = []
    counts: Dict[str, int] = {}
    for arg in args:
        if "=" in arg:
            label, path = arg.split("=", 1)
            specs.append(InputSpec(label, path))
            labeled.append(True)
        else:
            specs.append(InputSpec(arg, arg))
            labeled.append(False)
            counts[arg] = counts.get(arg, 0) + 1
    seen: Dict[str, int] = {}
    for spec, is_labeled in zip(specs, labeled):
        if is_labeled or counts[spec.path] == 1:
            continue
        spec.label = "%s#%d" % (spec.path, seen.get(spec.path, 0))
        seen[spec.path] = seen.get(spec.path, 0) + 1
    return specs


def _go_errno_text(err: OSError) -> str:
    return os.strerror(err.errno).lower() if err.errno else str(err)


def _load(spec: InputSpec) -> bytes:
    if spec.data is not None:
        return spec.data
    if spec.path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(spec.path, "rb") as handle:
            return handle.read()
    except IsADirectoryError as err:
        raise FatalInputError("%s:0: read %s: %s" % (spec.path, spec.path, _go_errno_text(err))) from None
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.EACCES, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG):
            raise FatalInputError("open %s: %s" % (spec.path, _go_errno_text(err))) from None
        raise FatalInputError("read %s: %s" % (spec.path, _go_errno_text(err))) from None


def read_inputs(specs: Sequence[InputSpec],
                units: UnitMetadataMap) -> Iterator[Union[Result, BenchSyntaxError]]:
    """Records from all inputs in order; raises :class:`FatalInputError` on I/O errors."""
    for spec in specs:
        data = _load(spec)
        if looks_like_json(data):
            yield from read_json_results(data, spec.path, spec.label)
        else:
            yield from read_benchmark_text(data, spec.path, spec.label, units)
