"""The live progress of a run or a matrix in a Jupyter notebook, updated in place.

:func:`auto_progress` picks what fits where the code runs: in a Jupyter kernel a
:class:`NotebookProgress` (an HTML display under the cell, redrawn in place through an
IPython display handle: arm runs done of all, elapsed and remaining time, what runs now,
and per arm the last QPS, p99 and errors); elsewhere the terminal line of
:class:`~.progress.Progress` (shown only on a terminal). ``run()`` and ``run_matrix()``
use it when no progress is given.

A display handle needs no widget extension: it works in Debian's Jupyter Notebook,
JupyterLab and in nbclient, and the executed notebook keeps the final state.
"""
from __future__ import annotations

import dataclasses
import html
import sys
import threading
import time
from typing import Any, Dict, Optional

from ..ipython import in_notebook
from ..record.result import BenchResult
from .progress import Progress

__all__ = ["NotebookProgress", "auto_progress", "in_notebook", "LIVE_CSS_CLASS"]

#: The CSS class of the live display's outer element (tests look for it).
LIVE_CSS_CLASS = "triple-py-live"


def auto_progress(total: int = 0, title: str = "") -> Progress:
    """A :class:`NotebookProgress` in a Jupyter kernel, else the terminal
    :class:`~.progress.Progress` (a no-op unless stderr is a terminal)."""
    if in_notebook():
        return NotebookProgress(total, title=title)
    return Progress(total)


@dataclasses.dataclass
class _ArmFigures:
    """The last figures of one arm, as the display shows them."""

    qps: Optional[float] = None
    p99_ns: Optional[float] = None
    errors: int = 0
    runs: int = 0
    failed: Optional[str] = None


class _View:
    """What is handed to IPython's display: HTML and a plain-text fallback."""

    def __init__(self, html_text: str, text: str) -> None:
        self.html_text, self.text = html_text, text

    def _repr_html_(self) -> str:
        return self.html_text

    def __repr__(self) -> str:
        return self.text


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"


def _ms(ns: Optional[float]) -> str:
    return "–" if ns is None else f"{ns / 1e6:.3g} ms"


class NotebookProgress(Progress):
    """A live HTML display of a run's progress, redrawn in place twice a second.

    Same interface as :class:`~.progress.Progress` (``start``, ``finish``, ``close``,
    ``total``, ``done``). ``display`` replaces IPython's ``display`` (tests); the first
    draw creates the display, later draws update it.
    """

    refresh = 0.5

    def __init__(self, total: int = 0, title: str = "", display: Any = None) -> None:
        super().__init__(total, stream=sys.stderr, enabled=True)
        self.title = title
        self.updates = 0  # draws sent, the first included
        self._display = display
        self._handle: Any = None
        self._run_started: Optional[float] = None
        self._finished_at: Optional[float] = None
        self._arms: Dict[str, _ArmFigures] = {}
        self._errors = 0
        self._failed_runs = 0
        self._draw_lock = threading.Lock()  # the refresh thread draws too

    def start(self, label: str, seconds: float) -> None:
        """A new item (an arm run) expected to take about ``seconds``."""
        if self._run_started is None:
            self._run_started = time.monotonic()
        super().start(label, seconds)

    def finish(self, result: Optional[BenchResult], arm: str = "",
               failed: Optional[str] = None) -> None:
        """The item ended: its QPS, p99 and errors join the arm's row."""
        name = arm or (result.arm if result is not None else "?")
        with self._lock:
            figures = self._arms.setdefault(name, _ArmFigures())
            figures.runs += 1
            if result is not None:
                figures.qps, figures.p99_ns = result.qps, result.p99
                figures.errors += result.errors
                figures.failed = None
                self._errors += result.errors
            else:
                figures.failed = failed or "failed"
                self._failed_runs += 1
        super().finish(result, arm, failed)

    def close(self) -> None:
        """Stops refreshing; the display keeps its final state (done, or stopped early)."""
        super().close()
        if self._run_started is not None and self._finished_at is None:
            self._finished_at = time.monotonic()
            self._draw()

    # -- drawing ------------------------------------------------------------------------------
    def _remaining(self, now: float, current: float) -> Optional[float]:
        """Seconds left: the arm runs not done yet at the mean time an arm run took so far
        (its expected time before the first one ends), less the current one's progress."""
        if not self.total or self._run_started is None:
            return None
        left = max(0, self.total - self.done)
        if not left:
            return 0.0
        spent = now - self._run_started - current
        each = spent / self.done if self.done else self._seconds
        return max(0.0, left * each - current)

    def view(self) -> _View:
        """The display's current content."""
        with self._lock:
            now = self._finished_at or time.monotonic()
            running = self._finished_at is None
            current = (now - self._started) if running and self._started else 0.0
            elapsed = now - self._run_started if self._run_started is not None else 0.0
            remaining = self._remaining(now, current) if running else None
            done, total = self.done, self.total
            arms = {name: dataclasses.replace(f) for name, f in self._arms.items()}
            label, seconds = self._label, self._seconds
        if running:
            state = f"running: {label} {current:.1f}/{seconds:.1f} s"
        elif total and done < total:
            state = f"stopped after {done} of {total} arm runs (the measured ones are kept)"
        else:
            state = "done"
        head = (f"{done}/{total} arm runs done" if total else f"{done} done") + \
            f" · elapsed {_duration(elapsed)}" + \
            (f" · remaining ≈ {_duration(remaining)}" if remaining is not None else "")
        head += f" · errors {self._errors}" + (
            f" · failed runs {self._failed_runs}" if self._failed_runs else "")
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{f.runs}</td>"
            f"<td>{'–' if f.qps is None else f'{f.qps:,.0f}'}</td><td>{_ms(f.p99_ns)}</td>"
            f"<td>{f.errors}</td><td>{html.escape((f.failed or '')[:80])}</td></tr>"
            for name, f in arms.items())
        bar = f'<progress value="{done}" max="{max(total, 1)}" style="width:20em"></progress>'
        title = f"<b>{html.escape(self.title)}</b> " if self.title else ""
        html_text = (
            f'<div class="{LIVE_CSS_CLASS}" data-state="{"running" if running else "ended"}"'
            f' data-done="{done}" data-total="{total}">'
            f"<div>{title}{bar} {html.escape(head)}</div>"
            f"<div><i>{html.escape(state)}</i></div>"
            + (f'<table><thead><tr><th>arm</th><th>runs</th><th>last QPS</th>'
               f'<th>last p99</th><th>errors</th><th>failed</th></tr></thead>'
               f"<tbody>{rows}</tbody></table>" if rows else "")
            + "</div>")
        text = f"{self.title + ': ' if self.title else ''}{head}; {state}" + "".join(
            f"\n  {name}: {'-' if f.qps is None else f'{f.qps:,.0f}'} qps, p99 "
            f"{_ms(f.p99_ns)}, {f.errors} errors" for name, f in arms.items())
        return _View(html_text, text)

    def _draw(self) -> None:
        with self._draw_lock:
            self._send(self.view())

    def _send(self, view: _View) -> None:
        try:
            if self._handle is None:
                display = self._display
                if display is None:
                    from IPython.display import display
                self._handle = display(view, display_id=True)
            else:
                self._handle.update(view)
            self.updates += 1
        except Exception:  # no frontend to draw on: stop drawing, the run goes on
            self.enabled = False
