/* test_buf.c: pooled buffers with headroom. */
#include "tri_buf.h"
#include "tri_test.h"

static void headroom_and_reuse(void) {
  tri_stats st = {0};
  tri_pool pool;
  tri_pool_init(&pool, &st);
  tri_buf *b = tri_pool_get(&pool, 100, 5);
  CHECK(b != NULL);
  CHECK_EQ_INT(b->off, 5);
  CHECK_EQ_INT(b->len, 0);
  CHECK(b->cap >= 105);
  CHECK_EQ_INT(st.pool_misses, 1);
  uint8_t *first = b->data;
  tri_pool_put(&pool, b);
  tri_buf *c = tri_pool_get(&pool, 200, 5); /* same 512-byte class */
  CHECK(c->data == first);
  CHECK_EQ_INT(st.pool_hits, 1);
  CHECK_EQ_INT(st.allocations, 1);
  tri_pool_put(&pool, c);
  tri_pool_free(&pool);
}

static void size_classes(void) {
  tri_stats st = {0};
  tri_pool pool;
  tri_pool_init(&pool, &st);
  tri_buf *small = tri_pool_get(&pool, 10, 0);
  tri_buf *mid = tri_pool_get(&pool, 5000, 0);
  tri_buf *huge = tri_pool_get(&pool, 64u << 20, 0); /* beyond the classes */
  CHECK_EQ_INT(small->cap, 512);
  CHECK_EQ_INT(mid->cap, 8192);
  CHECK_EQ_INT(huge->cls, -1);
  CHECK(huge->cap >= (64u << 20));
  tri_pool_put(&pool, small);
  tri_pool_put(&pool, mid);
  tri_pool_put(&pool, huge); /* unpooled: freed */
  tri_buf *again = tri_pool_get(&pool, 64u << 20, 0);
  CHECK_EQ_INT(st.pool_misses, 4);
  tri_pool_put(&pool, again);
  tri_pool_free(&pool);
}

static void append_grows_and_keeps_content(void) {
  tri_pool pool;
  tri_pool_init(&pool, NULL);
  tri_buf *b = tri_pool_get(&pool, 1, 5);
  uint8_t chunk[300];
  for (int i = 0; i < 300; i++) chunk[i] = (uint8_t)i;
  for (int i = 0; i < 20; i++) CHECK_EQ_INT(tri_buf_append(&pool, &b, chunk, 300), 0);
  CHECK_EQ_INT(b->len, 6000);
  CHECK_EQ_INT(tri_buf_append(&pool, &b, NULL, 0), 0); /* nothing, from nowhere */
  CHECK_EQ_INT(b->len, 6000);
  CHECK_EQ_INT(b->off, 5); /* headroom survives growth */
  int ok = 1;
  for (int i = 0; i < 6000; i++) ok &= tri_buf_begin(b)[i] == (uint8_t)(i % 300);
  CHECK(ok);
  tri_pool_put(&pool, b);
  tri_pool_free(&pool);
}

static void cache_is_bounded(void) {
  tri_stats st = {0};
  tri_pool pool;
  tri_pool_init(&pool, &st);
  pool.max_cached_bytes = 2 * 512;
  tri_buf *bs[4];
  for (int i = 0; i < 4; i++) bs[i] = tri_pool_get(&pool, 100, 0);
  for (int i = 0; i < 4; i++) tri_pool_put(&pool, bs[i]);
  CHECK_EQ_INT(pool.cls[0].count, 2);
  tri_pool_free(&pool);
}

/* tri_pool_keep: the limit grows to hold `count` buffers of the class and
 * then they all stay cached (no malloc on the next round); it never shrinks,
 * and a size beyond the largest class changes nothing. */
static void keep_raises_the_cache_limit(void) {
  tri_stats st = {0};
  tri_pool pool;
  tri_pool_init(&pool, &st);
  size_t before = pool.max_cached_bytes;
  size_t big = (1u << 20) + 69; /* a 1 MiB message: the 2 MiB class */
  tri_pool_keep(&pool, 40, big);
  CHECK(pool.max_cached_bytes >= 40 * ((size_t)2 << 20));
  tri_buf *bs[40];
  for (int i = 0; i < 40; i++) bs[i] = tri_pool_get(&pool, big, 5);
  for (int i = 0; i < 40; i++) tri_pool_put(&pool, bs[i]);
  uint64_t allocated = st.allocations;
  for (int i = 0; i < 40; i++) bs[i] = tri_pool_get(&pool, big, 5);
  CHECK_EQ_INT(st.allocations, allocated);
  for (int i = 0; i < 40; i++) tri_pool_put(&pool, bs[i]);
  size_t raised = pool.max_cached_bytes;
  tri_pool_keep(&pool, 1, 100);
  CHECK_EQ_INT(pool.max_cached_bytes, raised);
  tri_pool_keep(&pool, 1000, (size_t)1 << 30); /* unpooled size */
  CHECK_EQ_INT(pool.max_cached_bytes, raised);
  CHECK(raised > before);
  tri_pool_free(&pool);
}

/* peak_cached_bytes: a class keeps as many buffers as were ever out at once
 * (so a second round of the same working set allocates nothing), past the
 * pool's own limit but never past peak_cached_bytes. */
static void peak_working_set_stays_cached(void) {
  tri_stats st = {0};
  tri_pool pool;
  tri_pool_init(&pool, &st);
  pool.max_cached_bytes = 2 * 8192;
  pool.peak_cached_bytes = 6 * 8192;
  tri_buf *bs[8];
  for (int i = 0; i < 5; i++) bs[i] = tri_pool_get(&pool, 5000, 0); /* 8 KiB class */
  CHECK_EQ_INT(pool.cls[2].peak, 5);
  for (int i = 0; i < 5; i++) tri_pool_put(&pool, bs[i]);
  CHECK_EQ_INT(pool.cls[2].count, 5); /* the working set, over max_cached_bytes */
  CHECK_EQ_INT(pool.cls[2].out, 0);
  uint64_t allocated = st.allocations;
  for (int i = 0; i < 5; i++) bs[i] = tri_pool_get(&pool, 5000, 0);
  CHECK_EQ_INT(st.allocations, allocated);
  for (int i = 0; i < 5; i++) tri_pool_put(&pool, bs[i]);
  for (int i = 0; i < 8; i++) bs[i] = tri_pool_get(&pool, 5000, 0); /* a bigger peak */
  for (int i = 0; i < 8; i++) tri_pool_put(&pool, bs[i]);
  CHECK_EQ_INT(pool.cls[2].peak, 8);
  CHECK_EQ_INT(pool.cls[2].count, 6); /* bounded by peak_cached_bytes */
  tri_pool_free(&pool);

  /* The detached pool: 50 responses of 1 MiB at once (the 2 MiB class, 100
   * MiB, over TRI_DETACHED_CACHED), then the same again from the cache. */
  tri_buf *big[50];
  for (int i = 0; i < 50; i++) big[i] = tri_buf_new(&st, 1u << 20, 64);
  for (int i = 0; i < 50; i++) tri_buf_free(big[i]);
  allocated = st.allocations;
  for (int i = 0; i < 50; i++) big[i] = tri_buf_new(&st, 1u << 20, 64);
  CHECK_EQ_INT(st.allocations, allocated);
  for (int i = 0; i < 50; i++) tri_buf_free(big[i]);
}

/* Detached buffers: headroom as asked, reused from the process-wide pool
 * after tri_buf_free, never kept by a channel's pool (tri_pool_put hands them
 * back to theirs), and valid after that channel's pool is gone. */
static void detached_buffers(void) {
  tri_stats st = {0};
  tri_buf *b = tri_buf_new(&st, 100000, 64);
  CHECK(b != NULL);
  CHECK(tri_buf_detached(b));
  CHECK_EQ_INT(b->off, 64);
  CHECK_EQ_INT(b->len, 0);
  CHECK(b->cap >= 100064);
  uint8_t *first = b->data;
  tri_buf_free(b);
  tri_buf *again = tri_buf_new(&st, 90000, 64); /* same class: the one just freed */
  CHECK(again->data == first);
  CHECK_EQ_INT(again->off, 64);
  CHECK(tri_buf_detached(again));

  tri_pool pool;
  tri_pool_init(&pool, &st);
  tri_buf *pooled = tri_pool_get(&pool, 100000, 0);
  CHECK(!tri_buf_detached(pooled));
  tri_pool_put(&pool, again); /* not this pool's: back to the detached pool */
  tri_pool_put(&pool, pooled);
  CHECK_EQ_INT(pool.cls[4].count, 1); /* 128 KiB class: `pooled` alone */
  tri_buf *third = tri_buf_new(NULL, 100000, 64);
  CHECK(third->data == first);
  tri_pool_free(&pool);
  memset(tri_buf_begin(third), 1, 100000); /* still the caller's memory */
  tri_buf_free(third);
  tri_buf_free(NULL);
}

void test_buf(void) {
  detached_buffers();
  peak_working_set_stays_cached();
  headroom_and_reuse();
  size_classes();
  append_grows_and_keeps_content();
  cache_is_bounded();
  keep_raises_the_cache_limit();
}
