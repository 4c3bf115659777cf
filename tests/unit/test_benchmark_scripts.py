"""The scripts in benchmarks/ import installed packages only (triple_py, triple_py.bench,
triple_py_testing, third-party and the standard library), never one another or a file by
way of sys.path; and every matrix in benchmarks/matrices/ is one the harness reads."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))
MATRICES = sorted((BENCHMARKS / "matrices").glob("*.toml"))

pytestmark = pytest.mark.skipif(not SCRIPTS, reason="needs the checkout's benchmarks/")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_imports_no_sibling_and_touches_no_sys_path(script: Path) -> None:
    tree = ast.parse(script.read_text())
    siblings = {p.stem for p in SCRIPTS} | {p.name for p in BENCHMARKS.iterdir() if p.is_dir()}
    offences = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path" \
                and isinstance(node.value, ast.Name) and node.value.id == "sys":
            offences.append(f"line {node.lineno}: sys.path")
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = ["." * node.level + (node.module or "")]
        for module in modules:
            if module.startswith(".") or module.split(".")[0] in siblings:
                offences.append(f"line {node.lineno}: imports {module}")
    # The child programs the scripts run (strings) are checked too: they start in
    # another process, where a sys.path edit would be the same workaround.
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "sys.path" in node.value:
            offences.append(f"line {node.lineno}: a child program edits sys.path")
    assert not offences, offences


@pytest.mark.parametrize("matrix", MATRICES, ids=lambda p: p.name)
def test_matrix_reads(matrix: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "triple_py.bench", "matrix", str(matrix),
                          "--show"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
