"""The pytest plugin (triple_py.pytest_plugin, entry point pytest11 "triple_py"): a user's
test file run by a separate pytest process that gets the fixtures from the installed
entry point, exactly as a user's project would."""
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


def _plugin_installed() -> bool:
    return any(ep.value == "triple_py.pytest_plugin"
               for ep in entry_points(group="pytest11"))


def _require_installed_plugin() -> None:
    """make test installs the package, and the ASan run (tools/test_asan.sh) puts the
    package's metadata next to its instrumented copy: either way the entry point exists."""
    if not _plugin_installed():
        pytest.fail("triple_py's pytest11 entry point is not installed "
                    "(pip install -e . missing?)")


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    package_root = str(Path(triple_py.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    extra = [] if _plugin_installed() else ["-p", "triple_py.pytest_plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra,
                           *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TESTS))
    (tmp_path / "pytest.ini").write_text(INI)
    return tmp_path


def test_entry_point_is_registered():
    _require_installed_plugin()
    ep = next(ep for ep in entry_points(group="pytest11")
              if ep.value == "triple_py.pytest_plugin")
    assert ep.name == "triple_py"
    assert ep.load().triple_server and ep.load().triple_load


def test_fixtures_in_a_user_project(project):
    proc = _pytest(project, "-q", "--junitxml", "report.xml", "test_user.py")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "6 passed" in proc.stdout
    cases = {c.get("name"): c for c in ET.parse(project / "report.xml").iter("testcase")}
    props = cases["test_load_against_the_session_server"].findall("properties/property")
    assert [p.get("name") for p in props] == ["triple_load"]
    assert '"mode": "fastpath"' in props[0].get("value")


def test_the_plugin_can_be_turned_off(project):
    _require_installed_plugin()
    proc = _pytest(project, "-q", "-p", "no:triple_py", "test_user.py::test_server_echoes")
    assert proc.returncode != 0
    assert "fixture 'triple_server' not found" in proc.stdout
