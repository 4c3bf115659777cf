"""The Python-C boundary is keyword-based: no call into the core (``_triple`` functions,
core channels and calls) passes 8 or more arguments by position, where one slip of order
is a silent bug; the binding refuses it for ``Channel.call``."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from triple_py import _triple

ROOT = Path(__file__).resolve().parents[2]
# Methods and functions of _triple (the stub's names of callables).
CORE_CALLABLES = {"call", "generic", "run_load", "Channel", "EchoServer", "Histogram"}
SOURCES = ["triple_py", "tests", "benchmarks", "tools"]


def _python_files() -> list[Path]:
    files = [p for d in SOURCES for p in (ROOT / d).rglob("*.py")]
    return [p for p in files if "results" not in p.relative_to(ROOT).parts]


def _long_positional_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in CORE_CALLABLES and len(node.args) >= 8:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}()")
    return found


def test_no_call_into_the_core_passes_8_positional_arguments() -> None:
    found = [hit for p in _python_files() for hit in _long_positional_calls(p)]
    assert found == []


def test_channel_call_takes_its_switches_by_keyword_only() -> None:
    ch = _triple.Channel("127.0.0.1", "1")
    try:
        with pytest.raises(TypeError, match="at most 4 positional"):
            ch.call("/s/m", b"", None, None, False)
        with pytest.raises(TypeError, match="unexpected keyword argument 'flag'"):
            ch.call("/s/m", b"", flag=1)
        with pytest.raises(TypeError, match="multiple values for argument 'request'"):
            ch.call("/s/m", b"", request=b"")
        with pytest.raises(TypeError, match="missing required argument 'path'"):
            ch.call(request=b"")
        with pytest.raises(TypeError, match="'path' must be str"):
            ch.call(b"/s/m", b"")
    finally:
        ch.close()


def test_aio_uses_the_sync_channels_public_accessors() -> None:
    """triple_py.aio reaches the sync channel through its public accessors (core_channel,
    options, has_call_credentials), never through its private attributes."""
    import re
    reach_ins = []
    for path in sorted((ROOT / "triple_py" / "aio").glob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"_sync\._\w|(?<!self)\._core\b", line):
                reach_ins.append(f"{path.name}:{n}: {line.strip()}")
    assert reach_ins == []
