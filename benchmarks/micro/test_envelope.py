"""The 5-byte gRPC envelope: encode a prefix, decode one message from a DATA chunk.

impl=c is csrc/tri_frame.c through ctypes (one call to encode, four to decode: HEADER,
CHUNK, END, NEED_MORE); impl=py is the struct-module equivalent a pure-Python client does.
"""
from __future__ import annotations

import ctypes
import struct

import pytest

PAYLOAD = 128


@pytest.mark.parametrize("impl", ["c", "py"])
def test_envelope_encode(benchmark, core, impl):
    if impl == "c":
        out = (ctypes.c_uint8 * 5)()
        put = core.lib.tri_frame_put_prefix
        benchmark(put, out, 0, PAYLOAD)
        assert bytes(out) == b"\x00\x00\x00\x00\x80"
    else:
        pack = struct.Struct(">BI").pack
        assert benchmark(pack, 0, PAYLOAD) == b"\x00\x00\x00\x00\x80"


@pytest.mark.parametrize("impl", ["c", "py"])
def test_envelope_decode(benchmark, core, impl):
    data = b"\x00" + PAYLOAD.to_bytes(4, "big") + b"x" * PAYLOAD
    if impl == "c":
        buf = ctypes.create_string_buffer(data, len(data))
        dec = ctypes.create_string_buffer(64)  # > sizeof(tri_frame_decoder)
        used = ctypes.c_size_t()
        ev = core.FrameEvent()
        init, decode = core.lib.tri_frame_decoder_init, core.lib.tri_frame_decode
        addr = ctypes.addressof(buf)
        uref, eref = ctypes.byref(used), ctypes.byref(ev)

        def run():
            init(dec)
            off, events = 0, []
            while True:
                t = decode(dec, addr + off, len(data) - off, uref, eref)
                off += used.value
                if t == core.NEED_MORE:
                    return events
                events.append(t)

        assert benchmark(run) == [core.HEADER, core.CHUNK, core.END]
    else:
        unpack = struct.Struct(">BI").unpack_from

        def run():
            flags, n = unpack(data, 0)
            return flags, data[5:5 + n]

        flags, msg = benchmark(run)
        assert flags == 0 and len(msg) == PAYLOAD


def test_ctypes_call_overhead(benchmark, core):
    """What every impl=c figure includes: one ctypes call of a trivial C function."""
    benchmark(core.lib.tri__now)
