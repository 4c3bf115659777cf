"""A method's schema from the server itself: gRPC server reflection.

Asks ``grpc.reflection.v1.ServerReflection`` first and, when the server does not implement
it, ``grpc.reflection.v1alpha.ServerReflection`` (the same messages under an older name;
grpc-go before 1.45 serves only that one). One short stream per question: the file that
defines the service, then every import the server has not sent yet. Map entries named
the way protobufjs names them (grpc-js's reflection) are renamed as protoc names them
(:mod:`.descriptor_repair`).
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Dict, List

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from ..._channel import Channel
from ..._errors import RpcError
from ..._status import StatusCode
from ..errors import ConfigError, TargetError
from .descriptor_repair import repair_map_entries
from .messages import normalize_method
from .schema import MethodSchema, compile_proto, find_method, message_class, pool_of

__all__ = ["REFLECTION_SERVICES", "method_by_reflection"]

#: The reflection services tried, in order.
REFLECTION_SERVICES = ("grpc.reflection.v1.ServerReflection",
                       "grpc.reflection.v1alpha.ServerReflection")

_PROTO = Path(__file__).resolve().parents[1] / "protos" / "server_reflection.proto"
_MAX_FILES = 1000  # a bound on the imports followed


@functools.lru_cache(maxsize=1)
def _messages() -> tuple:
    pool = pool_of(compile_proto(str(_PROTO)).file)
    request = message_class(pool.FindMessageTypeByName("triple_py.reflection.ServerReflectionRequest"))
    response = message_class(pool.FindMessageTypeByName("triple_py.reflection.ServerReflectionResponse"))
    return request, response


def _ask(channel: Channel, service: str, timeout: float, **question: str) -> list:
    request_cls, response_cls = _messages()
    call = channel.stream_stream(f"/{service}/ServerReflectionInfo",
                                 request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=response_cls.FromString)
    answers = list(call(iter([request_cls(**question)]), timeout=timeout))
    for answer in answers:
        if answer.WhichOneof("message_response") == "error_response":
            err = answer.error_response
            raise ConfigError(f"server reflection: {err.error_message or 'error'} "
                              f"(code {err.error_code})")
    return answers


def _files(answers: list) -> List[descriptor_pb2.FileDescriptorProto]:
    files = []
    for answer in answers:
        for raw in answer.file_descriptor_response.file_descriptor_proto:
            f = descriptor_pb2.FileDescriptorProto()
            try:
                f.ParseFromString(raw)
            except DecodeError:
                raise ConfigError("server reflection: a file descriptor that does not parse") \
                    from None
            files.append(f)
    return files


def method_by_reflection(channel: Channel, method: str, timeout: float = 10.0) -> MethodSchema:
    """The schema of ``method`` (``pkg.Service/Method``) as the server describes it.

    Raises ConfigError when the server does not know the service or method (or serves no
    reflection: then --proto or --protoset is needed) and TargetError when it cannot be
    reached.
    """
    service_name = normalize_method(method).split("/")[1]
    last_error = None
    for service in REFLECTION_SERVICES:
        try:
            first = _ask(channel, service, timeout, file_containing_symbol=service_name)
        except RpcError as exc:
            if exc.code() == StatusCode.UNIMPLEMENTED:
                last_error = exc
                continue
            if exc.code() in (StatusCode.UNAVAILABLE, StatusCode.DEADLINE_EXCEEDED):
                raise TargetError(f"server reflection: {exc.code().name}: "
                                  f"{exc.details()}") from None
            raise ConfigError(f"server reflection: {service_name}: {exc.code().name}: "
                              f"{exc.details()}") from None
        files: Dict[str, descriptor_pb2.FileDescriptorProto] = {f.name: f for f in _files(first)}
        missing = [d for f in files.values() for d in f.dependency if d not in files]
        while missing and len(files) < _MAX_FILES:
            name = missing.pop()
            if name in files:
                continue
            for f in _files(_ask(channel, service, timeout, file_by_filename=name)):
                files.setdefault(f.name, f)
                missing.extend(d for d in f.dependency if d not in files)
        repair_map_entries(files.values())  # grpc-js's map entries (descriptor_repair)
        return find_method(pool_of(list(files.values())), method)
    raise ConfigError(f"the server has no reflection service ({last_error.details() if last_error else ''}); "
                      f"give its schema with --proto or --protoset")
