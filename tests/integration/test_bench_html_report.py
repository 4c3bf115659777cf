"""run -O html: one self-contained file that headless Chromium renders with no console
error, and whose screenshot shows the charts."""
from __future__ import annotations

import os
import re

import pytest

from _browser import chromium, require_browser
from triple_py.bench.cli import main

# Under tools/test_asan.sh the ASan runtime is preloaded into every child process, and
# chromedriver (not our code) exits at once with it; the report is written by Python,
# which the plain run covers.
BROWSER = pytest.mark.skipif(os.environ.get("TRIPLE_PY_ASAN") == "1",
                             reason="chromedriver does not start with the ASan runtime "
                                    "preloaded (tools/test_asan.sh)")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "run.html"
    assert main(["run", "-z", "1s", "--warmup", "0.2s", "-c", "8", "--rps", "2000",
                 "-O", "html", "-o", str(out)]) == 0
    return out


def test_the_file_is_self_contained(report):
    text = report.read_text()
    for part in ("Summary", "Latency histogram", "Percentile spectrum", "Per second",
                 "Status codes", "Options", "Environment"):
        assert part in text
    assert not re.search(r'(src|href)="(https?:)?//', text)  # nothing fetched
    assert "<script" not in text
    assert text.count('class="bar"') >= 3 and text.count('class="line"') >= 1
    assert re.search(r"<th>OK</th><td>\d+</td>", text)


@BROWSER
def test_chromium_renders_the_charts(report, tmp_path):
    require_browser()
    from PIL import Image

    with chromium(console_log=True) as driver:
        driver.get(report.as_uri())
        charts = driver.execute_script(
            "return Array.from(document.querySelectorAll('svg.chart'))"
            ".map(s => [s.getBoundingClientRect().width, s.querySelectorAll('rect,polyline').length])")
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        shot = tmp_path / "report.png"
        driver.save_screenshot(str(shot))
    assert errors == []
    assert len(charts) == 3 and all(w > 300 and n > 0 for w, n in charts)
    image = Image.open(shot).convert("RGB")
    colors = image.getcolors(maxcolors=1 << 20)
    blue = sum(n for n, c in colors if c == (0x1F, 0x77, 0xB4))
    orange = sum(n for n, c in colors if abs(c[0] - 0xFF) < 8 and abs(c[1] - 0x7F) < 8 and c[2] < 40)
    assert blue > 2000 and orange > 100  # the bars and the lines are on screen


@BROWSER
def test_matrix_report_renders(tmp_path):
    """A matrix run writes report.html: a section per scenario and arm, charts included."""
    (tmp_path / "m.toml").write_text('''
name = "tiny"
rounds = 3
duration = "0.3s"
warmup = "0.1s"
arms = ["fastpath", "stream-path"]
[scenarios]
payload = [128]
concurrency = [4]
''')
    out = tmp_path / "out"
    assert main(["matrix", str(tmp_path / "m.toml"), "--out", str(out)]) == 0
    text = (out / "report.html").read_text()
    assert text.count('<section class="arm-run">') == 2
    assert "128B/c4 / fastpath (round" in text and "the median QPS" in text
    assert "<script" not in text and text.count('class="chart"') == 6
    require_browser()
    with chromium(console_log=True) as driver:
        driver.get((out / "report.html").as_uri())
        charts = driver.execute_script(
            "return Array.from(document.querySelectorAll('svg.chart'))"
            ".map(s => s.getBoundingClientRect().width)")
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert errors == [] and len(charts) == 6 and min(charts) > 300
