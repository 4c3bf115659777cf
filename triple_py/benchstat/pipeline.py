"""From options and inputs to comparison tables (shared by the CLI and the API)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .inputs import InputSpec, read_inputs
from .parse import BenchSyntaxError, FatalInputError, UnitMetadataMap
from .projection import Filter, ProjectionParser
from .query import QuerySyntaxError
from .tables import TableBuilder, Tables

__all__ = ["Options", "BenchstatError", "build_tables"]


class BenchstatError(Exception):
    """A fatal error; the CLI prints it as ``benchstat: <message>``."""


@dataclass
class Options:
    """benchstat's flags (same names and defaults)."""

    alpha: float = 0.05
    confidence: float = 0.95
    filter: str = "*"
    table: str = ".config"
    row: str = ".fullname"
    col: str = ".file"
    ignore: str = ""
    format: str = "text"


def build_tables(specs: Sequence[InputSpec], options: Options,
                 warn: Callable[[str], None]) -> Tables:
    """Read, filter and group all inputs, then compute the statistics.

    Non-fatal input problems are passed to ``warn`` as ``file:line: msg``.
    Raises :class:`BenchstatError` for bad flags and unreadable inputs.
    """
    try:
        flt = Filter(options.filter)
    except QuerySyntaxError as err:
        raise BenchstatError("parsing -filter: %s" % err) from None

    parser = ProjectionParser()
    first_error = None
    projections = {}
    for name, text, with_unit in (("-table", options.table, True), ("-row", options.row, False),
                                  ("-col", options.col, False), ("-ignore", options.ignore, False)):
        try:
            if with_unit:
                projections[name] = parser.parse_with_unit(text, flt)
            else:
                projections[name] = parser.parse(text, flt)
        except QuerySyntaxError as err:
            if first_error is None:
                first_error = "parsing %s: %s" % (name, err)
    residue = parser.residue()
    if first_error is not None:
        raise BenchstatError(first_error)
    if not 0 <= options.alpha <= 1:
        raise BenchstatError("-alpha must be in range [0, 1]")
    if not 0 <= options.confidence <= 1:
        raise BenchstatError("-confidence must be in range [0, 1]")
    if options.format not in ("text", "csv"):
        raise BenchstatError("-format must be text or csv")

    builder = TableBuilder(projections["-table"], projections["-row"], projections["-col"], residue)
    units = UnitMetadataMap()
    try:
        for record in read_inputs(specs, units):
            if isinstance(record, BenchSyntaxError):
                warn(str(record))
            elif flt.apply(record):
                builder.add(record)
    except FatalInputError as err:
        raise BenchstatError(str(err)) from None
    return builder.build(options.confidence, options.alpha, units)
