"""Build script for triple_py: compiles the C core and binding into one extension.

The C sources in csrc/ (core), csrc/server/ (the embedded server) and csrc/binding/
(CPython glue) are compiled straight into ``triple_py._triple``.  libnghttp2, OpenSSL, zlib and protobuf-c are found with
pkg-config; ``proto/benchmark.proto`` is compiled with protoc-c into csrc/gen/ first.
"""
import os
import shlex
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
PKGS = ["libnghttp2", "openssl", "zlib", "libprotobuf-c"]


def pkg_config(flag: str) -> list[str]:
    """Flags from pkg-config for every library the core links against."""
    out = subprocess.run(["pkg-config", flag, *PKGS], check=True,
                         capture_output=True, text=True).stdout
    return shlex.split(out)


def generate_protos() -> None:
    """Runs protoc-c on proto/*.proto into csrc/gen/ (skipped when up to date)."""
    gen = ROOT / "csrc" / "gen"
    gen.mkdir(exist_ok=True)
    for proto in sorted((ROOT / "proto").glob("*.proto")):
        out = gen / (proto.stem + ".pb-c.c")
        if out.exists() and out.stat().st_mtime >= proto.stat().st_mtime:
            continue
        subprocess.run(["protoc-c", f"--proto_path={ROOT / 'proto'}",
                        f"--c_out={gen}", str(proto)], check=True)


class BuildExt(build_ext):
    """build_ext that generates the protobuf-c sources before compiling."""

    def run(self) -> None:
        generate_protos()
        ext = self.extensions[0]
        ext.sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc" / "gen").glob("*.c"))
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

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
