#include "tri_pb.h"

#include <string.h>

#include "benchmark.pb-c.h"
#include "triple_wrapper.pb-c.h"
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

int tri_pb_pack_wrapper_request(tri_pool *pool, const char *serialize_type,
                                const uint8_t *const *args,
                                const size_t *arg_lens, const char *const *types,
                                size_t nargs, size_t headroom, tri_buf **out) {
  enum { STACK_ARGS = 16 };
  ProtobufCBinaryData bins_stack[STACK_ARGS];
  ProtobufCBinaryData *bins = bins_stack;
  if (nargs > STACK_ARGS) {
    bins = tri_mem_alloc(pool->stats, nargs * sizeof(*bins));
    if (!bins) return TRI_ERR_NOMEM;
  }
  for (size_t i = 0; i < nargs; i++) {
    bins[i].data = (uint8_t *)args[i];
    bins[i].len = arg_lens[i];
  }
  Org__Apache__Dubbo__Triple__TripleRequestWrapper w =
      ORG__APACHE__DUBBO__TRIPLE__TRIPLE_REQUEST_WRAPPER__INIT;
  w.serializetype = (char *)serialize_type;
  w.n_args = nargs;
  w.args = bins;
  w.n_argtypes = nargs;
  w.argtypes = (char **)types;
  int rv = tri_pb_pack(pool, &w.base, headroom, out);
  if (bins != bins_stack) tri_mem_free(bins);
  return rv;
}

/* Walks the fields of a message; for each length-delimited field calls
 * visit(field number, bytes, length, ctx).  Returns 0 or TRI_ERR_FRAME. */
static int each_bytes_field(const uint8_t *p, size_t n,
                            void (*visit)(uint32_t, const uint8_t *, size_t, void *),
                            void *ctx);

typedef struct {
  const uint8_t *f[4];
  size_t len[4];
} fields4;

/* Keeps fields 1-3; the last occurrence wins, as in protobuf. */
static void keep_last(uint32_t field, const uint8_t *v, size_t len, void *ctx) {
  fields4 *f = ctx;
  if (field < 4) {
    f->f[field] = v;
    f->len[field] = len;
  }
}

int tri_pb_wrapper_response(const uint8_t *p, size_t n, const uint8_t **data,
                            size_t *data_len, const char **type,
                            size_t *type_len, const char **serialize_type,
                            size_t *st_len) {
  fields4 f = {{p, p, p, p}, {0, 0, 0, 0}};
  int rv = each_bytes_field(p, n, keep_last, &f);
  *serialize_type = (const char *)f.f[1];
  *st_len = f.len[1];
  *data = f.f[2];
  *data_len = f.len[2];
  *type = (const char *)f.f[3];
  *type_len = f.len[3];
  return rv;
}

int tri_pb_benchmark_payload(const uint8_t *p, size_t n,
                             const uint8_t **payload, size_t *len) {
  fields4 f = {{p, p, p, p}, {0, 0, 0, 0}};
  int rv = each_bytes_field(p, n, keep_last, &f);
  *payload = f.f[1];
  *len = f.len[1];
  return rv;
}

static int each_bytes_field(const uint8_t *p, size_t n,
                            void (*visit)(uint32_t, const uint8_t *, size_t, void *),
                            void *ctx) {
  size_t i = 0;
  while (i < n) {
    uint64_t key, v;
    size_t k = tri_pb_varint_get(p + i, n - i, &key);
    if (!k) return TRI_ERR_FRAME;
    i += k;
    switch (key & 7) {
    case 0: /* varint */
      if (!(k = tri_pb_varint_get(p + i, n - i, &v))) return TRI_ERR_FRAME;
      i += k;
      break;
    case 1: /* 64-bit */
      if (n - i < 8) return TRI_ERR_FRAME;
      i += 8;
      break;
    case 2: /* length-delimited */
      if (!(k = tri_pb_varint_get(p + i, n - i, &v)) || v > n - i - k)
        return TRI_ERR_FRAME;
      i += k;
      visit((uint32_t)(key >> 3), p + i, (size_t)v, ctx);
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
