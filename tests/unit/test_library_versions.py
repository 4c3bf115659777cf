"""``_triple.library_versions()``: the libraries the core runs with, which the bench
results record (a self-contained wheel links its own copies, so the dynamic loader's
libnghttp2 would be the wrong answer there)."""
from __future__ import annotations

import re

from triple_py import _triple
from triple_py.bench.results import environment


def test_every_library_reports_its_compiled_and_linked_version() -> None:
    versions = _triple.library_versions()
    assert set(versions) == {"nghttp2", "openssl", "zlib", "protobuf-c"}
    for name, row in versions.items():
        assert set(row) == {"compiled", "linked"}, name
        assert re.search(r"\d+\.\d+\.\d+", row["linked"]), (name, row)
        assert re.search(r"\d+\.\d+\.\d+", row["compiled"]), (name, row)
    assert versions["openssl"]["linked"].startswith("OpenSSL ")
    # Built and run with the same major version (the ABI the core was compiled for).
    for name in ("nghttp2", "openssl"):
        compiled = re.search(r"\d+", versions[name]["compiled"]).group()
        linked = re.search(r"\d+", versions[name]["linked"]).group()
        assert compiled == linked, name


def test_results_record_the_cores_libraries() -> None:
    env = environment.environment()
    versions = _triple.library_versions()
    assert env["nghttp2"] == versions["nghttp2"]["linked"]
    assert env["openssl"] == versions["openssl"]["linked"]
