"""Moved: the code of ``triple_py.bench.notebook`` now lives in
:mod:`triple_py.bench.jupyter.notebook`.

This module keeps the old import path for one release: it re-exports the public names, and
``python -m triple_py.bench.notebook`` still runs it."""
from .jupyter.notebook import (main, run_notebook, inject_parameters, kernel_spec, KERNEL_NAME,
                               NotebookFailed)

__all__ = ["run_notebook", "inject_parameters", "kernel_spec", "KERNEL_NAME",
           "NotebookFailed"]

if __name__ == "__main__":
    raise SystemExit(main())
