"""Moved: the code of ``triple_py.bench.notebook_server`` now lives in
:mod:`triple_py.bench.jupyter.notebook_server`.

This module keeps the old import path for one release: it re-exports the public names, and
``python -m triple_py.bench.notebook_server`` still runs it."""
from .jupyter.notebook_server import (NotebookServer, register_kernel, kernel_display_name,
                                      remove_stale_scratch, main)

__all__ = ["NotebookServer", "register_kernel", "kernel_display_name",
           "remove_stale_scratch", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
