"""ctypes access to the C core's exported functions inside triple_py._triple.

The extension exports its core symbols (``nm -D``), so the micro-benchmarks call them
directly, without a Python binding of their own. Every call pays ctypes' own cost (a few
hundred ns: see test_ctypes_call_overhead); the comparisons that matter (pooled pack vs
pack then copy...) are between two calls that pay it alike.
"""
from __future__ import annotations

import ctypes
from ctypes import (POINTER, Structure, byref, c_int, c_int64, c_size_t, c_uint, c_uint8,
                    c_uint32, c_void_p)

import triple_py._triple as _triple

TRI_FRAME_PREFIX = 5
# tri_frame_event_type
NEED_MORE, HEADER, CHUNK, END = 0, 1, 2, 3


class TriBuf(Structure):
    """csrc/tri_buf.h ``tri_buf`` (the header; storage follows it)."""

    _fields_ = [("next", c_void_p), ("qnode", c_void_p), ("data", POINTER(c_uint8)),
                ("cap", c_size_t), ("off", c_size_t), ("len", c_size_t), ("cls", c_int)]


class BinaryData(Structure):
    """protobuf-c ``ProtobufCBinaryData``."""

    _fields_ = [("len", c_size_t), ("data", c_void_p)]


class BenchmarkRequest(Structure):
    """csrc/gen/benchmark.pb-c.h ``Benchmark__BenchmarkRequest`` (ProtobufCMessage base)."""

    _fields_ = [("descriptor", c_void_p), ("n_unknown_fields", c_uint),
                ("unknown_fields", c_void_p), ("payload", BinaryData)]


class FrameEvent(Structure):
    """csrc/tri_frame.h ``tri_frame_event``."""

    _fields_ = [("flags", c_uint8), ("length", c_uint32), ("data", c_void_p),
                ("len", c_size_t)]


BUF_P = POINTER(TriBuf)


def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(_triple.__file__)  # already loaded: the same handle
    sig = {
        "tri_pool_init": (None, [c_void_p, c_void_p]),
        "tri_pool_free": (None, [c_void_p]),
        "tri_pool_get": (BUF_P, [c_void_p, c_size_t, c_size_t]),
        "tri_pool_put": (None, [c_void_p, BUF_P]),
        "tri_pb_pack": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(BUF_P)]),
        "tri_pb_pack_then_copy": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(BUF_P)]),
        "tri_pb_benchmark_payload": (c_int, [c_void_p, c_size_t, POINTER(c_void_p),
                                             POINTER(c_size_t)]),
        "benchmark__benchmark_request__init": (None, [c_void_p]),
        "tri_frame_put_prefix": (None, [c_void_p, c_uint8, c_uint32]),
        "tri_frame_decoder_init": (None, [c_void_p]),
        "tri_frame_decode": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_size_t),
                                     POINTER(FrameEvent)]),
        "tri_gzip_pool_init": (None, [c_void_p, c_void_p]),
        "tri_gzip_pool_free": (None, [c_void_p]),
        "tri_gzip_compress": (c_int, [c_void_p, c_void_p, c_void_p, c_size_t, c_size_t,
                                      POINTER(BUF_P)]),
        "tri_gzip_decompress": (c_int, [c_void_p, c_void_p, c_void_p, c_size_t, c_int64,
                                        POINTER(BUF_P)]),
        "tri__now": (c_int64, []),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)  # AttributeError: the symbol is not exported
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


lib = _lib()


class Pool:
    """A tri_pool (and a tri_gzip_pool) in ctypes-owned memory, no stats."""

    def __init__(self) -> None:
        self._mem = ctypes.create_string_buffer(4096)  # > sizeof(tri_pool): 8 classes
        self._zmem = ctypes.create_string_buffer(1024)  # > sizeof(tri_gzip_pool)
        self.ptr = ctypes.cast(self._mem, c_void_p)
        self.zptr = ctypes.cast(self._zmem, c_void_p)
        lib.tri_pool_init(self.ptr, None)
        lib.tri_gzip_pool_init(self.zptr, None)

    def close(self) -> None:
        lib.tri_gzip_pool_free(self.zptr)
        lib.tri_pool_free(self.ptr)


def buf_bytes(b) -> bytes:
    """The content of a tri_buf*."""
    t = b.contents
    return ctypes.string_at(ctypes.addressof(t.data.contents) + t.off, t.len)


def request(payload: bytes):
    """A BenchmarkRequest{payload} (the payload buffer is kept on the object)."""
    msg = BenchmarkRequest()
    lib.benchmark__benchmark_request__init(byref(msg))
    keep = ctypes.create_string_buffer(payload, len(payload))
    msg.payload.len = len(payload)
    msg.payload.data = ctypes.cast(keep, c_void_p)
    msg._keep = keep
    return msg
