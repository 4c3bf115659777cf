#include "tri_pb.h"

#include <string.h>

#include "benchmark.pb-c.h"
#include "tri_error.h"
#include "tri_mem.h"

int tri_pb_pack(tri_pool *pool, const ProtobufCMessage *msg, size_t headroom,
                tri_buf **out) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  tri_buf *b = tri_pool_get(pool, n, headroom);
  if (!b) return TRI_ERR_NOMEM;
  b->len = protobuf_c_message_pack(msg, tri_buf_begin(b));
  *out = b;
  return 0;
}

int tri_pb_pack_benchmark_request(tri_pool *pool, const uint8_t *payload,
                                  size_t n, size_t headroom, tri_buf **out) {
  Benchmark__BenchmarkRequest req = BENCHMARK__BENCHMARK_REQUEST__INIT;
  req.payload.data = (uint8_t *)payload;
  req.payload.len = n;
  return tri_pb_pack(pool, &req.base, headroom, out);
}

int tri_pb_pack_then_copy(tri_pool *pool, const ProtobufCMessage *msg,
                          size_t headroom, tri_buf **out) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  uint8_t *tmp = tri_mem_alloc(pool->stats, n ? n : 1);
  if (!tmp) return TRI_ERR_NOMEM;
  protobuf_c_message_pack(msg, tmp);
  tri_buf *b = tri_pool_get(pool, n, headroom);
  if (!b) {
    tri_mem_free(tmp);
    return TRI_ERR_NOMEM;
  }
  memcpy(tri_buf_begin(b), tmp, n);
  b->len = n;
  tri_mem_free(tmp);
  *out = b;
  return 0;
}

/* Reads a base-128 varint; returns bytes used or 0 when malformed. */
static size_t varint(const uint8_t *p, size_t n, uint64_t *v) {
  *v = 0;
  for (size_t i = 0; i < n && i < 10; i++) {
    *v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) return i + 1;
  }
  return 0;
}

int tri_pb_benchmark_payload(const uint8_t *p, size_t n,
                             const uint8_t **payload, size_t *len) {
  *payload = p;
  *len = 0;
  size_t i = 0;
  while (i < n) {
    uint64_t key, v;
    size_t k = varint(p + i, n - i, &key);
    if (!k) return TRI_ERR_FRAME;
    i += k;
    switch (key & 7) {
    case 0: /* varint */
      if (!(k = varint(p + i, n - i, &v))) return TRI_ERR_FRAME;
      i += k;
      break;
    case 1: /* 64-bit */
      if (n - i < 8) return TRI_ERR_FRAME;
      i += 8;
      break;
    case 2: /* length-delimited */
      if (!(k = varint(p + i, n - i, &v)) || v > n - i - k)
        return TRI_ERR_FRAME;
      i += k;
      if (key >> 3 == 1) { /* last occurrence wins, as in protobuf */
        *payload = p + i;
        *len = (size_t)v;
      }
      i += (size_t)v;
      break;
    case 5: /* 32-bit */
      if (n - i < 4) return TRI_ERR_FRAME;
      i += 4;
      break;
    default:
      return TRI_ERR_FRAME;
    }
  }
  return 0;
}
