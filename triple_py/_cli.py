"""The console scripts: ``triple-bench`` (the load tool and matrices,
:mod:`triple_py.bench.cli`) and ``triple-benchstat`` (:mod:`triple_py.benchstat.cli`);
``python -m triple_py.bench`` and ``python -m triple_py.benchstat`` run the same code.

Both answer ``--version`` with ``<command> <triple_py.__version__>``.  The client library
needs no third-party package, the tools do: when one they need is not installed they fail
with one line naming the extra that installs it (exit status 2), not a traceback.
"""
from __future__ import annotations

import importlib
import sys
from typing import List, Optional, Sequence, Tuple

from . import __version__

__all__ = ["BENCH_EXTRA", "BENCH_NEEDS", "BENCHSTAT_NEEDS", "missing", "bench_main",
           "benchstat_main"]

# The extra in pyproject.toml that installs what the tools import.
BENCH_EXTRA = "bench"
# (module imported, distribution pip installs) for each command.
BENCH_NEEDS: Tuple[Tuple[str, str], ...] = (("google.protobuf", "protobuf"), ("numpy", "numpy"))
BENCHSTAT_NEEDS: Tuple[Tuple[str, str], ...] = (("numpy", "numpy"),)


def missing(needs: Sequence[Tuple[str, str]]) -> List[str]:
    """The distributions in ``needs`` whose module cannot be imported."""
    gone = []
    for module, distribution in needs:
        try:
            importlib.import_module(module)
        except ImportError:
            gone.append(distribution)
    return gone


def _utf8(errors: str, newline: Optional[str] = None) -> None:
    """stdout and stderr in UTF-8 whatever the locale (µ, ±, │ in the tables)."""
    options = {"newline": newline} if newline is not None else {}
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors=errors, **options)


def _preamble(prog: str, argv: Sequence[str], needs: Sequence[Tuple[str, str]],
              what: str) -> Optional[int]:
    """``--version``, or the one-line error for a missing dependency: the exit status;
    None when the command can run."""
    if list(argv[:1]) in (["--version"], ["-version"]):
        print(f"{prog} {__version__}", flush=True)
        return 0
    gone = missing(needs)
    if gone:
        print(f"{prog}: {what} {' and '.join(gone)}: pip install 'triple_py[{BENCH_EXTRA}]'",
              file=sys.stderr, flush=True)
        return 2
    return None


def bench_main(argv: Optional[Sequence[str]] = None, prog: str = "triple-bench") -> int:
    """``triple-bench``: :func:`triple_py.bench.cli.main`; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    _utf8("replace")
    early = _preamble(prog, argv, BENCH_NEEDS, "the load tool needs")
    if early is not None:
        return early
    from .bench.cli import main

    return main(argv, prog=prog)


def benchstat_main(argv: Optional[Sequence[str]] = None,
                   prog: str = "triple-benchstat") -> int:
    """``triple-benchstat``: :func:`triple_py.benchstat.cli.main` (Go benchstat's flags and
    output, byte for byte); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    _utf8("surrogateescape", newline="\n")
    early = _preamble(prog, argv, BENCHSTAT_NEEDS, "benchstat's statistics need")
    if early is not None:
        return early
    from .benchstat.cli import main

    return main(argv)
