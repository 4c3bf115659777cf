"""The built-in matrices are TOML files shipped as package data
(``triple_py/bench/spec/matrices/``): each loads by name, BUILTIN maps every name to its
text, and the wheel's package data and the sdist take every file."""
from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import pytest

from triple_py.bench.spec.matrix import BUILTIN, load_matrix, parse_matrix

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p.name for p in resources.files("triple_py.bench.spec").joinpath(
    "matrices").iterdir() if p.name.endswith(".toml"))
#: The names users and ``make bench`` know.
NAMES = {"headline", "seed-unary", "seed-unary-py", "seed-stream", "concurrency-sweep"}


def test_builtin_is_a_mapping_of_every_file():
    assert isinstance(BUILTIN, Mapping)
    assert set(BUILTIN) == NAMES == {f[:-len(".toml")] for f in FILES}
    assert len(BUILTIN) == len(FILES)
    assert "nope" not in BUILTIN and 1 not in BUILTIN
    with pytest.raises(KeyError):
        BUILTIN["nope"]
    assert dict(BUILTIN)["headline"].startswith("# make bench")


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_builtin_loads_by_name(name):
    matrix = load_matrix(name)
    assert matrix.name == name and matrix.source == f"builtin:{name}"
    assert parse_matrix(BUILTIN[name]).name == name
    text = resources.files("triple_py.bench.spec").joinpath("matrices", f"{name}.toml")
    assert BUILTIN[name] == text.read_text(encoding="utf-8")


@pytest.mark.checkout("pyproject.toml, MANIFEST.in")
def test_the_wheel_and_the_sdist_take_every_matrix_file():
    """setuptools' package data for triple_py.bench.spec covers each file (the wheel), and
    MANIFEST.in grafts triple_py/ (the sdist; tools/check_sdist.py checks the real one)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["triple_py.bench.spec"]
    for name in FILES:
        assert any(fnmatch.fnmatch(f"matrices/{name}", g) for g in globs), name
    assert "graft triple_py" in (ROOT / "MANIFEST.in").read_text(encoding="utf-8").split("\n")


@pytest.mark.checkout("setup.py, pyproject.toml")
def test_the_wheels_build_step_copies_every_matrix_file(tmp_path):
    """setuptools' build_py (what a wheel holds besides the extension) on a copy of the
    package copies each matrix file."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "triple_py", tree / "triple_py",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, tree / name)
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                           str(tmp_path / "lib")], cwd=tree, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    built = sorted(p.name for p in (tmp_path / "lib" / "triple_py" / "bench" / "spec" /
                                    "matrices").glob("*.toml"))
    assert built == FILES
