"""Build script for triple_py: compiles the C core and binding into one extension.

The C sources in csrc/ (core), csrc/server/ (the embedded server) and csrc/binding/
(CPython glue) are compiled straight into ``triple_py._triple``.  libnghttp2, OpenSSL, zlib and protobuf-c are found with
pkg-config; proto/*.proto are compiled with protoc-c into csrc/gen/ first (in a checkout;
the sdist ships the generated files, see generate_protos).
"""
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
PKGS = ["libnghttp2", "openssl", "zlib", "libprotobuf-c"]


def pkg_config(flag: str) -> list[str]:
    """Flags from pkg-config for every library the core links against."""
    out = subprocess.run(["pkg-config", flag, *PKGS], check=True,
                         capture_output=True, text=True).stdout
    return shlex.split(out)


def generate_protos() -> None:
    """Makes csrc/gen/<name>.pb-c.[ch] from proto/<name>.proto with protoc-c.

    In a checkout (csrc/gen/ is not tracked) they are generated on the first build and
    regenerated when a .proto is newer than its output.  An sdist ships them (its sdist
    command runs this first), so building from one never needs protoc-c: without protoc-c
    the shipped files are used as they are, and only a missing one is an error.
    """
    gen = ROOT / "csrc" / "gen"
    protoc = shutil.which("protoc-c")
    for proto in sorted((ROOT / "proto").glob("*.proto")):
        outs = [gen / (proto.stem + suffix) for suffix in (".pb-c.c", ".pb-c.h")]
        if all(out.exists() for out in outs):
            if protoc is None:
                continue
            if min(out.stat().st_mtime for out in outs) >= proto.stat().st_mtime:
                continue
        if protoc is None:
            missing = ", ".join(str(out.relative_to(ROOT)) for out in outs if not out.exists())
            raise SystemExit(f"setup.py: {missing} missing and protoc-c not found: install "
                             "protoc-c (Debian: protobuf-c-compiler), or build from the sdist, "
                             "which ships the generated sources")
        gen.mkdir(exist_ok=True)
        subprocess.run([protoc, f"--proto_path={ROOT / 'proto'}", f"--c_out={gen}", str(proto)],
                       check=True)


class BuildExt(build_ext):
    """build_ext that generates the protobuf-c sources before compiling."""

    def run(self) -> None:
        generate_protos()
        ext = self.extensions[0]
        ext.sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc" / "gen").glob("*.c"))
        super().run()


class SDist(sdist):
    """sdist that generates the protobuf-c sources first, so that the sdist ships them
    (MANIFEST.in grafts csrc/, generated files included)."""

    def run(self) -> None:
        generate_protos()
        super().run()


sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc").glob("tri_*.c"))
sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc" / "server").glob("*.c"))
sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc" / "binding").glob("*.c"))
extra = os.environ.get("TRIPLE_CFLAGS", "")

ext = Extension(
    "triple_py._triple",
    sources=sources,
    include_dirs=["csrc", "csrc/gen"],
    define_macros=[("_GNU_SOURCE", None)],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                        *pkg_config("--cflags"), *shlex.split(extra)],
    extra_link_args=[*pkg_config("--libs"), *shlex.split(os.environ.get("TRIPLE_LDFLAGS", ""))],
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt, "sdist": SDist})
