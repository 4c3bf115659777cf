"""``run()``: one scenario of one arm, against a target or the embedded echo server."""
from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Sequence, Tuple

import triple_py
from ..arms.runners import run_spec
from ..errors import RunFailed, TargetError
from ..record.result import BenchResult
from ..spec.kinds import canonical_mode, kind_of
from ..spec.knobs import free_load_names
from ..spec.run_spec import WRITE_BUFFER_DELAY_US, WRITE_BUFFER_SIZE, RunSpec
from ..spec.target import check_target
from ..workload.call_setup import CallSetup
from ..workload.messages import benchmark_request
from .live import auto_progress
from .progress import Progress
from .servers import embedded_server

__all__ = ["run", "spec_of", "spec_target", "preflight", "check_result", "target_or_embedded"]


@contextlib.contextmanager
def target_or_embedded(target: Optional[str]) -> Iterator[str]:
    """Yields ``target``, or the address of an EchoServer started for the block."""
    if target is not None:
        check_target(target)
        yield target
        return
    with embedded_server() as address:
        yield address


def spec_of(target: Optional[str] = None, method: Optional[str] = None,
            payload_size: int = 128, mode: str = "fastpath", concurrency: int = 50,
            connections: int = 1, duration: float = 3.0, warmup: float = 0.5,
            rate: Optional[float] = None, stream_messages: int = 1,
            write_buffer_size: int = WRITE_BUFFER_SIZE,
            write_buffer_delay_us: int = WRITE_BUFFER_DELAY_US,
            timeout: float = 10.0, count: int = 0, *, wire: str = "grpc",
            arm: Optional[str] = None, shared_request: bool = True, hist_digits: int = 3,
            verify: bool = False,
            options: Optional[Dict[str, Any]] = None,
            channel: Optional[Mapping[str, Any]] = None,
            load: Optional[Mapping[str, Any]] = None, **knobs: Any) -> RunSpec:
    """The validated RunSpec of :func:`run`'s arguments (target None: ``127.0.0.1:0``, to be
    replaced by the embedded server's address). Raises ConfigError for bad parameters.

    ``channel``: channel options by their names in ``_triple.CHANNEL_OPTIONS``
    (``{"stream_window": 1 << 20}``); ``load`` and any other keyword: keywords of the C load
    generator by their names in ``_triple.LOAD_OPTIONS`` (``series_digits=3``), each
    checked against its row (:mod:`~triple_py.bench.spec.knobs`)."""
    unknown = [k for k in knobs if k not in free_load_names()]
    if unknown:
        raise TypeError(f"run() got an unexpected keyword argument {unknown[0]!r} (load "
                        f"keywords: {', '.join(free_load_names())})")
    mode = canonical_mode(mode)
    spec = RunSpec(arm=arm or mode, mode=mode, target=target or "127.0.0.1:0", method=method,
                   payload_size=payload_size, concurrency=concurrency,
                   connections=connections, duration=duration, warmup=warmup, count=count,
                   rate=rate, stream_messages=stream_messages,
                   write_buffer_size=write_buffer_size,
                   write_buffer_delay_us=write_buffer_delay_us, timeout=timeout, wire=wire,
                   shared_request=shared_request, hist_digits=hist_digits, verify=verify,
                   options=dict(options or {}), channel=dict(channel or {}),
                   load={**dict(load or {}), **knobs})
    return spec.validate()


def run(*args: Any, progress: Optional[Progress] = None,
        call: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> BenchResult:
    """Runs one scenario and returns its :class:`~triple_py.bench.record.result.BenchResult`.

    The arguments are :func:`spec_of`'s: ``target`` is ``host:port``; None starts the
    embedded echo server (triple_py.testing.EchoServer) for the run. ``method`` defaults to
    ``/benchmark.BenchmarkService/UnaryCall`` (``StreamCall`` for the bidi modes).
    ``mode`` is an arm kind (see :mod:`triple_py.bench.arms`): ``fastpath``,
    ``stream-path`` or ``bidi`` run the C load generator with the GIL released; the
    reference kinds (``grpcio-sync``, ``grpcio-aio``, ``h2load``...) work too.
    ``concurrency`` is the total number of calls in flight, spread evenly over
    ``connections``. ``duration`` seconds are measured after ``warmup`` seconds; ``count``
    > 0 caps the measured calls (``duration`` 0: count only). ``rate`` (calls/s) makes the
    loop open, with latency also measured from the intended send time.
    ``stream_messages`` is K for the bidi modes; ``write_buffer_size`` 0 turns the
    coalescing writer off. ``channel`` sets any channel option of the core by its name
    (``channel={"stream_window": 1 << 20}``: the C arms and the triple-py ones), ``load``
    or a keyword of its own any keyword of the C load generator (``series_digits=3``). ``call`` calls any service with ghz's options (keys of
    :class:`~triple_py.bench.workload.call_setup.CallSetup` and
    :class:`~triple_py.bench.workload.call_setup.TlsOptions`: ``proto``,
    ``import_paths``, ``protoset`` (neither: server reflection), ``data``, ``data_file``,
    ``binary_file``, ``metadata``, ``metadata_file``, ``ring_size``, ``authority``,
    ``compression``, ``tls``, ``cacert``, ``cert``, ``key``, ``cname``); ``method`` is then
    that service's. ``progress`` defaults to :func:`~.live.auto_progress`: a live
    display in a Jupyter notebook, the terminal line elsewhere.

    Raises ConfigError (a ValueError) for bad parameters and TargetError (a
    ConnectionError) when the target cannot be reached by the C modes. Calls that fail
    are counted in the result (``errors``, ``status_codes``), not raised.
    """
    setup = CallSetup.from_dict(call) if call else None
    spec = spec_of(*args, **kwargs)  # validated before a server is started
    if setup is not None:
        setup.connection()  # unreadable certificates: before a server is started
    progress = progress or auto_progress(title=f"run {spec.arm}")
    progress.total = 1
    with target_or_embedded(spec_target(args, kwargs)) as address:
        spec.target = address
        if setup is not None:
            setup.apply(spec, address)
        progress.start(f"{spec.arm} {spec.payload_size} B x {spec.concurrency} on {address}",
                       spec.warmup + spec.duration)
        try:
            result = run_spec(spec)
            progress.finish(result, spec.arm)
        finally:
            progress.close()
        return result


_SPEC_SIGNATURE = inspect.signature(spec_of)
_SPEC_PARAMETERS = list(_SPEC_SIGNATURE.parameters.values())
run.__signature__ = _SPEC_SIGNATURE.replace(  # type: ignore[attr-defined]
    parameters=[*_SPEC_PARAMETERS[:-1],  # **knobs last
                inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation=Optional[Progress]),
                inspect.Parameter("call", inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation=Optional[Mapping[str, Any]]),
                _SPEC_PARAMETERS[-1]],
    return_annotation=BenchResult)


def spec_target(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Optional[str]:
    """The ``target`` among :func:`spec_of`'s arguments (None: the embedded server)."""
    return args[0] if args else kwargs.get("target")


def preflight(target: str, method: str, streaming: bool, wire: str = "grpc",
              payload_size: int = 16, timeout: float = 5.0, *, request: Optional[bytes] = None,
              metadata: Sequence[Tuple[bytes, bytes]] = (),
              channel: Optional[Callable[[str], Any]] = None) -> None:
    """One call of ``method`` on ``target`` through triple_py; raises on failure.

    ``request`` (default: a BenchmarkRequest of ``payload_size`` bytes) and ``metadata`` are
    what it sends; ``channel`` makes the channel (default: plaintext on ``wire``).

    TargetError: the target is unreachable. RunFailed: the call failed, e.g. UNIMPLEMENTED
    for a method the server does not have. Meant to fail fast before a long run.
    """
    if request is None:
        request = benchmark_request(payload_size)
    md = [(k.decode(), v if k.endswith(b"-bin") else v.decode()) for k, v in metadata] or None
    make = channel or (lambda t: triple_py.insecure_channel(t, options=[("triple.wire", wire)]))
    try:
        with make(target) as ch:
            if streaming:
                call = ch.stream_stream(method)(timeout=timeout, metadata=md)
                call.write(request)
                call.done_writing()
                for _ in call:
                    pass
                call.code()
            else:
                ch.unary_unary(method)(request, timeout=timeout, metadata=md)
    except triple_py.RpcError as exc:
        code = exc.code()
        if code == triple_py.StatusCode.UNAVAILABLE:
            raise TargetError(f"cannot reach {target}: {exc.details()}") from None
        if code == triple_py.StatusCode.UNIMPLEMENTED:
            raise RunFailed(f"{target} does not implement {method} (UNIMPLEMENTED: "
                            f"{exc.details() or 'unknown method'})") from None
        raise RunFailed(f"a test call of {method} on {target} failed: {code.name}: "
                        f"{exc.details()}") from None
    except OSError as exc:
        raise TargetError(f"cannot reach {target}: {exc}") from None


def check_result(result: BenchResult) -> None:
    """RunFailed when every measured call failed (e.g. UNIMPLEMENTED from an unknown method)."""
    if result.calls and result.errors == result.calls:
        status = result.first_error or "errors"
        hint = " (is the method right? check --call)" if status == "UNIMPLEMENTED" else ""
        raise RunFailed(f"every call failed: {result.errors} x {status} from {result.method} "
                        f"on {result.target}{hint}")
    if not result.calls and kind_of(result.mode).ours:
        raise RunFailed(f"no call completed in the measured window on {result.target}")
