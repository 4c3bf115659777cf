"""A pytest plugin that turns ``triple.shared_io_thread`` off by default, to run the
existing suites with a thread per backend as well:

    PYTHONPATH=tests/integration .venv/bin/python -m pytest -p shared_io_off tests/...

A channel whose options name the key keeps its value.  Child processes the tests start do
not load the plugin (they run with the default, shared).
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from triple_py._options import ChannelOptions

KEY = "triple.shared_io_thread"
_from_pairs = ChannelOptions.from_pairs.__func__  # type: ignore[attr-defined]


def _off_unless_given(cls: type, options: Optional[Iterable[tuple[str, Any]]]) -> Any:
    pairs = list(options or ())
    if all(key != KEY for key, _ in pairs):
        pairs.insert(0, (KEY, False))
    return _from_pairs(cls, pairs)


ChannelOptions.from_pairs = classmethod(_off_unless_given)  # type: ignore[assignment]
