"""The one table of channel options (csrc/tri_options.c, ``_triple.CHANNEL_OPTIONS``):
what Python, the bench harness and the docs take from it."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from triple_py import _triple, __version__
from triple_py._options import CORE_OPTIONS, ChannelOptions, core_default
from triple_py.bench import cli, spec

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_row_is_a_channel_option_with_its_default() -> None:
    defaults = ChannelOptions()
    fields = {f.name for f in dataclasses.fields(ChannelOptions)}
    for row in CORE_OPTIONS:
        if row.from_credentials:
            assert row.name not in fields
            continue
        expected = row.default if row.name != "user_agent" else f"{row.default}/{__version__}"
        assert getattr(defaults, row.name) == expected, row.name
    assert fields - {row.name for row in CORE_OPTIONS} == {
        "unary_fast_path", "lb_policy", "service_config", "enable_retries",
        "per_rpc_retry_buffer_size", "retry_buffer_size"}  # the Python layer's


def test_retry_buffer_sizes_are_read_and_checked() -> None:
    assert (ChannelOptions().per_rpc_retry_buffer_size,
            ChannelOptions().retry_buffer_size) == (256 << 10, 256 << 20)  # grpc core's
    o = ChannelOptions.from_pairs([("grpc.per_rpc_retry_buffer_size", 1000),
                                   ("grpc.retry_buffer_size", 5000)])
    assert (o.per_rpc_retry_buffer_size, o.retry_buffer_size) == (1000, 5000)
    with pytest.raises(ValueError, match="grpc.per_rpc_retry_buffer_size"):
        ChannelOptions.from_pairs([("grpc.per_rpc_retry_buffer_size", -1)])


def test_core_kwargs_are_the_rows_the_binding_takes() -> None:
    kwargs = ChannelOptions().core_kwargs()
    assert set(kwargs) == {r.name for r in CORE_OPTIONS if not r.from_credentials}
    _triple.Channel("127.0.0.1", "1", **kwargs).close()  # every keyword is accepted


@pytest.mark.parametrize("name, value, error, match", [
    ("max_frame_size", 1000, ValueError, r"max_frame_size must be in \[16384, 16777215\]"),
    ("write_buffer_size", 2**32, ValueError, r"write_buffer_size must be in"),
    ("stream_window", "1", TypeError, "must be an int"),
    ("wire", "http", ValueError, "unknown value 'http'"),
    ("codec", 7, TypeError, "must be a str"),
    ("root_certificates", 7, TypeError, "bytes-like"),
    ("no_such_option", 1, TypeError, "unexpected keyword argument 'no_such_option'"),
])
def test_the_binding_checks_each_row(name: str, value: object, error: type,
                                     match: str) -> None:
    with pytest.raises(error, match=match):
        _triple.Channel("127.0.0.1", "1", **{name: value})


def test_bench_defaults_are_the_cores() -> None:
    assert spec.RunSpec.write_buffer_size == core_default("write_buffer_size") == 32 * 1024
    assert spec.RunSpec.write_buffer_delay_us == core_default("write_buffer_delay_us")
    args = cli._parser().parse_args(["run"])
    assert args.write_buffer == core_default("write_buffer_size")


def _number(text: str) -> int | None:
    if text.strip() == "unlimited":
        return -1
    m = re.fullmatch(r"\s*(\d+)\s*(MiB)?\s*", text)
    return int(m.group(1)) << (20 if m.group(2) else 0) if m else None


def _stated(after: str) -> int | None:
    """The default the docs state right after an option key: "(default N, ...)",
    "(..., default N)", "(N)", ", N" or ", off by default"; None if it states none."""
    after = " ".join(after.split())
    paren = re.match(r"\s?\(([^()]*)\)", after)
    if paren:
        inner = paren.group(1)
        said = re.search(r"default ([^,]+)", inner)
        return _number(said.group(1)) if said else _number(inner)
    if after.startswith(", off by default"):
        return 0
    comma = re.match(r", (\d+)[;)]", after)
    return int(comma.group(1)) if comma else None


@pytest.mark.checkout("docs/")
def test_the_docs_state_the_cores_defaults() -> None:
    text = "\n".join(page.read_text() for page in sorted(DOCS.glob("*.md")))
    checked = 0
    for row in CORE_OPTIONS:
        if row.key is None or row.type not in ("int", "limit", "ms", "count"):
            continue
        for m in re.finditer(re.escape(f"`{row.key}`"), text):
            stated = _stated(text[m.end():m.end() + 80])
            if stated is not None:
                assert stated == row.default, (row.key, text[m.start():m.end() + 80])
                checked += 1
    assert checked >= 10
    run_signature = re.search(r"write_buffer_size=(\d+)", text)
    assert run_signature and int(run_signature.group(1)) == core_default("write_buffer_size")
