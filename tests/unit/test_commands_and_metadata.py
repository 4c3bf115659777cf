"""What pip installs besides the library: the console scripts (``triple-bench``,
``triple-benchstat``), their ``--version``, a one-line error naming the extra when a
dependency is missing, the package metadata, and the version in every results file."""
from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from _bench_fakes import FakeRunner, FakeServers
import triple_py
from triple_py import _cli, benchstat
from triple_py.bench.results.environment import environment
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix
from triple_py.bench.report.text import comparison
from triple_py.bench.report.files import write_results

VERSION = triple_py.__version__
BLOCK = "import sys; sys.modules.update({name: None for name in %r}); "


def command(entry: str, args: list, blocked: tuple = ()) -> subprocess.CompletedProcess:
    """Runs ``entry`` (a triple_py._cli function, as the console script's wrapper does)
    in a child interpreter with the modules in ``blocked`` unimportable."""
    code = ((BLOCK % (blocked,) if blocked else "import sys; ")
            + f"from triple_py._cli import {entry}; sys.exit({entry}({args!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_version_has_one_source():
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+|rc\d+)?", VERSION)
    assert metadata.version("triple_py") == VERSION


@pytest.mark.parametrize("entry, prog", [("bench_main", "triple-bench"),
                                         ("benchstat_main", "triple-benchstat")])
def test_version_flag(entry, prog):
    proc = command(entry, ["--version"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{prog} {VERSION}\n", "")
    # without the extra too: --version needs nothing
    proc = command(entry, ["--version"], blocked=("google", "google.protobuf", "numpy"))
    assert (proc.returncode, proc.stdout) == (0, f"{prog} {VERSION}\n")


@pytest.mark.parametrize("entry, args, blocked, line", [
    ("bench_main", ["run", "-z", "0.1"], ("google", "google.protobuf"),
     "triple-bench: the load tool needs protobuf: pip install 'triple_py[bench]'"),
    ("bench_main", ["list"], ("google", "google.protobuf", "numpy"),
     "triple-bench: the load tool needs protobuf and numpy: pip install 'triple_py[bench]'"),
    ("bench_main", ["matrix", "seed-unary", "--show"], ("numpy",),
     "triple-bench: the load tool needs numpy: pip install 'triple_py[bench]'"),
    ("benchstat_main", ["old.txt", "new.txt"], ("numpy",),
     "triple-benchstat: benchstat's statistics need numpy: pip install 'triple_py[bench]'"),
])
def test_a_missing_dependency_is_one_line_naming_the_extra(entry, args, blocked, line):
    proc = command(entry, args, blocked)
    assert proc.returncode == 2
    assert proc.stderr == line + "\n" and proc.stdout == ""


def test_the_extra_names_what_the_commands_import():
    """BENCH_NEEDS is what the bench extra installs (and the bench extra exists)."""
    requires = metadata.requires("triple_py") or []
    in_bench = re.compile(r"extra\s*==\s*[\"']bench[\"']")
    bench = sorted(r.split(";")[0].strip() for r in requires if in_bench.search(r))
    assert bench == sorted(d for _, d in _cli.BENCH_NEEDS)
    assert {d for _, d in _cli.BENCHSTAT_NEEDS} <= set(bench)
    extras = set(metadata.metadata("triple_py").get_all("Provides-Extra") or [])
    assert {"bench", "analysis", "notebook", "distributed", "zookeeper", "test"} <= extras
    assert not [r for r in requires if "extra ==" not in r], "the library needs no package"


def test_console_scripts_and_no_pytest11_entry_point():
    eps = metadata.distribution("triple_py").entry_points
    scripts = {ep.name: ep.value for ep in eps if ep.group == "console_scripts"}
    assert scripts == {"triple-bench": "triple_py._cli:bench_main",
                       "triple-benchstat": "triple_py._cli:benchstat_main"}
    assert not [ep for ep in eps if ep.group == "pytest11"], "the pytest plugin is opt-in"


def test_classifiers_and_urls():
    meta = metadata.metadata("triple_py")
    classifiers = set(meta.get_all("Classifier"))
    for expected in ("Typing :: Typed", "Operating System :: POSIX :: Linux",
                     "Programming Language :: Python :: 3.11",
                     "Programming Language :: Python :: 3.14",
                     "License :: OSI Approved :: Apache Software License"):
        assert expected in classifiers
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert set(urls) == {"Homepage", "Source", "Issues", "Documentation"}


MATRIX = """
name = "v"
benchmark = "Unary"
baseline = "stream-path"
rounds = 2
duration = 0.1
warmup = 0
arms = ["stream-path", "fastpath"]
[scenarios]
payload = [128]
concurrency = [4]
"""


def test_every_results_file_records_the_version(tmp_path):
    run = run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(), runner=FakeRunner(),
                     check=False, capture_environment=False)
    paths = write_results(run, tmp_path, comparison(run))
    assert json.loads(paths["json"].read_text())["triple_py"] == VERSION
    rows = list(csv.DictReader(open(paths["csv"])))
    assert rows and {r["triple_py"] for r in rows} == {VERSION}
    assert paths["summary"].read_text().startswith(f"triple_py {VERSION}\n")
    texts = [paths["gobench"].read_text()] + [
        p.read_text() for p in sorted(paths["benchstat"].glob("*.txt"))]
    for text in texts:
        assert f"\n# triple_py {VERSION}\n" in text
    # not a configuration key: the runs of two versions compare in one table
    other = texts[1].replace(f"# triple_py {VERSION}", "# triple_py 99.0.0")
    frame = benchstat.compare([("old", texts[1]), ("new", other)])
    assert len(set(frame.table)) == 1 and "99.0.0" not in " ".join(set(frame.table))


def test_environment_records_the_version():
    assert environment()["triple_py"] == VERSION
