/*
 * echo.c: benchmark.BenchmarkService (see echo.h).
 */
#include "server/echo.h"

#include <string.h>

#include "server/respond.h"
#include "tri_error.h"
#include "tri_wire.h"
#include "tri_pb.h"

/* x-response-size: BenchmarkResponse{payload: N x 'a'}, in an envelope for
 * gRPC, or as protojson {"payload":"<base64>"} for application/json. */
static tri_buf *generated_response(srv_stream *st) {
  size_t n = (size_t)st->resp_size;
  tri_pool *pool = pool_of(st->conn);
  if (st->json) {
    size_t q = n / 3, r = n % 3;
    tri_buf *b = tri_pool_get(pool, 16 + 4 * (q + 1), 0);
    if (!b) return NULL;
    char *p = (char *)tri_buf_begin(b);
    if (!n) {
      memcpy(p, "{}", 2);
      b->len = 2;
      return b;
    }
    size_t k = 0;
    memcpy(p, "{\"payload\":\"", 12);
    k = 12;
    for (size_t i = 0; i < q; i++, k += 4) memcpy(p + k, "YWFh", 4);
    if (r == 1) memcpy(p + k, "YQ==", 4), k += 4;
    if (r == 2) memcpy(p + k, "YWE=", 4), k += 4;
    memcpy(p + k, "\"}", 2);
    b->len = k + 2;
    return b;
  }
  uint8_t hdr[12];
  size_t h = 0;
  if (n) {
    hdr[h++] = 0x0a; /* field 1, length-delimited */
    h += tri_pb_varint_put(hdr + h, n);
  }
  size_t pre = st->wire == WIRE_GRPC ? TRI_FRAME_PREFIX : 0;
  tri_buf *b = tri_pool_get(pool, pre + h + n, 0);
  if (!b) return NULL;
  uint8_t *p = tri_buf_begin(b);
  if (pre) tri_frame_put_prefix(p, 0, (uint32_t)(h + n));
  memcpy(p + pre, hdr, h);
  memset(p + pre + h, 'a', n);
  b->len = pre + h + n;
  return b;
}

/* benchmark UnaryCall: the echo (or x-response-size).  Takes `body`. */
static void bench_unary(srv_stream *st, tri_buf *body) {
  if (st->resp_size >= 0) {
    tri_pool_put(pool_of(st->conn), body);
    if (!(body = generated_response(st))) {
      srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
  }
  if (st->wire == WIRE_TRIPLE) {
    srv_triple_respond(st, TRI_CODE_OK, body);
    return;
  }
  srv_grpc_emit(st, body, st->gz_out);
  srv_grpc_finish(st, TRI_CODE_OK, NULL, 0);
}

void srv_echo_complete(srv_stream *st, tri_buf *body) {
  if (st->method == M_UNARY) {
    bench_unary(st, body);
    return;
  }
  tri_pool_put(pool_of(st->conn), body); /* StreamCall: echoed already */
  srv_grpc_finish(st, TRI_CODE_OK, NULL, 0);
}

void srv_echo_message(srv_stream *st, tri_buf *m) {
  if (st->resp_size >= 0) {
    tri_pool_put(pool_of(st->conn), m);
    if (!(m = generated_response(st))) {
      srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
  }
  srv_grpc_emit(st, m, st->gz_out); /* before go (x-delay-ms) it waits */
}
