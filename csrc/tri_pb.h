/*
 * tri_pb: protobuf-c glue.  Packs a message straight into a pooled buffer
 * after TRI_FRAME_PREFIX bytes of headroom (the MarshalAppend idea of the
 * seeds: one pass, no intermediate allocation, no copy), ready for
 * tri_call_set_request_buf.  Also the benchmark messages of proto/.
 */
#ifndef TRI_PB_H
#define TRI_PB_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "tri_buf.h"

/* Base-128 varints, the protobuf wire's integers: the one copy that the
 * client, the JSON error reader and the embedded server use.  Inline: the
 * client reads one per field of every response. */

/* Reads a varint from p[0..n) into *v.  Returns the bytes used, or 0 when
 * it is truncated or longer than 64 bits (then *v is unchanged). */
static inline size_t tri_pb_varint_get(const uint8_t *p, size_t n,
                                       uint64_t *v) {
  uint64_t x = 0;
  for (size_t i = 0; i < n && i < 10; i++) {
    uint8_t b = p[i];
    if (i == 9 && (b & 0x7e)) return 0; /* over 64 bits */
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = x;
      return i + 1;
    }
  }
  return 0;
}

/* The bytes tri_pb_varint_put writes for v (1..10). */
static inline size_t tri_pb_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

/* Writes v at out (tri_pb_varint_len(v) bytes).  Returns that length. */
static inline size_t tri_pb_varint_put(uint8_t *out, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    out[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  out[n++] = (uint8_t)v;
  return n;
}

/* Packs `msg` into a new buffer from `pool` with `headroom` bytes in front.
 * Returns 0 and the buffer (owned by the caller) in *out, or TRI_ERR_NOMEM. */
int tri_pb_pack(tri_pool *pool, const ProtobufCMessage *msg, size_t headroom,
                tri_buf **out);

/* Packs a benchmark.BenchmarkRequest{payload} the same way. */
int tri_pb_pack_benchmark_request(tri_pool *pool, const uint8_t *payload,
                                  size_t n, size_t headroom, tri_buf **out);

/* The baseline the seeds compared against: pack into a fresh heap block,
 * then copy into a pooled buffer (two passes, one extra allocation). */
int tri_pb_pack_then_copy(tri_pool *pool, const ProtobufCMessage *msg,
                          size_t headroom, tri_buf **out);

/* Finds the `payload` field (1, bytes) of a serialized BenchmarkResponse
 * without allocating: *payload borrows from `p`.  Returns 0 or
 * TRI_ERR_FRAME when the bytes are not a valid message. */
int tri_pb_benchmark_payload(const uint8_t *p, size_t n,
                             const uint8_t **payload, size_t *len);

/* Packs an org.apache.dubbo.triple.TripleRequestWrapper: `nargs` arguments
 * (already encoded by the caller, e.g. Hessian2) with their Java type names.
 * The argument bytes are read once, by the packer, straight into the pooled
 * buffer.  Returns 0 and *out (owned by the caller) or TRI_ERR_NOMEM. */
int tri_pb_pack_wrapper_request(tri_pool *pool, const char *serialize_type,
                                const uint8_t *const *args,
                                const size_t *arg_lens, const char *const *types,
                                size_t nargs, size_t headroom, tri_buf **out);

/* Reads a TripleResponseWrapper without allocating: each output borrows
 * from `p` (absent fields give length 0).  Returns 0 or TRI_ERR_FRAME. */
int tri_pb_wrapper_response(const uint8_t *p, size_t n, const uint8_t **data,
                            size_t *data_len, const char **type,
                            size_t *type_len, const char **serialize_type,
                            size_t *st_len);

#endif
