"""The live progress line on stderr: what runs, how far along, the last figures.

Shown only when stderr is a terminal and the ``CI`` environment variable is unset (or
empty); otherwise every method is a no-op, so logs and pipes stay clean.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import IO, Optional

from ..record.result import BenchResult

__all__ = ["Progress", "progress_enabled"]


def progress_enabled(stream: Optional[IO[str]] = None) -> bool:
    """True when ``stream`` (stderr) is a terminal and CI is not set."""
    stream = stream or sys.stderr
    if os.environ.get("CI"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _ms(ns: Optional[float]) -> str:
    return "-" if ns is None else f"{ns / 1e6:.2f} ms"


class Progress:
    """One self-rewriting line: ``[3/40] 128B/c50 round 1/3 fastpath 1.2/3.5 s | last: ...``.

    ``start(label, seconds)`` begins an item (refreshed four times a second while it runs),
    ``finish(result)`` records its figures for the ``last:`` part, ``close()`` clears it.
    Subclasses draw elsewhere (:class:`~.live.NotebookProgress`: a display in Jupyter).
    """

    #: Seconds between redraws while an item runs.
    refresh = 0.25

    def __init__(self, total: int = 0, stream: Optional[IO[str]] = None,
                 enabled: Optional[bool] = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = progress_enabled(self.stream) if enabled is None else enabled
        self.total = total
        self.done = 0
        self._label = ""
        self._seconds = 0.0
        self._started = 0.0
        self._last = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._width = 0

    def start(self, label: str, seconds: float) -> None:
        """A new item expected to take about ``seconds``."""
        if not self.enabled:
            return
        with self._lock:
            self._label, self._seconds, self._started = label, seconds, time.monotonic()
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="bench-progress",
                                            daemon=True)
            self._thread.start()
        self._draw()

    def finish(self, result: Optional[BenchResult], arm: str = "",
               failed: Optional[str] = None) -> None:
        """The item ended; its QPS, p99 and errors show as ``last:``."""
        self.done += 1
        if not self.enabled:
            return
        with self._lock:
            if result is not None:
                self._last = (f"{arm or result.arm}: {result.qps:,.0f} qps, p99 "
                              f"{_ms(result.p99)}, {result.errors} errors")
            else:
                self._last = f"{arm}: failed ({(failed or '')[:40]})"
        self._draw()

    def close(self) -> None:
        """Stops refreshing and erases the line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
            self._thread = None
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def _loop(self) -> None:
        while not self._stop.wait(self.refresh):
            self._draw()

    def _draw(self) -> None:
        with self._lock:
            elapsed = time.monotonic() - self._started
            count = f"[{min(self.done + 1, self.total)}/{self.total}] " if self.total else ""
            line = (f"{count}{self._label} {elapsed:4.1f}/{self._seconds:.1f} s"
                    + (f" | last {self._last}" if self._last else ""))
            try:
                columns = os.get_terminal_size(self.stream.fileno()).columns
            except (OSError, AttributeError, ValueError):
                columns = 0
            if columns < 40:  # unknown (a pty without a size) or tiny
                columns = 120
            line = line[:columns - 1]
            pad = max(0, self._width - len(line))
            self._width = len(line)
            try:
                self.stream.write("\r" + line + " " * pad)
                self.stream.flush()
            except (OSError, ValueError):
                self.enabled = False
