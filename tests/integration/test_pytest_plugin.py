"""The pytest plugin (triple_py.pytest_plugin): opt-in, as a user's project turns it on
(``-p triple_py.pytest_plugin`` or ``pytest_plugins = ["triple_py.pytest_plugin"]`` in a
conftest), in a separate pytest process running a user's test file; without either it is
not loaded, even with triple_py installed (no pytest11 entry point)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import triple_py

PLUGIN = "triple_py.pytest_plugin"

USER_TESTS = '''
import pytest
import triple_py
from triple_py.bench import BenchResult, ConfigError, RunFailed

SEEN = []


def test_server_echoes(triple_server):
    SEEN.append(triple_server.address)
    with triple_py.insecure_channel(triple_server.address) as ch:
        echo = ch.unary_unary("/benchmark.BenchmarkService/UnaryCall")
        assert echo(b"\\x0a\\x03abc", timeout=5) == b"\\x0a\\x03abc"


def test_server_is_one_per_session(triple_server):
    assert SEEN == [triple_server.address]


def test_load_against_the_session_server(triple_load, triple_server):
    r = triple_load(payload_size=256, concurrency=4, duration=0.3, warmup=0.05)
    assert isinstance(r, BenchResult)
    assert r.target == triple_server.address and r.mode == "fastpath"
    assert r.calls > 0 and r.errors == 0 and r.qps > 0 and r.p99 > 0
    assert triple_load.results == [r]


def test_load_against_a_given_target(triple_load, triple_server):
    r = triple_load(triple_server.address, mode="stream-path", count=200, duration=0,
                    warmup=0, concurrency=2)
    assert r.calls == 200 and r.errors == 0


def test_load_is_bounded(triple_load):
    with pytest.raises(ConfigError, match="needs a bound"):
        triple_load(duration=0)
    with pytest.raises(ConfigError, match="triple_load_max_seconds"):
        triple_load(duration=5)


def test_check_raises_when_every_call_fails(triple_load):
    with pytest.raises(RunFailed, match="UNIMPLEMENTED"):
        triple_load(method="/no.Such/Method", duration=0.1, warmup=0, concurrency=1)
'''

INI = """
[pytest]
triple_load_max_seconds = 2
"""


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    package_root = str(Path(triple_py.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env.pop("PYTEST_PLUGINS", None)
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TESTS))
    (tmp_path / "pytest.ini").write_text(INI)
    return tmp_path


def test_no_pytest11_entry_point():
    """Installing triple_py does not put its fixtures into every pytest run."""
    assert not [ep for ep in entry_points(group="pytest11") if ep.value.startswith("triple_py")]


def test_fixtures_in_a_user_project(project):
    proc = _pytest(project, "-p", PLUGIN, "-q", "--junitxml", "report.xml", "test_user.py")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "6 passed" in proc.stdout
    cases = {c.get("name"): c for c in ET.parse(project / "report.xml").iter("testcase")}
    props = cases["test_load_against_the_session_server"].findall("properties/property")
    assert [p.get("name") for p in props] == ["triple_load"]
    assert '"mode": "fastpath"' in props[0].get("value")


def test_fixtures_through_a_conftest(project):
    (project / "conftest.py").write_text(f"pytest_plugins = [{PLUGIN!r}]\n")
    proc = _pytest(project, "-q", "test_user.py::test_server_echoes",
                   "test_user.py::test_load_is_bounded")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout


def test_not_loaded_without_opting_in(project):
    (project / "test_alone.py").write_text(textwrap.dedent(f"""
        import sys

        def test_plugin_not_imported():
            assert {PLUGIN!r} not in sys.modules
    """))
    proc = _pytest(project, "-q", "test_alone.py", "test_user.py::test_server_echoes")
    assert proc.returncode != 0
    summary = proc.stdout.strip().splitlines()[-1]
    assert "1 passed" in summary and "1 error" in summary and "failed" not in summary, \
        proc.stdout[-4000:]
    assert "fixture 'triple_server' not found" in proc.stdout
