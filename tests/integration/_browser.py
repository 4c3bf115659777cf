"""Headless Chromium (Debian's chromium + chromium-driver, driven by python3-selenium) on a
Jupyter Notebook 6 page: open a notebook, run all cells, wait, look at the page.

Every wait is bounded in time; the browser gets a fresh profile directory, and the flags
Chromium needs to run as root in a container without a GPU or network services.
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1600"]

# Notebook 6's page: every code cell has a number, none is queued or running ("*").
ALL_RAN_JS = """
const nb = window.Jupyter && Jupyter.notebook;
if (!nb) return false;
const code = nb.get_cells().filter(c => c.cell_type === "code");
return code.length > 0 && code.every(c => typeof c.input_prompt_number === "number");
"""
KERNEL_READY_JS = """
const nb = window.Jupyter && Jupyter.notebook;
return !!(nb && nb._fully_loaded && nb.kernel && nb.kernel.is_connected()
          && nb.kernel_busy === false);
"""
LIVE_STATE_JS = """
const el = document.querySelector(".triple-py-live");
return el ? [el.dataset.state, Number(el.dataset.done), Number(el.dataset.total),
             document.querySelectorAll(".triple-py-live").length] : null;
"""
PAGE_FACTS_JS = """
return {
  errors: Array.from(document.querySelectorAll(".output_error, .output_stderr pre"))
            .map(e => e.innerText).filter(t => /Error|Traceback/.test(t)),
  images: document.querySelectorAll(".output_png img").length,
  html_tables: document.querySelectorAll(".output_html table").length,
  verdicts: document.querySelectorAll(".tp-better, .tp-worse, .tp-same").length,
  live: document.querySelectorAll(".triple-py-live").length,
};
"""


def available() -> Optional[str]:
    """None when Chromium, its driver and Selenium are there; else what is missing."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} missing (Debian packages chromium, chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium missing (Debian package python3-selenium)"
    return None


def require_browser() -> None:
    """Fails the test when Chromium, its driver or Selenium is missing: tools/bootstrap.sh
    installs them, so their absence is a broken set-up, not a reason to skip."""
    missing = available()
    if missing:
        import pytest

        pytest.fail(f"{missing}: tools/bootstrap.sh installs it")


def require_jupyter() -> None:
    """Fails the test when Debian's jupyter-notebook is missing (bootstrap installs it)."""
    if not Path("/usr/bin/jupyter-notebook").exists():
        import pytest

        pytest.fail("/usr/bin/jupyter-notebook missing (Debian package jupyter-notebook): "
                    "tools/bootstrap.sh installs it")


@contextlib.contextmanager
def chromium(console_log: bool = False) -> Iterator[Any]:
    """A headless Chromium WebDriver with a fresh profile, quit and removed afterwards;
    ``console_log`` keeps the page's console for ``driver.get_log("browser")``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="triple-py-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_script_timeout(10)
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver: Any, script: str, timeout: float, what: str,
             every: Optional[Callable[[], None]] = None) -> Any:
    """Runs ``script`` until it returns something true (``every`` called between tries);
    TimeoutError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        if every is not None:
            every()
        time.sleep(0.2)
    raise TimeoutError(f"{what}: not within {timeout:g} s")


def run_all(driver: Any, url: str, timeout: float,
            while_running: Optional[Callable[[], None]] = None) -> Dict[str, Any]:
    """Opens the notebook at ``url``, waits for its kernel, runs all cells and waits for
    every code cell to finish; returns the page's facts (PAGE_FACTS_JS) plus
    ``kernel_ready_s``, the seconds from opening the page to an idle kernel."""
    opened = time.monotonic()
    driver.get(url)
    wait_for(driver, KERNEL_READY_JS, 120, "the notebook's kernel to be ready")
    ready = time.monotonic() - opened
    driver.execute_script("Jupyter.notebook.execute_all_cells();")
    wait_for(driver, ALL_RAN_JS, timeout, f"all cells of {url.split('?')[0]} to run",
             every=while_running)
    facts = driver.execute_script(PAGE_FACTS_JS)
    facts["kernel_ready_s"] = ready
    return facts


def screenshot(driver: Any, path: Path) -> Path:
    """The whole page (as tall as its content, up to 12,000 px; long outputs unscrolled)
    as a PNG."""
    driver.execute_script(
        "Jupyter.notebook.get_cells().forEach(c => c.output_area && "
        "c.output_area.unscroll_area && c.output_area.unscroll_area());")
    height = int(driver.execute_script(
        "return document.querySelector('#notebook') ? "
        "document.querySelector('#notebook').scrollHeight + 150 : document.body.scrollHeight"))
    driver.set_window_size(1280, max(800, min(height, 12000)))
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))
    return path


def live_states(driver: Any) -> List[Any]:
    """The live display's (state, done, total, count of displays) now (empty: none)."""
    state = driver.execute_script(LIVE_STATE_JS)
    return [tuple(state)] if state else []
