"""The C load generator's keywords: ``_triple.run_load``'s own table.

The rows are the binding's table of load keywords (``csrc/binding/load_options.c``,
exported as ``_triple.LOAD_OPTIONS``), which ``run_load`` itself walks to parse and
range-check its keywords: a new load knob is a field of ``tri_load_config`` and one row
there, and what validates, documents or builds flags and matrix axes for a load reads it
from here instead of keeping a copy of its range or name.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Union

from . import _triple

__all__ = ["LoadOption", "LOAD_OPTIONS", "load_option"]


class LoadOption(NamedTuple):
    """One row of ``_triple.LOAD_OPTIONS``.

    ``type`` is how the value is given: ``int``, ``float``, ``bool``, ``str`` (or None),
    ``choice`` (one of ``choices``), ``schedule`` (``(kind, start, step, end, step_s,
    max_s)`` or None), ``requests`` and ``endpoints`` (lists; ``min``/``max`` then count
    entries) or ``callable``. ``min``/``max`` bound the numbers (None: unbounded or not
    a number); ``default`` is the load generator's own (``tri_load_config_init``);
    ``required`` keywords must always be given.
    """

    name: str
    type: str
    min: Optional[Union[int, float]]
    max: Optional[Union[int, float]]
    default: Any
    choices: tuple[str, ...]
    required: bool
    unit: str
    doc: str


LOAD_OPTIONS: tuple[LoadOption, ...] = tuple(LoadOption(*row) for row in _triple.LOAD_OPTIONS)
_BY_NAME = {o.name: o for o in LOAD_OPTIONS}


def load_option(name: str) -> LoadOption:
    """The row of the load keyword ``name``; KeyError when run_load has no such keyword
    of its own (it may still be a channel option: ``_triple.CHANNEL_OPTIONS``)."""
    return _BY_NAME[name]
