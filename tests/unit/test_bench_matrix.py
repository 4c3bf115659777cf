"""The TOML matrix format: built-ins, the cartesian product, and clear errors."""
from __future__ import annotations

import pytest

from triple_py.bench.errors import ConfigError
from triple_py.bench.spec.matrix import BUILTIN, load_matrix, parse_matrix

BASE = """
arms = ["stream-path", "fastpath"]
[scenarios]
payload = [128]
concurrency = [50]
"""


def test_seed_unary_is_the_seeds_table():
    m = load_matrix("seed-unary")
    assert [s.payload for s in m.scenarios] == [128, 128, 1024, 1024, 16384, 16384,
                                                1048576, 1048576]
    assert [s.concurrency for s in m.scenarios] == [50, 100] * 4
    assert [a.name for a in m.arms] == ["stream-path", "fastpath", "grpcio-sync",
                                        "grpcio-aio", "h2load"]
    assert m.baseline == "stream-path" and m.rounds == 3 and m.duration == 3.0
    assert [m.label(s) for s in m.scenarios][:2] == ["128B/c50", "128B/c100"]
    assert m.label(m.scenarios[-1]) == "1MiB/c100"


def test_seed_stream_is_the_004_matrix():
    m = load_matrix("seed-stream")
    assert {(s.payload, s.stream_messages, s.concurrency) for s in m.scenarios} == {
        (128, 128, 32), (128, 128, 128), (128, 512, 32), (128, 512, 128)}
    arms = {a.name: a for a in m.arms}
    assert arms["writer-off"].mode == "bidi" and arms["writer-off"].overrides == {
        "write_buffer_size": 0}
    assert arms["writer-on"].overrides["write_buffer_size"] == 32768
    assert arms["grpcio-aio"].mode == "grpcio-aio-bidi"
    assert m.baseline == "writer-off"
    assert m.label(m.scenarios[0]) == "128B/m128/c32"
    spec = m.spec(m.scenarios[0], arms["writer-off"], "127.0.0.1:1")
    assert spec.write_buffer_size == 0 and spec.stream_messages == 128
    assert spec.resolved_method() == "/benchmark.BenchmarkService/StreamCall"


def test_seed_unary_py_flips_the_channel_option():
    m = load_matrix("seed-unary-py")
    assert [(s.payload, s.concurrency) for s in m.scenarios] == [
        (p, c) for p in (128, 1024, 16384, 1048576) for c in (50, 100)]
    arms = {a.name: a for a in m.arms}
    assert list(arms) == ["py-stream-path", "py-fastpath"] and m.baseline == "py-stream-path"
    for name, switch in (("py-stream-path", False), ("py-fastpath", True)):
        spec = m.spec(m.scenarios[0], arms[name], "127.0.0.1:1")
        assert spec.mode == "triple-py-sync" and spec.options == {"unary_fast_path": switch}


def test_concurrency_sweep_compares_the_two_drivers_with_h2load():
    m = load_matrix("concurrency-sweep")
    assert [s.concurrency for s in m.scenarios] == [1, 10, 100, 1000]
    assert {s.payload for s in m.scenarios} == {128} and m.baseline == "h2load"
    arms = {a.name: a for a in m.arms}
    assert list(arms) == ["fastpath", "fastpath-threads", "h2load"]
    threads = m.spec(m.scenarios[0], arms["fastpath-threads"], "127.0.0.1:1")
    assert threads.mode == "fastpath" and threads.options == {"driver_threads": True}
    assert m.spec(m.scenarios[0], arms["fastpath"], "127.0.0.1:1").options == {}


def test_cartesian_product_and_optional_axes():
    m = parse_matrix("""
name = "x"
duration = "500ms"
warmup = 0
mode = ["fastpath", "stream_path"]
[scenarios]
payload = ["1KiB", 16]
concurrency = [4, 8]
connections = [1, 2]
rate = [0, 1000]
""")
    assert len(m.scenarios) == 2 * 2 * 2 * 2
    assert [a.name for a in m.arms] == ["fastpath", "stream-path"]
    assert m.duration == 0.5 and m.warmup == 0.0
    labels = {m.label(s) for s in m.scenarios}
    assert "1KiB/c8/conn2/rps1000" in labels and "16B/c4" in labels


def test_inline_table_and_named_arms():
    m = parse_matrix("""
arms = ["fastpath", {name = "nobuf", mode = "bidi", write_buffer_size = 0}, "mine"]
[arm.mine]
mode = "triple-py-bidi"
threads = 4
[scenarios]
payload = 128
concurrency = 8
""")
    assert [(a.name, a.mode) for a in m.arms] == [
        ("fastpath", "fastpath"), ("nobuf", "bidi"), ("mine", "triple-py-bidi")]
    assert m.spec(m.scenarios[0], m.arm("mine"), "h:1").options == {"threads": 4}


def test_overrides_from_the_command_line():
    m = load_matrix("seed-unary").with_overrides(rounds=2, duration=1.0, arms=["fastpath",
                                                                              "h2load"],
                                                  payloads=[128], concurrency=[10])
    assert m.rounds == 2 and m.duration == 1.0
    assert [a.name for a in m.arms] == ["fastpath", "h2load"]
    assert m.baseline == "fastpath"  # the old baseline was dropped
    assert [(s.payload, s.concurrency) for s in m.scenarios] == [(128, 10)]


@pytest.mark.parametrize("text, message", [
    ("arms = [", "bad TOML"),
    ("colour = 1\n" + BASE, "unknown key 'colour'"),
    (BASE + "colour = [1]\n", "unknown scenario axis 'colour'"),
    (BASE.replace("payload", "size"), "unknown scenario axis 'size'"),
    (BASE.replace('"fastpath"', '"warp-drive"'), "unknown arm 'warp-drive'"),
    (BASE.replace('"fastpath"', '{mode = "warp"}'), "unknown mode 'warp'"),
    ('baseline = "h2load"\n' + BASE, "baseline 'h2load' is not an arm"),
    (BASE.replace('"fastpath"', '"stream-path"'), "listed twice"),
    (BASE.replace('"fastpath"', '{name = "fast-2", mode = "fastpath"}'), "bad arm name"),
    (BASE.replace("payload = [128]\n", ""), "needs payload and concurrency"),
    (BASE.replace("[128]", '["lots"]'), "bad payload size 'lots'"),
    (BASE.replace("[50]", "[0]"), "scenarios.concurrency: bad value 0"),
    ('rounds = "three"\n' + BASE, "rounds must be an integer"),
    ('duration = "forever"\n' + BASE, "bad duration 'forever'"),
    (BASE + "rate = [100]\n", ""),  # rate is fine for C arms...
    ('arms = ["grpcio-aio"]\n[scenarios]\npayload=[1]\nconcurrency=[1]\nrate=[100]\n',
     "has no open loop"),  # ...but not for the reference arms, caught before any run
    ('arms = ["fastpath"]\n[scenarios]\npayload=[1]\nconcurrency=[3]\nconnections=[2]\n',
     "not a multiple of connections"),
    ('arms = []\n[scenarios]\npayload=[1]\nconcurrency=[1]\n', "no arms"),
    ('wire = "triple"\n' + BASE, ""),
    ('wire = "triple"\narms = ["h2load"]\n[scenarios]\npayload=[1]\nconcurrency=[1]\n',
     "h2load arm speaks only the grpc wire"),
    ('wire = "triple"\narms = ["fastpath"]\n[scenarios]\npayload=[1]\nconcurrency=[1]\n', ""),
    ('wire = "triple"\narms = [{name = "f", mode = "fastpath", dialect = "java"}]\n'
     '[scenarios]\npayload=[1]\nconcurrency=[1]\n', "dialect must be one of"),
    (BASE + "[arm.x]\nmode = 'fastpath'\nspeed = 2\n", "unknown key 'speed'"),
])
def test_bad_matrices_give_one_clear_error(text, message):
    if not message:
        parse_matrix(text)
        return
    with pytest.raises(ConfigError) as info:
        parse_matrix(text, source="m.toml")
    text_of_error = str(info.value)
    assert text_of_error.startswith("m.toml: ") and message in text_of_error
    assert "\n" not in text_of_error


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match="no such matrix file"):
        load_matrix(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="bad.toml: cannot read"):
        load_matrix(bad)
    good = tmp_path / "good.toml"
    good.write_text(BASE)
    assert load_matrix(good).name == "good"


def test_builtins_are_valid_examples_of_the_format():
    for name, text in BUILTIN.items():
        assert parse_matrix(text).name == name


def _toml_blocks(text: str, fence: str):
    import textwrap
    if fence == "rst":  # the indented block after "::" in a docstring
        block = text.split("::\n\n", 1)[1].split("\n\n``arms``", 1)[0]
        return [textwrap.dedent(block)]
    return [b.split("```", 1)[0] for b in text.split("```toml\n")[1:]]


@pytest.mark.checkout("docs/benchmarking.md")
def test_documented_examples_parse():
    from pathlib import Path

    import triple_py.bench.spec.matrix as module

    (doc_example,) = _toml_blocks(module.__doc__, "rst")
    m = parse_matrix(doc_example)
    assert m.name == "unary-sizes" and len(m.scenarios) == 8 and len(m.arms) == 5
    guide = Path(__file__).resolve().parents[2] / "docs" / "benchmarking.md"
    blocks = _toml_blocks(guide.read_text(), "md")
    assert blocks
    for block in blocks:
        assert parse_matrix(block).arms
