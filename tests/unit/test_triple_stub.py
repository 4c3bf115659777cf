"""triple_py/_triple.pyi declares the extension module as it is: every public name of
``_triple`` (and of each of its types) is in the stub, and every name in the stub
exists, so type checkers see the real boundary."""
from __future__ import annotations

import ast
import importlib.metadata
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from triple_py import _triple

STUB = Path(_triple.__file__).resolve().parent / "_triple.pyi"


def _public(names: object) -> set[str]:
    return {n for n in names if not n.startswith("_")}  # type: ignore[attr-defined]


def _stub() -> tuple[set[str], dict[str, set[str]]]:
    """(top-level public names, {class: its public members}) declared by the stub."""
    tree = ast.parse(STUB.read_text())
    names: set[str] = set()
    classes: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {m.name for m in node.body
                                  if isinstance(m, ast.FunctionDef)}
    return _public(names), {k: _public(v) for k, v in classes.items()}


def test_the_stub_declares_every_public_name_and_no_other() -> None:
    names, _ = _stub()
    module = _public(dir(_triple))
    assert module - names == set(), "in _triple but not in _triple.pyi"
    assert names - module == set(), "in _triple.pyi but not in _triple"


@pytest.mark.parametrize("cls", sorted(_stub()[1]))
def test_the_stub_declares_every_member_of_each_type(cls: str) -> None:
    declared = _stub()[1][cls]
    real_type = getattr(_triple, cls)
    inherited = {name for base in real_type.__mro__[1:] if base.__module__ == "builtins"
                 for name in dir(base)}  # a subclass of bytes declares what it adds
    real = _public(set(dir(real_type)) - inherited)
    assert real - declared == set(), f"{cls}: in _triple but not in _triple.pyi"
    assert declared - real == set(), f"{cls}: in _triple.pyi but not in _triple"


def test_the_stub_ships_with_the_package() -> None:
    package = STUB.parent
    assert (package / "py.typed").is_file()
    if os.environ.get("TRIPLE_PY_INSTALLED") == "1":  # the installed wheel's RECORD
        shipped = {str(f) for f in importlib.metadata.files("triple_py") or []}
        assert {"triple_py/_triple.pyi", "triple_py/py.typed"} <= shipped
        return
    # The repository's pyproject (the package may be a copy elsewhere, as under ASan).
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"_triple.pyi"' in pyproject and '"py.typed"' in pyproject


GOOD = '''
from triple_py import _triple

ch = _triple.Channel("127.0.0.1", "50051", max_send=5, wire="triple")
call = ch.call("/s/m", b"x", 1.0, None, wait=True, notify=_triple.EV_DONE)
code: int = call.code()
initial, trailing = call.metadata()
names = [row[1] for row in _triple.CHANNEL_OPTIONS]
p: int = _triple.Histogram(3).percentile(99)
'''
BAD = '''
from triple_py import _triple

ch = _triple.Channel("127.0.0.1", "50051")
call = ch.call("/s/m", b"x", 1.0, None, True)
text: str = call.code()
ch.call(path=b"/s/m")
'''


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    (tmp_path / "consumer.py").write_text(source)
    env = dict(os.environ)
    # An installed package is found by mypy itself (PEP 561: py.typed), and mypy refuses a
    # site-packages directory on MYPYPATH; a checkout or a copy is pointed to.
    if STUB.parents[1] not in {Path(p).resolve() for p in site.getsitepackages()}:
        env["MYPYPATH"] = str(STUB.parents[1])
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-incremental",
         "--python-version", "3.11", "consumer.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_mypy_checks_callers_against_the_stub(tmp_path: Path) -> None:
    """A type checker (Debian's mypy, tools/bootstrap.sh) reads the stub: right use of
    the core passes, and each misuse is reported on its line."""
    good = _mypy(tmp_path, GOOD)
    assert good.returncode == 0, good.stdout
    bad = _mypy(tmp_path, BAD)
    assert "consumer.py:5: error: Too many positional arguments" in bad.stdout
    assert "consumer.py:6: error: Incompatible types in assignment" in bad.stdout
    assert 'consumer.py:7: error: Argument "path"' in bad.stdout
