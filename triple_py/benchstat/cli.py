"""Command line: ``python -m triple_py.benchstat [flags] [label=]old.txt [label=]new.txt ...``.

Flags follow Go's ``flag`` package (``-name value``, ``-name=value``,
``--name``; parsing stops at the first non-flag argument). Exit status
is as for Go's benchstat -- 2 for usage errors, 0 otherwise, even after
a fatal ``benchstat: ...`` error -- except for ``--fail-on-regression``:
1 when the gate trips, 2 when a fatal error prevented evaluating it.
"""

from __future__ import annotations

import sys
from typing import Dict, Optional, Sequence, TextIO

from .format import render_csv, render_text
from .gate import find_regressions
from .inputs import parse_input_args
from .parse import GoNumberError, parse_go_float
from .pipeline import BenchstatError, Options, build_tables

__all__ = ["main"]

_USAGE_HEAD = """Usage: benchstat [flags] inputs...

benchstat computes statistical summaries and A/B comparisons of Go
benchmarks. It shows benchmark medians in a table with a row for each
benchmark and a column for each input file. If there is more than one
input file, it also shows A/B comparisons between the files. If a
difference is likely to be noise, it shows "~".

For details, see https://pkg.go.dev/golang.org/x/perf/cmd/benchstat.
"""

# name -> (placeholder, help, default shown, kind)
_FLAGS: Dict[str, tuple] = {
    "alpha": ("α", "consider change significant if p < α", "0.05", float),
    "col": ("projection", "split results into columns by distinct values of projection", '".file"', str),
    "confidence": ("level", "confidence level for ranges", "0.95", float),
    "fail-on-regression": ("pct", "exit 1 if any significant change is worse than pct percent\n"
                           "(higher is worse, except for rates such as ops/s and B/s)", None, float),
    "filter": ("query", "use only benchmarks matching benchfilter query", '"*"', str),
    "format": ("format", "print results in format:\n  text - plain text\n"
               "  csv  - comma-separated values (warnings will be written to stderr)\n", '"text"', str),
    "ignore": ("keys", "ignore variations in keys", None, str),
    "row": ("projection", "split results into rows by distinct values of projection", '".fullname"', str),
    "table": ("projection", "split results into tables by distinct values of projection", '".config"', str),
}


def usage_text() -> str:
    """The usage message, in the layout of Go's ``flag.PrintDefaults``."""
    lines = [_USAGE_HEAD]
    for name in sorted(_FLAGS):
        placeholder, help_text, default, _ = _FLAGS[name]
        entry = "  -%s %s\n    \t%s" % (name, placeholder, help_text.replace("\n", "\n    \t"))
        if default is not None:
            entry += " (default %s)" % default
        lines.append(entry + "\n")
    return "".join(lines)


class _UsageError(Exception):
    pass


class _HelpRequested(Exception):
    pass


def _parse_flags(args: Sequence[str]) -> tuple:
    values: Dict[str, object] = {}
    rest = list(args)
    while rest:
        arg = rest[0]
        if len(arg) < 2 or arg[0] != "-":
            break
        dashes = 2 if arg[1] == "-" else 1
        if arg == "--":
            rest.pop(0)
            break
        name = arg[dashes:]
        if not name or name[0] in "-=":
            raise _UsageError("bad flag syntax: %s" % arg)
        rest.pop(0)
        value: Optional[str] = None
        if "=" in name:
            name, value = name.split("=", 1)
        if name not in _FLAGS:
            if name in ("help", "h"):
                raise _HelpRequested()
            raise _UsageError("flag provided but not defined: -%s" % name)
        if value is None:
            if not rest:
                raise _UsageError("flag needs an argument: -%s" % name)
            value = rest.pop(0)
        kind = _FLAGS[name][3]
        if kind is float:
            try:
                values[name] = parse_go_float(value)
            except GoNumberError as err:
                reason = "parse error" if "syntax" in str(err) else str(err)
                raise _UsageError("invalid value %s for flag -%s: %s" % (_go_quote(value), name, reason))
        else:
            values[name] = value
    return values, rest


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv: Optional[Sequence[str]] = None, stdout: Optional[TextIO] = None,
         stderr: Optional[TextIO] = None) -> int:
    """Run benchstat; returns the process exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        values, paths = _parse_flags(argv)
    except _HelpRequested:
        err.write(usage_text())
        return 0
    except _UsageError as problem:
        err.write("%s\n%s" % (problem, usage_text()))
        return 2
    if not paths:
        err.write(usage_text())
        return 2
    options = Options(**{k: v for k, v in values.items() if k != "fail-on-regression"})
    gate = values.get("fail-on-regression")

    def warn(message: str) -> None:
        err.write(message + "\n")

    try:
        tables = build_tables(parse_input_args(paths), options, warn)
    except BenchstatError as fatal:
        err.write("benchstat: %s\n" % fatal)
        return 2 if gate is not None else 0
    if options.format == "csv":
        out.write(render_csv(tables, err))
    else:
        out.write(render_text(tables))
    out.flush()
    if gate is not None:
        regressions = find_regressions(tables, float(gate))
        for regression in regressions:
            err.write("benchstat: regression: %s exceeds %s%%\n" % (regression.describe(), _pct(gate)))
        if regressions:
            return 1
    return 0


def _pct(value: object) -> str:
    number = float(value)  # type: ignore[arg-type]
    return str(int(number)) if number.is_integer() else str(number)

