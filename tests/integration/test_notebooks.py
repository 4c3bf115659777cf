"""The analysis notebooks, executed with nbclient on results of a short real harness run.

Two small matrices run against the embedded echo server (a seed-unary subset and a
seed-stream subset, 4 rounds of 0.15 s so that benchstat can find significant rows); each
notebook then runs with its parameters injected, and every cell must run and every figure
must be written as a non-empty PNG. The unary notebook runs on this interpreter (the
project's venv) and saves next to the results; the stream notebook runs on Debian's
/usr/bin/python3 (Jupyter's default kernel there), which must find the checkout by itself,
and saves into an output_dir.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

for _module in ("nbclient", "nbformat", "ipykernel", "matplotlib", "pandas", "scipy"):
    pytest.importorskip(_module)

from triple_py.bench.notebook import run_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SHORT = ["--rounds", "4", "-z", "0.15", "--warmup", "0.05"]
MATRICES = {
    "unary": ["seed-unary", "--arms", "stream-path,fastpath,grpcio-aio", "--payload",
              "128,4KiB", "-c", "4,16"],
    "stream": ["seed-stream", "--payload", "128", "-c", "4,16"],
}
FIGURES = {
    "unary": ["qps-vs-payload", "p99-vs-concurrency", "latency-cdf", "percentile-spectrum",
              "throughput-latency", "timeseries", "write-syscalls-per-call", "errors"],
    "stream": ["messages-per-s", "streams-per-s", "p99-vs-concurrency", "latency-cdf",
               "percentile-spectrum", "throughput-latency", "timeseries",
               "write-syscalls-per-message", "errors"],
}

pytestmark = pytest.mark.skipif(
    os.environ.get("TRIPLE_PY_ASAN") == "1",
    reason="pure-Python analysis; the harness it needs is covered by the plain run")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """{kind: results directory}: both matrices run at once (2 processes)."""
    base = tmp_path_factory.mktemp("bench")
    procs = {}
    for kind, args in MATRICES.items():
        out = base / kind
        log = open(base / f"{kind}.log", "w")
        procs[kind] = (out, log, subprocess.Popen(
            [sys.executable, "-m", "triple_py.bench", "matrix", *args, *SHORT, "--out",
             str(out)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
    dirs = {}
    for kind, (out, log, proc) in procs.items():
        try:
            code = proc.wait(timeout=150)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
        text = (base / f"{kind}.log").read_text()
        assert code == 0, f"{kind} matrix failed ({code}):\n{text[-3000:]}"
        assert (out / "results.json").is_file()
        dirs[kind] = out
    return dirs


def _check_executed(nb, name):
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert code_cells
    for i, cell in enumerate(code_cells):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{name} cell {i}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
        assert cell.get("execution_count"), f"{name} cell {i} did not run"


def _check_figures(directory: Path, kind: str):
    for name in FIGURES[kind]:
        png = directory / f"{kind}-{name}.png"
        assert png.is_file(), f"{png.name} not written"
        data = png.read_bytes()
        assert len(data) > 2000 and data[:8] == b"\x89PNG\r\n\x1a\n", png.name
    assert sorted(p.name for p in directory.glob(f"{kind}-*.png")) == sorted(
        f"{kind}-{n}.png" for n in FIGURES[kind])
    assert (directory / f"{kind}-benchstat.csv").stat().st_size > 0
    conclusions = (directory / f"{kind}-conclusions.md").read_text()
    assert "comparisons with" in conclusions


def test_unary_notebook(results, tmp_path):
    out = tmp_path / "unary-executed.ipynb"
    nb = run_notebook(NOTEBOOKS / "unary-analysis.ipynb", {"results": results["unary"]},
                      output=out, timeout=300)
    _check_executed(nb, "unary")
    assert out.is_file()
    _check_figures(results["unary"], "unary")  # default: next to the results
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and str(results["unary"]) in injected[0].source


def test_stream_notebook_on_the_system_kernel(results, tmp_path):
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    figures = tmp_path / "figures"
    nb = run_notebook(NOTEBOOKS / "stream-analysis.ipynb",
                      {"results": results["stream"] / "results.json",
                       "output_dir": figures, "baseline": "writer-off"},
                      timeout=300, python=python)
    _check_executed(nb, "stream")
    _check_figures(figures, "stream")
    assert not list(results["stream"].glob("stream-*.png"))  # output_dir was honoured


def test_committed_notebooks_are_clean_and_parametrized():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        doc = json.loads(path.read_text())
        tags = [c.get("metadata", {}).get("tags", []) for c in doc["cells"]]
        assert sum("parameters" in t for t in tags) == 1, path.name
        for cell in doc["cells"]:
            if cell["cell_type"] == "code":
                assert not cell.get("outputs") and cell.get("execution_count") is None, \
                    f"{path.name}: committed with outputs"
