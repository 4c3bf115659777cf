#!/usr/bin/env python3
"""Checks and retags a self-contained Linux wheel, as auditwheel would (it is not packaged
in Debian).

    tools/wheel_fixup.py WHEEL...            check each wheel's extension modules, then
                                             retag it linux_<arch> -> manylinux_2_Y_<arch>
    tools/wheel_fixup.py --check WHEEL...    only check (tag included); exit 1 on a violation

For every shared object in the wheel it reads, with binutils' ``readelf`` (present wherever
a C compiler is): the NEEDED libraries, the dynamic symbols with their versions, and the
section names.  A wheel passes when every shared object

* needs only libraries of the manylinux allow-list (glibc's, libgcc_s, libz, ...);
* exports nothing but its ``PyInit_<name>`` functions;
* leaves undefined only symbols that an allowed library provides (versioned by it) or that
  the Python interpreter provides (``Py*``/``_Py*``), or weak ones;
* carries no debug sections and no static symbol table (it is stripped);

and, in ``--check`` mode, when the wheel is tagged ``manylinux_2_Y_<arch>`` with Y at least
the highest ``GLIBC_2.Y`` symbol version its objects need (the glibc floor).  Retagging
renames the file, rewrites the ``Tag:`` lines of ``.dist-info/WHEEL`` and that file's RECORD
entry; the original wheel is removed when the result lands next to it.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

# PEP 599/600's libraries a manylinux wheel may need from the system (x86_64 and aarch64),
# plus libz.so.1, which auditwheel's policy allows too.
ALLOWED_LIBS = frozenset({
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
    "libresolv.so.2", "libutil.so.1", "libnsl.so.1", "libcrypt.so.1", "libgcc_s.so.1",
    "libstdc++.so.6", "libz.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
})
# readelf -h's Machine field -> the wheel platform's architecture.
MACHINES = {"Advanced Micro Devices X86-64": "x86_64", "AArch64": "aarch64"}
DEBUG_SECTION = re.compile(r"^\.z?debug_")
GLIBC_VERSION = re.compile(r"^GLIBC_2\.(\d+)(?:\.\d+)?$")
PLATFORM = re.compile(r"^(linux|manylinux_2_(\d+))_(\w+)$")


@dataclass(frozen=True)
class Undefined:
    """An undefined dynamic symbol: its version (and the library that version belongs to,
    from .gnu.version_r) when it has one."""

    name: str
    version: str = ""
    library: str = ""
    weak: bool = False


@dataclass
class ElfFacts:
    """What the check needs to know about one shared object."""

    path: str
    machine: str = ""
    needed: list[str] = field(default_factory=list)
    exports: list[str] = field(default_factory=list)
    undefined: list[Undefined] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    size: int = 0
    # What the allowed libraries it needs export (their unversioned symbols, e.g. zlib's
    # oldest functions, are resolved against this), as found on this machine.
    provided: set[str] = field(default_factory=set)


def _readelf(*args: str) -> str:
    """readelf's output (wide, so that nothing is truncated)."""
    return subprocess.run(["readelf", "-W", *args], check=True, capture_output=True,
                          text=True, env={**os.environ, "LC_ALL": "C"}).stdout


def parse_needed(dynamic: str) -> list[str]:
    """The NEEDED entries of ``readelf -d``."""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)


def parse_version_needs(versions: str) -> dict[int, tuple[str, str]]:
    """``readelf -V``'s .gnu.version_r: version index -> (library, version name)."""
    table: dict[int, tuple[str, str]] = {}
    library = ""
    in_needs = False
    for line in versions.splitlines():
        if line.startswith("Version needs section"):
            in_needs = True
        elif line.startswith("Version ") and "section" in line:
            in_needs = False
        if not in_needs:
            continue
        m = re.search(r"File: (\S+)", line)
        if m:
            library = m.group(1)
            continue
        m = re.search(r"Name: (\S+)\s+Flags: \S+\s+Version: (\d+)", line)
        if m:
            table[int(m.group(2))] = (library, m.group(1))
    return table


def parse_dynsyms(dynsyms: str, needs: dict[int, tuple[str, str]]
                  ) -> tuple[list[str], list[Undefined]]:
    """``readelf --dyn-syms``: the exported names (defined, global or weak, default or
    protected visibility) and the undefined symbols."""
    exports: list[str] = []
    undefined: list[Undefined] = []
    row = re.compile(r"^\s*\d+:\s+[0-9a-fA-F]+\s+\S+\s+(\w+)\s+(\w+)\s+(\w+)\s+(\w+)\s*(.*)$")
    for line in dynsyms.splitlines():
        m = row.match(line)
        if not m:
            continue
        _type, bind, vis, ndx, rest = m.groups()
        if not rest or bind == "LOCAL":
            continue
        name_ver, _, index = rest.partition(" (")
        name, _, version = name_ver.partition("@")
        version = version.lstrip("@")
        if ndx == "UND":
            library = ""
            if index.rstrip(")").isdigit():
                library = needs.get(int(index.rstrip(")")), ("", ""))[0]
            undefined.append(Undefined(name, version, library, bind == "WEAK"))
        elif vis in ("DEFAULT", "PROTECTED"):
            exports.append(name)
    return exports, undefined


def parse_sections(headers: str) -> list[str]:
    """Section names from ``readelf -S``."""
    return re.findall(r"^\s*\[\s*\d+\]\s+(\S+)", headers, flags=re.M)


def parse_machine(header: str) -> str:
    """The architecture (x86_64, aarch64) from ``readelf -h``, or the raw Machine field."""
    m = re.search(r"Machine:\s+(.+)", header)
    raw = m.group(1).strip() if m else ""
    return MACHINES.get(raw, raw)


def system_library(name: str) -> Path | None:
    """Where the dynamic linker's cache (ldconfig -p) finds a library of this machine."""
    try:
        cache = subprocess.run(["ldconfig", "-p"], check=True, capture_output=True,
                               text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        cache = ""
    m = re.search(rf"^\s*{re.escape(name)} \(.*\) => (\S+)$", cache, flags=re.M)
    return Path(m.group(1)) if m else None


def read_elf(path: Path) -> ElfFacts:
    """Reads one shared object's facts with readelf (and the exports of the allowed
    libraries it needs, when this machine has them)."""
    p = str(path)
    exports, undefined = parse_dynsyms(_readelf("--dyn-syms", p),
                                       parse_version_needs(_readelf("-V", p)))
    facts = ElfFacts(path=p, machine=parse_machine(_readelf("-h", p)),
                     needed=parse_needed(_readelf("-d", p)), exports=exports,
                     undefined=undefined, sections=parse_sections(_readelf("-S", p)),
                     size=path.stat().st_size)
    for lib in facts.needed:
        where = system_library(lib) if lib in ALLOWED_LIBS else None
        if where is not None:
            facts.provided |= set(parse_dynsyms(_readelf("--dyn-syms", str(where)), {})[0])
    return facts


def glibc_floor(facts: ElfFacts) -> int:
    """Y of the highest GLIBC_2.Y symbol version the object needs (0 when none)."""
    minors = [int(m.group(1)) for u in facts.undefined
              if (m := GLIBC_VERSION.match(u.version))]
    return max(minors, default=0)


def _python_symbol(name: str) -> bool:
    return name.startswith(("Py", "_Py"))


def violations(facts: ElfFacts) -> list[str]:
    """One line per way in which the object breaks the manylinux rules above."""
    out: list[str] = []
    where = Path(facts.path).name
    for lib in facts.needed:
        if lib not in ALLOWED_LIBS:
            out.append(f"{where}: needs {lib}, which is not on the manylinux allow-list")
    extra = [s for s in facts.exports if not s.startswith("PyInit_")]
    if extra:
        shown = ", ".join(sorted(extra)[:5]) + (", ..." if len(extra) > 5 else "")
        out.append(f"{where}: exports {len(extra)} symbol(s) besides PyInit_*: {shown}")
    if not any(s.startswith("PyInit_") for s in facts.exports):
        out.append(f"{where}: exports no PyInit_* function")
    unresolved = sorted({u.name for u in facts.undefined
                         if not u.weak and not _python_symbol(u.name)
                         and u.library not in ALLOWED_LIBS
                         and not (not u.version and u.name in facts.provided)})
    if unresolved:
        shown = ", ".join(unresolved[:5]) + (", ..." if len(unresolved) > 5 else "")
        out.append(f"{where}: {len(unresolved)} undefined symbol(s) that neither an allowed "
                   f"library nor Python provides: {shown}")
    private = sorted({u.name for u in facts.undefined if u.version == "GLIBC_PRIVATE"})
    if private:
        out.append(f"{where}: uses GLIBC_PRIVATE symbols: {', '.join(private)}")
    debug = [s for s in facts.sections if DEBUG_SECTION.match(s)]
    if debug:
        out.append(f"{where}: carries debug sections ({', '.join(debug)})")
    if ".symtab" in facts.sections:
        out.append(f"{where}: is not stripped (.symtab)")
    return out


def report(facts: ElfFacts) -> str:
    """A few lines on one object: NEEDED, glibc floor, exports, size."""
    floor = glibc_floor(facts)
    return (f"{Path(facts.path).name} ({facts.machine}, {facts.size} bytes)\n"
            f"  NEEDED: {' '.join(facts.needed) or '-'}\n"
            f"  glibc floor: GLIBC_2.{floor} (manylinux_2_{floor})\n"
            f"  exports ({len(facts.exports)}): {' '.join(sorted(facts.exports)[:10])}\n"
            f"  undefined: {len(facts.undefined)} "
            f"({sum(_python_symbol(u.name) for u in facts.undefined)} from Python)")


@dataclass
class WheelName:
    """The parts of a wheel's file name (PEP 427)."""

    prefix: str  # name-version[-build]
    python: str
    abi: str
    platform: str

    @classmethod
    def parse(cls, path: Path) -> "WheelName":
        stem = path.name.removesuffix(".whl")
        parts = stem.split("-")
        if not path.name.endswith(".whl") or len(parts) < 5:
            raise ValueError(f"{path.name}: not a wheel file name")
        return cls("-".join(parts[:-3]), *parts[-3:])

    def file_name(self) -> str:
        return f"{self.prefix}-{self.python}-{self.abi}-{self.platform}.whl"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def wheel_objects(wheel: Path, tmp: Path) -> list[ElfFacts]:
    """Extracts the wheel's shared objects into tmp and reads them."""
    facts = []
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if re.search(r"\.so(\.\d+)*$", info.filename):
                target = tmp / info.filename.replace("/", "_")
                target.write_bytes(zf.read(info))
                facts.append(read_elf(target))
    return facts


def check_tag(name: WheelName, floor: int, machine: str) -> list[str]:
    """The tag's violations: it must be manylinux_2_Y_<arch> with Y >= the floor."""
    out = []
    for platform in name.platform.split("."):
        m = PLATFORM.match(platform)
        if not m or m.group(2) is None:
            out.append(f"platform tag {platform} is not manylinux_2_Y_<arch> "
                       "(run tools/wheel_fixup.py on it)")
        elif int(m.group(2)) < floor:
            out.append(f"platform tag {platform} is below the glibc floor manylinux_2_{floor}")
        elif m.group(3) != machine:
            out.append(f"platform tag {platform} does not match the objects' {machine}")
    return out


def retag(wheel: Path, platform: str, outdir: Path) -> Path:
    """Writes the wheel with its platform tag replaced into outdir; returns its path."""
    name = WheelName.parse(wheel)
    old_platform = name.platform
    name.platform = platform
    target = outdir / name.file_name()
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        names = src.namelist()
        wheel_file = next(n for n in names if re.fullmatch(r"[^/]+\.dist-info/WHEEL", n))
        record_file = wheel_file.removesuffix("WHEEL") + "RECORD"
        text = src.read(wheel_file).decode()
        new_wheel = re.sub(rf"^(Tag: .*-){re.escape(old_platform)}$", rf"\g<1>{platform}",
                           text, flags=re.M).encode()
        for info in src.infolist():
            data = src.read(info)
            if info.filename == wheel_file:
                data = new_wheel
            elif info.filename == record_file:
                lines = []
                for line in data.decode().splitlines():
                    if line.split(",", 1)[0] == wheel_file:
                        line = f"{wheel_file},{_record_hash(new_wheel)},{len(new_wheel)}"
                    lines.append(line)
                data = ("\n".join(lines) + "\n").encode()
            dst.writestr(info, data)
    tmp.replace(target)
    if target.resolve() != wheel.resolve() and target.parent.resolve() == wheel.parent.resolve():
        wheel.unlink()
    return target


def process(wheel: Path, check_only: bool, outdir: Path | None) -> list[str]:
    """Checks (and unless check_only, retags) one wheel; prints its report; returns the
    violations."""
    with tempfile.TemporaryDirectory() as tmp:
        objects = wheel_objects(wheel, Path(tmp))
    problems: list[str] = []
    print(f"{wheel.name}: {wheel.stat().st_size} bytes, {len(objects)} extension module(s)")
    for facts in objects:
        print(report(facts))
        problems += violations(facts)
    if not objects:
        problems.append(f"{wheel.name}: no shared object in the wheel")
        return problems
    floor = max(glibc_floor(f) for f in objects)
    machines = {f.machine for f in objects}
    if len(machines) != 1 or next(iter(machines)) not in MACHINES.values():
        problems.append(f"{wheel.name}: objects for {', '.join(sorted(machines))}, "
                        "not one of x86_64, aarch64")
        return problems
    machine = machines.pop()
    if check_only:
        problems += check_tag(WheelName.parse(wheel), floor, machine)
        return problems
    if problems:
        return problems
    target = retag(wheel, f"manylinux_2_{floor}_{machine}", outdir or wheel.parent)
    print(f"-> {target} ({target.stat().st_size} bytes)")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheels", nargs="+", type=Path, metavar="WHEEL")
    ap.add_argument("--check", action="store_true",
                    help="only check (the tag included); change nothing")
    ap.add_argument("-w", "--outdir", type=Path,
                    help="where the retagged wheel goes (default: next to the input)")
    args = ap.parse_args(argv)
    if shutil.which("readelf") is None:
        print("wheel_fixup: readelf not found (Debian: binutils)", file=sys.stderr)
        return 2
    if args.outdir:
        args.outdir.mkdir(parents=True, exist_ok=True)
    failed = False
    for wheel in args.wheels:
        problems = process(wheel, args.check, args.outdir)
        for p in problems:
            print(f"wheel_fixup: {wheel.name}: {p}", file=sys.stderr)
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
