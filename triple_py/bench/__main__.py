"""``python -m triple_py.bench``: see :mod:`triple_py.bench.cli`."""
import sys

from .cli import main

if __name__ == "__main__":
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # µ, ∎, │ whatever the locale
            stream.reconfigure(encoding="utf-8", errors="replace")
    sys.exit(main())
