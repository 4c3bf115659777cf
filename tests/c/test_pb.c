/* test_pb.c: packing into pooled buffers after the envelope headroom. */
#include "benchmark.pb-c.h"
#include "tri_frame.h"
#include "tri_pb.h"
#include "tri_test.h"
#include "triple_wrapper.pb-c.h"

void test_pb(void) {
  tri_stats st = {0};
  tri_pool pool;
  tri_pool_init(&pool, &st);
  uint8_t payload[300];
  memset(payload, 'p', sizeof(payload));
  tri_buf *b;
  CHECK_EQ_INT(tri_pb_pack_benchmark_request(&pool, payload, 300,
                                             TRI_FRAME_PREFIX, &b), 0);
  CHECK_EQ_INT(b->off, TRI_FRAME_PREFIX);
  /* field 1, wire type 2, varint length 300 = 0xAC 0x02 */
  CHECK_EQ_INT(b->len, 303);
  CHECK_EQ_INT(tri_buf_begin(b)[0], 0x0A);
  const uint8_t *p;
  size_t n;
  CHECK_EQ_INT(tri_pb_benchmark_payload(tri_buf_begin(b), b->len, &p, &n), 0);
  CHECK_MEM(p, n, payload, 300);
  Benchmark__BenchmarkRequest *back =
      benchmark__benchmark_request__unpack(NULL, b->len, tri_buf_begin(b));
  CHECK(back && back->payload.len == 300);
  benchmark__benchmark_request__free_unpacked(back, NULL);

  /* pack-then-copy gives the same bytes at the cost of one more allocation */
  Benchmark__BenchmarkRequest req = BENCHMARK__BENCHMARK_REQUEST__INIT;
  req.payload.data = payload;
  req.payload.len = 300;
  tri_buf *c;
  uint64_t before = st.allocations;
  CHECK_EQ_INT(tri_pb_pack_then_copy(&pool, &req.base, 5, &c), 0);
  CHECK_MEM(tri_buf_begin(c), c->len, tri_buf_begin(b), b->len);
  CHECK(st.allocations > before);
  tri_pool_put(&pool, b);
  tri_pool_put(&pool, c);
  before = st.allocations;
  CHECK_EQ_INT(tri_pb_pack_benchmark_request(&pool, payload, 300, 5, &b), 0);
  CHECK_EQ_INT(st.allocations, before); /* steady state: from the pool */
  tri_pool_put(&pool, b);

  /* malformed input is rejected, not over-read */
  const uint8_t bad[] = {0x0A, 0x10, 'x'};
  CHECK_EQ_INT(tri_pb_benchmark_payload(bad, 3, &p, &n), -504);
  const uint8_t empty[1] = {0};
  CHECK_EQ_INT(tri_pb_benchmark_payload(empty, 0, &p, &n), 0);
  CHECK_EQ_INT(n, 0);
  /* the wrapper codec: arguments packed once, straight into the buffer */
  const uint8_t *args[2] = {(const uint8_t *)"\x05hello", (const uint8_t *)"\x91"};
  size_t lens[2] = {6, 1};
  const char *types[2] = {"java.lang.String", "int"};
  CHECK_EQ_INT(tri_pb_pack_wrapper_request(&pool, "hessian2", args, lens, types, 2,
                                           5, &b), 0);
  Org__Apache__Dubbo__Triple__TripleRequestWrapper *w =
      org__apache__dubbo__triple__triple_request_wrapper__unpack(NULL, b->len,
                                                                 tri_buf_begin(b));
  CHECK(w != NULL);
  if (w) {
    CHECK(strcmp(w->serializetype, "hessian2") == 0);
    CHECK_EQ_INT(w->n_args, 2);
    CHECK_MEM(w->args[0].data, w->args[0].len, "\x05hello", 6);
    CHECK(strcmp(w->argtypes[1], "int") == 0);
    org__apache__dubbo__triple__triple_request_wrapper__free_unpacked(w, NULL);
  }
  tri_pool_put(&pool, b);
  Org__Apache__Dubbo__Triple__TripleResponseWrapper r =
      ORG__APACHE__DUBBO__TRIPLE__TRIPLE_RESPONSE_WRAPPER__INIT;
  r.serializetype = "hessian2";
  r.data.data = (uint8_t *)"\x05world";
  r.data.len = 6;
  r.type = "java.lang.String";
  CHECK_EQ_INT(tri_pb_pack(&pool, &r.base, 0, &b), 0);
  const uint8_t *data;
  const char *type, *stype;
  size_t dl, tl, sl;
  CHECK_EQ_INT(tri_pb_wrapper_response(tri_buf_begin(b), b->len, &data, &dl, &type,
                                       &tl, &stype, &sl), 0);
  CHECK_MEM(data, dl, "\x05world", 6);
  CHECK_STR(type, tl, "java.lang.String");
  CHECK_STR(stype, sl, "hessian2");
  tri_pool_put(&pool, b);
  tri_pool_free(&pool);
}
