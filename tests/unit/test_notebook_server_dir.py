"""Which folder ``python -m triple_py.bench.notebook_server`` serves without --dir: the
checkout's notebooks/ when triple_py is imported from a checkout, the current directory
when it is imported from an installed wheel (which ships no notebooks)."""
from __future__ import annotations

from pathlib import Path

import pytest

from triple_py.bench.jupyter import notebook_server


def test_a_checkout_serves_its_notebooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "notebooks").mkdir()
    monkeypatch.setattr(notebook_server, "PACKAGE_PARENT", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert notebook_server.default_directory() == tmp_path / "notebooks"


def test_an_installed_package_serves_the_current_directory(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch):
    site = tmp_path / "site-packages"
    site.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(notebook_server, "PACKAGE_PARENT", site)
    monkeypatch.chdir(work)
    assert notebook_server.default_directory() == work


def test_the_package_parent_is_where_triple_py_is_imported_from():
    import triple_py
    assert notebook_server.PACKAGE_PARENT == Path(triple_py.__file__).resolve().parents[1]
