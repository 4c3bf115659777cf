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
