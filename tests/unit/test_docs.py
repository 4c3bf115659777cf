"""The docs stay true: every page the code cites exists, every link between pages resolves,
and docs/options.md lists every row of the core's option table."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from triple_py import _triple

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="needs the checkout's docs/")


def tracked_files() -> list[Path]:
    """Every file git tracks (the checkout as committed plus staged changes)."""
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return [ROOT / line for line in out.splitlines() if (ROOT / line).is_file()]


def test_every_cited_docs_page_exists() -> None:
    cited = re.compile(r"\bdocs/([A-Za-z0-9_.-]+\.md)")
    missing = set()
    for path in tracked_files():
        if path.suffix not in {".c", ".h", ".py", ".md", ".sh", ".toml", ".mjs", ".go", ".cc"}:
            continue
        for name in cited.findall(path.read_text(errors="replace")):
            if not (DOCS / name).is_file():
                missing.add(f"{path.relative_to(ROOT)} cites docs/{name}")
    assert not missing, sorted(missing)


def test_no_code_points_at_session_notes() -> None:
    session_notes = "notes/" + "issue"  # split so that this file does not name itself
    offenders = [str(p.relative_to(ROOT)) for p in tracked_files()
                 if p.suffix in {".c", ".h", ".py"} and session_notes in p.read_text(errors="replace")]
    assert not offenders, offenders


def test_links_between_pages_resolve() -> None:
    link = re.compile(r"\]\(([^)#:]+\.md)(#[^)]*)?\)")
    broken = []
    for page in [*DOCS.glob("*.md"), ROOT / "README.md"]:
        for target, _ in link.findall(page.read_text()):
            if not (page.parent / target).resolve().is_file():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_options_page_lists_every_core_option() -> None:
    text = (DOCS / "options.md").read_text()
    named = [row[0] for row in _triple.CHANNEL_OPTIONS if row[0]]
    named += [row[0] for row in _triple.LOAD_OPTIONS]  # run_load's own keywords
    missing = [name for name in named if f"| `{name}` |" not in text]
    assert not missing, f"docs/options.md lacks {missing}"


def test_kept_results_are_listed_and_cited() -> None:
    """Raw data stays only where a claim rests on it: every directory of
    benchmarks/results is in its MANIFEST.md and cited by README.md or a page of docs/."""
    results = ROOT / "benchmarks" / "results"
    manifest = (results / "MANIFEST.md").read_text()
    claims = "".join(p.read_text() for p in [ROOT / "README.md", *DOCS.glob("*.md")])
    kept = sorted(p.name for p in results.iterdir() if p.is_dir())
    unlisted = [d for d in kept if f"`{d}/`" not in manifest]
    uncited = [d for d in kept if f"benchmarks/results/{d}" not in claims]
    assert not unlisted and not uncited, (unlisted, uncited)


def readme_map() -> list[str]:
    """The paths listed in the README's repository map."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Repository map", 1)[1]
    return re.findall(r"^\| `([^`]+)` \|", section, re.M)


def test_readme_map_matches_the_tree() -> None:
    listed = readme_map()
    missing_on_disk = [p for p in listed if not (ROOT / p).exists()]
    assert not missing_on_disk, f"README lists paths that do not exist: {missing_on_disk}"
    top = {p.relative_to(ROOT).parts[0] for p in tracked_files()}
    unlisted = sorted(t for t in top
                      if not t.startswith(".") and t != "README.md"
                      and t.rstrip("/") not in {p.rstrip("/") for p in listed})
    assert not unlisted, f"README's map lacks {unlisted}"


def test_readme_is_short_and_starts_with_install() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 160
    first_screen = "\n".join(text.splitlines()[:15])
    assert "pip install" in first_screen
    assert not re.search(r"\bissue \d+|notes/" + "issue", text), "no session history in README"


def test_readme_first_example_runs(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(example)
    import sys
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "StatusCode.OK" in out.stdout
