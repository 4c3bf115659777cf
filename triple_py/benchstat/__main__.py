"""``python -m triple_py.benchstat``: see :mod:`triple_py.benchstat.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    for stream in (sys.stdout, sys.stderr):
        # Byte-exact output (│, ±, µ, ∞) regardless of the locale.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="surrogateescape", newline="\n")
    sys.exit(main())
