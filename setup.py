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
        gen.mkdir(parents=True, exist_ok=True)
        subprocess.run([protoc, f"--proto_path={ROOT / 'proto'}", f"--c_out={gen}", str(proto)],
                       check=True)


class BuildExt(build_ext):
    """build_ext that generates the protobuf-c sources before compiling."""

    def run(self) -> None:
        generate_protos()
        ext = self.extensions[0]
        ext.sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc" / "gen").glob("*.c"))
        super().run()
        if bundled and not self.inplace:
            # The bundled libraries' licences ship with the extension that contains them.
            dest = Path(self.build_lib) / "triple_py" / "_vendor_licenses"
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(Path(bundled) / "licenses", dest)
            shutil.copy(Path(bundled) / "versions", dest / "versions")


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


def bundled_flags(deps: Path) -> tuple[list[str], list[str]]:
    """Compile and link flags of the self-contained build (TRIPLE_BUNDLED_DEPS=deps).

    ``deps`` is what tools/build_static_deps.sh makes: nghttp2, protobuf-c and OpenSSL (and
    zstd when that libcrypto.a needs it) as PIC archives in deps/lib, their headers in
    deps/include.  They are linked in with every symbol of theirs made local
    (--exclude-libs), the core is compiled with hidden visibility, so that the extension
    exports only PyInit__triple; zlib stays dynamic (libz.so.1 is on the manylinux
    allow-list); the result is stripped.
    """
    lib = deps / "lib"
    archives = [lib / f"lib{name}.a" for name in ("nghttp2", "protobuf-c", "ssl", "crypto")]
    if (lib / "libzstd.a").exists():
        archives.append(lib / "libzstd.a")
    missing = [str(a) for a in archives if not a.exists()]
    if missing:
        raise SystemExit(f"setup.py: TRIPLE_BUNDLED_DEPS={deps}: missing {', '.join(missing)} "
                         "(make it with tools/build_static_deps.sh)")
    cflags = [f"-I{deps / 'include'}", "-fvisibility=hidden"]
    ldflags = ["-Wl,--exclude-libs,ALL", *map(str, archives),
               "-Wl,--as-needed", "-lz", "-lpthread", "-ldl", "-s"]
    return cflags, ldflags


bundled = os.environ.get("TRIPLE_BUNDLED_DEPS", "")
if bundled:
    dep_cflags, dep_ldflags = bundled_flags(Path(bundled).resolve())
else:
    dep_cflags, dep_ldflags = pkg_config("--cflags"), pkg_config("--libs")

ext = Extension(
    "triple_py._triple",
    sources=sources,
    include_dirs=["csrc", "csrc/gen"],
    define_macros=[("_GNU_SOURCE", None)],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                        *dep_cflags, *shlex.split(extra)],
    extra_link_args=[*dep_ldflags, *shlex.split(os.environ.get("TRIPLE_LDFLAGS", ""))],
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt, "sdist": SDist})
