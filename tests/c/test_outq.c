/* test_outq.c: the connection output queue (tri_outq), shared by the client
 * connection and the embedded server. */
#include <stdint.h>
#include <sys/uio.h>

#include "tri_mem.h"
#include "tri_outq.h"
#include "tri_test.h"

typedef struct {
  int done, parts;
  size_t part_bytes;
  tri_buf *bufs[8];
  int nbufs;
} seen;

static void on_done(tri_outq_entry *e, void *ctx) {
  seen *s = ctx;
  s->done++;
  if (e->buf && s->nbufs < 8) s->bufs[s->nbufs++] = e->buf;
}

static void on_part(tri_outq_entry *e, size_t n, void *ctx) {
  seen *s = ctx;
  s->parts++;
  s->part_bytes += n;
}

/* The bytes the iovecs would write, concatenated. */
static size_t gather(const tri_outq *q, uint8_t *out, size_t cap) {
  struct iovec iov[16];
  size_t bytes, k = tri_outq_iov(q, iov, 16, &bytes), n = 0;
  for (size_t i = 0; i < k && n + iov[i].iov_len <= cap; i++) {
    memcpy(out + n, iov[i].iov_base, iov[i].iov_len);
    n += iov[i].iov_len;
  }
  CHECK_EQ_INT(n, bytes);
  return n;
}

/* A queue over entries[0..cap) with a small staging buffer from `pool`
 * (set up here, counting into `stats`). */
static void queue_init(tri_outq *q, tri_outq_entry *entries, size_t cap,
                       int growable, tri_pool *pool, tri_stats *stats) {
  memset(stats, 0, sizeof(*stats));
  tri_pool_init(pool, stats);
  tri_outq_init(q, entries, cap, tri_pool_get(pool, 16, 0), pool, stats,
                growable);
}

/* Staged bytes in a row share an entry; a reference entry sits between them
 * in order; partial writes advance the entry they end in. */
static void order_and_partial_writes(void) {
  tri_stats stats;
  tri_pool pool;
  tri_outq_entry entries[8];
  tri_outq q;
  queue_init(&q, entries, 8, 0, &pool, &stats);
  static const uint8_t body[] = "BODYBODY";
  CHECK_EQ_INT(tri_outq_stage(&q, "hdr1", 4), 0);
  CHECK_EQ_INT(tri_outq_stage(&q, "hdr2", 4), 0);
  CHECK_EQ_INT(q.n, 1); /* coalesced */
  tri_outq_entry *e = tri_outq_push(&q, body, 0, 8);
  CHECK(e != NULL);
  CHECK_EQ_INT(tri_outq_stage(&q, "tail", 4), 0);
  CHECK_EQ_INT(q.n, 3);
  CHECK_EQ_INT(q.pending, 20);
  uint8_t out[64];
  size_t n = gather(&q, out, sizeof(out));
  CHECK_STR(out, n, "hdr1hdr2BODYBODYtail");

  seen s = {0};
  CHECK_EQ_INT(tri_outq_written(&q, 10, on_done, on_part, &s), 0);
  CHECK_EQ_INT(s.done, 1);
  CHECK_EQ_INT(s.parts, 1);
  CHECK_EQ_INT(s.part_bytes, 2);
  CHECK_EQ_INT(q.pending, 10);
  n = gather(&q, out, sizeof(out));
  CHECK_STR(out, n, "DYBODYtail");
  CHECK_EQ_INT(tri_outq_written(&q, 10, on_done, on_part, &s), 1);
  CHECK_EQ_INT(s.done, 3);
  CHECK(tri_outq_empty(&q));
  CHECK_EQ_INT(q.pending, 0);
  CHECK_EQ_INT(q.staging->len, 0);
  tri_pool_put(&pool, q.staging);
  tri_pool_free(&pool);
}

/* A fixed queue refuses a new entry when full (the client makes room
 * first); a growable one doubles, keeping its entries, and hands each
 * entry's buffer back once written, empty entries included, in order. */
static void capacity_and_buffers(void) {
  tri_stats stats;
  tri_pool pool;
  tri_outq_entry fixed[2];
  tri_outq q;
  queue_init(&q, fixed, 2, 0, &pool, &stats);
  static const uint8_t a[] = "aaaa", b[] = "bbbb";
  CHECK(tri_outq_push(&q, a, 0, 4) != NULL);
  CHECK(tri_outq_push(&q, b, 0, 4) != NULL);
  CHECK(tri_outq_push(&q, a, 0, 4) == NULL);
  CHECK_EQ_INT(tri_outq_stage(&q, "x", 1), TRI_ERR_NOMEM);
  CHECK_EQ_INT(q.pending, 8);
  CHECK_EQ_INT(q.staging->len, 0); /* the failed stage left nothing */
  seen s = {0};
  tri_outq_drop(&q, on_done, &s);
  CHECK_EQ_INT(s.done, 2);
  CHECK(tri_outq_empty(&q));
  tri_pool_put(&pool, q.staging);

  tri_outq_entry *grown = tri_mem_alloc(&stats, 2 * sizeof(*grown));
  tri_outq_init(&q, grown, 2, tri_pool_get(&pool, 16, 0), &pool, &stats, 1);
  tri_buf *b1 = tri_pool_get(&pool, 8, 0), *b2 = tri_pool_get(&pool, 8, 0);
  for (int i = 0; i < 5; i++) CHECK(tri_outq_push(&q, a, 0, 4) != NULL);
  tri_outq_entry *e = tri_outq_push(&q, b, 0, 4);
  e->buf = b1;
  e = tri_outq_push(&q, NULL, 0, 0); /* empty: only hands b2 back */
  e->buf = b2;
  CHECK_EQ_INT(q.cap, 8);
  CHECK_EQ_INT(q.pending, 24);
  memset(&s, 0, sizeof(s));
  CHECK_EQ_INT(tri_outq_written(&q, 24, on_done, NULL, &s), 1);
  CHECK_EQ_INT(s.done, 7);
  CHECK_EQ_INT(s.nbufs, 2);
  CHECK(s.bufs[0] == b1 && s.bufs[1] == b2);
  tri_pool_put(&pool, b1);
  tri_pool_put(&pool, b2);
  tri_pool_put(&pool, q.staging);
  tri_mem_free(q.e);
  tri_pool_free(&pool);
}

void test_outq(void) {
  order_and_partial_writes();
  capacity_and_buffers();
}
