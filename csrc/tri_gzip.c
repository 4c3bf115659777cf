#include "tri_gzip.h"

#include <string.h>
#include <zlib.h>

#include "tri_error.h"
#include "tri_mem.h"

struct tri_zstream {
  z_stream zs;
  tri_zstream *next;
};

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  return tri_mem_calloc(opaque, items, size);
}
static void z_free(voidpf opaque, voidpf p) {
  (void)opaque;
  tri_mem_free(p);
}

void tri_gzip_pool_init(tri_gzip_pool *zp, tri_stats *stats) {
  memset(zp, 0, sizeof(*zp));
  pthread_mutex_init(&zp->lock, NULL);
  zp->stats = stats;
}

static void free_list(tri_zstream *z, int deflater) {
  while (z) {
    tri_zstream *next = z->next;
    if (deflater) deflateEnd(&z->zs);
    else inflateEnd(&z->zs);
    tri_mem_free(z);
    z = next;
  }
}

void tri_gzip_pool_free(tri_gzip_pool *zp) {
  for (int f = 0; f < TRI_ZFMT_COUNT; f++) {
    free_list(zp->deflaters[f], 1);
    free_list(zp->inflaters[f], 0);
    zp->deflaters[f] = zp->inflaters[f] = NULL;
  }
  pthread_mutex_destroy(&zp->lock);
}

/* Takes a ready stream (reset) or makes one.  NULL when out of memory. */
static tri_zstream *take(tri_gzip_pool *zp, int format, int deflater) {
  pthread_mutex_lock(&zp->lock);
  tri_zstream **head = deflater ? &zp->deflaters[format] : &zp->inflaters[format];
  tri_zstream *z = *head;
  if (z) *head = z->next;
  pthread_mutex_unlock(&zp->lock);
  if (z) return z;
  z = tri_mem_calloc(zp->stats, 1, sizeof(*z));
  if (!z) return NULL;
  z->zs.zalloc = z_alloc;
  z->zs.zfree = z_free;
  z->zs.opaque = zp->stats;
  /* windowBits 15 + 16: gzip wrapper, as grpc-encoding: gzip requires;
   * 15: zlib wrapper, grpc core's "deflate". */
  int bits = format == TRI_ZFMT_GZIP ? 15 + 16 : 15;
  int rv = deflater ? deflateInit2(&z->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                                   bits, 8, Z_DEFAULT_STRATEGY)
                    : inflateInit2(&z->zs, bits);
  if (rv != Z_OK) {
    tri_mem_free(z);
    return NULL;
  }
  return z;
}

static void give_back(tri_gzip_pool *zp, int format, tri_zstream *z, int deflater) {
  if (deflater) deflateReset(&z->zs);
  else inflateReset(&z->zs);
  pthread_mutex_lock(&zp->lock);
  tri_zstream **head = deflater ? &zp->deflaters[format] : &zp->inflaters[format];
  z->next = *head;
  *head = z;
  pthread_mutex_unlock(&zp->lock);
}

int tri_gzip_compress(tri_gzip_pool *zp, tri_pool *pool, const uint8_t *in,
                      size_t n, size_t headroom, tri_buf **out) {
  return tri_zlib_compress(zp, TRI_ZFMT_GZIP, pool, in, n, headroom, out);
}

int tri_gzip_decompress(tri_gzip_pool *zp, tri_pool *pool, const uint8_t *in,
                        size_t n, int64_t limit, tri_buf **out) {
  return tri_zlib_decompress(zp, TRI_ZFMT_GZIP, pool, in, n, limit, out);
}

int tri_zlib_compress(tri_gzip_pool *zp, int format, tri_pool *pool,
                      const uint8_t *in, size_t n, size_t headroom, tri_buf **out) {
  if (format < 0 || format >= TRI_ZFMT_COUNT) return TRI_ERR_INVALID;
  tri_zstream *z = take(zp, format, 1);
  if (!z) return TRI_ERR_NOMEM;
  size_t bound = deflateBound(&z->zs, (uLong)n);
  tri_buf *b = tri_pool_get(pool, bound, headroom);
  if (!b) {
    give_back(zp, format, z, 1);
    return TRI_ERR_NOMEM;
  }
  z->zs.next_in = (Bytef *)in;
  z->zs.avail_in = (uInt)n;
  z->zs.next_out = tri_buf_begin(b);
  z->zs.avail_out = (uInt)(b->cap - b->off);
  int rv = deflate(&z->zs, Z_FINISH); /* the bound guarantees one pass */
  b->len = (b->cap - b->off) - z->zs.avail_out;
  give_back(zp, format, z, 1);
  if (rv != Z_STREAM_END) {
    tri_pool_put(pool, b);
    return TRI_ERR_NOMEM;
  }
  *out = b;
  return 0;
}

int tri_zlib_decompress(tri_gzip_pool *zp, int format, tri_pool *pool,
                        const uint8_t *in, size_t n, int64_t limit, tri_buf **out) {
  if (format < 0 || format >= TRI_ZFMT_COUNT) return TRI_ERR_INVALID;
  tri_zstream *z = take(zp, format, 0);
  if (!z) return TRI_ERR_NOMEM;
  /* Start at 4x the input (typical ratios), capped by the limit. */
  size_t want = n * 4 + 64;
  if (limit >= 0 && want > (size_t)limit + 1) want = (size_t)limit + 1;
  tri_buf *b = tri_pool_get(pool, want, 0);
  int rv = b ? 0 : TRI_ERR_NOMEM;
  z->zs.next_in = (Bytef *)in;
  z->zs.avail_in = (uInt)n;
  while (!rv) {
    size_t room = b->cap - b->off - b->len;
    if (room == 0) {
      /* Double, but never past limit + 1 (one byte over proves "too large"). */
      size_t grow = b->len ? b->len : 64;
      if (limit >= 0 && b->len + grow > (size_t)limit + 1)
        grow = (size_t)limit + 1 - b->len;
      if (grow == 0) {
        rv = TRI_ERR_TOO_LARGE;
        break;
      }
      if ((rv = tri_buf_reserve_exact(pool, &b, grow))) break;
      room = b->cap - b->off - b->len;
    }
    if (limit >= 0 && b->len + room > (size_t)limit + 1)
      room = (size_t)limit + 1 - b->len; /* never inflate past limit + 1 */
    z->zs.next_out = tri_buf_begin(b) + b->len;
    z->zs.avail_out = (uInt)room;
    int zr = inflate(&z->zs, Z_NO_FLUSH);
    b->len += room - z->zs.avail_out;
    if (limit >= 0 && b->len > (size_t)limit) {
      rv = TRI_ERR_TOO_LARGE;
    } else if (zr == Z_STREAM_END) {
      if (z->zs.avail_in != 0) rv = TRI_ERR_FRAME; /* trailing bytes */
      break;
    } else if (zr == Z_BUF_ERROR && z->zs.avail_in == 0) {
      rv = TRI_ERR_FRAME; /* truncated */
    } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
      rv = zr == Z_MEM_ERROR ? TRI_ERR_NOMEM : TRI_ERR_FRAME;
    }
  }
  give_back(zp, format, z, 0);
  if (rv) {
    tri_pool_put(pool, b);
    return rv;
  }
  *out = b;
  return 0;
}
