"""Command line: ``triple-bench run|matrix|capacity|report|list`` (or ``python -m
triple_py.bench``).

``run``     one scenario with ghz-like flags; prints a ghz-style summary.
``capacity`` the highest open-loop rate meeting a latency SLO (.capacity).
``matrix``  a TOML matrix file or a built-in one (seed-unary, seed-stream): scenarios x
            arms x interleaved rounds; summary tables on stdout, files in --out, then the
            benchstat comparison of the baseline arm with each other arm.
``report``  the report files of a saved results directory (summary.txt, results.csv,
            bench.txt, benchstat/, paired.csv, verdicts.txt, comparison.txt, report.html),
            made again from its results.json without running anything.
``list``    the arm kinds and the built-in matrices.

Exit status: 0 success; 1 the run went wrong (unreachable target, a method the server does
not implement, every call failed, or in a matrix an arm that failed or had errors); 2 bad
input (a flag value, a matrix file); 130 stopped by SIGINT (Ctrl-C), 143 by SIGTERM. Both
signals stop every arm within a second and keep what was measured: ``run`` prints and writes
the report of the calls made until then, ``matrix`` the arm runs it finished, ``capacity``
the probes it made. Errors are one line on stderr, never a traceback
(set TRIPLE_PY_BENCH_DEBUG=1 to see one for an internal error).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from .errors import BenchError, ConfigError
from .spec.kinds import KINDS
from .spec.matrix import BUILTIN
from .spec.knobs import channel_row, free_load_names, knob_dicts, parse_assignment
from .spec.run_spec import WIRES, WRITE_BUFFER_DELAY_US, WRITE_BUFFER_SIZE
from .units import parse_duration, parse_size

__all__ = ["main"]

PROG = "python -m triple_py.bench"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _arg(parse: Callable, what: str) -> Callable[[str], object]:
    def convert(text: str) -> object:
        try:
            return parse(text)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = what
    return convert


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"invalid integer {text!r}") from None
    if value < 1:
        raise ConfigError(f"must be >= 1, not {value}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"invalid integer {text!r}") from None
    if value < 0:
        raise ConfigError(f"must be >= 0, not {value}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"invalid rate {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"must be > 0 calls/s, not {text}")
    return value


def _list(item: Callable) -> Callable[[str], list]:
    def convert(text: str) -> list:
        parts = [p for p in text.replace(",", " ").split() if p]
        if not parts:
            raise ConfigError("empty list")
        return [item(p) for p in parts]
    return convert


def _ring_size(text: str) -> int:
    from .limits import load_limit

    value, most = _positive_int(text), int(load_limit("requests")[1])
    if value > most:
        raise ConfigError(f"must be at most {most} (the load generator's ring), not {value}")
    return value


DURATION = _arg(parse_duration, "duration")
SIZE = _arg(parse_size, "size")
POSITIVE = _arg(_positive_int, "positive integer")
NON_NEGATIVE = _arg(_non_negative_int, "integer")
RATE = _arg(_rate, "rate")
RING_SIZE = _arg(_ring_size, "ring size")


FORMATS = ("summary", "json", "csv", "html", "prometheus", "influx-summary", "influx-details",
           "gobench")

EXIT_STATUS = ("exit status: 0 success; 1 the run went wrong; 2 bad input; 130 stopped by "
               "SIGINT (Ctrl-C), 143 by SIGTERM: either stops within a second and prints and "
               "writes the report of what was measured until then")

VERIFY_HELP = ("every response must be its request's echo (compared; other bytes count as "
               "errors, status MISMATCH); default: the status only, as h2load and ghz check")
DASK_HELP = ("spread the load over a Dask cluster: a scheduler (tcp://host:8786) or local:N "
             "(N single-threaded worker processes here); C load generator arms only")


def _parser(prog: str = PROG) -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(prog=prog, description="Load runs and benchmark matrices for triple_py "
                                            "(the default target is the embedded echo server).",
                     epilog=EXIT_STATUS)
    parser.add_argument("--version", action="version", version=f"{prog} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{run,matrix,capacity,report,list}",
                                parser_class=_Parser)

    run = sub.add_parser("run", help="one scenario, ghz-like flags",
                         description="Run one scenario and print a ghz-style summary.",
                         epilog=EXIT_STATUS)
    run.add_argument("--call", metavar="METHOD",
                     help="pkg.Service/Method (default: BenchmarkService/UnaryCall, "
                          "StreamCall for bidi modes)")
    run.add_argument("-c", "--concurrency", type=POSITIVE, default=50,
                     help="calls (streams) in flight in total (50)")
    run.add_argument("--connections", type=POSITIVE, default=1,
                     help="HTTP/2 connections; concurrency is spread over them (1)")
    run.add_argument("-z", "--duration", type=DURATION, default=None,
                     help="measured time, e.g. 3s, 500ms (3s; with -n alone: none)")
    run.add_argument("--warmup", type=DURATION, default=0.5,
                     help="unmeasured warm-up first (0.5s)")
    run.add_argument("-n", "--total", type=NON_NEGATIVE, default=0,
                     help="measured calls in total (C modes and h2load)")
    run.add_argument("--rps", type=RATE, default=None,
                     help="open loop: calls/s in total (C modes; h2load: not CO-corrected)")
    run.add_argument("--payload", type=SIZE, default=128,
                     help="request payload: bytes, or 1KiB, 1MiB... (128)")
    run.add_argument("--mode", default="fastpath", metavar="KIND",
                     help="fastpath | stream-path | bidi | grpcio-sync | grpcio-aio | "
                          "grpcio-aio-bidi | h2load | h2load-bidi | triple-py-sync | triple-py-aio | "
                          "triple-py-bidi (fastpath)")
    run.add_argument("--target", metavar="TARGET",
                     help="server(s) to load: host:port, dns:, ipv4:a:p,b:p, ipv6:, unix:, "
                          "unix-abstract:, or a registered registry such as zookeeper:// "
                          "(default: start the embedded echo server)")
    run.add_argument("--wire", choices=WIRES, default="grpc",
                     help="wire protocol (grpc; triple: the C kinds fastpath, stream-path and "
                          "bidi, whose streams Triple frames as gRPC, and triple-py-sync, "
                          "triple-py-aio)")
    run.add_argument("--dialect", choices=channel_row("dialect").choices, default="auto",
                     help="Triple headers (triple.dialect): auto sends dubbo-go's and the "
                          "spec's (Java, dubbo-js); go or spec only one pair (auto)")
    run.add_argument("--stream-messages", type=POSITIVE, default=1,
                     help="K, messages each way per stream, bidi modes (1)")
    run.add_argument("--write-buffer", type=SIZE, default=WRITE_BUFFER_SIZE,
                     help=f"coalescing writer watermark in bytes, 0: off ({WRITE_BUFFER_SIZE})")
    run.add_argument("--write-buffer-delay", type=NON_NEGATIVE, default=WRITE_BUFFER_DELAY_US,
                     help=f"coalescing writer delay in µs ({WRITE_BUFFER_DELAY_US})")
    run.add_argument("-t", "--timeout", type=DURATION, default=10.0,
                     help="per-call deadline (10s)")
    run.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    run.add_argument("--json", metavar="OUT", type=Path,
                     help="write the result as JSON (benchstat's harness schema, "
                          "whole result and raw histograms included)")
    run.add_argument("--csv", metavar="OUT", type=Path, help="write a one-row tidy CSV")
    run.add_argument("--gobench", metavar="OUT", type=Path,
                     help="write a Go benchmark format line")
    run.add_argument("--no-check", action="store_true",
                     help="skip the test call that fails fast on a wrong target or method")
    run.add_argument("--dask", metavar="ADDRESS", help=DASK_HELP)
    run.add_argument("-O", "--format", choices=FORMATS, default="summary",
                     help="output format (summary); gobench: Go benchmark format")
    run.add_argument("-o", "--output", type=Path, metavar="FILE",
                     help="write the -O output there instead of stdout")
    add_call_flags(run)
    add_schedule_flags(run)
    add_knob_flags(run)

    matrix = sub.add_parser("matrix", help="a benchmark matrix (TOML file or built-in)",
                            description="Run a benchmark matrix: a TOML file (format: "
                                        "pydoc triple_py.bench.matrix) or a built-in one: "
                                        f"{', '.join(BUILTIN)}.")
    matrix.add_argument("source", metavar="FILE|" + "|".join(BUILTIN))
    matrix.add_argument("--rounds", type=POSITIVE, help="rounds per scenario (matrix: 3)")
    matrix.add_argument("-z", "--duration", type=DURATION,
                        help="measured time per arm and round (matrix: 3s)")
    matrix.add_argument("--warmup", type=DURATION, help="warm-up per arm and round (0.5s)")
    matrix.add_argument("-t", "--timeout", type=DURATION, help="per-call deadline (10s)")
    matrix.add_argument("--verify", action="store_true", default=None,
                        help=VERIFY_HELP + " (every arm; the matrix's verify key)")
    matrix.add_argument("--target", metavar="TARGET",
                        help="server(s) to load, any target a channel takes (default: the "
                             "embedded echo server)")
    matrix.add_argument("--restart-server", action="store_true", default=None,
                        help="a new embedded server every round")
    matrix.add_argument("--arms", type=_arg(_list(str), "arms"), metavar="A,B,...",
                        help="run only these arms, in this order")
    matrix.add_argument("--baseline", metavar="ARM", help="the arm the others are compared with")
    matrix.add_argument("--payload", type=_arg(_list(parse_size), "sizes"), metavar="S,...",
                        help="replace the payload axis, e.g. 128,1KiB")
    matrix.add_argument("-c", "--concurrency", type=_arg(_list(_positive_int), "integers"),
                        metavar="N,...", help="replace the concurrency axis, e.g. 50,100")
    matrix.add_argument("--out", type=Path, metavar="DIR",
                        help="results directory (results/<matrix>-<timestamp>)")
    matrix.add_argument("--no-check", action="store_true",
                        help="skip the test call that fails fast on a wrong target or method")
    matrix.add_argument("--dask", metavar="ADDRESS", help=DASK_HELP)
    matrix.add_argument("--show", action="store_true",
                        help="print the matrix (TOML of a built-in) and its scenarios; run nothing")

    cap = sub.add_parser("capacity", help="the highest rate meeting a latency SLO",
                         description="Ramp the open-loop rate, then bisect to the highest "
                                     "rate whose CO-corrected percentile meets the SLO with "
                                     "no errors; prints the verdict and every probe.")
    cap.add_argument("--slo", required=True, metavar="pNN=DURATION",
                     help="the objective, e.g. p99=5ms or p99.9=20ms")
    cap.add_argument("--target", metavar="TARGET",
                     help="server(s) to load: host:port, dns:, ipv4:a:p,b:p, ipv6:, unix:, "
                          "unix-abstract:, or a registered registry such as zookeeper:// "
                          "(default: start the embedded echo server)")
    cap.add_argument("--call", metavar="METHOD", help="pkg.Service/Method (as run)")
    cap.add_argument("--mode", default="fastpath", choices=("fastpath", "stream-path", "bidi"),
                     help="C arm (fastpath)")
    cap.add_argument("-c", "--concurrency", type=POSITIVE, default=256,
                     help="most calls in flight (256): an open loop needs room")
    cap.add_argument("--connections", type=POSITIVE, default=1, help="connections (1)")
    cap.add_argument("--payload", type=SIZE, default=128, help="BenchmarkRequest payload (128)")
    cap.add_argument("-z", "--duration", type=DURATION, default=2.0,
                     help="measured time per probe (2s)")
    cap.add_argument("--warmup", type=DURATION, default=0.5, help="warm-up per probe (0.5s)")
    cap.add_argument("-t", "--timeout", type=DURATION, default=10.0, help="per-call deadline")
    cap.add_argument("--start-rate", type=RATE, default=1000.0, help="first rate (1000/s)")
    cap.add_argument("--max-rate", type=RATE, default=1e6, help="highest rate tried (1e6/s)")
    cap.add_argument("--precision", type=float, default=0.05,
                     help="stop when passing and failing rates are this close (0.05)")
    cap.add_argument("--max-probes", type=POSITIVE, default=16, help="most probes (16)")
    add_knob_flags(cap)
    cap.add_argument("--out", type=Path, metavar="DIR",
                     help="write capacity.txt, capacity.json and capacity.png there")
    add_call_flags(cap)

    report = sub.add_parser(
        "report", help="the report files of a saved run, from its results.json",
        description="Make the report files of a results directory again from its "
                    "results.json (any format version this release reads), without running "
                    "anything: summary.txt, results.csv, bench.txt, benchstat/<arm>.txt, "
                    "paired.csv, verdicts.txt, comparison.txt, report.html (and capacity.txt "
                    "with capacity searches). Files already there that would change are "
                    "left alone and named (exit status 1) unless --force; identical ones "
                    "are kept, so a plain run checks that a stored round reproduces.")
    report.add_argument("source", metavar="DIR|results.json",
                        help="a results directory or its results.json(.gz)")
    report.add_argument("--out", type=Path, metavar="DIR",
                        help="where to write (default: the results directory itself)")
    report.add_argument("--force", action="store_true",
                        help="replace report files that differ from the regenerated ones")

    sub.add_parser("list", help="arm kinds and built-in matrices",
                   description="List the arm kinds and the built-in matrices.")
    return parser


def add_call_flags(parser: argparse.ArgumentParser) -> None:
    """ghz's flags for calling any service (schema, data, metadata, TLS): see call_setup."""
    g = parser.add_argument_group("any service (ghz's flags)")
    g.add_argument("--proto", metavar="FILE", help="the service's .proto (compiled with protoc)")
    g.add_argument("-i", "--import-paths", type=_arg(_list(str), "paths"), default=[],
                   metavar="DIR,...", help="import paths for --proto (its own directory last)")
    g.add_argument("--protoset", metavar="FILE",
                   help="a compiled FileDescriptorSet (protoc --include_imports -o); "
                        "without --proto or --protoset: server reflection")
    g.add_argument("-d", "--data", metavar="JSON",
                   help="request data: a JSON object, or an array sent round-robin; "
                        "ghz templates ({{.RequestNumber}}, {{randomInt 1 9}}...)")
    g.add_argument("-D", "--data-file", metavar="FILE", help="-d from a file (JSON or JSON lines)")
    g.add_argument("-b", "--binary", action="store_true",
                   help="request data: protobuf bytes on stdin (several: length-delimited)")
    g.add_argument("-B", "--binary-file", metavar="FILE", help="-b from a file")
    g.add_argument("-m", "--metadata", metavar="JSON",
                   help='request metadata: {"key": "value"}, templated; -bin keys base64')
    g.add_argument("-M", "--metadata-file", metavar="FILE", help="-m from a file")
    g.add_argument("--ring-size", type=RING_SIZE, default=None,
                   help="requests rendered up front when data or metadata is templated; "
                        "call i sends request i mod this (1024)")
    g.add_argument("--authority", help=":authority of every call (default host:port)")
    g.add_argument("-e", "--enable-compression", action="store_true",
                   help="gzip the request messages")
    g.add_argument("--tls", action="store_true",
                   help="TLS with the system's roots (implied by --cacert/--cert/--cname)")
    g.add_argument("--cacert", metavar="PEM", help="CA certificates that sign the server's")
    g.add_argument("--cert", metavar="PEM", help="client certificate chain (mTLS, with --key)")
    g.add_argument("--key", metavar="PEM", help="client private key (mTLS, with --cert)")
    g.add_argument("--cname", metavar="NAME", help="server name to verify (default: the host)")
    g.add_argument("--skipTLS", dest="skip_tls", action="store_true",
                   help="TLS accepting any server certificate (no chain or name check)")
    g.add_argument("--insecure", action="store_true",
                   help="plaintext (the default here; ghz defaults to TLS)")


def add_knob_flags(parser: argparse.ArgumentParser) -> None:
    """``--channel NAME=VALUE`` and ``--load NAME=VALUE``: any channel option or load
    keyword by its name in the core's tables, checked by its row (see spec.knobs)."""
    g = parser.add_argument_group("the core's tables (repeatable)")
    g.add_argument("--channel", action="append", default=[], metavar="NAME=VALUE",
                   type=_arg(lambda t: parse_assignment(t, "--channel", True), "NAME=VALUE"),
                   help="a channel option by its name in _triple.CHANNEL_OPTIONS "
                        "(stream_window=1MiB, max_frame_size=32768...; C and triple-py arms)")
    g.add_argument("--load", action="append", default=[], metavar="NAME=VALUE",
                   type=_arg(lambda t: parse_assignment(t, "--load", False), "NAME=VALUE"),
                   help="a keyword of the C load generator by its name in "
                        f"_triple.LOAD_OPTIONS ({', '.join(free_load_names())}; C arms)")


def knobs_of(args: argparse.Namespace) -> dict:
    """``RunSpec`` keywords ``channel`` and ``load`` from ``--channel`` and ``--load``."""
    channel, load = knob_dicts(dict(getattr(args, "channel", []) + getattr(args, "load", [])))
    return {"channel": channel, "load": load}


def add_schedule_flags(parser: argparse.ArgumentParser) -> None:
    """ghz's --load-* and --concurrency-* schedule flags (see schedules)."""
    for what, unit in (("load", "calls/s"), ("concurrency", "calls in flight; -c is the most")):
        g = parser.add_argument_group(f"{what} schedule (ghz's flags; {unit})")
        g.add_argument(f"--{what}-schedule", choices=("const", "step", "line"),
                       help="const: start; step: +step every step-duration; line: +step per "
                            "second; from the end of the warm-up")
        g.add_argument(f"--{what}-start", type=float, help="the first value")
        g.add_argument(f"--{what}-step", type=float, default=0.0, help="change per step (or s)")
        g.add_argument(f"--{what}-end", type=float, default=0.0, help="the value stops there")
        g.add_argument(f"--{what}-step-duration", type=DURATION, default=0.0,
                       help="seconds per step (step)")
        g.add_argument(f"--{what}-max-duration", type=DURATION, default=0.0,
                       help="the schedule holds its value after this")


def schedules_of(args: argparse.Namespace):
    """(rate schedule, concurrency schedule) of the flags; None for one not given."""
    from .spec.schedules import Schedule

    return tuple(Schedule.from_flags(
        getattr(args, f"{w}_schedule"), getattr(args, f"{w}_start"), getattr(args, f"{w}_step"),
        getattr(args, f"{w}_end"), getattr(args, f"{w}_step_duration"),
        getattr(args, f"{w}_max_duration"), w) for w in ("load", "concurrency"))


def call_setup_of(args: argparse.Namespace):
    """The CallSetup of the call flags, or None when none was given (BenchmarkRequest)."""
    from .workload.call_setup import CallSetup, TlsOptions
    from .workload.request_data import DEFAULT_RING_SIZE

    values = dict(proto=args.proto, protoset=args.protoset, data=args.data,
                  data_file=args.data_file, binary=args.binary, binary_file=args.binary_file,
                  metadata=args.metadata, metadata_file=args.metadata_file,
                  authority=args.authority, compression=args.enable_compression)
    tls = TlsOptions(tls=args.tls, cacert=args.cacert, cert=args.cert, key=args.key,
                     cname=args.cname, insecure=args.insecure, skip_verify=args.skip_tls)
    if not any(values.values()) and not args.import_paths and args.ring_size is None \
            and tls == TlsOptions(insecure=args.insecure):
        return None
    return CallSetup(import_paths=tuple(args.import_paths), tls=tls,
                     ring_size=args.ring_size or DEFAULT_RING_SIZE, **values)


# -- run ------------------------------------------------------------------------------------


def _ticker(label: str, seconds: float) -> Callable[[], None]:
    """A progress line for a single run (elapsed / expected); returns its stop function."""
    from .running.progress import Progress

    progress = Progress()
    progress.start(label, seconds)
    return progress.close


@contextlib.contextmanager
def _spread(dask: Optional[str]) -> Iterator[Optional[Callable]]:
    """With --dask: a runner that spreads each run over that cluster; else None."""
    if not dask:
        yield None
        return
    from . import distributed

    with distributed.connect(dask) as client:
        yield distributed.runner(client)


def _cmd_run(args: argparse.Namespace) -> int:
    from .results.model import single_run
    from .report.gobench import go_bench_text
    from .results.document import results_doc
    from .report.tidy_csv import write_csv
    from .running.runner import check_result, preflight, target_or_embedded
    from .spec.run_spec import RunSpec
    from .spec.kinds import canonical_mode
    from .arms.runners import run_spec
    import json

    mode = canonical_mode(args.mode)
    duration = args.duration if args.duration is not None else (0.0 if args.total else 3.0)
    spec = RunSpec(arm=mode, mode=mode, target=args.target or "127.0.0.1:0", method=args.call,
                   payload_size=args.payload, concurrency=args.concurrency,
                   connections=args.connections, duration=duration, warmup=args.warmup,
                   count=args.total, rate=args.rps, stream_messages=args.stream_messages,
                   write_buffer_size=args.write_buffer,
                   write_buffer_delay_us=args.write_buffer_delay, timeout=args.timeout,
                   verify=args.verify, wire=args.wire, options={"dialect": args.dialect},
                   **knobs_of(args))
    spec.rate_schedule, spec.concurrency_schedule = schedules_of(args)
    spec.validate()
    for path, flag in ((args.output, "-o"), (args.json, "--json"), (args.csv, "--csv"),
                       (args.gobench, "--gobench")):
        check_writable(path, flag)
    setup = call_setup_of(args)
    if setup is not None:
        setup.connection()  # unreadable certificates: exit 2 before any server starts
    started = time.time()
    with _spread(args.dask) as runner, target_or_embedded(args.target) as address:
        spec.target = address
        extra = {}
        if setup is not None:
            extra = setup.apply(spec, address)
        if not args.no_check:
            preflight(address, spec.resolved_method(), spec.streaming, spec.wire,
                      timeout=min(spec.timeout, 10.0), **extra)
        stop = _ticker(f"{spec.mode} {spec.payload_size} B x {spec.concurrency} on {address}",
                       spec.warmup + spec.duration)
        interrupted: Optional[KeyboardInterrupt] = None
        try:
            result = runner(spec) if runner else run_spec(spec)
        except KeyboardInterrupt as exc:  # SIGINT/SIGTERM: report what was measured
            if getattr(exc, "result", None) is None:
                raise
            interrupted, result = exc, exc.result
        except BenchError as exc:  # a Dask worker failed: the others' figures, then why
            if hasattr(exc, "parts") and hasattr(exc, "failures"):
                from .distributed.workers_view import format_failed_run
                stop()
                print(format_failed_run(exc.parts, exc.failures), end="", flush=True)
            raise
        finally:
            stop()
    one = single_run(result, target=args.target, started=started, duration=duration,
                     warmup=spec.warmup)
    text = _formatted(args.format, result, one, vars(args))
    if args.output is None:
        print(text, end="", flush=True)
    else:
        _write(args.output, lambda p: p.write_text(text))
    if args.dask and args.format == "summary":
        from .distributed.workers_view import format_workers
        print(format_workers(result), end="", flush=True)
    if args.json or args.csv or args.gobench:
        for path, write in ((args.json, lambda p: p.write_text(
                                json.dumps(results_doc(one), indent=1, default=str) + "\n")),
                            (args.csv, lambda p: write_csv(one, p)),
                            (args.gobench, lambda p: p.write_text(go_bench_text(one)))):
            if path is not None:
                _write(path, write)
    if interrupted is not None:
        from .interrupts import exit_code
        print(f"{args.prog} run: interrupted ({interrupted}); the report covers the run until "
              "then", file=sys.stderr)
        return exit_code(interrupted)
    check_result(result)
    return 0


def check_writable(path: Optional[Path], flag: str, directory: bool = False) -> None:
    """ConfigError (exit 2, before anything runs) when ``path`` (a file, or with
    ``directory`` a results directory) cannot be written: a directory in the way, a file
    in the way of a directory, or no write permission where it would be created."""
    if path is None:
        return
    path = Path(path)
    if path.exists():
        if directory != path.is_dir():
            what = "not a directory" if directory else "is a directory"
            raise ConfigError(f"{flag} {path}: {what}")
        if not os.access(path, os.W_OK | (os.X_OK if directory else 0)):
            raise ConfigError(f"{flag} {path}: not writable (permission denied)")
        return
    parent = path.parent
    while not parent.exists():  # the directories _write would make
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"{flag} {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {path}: cannot create it in {parent} (permission denied)")


def _write(path: Path, write: Callable[[Path], object]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
    except OSError as exc:
        raise BenchError(f"cannot write {path}: {exc}") from None


def _formatted(fmt: str, result, one, options: dict) -> str:
    """The run in -O format ``fmt`` (``one``: the run as a one-arm MatrixRun; ``options``:
    the flags, shown in the HTML report)."""
    import json

    from .report import metrics_formats
    from .report.tidy_csv import csv_text
    from .report.text import format_run_summary
    from .report.gobench import go_bench_text
    from .results.document import results_doc

    if fmt == "summary":
        return format_run_summary(result)
    if fmt == "json":
        return json.dumps(results_doc(one), indent=1, default=str) + "\n"
    if fmt == "csv":
        return csv_text(one)
    if fmt == "gobench":
        return go_bench_text(one)
    if fmt == "html":
        from .report.html import run_html

        shown = {k: (str(v) if isinstance(v, Path) else v) for k, v in options.items()
                 if k not in ("server_factory", "server_name", "command")}
        return run_html(result, shown, one.environment)
    return {"prometheus": metrics_formats.prometheus_text,
            "influx-summary": metrics_formats.influx_summary,
            "influx-details": metrics_formats.influx_details}[fmt](result)


# -- matrix ---------------------------------------------------------------------------------


def _cmd_matrix(args: argparse.Namespace) -> int:
    server_factory = getattr(args, "server_factory", None)
    if server_factory is not None and args.target is not None:
        raise ConfigError("--target cannot be used here: this script starts its own server")
    from .spec.matrix import load_matrix
    from .running.rounds import run_matrix
    from .running.progress import Progress
    from .report.text import comparison, format_scenario_table, format_summary
    from .results.summary import summarize
    from .report.files import write_results

    matrix = load_matrix(args.source).with_overrides(
        rounds=args.rounds, duration=args.duration, warmup=args.warmup, timeout=args.timeout,
        verify=args.verify, restart_server=args.restart_server, arms=args.arms,
        baseline=args.baseline,
        payloads=args.payload, concurrency=args.concurrency)
    if args.target is not None:
        from .spec.target import check_target
        check_target(args.target)
    if args.show:
        if args.source in BUILTIN:
            print(BUILTIN[args.source])
        for scenario in matrix.scenarios:
            print(f"{matrix.benchmark}/{matrix.label(scenario)}: "
                  f"{', '.join(a.name for a in matrix.arms)}")
        return 0
    out_dir = args.out or Path("results") / f"{matrix.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    check_writable(out_dir, "--out", directory=True)
    per_arm = matrix.warmup + matrix.duration + 0.3
    total = len(matrix.scenarios) * matrix.rounds * len(matrix.arms)
    where = args.target or (getattr(args, "server_name", None) or "the embedded echo server") + (
        " (restarted every round)" if matrix.restart_server else "")
    print(f"matrix {matrix.name}: {len(matrix.scenarios)} scenarios x {len(matrix.arms)} arms "
          f"({', '.join(a.name for a in matrix.arms)}) x {matrix.rounds} rounds of "
          f"{matrix.duration:g} s (+{matrix.warmup:g} s warm-up) against {where}; "
          f"about {total * per_arm / 60:.1f} min", flush=True)

    def on_scenario(run, scenario) -> None:
        label = matrix.label(scenario)
        arms = dict(summarize_one(run, scenario))
        print("\n" + format_scenario_table(run, label, arms), flush=True)

    def summarize_one(run, scenario):
        for label, arms in summarize(run):
            if label == matrix.label(scenario):
                return arms
        return {}

    with _spread(args.dask) as runner:
        extra = {"runner": runner} if runner else {}
        result = run_matrix(matrix, target=args.target, server_factory=server_factory,
                            check=not args.no_check, progress=Progress(),
                            on_scenario=on_scenario, **extra)
    if result.interrupted:
        print(f"\ninterrupted after {len(result.runs)} of {total} arm runs; keeping them",
              flush=True)
    if not result.runs:
        from .interrupts import Interrupted
        raise Interrupted(result.interrupt_signal or signal.SIGINT, why="no arm run finished")
    overview = format_summary(result).rsplit("\n\n", 1)[-1]
    print("\n" + overview, flush=True)
    compared = comparison(result)
    print("\n" + compared, end="", flush=True)
    if result.capacities:
        from .report.capacity import format_capacities
        print("\n" + format_capacities(result.capacities), end="", flush=True)
    try:
        paths = write_results(result, out_dir, compared)
    except OSError as exc:
        raise BenchError(f"cannot write the results to {out_dir}: {exc}") from None
    print(f"\nresults: {paths['json']}, {paths['csv'].name}, {paths['gobench'].name} "
          f"(Go benchmark format), {paths['benchstat'].name}/<arm>.txt, summary.txt, "
          f"comparison.txt, report.html in {out_dir}")
    if result.interrupted:
        print(f"{args.prog}: interrupted", file=sys.stderr)
        return 128 + (result.interrupt_signal or signal.SIGINT)
    bad = [r for r in result.runs if r.failed or (r.result is not None and r.result.errors)]
    if bad:
        first = bad[0]
        why = first.failed or f"{first.result.errors} errors ({first.result.first_error})"
        print(f"{args.prog}: error: {len(bad)} of {len(result.runs)} arm runs failed or had "
              f"errors; first: {first.arm.name} {first.label} round {first.round}: {why}",
              file=sys.stderr)
        return 1
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    import filecmp
    import shutil
    import tempfile

    from .report.files import write_reports
    from .report.text import comparison
    from .results.reader import find_document, read_results

    try:
        document = find_document(args.source)
        run = read_results(document)
    except (FileNotFoundError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    out_dir = args.out or document.parent
    check_writable(out_dir, "--out", directory=True)
    with tempfile.TemporaryDirectory(prefix="triple-bench-report-") as tmp:
        made = Path(tmp)
        write_reports(run, made, comparison(run))
        files = sorted(p.relative_to(made) for p in made.rglob("*") if p.is_file())
        differ = [f for f in files if (out_dir / f).exists()
                  and not filecmp.cmp(made / f, out_dir / f, shallow=False)]
        if differ and not args.force:
            raise BenchError(f"{len(differ)} report file(s) in {out_dir} differ from the ones "
                             f"{document.name} gives now: {', '.join(map(str, differ))} "
                             "(--force replaces them, --out writes elsewhere)")
        new = [f for f in files if not (out_dir / f).exists()]
        for f in files:
            (out_dir / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(made / f, out_dir / f)
    same = len(files) - len(differ) - len(new)
    print(f"report of {document} ({run.matrix.name}, {len(run.runs)} arm runs, recorded by "
          f"triple_py {run.version or '(version unknown)'}): {len(files)} files in {out_dir}: "
          f"{len(new)} new, {len(differ)} replaced, {same} unchanged")
    return 0


#: capacity --max-probes: doubling from 1/s to the load generator's highest rate and
#: bisecting to 0.1 % takes about 40 probes.
MAX_PROBES = 100


def _cmd_capacity(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from .arms.runners import run_spec
    from .report.capacity import capacity_plot, capacity_text
    from .running.capacity import find_capacity
    from .spec.slo import parse_slo
    from .running.runner import check_result, preflight, target_or_embedded
    from .spec.run_spec import RunSpec

    slo = parse_slo(args.slo)
    spec = RunSpec(arm=args.mode, mode=args.mode, target=args.target or "127.0.0.1:0",
                   method=args.call, payload_size=args.payload, concurrency=args.concurrency,
                   connections=args.connections, duration=args.duration, warmup=args.warmup,
                   timeout=args.timeout, rate=args.start_rate, **knobs_of(args)).validate()
    dataclasses.replace(spec, rate=args.max_rate).validate()  # the highest rate it may try
    if not args.start_rate <= args.max_rate:
        raise ConfigError(f"--start-rate {args.start_rate:g} is above --max-rate "
                          f"{args.max_rate:g}")
    if not 0 < args.precision < 1:
        raise ConfigError(f"--precision must be in (0, 1), not {args.precision:g}")
    if args.max_probes > MAX_PROBES:
        raise ConfigError(f"--max-probes must be 1..{MAX_PROBES} (a search from 1/s to the "
                          f"highest rate at 0.1 % precision needs fewer), not {args.max_probes}")
    check_writable(args.out, "--out", directory=True)
    setup = call_setup_of(args)
    if setup is not None:
        setup.connection()
    with target_or_embedded(args.target) as address:
        spec.target = address
        extra = setup.apply(spec, address) if setup is not None else {}
        preflight(address, spec.resolved_method(), spec.streaming, spec.wire,
                  timeout=min(spec.timeout, 10.0), **extra)

        def probe_at(rate: float):
            result = run_spec(dataclasses.replace(spec, rate=rate))
            check_result(result)
            return result

        def show(p) -> None:
            value = f"{p.percentile_ns / 1e6:.3f} ms" if p.percentile_ns is not None else "-"
            print(f"  {p.rate:>12,.0f}/s: achieved {p.qps:,.0f}/s, p{slo.percentile:g} "
                  f"{value}: {'pass' if p.passed else 'FAIL: ' + p.why}", flush=True)

        print(f"capacity search for {slo} on {address} {spec.resolved_method()}", flush=True)
        result = find_capacity(probe_at, slo, start_rate=args.start_rate,
                               max_rate=args.max_rate, precision=args.precision,
                               max_probes=args.max_probes, on_probe=show)
    text = capacity_text(result)
    print("\n" + text, end="", flush=True)
    if args.out is not None:
        _write(args.out / "capacity.txt", lambda p: p.write_text(text))
        _write(args.out / "capacity.json", lambda p: p.write_text(
            json.dumps(result.to_dict(), indent=1) + "\n"))
        _write(args.out / "capacity.png", lambda p: capacity_plot(result, p))
        print(f"files: {args.out}/capacity.txt, capacity.json, capacity.png")
    if result.interrupted:
        print(f"{args.prog} capacity: interrupted ({result.interrupted})", file=sys.stderr)
        return 128 + getattr(signal, result.interrupted)
    return 0 if result.capacity is not None else 1


def _cmd_list(args: argparse.Namespace) -> int:
    from .spec.matrix import parse_matrix

    print("arm kinds (--mode, or arms in a matrix):")
    for kind in KINDS.values():
        abilities = [a for a, ok in (("open loop", kind.open_loop), ("-n", kind.count),
                                     ("counters", kind.ours)) if ok]
        print(f"  {kind.name:<16} {kind.description}"
              + (f" [{', '.join(abilities)}]" if abilities else ""))
    print(f"\nbuilt-in matrices ({args.prog} matrix NAME --show):")
    for name, text in BUILTIN.items():
        m = parse_matrix(text, default_name=name)
        print(f"  {name:<16} {m.description}: {len(m.scenarios)} scenarios x "
              f"{len(m.arms)} arms, baseline {m.baseline}")
    return 0


def main(argv: Optional[Sequence[str]] = None, *, server_factory=None,
         server_name: Optional[str] = None, prog: str = PROG) -> int:
    """Entry point; returns the exit status.

    ``server_factory`` (matrix only): a callable returning a context manager that starts a
    server and yields its address, used instead of --target or the embedded server (and
    restartable with --restart-server); ``server_name`` names it in the header line.
    Benchmark scripts use it to run a matrix against a peer they start.  ``prog``: the
    command's name in usage and error lines (the console script says ``triple-bench``).
    """
    parser = _parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (printed as one line) or --help
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    args.server_factory, args.server_name, args.prog = server_factory, server_name, prog
    commands = {"run": _cmd_run, "matrix": _cmd_matrix, "list": _cmd_list,
                "capacity": _cmd_capacity, "report": _cmd_report}
    from .interrupts import exit_code, signals_interrupt

    try:
        with signals_interrupt():
            return commands[args.command](args)
    except BenchError as exc:
        print(f"{prog} {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print(f"{prog} {args.command}: interrupted ({exc or 'SIGINT'})", file=sys.stderr)
        return exit_code(exc)
    except Exception as exc:  # a bug: one line unless asked for the traceback
        if os.environ.get("TRIPLE_PY_BENCH_DEBUG"):
            raise
        print(f"{prog} {args.command}: internal error: {type(exc).__name__}: {exc} "
              "(TRIPLE_PY_BENCH_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1
