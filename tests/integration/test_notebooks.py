"""The analysis notebooks, executed with nbclient on results of a short real harness run.

Two small matrices run against the embedded echo server (a seed-unary subset and a
seed-stream subset, 4 rounds of 0.15 s so that benchstat can find significant rows); each
notebook then runs with its parameters injected, and every cell must run and every figure
must be written as a non-empty PNG. The unary notebook runs on this interpreter (the
project's venv) and saves next to the results; the stream notebook runs on Debian's
/usr/bin/python3 (Jupyter's default kernel there), which must find the checkout by itself,
and saves into an output_dir. The third, run-and-compare, runs a short matrix itself: its
live display must be updated in place (update_display_data messages) and end "done".

Then all three run in headless Chromium through a Jupyter Notebook server started by the
test (the launcher of `make notebook`): every cell runs, no error output, the figures are
on the page; screenshots go to build/test-artifacts/notebooks/ (TRIPLE_PY_TEST_ARTIFACTS).
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

from triple_py.bench.running.live import LIVE_CSS_CLASS  # noqa: E402
from triple_py.bench.jupyter.notebook import inject_parameters, run_notebook  # noqa: E402

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

#: run-and-compare's parameters for a short run (2 scenarios x 2 arms x 4 rounds of 0.2 s).
RUN_AND_COMPARE = {"payload": ["128", "4KiB"], "concurrency": [8], "rounds": 4,
                   "duration": 0.2, "warmup": 0.05}
#: Figures each notebook draws inline.
INLINE_FIGURES = {"unary-analysis.ipynb": len(FIGURES["unary"]),
                  "stream-analysis.ipynb": len(FIGURES["stream"]),
                  "run-and-compare.ipynb": 7}
INTERRUPTED = "run-and-compare-interrupted.ipynb"
ARTIFACTS = Path(os.environ.get("TRIPLE_PY_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts")
                 ) / "notebooks"

pytestmark = [pytest.mark.skipif(
    os.environ.get("TRIPLE_PY_ASAN") == "1",
    reason="pure-Python analysis; the harness it needs is covered by the plain run"),
    pytest.mark.checkout("notebooks/")]


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


def test_run_and_compare_notebook_shows_a_live_display(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    messages = []
    process = NotebookClient.process_message

    def recording(self, msg, cell, cell_index):
        messages.append((cell_index, msg["msg_type"]))
        return process(self, msg, cell, cell_index)

    monkeypatch.setattr(NotebookClient, "process_message", recording)
    out = tmp_path / "results"
    nb = run_notebook(NOTEBOOKS / "run-and-compare.ipynb",
                      dict(RUN_AND_COMPARE, output_dir=str(out)), timeout=300)
    _check_executed(nb, "run-and-compare")
    assert (out / "results.json").is_file()
    run_cell = next(i for i, c in enumerate(nb.cells) if "run_matrix(" in c.source)
    updates = [t for i, t in messages if i == run_cell and t == "update_display_data"]
    assert len(updates) >= 4, f"the live display was not updated in place: {updates}"
    lives = [o for o in nb.cells[run_cell].outputs
             if LIVE_CSS_CLASS in o.get("data", {}).get("text/html", "")]
    assert len(lives) == 1, "one display, updated in place, not one per update"
    final = lives[0]["data"]["text/html"]
    assert 'data-state="ended"' in final and "16/16 arm runs done" in final
    html = "".join(o.get("data", {}).get("text/html", "") for c in nb.cells
                   if c.cell_type == "code" for o in c.outputs)
    assert "tp-results" in html and "tp-benchstat" in html and "paired by round" in html
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if "image/png" in o.get("data", {})]
    assert len(images) == INLINE_FIGURES["run-and-compare.ipynb"]


@pytest.fixture(scope="module")
def served(results, tmp_path_factory):
    """A Jupyter Notebook server (the launcher of `make notebook`) on a folder holding the
    three notebooks with their parameters injected; stopped (nothing left) afterwards."""
    import nbformat

    from _browser import require_browser, require_jupyter
    from _helpers import closed_port
    from triple_py.bench.jupyter.notebook_server import NotebookServer

    require_browser()
    require_jupyter()
    folder = tmp_path_factory.mktemp("served")
    parameters = {
        "unary-analysis.ipynb": {"results": str(results["unary"]),
                                 "output_dir": str(folder / "unary-figures")},
        "stream-analysis.ipynb": {"results": str(results["stream"]), "baseline": "writer-off",
                                  "output_dir": str(folder / "stream-figures")},
        "run-and-compare.ipynb": dict(RUN_AND_COMPARE, output_dir=str(folder / "rac")),
    }
    for name, values in parameters.items():
        nb = nbformat.read(str(NOTEBOOKS / name), as_version=4)
        nbformat.write(inject_parameters(nb, values), str(folder / name))
    # long enough to be interrupted: 40 arm runs of 0.35 s
    nb = nbformat.read(str(NOTEBOOKS / "run-and-compare.ipynb"), as_version=4)
    nbformat.write(inject_parameters(nb, dict(RUN_AND_COMPARE, rounds=10, duration=0.3,
                                              output_dir=str(folder / "interrupted"))),
                   str(folder / INTERRUPTED))
    server = NotebookServer(folder, port=closed_port(), log=folder / "jupyter.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()
        assert server.leftover_kernels() == []


@pytest.mark.parametrize("name", sorted(INLINE_FIGURES))
def test_notebook_runs_in_headless_chromium(served, name):
    from _browser import chromium, live_states, run_all, screenshot

    stem = name.removesuffix(".ipynb")
    seen = []
    with chromium() as driver:

        def watch():
            seen.extend(live_states(driver))
            state = seen[-1] if seen else None
            shot = ARTIFACTS / f"{stem}-mid-run.png"
            if state and state[0] == "running" and 0 < state[1] < state[2] and \
                    not shot.exists():
                screenshot(driver, shot)

        if ARTIFACTS.joinpath(f"{stem}-mid-run.png").exists():
            ARTIFACTS.joinpath(f"{stem}-mid-run.png").unlink()
        facts = run_all(driver, f"{served.base}notebooks/{name}?token={served.token}",
                        timeout=300, while_running=watch)
        screenshot(driver, ARTIFACTS / f"{stem}.png")
        seen.extend(live_states(driver))
    (ARTIFACTS / f"{stem}-facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    assert facts["errors"] == [], facts["errors"][:1]
    assert facts["images"] == INLINE_FIGURES[name], facts
    assert facts["html_tables"] >= 1
    if name == "run-and-compare.ipynb":
        running = [s for s in seen if s[0] == "running"]
        assert len({s[1] for s in running}) >= 2, f"no in-place progress seen: {seen}"
        assert seen[-1] == ("ended", 16, 16, 1), seen[-1]
        assert facts["verdicts"] >= 4 and facts["live"] == 1


def test_interrupting_the_run_in_chromium_keeps_the_measured_rounds(served):
    """Kernel → Interrupt while the matrix runs: the run stops, the arm runs measured so far
    are kept, and the cells below work on them (no error anywhere)."""
    from _browser import chromium, live_states, run_all, screenshot

    interrupted = []
    with chromium() as driver:

        def interrupt_after_three():
            state = live_states(driver)
            if not interrupted and state and state[0][0] == "running" and state[0][1] >= 3:
                driver.execute_script("Jupyter.notebook.kernel.interrupt();")
                interrupted.append(state[0])

        facts = run_all(driver, f"{served.base}notebooks/{INTERRUPTED}?token={served.token}",
                        timeout=300, while_running=interrupt_after_three)
        screenshot(driver, ARTIFACTS / "run-and-compare-interrupted.png")
        final = live_states(driver)
        text = driver.execute_script("return document.body.innerText;")
    assert interrupted, "the run ended before it could be interrupted"
    assert facts["errors"] == [], facts["errors"][:1]
    state, done, total, displays = final[0]
    assert state == "ended" and 3 <= done < total == 40 and displays == 1
    assert f"stopped after {done} of 40 arm runs" in text
    assert f"interrupted: keeping {done} of 40 arm runs" in text
    kept = json.loads((served.directory / "interrupted" / "results.json").read_text())
    assert len(kept["results"]) == done
    assert facts["images"] == INLINE_FIGURES["run-and-compare.ipynb"]
