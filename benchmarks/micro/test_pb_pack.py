"""protobuf-c: pack a BenchmarkRequest straight into a pooled buffer behind 5 bytes of
headroom (tri_pb_pack: the seeds' MarshalAppend idea) vs pack into a heap block then copy
into a pooled buffer (tri_pb_pack_then_copy: the baseline they compared against).
``python -m triple_py.benchstat -col /method results/microbench.json`` compares them."""
from __future__ import annotations

import ctypes

import pytest


@pytest.mark.parametrize("payload", [128, 4096, 65536, 1 << 20])
@pytest.mark.parametrize("method", ["pooled", "copy"])
def test_pb_pack(benchmark, core, pool, method, payload):
    msg = core.request(bytes(range(256)) * (payload // 256) + b"x" * (payload % 256))
    pack = core.lib.tri_pb_pack if method == "pooled" else core.lib.tri_pb_pack_then_copy
    put = core.lib.tri_pool_put
    out = core.BUF_P()
    p, m, o = pool.ptr, ctypes.byref(msg), ctypes.byref(out)

    def run():
        rc = pack(p, m, 5, o)
        put(p, out)
        return rc

    assert run() == 0
    assert benchmark(run) == 0
    # the packed bytes are a valid BenchmarkRequest with the payload behind the headroom
    assert pack(p, m, 5, o) == 0
    assert out.contents.off == 5
    data = core.buf_bytes(out)
    field, flen = ctypes.c_void_p(), ctypes.c_size_t()
    buf = ctypes.create_string_buffer(data, len(data))
    assert core.lib.tri_pb_benchmark_payload(buf, len(data), ctypes.byref(field),
                                             ctypes.byref(flen)) == 0
    assert flen.value == payload
    put(p, out)
