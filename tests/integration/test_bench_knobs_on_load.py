"""Knobs of the core's tables on a real load: the load keyword ``series_digits`` (a row of
``_triple.LOAD_OPTIONS`` the harness never names) and channel options of
``_triple.CHANNEL_OPTIONS``, from ``run()`` and from a matrix file to the embedded echo
server, and out into the CSV and results.json. Every run is short and bounded."""
from __future__ import annotations

import csv
import io

import pytest

from triple_py.bench import ConfigError, run
from triple_py.bench.report.tidy_csv import csv_text
from triple_py.bench.results.document import results_doc
from triple_py.bench.running.progress import Progress
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix

QUIET = Progress(enabled=False)


def test_run_takes_a_load_keyword_and_channel_options_by_their_rows():
    r = run(duration=0.3, warmup=0.1, concurrency=2, series_digits=1,
            channel={"stream_window": 1 << 20, "max_frame_size": 32768}, progress=QUIET)
    assert r.calls > 0 and r.errors == 0
    assert r.extra["knobs"] == {"channel.stream_window": 1 << 20,
                                "channel.max_frame_size": 32768, "series_digits": 1}


@pytest.mark.parametrize("kwargs, message", [
    ({"series_digits": 0}, "series_digits must be 1..4, not 0"),
    ({"channel": {"max_frame_size": 1024}}, "channel.max_frame_size must be 16384..16777215"),
])
def test_out_of_range_is_refused_by_the_row_before_any_server(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        run(duration=0.3, progress=QUIET, **kwargs)


def test_a_matrix_file_gives_every_arm_of_our_client_its_knobs():
    matrix = parse_matrix("""
name = "knobs"
rounds = 1
duration = 0.3
warmup = 0.1
arms = ["fastpath", "triple-py-sync", "tuned"]
[scenarios]
payload = [64]
concurrency = [2]
channel.stream_window = [65535, "1MiB"]
[arm.tuned]
mode = "bidi"
series_digits = 2
channel.write_buffer_delay_us = 50
""", source="knobs.toml")
    out = run_matrix(matrix, check=False, capture_environment=False, progress=QUIET)
    assert all(r.result is not None and r.result.errors == 0 and r.result.calls > 0
               for r in out.runs), [r.failed for r in out.runs]
    rows = list(csv.DictReader(io.StringIO(csv_text(out))))
    assert {(r["arm"], r["channel.stream_window"], r["series_digits"]) for r in rows} == {
        (arm, window, "2" if arm == "tuned" else "")
        for arm in ("fastpath", "triple-py-sync", "tuned") for window in ("65535", "1048576")}
    tuned = [e for e in results_doc(out)["results"] if e["arm"] == "tuned"]
    # a channel option that is a field of its own goes to its field (and its column)
    assert {e["knobs"].get("channel.write_buffer_delay_us") for e in tuned} == {50}
