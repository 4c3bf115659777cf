"""The benchmark text fuzzer (tests/fuzz/fuzz_benchtext.py) finds and keeps a crash, and the
corpus it ships runs clean through the benchstat pipeline."""
from __future__ import annotations

import importlib.util
from pathlib import Path

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"  # tests/fuzz/, wherever tests/ is
CORPUS = FUZZ / "corpus" / "benchtext"


def load_fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_benchtext", FUZZ / "fuzz_benchtext.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_corpus_runs_clean():
    fuzzer = load_fuzzer()
    for path in sorted(CORPUS.iterdir()):
        lines, crash = fuzzer.traced(path.read_bytes())
        assert crash is None, (path.name, crash)
        assert lines  # the parser's lines were traced


def test_a_crash_is_saved_and_fails_the_run(tmp_path, monkeypatch, capsys):
    fuzzer = load_fuzzer()
    real = fuzzer.run_one

    def fragile(data: bytes) -> None:
        if b"boom" in data:
            raise IndexError("planted")
        real(data)

    monkeypatch.setattr(fuzzer, "run_one", fragile)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "a").write_bytes(b"BenchmarkX 1 2 ns/op\n")
    (seeds / "b").write_bytes(b"boom")
    work = tmp_path / "fuzz" / "benchtext"
    assert fuzzer.main(["-max_total_time=0.2", "-seed=3", str(work), str(seeds)]) == 1
    crashes = sorted(p.name for p in work.parent.iterdir() if p.name.startswith("benchtext-crash-"))
    assert len(crashes) == 2  # the input and its traceback
    assert "planted" in (work.parent / [c for c in crashes if c.endswith(".txt")][0]).read_text()
    assert "stat::number_of_executed_units" in capsys.readouterr().out
