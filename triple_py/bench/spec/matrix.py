'''Benchmark matrices: scenarios x arms x rounds, described in TOML.

A matrix is every combination of the ``[scenarios]`` lists (the cartesian product), and in
each scenario every arm, repeated ``rounds`` times. Rounds interleave the arms and reverse
their order every other round; all arms of a round run against the same server.

The format (every key but ``arms``/``mode`` and ``[scenarios]`` is optional)::

    # my_matrix.toml: python -m triple_py.bench matrix my_matrix.toml
    name = "unary-sizes"        # results directory name (default: the file name)
    description = "fast path vs stream path"
    benchmark = "Unary"         # Go benchmark name: BenchmarkUnary/<scenario>/<arm>-<ncpu>
    baseline = "stream-path"    # the arm the others are compared with (default: the first)
    rounds = 3                  # default 3
    duration = "3s"             # measured per arm and round: seconds or "500ms", "3s", "1m"
    warmup = "0.5s"             # excluded from the figures (default 0.5 s)
    timeout = "10s"             # per call (default 10 s)
    verify = false              # true: every arm compares each response with its
                                # request (an echo server; h2load cannot); default:
                                # the status only, as h2load and ghz (an arm key too)
    restart_server = false      # a new embedded server every round (default false)
    method = "/benchmark.BenchmarkService/UnaryCall"  # default: UnaryCall, StreamCall for bidi
    wire = "grpc"               # "grpc" (default) or "triple" (the C arms fastpath,
                                # stream-path, bidi (streams gRPC-framed, as Triple
                                # frames them), and triple-py-sync, triple-py-aio)
    arms = ["stream-path", "fastpath", "grpcio-sync", "grpcio-aio", "h2load"]
    compare = [["fastpath", "stream-path"], ["fastpath", "h2load"]]
                                # the headline comparisons [arm, over arm], each given a
                                # verdict (default: every arm over the baseline)
    call = {data = '{"payload": "{{randomString 8}}"}', metadata = '{"x-k": "v"}'}
    capacity = {slo = "p99=5ms", start_rate = 1000}
                                # after each scenario's rounds, the highest open-loop rate
                                # meeting the SLO, per open-loop arm (see .matrix_capacity)
                                # any service (run's ghz flags, CallSetup's keys: proto,
                                # import_paths, protoset, data, data_file, binary_file,
                                # metadata, metadata_file, ring_size, authority,
                                # compression, tls, cacert, cert, key, cname, insecure);
                                # an arm's call table overrides these key by key

    [scenarios]                 # each list is an axis; a single value is a one-value axis
    payload = [128, "1KiB", "16KiB", "1MiB"]   # bytes, or with B / KiB / MiB
    concurrency = [50, 100]     # calls (streams) in flight in total
    connections = [1]           # HTTP/2 connections; concurrency is spread over them
    stream_messages = [1]       # K, messages each way per stream (bidi kinds only)
    rate = [0]                  # open loop calls/s (C kinds only); 0: closed loop
    write_buffer_size = [65536] # C core coalescing writer watermark; 0: off
    channel.stream_window = ["1MiB"]  # any channel option of the core, by its
                                # name in _triple.CHANNEL_OPTIONS (our client's arms)
    series_digits = [3]         # any other keyword of the C load generator, by its
                                # name in _triple.LOAD_OPTIONS (C kinds)

    [arm.writer-off]            # a named arm: a kind plus overrides
    mode = "bidi"               # the arm kind (see triple_py.bench.arms)
    write_buffer_size = 0       # also: method, wire, write_buffer_delay_us, timeout,
                                # shared_request (C kinds; default true: one
                                # request packed per thread; false packs every
                                # call's request anew), threads (triple-py-bidi),
                                # latency_log (h2load: percentiles, but slower),
                                # minimal_headers (h2load: content-type and te only),
                                # driver_threads (C unary kinds: drive the loop
                                # from a thread of its own, not the I/O thread),
                                # unary_fast_path (triple-py-sync: false sends each
                                # call through the streaming machinery),
                                # dialect (wire = "triple": auto | go | spec, the
                                # triple.dialect headers), channel.NAME and load
                                # keywords as in [scenarios] (one value)

``arms`` lists arm kinds (``fastpath``, ``grpcio-aio``...: the arm is named after its kind)
and names defined in ``[arm.<name>]`` tables; an entry may also be an inline table
``{name = "writer-off", mode = "bidi", write_buffer_size = 0}``. Without ``arms``, the
``[arm.*]`` tables in file order are the arms. ``mode = [...]`` (at the top level or in
``[scenarios]``) is a synonym of ``arms`` for plain kinds: the modes are then the arms,
the last axis of the product. Arm names are letters, digits, ``.``, ``_`` and ``-`` and
must not end in ``-<digits>`` (Go's GOMAXPROCS suffix).

The scenario label in the outputs joins the axes that matter: ``128B/c50``, ``128B/m512/c32``
(``m``: stream messages, shown when an arm streams), ``/conn4`` (connections other than 1),
``/rps2000`` (open loop), ``/wb0`` (a write_buffer_size axis), ``/stream_window=65535``
(a knob axis).

Knobs (:mod:`.knobs`): ``channel.NAME`` is the channel option ``NAME`` of the core's table
(``_triple.CHANNEL_OPTIONS``; a ``channel = {...}`` table is the same), and a key named
like a keyword of ``_triple.LOAD_OPTIONS`` that the harness does not set itself is that
load keyword; each value is checked against its row (type, range, choices), so a row
added to either table is a key here without an edit of this module. An axis of them
reaches the arms that take it (channel options: the C kinds, and the triple-py kinds for
the options with a key; load keywords: the C kinds); an arm's key must suit its kind.
The CSV, the entries of results.json (``knobs``) and the frames get a column per knob
given, named as the key (``channel.stream_window``, ``series_digits``).

Built-in matrices: ``headline`` (what ``make bench`` runs), ``seed-unary``, ``seed-unary-py``,
``seed-stream`` and ``concurrency-sweep``: TOML files in ``triple_py/bench/spec/matrices/``,
shipped with the package (see BUILTIN; ``python -m triple_py.bench matrix --show
seed-unary`` prints one).
'''
from __future__ import annotations

import dataclasses
import itertools
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import ConfigError
from ..units import format_size, parse_duration, parse_size
from ..workload.call_setup import CallSetup
from .capacity import CapacitySpec, parse_capacity
from .kinds import KINDS, canonical_mode, kind_of
from .knobs import (CHANNEL, check_channel, check_knob, flat_knobs, free_load_names,
                    knob_dicts, knob_from_text)
from .run_spec import WIRES, WRITE_BUFFER_DELAY_US, WRITE_BUFFER_SIZE, RunSpec, takes_knob

__all__ = ["Matrix", "ArmSpec", "Scenario", "BUILTIN", "load_matrix", "parse_matrix",
           "matrix_from_dict", "round_order", "AXES"]

#: Where the built-in matrices are: one TOML file each, shipped as package data.
_BUILTIN_DIR = "matrices"


class _Builtins(Mapping[str, str]):
    """The built-in matrices by name (the file name without ``.toml``): their TOML text,
    read from the package on use."""

    def _names(self) -> List[str]:
        return sorted(entry.name[:-len(".toml")] for entry in
                      resources.files(__package__).joinpath(_BUILTIN_DIR).iterdir()
                      if entry.name.endswith(".toml"))

    def __getitem__(self, name: str) -> str:
        if not isinstance(name, str) or name not in self._names():
            raise KeyError(name)
        entry = resources.files(__package__).joinpath(_BUILTIN_DIR, f"{name}.toml")
        return entry.read_text(encoding="utf-8")

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._names()

    def __repr__(self) -> str:
        return f"<built-in matrices: {', '.join(self._names())}>"


#: Built-in matrices by name: TOML text in the documented format (the files in
#: ``triple_py/bench/spec/matrices/``).
BUILTIN: Mapping[str, str] = _Builtins()

#: Scenario axes and their defaults.
AXES = ("payload", "concurrency", "connections", "stream_messages", "rate",
        "write_buffer_size")
_TOP_KEYS = {"name", "description", "benchmark", "baseline", "rounds", "duration", "warmup",
             "timeout", "restart_server", "method", "wire", "arms", "mode", "scenarios", "arm",
             "compare", "call", "capacity", "verify"}
_ARM_KEYS = {"name", "mode", "method", "wire", "write_buffer_size", "write_buffer_delay_us",
             "timeout", "shared_request", "threads", "latency_log", "driver_threads",
             "minimal_headers", "unary_fast_path", "dialect", "call", "verify"}
# The keys that go to RunSpec.options.
_OPTION_KEYS = ("threads", "latency_log", "driver_threads", "minimal_headers",
                "unary_fast_path", "dialect")
_ARM_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*")
_BENCH_NAME = re.compile(r"[A-Za-z0-9_]+")


@dataclasses.dataclass
class ArmSpec:
    """One arm of a matrix: a name, a kind, and settings that override the scenario's."""

    name: str
    mode: str
    overrides: Dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ours(self) -> bool:
        """True for our client's arms (the C core's counters are reported)."""
        return kind_of(self.mode).ours


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One combination of the axes."""

    payload: int = 128
    concurrency: int = 50
    connections: int = 1
    stream_messages: int = 1
    rate: float = 0.0
    write_buffer_size: Optional[int] = None  # None: the arm's (or the core's) default
    # Knob axes: ((flat name, value), ...), channel options (``channel.NAME``) and load
    # keywords by the core's tables (:mod:`.knobs`), in the order of the file.
    knobs: Tuple[Tuple[str, Any], ...] = ()

    def label(self, streaming: bool = False, show_write_buffer: bool = False) -> str:
        """``128B/c50``, ``128B/m512/c32``, ``1KiB/c100/conn4/rps2000``..."""
        parts = [format_size(self.payload)]
        if streaming:
            parts.append(f"m{self.stream_messages}")
        parts.append(f"c{self.concurrency}")
        if self.connections != 1:
            parts.append(f"conn{self.connections}")
        if self.rate:
            parts.append(f"rps{self.rate:g}")
        if show_write_buffer and self.write_buffer_size is not None:
            parts.append(f"wb{self.write_buffer_size}")
        parts.extend(f"{key.removeprefix(CHANNEL)}={_shown(value)}" for key, value in self.knobs)
        return "/".join(parts)

    def to_dict(self) -> Dict[str, Any]:
        """The axes as a dict (knob axes by their flat names)."""
        d = dataclasses.asdict(self)
        del d["knobs"]
        d.update(self.knobs)
        return d


@dataclasses.dataclass
class Matrix:
    """A parsed, validated matrix (see the module docstring for the file format)."""

    name: str
    arms: List[ArmSpec]
    scenarios: List[Scenario]
    benchmark: str = "Bench"
    baseline: str = ""
    description: str = ""
    rounds: int = 3
    duration: float = 3.0
    warmup: float = 0.5
    timeout: float = 10.0
    verify: bool = False  # every arm compares each response with its request
    restart_server: bool = False
    method: Optional[str] = None
    wire: str = "grpc"
    source: str = ""
    axes_given: Sequence[str] = ()
    compare: List[Tuple[str, str]] = dataclasses.field(default_factory=list)
    call: Dict[str, Any] = dataclasses.field(default_factory=dict)
    capacity: Optional[CapacitySpec] = None  # [capacity]: a search per scenario and arm

    def call_setup(self, arm: ArmSpec) -> Optional[CallSetup]:
        """The arm's call options (the matrix's, overridden key by key by the arm's), or None
        when neither gives any (the BenchmarkRequest of the payload axis)."""
        merged = {**self.call, **arm.overrides.get("call", {})}
        return CallSetup.from_dict(merged) if merged else None

    @property
    def streaming(self) -> bool:
        """True when an arm streams (scenario labels then show K)."""
        return any(kind_of(a.mode).streaming for a in self.arms)

    def label(self, scenario: Scenario) -> str:
        """The scenario's label in tables and benchmark names."""
        return scenario.label(self.streaming, "write_buffer_size" in self.axes_given)

    def arm(self, name: str) -> ArmSpec:
        """The arm called ``name`` (KeyError if none)."""
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise KeyError(name)

    def spec(self, scenario: Scenario, arm: ArmSpec, target: str) -> RunSpec:
        """The RunSpec of one arm in one scenario."""
        o = arm.overrides
        write_buffer = o.get("write_buffer_size", scenario.write_buffer_size)
        spec = RunSpec(
            arm=arm.name, mode=arm.mode, target=target, method=o.get("method", self.method),
            payload_size=scenario.payload, concurrency=scenario.concurrency,
            connections=scenario.connections, duration=self.duration, warmup=self.warmup,
            rate=scenario.rate or None, stream_messages=scenario.stream_messages,
            write_buffer_size=WRITE_BUFFER_SIZE if write_buffer is None else write_buffer,
            write_buffer_delay_us=o.get("write_buffer_delay_us", WRITE_BUFFER_DELAY_US),
            timeout=o.get("timeout", self.timeout), wire=o.get("wire", self.wire),
            shared_request=o.get("shared_request", True), verify=o.get("verify", self.verify),
            options={k: o[k] for k in _OPTION_KEYS if k in o})
        spec.channel, spec.load = knob_dicts(self.knobs(scenario, arm))
        spec.__post_init__()  # a channel option that is a field of its own goes there
        return spec

    def knobs(self, scenario: Scenario, arm: ArmSpec) -> Dict[str, Any]:
        """The knobs of one arm in one scenario by their flat names (``channel.NAME``,
        load keywords): the scenario's axes that the arm takes (a grpcio arm has no
        channel options of ours), overridden by the arm's own settings."""
        axes = {k: v for k, v in scenario.knobs if takes_knob(arm.mode, k)}
        return {**axes, **flat_knobs(arm.overrides)}

    def with_overrides(self, *, rounds: Optional[int] = None, duration: Optional[float] = None,
                       warmup: Optional[float] = None, timeout: Optional[float] = None,
                       verify: Optional[bool] = None, restart_server: Optional[bool] = None,
                       arms: Optional[Sequence[str]] = None, baseline: Optional[str] = None,
                       payloads: Optional[Sequence[int]] = None,
                       concurrency: Optional[Sequence[int]] = None) -> "Matrix":
        """A copy with command-line overrides applied (and re-validated)."""
        m = dataclasses.replace(self)
        if rounds is not None:
            m.rounds = rounds
        if duration is not None:
            m.duration = duration
        if warmup is not None:
            m.warmup = warmup
        if timeout is not None:
            m.timeout = timeout
        if verify is not None:
            m.verify = verify
        if restart_server is not None:
            m.restart_server = restart_server
        if arms is not None:
            chosen = []
            for name in arms:
                try:
                    chosen.append(self.arm(name))
                except KeyError:
                    raise ConfigError(f"--arms: no arm {name!r} in {self.name} (its arms: "
                                      f"{', '.join(a.name for a in self.arms)})") from None
            m.arms = chosen
            m.compare = [(a, b) for a, b in self.compare if a in arms and b in arms]
            if m.capacity is not None:
                kept = tuple(a for a in m.capacity.arms if a in arms)
                m.capacity = dataclasses.replace(m.capacity, arms=kept) if kept else None
            if baseline is None and self.baseline not in arms:
                m.baseline = chosen[0].name
        if baseline is not None:
            m.baseline = baseline
        if payloads is not None or concurrency is not None:
            seen = []
            for s in self.scenarios:
                p = list(payloads) if payloads is not None else [s.payload]
                c = list(concurrency) if concurrency is not None else [s.concurrency]
                for pv, cv in itertools.product(p, c):
                    new = dataclasses.replace(s, payload=pv, concurrency=cv)
                    if new not in seen:
                        seen.append(new)
            m.scenarios = seen
        _check(m)
        return m

    def to_dict(self) -> Dict[str, Any]:
        """The matrix as plain data (for the results JSON)."""
        return {"name": self.name, "description": self.description,
                "benchmark": self.benchmark, "baseline": self.baseline, "rounds": self.rounds,
                "duration": self.duration, "warmup": self.warmup, "timeout": self.timeout,
                # only when set: a document from before the key reads back the same
                **({"verify": True} if self.verify else {}),
                "restart_server": self.restart_server, "method": self.method,
                "wire": self.wire, "source": self.source,
                "compare": [list(pair) for pair in self.compare],
                "capacity": self.capacity.to_dict() if self.capacity is not None else None,
                "arms": [{"name": a.name, "mode": a.mode, **a.overrides} for a in self.arms],
                "scenarios": [dict(s.to_dict(), label=self.label(s)) for s in self.scenarios]}


def round_order(arms: Sequence[str], round_index: int) -> List[str]:
    """The arms' order in round ``round_index`` (0-based): as given, reversed every other."""
    return list(arms) if round_index % 2 == 0 else list(reversed(arms))


# -- parsing ----------------------------------------------------------------------------------


def load_matrix(source: Union[str, Path]) -> Matrix:
    """A built-in matrix by name (``seed-unary``, ``seed-stream``) or a TOML file.

    Raises ConfigError, naming the file, for a missing file, bad TOML or a bad matrix.
    """
    text_source = str(source)
    if text_source in BUILTIN:
        return parse_matrix(BUILTIN[text_source], source=f"builtin:{text_source}",
                            default_name=text_source)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such matrix file (built-in matrices: "
                          f"{', '.join(BUILTIN)})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_matrix(text, source=str(path), default_name=path.stem)


def parse_matrix(text: str, source: str = "<matrix>", default_name: str = "matrix") -> Matrix:
    """Parses and validates matrix TOML; ConfigError (prefixed with ``source``) if bad."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: bad TOML: {exc}") from None
    try:
        return _build(doc, source, default_name)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


_SLO_TEXT = re.compile(r"p([0-9.]+) <= ([0-9.eE+-]+) ms")


def matrix_from_dict(data: Mapping[str, Any], where: str = "<results>") -> Matrix:
    """The inverse of :meth:`Matrix.to_dict`: a matrix as a results document recorded it,
    parsed and validated by the same rules as a matrix file, with the recorded scenario
    list (not a product of axes). ConfigError, prefixed with ``where``, if it is not a
    valid matrix."""
    try:
        if not isinstance(data, Mapping):
            raise ConfigError("the matrix is not a table")
        recorded = data.get("scenarios")
        if not isinstance(recorded, list) or not recorded or not all(
                isinstance(s, Mapping) for s in recorded):
            raise ConfigError("the matrix has no scenarios")
        doc: Dict[str, Any] = {k: data[k] for k in (
            "name", "description", "benchmark", "baseline", "rounds", "duration", "warmup",
            "timeout", "verify", "restart_server", "method", "wire", "compare")
            if data.get(k) is not None}
        doc["arms"] = [dict(a) for a in data.get("arms") or []]
        doc["scenarios"] = {axis: [recorded[0][axis]] for axis in AXES
                            if recorded[0].get(axis) is not None}
        capacity = data.get("capacity")
        if capacity is not None:
            capacity = {k: v for k, v in dict(capacity).items() if v is not None}
            slo = _SLO_TEXT.fullmatch(str(capacity.get("slo", "")))
            if slo:
                capacity["slo"] = f"p{slo.group(1)}={slo.group(2)}ms"
            doc["capacity"] = capacity
        matrix = _build(doc, str(data.get("source") or ""), str(data.get("name") or "matrix"))
        scenarios = [Scenario(**{axis: _axis_value(axis, s[axis]) for axis in AXES
                                 if s.get(axis) is not None},
                              knobs=tuple(flat_knobs(s).items())) for s in recorded]
        labels = [s.get("label") for s in recorded]
        matrix = dataclasses.replace(matrix, scenarios=scenarios, axes_given=tuple(AXES))
        if any(label != matrix.label(s) for label, s in zip(labels, scenarios)):
            matrix.axes_given = tuple(a for a in AXES if a != "write_buffer_size")
        _check(matrix)
        return matrix
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _build(doc: Mapping[str, Any], source: str, default_name: str) -> Matrix:
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_TOP_KEYS))})")
    scenarios_doc = doc.get("scenarios", {})
    if not isinstance(scenarios_doc, dict):
        raise ConfigError("[scenarios] must be a table of lists")
    scenarios_doc = dict(scenarios_doc)
    modes = scenarios_doc.pop("mode", None)
    if modes is not None and "mode" in doc:
        raise ConfigError("give mode either at the top level or in [scenarios], not both")
    modes = doc.get("mode", modes)
    _channel_table(scenarios_doc, "scenarios.channel")
    knob_axes = flat_knobs(scenarios_doc)  # channel.NAME and load keywords (.knobs)
    scenarios_doc = {k: v for k, v in scenarios_doc.items()
                     if k != "channel" and k not in knob_axes}
    bad_axes = sorted(set(scenarios_doc) - set(AXES))
    if bad_axes:
        raise ConfigError(f"unknown scenario axis {bad_axes[0]!r} (known: {', '.join(AXES)}, "
                          f"mode, {CHANNEL}NAME for a channel option of the core, a load "
                          f"keyword: {', '.join(free_load_names())})")
    axes: Dict[str, List[Any]] = {}
    for axis in AXES:
        if axis not in scenarios_doc:
            continue
        values = scenarios_doc[axis]
        values = values if isinstance(values, list) else [values]
        if not values:
            raise ConfigError(f"scenarios.{axis} is empty")
        axes[axis] = [_axis_value(axis, v) for v in values]
    if "payload" not in axes or "concurrency" not in axes:
        raise ConfigError("[scenarios] needs payload and concurrency lists")
    for key, values in knob_axes.items():
        values = values if isinstance(values, list) else [values]
        if not values:
            raise ConfigError(f"scenarios.{key} is empty")
        axes[key] = [_knob_value(key, v, "scenarios.") for v in values]
    names = list(axes)
    scenarios = [Scenario(**{n: v for n, v in zip(names, combo) if n in AXES},
                          knobs=tuple((n, v) for n, v in zip(names, combo) if n not in AXES))
                 for combo in itertools.product(*(axes[n] for n in names))]

    arm_tables = doc.get("arm", {})
    if not isinstance(arm_tables, dict) or not all(isinstance(v, dict)
                                                   for v in arm_tables.values()):
        raise ConfigError("[arm.<name>] entries must be tables")
    entries = doc.get("arms")
    if entries is not None and modes is not None:
        raise ConfigError("give either arms or mode, not both")
    if entries is None:
        entries = modes if modes is not None else list(arm_tables)
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list) or not entries:
        raise ConfigError("no arms: give arms = [...] (arm kinds or [arm.<name>] names)")
    arms = [_arm(entry, arm_tables) for entry in entries]
    for name in arm_tables:  # unused tables are checked too: a typo should not pass silently
        _arm(name, arm_tables)

    benchmark = _string(doc, "benchmark", "Bench")
    if not _BENCH_NAME.fullmatch(benchmark):
        raise ConfigError(f"benchmark {benchmark!r} must be letters, digits and _")
    wire = _string(doc, "wire", "grpc")
    if wire not in WIRES:
        raise ConfigError(f"wire must be grpc or triple, not {wire!r}")
    rounds = doc.get("rounds", 3)
    if isinstance(rounds, bool) or not isinstance(rounds, int):
        raise ConfigError(f"rounds must be an integer, not {rounds!r}")
    restart = _flag(doc, "restart_server", "restart_server")
    verify = _flag(doc, "verify", "verify")
    matrix = Matrix(
        name=_string(doc, "name", default_name), arms=arms, scenarios=scenarios,
        benchmark=benchmark, baseline=_string(doc, "baseline", arms[0].name),
        description=_string(doc, "description", ""), rounds=rounds,
        duration=parse_duration(doc.get("duration", 3.0), "duration"),
        warmup=parse_duration(doc.get("warmup", 0.5), "warmup"),
        timeout=parse_duration(doc.get("timeout", 10.0), "timeout"), verify=verify,
        restart_server=restart, method=doc.get("method"), wire=wire, source=source,
        axes_given=tuple(names), compare=_pairs(doc.get("compare", [])),
        call=_call_table(doc.get("call", {}), "call"),
        capacity=parse_capacity(doc["capacity"], {a.name: a.mode for a in arms})
        if "capacity" in doc else None)
    if matrix.method is not None and not isinstance(matrix.method, str):
        raise ConfigError(f"method must be a string, not {matrix.method!r}")
    _check(matrix)
    return matrix


def _call_table(value: Any, where: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table of call options")
    return dict(value)


def _pairs(value: Any) -> List[Tuple[str, str]]:
    """``compare = [["a", "b"], ...]``: each a list of two arm names."""
    if not isinstance(value, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            for p in value):
        raise ConfigError(f"compare must be a list of [arm, over arm] pairs, not {value!r}")
    return [(a, b) for a, b in value]


def _flag(doc: Mapping[str, Any], key: str, where: str) -> bool:
    """``doc[key]`` (False when absent); ConfigError naming ``where`` unless a bool."""
    value = doc.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, not {value!r}")
    return value


def _string(doc: Mapping[str, Any], key: str, default: str) -> str:
    value = doc.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, not {value!r}")
    return value


def _axis_value(axis: str, value: Any) -> Any:
    if axis == "payload":
        return parse_size(value)
    if axis == "rate":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"scenarios.rate: bad value {value!r} (calls/s, 0: closed loop)")
        return float(value)
    if axis == "write_buffer_size":  # a channel option: its range is the core's row
        return check_channel(axis, parse_size(value) if isinstance(value, str) else value,
                             "scenarios.", shown=axis)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"scenarios.{axis}: bad value {value!r} (expected a positive integer)")
    return value


def _arm(entry: Any, tables: Mapping[str, Mapping[str, Any]]) -> ArmSpec:
    if isinstance(entry, str):
        if entry in tables:
            settings = dict(tables[entry])
            settings.setdefault("name", entry)
        else:
            try:
                kind = canonical_mode(entry)
            except ConfigError:
                raise ConfigError(f"unknown arm {entry!r}: not an arm kind (one of: "
                                  f"{', '.join(KINDS)}) nor an [arm.{entry}] table") from None
            settings = {"name": kind, "mode": kind}
    elif isinstance(entry, dict):
        settings = dict(entry)
        if "name" not in settings and "mode" in settings:
            settings["name"] = settings["mode"]
    else:
        raise ConfigError(f"bad arm {entry!r} (expected a name or a table)")
    _channel_table(settings, f"arm {settings.get('name')!r} key channel")
    knobs = flat_knobs(settings)  # channel.NAME and load keywords (.knobs)
    settings = {k: v for k, v in settings.items() if k != "channel" and k not in knobs}
    unknown = sorted(set(settings) - _ARM_KEYS)
    if unknown:
        raise ConfigError(f"arm {settings.get('name')!r}: unknown key {unknown[0]!r} "
                          f"(known: {', '.join(sorted(_ARM_KEYS))}, {CHANNEL}NAME for a "
                          f"channel option of the core, a load keyword: "
                          f"{', '.join(free_load_names())})")
    name = settings.pop("name")
    if not isinstance(name, str) or not _ARM_NAME.fullmatch(name) or \
            re.search(r"-\d+$", name):
        raise ConfigError(f"bad arm name {name!r} (letters, digits, . _ -; no -<digits> end)")
    mode = settings.pop("mode", None)
    if mode is None:
        raise ConfigError(f"arm {name!r} has no mode (an arm kind, e.g. fastpath or bidi)")
    try:
        mode = canonical_mode(mode)
    except ConfigError as exc:
        raise ConfigError(f"arm {name!r}: {exc}") from None
    _flag(settings, "verify", f"arm {name!r} verify")
    for key in ("timeout",):
        if key in settings:
            settings[key] = parse_duration(settings[key], f"arm {name!r} {key}")
    if "call" in settings:
        settings["call"] = _call_table(settings["call"], f"arm {name!r} call")
    if "write_buffer_size" in settings and isinstance(settings["write_buffer_size"], str):
        settings["write_buffer_size"] = parse_size(settings["write_buffer_size"])
    channel, load = knob_dicts({k: _knob_value(k, v, f"arm {name!r} key ")
                                for k, v in knobs.items()})
    if channel:
        settings["channel"] = channel
    settings.update(load)
    return ArmSpec(name, mode, settings)


def _channel_table(settings: Mapping[str, Any], where: str) -> None:
    if "channel" in settings and not isinstance(settings["channel"], dict):
        raise ConfigError(f"{where} must be a table of channel options "
                          f"(channel.NAME = value), not {settings['channel']!r}")


def _knob_value(key: str, value: Any, where: str) -> Any:
    """A knob's value from a matrix file, checked by its row (sizes as text too)."""
    if isinstance(value, str):
        return knob_from_text(key, value, where)
    return check_knob(key, value, where)


def _shown(value: Any) -> str:
    """A knob's value in a scenario label."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _check(m: Matrix) -> None:
    """Cross-field checks, and every (scenario, arm) spec validated before anything runs."""
    names = [a.name for a in m.arms]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"arm {dup!r} is listed twice")
    if m.baseline not in names:
        raise ConfigError(f"baseline {m.baseline!r} is not an arm (arms: {', '.join(names)})")
    for pair in m.compare:
        missing = [a for a in pair if a not in names]
        if missing or pair[0] == pair[1]:
            why = f"{missing[0]!r} is not an arm" if missing else "an arm against itself"
            raise ConfigError(f"compare {list(pair)}: {why} (arms: {', '.join(names)})")
    if not 1 <= m.rounds <= 1000:
        raise ConfigError(f"rounds must be 1..1000, not {m.rounds}")
    if m.duration <= 0:
        raise ConfigError("duration must be > 0 seconds")
    if not m.scenarios:
        raise ConfigError("no scenarios")
    for arm in m.arms:
        setup = m.call_setup(arm)
        if setup is not None:
            try:
                setup.check(m.spec(m.scenarios[0], arm, "127.0.0.1:1").resolved_method())
            except ConfigError as exc:
                raise ConfigError(f"arm {arm.name!r}: {exc}") from None
    for scenario in m.scenarios:
        for arm in m.arms:
            try:
                m.spec(scenario, arm, "127.0.0.1:1").validate()
            except ConfigError as exc:
                raise ConfigError(f"arm {arm.name!r} in scenario {m.label(scenario)}: "
                                  f"{exc}") from None
