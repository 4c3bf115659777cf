"""tools/check_sdist.py: the sdist must hold every tracked source file, the generated
protobuf-c sources, and nothing checkout-only; a file left out is named."""
from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check_sdist.py"

# Checkout-only (not in tests/wheel/installed_tests.txt): the marker states the reason
# wherever the suite runs without a checkout.
pytestmark = pytest.mark.checkout("tools/check_sdist.py, setup.py, git")

_spec = importlib.util.spec_from_file_location("check_sdist", SCRIPT)
check_sdist = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("check_sdist", check_sdist)  # dataclasses look their module up
_spec.loader.exec_module(check_sdist)

TRACKED = ["setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE",
           "csrc/tri_buf.c", "csrc/tri_buf.h", "csrc/include/triple.h",
           "csrc/server/echo.c", "csrc/server/echo.h", "csrc/binding/binding.h",
           "csrc/binding/module.c", "proto/benchmark.proto", "proto/grpc/testing/test.proto",
           "triple_py/__init__.py", "triple_py/_triple.pyi", "triple_py/py.typed",
           "triple_py/bench/protos/server_reflection.proto",
           "triple_py/bench/spec/matrices/headline.toml", "docs/api.md",
           "tests/unit/test_x.py", "tools/bootstrap.sh", "Makefile", ".gitignore"]
GENERATED = ["csrc/gen/benchmark.pb-c.c", "csrc/gen/benchmark.pb-c.h"]
CHECKOUT_ONLY = {"tests/unit/test_x.py", "tools/bootstrap.sh", "Makefile", ".gitignore"}
METADATA = ["PKG-INFO", "setup.cfg", "triple_py.egg-info/SOURCES.txt"]


def complete() -> list:
    return [p for p in TRACKED if p not in CHECKOUT_ONLY] + GENERATED + METADATA


def test_a_complete_sdist_passes():
    report = check_sdist.compare(complete(), TRACKED)
    assert report.ok, report.lines()
    assert report.shipped == len(TRACKED) - len(CHECKOUT_ONLY)
    assert report.generated == 2


@pytest.mark.parametrize("left_out", ["csrc/binding/binding.h", "csrc/include/triple.h",
                                      "csrc/server/echo.h", "proto/grpc/testing/test.proto",
                                      "triple_py/py.typed", "LICENSE",
                                      "triple_py/bench/protos/server_reflection.proto"])
def test_a_tracked_file_left_out_is_named(left_out):
    report = check_sdist.compare([p for p in complete() if p != left_out], TRACKED)
    assert not report.ok
    assert report.lines() == [f"missing from the sdist: {left_out}"]


def test_a_generated_file_left_out_is_named():
    report = check_sdist.compare([p for p in complete() if p != GENERATED[1]], TRACKED)
    assert report.lines() == ["missing from the sdist: csrc/gen/benchmark.pb-c.h"]


def test_generated_files_follow_the_top_level_protos():
    assert check_sdist.generated_files(TRACKED) == GENERATED
    assert check_sdist.generated_files(["proto/a.proto", "proto/sub/b.proto"]) == [
        "csrc/gen/a.pb-c.c", "csrc/gen/a.pb-c.h"]


def test_checkout_only_and_stray_files_are_named():
    report = check_sdist.compare(complete() + ["tests/unit/test_x.py", "csrc/tri_buf.o"],
                                 TRACKED)
    assert report.lines() == ["not expected in the sdist: csrc/tri_buf.o",
                              "not expected in the sdist: tests/unit/test_x.py"]


def test_a_tracked_file_no_rule_covers_is_named():
    report = check_sdist.compare(complete(), TRACKED + ["newdir/thing.txt"])
    assert not report.ok
    assert report.lines() == ["tracked but matched by no rule (tools/check_sdist.py SHIPPED "
                              "or NOT_SHIPPED): newdir/thing.txt"]


def _tarball(path: Path, names: list) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name in names:
            data = b"x"
            info = tarfile.TarInfo(f"triple_py-0.1.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_members_are_read_from_the_tarball(tmp_path):
    sdist = _tarball(tmp_path / "triple_py-0.1.0.tar.gz", complete())
    assert check_sdist.sdist_members(sdist) == sorted(complete())


def test_the_command_fails_naming_the_missing_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(check_sdist, "tracked_files", lambda root: TRACKED)
    members = [p for p in complete() if p != "csrc/binding/binding.h"]
    sdist = _tarball(tmp_path / "triple_py-0.1.0.tar.gz", members)
    assert check_sdist.main([str(sdist)]) == 1
    err = capsys.readouterr().err
    assert "missing from the sdist: csrc/binding/binding.h" in err
    sdist = _tarball(tmp_path / "triple_py-0.1.0.tar.gz", complete())
    assert check_sdist.main([str(sdist)]) == 0
    assert "complete" in capsys.readouterr().out


def test_the_real_sdist_is_complete(tmp_path):
    """The sdist setup.py builds from this checkout (the generated sources included)
    passes the check; `make dist` runs the same check."""
    # A checkout has git and python3-build (tools/bootstrap.sh installs it).
    assert importlib.util.find_spec("build") is not None, "python3-build is missing"
    proc = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation",
                           "--outdir", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (sdist,) = tmp_path.glob("triple_py-*.tar.gz")
    members = check_sdist.sdist_members(sdist)
    report = check_sdist.compare(members, check_sdist.tracked_files(ROOT))
    # A file not yet added to git is in the sdist but not tracked: `make dist` refuses it;
    # here (a work tree being edited) only a missing or unclassified file fails.
    untracked = set(subprocess.run(["git", "-C", str(ROOT), "ls-files", "--others",
                                    "--exclude-standard"], capture_output=True, text=True,
                                   check=True).stdout.split())
    assert not report.missing and not report.unclassified, report.lines()
    assert set(report.unexpected) <= untracked, report.lines()
    assert "csrc/gen/benchmark.pb-c.c" in members and "csrc/binding/binding.h" in members
    assert "triple_py/bench/spec/matrices/headline.toml" in members  # package data


# -- setup.py's generate_protos: regenerates in a checkout, never needs protoc-c in an sdist --

GENERATE = ("import runpy, setuptools; setuptools.setup = lambda **kw: None; "
            "runpy.run_path('setup.py')['generate_protos']()")


@pytest.fixture
def tree(tmp_path):
    """setup.py and proto/ in a directory of their own, and a bin/ with pkg-config (which
    setup.py runs) but no protoc-c."""
    # tools/bootstrap.sh installs both.
    assert shutil.which("protoc-c") and shutil.which("pkg-config"), "protoc-c or pkg-config missing"
    shutil.copy(ROOT / "setup.py", tmp_path / "setup.py")
    (tmp_path / "proto").mkdir()
    shutil.copy(ROOT / "proto" / "benchmark.proto", tmp_path / "proto")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pkg-config").symlink_to(shutil.which("pkg-config"))
    return tmp_path


def _generate(tree: Path, with_protoc: bool) -> subprocess.CompletedProcess:
    path = str(tree / "bin")
    if with_protoc:
        path += ":" + str(Path(shutil.which("protoc-c")).parent)
    return subprocess.run([sys.executable, "-c", GENERATE], cwd=tree, capture_output=True,
                          text=True, timeout=120, env={"PATH": path})


def test_generate_protos_in_a_checkout_and_from_an_sdist(tree):
    out = tree / "csrc" / "gen" / "benchmark.pb-c.c"
    # a checkout: generated on the first build ...
    proc = _generate(tree, with_protoc=True)
    assert proc.returncode == 0, proc.stderr
    assert out.exists() and (tree / "csrc" / "gen" / "benchmark.pb-c.h").exists()
    # ... and again when the .proto is newer than its output
    first = out.stat().st_mtime_ns
    now = first / 1e9
    os.utime(tree / "proto" / "benchmark.proto", (now + 10, now + 10))
    assert _generate(tree, with_protoc=True).returncode == 0
    assert out.stat().st_mtime_ns > first
    # an sdist without protoc-c: the shipped files are used as they are, stale or not
    os.utime(tree / "proto" / "benchmark.proto", (now + 100, now + 100))
    text = out.read_text()
    proc = _generate(tree, with_protoc=False)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == text
    # only a missing file without protoc-c is an error, naming the file
    out.unlink()
    proc = _generate(tree, with_protoc=False)
    assert proc.returncode != 0
    assert "csrc/gen/benchmark.pb-c.c missing and protoc-c not found" in proc.stderr
