"""JSON inputs: the load harness's results and pytest-benchmark's ``--benchmark-json``.

Both are turned into the same :class:`~.parse.Result` records the Go
text format produces, so everything downstream (grouping, statistics,
output) is shared. See the package docstring for the accepted schemas.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Optional, Union

from .parse import BenchSyntaxError, ConfigEntry, Result, make_value

__all__ = ["looks_like_json", "read_json_results"]


def looks_like_json(data: bytes) -> bool:
    """True if the input is a JSON object (benchmark text never starts with ``{``)."""
    return data.lstrip()[:1] == b"{"


def _config_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _harness_results(doc: Dict[str, Any], file_name: str,
                     base_config: List[ConfigEntry]) -> Iterator[Union[Result, BenchSyntaxError]]:
    file_config = list(base_config)
    config = doc.get("config", {})
    if not isinstance(config, dict):
        yield BenchSyntaxError(file_name, 0, '"config" must be an object')
        config = {}
    for key, value in config.items():
        text = _config_text(value)
        if key and not key.startswith(".") and text:
            file_config.append(ConfigEntry(str(key), text, True))
    results = doc.get("results")
    if not isinstance(results, list):
        yield BenchSyntaxError(file_name, 0, '"results" must be a list')
        return
    for i, entry in enumerate(results, start=1):
        where = "results[%d]" % (i - 1)
        if not isinstance(entry, dict):
            yield BenchSyntaxError(file_name, i, where + ": expected an object")
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            yield BenchSyntaxError(file_name, i, where + ": missing name")
            continue
        if name.startswith("Benchmark"):
            name = name[len("Benchmark"):]
        unit_values = entry.get("unit_values")
        if not isinstance(unit_values, dict) or not unit_values:
            yield BenchSyntaxError(file_name, i, where + ": missing measurements")
            continue
        values = []
        bad = None
        for unit, raw in unit_values.items():
            number = _number(raw)
            if number is None:
                bad = "%s: parsing measurement: invalid syntax (%s)" % (where, unit)
                break
            if not unit:
                bad = where + ": missing units"
                break
            values.append(make_value(number, unit))
        if bad:
            yield BenchSyntaxError(file_name, i, bad)
            continue
        iters = entry.get("iters", 1)
        if isinstance(iters, bool) or not isinstance(iters, int):
            yield BenchSyntaxError(file_name, i, where + ": parsing iteration count: invalid syntax")
            continue
        entry_config = [ConfigEntry(c.key, c.value, c.file) for c in file_config]
        arm = entry.get("arm")
        if arm is not None and _config_text(arm):
            entry_config = [c for c in entry_config if c.key != "arm"]
            entry_config.append(ConfigEntry("arm", _config_text(arm), True))
        yield Result(entry_config, name, iters, values, file_name, i)


def _pytest_benchmark_name(bench: Dict[str, Any]) -> str:
    name = str(bench.get("name") or bench.get("fullname") or "")
    params = bench.get("params")
    if isinstance(params, dict) and params:
        base = name.split("[", 1)[0]
        return base + "".join("/%s=%s" % (k, _config_text(v)) for k, v in params.items())
    return name


def _pytest_benchmark_results(doc: Dict[str, Any], file_name: str,
                              base_config: List[ConfigEntry]) -> Iterator[Union[Result, BenchSyntaxError]]:
    for i, bench in enumerate(doc.get("benchmarks", []), start=1):
        where = "benchmarks[%d]" % (i - 1)
        if not isinstance(bench, dict):
            yield BenchSyntaxError(file_name, i, where + ": expected an object")
            continue
        name = _pytest_benchmark_name(bench)
        stats = bench.get("stats")
        data = stats.get("data") if isinstance(stats, dict) else None
        if not name:
            yield BenchSyntaxError(file_name, i, where + ": missing name")
            continue
        if not isinstance(data, list) or not data:
            yield BenchSyntaxError(file_name, i, "%s (%s): no per-round timings; rerun pytest with "
                                                 "--benchmark-save-data" % (where, name))
            continue
        iters = stats.get("iterations", 1) if isinstance(stats, dict) else 1
        iters = iters if isinstance(iters, int) and not isinstance(iters, bool) else 1
        for raw in data:
            number = _number(raw)
            if number is None:
                yield BenchSyntaxError(file_name, i, "%s (%s): parsing measurement: invalid syntax"
                                       % (where, name))
                continue
            config = [ConfigEntry(c.key, c.value, c.file) for c in base_config]
            yield Result(config, name, iters, [make_value(number, "sec/op")], file_name, i)


def read_json_results(data: bytes, file_name: str,
                      label: str) -> Iterator[Union[Result, BenchSyntaxError]]:
    """Results from a harness or pytest-benchmark JSON document.

    Errors are reported like text-format syntax errors, with the
    1-based entry number in place of the line number.
    """
    base_config = [ConfigEntry(".file", label, False)]
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        yield BenchSyntaxError(file_name, getattr(err, "lineno", 0), "invalid JSON: %s" % err)
        return
    if isinstance(doc, dict) and "results" in doc:
        yield from _harness_results(doc, file_name, base_config)
    elif isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list):
        yield from _pytest_benchmark_results(doc, file_name, base_config)
    else:
        yield BenchSyntaxError(file_name, 0, 'unrecognized JSON input: expected a "results" '
                                             '(load harness) or "benchmarks" (pytest-benchmark) list')
