/* test_gzip.c: compression into pooled buffers and bounded inflation. */
#include <stdlib.h>
#include <zlib.h>

#include "tri_error.h"
#include "tri_gzip.h"
#include "tri_test.h"

static void round_trip(tri_gzip_pool *zp, tri_pool *pool) {
  uint8_t in[16384];
  for (size_t i = 0; i < sizeof(in); i++) in[i] = (uint8_t)("abcdefgh"[i % 8]);
  tri_buf *c, *d;
  CHECK_EQ_INT(tri_gzip_compress(zp, pool, in, sizeof(in), 5, &c), 0);
  CHECK_EQ_INT(c->off, 5); /* headroom kept for the envelope prefix */
  CHECK(c->len < sizeof(in) / 10);
  CHECK_EQ_INT(tri_buf_begin(c)[0], 0x1f); /* gzip magic */
  CHECK_EQ_INT(tri_buf_begin(c)[1], 0x8b);
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, tri_buf_begin(c), c->len, 1 << 20, &d), 0);
  CHECK_MEM(tri_buf_begin(d), d->len, in, sizeof(in));
  tri_pool_put(pool, c);
  tri_pool_put(pool, d);
  /* empty input */
  CHECK_EQ_INT(tri_gzip_compress(zp, pool, in, 0, 0, &c), 0);
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, tri_buf_begin(c), c->len, 10, &d), 0);
  CHECK_EQ_INT(d->len, 0);
  tri_pool_put(pool, c);
  tri_pool_put(pool, d);
}

static void bomb_is_bounded(tri_gzip_pool *zp, tri_pool *pool) {
  size_t big = 64u << 20; /* 64 MiB of zeros compresses to ~64 KiB */
  uint8_t *zeros = calloc(1, big);
  tri_buf *c, *d = NULL;
  CHECK_EQ_INT(tri_gzip_compress(zp, pool, zeros, big, 0, &c), 0);
  free(zeros);
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, tri_buf_begin(c), c->len, 1 << 20, &d),
               TRI_ERR_TOO_LARGE);
  CHECK(d == NULL);
  /* exactly at the limit is fine */
  uint8_t small[1000] = {0};
  tri_buf *c2;
  CHECK_EQ_INT(tri_gzip_compress(zp, pool, small, 1000, 0, &c2), 0);
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, tri_buf_begin(c2), c2->len, 1000, &d), 0);
  CHECK_EQ_INT(d->len, 1000);
  tri_pool_put(pool, d);
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, tri_buf_begin(c2), c2->len, 999, &d),
               TRI_ERR_TOO_LARGE);
  tri_pool_put(pool, c);
  tri_pool_put(pool, c2);
}

static void corrupt_is_rejected(tri_gzip_pool *zp, tri_pool *pool) {
  uint8_t in[100];
  memset(in, 'x', sizeof(in));
  tri_buf *c, *d;
  CHECK_EQ_INT(tri_gzip_compress(zp, pool, in, sizeof(in), 0, &c), 0);
  /* truncated */
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, tri_buf_begin(c), c->len - 4, -1, &d),
               TRI_ERR_FRAME);
  /* flipped byte in the deflate data or the CRC */
  tri_buf_begin(c)[c->len - 6] ^= 0xff;
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, tri_buf_begin(c), c->len, -1, &d),
               TRI_ERR_FRAME);
  /* not gzip at all */
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, in, sizeof(in), -1, &d), TRI_ERR_FRAME);
  tri_pool_put(pool, c);
}

static void streams_are_reused(tri_gzip_pool *zp, tri_pool *pool, tri_stats *st) {
  uint8_t in[512] = {1};
  tri_buf *c, *d;
  tri_gzip_compress(zp, pool, in, sizeof(in), 5, &c);
  tri_gzip_decompress(zp, pool, tri_buf_begin(c), c->len, -1, &d);
  tri_pool_put(pool, c);
  tri_pool_put(pool, d);
  uint64_t before = st->allocations;
  for (int i = 0; i < 50; i++) {
    tri_gzip_compress(zp, pool, in, sizeof(in), 5, &c);
    tri_gzip_decompress(zp, pool, tri_buf_begin(c), c->len, -1, &d);
    tri_pool_put(pool, c);
    tri_pool_put(pool, d);
  }
  CHECK_EQ_INT(st->allocations, before); /* steady state: nothing new */
}

/* Deflate is the zlib format (RFC 1950), as grpc core's "deflate": zlib's own
 * uncompress() reads it; gzip data is not deflate data, nor the reverse. */
static void deflate_is_zlib_format(tri_gzip_pool *zp, tri_pool *pool) {
  uint8_t in[8192];
  for (size_t i = 0; i < sizeof(in); i++) in[i] = (uint8_t)("triple"[i % 6]);
  tri_buf *c, *d, *g;
  CHECK_EQ_INT(tri_zlib_compress(zp, TRI_ZFMT_DEFLATE, pool, in, sizeof(in), 5, &c), 0);
  CHECK(c->len < sizeof(in) / 10);
  CHECK_EQ_INT(tri_buf_begin(c)[0] & 0x0f, 8); /* CM = 8: deflate, zlib header */
  CHECK_EQ_INT(((tri_buf_begin(c)[0] << 8) | tri_buf_begin(c)[1]) % 31, 0);
  uint8_t plain[sizeof(in)];
  uLongf plain_len = sizeof(plain);
  CHECK_EQ_INT(uncompress(plain, &plain_len, tri_buf_begin(c), c->len), Z_OK);
  CHECK_MEM(plain, plain_len, in, sizeof(in));
  CHECK_EQ_INT(tri_zlib_decompress(zp, TRI_ZFMT_DEFLATE, pool, tri_buf_begin(c), c->len,
                                   1 << 20, &d), 0);
  CHECK_MEM(tri_buf_begin(d), d->len, in, sizeof(in));
  CHECK_EQ_INT(tri_gzip_decompress(zp, pool, tri_buf_begin(c), c->len, -1, &g),
               TRI_ERR_FRAME);
  tri_pool_put(pool, d);
  tri_pool_put(pool, c);
  CHECK_EQ_INT(tri_gzip_compress(zp, pool, in, sizeof(in), 0, &g), 0);
  CHECK_EQ_INT(tri_zlib_decompress(zp, TRI_ZFMT_DEFLATE, pool, tri_buf_begin(g), g->len,
                                   -1, &d), TRI_ERR_FRAME);
  tri_pool_put(pool, g);
  CHECK_EQ_INT(tri_zlib_compress(zp, 7, pool, in, 1, 0, &c), TRI_ERR_INVALID);
}

void test_gzip(void) {
  tri_stats st = {0};
  tri_pool pool;
  tri_gzip_pool zp;
  tri_pool_init(&pool, &st);
  tri_gzip_pool_init(&zp, &st);
  round_trip(&zp, &pool);
  bomb_is_bounded(&zp, &pool);
  corrupt_is_rejected(&zp, &pool);
  streams_are_reused(&zp, &pool, &st);
  deflate_is_zlib_format(&zp, &pool);
  tri_gzip_pool_free(&zp);
  tri_pool_free(&pool);
}
