"""Moved: the code of ``triple_py.bench.runner`` now lives in
:mod:`triple_py.bench.running.runner`.

This module keeps the old import path for one release: it re-exports the public names."""
from .running.runner import (run, spec_of, spec_target, preflight, check_result,
                             target_or_embedded)

__all__ = ["run", "spec_of", "spec_target", "preflight", "check_result",
           "target_or_embedded"]
