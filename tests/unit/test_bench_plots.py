"""The figures: the percentile spectrum's tick labels do not overlap even with a tail out
to 99.9999 %, and plots.standard() draws the standard set from a results directory, a
Results, a MatrixRun or a single BenchResult."""
from __future__ import annotations

import itertools

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from _bench_fakes import FakeRunner, FakeServers, two_arm_matrix  # noqa: E402
from triple_py.bench import load_results, plots  # noqa: E402
from triple_py.bench.running.rounds import run_matrix  # noqa: E402
from triple_py.bench.spec.matrix import parse_matrix  # noqa: E402
from triple_py.bench.report.files import write_results  # noqa: E402


class LongTail(FakeRunner):
    """A million calls per run, ten of them at 1 s: the spectrum reaches 1 / (1/N) = 1e6."""

    def __call__(self, spec):
        r = super().__call__(spec)
        r.histogram_corrected = [(40_000, 990_000), (100_000, 9_990), (1_000_000_000, 10)]
        r.series = {"calls": [int(r.qps)], "errors": [0], "p99_ns": [1e5]}
        return r


@pytest.fixture(scope="module")
def run():
    return run_matrix(parse_matrix(two_arm_matrix(2)), server_factory=FakeServers(),
                      runner=LongTail(), check=False, capture_environment=False)


@pytest.fixture(scope="module")
def res_dir(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("plots") / "res"
    write_results(run, out)
    return out


def _overlapping(ax):
    """Pairs of x tick labels whose drawn boxes overlap."""
    renderer = ax.figure.canvas.get_renderer()
    labels = [t for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2)
            if ba.overlaps(bb)]


def test_spectrum_tick_labels_do_not_overlap(res_dir):
    fig = plots.percentile_spectrum(load_results(res_dir))
    fig.canvas.draw()
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.get_xticklabels()]
    assert texts[-1] == "99.9999", texts  # the tail out to 1 / 1e6 is labelled
    assert {"99.99", "99.999"} <= {t.rstrip("%") for t in texts}
    assert _overlapping(ax) == []
    plt.close(fig)


def test_standard_figures_from_a_directory_a_run_and_a_result(res_dir, run):
    shown = []
    figures = plots.standard(res_dir, show=shown.append)
    assert list(figures) == ["qps", "p99-vs-concurrency", "latency-cdf",
                             "percentile-spectrum", "throughput-latency", "timeseries",
                             "errors"]
    assert shown == list(figures.values())
    assert list(plots.standard(run, show=None)) == list(figures)
    single = plots.standard(run.runs[0].result, show=None)
    assert list(single) == ["latency-cdf", "percentile-spectrum", "timeseries"]
    errors = figures.pop("errors")
    assert "no failed call" in " ".join(t.get_text() for t in errors.axes[0].texts)
    for name, fig in [*figures.items(), *single.items()]:
        assert any(ax.lines or ax.patches for ax in fig.axes), f"{name}: nothing drawn"
    plt.close("all")
