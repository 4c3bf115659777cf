"""Shared helpers for the benchstat tests (this module holds no tests).

``triple_py/__init__.py`` imports the C extension, which may not be
built when these pure-Python tests run. :func:`import_benchstat`
imports ``triple_py.benchstat`` normally and, only if the parent
package cannot be imported, registers a bare ``triple_py`` package
object so the pure-Python subpackage still loads.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "benchstat"
PYTHON = sys.executable  # the interpreter running the tests, with the triple_py they import

_SHIM = """
import importlib, sys, types, runpy
try:
    import triple_py
except ImportError:
    for name in [m for m in sys.modules if m == "triple_py" or m.startswith("triple_py.")]:
        del sys.modules[name]
    pkg = types.ModuleType("triple_py")
    pkg.__path__ = [%r]
    sys.modules["triple_py"] = pkg
sys.argv[0] = "benchstat"
runpy.run_module("triple_py.benchstat", run_name="__main__", alter_sys=True)
"""


def import_benchstat():
    """``triple_py.benchstat``, even when the C extension is not built yet."""
    try:
        return importlib.import_module("triple_py.benchstat")
    except ImportError:
        for name in [m for m in sys.modules if m == "triple_py" or m.startswith("triple_py.")]:
            del sys.modules[name]
        pkg = types.ModuleType("triple_py")
        pkg.__path__ = [str(REPO / "triple_py")]
        sys.modules["triple_py"] = pkg
        return importlib.import_module("triple_py.benchstat")


def run_cli(args, cwd=DATA, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """Run ``python -m triple_py.benchstat ARGS`` in a subprocess (bytes out)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), LC_ALL="C")
    code = _SHIM % str(REPO / "triple_py")
    return subprocess.run([PYTHON, "-c", code, *args], cwd=str(cwd), input=stdin,
                          capture_output=True, env=env, timeout=120)
