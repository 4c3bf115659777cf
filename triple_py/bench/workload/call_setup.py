"""What a run needs to call a real service: its schema, request data, metadata, authority,
compression and TLS (ghz's flags), resolved into the C load's request ring and channel
options before anything runs.

:meth:`CallSetup.prepare` checks everything (ConfigError: exit status 2, nothing run):
the schema compiles, the method is in it, the data matches its request type, templates
parse, certificates are readable.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import triple_py
from ... import _triple
from ..errors import ConfigError
from .messages import STREAM_METHOD, UNARY_METHOD, normalize_method
from .metadata import parse_metadata
from .reflection import method_by_reflection
from .request_data import DEFAULT_RING_SIZE, RingEntry, build_ring, request_data
from .schema import (MethodSchema, benchmark_schema, compile_proto, find_method, pool_of,
                     read_protoset)

__all__ = ["TlsOptions", "CallSetup", "PreparedCall"]


def _pem(path: Optional[str], flag: str) -> Optional[bytes]:
    if path is None:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: {exc.strerror}") from None
    if b"-----BEGIN " not in data:
        raise ConfigError(f"{flag} {path}: no PEM block in it")
    return data


@dataclasses.dataclass(frozen=True)
class TlsOptions:
    """ghz's TLS flags. TLS is on with ``tls``, ``skip_verify`` or any of
    cacert/cert/key/cname; ``insecure`` asks for plaintext explicitly (the default here,
    unlike ghz, whose default is TLS). ``skip_verify`` (--skipTLS) accepts any server
    certificate."""

    tls: bool = False
    cacert: Optional[str] = None
    cert: Optional[str] = None
    key: Optional[str] = None
    cname: Optional[str] = None
    insecure: bool = False
    skip_verify: bool = False

    @property
    def enabled(self) -> bool:
        """True when the run uses TLS."""
        return self.tls or self.skip_verify or any((self.cacert, self.cert, self.key,
                                                    self.cname))

    def load(self) -> Dict[str, Any]:
        """The TLS channel options (the names of ``_triple.CHANNEL_OPTIONS``, as run_load
        takes them) with the PEM files read. ConfigError for a conflict or an unreadable
        file."""
        if self.insecure and self.enabled:
            raise ConfigError("--insecure (plaintext) cannot go with --cacert, --cert, --key, "
                              "--cname, --tls or --skipTLS")
        if (self.cert is None) != (self.key is None):
            raise ConfigError("--cert and --key go together (mTLS)")
        if not self.enabled:
            return {}
        options = {"tls": True, "root_certificates": _pem(self.cacert, "--cacert"),
                   "certificate_chain": _pem(self.cert, "--cert"),
                   "private_key": _pem(self.key, "--key"),
                   "ssl_target_name_override": self.cname, "tls_skip_verify": self.skip_verify}
        _check_tls(options)
        return options


def _check_tls(options: Dict[str, Any]) -> None:
    """ConfigError when the core refuses the TLS options (a key that does not match its
    certificate, a PEM it cannot use): it judges them by making a channel with them, which
    connects to nothing until a call is made."""
    try:
        channel = _triple.Channel("127.0.0.1", "1",
                                  **{k: v for k, v in options.items() if v is not None})
    except ValueError as exc:
        why = str(exc).removeprefix("cannot create channel: ")
        raise ConfigError(f"--cacert/--cert/--key: {why}") from None
    channel.close()


@dataclasses.dataclass(frozen=True)
class PreparedCall:
    """A CallSetup resolved for one method: the schema, the ring, the channel keywords."""

    method: MethodSchema
    ring: List[RingEntry]
    connection: Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class CallSetup:
    """ghz's call flags; every field optional (None: not given)."""

    proto: Optional[str] = None
    import_paths: Tuple[str, ...] = ()
    protoset: Optional[str] = None
    data: Optional[str] = None
    data_file: Optional[str] = None
    binary: bool = False
    binary_file: Optional[str] = None
    metadata: Optional[str] = None
    metadata_file: Optional[str] = None
    ring_size: int = DEFAULT_RING_SIZE
    authority: Optional[str] = None
    compression: bool = False
    tls: TlsOptions = TlsOptions()

    @classmethod
    def from_dict(cls, values: Dict[str, Any]) -> "CallSetup":
        """From keyword values (a matrix table, run()'s keywords); TLS keys flat
        (tls, cacert, cert, key, cname, insecure). ConfigError for an unknown key."""
        values = dict(values)
        tls_keys = {f.name for f in dataclasses.fields(TlsOptions)}
        tls = TlsOptions(**{k: values.pop(k) for k in list(values) if k in tls_keys})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ConfigError(f"unknown call option(s): {', '.join(unknown)}")
        if "import_paths" in values:
            values["import_paths"] = tuple(values["import_paths"])
        return cls(tls=tls, **values)

    @property
    def has_schema(self) -> bool:
        """True when --proto or --protoset gives the schema."""
        return bool(self.proto or self.protoset)

    def connection(self) -> Dict[str, Any]:
        """run_load's channel options (authority, compression, TLS), by the names of
        ``_triple.CHANNEL_OPTIONS``."""
        kwargs = self.tls.load()
        if self.authority:
            kwargs["authority"] = self.authority
        if self.compression:
            kwargs["compression"] = 2  # TRI_COMPRESS_GZIP
        return kwargs

    def channel(self, target: str, wire: str = "grpc"):
        """A triple_py channel to ``target`` with these options (reflection, preflight)."""
        options: List[Tuple[str, Any]] = []
        if self.authority:
            options.append(("grpc.default_authority", self.authority))
        if not self.tls.enabled:
            return triple_py.insecure_channel(target, options=options, wire=wire)
        kw = self.tls.load()
        if self.tls.cname:
            options.append(("grpc.ssl_target_name_override", self.tls.cname))
        if self.tls.skip_verify:
            options.append(("triple.tls_skip_verify", True))
        creds = triple_py.ssl_channel_credentials(kw["root_certificates"], kw["private_key"],
                                                  kw["certificate_chain"])
        return triple_py.secure_channel(target, creds, options=options, wire=wire)

    def method(self, method: str, target: Optional[str], timeout: float = 10.0) -> MethodSchema:
        """The schema of ``method``: from --proto, --protoset, the built-in one of the
        BenchmarkService's methods, or server reflection."""
        if self.proto and self.protoset:
            raise ConfigError("--proto and --protoset: give the schema one way")
        if self.proto:
            return find_method(pool_of(compile_proto(self.proto, self.import_paths).file), method)
        if self.protoset:
            return find_method(pool_of(read_protoset(self.protoset).file), method)
        if normalize_method(method) in (UNARY_METHOD, STREAM_METHOD):
            return find_method(pool_of([benchmark_schema()]), method)
        if target is None:
            raise ConfigError("server reflection needs --target (or give --proto/--protoset)")

        with self.channel(target) as channel:
            return method_by_reflection(channel, method, timeout)

    def check(self, method: Optional[str] = None) -> None:
        """The checks that need no network: certificates, data, metadata, templates, and
        with --proto/--protoset the method. ConfigError for the first problem."""
        self.connection()
        request_data(self.data, self.data_file, self.binary, self.binary_file)
        parse_metadata(self.metadata, self.metadata_file)
        if self.has_schema and method is not None:
            self.method(method, None)

    def prepare(self, method: str, target: Optional[str], *, concurrency: int = 1,
                timeout: float = 10.0) -> PreparedCall:
        """Everything checked and built before the run (see the module's docstring)."""
        connection = self.connection()  # certificates first: no network for a bad one
        data = request_data(self.data, self.data_file, self.binary, self.binary_file)
        metadata = parse_metadata(self.metadata, self.metadata_file)
        schema = self.method(method, target, timeout)
        ring = build_ring(schema, data, metadata, ring_size=self.ring_size,
                          concurrency=concurrency)
        return PreparedCall(schema, ring, connection)

    def apply(self, spec: Any, target: str) -> Dict[str, Any]:
        """Resolves this setup for ``spec`` (a RunSpec; schema, ring, channel keywords) into
        it; a streaming method turns the default fastpath arm into bidi. Returns the
        keywords that make :func:`~triple_py.bench.running.runner.preflight` send the same
        first request.
        ConfigError for bad input."""
        prepared = self.prepare(spec.resolved_method(), target, concurrency=spec.concurrency,
                                timeout=min(spec.timeout, 10.0))
        spec.method, spec.requests = prepared.method.path, prepared.ring
        spec.connection = prepared.connection
        if prepared.method.shape != "unary" and spec.mode == "fastpath":
            spec.mode = spec.arm = "bidi"
        spec.validate()
        return dict(request=spec.request_bytes(), metadata=spec.requests[0][1],
                    channel=lambda t: self.channel(t, spec.wire))
