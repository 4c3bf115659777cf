"""tools/wheel_fixup.py, the auditwheel-style check and retag of the self-contained wheel:
its reading of readelf's output and its verdicts, on small shared objects built here with
gcc (a clean one, one exporting an extra symbol, one needing libnghttp2, one with debug
info) and on wheels made of them."""
from __future__ import annotations

import base64
import hashlib
import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("readelf") is None,
                                 reason="needs gcc and readelf (build-essential)"),
              pytest.mark.checkout("tools/wheel_fixup.py")]


@pytest.fixture(scope="module")
def fixup() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wheel_fixup", ROOT / "tools" / "wheel_fixup.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["wheel_fixup"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


GOOD = """
#include <unistd.h>
static long helper(void) { return (long)getpid(); }
__attribute__((visibility("default"))) void *PyInit__demo(void) { return (void *)helper(); }
"""
EXTRA_EXPORT = GOOD + "long tri_internal(void) { return helper() + 1; }\n"
NEEDS_NGHTTP2 = GOOD.replace("return (long)getpid();",
                             "return (long)nghttp2_version(0);").replace(
    "#include <unistd.h>", "#include <nghttp2/nghttp2.h>")


def build_so(tmp_path: Path, name: str, source: str, *flags: str) -> Path:
    c = tmp_path / f"{name}.c"
    c.write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(out), str(c), *flags],
                   check=True, capture_output=True, timeout=60)
    return out


def make_wheel(directory: Path, so: Path, platform: str = "linux_x86_64") -> Path:
    """A minimal wheel holding `so` as demo/_demo.so, with a valid RECORD."""
    files = {
        "demo/_demo.cpython-311-x86_64-linux-gnu.so": so.read_bytes(),
        "demo/__init__.py": b"",
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "demo-1.0.dist-info/WHEEL": (f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: "
                                     f"false\nTag: cp311-cp311-{platform}\n").encode(),
    }
    record = [f"{n},{record_hash(d)},{len(d)}" for n, d in files.items()]
    record.append("demo-1.0.dist-info/RECORD,,")
    files["demo-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = directory / f"demo-1.0-cp311-cp311-{platform}.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


# --- readelf's output -----------------------------------------------------------------------

VERSIONS = """
Version symbols section '.gnu.version' contains 5 entries:
 Addr: 0x0000000000000478  Offset: 0x000478  Link: 3 (.dynsym)
  000:   0 (*local*)       2 (GLIBC_2.2.5)   3 (ZLIB_1.2.0)   1 (*global*)

Version needs section '.gnu.version_r' contains 2 entries:
 Addr: 0x0000000000000488  Offset: 0x000488  Link: 4 (.dynstr)
  000000: Version: 1  File: libc.so.6  Cnt: 2
  0x0010:   Name: GLIBC_2.34  Flags: none  Version: 4
  0x0020:   Name: GLIBC_2.2.5  Flags: none  Version: 2
  0x0030: Version: 1  File: libz.so.1  Cnt: 1
  0x0040:   Name: ZLIB_1.2.0  Flags: none  Version: 3
"""
DYNSYMS = """
Symbol table '.dynsym' contains 7 entries:
   Num:    Value          Size Type    Bind   Vis      Ndx Name
     0: 0000000000000000     0 NOTYPE  LOCAL  DEFAULT  UND 
     1: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND getpid@GLIBC_2.2.5 (2)
     2: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND pthread_once@GLIBC_2.34 (4)
     3: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND deflateBound@ZLIB_1.2.0 (3)
     4: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND deflate
     5: 0000000000000000     0 NOTYPE  WEAK   DEFAULT  UND __gmon_start__
     6: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND PyModule_Create2
     7: 0000000000001120    11 FUNC    GLOBAL DEFAULT   11 PyInit__demo
"""


def test_readelf_output_is_read(fixup: ModuleType) -> None:
    needs = fixup.parse_version_needs(VERSIONS)
    assert needs == {4: ("libc.so.6", "GLIBC_2.34"), 2: ("libc.so.6", "GLIBC_2.2.5"),
                     3: ("libz.so.1", "ZLIB_1.2.0")}
    exports, undefined = fixup.parse_dynsyms(DYNSYMS, needs)
    assert exports == ["PyInit__demo"]
    by_name = {u.name: u for u in undefined}
    assert by_name["pthread_once"] == fixup.Undefined("pthread_once", "GLIBC_2.34", "libc.so.6")
    assert by_name["deflate"] == fixup.Undefined("deflate")
    assert by_name["__gmon_start__"].weak
    facts = fixup.ElfFacts(path="x.so", machine="x86_64", needed=["libz.so.1", "libc.so.6"],
                           exports=exports, undefined=undefined, sections=[".text"])
    assert fixup.glibc_floor(facts) == 34
    # zlib's oldest functions are unversioned: resolved only by what libz exports.
    assert any("deflate" in v for v in fixup.violations(facts))
    facts.provided = {"deflate"}
    assert fixup.violations(facts) == []


def test_verdicts_on_synthetic_objects(fixup: ModuleType) -> None:
    base = dict(path="x.so", machine="x86_64", sections=[".text", ".debug_info", ".symtab"])
    facts = fixup.ElfFacts(needed=["libc.so.6", "libssl.so.3"], exports=["PyInit_x", "SSL_new"],
                           undefined=[fixup.Undefined("_dl_x", "GLIBC_PRIVATE", "libc.so.6")],
                           **base)
    problems = fixup.violations(facts)
    assert len(problems) == 5, problems
    assert "needs libssl.so.3" in problems[0]
    assert "besides PyInit_*: SSL_new" in problems[1]
    assert "GLIBC_PRIVATE" in problems[2]
    assert "debug sections (.debug_info)" in problems[3]
    assert "not stripped" in problems[4]


# --- real objects ---------------------------------------------------------------------------

def test_a_clean_object_passes(fixup: ModuleType, tmp_path: Path) -> None:
    facts = fixup.read_elf(build_so(tmp_path, "good", GOOD, "-fvisibility=hidden", "-s"))
    assert facts.exports == ["PyInit__demo"]
    assert "libc.so.6" in facts.needed
    assert facts.machine in ("x86_64", "aarch64")
    assert fixup.glibc_floor(facts) >= 2
    assert fixup.violations(facts) == []


def test_an_extra_export_fails(fixup: ModuleType, tmp_path: Path) -> None:
    facts = fixup.read_elf(build_so(tmp_path, "extra", EXTRA_EXPORT, "-s"))
    assert fixup.violations(facts) == [
        "extra.so: exports 1 symbol(s) besides PyInit_*: tri_internal"]


def test_needing_libnghttp2_fails(fixup: ModuleType, tmp_path: Path) -> None:
    # libnghttp2-dev: tools/bootstrap.sh installs it (the module needs the checkout).
    so = build_so(tmp_path, "nghttp2", NEEDS_NGHTTP2, "-fvisibility=hidden", "-s",
                  "-lnghttp2")
    problems = fixup.violations(fixup.read_elf(so))
    assert any(p.startswith("nghttp2.so: needs libnghttp2.so.") for p in problems), problems
    assert any("nghttp2_version" in p for p in problems), problems


def test_debug_info_fails(fixup: ModuleType, tmp_path: Path) -> None:
    facts = fixup.read_elf(build_so(tmp_path, "debug", GOOD, "-fvisibility=hidden", "-g"))
    problems = fixup.violations(facts)
    assert any("debug sections" in p for p in problems), problems
    assert any("not stripped" in p for p in problems), problems


# --- wheels ---------------------------------------------------------------------------------

def test_a_clean_wheel_is_retagged(fixup: ModuleType, tmp_path: Path, capsys) -> None:
    so = build_so(tmp_path, "good", GOOD, "-fvisibility=hidden", "-s")
    floor = fixup.glibc_floor(fixup.read_elf(so))
    machine = fixup.read_elf(so).machine
    wheel = make_wheel(tmp_path, so, f"linux_{machine}")
    assert fixup.main(["--check", str(wheel)]) == 1  # linux_* is no index's tag
    assert "is not manylinux_2_Y" in capsys.readouterr().err
    assert fixup.main([str(wheel)]) == 0
    retagged = tmp_path / f"demo-1.0-cp311-cp311-manylinux_2_{floor}_{machine}.whl"
    assert retagged.exists() and not wheel.exists()
    with zipfile.ZipFile(retagged) as zf:
        wheel_file = zf.read("demo-1.0.dist-info/WHEEL")
        assert f"Tag: cp311-cp311-manylinux_2_{floor}_{machine}\n".encode() in wheel_file
        record = {line.split(",")[0]: line.split(",")[1:]
                  for line in zf.read("demo-1.0.dist-info/RECORD").decode().splitlines()}
        for name in zf.namelist():
            if not name.endswith("RECORD"):
                data = zf.read(name)
                assert record[name] == [record_hash(data), str(len(data))], name
    assert fixup.main(["--check", str(retagged)]) == 0


def test_a_bad_wheel_is_left_alone(fixup: ModuleType, tmp_path: Path, capsys) -> None:
    so = build_so(tmp_path, "extra", EXTRA_EXPORT, "-s")
    wheel = make_wheel(tmp_path, so)
    before = wheel.read_bytes()
    assert fixup.main([str(wheel)]) == 1
    assert "tri_internal" in capsys.readouterr().err
    assert wheel.read_bytes() == before
    assert sorted(p.name for p in tmp_path.glob("*.whl")) == [wheel.name]


def test_a_tag_below_the_glibc_floor_fails(fixup: ModuleType, tmp_path: Path, capsys) -> None:
    so = build_so(tmp_path, "good", GOOD, "-fvisibility=hidden", "-s")
    facts = fixup.read_elf(so)
    wheel = make_wheel(tmp_path, so, f"manylinux_2_1_{facts.machine}")
    assert fixup.glibc_floor(facts) > 1
    assert fixup.main(["--check", str(wheel)]) == 1
    assert "below the glibc floor" in capsys.readouterr().err
