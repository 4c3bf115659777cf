"""Schemas for any service: ``--proto`` (compiled with protoc), ``--protoset``, or server
reflection (:mod:`.reflection`) when neither is given.

A schema is a protobuf ``DescriptorPool``; :func:`find_method` turns a ghz method name into a
:class:`MethodSchema`: the path, the request and response message classes and the shape.
Every failure is a :class:`~triple_py.bench.errors.ConfigError` of one line (exit status 2).
"""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence, Type

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message

from ..errors import ConfigError
from .messages import normalize_method, BENCHMARK_SERVICE

__all__ = ["MethodSchema", "message_class", "compile_proto", "read_protoset", "pool_of", "find_method",
           "benchmark_schema"]


@dataclasses.dataclass(frozen=True)
class MethodSchema:
    """One method of a schema: ``path`` is ``/pkg.Service/Method``."""

    path: str
    input: Descriptor
    output: Descriptor
    client_streaming: bool
    server_streaming: bool

    @property
    def shape(self) -> str:
        """``unary``, ``server-streaming``, ``client-streaming`` or ``bidi``."""
        return {(False, False): "unary", (False, True): "server-streaming",
                (True, False): "client-streaming", (True, True): "bidi"}[
            (self.client_streaming, self.server_streaming)]

    def request_class(self) -> Type[Message]:
        """The request message class."""
        return message_class(self.input)

    def response_class(self) -> Type[Message]:
        """The response message class."""
        return message_class(self.output)


def message_class(descriptor: Descriptor) -> Type[Message]:
    """The message class of ``descriptor`` (python3-protobuf 3.x and 4.x APIs)."""
    get = getattr(message_factory, "GetMessageClass", None)
    if get is not None:
        return get(descriptor)
    return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(descriptor)


def compile_proto(proto: str, import_paths: Sequence[str] = ()) -> descriptor_pb2.FileDescriptorSet:
    """Compiles ``proto`` (and its imports) with protoc into a FileDescriptorSet.

    The proto's own directory is searched after ``import_paths`` (ghz's rule). Raises
    ConfigError with protoc's first message when it does not compile.
    """
    protoc = shutil.which("protoc")
    if protoc is None:
        raise ConfigError("--proto needs protoc (Debian package protobuf-compiler)")
    path = Path(proto)
    if not path.is_file():
        raise ConfigError(f"--proto {proto}: no such file")
    roots = [str(Path(p)) for p in import_paths] + [str(path.parent)]
    with tempfile.TemporaryDirectory(prefix="triple_py_proto_") as tmp:
        out = Path(tmp) / "set.pb"
        args = [protoc, *(f"-I{r}" for r in roots), "--include_imports",
                f"--descriptor_set_out={out}", str(path)]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
            raise ConfigError(f"--proto {proto} does not compile: "
                              f"{lines[0] if lines else 'protoc failed'}")
        return _parse_set(out.read_bytes(), f"protoc's output for {proto}")


def read_protoset(protoset: str) -> descriptor_pb2.FileDescriptorSet:
    """Reads a FileDescriptorSet file (``protoc --include_imports --descriptor_set_out``)."""
    try:
        data = Path(protoset).read_bytes()
    except OSError as exc:
        raise ConfigError(f"--protoset {protoset}: {exc.strerror}") from None
    return _parse_set(data, f"--protoset {protoset}")


def _parse_set(data: bytes, what: str) -> descriptor_pb2.FileDescriptorSet:
    fds = descriptor_pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(data)
    except DecodeError:
        raise ConfigError(f"{what}: not a FileDescriptorSet") from None
    if not fds.file:
        raise ConfigError(f"{what}: no file in the descriptor set")
    return fds


def pool_of(files: Sequence[descriptor_pb2.FileDescriptorProto]) -> descriptor_pool.DescriptorPool:
    """A fresh DescriptorPool holding ``files`` (any order; each added after its imports)."""
    pool = descriptor_pool.DescriptorPool()
    by_name = {f.name: f for f in files}
    added: set = set()

    def add(name: str, chain: tuple) -> None:
        if name in added:
            return
        if name not in by_name:
            raise ConfigError(f"schema: {chain[-1] if chain else name} imports {name}, "
                              f"which the schema does not include")
        if name in chain:
            raise ConfigError(f"schema: import cycle through {name}")
        for dep in by_name[name].dependency:
            add(dep, chain + (name,))
        try:
            pool.Add(by_name[name])
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"schema: {name}: {exc}") from None
        added.add(name)

    for f in files:
        add(f.name, ())
    return pool


def find_method(pool: descriptor_pool.DescriptorPool, method: str) -> MethodSchema:
    """The method ``method`` (``pkg.Service/Method``, ``pkg.Service.Method`` or a path).

    Raises ConfigError naming the service's methods when it is not in the schema.
    """
    path = normalize_method(method)
    _, service_name, method_name = path.split("/")
    try:
        service = pool.FindServiceByName(service_name)
    except KeyError:
        raise ConfigError(f"method {method}: no service {service_name} in the schema") from None
    found = service.methods_by_name.get(method_name)
    if found is None:
        names = ", ".join(sorted(service.methods_by_name)) or "none"
        raise ConfigError(f"method {method}: {service_name} has no method {method_name} "
                          f"(it has {names})")
    return MethodSchema(path=path, input=found.input_type, output=found.output_type,
                        client_streaming=found.client_streaming,
                        server_streaming=found.server_streaming)


def benchmark_schema() -> descriptor_pb2.FileDescriptorProto:
    """The BenchmarkService's schema (proto/benchmark.proto: ``BenchmarkRequest`` and
    ``BenchmarkResponse`` with ``bytes payload = 1``, ``UnaryCall`` and the bidi
    ``StreamCall``), built here so that its methods need neither protoc nor reflection."""
    package, service_name = BENCHMARK_SERVICE.rsplit(".", 1)
    f = descriptor_pb2.FileDescriptorProto(name="triple_py/bench/benchmark.proto",
                                           package=package, syntax="proto3")
    for name in ("BenchmarkRequest", "BenchmarkResponse"):
        f.message_type.add(name=name).field.add(
            name="payload", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    service = f.service.add(name=service_name)
    for name, streaming in (("UnaryCall", False), ("StreamCall", True)):
        service.method.add(name=name, input_type=f".{package}.BenchmarkRequest",
                           output_type=f".{package}.BenchmarkResponse",
                           client_streaming=streaming, server_streaming=streaming)
    return f
