"""The notebook live display (triple_py.bench.live) driven by a matrix run with a fake
runner and a fake IPython ``display``: created once, then updated in place; it shows the
arm runs done, the arms' figures, and keeps the runs measured before an interrupt."""
from __future__ import annotations

from typing import Any, List

from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.running.live import LIVE_CSS_CLASS, NotebookProgress, auto_progress
from triple_py.bench.ipython import in_notebook
from triple_py.bench.spec.matrix import parse_matrix
from triple_py.bench.running.progress import Progress

from _bench_fakes import FakeRunner, FakeServers, two_arm_matrix


class FakeHandle:
    """What ``display(..., display_id=True)`` returns: records every update."""

    def __init__(self, first: Any) -> None:
        self.shown: List[Any] = [first]

    def update(self, obj: Any) -> None:
        self.shown.append(obj)


class FakeDisplay:
    """IPython.display.display's stand-in: one handle per call."""

    def __init__(self) -> None:
        self.handles: List[FakeHandle] = []

    def __call__(self, obj: Any, display_id: bool = False) -> FakeHandle:
        assert display_id is True
        self.handles.append(FakeHandle(obj))
        return self.handles[-1]


def test_a_matrix_run_draws_one_display_updated_in_place():
    display = FakeDisplay()
    progress = NotebookProgress(title="matrix t", display=display)
    run = run_matrix(parse_matrix(two_arm_matrix(3)), server_factory=FakeServers(),
                     runner=FakeRunner(), check=False, progress=progress,
                     capture_environment=False)
    assert len(run.runs) == 6
    assert len(display.handles) == 1, "one display, then updates of it"
    shown = display.handles[0].shown
    assert len(shown) >= 6 * 2, "a draw when each arm run starts and when it ends"
    first, last = shown[0]._repr_html_(), shown[-1]._repr_html_()
    assert LIVE_CSS_CLASS in first and 'data-state="running"' in first
    assert 'data-done="0" data-total="6"' in first
    assert 'data-state="ended"' in last and 'data-done="6" data-total="6"' in last
    assert "6/6 arm runs done" in last and "done" in repr(shown[-1])
    for arm in ("stream-path", "fastpath"):
        assert f"<td>{arm}</td><td>3</td>" in last  # three runs of each arm
    # fastpath ran last (round 3: as listed): 1500 + 10 x its call number (6)
    assert "1,560" in last and "0.1 ms" in last
    assert progress.updates == len(shown)


def test_an_interrupt_keeps_the_measured_runs_and_says_so():
    display = FakeDisplay()
    runner = FakeRunner()

    def interrupted_on_the_fourth(spec):
        if len(runner.calls) == 3:
            raise KeyboardInterrupt
        return runner(spec)

    run = run_matrix(parse_matrix(two_arm_matrix(3)), server_factory=FakeServers(),
                     runner=interrupted_on_the_fourth, check=False,
                     progress=NotebookProgress(display=display), capture_environment=False)
    assert run.interrupted and len(run.runs) == 3
    last = display.handles[0].shown[-1]._repr_html_()
    assert "stopped after 3 of 6 arm runs" in last and 'data-state="ended"' in last


def test_a_failed_arm_run_is_shown_as_failed():
    display = FakeDisplay()
    run_matrix(parse_matrix(two_arm_matrix(1)), server_factory=FakeServers(),
               runner=FakeRunner(fail="fastpath"), check=False,
               progress=NotebookProgress(display=display), capture_environment=False)
    last = display.handles[0].shown[-1]._repr_html_()
    assert "failed runs 1" in last and "boom" in last


def test_outside_a_notebook_the_terminal_line_is_used():
    assert not in_notebook()
    progress = auto_progress(4)
    assert type(progress) is Progress and progress.total == 4


def test_run_shows_its_progress_and_figures_in_the_display():
    from triple_py.bench import run

    display = FakeDisplay()
    result = run(mode="fastpath", concurrency=2, duration=0.2, warmup=0.0,
                 progress=NotebookProgress(title="run", display=display))
    shown = display.handles[0].shown
    first, last = shown[0]._repr_html_(), shown[-1]._repr_html_()
    assert 'data-done="0" data-total="1"' in first and "running: fastpath 128 B x 2" in first
    assert 'data-done="1" data-total="1"' in last and 'data-state="ended"' in last
    assert f"{result.qps:,.0f}" in last and f"<td>{result.errors}</td>" in last
