#!/usr/bin/env python3
"""Checks an sdist against the checkout, so that no source file can be left out of it.

Usage: tools/check_sdist.py SDIST [--root DIR]

Every file ``git ls-files`` lists is classified by the rules below as belonging in the
sdist (SHIPPED: what builds the extension and what the package reads at run time) or not
(NOT_SHIPPED: the checkout's tests, benchmarks, notes, tooling).  The check fails, naming
each file, when

- a tracked file that belongs in the sdist is missing from it;
- a file generated for the sdist (csrc/gen/<name>.pb-c.[ch] for each proto/<name>.proto)
  is missing from it;
- the sdist holds a file that is not tracked, not generated and not setuptools' metadata
  (a stray build product), or a tracked file the rules keep out of it;
- a tracked file matches no rule: a new top-level file or directory needs a decision here.

Exit status: 0 when the sdist is complete, 1 when it is not, 2 on bad input.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

# Directories (trailing slash) and files whose tracked contents the sdist must hold; docs/
# because the README and the C sources refer to its pages.
SHIPPED: Tuple[str, ...] = ("csrc/", "proto/", "triple_py/", "docs/", "setup.py",
                            "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE")
# Tracked but checkout-only: the sdist builds and runs the package, it does not test it
# (as psycopg2's sdist ships no test suite); testing/ is the checkout's test infrastructure
# (triple_py_testing: peers, interop), a distribution of its own.
NOT_SHIPPED: Tuple[str, ...] = ("tests/", "testing/", "benchmarks/", "notes/", "notebooks/",
                                "tools/", ".ci/", "Makefile", ".gitignore", ".clang-format")
# What setuptools adds to every sdist.
METADATA_FILES: Tuple[str, ...] = ("PKG-INFO", "setup.cfg")
METADATA_SUFFIX = ".egg-info/"


def _matches(path: str, rules: Iterable[str]) -> bool:
    return any(path.startswith(rule) if rule.endswith("/") else path == rule for rule in rules)


def generated_files(tracked: Iterable[str]) -> List[str]:
    """The files the sdist step generates: csrc/gen/<name>.pb-c.c and .h for each
    proto/<name>.proto (setup.py's generate_protos compiles the top level of proto/)."""
    out = []
    for path in tracked:
        head, _, name = path.rpartition("/")
        if head == "proto" and name.endswith(".proto"):
            stem = name[: -len(".proto")]
            out += [f"csrc/gen/{stem}.pb-c.c", f"csrc/gen/{stem}.pb-c.h"]
    return sorted(out)


@dataclass
class Report:
    """The outcome of comparing an sdist's files with the tracked files."""

    missing: List[str]       # belongs in the sdist (tracked or generated), not in it
    unexpected: List[str]    # in the sdist, but tracked checkout-only or not tracked at all
    unclassified: List[str]  # tracked, matched by no rule
    shipped: int             # tracked files the sdist must hold
    generated: int           # generated files the sdist must hold

    @property
    def ok(self) -> bool:
        """True when nothing is missing, unexpected or unclassified."""
        return not (self.missing or self.unexpected or self.unclassified)

    def lines(self) -> List[str]:
        """One line per problem, each naming its file."""
        return ([f"missing from the sdist: {p}" for p in self.missing]
                + [f"not expected in the sdist: {p}" for p in self.unexpected]
                + [f"tracked but matched by no rule (tools/check_sdist.py SHIPPED or "
                   f"NOT_SHIPPED): {p}" for p in self.unclassified])


def compare(members: Iterable[str], tracked: Iterable[str]) -> Report:
    """Compares the sdist's files (paths relative to its top directory) with the tracked
    files (paths relative to the repository's root)."""
    members = set(members)
    tracked = sorted(set(tracked))
    shipped = [p for p in tracked if _matches(p, SHIPPED)]
    unclassified = [p for p in tracked if not _matches(p, SHIPPED)
                    and not _matches(p, NOT_SHIPPED)]
    generated = generated_files(tracked)
    wanted = set(shipped) | set(generated)
    missing = sorted(wanted - members)
    unexpected = sorted(p for p in members - wanted
                        if p not in METADATA_FILES and METADATA_SUFFIX not in p)
    return Report(missing, unexpected, unclassified, len(shipped), len(generated))


def sdist_members(sdist: Path) -> List[str]:
    """The regular files of an sdist (.tar.gz), relative to its one top directory."""
    with tarfile.open(sdist) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) != 1 or any("/" not in n for n in names):
        raise ValueError(f"{sdist}: not an sdist (files outside one top directory)")
    return sorted(n.split("/", 1)[1] for n in names)


def tracked_files(root: Path) -> List[str]:
    """``git ls-files`` of the checkout at ``root``, without files deleted from the
    work tree."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    return [p for p in out.split("\0") if p and os.path.lexists(root / p)]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: prints the verdict; returns the exit status."""
    parser = argparse.ArgumentParser(prog="check_sdist.py", description=__doc__.split("\n")[0])
    parser.add_argument("sdist", type=Path)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout (default: this script's repository)")
    args = parser.parse_args(argv)
    try:
        members = sdist_members(args.sdist)
        tracked = tracked_files(args.root)
    except (OSError, ValueError, tarfile.TarError, subprocess.CalledProcessError) as exc:
        print(f"check_sdist: {exc}", file=sys.stderr)
        return 2
    report = compare(members, tracked)
    for line in report.lines():
        print(f"check_sdist: {args.sdist.name}: {line}", file=sys.stderr)
    if not report.ok:
        print(f"check_sdist: {args.sdist.name}: FAILED ({len(report.lines())} problems)",
              file=sys.stderr)
        return 1
    print(f"check_sdist: {args.sdist.name}: complete: {len(members)} files, "
          f"{report.shipped} tracked + {report.generated} generated + setuptools metadata; "
          f"{len(tracked) - report.shipped} tracked files checkout-only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
